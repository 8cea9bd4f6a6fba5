package vswitch

import (
	"cmp"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xswitch/xswitch/datapath"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/port"
)

// The in-kernel fast path's policy: decisions that the XDP program can
// carry (offload.go) are installed in a map every port's program reads
// (bpf/fastpath.c), so that their frames go from port to port inside the
// kernel, in the sender's softirq, and never reach a socket. The maps,
// the programs and their encodings are package datapath's, reached
// through datapath.Datapath, so that this policy is tested on a datapath
// in memory (datapathtest). User space stays the authority:
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

// fpPortDrops follows the redirects a port's interface refused: how many
// were counted, and what the fast path sent there since the last sweep,
// whose mean length stands for theirs (the kernel reports none).
type fpPortDrops struct {
	counted        uint64
	packets, bytes uint64
}

// fpInstalled is what the fast path knows of one installed entry: where
// its counts go, and what it relies on.
type fpInstalled struct {
	key     datapath.Key
	rules   []*flow.Entry
	lookups []tableLookup
	// macDeps are the MAC-table entries its NORMAL resolved by. Never an
	// absence: a flood stays in user space.
	macDeps []macDep
	in, out *bridgePort // out is nil for a drop
	via     *bridgePort // the port it redirects to: out, or a tunnel's underlay
	entry   datapath.Entry
	mask    *flow.Headers // the key's, nil: exact
	l2      bool          // in flows_l2 (isL2Mask(mask))
	// lenDelta is how much longer than it came a frame leaves (tags).
	lenDelta int
	// What the kernel counted so far, already credited; active is when
	// it last carried a frame, on the forwarders' clock.
	packets, bytes uint64
	active         int64
}

// fpOffer is a decision's state towards the fast path.
type fpOffer struct {
	state      int8 // 0: not worked out; 1: the kernel can carry it; -1: it cannot
	entry      datapath.Entry
	generation uint64 // queued under it,
	at         int64  // at that time
	// epoch is fastPath.offerEpoch when the state was worked out.
	epoch uint64
}

type fpPending struct {
	key  datapath.Key
	flow datapath.Entry
	meta *fpInstalled
}

// newFastPath makes a bridge's fast path over dp, which it owns from
// then on, for a MAC table of macSlots slots.
func newFastPath(dp datapath.Datapath, tables *[flow.NumTables]tableCounters, drops *dropCounters, macSlots int) *fastPath {
	fp := &fastPath{dp: dp, tables: tables, drops: drops, reliedOn: make([]atomic.Uint64, (macSlots+63)/64),
		installed: map[datapath.Key]*fpInstalled{}, dependents: map[uint32]map[*fpInstalled]struct{}{},
		ports: map[*bridgePort]*fpPortDrops{}, tunnels: map[*bridgePort]*fpTunnel{}}
	fp.view.Store(&fpView{})
	fp.bump()
	return fp
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
		flow.ActController: // whose decisions stay in user space
		return false // the addresses and the tag they read are NORMAL's, always in the mask
	case flow.ActLoad, flow.ActSetField:
		return !a.Field.Carried // a constant into a register is no read; into a header, a rewrite
	}
	return true
}

// entryKey is the key of the fast path's entry for a flow with headers h
// in the batch's view: h under its mask, in its generation.
func (f *forwarder) entryKey(h *flow.Headers) datapath.Key {
	return datapath.NewKey(h, f.fpView.mask, f.fpView.generation)
}

// attach replaces p's XDP program with the fast path's, if p has one, and
// has the fast path's redirects to p's slot go to its interface. It
// returns "" or why the port does not take part.
func (fp *fastPath) attach(p *bridgePort) (why string) {
	host, ok := port.Underlying(p.Port).(port.XDPHost)
	if !ok {
		return "the port has no XDP program"
	}
	detach, err := fp.dp.AttachPort(p.slot, p.ofport, p.Info().Ifindex, host, p.underlay != nil)
	if err != nil {
		return err.Error()
	}
	p.fastPath = detach
	p.fastPathIn.Store(true)
	fp.mu.Lock()
	fp.ports[p] = &fpPortDrops{counted: fp.redirectDrops(p)}
	fp.mu.Unlock()
	return ""
}

// redirectDrops is how many redirected frames p's interface did not take.
func (fp *fastPath) redirectDrops(p *bridgePort) uint64 {
	return fp.dp.RedirectDrops(p.slot, p.Info().Ifindex)
}

