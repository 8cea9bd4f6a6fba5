package test

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/header"
	"github.com/xswitch/xswitch/internal/testenv"
)

// Defects outside testing found where the fast path sent frames that user
// space would not, each reproduced as it was found. The suite
// runs these with the fast path off too, where they hold as well.

// sendEvery writes frame to the packet socket fd every interval, count
// times, and returns how many it sent.
func sendEvery(fd int, to *unix.SockaddrLinklayer, frame []byte, interval time.Duration, count int) int {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	sent := 0
	for range count {
		<-tick.C
		if retryNoBuffers(func() error { return unix.Sendto(fd, frame, 0, to) }) == nil {
			sent++
		}
	}
	return sent
}

// TestBlockedPortGetsNothingFromTheFastPath: two bridges of one daemon
// joined by two veth pairs, RSTP on both, the second bridge the root; a
// rule sends one host's frames out of the first link. When a BPDU makes
// that link's port an alternate (its peer's port priority worsens), it
// discards, and the frames stop there, in the kernel as in user space;
// when it forwards again, the flow comes back, to the kernel too.
func TestBlockedPortGetsNothingFromTheFastPath(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	n := newTestNet()
	bx, by := n.name("bx"), n.name("by")
	d.x(t, "add-br", bx)
	d.x(t, "add-br", by)
	a := addNSPort(t, d, n, bx, 1, false)
	b := addNSPort(t, d, n, by, 2, false)
	l1x, l1y, l2x, l2y := n.name("l1x"), n.name("l1y"), n.name("l2x"), n.name("l2y")
	vethPair(t, l1x, l1y)
	vethPair(t, l2x, l2y)
	for _, p := range [][2]string{{bx, l1x}, {bx, l2x}, {by, l1y}, {by, l2y}} {
		d.x(t, "add-port", p[0], p[1])
	}
	d.x(t, "set", "Bridge", by, "rstp_enable=true", "other_config:rstp-priority=4096")
	d.x(t, "set", "Bridge", bx, "rstp_enable=true")
	// by is the root; of bx's two ports to it, the one whose peer has the
	// better port ID is bx's root port, the other an alternate.
	waitRSTP(t, d, bx, 15*time.Second, map[string]string{l1x: "root forwarding rstp", l2x: "alternate discarding rstp"})
	d.x(t, "add-flow", bx, fmt.Sprintf("priority=100,in_port=%s,actions=output:%s", a.name, l1x))
	waitPing(t, a.ns, b.addr, 10*time.Second) // and by learns b

	station := net.HardwareAddr{0x02, 0x00, 0x5e, 0x26, byte(n.x), byte(n.y)}
	stream := udpFrameTTL(t, station.String(), nsMAC(t, b.ns, "eth0"), a.addr, b.addr, 64, []byte("to the blocked port?"))
	fd, to := packetSocket(t, a.ns, "eth0")
	l1 := ofports(t, d, bx)[l1x]
	// arrivals sends 300 frames of the stream at 100 a second and counts
	// how many reach b, and how many of them the kernel carried.
	arrivals := func() (received int, carried uint64) {
		c := startCounting(t, b.ns, station)
		before := kernelCarriedIfOn(t, d, bx)
		sendEvery(fd, to, stream, 10*time.Millisecond, 300)
		time.Sleep(300 * time.Millisecond)
		return c.count(t), kernelCarriedIfOn(t, d, bx) - before
	}
	if got, carried := arrivals(); got < 295 {
		t.Fatalf("through the forwarding link, %d of 300 frames arrived (%d in the kernel): the test proves nothing", got, carried)
	}
	if !fastPathOff() {
		if out := d.x(t, "dump-fastpath", bx); !strings.Contains(out, fmt.Sprintf("actions:output:%d", l1)) {
			t.Fatalf("the stream is not in the kernel:\n%s", out)
		}
	}

	d.x(t, "set", "Port", l1y, "other_config:rstp-port-priority=240")
	waitRSTP(t, d, bx, 15*time.Second, map[string]string{l1x: "alternate discarding rstp", l2x: "root forwarding rstp"})
	if got, carried := arrivals(); got != 0 {
		t.Errorf("%d of 300 frames went out of a discarding port (%d carried in the kernel)\ndump-fastpath:\n%s", got, carried, d.x(t, "dump-fastpath", bx))
	}

	d.x(t, "set", "Port", l1y, "other_config:rstp-port-priority=128")
	waitRSTP(t, d, bx, 15*time.Second, map[string]string{l1x: "root forwarding rstp", l2x: "alternate discarding rstp"})
	got, carried := arrivals()
	if got < 295 {
		t.Errorf("once the port forwarded again, %d of 300 frames arrived", got)
	}
	if !fastPathOff() && carried < 250 {
		t.Errorf("once the port forwarded again, the kernel carried %d of 300 frames: the flow did not come back to the fast path\n%s",
			carried, d.x(t, "dump-fastpath", bx))
	}
}

