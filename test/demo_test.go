package test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xswitch/xswitch/internal/testenv"
)

const demoTimeout = 3 * time.Minute

// TestDemo runs `xswitch demo` as a user would and checks that it shows
// pings and a TCP transfer, and cleans up after itself.
func TestDemo(t *testing.T) {
	testenv.RequireRoot(t)
	namespacesBefore := namespaceNames(t)
	linksBefore := linkNames(t)

	ctx, cancel := context.WithTimeout(context.Background(), demoTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, xswitchBin, "demo")
	cmd.Env = clientEnv()
	out, err := cmd.CombinedOutput()
	output := string(out)
	if ctx.Err() != nil {
		t.Fatalf("xswitch demo still running after %v; output:\n%s", demoTimeout, output)
	}
	if err != nil {
		t.Fatalf("xswitch demo: %v; output:\n%s", err, output)
	}
	t.Logf("xswitch demo output:\n%s", output)

	// The demo pings every pair of its namespaces: "ns -> addr: 3/3 replies".
	pings := regexp.MustCompile(`(?m)^\s*\S+ -> \S+: (\d+)/(\d+) replies`).FindAllStringSubmatch(output, -1)
	if len(pings) == 0 {
		t.Errorf("demo output shows no ping results")
	}
	for _, m := range pings {
		if m[1] != m[2] || m[1] == "0" {
			t.Errorf("demo ping lost replies: %q", strings.TrimSpace(m[0]))
		}
	}
	if !regexp.MustCompile(`(?i)\btcp\b`).MatchString(output) || !strings.Contains(output, "arrived intact") {
		t.Errorf("demo output does not report an intact TCP transfer")
	}
	// And a flow rule at work: it drops a ping, counts it, and is deleted.
	if !strings.Contains(output, "blocked, 3 echo requests dropped by the rule") ||
		!regexp.MustCompile(`n_packets=3, n_bytes=\d+, idle_age=\d+, priority=100,icmp,in_port=1 actions=drop`).MatchString(output) {
		t.Errorf("demo output does not show the drop rule dropping and counting 3 echo requests")
	}

	if pids := runningXswitch(t, 2*time.Second); len(pids) > 0 {
		t.Errorf("xswitch processes still running after the demo exited: pids %v", pids)
	}
	if left := added(namespacesBefore, namespaceNames(t)); len(left) > 0 {
		t.Errorf("namespaces left behind by the demo: %v", left)
	}
	if left := added(linksBefore, linkNames(t)); len(left) > 0 {
		t.Errorf("links left behind by the demo: %v", left)
	}
}

// TestDemoTwoHosts runs `xswitch demo --hosts 2`: two hosts, a daemon on
// each, joined by a VXLAN tunnel that pings and TCP cross; and nothing
// left behind.
func TestDemoTwoHosts(t *testing.T) {
	testenv.RequireRoot(t)
	namespacesBefore := namespaceNames(t)
	linksBefore := linkNames(t)
	ctx, cancel := context.WithTimeout(context.Background(), demoTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, xswitchBin, "demo", "--hosts", "2")
	cmd.Env = clientEnv()
	out, err := cmd.CombinedOutput()
	output := string(out)
	if ctx.Err() != nil {
		t.Fatalf("xswitch demo --hosts 2 still running after %v; output:\n%s", demoTimeout, output)
	}
	if err != nil {
		t.Fatalf("xswitch demo --hosts 2: %v; output:\n%s", err, output)
	}
	t.Logf("xswitch demo --hosts 2 output:\n%s", output)
	pings := regexp.MustCompile(`(?m)^\s*\S+ -> \S+: (\d+)/(\d+) replies`).FindAllStringSubmatch(output, -1)
	if len(pings) != 2 {
		t.Errorf("demo output shows %d ping results, want one each way", len(pings))
	}
	for _, m := range pings {
		if m[1] != m[2] || m[1] == "0" {
			t.Errorf("demo ping lost replies: %q", strings.TrimSpace(m[0]))
		}
	}
	if !strings.Contains(output, "arrived intact") {
		t.Errorf("demo output does not report an intact TCP transfer")
	}
	if n := len(regexp.MustCompile(`type: vxlan \(remote_ip=192\.168\.250\.\d, local_ip=192\.168\.250\.\d, key=42, dst_port=4789\)`).FindAllString(output, -1)); n != 2 {
		t.Errorf("demo output shows %d vxlan ports, want one per host", n)
	}
	if pids := runningXswitch(t, 5*time.Second); len(pids) > 0 {
		t.Errorf("xswitch processes still running after the demo exited: pids %v", pids)
	}
	if left := added(namespacesBefore, namespaceNames(t)); len(left) > 0 {
		t.Errorf("namespaces left behind by the demo: %v", left)
	}
	if left := added(linksBefore, linkNames(t)); len(left) > 0 {
		t.Errorf("links left behind by the demo: %v", left)
	}
}

// runningXswitch lists the processes running the binary under test, after
// giving them up to grace to exit. No test runs a daemon while TestDemo
// runs, so any such process is one the demo left behind.
func runningXswitch(t testing.TB, grace time.Duration) []int {
	t.Helper()
	deadline := time.Now().Add(grace)
	for {
		var pids []int
		entries, err := os.ReadDir("/proc")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe == xswitchBin {
				pids = append(pids, pid)
			}
		}
		if len(pids) == 0 || time.Now().After(deadline) {
			return pids
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func namespaceNames(t testing.TB) []string {
	t.Helper()
	var names []string
	for _, line := range strings.Split(mustRun(t, "ip", "netns", "list"), "\n") {
		// "ns1 (id: 0)": the name is the first field.
		if fields := strings.Fields(line); len(fields) > 0 {
			names = append(names, fields[0])
		}
	}
	return names
}

func linkNames(t testing.TB) []string {
	t.Helper()
	var names []string
	for _, line := range strings.Split(mustRun(t, "ip", "-o", "link", "show"), "\n") {
		// "7: veth1@if6: <...": the name is the second field, up to ':' or '@'.
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(fields[1], ":"), "@")
		names = append(names, name)
	}
	return names
}

// added lists what is in after but not in before, apart from names with
// the "xt" prefix: those belong to the project's tests, which `go test
// ./...` runs in parallel with this one, and are not the demo's.
func added(before, after []string) []string {
	var extra []string
	for _, name := range after {
		if !slices.Contains(before, name) && !strings.HasPrefix(name, "xt") {
			extra = append(extra, name)
		}
	}
	return extra
}
