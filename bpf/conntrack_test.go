package bpf

import (
	"encoding/binary"
	"errors"
	"net"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// What FP_OP_CONNTRACK does with the frames no TCP window decides: the
// conntrack package's tests (datapath/conntrack_test.go) hold the
// program's TCP windows against the tracker's.

const (
	ctHandle   = 0x0000002a_00000007 // a generation and a slot, as the tracker's handles are
	ipProtoTCP = 6
	ipProtoUDP = 17
)

// A connection's ends: 10.0.0.1:40000 (the client, the original
// direction's sender) and 10.0.0.2:80.
var ctMACs = [2]net.HardwareAddr{{2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 2}}
var ctIPs = [2]net.IP{{10, 0, 0, 1}, {10, 0, 0, 2}}
var ctPorts = [2]uint16{40000, 80}

// ctFrame is a frame of the connection going the reply way if reply,
// with l4 (a *layers.TCP or *layers.UDP, whose ports it sets) over ip
// (whose addresses and protocol it sets), and payload.
func ctFrame(tb testing.TB, reply bool, ip *layers.IPv4, l4 gopacket.SerializableLayer, payload int) []byte {
	tb.Helper()
	s, d := 0, 1
	if reply {
		s, d = 1, 0
	}
	ip.Version, ip.TTL, ip.SrcIP, ip.DstIP = 4, 64, ctIPs[s], ctIPs[d]
	switch l := l4.(type) {
	case *layers.TCP:
		ip.Protocol = layers.IPProtocolTCP
		l.SrcPort, l.DstPort = layers.TCPPort(ctPorts[s]), layers.TCPPort(ctPorts[d])
		l.SetNetworkLayerForChecksum(ip)
	case *layers.UDP:
		ip.Protocol = layers.IPProtocolUDP
		l.SrcPort, l.DstPort = layers.UDPPort(ctPorts[s]), layers.UDPPort(ctPorts[d])
		l.SetNetworkLayerForChecksum(ip)
	}
	return serialize(tb, &layers.Ethernet{SrcMAC: ctMACs[s], DstMAC: ctMACs[d], EthernetType: layers.EthernetTypeIPv4},
		ip, l4, gopacket.Payload(make([]byte, payload)))
}

func udpFrame(tb testing.TB, reply bool, payload int) []byte {
	return ctFrame(tb, reply, &layers.IPv4{}, &layers.UDP{}, payload)
}

// tcpFrame is a segment of the connection with flags, seq and ack (the
// client's data starts at 1000, the server's at 5000), a window of
// 65535 and payload bytes.
func tcpFrame(tb testing.TB, reply bool, flags uint8, seq, ack uint32, payload int) []byte {
	l := &layers.TCP{Seq: seq, Ack: ack, Window: 65535, FIN: flags&0x01 != 0, SYN: flags&0x02 != 0, RST: flags&0x04 != 0,
		PSH: flags&0x08 != 0, ACK: flags&0x10 != 0}
	return ctFrame(tb, reply, &layers.IPv4{}, l, payload)
}

const (
	tcpAck    = 0x10
	tcpPshAck = 0x18
)

// udpConn and tcpConn are a connection's state as user space puts it in:
// established, expiring in an hour, with an hour's timeout; the TCP ends'
// windows a window (65535 bytes, unscaled) past where each is, with
// sequence checking on.
func udpConn(tb testing.TB) FastpathFpConn {
	return FastpathFpConn{Proto: ipProtoUDP, Expires: monotonicNow(tb) + hour, Timeout: hour}
}

func tcpConn(tb testing.TB) FastpathFpConn {
	c := FastpathFpConn{Proto: ipProtoTCP, SeqCheck: 1, Expires: monotonicNow(tb) + hour, Timeout: hour}
	c.Dir[0] = FastpathFpConnDir{SeqLo: 1000, SeqHi: 1000 + 65535, MaxWin: 65535}
	c.Dir[1] = FastpathFpConnDir{SeqLo: 5000, SeqHi: 5000 + 65535, MaxWin: 65535}
	return c
}

func (r *runBridge) putConn(tb testing.TB, c FastpathFpConn) {
	tb.Helper()
	if err := r.shared.CtConns.Update(uint64(ctHandle), &c, ebpf.UpdateLock); err != nil {
		tb.Fatal(err)
	}
}

func (r *runBridge) conn(tb testing.TB) FastpathFpConn {
	tb.Helper()
	var c FastpathFpConn
	if err := r.shared.CtConns.LookupWithFlags(uint64(ctHandle), &c, ebpf.LookupLock); err != nil {
		tb.Fatal(err)
	}
	return c
}

// ctBridge is a bridge whose port sends every frame in frames, with the
// connection's operation for its direction (reply) first, then ops, to
// the loopback (slot 1).
func ctBridge(tb testing.TB, frames map[bool][][]byte, ops ...FastpathFpOp) *runBridge {
	tb.Helper()
	r := loadRunBridge(tb)
	if err := r.shared.TxPorts.Put(uint32(1), uint32(1)); err != nil {
		tb.Fatal(err)
	}
	for reply, fs := range frames {
		for _, f := range fs {
			r.install(tb, f, *withOps(FastpathFpFlow{Out: 1}, append([]FastpathFpOp{ConntrackOp(ctHandle, reply, false)}, ops...)...))
		}
	}
	return r
}

// carry runs frame through the program, and reports whether the program
// carried it (XDP_REDIRECT) or gave it to user space (XDP_PASS: the test
// port has no socket).
func (r *runBridge) carry(tb testing.TB, frame []byte) bool {
	tb.Helper()
	ret, err := r.objs.Fastpath.Run(&ebpf.RunOptions{Data: frame})
	if err != nil {
		tb.Fatal(err)
	}
	if ret != xdpRedirect && ret != xdpPass {
		tb.Fatalf("action %d: neither carried nor given to user space", ret)
	}
	return ret == xdpRedirect
}

// packets is how many frames the entry of frame carried, on every CPU.
func (r *runBridge) packets(tb testing.TB, frame []byte) uint64 {
	tb.Helper()
	var perCPU []FastpathFpFlow
	if err := r.shared.Flows.Lookup(runKey(tb, frame), &perCPU); err != nil {
		tb.Fatal(err)
	}
	var n uint64
	for _, f := range perCPU {
		n += f.Packets
	}
	return n
}

// A frame whose connection is not in ct_conns goes to user space as it
// came, the entry not counting it; once user space puts the connection
// in, the program carries its frames, and when user space takes it out,
// no longer.
func TestConntrackWithoutTheConnection(t *testing.T) {
	fr := udpFrame(t, false, 10)
	r := ctBridge(t, map[bool][][]byte{false: {fr}})
	out := make([]byte, len(fr))
	ret, err := r.objs.Fastpath.Run(&ebpf.RunOptions{Data: fr, DataOut: out})
	if err != nil || ret != xdpPass {
		t.Fatalf("action %d (%v), want XDP_PASS", ret, err)
	}
	if string(out) != string(fr) {
		t.Errorf("the frame went to user space changed:\n%x\nwas\n%x", out, fr)
	}
	if n := r.packets(t, fr); n != 0 {
		t.Errorf("the entry counted %d frames given to user space", n)
	}
	r.putConn(t, udpConn(t))
	if !r.carry(t, fr) {
		t.Fatal("the connection put in, its frame went to user space")
	}
	if n := r.packets(t, fr); n != 1 {
		t.Errorf("the entry counted %d frames, want 1", n)
	}
	if err := r.shared.CtConns.Delete(uint64(ctHandle)); err != nil {
		t.Fatal(err)
	}
	if r.carry(t, fr) {
		t.Error("the connection taken out, the program carried its frame")
	}
}

// A UDP connection's frames count in their direction, and move its
// expiry on: the frames and bytes, and when the last came (by the
// program's coarse clock), from which the timeout runs.
func TestConntrackCountsUDP(t *testing.T) {
	orig, reply := udpFrame(t, false, 10), udpFrame(t, true, 300)
	r := ctBridge(t, map[bool][][]byte{false: {orig}, true: {reply}})
	put := udpConn(t)
	r.putConn(t, put)
	var before, after [2]uint64
	for i, back := range []bool{false, true, false, false, true} {
		fr, d := orig, 0
		if back {
			fr, d = reply, 1
		}
		before[d] = monotonicNow(t)
		if !r.carry(t, fr) {
			t.Fatalf("frame %d went to user space", i)
		}
		after[d] = monotonicNow(t)
	}
	c := r.conn(t)
	want := [2]FastpathFpConnDir{{Packets: 3, Bytes: 3 * uint64(len(orig))}, {Packets: 2, Bytes: 2 * uint64(len(reply))}}
	for d := range c.Dir {
		got := c.Dir[d]
		if got.LastSeen < before[d]-uint64(CoarseClockLag) || got.LastSeen > after[d] {
			t.Errorf("direction %d last seen at now%+d, not during its last frame (by the coarse clock)", d, int64(got.LastSeen-before[d]))
		}
		got.LastSeen = 0
		if got != want[d] {
			t.Errorf("direction %d: %+v, want %+v", d, got, want[d])
		}
	}
	// The timer only moves on: put armed it by the precise clock.
	if last := max(c.Dir[0].LastSeen, c.Dir[1].LastSeen); c.Expires != max(put.Expires, last+put.Timeout) {
		t.Errorf("expires %d after the last frame, want the timeout, %d (or as put, %d after)", c.Expires-last, put.Timeout, put.Expires-last)
	}
	if c.Proto != put.Proto || c.Timeout != put.Timeout {
		t.Errorf("the program changed the connection's protocol or timeout: %+v", c)
	}
}

// What the tracker would not call +est goes to user space, and changes
// nothing of the connection: a connection past its time; a frame of
// another protocol than the connection's, an IPv4 fragment, a UDP length
// that does not fit (the tracker calls it malformed); a TCP segment that
// may change the connection's state (SYN, FIN, RST) or has invalid flags
// (no ACK).
func TestConntrackLeavesToUserSpace(t *testing.T) {
	for _, c := range []struct {
		name  string
		conn  func(tb testing.TB) FastpathFpConn
		frame []byte
	}{
		{"past its time", func(tb testing.TB) FastpathFpConn {
			// By more than the tick the program's coarse clock may lag.
			c := udpConn(tb)
			c.Expires = monotonicNow(tb) - uint64(CoarseClockLag)
			return c
		}, udpFrame(t, false, 10)},
		{"TCP over a UDP connection", udpConn, tcpFrame(t, false, tcpAck, 1000, 5000, 0)},
		{"UDP over a TCP connection", tcpConn, udpFrame(t, false, 10)},
		{"first fragment", udpConn, ctFrame(t, false, &layers.IPv4{Flags: layers.IPv4MoreFragments}, &layers.UDP{}, 10)},
		{"UDP length 0", udpConn, withUDPLength(udpFrame(t, false, 10), 0)},
		{"UDP length past the packet", udpConn, withUDPLength(udpFrame(t, false, 10), 8+10+1)},
		{"SYN", tcpConn, tcpFrame(t, false, 0x02, 1000, 0, 0)},
		{"SYN-ACK", tcpConn, tcpFrame(t, false, 0x12, 1000, 5000, 0)},
		{"FIN-ACK", tcpConn, tcpFrame(t, false, 0x11, 1000, 5000, 0)},
		{"RST at the edge", tcpConn, tcpFrame(t, false, 0x04, 1000, 0, 0)},
		{"RST-ACK at the edge", tcpConn, tcpFrame(t, false, 0x14, 1000, 5000, 0)},
		{"PSH without ACK", tcpConn, tcpFrame(t, false, 0x08, 1000, 0, 10)},
		{"no flags", tcpConn, tcpFrame(t, false, 0, 1000, 0, 10)},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := ctBridge(t, map[bool][][]byte{false: {c.frame}})
			put := c.conn(t)
			r.putConn(t, put)
			if r.carry(t, c.frame) {
				t.Fatal("the program carried it")
			}
			if got := r.conn(t); got != put {
				t.Errorf("the connection changed:\n%+v\nwas\n%+v", got, put)
			}
		})
	}
}

