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

// Groups over OpenFlow 1.3 from real clients: ovs-ofctl's group verbs
// and an os-ken application.

// ofctlFails runs ovs-ofctl -O OpenFlow13 verb against target, which must
// refuse it, and returns what it printed.
func ofctlFails(t testing.TB, verb, target string, args ...string) string {
	t.Helper()
	r := run(t, "ovs-ofctl", append([]string{"-O", "OpenFlow13", "--no-names", verb, target}, args...)...)
	if r.code == 0 {
		t.Fatalf("ovs-ofctl %s %s %s succeeded:\n%s", verb, target, strings.Join(args, " "), r.stdout)
	}
	return r.stdout + r.stderr
}

var groupStatsLine = regexp.MustCompile(`group_id=(\d+),duration=[0-9.]+s,ref_count=(\d+),packet_count=(\d+),byte_count=\d+((?:,bucket\d+:packet_count=\d+,byte_count=\d+)*)`)
var bucketPackets = regexp.MustCompile(`bucket\d+:packet_count=(\d+)`)

// groupStats is one group of ovs-ofctl dump-group-stats.
type groupStats struct {
	refCount, packets int
	buckets           []int // each bucket's packet count
}

func dumpGroupStats(t *testing.T, target string) map[int]groupStats {
	t.Helper()
	return parseGroupStats(ofctl(t, "dump-group-stats", target))
}

// parseGroupStats reads dump-group-stats' lines, ovs-ofctl's or xswitch's,
// by group id.
func parseGroupStats(out string) map[int]groupStats {
	stats := map[int]groupStats{}
	for _, m := range groupStatsLine.FindAllStringSubmatch(out, -1) {
		id, _ := strconv.Atoi(m[1])
		var g groupStats
		g.refCount, _ = strconv.Atoi(m[2])
		g.packets, _ = strconv.Atoi(m[3])
		for _, b := range bucketPackets.FindAllStringSubmatch(m[4], -1) {
			n, _ := strconv.Atoi(b[1])
			g.buckets = append(g.buckets, n)
		}
		stats[id] = g
	}
	return stats
}

// TestOpenFlowOvsOfctlGroups: ovs-ofctl, over OpenFlow 1.3, adds groups
// (an all group to two hosts, an indirect group chained to it) and a flow
// to them; pings cross them and are counted in dump-group-stats;
// dump-groups gives them back as they were added; mod-group changes
// one; a loop, a bucket to a missing port, an id taken and the delete of
// a chained group are refused with the spec's errors, changing nothing;
// out_group selects the flow that sends to a group; del-groups takes a
// group's flow with it.
func TestOpenFlowOvsOfctlGroups(t *testing.T) {
	testenv.RequireRoot(t)
	requireTool(t, "ovs-ofctl")
	r := newRig(t, 3)
	d, br, a, b, c := r.d, r.br, r.hosts[0], r.hosts[1], r.hosts[2]
	target := listenForOfctl(t, d, br)
	ports := ofports(t, d, br)
	pa, pb, pc := ports[a.name], ports[b.name], ports[c.name]

	ofctl(t, "del-flows", target)
	all := fmt.Sprintf("group_id=1,type=all,bucket=actions=output:%d,bucket=actions=output:%d", pb, pc)
	indirect := "group_id=2,type=indirect,bucket=actions=group:1"
	ofctl(t, "add-group", target, all)
	ofctl(t, "add-group", target, indirect)
	ofctl(t, "add-flow", target, fmt.Sprintf("priority=10,in_port=%d,actions=group:2", pa))
	ofctl(t, "add-flow", target, fmt.Sprintf("priority=10,in_port=%d,actions=output:%d", pb, pa))
	requirePing(t, a.ns, b.addr, 56)

	dump := ofctl(t, "dump-groups", target)
	for _, want := range []string{all, indirect} {
		if !strings.Contains(dump, " "+want+"\n") {
			t.Errorf("dump-groups lacks %q:\n%s", want, dump)
		}
	}
	stats := dumpGroupStats(t, target)
	g1, g2 := stats[1], stats[2]
	// Three pings and ARP went through group 2 and on into group 1, which
	// counted each frame once, and whose every bucket took each.
	if len(stats) != 2 || g1.refCount != 1 || g2.refCount != 1 || g2.packets < 3 || len(g2.buckets) != 1 || g2.buckets[0] != g2.packets ||
		g1.packets != g2.packets || len(g1.buckets) != 2 || g1.buckets[0] != g2.packets || g1.buckets[1] != g2.packets {
		t.Errorf("dump-group-stats: %+v\n%s", stats, ofctl(t, "dump-group-stats", target))
	}

	modified := fmt.Sprintf("group_id=1,type=all,bucket=actions=output:%d", pb)
	ofctl(t, "mod-group", target, modified)
	requirePing(t, a.ns, b.addr, 56)

	for _, bad := range []struct {
		verb, group, want string
	}{
		{"mod-group", "group_id=1,type=all,bucket=actions=group:2", "OFPGMFC_LOOP"},
		{"add-group", "group_id=3,type=all,bucket=actions=output:99", "OFPBAC_BAD_OUT_PORT"},
		{"add-group", all, "OFPGMFC_GROUP_EXISTS"},
		{"add-group", "group_id=3,type=all,bucket=actions=group:9", "OFPGMFC_UNKNOWN_GROUP"},
		{"del-groups", "group_id=1", "OFPGMFC_CHAINED_GROUP"},
	} {
		if out := ofctlFails(t, bad.verb, target, bad.group); !strings.Contains(out, bad.want) {
			t.Errorf("ovs-ofctl %s %s: does not say %s:\n%s", bad.verb, bad.group, bad.want, out)
		}
	}
	dump = ofctl(t, "dump-groups", target)
	if !strings.Contains(dump, " "+modified+"\n") || !strings.Contains(dump, " "+indirect+"\n") || strings.Contains(dump, "group_id=3") {
		t.Errorf("after the refusals, dump-groups:\n%s", dump)
	}

	if out := ofctl(t, "dump-flows", target, "out_group=2"); !strings.Contains(out, "actions=group:2") || strings.Count(out, "priority=") != 1 {
		t.Errorf("dump-flows out_group=2 does not give exactly the flow to group 2:\n%s", out)
	}
	if out := ofctl(t, "dump-flows", target, "out_group=1"); strings.Contains(out, "priority=") {
		t.Errorf("dump-flows out_group=1 gives flows, and none sends to group 1 directly:\n%s", out)
	}

	// Deleting group 2 deletes the flow that sends to it: pings stop.
	ofctl(t, "del-groups", target, "group_id=2")
	if flows := d.x(t, "dump-flows", br); strings.Contains(flows, "group:2") {
		t.Errorf("the flow to group 2 outlived it:\n%s", flows)
	}
	if _, received, _ := ping(t, a.ns, b.addr, 56, 2); received != 0 {
		t.Errorf("%d pings crossed after their flow's group was deleted", received)
	}
	ofctl(t, "del-groups", target)
	if dump := ofctl(t, "dump-groups", target); strings.Contains(dump, "group_id=") {
		t.Errorf("after del-groups, dump-groups:\n%s", dump)
	}
}

