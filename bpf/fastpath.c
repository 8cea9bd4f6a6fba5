//go:build ignore

// The in-kernel fast path's parser (issue 13, first step): it reads a
// frame's flow key as flow.Extractor does, for the frames it can read
// whole, and gives up on the rest, which user space keeps parsing (and
// counting, when they are malformed) as it does now. What it reads:
// Ethernet II, up to two 802.1Q/802.1ad tags (behind a third, dl_type is
// that tag's TPID, as in OVS and the extractor), ARP for IPv4 over
// Ethernet, IPv4 without options whose lengths hold, IPv6 without
// extension headers, and TCP, UDP, ICMP and ICMPv6 headers. It gives up
// on 802.3 frames, IPv4 options, IPv6 extension headers, multicast source
// addresses and anything cut short.
//
// The key keeps the frame's byte order: user space compares it with
// flow.Headers through FastpathFpKey's conversion.
//
// Then it looks the key up in flows, the decisions user space installed
// for the bridge (the exact key: a decision holds for one flow.Headers),
// and, if the entry is of the bridge's current generation, runs its
// operations on the frame, counts it and sends it out of a port of
// tx_ports. Anything else (a frame it cannot read, a frame in several
// buffers, no entry, an entry of an older generation) is user space's:
// it goes to the port's AF_XDP socket (xsk.h), as with xsk.c.
//
// Every port of a bridge runs its own copy of the program, loaded with its
// OpenFlow port number and its own xsks_map, and all share the bridge's
// flows, state and tx_ports (switch/fastpath.go). With record_key set at
// load time it stores the key it read, for the tests, which run it with
// BPF_PROG_RUN.

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "xsk.h"
#include "tunnel.h"

#define VLAN_CFI 0x1000
#define MAX_VLAN_TAGS 2
#define FRAG_ANY 1
#define FRAG_LATER 2

struct fp_key {
	__u8 dl_dst[6];
	__u8 dl_src[6];
	__u16 in_port;  // host order
	__u16 dl_type;  // network order, as the rest
	__u16 vlan_tci; // with VLAN_CFI set when there is a tag
	__u16 pad;      // zero: part of the hashed key
	__u32 tun_id;   // host order: the VNI of a frame from a tunnel
	// The low 32 bits of the generation the entry was made in (fp_state):
	// a lookup asks for the current one, so an entry of an older
	// generation is a miss, and a new entry never overwrites an old one,
	// whose last counts the sweeper reads before it deletes it.
	__u32 gen;
	__u8 tun_src[4];
	__u8 tun_dst[4];
	__u8 nw_proto;
	__u8 nw_tos;
	__u8 nw_ttl;
	__u8 nw_frag;
	__u8 nw_src[4];
	__u8 nw_dst[4];
	__u8 ipv6_src[16];
	__u8 ipv6_dst[16];
	__u16 tp_src; // ICMP: the type, as a 16-bit value in network order
	__u16 tp_dst; // ICMP: the code
};

// The operations a decision runs on a frame, in order. User space works
// them out against the flow's exact key, so each is a constant: a VLAN
// operation knows whether there is a tag, a masked rewrite is its result.
enum fp_op_type {
	FP_OP_END = 0,
	FP_OP_SET_DL_SRC,
	FP_OP_SET_DL_DST,
	FP_OP_POP_VLAN,
	// A tag of tpid in front of the outer one, its TCI tci's but for the
	// bits of mask, which it copies from the outer tag (its DEI, which the
	// key does not keep, among them).
	FP_OP_PUSH_VLAN,
	FP_OP_SET_TCI,   // the outer tag's TCI: the bits of mask become tci's
	FP_OP_SET_L3,    // len bytes at off in the IP header become value's
	FP_OP_SET_L4,    // the same in the TCP or UDP header
	// The outer headers of tunnel slot tunnel, with VNI vni: the last
	// operation, before the output to the tunnel's underlay.
	FP_OP_TUNNEL_PUSH,
};

// Which checksums an FP_OP_SET_L3 or FP_OP_SET_L4 updates, by adding
// delta (RFC 1624's ~m + m', worked out by user space from the flow's
// exact key).
enum fp_csum {
	FP_CSUM_L3 = 1,
	FP_CSUM_TCP = 2,
	FP_CSUM_UDP = 4,
};

