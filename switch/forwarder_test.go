package vswitch

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/internal/race"
	"github.com/xswitch/xswitch/port/porttest"
)

var broadcast = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// frame builds an Ethernet frame from src to dst with a payload that names
// it, under the local experimental EtherType, which the key extractor takes
// as a well-formed frame with no L3 header.
func frame(dst, src []byte, payload string) []byte {
	f := append(append(append([]byte{}, dst...), src...), 0x88, 0xb5)
	return append(f, payload...)
}

// udpFrame builds a well-formed Ethernet/IPv4/UDP frame with checksums.
func udpFrame(tb testing.TB, dst, src []byte, srcIP, dstIP net.IP, srcPort, dstPort uint16, payload []byte) []byte {
	tb.Helper()
	eth := &layers.Ethernet{SrcMAC: src, DstMAC: dst, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: srcIP, DstIP: dstIP}
	udp := &layers.UDP{SrcPort: layers.UDPPort(srcPort), DstPort: layers.UDPPort(dstPort)}
	udp.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, eth, ip, udp, gopacket.Payload(payload)); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// table returns a flow table holding rules.
func table(rules ...flow.Rule) *flow.Table {
	return flow.NewTable(nil, 1).AddAll(rules, time.Now())
}

// normalTable is a new bridge's table: priority=0,actions=NORMAL.
func normalTable() *flow.Table {
	return table(flow.Rule{Priority: 0, Actions: []flow.Action{{Type: flow.ActNormal}}})
}

// testForwarder is a forwarder that the test drives batch by batch instead
// of running its goroutine. It starts with normalTable.
func testForwarder(t testing.TB, batch int, ports ...*porttest.Port) *forwarder {
	t.Helper()
	return forwarderWith(t, Options{BatchSize: batch, MACTableSize: 64, MACAging: time.Hour, CacheSize: 64}, ports...)
}

// forwarderWith is testForwarder with the options opts, quiet.
func forwarderWith(t testing.TB, opts Options, ports ...*porttest.Port) *forwarder {
	t.Helper()
	cls := flow.NewClassifier()
	cls.Publish(normalTable())
	opts.Logger = slog.New(slog.DiscardHandler)
	f, err := newForwarder(opts, cls, firstOf(1, opts))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.stopped = true })
	for i, p := range ports {
		f.addPort(&bridgePort{Port: p, ofport: uint16(i + 1)})
		t.Cleanup(func() { p.Close() })
	}
	return f
}

// forwardAll runs batches on every queue until none has work.
func forwardAll(f *forwarder) {
	for busy := true; busy; {
		busy = false
		for _, q := range f.queues {
			if f.forwardBatch(q) {
				busy = true
			}
		}
	}
}

func newPorts(n int) []*porttest.Port {
	ports := make([]*porttest.Port, n)
	for i := range ports {
		ports[i] = porttest.New(fmt.Sprintf("p%d", i+1))
	}
	return ports
}

func wantFrames(t *testing.T, p *porttest.Port, want ...[]byte) {
	t.Helper()
	got := p.Transmitted()
	if len(got) != len(want) {
		t.Fatalf("%s transmitted %d frames; want %d", p.Name(), len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("%s frame %d = %x; want %x", p.Name(), i, got[i], want[i])
		}
	}
}

func TestUnknownUnicastAndBroadcastFloodToAllButInput(t *testing.T) {
	ports := newPorts(4)
	f := testForwarder(t, 64, ports...)
	unknown := frame(mac(9), mac(1), "unknown")
	bcast := frame(broadcast, mac(1), "broadcast")
	ports[0].Inject(unknown, bcast)
	forwardAll(f)
	wantFrames(t, ports[0])
	for _, p := range ports[1:] {
		wantFrames(t, p, unknown, bcast)
	}
}

