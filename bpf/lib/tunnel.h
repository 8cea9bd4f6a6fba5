// The tunnels' kinds and outer headers, as a tunnel underlay's programs
// read them (listen.h, encap.h).

#ifndef XSWITCH_TUNNEL_H
#define XSWITCH_TUNNEL_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "proto.h"

// The encapsulation a listened pair receives: tunnel.Kind's values.
enum tunnel_kind {
	TUNNEL_VXLAN = 1,
	TUNNEL_GENEVE = 2,
};

// tunnel_outer is where a tunnel frame's IPv4 header is, and what its
// outer headers say, in the frame's byte order.
struct tunnel_outer {
	__u32 kind; // tunnel_kind
	__u32 l3;
	__be32 src, dst;
};

#endif
