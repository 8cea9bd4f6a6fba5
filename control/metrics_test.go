package control

import (
	"io"
	"log/slog"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/xswitch/xswitch/conntrack"
	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/internal/cttest"
)

func TestMetricsDescribeEveryBridgeUntilClosed(t *testing.T) {
	d, err := NewDaemon(Options{
		DBPath: filepath.Join(t.TempDir(), "conf.json"),
		Log:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, br := range []string{"br1", "br0"} {
		if resp := d.Handle(api.Request{Verb: api.VerbAddBridge, Bridge: br}); resp.Error != "" {
			t.Fatal(resp.Error)
		}
	}

	// The forwarders publish their busy and idle times at the end of a
	// loop iteration, and idle only once a sleep is over: a scrape right
	// after add-br may find them at zero.
	var got []BridgeMetrics
	deadline := time.Now().Add(5 * time.Second)
	for {
		got = d.Metrics()
		if len(got) != 2 || got[0].Name != "br0" || got[1].Name != "br1" {
			t.Fatalf("Metrics lists %+v; want br0 and br1 in that order", got)
		}
		if got[0].ForwarderIdle > 0 && got[1].ForwarderIdle > 0 && got[0].ForwarderBusy > 0 && got[1].ForwarderBusy > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("forwarder times still not positive after 5s: %+v", got)
		}
		time.Sleep(time.Millisecond)
	}
	for _, b := range got {
		if b.Flows != 1 || b.MACEntries != 0 || len(b.Ports) != 0 {
			t.Errorf("bridge %s: %d flows, %d MAC entries, %d ports; want the default rule and nothing else",
				b.Name, b.Flows, b.MACEntries, len(b.Ports))
		}
	}

	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if got := d.Metrics(); got != nil {
		t.Errorf("Metrics after Close = %+v; want nothing", got)
	}
}

// TestConntrackMetricsCountTheTracker: the tracker's counts after real
// traffic, refusals by reason, and the zones that hold connections or
// have a limit, with the limit that applies to each.
func TestConntrackMetricsCountTheTracker(t *testing.T) {
	d := quietDaemon(t, filepath.Join(t.TempDir(), "conf.json"))
	defer d.Close()
	handle(t, d, api.Request{Verb: api.VerbCTSetLimits, Args: []string{"default=10", "zone=2,limit=1", "zone=4,limit=0"}})
	handle(t, d, api.Request{Verb: api.VerbCTSetMaxConns, Args: []string{"3"}})
	tr, now := d.Conntrack(), conntrack.Now()
	cttest.Handshake(t, tr, 0, "10.0.0.1", "10.0.0.2", 40000, 80, now)
	in := func(zone uint16) conntrack.Action { return conntrack.Action{Zone: zone, Commit: true} }
	cttest.Run(tr, cttest.UDP(t, "10.0.0.1", "10.0.0.2", 1, 53), in(2), now)
	cttest.Run(tr, cttest.UDP(t, "10.0.0.1", "10.0.0.2", 2, 53), in(2), now) // zone 2 is full
	cttest.Run(tr, cttest.UDP(t, "10.0.0.1", "10.0.0.2", 3, 53), in(4), now) // zone 4 admits none
	cttest.Run(tr, cttest.Echo(t, "10.0.0.1", "10.0.0.2", 1, false), in(0), now)
	cttest.Run(tr, cttest.Echo(t, "10.0.0.1", "10.0.0.2", 2, false), in(0), now) // the table is full
	handle(t, d, api.Request{Verb: api.VerbFlushConntrack, Args: []string{"zone=2"}})

	m := d.ConntrackMetrics()
	s := m.Stats
	if s.Entries != 2 || s.MaxConns != 3 || s.Created != 3 || s.Flushed != 1 || s.Expired != 0 {
		t.Errorf("entries %d, maxconns %d, created %d, flushed %d, expired %d; want 2, 3, 3, 1, 0",
			s.Entries, s.MaxConns, s.Created, s.Flushed, s.Expired)
	}
	refused := map[string]uint64{}
	for _, r := range conntrack.Refusals() {
		refused[r.String()] = s.Refused[r]
	}
	if want := map[string]uint64{"full": 1, "zone_limit": 2, "nat_exhausted": 0, "clash": 0}; !reflect.DeepEqual(refused, want) {
		t.Errorf("refusals %v; want %v", refused, want)
	}
	want := []ZoneMetrics{{Zone: 0, Count: 2, Limit: 10, Limited: true}, {Zone: 2, Count: 0, Limit: 1, Limited: true}, {Zone: 4, Count: 0, Limit: 0, Limited: true}}
	if !reflect.DeepEqual(m.Zones, want) {
		t.Errorf("zones %+v; want %+v", m.Zones, want)
	}
}
