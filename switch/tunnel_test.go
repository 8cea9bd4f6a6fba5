package vswitch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/xswitch/xswitch/bpf"
	"github.com/xswitch/xswitch/datapath"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/header"
	"github.com/xswitch/xswitch/internal/race"
	"github.com/xswitch/xswitch/internal/testenv"
	"github.com/xswitch/xswitch/port"
	"github.com/xswitch/xswitch/port/porttest"
	"github.com/xswitch/xswitch/tunnel"
)

// A tunnel testbed: a bridge with one ordinary port and tunnels over an
// underlay, all in memory, the underlay's frames built and read with the
// tunnel package's own codec from the remotes' side.

var (
	tbLocal    = netip.MustParseAddr("192.0.2.1")
	tbLocalMAC = [6]byte{0x02, 0xaa, 0, 0, 0, 1}
	tbHopMAC   = [6]byte{0x02, 0xbb, 0, 0, 0, 2}
)

func tbRemote(i byte) netip.Addr { return netip.AddrFrom4([4]byte{192, 0, 2, 100 + i}) }

type tunnelBed struct {
	b        *Bridge
	access   *porttest.Port // ofport 1
	wire     *porttest.Port // the underlay's port
	underlay *tunnel.Underlay
	tunnels  []*tunnel.Port // ofports 2, 3, ...
}

// newTunnelBed builds the bridge with tunnels of the given configurations
// (Name, Kind and Remote filled in when missing), over an underlay of MTU
// 1500, with table (nil: NORMAL).
func newTunnelBed(t *testing.T, table *flow.Table, cfgs ...tunnel.Config) *tunnelBed {
	t.Helper()
	return newTunnelBedOn(t, Options{}, porttest.New("access"), porttest.New("wire"), table, cfgs...)
}

// newTunnelBedOn is newTunnelBed with the bridge's options, and the access
// port and the underlay's port given.
func newTunnelBedOn(t *testing.T, opts Options, access, wire *porttest.Port, table *flow.Table, cfgs ...tunnel.Config) *tunnelBed {
	t.Helper()
	if table == nil {
		table = normalTable()
	}
	b, err := New("br0", table, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	tb := &tunnelBed{b: b, access: access, wire: wire}
	if _, err := b.AddPort(tb.access, PortOptions{OFPort: 1}); err != nil {
		t.Fatal(err)
	}
	tb.underlay = tunnel.NewUnderlay(tb.wire, 1500)
	for i, cfg := range cfgs {
		if cfg.Name == "" {
			cfg.Name = "tun" + string(rune('a'+i))
		}
		if cfg.Kind == 0 {
			cfg.Kind = tunnel.VXLAN
		}
		if !cfg.Remote.IsValid() {
			cfg.Remote = tbRemote(byte(i))
		}
		p, err := tunnel.NewPort(cfg, tb.underlay)
		if err != nil {
			t.Fatal(err)
		}
		route := tunnel.Route{Ifname: "wire", Local: tbLocal, LocalMAC: tbLocalMAC, NextHop: cfg.Remote, NextHopMAC: tbHopMAC, Resolved: true, MTU: 1500}
		if err := p.SetRoute(route); err != nil {
			t.Fatal(err)
		}
		if _, err := b.AddPort(p, PortOptions{OFPort: uint16(2 + i)}); err != nil {
			t.Fatal(err)
		}
		tb.tunnels = append(tb.tunnels, p)
	}
	return tb
}

// fromRemote is inner, encapsulated as tunnel i's remote sends it, with
// VNI vni.
func (tb *tunnelBed) fromRemote(t *testing.T, i int, vni uint32, inner []byte) []byte {
	t.Helper()
	cfg := tb.tunnels[i].Config()
	e, err := tunnel.NewEncap(cfg.Kind, tunnel.Endpoint{IP: cfg.Remote, MAC: tbHopMAC}, tunnel.Endpoint{IP: tbLocal, MAC: tbLocalMAC},
		cfg.Kind.DefaultPort())
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, tunnel.Overhead+len(inner))
	return out[:e.Encapsulate(out, inner, vni, 1)]
}

// sent decapsulates what the underlay transmitted since the last call,
// checking the outer headers of each, and returns the inner frames with
// the VNI and remote each went to.
type sentFrame struct {
	inner  []byte
	vni    uint32
	remote [4]byte
}

