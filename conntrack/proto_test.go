package conntrack

import (
	"slices"
	"testing"
	"time"

	"github.com/xswitch/xswitch/header"
)

// step is one packet through one ct() action and the ct_state OVS gives
// it.
type step struct {
	desc string
	p    *Packet
	a    *Action
	at   int64 // seconds after t0
	want string
}

func playSteps(t *testing.T, tr *Tracker, steps []step) {
	t.Helper()
	for i, s := range steps {
		got := run(tr, s.p, s.a, t0+s.at*sec)
		if want := state(t, s.want); got.State != want {
			t.Errorf("step %d (%s): ct_state %s, want %s", i, s.desc, got.State, want)
		}
	}
}

func TestUDPStates(t *testing.T) {
	out, back := udp("10.1.1.1", "10.1.1.2", 1, 2), udp("10.1.1.2", "10.1.1.1", 2, 1)
	playSteps(t, newTracker(t), []step{
		{"first, uncommitted", out, track, 0, "+trk+new"},
		{"reply to nothing", back, track, 0, "+trk+new"},
		{"first, committed", out, commit, 1, "+trk+new"},
		{"second, one way", out, track, 2, "+trk+new"},
		{"reply", back, track, 3, "+trk+est+rpl"},
		{"after the reply", out, track, 4, "+trk+est"},
		// Both ways: udp_multiple, 30 s from the last packet.
		{"29 s later", out, track, 33, "+trk+est"},
		{"30 s after that", back, track, 63, "+trk+new"},
	})
}

func TestUDPTimeouts(t *testing.T) {
	out := udp("10.1.1.1", "10.1.1.2", 1, 2)
	playSteps(t, newTracker(t), []step{
		{"committed", out, commit, 0, "+trk+new"},
		// udp_first: 60 s.
		{"just before 60 s", out, track, 59, "+trk+new"},
	})
	tr := newTracker(t)
	run(tr, out, commit, t0)
	if got := run(tr, udp("10.1.1.2", "10.1.1.1", 2, 1), track, t0+60*sec-1); got.State != state(t, "+trk+est+rpl") {
		t.Errorf("1 ns before udp_first ends: %s", got.State)
	}
	tr = newTracker(t)
	run(tr, out, commit, t0)
	if got := run(tr, udp("10.1.1.2", "10.1.1.1", 2, 1), track, t0+60*sec); got.State != state(t, "+trk+new") {
		t.Errorf("when udp_first ends: %s", got.State)
	}
}

// TestZoneTimeouts: a zone with a timeout policy of its own (ovs-vsctl
// add-zone-tp) times its connections by it, the fields it leaves out by
// the tracker's; other zones keep the tracker's. A connection takes a
// changed policy when its timer is next armed, and the kernel is handed
// its zone's timeout.
func TestZoneTimeouts(t *testing.T) {
	tr := newTracker(t)
	tr.SetZoneTimeouts(map[uint16]Timeouts{5: {UDPFirst: 2 * time.Second, ICMPFirst: 3 * time.Second}})
	out, back := udp("10.1.1.1", "10.1.1.2", 1, 2), udp("10.1.1.2", "10.1.1.1", 2, 1)
	z5 := inZone(*commit, 5)
	playSteps(t, tr, []step{
		{"zone 5, committed", out, z5, 0, "+trk+new"},
		{"zone 0, committed", out, commit, 0, "+trk+new"},
		{"zone 5, its udp_first (2 s) over", back, inZone(*track, 5), 2, "+trk+new"},
		{"zone 0, within OVS's default (60 s)", back, track, 2, "+trk+est+rpl"},
		// udp_multiple is zone 5's too: the tracker's 30 s.
		{"zone 5, again", out, z5, 3, "+trk+new"},
		{"zone 5, answered", back, inZone(*track, 5), 4, "+trk+est+rpl"},
		{"zone 5, 29 s on", out, inZone(*track, 5), 33, "+trk+est"},
	})
	md := run(tr, out, z5, t0+33*sec)
	if k, ok := tr.KernelState(md.Conn); !ok || k.Timeout != int64(DefaultTimeouts.UDPMultiple) {
		t.Errorf("kernel state %+v, %v; want udp_multiple's timeout", k, ok)
	}
	tr.SetZoneTimeouts(map[uint16]Timeouts{5: {UDPMultiple: 5 * time.Second}})
	playSteps(t, tr, []step{
		{"zone 5, the new policy armed", out, inZone(*track, 5), 34, "+trk+est"},
		{"zone 5, 5 s on", out, inZone(*track, 5), 39, "+trk+new"},
	})
	tr.SetZoneTimeouts(nil)
	playSteps(t, tr, []step{
		{"zone 5, no policy", out, z5, 40, "+trk+new"},
		{"zone 5, udp_first is the tracker's again", out, inZone(*track, 5), 99, "+trk+new"},
	})
	if got := run(tr, back, inZone(*track, 5), t0+99*sec); got.State != state(t, "+trk+est+rpl") {
		t.Errorf("zone 5 after its policy went, 59 s on: %s, want +trk+est+rpl", got.State)
	}
}