func TestLearnedUnicastGoesToOnePort(t *testing.T) {
	ports := newPorts(3)
	f := testForwarder(t, 64, ports...)
	ports[1].Inject(frame(broadcast, mac(2), "hello from 2"))
	forwardAll(f)
	for _, p := range ports {
		p.Transmitted()
	}
	reply := frame(mac(2), mac(1), "to 2")
	ports[0].Inject(reply)
	forwardAll(f)
	wantFrames(t, ports[0])
	wantFrames(t, ports[1], reply)
	wantFrames(t, ports[2])
}

func TestNeverSendsBackOutOfInputPort(t *testing.T) {
	ports := newPorts(2)
	f := testForwarder(t, 64, ports...)
	// mac(1) is learned on port 1; a frame to mac(1) arriving on port 1 is
	// dropped, not reflected.
	ports[0].Inject(frame(broadcast, mac(1), "learn"), frame(mac(1), mac(3), "hairpin"))
	forwardAll(f)
	wantFrames(t, ports[0])
	wantFrames(t, ports[1], frame(broadcast, mac(1), "learn"))
}

func TestMulticastFloods(t *testing.T) {
	ports := newPorts(3)
	f := testForwarder(t, 64, ports...)
	mcast := frame([]byte{0x01, 0x00, 0x5e, 0, 0, 1}, mac(1), "multicast")
	ports[0].Inject(mcast)
	forwardAll(f)
	wantFrames(t, ports[1], mcast)
	wantFrames(t, ports[2], mcast)
}

func TestBadFramesAreDroppedAndCounted(t *testing.T) {
	ports := newPorts(2)
	f := testForwarder(t, 64, ports...)
	runt := []byte{1, 2, 3}
	mcastSource := frame(mac(2), []byte{0x01, 0, 0, 0, 0, 1}, "bad source")
	good := frame(broadcast, mac(1), "good")
	ports[0].Inject(runt, mcastSource, good)
	forwardAll(f)
	wantFrames(t, ports[1], good)
	in := &f.ports[0].counters
	if got := in.rxErrors.Load(); got != 2 {
		t.Fatalf("rx errors = %d; want 2", got)
	}
	if got := in.rxPackets.Load(); got != 3 {
		t.Fatalf("rx packets = %d; want 3", got)
	}
	if _, ok := f.fdb.lookup(macKey([]byte{0x01, 0, 0, 0, 0, 1}, 0), f.now()); ok {
		t.Fatal("a multicast source address was learned")
	}
}

func TestFramesMoveInBatchesWithOneTransmitPerPortPerBatch(t *testing.T) {
	ports := newPorts(3)
	const batch = 64
	f := testForwarder(t, batch, ports...)
	var frames [][]byte
	for i := range 3*batch + 10 {
		frames = append(frames, frame(broadcast, mac(1), fmt.Sprint(i)))
	}
	ports[0].Inject(frames...)
	forwardAll(f)
	for _, p := range ports[1:] {
		c := p.Counts()
		if c.Transmitted != uint64(len(frames)) || c.TransmitCalls != 4 {
			t.Fatalf("%s: %d frames in %d transmits; want %d in 4 (one per batch)",
				p.Name(), c.Transmitted, c.TransmitCalls, len(frames))
		}
		wantFrames(t, p, frames...) // in order
	}
	if c := ports[0].Counts(); c.Released != c.Received || c.Received != uint64(len(frames)) {
		t.Fatalf("received %d, released %d; want %d of each", c.Received, c.Released, len(frames))
	}
}

func TestFullTransmitRingDropsAndCounts(t *testing.T) {
	ports := newPorts(2)
	f := testForwarder(t, 64, ports...)
	ports[1].LimitTransmit(5)
	for i := range 20 {
		ports[0].Inject(frame(broadcast, mac(1), fmt.Sprint(i)))
	}
	forwardAll(f)
	out := &f.ports[1].counters
	if tx, drop := out.txPackets.Load(), out.txDropped.Load(); tx != 5 || drop != 15 {
		t.Fatalf("tx %d, dropped %d; want 5 and 15", tx, drop)
	}
	if c := ports[0].Counts(); c.Released != 20 {
		t.Fatalf("released %d of 20 received frames", c.Released)
	}
}

func TestForwardingAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector changes allocation counts")
	}
	f, loop := benchForwarder(t, 3, 8)
	allocs := testing.AllocsPerRun(100, func() { f.forwardBatch(f.queues[0]) })
	if allocs != 0 {
		t.Fatalf("forwarding a batch allocates %.1f times; want 0", allocs)
	}
	if loop.Counts().Received == 0 {
		t.Fatal("the benchmark port received nothing")
	}
}

// loopForwarder builds a forwarder with the default options and table
// whose port 1 (with VLAN configuration vlan) receives frames on every call.
func loopForwarder(tb testing.TB, frames [][]byte, vlan portVLAN) (*forwarder, *porttest.Port) {
	tb.Helper()
	loop := porttest.NewLoop("in", frames)
	cls := flow.NewClassifier()
	cls.Publish(normalTable())
	opts := Options{}.withDefaults()
	f, err := newForwarder(opts, cls, firstOf(1, opts))
	if err != nil {
		tb.Fatal(err)
	}
	f.addPort(&bridgePort{Port: loop, ofport: 1, vlan: vlan})
	return f, loop
}

// benchForwarder builds a forwarder whose first port receives a full batch
// of unicast UDP frames on every call, to stations learned on the other
// ports, and whose other ports discard what they transmit. Frame i belongs
// to flow i%flows, so with more than one flow no two successive frames
// share a key.
func benchForwarder(tb testing.TB, nports, flows int) (*forwarder, *porttest.Port) {
	return benchForwarderOf(tb, nports, flows, func([]byte) {})
}

// benchForwarderOf is benchForwarder whose frames edit changes first.
func benchForwarderOf(tb testing.TB, nports, flows int, edit func(frame []byte)) (*forwarder, *porttest.Port) {
	frames := make([][]byte, DefaultBatchSize)
	for i := range frames {
		flow := i % flows
		station := byte(2 + flow%(nports-1))
		// 64 bytes on the wire less the FCS: 14 + 20 + 8 + 18.
		frames[i] = udpFrame(tb, mac(station), mac(1), net.IPv4(10, 0, 0, 1), net.IPv4(10, 0, 0, station),
			uint16(1000+flow), 5000, make([]byte, 18))
		edit(frames[i])
	}
	f, loop := loopForwarder(tb, frames, portVLAN{})
	for i := 2; i <= nports; i++ {
		p := porttest.NewLoop(fmt.Sprint("out", i), nil)
		f.addPort(&bridgePort{Port: p, ofport: uint16(i)})
		f.fdb.learn(macKey(mac(byte(i)), 0), uint16(i-1), f.now())
	}
	return f, loop
}

// BenchmarkForwardBatch forwards batches that mix eight flows, so that
// every frame's key differs from the one before.
func BenchmarkForwardBatch(b *testing.B) {
	benchmarkForwardBatch(b, 8)
}

// BenchmarkForwardBatchOneFlow forwards batches of one flow, as the bench
// command's generator sends.
func BenchmarkForwardBatchOneFlow(b *testing.B) {
	benchmarkForwardBatch(b, 1)
}

// benchmarkForwardBatch forwards batches that mix flows flows under the
// rules given, or the default NORMAL rule.
func benchmarkForwardBatch(b *testing.B, flows int, rulesText ...string) {
	f, _ := benchForwarder(b, 3, flows)
	if len(rulesText) > 0 {
		f.flows.Publish(rules(b, rulesText...))
	}
	b.ReportAllocs()
	for b.Loop() {
		f.forwardBatch(f.queues[0])
	}
	perFrame := float64(b.Elapsed().Nanoseconds()) / float64(b.N*DefaultBatchSize)
	b.ReportMetric(perFrame, "ns/frame")
	b.ReportMetric(1e3/perFrame, "Mframes/s")
}
