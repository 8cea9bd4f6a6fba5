package vswitch

import (
	"bytes"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/internal/race"
	"github.com/xswitch/xswitch/port/porttest"
)

// packetIns takes what f's queue holds, as TakePacketIns does.
func packetIns(f *forwarder) []PacketIn {
	dst := make([]PacketIn, f.pins.nslots)
	n, _ := f.pins.take(dst, make([]byte, f.pins.nbytes))
	return dst[:n]
}

// The CONTROLLER action copies the frame as it is when the action runs,
// cut to max_len with its whole length kept, and says which rule sent it,
// from which table, and the key then: registers and metadata included.
// The table-miss rule's frames are no_match; other frames still go where
// the rules send them.
func TestControllerCopiesAndTruncates(t *testing.T) {
	ports := newPorts(3)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t,
		"priority=10,in_port=1,actions=load:5->reg3[],write_metadata:0x9,goto_table:1",
		"table=1,cookie=0x42,actions=mod_dl_src:02:00:00:00:00:07,controller(max_len=20,id=7),output:2",
		"priority=0,actions=CONTROLLER",
		"priority=5,in_port=3,actions=controller(reason=invalid_ttl,max_len=14)"))
	long := frame(mac(9), mac(1), "a payload longer than twenty bytes")
	short := frame(mac(9), mac(2), "short")
	third := frame(mac(9), mac(3), "third")
	ports[0].Inject(long)
	ports[1].Inject(short)
	ports[2].Inject(third)
	forwardAll(f)

	rewritten := append([]byte{}, long...)
	copy(rewritten[6:12], []byte{2, 0, 0, 0, 0, 7})
	wantFrames(t, ports[1], rewritten)
	got := packetIns(f)
	if len(got) != 3 {
		t.Fatalf("%d packet-ins; want 3", len(got))
	}
	in := got[0]
	if !bytes.Equal(in.Data, rewritten[:20]) || in.TotalLen != len(long) {
		t.Errorf("packet-in of the long frame: %d bytes of %d, %x; want the rewritten frame's first 20 of %d", len(in.Data), in.TotalLen, in.Data, len(long))
	}
	if in.Reason != flow.ReasonAction || in.Table != 1 || in.Cookie != 0x42 || in.ControllerID != 7 {
		t.Errorf("packet-in: reason %d, table %d, cookie %#x, id %d; want action (1), 1, 0x42, 7", in.Reason, in.Table, in.Cookie, in.ControllerID)
	}
	if k := in.Key; k.InPort != 1 || k.Regs[3] != 5 || k.Metadata != 9 || k.DlSrc != [6]byte{2, 0, 0, 0, 0, 7} {
		t.Errorf("packet-in key: in_port %d, reg3 %d, metadata %#x, dl_src %x; want 1, 5, 0x9, the rewritten one", k.InPort, k.Regs[3], k.Metadata, k.DlSrc)
	}
	if in := got[1]; !bytes.Equal(in.Data, short) || in.TotalLen != len(short) || in.Reason != flow.ReasonNoMatch || in.Key.InPort != 2 {
		t.Errorf("table-miss packet-in: %x of %d, reason %d, in_port %d; want the whole frame, no_match (0), 2", in.Data, in.TotalLen, in.Reason, in.Key.InPort)
	}
	if in := got[2]; !bytes.Equal(in.Data, third[:14]) || in.Reason != flow.ReasonInvalidTTL {
		t.Errorf("packet-in from port 3: %x, reason %d; want the first 14 bytes, invalid_ttl (2)", in.Data, in.Reason)
	}
	if drops := f.bridgeDrops.pipeline(); drops != (DropCounts{}) {
		t.Errorf("drops %v; want none: a frame sent to the controller is sent", drops.ByReason())
	}
}

// A full queue, and the rate limit, drop packet-ins, counted by reason;
// the forwarder goes on.
func TestControllerDropsAreCounted(t *testing.T) {
	ports := newPorts(2)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t, "actions=CONTROLLER"))
	const extra = 100
	for i := range packetInSlots + extra {
		ports[0].Inject(frame(broadcast, mac(1), strings.Repeat("x", i%50)))
	}
	forwardAll(f)
	drops := f.bridgeDrops.pipeline()
	if drops[dropControllerQueue] != extra || drops[dropControllerRate] != 0 {
		t.Errorf("drops %v; want %d controller_queue", drops.ByReason(), extra)
	}
	if n := len(packetIns(f)); n != packetInSlots {
		t.Errorf("%d packet-ins queued; want %d", n, packetInSlots)
	}

	// One a second, in bursts of 10: of 50 frames at once, 10 pass.
	f.pinBucket.setLimit(1, 10, f.now())
	for range 50 {
		ports[0].Inject(frame(broadcast, mac(1), "rated"))
	}
	forwardAll(f)
	if n := len(packetIns(f)); n != 10 {
		t.Errorf("%d packet-ins under the rate limit; want 10", n)
	}
	if drops := f.bridgeDrops.pipeline(); drops[dropControllerRate] != 40 || drops[dropControllerQueue] != extra {
		t.Errorf("drops %v; want 40 controller_rate and still %d controller_queue", drops.ByReason(), extra)
	}
	if got := f.ports[0].counters.dropped.pipeline(); got[dropControllerRate] != 40 {
		t.Errorf("port 1's drops %v; want its 40 controller_rate", got.ByReason())
	}
}