// withUDPLength is frame, a UDP datagram over IPv4, with the UDP length
// n.
func withUDPLength(frame []byte, n uint16) []byte {
	binary.BigEndian.PutUint16(frame[14+20+4:], n)
	return frame
}

// The parser reads the frames TestConntrackLeavesToUserSpace gives the
// operation: else the test would not reach it. (A UDP length of 0 is a
// jumbogram's to the parser, malformed to the tracker.)
func TestConntrackLeavesToUserSpaceAfterTheParser(t *testing.T) {
	p := loadParser(t)
	for _, fr := range [][]byte{withUDPLength(udpFrame(t, false, 10), 0), withUDPLength(udpFrame(t, false, 10), 8+10+1),
		ctFrame(t, false, &layers.IPv4{Flags: layers.IPv4MoreFragments}, &layers.UDP{}, 10)} {
		if _, ok := p.parse(t, fr); !ok {
			t.Errorf("the parser gave up on %x", fr)
		}
	}
}

// Out of its window, a segment goes to user space with sequence checking
// on, and is carried with it off, moving the windows on as in window.
func TestConntrackSeqCheck(t *testing.T) {
	const far = 1000 + 200000 // past the client's window
	fr := tcpFrame(t, false, tcpPshAck, far, 5000, 100)
	for _, check := range []uint8{1, 0} {
		r := ctBridge(t, map[bool][][]byte{false: {fr}})
		put := tcpConn(t)
		put.SeqCheck = check
		r.putConn(t, put)
		if carried := r.carry(t, fr); carried != (check == 0) {
			t.Fatalf("sequence checking %d: carried %v", check, carried)
		}
		got := r.conn(t)
		if check == 1 {
			if got != put {
				t.Errorf("out of window, the connection changed:\n%+v\nwas\n%+v", got, put)
			}
			continue
		}
		// tcpAdvance: the sender's edge moves to the segment's end, the
		// receiver may send a window past the ack.
		if got.Dir[0].SeqLo != far+100 || got.Dir[1].SeqHi != 5000+65535 || got.Dir[0].SeqHi != put.Dir[0].SeqHi {
			t.Errorf("after the segment: %+v", got.Dir)
		}
	}
}

