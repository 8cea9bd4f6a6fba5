package vswitch

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket/layers"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/internal/race"
	"github.com/xswitch/xswitch/port/porttest"
)

// randomPipeline writes a random pipeline of a few tables: matches on the
// fields the random frames vary, registers written and matched, goto_table
// forward, resubmit anywhere (loops included), rewrites, outputs, NORMAL,
// FLOOD, CONTROLLER, drops and misses; and connection tracking: ct()
// with and without commit, in zones, recirculating to any table (loops
// included), and matches on the connection's state.
func randomPipeline(rnd *rand.Rand, ports int) []string {
	var flows []string
	match := func() (string, bool) {
		var parts []string
		if rnd.IntN(3) == 0 {
			parts = append(parts, fmt.Sprintf("in_port=%d", 1+rnd.IntN(ports)))
		}
		if rnd.IntN(3) == 0 {
			parts = append(parts, fmt.Sprintf("reg%d=%d", rnd.IntN(2), rnd.IntN(3)))
		}
		if rnd.IntN(4) == 0 {
			parts = append(parts, []string{"ct_state=-trk", "ct_state=+trk+new", "ct_state=+trk+est", "ct_state=+trk+est+rpl"}[rnd.IntN(4)])
		}
		ip := false
		switch rnd.IntN(4) {
		case 0:
			parts, ip = append(parts, fmt.Sprintf("udp,tp_dst=%d", 1+rnd.IntN(3))), true
		case 1:
			parts, ip = append(parts, fmt.Sprintf("ip,nw_dst=10.0.0.%d", 1+rnd.IntN(3))), true
		case 2:
			parts = append(parts, fmt.Sprintf("dl_dst=02:00:00:00:00:%02x", 1+rnd.IntN(ports)))
		}
		return strings.Join(parts, ","), ip
	}
	for table := range 4 {
		for range 1 + rnd.IntN(5) {
			m, ip := match()
			var actions []string
			for range rnd.IntN(4) {
				switch rnd.IntN(13) {
				case 0:
					actions = append(actions, fmt.Sprintf("output:%d", 1+rnd.IntN(ports)))
				case 1:
					actions = append(actions, "NORMAL")
				case 2:
					actions = append(actions, "FLOOD")
				case 3:
					actions = append(actions, fmt.Sprintf("load:%d->reg%d[]", rnd.IntN(3), rnd.IntN(2)))
				case 4:
					actions = append(actions, "move:reg0[0..7]->reg1[8..15]")
				case 5:
					actions = append(actions, fmt.Sprintf("resubmit(,%d)", rnd.IntN(4)))
				case 6:
					actions = append(actions, fmt.Sprintf("resubmit(%d,%d)", 1+rnd.IntN(ports), rnd.IntN(4)))
				case 7:
					actions = append(actions, fmt.Sprintf("mod_dl_dst:02:00:00:00:00:%02x", 1+rnd.IntN(ports)))
				case 8:
					actions = append(actions, "IN_PORT")
				case 9:
					actions = append(actions, "output(port=2,max_len=30)")
				case 10:
					actions = append(actions, "controller(max_len=40)")
				case 11, 12:
					if ip {
						actions = append(actions, []string{"ct(commit)", fmt.Sprintf("ct(table=%d)", rnd.IntN(4)),
							fmt.Sprintf("ct(commit,zone=%d,table=%d)", rnd.IntN(2), rnd.IntN(4)), "ct_clear"}[rnd.IntN(4)])
					}
				}
			}
			// The instructions, in the order OpenFlow 1.3 gives them.
			if rnd.IntN(6) == 0 {
				actions = append(actions, "clear_actions")
			}
			switch rnd.IntN(5) {
			case 0:
				actions = append(actions, fmt.Sprintf("write_actions(output:%d)", 1+rnd.IntN(ports)))
			case 1:
				actions = append(actions, fmt.Sprintf("write_actions(NORMAL,mod_dl_src:02:00:00:00:00:%02x)", 1+rnd.IntN(ports)))
			}
			if table < 3 && rnd.IntN(2) == 0 {
				actions = append(actions, fmt.Sprintf("goto_table:%d", table+1+rnd.IntN(3-table)))
			}
			if len(actions) == 0 {
				actions = []string{"drop"}
			}
			if m != "" {
				m += ","
			}
			flows = append(flows, fmt.Sprintf("table=%d,priority=%d,%sactions=%s", table, rnd.IntN(4), m, strings.Join(actions, ",")))
		}
	}
	return flows
}

