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
// (1: the frame as given). Flow i has UDP source port gen_first_port +
// i % gen_src_ports and destination port gen_first_dst_port +
// i / gen_src_ports, and i in the first 4 bytes of its payload (big
// endian), where xdp_count finds it.
volatile const __u32 gen_flows = 1;
volatile const __u16 gen_first_port = 0;
volatile const __u32 gen_src_ports = 1;
volatile const __u16 gen_first_dst_port = 0;

// The UDP header of the bench frame: Ethernet and a 20-byte IPv4 header.
#define GEN_UDP_OFFSET (14 + 20)
// Its UDP header and the flow's index after it.
#define GEN_FLOW_LEN (8 + 4)

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
// ports and index, in turn, and no UDP checksum (0: none, for IPv4), so
// that consecutive frames belong to different flows, the hardest order
// for a flow cache.
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

	if ((void *)(udp + GEN_FLOW_LEN) > (void *)(long)ctx->data_end)
		return XDP_TX;
	__u32 i = st->next;
	__u16 src = gen_first_port + i % gen_src_ports;
	__u16 dst = gen_first_dst_port + i / gen_src_ports;

	st->next = i + 1 >= gen_flows ? 0 : i + 1;
	udp[0] = src >> 8;
	udp[1] = src;
	udp[2] = dst >> 8;
	udp[3] = dst;
	udp[6] = udp[7] = 0;
	udp[8] = i >> 24;
	udp[9] = i >> 16;
	udp[10] = i >> 8;
	udp[11] = i;
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

// Set before loading, with rx_flows's size: how many of the generator's
// flows xdp_count marks in rx_flows as seen (0: none).
volatile const __u32 count_flows = 0;

// A bit per flow, set when a frame of the flow arrives: which of the
// flows the path carried, whatever it dropped. Not atomic: two CPUs that
// set bits of one word at once may lose one, which the flow's next frame
// sets again.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} rx_flows SEC(".maps");

// mark_flow sets the bit of the bench frame's flow: IPv4 and UDP, its
// index after the UDP header.
static __always_inline void mark_flow(struct xdp_md *ctx)
{
	__u8 *p = (void *)(long)ctx->data;

	if ((void *)(p + GEN_UDP_OFFSET + GEN_FLOW_LEN) > (void *)(long)ctx->data_end)
		return;
	if (p[12] != 0x08 || p[13] != 0x00 || p[14 + 9] != 17)
		return;
	__u8 *idx = p + GEN_UDP_OFFSET + 8;
	__u32 i = (__u32)idx[0] << 24 | (__u32)idx[1] << 16 | (__u32)idx[2] << 8 | idx[3];

	if (i >= count_flows)
		return;
	__u32 word = i / 64;
	__u64 *w = bpf_map_lookup_elem(&rx_flows, &word);
	__u64 bit = 1ULL << (i % 64);

	if (w && !(*w & bit))
		*w |= bit;
}

SEC("xdp.frags")
int xdp_count(struct xdp_md *ctx)
{
	__u32 key = 0;
	struct counters *c = bpf_map_lookup_elem(&rx_counters, &key);

	if (c) {
		c->packets++;
		c->bytes += bpf_xdp_get_buff_len(ctx);
	}
	if (count_flows)
		mark_flow(ctx);
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
