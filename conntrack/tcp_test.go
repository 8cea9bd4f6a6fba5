package conntrack

import (
	"testing"
	"time"
)

// seg is one TCP segment of a test session and what OVS's tracker says
// of it.
type seg struct {
	desc       string
	fromServer bool
	flags      uint8
	payload    uint32
	seqOff     int64 // moved from where the sender is (the sender then stays)
	noAck      bool  // an ACK segment acking 0
	uncommit   bool  // the segment goes through ct() without commit
	want       string
	dumpState  string        // the connection's state after it; "-": none in the table; "": not checked
	timeout    time.Duration // its timer after it, if not 0
	wscale     int           // the segment's window scale option + 1 (0: none)
	window     uint16        // 0: 65535
}

// tcpSession plays segments between a client (10.1.1.1:40000) and a
// server (10.1.1.2:80) through a tracker, committing every segment (a
// stateful firewall that commits on the way out and lets +est back in
// commits the client's; committing the server's too changes nothing for
// a connection that exists).
type tcpSession struct {
	tr   *Tracker
	next [2]uint32
	now  int64
}

func newSession(tr *Tracker) *tcpSession {
	return &tcpSession{tr: tr, next: [2]uint32{1000, 5000}, now: t0}
}

func (s *tcpSession) packet(g seg) *Packet {
	from := b2u(g.fromServer)
	src, dst, sport, dport := "10.1.1.1", "10.1.1.2", uint16(40000), uint16(80)
	if g.fromServer {
		src, dst, sport, dport = dst, src, dport, sport
	}
	var ack uint32
	if g.flags&TCPAck != 0 && !g.noAck {
		ack = s.next[1-from]
	}
	win := g.window
	if win == 0 {
		win = 65535
	}
	p := tcp(src, dst, sport, dport, g.flags, s.next[from]+uint32(g.seqOff), ack, win, g.payload)
	if g.wscale != 0 {
		p.HasWScale, p.WScale = true, uint8(g.wscale-1)
	}
	return p
}

func (s *tcpSession) play(t *testing.T, segs []seg) {
	t.Helper()
	for i, g := range segs {
		s.now += sec
		a := commit
		if g.uncommit {
			a = track
		}
		got := run(s.tr, s.packet(g), a, s.now)
		if want := state(t, g.want); got.State != want {
			t.Errorf("segment %d (%s): ct_state %s, want %s", i, g.desc, got.State, want)
		}
		if g.seqOff == 0 {
			s.next[b2u(g.fromServer)] += g.payload + uint32(b2u(g.flags&TCPSyn != 0)) + uint32(b2u(g.flags&TCPFin != 0))
		}
		entries := s.tr.Dump(nil, s.now)
		switch {
		case g.dumpState == "-" && len(entries) != 0:
			t.Errorf("segment %d (%s): table has %d connections, want none", i, g.desc, len(entries))
		case g.dumpState == "" || g.dumpState == "-":
		case len(entries) != 1:
			t.Errorf("segment %d (%s): table has %d connections, want 1", i, g.desc, len(entries))
		default:
			e := entries[0]
			if st := tcpDumpState(e.TCP[0].State, e.TCP[1].State).String(); st != g.dumpState {
				t.Errorf("segment %d (%s): state %s, want %s", i, g.desc, st, g.dumpState)
			}
			if g.timeout != 0 && e.Expires-s.now != int64(g.timeout) {
				t.Errorf("segment %d (%s): expires in %v, want %v", i, g.desc, time.Duration(e.Expires-s.now), g.timeout)
			}
		}
	}
}

var handshake = []seg{
	{desc: "SYN", flags: TCPSyn, want: "+trk+new", dumpState: "SYN_SENT", timeout: 30 * time.Second},
	{desc: "SYN-ACK", fromServer: true, flags: TCPSyn | TCPAck, want: "+trk+est+rpl", dumpState: "ESTABLISHED", timeout: 30 * time.Second},
	{desc: "ACK", flags: TCPAck, want: "+trk+est", dumpState: "ESTABLISHED", timeout: 24 * time.Hour},
}

