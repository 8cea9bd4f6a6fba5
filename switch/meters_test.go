package vswitch

import (
	"errors"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/header"
	"github.com/xswitch/xswitch/internal/race"
	"github.com/xswitch/xswitch/port/porttest"
)

// meterTable is a meter table of the meters in ovs-ofctl's syntax.
func meterTable(t testing.TB, meters ...string) *flow.MeterTable {
	t.Helper()
	mt := flow.NewMeterTable()
	for _, text := range meters {
		m, err := flow.ParseMeter(text)
		if err != nil {
			t.Fatal(err)
		}
		if mt, err = mt.Add(m); err != nil {
			t.Fatal(err)
		}
	}
	return mt
}

// leakyBands is the slow obvious meter the bank is checked against: each
// band a bucket of debt in ns that drains as time passes and fills by the
// cost of each frame it lets through, exceeded while it holds more than
// the band's tolerance; of the bands a frame exceeds, the one of the
// highest rate applies, as OpenFlow says, and a frame not dropped fills
// the bands it did not exceed.
type leakyBands struct {
	meter *flow.Meter
	debt  []float64
	last  float64
}

func (l *leakyBands) frame(now float64, length int) (flow.BandType, uint8) {
	for i := range l.debt {
		l.debt[i] = max(0, l.debt[i]-(now-l.last))
	}
	l.last = now
	applied := -1
	exceeded := make([]bool, len(l.debt))
	for i, b := range l.meter.Bands {
		if l.debt[i] > float64(bandTolerance(l.meter.Flags, b)) {
			exceeded[i] = true
			if applied < 0 || b.Rate > l.meter.Bands[applied].Rate {
				applied = i
			}
		}
	}
	if applied >= 0 && l.meter.Bands[applied].Type == flow.BandDrop {
		return flow.BandDrop, 0
	}
	for i, b := range l.meter.Bands {
		if !exceeded[i] {
			units := float64(length) * 8e6
			if l.meter.Flags&flow.MeterFlagPktps != 0 {
				units = 1e9
			}
			// The bank's cost is whole ns, cut short.
			l.debt[i] += float64(uint64(units) / uint64(b.Rate))
		}
	}
	if applied < 0 {
		return 0, 0
	}
	return l.meter.Bands[applied].Type, l.meter.Bands[applied].PrecLevel
}

// The bank's meter (a GCRA per band, kept as a theoretical arrival time)
// decides every frame as the leaky buckets do, for random meters and
// random traffic, bursts and pauses; and it counts what it decided.
func TestMeterIsTheLeakyBucket(t *testing.T) {
	for seed := range uint64(200) {
		rnd := rand.New(rand.NewPCG(seed, 28))
		m := flow.Meter{ID: 9, Flags: []flow.MeterFlags{flow.MeterFlagKbps, flow.MeterFlagPktps}[rnd.IntN(2)]}
		if rnd.IntN(2) == 0 {
			m.Flags |= flow.MeterFlagBurst
		}
		for range 1 + rnd.IntN(3) {
			b := flow.MeterBand{Type: flow.BandDrop, Rate: uint32(1 + rnd.IntN(20000))}
			if rnd.IntN(2) == 0 {
				b.Type, b.PrecLevel = flow.BandDSCPRemark, uint8(1+rnd.IntN(3))
			}
			if m.Flags&flow.MeterFlagBurst != 0 {
				b.BurstSize = uint32(1 + rnd.IntN(200))
			}
			m.Bands = append(m.Bands, b)
		}
		mt, err := flow.NewMeterTable().Add(m)
		if err != nil {
			t.Fatal(err)
		}
		mb := newMeterBank(nil, time.Now())
		if err := mb.set(mt); err != nil {
			t.Fatal(err)
		}
		slot := mb.slot(m.ID)
		sim := &leakyBands{meter: &m, debt: make([]float64, len(m.Bands))}
		now := int64(time.Hour) // past the time the bank's tats start at
		sim.last = float64(mb.monoEpoch + now)
		var in, dropped uint64
		for i := range 3000 {
			switch rnd.IntN(20) {
			case 0:
				now += rnd.Int64N(int64(200 * time.Millisecond)) // a pause
			case 1, 2, 3:
				// frames of one batch, at one time
			default:
				now += rnd.Int64N(int64(200 * time.Microsecond))
			}
			length := 60 + rnd.IntN(1455)
			wantBand, wantLevels := sim.frame(float64(mb.monoEpoch+now), length)
			band, levels := mb.meter(slot, m.ID, length, now)
			if band != wantBand || levels != wantLevels {
				t.Fatalf("seed %d, frame %d (%d bytes at %v) through %s: band %d (%d levels); the leaky buckets say %d (%d)",
					seed, i, length, time.Duration(now), flow.FormatMeter(m), band, levels, wantBand, wantLevels)
			}
			in++
			if band == flow.BandDrop {
				dropped++
			}
		}
		s, ok, err := mb.stats(m.ID)
		if !ok || err != nil || s.PacketIn != in {
			t.Fatalf("stats %+v, %v, %v; want %d frames in", s, ok, err, in)
		}
		var applied uint64
		for _, b := range s.Bands {
			applied += b.Packets
		}
		if applied < dropped {
			t.Errorf("the bands applied to %d frames; %d were dropped", applied, dropped)
		}
	}
}

