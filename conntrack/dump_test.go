package conntrack

import (
	"strings"
	"testing"

	"github.com/xswitch/xswitch/header"
)

// TestFlush follows OVS's "conntrack - ct flush": connections from port 1
// committed in zone 0 with a mark, from port 2 in zone 5 with a label,
// flushed by whole tuples in either direction, by parts of the original
// or reply tuple, and all at once.
func TestFlush(t *testing.T) {
	tr := newTracker(t)
	from1 := &Action{Commit: true, SetMark: true, Mark: 0xaa, MarkMask: ^uint32(0)}
	from2 := &Action{Zone: 5, Commit: true, SetLabel: true, Label: Label{Lo: 0xaa00000000}, LabelMask: Label{^uint64(0), ^uint64(0)}}
	const (
		line1 = "udp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=1,dport=2),reply=(src=10.1.1.2,dst=10.1.1.1,sport=2,dport=1),mark=170"
		line2 = "udp,orig=(src=10.1.1.2,dst=10.1.1.1,sport=2,dport=1),reply=(src=10.1.1.1,dst=10.1.1.2,sport=1,dport=2),zone=5,labels=0xaa00000000"
	)
	send1 := func() { run(tr, udp("10.1.1.1", "10.1.1.2", 1, 2), from1, t0) }
	send2 := func() { run(tr, udp("10.1.1.2", "10.1.1.1", 2, 1), from2, t0) }
	flush := func(args ...string) {
		t.Helper()
		f, err := ParseFlushArgs(args)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		tr.Flush(&f, t0)
	}

	send1()
	checkDump(t, tr, t0, line1)
	flush("ct_nw_src=10.1.1.2,ct_nw_dst=10.1.1.1,ct_nw_proto=17,ct_tp_src=2,ct_tp_dst=1")
	checkDump(t, tr, t0)

	send2()
	checkDump(t, tr, t0, line2)
	flush("zone=5", "ct_nw_src=10.1.1.1,ct_nw_dst=10.1.1.2,ct_nw_proto=17,ct_tp_src=1,ct_tp_dst=2")
	checkDump(t, tr, t0)

	run(tr, icmpMsg("10.1.1.2", "10.1.1.1", 8, 0, 4242), from2, t0)
	checkDump(t, tr, t0, "icmp,orig=(src=10.1.1.2,dst=10.1.1.1,id=4242,type=8,code=0),reply=(src=10.1.1.1,dst=10.1.1.2,id=4242,type=0,code=0),zone=5,labels=0xaa00000000")
	flush("zone=5", "ct_nw_src=10.1.1.2,ct_nw_dst=10.1.1.1,ct_nw_proto=1,icmp_id=4242,icmp_type=8,icmp_code=0")
	checkDump(t, tr, t0)

	for _, c := range [][2][]string{
		{{"ct_nw_proto=17,ct_tp_src=1"}, {"ct_nw_proto=17,ct_tp_src=2"}},
		{{"ct_nw_proto=17,ct_tp_dst=2"}, {"ct_nw_proto=17,ct_tp_dst=1"}},
		{{"ct_nw_src=10.1.1.1"}, {"ct_nw_src=10.1.1.2"}},
		{{"ct_nw_dst=10.1.1.2"}, {"ct_nw_dst=10.1.1.1"}},
		{{"", "ct_nw_src=10.1.1.2"}, {"zone=5", "", "ct_nw_src=10.1.1.1"}},
		{{"mark=0xaa/0xff"}, {"labels=0xaa00000000"}},
	} {
		send1()
		send2()
		checkDump(t, tr, t0, line1, line2)
		flush(c[0]...)
		checkDump(t, tr, t0, line2)
		flush(c[1]...)
		checkDump(t, tr, t0)
	}
	send1()
	send2()
	flush()
	checkDump(t, tr, t0)
	if s := tr.Stats(); s.Flushed != 3+2*6+2 {
		t.Errorf("flushed %d", s.Flushed)
	}

	// By zone.
	send1()
	send2()
	zone := uint16(5)
	if n := tr.Flush(&Filter{Zone: &zone}, t0); n != 1 {
		t.Errorf("zone flush removed %d", n)
	}
	checkDump(t, tr, t0, line1)
}

func TestParseFlushArgsErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		err  string
	}{
		{[]string{"zone=70000"}, "failed to parse zone"},
		{[]string{"mark=x"}, "failed to parse mark"},
		{[]string{"ct_nw_src=10.1.1.1,ct_ipv6_dst=fc00::1"}, "the L3 protocol does not match"},
		{[]string{"ct_tp_src=1"}, "port is set without protocol"},
		{[]string{"ct_nw_proto=17,icmp_type=8"}, "invalid L4 fields"},
		{[]string{"ct_nw_src=10.1.1.1,ct_nw_src=10.1.1.2"}, "set multiple times"},
		{[]string{"bogus=1"}, "invalid conntrack tuple field"},
		{[]string{"ct_nw_src"}, "missing value"},
		{[]string{"", "", "x"}, "invalid arguments"},
	} {
		if _, err := ParseFlushArgs(c.args); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q: error %v, want %q", c.args, err, c.err)
		}
	}
}

func TestFormat(t *testing.T) {
	tr := newTracker(t)
	s := newSession(tr)
	syn := seg{desc: "SYN", flags: TCPSyn, wscale: 8, want: "+trk+new"}
	synack := seg{desc: "SYN-ACK", fromServer: true, flags: TCPSyn | TCPAck, wscale: 10, want: "+trk+est+rpl"}
	s.play(t, []seg{syn, synack})
	run(tr, tcp("fc00::1", "::10.0.0.1", 5, 6, TCPAck, 1, 1, 100, 0), inZone(Action{Commit: true, NAT: snat("fc00::9", "", 0, 0)}, 3), s.now)
	es := tr.Dump(nil, s.now)
	if len(es) != 2 {
		t.Fatalf("%d entries", len(es))
	}
	v4, v6 := &es[0], &es[1]
	if got, want := v4.Format(true, true), "tcp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=40000,dport=80),reply=(src=10.1.1.2,dst=10.1.1.1,sport=80,dport=40000),id="+itoa(uint64(v4.Handle.slot()))+
		",status=SEEN_REPLY|CONFIRMED,timeout=30,protoinfo=(state_orig=ESTABLISHED,state_reply=SYN_SENT,wscale_orig=7,wscale_reply=9,flags_orig=WINDOW_SCALE,flags_reply=WINDOW_SCALE)"; got != want {
		t.Errorf("verbose:\n got %s\nwant %s", got, want)
	}
	if got, want := v6.Format(false, false), "tcp,orig=(src=fc00::1,dst=::10.0.0.1,sport=5,dport=6),reply=(src=::10.0.0.1,dst=fc00::9,sport=6,dport=5),zone=3,protoinfo=(state=SYN_SENT)"; got != want {
		t.Errorf("v6:\n got %s\nwant %s", got, want)
	}
	if got, want := v6.Format(true, false), "flags_orig=BE_LIBERAL,flags_reply=BE_LIBERAL)"; !strings.HasSuffix(got, want) || !strings.Contains(got, "status=CONFIRMED|SRC_NAT|SRC_NAT_DONE") {
		t.Errorf("v6 verbose: %s", got)
	}

	run(tr, udp("10.1.1.1", "10.1.1.2", 1, 2), commit, s.now)
	run(tr, icmpMsg("10.1.1.1", "10.1.1.2", 8, 0, 1), commit, s.now)
	run(tr, icmpMsg("fc00::1", "fc00::2", 128, 0, 1), commit, s.now)
	run(tr, other("10.1.1.1", "10.1.1.2", 47), commit, s.now)
	want := "Connections Stats:\n    Total: 6\n  TCP: 2\n    Conn per TCP states:\n\t  [SYN_SENT]=1\n\t  [ESTABLISHED]=1\n  UDP: 1\n  ICMP: 1\n  ICMPv6: 1\n  Other: 1\n"
	stats := CountConns(tr.Dump(nil, s.now))
	if got := stats.Format(true); got != want {
		t.Errorf("ct-stats-show:\n%s\nwant:\n%s", got, want)
	}
	zone := uint16(3)
	stats = CountConns(tr.Dump(&Filter{Zone: &zone}, s.now))
	if got := stats.Format(false); got != "Connections Stats:\n    Total: 1\n  TCP: 1\n" {
		t.Errorf("ct-stats-show zone=3:\n%s", got)
	}
	if got := protoName(header.ProtoSCTP) + protoName(136) + protoName(99); got != "sctpudplite99" {
		t.Errorf("names %s", got)
	}
}
