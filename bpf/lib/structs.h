// The fast path's types that user space shares: the key the parser reads,
// the entries user space installs, the bridge's state, the tunnels' outer
// headers and what claims a frame for a tunnel, the reasons it drops a
// frame. bpf2go generates their Go mirrors (fastpath_bpfel.go); the
// asserts below hold the layouts the program and user space rely on
// beyond that.

#ifndef XSWITCH_STRUCTS_H
#define XSWITCH_STRUCTS_H

#include <stddef.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>

#include "proto.h"

// The bridge's ports by slot, at most (maps.h's tx_ports, entry.h's
// fp_sockets).
#define FP_MAX_PORTS 4096

// The key's VLAN TCI is the outer tag's of up to MAX_VLAN_TAGS, with
// VLAN_CFI set when the frame has a tag, and its nw_frag the fragment
// bits, as OVS's flow and flow.Headers have them.
#define MAX_VLAN_TAGS 2
#define VLAN_CFI 0x1000
#define FLOW_NW_FRAG_ANY 1   // a fragment
#define FLOW_NW_FRAG_LATER 2 // not the first

// The key keeps the frame's byte order but where it says otherwise:
// user space compares it with flow.Headers through FastpathFpKey's
// conversion.
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
	__u8 nw_src[4]; // IPv6: the flow label, 20 bits
	__u8 nw_dst[4];
	__u8 ipv6_src[16]; // ARP: arp_sha and arp_tha
	__u8 ipv6_dst[16];
	__u16 tp_src; // ICMP: the type, as a 16-bit value in network order
	__u16 tp_dst; // ICMP: the code
};

// The program masks a key 16 bits at a time (fastpath.c's lookup).
#define FP_KEY_WORDS (sizeof(struct fp_key) / sizeof(__u16))

_Static_assert(sizeof(struct fp_key) % sizeof(__u16) == 0, "the key masks in whole 16-bit words");

// The first fields of fp_key, in its order: NORMAL's, the VNI (which the
// VNI a frame leaves a tunnel with may be) and the generation. The
// program looks flows_l2 up with a struct fp_key, whose first
// sizeof(struct fp_l2_key) bytes are the hash map's key.
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

#define FP_L2_KEY_FIELD(f)                                                                                           \
	_Static_assert(offsetof(struct fp_l2_key, f) == offsetof(struct fp_key, f) &&                                \
			       sizeof(((struct fp_l2_key *)0)->f) == sizeof(((struct fp_key *)0)->f),                \
		       "fp_l2_key's " #f " is fp_key's")
FP_L2_KEY_FIELD(dl_dst);
FP_L2_KEY_FIELD(dl_src);
FP_L2_KEY_FIELD(in_port);
FP_L2_KEY_FIELD(dl_type);
FP_L2_KEY_FIELD(vlan_tci);
FP_L2_KEY_FIELD(pad);
FP_L2_KEY_FIELD(tun_id);
FP_L2_KEY_FIELD(gen);
_Static_assert(sizeof(struct fp_l2_key) == offsetof(struct fp_key, tun_src), "fp_l2_key is the start of fp_key");

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
	FP_OP_SET_TCI, // the outer tag's TCI: the bits of mask become tci's
	FP_OP_SET_L3,  // len bytes at off in the IP header become value's
	FP_OP_SET_L4,  // the same in the TCP or UDP header
	// The outer headers of tunnel slot tunnel, with VNI vni: the last
	// operation, before the output to the tunnel's underlay.
	FP_OP_TUNNEL_PUSH,
	// The frame through the meter in slot tunnel of meters, if it is still
	// meter delta's (fp_meter): its bands may drop the frame, or remark
	// the DSCP of its IP header, of version len (4 or 6; 0: none). The
	// first operation but a connection's, if there is one.
	FP_OP_METER,
	// The frame checked against, and counted in, connection handle of
	// ct_conns (conntrack.h) as len says: its bit 0 the direction (0: the
	// original, 1: the reply), its bit 1 that the entry is for the
	// connection seen one way (fp_conn's orig_only), so that a connection
	// since seen both ways, whose frames the rules may treat otherwise,
	// is user space's. delta holds the handle's low 32 bits, tunnel its
	// high ones. The entry's first operation, if there is one, for it may
	// give the frame back to user space, which must find it as it came.
	FP_OP_CONNTRACK,
};