// A meter keeps its slot, its counts and its age through a change, and
// meters by its new bands at once; a meter deleted frees its slot, which
// meters nothing for a decision of the meter deleted.
func TestMeterBankFollowsTheTable(t *testing.T) {
	mb := newMeterBank(nil, time.Now())
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(mb.set(meterTable(t, "meter=1 pktps bands=type=drop rate=1", "meter=2 pktps bands=type=drop rate=1")))
	one, two := mb.slot(1), mb.slot(2)
	if one == two || one == noMeterSlot || two == noMeterSlot {
		t.Fatalf("slots %d and %d", one, two)
	}
	now := int64(time.Hour)
	if band, _ := mb.meter(one, 1, 100, now); band != 0 {
		t.Fatal("the first frame exceeds a rate of 1")
	}
	if band, _ := mb.meter(one, 1, 100, now); band != flow.BandDrop {
		t.Fatal("the second frame within the second does not")
	}
	must(mb.set(meterTable(t, "meter=1 pktps bands=type=drop rate=1000000", "meter=2 pktps bands=type=drop rate=1")))
	if mb.slot(1) != one {
		t.Errorf("meter 1 moved from slot %d to %d", one, mb.slot(1))
	}
	if band, _ := mb.meter(one, 1, 100, now); band != 0 {
		t.Error("meter 1, modified to a million a second, drops")
	}
	if s, _, _ := mb.stats(1); s.PacketIn != 3 || s.Bands[0].Packets != 1 {
		t.Errorf("meter 1's counts after the change: %+v", s)
	}
	must(mb.set(meterTable(t, "meter=3 pktps bands=type=drop rate=1")))
	if mb.slot(1) != noMeterSlot || mb.slot(2) != noMeterSlot {
		t.Error("deleted meters keep slots")
	}
	three := mb.slot(3)
	if band, _ := mb.meter(three, 1, 100, now); band != 0 {
		t.Error("a decision of meter 1 is metered by meter 3, which took a slot")
	}
	if s, ok, _ := mb.stats(3); !ok || s.PacketIn != 0 {
		t.Errorf("meter 3 in a reused slot: counts %+v", s)
	}
}

// A rule that names a meter the bridge does not have is refused, with
// ErrNoMeter, until the meter is there; a packet-out has no meter
// instruction.
func TestCheckMeters(t *testing.T) {
	b := newTestBridge(t)
	actions := parseActions(t, "meter:4,output:1")
	if err := b.CheckMeters(actions); !errors.Is(err, ErrNoMeter) {
		t.Errorf("CheckMeters without meter 4: %v", err)
	}
	if err := b.SetMeters(meterTable(t, "meter=4 kbps bands=type=drop rate=10")); err != nil {
		t.Fatal(err)
	}
	if err := b.CheckMeters(actions); err != nil {
		t.Errorf("CheckMeters with meter 4: %v", err)
	}
	if err := b.CheckMeters(parseActions(t, "output:1")); err != nil {
		t.Errorf("CheckMeters of no meter: %v", err)
	}
	if err := b.PacketOut(flow.ControllerPort, actions, frame(broadcast, mac(1), "x")); err == nil {
		t.Error("a packet-out with a meter instruction is taken")
	}
}

