// The hand-off from a port's program to its bridge's fast path. The
// fast path is one program for all of a bridge's ports (fastpath.c),
// loaded once: the verifier takes some 40 ms over it, which every
// add-port paid when each port loaded a copy with its own constants. A
// port runs a small program of its own instead (entry.c), which puts what
// the fast path must know of the port in fp_port and tail-calls the fast
// path; a frame the fast path leaves to user space goes on, by another
// tail call, to the port's own program (xsk.c's xsk_redirect), which
// sends it to the port's AF_XDP socket.

#ifndef XSWITCH_ENTRY_H
#define XSWITCH_ENTRY_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "structs.h"
#include "tunnel.h"

// fp_port is the port a frame came in on, as its entry program says: its
// OpenFlow port number, its slot, the longest frame its sockets take;
// for a tunnel underlay, its slot again, and the tunnel frame's outer
// headers, which the entry program found listened for. Per CPU: XDP runs
// a frame from one program to the next on one CPU, without preemption.
struct fp_port {
	struct tunnel_outer outer;
	__u32 max_frame_len;
	__u16 in_port;
	__u16 slot;
	__u8 underlay;
	__u8 pad[3];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fp_port);
} fp_port SEC(".maps");

// fp_program holds the fast path's program; fp_sockets each slot's port's
// own (xsk_redirect).
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} fp_program SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, FP_MAX_PORTS);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} fp_sockets SEC(".maps");

#endif
