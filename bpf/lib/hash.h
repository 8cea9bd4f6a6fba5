// flow_hash is bpf.FlowHash: MurmurHash3's 32-bit mix over the key's
// addresses, ports, protocol, EtherType and MACs, as user space computes
// it for the same frame, so that a flow keeps its outer UDP source port
// whether user space or the program sends it into a tunnel.

#ifndef XSWITCH_HASH_H
#define XSWITCH_HASH_H

#include <linux/types.h>

#include "structs.h"

static __always_inline __u32 mix(__u32 h, __u32 v)
{
	v *= 0xcc9e2d51;
	v = v << 15 | v >> 17;
	v *= 0x1b873593;
	h ^= v;
	h = h << 13 | h >> 19;
	return h * 5 + 0xe6546b64;
}

// load32 and load16 read the key's bytes in the program's (little-endian)
// order, as bpf.FlowHash does, wherever they are aligned.
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

#endif