// kernelCarriedIfOn is kernelCarried, or 0 with the fast path off.
func kernelCarriedIfOn(t testing.TB, d *daemon, br string) uint64 {
	t.Helper()
	if fastPathOff() {
		return 0
	}
	return kernelCarried(t, d, br)
}

// udpFrameTTL is a UDP datagram to port 9 with the given TTL.
func udpFrameTTL(t testing.TB, src, dst, srcIP, dstIP string, ttl uint8, payload []byte) []byte {
	t.Helper()
	f := udpFrame(t, src, dst, srcIP, dstIP, 9, payload)
	ip := header.IPv4(f[header.EthernetLen:])
	ip.SetTTL(ttl)
	ip.SetChecksum(ip.ComputeChecksum())
	return f
}

// withIPOptions returns the IPv4 frame f with a 4-byte options field (no
// operations) in its header.
func withIPOptions(f []byte) []byte {
	const l4 = header.EthernetLen + header.IPv4MinLen
	out := append(append(append([]byte{}, f[:l4]...), 1, 1, 1, 0), f[l4:]...)
	ip := header.IPv4(out[header.EthernetLen:])
	ip.SetHeaderLen(header.IPv4MinLen + 4)
	ip.SetTotalLen(ip.TotalLen() + 4)
	ip.SetChecksum(ip.ComputeChecksum())
	return out
}

// TestTableEditsLoseNoFramesOfOtherFlows: a NORMAL bridge carries a
// stream from a to b while the table goes back and forth between NORMAL
// alone and 50,000 rules that look at IP addresses, one of them for
// another address of b's, and frames that user space handles keep its
// forwarder busy. No frame of the stream is lost, and none is changed:
// the new table never acts under the old one's generation and key mask.
func TestTableEditsLoseNoFramesOfOtherFlows(t *testing.T) {
	testenv.RequireRoot(t)
	for _, action := range []string{"drop", "dec_ttl,NORMAL"} {
		t.Run(strings.SplitN(action, ",", 2)[0], func(t *testing.T) { testTableEdits(t, action) })
	}
}

func testTableEdits(t *testing.T, action string) {
	r := newRig(t, 3)
	a, b, busy := r.hosts[0], r.hosts[1], r.hosts[2]
	other := r.n.ipv4(202) // b's second address, behind the same MAC
	mustRun(t, "ip", "-n", b.ns, "addr", "add", other+"/24", "dev", "eth0")
	station := net.HardwareAddr{0x02, 0x00, 0x5e, 0x26, byte(r.n.x), byte(r.n.y)}
	macB := nsMAC(t, b.ns, "eth0")
	stream := udpFrameTTL(t, station.String(), macB, a.addr, b.addr, 64, []byte("the stream no rule matches"))
	// Between the same addresses, frames the XDP parser leaves to user
	// space (IPv4 options), whose entries NORMAL's key mask would make the
	// stream's.
	toOther := withIPOptions(udpFrameTTL(t, station.String(), macB, a.addr, other, 10, []byte("to the ruled address")))
	// Broadcasts from made-up stations: floods, which user space makes.
	var floods [][]byte
	for i := range 64 {
		floods = append(floods, ethFrame(net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
			net.HardwareAddr{0x02, 0x00, 0x5e, 0x27, byte(r.n.x), byte(i)}, 0x88b5, []byte("user space's")))
	}
	var rules strings.Builder
	for i := range 49999 {
		fmt.Fprintf(&rules, "priority=10,udp,nw_dst=172.%d.%d.%d,tp_dst=7,actions=drop\n", 16+i>>16, i>>8&0xff, i&0xff)
	}
	fmt.Fprintf(&rules, "priority=10,ip,nw_dst=%s,actions=%s\n", other, action)

	capture := startUDPCapture(t, b.ns, station, b.addr)
	fd, to := packetSocket(t, a.ns, "eth0")
	busyFd, busyTo := packetSocket(t, busy.ns, "eth0")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var sent int
	wg.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			// 1.5 frames of the stream a millisecond, one to the other
			// address every other, a flood every fourth.
			for range 1 + i%2 {
				if retryNoBuffers(func() error { return unix.Sendto(fd, stream, 0, to) }) == nil {
					sent++
				}
			}
			if i%2 == 0 {
				retryNoBuffers(func() error { return unix.Sendto(fd, toOther, 0, to) })
			}
			if i%4 == 0 {
				retryNoBuffers(func() error { return unix.Sendto(busyFd, floods[i/4%len(floods)], 0, busyTo) })
			}
		}
	})
	const cycles = 8
	for range cycles {
		r.d.xInput(t, rules.String(), "add-flows", r.br, "-")
		time.Sleep(100 * time.Millisecond)
		r.d.x(t, "del-flows", r.br, "ip")
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	time.Sleep(500 * time.Millisecond)
	got := capture.stop(t)
	t.Logf("%d cycles of 50,000 rules with %s: %d of the stream's %d frames arrived, %d altered", cycles, action, got.fromTo[b.addr], sent, got.altered)
	if got.altered > 0 {
		t.Errorf("%d of the stream's frames arrived altered (TTL or checksum), e.g. %s", got.altered, got.example)
	}
	if lost := sent - got.fromTo[b.addr]; lost != 0 {
		t.Errorf("%d of the stream's %d frames were lost while the table changed", lost, sent)
	}
}