// The byte ring is full before the slots are when frames are long: the
// rest are dropped as controller_queue, and room comes back as the agent
// takes them.
func TestControllerByteRingFills(t *testing.T) {
	ports := newPorts(2)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t, "actions=CONTROLLER"))
	long := frame(broadcast, mac(1), strings.Repeat("y", 9000))
	fit := f.pins.nbytes / len(long)
	for range fit + 5 {
		ports[0].Inject(long)
	}
	forwardAll(f)
	got := packetIns(f)
	if len(got) != fit || f.bridgeDrops.pipeline()[dropControllerQueue] != 5 {
		t.Fatalf("%d packet-ins, %d queue drops; want %d, 5", len(got), f.bridgeDrops.pipeline()[dropControllerQueue], fit)
	}
	for i, in := range got {
		if !bytes.Equal(in.Data, long) {
			t.Fatalf("packet-in %d is not the frame", i)
		}
	}
	ports[0].Inject(long)
	forwardAll(f)
	if got := packetIns(f); len(got) != 1 || !bytes.Equal(got[0].Data, long) {
		t.Fatalf("after the ring was emptied: %d packet-ins; want the frame", len(got))
	}
}

// controllerForwarder is benchForwarder under a CONTROLLER rule, with
// what its queue is drained into.
func controllerForwarder(tb testing.TB) (f *forwarder, drain func()) {
	f, _ = benchForwarder(tb, 3, 8)
	f.flows.Publish(rules(tb, "actions=controller(max_len=128),output:2"))
	dst := make([]PacketIn, DefaultBatchSize)
	arena := make([]byte, f.pins.nbytes)
	return f, func() {
		if n, _ := f.pins.take(dst, arena); n != DefaultBatchSize {
			tb.Fatalf("%d packet-ins from a batch; want %d", n, DefaultBatchSize)
		}
	}
}

func TestControllerAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector changes allocation counts")
	}
	f, drain := controllerForwarder(t)
	allocs := testing.AllocsPerRun(100, func() {
		f.forwardBatch(f.queues[0])
		drain()
	})
	if allocs != 0 {
		t.Fatalf("a batch to the controller allocates %.1f times; want 0", allocs)
	}
}

// BenchmarkControllerAction forwards batches whose every frame goes to
// the controller and to a port, the queue drained after each.
func BenchmarkControllerAction(b *testing.B) {
	f, drain := controllerForwarder(b)
	b.ReportAllocs()
	for b.Loop() {
		f.forwardBatch(f.queues[0])
		drain()
	}
	perFrame := float64(b.Elapsed().Nanoseconds()) / float64(b.N*DefaultBatchSize)
	b.ReportMetric(perFrame, "ns/frame")
}

// A decision that sends to the controller stays in user space; the same
// without CONTROLLER is carried.
func TestControllerIsNotOffloaded(t *testing.T) {
	f, _ := vlanForwarder(t, trunk(), trunk())
	for _, p := range f.ports {
		p.takesRedirects.Store(true)
	}
	h := flow.Headers{InPort: 1, DlSrc: [6]byte{2, 0, 0, 0, 0, 1}, DlDst: [6]byte{2, 0, 0, 0, 0, 2}, DlType: flow.EtherTypeIPv4}
	f.flows.Publish(rules(t, "actions=output:2"))
	if _, why := entryFor(f, h); why != "" {
		t.Fatalf("output:2 is not carried (%s): the test tests nothing", why)
	}
	for _, actions := range []string{"CONTROLLER,output:2", "output:2,controller(reason=no_match)", "CONTROLLER"} {
		f.flows.Publish(rules(t, "actions="+actions))
		if _, why := entryFor(f, h); !strings.Contains(why, "packet-in") {
			t.Errorf("actions=%s: fast path entry refused for %q; want it refused for the packet-in", actions, why)
		}
	}
}

