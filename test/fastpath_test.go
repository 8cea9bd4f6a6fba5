package test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The in-kernel fast path, from outside: frames that the XDP program
// carries never reach the daemon, and yet the counters, timeouts and
// table edits must behave as if they had.

// requireFastPath skips a fast-path test in the suite's run with the fast
// path off, where there is nothing for it to test.
func requireFastPath(t *testing.T) {
	t.Helper()
	if fastPathOff() {
		t.Skip("the suite runs with --fast-path off (XSWITCH_TEST_FAST_PATH=off): nothing to test")
	}
}

var (
	fastPathLine   = regexp.MustCompile(`fast path: (\d+) frames carried in the kernel, (\d+) entries`)
	dumpFlowsCount = regexp.MustCompile(`n_packets=(\d+)`)
)

// kernelCarried is how many frames pmd-stats-show says the fast path carried.
func kernelCarried(t testing.TB, d *daemon, br string) uint64 {
	t.Helper()
	out := d.x(t, "pmd-stats-show", br)
	m := fastPathLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("pmd-stats-show has no fast path line:\n%s", out)
	}
	n, _ := strconv.ParseUint(m[1], 10, 64)
	return n
}

// rulePackets is n_packets of the one rule of dump-flows whose line holds marker.
func rulePackets(t testing.TB, d *daemon, br, marker string) uint64 {
	t.Helper()
	out := d.x(t, "dump-flows", br)
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, marker) {
			if m := dumpFlowsCount.FindStringSubmatch(line); m != nil {
				n, _ := strconv.ParseUint(m[1], 10, 64)
				return n
			}
		}
	}
	t.Fatalf("no rule with %q in dump-flows:\n%s", marker, out)
	return 0
}

// pingFlood runs ping -f from ns to addr, count echo requests, and wants
// every reply.
func pingFlood(t testing.TB, ns, addr string, count int) {
	t.Helper()
	r := run(t, "ip", "netns", "exec", ns, "ping", "-n", "-q", "-f", "-c", strconv.Itoa(count), "-W", "1", addr)
	m := pingSummary.FindStringSubmatch(r.stdout)
	if m == nil || m[1] != m[2] {
		t.Fatalf("ping -f -c %d %s from %s lost replies:\n%s%s", count, addr, ns, r.stdout, r.stderr)
	}
}

// The frames of a ping flood go through the kernel, and the rule's and
// ports' counters still count every one of them.
func TestFastPathCountsEveryFrame(t *testing.T) {
	requireFastPath(t)
	r := newRig(t, 2)
	for _, p := range parseShow(t, r.d.x(t, "show"))[0].ports {
		if got := p.attrs["fastpath"]; got != "on" {
			t.Fatalf("port %s: fastpath=%q, want on (veth peers xswitch creates have GRO on)", p.name, got)
		}
	}
	rule0, ports0, carried0 := rulePackets(t, r.d, r.br, "actions=NORMAL"), dumpPorts(t, r.d, r.br), kernelCarried(t, r.d, r.br)
	const n = 5000
	pingFlood(t, r.hosts[0].ns, r.hosts[1].addr, n)
	rule, ports, carried := rulePackets(t, r.d, r.br, "actions=NORMAL"), dumpPorts(t, r.d, r.br), kernelCarried(t, r.d, r.br)
	// Requests and replies: 2n frames, and the few the namespaces send
	// on their own (IPv6 router solicitations, say).
	const slack = 20
	if got := rule - rule0; got < 2*n || got > 2*n+slack {
		t.Errorf("NORMAL counted %d frames during a flood of %d pings, want %d (+%d)", got, n, 2*n, slack)
	}
	if got := carried - carried0; got < 2*n*9/10 {
		t.Errorf("the fast path carried %d of the flood's %d frames, want most of them", got, 2*n)
	}
	for ofport, before := range ports0 {
		c := ports[ofport]
		if rx, tx := c.rxPkts-before.rxPkts, c.txPkts-before.txPkts; rx < n || rx > n+slack || tx < n || tx > n+slack {
			t.Errorf("port %d counted rx %d and tx %d during the flood, want %d each (+%d)", ofport, rx, tx, n, slack)
		}
	}
	out := r.d.x(t, "dump-fastpath", r.br)
	if !strings.Contains(out, "in_port=1,") || !strings.Contains(out, "actions:output:2") {
		t.Errorf("dump-fastpath does not show the flood's flow from port 1 to port 2:\n%s", out)
	}
	// trace says which flows the kernel carries, and why not the others.
	src, dst := nsMAC(t, r.hosts[0].ns, "eth0"), nsMAC(t, r.hosts[1].ns, "eth0")
	for packet, want := range map[string]string{
		"icmp,in_port=1,dl_src=" + src + ",dl_dst=" + dst:            "Carried in the kernel (fast path): yes",
		"icmp,in_port=1,dl_src=" + src + ",dl_dst=ff:ff:ff:ff:ff:ff": "Carried in the kernel (fast path): no (a flood)",
	} {
		if out := r.d.x(t, "trace", r.br, packet); !strings.Contains(out, want) {
			t.Errorf("trace %s: no %q in\n%s", packet, want, out)
		}
	}
}