func randomFrames(tb testing.TB, rnd *rand.Rand, ports, n int) [][]byte {
	frames := make([][]byte, n)
	for i := range frames {
		dst := mac(byte(1 + rnd.IntN(ports+1))) // one more than there are stations: unknown
		if rnd.IntN(8) == 0 {
			dst = broadcast
		}
		src := mac(byte(1 + rnd.IntN(ports)))
		frames[i] = udpFrame(tb, dst, src, net.IPv4(10, 0, 0, byte(9)), net.IPv4(10, 0, 0, byte(1+rnd.IntN(3))),
			uint16(1000+rnd.IntN(2)), uint16(1+rnd.IntN(3)), []byte("payload"))
	}
	return frames
}

// TestCachedDecisionsMatchFreshTranslation runs random frames from random
// ports through random pipelines twice: on a forwarder that keeps its
// decisions, and on one that translates every frame afresh. What each
// port sends, every rule's and table's counters and the drops must be the
// same; the MAC table churns as NORMAL learns sources that move between
// ports, and the table changes twice on the way: a rule added, then one
// removed, so that cached decisions must tell which of them still hold.
func TestCachedDecisionsMatchFreshTranslation(t *testing.T) {
	const ports, pipelines, frames = 3, 60, 300
	var hits, misses, stale uint64
	packetInsSeen := 0
	for seed := range uint64(pipelines) {
		rnd := rand.New(rand.NewPCG(seed, 7))
		text := randomPipeline(rnd, ports)
		// Flows repeat, as they do on a wire: frames drawn from a pool of
		// 16, each from a random port, so that a station's source address
		// moves between ports now and then.
		pool := randomFrames(t, rnd, ports, 16)
		in := make([][]byte, frames)
		from := make([]int, frames)
		for i := range in {
			in[i], from[i] = pool[rnd.IntN(len(pool))], rnd.IntN(ports)
		}
		extra := randomPipeline(rnd, ports)
		added, err := flow.ParseRule(extra[rnd.IntN(len(extra))], nil)
		if err != nil {
			t.Fatal(err)
		}
		removed := rnd.Int()
		run := func(fresh bool) ([][][]byte, []uint64, [flow.NumTables]uint64, [numDropReasons]uint64, string, *forwarder) {
			p := newPorts(ports)
			f := testForwarder(t, 64, p...)
			tbl := rules(t, text...)
			f.flows.Publish(tbl)
			var entries []*flow.Entry // of every version, in order of first appearance
			seen := map[*flow.Entry]bool{}
			note := func() {
				for _, e := range tbl.Entries() {
					if !seen[e] {
						seen[e] = true
						entries = append(entries, e)
					}
				}
			}
			note()
			for i, fr := range in {
				switch i {
				case frames / 3:
					tbl = tbl.Add(added, time.Now())
				case 2 * frames / 3:
					all := tbl.Entries()
					victim := all[removed%len(all)]
					tbl, _ = tbl.Delete(flow.Filter{Match: victim.Match, Priority: victim.Priority, HasPriority: true}, true)
				}
				f.flows.Publish(tbl)
				note()
				p[from[i]].Inject(bytes.Clone(fr)) // rewrites work in place
				if fresh {
					f.decisions.forget()
					f.recircs.forget()
				}
				forwardAll(f)
			}
			var sent [][][]byte
			for _, q := range p {
				sent = append(sent, q.Transmitted())
			}
			var counts []uint64
			for _, e := range entries {
				n, b, _ := e.Stats()
				counts = append(counts, n, b)
			}
			var lookups [flow.NumTables]uint64
			for i := range lookups {
				lookups[i] = f.tableCounters[i].lookups.Load()<<32 | f.tableCounters[i].matched.Load()
			}
			var drops [numDropReasons]uint64
			for i := range drops {
				drops[i] = f.bridgeDrops[i].Load()
			}
			return sent, counts, lookups, drops, fmt.Sprintf("%+v", packetIns(f)), f
		}
		sentC, countsC, lookupsC, dropsC, insC, cached := run(false)
		sentF, countsF, lookupsF, dropsF, insF, _ := run(true)
		packetInsSeen += strings.Count(insC, "Reason:")
		if insC != insF {
			t.Fatalf("seed %d: packet-ins differ:\n%s cached\n%s fresh\npipeline:\n%s", seed, insC, insF, strings.Join(text, "\n"))
		}
		for i := range sentC {
			if len(sentC[i]) != len(sentF[i]) {
				t.Fatalf("seed %d: port %d sent %d frames cached, %d fresh\npipeline:\n%s", seed, i+1, len(sentC[i]), len(sentF[i]), strings.Join(text, "\n"))
			}
			for j := range sentC[i] {
				if !bytes.Equal(sentC[i][j], sentF[i][j]) {
					t.Fatalf("seed %d: port %d frame %d differs:\n%x cached\n%x fresh", seed, i+1, j, sentC[i][j], sentF[i][j])
				}
			}
		}
		if fmt.Sprint(countsC) != fmt.Sprint(countsF) || lookupsC != lookupsF || dropsC != dropsF {
			t.Fatalf("seed %d: counters differ: rules %v / %v, drops %v / %v\npipeline:\n%s", seed, countsC, countsF, dropsC, dropsF, strings.Join(text, "\n"))
		}
		hits += cached.decisions.hits.value()
		misses += cached.decisions.misses.value()
		stale += cached.decisions.stale.value()
	}
	t.Logf("%d pipelines, %d frames each: the cached forwarder hit %d times, translated %d and translated again %d",
		pipelines, frames, hits, misses, stale)
	if hits < misses {
		t.Errorf("the cached forwarder hit %d times and missed %d: the test hardly tests the cache", hits, misses)
	}
	if packetInsSeen < pipelines {
		t.Errorf("%d packet-ins in all: the test hardly tests CONTROLLER", packetInsSeen)
	}
}