// countRedirectDrops counts the redirected frames that the ports'
// interfaces did not take since the last sweep as their transmit drops,
// and takes them off their transmits, where the entries that sent them
// counted them; their bytes are the mean of what the fast path sent
// there since. It runs under fp.mu, after the sweep's credits.
func (fp *fastPath) countRedirectDrops() {
	for p, d := range fp.ports {
		if n := fp.redirectDrops(p); n > d.counted {
			refused := n - d.counted
			d.counted = n
			c := &p.counters
			c.txDropped.Add(refused)
			c.fastPathTxDropped.Add(refused)
			if d.packets > 0 {
				c.fastPathTxDroppedBytes.Add(refused * d.bytes / d.packets)
			}
		}
		d.packets, d.bytes = 0, 0
	}
}

// detach puts p's own XDP program back and forgets its interface, or
// for a tunnel, has the underlays no longer take its frames.
func (fp *fastPath) detach(p *bridgePort) {
	if p.tunnel != nil {
		fp.removeTunnel(p)
		return
	}
	if p.fastPath == nil {
		return
	}
	p.fastPath()
	p.fastPath = nil
	p.fastPathIn.Store(false)
	fp.mu.Lock()
	delete(fp.ports, p)
	fp.mu.Unlock()
}

func (fp *fastPath) close() error { return fp.dp.Close() }

// offerFastPath queues d's entry for installation if the kernel can carry
// it and it was not queued lately in the batch's generation. It runs for
// frames that reached user space, before d's actions run on them.
func (f *forwarder) offerFastPath(d *decision, inSlot uint16, now int64) {
	if d.offer == nil {
		d.offer = new(fpOffer)
	}
	o := d.offer
	if epoch := f.fp.offerEpoch.Load(); o.epoch != epoch {
		o.state, o.epoch = 0, epoch
	}
	gen := f.fpView.generation
	if o.state < 0 || o.generation == gen && now-o.at < int64(reofferAfter) {
		return
	}
	if o.state == 0 {
		o.state = -1
		if e, why := f.fastPathEntry(d, &f.key.Headers); why == "" {
			o.state, o.entry = 1, e
		}
		if o.state < 0 {
			return
		}
	}
	o.generation, o.at = gen, now
	key := f.entryKey(&f.key.Headers)
	meta := &fpInstalled{key: key, rules: slices.Clone(d.rules), lookups: slices.Clone(d.lookups),
		macDeps: slices.Clone(d.macDeps), in: f.ports[inSlot], entry: o.entry, mask: f.fpView.mask, l2: isL2Mask(f.fpView.mask),
		active: now}
	if o.entry.Out != datapath.OutDrop {
		meta.out, meta.via = f.ports[o.entry.Out], f.ports[o.entry.Out]
	}
	for _, op := range o.entry.Ops {
		switch op.Type {
		case datapath.OpPushVLAN:
			meta.lenDelta += vlanTagLen
		case datapath.OpPopVLAN:
			meta.lenDelta -= vlanTagLen
		case datapath.OpTunnelPush:
			// Counted as the tunnel's, which the frame leaves by through
			// its underlay.
			meta.out = f.ports[datapath.TunnelSlot(op.Tunnel)]
		}
	}
	f.fpPending = append(f.fpPending, fpPending{key: key, flow: o.entry, meta: meta})
}

// fastPathBatch ends a batch for the fast path: the entries that relied
// on what the batch displaced in the MAC table go, and the ones it queued
// come in.
func (f *forwarder) fastPathBatch(now int64) {
	f.retireDisplaced(now)
	f.installPending(now)
}

// installPending installs what the batch queued, with one map update per
// map, but for entries that would be misses now (a new generation came)
// or rely on a MAC-table entry that changed since they were queued.
func (f *forwarder) installPending(now int64) {
	if len(f.fpPending) == 0 {
		return
	}
	fp := f.fp
	fp.mu.Lock()
	defer fp.mu.Unlock()
	current := datapath.KeyGen(fp.generation())
	for _, l2 := range []bool{false, true} {
		fp.keys, fp.entries = fp.keys[:0], fp.entries[:0]
		batch := fp.installing[:0]
		for i := range f.fpPending {
			p := &f.fpPending[i]
			if p.meta.l2 != l2 || p.key.Gen != current || !fp.depsHold(p.meta, f.fdb, now) {
				continue
			}
			if old, ok := fp.installed[p.key]; ok {
				if old.entry == p.flow {
					continue // there already: queued twice, or its frames are left to user space
				}
				fp.retire(old)
			}
			fp.installed[p.key] = p.meta
			fp.index(p.meta)
			batch = append(batch, p)
			fp.keys = append(fp.keys, p.key)
			fp.entries = append(fp.entries, p.flow)
		}
		if len(batch) == 0 {
			continue
		}
		n, err := fp.dp.Install(l2, fp.keys, fp.entries)
		fp.installs.Add(uint64(n))
		if err != nil {
			fp.installFailures.Add(uint64(len(batch) - n))
			for _, p := range batch[n:] {
				fp.forget(p.meta)
			}
		}
		clear(batch)
		fp.installing = batch[:0]
	}
	clear(f.fpPending)
	f.fpPending = f.fpPending[:0]
}

