package test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xswitch/xswitch/internal/testenv"
)

// Meters over OpenFlow 1.3 from real clients: ovs-ofctl's meter verbs
// and an os-ken application.

var meterStatsLine = regexp.MustCompile(`meter:(\d+) flow_count:(\d+) packet_in_count:(\d+) byte_in_count:\d+ duration:[0-9.]+s bands:((?:\n\d+: packet_count:\d+ byte_count:\d+)*)`)
var bandPackets = regexp.MustCompile(`\d+: packet_count:(\d+)`)

// ofMeterStats is one meter of ovs-ofctl meter-stats.
type ofMeterStats struct {
	flows, packets int
	bands          []int // each band's packet count
}

func ofctlMeterStats(t *testing.T, target string) map[int]ofMeterStats {
	t.Helper()
	stats := map[int]ofMeterStats{}
	for _, m := range meterStatsLine.FindAllStringSubmatch(ofctl(t, "meter-stats", target), -1) {
		id, _ := strconv.Atoi(m[1])
		var s ofMeterStats
		s.flows, _ = strconv.Atoi(m[2])
		s.packets, _ = strconv.Atoi(m[3])
		for _, b := range bandPackets.FindAllStringSubmatch(m[4], -1) {
			n, _ := strconv.Atoi(b[1])
			s.bands = append(s.bands, n)
		}
		stats[id] = s
	}
	return stats
}

// TestOpenFlowOvsOfctlMeters: ovs-ofctl, over OpenFlow 1.3, adds meters
// and a flow through one far above the ping rate, over which pings
// cross and are counted in meter-stats; dump-meters gives the meters back
// as they were added, meter-features says what xswitch has; the meters
// ovs-ofctl sends and the switch must refuse (both units, an id in use,
// a reserved id, a modify of a missing meter, a flow through a missing
// meter) are refused with the spec's errors as ovs-ofctl prints them,
// changing nothing; mod-meter down to a rate below the pings' drops
// them, counted by its band; del-meters takes the meter's flow with it.
func TestOpenFlowOvsOfctlMeters(t *testing.T) {
	testenv.RequireRoot(t)
	requireTool(t, "ovs-ofctl")
	r := newRig(t, 2)
	d, br, a, b := r.d, r.br, r.hosts[0], r.hosts[1]
	target := listenForOfctl(t, d, br)
	ports := ofports(t, d, br)
	pa, pb := ports[a.name], ports[b.name]

	ofctl(t, "del-flows", target)
	fast := "meter=1 pktps burst stats bands=\ntype=drop rate=10000 burst_size=1000"
	remark := "meter=2 kbps bands=\ntype=dscp_remark rate=100000 prec_level=1\ntype=drop rate=200000"
	ofctl(t, "add-meter", target, fast)
	ofctl(t, "add-meter", target, remark)
	ofctl(t, "add-flow", target, fmt.Sprintf("priority=10,in_port=%d,actions=meter:1,output:%d", pa, pb))
	ofctl(t, "add-flow", target, fmt.Sprintf("priority=10,in_port=%d,actions=output:%d", pb, pa))
	requirePing(t, a.ns, b.addr, 56)

	dump := ofctl(t, "dump-meters", target)
	for _, want := range []string{fast, remark} {
		if !strings.Contains(dump, "\n"+want+"\n") {
			t.Errorf("dump-meters lacks %q:\n%s", want, dump)
		}
	}
	// Three pings and ARP went through meter 1, and its band dropped
	// none of them.
	stats := ofctlMeterStats(t, target)
	if m1, m2 := stats[1], stats[2]; len(stats) != 2 || m1.flows != 1 || m1.packets < 3 || len(m1.bands) != 1 || m1.bands[0] != 0 ||
		m2.flows != 0 || m2.packets != 0 || len(m2.bands) != 2 {
		t.Errorf("meter-stats: %+v", stats)
	}
	features := ofctl(t, "meter-features", target)
	if want := "max_meter:1024 max_bands:8 max_color:0\nband_types: drop dscp_remark\ncapabilities: kbps pktps burst stats"; !strings.Contains(features, want) {
		t.Errorf("meter-features does not say %q:\n%s", want, features)
	}

	for _, bad := range []struct {
		verb, arg, want string
	}{
		{"add-meter", "meter=3 kbps pktps bands=type=drop rate=10", "OFPMMFC_BAD_FLAGS"},
		{"add-meter", "meter=1 pktps bands=type=drop rate=10", "OFPMMFC_METER_EXISTS"},
		{"add-meter", "meter=controller kbps bands=type=drop rate=10", "OFPMMFC_INVALID_METER"},
		{"mod-meter", "meter=9 kbps bands=type=drop rate=10", "OFPMMFC_UNKNOWN_METER"},
		// Open vSwitch's answer to a flow through a meter it lacks.
		{"add-flow", fmt.Sprintf("priority=20,in_port=%d,actions=meter:9,output:%d", pa, pb), "OFPMMFC_INVALID_METER"},
	} {
		if out := ofctlFails(t, bad.verb, target, bad.arg); !strings.Contains(out, bad.want) {
			t.Errorf("ovs-ofctl %s %s: does not say %s:\n%s", bad.verb, bad.arg, bad.want, out)
		}
	}
	if after := ofctl(t, "dump-meters", target); meterLines(after) != meterLines(dump) {
		t.Errorf("after the refusals, dump-meters:\n%s\nnot\n%s", after, dump)
	}
	if flows := ofctl(t, "dump-flows", target); strings.Count(flows, "priority=") != 2 || strings.Contains(flows, "meter:9") {
		t.Errorf("after the refusals, dump-flows:\n%s", flows)
	}

	// Pings at five a second are five times what meter 1 lets through
	// now: its band drops the requests that do not cross.
	ofctl(t, "mod-meter", target, "meter=1 pktps burst stats bands=type=drop rate=1 burst_size=1")
	sent, received, out := ping(t, a.ns, b.addr, 56, 10)
	if received > sent-3 {
		t.Errorf("%d of %d pings crossed a meter of 1 packet a second:\n%s", received, sent, out)
	}
	if m1 := ofctlMeterStats(t, target)[1]; len(m1.bands) != 1 || m1.bands[0] < sent-received {
		t.Errorf("after %d of %d pings were lost to meter 1, its stats: %+v", sent-received, sent, m1)
	}

	// Deleting meter 1 deletes the flow through it: pings stop.
	ofctl(t, "del-meter", target, "meter=1")
	if flows := d.x(t, "dump-flows", br); strings.Contains(flows, "meter:1") {
		t.Errorf("the flow through meter 1 outlived it:\n%s", flows)
	}
	if _, received, _ := ping(t, a.ns, b.addr, 56, 2); received != 0 {
		t.Errorf("%d pings crossed after their flow's meter was deleted", received)
	}
	ofctl(t, "del-meters", target)
	if dump := ofctl(t, "dump-meters", target); strings.Contains(dump, "meter=") {
		t.Errorf("after del-meters, dump-meters:\n%s", dump)
	}
}

