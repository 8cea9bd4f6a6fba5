package test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// rxCounters are a port's receive counters from the rx line of
// `xswitch dump-ports`, errors included.
type rxCounters struct {
	pkts, drop, errs uint64
}

var dumpPortsRxErrs = regexp.MustCompile(`^port\s+(\d+): rx pkts=(\d+), bytes=\d+, drop=(\d+), errs=(\d+),`)

// rxCountersOf returns the rx counters of every port of br by OpenFlow
// port number.
func rxCountersOf(t testing.TB, d *daemon, br string) map[int]rxCounters {
	t.Helper()
	out := d.x(t, "dump-ports", br)
	counters := map[int]rxCounters{}
	for _, line := range strings.Split(out, "\n") {
		m := dumpPortsRxErrs.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		counters[n] = rxCounters{pkts: atou(m[2]), drop: atou(m[3]), errs: atou(m[4])}
	}
	if len(counters) == 0 {
		t.Fatalf("xswitch dump-ports %s: no rx lines with errs= in:\n%s", br, out)
	}
	return counters
}

// startFails runs the daemon on d's socket and database expecting it to
// refuse to start: it must exit by itself, with a non-zero code, within
// commandTimeout. The daemon must not be running.
func (d *daemon) startFails(t testing.TB) result {
	t.Helper()
	if d.running() {
		t.Fatal("daemon already running")
	}
	r := run(t, xswitchBin, append([]string{"daemon", "--sock", d.sock, "--db", d.db}, d.extraArgs...)...)
	if r.code == 0 {
		t.Fatalf("daemon on %s started and exited 0, want a refusal; stderr:\n%s", d.db, r.stderr)
	}
	return r
}

// flowCount is how many rules `dump-flows br` lists, and how many of them
// contain marker.
func flowCount(t testing.TB, d *daemon, br, marker string) (total, marked int) {
	t.Helper()
	for _, line := range strings.Split(d.x(t, "dump-flows", br), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		total++
		if strings.Contains(line, marker) {
			marked++
		}
	}
	return total, marked
}