func (tb *tunnelBed) sent(t *testing.T) []sentFrame {
	t.Helper()
	var out []sentFrame
	for _, f := range tb.wire.Transmitted() {
		if !bytes.Equal(f[0:6], tbHopMAC[:]) || !bytes.Equal(f[6:12], tbLocalMAC[:]) {
			t.Errorf("outer MACs %x -> %x, want %x -> %x", f[6:12], f[0:6], tbLocalMAC, tbHopMAC)
		}
		inner, o, r := tunnel.DecapsulateFor(tunnel.Listeners{{Port: 4789, Kind: tunnel.VXLAN}, {Port: 6081, Kind: tunnel.Geneve}}, f)
		if r != tunnel.Decapsulated {
			t.Fatalf("the underlay sent a frame that does not decapsulate (%v): %x", r, f)
		}
		if o.Src != tbLocal.As4() {
			t.Errorf("outer source %v, want %v", netip.AddrFrom4(o.Src), tbLocal)
		}
		out = append(out, sentFrame{inner: inner, vni: o.VNI, remote: o.Dst})
	}
	return out
}

// parseRules parses rules in flow syntax into a table.
func parseRules(t *testing.T, texts ...string) *flow.Table {
	t.Helper()
	var rules []flow.Rule
	for _, text := range texts {
		r, err := flow.ParseRule(text, nil)
		if err != nil {
			t.Fatal(err)
		}
		rules = append(rules, r)
	}
	return table(rules...)
}

func waitPortStats(t *testing.T, b *Bridge, name string, ok func(PortStats) bool) PortStats {
	t.Helper()
	var last PortStats
	waitFor(t, "port "+name+"'s counters", func() bool {
		for _, p := range b.Ports() {
			if p.Name == name {
				last = p.Stats
				return ok(last)
			}
		}
		return false
	})
	return last
}

func TestTunnelDecapsulatesClaimsAndEncapsulates(t *testing.T) {
	tb := newTunnelBed(t, nil, tunnel.Config{Key: 42}, tunnel.Config{Key: 42})
	vm, far := mac(1), mac(2)
	// A frame from the first remote reaches the access port, its source
	// learned on the tunnel.
	hello := frame(broadcast, far, "hello from afar")
	tb.wire.Inject(tb.fromRemote(t, 0, 42, hello))
	waitTransmitted(t, tb.access, 1)
	wantFrames(t, tb.access, hello)
	if got := tb.sent(t); len(got) != 0 {
		t.Fatalf("a frame from a tunnel went back out of a tunnel (split horizon): %v", got)
	}
	// The answer goes back through that tunnel alone, with its VNI.
	reply := frame(far, vm, "reply")
	tb.access.Inject(reply)
	waitTransmitted(t, tb.wire, 1)
	got := tb.sent(t)
	if len(got) != 1 || !bytes.Equal(got[0].inner, reply) || got[0].vni != 42 || got[0].remote != tbRemote(0).As4() {
		t.Fatalf("the reply left as %+v, want one frame with VNI 42 to %v", got, tbRemote(0))
	}
	// A broadcast from the access port goes to every tunnel.
	bcast := frame(broadcast, vm, "to all")
	tb.access.Inject(bcast)
	waitTransmitted(t, tb.wire, 3)
	got = tb.sent(t)
	remotes := map[[4]byte]bool{}
	for _, s := range got {
		remotes[s.remote] = true
	}
	if len(got) != 2 || !remotes[tbRemote(0).As4()] || !remotes[tbRemote(1).As4()] {
		t.Fatalf("a broadcast left as %+v, want one frame to each remote", got)
	}
	st := waitPortStats(t, tb.b, "tuna", func(s PortStats) bool { return s.RxPackets == 1 })
	if st.TxPackets != 2 {
		t.Errorf("tunnel tuna counted %d frames sent, want 2", st.TxPackets)
	}
}

