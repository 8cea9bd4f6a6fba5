package test

import (
	"bytes"
	"encoding/binary"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xswitch/xswitch/internal/testenv"
	"golang.org/x/sys/unix"
)

// rawPort is a packet socket on eth0 inside a namespace: it sends frames
// exactly as given, and counts the frames that arrive.
type rawPort struct {
	fd  int
	mac net.HardwareAddr // the source address of what it sends
}

// openRaw opens a raw port in namespace ns whose frames carry source
// address src, a made-up station's, so that arrivals can be told from the
// namespace's own traffic.
func openRaw(t testing.TB, ns string, src net.HardwareAddr) rawPort {
	t.Helper()
	return rawPort{fd: sniffSocket(t, ns), mac: src}
}

// ethFrame is a frame from src to dst with the given EtherType (or 802.3
// length) and payload, padded to the 60-byte minimum.
func ethFrame(dst, src net.HardwareAddr, typeOrLength uint16, payload []byte) []byte {
	f := append(append([]byte{}, dst...), src...)
	f = binary.BigEndian.AppendUint16(f, typeOrLength)
	f = append(f, payload...)
	for len(f) < 60 {
		f = append(f, 0)
	}
	return f
}

func (r rawPort) send(t testing.TB, frames ...[]byte) {
	t.Helper()
	for _, f := range frames {
		if err := retryNoBuffers(func() error { _, err := unix.Write(r.fd, f); return err }); err != nil {
			t.Fatalf("sending a raw frame: %v", err)
		}
	}
}

// arrivals counts the frames from src that reach r, by destination
// address, until done says the counts are enough or within passes.
func (r rawPort) arrivals(t testing.TB, src net.HardwareAddr, within time.Duration, done func(map[string]int) bool) map[string]int {
	t.Helper()
	counts := map[string]int{}
	buf, oob := make([]byte, 65536), make([]byte, 256)
	for deadline := time.Now().Add(within); time.Now().Before(deadline) && !done(counts); {
		a, ok, err := receiveFrame(r.fd, buf, oob)
		if err != nil {
			t.Fatal(err)
		}
		if ok && net.HardwareAddr(a.frame[6:12]).String() == src.String() {
			counts[net.HardwareAddr(a.frame[0:6]).String()]++
		}
	}
	return counts
}

// frameCounter counts, in a goroutine, the frames from one source address
// that arrive on eth0 in a namespace, with a receive buffer large enough
// that a burst is not lost in the socket before it is read.
type frameCounter struct {
	stop chan struct{}
	done chan int
	n    atomic.Int64 // so far
}

func startCounting(t testing.TB, ns string, src net.HardwareAddr) *frameCounter {
	t.Helper()
	fd := sniffSocket(t, ns)
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16<<20); err != nil {
		t.Fatalf("SO_RCVBUFFORCE: %v", err)
	}
	c := &frameCounter{stop: make(chan struct{}), done: make(chan int, 1)}
	go func() {
		n := 0
		buf, oob := make([]byte, 65536), make([]byte, 256)
		for {
			select {
			case <-c.stop:
				c.done <- n
				return
			default:
			}
			a, ok, err := receiveFrame(fd, buf, oob)
			if err != nil {
				c.done <- -1
				return
			}
			if ok && net.HardwareAddr(a.frame[6:12]).String() == src.String() {
				n++
				c.n.Store(int64(n))
			}
		}
	}()
	return c
}

// peek returns how many frames arrived so far.
func (c *frameCounter) peek() int { return int(c.n.Load()) }

// count stops counting and returns how many frames arrived.
func (c *frameCounter) count(t testing.TB) int {
	t.Helper()
	close(c.stop)
	n := <-c.done
	if n < 0 {
		t.Fatal("reading the packet socket failed")
	}
	return n
}

// madeUp is made-up station n's MAC address, 02:aa:00:00:00:n: the
// frames stationFrames sends come from madeUp(i+1) for kind i.
func madeUp(n byte) net.HardwareAddr { return net.HardwareAddr{2, 0xaa, 0, 0, 0, n} }

