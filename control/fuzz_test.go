package control

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/control/store"
)

var configSeeds = []string{
	`{"bridges":[]}`,
	`{"bridges":[{"name":"br0","ports":[{"name":"p1","ofport":1,"netns":"ns1","peer":"eth0","address":"10.0.0.1/24"},{"name":"eth9","ofport":7,"mode":"generic","queues":2}],"flows":["priority=0,actions=NORMAL"]}]}`,
	`{"bridges":[{"name":"br0","ports":null,"flows":null}]}`,
	`{"bridges":[{"name":"br0","ports":[],"flows":[]}]}` + "\n",
	`{"bridges":[{"name":"br0","ports":[],"flows":[],"other_config":{"forward-bpdu":"true"}}]}`,
	`{"bridges":[{"name":"br0","ports":[],"flows":[],"other_config":{}}]}`,
	`{"bridges":[{"name":"br0","ports":[{"name":"p1","other_config":{"storm-limit":"1000"}}],"flows":[]}]}`,
	`{"bridges":[{"name":"br0","ports":[{"name":"p1","other_config":{"rstp-path-cost":"20000","rstp-port-admin-edge":"true"}}],"flows":[],"rstp_enable":true,"other_config":{"rstp-priority":"4096","rstp-max-age":"6","rstp-forward-delay":"4"}}]}`,
	`{"bridges":[{"name":"br0","ports":[],"flows":[],"other_config":{"rstp-forward-delay":"4"}}]}`,
	`{"bridges":[{"name":"old","ports":[]}]}`,
	`{"bridges":[{"name":"br0","ports":[],"flows":[],"controllers":["tcp:127.0.0.1:6653","ptcp:6653:[::1]"],"fail_mode":"secure","datapath_id":"0000aabbccddeeff"}]}`,
	`{"bridges":[{"name":"br0","ports":[],"flows":[],"controllers":["tcp:127.0.0.1"],"fail_mode":"standalone","other_config":{"datapath-id":"00000000000000ab"}}]}`,
	`{"bridges":[{"name":"br0","ports":[],"flows":[],"controllers":["tcp:localhost"]}]}`,
	`{"bridges":[{"name":"br0","ports":[],"flows":[],"datapath_id":"0"}]}`,
	`{"bridges":[`,
	`{"bridges":[],"surprise":1}`,
	`{"bridges":[]} {"bridges":[]}`,
	`{"bridges":[{"name":"br0","ports":[{"name":"p","ofport":70000}]}]}`,
	"\x00\x01",
	``,
}

// FuzzLoadConfig checks that LoadConfig never panics on any file, and that
// a configuration it loads is saved and loaded back unchanged: what a
// restart restores is what was running.
func FuzzLoadConfig(f *testing.F) {
	for _, s := range configSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "conf.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		loaded, err := LoadConfig(path)
		if err != nil {
			if !strings.Contains(err.Error(), "corrupt") || !strings.Contains(err.Error(), path) {
				t.Fatalf("LoadConfig(%q): error %q does not say the file %s is corrupt", data, err, path)
			}
			if kept, _ := os.ReadFile(path); !bytes.Equal(kept, data) {
				t.Fatalf("LoadConfig(%q) changed the file it refused to %q", data, kept)
			}
			return
		}
		resaved := filepath.Join(dir, "resaved.json")
		if err := store.Save(resaved, loaded); err != nil {
			t.Fatalf("SaveConfig of %+v loaded from %q: %v", loaded, data, err)
		}
		reloaded, err := LoadConfig(resaved)
		if err != nil {
			t.Fatalf("LoadConfig of a saved configuration (from %q): %v", data, err)
		}
		if !reflect.DeepEqual(loaded, reloaded) {
			t.Fatalf("configuration %q: loaded %+v, after save and load %+v", data, loaded, reloaded)
		}
	})
}

var journalSeeds = []string{
	"",
	`556d03aa {"generation":0}` + "\n",
	`7d8bbd51 {"generation":0}` + "\n" + `00000000 {"time":"2026-12-01T00:00:00Z"}` + "\n",
	"garbage\nmore garbage\n",
	`{"generation":0}`,
}

// FuzzLoadJournal checks that loading a configuration never panics
// whatever its journal holds, refuses damage by saying the journal is
// corrupt and leaves it as it was, and that what it loads is saved and
// loaded back unchanged.
func FuzzLoadJournal(f *testing.F) {
	dir := f.TempDir()
	seed := filepath.Join(dir, "conf.json")
	d, err := NewDaemon(Options{DBPath: seed, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		f.Fatal(err)
	}
	d.Handle(api.Request{Verb: api.VerbAddBridge, Bridge: "br0"})
	d.Handle(api.Request{Verb: api.VerbAddFlows, Bridge: "br0", Flows: []string{"priority=7,arp,actions=drop", "cookie=0x1,priority=9,ip,nw_dst=10.0.0.1,actions=output:3",
		"send_flow_rem,no_byte_counts,idle_timeout=30,priority=8,tcp,actions=output:2"}})
	d.Handle(api.Request{Verb: api.VerbModFlows, Bridge: "br0", Flows: []string{"arp,actions=NORMAL"}})
	d.Handle(api.Request{Verb: api.VerbDelFlows, Bridge: "br0", Match: "ip", Strict: false})
	crash(d)
	written, _ := os.ReadFile(store.JournalPath(seed))
	f.Add(written)
	for _, s := range journalSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "conf.json")
		if err := os.WriteFile(store.JournalPath(path), data, 0o600); err != nil {
			t.Fatal(err)
		}
		loaded, err := LoadConfig(path)
		if err != nil {
			if !strings.Contains(err.Error(), "corrupt") || !strings.Contains(err.Error(), store.JournalPath(path)) {
				t.Fatalf("journal %q: error %q does not say the journal is corrupt", data, err)
			}
			if kept, _ := os.ReadFile(store.JournalPath(path)); !bytes.Equal(kept, data) {
				t.Fatalf("journal %q was changed to %q", data, kept)
			}
			return
		}
		resaved := filepath.Join(t.TempDir(), "resaved.json")
		if err := store.Save(resaved, loaded); err != nil {
			t.Fatalf("SaveConfig of %+v loaded with journal %q: %v", loaded, data, err)
		}
		reloaded, err := LoadConfig(resaved)
		if err != nil {
			t.Fatalf("LoadConfig of a saved configuration (journal %q): %v", data, err)
		}
		if !reflect.DeepEqual(loaded.Bridges, reloaded.Bridges) {
			t.Fatalf("journal %q: loaded %+v, after save and load %+v", data, loaded, reloaded)
		}
	})
}
