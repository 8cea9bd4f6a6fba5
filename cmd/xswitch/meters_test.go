package main

import (
	"strings"
	"testing"
)

// TestMeterStatsPrints: meter-stats prints each meter's counters as
// ovs-ofctl does, in text as in JSON: the daemon's answer carries the
// text across the socket.
func TestMeterStatsPrints(t *testing.T) {
	_, x := serve(t)
	must := mustRun(t, x)
	must("add-br", "br0")
	must("add-meter", "br0", "meter=1,pktps,band=type=drop,rate=100")
	out := must("meter-stats", "br0")
	if !strings.HasPrefix(out, "meter:1 flow_count:0 packet_in_count:0 byte_in_count:0 duration:") {
		t.Errorf("meter-stats printed %q", out)
	}
	if js := must("--format", "json", "meter-stats", "br0"); !strings.Contains(js, `"stats": "meter:1 flow_count:0`) {
		t.Errorf("meter-stats --format json printed %q", js)
	}
}
