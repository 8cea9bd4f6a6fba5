package main

import (
	"strings"
	"testing"

	"github.com/xswitch/xswitch/bench"
)

func TestBenchWorkloads(t *testing.T) {
	got, err := benchWorkloads([]string{"udp64", "tcp", "ping", "udp1500"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, w := range got {
		names = append(names, w.Name)
	}
	if strings.Join(names, ",") != "udp64,tcp,ping,udp1500" {
		t.Errorf("benchWorkloads = %v, want them in the order given", names)
	}
	for _, bad := range [][]string{nil, {"udp"}, {"tcp", "udp9000"}, {"iperf"}} {
		if _, err := benchWorkloads(bad); err == nil {
			t.Errorf("benchWorkloads(%q) accepted it", bad)
		}
	}
}

// tableRows returns the whitespace-separated cells of each line of table,
// by the first cell.
func tableRows(table string) map[string][]string {
	rows := map[string][]string{}
	for _, line := range strings.Split(table, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			rows[f[0]] = f[1:]
		}
	}
	return rows
}

func TestPrintBenchTables(t *testing.T) {
	udp, tcp, ping := bench.UDP(64), bench.TCP(), bench.Ping()
	results := []bench.Result{
		{Case: "xswitch", Workload: "udp64", MedianPPS: 3e6, MinPPS: 2e6, MaxPPS: 4e6, MedianGbps: 1.5, GenSoftirqPct: 40, SwitchBusyPct: 5, Samples: 4},
		{Case: "linux-bridge", Workload: "udp64", MedianPPS: 2e6, MinPPS: 2e6, MaxPPS: 2e6, MedianGbps: 1, Samples: 4},
		{Case: "ovs", Workload: "udp64", Skipped: "Open vSwitch not installed: skipped"},
		{Case: "xswitch", Workload: "tcp", MedianGbps: 6, MinGbps: 5, MaxGbps: 7, Samples: 4},
		{Case: "linux-bridge", Workload: "tcp", Error: "round 1: iperf3: boom"},
		{Case: "ovs", Workload: "tcp", MedianGbps: 4, MinGbps: 4, MaxGbps: 4, Samples: 4},
		{Case: "xswitch", Workload: "ping", P50Micros: 30, P99Micros: 90, MinMicros: 10, MaxMicros: 100, Lost: 1, Samples: 99},
		{Case: "linux-bridge", Workload: "ping", P50Micros: 10, P99Micros: 20, MinMicros: 5, MaxMicros: 25, Samples: 100},
		{Case: "ovs", Workload: "ping", P50Micros: 20, P99Micros: 40, MinMicros: 15, MaxMicros: 45, Samples: 100},
	}
	var out strings.Builder
	printBenchTables(&out, []bench.Workload{udp, tcp, ping}, results)
	sections := strings.Split(out.String(), "\n\n")
	if len(sections) != 3 {
		t.Fatalf("want 3 tables, got %d:\n%s", len(sections), out.String())
	}
	for i, tc := range []struct {
		heading string
		rows    map[string]string
	}{
		{"== udp64", map[string]string{
			"case":         "Mpps range Gbit/s vs linux-bridge vs ovs cpu0 softirq cpu1 busy",
			"xswitch":      "3.000 2.000-4.000 1.50 1.50x - 40% 5%",
			"linux-bridge": "2.000 2.000-2.000 1.00 1.00x - 0% 0%",
			"ovs":          "- - - - - - -",
		}},
		{"== tcp", map[string]string{
			"case":         "Gbit/s range vs linux-bridge vs ovs",
			"xswitch":      "6.00 5.00-7.00 - 1.50x",
			"linux-bridge": "- - - -",
			"ovs":          "4.00 4.00-4.00 - 1.00x",
		}},
		{"== ping", map[string]string{
			"case":         "p50 µs p99 µs range µs lost vs linux-bridge vs ovs",
			"xswitch":      "30 90 10-100 1 3.00x 1.50x",
			"linux-bridge": "10 20 5-25 0 1.00x 0.50x",
			"ovs":          "20 40 15-45 0 2.00x 1.00x",
		}},
	} {
		if !strings.HasPrefix(sections[i], tc.heading+"\n") {
			t.Errorf("table %d does not start with %q:\n%s", i, tc.heading, sections[i])
		}
		got := tableRows(sections[i])
		for first, want := range tc.rows {
			if g := strings.Join(got[first], " "); g != want {
				t.Errorf("%s: row %s = %q, want %q", tc.heading, first, g, want)
			}
		}
	}
}
