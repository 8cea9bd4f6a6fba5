package main

import (
	"strings"
	"testing"

	"github.com/xswitch/xswitch/bench"
)

func TestBenchWorkloads(t *testing.T) {
	got, err := benchWorkloads([]string{"udp64", "tcp", "ping", "udp1500", "tcpcrr", "conns1000"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, w := range got {
		names = append(names, w.Name)
	}
	if strings.Join(names, ",") != "udp64,tcp,ping,udp1500,tcpcrr,conns1000" {
		t.Errorf("benchWorkloads = %v, want them in the order given", names)
	}
	for _, bad := range [][]string{nil, {"udp"}, {"tcp", "udp70000"}, {"iperf"}} {
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
	udp, tcp, ping, crr, conns := bench.UDP(64), bench.TCP(), bench.Ping(), bench.TCPCRR(), bench.Conns(1000)
	results := []bench.Result{
		{Case: bench.GenOnly, Workload: "udp64", Generator: bench.GeneratorXSK, MedianPPS: 1e6, MinPPS: 1e6, MaxPPS: 1e6, MedianGbps: 0.51,
			MedianSentPPS: 1e6, CarriedShare: 1, GeneratorBound: true, CPUNsPerFrame: 1000, GenSoftirqPct: 50, SwitchBusyPct: 1, Samples: 4},
		{Case: "xswitch", Workload: "udp64", Generator: bench.GeneratorXSK, MedianPPS: 0.9e6, MinPPS: 0.8e6, MaxPPS: 1e6, MedianGbps: 0.46,
			MedianSentPPS: 0.91e6, CarriedShare: 0.99, GeneratorBound: true, CPUNsPerFrame: 300, GenSoftirqPct: 40, SwitchBusyPct: 5, Samples: 4},
		{Case: "linux-bridge", Workload: "udp64", Generator: bench.GeneratorXSK, MedianPPS: 0.6e6, MinPPS: 0.6e6, MaxPPS: 0.6e6, MedianGbps: 0.31,
			MedianSentPPS: 0.7e6, CarriedShare: 0.85, CPUNsPerFrame: 900, Samples: 4},
		{Case: "ovs", Workload: "udp64", Generator: bench.GeneratorXSK, MedianPPS: 0.5e6, MinPPS: 0.5e6, MaxPPS: 0.5e6, MedianGbps: 0.26,
			MedianSentPPS: 0.5e6, CarriedShare: 0.98, GeneratorBound: true, CPUNsPerFrame: 2000, Samples: 4},
		{Case: "xdp-redirect", Workload: "udp64", Generator: bench.GeneratorXSK, MedianPPS: 0.95e6, MinPPS: 0.95e6, MaxPPS: 0.95e6, MedianGbps: 0.49,
			MedianSentPPS: 0.95e6, CarriedShare: 1, GeneratorBound: true, CPUNsPerFrame: 200, Samples: 4},
		{Case: "xswitch-busy", Workload: "udp64", Error: "round 1: boom"},
		{Case: "xswitch", Workload: "tcp", MedianGbps: 6, MinGbps: 5, MaxGbps: 7, Samples: 4},
		{Case: "linux-bridge", Workload: "tcp", Error: "round 1: iperf3: boom"},
		{Case: "ovs", Workload: "tcp", MedianGbps: 4, MinGbps: 4, MaxGbps: 4, Samples: 4},
		{Case: "xswitch", Workload: "ping", P50Micros: 30, P99Micros: 90, MinMicros: 10, MaxMicros: 100, Lost: 1, Samples: 99},
		{Case: "linux-bridge", Workload: "ping", P50Micros: 10, P99Micros: 20, MinMicros: 5, MaxMicros: 25, Samples: 100},
		{Case: "ovs", Workload: "ping", P50Micros: 20, P99Micros: 40, MinMicros: 15, MaxMicros: 45, Samples: 100},
		{Case: "xswitch-ct", Workload: "tcpcrr", MedianCPS: 3000, MinCPS: 2500, MaxCPS: 3500, Lost: 1, SwitchBusyPct: 60, Samples: 4},
		{Case: "ovs-ct", Workload: "tcpcrr", MedianCPS: 2000, MinCPS: 2000, MaxCPS: 2000, SwitchBusyPct: 100, Samples: 4},
		{Case: "bridge-nft", Workload: "tcpcrr", MedianCPS: 6000, MinCPS: 5000, MaxCPS: 7000, Samples: 4},
		{Case: "xswitch-ct", Workload: "conns1000", Connections: 1000, FlowsSeen: 1000, RSSBefore: 10 << 20, RSSAfter: 11 << 20, BytesPerConn: 1048.576, FillSeconds: 1.25, Samples: 1},
		{Case: "ovs-ct", Workload: "conns1000", Connections: 999, CountedBySwitch: true, FlowsSeen: 1000, RSSBefore: 20 << 20, RSSAfter: 20<<20 + 512<<10, BytesPerConn: 524.8, FillSeconds: 0.5, Samples: 1},
		{Case: "bridge-nft", Workload: "conns1000", Skipped: "no switch process"},
	}
	var out strings.Builder
	printBenchTables(&out, []bench.Workload{udp, tcp, ping, crr, conns}, results)
	sections := strings.Split(out.String(), "\n\n")
	if len(sections) != 5 {
		t.Fatalf("want 5 tables, got %d:\n%s", len(sections), out.String())
	}
	for i, tc := range []struct {
		heading string
		rows    map[string]string
	}{
		{"== udp64: generator xsk, 1.000 Mpps alone (gen-only), 1000 ns/frame of its own", map[string]string{
			"case":         "Mpps range Gbit/s of sent ns/frame vs linux-bridge vs ovs cpu vs xdp-redirect cpu0 softirq cpu1 busy",
			"gen-only":     "1.000 1.000-1.000 0.51 100.0% 1000 - - - 50% 1%",
			"xswitch":      "0.900 0.800-1.000 0.46 99.0% 300 ≥1.50x (1.80x) 1.50x 40% 5%",
			"linux-bridge": "0.600 0.600-0.600 0.31 85.0% 900 1.00x ≤1.20x 4.50x 0% 0%",
			"ovs":          "0.500 0.500-0.500 0.26 98.0% 2000 ≥0.83x (1.00x) 10.00x 0% 0%",
			"xdp-redirect": "0.950 0.950-0.950 0.49 100.0% 200 ≥1.58x (1.90x) 1.00x 0% 0%",
			"xswitch-busy": "- - - - - - - - - -",
			"≥:":           "the case carried all the generator sent (of sent ≥ 97%): it may carry more",
			"≤:":           "the baseline carried all the generator sent: it may carry more",
			"(…):":         "both carried all the generator sent: ns/frame compares them",
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
		{"== tcpcrr", map[string]string{
			"case":       "conn/s range failed cpu1 busy vs bridge-nft vs ovs-ct",
			"xswitch-ct": "3000 2500-3500 1 60% 0.50x 1.50x",
			"ovs-ct":     "2000 2000-2000 0 100% 0.33x 1.00x",
			"bridge-nft": "6000 5000-7000 0 0% 1.00x 3.00x",
		}},
		{"== conns1000", map[string]string{
			"case":       "connections counted by RSS before MiB RSS after MiB bytes/conn fill s vs bridge-nft vs ovs-ct",
			"xswitch-ct": "1000 receiver 10.0 11.0 1049 1.2 - 2.00x",
			"ovs-ct":     "999 switch 20.0 20.5 525 0.5 - 1.00x",
			"bridge-nft": "- - - - - - - -",
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

func TestPrintBenchTablesOVSDB(t *testing.T) {
	addport, ports := bench.AddPort(), bench.Ports(300)
	results := []bench.Result{
		{Case: "xswitch", Workload: "addport", AddPortMillis: 45.3, MinAddPortMillis: 29.8, MaxAddPortMillis: 57.6, VsctlMillis: 115.7, Samples: 15},
		{Case: "ovs", Workload: "addport", AddPortMillis: 11.5, MinAddPortMillis: 8.8, MaxAddPortMillis: 34.2, VsctlMillis: 11.5, Samples: 15},
		{Case: "xswitch", Workload: "ports300", Ports: 300, VsctlSeconds: 39.15, OFPortSeconds: 39.2, MinOFPortSeconds: 37.55, MaxOFPortSeconds: 53.86, Samples: 3},
		{Case: "ovs", Workload: "ports300", Ports: 300, VsctlSeconds: 0.36, OFPortSeconds: 0.392, MinOFPortSeconds: 0.26, MaxOFPortSeconds: 0.42, Samples: 3},
	}
	var out strings.Builder
	printBenchTables(&out, []bench.Workload{addport, ports}, results)
	sections := strings.Split(out.String(), "\n\n")
	if len(sections) != 2 {
		t.Fatalf("want 2 tables, got %d:\n%s", len(sections), out.String())
	}
	for i, want := range []map[string]string{{
		"case":    "forwarding ms range ms ovs-vsctl ms ports vs ovs",
		"xswitch": "45.3 29.8-57.6 115.7 15 3.94x",
		"ovs":     "11.5 8.8-34.2 11.5 15 1.00x",
	}, {
		"case":    "ports ovs-vsctl s all ofport s range s ms/port vs ovs",
		"xswitch": "300 39.15 39.20 37.55-53.86 130.67 100.00x",
		"ovs":     "300 0.36 0.39 0.26-0.42 1.31 1.00x",
	}} {
		got := tableRows(sections[i])
		for first, w := range want {
			if g := strings.Join(got[first], " "); g != w {
				t.Errorf("table %d: row %s = %q, want %q", i, first, g, w)
			}
		}
	}
}