// The connection's operation comes before the meter: a frame it gives to
// user space has not been metered (user space meters it), one it carries
// has.
func TestConntrackBeforeTheMeter(t *testing.T) {
	inWindow, outOfWindow := tcpFrame(t, false, tcpPshAck, 1000, 5000, 10), tcpFrame(t, false, tcpPshAck, 900000, 5000, 10)
	r := ctBridge(t, map[bool][][]byte{false: {inWindow, outOfWindow}},
		FastpathFpOp{Type: uint8(FastpathFpOpTypeFP_OP_METER), Tunnel: meterSlot, Delta: meterID, Len: 4})
	r.putConn(t, tcpConn(t))
	m := &r.shared.MeterSlots()[meterSlot]
	*m = FastpathFpMeter{Id: meterID, Pktps: 1, N_bands: 1}
	m.Bands[0] = FastpathFpBand{Type: uint8(FastpathFpBandTypeFP_BAND_DROP), Rate: 1, Tat: monotonicNow(t) + hour}
	if ret, err := r.objs.Fastpath.Run(&ebpf.RunOptions{Data: outOfWindow}); err != nil || ret != xdpPass {
		t.Fatalf("out of window: action %d (%v), want XDP_PASS", ret, err)
	}
	if c := r.meterCounts(t); c.Packets != 0 {
		t.Errorf("the meter counted %d frames given to user space", c.Packets)
	}
	if ret, err := r.objs.Fastpath.Run(&ebpf.RunOptions{Data: inWindow}); err != nil || ret != xdpDrop {
		t.Fatalf("in window, over the meter's rate: action %d (%v), want XDP_DROP", ret, err)
	}
	if c := r.meterCounts(t); c.Packets != 1 || c.BandPackets[0] != 1 {
		t.Errorf("the meter counted %d frames, its band %d; want 1, 1", c.Packets, c.BandPackets[0])
	}
}

