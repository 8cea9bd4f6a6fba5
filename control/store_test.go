package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/control/store"
	"github.com/xswitch/xswitch/flow"
)

func quietDaemon(t *testing.T, path string) *Daemon {
	t.Helper()
	d, err := NewDaemon(Options{DBPath: path, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// crash stops d leaving its configuration as kill -9 would: without the
// compaction that a clean stop makes, its files put back as they were.
func crash(d *Daemon) {
	d.mu.Lock()
	files := map[string][]byte{}
	for _, path := range []string{d.dbPath, store.JournalPath(d.dbPath)} {
		files[path], _ = os.ReadFile(path) // nil: there was none
	}
	d.mu.Unlock()
	d.Close()
	for path, data := range files {
		if data == nil {
			os.Remove(path)
		} else if err := os.WriteFile(path, data, 0o600); err != nil {
			panic(err)
		}
	}
}

// running is what daemon d has in use, as a snapshot would hold it.
func running(d *Daemon) *store.Config {
	d.mu.Lock()
	defer d.mu.Unlock()
	return store.Snapshot(d.cfg, tablesOf(d))
}

func tablesOf(d *Daemon) map[string]*flow.Table {
	out := map[string]*flow.Table{}
	for name, b := range d.bridges {
		out[name] = b.Flows()
	}
	return out
}

// randomVerb is a flow or bridge verb drawn from a small space, so that
// rules replace, overlap and select each other.
func randomVerb(rnd *rand.Rand) api.Request {
	bridge := fmt.Sprintf("br%d", rnd.IntN(2))
	match := func() string {
		fields := []string{
			"", "ip", "tcp,tp_dst=22", fmt.Sprintf("ip,nw_dst=10.0.0.%d", rnd.IntN(4)),
			fmt.Sprintf("in_port=%d", 1+rnd.IntN(3)), "arp", "udp,tp_src=53",
		}
		return fields[rnd.IntN(len(fields))]
	}
	rule := func() string {
		var b strings.Builder
		if rnd.IntN(3) == 0 {
			fmt.Fprintf(&b, "cookie=%#x,", rnd.IntN(4))
		}
		if rnd.IntN(4) == 0 {
			fmt.Fprintf(&b, "hard_timeout=%d,", 1000+rnd.IntN(100))
		}
		fmt.Fprintf(&b, "priority=%d", []int{0, 10, 100, 32768}[rnd.IntN(4)])
		if m := match(); m != "" {
			b.WriteString("," + m)
		}
		b.WriteString(",actions=" + []string{"drop", "NORMAL", "output:2", "mod_dl_src:02:00:00:00:00:01,output:1"}[rnd.IntN(4)])
		return b.String()
	}
	switch op := rnd.IntN(20); {
	case op == 0:
		return api.Request{Verb: api.VerbAddBridge, Bridge: bridge}
	case op == 1:
		return api.Request{Verb: api.VerbDelBridge, Bridge: bridge}
	case op < 10:
		var flows []string
		for range 1 + rnd.IntN(5) {
			flows = append(flows, rule())
		}
		return api.Request{Verb: api.VerbAddFlows, Bridge: bridge, Flows: flows}
	case op < 14:
		return api.Request{Verb: api.VerbModFlows, Bridge: bridge, Flows: []string{rule()}, Strict: rnd.IntN(2) == 0}
	case op < 19:
		return api.Request{Verb: api.VerbDelFlows, Bridge: bridge, Match: match(), Strict: rnd.IntN(2) == 0}
	default:
		return api.Request{Verb: api.VerbDelFlows, Bridge: bridge}
	}
}

// TestJournalReplaysWhatTheDaemonRan runs random verbs and checks after
// each that the configuration on disk, as a restart loads it, is what the
// daemon has in use; now and then a daemon restarts on it, and now and
// then the journal is compacted into a new snapshot.
func TestJournalReplaysWhatTheDaemonRan(t *testing.T) {
	defer func(old int64) { store.MinCompaction = old }(store.MinCompaction)
	store.MinCompaction = 4 << 10 // compact every few dozen changes
	path := filepath.Join(t.TempDir(), "conf.json")
	d := quietDaemon(t, path)
	defer func() { d.Close() }()
	rnd := rand.New(rand.NewPCG(1, 2))
	var applied, compactions int
	generation := d.db.Generation()
	for step := range 600 {
		req := randomVerb(rnd)
		if resp := d.Handle(req); resp.Error == "" {
			applied++
		}
		if g := d.db.Generation(); g != generation {
			compactions, generation = compactions+1, g
		}
		d, _ = checkSaved(t, d, path, step, fmt.Sprintf("%+v", req))
	}
	t.Logf("%d of 600 verbs applied, %d compactions", applied, compactions)
	if applied < 300 || compactions < 3 {
		t.Errorf("the random verbs applied %d changes with %d compactions: too few to test the journal", applied, compactions)
	}
}

// checkSaved fails the test unless the configuration on disk at path, as
// a restart loads it, is what d runs (what the change described by what,
// at step, left); every hundredth step it crashes or closes d, the two in
// turn, and checks that a daemon restarted from disk runs the same. It
// returns the daemon to go on with, and whether it restarted.
func checkSaved(t *testing.T, d *Daemon, path string, step int, what string) (*Daemon, bool) {
	t.Helper()
	want := running(d)
	got, err := LoadConfig(path)
	if err != nil {
		t.Fatalf("step %d (%s): %v", step, what, err)
	}
	if !reflect.DeepEqual(got.Bridges, want.Bridges) {
		t.Fatalf("step %d (%s): on disk\n%+v\nrunning\n%+v", step, what, got.Bridges, want.Bridges)
	}
	if step%100 != 99 {
		return d, false
	}
	if step%200 == 99 {
		crash(d)
	} else {
		d.Close()
	}
	d = quietDaemon(t, path)
	if restored := running(d); !reflect.DeepEqual(restored.Bridges, want.Bridges) {
		t.Fatalf("step %d: restarted with\n%+v\nwas running\n%+v", step, restored.Bridges, want.Bridges)
	}
	return d, true
}

// TestOneEditAppendsOneLine keeps a fix: each add-flow rewrote the whole
// configuration, 12 MB for 200,000 rules.
func TestOneEditAppendsOneLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conf.json")
	d := quietDaemon(t, path)
	defer func() { d.Close() }()
	d.Handle(api.Request{Verb: api.VerbAddBridge, Bridge: "br0"})
	var rules []string
	for i := range 20000 {
		rules = append(rules, fmt.Sprintf("priority=100,ip,nw_dst=10.1.%d.%d,actions=drop", i>>8, i&0xff))
	}
	if resp := d.Handle(api.Request{Verb: api.VerbAddFlows, Bridge: "br0", Flows: rules}); resp.Error != "" {
		t.Fatal(resp.Error)
	}
	d.Close()
	d = quietDaemon(t, path) // starting compacts the journal into a snapshot
	snapshot, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	journal, _ := os.ReadFile(store.JournalPath(path))
	if resp := d.Handle(api.Request{Verb: api.VerbAddFlows, Bridge: "br0", Flows: []string{"priority=5,arp,actions=drop"}}); resp.Error != "" {
		t.Fatal(resp.Error)
	}
	after, _ := os.Stat(path)
	grown, _ := os.ReadFile(store.JournalPath(path))
	added := grown[len(journal):]
	t.Logf("snapshot %d bytes; one add-flow appended %q", snapshot.Size(), added)
	if !os.SameFile(snapshot, after) || !after.ModTime().Equal(snapshot.ModTime()) {
		t.Error("one add-flow rewrote the snapshot")
	}
	if !bytes.HasPrefix(grown, journal) || bytes.Count(added, []byte("\n")) != 1 || len(added) > 200 {
		t.Errorf("one add-flow changed the journal by %d bytes, want one short line appended", len(grown)-len(journal))
	}
}

// TestTornLastChangeIsDropped: a crash in the middle of an append leaves a
// partial line, or garbage, at the end of the journal. That change was
// never acknowledged: loading drops it, and a daemon starts on the rest.
func TestTornLastChangeIsDropped(t *testing.T) {
	for name, tail := range map[string]string{
		"partial line":      `1234abcd {"time":"2026-12-01T00:00:00Z","flows":[{"bridge":"br0","add":["priority=9,ip actions=dr`,
		"bad checksum line": `00000000 {"time":"2026-12-01T00:00:00Z","flows":[{"bridge":"br0","add":["priority=9,ip actions=drop"]}]}` + "\n",
		"zeros":             "\x00\x00\x00\x00\x00\x00\x00\x00",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "conf.json")
			d := quietDaemon(t, path)
			d.Handle(api.Request{Verb: api.VerbAddBridge, Bridge: "br0"})
			d.Handle(api.Request{Verb: api.VerbAddFlows, Bridge: "br0", Flows: []string{"priority=7,arp,actions=drop"}})
			want := running(d)
			crash(d)
			f, err := os.OpenFile(store.JournalPath(path), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(tail)
			f.Close()

			got, err := LoadConfig(path)
			if err != nil {
				t.Fatalf("a torn last change: %v", err)
			}
			if !reflect.DeepEqual(got.Bridges, want.Bridges) {
				t.Fatalf("with a torn last change loaded\n%+v\nwant\n%+v", got.Bridges, want.Bridges)
			}
			d = quietDaemon(t, path)
			defer d.Close()
			if restored := running(d); !reflect.DeepEqual(restored.Bridges, want.Bridges) {
				t.Fatalf("restarted with\n%+v\nwant\n%+v", restored.Bridges, want.Bridges)
			}
			if resp := d.Handle(api.Request{Verb: api.VerbAddFlows, Bridge: "br0", Flows: []string{"priority=8,arp,actions=drop"}}); resp.Error != "" {
				t.Fatal(resp.Error)
			}
			if got, err := LoadConfig(path); err != nil || len(got.Bridges[0].Flows) != 3 {
				t.Fatalf("after a change on top of the repaired journal: %+v, %v", got, err)
			}
		})
	}
}