// A drop rule added while the fast path carries a flood stops it at once:
// the table edit makes every kernel entry a miss.
func TestFastPathDropRuleStopsAFlood(t *testing.T) {
	requireFastPath(t)
	r := newRig(t, 2)
	pinger := startBackground(t, "ip", "netns", "exec", r.hosts[0].ns, "ping", "-n", "-q", "-f", "-w", "4", r.hosts[1].addr)
	time.Sleep(time.Second)
	r.d.x(t, "add-flow", r.br, "priority=100,icmp,actions=drop")
	time.Sleep(200 * time.Millisecond)
	before := dumpPorts(t, r.d, r.br)[2].txPkts
	time.Sleep(time.Second)
	after := dumpPorts(t, r.d, r.br)[2].txPkts
	// A namespace's own frames (not ICMP) may still pass.
	if after-before > 3 {
		t.Errorf("port 2 sent %d frames in the second after the drop rule had been in for 200 ms, want none of the flood's", after-before)
	}
	if dropped := rulePackets(t, r.d, r.br, "actions=drop"); dropped < 10 {
		t.Errorf("the drop rule counted %d frames, want the flood's (ping -f goes on at 100/s without replies)", dropped)
	}
	pinger.wait(t, 10*time.Second)
}

// A flow the rules drop is dropped in the kernel once its entry is in, and
// pmd-stats-show counts those drops as the fast path's own, by reason, in
// text and JSON; the pipeline's rule drops count every echo request, the
// kernel's among them.
func TestFastPathCountsItsDrops(t *testing.T) {
	requireFastPath(t)
	r := newRig(t, 2)
	r.d.x(t, "add-flow", r.br, "priority=100,icmp,actions=drop")
	kernel0, pipeline0 := bridgeDrops(t, r.d, r.br)
	const n = 10
	if _, received, out := ping(t, r.hosts[0].ns, r.hosts[1].addr, 56, n); received != 0 {
		t.Fatalf("pings crossed a drop rule:\n%s", out)
	}
	kernel, pipeline := bridgeDrops(t, r.d, r.br)
	// The first request is user space's, which installs the entry.
	if got := kernel["rule"] - kernel0["rule"]; got < n/2 || got > n {
		t.Errorf("the fast path counts %d rule drops of %d echo requests, want most of them: %v", got, n, kernel)
	}
	if got := pipeline["rule"] - pipeline0["rule"]; got < n {
		t.Errorf("the pipeline counts %d rule drops of %d echo requests, want every one: %v", got, n, pipeline)
	}
	for _, reason := range []string{"op_failed", "port_gone", "restore_failed"} {
		if got, ok := kernel[reason]; !ok || got != 0 {
			t.Errorf("fast path drops %q: %d (present %v), want 0", reason, got, ok)
		}
	}
	want := fmt.Sprintf("fast path drops: %d (rule=%d, op_failed=0, port_gone=0, restore_failed=0, meter=0)", kernel["rule"], kernel["rule"])
	if out := r.d.x(t, "pmd-stats-show", r.br); !strings.Contains(out, want) {
		t.Errorf("pmd-stats-show has no %q:\n%s", want, out)
	}
}

