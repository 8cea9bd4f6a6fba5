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

// Set before loading: how many UDP flows xdp_gen spreads its frames over
// (1: the frame as given). Flow i has UDP source port gen_first_port + i.
volatile const __u32 gen_flows = 1;
volatile const __u16 gen_first_port = 0;

// The UDP header of the bench frame: Ethernet and a 20-byte IPv4 header.
#define GEN_UDP_OFFSET (14 + 20)

// What xdp_gen keeps per CPU: the next flow's index, and how many frames
// it has sent, which the bench reads once a second.
struct gen_state {
	__u32 next;
	__u64 sent;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gen_state);
} gen_states SEC(".maps");

// xdp_gen bounces every frame it is given: in live-frames mode XDP_TX
// transmits the frame out of the device named by the context's
// ingress_ifindex. With gen_flows > 1 it gives each frame the next flow's
// source port, in turn, and no UDP checksum (0: none, for IPv4), so that
// consecutive frames belong to different flows, the hardest order for a
// flow cache.
SEC("xdp")
int xdp_gen(struct xdp_md *ctx)
{
	__u32 key = 0;
	struct gen_state *st = bpf_map_lookup_elem(&gen_states, &key);

	if (!st)
		return XDP_TX;
	st->sent++;
	if (gen_flows <= 1)
		return XDP_TX;
	void *data = (void *)(long)ctx->data;
	__u8 *udp = data + GEN_UDP_OFFSET;

	if ((void *)(udp + 8) > (void *)(long)ctx->data_end)
		return XDP_TX;
	__u16 port = gen_first_port + st->next;
	st->next = st->next + 1 >= gen_flows ? 0 : st->next + 1;
	udp[0] = port >> 8;
	udp[1] = port;
	udp[6] = udp[7] = 0;
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