// meterForwarder is a forwarder whose port 1 sends through meter 1, as
// meters says it, to port 2.
func meterForwarder(t testing.TB, meters ...string) (*forwarder, []*porttest.Port) {
	t.Helper()
	ports := newPorts(2)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t, "in_port=1,actions=meter:1,output:2"))
	if err := f.meters.set(meterTable(t, meters...)); err != nil {
		t.Fatal(err)
	}
	return f, ports
}

// Frames through a meter: those past a drop band's rate are dropped and
// counted as the pipeline's meter drops; those past a remark band's leave
// with their DSCP's drop precedence raised, the IPv4 checksum right.
func TestMeterDropsAndRemarksInUserSpace(t *testing.T) {
	udp := func() []byte {
		fr := udpFrame(t, mac(2), mac(1), net.IPv4(10, 0, 0, 1), net.IPv4(10, 0, 0, 2), 1, 2, []byte("payload"))
		ip := header.IPv4(fr[header.EthernetLen:])
		fr[header.EthernetLen+header.IPv4TOSOffset] = 10<<2 | 1 // AF11, ECN 1
		ip.SetChecksum(ip.ComputeChecksum())
		return fr
	}
	f, ports := meterForwarder(t, "meter=1 pktps bands=type=drop rate=1")
	for range 3 {
		ports[0].Inject(udp())
	}
	forwardAll(f)
	if sent := ports[1].Transmitted(); len(sent) != 1 {
		t.Errorf("%d frames through a meter of 1 a second; want 1", len(sent))
	}
	if drops := f.bridgeDrops.pipeline(); drops[dropMeter] != 2 {
		t.Errorf("pipeline drops %v; want 2 meter drops", drops.ByReason())
	}
	if s, _, _ := f.meters.stats(1); s.PacketIn != 3 || s.Bands[0].Packets != 2 {
		t.Errorf("meter stats %+v; want 3 in, 2 dropped", s)
	}

	f, ports = meterForwarder(t, "meter=1 pktps bands=type=dscp_remark rate=1 prec_level=1")
	for range 2 {
		ports[0].Inject(udp())
	}
	forwardAll(f)
	sent := ports[1].Transmitted()
	if len(sent) != 2 {
		t.Fatalf("%d frames through a remark band; want 2", len(sent))
	}
	for i, want := range []uint8{10<<2 | 1, 12<<2 | 1} {
		ip := header.IPv4(sent[i][header.EthernetLen:])
		if tos := sent[i][header.EthernetLen+header.IPv4TOSOffset]; tos != want || !ip.ChecksumValid() {
			t.Errorf("frame %d left with TOS %#x (checksum holds: %v); want %#x", i, tos, ip.ChecksumValid(), want)
		}
	}
}

