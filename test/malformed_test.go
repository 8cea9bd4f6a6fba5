package test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/header"
	"github.com/xswitch/xswitch/internal/netns"
	"github.com/xswitch/xswitch/internal/testenv"
)

// badFrames builds the frames the malformed-frame test sends: broken
// headers of every kind, from a real station's unicast source address, so
// that nothing but the headers gives them away.
type badFrames struct {
	rng              *rand.Rand
	src              net.HardwareAddr
	dsts             []net.HardwareAddr // broadcast, a real host, an unknown one
	srcIP, dstIP     [4]byte
	srcIPv6, dstIPv6 [16]byte
}

func (b *badFrames) eth(etherType uint16) []byte {
	f := make([]byte, 14, 128)
	copy(f[0:6], b.dsts[b.rng.IntN(len(b.dsts))])
	copy(f[6:12], b.src)
	binary.BigEndian.PutUint16(f[12:14], etherType)
	return f
}

// l4 returns an honest TCP, UDP or ICMP header with a little payload, and
// its IP protocol number.
func (b *badFrames) l4() (proto byte, header []byte) {
	switch b.rng.IntN(3) {
	case 0:
		h := make([]byte, 20)
		binary.BigEndian.PutUint16(h[0:2], uint16(1024+b.rng.IntN(60000)))
		binary.BigEndian.PutUint16(h[2:4], 80)
		h[12], h[13] = 5<<4, 0x02 // 20-byte header, SYN
		return 6, h
	case 1:
		h := make([]byte, 16)
		binary.BigEndian.PutUint16(h[0:2], uint16(1024+b.rng.IntN(60000)))
		binary.BigEndian.PutUint16(h[2:4], 53)
		binary.BigEndian.PutUint16(h[4:6], 16)
		return 17, h
	default:
		return 1, []byte{8, 0, 0, 0, 0, 1, 0, 1} // echo request
	}
}

// ipv6Proto is the IPv6 next header for an l4 protocol: ICMP becomes
// ICMPv6.
func ipv6Proto(proto byte) byte {
	if proto == header.ProtoICMP {
		return header.ProtoICMPv6
	}
	return proto
}

func (b *badFrames) ipv4(proto byte, payload []byte) []byte {
	h := header.IPv4(make([]byte, header.IPv4MinLen, header.IPv4MinLen+len(payload)))
	h.SetHeaderLen(header.IPv4MinLen)
	h.SetTTL(64)
	h.SetProtocol(proto)
	h.SetTotalLen(uint16(header.IPv4MinLen + len(payload)))
	h.SetSrc(b.srcIP)
	h.SetDst(b.dstIP)
	h.SetChecksum(h.ComputeChecksum())
	return append(h, payload...)
}

func (b *badFrames) ipv6(next byte, payload []byte) []byte {
	h := make([]byte, 40, 40+len(payload))
	h[0], h[6], h[7] = 0x60, next, 64
	binary.BigEndian.PutUint16(h[4:6], uint16(len(payload)))
	copy(h[8:24], b.srcIPv6[:])
	copy(h[24:40], b.dstIPv6[:])
	return append(h, payload...)
}

func (b *badFrames) arp() []byte {
	a := []byte{0, 1, 8, 0, 6, 4, 0, 1}
	a = append(a, b.src...)
	a = append(a, b.srcIP[:]...)
	a = append(a, 0, 0, 0, 0, 0, 0)
	return append(a, b.dstIP[:]...)
}

// honest returns a well-formed frame: IPv4, IPv6 or ARP.
func (b *badFrames) honest() []byte {
	switch b.rng.IntN(3) {
	case 0:
		proto, l4 := b.l4()
		return append(b.eth(flow.EtherTypeIPv4), b.ipv4(proto, l4)...)
	case 1:
		proto, l4 := b.l4()
		if proto == 1 {
			l4[0] = 128 // ICMPv6 echo request
		}
		return append(b.eth(flow.EtherTypeIPv6), b.ipv6(ipv6Proto(proto), l4)...)
	default:
		return append(b.eth(flow.EtherTypeARP), b.arp()...)
	}
}