// So that the enums are in the object's BTF, and bpf2go exports them to Go.
const enum fp_op_type *fp_op_type_for_go __attribute__((unused));
const enum fp_csum *fp_csum_for_go __attribute__((unused));

#define FP_MAX_OPS 6
#define FP_DROP 0xffffffff

struct fp_op {
	__u8 type;
	__u8 off;   // FP_OP_SET_L3, FP_OP_SET_L4: in the header
	__u8 len;   // 1, 2 or 4
	__u8 csums; // FP_CSUM_*
	__be16 tpid;
	__be16 tci;
	__be16 mask;
	__u8 mac[6];
	__u8 value[4]; // FP_OP_SET_L3, FP_OP_SET_L4
	__u32 delta;   // FP_OP_SET_L3, FP_OP_SET_L4; FP_OP_TUNNEL_PUSH: the VNI
	__u32 tunnel;  // FP_OP_TUNNEL_PUSH: the tunnel's slot in tunnels
};

struct fp_flow {
	__u32 out; // index into tx_ports, or FP_DROP
	// max_len is the longest frame the entry carries (0: any): a longer
	// one goes to user space before any operation, which counts it as too
	// long for the tunnel it would enter.
	__u32 max_len;
	struct fp_op ops[FP_MAX_OPS];
	// This CPU's count of the frames and bytes the entry carried. When
	// it last carried one is when the sweeper finds the count grown: a
	// clock read per frame would cost more than the lookup.
	__u64 packets, bytes;
};

// How keys are looked up (switch/fastpath.go's keyMask): whole, in flows;
// with only the bits of the state's mask, in flows; or, when the mask is
// exactly NORMAL's fields (the Ethernet header, the tag and the input
// port), by those fields alone in flows_l2, whose short key hashes in a
// fraction of the time.
enum fp_mask_kind {
	FP_MASK_EXACT = 0,
	FP_MASK_BITS,
	FP_MASK_L2,
};

const enum fp_mask_kind *fp_mask_kind_for_go __attribute__((unused));

struct fp_state {
	__u64 generation; // of the bridge: entries of another are misses
	__u32 masked;     // FP_MASK_*
	__u32 pad;
	struct fp_key mask; // FP_MASK_BITS
};

// The first fields of fp_key, in its order: NORMAL's, the VNI (which
// the VNI a frame leaves a tunnel with may be) and the generation. The
// program looks flows_l2 up with a struct fp_key.
struct fp_l2_key {
	__u8 dl_dst[6];
	__u8 dl_src[6];
	__u16 in_port;
	__u16 dl_type;
	__u16 vlan_tci;
	__u16 pad;
	__u32 tun_id;
	__u32 gen;
};

_Static_assert(sizeof(struct fp_l2_key) == __builtin_offsetof(struct fp_key, tun_src),
	       "fp_l2_key is the start of fp_key");
_Static_assert(__builtin_offsetof(struct fp_l2_key, gen) == __builtin_offsetof(struct fp_key, gen),
	       "fp_l2_key is the start of fp_key");

#define FP_KEY_WORDS (sizeof(struct fp_key) / sizeof(__u16))

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct fp_key);
	__type(value, struct fp_flow);
} flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct fp_l2_key);
	__type(value, struct fp_flow);
} flows_l2 SEC(".maps");

// Two states, of which state_slot names the current one: user space
// writes the other whole, then switches, so that no frame reads a
// generation with half a mask (a copy into the map is not atomic). Both
// are memory-mapped into user space, which writes them with plain stores:
// a new generation at every table edit costs no system call (see
// switch/fastpath.go's bump).
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct fp_state);
} state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} state_slot SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u32);
} tx_ports SEC(".maps");

// The outer headers of a tunnel port (tunnel.Encap's), with the
// datagram's lengths, ID, checksum, UDP source port and VNI zero; ip_sum
// is the one's-complement sum of the IPv4 header so, unfolded.
#define TUNNEL_OVERHEAD 50

struct fp_tunnel {
	__u8 hdr[TUNNEL_OVERHEAD];
	__u16 pad;
	__u32 ip_sum;
};

