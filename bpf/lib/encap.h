// Tunnel push and pop in the kernel: tunnel_push puts a tunnel port's
// outer headers in front of a frame that leaves by it, as
// tunnel.Encap.Encapsulate does; tunnel_pop takes them off a frame from
// the underlay, as tunnel.DecapsulateFor does, when it is well formed and
// from a tunnel the bridge has. Which frames are a tunnel's at all is
// tunnel.h's.

#ifndef XSWITCH_ENCAP_H
#define XSWITCH_ENCAP_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "proto.h"
#include "structs.h"
#include "maps.h"
#include "csum.h"
#include "tunnel.h"

// The UDP source ports a tunnel's datagrams come from (tunnel.go's
// srcPortMin and srcPortMax: the kernel's ephemeral range).
#define TUNNEL_SRC_PORT_MIN 32768
#define TUNNEL_SRC_PORTS (60999 - 32768 + 1)

// tunnel_push puts the outer headers of op's tunnel in front of the
// frame: its lengths, an IPv4 ID and checksum, the UDP source port hash
// picks, and op's VNI.
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
	struct vxlan_hdr *tun = (void *)(udp + 1); // or Geneve's: the VNI is at one place
	__u32 ip_len = (inner + TUNNEL_OVERHEAD - ETH_HLEN) & 0xffff;
	// The outer datagrams have DF clear and so may be fragmented on the
	// way: an ID that is not a per-CPU count, which two CPUs would
	// repeat.
	__u32 id = bpf_get_prandom_u32() & 0xffff;

	ip->tot_len = bpf_htons(ip_len);
	ip->id = bpf_htons(id);
	ip->check = bpf_htons(csum_fold(t->ip_sum + ip_len + id));
	udp->source = bpf_htons(TUNNEL_SRC_PORT_MIN + hash % TUNNEL_SRC_PORTS);
	udp->len = bpf_htons(ip_len - sizeof(*ip));
	tun->vni = bpf_htonl(op->delta << 8);
	return 1;
}

// A bound the verifier can follow for the outer IPv4 header's offset:
// tunnel_frame takes one tag at most.
#define OUTER_L3_OFF_MASK 0x1f
_Static_assert(ETH_HLEN + sizeof(struct vlan_hdr) <= OUTER_L3_OFF_MASK, "the mask keeps the outer IPv4 header's offset");

// tunnel_pop reads a frame from the underlay whose slot is underlay: a
// datagram for a listened pair (o), well formed as tunnel.DecapsulateFor
// reads it, of a tunnel that tunnels_in has. It fills the key's input
// port and tunnel fields and returns the length of the outer headers, or
// 0 for a frame that is user space's to take apart, count and drop:
// malformed, a fragment, a Geneve critical option, an IPv4 header with
// options, padding past the datagram, or a remote and VNI no tunnel has.
static __always_inline __u32 tunnel_pop(struct xdp_md *ctx, struct tunnel_outer *o, __u16 underlay, struct fp_key *k)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct iphdr *ip = data + (o->l3 & OUTER_L3_OFF_MASK);

	if ((void *)(ip + 1) > end || ip->ihl != sizeof(*ip) / 4 || bpf_ntohs(ip->frag_off) & (IP_MF | IP_OFFSET))
		return 0;
	struct udphdr *udp = (void *)(ip + 1);
	struct vxlan_hdr *tun = (void *)(udp + 1); // or Geneve's: both are 8 bytes, the VNI at one place

	if ((void *)(tun + 1) > end)
		return 0;
	__u16 ip_len = bpf_ntohs(ip->tot_len);
	if ((void *)ip + ip_len != end || bpf_ntohs(udp->len) != ip_len - sizeof(*ip))
		return 0;
	__u32 opts = 0;

	if (o->kind == TUNNEL_VXLAN) {
		if (!(tun->flags & VXLAN_F_VNI))
			return 0;
	} else {
		struct geneve_hdr *g = (void *)tun;

		if (g->ver_opt_len >> GENEVE_VER_SHIFT || g->flags & GENEVE_F_CRITICAL || g->proto_type != bpf_htons(ETH_P_TEB))
			return 0;
		opts = (g->ver_opt_len & GENEVE_OPT_LEN_MASK) * 4;
	}
	__u32 inner = (void *)(tun + 1) - data + opts;

	if (data + inner + ETH_HLEN > end)
		return 0;
	__u32 vni = bpf_ntohl(tun->vni) >> 8;
	struct fp_tunnel_key tk = { .remote = o->src, .port = udp->dest, .underlay = underlay, .vni = vni };
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

#endif