// The kinds of frames sent, each a function of the generator.
var badFrameKinds = []struct {
	name string
	make func(b *badFrames) []byte
}{
	{"truncated header", func(b *badFrames) []byte {
		f := b.honest()
		return f[:14+b.rng.IntN(len(f)-14)] // ends anywhere from after the Ethernet header on
	}},
	{"cut-off L4 header", func(b *badFrames) []byte {
		// IP is intact and agrees with the frame's length; the L4 header
		// ends early, or ARP stops mid-address.
		if b.rng.IntN(4) == 0 {
			return append(b.eth(flow.EtherTypeARP), b.arp()[:8+b.rng.IntN(20)]...)
		}
		proto, l4 := b.l4()
		l4 = l4[:b.rng.IntN(min(len(l4), 8))]
		if b.rng.IntN(2) == 0 {
			return append(b.eth(flow.EtherTypeIPv4), b.ipv4(proto, l4)...)
		}
		return append(b.eth(flow.EtherTypeIPv6), b.ipv6(ipv6Proto(proto), l4)...)
	}},
	{"lying IPv4 IHL", func(b *badFrames) []byte {
		proto, l4 := b.l4()
		f := append(b.eth(flow.EtherTypeIPv4), b.ipv4(proto, l4)...)
		ihl := b.rng.IntN(5) // too small
		if b.rng.IntN(2) == 0 {
			ihl = 6 + b.rng.IntN(10) // past the header, into or beyond L4
		}
		f[14] = 0x40 | byte(ihl)
		return f
	}},
	{"lying IPv4 total length", func(b *badFrames) []byte {
		proto, l4 := b.l4()
		f := append(b.eth(flow.EtherTypeIPv4), b.ipv4(proto, l4)...)
		total := 1 + b.rng.IntN(19) // shorter than a header
		if b.rng.IntN(2) == 0 {
			total = len(f) - 14 + 1 + b.rng.IntN(1400) // longer than the frame
		}
		binary.BigEndian.PutUint16(f[16:18], uint16(total))
		return f
	}},
	{"lying IPv6 payload length", func(b *badFrames) []byte {
		_, l4 := b.l4()
		f := append(b.eth(flow.EtherTypeIPv6), b.ipv6(17, l4)...)
		binary.BigEndian.PutUint16(f[18:20], uint16(len(l4)+1+b.rng.IntN(1400)))
		return f
	}},
	// As many tags as the key looks through (flow.MaxVLANTags): behind
	// more, the frame is no IP frame to it, and well formed.
	{"stacked VLAN tags", func(b *badFrames) []byte {
		f := b.eth(flow.EtherTypeVLAN)
		tags := 1 + b.rng.IntN(flow.MaxVLANTags)
		for i := range tags {
			next := uint16(flow.EtherTypeVLAN)
			if i == tags-1 {
				next = flow.EtherTypeIPv4
			}
			f = binary.BigEndian.AppendUint16(f, uint16(1+b.rng.IntN(4094)))
			f = binary.BigEndian.AppendUint16(f, next)
		}
		proto, l4 := b.l4()
		f = append(f, b.ipv4(proto, l4)...)
		// Mostly cut inside the tags or the headers behind them.
		if b.rng.IntN(4) != 0 {
			f = f[:14+b.rng.IntN(len(f)-14)]
		}
		return f
	}},
	{"random bytes after an IP, ARP or VLAN EtherType", func(b *badFrames) []byte {
		types := []uint16{flow.EtherTypeIPv4, flow.EtherTypeIPv6, flow.EtherTypeARP, flow.EtherTypeVLAN}
		f := b.eth(types[b.rng.IntN(len(types))])
		for range b.rng.IntN(120) {
			f = append(f, byte(b.rng.Uint32()))
		}
		return f
	}},
	{"random EtherType and bytes", func(b *badFrames) []byte {
		var typ uint16
		for {
			typ = uint16(b.rng.Uint32())
			if typ != header.EtherTypeIPv4 && typ != header.EtherTypeIPv6 && typ != header.EtherTypeARP &&
				!header.IsTPID(typ) && typ >= header.MinEtherType {
				break
			}
		}
		f := b.eth(typ)
		for range b.rng.IntN(200) {
			f = append(f, byte(b.rng.Uint32()))
		}
		return f
	}},
}

