package control

import (
	"testing"
	"time"

	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/control/store"
)

func TestAllocOFPort(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	recently, anHourAgo := now.Add(-time.Minute), now.Add(-ofportQuarantine)
	bc := &store.BridgeConfig{
		Name:  "br0",
		Ports: []api.PortConfig{{Name: "p1", OFPort: 1}, {Name: "down", OFPort: 2}, {Name: "p5", OFPort: 5}},
		Released: []store.ReleasedPort{
			{Name: "gone", OFPort: 3, Time: recently},
			{Name: "long-gone", OFPort: 4, Time: anHourAgo},
		},
	}
	for _, c := range []struct {
		name      string
		requested uint16
		want      uint16
		err       bool
	}{
		{"new", 0, 4, false},       // 2 is held by a port that is down, 3 is quarantined, 4's quarantine is over
		{"gone", 0, 3, false},      // its own number back
		{"long-gone", 0, 4, false}, // over an hour: like any new port
		{"new", 3, 3, false},       // asked for: a quarantined number is free
		{"new", 2, 0, true},        // held by a port that is down
		{"new", 0xff01, 0, true},   // reserved
		{"p1", 0, 4, false},        // names do not matter for held numbers
	} {
		got, err := allocOFPort(bc, c.name, c.requested, now)
		if got != c.want || (err != nil) != c.err {
			t.Errorf("allocOFPort(%q, %d) = %d, %v; want %d, error %v", c.name, c.requested, got, err, c.want, c.err)
		}
	}
}

func TestAllocOFPortWhenAllAreTaken(t *testing.T) {
	now := time.Now()
	bc := &store.BridgeConfig{Name: "br0"}
	for n := uint16(1); n <= 0xff00; n++ {
		if n%2 == 0 {
			bc.Ports = append(bc.Ports, api.PortConfig{Name: "p", OFPort: n})
		} else {
			bc.Released = append(bc.Released, store.ReleasedPort{Name: "r", OFPort: n, Time: now.Add(-time.Duration(n) * time.Millisecond)})
		}
	}
	// Every free number is quarantined: the one released longest ago goes.
	if got, err := allocOFPort(bc, "new", 0, now); got != 0xfeff || err != nil {
		t.Errorf("with every number taken or quarantined: %d, %v; want 65279, the oldest released", got, err)
	}
	for _, r := range bc.Released {
		bc.Ports = append(bc.Ports, api.PortConfig{Name: "q", OFPort: r.OFPort})
	}
	if got, err := allocOFPort(bc, "new", 0, now); err == nil {
		t.Errorf("with every number held: %d, %v; want an error", got, err)
	}
}

func TestReleaseKeepsOneEntryPerNameAndNumber(t *testing.T) {
	now := time.Now()
	bc := &store.BridgeConfig{Released: []store.ReleasedPort{
		{Name: "a", OFPort: 1, Time: now.Add(-2 * ofportQuarantine)},
		{Name: "b", OFPort: 2, Time: now.Add(-time.Minute)},
		{Name: "c", OFPort: 3, Time: now.Add(-time.Minute)},
	}}
	releaseOFPort(bc, api.PortConfig{Name: "b", OFPort: 7}, now)
	releaseOFPort(bc, api.PortConfig{Name: "d", OFPort: 3}, now)
	want := []store.ReleasedPort{{Name: "b", OFPort: 7, Time: now}, {Name: "d", OFPort: 3, Time: now}}
	if len(bc.Released) != 2 || bc.Released[0] != want[0] || bc.Released[1] != want[1] {
		t.Errorf("released %+v, want %+v", bc.Released, want)
	}
}
