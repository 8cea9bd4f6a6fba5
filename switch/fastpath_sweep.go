package vswitch

import (
	"time"

	"github.com/xswitch/xswitch/datapath"
)

// The sweeper: what the kernel carried credited to the rules, tables and
// ports, and the entries that no longer hold deleted.

// fpPortDrops follows the redirects a port's interface refused: how many
// were counted, and what the fast path sent there since the last sweep,
// whose mean length stands for theirs (the kernel reports none).
type fpPortDrops struct {
	counted        uint64
	packets, bytes uint64
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
	// Of them, the frames its meter dropped went nowhere else.
	dm, dmb := carried.Metered-r.metered, carried.MeteredBytes-r.meteredBytes
	r.packets, r.bytes, r.metered, r.meteredBytes = carried.Packets, carried.Bytes, carried.Metered, carried.MeteredBytes
	credit(fp.tables, r.rules, r.lookups, r.groups, dp, db, wall)
	r.in.counters.rxPackets.Add(dp)
	r.in.counters.rxBytes.Add(db)
	if dm > 0 {
		fp.drops[dropMeter].Add(dm)
		r.in.counters.dropped[dropMeter].Add(dm)
	}
	if r.out != nil {
		sent := uint64(int64(db-dmb) + int64(dp-dm)*int64(r.lenDelta))
		r.out.counters.txPackets.Add(dp - dm)
		r.out.counters.txBytes.Add(sent)
		if d := fp.ports[r.via]; d != nil {
			d.packets += dp - dm
			d.bytes += sent
		}
	} else {
		fp.drops[dropRule].Add(dp - dm)
		r.in.counters.dropped[dropRule].Add(dp - dm)
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
	f.sweepFastPath(now)
}

// sweepFastPath runs the sweeper with this thread's MAC table and clock.
// It runs on the thread.
func (f *forwarder) sweepFastPath(now int64) {
	if err := f.fp.sweep(f.fdb, now); err != nil {
		f.log.Warn("fast path: reading the entries' counters failed", "err", err)
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
	f.do(func() { f.sweepFastPath(f.now()) })
}
