package afxdp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/vishvananda/netlink"

	"github.com/xswitch/xswitch/port"
)

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": ModeAuto, "auto": ModeAuto, "zerocopy": ModeZeroCopy, "copy": ModeCopy, "generic": ModeGeneric} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseMode("native"); err == nil || !strings.Contains(err.Error(), `"native"`) {
		t.Errorf("ParseMode(native) error = %v, want one naming the mode", err)
	}
}

func TestConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "no interface"},
		{Config{Interface: "x", FrameSize: 1500}, "frame size 1500"},
		{Config{Interface: "x", FrameCount: 3}, "frame count 3"},
		{Config{Interface: "x", RingSize: 1000}, "ring size 1000 is not a power of two"},
		{Config{Interface: "x", RingSize: 512, FrameCount: 4096}, "smaller than the 2048 receive frames"},
		{Config{Interface: "x", TxBudget: 8}, "tx budget 8"},
		{Config{Interface: "x", Mode: "fast"}, `"fast"`},
		{Config{Interface: "x", Queues: -1}, "queue count -1"},
		{Config{Interface: "x", MaxFrameSize: 63}, "max frame size 63"},
		{Config{Interface: "x", MaxFrameSize: 17*4096 - 63}, "at most 17 UMEM frames"},
	} {
		_, err := Open(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%+v) error = %v, want one containing %q", tc.cfg, err, tc.want)
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	c, err := Config{Interface: "x"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Interface: "x", Mode: ModeAuto, FrameSize: 4096, FrameCount: 4096, RingSize: 2048, TxBudget: 256, MaxFrameSize: 9234}
	if c != want {
		t.Fatalf("defaults = %+v, want %+v", c, want)
	}
}

func TestOpenMissingInterface(t *testing.T) {
	_, err := Open(Config{Interface: "xtnosuch0"})
	if err == nil || !strings.Contains(err.Error(), `interface "xtnosuch0" does not exist`) {
		t.Fatalf("Open on a missing interface: error = %v", err)
	}
}

func TestOpenTooManyQueues(t *testing.T) {
	b := newTestbed(t)
	_, err := Open(Config{Interface: b.Host, Queues: 4})
	want := fmt.Sprintf("interface %q has 1 rx queue, 4 requested", b.Host)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open with 4 queues on a 1-queue veth: error = %v, want %q", err, want)
	}
	assertNothingAttached(t, b.Host)
}

func TestOpenModes(t *testing.T) {
	b := newTestbed(t)
	for _, tc := range []struct {
		mode Mode
		want port.Info
	}{
		// veth runs XDP natively but has no zero-copy support; copy mode
		// has multi-buffer on this kernel, whatever the driver.
		{ModeAuto, port.Info{Kind: "afxdp", XDPMode: "native", BindMode: "copy", Queues: 1, MultiBuffer: true, MaxFrame: 9234, MTU: 1500}},
		{ModeCopy, port.Info{Kind: "afxdp", XDPMode: "native", BindMode: "copy", Queues: 1, MultiBuffer: true, MaxFrame: 9234, MTU: 1500}},
		{ModeGeneric, port.Info{Kind: "afxdp", XDPMode: "generic", BindMode: "copy", Queues: 1, MultiBuffer: true, MaxFrame: 9234, MTU: 1500}},
	} {
		// Opening right after the previous Close also exercises the bind
		// retry while the kernel still holds the queue.
		p, err := Open(Config{Interface: b.Host, Mode: tc.mode})
		if err != nil {
			t.Fatalf("Open mode %s: %v", tc.mode, err)
		}
		tc.want.Ifindex = b.hostIndex(t)
		if got := p.Info(); got != tc.want {
			t.Errorf("mode %s: Info = %+v, want %+v", tc.mode, got, tc.want)
		}
		if err := p.Close(); err != nil {
			t.Fatalf("Close mode %s: %v", tc.mode, err)
		}
	}
	p, err := Open(Config{Interface: b.Host, Mode: ModeZeroCopy})
	if p != nil {
		t.Error("Open returned a port along with its error")
	}
	if err == nil || !strings.Contains(err.Error(), "zero-copy") {
		t.Fatalf("Open zerocopy on veth: error = %v, want a zero-copy bind failure", err)
	}
	t.Logf("zerocopy on veth: %v", err)
	assertNothingAttached(t, b.Host)
}

