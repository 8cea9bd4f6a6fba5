package vswitch

import (
	"testing"
	"time"

	"github.com/xswitch/xswitch/bpf"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/internal/testenv"
	"github.com/xswitch/xswitch/port/porttest"
)

// sweepRig is a fast path with one entry installed by hand, NORMAL's from
// a station on port 1 to one on port 2, in a MAC table that ages entries
// after 3 s: what the sweeper reads and what it credits and checks.
type sweepRig struct {
	fp       *fastPath
	fdb      *macTable
	in, out  *bridgePort
	rule     *flow.Entry
	key      bpf.FastpathFpKey
	src, dst uint64 // the stations' MAC-table keys
}

const sweepAging = 3 * time.Second

func newSweepRig(t *testing.T) *sweepRig {
	t.Helper()
	testenv.RequireRoot(t)
	var tables [flow.NumTables]tableCounters
	fp, err := newFastPath(&tables, new(dropCounters))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fp.close() })
	r := &sweepRig{fp: fp, fdb: newMACTable(64, sweepAging),
		in: &bridgePort{Port: porttest.New("p1"), ofport: 1, slot: 0}, out: &bridgePort{Port: porttest.New("p2"), ofport: 2, slot: 1},
		rule: rules(t, "actions=NORMAL").Entries()[0]}
	h := flow.Headers{InPort: 1, DlSrc: [6]byte{2, 0, 0, 0, 0, 1}, DlDst: [6]byte{2, 0, 0, 0, 0, 2}, DlType: flow.EtherTypeIPv4}
	r.src, r.dst = macKey(h.DlSrc[:], 0), macKey(h.DlDst[:], 0)
	srcDep := r.fdb.learn(r.src, 0, 0)
	r.fdb.learn(r.dst, 1, 0)
	dstDep, _ := r.fdb.lookupDep(r.dst, 0)
	r.key = bpf.KeyOf(&h)
	entry := bpf.FastpathFpFlow{Generation: fp.generation(), Out: 1}
	fp.installed[h] = &fpInstalled{generation: fp.generation(), rules: []*flow.Entry{r.rule},
		lookups: []tableLookup{{table: 0, matched: true}}, macDeps: []macDep{srcDep, dstDep},
		in: r.in, out: r.out, entry: entry}
	r.count(t, 0)
	return r
}

// count sets the kernel's count of the entry to packets 100-byte frames,
// as if the program had carried them (on the first CPU).
func (r *sweepRig) count(t *testing.T, packets uint64) {
	t.Helper()
	values := make([]bpf.FastpathFpFlow, r.fp.ncpu)
	for i := range values {
		values[i] = r.fp.installed[r.key.Headers()].entry
	}
	values[0].Packets, values[0].Bytes = packets, 100*packets
	if err := r.fp.shared.Flows.Put(&r.key, values); err != nil {
		t.Fatal(err)
	}
}

func (r *sweepRig) sweep(t *testing.T, at time.Duration) {
	t.Helper()
	if err := r.fp.sweep(r.fdb, int64(at)); err != nil {
		t.Fatal(err)
	}
}

func (r *sweepRig) installed() bool {
	_, ok := r.fp.installed[r.key.Headers()]
	return ok
}

// The sweeper credits what the kernel carried to the rule, the table and
// both ports, once; it refreshes the source, as learning would, and so
// keeps the entry while the station keeps sending; and it deletes the
// entry once the destination, which sends nothing, ages out.
func TestSweeperCreditsAndFollowsTheMACTable(t *testing.T) {
	r := newSweepRig(t)
	r.count(t, 10)
	r.sweep(t, 2*time.Second)
	r.sweep(t, 2*time.Second) // nothing new: nothing credited twice
	if packets, bytes, _ := r.rule.Stats(); packets != 10 || bytes != 1000 {
		t.Errorf("the rule counted %d frames, %d bytes; want 10, 1000", packets, bytes)
	}
	if rx, tx := r.in.counters.rxPackets.Load(), r.out.counters.txPackets.Load(); rx != 10 || tx != 10 {
		t.Errorf("ports counted rx %d, tx %d; want 10 each", rx, tx)
	}
	if n := r.fp.tables[0].matched.Load(); n != 10 {
		t.Errorf("table 0 matched %d; want 10", n)
	}
	if n := r.fp.hits.Load(); n != 10 {
		t.Errorf("fast path hits %d; want 10", n)
	}
	// 4 s after both were learned: the source, refreshed at 2 s by the
	// fast path's traffic, is fresh; the destination is not.
	at := 4 * time.Second
	if _, ok := r.fdb.lookup(r.src, int64(at)); !ok {
		t.Error("the source aged out although the fast path carried its frames")
	}
	if _, ok := r.fdb.lookup(r.dst, int64(at)); ok {
		t.Fatal("the test's destination did not age: the test tests nothing")
	}
	r.count(t, 15)
	r.sweep(t, at)
	if r.installed() {
		t.Error("the entry survived the aging of the station it sends to")
	}
	if packets, _, _ := r.rule.Stats(); packets != 15 {
		t.Errorf("the rule counted %d frames; want the 15 the entry carried before it was deleted", packets)
	}
}

// An entry of an old generation is deleted, its last counts credited.
func TestSweeperDeletesStaleEntries(t *testing.T) {
	r := newSweepRig(t)
	r.count(t, 3)
	if err := r.fp.bump(); err != nil {
		t.Fatal(err)
	}
	r.sweep(t, time.Second)
	if r.installed() {
		t.Error("an entry of an old generation survived the sweep")
	}
	var values []bpf.FastpathFpFlow
	if err := r.fp.shared.Flows.Lookup(&r.key, &values); err == nil {
		t.Error("the stale entry is still in the kernel's map")
	}
	if packets, _, _ := r.rule.Stats(); packets != 3 {
		t.Errorf("the rule counted %d frames; want 3", packets)
	}
}

// An entry that carries nothing for fastPathIdle is deleted.
func TestSweeperDeletesIdleEntries(t *testing.T) {
	r := newSweepRig(t)
	fresh := func(at time.Duration) { // the stations send, in user space
		r.fdb.learn(r.dst, 1, int64(at))
		r.fdb.learn(r.src, 0, int64(at))
	}
	fresh(fastPathIdle / 2)
	r.sweep(t, fastPathIdle/2)
	if !r.installed() {
		t.Fatal("an entry idle for less than fastPathIdle was deleted")
	}
	fresh(fastPathIdle)
	r.sweep(t, fastPathIdle+time.Second)
	if r.installed() {
		t.Error("an entry idle for longer than fastPathIdle survived")
	}
}
