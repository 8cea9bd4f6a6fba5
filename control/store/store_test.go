package store

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xswitch/xswitch/control/api"
)

// TestTrailingDataIsCorrupt keeps a fix: a file with a second value after
// the configuration once loaded as if the rest were not there.
func TestTrailingDataIsCorrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conf.json")
	for _, text := range []string{`{"bridges":[]} {"bridges":[{"name":"br1"}]}`, `{"bridges":[]}]`, `{"bridges":[]}x`} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path, Rules{}); err == nil || !strings.Contains(err.Error(), "corrupt") {
			t.Errorf("Load(%q) = %v; want a corrupt-configuration error", text, err)
		}
	}
	if err := os.WriteFile(path, []byte("{\"bridges\":[]}\n\n  \t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path, Rules{}); err != nil {
		t.Errorf("trailing white space: %v; want it accepted", err)
	}
}

// TestOnlyOwnTemporariesAreRemoved: a daemon killed during a save leaves
// its temporary file, which the next daemon clears at start-up; files that
// only look like one, a user's among them, stay.
func TestOnlyOwnTemporariesAreRemoved(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "conf.json")
	ours := ".conf.json.xswitch-save-123456"
	theirs := []string{"conf.json.tmp123", "conf.json.tmp", ".conf.json.xswitch-save-mine", "other.json.tmp9"}
	for _, name := range append([]string{ours}, theirs...) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, _, err := Open(path, time.Now(), Rules{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := append([]string{"conf.json.journal", "conf.json.lock"}, theirs...)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("after start-up the directory holds %v, want %v", names, want)
	}
}

func TestConfigRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "conf.json")
	want := &Config{Bridges: []BridgeConfig{{
		Name: "br0",
		Ports: []api.PortConfig{
			{Name: "p1", OFPort: 1, Netns: "ns1", Peer: "eth0", Address: "10.0.0.1/24", MTU: 9000},
			{Name: "eth9", OFPort: 7, Mode: "generic", Queues: 2, VLANMode: "native-untagged", Tag: 10, Trunks: []uint16{20, 30}},
		},
		Flows: []string{
			"priority=100,ip,nw_dst=10.0.0.2 actions=output:7",
			"priority=90,ip,nw_dst=10.0.0.3 actions=output:1",
			"priority=0 actions=NORMAL",
		},
		Installed: []InstallTime{
			{At: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Count: 2},
			{At: time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC), Count: 1},
		},
		Released:    []ReleasedPort{{Name: "p2", OFPort: 2, Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}},
		Controllers: []string{"tcp:127.0.0.1:6653", "ptcp:6653:[::1]"},
		FailMode:    "secure",
		DatapathID:  "0000aabbccddeeff",
	}}}
	if err := Save(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path, Rules{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("loaded %+v; want %+v", got, want)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("saving left %d files behind; want only the configuration", len(entries))
	}
}

func TestMissingConfigIsEmpty(t *testing.T) {
	c, err := Load(filepath.Join(t.TempDir(), "none.json"), Rules{})
	if err != nil || len(c.Bridges) != 0 {
		t.Fatalf("Load = %+v, %v; want empty, nil", c, err)
	}
}

func TestCorruptConfigIsRefusedAndKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conf.json")
	for _, corrupt := range []string{`{"bridges": [`, `{"bridges": [], "surprise": 1}`, "\x00\x01"} {
		os.WriteFile(path, []byte(corrupt), 0o600)
		_, err := Load(path, Rules{})
		if err == nil || !strings.Contains(err.Error(), "corrupt") {
			t.Fatalf("Load(%q) = %v; want a corrupt-configuration error", corrupt, err)
		}
		if data, _ := os.ReadFile(path); string(data) != corrupt {
			t.Fatal("the corrupt file was changed")
		}
	}
}

func TestCloneIsDeep(t *testing.T) {
	c := &Config{Bridges: []BridgeConfig{{Name: "br0", Ports: []api.PortConfig{{Name: "p1"}}}}}
	d := c.Clone()
	d.Bridges[0].Ports[0].Name = "changed"
	d.Bridges[0].Ports = append(d.Bridges[0].Ports, api.PortConfig{Name: "p2"})
	if c.Bridges[0].Ports[0].Name != "p1" || len(c.Bridges[0].Ports) != 1 {
		t.Fatal("changing a clone changed the original")
	}
}
