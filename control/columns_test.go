package control

import (
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/control/store"
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

func mustHandle(t *testing.T, d *Daemon, req api.Request) api.Response {
	t.Helper()
	resp := d.Handle(req)
	if resp.Error != "" {
		t.Fatalf("%s: %s", req.Verb, resp.Error)
	}
	return resp
}

func getValues(t *testing.T, d *Daemon, table, record string, columns ...string) []string {
	t.Helper()
	resp := mustHandle(t, d, api.Request{Verb: api.VerbGet, Table: table, Record: record, Columns: columns})
	var out []string
	for _, v := range resp.Values {
		out = append(out, string(v))
	}
	return out
}

func TestSetGetRemoveAndRestore(t *testing.T) {
	db := filepath.Join(t.TempDir(), "conf.json")
	d := newTestDaemon(t, db)
	mustHandle(t, d, api.Request{Verb: api.VerbAddBridge, Bridge: "br0"})
	mustHandle(t, d, api.Request{Verb: api.VerbSet, Table: "bridge", Record: "br0", Columns: []string{`other_config:forward-bpdu="true"`}})
	if got := getValues(t, d, api.TableBridge, "br0", "other_config:forward-bpdu", "other_config"); strings.Join(got, " ") != `"true" {"forward-bpdu":"true"}` {
		t.Errorf("get = %q", got)
	}
	d.Close()

	d = newTestDaemon(t, db)
	if got := getValues(t, d, api.TableBridge, "br0", "other_config:forward-bpdu"); got[0] != `"true"` {
		t.Errorf("after a restart, forward-bpdu = %s; want \"true\"", got[0])
	}
	mustHandle(t, d, api.Request{Verb: api.VerbRemove, Table: api.TableBridge, Record: "br0", Columns: []string{"other_config", "forward-bpdu", "never-set"}})
	if got := getValues(t, d, api.TableBridge, "br0", "other_config"); got[0] != `{}` {
		t.Errorf("after remove, other_config = %s; want {}", got[0])
	}
	if saved, err := LoadConfig(db); err != nil || saved.Bridges[0].OtherConfig != nil {
		t.Errorf("after remove, the saved other_config is %#v (%v); want none", saved.Bridges[0].OtherConfig, err)
	}
}

func TestSetIsAllOrNothing(t *testing.T) {
	d := newTestDaemon(t, filepath.Join(t.TempDir(), "conf.json"))
	mustHandle(t, d, api.Request{Verb: api.VerbAddBridge, Bridge: "br0"})
	resp := d.Handle(api.Request{Verb: api.VerbSet, Table: api.TableBridge, Record: "br0", Columns: []string{"other_config:forward-bpdu=true", "other_config:forward-bpdu=1"}})
	if !strings.Contains(resp.Error, `"1" is not true or false`) {
		t.Fatalf("set with a bad second value: %q", resp.Error)
	}
	if got := getValues(t, d, api.TableBridge, "br0", "other_config"); got[0] != `{}` {
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
	mustHandle(t, d, api.Request{Verb: api.VerbAddBridge, Bridge: "br0"})
	mustHandle(t, d, api.Request{Verb: api.VerbSet, Table: api.TableBridge, Record: "br0", Columns: []string{"other_config:forward-bpdu=false"}})
	for _, v := range mustHandle(t, d, api.Request{Verb: api.VerbGet, Table: api.TableBridge, Record: "br0", Columns: []string{"other_config:forward-bpdu", "other_config"}}).Values {
		if !json.Valid(v) {
			t.Errorf("get value %q is not JSON", v)
		}
	}
}

func TestRSTPIsSavedAndRestored(t *testing.T) {
	db := filepath.Join(t.TempDir(), "conf.json")
	d := newTestDaemon(t, db)
	mustHandle(t, d, api.Request{Verb: api.VerbAddBridge, Bridge: "br0"})
	if resp := d.Handle(api.Request{Verb: api.VerbRSTPShow, Bridge: "br0"}); !strings.Contains(resp.Error, "does not run RSTP") {
		t.Errorf("rstp-show before rstp_enable: %q", resp.Error)
	}
	mustHandle(t, d, api.Request{Verb: api.VerbSet, Table: api.TableBridge, Record: "br0",
		Columns: []string{"rstp_enable=true", "other_config:rstp-priority=4096"}})
	first := mustHandle(t, d, api.Request{Verb: api.VerbRSTPShow, Bridge: "br0"}).RSTP
	if len(first) != 1 || first[0].BridgeID.Priority != 4096 || !first[0].IsRoot {
		t.Fatalf("rstp-show: %+v", first)
	}
	d.Close()

	d = newTestDaemon(t, db)
	again := mustHandle(t, d, api.Request{Verb: api.VerbRSTPShow}).RSTP
	if len(again) != 1 || again[0].BridgeID != first[0].BridgeID {
		t.Errorf("after a restart, rstp-show gives %+v; before, %+v: the identifier must not change", again, first)
	}
	mustHandle(t, d, api.Request{Verb: api.VerbSet, Table: api.TableBridge, Record: "br0", Columns: []string{"rstp_enable=false"}})
	if got := mustHandle(t, d, api.Request{Verb: api.VerbRSTPShow}).RSTP; len(got) != 0 {
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
	mustHandle(t, d, api.Request{Verb: api.VerbAddBridge, Bridge: "br0"})
	for _, bad := range []string{`other_config:controller-rate-limit="99"`, `other_config:controller-burst-limit="24"`, `other_config:controller-rate-limit="x"`} {
		if resp := d.Handle(api.Request{Verb: api.VerbSet, Table: api.TableBridge, Record: "br0", Columns: []string{bad}}); resp.Error == "" {
			t.Errorf("set %s succeeded", bad)
		}
	}
	mustHandle(t, d, api.Request{Verb: api.VerbSet, Table: api.TableBridge, Record: "br0",
		Columns: []string{`other_config:controller-rate-limit="1000"`, `other_config:controller-burst-limit="50"`}})
	bc := store.BridgeConfig{Name: "br0", OtherConfig: map[string]string{"controller-rate-limit": "1000", "controller-burst-limit": "50"}}
	if s, err := bridgeSettingsOf(&bc); err != nil || s.controllerRate != 1000 || s.controllerBurst != 50 {
		t.Errorf("settings = %+v, %v; want rate 1000, burst 50", s, err)
	}
}

// portRecord is port p1 of a configuration that has nothing else, as set
// and its kin see it.
func portRecord(t *testing.T, pc api.PortConfig) record {
	t.Helper()
	pc.Name = "p1"
	r, err := findRecord(&store.Config{Bridges: []store.BridgeConfig{{Name: "br0", Ports: []api.PortConfig{pc}}}}, "port", "p1")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// getAll is every VLAN column of r, as get gives them in JSON.
func getAll(t *testing.T, r record) string {
	t.Helper()
	var out []string
	for _, c := range []string{columnTag, columnTrunks, columnVLANMode} {
		v, err := r.get(c)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c+"="+string(v))
	}
	return strings.Join(out, " ")
}

// The Port table's VLAN columns, in ovs-vsctl's syntax: set takes one
// value, a list with commas or spaces, in brackets or not, ranges of
// trunks, [] for none; add, remove and clear change them; get gives an
// optional column's value or [], and a set's list.
func TestPortVLANColumns(t *testing.T) {
	for _, c := range []struct {
		verb string
		args []string
		from api.PortConfig
		want string // getAll after
	}{
		{"set", []string{"tag=20"}, api.PortConfig{}, `tag=20 trunks=[] vlan_mode=[]`},
		{"set", []string{"tag=[20]"}, api.PortConfig{Tag: 10}, `tag=20 trunks=[] vlan_mode=[]`},
		{"set", []string{"tag=[]"}, api.PortConfig{Tag: 10}, `tag=[] trunks=[] vlan_mode=[]`},
		{"set", []string{"trunks=10,20"}, api.PortConfig{}, `tag=[] trunks=[10,20] vlan_mode=[]`},
		{"set", []string{"trunks=[20, 10]"}, api.PortConfig{}, `tag=[] trunks=[10,20] vlan_mode=[]`},
		{"set", []string{"trunks=10 20 30"}, api.PortConfig{}, `tag=[] trunks=[10,20,30] vlan_mode=[]`},
		{"set", []string{"trunks=0,100-102"}, api.PortConfig{}, `tag=[] trunks=[0,100,101,102] vlan_mode=[]`},
		{"set", []string{"trunks=[]"}, api.PortConfig{Trunks: []uint16{10}}, `tag=[] trunks=[] vlan_mode=[]`},
		{"set", []string{"tag=20", "trunks=[]"}, api.PortConfig{Trunks: []uint16{10}}, `tag=20 trunks=[] vlan_mode=[]`},
		{"set", []string{"vlan_mode=native-untagged", "tag=10", "trunks=20,30"}, api.PortConfig{}, `tag=10 trunks=[20,30] vlan_mode="native-untagged"`},
		{"set", []string{`vlan_mode="native-tagged"`, "tag=10"}, api.PortConfig{}, `tag=10 trunks=[] vlan_mode="native-tagged"`},
		{"set", []string{"vlan_mode=access"}, api.PortConfig{}, `tag=[] trunks=[] vlan_mode="access"`},
		{"set", []string{"vlan_mode=[]"}, api.PortConfig{VLANMode: "trunk"}, `tag=[] trunks=[] vlan_mode=[]`},
		{"add", []string{"trunks", "30", "10"}, api.PortConfig{Trunks: []uint16{10, 20}}, `tag=[] trunks=[10,20,30] vlan_mode=[]`},
		{"add", []string{"tag", "10"}, api.PortConfig{}, `tag=10 trunks=[] vlan_mode=[]`},
		{"remove", []string{"trunks", "10", "40"}, api.PortConfig{Trunks: []uint16{10, 20}}, `tag=[] trunks=[20] vlan_mode=[]`},
		{"remove", []string{"trunks", "10-20"}, api.PortConfig{Trunks: []uint16{5, 10, 20}}, `tag=[] trunks=[5] vlan_mode=[]`},
		{"remove", []string{"tag", "10"}, api.PortConfig{Tag: 10}, `tag=[] trunks=[] vlan_mode=[]`},
		{"remove", []string{"tag", "20"}, api.PortConfig{Tag: 10}, `tag=10 trunks=[] vlan_mode=[]`},
		{"clear", []string{"tag"}, api.PortConfig{Tag: 10}, `tag=[] trunks=[] vlan_mode=[]`},
		{"clear", []string{"trunks", "vlan_mode"}, api.PortConfig{VLANMode: "trunk", Trunks: []uint16{10}}, `tag=[] trunks=[] vlan_mode=[]`},
	} {
		r := portRecord(t, c.from)
		var err error
		switch c.verb {
		case "set":
			for _, s := range c.args {
				if err = r.set(s); err != nil {
					break
				}
			}
		case "add":
			err = r.add(c.args[0], c.args[1:])
		case "remove":
			err = r.remove(c.args[0], c.args[1:])
		case "clear":
			for _, col := range c.args {
				if err = r.clear(col); err != nil {
					break
				}
			}
		}
		if err == nil {
			err = r.validate()
		}
		if err != nil {
			t.Errorf("%s %q on %+v: %v", c.verb, c.args, c.from, err)
			continue
		}
		if got := getAll(t, r); got != c.want {
			t.Errorf("%s %q on %+v: %s; want %s", c.verb, c.args, c.from, got, c.want)
		}
	}
}

// What the VLAN columns refuse, and why.
func TestPortVLANColumnsRefuse(t *testing.T) {
	for _, c := range []struct {
		set  []string
		from api.PortConfig
		want string
	}{
		{[]string{"tag=4096"}, api.PortConfig{}, `tag: "4096" is not a VLAN from 1 to 4095`},
		{[]string{"tag=0"}, api.PortConfig{}, `tag: 0 is not supported: for a port of untagged frames only, clear tag and set vlan_mode=access`},
		{[]string{"tag=ten"}, api.PortConfig{}, `tag: "ten" is not a VLAN`},
		{[]string{"tag=10,20"}, api.PortConfig{}, `tag holds at most one value, not 2`},
		{[]string{"trunks=10,4096"}, api.PortConfig{}, `trunks: "4096" is not a VLAN from 0 to 4095, nor a range of them (10-20)`},
		{[]string{"trunks=20-10"}, api.PortConfig{}, `trunks: "20-10" is not a VLAN`},
		{[]string{"trunks=10,10"}, api.PortConfig{}, `trunks: 10 is given twice`},
		{[]string{"trunks=[10,20"}, api.PortConfig{}, `trunks: "[10,20" opens a [ that it does not close`},
		{[]string{"vlan_mode=dot1q-tunnel"}, api.PortConfig{}, `vlan_mode: dot1q-tunnel (802.1ad QinQ) is not supported`},
		{[]string{"vlan_mode=acess"}, api.PortConfig{}, `vlan_mode: "acess" is not one of access, trunk, native-tagged, native-untagged`},
		{[]string{"tag:x=1"}, api.PortConfig{}, `cannot specify key to set for non-map column tag`},
		{[]string{"cvlans=10"}, api.PortConfig{}, `Port does not contain a column whose name matches "cvlans" (xswitch has other_config, tag, trunks, vlan_mode)`},
		// A whole record OVS would run only in part.
		{[]string{"tag=20"}, api.PortConfig{Trunks: []uint16{10}}, `an access port carries only its tag: trunks 10 are not allowed`},
		{[]string{"vlan_mode=native-untagged"}, api.PortConfig{}, `vlan mode native-untagged needs a tag: the native VLAN`},
		{[]string{"vlan_mode=trunk"}, api.PortConfig{Tag: 10}, `a trunk port has no tag (10)`},
	} {
		r := portRecord(t, c.from)
		var err error
		for _, s := range c.set {
			if err = r.set(s); err != nil {
				break
			}
		}
		if err == nil {
			err = r.validate()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("set %q on %+v: %v; want an error saying %q", c.set, c.from, err, c.want)
		}
	}
	r := portRecord(t, api.PortConfig{})
	if err := r.add("tag", []string{"10", "20"}); err == nil || !strings.Contains(err.Error(), "tag holds at most one value, not 2") {
		t.Errorf("add tag 10 20: %v", err)
	}
	br, _ := findRecord(&store.Config{Bridges: []store.BridgeConfig{{Name: "br0"}}}, api.TableBridge, "br0")
	if err := br.clear(columnRSTPEnable); err == nil || !strings.Contains(err.Error(), "rstp_enable cannot be cleared") {
		t.Errorf("clear rstp_enable: %v", err)
	}
}
