package vswitch

import (
	"fmt"
	"net"
	"testing"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/internal/race"
	"github.com/xswitch/xswitch/port/porttest"
)

// tagged returns frame with an 802.1Q tag of TCI tci inserted after the MAC
// addresses.
func tagged(tci uint16, frame []byte) []byte {
	out := append([]byte{}, frame[:12]...)
	out = append(out, 0x81, 0x00, byte(tci>>8), byte(tci))
	return append(out, frame[12:]...)
}

// vlanForwarder is testForwarder with one port per VLAN configuration,
// named p1, p2, ... and numbered from 1.
func vlanForwarder(t *testing.T, configs ...VLANConfig) (*forwarder, []*porttest.Port) {
	t.Helper()
	f := testForwarder(t, 64)
	ports := newPorts(len(configs))
	for i, c := range configs {
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		f.addPort(&bridgePort{Port: ports[i], ofport: uint16(i + 1), vlan: compileVLAN(c)})
		t.Cleanup(func() { ports[i].Close() })
	}
	return f, ports
}

func access(tag uint16) VLANConfig { return VLANConfig{Tag: tag} }

func trunk(vlans ...uint16) VLANConfig { return VLANConfig{Trunks: vlans} }

// send injects frames on ports[in] and forwards them.
func send(f *forwarder, ports []*porttest.Port, in int, frames ...[]byte) {
	ports[in].Inject(frames...)
	forwardAll(f)
}

func clearTransmitted(ports []*porttest.Port) {
	for _, p := range ports {
		p.Transmitted()
	}
}

func TestVLANAccessPortsAreIsolatedAndTrunksTag(t *testing.T) {
	f, ports := vlanForwarder(t, access(10), access(10), access(20), trunk(10, 20))
	bcast := frame(broadcast, mac(1), "vlan 10 broadcast")
	send(f, ports, 0, bcast)
	wantFrames(t, ports[0])
	wantFrames(t, ports[1], bcast)
	wantFrames(t, ports[2])
	wantFrames(t, ports[3], tagged(10, bcast))

	// mac(1) is now known in VLAN 10 only: a frame to it from VLAN 20
	// floods VLAN 20, and a frame to it from VLAN 10 goes to port 1.
	from20 := frame(mac(1), mac(3), "from vlan 20")
	send(f, ports, 2, from20)
	wantFrames(t, ports[0])
	wantFrames(t, ports[1])
	wantFrames(t, ports[3], tagged(20, from20))
	from10 := frame(mac(1), mac(2), "from vlan 10")
	send(f, ports, 1, from10)
	wantFrames(t, ports[0], from10)
	wantFrames(t, ports[2])
	wantFrames(t, ports[3])
}

func TestVLANTrunkToAccessLeavesUntagged(t *testing.T) {
	f, ports := vlanForwarder(t, access(10), access(20), trunk(10, 20))
	inner := frame(broadcast, mac(9), "from the trunk")
	send(f, ports, 2, tagged(20, inner))
	wantFrames(t, ports[0])
	wantFrames(t, ports[1], inner)
	wantFrames(t, ports[2])
	// The priority and DEI bits go with the tag.
	send(f, ports, 2, tagged(0xb000|10, inner))
	wantFrames(t, ports[0], inner)
	wantFrames(t, ports[1])
}

func TestVLANFramesOutsideThePortsVLANsAreDroppedAndCounted(t *testing.T) {
	f, ports := vlanForwarder(t, access(10), trunk(10, 20), access(20))
	inner := frame(broadcast, mac(9), "stray")
	send(f, ports, 1, tagged(30, inner), inner) // VLAN 30, and VLAN 0
	send(f, ports, 0, tagged(10, inner))        // tagged on an access port, even its own VLAN
	for _, p := range ports {
		wantFrames(t, p)
	}
	if got := f.ports[1].counters.dropped[dropVLAN].Load(); got != 2 {
		t.Fatalf("trunk rx VLAN drops = %d; want 2", got)
	}
	if got := f.ports[0].counters.dropped[dropVLAN].Load(); got != 1 {
		t.Fatalf("access rx VLAN drops = %d; want 1", got)
	}
	if got := f.ports[1].counters.rxErrors.Load(); got != 0 {
		t.Fatalf("rx errors = %d; VLAN drops are not errors", got)
	}
}

