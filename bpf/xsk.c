//go:build ignore

// The XDP half of an AF_XDP port without the fast path (lib/xsk.h): every
// frame goes to the port's socket for its queue (xsk_redirect); or, on a
// tunnel underlay, only the tunnels' frames do and the rest continue up
// the stack (xsk_tunnels, lib/listen.h). With the fast path, xsk_redirect
// takes the frames it leaves to user space (lib/entry.h).
//
// The program is frags-aware (xdp.frags): a driver may hand it a frame in
// several buffers, and the socket receives it as chained descriptors when
// it was bound with XDP_USE_SG. That is also what lets veth attach it
// natively when its peer's MTU exceeds one page.

#include "lib/xsk.h"
#include "lib/listen.h"

// max_frame_len is the longest frame the port's sockets take, set from
// user space before the first socket enters xsks_map.
__u32 max_frame_len = 0;

SEC("xdp.frags")
int xsk_redirect(struct xdp_md *ctx)
{
	return to_socket(ctx, max_frame_len);
}

SEC("xdp.frags")
int xsk_tunnels(struct xdp_md *ctx)
{
	struct tunnel_outer outer;

	if (!tunnel_frame((void *)(long)ctx->data, (void *)(long)ctx->data_end, &outer))
		return XDP_PASS;
	return to_socket(ctx, max_frame_len);
}

char __license[] SEC("license") = "Dual BSD/GPL";
