package control

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestConfigRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "conf.json")
	want := &Config{Bridges: []BridgeConfig{{
		Name: "br0",
		Ports: []PortConfig{
			{Name: "p1", OFPort: 1, Netns: "ns1", Peer: "eth0", Address: "10.0.0.1/24"},
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
		Released: []ReleasedPort{{Name: "p2", OFPort: 2, Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}},
	}}}
	if err := SaveConfig(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := LoadConfig(path)
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
	c, err := LoadConfig(filepath.Join(t.TempDir(), "none.json"))
	if err != nil || len(c.Bridges) != 0 {
		t.Fatalf("LoadConfig = %+v, %v; want empty, nil", c, err)
	}
}

func TestCorruptConfigIsRefusedAndKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conf.json")
	for _, corrupt := range []string{`{"bridges": [`, `{"bridges": [], "surprise": 1}`, "\x00\x01"} {
		os.WriteFile(path, []byte(corrupt), 0o600)
		_, err := LoadConfig(path)
		if err == nil || !strings.Contains(err.Error(), "corrupt") {
			t.Fatalf("LoadConfig(%q) = %v; want a corrupt-configuration error", corrupt, err)
		}
		if data, _ := os.ReadFile(path); string(data) != corrupt {
			t.Fatal("the corrupt file was changed")
		}
	}
}

func TestCloneIsDeep(t *testing.T) {
	c := &Config{Bridges: []BridgeConfig{{Name: "br0", Ports: []PortConfig{{Name: "p1"}}}}}
	d := c.clone()
	d.Bridges[0].Ports[0].Name = "changed"
	d.Bridges[0].Ports = append(d.Bridges[0].Ports, PortConfig{Name: "p2"})
	if c.Bridges[0].Ports[0].Name != "p1" || len(c.Bridges[0].Ports) != 1 {
		t.Fatal("changing a clone changed the original")
	}
}
