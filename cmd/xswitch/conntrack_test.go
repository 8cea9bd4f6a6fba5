package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/xswitch/xswitch/conntrack"
	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/internal/cttest"
)

// The conntrack verbs against a daemon whose tracker holds real
// connections: a TCP connection through its handshake in zone 0, a UDP
// exchange and an ICMPv6 echo in zone 5.
func TestConntrackVerbs(t *testing.T) {
	d, x := serve(t)
	must := mustRun(t, x)
	refused := func(want string, args ...string) {
		t.Helper()
		if out, err := x(args...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("xswitch %s: %q, %v; want an error saying %q", strings.Join(args, " "), out, err, want)
		}
	}
	must("add-br", "br0")
	tr, now := d.Conntrack(), conntrack.Now()
	cttest.Handshake(t, tr, 0, "10.0.0.1", "10.0.0.2", 40000, 80, now)
	zone5 := conntrack.Action{Zone: 5, Commit: true}
	cttest.Run(tr, cttest.UDP(t, "10.0.0.1", "10.0.0.3", 5000, 53), zone5, now)
	cttest.Run(tr, cttest.UDP(t, "10.0.0.3", "10.0.0.1", 53, 5000), zone5, now)
	cttest.Run(tr, cttest.Echo(t, "fd00::1", "fd00::2", 7, false), conntrack.Action{Zone: 5, Commit: true, SetMark: true, Mark: 42, MarkMask: ^uint32(0)}, now)

	const (
		tcpLine  = "tcp,orig=(src=10.0.0.1,dst=10.0.0.2,sport=40000,dport=80),reply=(src=10.0.0.2,dst=10.0.0.1,sport=80,dport=40000),protoinfo=(state=ESTABLISHED)\n"
		udpLine  = "udp,orig=(src=10.0.0.1,dst=10.0.0.3,sport=5000,dport=53),reply=(src=10.0.0.3,dst=10.0.0.1,sport=53,dport=5000),zone=5\n"
		icmpLine = "icmpv6,orig=(src=fd00::1,dst=fd00::2,id=7,type=128,code=0),reply=(src=fd00::2,dst=fd00::1,id=7,type=129,code=0),zone=5,mark=42\n"
	)
	if got := must("dump-conntrack"); got != tcpLine+udpLine+icmpLine {
		t.Errorf("dump-conntrack:\n%s\nwant:\n%s", got, tcpLine+udpLine+icmpLine)
	}
	if got := must("dpctl/dump-conntrack", "br0", "zone=5"); got != udpLine+icmpLine {
		t.Errorf("dpctl/dump-conntrack br0 zone=5:\n%s\nwant:\n%s", got, udpLine+icmpLine)
	}
	more := regexp.MustCompile(`^tcp,orig=\(src=10\.0\.0\.1,dst=10\.0\.0\.2,sport=40000,dport=80\),reply=\(src=10\.0\.0\.2,dst=10\.0\.0\.1,sport=80,dport=40000\),id=\d+,status=SEEN_REPLY\|CONFIRMED,timeout=(8640[0-9]|8639[0-9]),protoinfo=\(state_orig=ESTABLISHED,state_reply=ESTABLISHED,flags_orig=0,flags_reply=0\)\n` +
		`udp,orig=\(src=10\.0\.0\.1,dst=10\.0\.0\.3,sport=5000,dport=53\),reply=\(src=10\.0\.0\.3,dst=10\.0\.0\.1,sport=53,dport=5000\),id=\d+,zone=5,status=SEEN_REPLY\|CONFIRMED,timeout=(30|2\d)\n` +
		`icmpv6,orig=\(src=fd00::1,dst=fd00::2,id=7,type=128,code=0\),reply=\(src=fd00::2,dst=fd00::1,id=7,type=129,code=0\),id=\d+,zone=5,status=CONFIRMED,timeout=(60|5\d),mark=42\n$`)
	if got := must("dump-conntrack", "-m", "-s"); !more.MatchString(got) {
		t.Errorf("dump-conntrack -m -s:\n%s\nwant lines matching:\n%s", got, more)
	}

	var dumped conntrackJSON
	if err := json.Unmarshal([]byte(must("dump-conntrack", "--format", "json")), &dumped); err != nil || len(dumped.Entries) != 3 {
		t.Fatalf("dump-conntrack --format json: %+v, %v", dumped, err)
	}
	tcp, udp, icmp := dumped.Entries[0], dumped.Entries[1], dumped.Entries[2]
	if tcp.Text+"\n" != tcpLine || tcp.IPProto != 6 || tcp.Zone != 0 || tcp.Orig.Src != "10.0.0.1" || tcp.Orig.DstPort != 80 ||
		tcp.Reply.Src != "10.0.0.2" || tcp.Reply.DstPort != 40000 || tcp.TCP == nil || tcp.TCP.State != "ESTABLISHED" ||
		tcp.Timeout < 86390 || tcp.Orig.ICMP != nil {
		t.Errorf("dump-conntrack --format json, TCP: %+v (tcp %+v)", tcp, tcp.TCP)
	}
	if udp.Zone != 5 || udp.IPProto != 17 || udp.Orig.SrcPort != 5000 || udp.Reply.SrcPort != 53 || udp.TCP != nil {
		t.Errorf("dump-conntrack --format json, UDP: %+v", udp)
	}
	if icmp.Mark != 42 || icmp.Orig.Src != "fd00::1" || icmp.Orig.ICMP == nil || *icmp.Orig.ICMP != (api.ConntrackICMP{ID: 7, Type: 128}) || icmp.Reply.ICMP == nil || icmp.Reply.ICMP.Type != 129 {
		t.Errorf("dump-conntrack --format json, ICMPv6: %+v", icmp)
	}
	if out := must("dump-conntrack", "zone=9", "--format", "json"); !strings.Contains(out, `"entries": []`) {
		t.Errorf("dump-conntrack of an empty zone --format json printed %s, want an empty list", out)
	}

	if got, want := must("ct-stats-show"), "Connections Stats:\n    Total: 3\n  TCP: 1\n  UDP: 1\n  ICMPv6: 1\n"; got != want {
		t.Errorf("ct-stats-show:\n%s\nwant:\n%s", got, want)
	}
	if got, want := must("dpctl/ct-stats-show", "-m"), "Connections Stats:\n    Total: 3\n  TCP: 1\n    Conn per TCP states:\n\t  [ESTABLISHED]=1\n  UDP: 1\n  ICMPv6: 1\n"; got != want {
		t.Errorf("ct-stats-show -m:\n%s\nwant:\n%s", got, want)
	}
	if got, want := must("ct-stats-show", "br0", "zone=5"), "Connections Stats:\n    Total: 2\n  UDP: 1\n  ICMPv6: 1\n"; got != want {
		t.Errorf("ct-stats-show br0 zone=5:\n%s\nwant:\n%s", got, want)
	}
	var stats ctStatsJSON
	if err := json.Unmarshal([]byte(must("ct-stats-show", "--format", "json")), &stats); err != nil || stats.Total != 3 ||
		len(stats.Protocols) != 3 || stats.Protocols["TCP"] != 1 || stats.Protocols["ICMPv6"] != 1 || stats.TCPStates["ESTABLISHED"] != 1 {
		t.Errorf("ct-stats-show --format json: %+v, %v", stats, err)
	}

	if got := must("ct-get-nconns"); got != "3\n" {
		t.Errorf("ct-get-nconns printed %q, want 3", got)
	}
	if got := must("ct-get-maxconns", "br0"); got != "3000000\n" {
		t.Errorf("ct-get-maxconns printed %q, want OVS's default, 3000000", got)
	}
	if got := must("ct-set-maxconns", "10"); got != "setting maxconns successful\n" {
		t.Errorf("ct-set-maxconns printed %q", got)
	}
	must("dpctl/ct-set-maxconns", "br0", "20")
	refused(`no bridge "br9"`, "ct-set-maxconns", "br9", "30")
	refused(`bad maxconns "x": want a number 0-4294967295`, "ct-set-maxconns", "x")
	refused(`bad maxconns "5000000000": want a number 0-4294967295`, "ct-set-maxconns", "5000000000")
	refused(`ct-set-maxconns takes one number`, "ct-set-maxconns")
	if got := must("ct-get-maxconns"); got != "20\n" || tr.MaxConns() != 20 {
		t.Errorf("after ct-set-maxconns 20 and refused ones, ct-get-maxconns printed %q and the tracker has %d", got, tr.MaxConns())
	}
	if got := must("ct-get-maxconns", "--format", "json"); got != "{\n  \"maxconns\": 20\n}\n" {
		t.Errorf("ct-get-maxconns --format json printed %q", got)
	}
	if got := must("ct-set-maxconns", "25", "--format", "json"); got != "" {
		t.Errorf("ct-set-maxconns --format json printed %q, want nothing", got)
	}

	if got := must("ct-get-tcp-seq-chk"); got != "TCP sequence checking: enabled\n" {
		t.Errorf("ct-get-tcp-seq-chk printed %q", got)
	}
	if got := must("dpctl/ct-disable-tcp-seq-chk"); got != "disabling TCP sequence checking successful\n" {
		t.Errorf("ct-disable-tcp-seq-chk printed %q", got)
	}
	if got := must("ct-get-tcp-seq-chk", "br0"); got != "TCP sequence checking: disabled\n" || tr.TCPSeqCheck() {
		t.Errorf("after ct-disable-tcp-seq-chk, ct-get-tcp-seq-chk printed %q and the tracker checks: %v", got, tr.TCPSeqCheck())
	}
	refused(`ct-enable-tcp-seq-chk takes no argument but the bridge, not "on"`, "ct-enable-tcp-seq-chk", "br0", "on")
	if got := must("ct-enable-tcp-seq-chk"); got != "enabling TCP sequence checking successful\n" || !tr.TCPSeqCheck() {
		t.Errorf("ct-enable-tcp-seq-chk printed %q; the tracker checks: %v", got, tr.TCPSeqCheck())
	}
	if got := must("ct-get-tcp-seq-chk", "--format", "json"); got != "{\n  \"tcp_seq_chk\": true\n}\n" {
		t.Errorf("ct-get-tcp-seq-chk --format json printed %q", got)
	}
}