// ct_conns holds DefaultMaxConns connections, or as many as the bridge
// asks, and refuses more.
func TestConntrackMapSize(t *testing.T) {
	spec, err := LoadFastpath()
	if err != nil {
		t.Fatal(err)
	}
	if n := spec.Maps[FastpathMapCtConns].MaxEntries; n != DefaultMaxConns {
		t.Errorf("ct_conns holds %d connections, DefaultMaxConns says %d", n, DefaultMaxConns)
	}
	loadRunBridge(t) // root, or skip
	s, err := NewFastpathShared(2)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := udpConn(t)
	for h := uint64(1); h <= 2; h++ {
		if err := s.CtConns.Update(h, &c, ebpf.UpdateLock); err != nil {
			t.Fatalf("connection %d: %v", h, err)
		}
	}
	if err := s.CtConns.Update(uint64(3), &c, ebpf.UpdateLock); err == nil {
		t.Error("a third connection went into a map of 2")
	}
}

// BenchmarkFastpathConntrack is the cost per frame under BPF_PROG_RUN of
// the connection's operation (ns/frame): a TCP segment in window (the
// same segment each time: after the first, a retransmission, judged and
// counted all the same) and a UDP datagram, each beside the same frame
// through an entry without the operation; all are dropped by their
// entries, as BenchmarkFastpathRun's.
func BenchmarkFastpathConntrack(b *testing.B) {
	tcp, udp := tcpFrame(b, false, tcpPshAck, 1000, 5000, 18), udpFrame(b, false, 18)
	ct := ConntrackOp(ctHandle, false, false)
	for _, c := range []struct {
		name  string
		frame []byte
		conn  func(tb testing.TB) FastpathFpConn
	}{
		{"tcp/drop", tcp, nil},
		{"tcp/conntrack+drop", tcp, tcpConn},
		{"udp/drop", udp, nil},
		{"udp/conntrack+drop", udp, udpConn},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := loadRunBridge(b)
			entry := FastpathFpFlow{Out: FPDrop}
			if c.conn != nil {
				entry = *withOps(entry, ct)
				r.putConn(b, c.conn(b))
			}
			r.install(b, c.frame, entry)
			b.ResetTimer()
			ret, perFrame, err := r.objs.Fastpath.Benchmark(c.frame, b.N, nil)
			if err != nil {
				b.Fatal(err)
			}
			if ret != xdpDrop {
				b.Fatalf("action %d, want XDP_DROP", ret)
			}
			b.ReportMetric(float64(perFrame), "ns/frame")
			if c.conn != nil {
				if got := r.conn(b); got.Dir[0].Packets != uint64(b.N) {
					b.Fatalf("the connection counted %d frames of %d", got.Dir[0].Packets, b.N)
				}
			}
		})
	}
}