// TestTimeoutAttributes: a policy's attributes by OVS's names, set and
// read back in OVS's order; the kernel datapath's are refused.
func TestTimeoutAttributes(t *testing.T) {
	var p Timeouts
	for key, d := range map[string]time.Duration{"udp_first": time.Second, "tcp_syn_sent": 2 * time.Second, "icmp_reply": 3 * time.Second} {
		if !p.Set(key, d) {
			t.Errorf("Set(%s) refused", key)
		}
	}
	if p.Set("tcp_close_wait", time.Second) {
		t.Error("Set took tcp_close_wait, which OVS's userspace datapath has not")
	}
	want := []TimeoutAttribute{{"tcp_syn_sent", 2 * time.Second}, {"udp_first", time.Second}, {"icmp_reply", 3 * time.Second}}
	if got := p.Attributes(); !slices.Equal(got, want) {
		t.Errorf("Attributes %v, want %v", got, want)
	}
	tr := newTracker(t)
	tr.SetZoneTimeouts(map[uint16]Timeouts{7: p})
	if got := tr.ZoneTimeouts(); len(got) != 1 || got[7] != p {
		t.Errorf("ZoneTimeouts %v, want zone 7's %v", got, p)
	}
}

func TestOtherProtocol(t *testing.T) {
	// VRRP (112), as OVS's "generic IP protocol" test sends.
	tr := newTracker(t)
	out, back := other("192.168.0.30", "224.0.0.18", 112), other("224.0.0.18", "192.168.0.30", 112)
	playSteps(t, tr, []step{
		{"first", out, commit, 0, "+trk+new"},
		{"reply", back, track, 1, "+trk+est+rpl"},
	})
	checkDump(t, tr, t0+sec, "112,orig=(src=192.168.0.30,dst=224.0.0.18,sport=0,dport=0),reply=(src=224.0.0.18,dst=192.168.0.30,sport=0,dport=0)")
}

func TestICMPEcho(t *testing.T) {
	for _, fam := range []struct {
		name, a, b    string
		echo, reply   uint8
		dump          string
		otherQueryTyp uint8
	}{
		{"v4", "10.1.1.1", "10.1.1.2", 8, 0,
			"icmp,orig=(src=10.1.1.1,dst=10.1.1.2,id=7,type=8,code=0),reply=(src=10.1.1.2,dst=10.1.1.1,id=7,type=0,code=0)", 13},
		{"v6", "fc00::1", "fc00::2", 128, 129,
			"icmpv6,orig=(src=fc00::1,dst=fc00::2,id=7,type=128,code=0),reply=(src=fc00::2,dst=fc00::1,id=7,type=129,code=0)", 0},
	} {
		t.Run(fam.name, func(t *testing.T) {
			tr := newTracker(t)
			req, rep := icmpMsg(fam.a, fam.b, fam.echo, 0, 7), icmpMsg(fam.b, fam.a, fam.reply, 0, 7)
			playSteps(t, tr, []step{
				{"reply to nothing", rep, commit, 0, "+trk+inv"},
				{"request with a code", icmpMsg(fam.a, fam.b, fam.echo, 1, 7), commit, 0, "+trk+inv"},
				{"request", req, commit, 1, "+trk+new"},
				{"request again", req, track, 2, "+trk+new"},
				{"other id", icmpMsg(fam.a, fam.b, fam.echo, 0, 8), track, 2, "+trk+new"},
				{"reply", rep, track, 3, "+trk+est+rpl"},
				{"next request", req, track, 4, "+trk+est"},
			})
			checkDump(t, tr, t0+4*sec, fam.dump)
			// icmp_reply: 30 s.
			playSteps(t, tr, []step{{"30 s on", req, track, 34, "+trk+new"}})
		})
	}
	// Neighbour discovery and other ICMPv6 messages are not tracked:
	// +inv, as OVS has them.
	playSteps(t, newTracker(t), []step{{"neighbour solicitation", icmpMsg("fc00::1", "fc00::2", 135, 0, 0), commit, 0, "+trk+inv"}})
}

