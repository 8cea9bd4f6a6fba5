// An entry's meter (FP_OP_METER): the frame measured against the bands of
// a meter of meters, whose budget user space shares (structs.h's
// fp_meter, switch/meters.go's same arithmetic in Go), and the band that
// applies, if one does: a drop, or a remark of the DSCP.

#ifndef XSWITCH_METER_H
#define XSWITCH_METER_H

#include <linux/bpf.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>

#include "structs.h"
#include "maps.h"
#include "csum.h"

#define NSEC_PER_SEC 1000000000ULL
// A frame's cost at a band of rate kbps is its bits over the rate:
// bytes * 8 * 10^6 / kbps nanoseconds.
#define NSEC_BITS_PER_KBPS 8000000ULL

// take_budget moves a band's tat on by cost, from now if it lies behind:
// the frame took its part of the band's budget. Another CPU, or user
// space, may move it at the same time: a tat ahead of now only grows, by
// an atomic add; one behind is set by compare-and-swap, and if another
// moved it meanwhile (to now or later: the clock is one), the add.
static __always_inline void take_budget(__u64 *tat, __u64 now, __u64 cost)
{
	__u64 old = *(volatile __u64 *)tat;

	if (old < now && __sync_val_compare_and_swap(tat, old, now + cost) == old)
		return;
	__sync_fetch_and_add(tat, cost);
}

// raise_drop_precedence raises the drop precedence of the DSCP in the
// TOS (traffic class) byte tos by levels, up to the highest: the DSCP's
// bits 2 and 1, RFC 2597's drop precedence of the AF classes, the TOS
// byte's bits 4 and 3. The class and ECN bits stay.
static __always_inline __u8 raise_drop_precedence(__u8 tos, __u8 levels)
{
	__u32 dp = ((tos >> 3) & 3) + levels;

	if (dp > 3)
		dp = 3;
	return (tos & ~0x18) | dp << 3;
}

// remark raises the drop precedence of the DSCP of the frame's IP header,
// at l3, of version ip (4: with its checksum; 6: the traffic class, across
// its first two bytes; other: none).
static __always_inline int remark(struct xdp_md *ctx, __u32 l3, __u8 ip, __u8 levels)
{
	__u8 *hdr = (void *)(long)ctx->data + (l3 & HDR_OFF_MASK);

	if ((void *)(hdr + 2) > (void *)(long)ctx->data_end)
		return 0;
	if (ip == 4) {
		__u16 old = hdr[0] << 8 | hdr[1];

		hdr[1] = raise_drop_precedence(hdr[1], levels);
		return update_csums(ctx, l3, 0, FP_CSUM_L3, (__u16)~old + (hdr[0] << 8 | hdr[1]));
	}
	if (ip == 6) {
		__u8 tc = raise_drop_precedence(hdr[0] << 4 | hdr[1] >> 4, levels);

		hdr[0] = (hdr[0] & 0xf0) | tc >> 4;
		hdr[1] = (hdr[1] & 0x0f) | tc << 4;
	}
	return 1;
}

// run_meter runs meter id, in slot of meters, on the frame whose IP
// header, of version ip, is at l3 (fp_run). As OpenFlow has it, the band
// that applies is the one of the highest rate among those the frame
// exceeds; a frame it drops takes nothing of any band's budget, and one
// it lets through (remarked or not) takes its cost of every band it does
// not exceed, so that a remark band's frames still count against the
// rates above it. A slot no longer the meter's (deleted, and its rules
// with it) meters nothing. A global function, of scalar arguments: the
// verifier checks it once, apart from the program's every way to it.
__noinline int run_meter(struct xdp_md *ctx, __u32 slot, __u32 id, __u32 ip, __u32 l3)
{
	struct fp_meter *m = bpf_map_lookup_elem(&meters, &slot);

	if (!m || m->id != id)
		return FP_RUN_OK;
	struct fp_meter_counts *c = bpf_map_lookup_elem(&meter_counts, &slot);
	__u64 now = bpf_ktime_get_ns();
	__u64 len = (long)ctx->data_end - (long)ctx->data;
	__u64 units = m->pktps ? NSEC_PER_SEC : len * NSEC_BITS_PER_KBPS;
	__u32 n = m->n_bands;
	__u64 exceeded = 0, rate = 0;
	__s64 applied = -1;

	// Without a branch in the loop, so that the verifier follows one way
	// through it, not one for each band exceeded or not: the differences
	// of times and of rates are far from 2^63, and their sign bits say
	// which is the greater; barrier_var (bpf_helpers.h) keeps the
	// compiler from making the choice by a mask a branch again.
	for (int i = 0; i < FP_MAX_BANDS && i < n; i++) {
		struct fp_band *b = &m->bands[i];
		__u64 over = (now + b->tolerance - *(volatile __u64 *)&b->tat) >> 63;
		__u64 r = b->rate & -over;
		__u64 higher = (rate - r) >> 63;

		barrier_var(higher);
		rate += (r - rate) & -higher;
		applied += (i - applied) & -(__s64)higher;
		exceeded |= over << i;
	}
	if (c) {
		c->packets++;
		c->bytes += len;
	}
	if (applied >= 0 && applied < FP_MAX_BANDS) {
		struct fp_band *b = &m->bands[applied];

		if (c) {
			c->band_packets[applied]++;
			c->band_bytes[applied] += len;
		}
		if (b->type == FP_BAND_DROP)
			return FP_RUN_METERED;
		if (b->type == FP_BAND_DSCP_REMARK && !remark(ctx, l3, ip, b->prec_level))
			return FP_RUN_FAILED;
	}
	for (int i = 0; i < FP_MAX_BANDS && i < n; i++) {
		struct fp_band *b = &m->bands[i];

		if (!(exceeded & 1 << i) && b->rate)
			take_budget(&b->tat, now, units / b->rate);
	}
	return FP_RUN_OK;
}

#endif
