package test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xswitch/xswitch/internal/testenv"
)

// TestBench runs `xswitch bench` briefly over every case and workload and
// checks that every case that ran carried traffic under each workload and
// that nothing is left behind. The numbers are not judged beyond that:
// they depend on the machine.
func TestBench(t *testing.T) {
	testenv.RequireRoot(t)
	wantBenchCleanedUp(t)

	// 7 cases x 4 workloads x (2s + setup) is about 80s here, alone; a
	// loaded machine (CI's other packages, two CPUs) took over 3 minutes.
	// The limit is for a bench that hangs.
	var results []struct {
		Case          string  `json:"case"`
		Workload      string  `json:"workload"`
		Skipped       string  `json:"skipped"`
		Error         string  `json:"error"`
		Generator     string  `json:"generator"`
		MedianPPS     float64 `json:"median_pps"`
		MedianSentPPS float64 `json:"median_sent_pps"`
		CarriedShare  float64 `json:"carried_share"`
		CPUNsPerFrame float64 `json:"cpu_ns_per_frame"`
		MedianGbps    float64 `json:"median_gbps"`
		P50           float64 `json:"p50_us"`
		P99           float64 `json:"p99_us"`
		Samples       int     `json:"samples"`
	}
	out := runBench(t, 6*time.Minute, &results, "--duration", "2s", "--rounds", "1")

	workloads := []string{"udp64", "udp1500", "tcp", "ping"}
	wantCases := []string{"xswitch", "xswitch-busy", "xswitch-flows", "linux-bridge", "xdp-redirect"}
	// Every UDP workload measures the generator alone too.
	wantUDPCases := []string{"gen-only"}
	if _, err := exec.LookPath("ovs-vswitchd"); err == nil {
		wantCases = append(wantCases, "ovs", "ovs-flows")
	} else {
		t.Logf("Open vSwitch is not installed: its cases may be skipped")
	}
	type key struct{ cas, workload string }
	ran := map[key]bool{}
	for _, r := range results {
		if r.Skipped != "" {
			t.Logf("%s: %s", r.Case, r.Skipped)
			continue
		}
		ran[key{r.Case, r.Workload}] = true
		if r.Error != "" {
			t.Errorf("case %s under %s failed: %s", r.Case, r.Workload, r.Error)
			continue
		}
		var delivered bool
		switch {
		case strings.HasPrefix(r.Workload, "udp"):
			delivered = r.MedianPPS > 0 && r.MedianGbps > 0
			// The counts telescope over the seconds: the receiver cannot
			// have counted more than was sent but for the moment between
			// the reads and the batch a socket generator counts once the
			// kernel is done with it.
			if r.Generator == "" || r.MedianSentPPS == 0 || r.CarriedShare <= 0 || r.CarriedShare > 1.02 || r.CPUNsPerFrame == 0 {
				t.Errorf("case %s under %s: generator %q sent %.0f pps, of which %.3f arrived, at %.0f ns/frame: want a generator that sent, at most all of it delivered, and a CPU figure",
					r.Case, r.Workload, r.Generator, r.MedianSentPPS, r.CarriedShare, r.CPUNsPerFrame)
			}
		case r.Workload == "tcp":
			delivered = r.MedianGbps > 0
		case r.Workload == "ping":
			delivered = r.P50 > 0 && r.P99 >= r.P50
		default:
			t.Errorf("unknown workload %q in %+v", r.Workload, r)
		}
		if !delivered || r.Samples == 0 {
			t.Errorf("case %s delivered nothing under %s: %+v", r.Case, r.Workload, r)
		}
	}
	for _, w := range workloads {
		cases := wantCases
		if strings.HasPrefix(w, "udp") {
			cases = append(wantUDPCases, wantCases...)
		}
		for _, c := range cases {
			if !ran[key{c, w}] {
				t.Errorf("case %s did not run under %s: %s", c, w, out)
			}
		}
	}

}

