package conntrack

import "testing"

// TestSecondCTInZoneTakesTheConnection: a second ct() of the same zone
// takes the packet's connection as the first left it (OVS's
// process_one_fast): it does not run the state machine again (the timer
// stays as the first armed it), but it reads the mark again and sets it.
func TestSecondCTInZoneTakesTheConnection(t *testing.T) {
	tr := newTracker(t)
	p := udp("10.1.1.1", "10.1.1.2", 1, 2)
	exec(t, tr, p, commit, t0, "+trk+new")
	exec(t, tr, p, &Action{Commit: true, SetMark: true, Mark: 7, MarkMask: 0xff}, t0+sec, "+trk+new")
	if p.CT.Mark != 7 {
		t.Errorf("mark %d", p.CT.Mark)
	}
	if e := tr.Dump(nil, t0+sec); e[0].Expires != t0+60*sec || e[0].Mark != 7 {
		t.Errorf("entry %+v: the second ct() ran the state machine", e[0])
	}
	// In another zone the packet is looked up afresh.
	exec(t, tr, p, inZone(*track, 9), t0+sec, "+trk+new")
	if p.CT.Mark != 0 || p.CT.Zone != 9 {
		t.Errorf("zone 9: %+v", p.CT)
	}
}

// TestHeadersChangedBetweenCTs is OVS's "negative test for recirculation
// optimization": a packet's addresses rewritten by other actions between
// two ct() of one zone make it another connection's packet.
func TestHeadersChangedBetweenCTs(t *testing.T) {
	tr := newTracker(t)
	p := tcp("10.1.1.2", "10.254.254.1", 40000, 1234, TCPSyn, 1, 0, 1000, 0)
	exec(t, tr, p, track, t0, "+trk+new")
	exec(t, tr, p, &Action{Commit: true, SetMark: true, Mark: 1, MarkMask: ^uint32(0)}, t0, "+trk+new")
	// set_field:10.1.1.1->nw_dst, set_field:10.254.254.2->nw_src
	p.Dst, p.Src = ip("10.1.1.1"), ip("10.254.254.2")
	exec(t, tr, p, track, t0, "+trk+new")
	if p.CT.Mark != 0 {
		t.Fatalf("the rewritten packet has the first connection's mark %d", p.CT.Mark)
	}
	exec(t, tr, p, &Action{Commit: true, SetMark: true, Mark: 2, MarkMask: ^uint32(0)}, t0, "+trk+new")
	checkDump(t, tr, t0,
		"tcp,orig=(src=10.1.1.2,dst=10.254.254.1,sport=40000,dport=1234),reply=(src=10.254.254.1,dst=10.1.1.2,sport=1234,dport=40000),mark=1,protoinfo=(state=SYN_SENT)",
		"tcp,orig=(src=10.254.254.2,dst=10.1.1.1,sport=40000,dport=1234),reply=(src=10.1.1.1,dst=10.254.254.2,sport=1234,dport=40000),mark=2,protoinfo=(state=SYN_SENT)")
}

// TestNATThenTrackAgain: after ct(nat) translated a packet, a ct() of the
// same zone finds its connection by the translated headers and does not
// translate again; ct_clear (a zero CT) forgets it all.
func TestNATThenTrackAgain(t *testing.T) {
	tr := newTracker(t)
	p := udp("10.1.1.1", "10.9.9.9", 1000, 53)
	exec(t, tr, p, &Action{Commit: true, NAT: snat("10.2.2.2", "", 0, 0)}, t0, "+trk+new+snat")
	back := udp("10.9.9.9", "10.2.2.2", 53, 1000)
	exec(t, tr, back, &Action{NAT: NAT{Kind: NATExisting}}, t0, "+trk+est+rpl+dnat")
	checkHeader(t, back, "10.9.9.9", 53, "10.1.1.1", 1000)
	if rw := exec(t, tr, back, &Action{NAT: NAT{Kind: NATExisting}}, t0, "+trk+est+rpl+dnat"); rw != 0 {
		t.Errorf("translated twice: %b", rw)
	}
	exec(t, tr, back, track, t0, "+trk+est+rpl+dnat")
	// Without the metadata the translated packet is just another one.
	back.CT = CT{}
	exec(t, tr, back, track, t0, "+trk+new")
}

// TestCommitRace: two threads committing the same new connection at once
// make one connection; both packets see it.
func TestCommitRace(t *testing.T) {
	for range 200 {
		tr := newTracker(t)
		done := make(chan CT, 2)
		for range 2 {
			go func() { done <- run(tr, udp("10.1.1.1", "10.1.1.2", 1, 2), commit, t0) }()
		}
		a, b := <-done, <-done
		if tr.Count() != 1 {
			t.Fatalf("%d connections", tr.Count())
		}
		if a.Conn == 0 || a.Conn != b.Conn {
			t.Fatalf("handles %v %v", a.Conn, b.Conn)
		}
	}
}
