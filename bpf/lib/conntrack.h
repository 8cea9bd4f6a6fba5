// An entry's connection (FP_OP_CONNTRACK): the frame judged as the
// conntrack package's tracker (user space's, authoritative) would judge
// it, for a connection the tracker established (or, UDP and other
// protocols, has seen several packets of one way) and user space put in
// ct_conns (structs.h's fp_conn), and counted in it. A frame that leaves
// the connection in its state the program carries on, moving it on as
// the tracker would; any other it gives back to user space as it came,
// untouched, for the tracker to judge. That is, a frame is user space's
// when
//
//   - its connection is not in ct_conns, or is past its time (expires);
//   - it goes the reply way of a connection seen one way (orig_only),
//     which it would make one seen both ways, or the entry was made for
//     the connection seen one way and it is now seen both ways, or the
//     other way round (the rules saw another ct_state);
//   - it is not of the connection's protocol, is an IPv4 fragment, or
//     the tracker would call it malformed (conntrack's Decode: a TCP
//     header longer than the packet, a UDP length outside 8 bytes and
//     the packet's);
//   - TCP: it has SYN, FIN or RST, or lacks ACK (without the first three,
//     every flag combination conntrack's tcpInvalidFlags refuses lacks
//     ACK): a change of state, or a reset, is the tracker's;
//   - TCP with sequence checking on: it lies outside its sender's window,
//     by tcpStep's test for a connection whose ends are both established
//     (tcp_judge).
//
// The program checks no address or port: the entry's key must hold the
// connection's tuple (addresses, protocol, ports) as the tracker keys
// it, and only frames the tracker would find the connection by may meet
// the operation.

#ifndef XSWITCH_CONNTRACK_H
#define XSWITCH_CONNTRACK_H

#include <linux/bpf.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "proto.h"
#include "structs.h"
#include "maps.h"
#include "csum.h"
#include "seq.h"

// The flags of a TCP header's 14th byte (linux/tcp.h names the whole
// word's).
#define CT_TCP_FIN 0x01
#define CT_TCP_SYN 0x02
#define CT_TCP_RST 0x04
#define CT_TCP_ACK 0x10

// How far an ack may lag or lead the data it acks, before the ack's
// sender's window scale: a window and a fudge of 1500 (conntrack's
// maxAckWindow, pf's).
#define CT_MAX_ACK_WINDOW (0xffff + 1500)
// The shift of a window (conntrack's wscaleMask): RFC 7323's at most 14.
#define CT_WSCALE_MASK 0x0f

// What the program reads of a TCP segment, as conntrack's Header has it.
struct ct_segment {
	__u32 seq, ack;
	__u32 payload; // bytes after the TCP header, within the IP packet
	__u16 win;     // as sent, unscaled
	__u8 flags;
};

// ct_read reads the frame's IP header, at l3 (the parser's; no operation
// ran before), and its transport header of protocol proto, into *seg for
// TCP. It reports whether the frame is of proto and one the tracker
// would decode, not a fragment.
static __always_inline int ct_read(struct xdp_md *ctx, __u32 l3, __u8 proto, struct ct_segment *seg)
{
	void *end = (void *)(long)ctx->data_end;
	__u8 *ip = (void *)(long)ctx->data + (l3 & HDR_OFF_MASK);
	void *l4;
	__u32 l4_len;
	__u8 next;

	if ((void *)(ip + 1) > end)
		return 0;
	if (ip[0] >> 4 == 4) {
		struct iphdr *h = (void *)ip;

		if ((void *)(h + 1) > end || h->ihl != sizeof(*h) / 4 || h->frag_off & bpf_htons(IP_MF | IP_OFFSET))
			return 0;
		__u16 total = bpf_ntohs(h->tot_len);
		if (total < sizeof(*h))
			return 0;
		l4 = h + 1;
		l4_len = total - sizeof(*h);
		next = h->protocol;
	} else {
		struct ipv6hdr *h = (void *)ip;

		if ((void *)(h + 1) > end)
			return 0;
		l4 = h + 1;
		l4_len = bpf_ntohs(h->payload_len);
		next = h->nexthdr;
	}
	if (next != proto || l4 + l4_len > end)
		return 0;
	switch (proto) {
	case IPPROTO_TCP: {
		struct tcphdr *tcp = l4;

		if ((void *)(tcp + 1) > end)
			return 0;
		__u32 hl = tcp->doff * 4;
		if (hl < sizeof(*tcp) || hl > l4_len)
			return 0;
		seg->seq = bpf_ntohl(tcp->seq);
		seg->ack = bpf_ntohl(tcp->ack_seq);
		seg->win = bpf_ntohs(tcp->window);
		seg->flags = ((__u8 *)tcp)[13];
		seg->payload = l4_len - hl;
		return 1;
	}
	case IPPROTO_UDP: {
		struct udphdr *udp = l4;

		if ((void *)(udp + 1) > end)
			return 0;
		__u16 len = bpf_ntohs(udp->len);
		return len >= sizeof(*udp) && len <= l4_len;
	}
	}
	return 1;
}


