// TCP sequence numbers, which compare modulo 2^32: the tracked
// connections' (conntrack.h) and user space's merges into them
// (ctsync.c).

#ifndef XSWITCH_SEQ_H
#define XSWITCH_SEQ_H

#include <linux/types.h>
#include <bpf/bpf_helpers.h>

static __always_inline int seq_geq(__u32 a, __u32 b) { return (__s32)(a - b) >= 0; }

#endif