// TestDecisionLRUPurgeAllocatesNothing pins down what the decision cache
// relies on when the bridge's ports change: simplelru's Purge empties the
// map and list in place (and the evicted decisions go to the spares).
func TestDecisionLRUPurgeAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector changes allocation counts")
	}
	c := newDecisionCache(DefaultCacheSize, translateHeaders)
	spares := make([]*decision, 0, DefaultCacheSize)
	c.spare = spares
	fewest := ^uint64(0)
	// The runtime's own goroutines allocate now and then, and MemStats
	// counts them too: a Purge that allocates does so every time, so the
	// fewest of a few tries is the Purge's own count.
	for range 3 {
		for i := range DefaultCacheSize {
			c.lru.Add(flow.Headers{InPort: uint16(i)}, &decision{})
		}
		c.spare = spares[:0]
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		c.lru.Purge()
		runtime.ReadMemStats(&after)
		fewest = min(fewest, after.Mallocs-before.Mallocs)
	}
	if fewest != 0 || c.lru.Len() != 0 || len(c.spare) != DefaultCacheSize {
		t.Errorf("Purge of a full cache: %d allocations, %d left, %d spares", fewest, c.lru.Len(), len(c.spare))
	}
}

// BenchmarkHitAndExecute is a decision cache hit and its execution for one
// frame, key extraction and the ring work left out: what a frame costs
// the pipeline, for one NORMAL rule (to a learned station, and flooding
// to two ports a frame to one not learned), three tables and a rewrite.
func BenchmarkHitAndExecute(b *testing.B) {
	for _, tt := range []struct {
		name  string
		dst   byte
		flows []string
	}{
		{"normal", 2, []string{"priority=0,actions=NORMAL"}},
		{"normal-flood", 9, []string{"priority=0,actions=NORMAL"}},
		{"three-tables", 2, []string{
			"table=0,priority=10,in_port=1,actions=load:1->reg0[],goto_table:1",
			"table=1,priority=100,tcp,tp_dst=23,actions=drop",
			"table=1,priority=0,actions=goto_table:2",
			"table=2,priority=0,actions=NORMAL"}},
		{"rewrite", 2, []string{"priority=0,udp,actions=mod_nw_dst:10.0.0.9,mod_tp_dst:99,output:2"}},
		// A label edge and a label switch (mplsSpec's frame).
		{"mpls-push", 2, []string{"priority=0,udp,actions=push_mpls:0x8847,set_mpls_label:16,output:2"}},
		{"mpls-swap", 2, []string{"priority=0,mpls,actions=set_mpls_label:17,dec_mpls_ttl,output:2"}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			f, _ := benchForwarder(b, 3, 1)
			tbl := rules(b, tt.flows...)
			f.flows.Publish(tbl)
			frame := udpFrame(b, mac(tt.dst), mac(1), net.IPv4(10, 0, 0, 1), net.IPv4(10, 0, 0, 2), 1000, 5000, make([]byte, 18))
			if strings.HasPrefix(tt.flows[0], "priority=0,mpls") {
				frame = mplsSpec{labels: []layers.MPLS{lse(16, 0, true, 64)}, ttl: 64}.build(b)
			}
			if !f.extractor.Extract(frame, 1, &f.key) {
				b.Fatal("the bench frame does not extract")
			}
			f.forwardFrame(tbl, 0, frame, f.now())
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				f.forwardFrame(tbl, 0, frame, 0)
				if n++; n == DefaultBatchSize {
					f.flushCounts(time.Time{})
					f.transmitGroups()
					f.copies.reset()
					n = 0
				}
			}
		})
	}
}