// TestICMPRelated: errors quoting a tracked packet are +rel to its
// connection, in the direction the error goes; others are +inv.
func TestICMPRelated(t *testing.T) {
	const unreach, portUnreach, ttlExceeded, tooBig = 3, 3, 11, 2
	out := udp("10.1.1.1", "10.1.1.2", 1000, 53)
	back := udp("10.1.1.2", "10.1.1.1", 53, 1000)
	out6 := tcp("fc00::1", "fc00::2", 1000, 80, TCPSyn, 1, 0, 1000, 0)
	playSteps(t, newTracker(t), []step{
		{"error about nothing", icmpErr("10.1.1.2", "10.1.1.1", unreach, portUnreach, out), commit, 0, "+trk+inv"},
		{"request", out, commit, 1, "+trk+new"},
		{"port unreachable from the server", icmpErr("10.1.1.2", "10.1.1.1", unreach, portUnreach, out), track, 2, "+trk+rel+rpl"},
		{"time exceeded from a router", icmpErr("10.9.9.9", "10.1.1.1", ttlExceeded, 0, out), track, 2, "+trk+rel+rpl"},
		{"about a reply, from the client", icmpErr("10.1.1.1", "10.1.1.2", unreach, portUnreach, back), track, 3, "+trk+rel"},
		{"not to the quoted packet's sender", icmpErr("10.1.1.2", "10.1.1.3", unreach, portUnreach, out), track, 3, "+trk+inv"},
		{"quote cut short", func() *Packet {
			p := icmpErr("10.1.1.2", "10.1.1.1", unreach, portUnreach, out)
			p.Inner.Valid = false
			return p
		}(), track, 3, "+trk+inv"},
		{"an error about an error", icmpErr("10.1.1.2", "10.1.1.1", unreach, 1, icmpErr("10.1.1.1", "10.1.1.2", unreach, 1, back)), track, 3, "+trk+inv"},
		{"v6 SYN", out6, commit, 4, "+trk+new"},
		{"packet too big", icmpErr("fc00::9", "fc00::1", tooBig, 0, out6), track, 5, "+trk+rel+rpl"},
		// An error changes nothing: the connection is still one way.
		{"request again", out, track, 6, "+trk+new"},
	})
	// An error quoting an echo request.
	tr := newTracker(t)
	echo := icmpMsg("10.1.1.1", "10.1.1.2", 8, 0, 9)
	playSteps(t, tr, []step{
		{"echo", echo, commit, 0, "+trk+new"},
		{"host unreachable about it", icmpErr("10.1.1.254", "10.1.1.1", unreach, 1, echo), track, 1, "+trk+rel+rpl"},
	})
}

func TestZonesIsolate(t *testing.T) {
	tr := newTracker(t)
	out, back := udp("10.1.1.1", "10.1.1.2", 1, 2), udp("10.1.1.2", "10.1.1.1", 2, 1)
	playSteps(t, tr, []step{
		{"commit in zone 1", out, inZone(*commit, 1), 0, "+trk+new"},
		{"reply in zone 2", back, inZone(*track, 2), 1, "+trk+new"},
		{"reply in zone 1", back, inZone(*track, 1), 1, "+trk+est+rpl"},
		{"commit in zone 2", out, inZone(*commit, 2), 2, "+trk+new"},
	})
	checkDump(t, tr, t0+2*sec,
		"udp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=1,dport=2),reply=(src=10.1.1.2,dst=10.1.1.1,sport=2,dport=1),zone=1",
		"udp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=1,dport=2),reply=(src=10.1.1.2,dst=10.1.1.1,sport=2,dport=1),zone=2")
	if got := run(tr, back, inZone(*track, 1), t0+3*sec); got.Zone != 1 {
		t.Errorf("ct_zone %d, want 1", got.Zone)
	}
}

