package vswitch

import (
	"github.com/xswitch/xswitch/datapath"
	"github.com/xswitch/xswitch/flow"
)

// What a batch offered the fast path installed at its end, and the
// entries retired because the batch displaced what they relied on in the
// MAC table.

// fpInstalled is what the fast path knows of one installed entry: where
// its counts go, and what it relies on.
type fpInstalled struct {
	key     datapath.Key
	rules   []*flow.Entry
	lookups []tableLookup
	groups  []groupHit
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
	// What the kernel counted so far, already credited, of it what the
	// entry's meter dropped; active is when it last carried a frame, on
	// the forwarders' clock.
	packets, bytes        uint64
	metered, meteredBytes uint64
	active                int64
}

type fpPending struct {
	key  datapath.Key
	flow datapath.Entry
	meta *fpInstalled
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