// TestNormalDecisionsFollowTheMACTable: NORMAL to a learned station is
// resolved in the decision, which hits while both stations stay put; a
// move, a flush and aging each send the flow back to translation, at
// once.
func TestNormalDecisionsFollowTheMACTable(t *testing.T) {
	ports := newPorts(3)
	f := testForwarder(t, 64, ports...)
	aToB := frame(mac(2), mac(1), "a to b")
	ports[1].Inject(frame(broadcast, mac(2), "b says hello"))
	forwardAll(f)
	ports[0].Inject(aToB)
	forwardAll(f)
	for _, p := range ports {
		p.Transmitted()
	}
	hits, stale := f.decisions.hits.value(), f.decisions.stale.value()
	ports[0].Inject(aToB, aToB, aToB)
	forwardAll(f)
	wantFrames(t, ports[1], aToB, aToB, aToB)
	if h, s := f.decisions.hits.value()-hits, f.decisions.stale.value()-stale; h != 3 || s != 0 {
		t.Fatalf("3 frames of a known flow: %d hits, %d stale; want 3 hits, none stale", h, s)
	}
	d, _ := f.decisions.get(f.flows.Load(), &flow.Headers{InPort: 1, DlDst: [6]byte(mac(2)), DlSrc: [6]byte(mac(1)), DlType: 0x88b5})
	if len(d.actions) != 1 || d.actions[0].Type != actNormalTo || len(d.macDeps) != 2 {
		t.Fatalf("the decision is %+v, want NORMAL resolved to one port with its two entries", d)
	}

	// b moves to port 3: the next frame to b follows it.
	ports[2].Inject(frame(broadcast, mac(2), "b moved"))
	forwardAll(f)
	ports[0].Transmitted()
	ports[1].Transmitted()
	ports[0].Inject(aToB)
	forwardAll(f)
	wantFrames(t, ports[2], aToB)
	wantFrames(t, ports[1])
	if s := f.decisions.stale.value() - stale; s != 1 {
		t.Errorf("after b moved: %d decisions stale, want the one flow to b", s)
	}

	// Port 3 leaves: its stations are forgotten, the flow floods again.
	f.fdb.flushPort(2)
	ports[0].Inject(aToB)
	forwardAll(f)
	wantFrames(t, ports[1], aToB)

	// b ages out: nothing is sent by what the decision knew of it.
	ports[2].Inject(frame(broadcast, mac(2), "b back on 3"))
	forwardAll(f)
	for _, p := range ports {
		p.Transmitted()
	}
	f.fdb.aging = int64(time.Millisecond)
	time.Sleep(2 * time.Millisecond)
	ports[0].Inject(aToB)
	forwardAll(f)
	wantFrames(t, ports[1], aToB) // flooded: b is unknown again
	wantFrames(t, ports[2], aToB)
}

