//go:build ignore

// A port's XDP program when the fast path is on (lib/entry.h): it tells
// the bridge's fast path (fastpath.c) which port the frame came in on and
// tail-calls it. A queue without a socket is the host's, as with xsk.c;
// on a tunnel underlay, so is every frame but a listened tunnel's
// (lib/listen.h). Loaded per port with its constants, it is small enough
// that the verifier takes it in well under a millisecond.

#include "lib/xsk.h"
#include "lib/listen.h"
#include "lib/entry.h"

// in_port is the port's OpenFlow port number, slot its slot in the
// bridge; max_frame_len the longest frame its sockets take, and
// socket_queues how many of its rx queues, from 0, have one. underlay
// says that the port is a tunnel underlay.
volatile const __u16 in_port = 0;
volatile const __u16 slot = 0;
volatile const __u32 max_frame_len = 0;
volatile const __u32 socket_queues = 0;
volatile const __u8 underlay = 0;

SEC("xdp.frags")
int fastpath_entry(struct xdp_md *ctx)
{
	__u32 zero = 0;
	struct fp_port *p = bpf_map_lookup_elem(&fp_port, &zero);

	if (ctx->rx_queue_index >= socket_queues || !p)
		return XDP_PASS;
	p->underlay = underlay;
	if (underlay && !tunnel_frame((void *)(long)ctx->data, (void *)(long)ctx->data_end, &p->outer))
		return XDP_PASS; // the host's own traffic
	p->in_port = in_port;
	p->slot = slot;
	p->max_frame_len = max_frame_len;
	bpf_tail_call(ctx, &fp_program, 0);
	// No fast path (being taken down): as the port's own program.
	return to_socket(ctx, max_frame_len);
}

char __license[] SEC("license") = "Dual BSD/GPL";