func TestConntrackLimitVerbs(t *testing.T) {
	d, x := serve(t)
	must := mustRun(t, x)
	must("add-br", "br0")
	tr, now := d.Conntrack(), conntrack.Now()
	cttest.Handshake(t, tr, 0, "10.0.0.1", "10.0.0.2", 40000, 80, now)
	for port := uint16(1); port <= 2; port++ {
		cttest.Run(tr, cttest.UDP(t, "10.0.0.1", "10.0.0.3", port, 53), conntrack.Action{Zone: 5, Commit: true}, now)
	}

	if got := must("ct-get-limits"); got != "default limit=0\n" {
		t.Errorf("ct-get-limits without limits printed %q", got)
	}
	must("ct-set-limits", "default=100", "zone=5,limit=2", "zone=7,limit=0")
	if got, want := must("ct-get-limits"), "default limit=100\nzone=5,limit=2,count=2\nzone=7,limit=0,count=0\n"; got != want {
		t.Errorf("ct-get-limits:\n%s\nwant:\n%s", got, want)
	}
	if got, want := must("dpctl/ct-get-limits", "br0", "zone=0,5"), "default limit=100\nzone=0,limit=100,count=1\nzone=5,limit=2,count=2\n"; got != want {
		t.Errorf("ct-get-limits br0 zone=0,5:\n%s\nwant:\n%s", got, want)
	}
	// Zone 5 is at its limit: a third connection is refused, the packet
	// going on as +new.
	if st := cttest.Run(tr, cttest.UDP(t, "10.0.0.1", "10.0.0.3", 3, 53), conntrack.Action{Zone: 5, Commit: true}, now); st != conntrack.StateNew|conntrack.StateTracked {
		t.Errorf("a commit beyond zone 5's limit of 2: ct_state %v, want +new+trk", st)
	}
	if got := must("ct-get-nconns"); got != "3\n" {
		t.Errorf("ct-get-nconns after a commit beyond the zone's limit printed %q, want 3", got)
	}

	var limits ctLimitsJSON
	if err := json.Unmarshal([]byte(must("ct-get-limits", "--format", "json")), &limits); err != nil || limits.Default != 100 ||
		len(limits.Zones) != 2 || limits.Zones[0].Zone != 5 || limits.Zones[0].Limit != 2 || limits.Zones[0].Count != 2 || limits.Zones[1].Zone != 7 {
		t.Errorf("ct-get-limits --format json: %+v, %v", limits, err)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ct-set-limits", "zone=70000,limit=1"}, `zone limit "zone=70000,limit=1": bad zone "70000": want a number 0-65535`},
		{[]string{"ct-set-limits", "zone=1,limit=5000000000"}, `zone limit "zone=1,limit=5000000000": bad limit "5000000000": want a number 0-4294967295`},
		{[]string{"ct-set-limits", "zone=1,limit=5", "zone=1"}, `zone limit "zone=1": want zone=N,limit=N`},
		{[]string{"ct-set-limits", "zone=1,limit=5,zone=2"}, `zone limit "zone=1,limit=5,zone=2": want zone=N,limit=N`},
		{[]string{"ct-set-limits", "zone=1,limit=5", "default=-1"}, `bad default limit "-1"`},
		{[]string{"ct-set-limits"}, "ct-set-limits needs default=N or zone=N,limit=N"},
		{[]string{"ct-set-limits", "br9", "default=1"}, `no bridge "br9"`},
		{[]string{"ct-get-limits", "zone=a"}, `bad zone "a"`},
		{[]string{"ct-get-limits", "zones=1"}, `bad argument "zones=1": want zone=N[,N...]`},
		{[]string{"ct-del-limits", "zone=5,x"}, `bad zone "x"`},
		{[]string{"ct-del-limits"}, "ct-del-limits needs default or zone=N[,N...]"},
	} {
		if _, err := x(c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("xswitch %s: %v, want an error saying %q", strings.Join(c.args, " "), err, c.want)
		}
	}
	if got, want := must("ct-get-limits"), "default limit=100\nzone=5,limit=2,count=2\nzone=7,limit=0,count=0\n"; got != want {
		t.Errorf("refused ct-set-limits and ct-del-limits changed the limits:\n%s\nwant:\n%s", got, want)
	}

	must("ct-del-limits", "zone=5,9")
	if got, want := must("ct-get-limits"), "default limit=100\nzone=7,limit=0,count=0\n"; got != want {
		t.Errorf("after ct-del-limits zone=5,9:\n%s\nwant:\n%s", got, want)
	}
	must("dpctl/ct-del-limits", "br0", "default", "zone=7")
	if got := must("ct-get-limits", "zone=5"); got != "default limit=0\nzone=5,limit=0,count=2\n" {
		t.Errorf("after ct-del-limits default zone=7, ct-get-limits zone=5 printed %q", got)
	}
	if _, zones := tr.ZoneLimits(); len(zones) != 0 {
		t.Errorf("the tracker still has zone limits %+v", zones)
	}
}