// TestBenchStatefulFirewall runs `xswitch bench` briefly over the
// stateful-firewall cases and the workloads made for them: every case
// that ran carried traffic through its firewall (UDP out, TCP both ways,
// short connections without a failure), and under conns the switches
// that are processes hold a connection for every flow the receiver saw,
// at some memory each. --fast-path off is the same path for now, and is
// left to the bench itself.
func TestBenchStatefulFirewall(t *testing.T) {
	testenv.RequireRoot(t)
	wantBenchCleanedUp(t)
	const conns = 20000
	// 3 cases x 4 workloads took about a minute here, alone.
	var results []struct {
		Case         string  `json:"case"`
		Workload     string  `json:"workload"`
		Skipped      string  `json:"skipped"`
		Error        string  `json:"error"`
		MedianPPS    float64 `json:"median_pps"`
		MedianGbps   float64 `json:"median_gbps"`
		MedianCPS    float64 `json:"median_cps"`
		Lost         int     `json:"lost"`
		Connections  int     `json:"connections"`
		FlowsSeen    int     `json:"flows_seen"`
		BytesPerConn float64 `json:"bytes_per_connection"`
		Samples      int     `json:"samples"`
	}
	out := runBench(t, 5*time.Minute, &results, "--cases", "xswitch-ct,ovs-ct,bridge-nft",
		"--workloads", fmt.Sprintf("udp64,tcp,tcpcrr,conns%d", conns), "--duration", "2s", "--rounds", "1")
	ran := map[string]bool{}
	for _, r := range results {
		if r.Skipped != "" {
			t.Logf("%s under %s: %s", r.Case, r.Workload, r.Skipped)
			continue
		}
		ran[r.Case+" "+r.Workload] = true
		if r.Error != "" {
			t.Errorf("case %s under %s failed: %s", r.Case, r.Workload, r.Error)
			continue
		}
		var ok bool
		switch r.Workload {
		case "udp64":
			ok = r.MedianPPS > 0
		case "tcp":
			ok = r.MedianGbps > 0
		case "tcpcrr":
			ok = r.MedianCPS > 0 && r.Lost == 0
		default:
			ok = r.FlowsSeen == conns && r.Connections == conns && r.BytesPerConn > 0
		}
		if !ok || r.Samples == 0 {
			t.Errorf("case %s under %s: %+v", r.Case, r.Workload, r)
		}
	}
	want := []string{"xswitch-ct udp64", "xswitch-ct tcp", "xswitch-ct tcpcrr", fmt.Sprintf("xswitch-ct conns%d", conns)}
	if _, err := exec.LookPath("ovs-vswitchd"); err == nil {
		want = append(want, "ovs-ct udp64", "ovs-ct tcp", "ovs-ct tcpcrr", fmt.Sprintf("ovs-ct conns%d", conns))
	}
	if _, err := exec.LookPath("nft"); err == nil {
		want = append(want, "bridge-nft udp64", "bridge-nft tcp", "bridge-nft tcpcrr")
	}
	for _, w := range want {
		if !ran[w] {
			t.Errorf("%s did not run: %s", w, out)
		}
	}
}

// TestBenchOVSDB runs the addport and portsN workloads briefly, few
// ports, on xswitch daemon --ovsdb and on ovs-vswitchd, and checks that
// each port forwarded and each got its number, with nothing left behind.
func TestBenchOVSDB(t *testing.T) {
	testenv.RequireRoot(t)
	wantBenchCleanedUp(t)
	const ports = 20
	cases := []string{"xswitch"}
	if _, err := exec.LookPath("ovs-vswitchd"); err == nil {
		cases = append(cases, "ovs")
	} else {
		t.Logf("Open vSwitch is not installed: only xswitch runs")
	}
	// About 10 s here, alone.
	var results []struct {
		Case          string  `json:"case"`
		Workload      string  `json:"workload"`
		Skipped       string  `json:"skipped"`
		Error         string  `json:"error"`
		AddPortMillis float64 `json:"addport_ms"`
		VsctlMillis   float64 `json:"vsctl_ms"`
		Ports         int     `json:"ports"`
		VsctlSeconds  float64 `json:"vsctl_s"`
		OFPortSeconds float64 `json:"ofport_s"`
		Samples       int     `json:"samples"`
	}
	out := runBench(t, 2*time.Minute, &results, "--cases", strings.Join(cases, ","),
		"--workloads", fmt.Sprintf("addport,ports%d", ports), "--rounds", "1")
	ran := map[string]bool{}
	for _, r := range results {
		if r.Skipped != "" || r.Error != "" {
			t.Errorf("case %s under %s: skipped %q, failed %q", r.Case, r.Workload, r.Skipped, r.Error)
			continue
		}
		ran[r.Case+" "+r.Workload] = true
		var ok bool
		if r.Workload == "addport" {
			ok = r.Samples == 5 && r.AddPortMillis > 0 && r.VsctlMillis > 0
		} else {
			ok = r.Samples == 1 && r.Ports == ports && r.VsctlSeconds > 0 && r.OFPortSeconds >= r.VsctlSeconds
		}
		if !ok {
			t.Errorf("case %s under %s: %+v", r.Case, r.Workload, r)
		}
	}
	for _, c := range cases {
		for _, w := range []string{"addport", fmt.Sprintf("ports%d", ports)} {
			if !ran[c+" "+w] {
				t.Errorf("%s under %s did not run: %s", c, w, out)
			}
		}
	}
}

