package bpf

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/internal/testenv"
	"github.com/xswitch/xswitch/tunnel"
)

// The underlay's copy of the fast path takes tunnel frames apart itself
// (tunnel_pop): tested against tunnel.DecapsulateFor and the extractor,
// the slow obvious ones. On every frame, either the program leaves it to
// user space (or the host), or user space decapsulates the same inner
// frame with the same outer addresses and VNI, and reads from it the key
// the program read, with the tunnel's port as the input port.

var (
	popLocal  = netip.MustParseAddr("192.0.2.1")
	popRemote = netip.MustParseAddr("192.0.2.2")
)

const popTunnelPort = 9

type popParser struct {
	objs      *FastpathPort
	listeners tunnel.Listeners
}

// loadPopParser loads an underlay's program listening for VXLAN on 4789
// and Geneve on 6081 at popLocal, with one tunnel of each from popRemote
// that takes any VNI.
func loadPopParser(tb testing.TB) *popParser {
	tb.Helper()
	testenv.RequireRoot(tb)
	spec, err := LoadXsk()
	if err != nil {
		tb.Fatal(err)
	}
	listen, err := ebpf.NewMap(spec.Maps[XskMapTunnelListen])
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { listen.Close() })
	local, remote := popLocal.As4(), popRemote.As4()
	p := &popParser{listeners: tunnel.Listeners{{Addr: local, Port: 4789, Kind: tunnel.VXLAN}, {Addr: local, Port: 6081, Kind: tunnel.Geneve}}}
	for _, l := range p.listeners {
		key := XskTunnelListenKey{Addr: binary.NativeEndian.Uint32(local[:]), Port: NetworkOrder(l.Port)}
		if err := listen.Put(&key, uint32(l.Kind)); err != nil {
			tb.Fatal(err)
		}
	}
	objs, err := LoadFastpathProgram(FastpathConfig{MaxFrameLen: 1 << 16, SocketQueues: 1, RecordKey: true, TunnelListen: listen})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { objs.Close() })
	for _, l := range p.listeners {
		key := FastpathFpTunnelKey{Remote: binary.NativeEndian.Uint32(remote[:]), Port: NetworkOrder(l.Port), Vni: 1 << 24}
		if err := objs.TunnelsIn.Put(&key, &FastpathFpTunnelIn{InPort: popTunnelPort}); err != nil {
			tb.Fatal(err)
		}
	}
	p.objs = objs
	return p
}

// check runs the program on frame and compares it with user space; it
// reports whether the program took the frame apart itself.
func (p *popParser) check(tb testing.TB, e *flow.Extractor, frame []byte) bool {
	tb.Helper()
	if len(frame) < 14 {
		return false
	}
	if err := p.objs.Parsed.Put(uint32(0), FastpathFpParsed{}); err != nil {
		tb.Fatal(err)
	}
	out := make([]byte, len(frame)+64)
	opts := &ebpf.RunOptions{Data: frame, DataOut: out}
	if _, err := p.objs.Fastpath.Run(opts); err != nil {
		tb.Fatalf("run on %x: %v", frame, err)
	}
	if !bytes.Equal(opts.DataOut, frame) {
		// No entry: whatever it read, it hands the frame on as it came.
		tb.Fatalf("the program changed a frame it had no entry for:\n%x\n%x", frame, opts.DataOut)
	}
	var parsed FastpathFpParsed
	if err := p.objs.Parsed.Lookup(uint32(0), &parsed); err != nil {
		tb.Fatal(err)
	}
	if parsed.Ok != 1 {
		return false
	}
	got := parsed.Key.Headers()
	inner, outer, r := tunnel.DecapsulateFor(p.listeners, frame)
	if r != tunnel.Decapsulated {
		tb.Fatalf("the program took apart a frame user space refuses (%v):\n%x\nkey %+v", r, frame, got)
	}
	var want flow.Key
	if !e.Extract(inner, popTunnelPort, &want) {
		tb.Fatalf("the program read an inner frame the extractor calls malformed:\n%x", frame)
	}
	want.TunID, want.TunSrc, want.TunDst = uint64(outer.VNI), outer.Src, outer.Dst
	if got != want.Headers {
		tb.Fatalf("keys differ on %x:\nfast path %+v\nuser space %+v", frame, got, want.Headers)
	}
	return true
}

// tunnelFrames are the common frames, encapsulated from popRemote to
// popLocal in VXLAN and Geneve.
func tunnelFrames(tb testing.TB) [][]byte {
	tb.Helper()
	var frames [][]byte
	for _, kind := range []tunnel.Kind{tunnel.VXLAN, tunnel.Geneve} {
		e, err := tunnel.NewEncap(kind, tunnel.Endpoint{IP: popRemote, MAC: [6]byte{2, 9, 9, 9, 9, 1}},
			tunnel.Endpoint{IP: popLocal, MAC: [6]byte{2, 9, 9, 9, 9, 2}}, kind.DefaultPort())
		if err != nil {
			tb.Fatal(err)
		}
		for _, inner := range commonFrames(tb) {
			out := make([]byte, tunnel.Overhead+len(inner))
			frames = append(frames, out[:e.Encapsulate(out, inner, 0x123456, 7)])
		}
	}
	return frames
}

