package vswitch

import (
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/xswitch/xswitch/datapath"
	"github.com/xswitch/xswitch/flow"
)

// The decision cache, and how a decision is revalidated.
//
// A decision records the generation of each table it looked in
// (flow.Table.Generation). When a new table version is published, a
// decision is checked on its next hit: if none of the tables it visited
// changed, it stands for the new version as it is; if one did, it is
// translated again, in place. An edit to an ACL table thus sends only the
// flows that went through that table back to translation, and a burst of
// edits costs each flow one translation when it next comes, not a purge
// that every flow pays for at once.
//
// NORMAL reads the MAC table, so a decision that resolves it records what
// it read (macDep). A unicast frame to a station learned on another port
// is sent to that port, relying on the destination's entry and on the
// source's, which translation learns on the input port. A frame to a
// group address, or to a station not learned, is flooded in its VLAN,
// relying on the source's entry and, for a station, on its having none.
// A hit checks that each entry is still in its slot as it was, and fresh
// (or still absent), refreshing the source as learning would; a failed
// check translates afresh, learning on the way. A move, an eviction, a
// flush, aging, or a destination learned at last thus sends exactly the
// flows that relied on the entry back to the slow path, and no others.
// What a flood reaches is read when it runs: the ports that forward, each
// in the form its VLAN configuration wants, and the input port's storm
// limit, which is a rate. What NORMAL refuses (a VLAN the input port does
// not carry, a reserved address) stays NORMAL, run per frame, so that
// its drops are counted where NORMAL counts them.

// decisionFor returns the decision for the frame whose key f.key holds,
// under table: the cache's, checked against what it relied on, or one
// worked out afresh, which may take the place of one whose counts are
// pending: those go to their rules first.
func (f *forwarder) decisionFor(table *flow.Table, now int64) *decision {
	d, ok := f.decisions.get(table, &f.key.Headers)
	switch {
	case !ok:
		f.flushCounts(time.Now())
		var cut string
		if d, cut = f.decisions.add(&f.key.Headers, now); cut != "" {
			f.logLoop(cut)
		}
	case !f.decisions.upToDate(d) || !f.stillHolds(d, now):
		f.flushCounts(time.Now())
		if cut := f.decisions.retranslate(&f.key.Headers, d, now); cut != "" {
			f.logLoop(cut)
		}
	}
	return d
}

// stillHolds checks the MAC-table entries d relies on (see the top),
// refreshing the frame's source as learning would, and, if ports'
// liveness changed since d was worked out, the liveness of those it chose
// buckets by.
func (f *forwarder) stillHolds(d *decision, now int64) bool {
	for i := range d.macDeps {
		if !f.fdb.holds(&d.macDeps[i], now) {
			return false
		}
	}
	if d.liveness != f.liveness {
		for _, dep := range d.liveDeps {
			if f.portLive(dep.port) != dep.live {
				return false
			}
		}
		d.liveness = f.liveness
	}
	return true
}

// decisionCache is a forwarder's exact-match cache of decisions by
// Headers. It does not lock: only its forwarder uses it. Decisions
// evicted are kept for reuse, so that a miss in a steady state allocates
// no decision, only the LRU's entry.
type decisionCache struct {
	lru   *simplelru.LRU[flow.Headers, *decision]
	table *flow.Table // the current version, that of the last get
	spare []*decision
	tr    translator

	// last is the most recently used decision: frames come in trains of
	// one flow, and comparing headers costs a fraction of hashing them.
	last      flow.Headers
	lastD     *decision
	lastValid bool

	// hits counts decisions found, misses translations for want of one,
	// and stale the decisions found but translated again because a table
	// they looked in, or a MAC-table entry they relied on, changed.
	hits, misses, stale counter
}

func newDecisionCache(size int) *decisionCache {
	c := &decisionCache{}
	lru, err := simplelru.NewLRU(size, func(_ flow.Headers, d *decision) { c.spare = append(c.spare, d) })
	if err != nil {
		panic(err) // unreachable: the size is positive (Options.withDefaults)
	}
	c.lru = lru
	return c
}

// upToDate reports whether d, found by the last get, holds for the current
// table version: none of the tables it looked in, nor the groups if it
// sent to one, changed since it was worked out.
func (c *decisionCache) upToDate(d *decision) bool {
	if d.table == c.table {
		return true
	}
	if d.groups != nil && d.groups != c.table.Groups() {
		return false
	}
	for i := range d.lookups {
		if l := &d.lookups[i]; c.table.Generation(l.table) != l.generation {
			return false
		}
	}
	d.table = c.table
	return true
}

// retranslate works d out again for headers, in place: a table it looked
// in, or an entry it relied on, changed. The caller flushes d's counts
// first.
func (c *decisionCache) retranslate(headers *flow.Headers, d *decision, now int64) (cut string) {
	c.stale.inc()
	return c.translate(headers, d, now)
}

// translate works d out for headers under the table of the last get,
// with the hash of the flow that picks its tunnels' outer source port.
// A translation cut short says why in cut.
func (c *decisionCache) translate(headers *flow.Headers, d *decision, now int64) (cut string) {
	c.tr.translate(c.table, headers, d, now)
	d.flowHash = datapath.FlowHash(headers)
	return c.tr.cut
}

// forget drops every decision: the ports they send to changed.
func (c *decisionCache) forget() {
	c.lru.Purge()
	c.lastValid = false
}

// get returns the decision for headers, if there is one, and makes t
// the current table version; the caller checks that the decision holds
// for it.
func (c *decisionCache) get(t *flow.Table, headers *flow.Headers) (*decision, bool) {
	c.table = t
	if c.lastValid && *headers == c.last {
		c.hits.inc()
		return c.lastD, true
	}
	d, ok := c.lru.Get(*headers)
	if ok {
		c.hits.inc()
		c.last, c.lastD, c.lastValid = *headers, d, true
	}
	return d, ok
}

// add translates headers under the table of the last get and keeps the
// decision, which may evict another: the caller flushes the counts of
// the decisions it holds first. A translation cut short says why in cut.
func (c *decisionCache) add(headers *flow.Headers, now int64) (d *decision, cut string) {
	c.misses.inc()
	if n := len(c.spare); n > 0 {
		d, c.spare = c.spare[n-1], c.spare[:n-1]
	} else {
		d = new(decision)
	}
	cut = c.translate(headers, d, now)
	c.lru.Add(*headers, d)
	c.last, c.lastD, c.lastValid = *headers, d, true
	return d, cut
}

// counter is written by one goroutine (a plain load and store, no locked
// add) and read by any.
type counter struct{ n atomic.Uint64 }

func (c *counter) inc() { c.n.Store(c.n.Load() + 1) }

func (c *counter) value() uint64 { return c.n.Load() }

// forgetDecisions drops every decision, and every fast path entry with
// them: the ports they send to changed.
func (f *forwarder) forgetDecisions() {
	f.decisions.forget()
	if f.fp != nil {
		f.fp.bump()
	}
}