func TestVLANPriorityTaggedFrameIsUntaggedOnAnAccessPort(t *testing.T) {
	f, ports := vlanForwarder(t, access(10), trunk(10), access(10))
	inner := frame(broadcast, mac(1), "priority tagged")
	send(f, ports, 0, tagged(0x6000, inner)) // PCP 3, VID 0
	wantFrames(t, ports[1], tagged(0x6000|10, inner))
	wantFrames(t, ports[2], inner)
}

func TestVLANNativeModes(t *testing.T) {
	f, ports := vlanForwarder(t,
		access(10),
		VLANConfig{Mode: VLANModeNativeUntagged, Tag: 10, Trunks: []uint16{20}},
		VLANConfig{Mode: VLANModeNativeTagged, Tag: 10, Trunks: []uint16{20}},
		VLANConfig{}, // a trunk of every VLAN
	)
	fromAccess := frame(broadcast, mac(1), "native vlan")
	send(f, ports, 0, fromAccess)
	wantFrames(t, ports[1], fromAccess)
	wantFrames(t, ports[2], tagged(10, fromAccess))
	wantFrames(t, ports[3], tagged(10, fromAccess))

	// An untagged frame on a native port is in its native VLAN.
	fromNative := frame(broadcast, mac(2), "untagged on native-untagged")
	send(f, ports, 1, fromNative)
	wantFrames(t, ports[0], fromNative)
	wantFrames(t, ports[1])
	wantFrames(t, ports[2], tagged(10, fromNative))
	wantFrames(t, ports[3], tagged(10, fromNative))

	// VLAN 20 leaves both native ports tagged and skips the access port.
	in20 := frame(broadcast, mac(4), "vlan 20")
	send(f, ports, 3, tagged(20, in20))
	wantFrames(t, ports[0])
	wantFrames(t, ports[1], tagged(20, in20))
	wantFrames(t, ports[2], tagged(20, in20))

	// VLAN 0 (untagged on the all-VLAN trunk) is not carried by native
	// ports, nor by the access port of VLAN 10.
	send(f, ports, 3, frame(broadcast, mac(4), "vlan 0"))
	for _, p := range ports {
		wantFrames(t, p)
	}
}

func TestVLANLearningIsPerVLAN(t *testing.T) {
	f, ports := vlanForwarder(t, access(10), access(20), trunk(10, 20))
	// The same address in two VLANs, on two ports.
	send(f, ports, 0, frame(broadcast, mac(1), "in 10"))
	send(f, ports, 1, frame(broadcast, mac(1), "in 20"))
	clearTransmitted(ports)
	for _, c := range []struct {
		vlan uint16
		port int
	}{{10, 0}, {20, 1}} {
		if slot, ok := f.fdb.lookup(macKey(mac(1), c.vlan), f.now()); !ok || int(slot) != c.port {
			t.Fatalf("mac(1) in VLAN %d: slot %d, %v; want %d", c.vlan, slot, ok, c.port)
		}
	}
	to1 := frame(mac(1), mac(5), "unicast")
	send(f, ports, 2, tagged(10, to1))
	wantFrames(t, ports[0], to1)
	wantFrames(t, ports[1])
	send(f, ports, 2, tagged(20, to1))
	wantFrames(t, ports[0])
	wantFrames(t, ports[1], to1)
	wantFrames(t, ports[2])
}

func TestVLANNeverSendsBackOutOfTheInputPort(t *testing.T) {
	f, ports := vlanForwarder(t, trunk(10), access(10))
	send(f, ports, 0, tagged(10, frame(broadcast, mac(1), "learn")))
	clearTransmitted(ports)
	send(f, ports, 0, tagged(10, frame(mac(1), mac(2), "hairpin")))
	wantFrames(t, ports[0])
	wantFrames(t, ports[1])
}

