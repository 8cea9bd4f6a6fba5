package datapath_test

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/bpf"
	"github.com/xswitch/xswitch/conntrack"
	"github.com/xswitch/xswitch/datapath"
	"github.com/xswitch/xswitch/datapath/datapathtest"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/internal/testenv"
)

// The program's judgement of a tracked connection's frames
// (datapath.ConntrackOp) is held against the tracker's, on TCP
// connections opened with and without window scaling or picked up
// midway, over IPv4 and IPv6, fed random segments aimed at the edges of
// their windows and acks, across the wrap of sequence numbers, both ways,
// as the switch will run them: the kernel carries what it judges +est,
// and gives the rest back; user space takes the connection's state back
// from the kernel (TakeConn, SyncFromKernel), judges the segment with the
// tracker, and puts the state in again while the connection stays
// established (KernelState, PutConn). A reference tracker sees every
// segment, as user space alone would. The program must give a segment
// back exactly when the reference does not call it +trk+est or it has
// SYN, FIN or RST (or lacks ACK); after each segment it carries, its
// state must be the reference's, and after each it gives back, the
// system's tracker must judge it as the reference did and be left in the
// reference's state.

const (
	ctInPort = 7
	ctGen    = 1
	ctOut    = 1 // the loopback's slot: a frame the program carries is redirected there
)

type ctBed struct {
	dp   *datapath.Kernel
	prog *ebpf.Program
}

func newCTBed(tb testing.TB) *ctBed {
	tb.Helper()
	testenv.RequireRoot(tb)
	dp, err := datapath.NewKernel()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { dp.Close() })
	objs, err := bpf.LoadFastpathProgram(bpf.FastpathConfig{InPort: ctInPort, MaxFrameLen: 1 << 16, SocketQueues: 1, Shared: dp.Shared()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { objs.Close() })
	if err := dp.Publish(ctGen, nil, false); err != nil {
		tb.Fatal(err)
	}
	if err := dp.Shared().TxPorts.Put(uint32(ctOut), uint32(1)); err != nil { // lo
		tb.Fatal(err)
	}
	return &ctBed{dp: dp, prog: objs.Fastpath}
}

// install sends the frames of frame's key through ops, then to the
// loopback.
func (b *ctBed) install(tb testing.TB, frame []byte, ops ...datapath.Op) {
	tb.Helper()
	var k flow.Key
	if !flow.NewExtractor().Extract(frame, ctInPort, &k) {
		tb.Fatalf("malformed frame %x", frame)
	}
	e := datapath.Entry{Out: ctOut}
	copy(e.Ops[:], ops)
	if n, err := b.dp.Install(false, []datapath.Key{datapath.NewKey(&k.Headers, nil, ctGen)}, []datapath.Entry{e}); n != 1 {
		tb.Fatal(err)
	}
}

const (
	xdpPass     = 2
	xdpRedirect = 4
)

// carry runs frame through the program and reports whether it carried
// the frame (XDP_REDIRECT) or gave it to user space (XDP_PASS: the test
// port has no socket).
func (b *ctBed) carry(tb testing.TB, frame []byte) bool {
	tb.Helper()
	ret, err := b.prog.Run(&ebpf.RunOptions{Data: frame})
	if err != nil {
		tb.Fatal(err)
	}
	if ret != xdpRedirect && ret != xdpPass {
		tb.Fatalf("action %d: neither carried nor given to user space", ret)
	}
	return ret == xdpRedirect
}

// monotonic is the kernel's CLOCK_MONOTONIC, the tracker's clock and the
// program's.
func monotonic(tb testing.TB) int64 {
	tb.Helper()
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		tb.Fatal(err)
	}
	return ts.Nano()
}

// tcpConn is a TCP connection from a client to a server.
type tcpConn struct {
	ipv6           bool
	client, server netip.Addr
	cport, sport   uint16
}

// segment is a TCP segment of a connection.
type segment struct {
	reply      bool // from the server
	flags      uint8
	seq, ack   uint32
	win        uint16
	payload    int
	wscaleOpt1 int // a window scale option of the shift wscaleOpt1-1; 0: none
}

var ctMACs = [2][6]byte{{2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 2}}