// Trace says what a meter would do with a frame of the packet's now, and
// only looks: however often it looks, the frame that follows passes, and
// takes the budget, after which trace says a frame would be dropped.
func TestTraceOfAMeter(t *testing.T) {
	f, ports := meterForwarder(t, "meter=1 pktps bands=type=drop rate=1")
	fr := udpFrame(t, mac(2), mac(1), net.IPv4(10, 0, 0, 1), net.IPv4(10, 0, 0, 2), 1, 2, []byte("payload"))
	var k flow.Key
	if !flow.NewExtractor().Extract(fr, 1, &k) {
		t.Fatal("the test frame does not extract")
	}
	note := func() string {
		t.Helper()
		for _, s := range f.trace(k.Headers, nil).Steps {
			if s.Action == "meter:1" {
				return strings.Join(s.Notes, "; ")
			}
		}
		t.Fatal("the trace has no meter:1 step")
		return ""
	}
	const meter = "meter 1 (drop above 1 pktps), judging each frame as it comes; "
	for range 10 {
		if got, want := note(), meter+"a frame now is within every band's rate: it goes on as it is"; got != want {
			t.Fatalf("trace of a meter with its budget: %q, want %q", got, want)
		}
	}
	ports[0].Inject(fr)
	forwardAll(f)
	if sent := ports[1].Transmitted(); len(sent) != 1 {
		t.Fatalf("%d frames through a meter of 1 a second that trace looked at; want 1", len(sent))
	}
	if got, want := note(), meter+"a frame now exceeds 1 pktps: dropped"; got != want {
		t.Errorf("trace of a meter without budget: %q, want %q", got, want)
	}
	f.flows.Publish(rules(t, "in_port=1,actions=meter:2,output:2"))
	steps := f.trace(k.Headers, nil).Steps
	if !slices.ContainsFunc(steps, func(s TraceStep) bool {
		return s.Action == "meter:2" && slices.Contains(s.Notes, "the bridge has no meter 2: nothing is metered")
	}) {
		t.Errorf("trace of a meter the bridge lacks does not say so: %+v", steps)
	}
}

// Running frames through a meter allocates nothing, those it drops and
// remarks included.
func TestMeteringAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector changes allocation counts")
	}
	// The loop port hands the same frames back batch after batch: their
	// drop precedence is already the highest, so that a remark leaves
	// them, and their keys, as they were. (From 0, each remark made a new
	// flow, whose translation allocates, while the runs measured.)
	f, _ := benchForwarderOf(t, 3, 8, func(frame []byte) {
		ip := header.IPv4(frame[header.EthernetLen:])
		frame[header.EthernetLen+header.IPv4TOSOffset] = dropPrecedenceMask
		ip.SetChecksum(ip.ComputeChecksum())
	})
	f.flows.Publish(rules(t, "ip,actions=meter:1,NORMAL"))
	if err := f.meters.set(meterTable(t, "meter=1 pktps bands=type=dscp_remark rate=1000 prec_level=1 type=drop rate=2000")); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() { f.forwardBatch(f.queues[0]) })
	if allocs != 0 {
		t.Fatalf("forwarding a batch through a meter allocates %.1f times; want 0", allocs)
	}
	s, _, _ := f.meters.stats(1)
	if s.PacketIn == 0 || s.Bands[0].Packets == 0 || s.Bands[1].Packets == 0 {
		t.Fatalf("the meter saw %+v: not every band applied", s)
	}
}

// BenchmarkForwardBatchMetered forwards batches of one flow through a
// meter above the rate, to compare with BenchmarkForwardBatchOneFlow's
// NORMAL alone.
func BenchmarkForwardBatchMetered(b *testing.B) {
	f, _ := benchForwarder(b, 3, 1)
	f.flows.Publish(rules(b, "actions=meter:1,NORMAL"))
	if err := f.meters.set(meterTable(b, "meter=1 kbps bands=type=drop rate=4000000000")); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		f.forwardBatch(f.queues[0])
	}
	perFrame := float64(b.Elapsed().Nanoseconds()) / float64(b.N*DefaultBatchSize)
	b.ReportMetric(perFrame, "ns/frame")
	b.ReportMetric(1e3/perFrame, "Mframes/s")
}