func TestFastpathPopsWhatUserSpaceDecapsulates(t *testing.T) {
	p, plain := loadPopParser(t), loadParser(t)
	e := flow.NewExtractor()
	rnd := rand.New(rand.NewPCG(21, 22))
	var popped, tried int
	try := func(frame []byte) {
		tried++
		if p.check(t, e, frame) {
			popped++
		}
	}
	for _, frame := range tunnelFrames(t) {
		if !p.check(t, e, frame) {
			// The inner frames are ones the parser reads: a frame that
			// the program leaves to user space here is one it should pop.
			inner, _, _ := tunnel.DecapsulateFor(p.listeners, frame)
			if _, read := plain.parse(t, inner); read {
				t.Errorf("the program did not pop a well-formed tunnel frame:\n%x", frame)
			}
		}
		for n := 14; n <= len(frame); n++ {
			try(frame[:n])
		}
		for range 200 {
			m := bytes.Clone(frame)
			for range 1 + rnd.IntN(3) {
				i := rnd.IntN(min(len(m), 110)) // the outer headers, the tunnel's and the inner ones
				m[i] = byte(rnd.Uint32())
			}
			try(m)
		}
	}
	t.Logf("%d frames: the program popped %d, left %d to user space or the host", tried, popped, tried-popped)
	if popped < tried/20 {
		t.Errorf("only %d of %d frames popped: the test hardly tests the program", popped, tried)
	}
}

func FuzzFastpathTunnelPop(f *testing.F) {
	for _, frame := range tunnelFrames(f) {
		f.Add(frame)
	}
	p := loadPopParser(f)
	e := flow.NewExtractor()
	f.Fuzz(func(t *testing.T, frame []byte) {
		p.check(t, e, frame)
	})
}

// Two underlays may each have a tunnel to one remote, UDP port and VNI:
// each underlay's program claims its frames for its own tunnel.
func TestTunnelsAreClaimedPerUnderlay(t *testing.T) {
	testenv.RequireRoot(t)
	shared, err := NewFastpathShared(0)
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	spec, err := LoadXsk()
	if err != nil {
		t.Fatal(err)
	}
	listen, err := ebpf.NewMap(spec.Maps[XskMapTunnelListen])
	if err != nil {
		t.Fatal(err)
	}
	defer listen.Close()
	local, remote := popLocal.As4(), popRemote.As4()
	if err := listen.Put(&XskTunnelListenKey{Addr: binary.NativeEndian.Uint32(local[:]), Port: NetworkOrder(4789)}, uint32(tunnel.VXLAN)); err != nil {
		t.Fatal(err)
	}
	e, err := tunnel.NewEncap(tunnel.VXLAN, tunnel.Endpoint{IP: popRemote, MAC: [6]byte{2, 9, 9, 9, 9, 1}},
		tunnel.Endpoint{IP: popLocal, MAC: [6]byte{2, 9, 9, 9, 9, 2}}, 4789)
	if err != nil {
		t.Fatal(err)
	}
	inner := commonFrames(t)["ipv4/udp"]
	frame := make([]byte, tunnel.Overhead+len(inner))
	frame = frame[:e.Encapsulate(frame, inner, 42, 7)]
	// Underlay slot 3's tunnel is port 11, slot 4's port 12.
	for slot, port := range map[uint16]uint16{3: 11, 4: 12} {
		key := FastpathFpTunnelKey{Remote: binary.NativeEndian.Uint32(remote[:]), Port: NetworkOrder(4789), Underlay: slot, Vni: 42}
		if err := shared.TunnelsIn.Put(&key, &FastpathFpTunnelIn{InPort: port}); err != nil {
			t.Fatal(err)
		}
	}
	for slot, want := range map[uint16]uint16{3: 11, 4: 12} {
		objs, err := LoadFastpathProgram(FastpathConfig{MaxFrameLen: 1 << 16, SocketQueues: 1, RecordKey: true, Shared: shared,
			TunnelListen: listen, Slot: slot})
		if err != nil {
			t.Fatal(err)
		}
		defer objs.Close()
		if _, err := objs.Fastpath.Run(&ebpf.RunOptions{Data: frame}); err != nil {
			t.Fatal(err)
		}
		var parsed FastpathFpParsed
		if err := objs.Parsed.Lookup(uint32(0), &parsed); err != nil {
			t.Fatal(err)
		}
		if parsed.Ok != 1 || parsed.Key.InPort != want {
			t.Errorf("underlay slot %d's program claimed the frame for port %d (parsed %d); want port %d", slot, parsed.Key.InPort, parsed.Ok, want)
		}
	}
}

// The program tells VXLAN from Geneve by the kind user space writes in
// tunnel_listen: tunnel.Kind's values.
func TestTunnelKindsAgree(t *testing.T) {
	for c, g := range map[FastpathTunnelKind]tunnel.Kind{FastpathTunnelKindTUNNEL_VXLAN: tunnel.VXLAN, FastpathTunnelKindTUNNEL_GENEVE: tunnel.Geneve} {
		if uint32(c) != uint32(g) {
			t.Errorf("the program's %v is %d, tunnel.%v %d", c, c, g, g)
		}
	}
}
