// Which frames belong to a tunnel underlay's sockets (xsk.c's
// xsk_tunnels; entry.c on an underlay): IPv4/UDP datagrams to one of
// the (local address, UDP port) pairs the host's tunnels listen on, with
// one VLAN tag or none in front. Everything else on the underlay is the
// host's own traffic (ARP, its routing protocols, its other sockets) and
// continues up the stack, as if no program were there.
//
// The key is taken from the frame before the tunnel's own header is read:
// a datagram to a listened pair with a bad VXLAN or Geneve header, an IPv4
// header with options or a fragment's first piece still goes to the
// socket, where user space counts why it drops it (tunnel/tunnel.go).
//
// tunnel_listen is the underlay port's own: the fast path's program, one
// for the bridge, learns what it found from the port's entry program.

#ifndef XSWITCH_LISTEN_H
#define XSWITCH_LISTEN_H

#include "tunnel.h"

// tunnel_listen_key is a (local IPv4 address, UDP port) pair, both in the
// frame's byte order; its value is the pair's tunnel_kind.
struct tunnel_listen_key {
	__be32 addr;
	__be16 port;
	__u16 pad; // zero: part of the hashed key
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct tunnel_listen_key);
	__type(value, __u32);
} tunnel_listen SEC(".maps");

// tunnel_frame reports whether the frame between data and end is a
// datagram for a listened pair, and fills *o if so.
static __always_inline int tunnel_frame(void *data, void *end, struct tunnel_outer *o)
{
	struct ethhdr *eth = data;
	__u32 off = sizeof(*eth);

	if ((void *)(eth + 1) > end)
		return 0;
	__be16 type = eth->h_proto;
	if (type == bpf_htons(ETH_P_8021Q) || type == bpf_htons(ETH_P_8021AD)) {
		struct vlan_hdr *tag = data + off;

		if ((void *)(tag + 1) > end)
			return 0;
		type = tag->h_vlan_encapsulated_proto;
		off += sizeof(*tag);
	}
	if (type != bpf_htons(ETH_P_IP))
		return 0;
	struct iphdr *ip = data + off;

	if ((void *)(ip + 1) > end || ip->version != 4 || ip->ihl < 5 || ip->protocol != IPPROTO_UDP)
		return 0;
	struct udphdr *udp = (void *)ip + ip->ihl * 4;

	if ((void *)(udp + 1) > end)
		return 0;
	struct tunnel_listen_key key = { .addr = ip->daddr, .port = udp->dest };
	__u32 *kind = bpf_map_lookup_elem(&tunnel_listen, &key);

	if (!kind)
		return 0;
	o->kind = *kind;
	o->l3 = off;
	o->src = ip->saddr;
	o->dst = ip->daddr;
	return 1;
}

#endif