// bridgeDrops are the fast path's and the pipeline's drops by reason, as
// pmd-stats-show's JSON gives them.
func bridgeDrops(t testing.TB, d *daemon, br string) (kernel, pipeline map[string]uint64) {
	t.Helper()
	var stats jsonPMDStats
	d.xJSON(t, &stats, "pmd-stats-show", br)
	if len(stats.Bridges) != 1 || stats.Bridges[0].FastPath == nil {
		t.Fatalf("pmd-stats-show %s: %+v, want the bridge with its fast path", br, stats)
	}
	return stats.Bridges[0].FastPath.Drops, stats.Bridges[0].PipelineDrops
}

// A rule's idle timeout sees the frames the fast path carries: traffic
// only the kernel forwards keeps it alive, and it expires once that stops.
func TestFastPathKeepsIdleTimeoutsAlive(t *testing.T) {
	requireFastPath(t)
	r := newRig(t, 2)
	r.d.x(t, "add-flow", r.br, "priority=10,idle_timeout=2,icmp,actions=NORMAL")
	carried0 := kernelCarried(t, r.d, r.br)
	// Pings every 0.2 s for 4 s: twice the timeout.
	sent, received, out := ping(t, r.hosts[0].ns, r.hosts[1].addr, 56, 20)
	if received != sent {
		t.Fatalf("ping lost replies:\n%s", out)
	}
	if _, marked := flowCount(t, r.d, r.br, "idle_timeout=2"); marked != 1 {
		t.Fatalf("the rule with idle_timeout=2 expired while pings went through it:\n%s", r.d.x(t, "dump-flows", r.br))
	}
	if carried := kernelCarried(t, r.d, r.br) - carried0; carried < 30 {
		t.Fatalf("the fast path carried %d of the 40 frames: the test did not test it", carried)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, marked := flowCount(t, r.d, r.br, "idle_timeout=2"); marked == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the rule with idle_timeout=2 did not expire 5 s after the pings stopped:\n%s", r.d.x(t, "dump-flows", r.br))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A veth whose peer turns GRO off can no longer receive redirected frames:
// the fast path stops sending to it, says so, and user space carries its
// frames; turning GRO back on brings the fast path back.
func TestFastPathFallsBackWhenAPeerLosesGRO(t *testing.T) {
	requireFastPath(t)
	r := newRig(t, 2)
	h := r.hosts[1]
	fastPathOf := func() string {
		for _, p := range parseShow(t, r.d.x(t, "show"))[0].ports {
			if p.name == h.name {
				return p.attrs["fastpath"]
			}
		}
		t.Fatalf("show has no port %s", h.name)
		return ""
	}
	waitFor := func(what string, ok func(string) bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for got := fastPathOf(); !ok(got); got = fastPathOf() {
			if time.Now().After(deadline) {
				t.Fatalf("port %s: fastpath=%q, want %s", h.name, got, what)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// A flood while GRO goes off: until the bridge notices (it looks every
	// second), the kernel drops what the fast path redirects to the port,
	// and those drops are counted, not lost without a word.
	pinger := startBackground(t, "ip", "netns", "exec", r.hosts[0].ns, "ping", "-n", "-q", "-f", "-w", "3", h.addr)
	time.Sleep(time.Second)
	mustRun(t, "ip", "netns", "exec", h.ns, "ethtool", "-K", "eth0", "gro", "off")
	waitFor("off, naming GRO", func(s string) bool { return strings.HasPrefix(s, "off") && strings.Contains(s, "GRO off") })
	out := pinger.wait(t, 10*time.Second)
	m := pingSummary.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("ping -f: no summary:\n%s", out)
	}
	sent, _ := strconv.Atoi(m[1])
	received, _ := strconv.Atoi(m[2])
	var dropped uint64
	var ports jsonDumpPorts
	r.d.xJSON(t, &ports, "dump-ports", r.br)
	for _, p := range ports.Ports {
		if p.Name == h.name {
			dropped = p.FastPathTxDropped
		}
	}
	// The last request may be cut by -w rather than lost.
	if lost := sent - received; lost < 1 || dropped+1 < uint64(lost) {
		t.Errorf("ping -f lost %d of %d while GRO went off; port %s counts %d fastpath_tx_dropped, want them all", lost, sent, h.name, dropped)
	}
	pingFlood(t, r.hosts[0].ns, h.addr, 500)
	if out := r.d.x(t, "dump-fastpath", r.br); strings.Contains(out, "actions:output:2") {
		t.Errorf("the fast path still sends to port 2, whose peer has GRO off:\n%s", out)
	}
	mustRun(t, "ip", "netns", "exec", h.ns, "ethtool", "-K", "eth0", "gro", "on")
	waitFor("on", func(s string) bool { return s == "on" })
	pingFlood(t, r.hosts[0].ns, h.addr, 500)
	if out := r.d.x(t, "dump-fastpath", r.br); !strings.Contains(out, "actions:output:2") {
		t.Errorf("the fast path does not send to port 2 once its peer has GRO on again:\n%s", out)
	}
}

// A station that moves to another port is followed at once: the frames
// the fast path carried to its old port go to the new one from the move
// on, not once the entry idles out.
func TestFastPathFollowsAStationThatMoves(t *testing.T) {
	requireFastPath(t)
	r := newRig(t, 3)
	h1, h2, h3 := r.hosts[0], r.hosts[1], r.hosts[2]
	pinger := startBackground(t, "ip", "netns", "exec", h1.ns, "ping", "-n", "-q", "-f", "-w", "4", h2.addr)
	time.Sleep(time.Second)
	if carried := kernelCarried(t, r.d, r.br); carried < 1000 {
		t.Fatalf("the fast path carried %d frames of the flood: the test would not test it", carried)
	}
	// The station leaves port 2 (and so stops answering), then turns up
	// on port 3 and says so: NORMAL learns it there.
	mac := nsMAC(t, h2.ns, "eth0")
	mustRun(t, "ip", "netns", "exec", h2.ns, "ip", "link", "set", "eth0", "down")
	time.Sleep(300 * time.Millisecond)
	mustRun(t, "ip", "netns", "exec", h3.ns, "ip", "link", "set", "eth0", "address", mac)
	run(t, "ip", "netns", "exec", h3.ns, "ping", "-n", "-c", "1", "-W", "1", h1.addr)
	time.Sleep(200 * time.Millisecond)
	before := dumpPorts(t, r.d, r.br)
	time.Sleep(time.Second)
	after := dumpPorts(t, r.d, r.br)
	// ping -f goes on at 100 requests/s without replies.
	if got := after[3].txPkts - before[3].txPkts; got < 50 {
		t.Errorf("port 3 sent %d frames in the second after the station moved to it, want the flood's (≥ 50)", got)
	}
	// What the namespaces flood (ARP, IPv6 neighbour discovery) still
	// reaches port 2; the flood's 100 requests must not.
	if got := after[2].txPkts - before[2].txPkts; got > 10 {
		t.Errorf("port 2 sent %d frames in the second after the station left it, want none of the flood's", got)
	}
	pinger.wait(t, 10*time.Second)
}