// TestCorruptJournalIsRefused: a bad line with good ones after it is not a
// torn append but damage, which the daemon refuses to start on.
func TestCorruptJournalIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conf.json")
	d := quietDaemon(t, path)
	d.Handle(api.Request{Verb: api.VerbAddBridge, Bridge: "br0"})
	d.Handle(api.Request{Verb: api.VerbAddFlows, Bridge: "br0", Flows: []string{"priority=7,arp,actions=drop"}})
	d.Handle(api.Request{Verb: api.VerbAddFlows, Bridge: "br0", Flows: []string{"priority=8,arp,actions=drop"}})
	crash(d)
	data, _ := os.ReadFile(store.JournalPath(path))
	damaged := bytes.Replace(data, []byte("priority=7"), []byte("priority=6"), 1)
	if bytes.Equal(damaged, data) {
		t.Fatal("nothing to damage in the journal")
	}
	os.WriteFile(store.JournalPath(path), damaged, 0o600)
	_, err := NewDaemon(Options{DBPath: path, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err == nil || !strings.Contains(err.Error(), "corrupt") || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("a damaged journal: %v; want it refused as corrupt", err)
	}
	if kept, _ := os.ReadFile(store.JournalPath(path)); !bytes.Equal(kept, damaged) {
		t.Error("the damaged journal was changed")
	}
}

