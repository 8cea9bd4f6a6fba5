package conntrack

import (
	"fmt"
	"testing"
)

func TestMaxConns(t *testing.T) {
	tr := New(Config{MaxConns: 3, Seed: 1})
	if tr.MaxConns() != 3 {
		t.Fatalf("maxconns %d", tr.MaxConns())
	}
	for i := range 3 {
		if md := run(tr, udp("10.1.1.1", "10.1.1.2", uint16(1+i), 2), commit, t0); md.Conn == 0 {
			t.Fatalf("commit %d refused", i)
		}
	}
	md := run(tr, udp("10.1.1.1", "10.1.1.2", 99, 2), commit, t0)
	if md.Conn != 0 || md.State != StateTracked|StateNew {
		t.Fatalf("commit past maxconns: %+v", md)
	}
	if s := tr.Stats(); s.Refused[RefusedFull] != 1 || s.Entries != 3 || tr.Count() != 3 {
		t.Errorf("stats %+v", s)
	}
	// Lowering the limit removes nothing; raising it admits again.
	tr.SetMaxConns(1)
	if tr.Count() != 3 {
		t.Errorf("count %d after lowering", tr.Count())
	}
	tr.SetMaxConns(4)
	if md := run(tr, udp("10.1.1.1", "10.1.1.2", 99, 2), commit, t0); md.Conn == 0 {
		t.Error("commit refused after raising maxconns")
	}
}

// TestZoneLimits follows OVS's "conntrack - limit by zone".
func TestZoneLimits(t *testing.T) {
	tr := newTracker(t)
	send := func(zone uint16, src string, dports ...int) {
		for _, d := range dports {
			run(tr, udp(src, "10.1.1.9", 1, uint16(d)), inZone(*commit, zone), t0)
		}
	}
	limits := func(zones ...uint16) string { return FormatZoneLimits(tr.ZoneLimits(zones...)) }
	expect := func(got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("ct-get-limits:\n%s\nwant:\n%s", got, want)
		}
	}

	expect(limits(), "default limit=0")
	tr.SetZoneLimit(1, 0)
	send(1, "10.1.1.1", 2)
	expect(limits(), "default limit=0\nzone=1,limit=0,count=0")
	tr.DeleteZoneLimit(1)

	tr.SetDefaultZoneLimit(3)
	expect(limits(), "default limit=3")
	send(1, "10.1.1.1", 2, 3, 4, 5, 6)
	expect(limits(1), "default limit=3\nzone=1,limit=3,count=3")
	send(3, "10.1.1.3", 2, 3, 4, 5, 6)
	expect(limits(1, 3), "default limit=3\nzone=1,limit=3,count=3\nzone=3,limit=3,count=3")

	tr.Flush(nil, t0)
	tr.SetDefaultZoneLimit(10)
	for z, l := range map[uint16]uint32{1: 5, 2: 3, 3: 3, 4: 15} {
		tr.SetZoneLimit(z, l)
	}
	for _, z := range []uint16{2, 4, 5} {
		tr.DeleteZoneLimit(z)
	}
	expect(limits(1, 2, 3, 4), "default limit=10\nzone=1,limit=5,count=0\nzone=2,limit=10,count=0\nzone=3,limit=3,count=0\nzone=4,limit=10,count=0")
	send(1, "10.1.1.1", 2, 3, 4, 5, 6, 7, 8, 9, 10)
	expect(limits(), "default limit=10\nzone=1,limit=5,count=5\nzone=3,limit=3,count=0")
	send(3, "10.1.1.3", 2, 3, 4, 5, 6)
	expect(limits(1, 3), "default limit=10\nzone=1,limit=5,count=5\nzone=3,limit=3,count=3")

	tr.SetDefaultZoneLimit(15)
	tr.SetZoneLimit(4, 4)
	tr.SetDefaultZoneLimit(0)
	expect(limits(4), "default limit=0\nzone=4,limit=4,count=0")
	tr.DeleteZoneLimit(4)
	expect(limits(4), "default limit=0\nzone=4,limit=0,count=0")

	if s := tr.Stats(); s.Refused[RefusedZoneLimit] != 1+2+2+4+2 {
		t.Errorf("zone-limit refusals %d, want 11", s.Refused[RefusedZoneLimit])
	}
	s := tr.Stats()
	if fmt.Sprint(s.Zones) != "[{1 5} {3 3}]" {
		t.Errorf("zone counts %v", s.Zones)
	}
}