func TestReceiveARPFromNamespace(t *testing.T) {
	b := newTestbed(t)
	p := b.open(t, Config{})

	// The peer knows no MAC for .3, so pinging it sends ARP requests out
	// of the veth, into the XDP program and our socket.
	target := []byte{10, 213, 77, 3}
	ping := exec.Command("ip", "netns", "exec", b.NS, "ping", "-c", "3", "-i", "0.2", "-w", "3", "10.213.77.3")
	if err := ping.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = ping.Process.Kill()
		_ = ping.Wait()
	})

	isARPRequest := func(f []byte) bool {
		return len(f) >= 42 && bytes.Equal(f[6:12], b.PeerMAC) &&
			binary.BigEndian.Uint16(f[12:14]) == 0x0806 &&
			binary.BigEndian.Uint16(f[20:22]) == 1 && bytes.Equal(f[38:42], target)
	}
	if !receiveUntil(t, p, 5*time.Second, isARPRequest) {
		t.Fatal("no ARP request from the namespace arrived through Receive")
	}
}

func TestTransmitEchoRoundTrip(t *testing.T) {
	b := newTestbed(t)
	p := b.open(t, Config{})

	const id = 0x7a11
	req := b.echoRequest(t, id, 1, 56)
	if n := p.Transmit([][]byte{req}); n != 1 {
		t.Fatalf("Transmit accepted %d of 1", n)
	}
	if !receiveUntil(t, p, 5*time.Second, b.isEchoReply(id, 1)) {
		t.Fatalf("no echo reply came back (stats %+v)", p.Stats())
	}
	// The completion ring gives the tx frame back on the next Transmit.
	p.Transmit(nil)
	if got, want := len(p.txFree), cap(p.txFree); got != want {
		t.Errorf("free tx frames after completion = %d, want %d", got, want)
	}
}

func TestTransmitDropsOversizedFrames(t *testing.T) {
	b := newTestbed(t)
	// A port that carries one UMEM frame's worth binds without
	// multi-buffer and sends frames of one UMEM frame at most.
	p := b.open(t, Config{FrameSize: 2048, FrameCount: 64, RingSize: 64, TxBudget: 32, MaxFrameSize: 1792})
	if p.Info().MultiBuffer {
		t.Fatalf("a port of 1792-byte frames on 2048-byte UMEM frames bound with multi-buffer: %+v", p.Info())
	}
	big := make([]byte, 2049)
	ok := b.echoRequest(t, 9, 1, 56)
	if n := p.Transmit([][]byte{big, ok, big}); n != 1 {
		t.Fatalf("Transmit(big, ok, big) = %d, want 1", n)
	}
	if !receiveUntil(t, p, 5*time.Second, b.isEchoReply(9, 1)) {
		t.Fatal("the frame that fit was not sent")
	}
}