func TestMarkAndLabel(t *testing.T) {
	tr := newTracker(t)
	out, back := udp("10.1.1.1", "10.1.1.2", 1, 2), udp("10.1.1.2", "10.1.1.1", 2, 1)
	a := &Action{Commit: true, SetMark: true, Mark: 1, MarkMask: 1, SetLabel: true,
		Label: Label{Lo: 0xaa00000000}, LabelMask: Label{Lo: 0xff00000000}}
	if md := run(tr, out, a, t0); md.Mark != 1 || md.Label != (Label{Lo: 0xaa00000000}) {
		t.Fatalf("commit: mark %#x label %+v", md.Mark, md.Label)
	}
	// Bit-fiddling: set another bit of each, keep the others.
	a = &Action{Commit: true, SetMark: true, Mark: 2, MarkMask: 2, SetLabel: true, Label: Label{Hi: 1 << 63}, LabelMask: Label{Hi: 1 << 63}}
	if md := run(tr, back, a, t0+sec); md.Mark != 3 || md.Label != (Label{Hi: 1 << 63, Lo: 0xaa00000000}) {
		t.Fatalf("second commit: mark %#x label %+v", md.Mark, md.Label)
	}
	if md := run(tr, out, track, t0+2*sec); md.Mark != 3 || md.Label != (Label{Hi: 1 << 63, Lo: 0xaa00000000}) {
		t.Fatalf("tracked: mark %#x label %+v", md.Mark, md.Label)
	}
	checkDump(t, tr, t0+2*sec, "udp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=1,dport=2),reply=(src=10.1.1.2,dst=10.1.1.1,sport=2,dport=1),mark=3,labels=0x8000000000000000000000aa00000000")
	// An uncommitted new packet has no mark, and setting one keeps
	// nothing (there is no connection to keep it in).
	a = &Action{SetMark: true, Mark: 5, MarkMask: 0xff}
	if md := run(tr, udp("10.1.1.1", "10.1.1.2", 7, 8), a, t0); md.Mark != 0 || md.State != state(t, "+trk+new") {
		t.Fatalf("uncommitted: mark %#x state %s", md.Mark, md.State)
	}
}

// TestForceCommit: force ends a connection met in its reply direction
// and commits the packet's as a new one, as OVS's "conntrack - force
// commit" test does.
func TestForceCommit(t *testing.T) {
	tr := newTracker(t)
	out, back := udp("10.1.1.1", "10.1.1.2", 1, 2), udp("10.1.1.2", "10.1.1.1", 2, 1)
	force := &Action{Force: true}
	playSteps(t, tr, []step{
		{"commit", out, commit, 0, "+trk+new"},
		{"original direction with force", out, force, 1, "+trk+new"},
		{"reply with force", back, force, 2, "+trk+new"},
		{"the old original direction is now the reply", out, track, 3, "+trk+est+rpl"},
	})
	checkDump(t, tr, t0+3*sec, "udp,orig=(src=10.1.1.2,dst=10.1.1.1,sport=2,dport=1),reply=(src=10.1.1.1,dst=10.1.1.2,sport=1,dport=2)")
	if s := tr.Stats(); s.Replaced != 1 || s.Created != 2 {
		t.Errorf("stats %+v", s)
	}
}

// TestMalformedAndFragments: what the tracker cannot key is +inv with no
// original tuple: here, a malformed packet, port 0, and a later fragment
// whose first the tracker has not seen.
func TestMalformedAndFragments(t *testing.T) {
	tr := newTracker(t)
	frag := udp("10.1.1.1", "10.1.1.2", 1, 2)
	frag.Fragment, frag.LaterFragment = true, true
	bad := udp("10.1.1.1", "10.1.1.2", 1, 2)
	bad.Malformed = true
	zero := udp("10.1.1.1", "10.1.1.2", 0, 2)
	for _, p := range []*Packet{frag, bad, zero} {
		md := run(tr, p, commit, t0)
		if md.State != StateInvalid|StateTracked || md.Orig != (OrigTuple{}) || md.Conn != 0 {
			t.Errorf("%+v: %+v", p.Header, md)
		}
	}
	if tr.Count() != 0 {
		t.Errorf("%d connections", tr.Count())
	}
}

// TestOrigTuple: ct_nw_src and the rest hold the original direction, for
// ICMP its type and code, as OVS fills them.
func TestOrigTuple(t *testing.T) {
	tr := newTracker(t)
	run(tr, udp("10.1.1.1", "10.1.1.2", 1, 2), commit, t0)
	md := run(tr, udp("10.1.1.2", "10.1.1.1", 2, 1), track, t0)
	want := OrigTuple{Src: ip("10.1.1.1"), Dst: ip("10.1.1.2"), SrcPort: 1, DstPort: 2, Proto: header.ProtoUDP}
	if md.Orig != want {
		t.Errorf("orig %+v, want %+v", md.Orig, want)
	}
	md = run(tr, icmpMsg("10.1.1.1", "10.1.1.2", 8, 0, 3), track, t0)
	want = OrigTuple{Src: ip("10.1.1.1"), Dst: ip("10.1.1.2"), SrcPort: 8, DstPort: 0, Proto: header.ProtoICMP}
	if md.Orig != want {
		t.Errorf("icmp orig %+v, want %+v", md.Orig, want)
	}
}