// TestFloodDecisionsFollowTheMACTable: a frame to a station not learned,
// and a broadcast, are flooded by their decisions, which hit while the
// station stays unknown; once it is learned, the flow goes to its port
// alone, at once.
func TestFloodDecisionsFollowTheMACTable(t *testing.T) {
	ports := newPorts(3)
	f := testForwarder(t, 64, ports...)
	aToB := frame(mac(2), mac(1), "a to b")
	aToAll := frame(broadcast, mac(1), "a to all")
	ports[0].Inject(aToB, aToAll)
	forwardAll(f)
	wantFrames(t, ports[1], aToB, aToAll)
	wantFrames(t, ports[2], aToB, aToAll)
	for _, headers := range []flow.Headers{
		{InPort: 1, DlDst: [6]byte(mac(2)), DlSrc: [6]byte(mac(1)), DlType: 0x88b5},
		{InPort: 1, DlDst: [6]byte(broadcast), DlSrc: [6]byte(mac(1)), DlType: 0x88b5},
	} {
		d, ok := f.decisions.get(f.flows.Load(), &headers)
		if !ok || len(d.actions) != 1 || d.actions[0].Type != actNormalFlood {
			t.Fatalf("the decision for %x is %+v, want NORMAL resolved to a flood", headers.DlDst, d)
		}
	}

	hits, stale := f.decisions.hits.value(), f.decisions.stale.value()
	ports[0].Inject(aToB, aToAll, aToB)
	forwardAll(f)
	wantFrames(t, ports[1], aToB, aToAll, aToB)
	wantFrames(t, ports[2], aToB, aToAll, aToB)
	if h, s := f.decisions.hits.value()-hits, f.decisions.stale.value()-stale; h != 3 || s != 0 {
		t.Fatalf("3 frames of flooded flows: %d hits, %d stale; want 3 hits, none stale", h, s)
	}

	// b speaks up on port 2: the flow to b goes there alone; the
	// broadcast still floods, its decision untouched.
	ports[1].Inject(frame(mac(1), mac(2), "b to a"))
	forwardAll(f)
	wantFrames(t, ports[0], frame(mac(1), mac(2), "b to a"))
	stale = f.decisions.stale.value()
	ports[0].Inject(aToB, aToAll)
	forwardAll(f)
	wantFrames(t, ports[1], aToB, aToAll)
	wantFrames(t, ports[2], aToAll)
	if s := f.decisions.stale.value() - stale; s != 1 {
		t.Errorf("after b was learned: %d decisions stale, want the one flow to b", s)
	}
}

// stationFlows builds a forwarder whose port 1 serves n stations sending
// to n stations on port 2, all learned, with a decision cached for each
// flow; frames are the flows' frames, in order.
func stationFlows(tb testing.TB, n int) (*forwarder, []*porttest.Port, [][]byte) {
	ports := newPorts(2)
	f := forwarderWith(tb, Options{BatchSize: DefaultBatchSize, MACTableSize: 4 * n, MACAging: time.Hour, CacheSize: 2 * n}, ports...)
	station := func(side, i int) []byte { return []byte{0x02, byte(side), 0, byte(i >> 16), byte(i >> 8), byte(i)} }
	frames := make([][]byte, n)
	for i := range n {
		f.fdb.learn(macKey(station(2, i), 0), 1, f.now())
		frames[i] = frame(station(2, i), station(1, i), "flow")
	}
	for i := 0; i < n; i += DefaultBatchSize {
		ports[0].Inject(frames[i:min(i+DefaultBatchSize, n)]...)
		forwardAll(f)
	}
	ports[1].Transmitted()
	return f, ports, frames
}

// TestDecisionsStaleOnlyWhereTheyLooked: of 2,000 cached flows, a station
// that moves sends back to translation only the flow that relied on it.
func TestDecisionsStaleOnlyWhereTheyLooked(t *testing.T) {
	const n = 2000
	f, ports, frames := stationFlows(t, n)
	moved := frames[n/2]
	f.fdb.learn(macKey(moved[0:6], 0), 0, f.now()) // its destination now learned on port 1
	stale, misses := f.decisions.stale.value(), f.decisions.misses.value()
	for i := 0; i < n; i += DefaultBatchSize {
		ports[0].Inject(frames[i:min(i+DefaultBatchSize, n)]...)
		forwardAll(f)
	}
	if s, m := f.decisions.stale.value()-stale, f.decisions.misses.value()-misses; s != 1 || m != 0 {
		t.Errorf("one station moved: %d of %d decisions stale, %d translated anew; want 1 and 0", s, n, m)
	}
	if got := len(ports[1].Transmitted()); got != n-1 {
		t.Errorf("port 2 sent %d frames, want %d: all but the one to the station now on port 1", got, n-1)
	}
}