// A batch with several tunnels' frames goes through the pipeline as one
// batch per tunnel, each frame from its own tunnel.
func TestTunnelBatchOfSeveralTunnels(t *testing.T) {
	tb := newTunnelBed(t, nil, tunnel.Config{Key: 1}, tunnel.Config{Key: 2}, tunnel.Config{KeyFlow: true})
	var in, want [][]byte
	for i := range 12 {
		tun := i % 3
		f := frame(broadcast, mac(byte(10+tun)), fmt.Sprintf("frame %d from tunnel %d", i, tun))
		in = append(in, tb.fromRemote(t, tun, uint32(tun+1), f))
		want = append(want, f)
	}
	tb.wire.Inject(in...)
	waitTransmitted(t, tb.access, uint64(len(want)))
	got := tb.access.Transmitted()
	for _, w := range want {
		if !slices.ContainsFunc(got, func(g []byte) bool { return bytes.Equal(g, w) }) {
			t.Errorf("%q did not arrive", w[14:])
		}
	}
	for _, name := range []string{"tuna", "tunb", "tunc"} {
		if st := waitPortStats(t, tb.b, name, func(s PortStats) bool { return s.RxPackets == 4 }); st.RxPackets != 4 {
			t.Errorf("%s received %d, want 4", name, st.RxPackets)
		}
	}
	// Each source was learned on its own tunnel.
	for tun := range 3 {
		if port, ok := tb.b.LookupMAC([6]byte(mac(byte(10+tun))), 0); !ok || port != uint16(2+tun) {
			t.Errorf("station of tunnel %d learned on port %d (%v), want %d", tun, port, ok, 2+tun)
		}
	}
}

// A frame that no tunnel claims, or that is not a well-formed tunnel
// frame, is counted by the underlay and goes nowhere.
func TestTunnelDropsWhatNoTunnelClaims(t *testing.T) {
	tb := newTunnelBed(t, nil, tunnel.Config{Key: 42})
	inner := frame(broadcast, mac(2), "x")
	good := tb.fromRemote(t, 0, 42, inner)
	wrongVNI := tb.fromRemote(t, 0, 7, inner)
	unknown := append([]byte{}, good...)
	copy(unknown[14+12:], []byte{198, 51, 100, 9}) // another outer source
	badHeader := append([]byte{}, good...)
	badHeader[14+20+8] = 0 // no I flag
	truncated := good[:14+20+4]
	tb.wire.Inject(wrongVNI, unknown, badHeader, truncated, good)
	waitTransmitted(t, tb.access, 1)
	wantFrames(t, tb.access, inner)
	waitFor(t, "the underlay's drops", func() bool { return tb.underlay.DropStats().Total() == 4 })
	want := tunnel.UnderlayStats{WrongKey: 1, UnknownRemote: 1, BadHeader: 1, BadOuter: 1}
	if got := tb.underlay.DropStats(); got != want {
		t.Errorf("underlay drops %+v, want %+v", got, want)
	}
}

// The bridge polls an underlay while one of its tunnels is over it: the
// other tunnels' frames still arrive when one leaves, and the underlay
// goes with the last.
func TestTunnelUnderlayStaysWhileATunnelIsOverIt(t *testing.T) {
	tb := newTunnelBed(t, nil, tunnel.Config{Key: 42}, tunnel.Config{Key: 42})
	if err := tb.b.RemovePort("tuna"); err != nil {
		t.Fatal(err)
	}
	inner := frame(broadcast, mac(2), "from the second remote")
	tb.wire.Inject(tb.fromRemote(t, 1, 42, inner))
	waitTransmitted(t, tb.access, 1)
	wantFrames(t, tb.access, inner)
	if err := tb.b.RemovePort("tunb"); err != nil {
		t.Fatal(err)
	}
	tb.b.mu.Lock()
	left := len(tb.b.underlays)
	tb.b.mu.Unlock()
	if left != 0 {
		t.Fatalf("the bridge still has %d underlays after its last tunnel left", left)
	}
}

// tun_id, tun_src and tun_dst are in the key of a frame from a tunnel.
func TestTunnelFieldsInTheKey(t *testing.T) {
	rules := parseRules(t, "priority=100,tun_id=42,tun_src=192.0.2.100,tun_dst=192.0.2.1,actions=output:1", "priority=0,actions=drop")
	tb := newTunnelBed(t, rules, tunnel.Config{KeyFlow: true})
	matching := frame(broadcast, mac(2), "vni 42")
	tb.wire.Inject(tb.fromRemote(t, 0, 43, frame(broadcast, mac(2), "vni 43")), tb.fromRemote(t, 0, 42, matching))
	waitTransmitted(t, tb.access, 1)
	wantFrames(t, tb.access, matching)
}

