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

// TestBench runs `xswitch bench` briefly and checks that every case that
// ran carried frames and that nothing is left behind. The numbers are not
// judged beyond that: they depend on the machine.
func TestBench(t *testing.T) {
	testenv.RequireRoot(t)
	namespacesBefore := namespaceNames(t)
	linksBefore := linkNames(t)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, xswitchBin, "bench", "--duration", "2s", "--rounds", "1", "--json")
	cmd.Env = clientEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("xswitch bench: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	t.Logf("xswitch bench progress:\n%s", stderr.String())

	var results []struct {
		Case      string  `json:"case"`
		Skipped   string  `json:"skipped"`
		MedianPPS float64 `json:"median_pps"`
		Samples   int     `json:"samples"`
	}
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("bench --json printed no JSON table (%v):\n%s", err, out)
	}
	ran := map[string]bool{}
	pps := map[string]float64{}
	for _, r := range results {
		if r.Skipped != "" {
			t.Logf("%s: %s", r.Case, r.Skipped)
			continue
		}
		ran[r.Case] = true
		pps[r.Case] = r.MedianPPS
		if r.Samples == 0 || r.MedianPPS <= 0 {
			t.Errorf("case %s delivered nothing: %+v", r.Case, r)
		}
	}
	for _, want := range []string{"xswitch", "xswitch-rule", "linux-bridge", "xdp-redirect"} {
		if !ran[want] {
			t.Errorf("case %s missing from the results: %s", want, out)
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