// frame is s as the port receives it. No checksum is filled in: neither
// the program nor the switch's tracker checks them.
func (c *tcpConn) frame(s segment) []byte {
	be := binary.BigEndian
	src, dst, sport, dport, smac, dmac := c.client, c.server, c.cport, c.sport, ctMACs[0], ctMACs[1]
	if s.reply {
		src, dst, sport, dport, smac, dmac = dst, src, dport, sport, dmac, smac
	}
	var opts []byte
	if s.wscaleOpt1 != 0 {
		opts = []byte{1, 3, 3, byte(s.wscaleOpt1 - 1)} // NOP, window scale
	}
	tcpLen := 20 + len(opts) + s.payload
	b := append(append(make([]byte, 0, 14+40+tcpLen), dmac[:]...), smac[:]...)
	if c.ipv6 {
		b = be.AppendUint16(b, 0x86dd)
		b = append(b, 0x60, 0, 0, 0)
		b = be.AppendUint16(b, uint16(tcpLen))
		b = append(b, 6, 64)
		b = append(append(b, src.AsSlice()...), dst.AsSlice()...)
	} else {
		b = be.AppendUint16(b, 0x0800)
		b = append(b, 0x45, 0)
		b = be.AppendUint16(b, uint16(20+tcpLen))
		b = append(b, 0, 0, 0, 0, 64, 6, 0, 0)
		b = append(append(b, src.AsSlice()...), dst.AsSlice()...)
	}
	b = be.AppendUint16(be.AppendUint16(b, sport), dport)
	b = be.AppendUint32(be.AppendUint32(b, s.seq), s.ack)
	b = append(b, byte((20+len(opts))/4<<4), s.flags)
	b = be.AppendUint16(b, s.win)
	b = append(append(b, 0, 0, 0, 0), opts...)
	return append(b, make([]byte, s.payload)...)
}

// track runs frame through tr's ct(commit) at now, as the switch does,
// and returns its ct_state and connection.
func track(tr *conntrack.Tracker, frame []byte, now int64) (conntrack.State, conntrack.Handle) {
	var p conntrack.Packet
	p.Header.Decode(frame[14:], false)
	tr.Execute(&p, &conntrack.Action{Commit: true}, now)
	return p.CT.State, p.CT.Conn
}

// est is the ct_state of an established connection's packet going the
// reply way or not.
func est(reply bool) conntrack.State {
	if reply {
		return conntrack.StateTracked | conntrack.StateEstablished | conntrack.StateReply
	}
	return conntrack.StateTracked | conntrack.StateEstablished
}

// judged says whether a segment with flags is the program's to judge:
// no SYN, FIN or RST, and an ACK.
func judged(flags uint8) bool {
	return flags&(conntrack.TCPSyn|conntrack.TCPFin|conntrack.TCPRst) == 0 && flags&conntrack.TCPAck != 0
}

// ctDiff plays connections through a bed and two trackers: ref sees every
// segment; sys sees the handshakes and the segments the kernel gives
// back.
type ctDiff struct {
	tb       testing.TB
	bed      *ctBed
	ref, sys *conntrack.Tracker
	rnd      *rand.Rand
	port     uint16

	// The connection under way, and what the kernel carried of it since
	// its state was last put in.
	conn    tcpConn
	rh, sh  conntrack.Handle
	carried [2]bpf.FastpathFpConnDir

	// What the segments met, for the log and the check that the run
	// tried what it is for.
	segments, kept, outOfWindow, flagged int
	wraps                                int // an end's sequence numbers moved on across 2^32
	openings                             map[string]int
}

func newCTDiff(tb testing.TB, bed *ctBed, seqCheck bool, seed1, seed2 uint64) *ctDiff {
	d := &ctDiff{tb: tb, bed: bed, rnd: rand.New(rand.NewPCG(seed1, seed2)), port: 10000, openings: map[string]int{},
		ref: conntrack.New(conntrack.Config{Seed: 0x5eed}), sys: conntrack.New(conntrack.Config{Seed: 0x5eed})}
	d.ref.SetTCPSeqCheck(seqCheck)
	d.sys.SetTCPSeqCheck(seqCheck)
	return d
}

// isn is a random initial sequence number, one time in three within 64 KiB
// of the wrap.
func (d *ctDiff) isn() uint32 {
	if d.rnd.IntN(3) == 0 {
		return -uint32(1 + d.rnd.IntN(1<<16))
	}
	return d.rnd.Uint32()
}

