package control

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/xswitch/xswitch/control/api"
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