// Programs on several CPUs judging one connection's frames at once take
// its lock in turn: no count is lost.
func TestConntrackCountsUnderContention(t *testing.T) {
	fr := udpFrame(t, false, 10)
	r := ctBridge(t, map[bool][][]byte{false: {fr}})
	r.putConn(t, udpConn(t))
	const runs, each = 4, 100000
	errs := make(chan error, runs)
	for range runs {
		go func() {
			_, _, err := r.objs.Fastpath.Benchmark(fr, each, nil)
			errs <- err
		}()
	}
	for range runs {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if c := r.conn(t).Dir[0]; c.Packets != runs*each || c.Bytes != runs*each*uint64(len(fr)) {
		t.Errorf("counted %d frames, %d bytes; want %d, %d", c.Packets, c.Bytes, runs*each, runs*each*len(fr))
	}
}

// User space takes a connection back while programs on other CPUs judge
// its frames: every frame a program carried is counted in what user space
// took (or in the connection it put back, taken at the end), none moved a
// connection user space had already copied (cttake.c).
func TestTakeConnLosesNoFrame(t *testing.T) {
	fr := udpFrame(t, false, 10)
	r := ctBridge(t, map[bool][][]byte{false: {fr}})
	r.putConn(t, udpConn(t))
	const runs = 100000
	carried := make(chan uint64)
	go func() {
		var n uint64
		for range runs {
			if ret, err := r.objs.Fastpath.Run(&ebpf.RunOptions{Data: fr}); err == nil && ret == xdpRedirect {
				n++
			}
		}
		carried <- n
	}()
	var c FastpathFpConn
	takes := 0
	for {
		select {
		case n := <-carried:
			if err := r.shared.TakeConn(uint64(ctHandle), &c); err != nil {
				t.Fatal(err)
			}
			if c.Dir[0].Packets != n {
				t.Errorf("the programs carried %d frames, user space took the connection %d times and found %d", n, takes, c.Dir[0].Packets)
			}
			return
		default:
		}
		if err := r.shared.TakeConn(uint64(ctHandle), &c); err != nil {
			t.Fatal(err)
		}
		takes++
		r.putConn(t, c)
	}
}

// MergeConn keeps the later edge (modulo 2^32), the larger window and the
// later expiry of the programs' and user space's, and the programs'
// counts; a connection ct_conns does not hold is ErrKeyNotExist.
func TestMergeConn(t *testing.T) {
	fr := udpFrame(t, false, 10)
	r := ctBridge(t, map[bool][][]byte{false: {fr}})
	c := tcpConn(t)
	c.Dir[0].SeqLo, c.Dir[0].MaxWin = 0xfffffff0, 1000
	c.Dir[0].Packets = 3
	r.putConn(t, c)
	add := c
	add.Expires -= 1000
	add.Dir[0].SeqLo, add.Dir[0].SeqHi, add.Dir[0].MaxWin, add.Dir[0].Packets = 0x10, c.Dir[0].SeqHi-5, c.Dir[0].MaxWin+1, 0
	add.Dir[1].SeqHi = c.Dir[1].SeqHi + 7
	if err := r.shared.MergeConn(uint64(ctHandle), &add); err != nil {
		t.Fatal(err)
	}
	want := c
	want.Dir[0].SeqLo, want.Dir[0].MaxWin, want.Dir[1].SeqHi = 0x10, c.Dir[0].MaxWin+1, c.Dir[1].SeqHi+7
	if got := r.conn(t); got != want {
		t.Errorf("merged\n%+v\nwant\n%+v", got, want)
	}
	if err := r.shared.MergeConn(uint64(ctHandle)+1, &add); !errors.Is(err, ebpf.ErrKeyNotExist) {
		t.Errorf("merging into a connection ct_conns does not hold: %v", err)
	}
}
