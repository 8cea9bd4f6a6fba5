//go:build ignore

// The XDP programs of xswitch bench: a generator run with BPF_PROG_RUN in
// live-frames mode, a counter on the receiver, and the kernel's own XDP
// redirect between two interfaces as the yardstick.
//
// The counter and the redirect are frags-aware (xdp.frags), so that they
// attach to a veth whose peer's MTU exceeds a page (bench --mtu 9000) and
// see such a frame whole. The generator cannot be: live-frames mode
// refuses frames longer than a page.

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

// xdp_gen bounces every frame it is given: in live-frames mode XDP_TX
// transmits the frame out of the device named by the context's
// ingress_ifindex.
SEC("xdp")
int xdp_gen(struct xdp_md *ctx)
{
	return XDP_TX;
}

struct counters {
	__u64 packets;
	__u64 bytes;
};

// Per CPU so that the counter costs the receiver no atomic operations.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct counters);
} rx_counters SEC(".maps");

SEC("xdp.frags")
int xdp_count(struct xdp_md *ctx)
{
	__u32 key = 0;
	struct counters *c = bpf_map_lookup_elem(&rx_counters, &key);

	if (c) {
		c->packets++;
		c->bytes += bpf_xdp_get_buff_len(ctx);
	}
	return XDP_DROP;
}

// Set before loading: the interface xdp_redirect_to sends every frame out of.
volatile const __u32 redirect_ifindex = 0;

SEC("xdp.frags")
int xdp_redirect_to(struct xdp_md *ctx)
{
	return bpf_redirect(redirect_ifindex, 0);
}

char __license[] SEC("license") = "Dual BSD/GPL";
