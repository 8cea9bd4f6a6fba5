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
// under table.
func (f *forwarder) decisionFor(table *flow.Table, now int64) *decision {
	return decide(f, f.decisions, table, &f.key.Headers, now)
}

// decide returns the decision for k from cache c, under table: the
// cache's, checked against what it relied on, or one worked out afresh,
// which may take the place of one whose counts are pending: those go to
// their rules first.
func decide[K comparable](f *forwarder, c *decisionCache[K], table *flow.Table, k *K, now int64) *decision {
	d, ok := c.get(table, k)
	switch {
	case ok && d.running > 0:
		// A recirculation of the frame whose run of d is under way, back
		// where it was: d holds for the frame's table, and is not changed
		// under its run.
	case !ok:
		f.flushCounts(time.Now())
		var cut string
		if d, cut = c.add(k, now); cut != "" {
			f.logLoop(cut)
		}
	case !c.upToDate(d) || !f.stillHolds(d, now):
		f.flushCounts(time.Now())
		if cut := c.retranslate(k, d, now); cut != "" {
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

// decisionCache is a forwarder's exact-match cache of decisions by key
// K: a frame's Headers, or a recirculation's recircKey (conntrack.go).
// It does not lock: only its forwarder uses it. Decisions evicted are
// kept for reuse, so that a miss in a steady state allocates no decision,
// only the LRU's entry.
type decisionCache[K comparable] struct {
	lru   *simplelru.LRU[K, *decision]
	table *flow.Table // the current version, that of the last get
	spare []*decision
	tr    translator
	// work translates a key into a decision, with the hash of the flow
	// that picks its tunnels' outer source port.
	work func(tr *translator, t *flow.Table, k *K, d *decision, now int64)

	// last is the most recently used decision: frames come in trains of
	// one flow, and comparing keys costs a fraction of hashing them.
	last      K
	lastD     *decision
	lastValid bool

	// hits counts decisions found, misses translations for want of one,
	// and stale the decisions found but translated again because a table
	// they looked in, or a MAC-table entry they relied on, changed.
	hits, misses, stale counter
}

func newDecisionCache[K comparable](size int, work func(*translator, *flow.Table, *K, *decision, int64)) *decisionCache[K] {
	c := &decisionCache[K]{work: work}
	lru, err := simplelru.NewLRU(size, func(_ K, d *decision) { c.spare = append(c.spare, d) })
	if err != nil {
		panic(err) // unreachable: the size is positive (Options.withDefaults)
	}
	c.lru = lru
	return c
}

// upToDate reports whether d, found by the last get, holds for the current
// table version: none of the tables it looked in, nor the groups if it
// sent to one, changed since it was worked out.
func (c *decisionCache[K]) upToDate(d *decision) bool {
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

// retranslate works d out again for k, in place: a table it looked in,
// or an entry it relied on, changed. The caller flushes d's counts
// first.
func (c *decisionCache[K]) retranslate(k *K, d *decision, now int64) (cut string) {
	c.stale.inc()
	return c.translate(k, d, now)
}

// translate works d out for k under the table of the last get. A
// translation cut short says why in cut.
func (c *decisionCache[K]) translate(k *K, d *decision, now int64) (cut string) {
	c.work(&c.tr, c.table, k, d, now)
	return c.tr.cut
}

// translateHeaders is how the cache of frames' decisions works one out.
func translateHeaders(tr *translator, t *flow.Table, headers *flow.Headers, d *decision, now int64) {
	tr.translate(t, headers, d, now)
	d.flowHash = datapath.FlowHash(headers)
}

// forget drops every decision: the ports they send to changed.
func (c *decisionCache[K]) forget() {
	c.lru.Purge()
	c.lastValid = false
}

// get returns the decision for k, if there is one, and makes t the
// current table version; the caller checks that the decision holds for
// it.
func (c *decisionCache[K]) get(t *flow.Table, k *K) (*decision, bool) {
	c.table = t
	if c.lastValid && *k == c.last {
		c.hits.inc()
		return c.lastD, true
	}
	d, ok := c.lru.Get(*k)
	if ok {
		c.hits.inc()
		c.last, c.lastD, c.lastValid = *k, d, true
	}
	return d, ok
}

// add translates k under the table of the last get and keeps the
// decision, which may evict another: the caller flushes the counts of
// the decisions it holds first. A translation cut short says why in cut.
func (c *decisionCache[K]) add(k *K, now int64) (d *decision, cut string) {
	c.misses.inc()
	if n := len(c.spare); n > 0 && c.spare[n-1].running == 0 {
		d, c.spare = c.spare[n-1], c.spare[:n-1]
	} else {
		// None, or one evicted while a recirculation runs it: that one
		// is left to the collector once its run ends.
		if n > 0 {
			c.spare = c.spare[:n-1]
		}
		d = new(decision)
	}
	cut = c.translate(k, d, now)
	c.lru.Add(*k, d)
	c.last, c.lastD, c.lastValid = *k, d, true
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
	f.recircs.forget()
	if f.fp != nil {
		f.fp.bump()
	}
}