// wscaleOpt1 is a random SYN's window scale option (shift + 1, up to 15,
// past RFC 7323's 14), or none.
func (d *ctDiff) wscaleOpt1() int {
	if d.rnd.IntN(4) == 0 {
		return 0
	}
	return 1 + d.rnd.IntN(16)
}

// open opens a new connection through both trackers, and puts it in the
// kernel, with an entry each way that judges it.
func (d *ctDiff) open() {
	tb, r := d.tb, d.rnd
	d.port++
	d.conn = tcpConn{ipv6: r.IntN(3) == 0, cport: d.port, sport: 80}
	if d.conn.ipv6 {
		d.conn.client, d.conn.server = netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")
	} else {
		d.conn.client, d.conn.server = netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	}
	ic, is := d.isn(), d.isn()
	win := func() uint16 { return uint16(1 + r.IntN(65535)) }
	var open []segment
	if r.IntN(4) == 0 {
		d.openings["picked up midway"]++
		open = []segment{
			{flags: conntrack.TCPAck, seq: ic, ack: is, win: win(), payload: 10},
			{reply: true, flags: conntrack.TCPAck, seq: is, ack: ic + 10, win: win()},
			{flags: conntrack.TCPAck, seq: ic + 10, ack: is, win: win()},
		}
	} else {
		c, s := d.wscaleOpt1(), d.wscaleOpt1()
		switch {
		case c != 0 && s != 0:
			d.openings["both scale"]++
		case c != 0 || s != 0:
			d.openings["one scales"]++
		default:
			d.openings["neither scales"]++
		}
		open = []segment{
			{flags: conntrack.TCPSyn, seq: ic, win: win(), wscaleOpt1: c},
			{reply: true, flags: conntrack.TCPSyn | conntrack.TCPAck, seq: is, ack: ic + 1, win: win(), wscaleOpt1: s},
			{flags: conntrack.TCPAck, seq: ic + 1, ack: is + 1, win: win()},
		}
	}
	for _, s := range open {
		frame, now := d.conn.frame(s), monotonic(tb)
		rs, rh := track(d.ref, frame, now)
		ss, sh := track(d.sys, frame, now)
		if rs != ss {
			tb.Fatalf("opening %+v: the trackers say %s and %s", s, rs, ss)
		}
		d.rh, d.sh = rh, sh
	}
	rk, ok := d.ref.KernelState(d.rh)
	if !ok {
		tb.Fatalf("the connection opened by %+v is not established", open)
	}
	d.put(rk)
	d.bed.install(tb, d.conn.frame(open[0]), datapath.ConntrackOp(d.sh, false, false))
	d.bed.install(tb, d.conn.frame(open[1]), datapath.ConntrackOp(d.sh, true, false))
}

// put puts the system tracker's state in the kernel, which must be the
// reference's, rk.
func (d *ctDiff) put(rk conntrack.KernelConn) {
	sk, ok := d.sys.KernelState(d.sh)
	if !ok || sk != rk {
		d.tb.Fatalf("the system's tracker holds %+v (%v), the reference %+v", sk, ok, rk)
	}
	c := datapath.ConnOf(sk)
	if err := d.bed.dp.PutConn(d.sh, &c); err != nil {
		d.tb.Fatal(err)
	}
	d.carried = [2]bpf.FastpathFpConnDir{}
}

// edge is -1, 0 or 1: just inside, on, or just outside an edge.
func (d *ctDiff) edge() uint32 { return uint32(d.rnd.IntN(3) - 1) }

// maxAckWindow is the tracker's bound on an ack's lag and lead, before
// the sender's shift.
const maxAckWindow = 0xffff + 1500