// Two a tunnel port's slot (2*slot and 2*slot+1): a tunnel's new headers
// go in the one its entries do not use, and the generation changes, so
// that no frame reads headers half written.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 512);
	__type(key, __u32);
	__type(value, struct fp_tunnel);
} tunnels SEC(".maps");

// The tunnels an underlay's frames may come from: by remote address,
// UDP port and VNI (FP_ANY_VNI for a tunnel that takes any), the
// tunnel's OpenFlow port number and its local address (zero: any).
#define FP_ANY_VNI (1 << 24)

struct fp_tunnel_key {
	__be32 remote;
	__be16 port;
	__u16 underlay; // the underlay's slot: two may have tunnels to one remote
	__u32 vni;      // host order
};

struct fp_tunnel_in {
	__u16 in_port;
	__u16 pad;
	__be32 local;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct fp_tunnel_key);
	__type(value, struct fp_tunnel_in);
} tunnels_in SEC(".maps");

struct fp_parsed {
	__u32 ok; // 1: the key is the frame's; 0: the parser gave up
	struct fp_key key;
	__u32 hit; // 1: an entry took the frame
	__u32 out; // its out
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fp_parsed);
} parsed SEC(".maps");

// in_port is the OpenFlow port number of the port the program is on;
// max_frame_len the longest frame its sockets take, and socket_queues how
// many of its rx queues, from 0, have one. underlay says that the port is
// a tunnel underlay (tunnel.h), whose slot is underlay_slot: only its
// tunnels' frames are the bridge's, each from the tunnel tunnels_in names.
volatile const __u16 in_port = 0;
volatile const __u32 max_frame_len = 0;
volatile const __u32 socket_queues = 0;
volatile const __u8 underlay = 0;
volatile const __u16 underlay_slot = 0;
// record_key makes the program store each key, and what an entry did
// with the frame, in parsed (tests only).
volatile const __u8 record_key = 0;

struct cursor {
	void *pos;
	void *end;
};

// take returns the next n bytes and moves past them, or NULL when the
// frame has fewer.
static __always_inline void *take(struct cursor *c, __u32 n)
{
	void *p = c->pos;

	if (p + n > c->end)
		return NULL;
	c->pos = p + n;
	return p;
}

struct vlan_tag {
	__be16 tci;
	__be16 next;
};

struct arp_ipv4 {
	__be16 htype, ptype;
	__u8 hlen, plen;
	__be16 op;
	__u8 sha[6], spa[4], tha[6], tpa[4];
};

struct l4_ports {
	__be16 src, dst;
};

// parse_l4 reads the L4 header, which must lie within the IP packet (not
// its padding): takes are bounded by the frame's end, which the verifier
// tracks, and then checked against the packet's. ICMP is ICMPv4 over
// IPv4 and ICMPv6 over IPv6, as in OVS; the other is no header to the key.
static __always_inline int parse_l4(struct cursor *c, void *ip_end, struct fp_key *k, int ipv6)
{
	__u8 icmp_proto = ipv6 ? IPPROTO_ICMPV6 : IPPROTO_ICMP;

	if ((k->nw_proto == IPPROTO_ICMP || k->nw_proto == IPPROTO_ICMPV6) && k->nw_proto != icmp_proto)
		return 1;
	switch (k->nw_proto) {
	case IPPROTO_TCP: {
		__u8 *tcp = take(c, 20);

		if (!tcp || c->pos > ip_end)
			return 0;
		__u8 data_off = tcp[12] >> 4;
		if (data_off < 5 || (void *)tcp + data_off * 4 > ip_end)
			return 0;
		k->tp_src = ((struct l4_ports *)tcp)->src;
		k->tp_dst = ((struct l4_ports *)tcp)->dst;
		return 1;
	}
	case IPPROTO_UDP: {
		struct l4_ports *udp = take(c, 8);

		if (!udp || c->pos > ip_end)
			return 0;
		// A length under the header's own (but 0, a jumbogram's) is
		// malformed to the extractor.
		__u16 len = bpf_ntohs(((__be16 *)udp)[2]);
		if (len != 0 && len < 8)
			return 0;
		k->tp_src = udp->src;
		k->tp_dst = udp->dst;
		return 1;
	}
	case IPPROTO_ICMP: {
		__u8 *icmp = take(c, 8); // ICMPv4 headers are 8 bytes

		if (!icmp || c->pos > ip_end)
			return 0;
		k->tp_src = bpf_htons(icmp[0]);
		k->tp_dst = bpf_htons(icmp[1]);
		return 1;
	}
	case IPPROTO_ICMPV6: {
		__u8 *icmp = take(c, 4); // ICMPv6's fixed part

		if (!icmp || c->pos > ip_end)
			return 0;
		k->tp_src = bpf_htons(icmp[0]);
		k->tp_dst = bpf_htons(icmp[1]);
		return 1;
	}
	}
	return 1;
}

