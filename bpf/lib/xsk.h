// The AF_XDP step a port's programs end with (xsk.c's, which also takes
// what the fast path leaves to user space; entry.c's while its bridge has
// no fast path): every frame that arrives on an rx queue with a socket
// bound goes to that socket; the rest continue up the stack.
//
// A frame longer than the port can take (max_len) is dropped here and
// counted in oversize, rather than left to the kernel, which would drop
// it as an unexplained rx_dropped on the socket.

#ifndef XSWITCH_XSK_H
#define XSWITCH_XSK_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} xsks_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} oversize SEC(".maps");

static __always_inline int to_socket(struct xdp_md *ctx, __u32 max_len)
{
	__u32 queue = ctx->rx_queue_index;

	// A queue without a socket is the host's: it gets every frame, of any
	// length, as if the program were not there.
	if (!bpf_map_lookup_elem(&xsks_map, &queue))
		return XDP_PASS;
	if (bpf_xdp_get_buff_len(ctx) > max_len) {
		__u32 key = 0;
		__u64 *count = bpf_map_lookup_elem(&oversize, &key);

		if (count)
			(*count)++;
		return XDP_DROP;
	}
	// The flags argument is the action returned when the map slot is
	// empty, so a socket that left since the lookup costs no frame.
	return bpf_redirect_map(&xsks_map, queue, XDP_PASS);
}

#endif