// segment is a random segment of the connection in state k: mostly where
// its sender is, acking what the receiver sent; often at the edges the
// tracker tests (the end of the receiver's window, a window back, the
// ack's furthest lag and lead), or far off.
func (d *ctDiff) segment(k conntrack.KernelConn) segment {
	r := d.rnd
	s := segment{reply: r.IntN(2) == 1}
	src, dst := k.TCP[0], k.TCP[1]
	if s.reply {
		src, dst = dst, src
	}
	switch n := r.IntN(100); {
	case n < 45:
	case n < 50:
		s.payload = 1
	default:
		s.payload = 1 + r.IntN(1400)
	}
	switch r.IntN(10) {
	case 0, 1, 2, 3:
		s.seq = src.SeqLo
	case 4:
		s.seq = src.SeqLo - uint32(r.IntN(3000)) // data sent again
	case 5:
		s.seq = src.SeqHi - uint32(s.payload) + d.edge()
	case 6:
		s.seq = src.SeqLo - uint32(dst.MaxWin)<<dst.WScale + d.edge()
	case 7:
		s.seq = src.SeqLo + uint32(r.IntN(1<<21)) - 1<<20
	case 8:
		s.seq = src.SeqHi + uint32(r.IntN(1<<16))
	default:
		s.seq = r.Uint32()
	}
	switch r.IntN(10) {
	case 0, 1, 2, 3, 4:
		s.ack = dst.SeqLo
	case 5:
		s.ack = dst.SeqLo - uint32(r.IntN(3000))
	case 6:
		s.ack = dst.SeqLo + maxAckWindow + d.edge()
	case 7:
		s.ack = dst.SeqLo - maxAckWindow<<src.WScale + d.edge()
	case 8:
		s.ack = dst.SeqLo + uint32(r.IntN(1<<17)) - 1<<16
	default:
		s.ack = r.Uint32()
	}
	switch r.IntN(8) {
	case 0, 1, 2:
		s.win = 65535
	case 3:
		s.win = 0
	case 4:
		s.win = uint16(1 + r.IntN(10))
	default:
		s.win = uint16(r.Uint32())
	}
	const ack, syn, fin, rst = conntrack.TCPAck, conntrack.TCPSyn, conntrack.TCPFin, conntrack.TCPRst
	switch n := r.IntN(1000); {
	case n < 940:
		s.flags = ack
		for _, f := range []uint8{conntrack.TCPPsh, conntrack.TCPUrg, conntrack.TCPEce, conntrack.TCPCwr} {
			if r.IntN(4) == 0 {
				s.flags |= f
			}
		}
	case n < 955:
		s.flags = fin | ack
	case n < 965:
		s.flags = rst | ack
	case n < 972:
		s.flags = rst
	case n < 978:
		s.flags = syn
	case n < 984:
		s.flags = syn | ack
	default:
		s.flags = []uint8{0, fin, conntrack.TCPPsh, conntrack.TCPUrg}[r.IntN(4)]
	}
	return s
}

// step plays segment s and reports whether the connection is still
// established after it.
func (d *ctDiff) step(s segment) bool {
	tb := d.tb
	d.segments++
	frame, dir := d.conn.frame(s), 0
	if s.reply {
		dir = 1
	}
	before := monotonic(tb)
	carried := d.bed.carry(tb, frame)
	after := monotonic(tb)
	if carried {
		d.kept++
		got, err := d.bed.dp.Conn(d.sh)
		if err != nil {
			tb.Fatal(err)
		}
		seen := int64(got.Dir[dir].LastSeen)
		if seen < before-int64(bpf.CoarseClockLag) || seen > after {
			tb.Fatalf("segment %+v: last seen %d ns after the run began (by the program's coarse clock), which took %d", s, seen-before, after-before)
		}
		now := judgedAt(d.ref, d.rh, seen)
		if rs, _ := track(d.ref, frame, now); rs != est(s.reply) || !judged(s.flags) {
			tb.Fatalf("segment %+v: the program carried it, the tracker calls it %s", s, rs)
		}
		rk, _ := d.ref.KernelState(d.rh)
		if k := datapath.KernelConnOf(&got); k != rk {
			tb.Fatalf("after segment %+v the program holds\n%+v\nthe tracker\n%+v", s, k, rk)
		}
		d.carried[dir].LastSeen = uint64(seen)
		d.carried[dir].Packets++
		d.carried[dir].Bytes += uint64(len(frame))
		for i := range got.Dir {
			g, w := got.Dir[i], d.carried[i]
			if g.LastSeen != w.LastSeen || g.Packets != w.Packets || g.Bytes != w.Bytes {
				tb.Fatalf("after segment %+v direction %d carried %+v, want %+v", s, i, g, w)
			}
		}
		return true
	}

	rs, _ := track(d.ref, frame, after)
	switch {
	case rs == est(s.reply) && judged(s.flags):
		tb.Fatalf("segment %+v: the program gave it back, the tracker calls it %s", s, rs)
	case !judged(s.flags):
		d.flagged++
	case rs&conntrack.StateInvalid != 0:
		d.outOfWindow++
	}
	taken, err := d.bed.dp.TakeConn(d.sh)
	if err != nil {
		tb.Fatal(err)
	}
	if !d.sys.SyncFromKernel(d.sh, datapath.KernelConnOf(&taken)) {
		tb.Fatalf("segment %+v: the tracker refused the kernel's state %+v", s, taken)
	}
	if ss, _ := track(d.sys, frame, after); ss != rs {
		tb.Fatalf("segment %+v: given back, the system's tracker calls it %s, the reference %s", s, ss, rs)
	}
	rk, rok := d.ref.KernelState(d.rh)
	if !rok {
		if _, sok := d.sys.KernelState(d.sh); sok {
			tb.Fatalf("segment %+v: the reference's connection is no longer established, the system's is", s)
		}
		return false
	}
	d.put(rk)
	return true
}