static __always_inline int parse_ipv4(struct cursor *c, struct fp_key *k)
{
	struct iphdr *ip = take(c, sizeof(*ip));

	if (!ip || ip->version != 4 || ip->ihl != 5)
		return 0; // options: user space reads them
	__u16 total = bpf_ntohs(ip->tot_len);
	if (total < sizeof(*ip) || (void *)ip + total > c->end)
		return 0;
	__builtin_memcpy(k->nw_src, &ip->saddr, 4);
	__builtin_memcpy(k->nw_dst, &ip->daddr, 4);
	k->nw_proto = ip->protocol;
	k->nw_tos = ip->tos;
	k->nw_ttl = ip->ttl;
	__u16 frag = bpf_ntohs(ip->frag_off);
	if (frag & 0x3fff) // more fragments, or an offset
		k->nw_frag = FRAG_ANY;
	if (frag & 0x1fff) {
		k->nw_frag |= FRAG_LATER;
		return 1; // no L4 header in a later fragment
	}
	return parse_l4(c, (void *)ip + total, k, 0);
}

static __always_inline int parse_ipv6(struct cursor *c, struct fp_key *k)
{
	struct ipv6hdr *ip = take(c, sizeof(*ip));

	if (!ip || ip->version != 6)
		return 0;
	__u16 payload = bpf_ntohs(ip->payload_len);
	if (payload == 0 || c->pos + payload > c->end)
		return 0; // a jumbogram, or cut short
	switch (ip->nexthdr) {
	case 0:  // hop-by-hop options
	case 43: // routing
	case 44: // fragment
	case 51: // AH
	case 60: // destination options
		return 0;
	}
	__builtin_memcpy(k->ipv6_src, &ip->saddr, 16);
	__builtin_memcpy(k->ipv6_dst, &ip->daddr, 16);
	k->nw_proto = ip->nexthdr;
	k->nw_tos = ip->priority << 4 | ip->flow_lbl[0] >> 4;
	k->nw_ttl = ip->hop_limit;
	return parse_l4(c, c->pos + payload, k, 1);
}

static __always_inline int parse_arp(struct cursor *c, struct fp_key *k)
{
	struct arp_ipv4 *arp = take(c, sizeof(*arp));

	if (!arp || arp->htype != bpf_htons(1) || arp->ptype != bpf_htons(ETH_P_IP) || arp->hlen != 6 ||
	    arp->plen != 4)
		return 0;
	// As the extractor, the opcode's low 8 bits.
	k->nw_proto = bpf_ntohs(arp->op) & 0xff;
	__builtin_memcpy(k->nw_src, arp->spa, 4);
	__builtin_memcpy(k->nw_dst, arp->tpa, 4);
	return 1;
}