func TestTCPStates(t *testing.T) {
	cases := []struct {
		name string
		segs []seg
	}{
		{"open, data, close, reopen", append(append([]seg{}, handshake...),
			seg{desc: "data", flags: TCPPsh | TCPAck, payload: 100, want: "+trk+est", dumpState: "ESTABLISHED", timeout: 24 * time.Hour},
			seg{desc: "data back", fromServer: true, flags: TCPPsh | TCPAck, payload: 1000, want: "+trk+est+rpl", dumpState: "ESTABLISHED"},
			seg{desc: "client FIN", flags: TCPFin | TCPAck, want: "+trk+est", dumpState: "CLOSING", timeout: 15 * time.Minute},
			seg{desc: "server acks FIN", fromServer: true, flags: TCPAck, want: "+trk+est+rpl", dumpState: "TIME_WAIT", timeout: 15 * time.Minute},
			seg{desc: "server FIN", fromServer: true, flags: TCPFin | TCPAck, want: "+trk+est+rpl", dumpState: "TIME_WAIT", timeout: 45 * time.Second},
			seg{desc: "client acks FIN", flags: TCPAck, want: "+trk+est", dumpState: "TIME_WAIT", timeout: 30 * time.Second},
			seg{desc: "SYN on the closed tuple", flags: TCPSyn, want: "+trk+new", dumpState: "SYN_SENT", timeout: 30 * time.Second},
		)},
		{"reset in window", append(append([]seg{}, handshake...),
			seg{desc: "RST", fromServer: true, flags: TCPRst, want: "+trk+est+rpl", dumpState: "TIME_WAIT", timeout: 30 * time.Second},
		)},
		{"reset with a wrong sequence number", append(append([]seg{}, handshake...),
			// +inv changes nothing: the timer runs on from the ACK a second ago.
			seg{desc: "RST far ahead", fromServer: true, flags: TCPRst, seqOff: 1000, want: "+trk+inv", dumpState: "ESTABLISHED", timeout: 24*time.Hour - time.Second},
			seg{desc: "RST|ACK one past", fromServer: true, flags: TCPRst | TCPAck, seqOff: 2, want: "+trk+inv", dumpState: "ESTABLISHED"},
			seg{desc: "RST one back (accepted)", fromServer: true, flags: TCPRst, seqOff: -1, want: "+trk+est+rpl", dumpState: "TIME_WAIT"},
		)},
		{"out of window", append(append([]seg{}, handshake...),
			seg{desc: "data past the window", flags: TCPAck, payload: 100, seqOff: 200000, want: "+trk+inv", dumpState: "ESTABLISHED"},
			seg{desc: "data a window back", flags: TCPAck, payload: 100, seqOff: -200000, want: "+trk+inv", dumpState: "ESTABLISHED"},
			seg{desc: "in window again", flags: TCPAck, payload: 100, want: "+trk+est", dumpState: "ESTABLISHED"},
		)},
		{"SYN retransmitted", []seg{
			{desc: "SYN", flags: TCPSyn, want: "+trk+new", dumpState: "SYN_SENT"},
			{desc: "SYN again", flags: TCPSyn, seqOff: -1, want: "+trk+new", dumpState: "SYN_SENT", timeout: 30 * time.Second},
			{desc: "SYN-ACK", fromServer: true, flags: TCPSyn | TCPAck, want: "+trk+est+rpl", dumpState: "ESTABLISHED"},
		}},
		{"not committed", []seg{
			{desc: "SYN", flags: TCPSyn, uncommit: true, want: "+trk+new", dumpState: "-"},
			{desc: "SYN-ACK, no connection", fromServer: true, flags: TCPSyn | TCPAck, want: "+trk+inv", dumpState: "-"},
		}},
		{"invalid flags", []seg{
			{desc: "SYN|FIN", flags: TCPSyn | TCPFin, want: "+trk+inv", dumpState: "-"},
			{desc: "SYN|RST", flags: TCPSyn | TCPRst, want: "+trk+inv", dumpState: "-"},
			{desc: "no flags", flags: 0, want: "+trk+inv", dumpState: "-"},
			{desc: "FIN alone", flags: TCPFin, want: "+trk+inv", dumpState: "-"},
			{desc: "SYN", flags: TCPSyn, want: "+trk+new", dumpState: "SYN_SENT"},
			{desc: "PSH without ACK", flags: TCPPsh, fromServer: true, want: "+trk+inv", dumpState: "SYN_SENT"},
		}},
		{"picked up midway", []seg{
			{desc: "ACK with data, no connection", flags: TCPAck, payload: 10, want: "+trk+new", dumpState: "SYN_SENT"},
			{desc: "ACK back", fromServer: true, flags: TCPAck, want: "+trk+est+rpl", dumpState: "ESTABLISHED"},
			{desc: "data", flags: TCPAck | TCPPsh, payload: 100, want: "+trk+est", dumpState: "ESTABLISHED", timeout: 24 * time.Hour},
		}},
		{"RST|ACK acking 0", append(append([]seg{}, handshake...),
			seg{desc: "RST|ACK, ack 0", fromServer: true, flags: TCPRst | TCPAck, noAck: true, want: "+trk+est+rpl", dumpState: "TIME_WAIT"},
		)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			newSession(newTracker(t)).play(t, c.segs)
		})
	}
}