// run plays connections of at most perConn random segments each, until
// segments segments.
func (d *ctDiff) run(segments, perConn int) {
	for d.segments < segments {
		d.open()
		for range perConn {
			rk, _ := d.ref.KernelState(d.rh)
			if !d.step(d.segment(rk)) {
				break
			}
			after, _ := d.ref.KernelState(d.rh)
			for i, e := range after.TCP {
				if was := rk.TCP[i].SeqLo; e.SeqLo < was && int32(e.SeqLo-was) > 0 {
					d.wraps++
				}
			}
		}
		// Gone already if the connection closed.
		d.bed.dp.DeleteConn(d.sh)
	}
}

func TestKernelConntrackAgreesWithTheTracker(t *testing.T) {
	bed := newCTBed(t)
	for _, c := range []struct {
		name     string
		seqCheck bool
		segments int
	}{{"sequence checking on", true, 20000}, {"sequence checking off", false, 5000}} {
		t.Run(c.name, func(t *testing.T) {
			d := newCTDiff(t, bed, c.seqCheck, 29, uint64(c.segments))
			d.run(c.segments, 400)
			t.Logf("%d segments: %d carried, %d given back for their flags, %d +inv; %d wraps of sequence numbers; openings %v",
				d.segments, d.kept, d.flagged, d.outOfWindow, d.wraps, d.openings)
			// The run must have tried what it is for.
			if d.kept < d.segments/4 || len(d.openings) != 4 || d.wraps == 0 {
				t.Errorf("too few segments carried, or no wrap, or not every kind of opening")
			}
			if c.seqCheck && d.outOfWindow < d.segments/20 {
				t.Errorf("too few segments out of their windows")
			}
		})
	}
}

func FuzzKernelConntrack(f *testing.F) {
	f.Add(uint64(1), uint64(2), true)
	f.Add(uint64(3), uint64(4), false)
	bed := newCTBed(f)
	f.Fuzz(func(t *testing.T, seed1, seed2 uint64, seqCheck bool) {
		newCTDiff(t, bed, seqCheck, seed1, seed2).run(200, 200)
	})
}

// udpFrame is a UDP datagram from 10.0.0.1:5000 to 10.0.0.2:53, or back.
func udpFrame(reply bool) []byte {
	be := binary.BigEndian
	src, dst, sport, dport, smac, dmac := []byte{10, 0, 0, 1}, []byte{10, 0, 0, 2}, uint16(5000), uint16(53), ctMACs[0], ctMACs[1]
	if reply {
		src, dst, sport, dport, smac, dmac = dst, src, dport, sport, dmac, smac
	}
	const payload = 20
	b := append(append([]byte{}, dmac[:]...), smac[:]...)
	b = be.AppendUint16(b, 0x0800)
	b = append(b, 0x45, 0)
	b = be.AppendUint16(b, 20+8+payload)
	b = append(b, 0, 0, 0, 0, 64, 17, 0, 0)
	b = append(append(b, src...), dst...)
	b = be.AppendUint16(be.AppendUint16(b, sport), dport)
	b = be.AppendUint16(b, 8+payload)
	b = append(b, 0, 0)
	return append(b, make([]byte, payload)...)
}