// TestCompactionCutShortKeepsEveryChange: a crash after a compaction
// wrote its snapshot but before it replaced the journal leaves the old
// journal, whose changes the snapshot already holds: they must not be
// applied twice.
func TestCompactionCutShortKeepsEveryChange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conf.json")
	d := quietDaemon(t, path)
	d.Handle(api.Request{Verb: api.VerbAddBridge, Bridge: "br0"})
	d.Handle(api.Request{Verb: api.VerbAddFlows, Bridge: "br0", Flows: []string{"priority=7,arp,actions=drop"}})
	d.Handle(api.Request{Verb: api.VerbDelFlows, Bridge: "br0", Match: "arp"})
	d.Handle(api.Request{Verb: api.VerbAddFlows, Bridge: "br0", Flows: []string{"priority=8,arp,actions=drop"}})
	want := running(d)
	oldJournal, _ := os.ReadFile(store.JournalPath(path))
	d.mu.Lock()
	if err := d.db.Compact(d.cfg, tablesOf(d)); err != nil {
		t.Fatal(err)
	}
	d.mu.Unlock()
	crash(d)
	os.WriteFile(store.JournalPath(path), oldJournal, 0o600) // as if the rename never happened

	got, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Bridges, want.Bridges) {
		t.Fatalf("after a cut-short compaction loaded\n%+v\nwant\n%+v", got.Bridges, want.Bridges)
	}
}