// Which checksums an FP_OP_SET_L3 or FP_OP_SET_L4 updates, by adding
// delta (RFC 1624's ~m + m', worked out by user space from the flow's
// exact key).
enum fp_csum {
	FP_CSUM_L3 = 1,
	FP_CSUM_TCP = 2,
	FP_CSUM_UDP = 4,
};

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
	// FP_OP_SET_L3, FP_OP_SET_L4; FP_OP_TUNNEL_PUSH: the VNI; FP_OP_METER: the meter's id;
	// FP_OP_CONNTRACK: the handle's low 32 bits.
	__u32 delta;
	// FP_OP_TUNNEL_PUSH: the tunnel's slot in tunnels; FP_OP_METER: the meter's in meters;
	// FP_OP_CONNTRACK: the handle's high 32 bits.
	__u32 tunnel;
};

#define FP_MAX_OPS 6
#define FP_OUT_DROP 0xffffffff // an entry's out for a flow that goes nowhere (bpf.FPDrop)

struct fp_flow {
	__u32 out; // index into tx_ports, or FP_OUT_DROP
	// max_len is the longest frame the entry carries (0: any): a longer
	// one goes to user space before any operation, which counts it as too
	// long for the tunnel it would enter.
	__u32 max_len;
	struct fp_op ops[FP_MAX_OPS];
	// This CPU's count of the frames and bytes the entry carried, and of
	// them, those its meter dropped. When it last carried one is when the
	// sweeper finds the count grown: a clock read per frame would cost
	// more than the lookup.
	__u64 packets, bytes;
	__u64 metered, metered_bytes;
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

struct fp_state {
	__u64 generation; // of the bridge: entries of another are misses
	__u32 masked;     // FP_MASK_*
	__u32 pad;
	struct fp_key mask; // FP_MASK_BITS
};

// The outer headers of a tunnel port (tunnel.Encap's: Ethernet, IPv4,
// UDP and VXLAN or Geneve without options), with the datagram's lengths,
// ID, checksum, UDP source port and VNI zero; ip_sum is the
// one's-complement sum of the IPv4 header so, unfolded.
#define TUNNEL_OVERHEAD 50

_Static_assert(TUNNEL_OVERHEAD ==
		       sizeof(struct ethhdr) + sizeof(struct iphdr) + sizeof(struct udphdr) + sizeof(struct vxlan_hdr),
	       "a tunnel's outer headers are Ethernet, IPv4 without options, UDP and VXLAN or Geneve");

struct fp_tunnel {
	__u8 hdr[TUNNEL_OVERHEAD];
	__u16 pad;
	__u32 ip_sum;
};

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

// Meters (switch/meters.go, flow.MaxMeters and flow.MaxMeterBands): the
// bridge's, each in a slot of meters, whose memory user space maps. Each
// band's tat is the theoretical arrival time of its GCRA (the generic
// cell rate algorithm, a token bucket kept as a time), on the kernel's
// CLOCK_MONOTONIC in nanoseconds: a frame finds the band's rate exceeded
// when tat lies more than tolerance ahead of now, and a frame the band
// lets through moves tat on by its cost at the band's rate. User space
// and the programs update the same tat with atomic operations, so a
// meter has one budget whichever path carries its frames. The rest, the
// configuration, is written by user space alone.
#define FP_MAX_METERS 1024
#define FP_MAX_BANDS 8

// The band types, OpenFlow's OFPMBT_*.
enum fp_band_type {
	FP_BAND_DROP = 1,
	FP_BAND_DSCP_REMARK = 2,
};

struct fp_band {
	__u64 tat;       // atomic, in the program and in user space
	__u64 tolerance; // ns: the burst the band takes at its rate
	__u32 rate;      // kilobits or packets a second, as the meter's pktps says
	__u8 type;       // fp_band_type
	__u8 prec_level; // FP_BAND_DSCP_REMARK: drop precedence levels to add
	__u16 pad;
};

struct fp_meter {
	__u32 id; // the OpenFlow meter in the slot; 0: none
	__u8 pktps;
	__u8 n_bands;
	__u16 pad;
	struct fp_band bands[FP_MAX_BANDS];
};

_Static_assert(offsetof(struct fp_meter, bands) % 8 == 0 && sizeof(struct fp_band) % 8 == 0 &&
		       sizeof(struct fp_meter) % 8 == 0,
	       "every tat is 8-byte aligned in the map's memory, for the atomics of both sides");

// What the programs counted of a meter, per CPU: the frames and bytes
// sent through it, and those each band applied to. User space adds its
// own.
struct fp_meter_counts {
	__u64 packets, bytes;
	__u64 band_packets[FP_MAX_BANDS];
	__u64 band_bytes[FP_MAX_BANDS];
};

// Connections the conntrack package's tracker established, which the
// programs carry (conntrack.h), in ct_conns under the tracker's handle:
// user space puts each in whole, as the tracker's KernelState gives it,
// and reads it back, under the entry's lock, which the programs take for
// each frame they judge. The state of each direction is its sender's end
// (conntrack's tcpPeer, with the window scale tcpStep applies to it
// once both ends are established) and what the programs carried of it.
struct fp_conn_dir {
	// When the programs last carried a frame of the direction, on the
	// kernel's CLOCK_MONOTONIC in nanoseconds (the tracker's clock; 0:
	// none yet), and how many frames and bytes they carried.
	__u64 last_seen;
	__u64 packets, bytes;
	// TCP: the end of what the sender has sent, the most it may send,
	// its largest window (as sent, unscaled) and the shift of its windows.
	__u32 seq_lo, seq_hi;
	__u16 max_win;
	__u8 wscale;
	__u8 pad;
	__u32 pad2;
};

struct fp_conn {
	struct bpf_spin_lock lock;
	__u8 proto;     // the connection's IP protocol: a frame of another is user space's
	__u8 seq_check; // TCP: 1: a segment out of its window is user space's; 0: any passes
	// 1: a frame going the reply way is user space's: it would make a
	// connection seen one way (UDP, other protocols) one seen both ways.
	__u8 orig_only;
	__u8 pad;
	// When the connection times out, on the tracker's clock, unless a
	// frame comes before: each frame carried moves it to timeout
	// nanoseconds after the frame, as the tracker re-arms its timer.
	__u64 expires;
	__u64 timeout;
	struct fp_conn_dir dir[2]; // by direction: 0 the original, 1 the reply
};

// What the program stores of each frame with record_key set (tests).
struct fp_parsed {
	__u32 ok; // 1: the key is the frame's; 0: the parser gave up
	struct fp_key key;
	__u32 hit; // 1: an entry took the frame
	__u32 out; // its out
};

// Why the program dropped a frame: the index of its count in drops.
enum fp_drop_reason {
	FP_DROP_RULE = 0,  // the entry's: the rules send the flow nowhere
	FP_DROP_OP_FAILED, // an operation did not fit the frame (run_ops)
	FP_DROP_PORT_GONE, // the output's tx_ports slot emptied since the lookup
	FP_DROP_RESTORE,   // a tunnel frame's popped headers could not be put back
	FP_DROP_METER,     // a drop band of the entry's meter
	FP_DROP_REASONS,   // how many there are
};

// What an entry's operations make of a frame (fastpath.c, actions.h):
// the program's own, user space never sees it.
enum fp_run {
	FP_RUN_OK = 0,
	FP_RUN_FAILED,  // an operation did not fit the frame
	FP_RUN_METERED, // a drop band of the entry's meter applied
	FP_RUN_USER,    // the frame is user space's to judge (conntrack.h), as it came
};

#endif
