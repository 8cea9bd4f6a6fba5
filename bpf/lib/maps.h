// The fast path's maps, the bridge's (bpf.FastpathShared): flows,
// flows_l2, state, state_slot, tx_ports, tunnels, tunnels_in, meters,
// meter_counts, ct_conns and drops; parsed is the tests'. The hand-off
// from its ports' programs has its own (entry.h).

#ifndef XSWITCH_MAPS_H
#define XSWITCH_MAPS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "structs.h"

// The decisions user space installed, by the exact key, or the masked one
// (fp_mask_kind), of the generation they were made in.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct fp_key);
	__type(value, struct fp_flow);
} flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct fp_l2_key);
	__type(value, struct fp_flow);
} flows_l2 SEC(".maps");

// Two states, of which state_slot names the current one: user space
// writes the other whole, then switches, so that no frame reads a
// generation with half a mask (a copy into the map is not atomic). Both
// are memory-mapped into user space, which writes them with plain stores:
// a new generation at every table edit costs no system call (see
// switch/fastpath.go's bump).
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct fp_state);
} state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} state_slot SEC(".maps");

// The bridge's ports by slot: an entry's out.
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, FP_MAX_PORTS);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} tx_ports SEC(".maps");

// Two for each slot a tunnel port may have (2*slot and 2*slot+1): a
// tunnel's new headers go in the one its entries do not use, and the
// generation changes, so that no frame reads headers half written.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2 * FP_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct fp_tunnel);
} tunnels SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct fp_tunnel_key);
	__type(value, struct fp_tunnel_in);
} tunnels_in SEC(".maps");

// The bridge's meters by slot, which user space and the programs update
// together in the map's memory (structs.h's fp_meter); and what the
// programs counted of each, per CPU.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, FP_MAX_METERS);
	__type(key, __u32);
	__type(value, struct fp_meter);
} meters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FP_MAX_METERS);
	__type(key, __u32);
	__type(value, struct fp_meter_counts);
} meter_counts SEC(".maps");

// The established connections the programs carry, by the tracker's
// handle (structs.h's fp_conn). Only user space adds and removes them, so
// an entry's memory is allocated when user space puts it, not all up
// front; its size is the default of user space's, which may set another.
#define FP_MAX_CONNS 262144

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, FP_MAX_CONNS);
	__type(key, __u64);
	__type(value, struct fp_conn);
} ct_conns SEC(".maps");

// The frames the program dropped, by fp_drop_reason: the kernel's own
// count, which pmd-stats-show prints apart from the pipeline's drops.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FP_DROP_REASONS);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fp_parsed);
} parsed SEC(".maps");

// drop counts a frame the program drops, and returns the action that
// drops it: every XDP_DROP of the fast path goes through here but
// to_socket's of a miss too long for the port's sockets, which the port
// counts in its oversize as its own program does (xsk.h).
static __always_inline int drop(enum fp_drop_reason reason)
{
	__u32 key = reason;
	__u64 *count = bpf_map_lookup_elem(&drops, &key);

	if (count)
		(*count)++;
	return XDP_DROP;
}

#endif