// A UDP connection's datagrams are the program's once the tracker has
// seen it both ways and user space put it in: each carried re-arms the
// expiry as the tracker would have. Once that passes without a datagram,
// the next goes to user space, where the tracker, given the kernel's
// state, calls it new, as it would have had it seen every datagram.
func TestKernelConntrackUDP(t *testing.T) {
	bed := newCTBed(t)
	const timeout = 100 * 1000 * 1000 // ns
	tr := conntrack.New(conntrack.Config{Seed: 1, Timeouts: conntrack.Timeouts{UDPMultiple: timeout}})
	orig, reply := udpFrame(false), udpFrame(true)
	now := monotonic(t)
	track(tr, orig, now)
	if st, _ := track(tr, reply, now); st != est(true) {
		t.Fatalf("the reply is %s", st)
	}
	_, h := track(tr, orig, now)
	bed.install(t, orig, datapath.ConntrackOp(h, false, false))
	bed.install(t, reply, datapath.ConntrackOp(h, true, false))
	if bed.carry(t, orig) {
		t.Fatal("the program carried a datagram of a connection user space had not put in")
	}
	k, ok := tr.KernelState(h)
	if !ok || k.Timeout != timeout {
		t.Fatalf("KernelState %+v, %v", k, ok)
	}
	c := datapath.ConnOf(k)
	if err := bed.dp.PutConn(h, &c); err != nil {
		t.Fatal(err)
	}
	var got datapath.Conn
	for i, back := range []bool{false, true, true} {
		frame := orig
		if back {
			frame = reply
		}
		if !bed.carry(t, frame) {
			t.Fatalf("datagram %d went to user space", i)
		}
		var err error
		if got, err = bed.dp.Conn(h); err != nil {
			t.Fatal(err)
		}
		at := judgedAt(tr, h, int64(got.Dir[b2i(back)].LastSeen))
		if st, _ := track(tr, frame, at); st != est(back) {
			t.Fatalf("datagram %d: the tracker calls it %s", i, st)
		}
		if want, _ := tr.KernelState(h); datapath.KernelConnOf(&got) != want {
			t.Fatalf("after datagram %d the program holds %+v, the tracker %+v", i, datapath.KernelConnOf(&got), want)
		}
	}
	if got.Dir[0].Packets != 1 || got.Dir[1].Packets != 2 || got.Dir[1].Bytes != 2*uint64(len(reply)) {
		t.Errorf("the program counted %+v", got.Dir)
	}

	for monotonic(t) <= int64(got.Expires)+int64(bpf.CoarseClockLag) {
		time.Sleep(time.Duration(timeout) / 10)
	}
	if bed.carry(t, orig) {
		t.Fatal("the program carried a datagram after the connection's time")
	}
	after := monotonic(t)
	taken, err := bed.dp.TakeConn(h)
	if err != nil {
		t.Fatal(err)
	}
	if !tr.SyncFromKernel(h, datapath.KernelConnOf(&taken)) {
		t.Fatal("the tracker refused the kernel's state")
	}
	if st, _ := track(tr, orig, after); st != conntrack.StateTracked|conntrack.StateNew {
		t.Errorf("after the connection's time the tracker calls the datagram %s, want +trk+new", st)
	}
}

