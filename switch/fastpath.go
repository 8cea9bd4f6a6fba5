package vswitch

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xswitch/xswitch/conntrack"
	"github.com/xswitch/xswitch/datapath"
	"github.com/xswitch/xswitch/flow"
)

// The in-kernel fast path's policy: decisions that the XDP program can
// carry (fastpath_entry.go) are installed in a map the bridge's program
// reads (bpf/fastpath.c), so that their frames go from port to port
// inside the kernel, in the sender's softirq, and never reach a socket.
// The maps, the programs and their encodings are package datapath's,
// reached through datapath.Datapath, so that this policy is tested on a
// datapath in memory (datapathtest). User space stays the authority:
//
//   - A frame that reaches user space is forwarded there as always; if its
//     decision can be carried in the kernel, the forwarder queues the
//     entry, and installs what it queued once per batch, with one batched
//     map update: never a system call per frame.
//   - Every entry's key holds the generation the bridge was in when its
//     decision was worked out, and the program looks keys up with the
//     current one only. A forwarder decides a batch under one view
//     (fpView): a table version together with the generation and key mask
//     the program applies with it, published as one after the program's
//     state, so that no entry is made from one table under another's
//     generation or mask. A change that may alter what any decision is, or
//     the entry of any, starts a new generation: a new table version, a
//     port added or removed, a spanning tree state, a port that can no
//     longer take redirects, a tunnel's headers or reachability, a port's
//     addresses flushed. Every entry is then a miss at once, and one
//     computed against the old state but installed late is a miss too.
//     The last four also change what an unchanged decision's entry is
//     (offerEpoch): decisions work theirs out again.
//   - A MAC-table entry that moves or is displaced (evicted for another
//     station, or its slot taken after it aged) does not start a new
//     generation: the forwarder that displaced it retires, after its
//     batch, exactly the entries that relied on it (macDeps, indexed by
//     slot), so that a MAC flood on one port leaves the other ports'
//     flows in the kernel. An entry queued before such a change is checked
//     again when it is installed.
//   - The sweeper (every fastPathSweep, on the bridge's first forwarding
//     thread) reads the per-CPU counters of every entry and credits what
//     the kernel carried to the rules, tables and ports, as used at the
//     sweep (the program reads no clock), so that idle timeouts, dump-flows
//     and dump-ports see fast-path traffic; it counts the redirects that
//     never left (bpf/redirect.c) as the ports' transmit drops, not
//     transmits; it refreshes the sources of NORMAL's entries as learning
//     would, and deletes, with one system call per map, the entries of an
//     old generation (which the kernel no longer counts) and those idle
//     for fastPathIdle, and one by one, with their last counts, those
//     whose MAC-table dependencies no longer hold (a destination aged
//     out: until then, at most fastPathSweep, the kernel sends to where it
//     was). Readers of counters call Bridge.SyncFastPath first, so what
//     they print is exact.
const (
	fastPathSweep = 100 * time.Millisecond
	fastPathIdle  = 10 * time.Second
	// reofferAfter is how long a forwarder waits before it queues an
	// entry again for a flow whose frames still reach it: an install
	// takes less than a batch, so a frame that comes later means the
	// entry is gone (swept as idle, or refused for a full map), or the
	// entry leaves such frames to user space (too long for a tunnel).
	reofferAfter = 10 * time.Millisecond
	// fastPathWatch is how often the bridge checks that its ports still
	// take redirects (a veth peer whose GRO was turned off, say).
	fastPathWatch = time.Second
)