// TestOpenFlowOsKenSelectGroup: an os-ken application installs a select
// group (a bucket of weight 0 to one host, which no flow takes, and one
// to the other) and a flow to it; pings cross it, and the group comes
// back in GROUP_DESC as the application sent it.
func TestOpenFlowOsKenSelectGroup(t *testing.T) {
	testenv.RequireRoot(t)
	requireTool(t, "osken-manager")
	r := newRig(t, 3)
	d, br, a, b, c := r.d, r.br, r.hosts[0], r.hosts[1], r.hosts[2]
	ports := ofports(t, d, br)
	port := freeTCPPort(t)
	app, err := filepath.Abs("osken/select_group.py")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "replies")
	t.Setenv("XSWITCH_TEST_PORTS", fmt.Sprintf("%d,%d,%d", ports[a.name], ports[b.name], ports[c.name]))
	t.Setenv("XSWITCH_TEST_OUT", out)
	ctl := &osken{t: t, port: port}
	ctl.bg = startBackground(t, "osken-manager", "--ofp-listen-host", "127.0.0.1", "--ofp-tcp-listen-port", strconv.Itoa(port), app)
	d.x(t, "set-fail-mode", br, "secure")
	d.x(t, "set-controller", br, fmt.Sprintf("tcp:127.0.0.1:%d", port))
	waitConnected(t, d, br, true, 15*time.Second)
	waitPing(t, a.ns, b.addr, 10*time.Second)
	requirePing(t, a.ns, b.addr, 56)
	if flows := d.x(t, "dump-flows", br); !strings.Contains(flows, "actions=group:1") {
		t.Errorf("the application's flow to its group is not in dump-flows:\n%s", flows)
	}
	want := fmt.Sprintf("group-desc group_id=1 type=1 buckets=[(0, %d), (3, %d)]", ports[c.name], ports[b.name])
	var got []byte
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(string(got), want) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		got, _ = os.ReadFile(out)
	}
	ctl.stop()
	if !strings.Contains(string(got), want) {
		t.Errorf("the application did not get %q back, but %q; its output:\n%s", want, got, ctl.bg.output.String())
	}
}
