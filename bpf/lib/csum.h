// One's-complement checksums (RFC 1071), updated incrementally (RFC 1624)
// as user space does it (switch/rewrite.go's updateChecksum): the program
// never sums a whole header, it adds what user space worked out the
// rewrite changes.

#ifndef XSWITCH_CSUM_H
#define XSWITCH_CSUM_H

#include <stddef.h>
#include <linux/bpf.h>
#include <linux/ip.h>
#include <linux/tcp.h>
#include <linux/udp.h>

#include "structs.h"

// csum_fold folds a 32-bit one's-complement sum into 16 bits and
// complements it: the checksum field of a header that sums to sum.
static __always_inline __u16 csum_fold(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

// add_csum adds delta to the checksum at csum, in network order:
// HC' = ~(~HC + delta).
static __always_inline void add_csum(__u8 *csum, __u32 delta)
{
	__u16 sum = csum_fold((__u16)~(csum[0] << 8 | csum[1]) + delta);

	csum[0] = sum >> 8;
	csum[1] = sum;
}

// A bound the verifier can follow for a header's offset in the frame: the
// network header starts behind the tags the parser read and those the
// operations before pushed (one each at most), and an L4 header an IPv4
// header later.
#define HDR_OFF_MASK 0x7f
_Static_assert(ETH_HLEN + (MAX_VLAN_TAGS + FP_MAX_OPS) * sizeof(struct vlan_hdr) + sizeof(struct ipv6hdr) <= HDR_OFF_MASK,
	       "the mask keeps every header's offset");

// update_csums adds an FP_OP_SET_L3's or FP_OP_SET_L4's delta to the
// checksums csums names, in the frame whose IP header is at l3 and
// transport header at l4; it returns 0 if one lies past the frame's end.
static __always_inline int update_csums(struct xdp_md *ctx, __u32 l3, __u32 l4, __u8 csums, __u32 delta)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;

	if (csums & FP_CSUM_L3) {
		__u8 *csum = data + (l3 & HDR_OFF_MASK) + offsetof(struct iphdr, check);

		if ((void *)(csum + 2) > end)
			return 0;
		add_csum(csum, delta);
	}
	if (csums & (FP_CSUM_TCP | FP_CSUM_UDP)) {
		__u8 *csum = data + (l4 & HDR_OFF_MASK) +
			     (csums & FP_CSUM_TCP ? offsetof(struct tcphdr, check) : offsetof(struct udphdr, check));

		if ((void *)(csum + 2) > end)
			return 0;
		// A UDP checksum of 0 means none, and one that comes out 0 is
		// sent as 0xffff (RFC 768).
		if (csums & FP_CSUM_UDP && !(csum[0] | csum[1]))
			return 1;
		add_csum(csum, delta);
		if (csums & FP_CSUM_UDP && !(csum[0] | csum[1]))
			csum[0] = csum[1] = 0xff;
	}
	return 1;
}

#endif