// A tunnel whose key is flow sends the VNI the tables set.
func TestTunnelKeyFlowSendsTheTablesVNI(t *testing.T) {
	rules := parseRules(t, "in_port=1,actions=set_field:99->tun_id,output:2,set_tunnel:7,output:3")
	tb := newTunnelBed(t, rules, tunnel.Config{KeyFlow: true}, tunnel.Config{Key: 5})
	f := frame(mac(9), mac(1), "x")
	tb.access.Inject(f)
	waitTransmitted(t, tb.wire, 2)
	got := tb.sent(t)
	if len(got) != 2 || got[0].vni != 99 || got[1].vni != 5 {
		t.Fatalf("sent %+v; want VNI 99 by the flow-keyed tunnel, then 5 (its own key) by the other", got)
	}
}

// A frame too long to encapsulate within the underlay's MTU is dropped
// and counted, never cut.
func TestTunnelDropsOversizeFrames(t *testing.T) {
	tb := newTunnelBed(t, nil, tunnel.Config{})
	// An underlay MTU of 1500 leaves an inner MTU of 1450: frames of 1464
	// bytes with their Ethernet header.
	fits := frame(broadcast, mac(1), string(make([]byte, 1500-50)))
	tooLong := frame(broadcast, mac(1), string(make([]byte, 1500-50+1)))
	tb.access.Inject(tooLong, fits)
	waitTransmitted(t, tb.wire, 1)
	if got := tb.sent(t); len(got) != 1 || len(got[0].inner) != len(fits) {
		t.Fatalf("sent %d frames, want only the one that fits", len(got))
	}
	waitFor(t, "the tunnel's oversize drop", func() bool { return tb.tunnels[0].TunnelStats().TxOversize == 1 })
	st := waitPortStats(t, tb.b, "tuna", func(s PortStats) bool { return s.TxDropped == 1 })
	if st.TxPackets != 1 {
		t.Errorf("tunnel counted %d frames sent, want 1", st.TxPackets)
	}
}

// Split horizon: a frame from one tunnel to a station learned on another
// is dropped and counted, and floods from a tunnel skip the others.
func TestTunnelSplitHorizon(t *testing.T) {
	tb := newTunnelBed(t, nil, tunnel.Config{}, tunnel.Config{})
	a, b := mac(2), mac(3)
	tb.wire.Inject(tb.fromRemote(t, 1, 0, frame(broadcast, b, "b is behind the second")))
	waitTransmitted(t, tb.access, 1)
	tb.wire.Inject(tb.fromRemote(t, 0, 0, frame(b, a, "a to b")))
	st := waitPortStats(t, tb.b, "tuna", func(s PortStats) bool { return s.RxSplitHorizonDropped == 1 })
	if st.RxPackets != 1 {
		t.Errorf("tuna received %d, want 1", st.RxPackets)
	}
	if got := tb.sent(t); len(got) != 0 {
		t.Fatalf("a frame between tunnels went out: %+v", got)
	}
}

// A frame's way from a tunnel to a port, and from a port into a tunnel,
// allocates nothing once its decision is cached.
func TestTunnelForwardingAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates")
	}
	// Ports that keep nothing they transmit.
	tb := newTunnelBedOn(t, Options{}, porttest.NewLoop("access", nil), porttest.NewLoop("wire", nil), nil, tunnel.Config{Key: 42})
	f := tb.b.fwds[0]
	far, vm := mac(2), mac(1)
	in := tb.fromRemote(t, 0, 42, udpFrame(t, vm, far, net.IP{10, 0, 0, 2}, net.IP{10, 0, 0, 1}, 1, 2, make([]byte, 18)))
	out := udpFrame(t, far, vm, net.IP{10, 0, 0, 1}, net.IP{10, 0, 0, 2}, 2, 1, make([]byte, 18))
	var allocs float64
	f.do(func() {
		uslot := tb.b.underlays[0].slot
		accessSlot, _ := f.slot(1)
		inFrames := []port.Frame{{Data: in}}
		outFrames := []port.Frame{{Data: out}}
		roundTrip := func() {
			f.forwardUnderlay(uslot, inFrames)
			f.forwardFrom(accessSlot, outFrames, nil)
		}
		roundTrip() // learns both stations and caches both decisions
		allocs = testing.AllocsPerRun(100, roundTrip)
	})
	if allocs != 0 {
		t.Errorf("forwarding through a tunnel allocates %.1f times per round trip", allocs)
	}
	if n := tb.wire.Counts().Transmitted; n < 100 {
		t.Errorf("the underlay sent %d frames; the round trips did not go through the tunnel", n)
	}
}

