package test

import (
	"context"
	"encoding/json"
	"os/exec"
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
	namespacesBefore := namespaceNames(t)
	linksBefore := linkNames(t)

	// 7 cases x 4 workloads x (2s + setup) is about 80s here.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, xswitchBin, "bench", "--duration", "2s", "--rounds", "1", "--json")
	cmd.Env = clientEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	t.Logf("xswitch bench progress:\n%s", stderr.String())

	var results []struct {
		Case       string  `json:"case"`
		Workload   string  `json:"workload"`
		Skipped    string  `json:"skipped"`
		Error      string  `json:"error"`
		MedianPPS  float64 `json:"median_pps"`
		MedianGbps float64 `json:"median_gbps"`
		P50        float64 `json:"p50_us"`
		P99        float64 `json:"p99_us"`
		Samples    int     `json:"samples"`
	}
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("bench --json printed no JSON table (%v; bench: %v):\n%s", err, runErr, out)
	}
	// A failed measurement still prints the table, then fails the command;
	// its Error says why, below.
	if runErr != nil {
		t.Errorf("xswitch bench: %v", runErr)
	}

	workloads := []string{"udp64", "udp1500", "tcp", "ping"}
	wantCases := []string{"xswitch", "xswitch-busy", "xswitch-flows", "linux-bridge", "xdp-redirect"}
	if _, err := exec.LookPath("ovs-vswitchd"); err == nil {
		wantCases = append(wantCases, "ovs", "ovs-flows")
	} else {
		t.Logf("Open vSwitch is not installed: its cases may be skipped")
	}
	type key struct{ cas, workload string }
	ran := map[key]bool{}
	pps := map[string]float64{} // of udp64, by case
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
		if r.Workload == "udp64" {
			pps[r.Case] = r.MedianPPS
		}
	}
	for _, c := range wantCases {
		for _, w := range workloads {
			if !ran[key{c, w}] {
				t.Errorf("case %s did not run under %s: %s", c, w, out)
			}
		}
	}
	// The kernel redirecting from veth to veth is the machine's limit.
	if pps["xdp-redirect"] < pps["xswitch"] {
		t.Errorf("xdp-redirect (%.0f pps) is slower than xswitch (%.0f pps): the generator, not the path, limits the measurement", pps["xdp-redirect"], pps["xswitch"])
	}

	if left := added(namespacesBefore, namespaceNames(t)); len(left) > 0 {
		t.Errorf("namespaces left behind by bench: %v", left)
	}
	if left := added(linksBefore, linkNames(t)); len(left) > 0 {
		t.Errorf("links left behind by bench: %v", left)
	}
}