// TestSecondDaemonOnOneConfigurationIsRefused keeps a fix: a second daemon
// on the same --db started, overwrote the first's saves and deleted its
// veths.
func TestSecondDaemonOnOneConfigurationIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conf.json")
	first := quietDaemon(t, path)
	first.Handle(api.Request{Verb: api.VerbAddBridge, Bridge: "br0"})
	_, err := NewDaemon(Options{DBPath: path, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	want := fmt.Sprintf("in use by another xswitch daemon (pid %d)", os.Getpid())
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("a second daemon on %s: %v; want an error saying %q", path, err, want)
	}
	if got, _ := LoadConfig(path); len(got.Bridges) != 1 {
		t.Errorf("the refused daemon changed the configuration: %+v", got)
	}
	first.Close()
	second := quietDaemon(t, path) // the lock goes with the first daemon
	second.Close()
}

// TestHardTimeoutRunsOnAcrossRestarts keeps a fix: a restart reset every
// rule's installation time, so a daemon that restarts often never expired
// a hard_timeout. Idle timeouts count from the restart.
func TestHardTimeoutRunsOnAcrossRestarts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conf.json")
	long := time.Now().Add(-time.Hour).UTC()
	cfg := &store.Config{Bridges: []store.BridgeConfig{{
		Name:  "br0",
		Ports: []api.PortConfig{},
		Flows: []string{
			"hard_timeout=60, priority=7,arp actions=drop",
			"idle_timeout=60, priority=6,arp actions=drop",
			"priority=0 actions=NORMAL",
		},
		Installed: []store.InstallTime{{At: long, Count: 3}},
	}}}
	if err := store.Save(path, cfg); err != nil {
		t.Fatal(err)
	}
	d := quietDaemon(t, path)
	defer d.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := running(d).Bridges[0].Flows
		if len(got) == 2 {
			if got[0] != "idle_timeout=60, priority=6,arp actions=drop" {
				t.Errorf("after the hard timeout %v remain, want the idle rule and the default", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a rule installed an hour ago with hard_timeout=60 is still there 5 s after a restart: %v", got)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if inst := running(d).Bridges[0].Installed; len(inst) != 1 || !inst[0].At.Equal(long) {
		t.Errorf("install times after the restart %+v, want the saved %v kept", inst, long)
	}
}

// TestCleanStopWritesTheSnapshot: after a clean stop the snapshot alone is
// the configuration, for an operator who reads it and for a fast start.
func TestCleanStopWritesTheSnapshot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conf.json")
	d := quietDaemon(t, path)
	d.Handle(api.Request{Verb: api.VerbAddBridge, Bridge: "br0"})
	d.Handle(api.Request{Verb: api.VerbAddFlows, Bridge: "br0", Flows: []string{"priority=7,arp,actions=drop"}})
	want := running(d)
	d.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var snap store.Config
	if err := json.Unmarshal(data, &snap); err != nil {
		t.Fatal(err)
	}
	if snap.Generation == 0 || !reflect.DeepEqual(snap.Bridges, want.Bridges) {
		t.Errorf("the snapshot after a clean stop holds generation %d, %+v; want %+v", snap.Generation, snap.Bridges, want.Bridges)
	}
	if data, _ := os.ReadFile(store.JournalPath(path)); bytes.Count(data, []byte("\n")) != 1 {
		t.Errorf("the journal after a clean stop holds %q, want only its header", data)
	}
}

// TestHeldConfigWritesAreOneLine: what reconcile applies of one database
// transaction is written once, as the configuration it ends with, not a
// whole copy of it per change; records that edit a flow table are still
// written when they are made. A restart restores all of it.
func TestHeldConfigWritesAreOneLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conf.json")
	d := quietDaemon(t, path)
	defer func() { d.Close() }()
	mustHandle(t, d, api.Request{Verb: api.VerbAddBridge, Bridge: "br0"})
	before, _ := os.ReadFile(store.JournalPath(path))
	var errs []error
	err := d.holdConfigWrites(func() {
		errs = append(errs, d.setFailMode("br0", "secure"), d.setFailMode("br0", "standalone"),
			d.addBridge("br1"), d.setFailMode("br1", "secure"))
	})
	if err := errors.Join(append(errs, err)...); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(store.JournalPath(path))
	// The new bridge's record (its flow table's reset), then the one
	// held back.
	if added := bytes.Count(after[len(before):], []byte("\n")); added != 2 {
		t.Errorf("four changes, one of them a flow table's, appended %d lines, want 2", added)
	}
	d.Close()
	d = quietDaemon(t, path)
	if got := []string{d.cfg.Bridge("br0").FailMode, d.cfg.Bridge("br1").FailMode}; !slices.Equal(got, []string{"standalone", "secure"}) {
		t.Errorf("after a restart the fail modes are %q, want standalone and secure", got)
	}
}