// index and forget add an installed entry to what the fast path knows,
// and take it away. They run under fp.mu.
func (fp *fastPath) index(r *fpInstalled) {
	for i := range r.macDeps {
		slot := r.macDeps[i].slot
		m := fp.dependents[slot]
		if m == nil {
			m = map[*fpInstalled]struct{}{}
			fp.dependents[slot] = m
			fp.reliedOn[slot/64].Or(1 << (slot % 64))
		}
		m[r] = struct{}{}
	}
}

func (fp *fastPath) forget(r *fpInstalled) {
	if fp.installed[r.key] == r {
		delete(fp.installed, r.key)
	}
	for i := range r.macDeps {
		slot := r.macDeps[i].slot
		if m := fp.dependents[slot]; m != nil {
			delete(m, r)
			if len(m) == 0 {
				delete(fp.dependents, slot)
				fp.reliedOn[slot/64].And(^(uint64(1) << (slot % 64)))
			}
		}
	}
}

// retire deletes r's entry from the map, crediting what it counted since
// the last sweep, and forgets it: for an entry the kernel may still be
// counting. It runs under fp.mu.
func (fp *fastPath) retire(r *fpInstalled) {
	if carried, err := fp.dp.Remove(r.l2, r.key); err == nil {
		fp.credit(r, carried, time.Now(), 0, nil)
	}
	fp.forget(r)
}

// credit adds what the kernel counted in r's entry since the last credit
// (it carried so far) to the rules, tables and ports, as last used at
// wall: the entry carried frames since the last sweep, fastPathSweep ago
// at most. With fdb, it refreshes the sources the entry's NORMAL learned,
// as learning would, at now on the forwarders' clock. It reports whether
// the entry carried anything.
func (fp *fastPath) credit(r *fpInstalled, carried datapath.Counts, wall time.Time, now int64, fdb *macTable) bool {
	dp, db := carried.Packets-r.packets, carried.Bytes-r.bytes
	if dp == 0 {
		return false
	}
	r.packets, r.bytes = carried.Packets, carried.Bytes
	credit(fp.tables, r.rules, r.lookups, dp, db, wall)
	r.in.counters.rxPackets.Add(dp)
	r.in.counters.rxBytes.Add(db)
	if r.out != nil {
		sent := uint64(int64(db) + int64(dp)*int64(r.lenDelta))
		r.out.counters.txPackets.Add(dp)
		r.out.counters.txBytes.Add(sent)
		if d := fp.ports[r.via]; d != nil {
			d.packets += dp
			d.bytes += sent
		}
	} else {
		fp.drops[dropRule].Add(dp)
		r.in.counters.dropped[dropRule].Add(dp)
	}
	fp.hits.Add(dp)
	if fdb != nil {
		r.active = now
		for i := range r.macDeps {
			if d := &r.macDeps[i]; d.source {
				fdb.refresh(d, r.active)
			}
		}
	}
	return true
}

// sweep credits every entry's counts and deletes the entries that no
// longer hold: of an old generation, relying on a MAC-table entry that
// changed or aged, or idle. It runs on a forwarding thread (now is its
// clock), or with every forwarder between batches.
func (fp *fastPath) sweep(fdb *macTable, now int64) error {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	wall := time.Now()
	current := datapath.KeyGen(fp.generation())
	fp.doomed = fp.doomed[:0]
	err := fp.dp.Walk(func(k datapath.Key, l2 bool, carried datapath.Counts) {
		r, ok := fp.installed[k]
		if !ok || r.l2 != l2 {
			fp.doomed = append(fp.doomed, doomedEntry{key: k, l2: l2})
			return
		}
		fp.credit(r, carried, wall, now, fdb)
		switch {
		case k.Gen != current:
			// A miss since its generation ended, so the kernel no
			// longer counts it: what was read is all it carried.
			fp.doomed = append(fp.doomed, doomedEntry{key: k, l2: l2, r: r})
		case now-r.active > int64(fastPathIdle):
			// Idle for long: only a frame in the moment between this
			// read and the delete would go uncounted.
			fp.doomed = append(fp.doomed, doomedEntry{key: k, l2: l2, r: r})
		case !fp.depsHold(r, fdb, now):
			fp.doomed = append(fp.doomed, doomedEntry{key: k, l2: l2, r: r, counting: true})
		}
	})
	fp.countRedirectDrops()
	fp.checkTunnels()
	fp.deleteDoomed()
	return err
}