// OpenFlow rules see the frame as it arrived, and their outputs ignore the
// ports' VLANs: only NORMAL applies them, as in OVS.
func TestVLANConfigDoesNotApplyToOpenFlowRules(t *testing.T) {
	f, ports := vlanForwarder(t, access(20), access(30))
	r, err := flow.ParseRule("priority=10,in_port=1,dl_vlan=10,actions=output:2", nil)
	if err != nil {
		t.Fatal(err)
	}
	f.flows.Publish(table(r, flow.Rule{Actions: []flow.Action{{Type: flow.ActNormal}}}))
	in := tagged(10, frame(broadcast, mac(1), "tagged on access"))
	send(f, ports, 0, in)
	wantFrames(t, ports[1], in)
	if got := f.ports[0].counters.dropped[dropVLAN].Load(); got != 0 {
		t.Fatalf("rx VLAN drops = %d; want 0", got)
	}
}

func TestVLANConfigValidation(t *testing.T) {
	for _, c := range []struct {
		config VLANConfig
		ok     bool
	}{
		{VLANConfig{}, true},
		{access(10), true},
		{access(4095), true},
		{VLANConfig{Mode: VLANModeAccess}, true}, // VLAN 0
		{trunk(0, 10, 4095), true},
		{VLANConfig{Mode: VLANModeNativeUntagged, Tag: 10}, true},
		{VLANConfig{Mode: VLANModeNativeTagged, Tag: 10, Trunks: []uint16{10, 20}}, true},
		{access(4096), false},
		{trunk(4096), false},
		{VLANConfig{Tag: 10, Trunks: []uint16{20}}, false},
		{VLANConfig{Mode: VLANModeTrunk, Tag: 10}, false},
		{VLANConfig{Mode: VLANModeNativeTagged}, false},
		{VLANConfig{Mode: VLANMode(9)}, false},
	} {
		if err := c.config.Validate(); (err == nil) != c.ok {
			t.Errorf("%+v: Validate() = %v; want ok=%v", c.config, err, c.ok)
		}
	}
	for _, name := range []string{"", "access", "trunk", "native-tagged", "native-untagged"} {
		m, err := ParseVLANMode(name)
		if err != nil || m.String() != name {
			t.Errorf("ParseVLANMode(%q) = %v, %v", name, m, err)
		}
	}
	if _, err := ParseVLANMode("tagged"); err == nil {
		t.Error(`ParseVLANMode("tagged") succeeded`)
	}
}

func TestBridgeAddPortRefusesABadVLANConfig(t *testing.T) {
	b := newTestBridge(t)
	p := porttest.New("p1")
	t.Cleanup(func() { p.Close() })
	if _, err := b.AddPort(p, PortOptions{VLAN: VLANConfig{Tag: 5000}}); err == nil {
		t.Fatal("AddPort accepted tag 5000")
	}
	if _, err := b.AddPort(p, PortOptions{OFPort: 3, VLAN: access(10)}); err != nil {
		t.Fatal(err)
	}
}

func TestVLANForwardingAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector changes allocation counts")
	}
	f, loop := benchVLANForwarder(t)
	allocs := testing.AllocsPerRun(100, func() { f.forwardBatch(f.queues[0]) })
	if allocs != 0 {
		t.Fatalf("forwarding a batch across VLAN ports allocates %.1f times; want 0", allocs)
	}
	if loop.Counts().Received == 0 {
		t.Fatal("the benchmark port received nothing")
	}
}

// benchVLANForwarder builds a forwarder whose access port (VLAN 10)
// receives a full batch on every call: unicast to a station behind a trunk,
// which needs a tagged copy, to one behind another access port, and
// broadcasts, which need both forms.
func benchVLANForwarder(tb testing.TB) (*forwarder, *porttest.Port) {
	frames := make([][]byte, DefaultBatchSize)
	for i := range frames {
		dst := []byte(mac(byte(2 + i%2)))
		if i%3 == 0 {
			dst = broadcast
		}
		frames[i] = udpFrame(tb, dst, mac(1), net.IPv4(10, 0, 0, 1), net.IPv4(10, 0, 0, 2),
			uint16(1000+i%8), 5000, make([]byte, 18))
	}
	f, loop := loopForwarder(tb, frames, compileVLAN(access(10)))
	f.addPort(&bridgePort{Port: porttest.NewLoop("trunk", nil), ofport: 2, vlan: compileVLAN(trunk(10, 20))})
	f.addPort(&bridgePort{Port: porttest.NewLoop("access", nil), ofport: 3, vlan: compileVLAN(access(10))})
	f.addPort(&bridgePort{Port: porttest.NewLoop("other", nil), ofport: 4, vlan: compileVLAN(access(20))})
	f.fdb.learn(macKey(mac(2), 10), 1, f.now())
	f.fdb.learn(macKey(mac(3), 10), 2, f.now())
	return f, loop
}