// TestSYNFloodKeepsEstablished: a flood of SYNs fills the table to its
// limit; the established connection keeps working, the flood's commits
// are refused and counted, and once the flood's half-open connections
// time out (tcp_syn_sent, 30 s) new connections are admitted again.
func TestSYNFloodKeepsEstablished(t *testing.T) {
	const max = 1000
	tr := New(Config{MaxConns: max, Seed: 2})
	s := newSession(tr)
	s.play(t, handshake)
	for i := range 5000 {
		src := fmt.Sprintf("10.2.%d.%d", i/250, 1+i%250)
		run(tr, tcp(src, "10.1.1.2", uint16(1024+i), 80, TCPSyn, uint32(i), 0, 1000, 0), commit, s.now)
	}
	if tr.Count() != max {
		t.Fatalf("count %d, want %d", tr.Count(), max)
	}
	if st := tr.Stats(); st.Refused[RefusedFull] != 5000-(max-1) {
		t.Errorf("refused %d, want %d", st.Refused[RefusedFull], 5000-(max-1))
	}
	s.play(t, []seg{
		{desc: "data during the flood", flags: TCPAck | TCPPsh, payload: 10, want: "+trk+est"},
		{desc: "reply during the flood", fromServer: true, flags: TCPAck, want: "+trk+est+rpl"},
	})
	// A new client is refused while the table is full.
	if md := run(tr, udp("10.9.9.9", "10.1.1.2", 1, 2), commit, s.now); md.Conn != 0 {
		t.Fatal("commit admitted into a full table")
	}
	// 30 s after the flood its SYN_SENT connections are gone, even before
	// a sweep, and the sweep frees their room.
	later := s.now + 30*sec
	if md := run(tr, udp("10.9.9.9", "10.1.1.2", 1, 2), commit, later); md.Conn != 0 {
		t.Fatal("commit admitted before the sweep freed room")
	}
	if n := tr.Sweep(later); n != max-1 {
		t.Errorf("swept %d, want %d", n, max-1)
	}
	if md := run(tr, udp("10.9.9.9", "10.1.1.2", 1, 2), commit, later); md.Conn == 0 {
		t.Fatal("commit refused after the sweep")
	}
	if md := run(tr, s.packet(seg{flags: TCPAck}), track, later); md.State != StateTracked|StateEstablished {
		t.Errorf("established connection after the flood: %s", md.State)
	}
}

// TestExpiry: a connection lives exactly its timeout after its last
// packet, whether or not a sweep ran, and the sweep frees it then.
func TestExpiry(t *testing.T) {
	tr := newTracker(t)
	out := udp("10.1.1.1", "10.1.1.2", 1, 2)
	run(tr, out, commit, t0)
	run(tr, out, track, t0+10*sec) // udp_single: 60 s from here
	end := t0 + 70*sec
	if n := tr.Sweep(end - 1); n != 0 || tr.Count() != 1 {
		t.Fatalf("swept %d before the end", n)
	}
	if md := run(tr, out, track, end-1); md.Conn == 0 {
		t.Fatal("gone before its time")
	}
	// That packet re-armed the timer: 60 s from end-1.
	end = end - 1 + 60*sec
	if md := run(tr, out, track, end); md.Conn != 0 || md.State != StateTracked|StateNew {
		t.Fatalf("alive at its end: %+v", md)
	}
	if len(tr.Dump(nil, end)) != 0 {
		t.Error("dump shows an expired connection")
	}
	if tr.Count() != 1 {
		t.Errorf("count %d before the sweep", tr.Count())
	}
	if n := tr.Sweep(end); n != 1 || tr.Count() != 0 {
		t.Errorf("swept %d, count %d", n, tr.Count())
	}
	if s := tr.Stats(); s.Expired != 1 {
		t.Errorf("expired %d", s.Expired)
	}
	// A commit on the tuple of an expired, unswept connection replaces it.
	run(tr, out, commit, end)
	if md := run(tr, out, commit, end+60*sec); md.Conn == 0 || tr.Count() != 1 {
		t.Errorf("recommit over an expired connection: %+v, count %d", md, tr.Count())
	}
}