// stationFrames sends 20 rounds of one frame of each of kinds, send[kind]
// from madeUp(i+1) for kinds[i], out of namespace from's eth0, and
// checks what namespace to's eth0 receives: every kind that want has
// arrives 20 times, byte for byte as want says; no kind that want lacks
// arrives (a straggler of it would have come by the time the others all
// did). It pauses between rounds, so that a batch installs the fast
// path's entries.
func stationFrames(t *testing.T, from, to string, kinds []string, send, want map[string][]byte) {
	t.Helper()
	sniff := sniffSocket(t, to)
	out := openRaw(t, from, madeUp(1))
	const rounds = 20
	for range rounds {
		for _, kind := range kinds {
			out.send(t, send[kind])
		}
		time.Sleep(5 * time.Millisecond)
	}
	got := map[string]int{}
	arrived := 0
	buf, oob := make([]byte, 65536), make([]byte, 256)
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline) && arrived < rounds*len(want); {
		arr, ok, err := receiveFrame(sniff, buf, oob)
		if err != nil {
			t.Fatal(err)
		}
		if !ok || !bytes.HasPrefix(arr.frame[6:12], madeUp(0)[:5]) || int(arr.frame[11]) > len(kinds) || arr.frame[11] == 0 {
			continue
		}
		kind := kinds[arr.frame[11]-1]
		got[kind]++
		if _, wanted := want[kind]; wanted {
			arrived++
		}
		if !bytes.Equal(arr.frame, want[kind]) {
			t.Errorf("%s frame arrived as\n%x\nwant\n%x", kind, arr.frame, want[kind])
		}
	}
	for _, kind := range kinds {
		wantN := 0
		if _, ok := want[kind]; ok {
			wantN = rounds
		}
		if got[kind] != wantN {
			t.Errorf("%d %s frames arrived, want %d (all arrivals: %v)", got[kind], kind, wantN, got)
		}
	}
}

// wire is a rig of two hosts, from whose first (a) made-up stations send
// frames to the second (b) through the rules a test adds: what onTheWire
// gives each of its runs.
type wire struct {
	*rig
	a, b nsPort
	// inA and inB are a's and b's OpenFlow ports.
	inA, inB int
	bMAC     net.HardwareAddr
	// fastPath says the daemon runs its in-kernel fast path.
	fastPath bool
}

// onTheWire runs test twice, in a new rig of two hosts each time: with the
// daemon's fast path on (unless the suite turns it off) and off.
func onTheWire(t *testing.T, test func(t *testing.T, w *wire)) {
	inBothModes(t, 2, func(t *testing.T, r *rig, fastPath bool) {
		w := &wire{rig: r, a: r.hosts[0], b: r.hosts[1], fastPath: fastPath}
		nums := ofports(t, r.d, r.br)
		w.inA, w.inB = nums[w.a.name], nums[w.b.name]
		w.bMAC, _ = net.ParseMAC(nsMAC(t, w.b.ns, "eth0"))
		test(t, w)
	})
}

// inBothModes runs test twice, in a new rig of hosts hosts each time
// whose daemon has daemonArgs: with the daemon's fast path on (fastPath
// says so; skipped when the suite turns it off) and off.
func inBothModes(t *testing.T, hosts int, test func(t *testing.T, r *rig, fastPath bool), daemonArgs ...string) {
	eachMode(t, false, hosts, test, daemonArgs)
}

// inBothModesAtOnce is inBothModes with the two runs side by side, for a
// test that mostly waits.
func inBothModesAtOnce(t *testing.T, hosts int, test func(t *testing.T, r *rig, fastPath bool), daemonArgs ...string) {
	eachMode(t, true, hosts, test, daemonArgs)
}

func eachMode(t *testing.T, parallel bool, hosts int, test func(t *testing.T, r *rig, fastPath bool), daemonArgs []string) {
	testenv.RequireRoot(t)
	for _, mode := range []string{"auto", "off"} {
		t.Run("fast path "+mode, func(t *testing.T) {
			if mode == "auto" && fastPathOff() {
				// --fast-path auto after the suite's off would turn it on.
				t.Skip("the suite runs with --fast-path off (XSWITCH_TEST_FAST_PATH=off): its other pass runs this with the fast path on")
			}
			if parallel {
				t.Parallel()
			}
			r := newRig(t, hosts, append([]string{"--fast-path", mode}, daemonArgs...)...)
			test(t, r, mode == "auto")
		})
	}
}

// addFlows adds the rules of flows, one a line, as add-flows FILE does.
func (r *rig) addFlows(t *testing.T, flows string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "flows")
	if err := os.WriteFile(file, []byte(flows), 0o600); err != nil {
		t.Fatal(err)
	}
	r.d.x(t, "add-flows", r.br, file)
}
