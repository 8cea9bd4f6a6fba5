// The fast path's parser: it reads a frame's flow key as flow.Extractor
// does, for the frames it can read whole, and gives up on the rest, which
// user space keeps parsing (and counting, when they are malformed) as it
// does without the fast path. What it reads: Ethernet II, up to two
// 802.1Q/802.1ad tags (behind a third, dl_type is that tag's TPID, as in
// OVS and the extractor), ARP for IPv4 over Ethernet, IPv4 without
// options whose lengths hold, IPv6 without extension headers, and TCP,
// UDP, SCTP, ICMP and ICMPv6 headers. It gives up on 802.3 frames, IPv4
// options, IPv6 extension headers, IPv6 neighbour discovery (whose
// target and link-layer addresses the key has no room for), MPLS (whose
// label stack, and the packet under it, the key has no room for either),
// multicast source addresses and anything cut short.
//
// The key holds some fields of the flow key where others that never
// meet them in one frame are (bpf.KeyOf): an IPv6 frame's flow label in
// nw_src, an ARP frame's hardware addresses in ipv6_src.

#ifndef XSWITCH_PARSE_H
#define XSWITCH_PARSE_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "proto.h"
#include "structs.h"

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
		struct tcphdr *tcp = take(c, sizeof(*tcp));

		if (!tcp || c->pos > ip_end)
			return 0;
		if (tcp->doff < sizeof(*tcp) / 4 || (void *)tcp + tcp->doff * 4 > ip_end)
			return 0;
		k->tp_src = tcp->source;
		k->tp_dst = tcp->dest;
		return 1;
	}
	case IPPROTO_UDP: {
		struct udphdr *udp = take(c, sizeof(*udp));

		if (!udp || c->pos > ip_end)
			return 0;
		// A length under the header's own (but 0, a jumbogram's) is
		// malformed to the extractor.
		__u16 len = bpf_ntohs(udp->len);
		if (len != 0 && len < sizeof(*udp))
			return 0;
		k->tp_src = udp->source;
		k->tp_dst = udp->dest;
		return 1;
	}
	case IPPROTO_SCTP: {
		struct sctp_common *sctp = take(c, sizeof(*sctp));

		if (!sctp || c->pos > ip_end)
			return 0;
		k->tp_src = sctp->source;
		k->tp_dst = sctp->dest;
		return 1;
	}
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6: {
		// ICMPv6's header is its common part; the extractor asks
		// ICMPv4's to be whole.
		struct icmp_common *icmp = take(c, ipv6 ? sizeof(*icmp) : ICMPV4_HLEN);

		if (!icmp || c->pos > ip_end)
			return 0;
		if (ipv6 && icmp->code == 0 &&
		    (icmp->type == NDISC_NEIGHBOUR_SOLICITATION || icmp->type == NDISC_NEIGHBOUR_ADVERTISEMENT))
			return 0;
		k->tp_src = bpf_htons(icmp->type);
		k->tp_dst = bpf_htons(icmp->code);
		return 1;
	}
	}
	return 1;
}

static __always_inline int parse_ipv4(struct cursor *c, struct fp_key *k)
{
	struct iphdr *ip = take(c, sizeof(*ip));

	if (!ip || ip->version != 4 || ip->ihl != sizeof(*ip) / 4)
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
	if (frag & (IP_MF | IP_OFFSET))
		k->nw_frag = FLOW_NW_FRAG_ANY;
	if (frag & IP_OFFSET) {
		k->nw_frag |= FLOW_NW_FRAG_LATER;
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
	case IPPROTO_HOPOPTS:
	case IPPROTO_ROUTING:
	case IPPROTO_FRAGMENT:
	case IPPROTO_AH:
	case IPPROTO_DSTOPTS:
		return 0;
	}
	__builtin_memcpy(k->ipv6_src, &ip->saddr, 16);
	__builtin_memcpy(k->ipv6_dst, &ip->daddr, 16);
	k->nw_proto = ip->nexthdr;
	k->nw_tos = ip->priority << 4 | ip->flow_lbl[0] >> 4;
	k->nw_ttl = ip->hop_limit;
	k->nw_src[1] = ip->flow_lbl[0] & 0x0f; // the flow label, in nw_src
	k->nw_src[2] = ip->flow_lbl[1];
	k->nw_src[3] = ip->flow_lbl[2];
	return parse_l4(c, c->pos + payload, k, 1);
}

static __always_inline int parse_arp(struct cursor *c, struct fp_key *k)
{
	struct arp_eth_ipv4 *arp = take(c, sizeof(*arp));

	if (!arp || arp->ar_hrd != bpf_htons(ARPHRD_ETHER) || arp->ar_pro != bpf_htons(ETH_P_IP) ||
	    arp->ar_hln != ETH_ALEN || arp->ar_pln != 4)
		return 0;
	// As the extractor, the opcode's low 8 bits.
	k->nw_proto = bpf_ntohs(arp->ar_op) & 0xff;
	__builtin_memcpy(k->nw_src, arp->ar_sip, 4);
	__builtin_memcpy(k->nw_dst, arp->ar_tip, 4);
	__builtin_memcpy(k->ipv6_src, arp->ar_sha, ETH_ALEN); // arp_sha and arp_tha, in ipv6_src
	__builtin_memcpy(k->ipv6_src + ETH_ALEN, arp->ar_tha, ETH_ALEN);
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
	__builtin_memcpy(k->dl_dst, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(k->dl_src, eth->h_source, ETH_ALEN);
	k->in_port = port;
	__be16 type = eth->h_proto;

#pragma unroll
	for (int i = 0; i < MAX_VLAN_TAGS; i++) {
		if (type != bpf_htons(ETH_P_8021Q) && type != bpf_htons(ETH_P_8021AD))
			break;
		struct vlan_hdr *tag = take(&c, sizeof(*tag));
		if (!tag)
			return 0;
		if (i == 0)
			k->vlan_tci = tag->h_vlan_TCI | bpf_htons(VLAN_CFI);
		type = tag->h_vlan_encapsulated_proto;
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
	case bpf_htons(ETH_P_MPLS_UC):
	case bpf_htons(ETH_P_MPLS_MC):
		return 0;
	}
	return 1;
}

#endif