// parse fills *k from the frame and reports whether it read all of it the
// key needs; when it did not, user space parses the frame. *l3 is where
// the network header starts; the L4 header follows it at once, as the
// parser takes no IPv4 options and no IPv6 extension header.
static __always_inline int parse(struct xdp_md *ctx, struct fp_key *k, __u32 *l3, __u16 port)
{
	struct cursor c = { .pos = (void *)(long)ctx->data, .end = (void *)(long)ctx->data_end };
	struct ethhdr *eth = take(&c, sizeof(*eth));

	if (!eth || eth->h_source[0] & 1)
		return 0; // a runt, or a multicast source: malformed to user space
	__builtin_memcpy(k->dl_dst, eth->h_dest, 6);
	__builtin_memcpy(k->dl_src, eth->h_source, 6);
	k->in_port = port;
	__be16 type = eth->h_proto;

#pragma unroll
	for (int i = 0; i < MAX_VLAN_TAGS; i++) {
		if (type != bpf_htons(ETH_P_8021Q) && type != bpf_htons(ETH_P_8021AD))
			break;
		struct vlan_tag *tag = take(&c, sizeof(*tag));
		if (!tag)
			return 0;
		if (i == 0)
			k->vlan_tci = tag->tci | bpf_htons(VLAN_CFI);
		type = tag->next;
	}
	if (bpf_ntohs(type) < ETH_P_802_3_MIN)
		return 0; // 802.3 with LLC/SNAP
	k->dl_type = type;
	*l3 = c.pos - (void *)(long)ctx->data;
	switch (type) {
	case bpf_htons(ETH_P_IP):
		return parse_ipv4(&c, k);
	case bpf_htons(ETH_P_IPV6):
		return parse_ipv6(&c, k);
	case bpf_htons(ETH_P_ARP):
		return parse_arp(&c, k);
	}
	return 1;
}

// add_csum adds delta to the one's-complement checksum at csum, as
// switch/rewrite.go's updateChecksum does: HC' = ~(~HC + delta).
static __always_inline void add_csum(__u8 *csum, __u32 delta)
{
	__u32 sum = (__u16)~(csum[0] << 8 | csum[1]);

	sum += delta;
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = ~sum & 0xffff;
	csum[0] = sum >> 8;
	csum[1] = sum;
}

// set_field writes an FP_OP_SET_L3 or FP_OP_SET_L4 at hdr (the IP or L4
// header's offset) and updates the checksums it names.
static __always_inline int set_field(struct xdp_md *ctx, struct fp_op *op, __u32 l3, __u32 hdr)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	// Bounds the verifier can follow: a header starts within two tags
	// and an IPv6 header of the frame's start, a field within 40 bytes.
	__u8 *field = data + (hdr & 0x7f) + (op->off & 0x3f);

	if ((void *)(field + 4) > end)
		return 0;
#pragma unroll
	for (int i = 0; i < 4; i++)
		if (i < op->len)
			field[i] = op->value[i];
	if (op->csums & FP_CSUM_L3) {
		__u8 *csum = data + (l3 & 0x7f) + 10;

		if ((void *)(csum + 2) > end)
			return 0;
		add_csum(csum, op->delta);
	}
	if (op->csums & (FP_CSUM_TCP | FP_CSUM_UDP)) {
		__u32 l4 = l3 + 20; // an IPv4 header: IPv6 has no L4 field written yet
		__u8 *csum = data + (l4 & 0x7f) + (op->csums & FP_CSUM_TCP ? 16 : 6);

		if ((void *)(csum + 2) > end)
			return 0;
		// A UDP checksum of 0 means none, and one that comes out 0 is
		// sent as 0xffff (RFC 768).
		if (op->csums & FP_CSUM_UDP && !(csum[0] | csum[1]))
			return 1;
		add_csum(csum, op->delta);
		if (op->csums & FP_CSUM_UDP && !(csum[0] | csum[1]))
			csum[0] = csum[1] = 0xff;
	}
	return 1;
}

// flow_hash is bpf.FlowHash: MurmurHash3's 32-bit mix over the key's
// addresses, ports, protocol, EtherType and MACs, as user space computes
// it for the same frame, so that a flow keeps its outer UDP source port.
static __always_inline __u32 mix(__u32 h, __u32 v)
{
	v *= 0xcc9e2d51;
	v = v << 15 | v >> 17;
	v *= 0x1b873593;
	h ^= v;
	h = h << 13 | h >> 19;
	return h * 5 + 0xe6546b64;
}

static __always_inline __u32 load32(const __u8 *p)
{
	__u32 v;

	__builtin_memcpy(&v, p, 4);
	return v;
}

static __always_inline __u32 load16(const __u8 *p)
{
	__u16 v;

	__builtin_memcpy(&v, p, 2);
	return v;
}