// tcp_judge is conntrack's tcpStep for a segment (without SYN, FIN and
// RST, with ACK) from end src to end dst of a connection whose ends are
// both established: where its data ends (its sender's edge if it has
// none) must lie within what the receiver allows, and its start not more
// than the receiver's largest window back; its ack not more than
// CT_MAX_ACK_WINDOW behind what the receiver sent, nor more than that,
// scaled by the sender's shift, ahead. In that window, or with sequence
// checking off, it moves the windows on as tcpAdvance does and reports
// 1; else it changes nothing and reports 0. The ends are locked.
static __always_inline int tcp_judge(struct fp_conn *c, struct fp_conn_dir *src, struct fp_conn_dir *dst,
				     struct ct_segment *s)
{
	__u8 sws = src->wscale & CT_WSCALE_MASK, dws = dst->wscale & CT_WSCALE_MASK;
	__u32 seq = s->seq, end = s->seq + s->payload;

	if (!s->payload)
		seq = end = src->seq_lo;
	__s64 ack_skew = (__s32)(dst->seq_lo - s->ack);
	int in_window = seq_geq(src->seq_hi, end) && seq_geq(seq, src->seq_lo - ((__u32)dst->max_win << dws)) &&
			ack_skew >= -CT_MAX_ACK_WINDOW && ack_skew <= (__s64)CT_MAX_ACK_WINDOW << sws;

	if (!in_window && c->seq_check)
		return 0;
	if (s->win > src->max_win)
		src->max_win = s->win;
	if (!seq_geq(src->seq_lo, end))
		src->seq_lo = end;
	__u32 scaled = (__u32)s->win << sws;
	if (seq_geq(s->ack + scaled, dst->seq_hi))
		dst->seq_hi = s->ack + (scaled ? scaled : 1);
	return 1;
}

// run_conntrack runs an FP_OP_CONNTRACK, of the connection whose handle
// is hi << 32 | lo, as how says (the operation's len), on the frame whose
// IP header is at l3 (fp_run: FP_RUN_OK, or FP_RUN_USER). The frame,
// carried, counts in its direction, and re-arms the connection's timer
// from now (the coarse clock's). A global function, of scalar arguments,
// as run_meter: the verifier checks it once.
__noinline int run_conntrack(struct xdp_md *ctx, __u32 lo, __u32 hi, __u32 how, __u32 l3)
{
	__u32 dir = how & 1, one_way = how >> 1 & 1;
	__u64 handle = (__u64)hi << 32 | lo;
	struct fp_conn *c = bpf_map_lookup_elem(&ct_conns, &handle);
	struct ct_segment seg = {};

	if (!c || (dir && c->orig_only) || one_way != c->orig_only || !ct_read(ctx, l3, c->proto, &seg))
		return FP_RUN_USER;
	int tcp = c->proto == IPPROTO_TCP;

	if (tcp && (seg.flags & (CT_TCP_SYN | CT_TCP_FIN | CT_TCP_RST) || !(seg.flags & CT_TCP_ACK)))
		return FP_RUN_USER;
	// Read before the lock, under which no helper may be called. The
	// coarse clock is CLOCK_MONOTONIC a tick behind at most (4 ms at
	// HZ=250), at a third of bpf_ktime_get_ns's cost here (80 ns of a
	// frame's 290 under BenchmarkFastpathConntrack): a carried connection
	// may outlive its timeout by up to a tick, as the kernel's own
	// conntrack times connections in jiffies. Its timer only moves on:
	// the tracker may have armed it by the precise clock, ahead of this.
	__u64 now = bpf_ktime_get_coarse_ns();
	__u64 len = (long)ctx->data_end - (long)ctx->data;
	struct fp_conn_dir *src = &c->dir[0], *dst = &c->dir[1];

	if (dir) {
		src = &c->dir[1];
		dst = &c->dir[0];
	}
	bpf_spin_lock(&c->lock);
	int carried = now < c->expires && (!tcp || tcp_judge(c, src, dst, &seg));

	if (carried) {
		if (now + c->timeout > c->expires)
			c->expires = now + c->timeout;
		src->last_seen = now;
		src->packets++;
		src->bytes += len;
	}
	bpf_spin_unlock(&c->lock);
	return carried ? FP_RUN_OK : FP_RUN_USER;
}

#endif