// udpCapture counts, in a goroutine, the UDP datagrams from one source
// address that arrive on eth0 in a namespace, by destination address,
// and those of the stream to one address, sent with TTL 64, that arrive
// with another TTL or a bad IPv4 checksum.
type udpCapture struct {
	done    chan udpCaptured
	stopped chan struct{}
}

type udpCaptured struct {
	fromTo  map[string]int
	altered int
	example string
}

func startUDPCapture(t testing.TB, ns string, src net.HardwareAddr, stream string) *udpCapture {
	t.Helper()
	fd := sniffSocket(t, ns)
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16<<20); err != nil {
		t.Fatalf("SO_RCVBUFFORCE: %v", err)
	}
	c := &udpCapture{done: make(chan udpCaptured, 1), stopped: make(chan struct{})}
	go func() {
		got := udpCaptured{fromTo: map[string]int{}}
		buf, oob := make([]byte, 65536), make([]byte, 256)
		for {
			select {
			case <-c.stopped:
				c.done <- got
				return
			default:
			}
			a, ok, err := receiveFrame(fd, buf, oob)
			if err != nil {
				got.fromTo = nil
				c.done <- got
				return
			}
			f := a.frame
			if !ok || len(f) < header.EthernetLen+header.IPv4MinLen || net.HardwareAddr(f[6:12]).String() != src.String() ||
				header.Ethernet(f).Type() != header.EtherTypeIPv4 || header.IPv4(f[header.EthernetLen:]).Protocol() != header.ProtoUDP {
				continue
			}
			ip := header.IPv4(f[header.EthernetLen : header.EthernetLen+header.IPv4MinLen])
			addr := ip.Dst()
			dst := net.IP(addr[:]).String()
			got.fromTo[dst]++
			if dst == stream && (ip.TTL() != 64 || !ip.ChecksumValid()) {
				got.altered++
				got.example = fmt.Sprintf("to %s, TTL %d, checksum sum %#04x", dst, ip.TTL(), header.Fold(header.Sum(0, ip)))
			}
		}
	}()
	return c
}

func (c *udpCapture) stop(t testing.TB) udpCaptured {
	t.Helper()
	close(c.stopped)
	got := <-c.done
	if got.fromTo == nil {
		t.Fatal("reading the packet socket failed")
	}
	return got
}