static __always_inline __u32 flow_hash(struct fp_key *k)
{
	__u32 h = 0x9747b28c;

	h = mix(h, load32(k->nw_src));
	h = mix(h, load32(k->nw_dst));
#pragma unroll
	for (int i = 0; i < 4; i++)
		h = mix(h, load32(k->ipv6_src + 4 * i));
#pragma unroll
	for (int i = 0; i < 4; i++)
		h = mix(h, load32(k->ipv6_dst + 4 * i));
	h = mix(h, k->tp_src | (__u32)k->tp_dst << 16);
	h = mix(h, k->nw_proto | (__u32)k->dl_type << 16);
	h = mix(h, load32(k->dl_src));
	h = mix(h, load16(k->dl_src + 4) | load16(k->dl_dst) << 16);
	h = mix(h, load32(k->dl_dst + 2));
	h ^= h >> 16;
	h *= 0x85ebca6b;
	h ^= h >> 13;
	h *= 0xc2b2ae35;
	h ^= h >> 16;
	return h;
}

// The UDP source ports a tunnel's datagrams come from (tunnel.go's
// srcPortMin and srcPortMax: the kernel's ephemeral range).
#define TUNNEL_SRC_PORT_MIN 32768
#define TUNNEL_SRC_PORTS (60999 - 32768 + 1)

// tunnel_push puts the outer headers of op's tunnel in front of the
// frame, as tunnel.Encap.Encapsulate does: its lengths, an IPv4 ID and
// checksum, the UDP source port hash picks, and op's VNI.
static __always_inline int tunnel_push(struct xdp_md *ctx, struct fp_op *op, __u32 hash)
{
	__u32 slot = op->tunnel;
	struct fp_tunnel *t = bpf_map_lookup_elem(&tunnels, &slot);

	if (!t)
		return 0;
	__u32 inner = (long)ctx->data_end - (long)ctx->data;

	if (bpf_xdp_adjust_head(ctx, -TUNNEL_OVERHEAD))
		return 0;
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;

	if (data + TUNNEL_OVERHEAD > end)
		return 0;
	__builtin_memcpy(data, t->hdr, TUNNEL_OVERHEAD);
	struct iphdr *ip = data + ETH_HLEN;
	struct udphdr *udp = (void *)(ip + 1);
	__u32 ip_len = (inner + TUNNEL_OVERHEAD - ETH_HLEN) & 0xffff;
	// The outer datagrams have DF clear and so may be fragmented on the
	// way: an ID that is not a per-CPU count, which two CPUs would
	// repeat.
	__u32 id = bpf_get_prandom_u32() & 0xffff;
	__u32 sum = t->ip_sum + ip_len + id;

	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	ip->tot_len = bpf_htons(ip_len);
	ip->id = bpf_htons(id);
	ip->check = bpf_htons(~sum & 0xffff);
	udp->source = bpf_htons(TUNNEL_SRC_PORT_MIN + hash % TUNNEL_SRC_PORTS);
	udp->len = bpf_htons(ip_len - sizeof(*ip));
	__be32 *vni = (void *)(udp + 1) + 4;
	*vni = bpf_htonl(op->delta << 8);
	return 1;
}