// fastPath is a bridge's fast path: the policy over its datapath, what
// it installed there, and their counters.
type fastPath struct {
	dp datapath.Datapath
	// tracker is the bridge's connection tracker, for which the
	// datapath's ct_conns is the store (fastpath_conntrack.go).
	tracker *conntrack.Tracker
	carrier conntrack.CarrierID
	// view is what forwarders decide under; viewMu serialises new ones.
	view   atomic.Pointer[fpView]
	viewMu sync.Mutex
	// readers follows how many rules of the table version followed have
	// an action that reads header fields (readsHeaders), so that a
	// controller's stream of one-rule versions costs each its change,
	// not a look at every rule.
	readers tableReaders
	// offerEpoch counts the changes after which a decision's entry may
	// differ though the decision does not: offers are worked out again
	// (fpOffer).
	offerEpoch atomic.Uint64
	// reliedOn has a bit for each MAC-table slot that some installed
	// entry relies on, so that a forwarder that displaced an entry looks
	// for its dependents under mu only when there are some.
	reliedOn []atomic.Uint64
	tables   *[flow.NumTables]tableCounters
	drops    *dropCounters

	mu        sync.Mutex // guards what follows
	installed map[datapath.Key]*fpInstalled
	// dependents are the installed entries that rely on each MAC-table
	// slot (their macDeps).
	dependents map[uint32]map[*fpInstalled]struct{}
	// tunnels are the tunnel ports, with what their outer headers in the
	// tunnels map are (fastPathTunnel).
	tunnels map[*bridgePort]*fpTunnel
	// ports are the ports with the fast path's program, and what of
	// their redirect drops was counted.
	ports map[*bridgePort]*fpPortDrops
	// Scratch for batched map operations, reused under mu.
	keys       []datapath.Key
	entries    []datapath.Entry
	installing []*fpPending
	doomed     []doomedEntry

	hits, installs, installFailures, evictions atomic.Uint64
}

// fastPathThread is a thread's part in the fast path, none when fp is
// nil: the view the current batch decides under, the entries it queued,
// and the slots of the MAC-table entries it displaced that installed
// entries relied on (displacedLost: more than it could note). The
// bridge's first thread also sweeps, every fastPathSweep.
type fastPathThread struct {
	fp            *fastPath
	fpView        *fpView
	fpPending     []fpPending
	connPending   pendingConn
	displaced     []uint32
	displacedLost bool
	lastSweep     int64
}

// fpView is a table version and what the program looks keys up with
// while it is the bridge's: the generation and the key mask (nil: exact
// keys).
type fpView struct {
	table      *flow.Table
	generation uint64
	mask       *flow.Headers
}

// newFastPath makes the fast path over dp, which it owns from then on, of
// the bridge whose threads' place is place.
func newFastPath(dp datapath.Datapath, place *threadPlace) (*fastPath, error) {
	fp := &fastPath{dp: dp, tracker: place.tracker, tables: place.tables, drops: place.drops,
		reliedOn:  make([]atomic.Uint64, (len(place.fdb.slots)+63)/64),
		installed: map[datapath.Key]*fpInstalled{}, dependents: map[uint32]map[*fpInstalled]struct{}{},
		ports: map[*bridgePort]*fpPortDrops{}, tunnels: map[*bridgePort]*fpTunnel{}}
	var err error
	if fp.carrier, err = place.tracker.AddCarrier(connStore{dp}); err != nil {
		return nil, errors.Join(err, dp.Close())
	}
	fp.view.Store(&fpView{})
	fp.bump()
	return fp, nil
}

// generation is the bridge's current generation.
func (fp *fastPath) generation() uint64 { return fp.view.Load().generation }

// publish makes t the table of cls, with its key mask, in a new
// generation: the program's state first, then the view and the table,
// so that whoever decides by t installs under t's generation and mask.
func (fp *fastPath) publish(cls *flow.Classifier, t *flow.Table) {
	fp.viewMu.Lock()
	defer fp.viewMu.Unlock()
	fp.newView(t, keyMaskOf(t, fp.readers.follow(t) > 0))
	cls.Publish(t)
}

// bump starts a new generation of the current table: every entry
// installed so far is a miss.
func (fp *fastPath) bump() {
	fp.viewMu.Lock()
	defer fp.viewMu.Unlock()
	v := fp.view.Load()
	fp.newView(v.table, v.mask)
}

// entriesChanged starts a new generation after a change that alters what
// decisions' entries are (a port's spanning tree state or redirects, a
// tunnel's headers): offers are worked out again, after the change, and
// before anyone decides in the new generation.
func (fp *fastPath) entriesChanged() {
	fp.offerEpoch.Add(1)
	fp.bump()
}