// TestTCPWindowScaling checks that scaled windows are honoured: a segment
// that fits the receiver's window only when scaled passes with scaling
// agreed on both SYNs and is +inv when the answer had no scale option
// (then neither end scales).
func TestTCPWindowScaling(t *testing.T) {
	big := seg{desc: "100000 bytes", flags: TCPAck, payload: 100000, dumpState: "ESTABLISHED"}
	for _, c := range []struct {
		name       string
		serverOpts int
		want       string
	}{
		{"both scale", 8, "+trk+est"},
		{"server does not scale", 0, "+trk+inv"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSession(newTracker(t))
			big.want = c.want
			s.play(t, []seg{
				{desc: "SYN", flags: TCPSyn, wscale: 8, want: "+trk+new", dumpState: "SYN_SENT"},
				{desc: "SYN-ACK", fromServer: true, flags: TCPSyn | TCPAck, wscale: c.serverOpts, want: "+trk+est+rpl", dumpState: "ESTABLISHED"},
				{desc: "ACK", flags: TCPAck, want: "+trk+est", dumpState: "ESTABLISHED"},
				// 1000 << 7 is 128000 bytes the client may send.
				{desc: "server window 1000", fromServer: true, flags: TCPAck, window: 1000, want: "+trk+est+rpl", dumpState: "ESTABLISHED"},
				big,
			})
			e := s.tr.Dump(nil, s.now)[0]
			wantScale := uint8(0)
			if c.serverOpts != 0 {
				wantScale = 7
			}
			if e.TCP[1].WScale != wantScale {
				t.Errorf("reply end's wscale %d, want %d", e.TCP[1].WScale, wantScale)
			}
		})
	}
}

// TestTCPSeqCheckOff: with sequence checking off (ct-disable-tcp-seq-chk)
// a reset anywhere is taken.
func TestTCPSeqCheckOff(t *testing.T) {
	tr := newTracker(t)
	tr.SetTCPSeqCheck(false)
	if tr.TCPSeqCheck() {
		t.Fatal("sequence check still on")
	}
	newSession(tr).play(t, append(append([]seg{}, handshake...),
		seg{desc: "RST far ahead", fromServer: true, flags: TCPRst, seqOff: 100000, want: "+trk+est+rpl", dumpState: "TIME_WAIT"}))
}