func TestTransmitMoreThanRingHolds(t *testing.T) {
	b := newTestbed(t)
	// 32 tx frames: a 100 frame Transmit must stop at 32 and return.
	p := b.open(t, Config{FrameSize: 2048, FrameCount: 64, RingSize: 32, TxBudget: 32})
	frames := make([][]byte, 100)
	for i := range frames {
		frames[i] = b.echoRequest(t, 5, uint16(i), 56)
	}
	done := make(chan int)
	go func() { done <- p.Transmit(frames) }()
	select {
	case n := <-done:
		if n != 32 {
			t.Fatalf("Transmit of 100 frames with 32 tx frames = %d, want 32", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Transmit blocked")
	}
	// Once the kernel completes them, the frames are reusable.
	var sent int
	deadline := time.Now().Add(5 * time.Second)
	for sent < len(frames) && time.Now().Before(deadline) {
		sent += p.Transmit(frames[sent:])
		time.Sleep(time.Millisecond)
	}
	if sent != len(frames) {
		t.Fatalf("sent %d of %d frames in total", sent, len(frames))
	}
}

func TestCloseLeavesNothing(t *testing.T) {
	b := newTestbed(t)
	p, err := Open(Config{Interface: b.Host})
	if err != nil {
		t.Fatal(err)
	}
	l, err := netlink.LinkByName(b.Host)
	if err != nil {
		t.Fatal(err)
	}
	if x := l.Attrs().Xdp; x == nil || !x.Attached {
		t.Fatalf("no XDP program on %s while the port is open", b.Host)
	}
	if !queueBusy(t, l.Attrs().Index, 0) {
		t.Fatalf("queue 0 of %s is free while the port is open", b.Host)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if st := p.Stats(); st != (port.Stats{}) {
		t.Errorf("Stats after Close = %+v, want zero", st)
	}
	assertNothingAttached(t, b.Host)
}

func TestMultiQueue(t *testing.T) {
	const queues = 4
	b := newMultiQueueTestbed(t, queues)
	p, err := Open(Config{Interface: b.Host, FrameCount: 256, RingSize: 128, TxBudget: 64})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if got := p.Info().Queues; got != queues {
		t.Fatalf("Info().Queues = %d, want %d", got, queues)
	}
	fds := map[int]bool{}
	for _, q := range p.RxQueues() {
		fds[q.Fd()] = true
	}
	if len(fds) != queues {
		t.Fatalf("%d distinct queue fds, want %d", len(fds), queues)
	}

	// The peer spreads flows over its tx queues by hash, each feeding the
	// rx queue of the same index here, so replies to many host addresses
	// should reach several queues.
	var requests [][]byte
	for i := range 64 {
		src := b.AltHostIPs[i%len(b.AltHostIPs)]
		requests = append(requests, b.echoRequestFrom(t, src, 0x100, uint16(i), 56))
	}
	if n := p.Transmit(requests); n != len(requests) {
		t.Fatalf("Transmit accepted %d of %d", n, len(requests))
	}
	frames := make([]port.Frame, 64)
	perQueue := make([]int, queues)
	replies := 0
	deadline := time.Now().Add(5 * time.Second)
	for replies < len(requests) && time.Now().Before(deadline) {
		for i, q := range p.RxQueues() {
			n := q.Receive(frames)
			for _, f := range frames[:n] {
				// IPv4 (no options) carrying ICMP (protocol 1) echo reply (type 0).
				if d := f.Data; len(d) > 34 && d[23] == 1 && d[34] == 0 {
					replies++
					perQueue[i]++
				}
			}
			q.Release(frames[:n])
		}
	}
	t.Logf("echo replies per queue: %v", perQueue)
	if replies != len(requests) {
		t.Fatalf("%d echo replies for %d requests", replies, len(requests))
	}
	busy := 0
	for _, n := range perQueue {
		if n > 0 {
			busy++
		}
	}
	if busy < 2 {
		t.Errorf("replies arrived on %d queue(s), want several", busy)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := netlink.LinkByName(b.Host)
	if err != nil {
		t.Fatal(err)
	}
	for q := range queues {
		deadline := time.Now().Add(2 * time.Second)
		for queueBusy(t, l.Attrs().Index, q) {
			if time.Now().After(deadline) {
				t.Fatalf("queue %d still held after Close", q)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func assertNothingAttached(t *testing.T, ifname string) {
	t.Helper()
	l, err := netlink.LinkByName(ifname)
	if err != nil {
		t.Fatal(err)
	}
	if x := l.Attrs().Xdp; x != nil && x.Attached {
		t.Errorf("XDP program %d still attached to %s", x.ProgId, ifname)
	}
	// Socket teardown is asynchronous in the kernel; give it a moment.
	deadline := time.Now().Add(2 * time.Second)
	for queueBusy(t, l.Attrs().Index, 0) {
		if time.Now().After(deadline) {
			t.Errorf("an AF_XDP socket still holds queue 0 of %s", ifname)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// echoRequest builds an ICMP echo request from the host side to the peer.
func (b *testbed) echoRequest(t testing.TB, id, seq uint16, payload int) []byte {
	t.Helper()
	return b.echoRequestFrom(t, b.HostIP, id, seq, payload)
}

func (b *testbed) echoRequestFrom(t testing.TB, src net.IP, id, seq uint16, payload int) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		&layers.Ethernet{SrcMAC: b.HostMAC, DstMAC: b.PeerMAC, EthernetType: layers.EthernetTypeIPv4},
		&layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolICMPv4, SrcIP: src, DstIP: b.PeerIP},
		&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(layers.ICMPv4TypeEchoRequest, 0), Id: id, Seq: seq},
		gopacket.Payload(make([]byte, payload)),
	)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// isEchoReply matches the peer's reply to echoRequest(id, seq).
func (b *testbed) isEchoReply(id, seq uint16) func([]byte) bool {
	return func(f []byte) bool {
		pkt := gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.NoCopy)
		ip, _ := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		icmp, _ := pkt.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4)
		return ip != nil && icmp != nil && ip.SrcIP.Equal(b.PeerIP) && ip.DstIP.Equal(b.HostIP) &&
			icmp.TypeCode.Type() == layers.ICMPv4TypeEchoReply && icmp.Id == id && icmp.Seq == seq
	}
}

func TestStatsCountKernelDrops(t *testing.T) {
	b := newTestbed(t)
	// 32 rx frames; the replies to 96 requests that nobody receives must
	// overflow them and show up in the kernel's counters.
	p := b.open(t, Config{FrameSize: 2048, FrameCount: 64, RingSize: 32, TxBudget: 32})

	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // Stats is documented safe from any goroutine.
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				p.Stats()
			}
		}
	}()
	var requests [][]byte
	for i := range 96 {
		requests = append(requests, b.echoRequest(t, 0x5a, uint16(i), 56))
	}
	sent := 0
	deadline := time.Now().Add(5 * time.Second)
	for sent < len(requests) && time.Now().Before(deadline) {
		sent += p.Transmit(requests[sent:])
	}
	close(stop)
	<-done
	if sent != len(requests) {
		t.Fatalf("sent %d of %d", sent, len(requests))
	}

	deadline = time.Now().Add(5 * time.Second)
	for {
		st := p.Stats()
		if st.RxDropped+st.RxRingFull+st.RxFillRingEmpty > 0 {
			t.Logf("stats: %+v", st)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no rx drops counted after overflowing the rx frames: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestBindChoices(t *testing.T) {
	zcMB, zc := bindChoice{zeroCopy: true, multiBuffer: true}, bindChoice{zeroCopy: true}
	copyMB, cp := bindChoice{multiBuffer: true}, bindChoice{}
	for _, tc := range []struct {
		mode                          Mode
		native, multiBuffer, mtuFits1 bool
		want                          []bindChoice
	}{
		// An MTU that fits one UMEM frame: zero-copy first, either way.
		{ModeAuto, true, true, true, []bindChoice{zcMB, zc, copyMB, cp}},
		// A jumbo MTU: carrying it beats zero-copy without multi-buffer.
		{ModeAuto, true, true, false, []bindChoice{zcMB, copyMB, zc, cp}},
		{ModeAuto, false, true, false, []bindChoice{copyMB, cp}},
		{ModeAuto, true, false, false, []bindChoice{zc, cp}},
		{ModeZeroCopy, true, true, false, []bindChoice{zcMB, zc}},
		{ModeCopy, true, true, true, []bindChoice{copyMB, cp}},
		{ModeGeneric, false, true, false, []bindChoice{copyMB, cp}},
		{ModeGeneric, false, false, true, []bindChoice{cp}},
	} {
		got := bindChoices(tc.mode, tc.native, tc.multiBuffer, tc.mtuFits1)
		if !slices.Equal(got, tc.want) {
			t.Errorf("bindChoices(%s, native %v, multi-buffer %v, MTU fits one frame %v) = %v, want %v",
				tc.mode, tc.native, tc.multiBuffer, tc.mtuFits1, got, tc.want)
		}
	}
}