// newView puts the program in the next generation with mask, then
// publishes the view of t in it. It runs under viewMu.
func (fp *fastPath) newView(t *flow.Table, mask *flow.Headers) {
	v := &fpView{table: t, generation: fp.view.Load().generation + 1, mask: mask}
	if err := fp.dp.Publish(v.generation, mask, isL2Mask(mask)); err != nil {
		// Stores into the state map's two slots, which it has.
		panic("vswitch: the fast path's state: " + err.Error())
	}
	fp.view.Store(v)
}

// tableReaders counts the rules of a table version whose actions read
// header fields, following one version after another by their changes.
type tableReaders struct {
	mu       sync.Mutex
	followed *flow.Table
	n        int
}

// follow moves to version t and returns its count.
func (r *tableReaders) follow(t *flow.Table) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t == nil {
		r.followed, r.n = nil, 0
		return 0
	}
	if ch := t.Changes(); ch != nil && r.followed != nil && ch.From == r.followed.Version() {
		r.n += countReaders(ch.Added) - countReaders(ch.Removed)
	} else {
		r.n = countReaders(t.Entries())
	}
	r.followed = t
	return r.n
}

func countReaders(entries []*flow.Entry) int {
	n := 0
	for _, e := range entries {
		if slices.ContainsFunc(e.Actions, readsHeaders) {
			n++
		}
	}
	return n
}

// keyMask is the union of what the rules of t match on and what NORMAL
// reads (the input port, the addresses, the tag and the EtherType): two
// frames equal under it get the same decision, so one entry serves them
// all. When a rule's actions read header fields (a rewrite whose result or
// checksum update depends on the field's old value, dec_ttl, move), the
// decision depends on more than the matches say, and keyMask is nil: the
// exact key.
func keyMask(t *flow.Table) *flow.Headers {
	if t == nil {
		return nil
	}
	return keyMaskOf(t, countReaders(t.Entries()) > 0)
}

// keyMaskOf is keyMask for a table whose rules' actions read header
// fields (readers) or not.
func keyMaskOf(t *flow.Table, readers bool) *flow.Headers {
	if t == nil || readers {
		return nil
	}
	m := l2Mask
	for _, k := range t.Masks() {
		m.Widen(&k.Headers)
	}
	if m.IPv6ExtHdr != 0 {
		// The program's key has no ipv6_exthdr: the frames it reads have
		// no extension header, and their ipv6_exthdr follows from the
		// protocol (ESP's, no next header's).
		m.NwProto = 0xff
	}
	return &m
}

// l2Mask is what NORMAL reads: the input port, the addresses, the tag and
// the EtherType, which is always in the key mask; and the VNI, which a
// frame that leaves by a tunnel whose key is flow may carry on.
var l2Mask = flow.Headers{InPort: 0xffff, DlType: 0xffff, VLANTCI: 0xffff, TunID: ^uint64(0),
	DlDst: [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, DlSrc: [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}

// isL2Mask reports whether a key mask is l2Mask: the program then looks
// keys up by those fields alone, in flows_l2.
func isL2Mask(m *flow.Headers) bool { return m != nil && *m == l2Mask }

// readsHeaders reports whether what a does depends on header fields that
// the rules need not match on.
func readsHeaders(a flow.Action) bool {
	switch a.Type {
	case flow.ActOutput, flow.ActNormal, flow.ActFlood, flow.ActAll, flow.ActInPort,
		flow.ActSetDlSrc, flow.ActSetDlDst, flow.ActSetVLANVID, flow.ActSetVLANPCP, flow.ActStripVLAN, flow.ActPushVLAN,
		flow.ActResubmit, flow.ActGotoTable, flow.ActClearActions, flow.ActWriteActions, flow.ActWriteMetadata,
		flow.ActController, // whose decisions stay in user space
		flow.ActMeter:      // whose remark reads the DSCP as the frame runs, in both paths
		return false // the addresses and the tag they read are NORMAL's, always in the mask
	case flow.ActLoad, flow.ActSetField:
		return !a.Field.Carried // a constant into a register is no read; into a header, a rewrite
	}
	return true
}

// close takes back the connections the fast path carries, and closes
// its datapath.
func (fp *fastPath) close() error {
	fp.tracker.RemoveCarrier(fp.carrier)
	return fp.dp.Close()
}