// tunnel_pop reads a frame from the underlay: a datagram for a listened
// pair (o), well formed as tunnel.DecapsulateFor reads it, of a tunnel
// that tunnels_in has. It fills the key's input port and tunnel fields
// and returns the length of the outer headers, or 0 for a frame that is
// user space's to take apart, count and drop: malformed, a fragment, a
// Geneve critical option, an IPv4 header with options, padding past the
// datagram, or a remote and VNI no tunnel has.
static __always_inline __u32 tunnel_pop(struct xdp_md *ctx, struct tunnel_outer *o, struct fp_key *k)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct iphdr *ip = data + (o->l3 & 0x1f);

	if ((void *)(ip + 1) > end || ip->ihl != 5 || bpf_ntohs(ip->frag_off) & 0x3fff)
		return 0;
	struct udphdr *udp = (void *)(ip + 1);
	__u8 *tun = (void *)(udp + 1);

	if ((void *)(tun + 8) > end)
		return 0;
	__u16 ip_len = bpf_ntohs(ip->tot_len);
	if ((void *)ip + ip_len != end || bpf_ntohs(udp->len) != ip_len - sizeof(*ip))
		return 0;
	__u32 opts = 0;

	if (o->kind == 1) { // VXLAN
		if (!(tun[0] & 0x08))
			return 0;
	} else {
		if (tun[0] >> 6 || tun[1] & 0x40 || tun[2] != 0x65 || tun[3] != 0x58)
			return 0;
		opts = (tun[0] & 0x3f) * 4;
	}
	__u32 inner = (void *)tun - data + 8 + opts;

	if (data + inner + ETH_HLEN > end)
		return 0;
	__u32 vni = (__u32)tun[4] << 16 | (__u32)tun[5] << 8 | tun[6];
	struct fp_tunnel_key tk = { .remote = o->src, .port = udp->dest, .underlay = underlay_slot, .vni = vni };
	struct fp_tunnel_in *in = bpf_map_lookup_elem(&tunnels_in, &tk);

	if (!in) {
		tk.vni = FP_ANY_VNI;
		in = bpf_map_lookup_elem(&tunnels_in, &tk);
	}
	if (!in || (in->local && in->local != o->dst))
		return 0;
	k->in_port = in->in_port;
	k->tun_id = vni;
	__builtin_memcpy(k->tun_src, &o->src, 4);
	__builtin_memcpy(k->tun_dst, &o->dst, 4);
	return inner;
}

// run_op runs one operation on the frame whose IP header is at *l3; it
// returns 0 when the frame no longer has the room or the tag the
// operation needs, which user space never installs for the frame's key
// (only a driver without headroom for a tag could cause it): the program
// drops the frame then, as its bytes may be half rewritten.
static __always_inline int run_op(struct xdp_md *ctx, struct fp_op *op, __u32 *l3, struct fp_key *flow)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;

	switch (op->type) {
	case FP_OP_SET_DL_SRC:
	case FP_OP_SET_DL_DST: {
		__u8 *eth = data;

		if (data + ETH_HLEN > end)
			return 0;
		__builtin_memcpy(op->type == FP_OP_SET_DL_DST ? eth : eth + 6, op->mac, 6);
		return 1;
	}
	case FP_OP_POP_VLAN: {
		__u8 macs[12];

		if (data + ETH_HLEN + 4 > end)
			return 0;
		__builtin_memcpy(macs, data, 12);
		if (bpf_xdp_adjust_head(ctx, 4))
			return 0;
		data = (void *)(long)ctx->data;
		if (data + 12 > (void *)(long)ctx->data_end)
			return 0;
		__builtin_memcpy(data, macs, 12);
		*l3 -= 4;
		return 1;
	}
	case FP_OP_PUSH_VLAN: {
		__u8 macs[12];

		if (data + ETH_HLEN > end)
			return 0;
		__builtin_memcpy(macs, data, 12);
		if (bpf_xdp_adjust_head(ctx, -4))
			return 0;
		data = (void *)(long)ctx->data;
		end = (void *)(long)ctx->data_end;
		if (data + 16 > end)
			return 0;
		__builtin_memcpy(data, macs, 12);
		struct vlan_tag *tag = data + 12;
		__be16 outer = 0;

		if (op->mask) {
			// The tag pushed in front of: its TPID where tag's next
			// ends, its TCI after.
			struct vlan_tag *below = tag + 1;

			if ((void *)(below + 1) > end)
				return 0;
			outer = below->next;
		}
		tag->tci = op->tpid; // the new outer TPID, where the EtherType was
		tag->next = (op->tci & ~op->mask) | (outer & op->mask);
		*l3 += 4;
		return 1;
	}
	case FP_OP_SET_TCI: {
		struct vlan_tag *tag = data + 12;

		if ((void *)(tag + 1) > end)
			return 0;
		tag->next = (tag->next & ~op->mask) | (op->tci & op->mask);
		return 1;
	}
	case FP_OP_SET_L3:
		return set_field(ctx, op, *l3, *l3);
	case FP_OP_SET_L4:
		return set_field(ctx, op, *l3, *l3 + 20);
	case FP_OP_TUNNEL_PUSH:
		return tunnel_push(ctx, op, flow_hash(flow));
	}
	return 1;
}