// The fast path's differential test for tunnels: for a flow into a tunnel
// and one out of it, the XDP program running the entry user space made
// sends the very bytes user space sent, out of the same port: the outer
// headers it pushes (the UDP source port from the same flow hash, an
// IPv4 ID of its own and a checksum that holds), and the inner frame it
// pops from an underlay's frame.
func TestFastPathTunnelsDoWhatUserSpaceDoes(t *testing.T) {
	tb := newFastPathTunnelBed(t)
	b, fp := tb.b, tb.b.fp
	vm, far := mac(1), mac(2)
	fromFar := udpFrame(t, vm, far, net.IPv4(10, 0, 0, 2), net.IPv4(10, 0, 0, 1), 4000, 53, []byte("from afar"))
	toFar := udpFrame(t, far, vm, net.IPv4(10, 0, 0, 1), net.IPv4(10, 0, 0, 2), 53, 4000, []byte("to afar"))
	encapsulated := tb.fromRemote(t, 0, 42, fromFar)
	tb.access.Inject(frame(broadcast, vm, "vm is here"))
	waitTransmitted(t, tb.wire, 2)
	tb.wire.Transmitted()
	tb.wire.Inject(encapsulated)
	waitTransmitted(t, tb.access, 1)
	tb.access.Inject(toFar)
	waitTransmitted(t, tb.wire, 3)
	sentByUserSpace := tb.wire.Transmitted()[0]
	receivedByUserSpace := tb.access.Transmitted()[0]
	b.SyncFastPath()

	// Both flows' entries are in the map, made as the frames went
	// through user space.
	entries := b.FastPathEntries()
	var pushes int
	for _, e := range entries {
		if strings.Contains(e.Actions, "tnl_push(tnl_port(2),vni=42),output:wire") {
			pushes++
		}
	}
	if len(entries) != 2 || pushes != 1 {
		t.Fatalf("fast path entries %+v, want two, one of them tnl_push(tnl_port(2),vni=42),output:wire", entries)
	}

	run := func(prog *ebpf.Program, in []byte) (uint32, []byte) {
		out := make([]byte, len(in)+tunnel.Overhead+64)
		opts := &ebpf.RunOptions{Data: in, DataOut: out}
		ret, err := prog.Run(opts)
		if err != nil {
			t.Fatal(err)
		}
		return ret, opts.DataOut
	}
	access, err := bpf.LoadFastpathProgram(bpf.FastpathConfig{InPort: 1, MaxFrameLen: 1 << 16, SocketQueues: 1, Shared: fp.dp.(*datapath.Kernel).Shared()})
	if err != nil {
		t.Fatal(err)
	}
	defer access.Close()
	ret, pushed := run(access.Fastpath, toFar)
	if ret != xdpRedirect {
		t.Fatalf("the access port's program: action %d, want a redirect", ret)
	}
	const ipID, ipSum = 14 + 4, 14 + 10
	if !header.IPv4(pushed[header.EthernetLen:]).ChecksumValid() {
		t.Errorf("the pushed IPv4 header's checksum does not hold: %x", pushed[14:14+20])
	}
	for _, frame := range [][]byte{pushed, sentByUserSpace} {
		clear(frame[ipID : ipID+2])
		clear(frame[ipSum : ipSum+2])
	}
	if !bytes.Equal(pushed, sentByUserSpace) {
		t.Errorf("the fast path pushed\n%x\nuser space sent (IDs and checksums cleared)\n%x", pushed, sentByUserSpace)
	}

	// The underlay's program takes the frame from the tunnel apart.
	listen := xskTunnelListen(t, tbLocal, 4789, tunnel.VXLAN)
	underlay, err := bpf.LoadFastpathProgram(bpf.FastpathConfig{MaxFrameLen: 1 << 16, SocketQueues: 1, Shared: fp.dp.(*datapath.Kernel).Shared(), TunnelListen: listen, Slot: tb.b.underlays[0].slot})
	if err != nil {
		t.Fatal(err)
	}
	defer underlay.Close()
	ret, popped := run(underlay.Fastpath, encapsulated)
	if ret != xdpRedirect || !bytes.Equal(popped, receivedByUserSpace) {
		t.Errorf("the underlay's program: action %d and\n%x\nuser space received\n%x", ret, popped, receivedByUserSpace)
	}
	// From a remote no tunnel has, and not for a tunnel at all: user
	// space's, and the host's, untouched.
	stranger := append([]byte{}, encapsulated...)
	copy(stranger[14+12:], []byte{198, 51, 100, 1})
	stranger[14+10], stranger[14+11] = 0, 0
	if ret, out := run(underlay.Fastpath, stranger); ret != xdpPass || !bytes.Equal(out, stranger) {
		t.Errorf("a frame from an unknown remote: action %d, frame changed: %v", ret, !bytes.Equal(out, stranger))
	}
	if ret, out := run(underlay.Fastpath, toFar); ret != xdpPass || !bytes.Equal(out, toFar) {
		t.Errorf("the host's own frame on the underlay: action %d, frame changed: %v", ret, !bytes.Equal(out, toFar))
	}
}