// BenchmarkStationMove: in a cache of 10,000 decisions, one station moves
// and every flow's next frame goes through; it reports how many decisions
// the move made stale and the time of the pass (the test ports' copying
// of every frame included, which is most of the allocations).
func BenchmarkStationMove(b *testing.B) {
	const n = 10000
	f, ports, frames := stationFlows(b, n)
	stale := f.decisions.stale.value()
	moves := 0
	for b.Loop() {
		// A station not moved before goes to port 1's side.
		moved := frames[moves%n]
		f.fdb.learn(macKey(moved[0:6], 0), 0, f.now())
		moves++
		for i := 0; i < n; i += DefaultBatchSize {
			ports[0].Inject(frames[i:min(i+DefaultBatchSize, n)]...)
			forwardAll(f)
		}
		ports[1].Transmitted()
		ports[0].Transmitted()
	}
	b.ReportMetric(float64(f.decisions.stale.value()-stale)/float64(moves), "stale/move")
}

// twoTableFlows builds a forwarder whose table 0 sends TCP through table
// 1 (to port 2) and the rest through table 2 (to port 3), and n TCP and n
// UDP flows from port 1; pass sends each flow's frame once, and returns
// what ports 2 and 3 sent.
func twoTableFlows(tb testing.TB, n int) (f *forwarder, tbl *flow.Table, pass func() (toTable1, toTable2 int)) {
	ports := newPorts(3)
	f = forwarderWith(tb, Options{BatchSize: DefaultBatchSize, CacheSize: 4 * n}, ports...)
	tbl = rules(tb,
		"priority=10,tcp,actions=goto_table:1",
		"priority=0,actions=goto_table:2",
		"table=1,priority=0,actions=output:2",
		"table=2,priority=0,actions=output:3")
	f.flows.Publish(tbl)
	var frames [][]byte
	for i := range n {
		s := baseSpec()
		s.tpSrc = uint16(1000 + i)
		frames = append(frames, s.build(tb))
		s.proto = layers.IPProtocolUDP
		frames = append(frames, s.build(tb))
	}
	pass = func() (int, int) {
		for i := 0; i < len(frames); i += DefaultBatchSize {
			ports[0].Inject(frames[i:min(i+DefaultBatchSize, len(frames))]...)
			forwardAll(f)
		}
		return len(ports[1].Transmitted()), len(ports[2].Transmitted())
	}
	pass()
	return f, tbl, pass
}

// TestTableEditRetranslatesOnlyTheFlowsThroughIt: of TCP flows that go
// through table 1 and UDP flows that go through table 2, an edit to
// table 1 sends only the TCP flows back to translation, and what they
// are translated to is the new table's answer.
func TestTableEditRetranslatesOnlyTheFlowsThroughIt(t *testing.T) {
	const n = 500
	f, tbl, pass := twoTableFlows(t, n)
	r, err := flow.ParseRule("table=1,priority=100,tcp,tp_src=1005,actions=drop", nil)
	if err != nil {
		t.Fatal(err)
	}
	f.flows.Publish(tbl.Add(r, time.Now()))
	stale, misses := f.decisions.stale.value(), f.decisions.misses.value()
	tcp, udp := pass()
	if s, m := f.decisions.stale.value()-stale, f.decisions.misses.value()-misses; s != n || m != 0 {
		t.Errorf("an edit to table 1: %d of %d decisions translated again and %d anew; want %d and 0", s, 2*n, m, n)
	}
	if tcp != n-1 {
		t.Errorf("port 2 sent %d TCP frames, want %d: all but the one the new rule drops", tcp, n-1)
	}
	if udp != n {
		t.Errorf("port 3 sent %d UDP frames, want %d", udp, n)
	}
}

// BenchmarkTableEdit: in a cache of 10,000 decisions, half through table
// 1 and half through table 2, one rule is added to table 1 and every
// flow's next frame goes through; it reports how many decisions each
// edit sent back to translation, and the time of the pass.
func BenchmarkTableEdit(b *testing.B) {
	f, tbl, pass := twoTableFlows(b, 5000)
	stale, edits := f.decisions.stale.value(), 0
	for b.Loop() {
		r, err := flow.ParseRule(fmt.Sprintf("table=1,priority=100,tcp,tp_dst=%d,actions=drop", 10000+edits), nil)
		if err != nil {
			b.Fatal(err)
		}
		tbl = tbl.Add(r, time.Now())
		f.flows.Publish(tbl)
		edits++
		pass()
	}
	b.ReportMetric(float64(f.decisions.stale.value()-stale)/float64(edits), "retranslated/edit")
}
