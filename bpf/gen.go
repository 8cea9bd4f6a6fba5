// Package bpf holds xswitch's BPF programs and their Go bindings generated
// by bpf2go: xsk.c, the XDP program that steers a port's frames into its
// AF_XDP sockets; fastpath.c, the in-kernel fast path, one program per
// bridge, which entry.c, each port's program when the fast path is on,
// tail-calls (lib/entry.h); redirect.c, the tracepoint programs that
// count the fast path's redirects that never left; ctsync.c, the tc
// programs user space runs (BPF_PROG_RUN) to take a tracked connection
// back from the fast path or merge into it. The C headers in lib/ hold
// the programs' parts, one concern each, after katran's layout: the wire
// headers (proto.h), the types user space shares (structs.h), the fast
// path's maps (maps.h) and the hand-off to it (entry.h), its parser
// (parse.h), checksums (csum.h), flow hash (hash.h), operations
// (actions.h), meters (meter.h), tracked connections (conntrack.h) and
// their sequence numbers (seq.h), the tunnels' outer headers (tunnel.h)
// and their push and pop (encap.h); which frames are a tunnel's
// (listen.h) and the step to the AF_XDP socket (xsk.h), which the ports'
// programs use. The Go side loads programs and makes maps; what goes in
// the fast path's maps, and when, is package datapath's and the switch's
// to say.
//
// The generated *_bpfel.go and *_bpfel.o are committed so that building
// xswitch needs no clang. After editing a .c or .h file, regenerate
// them with
//
//	go generate ./bpf
//
// which needs clang and libbpf-dev (for bpf/bpf_helpers.h). The program
// includes kernel uapi headers whose asm/types.h lives in Debian's multiarch
// directories; it is the same for every architecture, so either one will do.
package bpf

//go:generate go tool bpf2go -tags linux -target bpfel -cflags "-O2 -g -Wall -Werror" Xsk xsk.c -- -I/usr/include -I/usr/include/x86_64-linux-gnu -I/usr/include/aarch64-linux-gnu
//go:generate go tool bpf2go -tags linux -target bpfel -cflags "-O2 -g -Wall -Werror" -no-global-types Ctsync ctsync.c -- -I/usr/include -I/usr/include/x86_64-linux-gnu -I/usr/include/aarch64-linux-gnu
//go:generate go tool bpf2go -tags linux -target bpfel -cflags "-O2 -g -Wall -Werror" -no-global-types Entry entry.c -- -I/usr/include -I/usr/include/x86_64-linux-gnu -I/usr/include/aarch64-linux-gnu
//go:generate go tool bpf2go -tags linux -target bpfel -cflags "-O2 -g -Wall -Werror" Redirect redirect.c -- -I/usr/include -I/usr/include/x86_64-linux-gnu -I/usr/include/aarch64-linux-gnu
//go:generate go tool bpf2go -tags linux -target bpfel -cflags "-O2 -g -Wall -Werror" -type fp_key -type fp_parsed -type fp_flow -type fp_op -type fp_state -type fp_op_type -type fp_csum -type fp_l2_key -type fp_mask_kind -type fp_tunnel -type fp_tunnel_key -type fp_tunnel_in -type fp_drop_reason -type tunnel_kind -type fp_meter -type fp_band -type fp_meter_counts -type fp_band_type -type fp_conn -type fp_conn_dir Fastpath fastpath.c -- -I/usr/include -I/usr/include/x86_64-linux-gnu -I/usr/include/aarch64-linux-gnu

// MaxQueues is the number of slots in xsks_map (its max_entries in xsk.c):
// sockets can be bound to rx queues 0 to MaxQueues-1.
const MaxQueues = 64