// newFastPathTunnelBed is a tunnel bed with the fast path, a tunnel of
// key 42 (ofport 2) and one of key flow (ofport 3). In memory, the ports
// have no XDP program: they are said to take redirects, and every slot's
// redirects go to the loopback device, which BPF_PROG_RUN does not send
// to.
func newFastPathTunnelBed(t *testing.T) *tunnelBed {
	t.Helper()
	testenv.RequireRoot(t)
	tb := newTunnelBedOn(t, Options{FastPath: true}, porttest.New("access"), porttest.New("wire"), nil,
		tunnel.Config{Key: 42}, tunnel.Config{KeyFlow: true})
	f := tb.b.fwds[0]
	f.do(func() {
		for _, p := range f.ports {
			if p != nil {
				p.takesRedirects.Store(true)
				p.fastPathIn.Store(true)
			}
		}
		f.forgetDecisions()
	})
	const loopback = 1
	for slot := range uint32(8) {
		if err := tb.b.fp.dp.(*datapath.Kernel).Shared().TxPorts.Put(slot, uint32(loopback)); err != nil {
			t.Fatal(err)
		}
	}
	return tb
}

// A flow that came while its tunnel could not reach the remote is
// carried in the kernel once the tunnel can again: the refusal is not for
// good.
func TestFastPathTunnelComesBackAfterAnUnreachableRemote(t *testing.T) {
	tb := newFastPathTunnelBed(t)
	vm, far := mac(1), mac(2)
	tb.wire.Inject(tb.fromRemote(t, 0, 42, frame(broadcast, far, "far is here")))
	waitTransmitted(t, tb.access, 1)
	route := tb.tunnels[0].Route()
	tb.tunnels[0].Unreachable(errors.New("the test says so"))
	tb.b.SyncFastPath()
	toFar := frame(far, vm, "to far")
	tb.access.Inject(toFar)
	waitFor(t, "the frame dropped for want of a route", func() bool { return tb.tunnels[0].TunnelStats().TxNoRoute == 1 })
	if entries := tb.b.FastPathEntries(); len(entries) != 0 {
		t.Fatalf("an entry into an unreachable tunnel: %+v", entries)
	}
	if err := tb.tunnels[0].SetRoute(route); err != nil {
		t.Fatal(err)
	}
	tb.b.SyncFastPath()
	tb.access.Inject(toFar)
	waitTransmitted(t, tb.wire, 1)
	waitFor(t, "the entry into the tunnel", func() bool {
		entries := tb.b.FastPathEntries()
		return len(entries) == 1 && strings.Contains(entries[0].Actions, "tnl_push")
	})
}

// xskTunnelListen is an underlay port's map of what its tunnels listen
// on, made as the port's own program makes it, with one pair.
func xskTunnelListen(t *testing.T, addr netip.Addr, port uint16, kind tunnel.Kind) *ebpf.Map {
	t.Helper()
	spec, err := bpf.LoadXsk()
	if err != nil {
		t.Fatal(err)
	}
	m, err := ebpf.NewMap(spec.Maps[bpf.XskMapTunnelListen])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	a := addr.As4()
	key := bpf.XskTunnelListenKey{Addr: binary.NativeEndian.Uint32(a[:]), Port: bpf.NetworkOrder(port)}
	if err := m.Put(&key, uint32(kind)); err != nil {
		t.Fatal(err)
	}
	return m
}