// doomedEntry is an entry the sweeper deletes: one it installed (r), or
// one it does not know; counting says the kernel may still count it.
type doomedEntry struct {
	key      datapath.Key
	l2       bool
	r        *fpInstalled
	counting bool
}

// deleteDoomed deletes the sweep's doomed entries: those the kernel may
// still count one by one with their last counts, the others with one
// system call per map. It runs under fp.mu.
func (fp *fastPath) deleteDoomed() {
	for _, l2 := range []bool{false, true} {
		fp.keys = fp.keys[:0]
		for _, d := range fp.doomed {
			if d.l2 != l2 {
				continue
			}
			switch {
			case d.counting:
				fp.retire(d.r)
				fp.evictions.Add(1)
				continue
			case d.r != nil:
				fp.forget(d.r)
				fp.evictions.Add(1)
			}
			fp.keys = append(fp.keys, d.key)
		}
		fp.dp.Delete(l2, fp.keys)
	}
	clear(fp.doomed)
	fp.doomed = fp.doomed[:0]
}

// depsHold reports whether the MAC-table entries r relies on still hold.
func (fp *fastPath) depsHold(r *fpInstalled, fdb *macTable, now int64) bool {
	for i := range r.macDeps {
		if !fdb.unchanged(&r.macDeps[i], now) {
			return false
		}
	}
	return true
}

// reliesOn reports whether some installed entry relies on MAC-table
// slot. It takes no lock.
func (fp *fastPath) reliesOn(slot uint32) bool {
	return fp.reliedOn[slot/64].Load()&(1<<(slot%64)) != 0
}

// noteDisplaced records that learning displaced the MAC-table entry in
// slot, whose dependents the batch's end retires. Past what the batch can
// record, the end starts a new generation instead.
func (f *forwarder) noteDisplaced(slot uint32) {
	if !f.fp.reliesOn(slot) {
		return
	}
	if len(f.displaced) == cap(f.displaced) {
		f.displacedLost = true
		return
	}
	f.displaced = append(f.displaced, slot)
}

// retireDisplaced retires the entries that relied on the MAC-table
// entries the batch displaced. It runs after the batch's frames went out.
func (f *forwarder) retireDisplaced(now int64) {
	if f.displacedLost {
		f.displacedLost = false
		f.fp.bump()
	}
	if len(f.displaced) == 0 {
		return
	}
	fp := f.fp
	fp.mu.Lock()
	for _, slot := range f.displaced {
		for r := range fp.dependents[slot] {
			if !fp.depsHold(r, f.fdb, now) {
				fp.retire(r)
				fp.evictions.Add(1)
			}
		}
	}
	fp.mu.Unlock()
	f.displaced = f.displaced[:0]
}

// fastPathChores runs the sweeper on the bridge's first thread when its
// turn has come.
func (f *forwarder) fastPathChores() {
	if f.thread != 0 {
		return
	}
	now := f.now()
	if now-f.lastSweep < int64(fastPathSweep) {
		return
	}
	f.lastSweep = now
	if err := f.fp.sweep(f.fdb, now); err != nil {
		f.log.Warn("fast path: reading the entries' counters failed", "err", err)
	}
}

// attachFastPath gives p the fast path's program, if the bridge has a
// fast path, and says whether the fast path may send to it. A tunnel has
// no program: its underlay's takes its frames apart, and what the fast
// path sends to it goes out of the underlay.
func (b *Bridge) attachFastPath(p *bridgePort) {
	if b.fp == nil {
		p.fastPathOff = "the daemon runs with --fast-path off"
		return
	}
	if p.tunnel != nil {
		if err := b.fp.addTunnel(p); err != nil {
			p.fastPathOff = err.Error()
		}
	} else {
		p.fastPathOff = b.fp.attach(p)
	}
	b.checkRedirects(p)
	// Decisions made before the port could take redirects may have been
	// refused the fast path.
	b.fp.entriesChanged()
}