// TestMACFloodLeavesOtherFlowsInTheKernel: while one port floods the MAC
// table with random source addresses, the flows between two other ports
// stay in the kernel: an eviction retires what relied on the evicted
// entry, not every entry of the bridge.
func TestMACFloodLeavesOtherFlowsInTheKernel(t *testing.T) {
	requireFastPath(t)
	testenv.RequireRoot(t)
	r := newRig(t, 3)
	a, b, flooder := r.hosts[0], r.hosts[1], r.hosts[2]
	macA, macB := nsMAC(t, a.ns, "eth0"), nsMAC(t, b.ns, "eth0")
	frames := randomSourceFrames(rand.New(rand.NewPCG(uint64(r.n.x), uint64(r.n.y))), 300000)
	fd, to := packetSocket(t, flooder.ns, "eth0")
	pinger := startBackground(t, "ip", "netns", "exec", a.ns, "ping", "-n", "-q", "-i", "0.002", "-w", "60", b.addr)
	t.Cleanup(func() { pinger.wait(t, 70*time.Second) })
	waitEntries := func(within time.Duration) bool {
		for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if bothWays(t, r.d, r.br, macA, macB) {
				return true
			}
		}
		return false
	}
	if !waitEntries(5 * time.Second) {
		t.Fatalf("the ping's flows are not in the kernel before the flood:\n%s", r.d.x(t, "dump-fastpath", r.br))
	}
	installs0 := fastPathInstalls(t, r.d, r.br)
	floodDone := make(chan floodResult, 1)
	go func() { floodDone <- sendPaced(fd, to, frames, 64) }()
	var samples, present int
	for sampling := true; sampling; {
		select {
		case res := <-floodDone:
			floodDone <- res
			sampling = false
		case <-time.After(100 * time.Millisecond):
			samples++
			if bothWays(t, r.d, r.br, macA, macB) {
				present++
			}
		}
	}
	flood := <-floodDone
	installs := fastPathInstalls(t, r.d, r.br) - installs0
	t.Logf("a flood of %d random source MACs in %v: the ping's flows were in the kernel in %d of %d samples; %d installs during the flood",
		flood.sent, flood.elapsed.Round(time.Millisecond), present, samples, installs)
	if samples < 5 {
		t.Fatalf("only %d samples during the flood", samples)
	}
	if present < samples*9/10 {
		t.Errorf("the flows between two other ports were in the kernel in %d of %d samples during the flood", present, samples)
	}
}

// bothWays reports whether dump-fastpath holds live entries for the
// frames from macA to macB and back.
func bothWays(t testing.TB, d *daemon, br, macA, macB string) bool {
	t.Helper()
	var dump jsonFastPath
	d.xJSON(t, &dump, "dump-fastpath", br)
	ab, ba := false, false
	for _, e := range dump.Entries {
		if e.Stale {
			continue
		}
		ab = ab || strings.Contains(e.Flow, "dl_src="+macA+",dl_dst="+macB)
		ba = ba || strings.Contains(e.Flow, "dl_src="+macB+",dl_dst="+macA)
	}
	return ab && ba
}

// fastPathInstalls is how many entries pmd-stats-show says the fast path
// installed.
func fastPathInstalls(t testing.TB, d *daemon, br string) uint64 {
	t.Helper()
	var stats jsonPMDStats
	d.xJSON(t, &stats, "pmd-stats-show", br)
	for _, b := range stats.Bridges {
		if b.Name == br && b.FastPath != nil {
			return b.FastPath.Installs
		}
	}
	t.Fatalf("pmd-stats-show %s has no fast path", br)
	return 0
}

// TestRefusedTransmitsAreDrops: b's end of its veth takes frames of 1000
// bytes at most; pings of 1400 bytes to it are refused by the interface,
// and dump-ports counts them as b's port's transmit drops, not as
// transmits, whether the fast path redirected them or user space sent
// them.
func TestRefusedTransmitsAreDrops(t *testing.T) {
	testenv.RequireRoot(t)
	r := newRig(t, 2)
	a, b := r.hosts[0], r.hosts[1]
	mustRun(t, "ip", "-n", b.ns, "link", "set", "dev", "eth0", "mtu", "1000")
	port := ofports(t, r.d, r.br)[b.name]
	before := dumpPorts(t, r.d, r.br)[port]
	const count = 50
	run(t, "ip", "netns", "exec", a.ns, "ping", "-n", "-q", "-c", fmt.Sprint(count), "-i", "0.02", "-W", "1", "-s", "1400", b.addr)
	after := dumpPorts(t, r.d, r.br)[port]
	tx, drops := after.txPkts-before.txPkts, after.txDrop-before.txDrop
	t.Logf("%d pings of 1400 bytes to a port whose peer takes 1000: tx +%d, drop +%d", count, tx, drops)
	if drops < count {
		t.Errorf("port %d counted %d transmit drops for %d frames its interface refused", port, drops, count)
	}
	// Which way they were refused: at the redirect, or after the socket
	// took them (the first frame of each new generation goes that way).
	var dump jsonDumpPorts
	r.d.xJSON(t, &dump, "dump-ports", r.br, b.name)
	if p := dump.Ports[0]; fastPathOff() && p.XSK.TxRefused < count || !fastPathOff() && p.XSK.TxRefused+p.FastPathTxDropped < count {
		t.Errorf("port %d: xsk tx_refused=%d, fastpath_tx_dropped=%d for %d refused frames", port, p.XSK.TxRefused, p.FastPathTxDropped, count)
	}
	// ARP and IPv6 chatter may pass.
	if tx > 5 {
		t.Errorf("port %d counted %d transmits during %d refused frames", port, tx, count)
	}
}