// TestBenchRunsSwitchesWhollyOnTheirCPU watches the processes `xswitch
// bench` starts while it measures xswitch and OVS, and checks that every
// thread of each switch (xswitch's daemon, ovs-vswitchd) may run on CPU 1
// alone, as an outside harness runs them with taskset -c 1: a switch whose
// runtime or control threads share the generator's CPU would flatter its
// ratios.
func TestBenchRunsSwitchesWhollyOnTheirCPU(t *testing.T) {
	testenv.RequireRoot(t)
	if len(testenv.AllowedCPUs(t)) < 2 {
		t.Skip("the bench needs CPUs 0 and 1")
	}
	switches := []string{"xswitch"}
	cases := "xswitch,xswitch-busy"
	if _, err := exec.LookPath("ovs-vswitchd"); err == nil {
		switches = append(switches, "ovs-vswitchd")
		cases += ",ovs"
	} else {
		t.Logf("Open vSwitch is not installed: only xswitch is checked")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, xswitchBin, "bench", "--cases", cases, "--workloads", "ping", "--duration", "3s", "--rounds", "1")
	cmd.Env = clientEnv()
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	seen := map[string]bool{}
	reported := map[int]bool{} // threads
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("xswitch bench: %v\n%s", err, out.String())
			}
			running = false
		case <-tick.C:
			for _, pid := range childrenOf(t, cmd.Process.Pid) {
				comm := readProcFile(pid, "comm")
				// The bench runs xswitch's CLI too (wait-ready): only
				// its daemon is the switch.
				args := strings.Split(readProcFile(pid, "cmdline"), "\x00")
				if !slices.Contains(switches, comm) || comm == "xswitch" && (len(args) < 2 || args[1] != "daemon") {
					continue
				}
				for tid, cpus := range threadCPUs(pid) {
					seen[comm] = true
					if cpus != "1" && !reported[tid] {
						reported[tid] = true
						t.Errorf("%s (pid %d), thread %d, may run on CPUs %s, want 1 alone", comm, pid, tid, cpus)
					}
				}
			}
		}
	}
	for _, s := range switches {
		if !seen[s] {
			t.Errorf("no %s process of the bench's was seen while it ran:\n%s", s, out.String())
		}
	}
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(t *testing.T, pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var children []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat := readProcFile(child, "stat")
		fields := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			children = append(children, child)
		}
	}
	return children
}

// threadCPUs gives, by thread id, the CPU list each thread of pid may run
// on; a process that is gone has none.
func threadCPUs(pid int) map[int]string {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	cpus := map[int]string{}
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			continue
		}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/status", pid, tid))
		if err != nil {
			continue // gone
		}
		for line := range strings.SplitSeq(string(status), "\n") {
			if list, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				cpus[tid] = strings.TrimSpace(list)
			}
		}
	}
	return cpus
}

// readProcFile reads /proc/PID/NAME, trimmed; "" for a process gone.
func readProcFile(pid int, name string) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, name))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// wantBenchCleanedUp checks, once the test is over, that the bench left
// no namespace or link of its own behind: those named as it names them
// (xsb...) that were not there before. Others' come and go on a shared
// machine (another session's bench), and are not the test's concern.
func wantBenchCleanedUp(t *testing.T) {
	t.Helper()
	own := func(names []string) []string {
		return slices.DeleteFunc(names, func(name string) bool { return !strings.HasPrefix(name, "xsb") })
	}
	namespaces, links := own(namespaceNames(t)), own(linkNames(t))
	t.Cleanup(func() {
		if left := added(namespaces, own(namespaceNames(t))); len(left) > 0 {
			t.Errorf("namespaces left behind by bench: %v", left)
		}
		if left := added(links, own(linkNames(t))); len(left) > 0 {
			t.Errorf("links left behind by bench: %v", left)
		}
	})
}

// runBench runs xswitch bench with args and --json, within timeout (a
// limit for a bench that hangs), logs its progress and reads its table
// into results; it returns the table as printed. A failed measurement
// still prints the table, then fails the command: the test fails, and
// the table's Error says why.
func runBench(t *testing.T, timeout time.Duration, results any, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, xswitchBin, append(append([]string{"bench"}, args...), "--json")...)
	cmd.Env = clientEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	t.Logf("xswitch bench progress:\n%s", stderr.String())
	if err := json.Unmarshal(out, results); err != nil {
		t.Fatalf("bench --json printed no JSON table (%v; bench: %v):\n%s", err, runErr, out)
	}
	if runErr != nil {
		t.Errorf("xswitch bench: %v", runErr)
	}
	return out
}