// checkRedirects finds out whether p takes redirects, and reports whether
// that changed. It runs under b.mu.
func (b *Bridge) checkRedirects(p *bridgePort) bool {
	ok, why := false, p.fastPathOff
	switch {
	case p.tunnel != nil:
		ul := b.underlayOf(p)
		if p.fastPathOff == "" {
			ok, why = ul.takesRedirects.Load(), ul.redirectsOff
			if ul.fastPath == nil {
				why = "its underlay " + ul.Name() + " runs without it: " + ul.fastPathOff
			}
		}
		p.fastPathIn.Store(p.fastPathOff == "" && ul.fastPathIn.Load())
	case p.fastPath != nil:
		ok, why = port.Underlying(p.Port).(port.XDPHost).RedirectTarget()
	}
	changed := ok != p.takesRedirects.Load() || why != p.redirectsOff
	p.takesRedirects.Store(ok)
	p.redirectsOff = why
	return changed
}

// watchRedirects checks every fastPathWatch that the ports still take
// redirects (a veth peer may lose GRO, or its XDP program), and moves the
// flows to them back to user space when one no longer does.
func (b *Bridge) watchRedirects() {
	defer close(b.watchDone)
	tick := time.NewTicker(fastPathWatch)
	defer tick.Stop()
	for {
		select {
		case <-b.stopWatch:
			return
		case <-tick.C:
		}
		b.mu.Lock()
		changed := false
		for _, p := range append(b.underlays[:len(b.underlays):len(b.underlays)], b.ports...) { // a tunnel follows its underlay
			if b.checkRedirects(p) {
				changed = true
			}
		}
		if changed {
			b.fp.entriesChanged()
		}
		b.mu.Unlock()
	}
}

// SyncFastPath credits what the fast path carried so far to the rules,
// tables and ports, so that counters read next are exact. It is a no-op
// without a fast path.
func (b *Bridge) SyncFastPath() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fp == nil || len(b.fwds) == 0 {
		return
	}
	f := b.fwds[0]
	f.do(func() {
		if err := b.fp.sweep(f.fdb, f.now()); err != nil {
			f.log.Warn("fast path: reading the entries' counters failed", "err", err)
		}
	})
}

// fastPathStatus says whether the fast path carries frames from and to
// p, and if not, why. It runs under Bridge.mu.
func (p *bridgePort) fastPathStatus() string {
	switch {
	case p.fastPath == nil && p.tunnel == nil:
		return "off (" + p.fastPathOff + ")"
	case !p.takesRedirects.Load():
		return "off (frames to it stay in user space: " + p.redirectsOff + ")"
	case !p.fastPathIn.Load():
		return "off (frames from it stay in user space: " + p.fastPathOff + ")"
	}
	return "on"
}

// FastPathStats are a bridge's fast path counters: frames carried in the
// kernel (Hits, as of the last sweep or SyncFastPath), entries installed,
// refused by the kernel (a full map), and deleted by the sweeper; the
// entries installed now; and the frames the programs dropped, by
// bpf.DropReasons, as of now (a rule's drops among them, which the
// sweeper also credits to the pipeline's).
type FastPathStats struct {
	Hits, Installs, InstallFailures, Evictions uint64
	Entries                                    int
	Drops                                      map[string]uint64
}

// FastPathStats reports the fast path's counters, and whether the bridge
// has a fast path.
func (b *Bridge) FastPathStats() (FastPathStats, bool) {
	fp := b.fp
	if fp == nil {
		return FastPathStats{}, false
	}
	fp.mu.Lock()
	defer fp.mu.Unlock()
	return FastPathStats{Hits: fp.hits.Load(), Installs: fp.installs.Load(), InstallFailures: fp.installFailures.Load(),
		Evictions: fp.evictions.Load(), Entries: len(fp.installed), Drops: fp.dp.Drops()}, true
}

// FastPathEntry is one entry of the fast path, as dump-fastpath shows it.
type FastPathEntry struct {
	Headers flow.Headers  // under Mask
	Mask    *flow.Headers // nil: exact
	// Actions are what the XDP program does to the frame, in the shape of
	// OVS's datapath actions (ovs-appctl dpctl/dump-flows).
	Actions        string
	Packets, Bytes uint64
	Idle           time.Duration // since it last carried a frame (or was installed)
	Stale          bool          // of an old generation: a miss until the sweeper deletes it
}