// meterLines are dump-meters' lines without its header, which names the
// transaction.
func meterLines(dump string) string {
	_, lines, _ := strings.Cut(dump, "\n")
	return lines
}

// TestOpenFlowOsKenMeters: an os-ken application sends a meter with no
// bands and one with a band of rate 0, which the switch refuses with the
// spec's errors (OFPMMFC_OUT_OF_BANDS, as Open vSwitch answers the first,
// and OFPMMFC_BAD_RATE), then a meter and a flow through it, over which
// pings cross; METER_CONFIG gives back that meter alone.
func TestOpenFlowOsKenMeters(t *testing.T) {
	testenv.RequireRoot(t)
	requireTool(t, "osken-manager")
	r := newRig(t, 2)
	d, br, a, b := r.d, r.br, r.hosts[0], r.hosts[1]
	ports := ofports(t, d, br)
	port := freeTCPPort(t)
	app, err := filepath.Abs("osken/meters.py")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "replies")
	t.Setenv("XSWITCH_TEST_PORTS", fmt.Sprintf("%d,%d", ports[a.name], ports[b.name]))
	t.Setenv("XSWITCH_TEST_OUT", out)
	ctl := &osken{t: t, port: port}
	ctl.bg = startBackground(t, "osken-manager", "--ofp-listen-host", "127.0.0.1", "--ofp-tcp-listen-port", strconv.Itoa(port), app)
	d.x(t, "set-fail-mode", br, "secure")
	d.x(t, "set-controller", br, fmt.Sprintf("tcp:127.0.0.1:%d", port))
	waitConnected(t, d, br, true, 15*time.Second)
	waitPing(t, a.ns, b.addr, 10*time.Second)
	requirePing(t, a.ns, b.addr, 56)
	if flows := d.x(t, "dump-flows", br); !strings.Contains(flows, "actions=meter:3,") {
		t.Errorf("the application's flow through its meter is not in dump-flows:\n%s", flows)
	}
	const drop = 1
	want := []string{
		"error type=12 code=11\n", // the meter with no bands
		"error type=12 code=6\n",  // the band of rate 0
		fmt.Sprintf("meter-config meter_id=3 flags=2 bands=[(%d, 10000)]\n", drop),
	}
	var got []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if got, _ = os.ReadFile(out); strings.Count(string(got), "\n") >= len(want) {
			break
		}
	}
	ctl.stop()
	for _, w := range want {
		if !strings.Contains(string(got), w) {
			t.Errorf("the application did not get %q; it got:\n%s\nits output:\n%s", w, got, ctl.bg.output.String())
		}
	}
	if n := strings.Count(string(got), "meter-config"); n != 1 {
		t.Errorf("METER_CONFIG gave %d meters, want the one added:\n%s", n, got)
	}
}
