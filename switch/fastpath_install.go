package vswitch

import (
	"slices"

	"github.com/xswitch/xswitch/datapath"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/header"
)

// A frame's decision offered to the fast path, queued, and installed at
// its batch's end; and the entries retired because the batch displaced
// what they relied on in the MAC table.

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

// entryKey is the key of the fast path's entry for a flow with headers h
// in the batch's view: h under its mask, in its generation.
func (f *forwarder) entryKey(h *flow.Headers) datapath.Key {
	return datapath.NewKey(h, f.fpView.mask, f.fpView.generation)
}

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
			meta.lenDelta += header.VLANTagLen
		case datapath.OpPopVLAN:
			meta.lenDelta -= header.VLANTagLen
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