func BenchmarkForwardBatchVLAN(b *testing.B) {
	f, _ := benchVLANForwarder(b)
	b.ReportAllocs()
	for b.Loop() {
		f.forwardBatch(f.queues[0])
	}
	perFrame := float64(b.Elapsed().Nanoseconds()) / float64(b.N*DefaultBatchSize)
	b.ReportMetric(perFrame, "ns/frame")
	b.ReportMetric(1e3/perFrame, "Mframes/s")
}

func ExampleFormatVLANs() {
	fmt.Println(FormatVLANs([]uint16{10, 20, 30}))
	// Output: 10,20,30
}

// SetPortVLAN moves a running port to another VLAN at once, on every
// forwarding thread: NORMAL's cached decisions and the addresses learned
// on the port under the old configuration go.
func TestSetPortVLANMovesARunningPort(t *testing.T) {
	b, err := New("br0", normalTable(), Options{CPUs: []int{0, 0}}) // two threads
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	p1, p2, p3, p4 := porttest.New("p1"), porttest.New("p2"), porttest.New("p3"), porttest.New("p4")
	for _, c := range []struct {
		p    *porttest.Port
		vlan VLANConfig
	}{{p1, access(10)}, {p2, access(10)}, {p3, access(20)}, {p4, access(10)}} {
		if _, err := b.AddPort(c.p, PortOptions{VLAN: c.vlan}); err != nil {
			t.Fatal(err)
		}
	}
	// Until their decisions are cached: p2's broadcasts reach p1 (and p4),
	// p1's frames to p2's station reach p2; p3 sees nothing of VLAN 10.
	for i := range 3 {
		p2.Inject(frame(broadcast, mac(2), "from 2"))
		waitTransmitted(t, p1, uint64(i+1))
		p1.Inject(frame(mac(2), mac(1), "to 2"))
		waitTransmitted(t, p2, uint64(i+1))
	}
	waitTransmitted(t, p4, 3)
	if n := p3.Counts().Transmitted; n != 0 {
		t.Fatalf("p3, in VLAN 20, got %d frames of VLAN 10", n)
	}

	if err := b.SetPortVLAN("p1", access(20)); err != nil {
		t.Fatal(err)
	}
	for _, e := range b.FDB() {
		if e.Port == 1 {
			t.Errorf("after the move, the FDB keeps %x on p1 in VLAN %d", e.MAC, e.VLAN)
		}
	}
	// p2's broadcast stays in VLAN 10 (p4 has it), without p1 now.
	p2.Inject(frame(broadcast, mac(2), "from 2, after p1 moved"))
	waitTransmitted(t, p4, 4)
	// p2's station is unknown in VLAN 20: the frame to it floods VLAN 20,
	// and the broadcast after it shows that it went nowhere else.
	p1.Inject(frame(mac(2), mac(1), "to 2, from VLAN 20"), frame(broadcast, mac(1), "from 1 in VLAN 20"))
	waitTransmitted(t, p3, 2)
	if n1, n2 := p1.Counts().Transmitted, p2.Counts().Transmitted; n1 != 3 || n2 != 3 {
		t.Errorf("p1 and p2 transmitted %d and %d frames; want the 3 each from before p1 moved to VLAN 20", n1, n2)
	}

	if err := b.SetPortVLAN("p1", VLANConfig{Tag: 20, Trunks: []uint16{10}}); err == nil {
		t.Error("SetPortVLAN took an access port with trunks")
	}
	if err := b.SetPortVLAN("p9", access(20)); err == nil {
		t.Error("SetPortVLAN took a port the bridge does not have")
	}
}
