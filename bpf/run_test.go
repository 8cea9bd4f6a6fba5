package bpf

import (
	"maps"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/internal/testenv"
	"github.com/xswitch/xswitch/tunnel"
)

// A bridge of one port, whose entries the tests install by hand: what
// switch/ installs is tested there against user space; here, what the
// program does with an entry.
type runBridge struct {
	shared *FastpathShared
	objs   *FastpathPort
	ncpu   int
}

const runGeneration = 1

func loadRunBridge(tb testing.TB) *runBridge {
	tb.Helper()
	testenv.RequireRoot(tb)
	shared, err := NewFastpathShared(0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { shared.Close() })
	if err := shared.SetState(&FastpathFpState{Generation: runGeneration}); err != nil {
		tb.Fatal(err)
	}
	objs, err := LoadFastpathProgram(FastpathConfig{InPort: testInPort, MaxFrameLen: 1 << 16, SocketQueues: 1, Shared: shared})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { objs.Close() })
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		tb.Fatal(err)
	}
	return &runBridge{shared: shared, objs: objs, ncpu: ncpu}
}

// runKey is the key of frame's entry, as the port receives it.
func runKey(tb testing.TB, frame []byte) FastpathFpKey {
	tb.Helper()
	var k flow.Key
	if !flow.NewExtractor().Extract(frame, testInPort, &k) {
		tb.Fatalf("malformed frame %x", frame)
	}
	key := KeyOf(&k.Headers)
	key.Gen = KeyGen(runGeneration)
	return key
}

// install gives frame, as the port receives it, the entry f.
func (r *runBridge) install(tb testing.TB, frame []byte, f FastpathFpFlow) {
	tb.Helper()
	key := runKey(tb, frame)
	values := make([]FastpathFpFlow, r.ncpu)
	for i := range values {
		values[i] = f
	}
	if err := r.shared.Flows.Put(&key, values); err != nil {
		tb.Fatal(err)
	}
}

// tunnel writes a VXLAN tunnel's outer headers into tunnels[index].
func (r *runBridge) tunnel(tb testing.TB, index uint32) {
	tb.Helper()
	e, err := tunnel.NewEncap(tunnel.VXLAN, tunnel.Endpoint{IP: popLocal, MAC: [6]byte{2, 9, 9, 9, 9, 2}},
		tunnel.Endpoint{IP: popRemote, MAC: [6]byte{2, 9, 9, 9, 9, 1}}, tunnel.VXLAN.DefaultPort())
	if err != nil {
		tb.Fatal(err)
	}
	h := e.Header()
	if err := r.shared.Tunnels.Put(index, &FastpathFpTunnel{Hdr: h.Bytes, IpSum: h.IPSum}); err != nil {
		tb.Fatal(err)
	}
}

// linux/bpf.h's enum xdp_action: the XDP programs' verdicts.
const (
	xdpDrop     = 1
	xdpPass     = 2
	xdpRedirect = 4
)

// Every frame the program drops it counts, by reason, in the bridge's
// drops, and no other: a rule's drop, an operation that cannot run (a
// push to a tunnel slot past the map's end); not a miss, nor a frame it
// sends.
func TestFastpathCountsDrops(t *testing.T) {
	r := loadRunBridge(t)
	frames := commonFrames(t)
	dropped, failing, missed, sent := frames["ipv4/udp"], frames["ipv4/tcp"], frames["arp"], frames["ipv6/udp"]
	r.install(t, dropped, FastpathFpFlow{Out: FPDrop})
	badTunnel := FastpathFpOp{Type: uint8(FastpathFpOpTypeFP_OP_TUNNEL_PUSH), Tunnel: r.shared.Tunnels.MaxEntries()}
	r.install(t, failing, *withOps(FastpathFpFlow{Out: 1}, badTunnel))
	r.install(t, sent, FastpathFpFlow{Out: 1})
	if err := r.shared.TxPorts.Put(uint32(1), uint32(1)); err != nil { // lo
		t.Fatal(err)
	}
	for _, c := range []struct {
		frame []byte
		times int
		want  uint32
	}{{dropped, 3, xdpDrop}, {failing, 2, xdpDrop}, {missed, 1, xdpPass}, {sent, 1, xdpRedirect}} {
		for range c.times {
			if ret, err := r.objs.Fastpath.Run(&ebpf.RunOptions{Data: c.frame}); err != nil || ret != c.want {
				t.Fatalf("action %d (%v), want %d", ret, err, c.want)
			}
		}
	}
	want := map[string]uint64{"rule": 3, "op_failed": 2, "port_gone": 0, "restore_failed": 0, "meter": 0}
	if got := r.shared.DropCounts(); !maps.Equal(got, want) {
		t.Errorf("drops %v, want %v", got, want)
	}
}