// FastPathEntries lists the fast path's entries, with their counts as of
// now (it syncs first).
func (b *Bridge) FastPathEntries() []FastPathEntry {
	b.SyncFastPath()
	fp := b.fp
	b.mu.Lock()
	if fp == nil || len(b.fwds) == 0 {
		b.mu.Unlock()
		return nil
	}
	now := b.fwds[0].now()
	b.mu.Unlock()
	fp.mu.Lock()
	defer fp.mu.Unlock()
	current := datapath.KeyGen(fp.generation())
	out := make([]FastPathEntry, 0, len(fp.installed))
	for k, r := range fp.installed {
		out = append(out, FastPathEntry{Headers: k.Headers(), Mask: r.mask, Actions: r.datapathActions(), Packets: r.packets, Bytes: r.bytes,
			Idle: time.Duration(now - r.active), Stale: k.Gen != current})
	}
	slices.SortFunc(out, func(x, y FastPathEntry) int { return cmp.Compare(y.Packets, x.Packets) })
	return out
}

// datapathActions writes what the entry does to a frame as OVS writes
// datapath actions: push_vlan(tpid=0x8100,tci=…), pop_vlan,
// set(eth(src=…)), set(ipv4 field), output:N, or drop.
func (r *fpInstalled) datapathActions() string {
	var parts []string
	for _, op := range r.entry.Ops {
		switch op.Type {
		case datapath.OpSetDlSrc:
			parts = append(parts, fmt.Sprintf("set(eth(src=%s))", net.HardwareAddr(op.Mac[:])))
		case datapath.OpSetDlDst:
			parts = append(parts, fmt.Sprintf("set(eth(dst=%s))", net.HardwareAddr(op.Mac[:])))
		case datapath.OpPopVLAN:
			parts = append(parts, "pop_vlan")
		case datapath.OpPushVLAN:
			if op.Mask != 0 {
				// The outer tag's TCI, DEI and all, from the frame.
				parts = append(parts, fmt.Sprintf("push_vlan(tpid=0x%04x,tci=outer)", be16(op.Tpid)))
			} else {
				parts = append(parts, fmt.Sprintf("push_vlan(tpid=0x%04x,tci=0x%04x)", be16(op.Tpid), be16(op.Tci)|flow.VLANCFI))
			}
		case datapath.OpSetTCI:
			parts = append(parts, fmt.Sprintf("set(vlan(tci=0x%04x/0x%04x))", be16(op.Tci), be16(op.Mask)))
		case datapath.OpSetL3, datapath.OpSetL4:
			header := "ip"
			if op.Type == datapath.OpSetL4 {
				header = "l4"
			}
			parts = append(parts, fmt.Sprintf("set(%s(offset=%d,value=0x%x))", header, op.Off, op.Value[:op.Len]))
		case datapath.OpTunnelPush:
			parts = append(parts, fmt.Sprintf("tnl_push(tnl_port(%d),vni=%d)", r.out.ofport, op.Delta))
		}
	}
	if r.out != nil && r.out.tunnel != nil {
		parts = append(parts, fmt.Sprintf("output:%s", r.out.tunnel.Underlay().Name()))
		return strings.Join(parts, ",")
	}
	if r.out == nil {
		parts = append(parts, "drop")
	} else {
		parts = append(parts, fmt.Sprintf("output:%d", r.out.ofport))
	}
	return strings.Join(parts, ",")
}

// fastPathVerdict says whether the fast path would carry the flow with
// headers h in the kernel ("yes"), or why not ("no (why)"), working its
// decision out as the forwarder would but learning nothing. It runs on
// the forwarder, under Bridge.mu.
func (f *forwarder) fastPathVerdict(h flow.Headers) string {
	switch {
	case f.fp == nil:
		return "no (the daemon runs with --fast-path off)"
	case h.DlType < 0x600 || h.DlSrc[0]&1 != 0:
		return "no (the program leaves 802.3 frames and multicast sources to user space)"
	}
	slot, ok := f.slot(h.InPort)
	if !ok {
		return fmt.Sprintf("no (port %d is not up on the bridge)", h.InPort)
	}
	if !f.ports[slot].fastPathIn.Load() {
		return fmt.Sprintf("no (port %d runs without the fast path: %s)", h.InPort, f.ports[slot].fastPathOff)
	}
	tr := translator{in: xlateIn{view: &f.view}}
	var d decision
	tr.translate(f.flows.Load(), &h, &d, f.now())
	if _, why := f.fastPathEntry(&d, &h); why != "" {
		return "no (" + why + ")"
	}
	return "yes"
}
