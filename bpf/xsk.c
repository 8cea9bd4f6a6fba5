//go:build ignore

// The XDP half of an AF_XDP port: every frame that arrives on an rx queue
// with a socket bound goes to that socket; the rest continue up the stack.

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

SEC("xdp")
int xsk_redirect(struct xdp_md *ctx)
{
	// The flags argument is the action returned when the map slot is
	// empty, so queues without a socket keep working for the host.
	return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
}

char __license[] SEC("license") = "Dual BSD/GPL";