// benchTunnelForwarder is a forwarder with an access port (ofport 1) and a
// VXLAN tunnel (ofport 2, key 42) over an in-memory underlay, the station
// behind each learned; the access port receives a full batch of 64-byte
// frames to the far station on every call (into the tunnel), or the
// underlay one of those from the far station, encapsulated (out of it).
func benchTunnelForwarder(tb testing.TB, intoTunnel bool) (*forwarder, rxQueue) {
	tb.Helper()
	vm, far := mac(1), mac(2)
	remote := tbRemote(0)
	var toFar, fromFar [][]byte
	e, err := tunnel.NewEncap(tunnel.VXLAN, tunnel.Endpoint{IP: remote, MAC: tbHopMAC}, tunnel.Endpoint{IP: tbLocal, MAC: tbLocalMAC}, 4789)
	if err != nil {
		tb.Fatal(err)
	}
	for range DefaultBatchSize {
		toFar = append(toFar, udpFrame(tb, far, vm, net.IPv4(10, 0, 0, 1), net.IPv4(10, 0, 0, 2), 1000, 5000, make([]byte, 18)))
		inner := udpFrame(tb, vm, far, net.IPv4(10, 0, 0, 2), net.IPv4(10, 0, 0, 1), 5000, 1000, make([]byte, 18))
		out := make([]byte, tunnel.Overhead+len(inner))
		fromFar = append(fromFar, out[:e.Encapsulate(out, inner, 42, 1)])
	}
	access, wire := porttest.NewLoop("access", nil), porttest.NewLoop("wire", nil)
	if intoTunnel {
		access = porttest.NewLoop("access", toFar)
	} else {
		wire = porttest.NewLoop("wire", fromFar)
	}
	u := tunnel.NewUnderlay(wire, 1500)
	p, err := tunnel.NewPort(tunnel.Config{Name: "vx", Kind: tunnel.VXLAN, Remote: remote, Key: 42}, u)
	if err != nil {
		tb.Fatal(err)
	}
	if err := p.SetRoute(tunnel.Route{Ifname: "wire", Local: tbLocal, LocalMAC: tbLocalMAC, NextHop: remote, NextHopMAC: tbHopMAC, Resolved: true, MTU: 1500}); err != nil {
		tb.Fatal(err)
	}
	cls := flow.NewClassifier()
	cls.Publish(normalTable())
	opts := Options{}.withDefaults()
	f, err := newForwarder(opts, cls, firstOf(1, opts))
	if err != nil {
		tb.Fatal(err)
	}
	accessSlot := f.addPort(&bridgePort{Port: access, ofport: 1})
	uslot := f.addPort(&bridgePort{Port: u, underlay: u})
	tslot := f.addPort(&bridgePort{Port: p, ofport: 2, tunnel: p, underlaySlot: uslot})
	f.fdb.learn(macKey(vm, 0), accessSlot, f.now())
	f.fdb.learn(macKey(far, 0), tslot, f.now())
	for _, q := range f.queues {
		if q.slot == accessSlot && intoTunnel || q.slot == uslot && !intoTunnel {
			return f, q
		}
	}
	tb.Fatal("no queue to receive on")
	return nil, rxQueue{}
}

// BenchmarkTunnelEncapsulate forwards batches of 64-byte frames from a
// port into a VXLAN tunnel in user space (the fast path off): NORMAL to
// the far station, encapsulation into the underlay's buffers, and the
// underlay's transmit.
func BenchmarkTunnelEncapsulate(b *testing.B) { benchmarkTunnel(b, true) }

// BenchmarkTunnelDecapsulate forwards batches of 64-byte frames out of a
// VXLAN tunnel in user space: decapsulated, claimed and forwarded by
// NORMAL to the port.
func BenchmarkTunnelDecapsulate(b *testing.B) { benchmarkTunnel(b, false) }

func benchmarkTunnel(b *testing.B, intoTunnel bool) {
	f, q := benchTunnelForwarder(b, intoTunnel)
	b.ReportAllocs()
	for b.Loop() {
		f.forwardBatch(q)
	}
	perFrame := float64(b.Elapsed().Nanoseconds()) / float64(b.N*DefaultBatchSize)
	b.ReportMetric(perFrame, "ns/frame")
	b.ReportMetric(1e3/perFrame, "Mframes/s")
}
