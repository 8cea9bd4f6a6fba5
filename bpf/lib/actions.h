// The operations of an entry (fp_op_type), run on the frame in order:
// MAC and VLAN rewrites, tag push and pop, IP and L4 field rewrites with
// their checksums (csum.h), a meter (meter.h), and the push of a tunnel's
// outer headers (encap.h). A connection's (conntrack.h) and a meter come
// first, and fastpath.c runs them.

#ifndef XSWITCH_ACTIONS_H
#define XSWITCH_ACTIONS_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>

#include "proto.h"
#include "structs.h"
#include "csum.h"
#include "encap.h"
#include "hash.h"
#include "meter.h"

static __always_inline int set_dl(struct xdp_md *ctx, struct fp_op *op)
{
	struct ethhdr *eth = (void *)(long)ctx->data;

	if ((void *)(eth + 1) > (void *)(long)ctx->data_end)
		return 0;
	__builtin_memcpy(op->type == FP_OP_SET_DL_DST ? eth->h_dest : eth->h_source, op->mac, ETH_ALEN);
	return 1;
}

// pop_vlan drops the outer tag: the MACs move up over its TPID and TCI,
// and the EtherType (or TPID) behind it becomes the frame's.
static __always_inline int pop_vlan(struct xdp_md *ctx, __u32 *l3)
{
	void *data = (void *)(long)ctx->data;
	__u8 macs[2 * ETH_ALEN];

	if (data + sizeof(struct vlan_ethhdr) > (void *)(long)ctx->data_end)
		return 0;
	__builtin_memcpy(macs, data, sizeof(macs));
	if (bpf_xdp_adjust_head(ctx, sizeof(struct vlan_hdr)))
		return 0;
	data = (void *)(long)ctx->data;
	if (data + sizeof(macs) > (void *)(long)ctx->data_end)
		return 0;
	__builtin_memcpy(data, macs, sizeof(macs));
	*l3 -= sizeof(struct vlan_hdr);
	return 1;
}

// push_vlan puts a tag of op's TPID in front of the frame's EtherType, or
// of its outer tag, whose TCI bits op's mask names it copies.
static __always_inline int push_vlan(struct xdp_md *ctx, struct fp_op *op, __u32 *l3)
{
	void *data = (void *)(long)ctx->data;
	__u8 macs[2 * ETH_ALEN];

	if (data + ETH_HLEN > (void *)(long)ctx->data_end)
		return 0;
	__builtin_memcpy(macs, data, sizeof(macs));
	if (bpf_xdp_adjust_head(ctx, -(int)sizeof(struct vlan_hdr)))
		return 0;
	struct vlan_ethhdr *eth = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;

	if ((void *)(eth + 1) > end)
		return 0;
	// The MACs move down, and what followed them, the EtherType or the
	// outer tag's TPID, is now eth's h_vlan_encapsulated_proto.
	__builtin_memcpy(eth, macs, sizeof(macs));
	__be16 outer_tci = 0;

	if (op->mask) {
		struct vlan_hdr *outer = (void *)(eth + 1);

		if ((void *)(outer + 1) > end)
			return 0;
		outer_tci = outer->h_vlan_TCI;
	}
	eth->h_vlan_proto = op->tpid;
	eth->h_vlan_TCI = (op->tci & ~op->mask) | (outer_tci & op->mask);
	*l3 += sizeof(struct vlan_hdr);
	return 1;
}

static __always_inline int set_tci(struct xdp_md *ctx, struct fp_op *op)
{
	struct vlan_ethhdr *eth = (void *)(long)ctx->data;

	if ((void *)(eth + 1) > (void *)(long)ctx->data_end)
		return 0;
	eth->h_vlan_TCI = (eth->h_vlan_TCI & ~op->mask) | (op->tci & op->mask);
	return 1;
}

// A bound the verifier can follow for a field's offset in its header: the
// fields rewritten lie in an IPv6 header's 40 bytes at most.
#define FIELD_OFF_MASK 0x3f
_Static_assert(sizeof(struct ipv6hdr) <= FIELD_OFF_MASK + 1, "the mask keeps every field's offset");

// set_field writes an FP_OP_SET_L3 or FP_OP_SET_L4 at hdr (the IP or L4
// header's offset, l3 or l4) and updates the checksums it names.
static __always_inline int set_field(struct xdp_md *ctx, struct fp_op *op, __u32 l3, __u32 l4, __u32 hdr)
{
	__u8 *field = (void *)(long)ctx->data + (hdr & HDR_OFF_MASK) + (op->off & FIELD_OFF_MASK);

	if ((void *)(field + sizeof(op->value)) > (void *)(long)ctx->data_end)
		return 0;
#pragma unroll
	for (int i = 0; i < sizeof(op->value); i++)
		if (i < op->len)
			field[i] = op->value[i];
	return update_csums(ctx, l3, l4, op->csums, op->delta);
}

// run_op runs one operation but a tunnel push on the frame whose IP
// header, ip_len bytes long, is at *l3.
static __always_inline int run_op(struct xdp_md *ctx, struct fp_op *op, __u32 *l3, __u32 ip_len)
{
	switch (op->type) {
	case FP_OP_SET_DL_SRC:
	case FP_OP_SET_DL_DST:
		return set_dl(ctx, op);
	case FP_OP_POP_VLAN:
		return pop_vlan(ctx, l3);
	case FP_OP_PUSH_VLAN:
		return push_vlan(ctx, op, l3);
	case FP_OP_SET_TCI:
		return set_tci(ctx, op);
	case FP_OP_SET_L3:
		return set_field(ctx, op, *l3, *l3 + ip_len, *l3);
	case FP_OP_SET_L4:
		return set_field(ctx, op, *l3, *l3 + ip_len, *l3 + ip_len);
	}
	return 1;
}

// run_ops runs f's operations on the frame, whose IP header is at l3, of
// the flow whose key is flow (fp_run). It fails when the frame no longer
// has the room or the tag an operation needs, which user space never
// installs for the frame's key (only a driver without headroom for a tag
// could cause it): the entry is not this frame's, whose bytes may be half
// rewritten.
static __always_inline int run_ops(struct xdp_md *ctx, struct fp_flow *f, __u32 l3, struct fp_key *flow)
{
	struct fp_op *push = NULL;
	// The parser takes IPv4 without options and IPv6 without extension
	// headers (but the two that end the chain, which have no ports).
	__u32 ip_len = flow->dl_type == bpf_htons(ETH_P_IPV6) ? sizeof(struct ipv6hdr) : sizeof(struct iphdr);

#pragma unroll
	for (int i = 0; i < FP_MAX_OPS; i++) {
		struct fp_op *op = &f->ops[i];

		if (op->type == FP_OP_END)
			break;
		if (op->type == FP_OP_TUNNEL_PUSH) {
			push = op; // always the last (fp_op_type)
			break;
		}
		if (op->type == FP_OP_CONNTRACK || op->type == FP_OP_METER)
			continue; // the first ones, which fastpath.c ran before
		if (!run_op(ctx, op, &l3, ip_len))
			return FP_RUN_FAILED;
	}
	// Out of the loop, the flow's hash is worked out for a push alone:
	// in it, the compiler hoists the hash ahead of the operations, and
	// every frame an entry takes pays for it (30 ns under BPF_PROG_RUN).
	if (push && !tunnel_push(ctx, push, flow_hash(flow)))
		return FP_RUN_FAILED;
	return FP_RUN_OK;
}

#endif
