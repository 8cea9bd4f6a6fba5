// Package vswitch is the switch itself: bridges, their ports as slots,
// the threads that forward frames between them, the decisions they
// forward by, NORMAL and its MAC table, the spanning tree at work, the
// tunnels' demultiplexing, and the policy of the in-kernel fast path
// (what to install, when to retire it). It owns no device and no file: it
// knows ports only through the port package's interfaces and the flow
// table only as flow.Table versions the control plane publishes; opening
// interfaces, persisting the configuration and speaking to controllers
// belong to the control plane, and the fast path's maps and programs to
// package datapath (through its Datapath interface) and package bpf.
//
// # A frame's way
//
// A bridge has one forwarding thread per CPU it is given, each locked to
// its OS thread, owning its receive queues, its decision cache, its
// transmit groups and its scratch arrays, all sized when a port is added,
// so that forwarding a frame allocates nothing and makes no system call
// of its own. System calls happen once per batch: one receive, one
// transmit (with its kick) per output port, one release. The threads
// share the flow table (immutable versions), the counters (atomic), the
// MAC table (a lock per set, only when there are several threads) and the
// ports' transmit side, which each port serializes. Control-plane
// requests (add or remove a port, read the MAC table) run on each thread
// between its batches, which is why a thread's own state needs no locks.
//
// A frame that a cached decision forwards goes through the files in this
// order, and never back into one it left:
//
//	forwarder.go  the loop: receive a batch from each queue in turn, serve
//	              requests, sleep in poll(2) when idle
//	receive.go    the batch: the view and table it is forwarded by, the
//	              spanning tree's and the extractor's drops, each frame's
//	              key (flow.Extractor); an underlay's batch is taken
//	              apart and dealt out to its tunnels first
//	cache.go      the frame's decision: found by its headers, checked
//	              against the table versions and MAC-table entries it
//	              relied on, worked out again in place when one changed
//	xlate.go      (on a miss) the pipeline: the key through the tables,
//	              goto_table, resubmit and the action set, into a flat
//	              list of actions
//	fastpath_offer.go
//	              the decision offered to the in-kernel fast path, its
//	              entry worked out once (fastpath_entry.go) and queued
//	execute.go    the decision's actions on the frame: rewrites in place
//	              (rewrite.go), outputs, NORMAL as resolved
//	normal.go     NORMAL: to the learned port, or flooded in the VLAN
//	vlan.go       the form each port wants the frame in
//	transmit.go   the frame into its output port's group; at the batch's
//	              end each group leaves with one call
//	packetin.go   the batch's packet-ins to the OpenFlow agent
//	counters.go   the batch's counts: rules, tables, ports, drops
//	fastpath_install.go
//	              what the batch offered the fast path installed
//
// Frames are transmitted before their batch is released because the
// groups point into the receiving port's memory: transmission copies them
// out. For the same reason a rewrite that follows an output in one action
// list works on a private copy, so that the earlier output sends the frame
// as it was. Copies come from a pool sized for ordinary frames; when
// jumbo frames fill it, the groups are transmitted early and the pool
// starts over.
//
// Beside that way: bridge.go (the bridge and its ports, for the control
// plane), ports.go (a thread's view of the ports, the MAC table and the
// settings, which translation reads and nothing else of the thread),
// mactable.go, stp.go, storm.go, reserved.go, tunnel.go (tunnel ports
// and their underlays), packetout.go, trace.go (a packet's way told step
// by step by the same translation and NORMAL), and the rest of the fast
// path's policy: fastpath.go (generations and the key mask),
// fastpath_sweep.go (the sweeper), fastpath_ports.go (its programs on the
// ports) and fastpath_show.go (what it tells the control plane).
package vswitch
