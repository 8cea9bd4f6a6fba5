package control

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/xswitch/xswitch/conntrack"
	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/internal/cttest"
)

// trackerSettings are what the conntrack verbs set in a tracker.
type trackerSettings struct {
	MaxConns     uint32
	Default      uint32
	Zones        []conntrack.ZoneLimit
	TCPSeqCheck  bool
	ZoneTimeouts map[uint16]conntrack.Timeouts
}

func settingsOf(tr *conntrack.Tracker) trackerSettings {
	def, zones := tr.ZoneLimits()
	return trackerSettings{MaxConns: tr.MaxConns(), Default: def, Zones: zones, TCPSeqCheck: tr.TCPSeqCheck(), ZoneTimeouts: tr.ZoneTimeouts()}
}

// The tracker's settings are saved with the configuration and come back
// with a restart, whether the daemon stopped cleanly or crashed; its
// connections do not.
func TestConntrackSettingsSurviveARestart(t *testing.T) {
	for _, stop := range []struct {
		name string
		stop func(*Daemon)
	}{{"close", func(d *Daemon) { d.Close() }}, {"crash", crash}} {
		t.Run(stop.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "conf.json")
			d := quietDaemon(t, path)
			handle(t, d, api.Request{Verb: api.VerbAddBridge, Bridge: "br0"})
			handle(t, d, api.Request{Verb: api.VerbCTSetMaxConns, Args: []string{"1000"}})
			handle(t, d, api.Request{Verb: api.VerbCTSetLimits, Bridge: "br0", Args: []string{"default=50", "zone=3,limit=7", "zone=9,limit=1"}})
			handle(t, d, api.Request{Verb: api.VerbCTDelLimits, Args: []string{"zone=9"}})
			handle(t, d, api.Request{Verb: api.VerbCTDisableTCPSeqChk})
			handle(t, d, api.Request{Verb: api.VerbAddZoneTP, Args: []string{"netdev", "zone=5", "udp_first=1", "icmp_reply=7"}})
			handle(t, d, api.Request{Verb: api.VerbAddZoneTP, Args: []string{"system", "zone=6", "tcp_established=100"}})
			handle(t, d, api.Request{Verb: api.VerbDelZoneTP, Args: []string{"netdev", "zone=6"}})
			cttest.Run(d.Conntrack(), cttest.UDP(t, "10.0.0.1", "10.0.0.2", 1, 2), conntrack.Action{Zone: 3, Commit: true}, conntrack.Now())
			want := trackerSettings{MaxConns: 1000, Default: 50, Zones: []conntrack.ZoneLimit{{Zone: 3, Limit: 7}},
				ZoneTimeouts: map[uint16]conntrack.Timeouts{5: {UDPFirst: time.Second, ICMPReply: 7 * time.Second}}}
			stop.stop(d)

			d = quietDaemon(t, path)
			defer d.Close()
			if got := settingsOf(d.Conntrack()); !reflect.DeepEqual(got, want) {
				t.Errorf("after a restart the tracker has %+v; want %+v", got, want)
			}
			if n := d.Conntrack().Count(); n != 0 {
				t.Errorf("after a restart the tracker holds %d connections; want none", n)
			}
			listed := handle(t, d, api.Request{Verb: api.VerbListZoneTP, Args: []string{"netdev"}}).Conntrack
			if want := []api.ZoneTimeouts{{Zone: 5, Timeouts: map[string]uint32{"udp_first": 1, "icmp_reply": 7}}}; listed == nil || !reflect.DeepEqual(listed.ZoneTimeouts, want) {
				t.Errorf("list-zone-tp netdev: %+v; want %+v", listed, want)
			}

			// Back to the defaults, the configuration holds none.
			handle(t, d, api.Request{Verb: api.VerbCTDelLimits, Args: []string{"default", "zone=3"}})
			handle(t, d, api.Request{Verb: api.VerbCTEnableTCPSeqChk})
			handle(t, d, api.Request{Verb: api.VerbCTSetMaxConns, Args: []string{"3000000"}})
			handle(t, d, api.Request{Verb: api.VerbDelZoneTP, Args: []string{"system", "zone=5"}})
			if c := running(d).Conntrack; c == nil || *c.MaxConns != 3000000 || c.DefaultLimit != 0 || c.ZoneLimits != nil || c.TCPSeqCheckOff || c.ZoneTimeouts != nil {
				t.Errorf("configuration's conntrack settings %+v; want only maxconns 3000000", c)
			}
		})
	}
}