// judgedAt is when a reference tracker judges a frame of connection h that
// the program carried, at seen by its coarse clock, so that both arm the
// connection's timer alike: then, unless the tracker last armed it later
// (by the precise clock, ahead of the coarse one), when the program does
// not move it back.
func judgedAt(tr *conntrack.Tracker, h conntrack.Handle, seen int64) int64 {
	k, _ := tr.KernelState(h)
	return max(seen, k.Expires-k.Timeout)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The fake keeps connections as the kernel does: put, read, taken,
// deleted, refused past its capacity, and ErrNoConn for one it does not
// hold.
func TestFakeKeepsConnsAsTheKernel(t *testing.T) {
	testenv.RequireRoot(t)
	kernel, err := datapath.NewKernelWith(datapath.KernelConfig{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kernel.Close() })
	fake := datapathtest.New()
	fake.Capacity = 2
	c := datapath.ConnOf(conntrack.KernelConn{Proto: 6, SeqCheck: true, Expires: 5, Timeout: 7,
		TCP: [2]conntrack.KernelTCPEnd{{SeqLo: 1, SeqHi: 2, MaxWin: 3, WScale: 4}, {SeqLo: 5, SeqHi: 6, MaxWin: 7, WScale: 8}}})
	for _, dp := range []datapath.Datapath{kernel, fake} {
		for h := conntrack.Handle(1); h <= 2; h++ {
			if err := dp.PutConn(h, &c); err != nil {
				t.Fatal(err)
			}
		}
		if err := dp.PutConn(3, &c); err == nil {
			t.Errorf("%T took a third connection", dp)
		}
		if err := dp.PutConn(2, &c); err != nil {
			t.Errorf("%T, full, refused a connection it holds: %v", dp, err)
		}
		if got, err := dp.Conn(1); err != nil || got != c {
			t.Errorf("%T reads %+v (%v), put %+v", dp, got, err, c)
		}
		if got, err := dp.TakeConn(1); err != nil || got != c {
			t.Errorf("%T takes %+v (%v), put %+v", dp, got, err, c)
		}
		if err := dp.DeleteConn(2); err != nil {
			t.Error(err)
		}
		for _, err := range []error{first(dp.Conn(1)), first(dp.TakeConn(2)), dp.DeleteConn(2)} {
			if !errors.Is(err, datapath.ErrNoConn) {
				t.Errorf("%T, a connection it does not hold: %v", dp, err)
			}
		}
	}
}

func first(_ datapath.Conn, err error) error { return err }

// A UDP connection seen several times one way is the program's that way,
// each datagram re-arming its expiry as the tracker's +new ones do, but
// through an entry made for it seen one way only: a datagram coming back,
// which would make it one seen both ways, goes to user space, and so does
// one of an entry made for it established; and once user space saw one
// come back and put it in again, the entry made for it one way gives its
// datagrams to user space, whose rules may treat them otherwise.
func TestKernelConntrackOneWay(t *testing.T) {
	bed := newCTBed(t)
	tr := conntrack.New(conntrack.Config{Seed: 1})
	orig, reply := udpFrame(false), udpFrame(true)
	now := monotonic(t)
	track(tr, orig, now)
	st, h := track(tr, orig, now)
	if st != conntrack.StateTracked|conntrack.StateNew {
		t.Fatalf("the second datagram one way is %s", st)
	}
	k, ok := tr.KernelState(h)
	if !ok || !k.OrigOnly {
		t.Fatalf("KernelState %+v, %v; want the connection one way", k, ok)
	}
	c := datapath.ConnOf(k)
	if err := bed.dp.PutConn(h, &c); err != nil {
		t.Fatal(err)
	}
	bed.install(t, orig, datapath.ConntrackOp(h, false, false))
	if bed.carry(t, orig) {
		t.Error("an entry made for the connection established carried a datagram of it seen one way")
	}
	bed.install(t, orig, datapath.ConntrackOp(h, false, true))
	bed.install(t, reply, datapath.ConntrackOp(h, true, true))
	for i := range 3 {
		if !bed.carry(t, orig) {
			t.Fatalf("datagram %d one way went to user space", i)
		}
	}
	got, err := bed.dp.Conn(h)
	if err != nil {
		t.Fatal(err)
	}
	if got.Dir[0].Packets != 3 || got.Expires != max(uint64(k.Expires), got.Dir[0].LastSeen+uint64(k.Timeout)) {
		t.Errorf("the program holds %+v after three datagrams one way", got)
	}
	if bed.carry(t, reply) {
		t.Fatal("the program carried the first datagram back")
	}
	taken, err := bed.dp.TakeConn(h)
	if err != nil {
		t.Fatal(err)
	}
	if !tr.SyncFromKernel(h, datapath.KernelConnOf(&taken)) {
		t.Fatal("the tracker refused the kernel's state")
	}
	if st, _ := track(tr, reply, monotonic(t)); st != est(true) {
		t.Fatalf("the first datagram back: %s", st)
	}
	k, _ = tr.KernelState(h)
	c = datapath.ConnOf(k)
	if err := bed.dp.PutConn(h, &c); err != nil {
		t.Fatal(err)
	}
	if bed.carry(t, orig) {
		t.Error("an entry made for the connection seen one way carried a datagram of it established")
	}
	bed.install(t, orig, datapath.ConntrackOp(h, false, false))
	if !bed.carry(t, orig) {
		t.Error("the entry made for the connection established did not carry its datagram")
	}
}
