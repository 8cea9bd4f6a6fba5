package test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/xswitch/xswitch/internal/testenv"
)

var churnTime = flag.Duration("churn", 60*time.Second, "how long TestChurnUnderLoad changes flows and ports")

// TestChurnUnderLoad adds and deletes flows and ports continuously while
// two namespaces ping each other through the bridge, then checks that
// nothing leaked: file descriptors and goroutines of the daemon, XDP
// programs, links. The daemon is built with -race when the tests are.
func TestChurnUnderLoad(t *testing.T) {
	testenv.RequireRoot(t)
	metricsAddr := freeTCPAddr(t)
	r := newRig(t, 2, "--metrics-addr", metricsAddr)
	d, n, br, a, b := r.d, r.n, r.br, r.hosts[0], r.hosts[1]
	churnNS := []string{n.namespace(t, "c1"), n.namespace(t, "c2"), n.namespace(t, "c3")}

	// Other packages' tests may run meanwhile: count only what is ours.
	goroutines := scrapeMetrics(t, metricsAddr).value(t, "go_goroutines", nil)
	fds, programs, links := daemonFDs(t, d), ourXDPAttachments(t, n), ourLinks(t, n)

	interval := 50 * time.Millisecond
	count := int(*churnTime / interval)
	stream := startBackground(t, "ip", "netns", "exec", a.ns, "ping", "-n", "-q", "-c", fmt.Sprint(count), "-i", "0.05", "-W", "1", b.addr)
	rng := rand.New(rand.NewPCG(uint64(n.x), uint64(n.y)))
	var flowOps, portOps int
	var lastRx uint64
	nums := ofports(t, d, br)
	deadline := time.Now().Add(*churnTime)
	for time.Now().Before(deadline) {
		// Rules that never touch the ICMP stream: TCP and UDP ports only.
		port := 1000 + rng.IntN(500)
		d.x(t, "add-flow", br, fmt.Sprintf("priority=%d,udp,tp_dst=%d,actions=drop", 100+rng.IntN(100), port))
		d.x(t, "add-flow", br, fmt.Sprintf("priority=50,tcp,tp_src=%d,actions=mod_tp_src:%d,NORMAL", port, port+1))
		if rng.IntN(4) == 0 {
			d.x(t, "del-flows", br, "udp")
		}
		flowOps += 2
		i := rng.IntN(len(churnNS))
		name := n.name(fmt.Sprintf("q%d", i))
		if strings.Contains(d.x(t, "list-ports", br), name+"\n") {
			d.x(t, "del-port", br, name)
		} else {
			deleteLinkAtCleanup(t, name)
			d.x(t, "add-port", br, name, "--netns", churnNS[i])
		}
		portOps++
		// Counters only grow.
		rx := dumpPorts(t, d, br)[nums[a.name]].rxPkts
		if rx < lastRx {
			t.Fatalf("port %s rx packets went from %d down to %d", a.name, lastRx, rx)
		}
		lastRx = rx
	}
	out := stream.wait(t, 30*time.Second)
	sent, received := pingCounts(t, out)
	t.Logf("churn for %v: %d flow changes, %d port changes; ping %d sent, %d received", *churnTime, flowOps, portOps, sent, received)
	if received < sent*99/100 {
		t.Errorf("the ping stream lost %d of %d echo requests while flows and other ports changed:\n%s", sent-received, sent, out)
	}

	for i := range churnNS {
		if name := n.name(fmt.Sprintf("q%d", i)); strings.Contains(d.x(t, "list-ports", br), name+"\n") {
			d.x(t, "del-port", br, name)
		}
	}
	d.x(t, "del-flows", br)
	d.x(t, "add-flow", br, "priority=0,actions=NORMAL")
	requirePing(t, a.ns, b.addr, 56)

	// Goroutines end asynchronously; give them a moment.
	settle := time.Now().Add(3 * time.Second)
	for {
		nowFDs := daemonFDs(t, d)
		nowGoroutines := scrapeMetrics(t, metricsAddr).value(t, "go_goroutines", nil)
		nowPrograms, nowLinks := ourXDPAttachments(t, n), ourLinks(t, n)
		// Fewer descriptors is no leak: the first scrape's keep-alive
		// connection, counted before, may have been closed as idle since.
		if nowFDs <= fds && nowGoroutines <= goroutines && nowPrograms == programs && nowLinks == links {
			t.Logf("after churn: %d fds, %.0f goroutines, %d XDP programs, %d links: as before", nowFDs, nowGoroutines, nowPrograms, nowLinks)
			break
		}
		if time.Now().After(settle) {
			t.Fatalf("leaks after churn: fds %d → %d, goroutines %.0f → %.0f, XDP programs %d → %d, links %d → %d",
				fds, nowFDs, goroutines, nowGoroutines, programs, nowPrograms, links, nowLinks)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// daemonFDs counts the daemon process's open file descriptors.
func daemonFDs(t testing.TB, d *daemon) int {
	t.Helper()
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", d.pid()))
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// ourXDPAttachments counts the XDP programs attached to the test's links.
func ourXDPAttachments(t testing.TB, n *testNet) int {
	t.Helper()
	return len(bpftoolNetMentions(t, n.tag))
}

// ourLinks counts the host's links whose names carry the test's tag.
func ourLinks(t testing.TB, n *testNet) int {
	t.Helper()
	return strings.Count(mustRun(t, "ip", "-o", "link"), ": "+n.tag)
}

// pingCounts reads ping's summary line.
func pingCounts(t testing.TB, out string) (sent, received int) {
	t.Helper()
	m := pingSummary.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no ping summary in:\n%s", out)
	}
	fmt.Sscan(m[1], &sent)
	fmt.Sscan(m[2], &received)
	return sent, received
}