// A refused setting changes neither the configuration nor the tracker.
func TestRefusedConntrackSettingsChangeNothing(t *testing.T) {
	d := quietDaemon(t, filepath.Join(t.TempDir(), "conf.json"))
	defer d.Close()
	handle(t, d, api.Request{Verb: api.VerbAddBridge, Bridge: "br0"})
	handle(t, d, api.Request{Verb: api.VerbCTSetLimits, Args: []string{"zone=3,limit=7"}})
	handle(t, d, api.Request{Verb: api.VerbAddZoneTP, Args: []string{"netdev", "zone=5", "udp_first=1"}})
	cfg, settings := running(d), settingsOf(d.Conntrack())
	// ovs-vsctl's --may-exist and --if-exists: no error, no change.
	handle(t, d, api.Request{Verb: api.VerbAddZoneTP, Args: []string{"netdev", "zone=5", "udp_first=9"}, MayExist: true})
	handle(t, d, api.Request{Verb: api.VerbDelZoneTP, Args: []string{"netdev", "zone=6"}, IfExists: true})
	for _, req := range []api.Request{
		{Verb: api.VerbAddZoneTP, Args: []string{"netdev", "zone=5", "udp_first=9"}},
		{Verb: api.VerbAddZoneTP, Args: []string{"br0", "zone=6", "udp_first=9"}},
		{Verb: api.VerbAddZoneTP, Args: []string{"netdev", "zone=6", "tcp_close_wait=9"}},
		{Verb: api.VerbAddZoneTP, Args: []string{"netdev", "zone=6", "udp_first=-1"}},
		{Verb: api.VerbAddZoneTP, Args: []string{"netdev", "zone=65536"}},
		{Verb: api.VerbAddZoneTP, Args: []string{"netdev", "6"}},
		{Verb: api.VerbDelZoneTP, Args: []string{"netdev", "zone=6"}},
		{Verb: api.VerbDelZoneTP, Args: []string{"netdev", "zone=5", "udp_first=1"}},
		{Verb: api.VerbCTSetMaxConns, Args: []string{"-1"}},
		{Verb: api.VerbCTSetMaxConns, Bridge: "br9", Args: []string{"10"}},
		{Verb: api.VerbCTSetLimits, Args: []string{"default=5", "zone=4,limit=x"}},
		{Verb: api.VerbCTSetLimits, Args: []string{"zone=4,limit=1", "zone=65536,limit=1"}},
		{Verb: api.VerbCTDelLimits, Args: []string{"zone=3", "default=1"}},
		{Verb: api.VerbCTDisableTCPSeqChk, Args: []string{"now"}},
	} {
		if resp := d.Handle(req); resp.Error == "" {
			t.Errorf("%s %q was taken; want it refused", req.Verb, req.Args)
		}
	}
	if got := running(d); !reflect.DeepEqual(got, cfg) {
		t.Errorf("refused verbs changed the configuration to %+v; want %+v", got, cfg)
	}
	if got := settingsOf(d.Conntrack()); !reflect.DeepEqual(got, settings) {
		t.Errorf("refused verbs changed the tracker to %+v; want %+v", got, settings)
	}
}

// A configuration whose zone limits no verb would have written is
// refused.
func TestConntrackConfigOutOfOrderIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conf.json")
	conf := `{"bridges": [], "conntrack": {"zone_limits": [{"zone": 5, "limit": 1}, {"zone": 3, "limit": 1}]}}`
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := NewDaemon(Options{DBPath: path, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err == nil {
		d.Close()
		t.Fatal("a configuration with zone limits out of order was taken")
	}
	if !strings.Contains(err.Error(), "corrupt") || !strings.Contains(err.Error(), "zone order") {
		t.Errorf("error %q; want it to say the configuration is corrupt, and why", err)
	}
}

// The daemon sweeps the tracker: a connection past its time is removed
// within a second or so, and counted as expired.
func TestDaemonSweepsConntrack(t *testing.T) {
	d := quietDaemon(t, filepath.Join(t.TempDir(), "conf.json"))
	defer d.Close()
	tr := d.Conntrack()
	// Committed two minutes ago: its 60 s are over.
	cttest.Run(tr, cttest.UDP(t, "10.0.0.1", "10.0.0.2", 1, 2), conntrack.Action{Commit: true}, conntrack.Now()-int64(2*time.Minute))
	if n := tr.Count(); n != 1 {
		t.Fatalf("the tracker holds %d connections; want the one committed", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for tr.Count() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the expired connection is still in the table after 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := tr.Stats().Expired; n != 1 {
		t.Errorf("the tracker counts %d connections expired; want 1", n)
	}
}