// to_user hands a frame to user space: whole again if its outer headers
// were popped.
static __always_inline int to_user(struct xdp_md *ctx, __u32 popped)
{
	if (popped && bpf_xdp_adjust_head(ctx, -(int)popped))
		return XDP_DROP; // unreachable: the headers are where they were
	return to_socket(ctx, max_frame_len);
}

SEC("xdp.frags")
int fastpath(struct xdp_md *ctx)
{
	struct fp_key key = {};
	__u32 l3 = 0, popped = 0;
	__u64 len = (long)ctx->data_end - (long)ctx->data;
	// A frame in several buffers is user space's: the parser reads only
	// the first.
	int whole = bpf_xdp_get_buff_len(ctx) == len;
	__u16 port = in_port;

	// A queue without a socket is the host's, fast path or not (xsk.h).
	if (ctx->rx_queue_index >= socket_queues)
		return XDP_PASS;
	if (underlay) {
		struct tunnel_outer o;

		if (!tunnel_frame((void *)(long)ctx->data, (void *)(long)ctx->data_end, &o))
			return XDP_PASS; // the host's own traffic
		if (!whole || len > max_frame_len)
			return to_socket(ctx, max_frame_len);
		popped = tunnel_pop(ctx, &o, &key);
		if (!popped || bpf_xdp_adjust_head(ctx, popped))
			return to_socket(ctx, max_frame_len);
		port = key.in_port;
		len -= popped;
	}
	int ok = whole && parse(ctx, &key, &l3, port);

	if (record_key) {
		__u32 zero = 0;
		struct fp_parsed *out = bpf_map_lookup_elem(&parsed, &zero);

		if (out) {
			out->ok = ok;
			out->key = key;
			out->hit = 0;
		}
	}
	if (!ok || len > max_frame_len)
		return to_user(ctx, popped);
	__u32 zero = 0;
	__u32 *slot = bpf_map_lookup_elem(&state_slot, &zero);
	if (!slot)
		return to_user(ctx, popped);
	__u32 current = *slot & 1;
	struct fp_state *st = bpf_map_lookup_elem(&state, &current);

	if (!st)
		return to_user(ctx, popped);
	struct fp_flow *f;
	// The flow's own key, for the hash of a tunnel push: masking changes
	// the one looked up.
	struct fp_key flow = key;

	if (st->masked == FP_MASK_BITS) {
		__u16 *k = (__u16 *)&key;
		__u16 *m = (__u16 *)&st->mask;

#pragma unroll
		for (int i = 0; i < FP_KEY_WORDS; i++)
			k[i] &= m[i];
	}
	key.gen = st->generation;
	if (st->masked == FP_MASK_L2)
		f = bpf_map_lookup_elem(&flows_l2, &key); // its first fields
	else
		f = bpf_map_lookup_elem(&flows, &key);
	if (!f || (f->max_len && len > f->max_len))
		return to_user(ctx, popped);
	// A slot emptied under the entry (its interface unregistered) would
	// drop the frame without a trace: user space sends it, and counts
	// what its port cannot take.
	if (f->out != FP_DROP && !bpf_map_lookup_elem(&tx_ports, &f->out))
		return to_user(ctx, popped);
	if (record_key) {
		struct fp_parsed *out = bpf_map_lookup_elem(&parsed, &zero);

		if (out) {
			out->hit = 1;
			out->out = f->out;
		}
	}
#pragma unroll
	for (int i = 0; i < FP_MAX_OPS; i++) {
		if (f->ops[i].type == FP_OP_END)
			break;
		// The operations user space installs always fit the frame of
		// the key; one that does not means the entry is not this frame's.
		if (!run_op(ctx, &f->ops[i], &l3, &flow))
			return XDP_DROP;
	}
	f->packets++;
	f->bytes += len;
	if (f->out == FP_DROP)
		return XDP_DROP;
	// A slot emptied since the lookup above drops the frame: its bytes
	// may already be rewritten.
	return bpf_redirect_map(&tx_ports, f->out, XDP_DROP);
}

char __license[] SEC("license") = "Dual BSD/GPL";
