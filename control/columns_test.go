package control

import (
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func newTestDaemon(t testing.TB, db string) *Daemon {
	t.Helper()
	d, err := NewDaemon(Options{DBPath: db, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func mustHandle(t *testing.T, d *Daemon, req Request) Response {
	t.Helper()
	resp := d.Handle(req)
	if resp.Error != "" {
		t.Fatalf("%s: %s", req.Verb, resp.Error)
	}
	return resp
}

func getValues(t *testing.T, d *Daemon, table, record string, columns ...string) []string {
	t.Helper()
	resp := mustHandle(t, d, Request{Verb: VerbGet, Table: table, Record: record, Columns: columns})
	var out []string
	for _, v := range resp.Values {
		out = append(out, string(v))
	}
	return out
}

func TestSetGetRemoveAndRestore(t *testing.T) {
	db := filepath.Join(t.TempDir(), "conf.json")
	d := newTestDaemon(t, db)
	mustHandle(t, d, Request{Verb: VerbAddBridge, Bridge: "br0"})
	mustHandle(t, d, Request{Verb: VerbSet, Table: "bridge", Record: "br0", Columns: []string{`other_config:forward-bpdu="true"`}})
	if got := getValues(t, d, TableBridge, "br0", "other_config:forward-bpdu", "other_config"); strings.Join(got, " ") != `"true" {"forward-bpdu":"true"}` {
		t.Errorf("get = %q", got)
	}
	d.Close()

	d = newTestDaemon(t, db)
	if got := getValues(t, d, TableBridge, "br0", "other_config:forward-bpdu"); got[0] != `"true"` {
		t.Errorf("after a restart, forward-bpdu = %s; want \"true\"", got[0])
	}
	mustHandle(t, d, Request{Verb: VerbRemove, Table: TableBridge, Record: "br0", Columns: []string{"other_config", "forward-bpdu", "never-set"}})
	if got := getValues(t, d, TableBridge, "br0", "other_config"); got[0] != `{}` {
		t.Errorf("after remove, other_config = %s; want {}", got[0])
	}
	if saved, err := LoadConfig(db); err != nil || saved.Bridges[0].OtherConfig != nil {
		t.Errorf("after remove, the saved other_config is %#v (%v); want none", saved.Bridges[0].OtherConfig, err)
	}
}

func TestSetIsAllOrNothing(t *testing.T) {
	d := newTestDaemon(t, filepath.Join(t.TempDir(), "conf.json"))
	mustHandle(t, d, Request{Verb: VerbAddBridge, Bridge: "br0"})
	resp := d.Handle(Request{Verb: VerbSet, Table: TableBridge, Record: "br0", Columns: []string{"other_config:forward-bpdu=true", "other_config:forward-bpdu=1"}})
	if !strings.Contains(resp.Error, `"1" is not true or false`) {
		t.Fatalf("set with a bad second value: %q", resp.Error)
	}
	if got := getValues(t, d, TableBridge, "br0", "other_config"); got[0] != `{}` {
		t.Errorf("a refused set changed other_config to %s", got[0])
	}
}

func TestLoadConfigRefusesBadSettings(t *testing.T) {
	for _, c := range []struct{ config, want string }{
		{`{"bridges":[{"name":"br0","ports":[],"flows":null,"other_config":{"forward-bpdu":"yes"}}]}`, `other_config:forward-bpdu: "yes" is not true or false`},
		{`{"bridges":[{"name":"br0","ports":[],"flows":null,"other_config":{"surprise":"1"}}]}`, `unknown other_config key "surprise"`},
	} {
		path := filepath.Join(t.TempDir(), "conf.json")
		os.WriteFile(path, []byte(c.config), 0o600)
		_, err := LoadConfig(path)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "corrupt") {
			t.Errorf("LoadConfig(%s) = %v; want it refused as corrupt, saying %q", c.config, err, c.want)
		}
	}
	path := filepath.Join(t.TempDir(), "conf.json")
	os.WriteFile(path, []byte(`{"bridges":[{"name":"br0","ports":[],"flows":null,"other_config":{}}]}`), 0o600)
	c, err := LoadConfig(path)
	if err != nil || c.Bridges[0].OtherConfig != nil {
		t.Errorf("an empty other_config loads as %#v, %v; want nil, as saving leaves it out", c.Bridges[0].OtherConfig, err)
	}
}

func TestGetValuesAreJSON(t *testing.T) {
	d := newTestDaemon(t, filepath.Join(t.TempDir(), "conf.json"))
	mustHandle(t, d, Request{Verb: VerbAddBridge, Bridge: "br0"})
	mustHandle(t, d, Request{Verb: VerbSet, Table: TableBridge, Record: "br0", Columns: []string{"other_config:forward-bpdu=false"}})
	for _, v := range mustHandle(t, d, Request{Verb: VerbGet, Table: TableBridge, Record: "br0", Columns: []string{"other_config:forward-bpdu", "other_config"}}).Values {
		if !json.Valid(v) {
			t.Errorf("get value %q is not JSON", v)
		}
	}
}

func TestRSTPIsSavedAndRestored(t *testing.T) {
	db := filepath.Join(t.TempDir(), "conf.json")
	d := newTestDaemon(t, db)
	mustHandle(t, d, Request{Verb: VerbAddBridge, Bridge: "br0"})
	if resp := d.Handle(Request{Verb: VerbRSTPShow, Bridge: "br0"}); !strings.Contains(resp.Error, "does not run RSTP") {
		t.Errorf("rstp-show before rstp_enable: %q", resp.Error)
	}
	mustHandle(t, d, Request{Verb: VerbSet, Table: TableBridge, Record: "br0",
		Columns: []string{"rstp_enable=true", "other_config:rstp-priority=4096"}})
	first := mustHandle(t, d, Request{Verb: VerbRSTPShow, Bridge: "br0"}).RSTP
	if len(first) != 1 || first[0].BridgeID.Priority != 4096 || !first[0].IsRoot {
		t.Fatalf("rstp-show: %+v", first)
	}
	d.Close()

	d = newTestDaemon(t, db)
	again := mustHandle(t, d, Request{Verb: VerbRSTPShow}).RSTP
	if len(again) != 1 || again[0].BridgeID != first[0].BridgeID {
		t.Errorf("after a restart, rstp-show gives %+v; before, %+v: the identifier must not change", again, first)
	}
	mustHandle(t, d, Request{Verb: VerbSet, Table: TableBridge, Record: "br0", Columns: []string{"rstp_enable=false"}})
	if got := mustHandle(t, d, Request{Verb: VerbRSTPShow}).RSTP; len(got) != 0 {
		t.Errorf("rstp-show lists %+v after rstp_enable=false", got)
	}
}

func TestBridgeAddressIsStableUnicastAndLocal(t *testing.T) {
	a := bridgeAddress("br0")
	if a != bridgeAddress("br0") || a == bridgeAddress("br1") {
		t.Errorf("bridgeAddress: %x for br0 twice, %x for br1", a, bridgeAddress("br1"))
	}
	if a[0]&0x01 != 0 || a[0]&0x02 == 0 {
		t.Errorf("bridgeAddress(br0) = %x: want a unicast, locally administered address", a)
	}
}

// The controller's rate limits are other_config keys of the bridge, with
// OVS's minimums, and reach the bridge's settings.
func TestControllerRateLimitColumns(t *testing.T) {
	d := newTestDaemon(t, filepath.Join(t.TempDir(), "conf.json"))
	mustHandle(t, d, Request{Verb: VerbAddBridge, Bridge: "br0"})
	for _, bad := range []string{`other_config:controller-rate-limit="99"`, `other_config:controller-burst-limit="24"`, `other_config:controller-rate-limit="x"`} {
		if resp := d.Handle(Request{Verb: VerbSet, Table: TableBridge, Record: "br0", Columns: []string{bad}}); resp.Error == "" {
			t.Errorf("set %s succeeded", bad)
		}
	}
	mustHandle(t, d, Request{Verb: VerbSet, Table: TableBridge, Record: "br0",
		Columns: []string{`other_config:controller-rate-limit="1000"`, `other_config:controller-burst-limit="50"`}})
	bc := BridgeConfig{Name: "br0", OtherConfig: map[string]string{"controller-rate-limit": "1000", "controller-burst-limit": "50"}}
	if s, err := bc.settings(); err != nil || s.controllerRate != 1000 || s.controllerBurst != 50 {
		t.Errorf("settings = %+v, %v; want rate 1000, burst 50", s, err)
	}
}