func TestFlushConntrack(t *testing.T) {
	d, x := serve(t)
	must := mustRun(t, x)
	must("add-br", "br0")
	tr, now := d.Conntrack(), conntrack.Now()
	cttest.Handshake(t, tr, 0, "10.0.0.1", "10.0.0.2", 40000, 80, now)
	cttest.Handshake(t, tr, 0, "10.0.0.1", "10.0.0.2", 40001, 80, now)
	cttest.Run(tr, cttest.UDP(t, "10.0.0.1", "10.0.0.3", 5000, 53), conntrack.Action{Zone: 5, Commit: true}, now)
	cttest.Run(tr, cttest.Echo(t, "10.0.0.1", "10.0.0.3", 9, false), conntrack.Action{Zone: 5, Commit: true}, now)
	nconns := func() string { t.Helper(); return strings.TrimSpace(must("ct-get-nconns")) }

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"flush-conntrack", "zone=70000"}, `flush-conntrack "zone=70000": failed to parse zone`},
		{[]string{"flush-conntrack", "ct_nw_src=10.0.0.300"}, `flush-conntrack "ct_nw_src=10.0.0.300": original tuple: failed to parse field ct_nw_src`},
		{[]string{"flush-conntrack", "ct_nw_src=10.0.0.1,ct_tp_src=1"}, "original tuple: port is set without protocol"},
		{[]string{"flush-conntrack", "ct_nw_src=10.0.0.1", "ct_nw_dst=10.0.0.1", "x=1"}, "invalid arguments"},
		{[]string{"flush-conntrack", "br9"}, `no bridge "br9"`},
	} {
		if _, err := x(c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("xswitch %s: %v, want an error saying %q", strings.Join(c.args, " "), err, c.want)
		}
	}
	if n := nconns(); n != "4" {
		t.Fatalf("refused flushes left %s connections, want all 4", n)
	}

	// A whole tuple names one connection, found from either direction.
	if out := must("flush-conntrack", "ct_nw_src=10.0.0.2,ct_nw_dst=10.0.0.1,ct_nw_proto=6,ct_tp_src=80,ct_tp_dst=40001"); out != "" {
		t.Errorf("flush-conntrack printed %q, want nothing", out)
	}
	if got := must("dump-conntrack", "zone=0"); got != "tcp,orig=(src=10.0.0.1,dst=10.0.0.2,sport=40000,dport=80),reply=(src=10.0.0.2,dst=10.0.0.1,sport=80,dport=40000),protoinfo=(state=ESTABLISHED)\n" {
		t.Errorf("after flushing the connection from port 40001 by its reply tuple, zone 0 holds:\n%s", got)
	}
	must("dpctl/flush-conntrack", "br0", "zone=5", "ct_nw_proto=1")
	if got := must("dump-conntrack", "zone=5"); got != "udp,orig=(src=10.0.0.1,dst=10.0.0.3,sport=5000,dport=53),reply=(src=10.0.0.3,dst=10.0.0.1,sport=53,dport=5000),zone=5\n" {
		t.Errorf("after flushing zone 5's ICMP, zone 5 holds:\n%s", got)
	}
	must("flush-conntrack", "zone=5")
	if n := nconns(); n != "1" {
		t.Errorf("after flushing zone 5, %s connections are left, want 1", n)
	}
	must("flush-conntrack")
	if n := nconns(); n != "0" || tr.Stats().Flushed != 4 {
		t.Errorf("after flushing all, %s connections are left (want 0); the tracker counts %d flushed (want 4)", n, tr.Stats().Flushed)
	}
}

func TestConntrackVerbsTellTheBridgeFromTheArguments(t *testing.T) {
	for _, c := range []struct {
		verb string
		args []string
		want bool
	}{
		{"dump-conntrack", nil, false},
		{"dump-conntrack", []string{"br0"}, true},
		{"dump-conntrack", []string{"zone=1"}, false},
		{"flush-conntrack", []string{"", "ct_nw_src=10.0.0.1"}, false},
		{"flush-conntrack", []string{"br0", "zone=1"}, true},
		{"ct-set-maxconns", []string{"10"}, false},
		{"ct-set-maxconns", []string{"br0", "10"}, true},
		{"ct-del-limits", []string{"default"}, false},
		{"ct-del-limits", []string{"br0", "default"}, true},
		{"ct-get-limits", []string{"br0"}, true},
	} {
		if got := namesBridge(c.verb, c.args); got != c.want {
			t.Errorf("namesBridge(%s, %q) = %v, want %v", c.verb, c.args, got, c.want)
		}
	}
}