// Each drop reason has a name, its own.
func TestDropReasonsAreNamed(t *testing.T) {
	seen := map[string]bool{}
	for reason, name := range DropReasons {
		if name == "" || seen[name] {
			t.Errorf("drop reason %d is named %q", reason, name)
		}
		seen[name] = true
	}
}

// BenchmarkFastpathRun is the program's cost per frame under
// BPF_PROG_RUN, as the kernel times it (ns/frame): a frame without an
// entry (handed on: the test run has no socket), and frames whose entry
// drops them after no operation, a MAC rewrite, rewrites of the IPv4
// header and UDP port with their checksums, a VXLAN push, or a meter
// above the rate (no redirect: BPF_PROG_RUN cannot send). A repeated run reruns the program
// on the frame as the last run left it, so the rewrites write the values
// the frame has (the checksums are updated all the same), and a push,
// which grows the frame, is run once per frame, timer overhead included.
func BenchmarkFastpathRun(b *testing.B) {
	frame := commonFrames(b)["ipv4/udp"]
	mac := FastpathFpOp{Type: uint8(FastpathFpOpTypeFP_OP_SET_DL_DST), Mac: [6]byte(frame[:6])}
	ttl := FastpathFpOp{Type: uint8(FastpathFpOpTypeFP_OP_SET_L3), Off: 8, Len: 1, Csums: uint8(FastpathFpCsumFP_CSUM_L3),
		Value: [4]byte{frame[14+8]}}
	port := FastpathFpOp{Type: uint8(FastpathFpOpTypeFP_OP_SET_L4), Off: 2, Len: 2, Csums: uint8(FastpathFpCsumFP_CSUM_UDP),
		Value: [4]byte{frame[34+2], frame[34+3]}}
	vxlan := FastpathFpOp{Type: uint8(FastpathFpOpTypeFP_OP_TUNNEL_PUSH), Delta: 42, Tunnel: 0}
	meter := FastpathFpOp{Type: uint8(FastpathFpOpTypeFP_OP_METER), Tunnel: meterSlot, Delta: meterID, Len: 4}
	for _, c := range []struct {
		name  string
		entry *FastpathFpFlow
		once  bool
	}{
		{"miss", nil, false},
		{"drop", &FastpathFpFlow{Out: FPDrop}, false},
		{"set_dl_dst+drop", withOps(FastpathFpFlow{Out: FPDrop}, mac), false},
		{"set_dl_dst+set_ttl+set_udp_dst+drop", withOps(FastpathFpFlow{Out: FPDrop}, mac, ttl, port), false},
		{"tunnel_push+drop", withOps(FastpathFpFlow{Out: FPDrop}, vxlan), true},
		{"meter+drop", withOps(FastpathFpFlow{Out: FPDrop}, meter), false},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := loadRunBridge(b)
			want := uint32(xdpPass) // the test run's queue has no socket
			if c.entry != nil {
				r.install(b, frame, *c.entry)
				r.tunnel(b, 0)
				// A meter above any rate the run reaches: every frame
				// takes its cost.
				m := &r.shared.MeterSlots()[meterSlot]
				*m = FastpathFpMeter{Id: meterID, N_bands: 1}
				m.Bands[0] = FastpathFpBand{Type: uint8(FastpathFpBandTypeFP_BAND_DROP), Rate: 4e9, Tolerance: uint64(time.Second)}
				want = xdpDrop
			}
			repeat, runs := b.N, 1
			if c.once {
				repeat, runs = 1, b.N
			}
			b.ResetTimer()
			var total time.Duration
			for range runs {
				ret, perFrame, err := r.objs.Fastpath.Benchmark(frame, repeat, nil)
				if err != nil {
					b.Fatal(err)
				}
				if ret != want {
					b.Fatalf("action %d, want %d", ret, want)
				}
				total += perFrame * time.Duration(repeat)
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/frame")
		})
	}
}

func withOps(f FastpathFpFlow, ops ...FastpathFpOp) *FastpathFpFlow {
	copy(f.Ops[:], ops)
	return &f
}