// Through a running bridge: a frame from a port reaches TakePacketIns,
// and PacketInReady says so.
func TestBridgePacketIns(t *testing.T) {
	b := newTestBridge(t)
	p1 := porttest.New("p1")
	if _, err := b.AddPort(p1, PortOptions{}); err != nil {
		t.Fatal(err)
	}
	b.SetFlows(rules(t, "priority=0,actions=CONTROLLER:16"))
	fr := udpFrame(t, mac(2), mac(1), net.IPv4(10, 0, 0, 1), net.IPv4(10, 0, 0, 2), 1, 2, []byte("to the controller"))
	p1.Inject(fr)
	select {
	case <-b.PacketInReady():
	case <-time.After(5 * time.Second):
		t.Fatal("no packet-in was signalled")
	}
	dst := make([]PacketIn, 4)
	n := b.TakePacketIns(dst)
	if n != 1 || !bytes.Equal(dst[0].Data, fr[:16]) || dst[0].TotalLen != len(fr) || dst[0].Reason != flow.ReasonNoMatch {
		t.Fatalf("TakePacketIns = %d: %+v; want the frame's first 16 bytes, as no_match", n, dst[:n])
	}
	if n := b.TakePacketIns(dst); n != 0 {
		t.Errorf("a second TakePacketIns took %d; want 0", n)
	}
}

// SetControllerRateLimit limits a running bridge's packet-ins; the burst
// defaults to a quarter of the rate, as in OVS.
func TestBridgeControllerRateLimit(t *testing.T) {
	b := newTestBridge(t)
	p1 := porttest.New("p1")
	if _, err := b.AddPort(p1, PortOptions{}); err != nil {
		t.Fatal(err)
	}
	b.SetFlows(rules(t, "actions=CONTROLLER"))
	b.SetControllerRateLimit(100, 0)
	for range 60 {
		p1.Inject(frame(broadcast, mac(1), "limited"))
	}
	deadline := time.Now().Add(5 * time.Second)
	for b.Ports()[0].Stats.RxPackets < 60 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	passed := b.TakePacketIns(make([]PacketIn, 64))
	// A token comes back every 10 ms: a slow run may earn one or two.
	if rated := b.PipelineDrops()[dropControllerRate]; passed < 25 || passed > 27 || int(rated) != 60-passed {
		t.Errorf("%d packet-ins passed, %d dropped by the rate limit; want 25 (and a few more on a slow run), the rest dropped", passed, rated)
	}
}

// The agent takes packet-ins while the forwarder makes them: each one it
// takes is whole, and every frame is either taken or counted as a
// queue drop.
func TestPacketInsTakenWhileForwarding(t *testing.T) {
	b := newTestBridge(t)
	p1 := porttest.New("p1")
	if _, err := b.AddPort(p1, PortOptions{}); err != nil {
		t.Fatal(err)
	}
	b.SetFlows(rules(t, "actions=CONTROLLER"))
	const frames = 20000
	go func() {
		for i := range frames {
			// The payload is one byte repeated, its length varying, so
			// that a torn or misplaced copy shows.
			p1.Inject(frame(broadcast, mac(1), strings.Repeat(string(rune('a'+i%26)), 1+i%1400)))
		}
	}()
	taken := 0
	dst := make([]PacketIn, 100)
	deadline := time.Now().Add(20 * time.Second)
	for taken+int(b.PipelineDrops()[dropControllerQueue]) < frames && time.Now().Before(deadline) {
		select {
		case <-b.PacketInReady():
		case <-time.After(10 * time.Millisecond):
		}
		for n := b.TakePacketIns(dst); n > 0; n = b.TakePacketIns(dst) {
			for _, in := range dst[:n] {
				payload := in.Data[14:]
				if in.TotalLen != len(in.Data) || len(payload) == 0 || strings.Count(string(payload), string(payload[:1])) != len(payload) {
					t.Fatalf("packet-in %d is not a whole frame: %d bytes of %d, payload %q", taken, len(in.Data), in.TotalLen, payload)
				}
			}
			taken += n
		}
	}
	if dropped := int(b.PipelineDrops()[dropControllerQueue]); taken+dropped != frames {
		t.Fatalf("%d packet-ins taken and %d dropped; want %d in all", taken, dropped, frames)
	}
}

// An agent that looks for packet-ins before the first one is made (its
// rings are made then) still takes every one made after.
func TestPacketInsTakenAfterAnEarlyLook(t *testing.T) {
	b := newTestBridge(t)
	p1 := porttest.New("p1")
	if _, err := b.AddPort(p1, PortOptions{}); err != nil {
		t.Fatal(err)
	}
	b.SetFlows(rules(t, "actions=CONTROLLER"))
	dst := make([]PacketIn, 8)
	if n := b.TakePacketIns(dst); n != 0 {
		t.Fatalf("%d packet-ins taken before any frame came", n)
	}
	p1.Inject(frame(broadcast, mac(1), "after"))
	deadline := time.Now().Add(5 * time.Second)
	n := 0
	for n == 0 && time.Now().Before(deadline) {
		select {
		case <-b.PacketInReady():
		case <-time.After(10 * time.Millisecond):
		}
		n = b.TakePacketIns(dst)
	}
	if n != 1 || !strings.HasSuffix(string(dst[0].Data), "after") {
		t.Fatalf("%d packet-ins taken after the early look (want 1, the frame's)", n)
	}
}