// switchRejects tells whether the forwarder counts frame as an rx error:
// too short, a multicast source, or headers the flow key extraction
// calls malformed.
func switchRejects(ex *flow.Extractor, frame []byte) bool {
	var k flow.Key
	return len(frame) < 14 || frame[6]&1 != 0 || !ex.Extract(frame, 3, &k)
}

// packetSocket opens an AF_PACKET socket on dev inside namespace ns; it
// sends only, and stays in ns.
func packetSocket(t *testing.T, ns, dev string) (fd int, to *unix.SockaddrLinklayer) {
	t.Helper()
	err := netns.Do(ns, func() error {
		ifc, err := net.InterfaceByName(dev)
		if err != nil {
			return err
		}
		// Protocol 0: the socket receives nothing.
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("AF_PACKET socket: %w", err)
		}
		to = &unix.SockaddrLinklayer{Ifindex: ifc.Index, Halen: 6}
		return nil
	})
	if err != nil {
		t.Fatalf("packet socket on %s in %s: %v", dev, ns, err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd, to
}

// floodResult is what sending the bad frames did.
type floodResult struct {
	sent, unsent int
	elapsed      time.Duration
}

// sendPaced sends frames in bursts of burst, one burst a millisecond, so
// that the flood tests the headers, not the rings; a send the kernel
// refuses for want of buffers is retried a few times.
func sendPaced(fd int, to *unix.SockaddrLinklayer, frames [][]byte, burst int) floodResult {
	var r floodResult
	begin := time.Now()
	for i, f := range frames {
		if i%burst == 0 && i > 0 {
			time.Sleep(time.Millisecond)
		}
		if err := retryNoBuffers(func() error { return unix.Sendto(fd, f, 0, to) }); err != nil {
			r.unsent++
			continue
		}
		r.sent++
	}
	r.elapsed = time.Since(begin)
	return r
}

// retryNoBuffers calls send again, a few times a millisecond apart, while
// the kernel refuses it for want of buffers: a burst filled the device's
// queue faster than the switch takes it.
func retryNoBuffers(send func() error) error {
	err := send()
	for try := 0; try < 20 && (errors.Is(err, unix.ENOBUFS) || errors.Is(err, unix.EAGAIN)); try++ {
		time.Sleep(time.Millisecond)
		err = send()
	}
	return err
}

var icmpSeq = regexp.MustCompile(`icmp_seq=(\d+)`)

// TestMalformedFramesAreCountedAndHarmless sends 30,000 broken frames from
// one namespace while two others ping and move data over TCP, and checks
// that the daemon keeps working, the good traffic is undisturbed, and the
// broken frames show as rx errors of the port they came in by.
func TestMalformedFramesAreCountedAndHarmless(t *testing.T) {
	testenv.RequireRoot(t)
	r := newRig(t, 3)
	d, n, br, a, b, sender := r.d, r.n, r.br, r.hosts[0], r.hosts[1], r.hosts[2]
	waitPing(t, sender.ns, a.addr, 5*time.Second)
	nums := ofports(t, d, br)

	seed := rand.Uint64()
	t.Logf("frame seed %d", seed)
	src, _ := net.ParseMAC(nsMAC(t, sender.ns, "eth0"))
	hostA, _ := net.ParseMAC(nsMAC(t, a.ns, "eth0"))
	gen := &badFrames{
		rng:  rand.New(rand.NewPCG(seed, 1)),
		src:  src,
		dsts: []net.HardwareAddr{{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, hostA, {0x02, 0, 0, 0, 0xbe, 0xef}},
	}
	copy(gen.srcIP[:], net.ParseIP(sender.addr).To4())
	copy(gen.dstIP[:], net.ParseIP(a.addr).To4())
	copy(gen.srcIPv6[:], net.ParseIP(n.ipv6(3)))
	copy(gen.dstIPv6[:], net.ParseIP(n.ipv6(1)))

	const total = 30000
	ex := flow.NewExtractor()
	frames := make([][]byte, 0, total)
	perKind := make([]struct{ sent, rejected int }, len(badFrameKinds))
	var rejected, wellFormed int
	for i := range total {
		kind := i % len(badFrameKinds)
		f := badFrameKinds[kind].make(gen)
		frames = append(frames, f)
		perKind[kind].sent++
		if switchRejects(ex, f) {
			perKind[kind].rejected++
			rejected++
		} else {
			wellFormed++
		}
	}
	gen.rng.Shuffle(len(frames), func(i, j int) { frames[i], frames[j] = frames[j], frames[i] })
	for i, k := range badFrameKinds {
		t.Logf("%-50s %5d frames, %5d malformed by the extractor's standard", k.name, perKind[i].sent, perKind[i].rejected)
	}
	if rejected < total*3/4 {
		t.Fatalf("only %d of %d frames are malformed by the extractor's standard: the generator is off", rejected, total)
	}

	fd, to := packetSocket(t, sender.ns, "eth0")
	before := rxCountersOf(t, d, br)

	// Good traffic: a ping stream from a to b all along, and TCP transfers
	// while the flood lasts.
	const pings = 200
	stream := startBackground(t, "ip", "netns", "exec", a.ns, "ping", "-n", "-c", strconv.Itoa(pings), "-i", "0.02", "-W", "1", b.addr)
	flooded := make(chan floodResult, 1)
	go func() { flooded <- sendPaced(fd, to, frames, 32) }()
	var flood floodResult
	transfers := 0
	for done := false; !done; {
		transferTCP(t, a.ns, b.ns, b.addr, b.addr, 4<<20)
		transfers++
		select {
		case flood = <-flooded:
			done = true
		default:
		}
	}
	out := stream.wait(t, 30*time.Second)

	if !d.running() {
		t.Fatalf("the daemon died under the flood:\n%s", d.log())
	}
	after := rxCountersOf(t, d, br)
	in, pa, pb := nums[sender.name], nums[a.name], nums[b.name]
	errs := after[in].errs - before[in].errs
	rx := after[in].pkts - before[in].pkts
	drops := after[in].drop - before[in].drop
	lost := max(0, flood.sent-int(rx)) // frames the kernel lost on the way, if any
	replies := len(icmpSeq.FindAllString(out, -1))
	t.Logf("sent %d frames (%d refused by the kernel) in %v: %d malformed, %d well-formed L2",
		flood.sent, flood.unsent, flood.elapsed.Round(time.Millisecond), rejected, wellFormed)
	t.Logf("port %d (sender): rx pkts +%d, errs +%d, drop +%d; ports %d and %d: errs +%d, +%d",
		in, rx, errs, drops, pa, pb, after[pa].errs-before[pa].errs, after[pb].errs-before[pb].errs)
	t.Logf("meanwhile: %d of %d echo replies, %d TCP transfers of 4 MiB intact", replies, pings, transfers)

	if flood.unsent > total/100 {
		t.Errorf("the kernel refused %d of %d frames: the flood did not happen as planned", flood.unsent, total)
	}
	if lost > flood.sent/20 {
		t.Errorf("%d of %d frames never reached the switch (rx pkts +%d): the test measures little", lost, flood.sent, rx)
	}
	if int(errs) > rejected || int(errs) < rejected-lost-flood.unsent {
		t.Errorf("port %d counted %d rx errors for %d malformed frames sent (%d lost on the way)", in, errs, rejected, lost)
	}
	if int(rx)-int(errs) < wellFormed-lost {
		t.Errorf("port %d received %d frames past the errors, want the %d well-formed ones", in, int(rx)-int(errs), wellFormed)
	}
	if after[pa].errs != before[pa].errs || after[pb].errs != before[pb].errs {
		t.Errorf("rx errors on the ports that carried only good traffic: %d and %d", after[pa].errs-before[pa].errs, after[pb].errs-before[pb].errs)
	}
	if replies < pings-1 {
		t.Errorf("the ping stream from %s to %s got %d of %d replies during the flood:\n%s", a.ns, b.ns, replies, pings, out)
	}
	if strings.Contains(d.log(), "panic") {
		t.Errorf("the daemon log mentions a panic")
	}
	// The daemon still does all it did.
	requirePing(t, sender.ns, b.addr, 56)
	d.x(t, "add-flow", br, "priority=9,arp,actions=NORMAL")
	requirePing(t, a.ns, b.addr, 1400)
}
