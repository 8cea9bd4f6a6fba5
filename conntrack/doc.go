// Package conntrack is xswitch's connection tracker: the table behind
// OVS's ct() action, ct_state matches and NAT, with the meaning OVS's
// userspace tracker (lib/conntrack*.c) gives them. It is authoritative:
// a fast path may carry established connections (KernelState hands one
// over, SyncFromKernel takes back what the fast path moved on; the
// kernel's is bpf/lib/conntrack.h), but it learns them from here, and
// what it cannot judge comes back here.
//
// # What a packet meets
//
// The switch fills a Packet from the frame (Header, or Decode from the IP
// header) and runs each ct() action of the pipeline as Execute(packet,
// action, now). Execute keys the packet by its zone, addresses, protocol
// and ports (ICMP echo by identifier, an ICMP error by the packet it
// quotes, reversed), finds its connection under either of the
// connection's two tuples, runs the protocol's state machine (TCP: pf's
// sequence windows, as OVS; UDP and other protocols: first, one way, both
// ways; ICMP: request, reply), and writes the result into the packet's
// metadata (Packet.CT: ct_state, zone, mark, label, original tuple). A new
// connection is remembered only on commit, within the table's and the
// zone's limits. NAT is chosen at commit (a hash-picked address in the
// range and the first free port from a hash or random offset) and
// applied to the packet's Header; Execute returns which fields changed,
// for the caller to write into the frame. The metadata also carries what
// the next ct() of the pipeline needs (whether the packet was translated
// already, and its connection for a second ct() in the same zone), as
// OVS's packet metadata does across recirculation.
//
// Fragments are not reassembled: a datagram's first fragment is tracked
// as the datagram, and its later fragments by what the first said of the
// transport header (fragment.go).
//
// # The table
//
// Connections live in a slab of fixed-size chunks of pointer-free slots,
// so that millions of them cost the garbage collector nothing to scan
// and a commit allocates nothing once the slab has grown; a Handle names
// a slot and its generation. Each connection is found under each of its
// two tuples (the reply tuple is the translated one under NAT) in one of
// 1024 shards, picked by a keyed hash of the tuple, each with its own
// lock and a compact open-addressing index (8 bytes an entry: hash bits
// and slot, the tuple confirmed in the slot); a connection has its own
// lock for its state. A packet of an established connection takes its
// tuple's shard lock just long enough to find and lock the connection.
// Changes to the indexes take the shards of both tuples in shard order,
// then the connection. A connection costs about 200 bytes in all.
//
// Time is the caller's: Execute and Sweep take now, a monotonic clock in
// nanoseconds. A connection whose time has passed is gone for packets at
// once; Sweep, run by the caller from time to time, frees its room,
// reading the slab's expiries in order (about 10 ns a connection). The
// timeouts are OVS's userspace defaults (DefaultTimeouts), or a zone's
// own policy (SetZoneTimeouts, as OVS's CT_Zone:timeout_policy).
//
// # Where it differs from OVS's userspace tracker
//
//   - Fragments are not reassembled (OVS's ipf reassembles a datagram,
//     tracks it whole, then sends its fragments on). Each fragment is
//     tracked and forwarded as it comes, with its datagram's first
//     fragment's verdict: a later fragment that comes before its first
//     (or without it) is +inv where OVS would wait for the first; TCP's
//     and SCTP's fragments and ICMP errors' are +inv; a first fragment's
//     transport checksum, which covers the whole datagram, is not
//     checked.
//   - No ALGs (FTP, TFTP): no helpers, no expectations, no related data
//     connections.
//   - A connection a fast path carries is timed by the kernel's coarse
//     clock there: it may outlive its timeout by a clock tick (4 ms at
//     HZ=250), as the kernel's own conntrack's jiffies do.
//   - A zone's count is all its connections (as the kernel counts), not
//     those committed while it had a limit.
//   - nat without arguments on a new connection commits it untranslated
//     (OVS builds a broken reply tuple there).
//   - A commit whose reply tuple another connection holds is refused
//     (RefusedClash), as the kernel's confirm does, where OVS inserts it
//     anyway.
//   - The hashes differ, so the same range picks different addresses and
//     ports than OVS would; the rules of the choice are OVS's.
//   - Dumps show the kernel's status bits (CONFIRMED, SEEN_REPLY, NAT)
//     and a real id with -m, where OVS's userspace shows 0 for both;
//     ct-stats-show prints ICMPv6 connections.
//   - Decode checks no SCTP CRC32c and no SCTP chunk lengths.
package conntrack