// A bridge (user space alone) that frames reach at ten times a meter's
// rate for a second passes its rate, within 10%, and counts in the band
// every frame it drops.
func TestBridgeMeterHoldsItsRate(t *testing.T) {
	for _, c := range []struct{ meter, unit string }{
		{"meter=1 pktps bands=type=drop rate=2000", "pktps"},
		{"meter=1 kbps bands=type=drop rate=8000", "kbps"},
	} {
		t.Run(c.unit, func(t *testing.T) {
			b := newTestBridge(t)
			in, out := porttest.New("p1"), porttest.New("p2")
			for _, p := range []*porttest.Port{in, out} {
				if _, err := b.AddPort(p, PortOptions{}); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { p.Close() })
			}
			if err := b.SetMeters(meterTable(t, c.meter)); err != nil {
				t.Fatal(err)
			}
			b.SetFlows(rules(t, "in_port=1,actions=meter:1,output:2"))
			// 500 bytes: 2000 a second are 8000 kbps.
			fr := udpFrame(t, mac(2), mac(1), net.IPv4(10, 0, 0, 1), net.IPv4(10, 0, 0, 2), 1, 2, make([]byte, 458))
			const rate, offered, period = 2000, 10, time.Second
			start := time.Now()
			sent := 0
			for elapsed := time.Duration(0); elapsed < period; elapsed = time.Since(start) {
				for ; sent < int(elapsed.Seconds()*rate*offered); sent++ {
					in.Inject(fr)
				}
				time.Sleep(time.Millisecond)
			}
			elapsed := time.Since(start)
			deadline := time.Now().Add(5 * time.Second)
			s, _, _ := b.MeterStats(1)
			for ; s.PacketIn < uint64(sent) && time.Now().Before(deadline); s, _, _ = b.MeterStats(1) {
				time.Sleep(10 * time.Millisecond)
			}
			passed := out.Counts().Transmitted
			want := rate * elapsed.Seconds()
			t.Logf("%d frames offered in %v, %d passed; want %.0f", sent, elapsed, passed, want)
			if float64(passed) < 0.9*want || float64(passed) > 1.1*want {
				t.Errorf("%d frames passed in %v; want %.0f within 10%%", passed, elapsed, want)
			}
			if s.PacketIn != uint64(sent) || s.Bands[0].Packets != uint64(sent)-passed {
				t.Errorf("meter stats %+v; want %d in, %d dropped", s, sent, uint64(sent)-passed)
			}
			if drops := b.PipelineDrops(); drops[dropMeter] != s.Bands[0].Packets {
				t.Errorf("pipeline drops %v; want the band's %d", drops.ByReason(), s.Bands[0].Packets)
			}
		})
	}
}

// User space and the fast path draw from one budget: a meter of one
// frame a second lets the first frame of a flow through in user space,
// and the kernel's entry then drops the next; with the budget full again
// (the meter changed), the kernel lets one through and user space drops
// the next. The counts are both paths'.
func TestMeterBudgetIsSharedByBothPaths(t *testing.T) {
	bed := newFastPathBed(t, 64, trunk(), trunk())
	a, b := bed.stations()
	bed.fp.publish(bed.cls, rules(t, "in_port=1,actions=meter:1,output:2"))
	once := "meter=1 pktps bands=type=drop rate=1"
	if err := bed.f.meters.set(meterTable(t, once)); err != nil {
		t.Fatal(err)
	}
	fr := udpFrame(t, b, a, net.IPv4(10, 0, 0, 1), net.IPv4(10, 0, 0, 2), 1, 2, []byte("metered"))
	if sent, _ := bed.userSpace(0, fr); len(sent) != 1 {
		t.Fatalf("user space sent the first frame %d times", len(sent))
	}
	if k := bed.kernel(t, 0, fr); !k.hit || k.redirected {
		t.Fatalf("the kernel, after user space spent the budget: %+v; want its entry to drop the frame", k)
	}
	// The same meter, changed and back: its band's budget full again.
	if err := bed.f.meters.set(meterTable(t, "meter=1 pktps bands=type=drop rate=2")); err != nil {
		t.Fatal(err)
	}
	if err := bed.f.meters.set(meterTable(t, once)); err != nil {
		t.Fatal(err)
	}
	if k := bed.kernel(t, 0, fr); !k.redirected {
		t.Fatalf("the kernel, with the budget full: %+v; want the frame sent", k)
	}
	if sent, _ := bed.userSpace(0, fr); len(sent) != 0 {
		t.Fatalf("user space, after the kernel spent the budget, sent the frame")
	}
	s, _, err := bed.f.meters.stats(1)
	if err != nil || s.PacketIn != 4 || s.Bands[0].Packets != 2 {
		t.Errorf("stats %+v (%v); want 4 frames in, 2 dropped, counted by both paths", s, err)
	}
}
