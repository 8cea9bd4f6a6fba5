package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestTopRates(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	prev := counterSample{at: t0, ports: []sampledPort{
		{portKey{"br0", "p1"}, 1, portCounters{RxPackets: 100, RxBytes: 10_000, TxPackets: 50, TxBytes: 5_000, RxDropped: 1, RxErrors: 2}},
		// p2's counters went down: it was re-added, and counts from zero.
		{portKey{"br0", "p2"}, 2, portCounters{RxPackets: 1_000_000, TxPackets: 1_000_000}},
	}}
	cur := counterSample{at: t0.Add(2 * time.Second), ports: []sampledPort{
		{portKey{"br0", "p1"}, 1, portCounters{RxPackets: 300, RxBytes: 260_000, TxPackets: 50, TxBytes: 5_000, RxDropped: 5, TxDropped: 4, RxErrors: 2, TxErrors: 2}},
		{portKey{"br0", "p2"}, 2, portCounters{RxPackets: 40, TxPackets: 20}},
		// p3 is new: no baseline, so no rates until the next refresh.
		{portKey{"br0", "p3"}, 3, portCounters{RxPackets: 7}},
	}}
	got := rates(prev, cur)
	if got.IntervalSec != 2 || !got.Time.Equal(cur.at) {
		t.Errorf("interval %v at %v, want 2s at %v", got.IntervalSec, got.Time, cur.at)
	}
	want := []portRateJSON{
		{Bridge: "br0", Name: "p1", OFPort: 1, RxPackets: 100, RxBits: 1_000_000, RxDropped: 2, TxDropped: 2, ErrorsPerSec: 1},
		{Bridge: "br0", Name: "p2", OFPort: 2, RxPackets: 20, TxPackets: 10},
	}
	if len(got.Ports) != len(want) {
		t.Fatalf("rates for %d ports, want %d: %+v", len(got.Ports), len(want), got.Ports)
	}
	for i := range want {
		if got.Ports[i] != want[i] {
			t.Errorf("port %d:\n got %+v\nwant %+v", i, got.Ports[i], want[i])
		}
	}
}

func TestTopPrintRates(t *testing.T) {
	r := topJSON{
		Time: time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC), IntervalSec: 1,
		Ports: []portRateJSON{
			{Bridge: "br0", Name: "eth1", OFPort: 1, RxPackets: 1234.4, RxBits: 12.5e6, TxPackets: 3, TxBits: 2400},
			{Bridge: "br0", Name: "longer-name", OFPort: 12, RxDropped: 7, ErrorsPerSec: 1},
		},
	}
	var out bytes.Buffer
	printRates(&out, r)
	want := `10:00:00  rates over 1.00s
BRIDGE  PORT         OFPORT  RX PPS  RX MBIT/S  TX PPS  TX MBIT/S  RX DROP/S  TX DROP/S  ERR/S
br0     eth1              1    1234      12.50       3       0.00          0          0      0
br0     longer-name      12       0       0.00       0       0.00          7          0      1
`
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}

	out.Reset()
	printRates(&out, topJSON{Time: r.Time, IntervalSec: 1})
	if !strings.Contains(out.String(), "(no ports)") {
		t.Errorf("a refresh without ports does not say so:\n%s", out.String())
	}
}
