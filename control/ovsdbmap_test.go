package control

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/control/store"
	"github.com/xswitch/xswitch/ovsdb"
	"github.com/xswitch/xswitch/rstp"
)

// dbRows builds the tables of a database as a monitor gives them, each
// row's columns decoded.
type dbRows struct{ t dbTables }

func newDBRows() *dbRows {
	t := dbTables{}
	for table := range ovsdbColumns {
		t[table] = map[ovsdb.UUID]ovsdb.Row{}
	}
	return &dbRows{t: t}
}

func (r *dbRows) add(table, uuid string, row ovsdb.Row) ovsdb.UUID {
	r.t[table][ovsdb.UUID(uuid)] = row
	return ovsdb.UUID(uuid)
}

func refs(us ...ovsdb.UUID) ovsdb.Set {
	s := ovsdb.Set{}
	for _, u := range us {
		s = append(s, u)
	}
	return s
}

func strMap(kv ...string) ovsdb.Map {
	m := ovsdb.Map{}
	for i := 0; i+1 < len(kv); i += 2 {
		m = append(m, ovsdb.Pair{Key: kv[i], Value: kv[i+1]})
	}
	return m
}

// port adds a Port row of one Interface row of that name.
func (r *dbRows) port(name string, port, iface ovsdb.Row) ovsdb.UUID {
	iface["name"] = ovsdb.Set{name}
	iu := r.add("Interface", "i-"+name, iface)
	port["name"] = ovsdb.Set{name}
	port["interfaces"] = refs(iu)
	return r.add("Port", "p-"+name, port)
}

func TestWantFromDB(t *testing.T) {
	r := newDBRows()
	ports := refs(
		r.port("br0", ovsdb.Row{}, ovsdb.Row{"type": ovsdb.Set{"internal"}}),
		r.port("p1", ovsdb.Row{"tag": ovsdb.Set{int64(10)}, "other_config": strMap("storm-limit", "1000", "priority-tags", "true")},
			ovsdb.Row{"ofport_request": ovsdb.Set{int64(7)}}),
		r.port("p2", ovsdb.Row{"trunks": ovsdb.Set{int64(30), int64(20)}, "vlan_mode": ovsdb.Set{"native-untagged"}},
			ovsdb.Row{"type": ovsdb.Set{"system"}, "ofport": ovsdb.Set{int64(12)}}),
		r.port("vx0", ovsdb.Row{}, ovsdb.Row{"type": ovsdb.Set{"vxlan"},
			"options": strMap("remote_ip", "192.0.2.2", "key", "42", "dst_port", "4790", "csum", "true")}),
		r.port("gre0", ovsdb.Row{}, ovsdb.Row{"type": ovsdb.Set{"gre"}}),
		r.port("t0", ovsdb.Row{"tag": ovsdb.Set{int64(0)}}, ovsdb.Row{}),
		r.port("q0", ovsdb.Row{"vlan_mode": ovsdb.Set{"dot1q-tunnel"}}, ovsdb.Row{}),
		r.port("vx1", ovsdb.Row{}, ovsdb.Row{"type": ovsdb.Set{"geneve"}, "options": strMap("remote_ip", "192.0.2.3", "dst_port", "x")}),
		r.port("v1", ovsdb.Row{}, ovsdb.Row{"mtu_request": ovsdb.Set{int64(9000)},
			"other_config": strMap("xswitch-netns", "ns1", "xswitch-address", "10.0.0.1/24", "xswitch-mode", "copy", "xswitch-queues", "2", "other", "x")}),
		r.port("e1", ovsdb.Row{}, ovsdb.Row{"mtu_request": ovsdb.Set{int64(9000)}}), // an existing interface keeps its MTU
		r.port("v2", ovsdb.Row{}, ovsdb.Row{"other_config": strMap("xswitch-queues", "-1")}),
	)
	// A bond: one port of two interfaces.
	b1 := r.add("Interface", "i-b1", ovsdb.Row{"name": ovsdb.Set{"b1"}})
	b2 := r.add("Interface", "i-b2", ovsdb.Row{"name": ovsdb.Set{"b2"}})
	ports = append(ports, r.add("Port", "p-bond", ovsdb.Row{"name": ovsdb.Set{"bond0"}, "interfaces": refs(b1, b2)}))
	c1 := r.add("Controller", "c1", ovsdb.Row{"target": ovsdb.Set{"tcp:192.0.2.1"}})
	c2 := r.add("Controller", "c2", ovsdb.Row{"target": ovsdb.Set{"ssl:192.0.2.1:6653"}})
	br0 := r.add("Bridge", "b-br0", ovsdb.Row{"name": ovsdb.Set{"br0"}, "ports": ports, "fail_mode": ovsdb.Set{"secure"},
		"datapath_type": ovsdb.Set{"netdev"}, "controller": refs(c1, c2), "rstp_enable": ovsdb.Set{true},
		"other_config": strMap("datapath-id", "00000000000000aa", "disable-in-band", "true")})
	odd := r.add("Bridge", "b-odd", ovsdb.Row{"name": ovsdb.Set{"odd"}, "datapath_type": ovsdb.Set{"dpdk"},
		"ports": refs(r.port("o1", ovsdb.Row{}, ovsdb.Row{}))})
	// A bridge no Open_vSwitch row lists is not run.
	r.add("Bridge", "b-loose", ovsdb.Row{"name": ovsdb.Set{"loose"}})
	root := r.add("Open_vSwitch", "root", ovsdb.Row{"bridges": refs(br0, odd), "next_cfg": ovsdb.Set{int64(5)}})

	w := wantFromDB(r.t)
	if w.root != root || w.nextCfg != 5 {
		t.Errorf("root %q next_cfg %d, want %q 5", w.root, w.nextCfg, root)
	}
	if len(w.bridges) != 1 || w.bridges[0].Name != "br0" {
		t.Fatalf("bridges %+v, want br0 only", w.bridges)
	}
	bc := w.bridges[0]
	if bc.FailMode != "secure" || !bc.RSTPEnable || !reflect.DeepEqual(bc.Controllers, []string{"tcp:192.0.2.1:6653"}) ||
		!reflect.DeepEqual(bc.OtherConfig, map[string]string{"datapath-id": "00000000000000aa"}) {
		t.Errorf("br0's own columns: %+v", bc)
	}
	if p := strings.Join(w.problems["br0"], "; "); !strings.Contains(p, `connection method "ssl" is not supported`) {
		t.Errorf("br0's problems %q, want the ssl target among them", p)
	}
	if len(w.controllers) != 1 || w.controllers[c1] != (dbController{bridge: "br0", target: ControllerTarget{Address: "192.0.2.1:6653"}}) {
		t.Errorf("controllers %+v, want c1 only, br0's tcp:192.0.2.1:6653", w.controllers)
	}
	want := []api.PortConfig{
		{Name: "br0", Type: api.PortTypeInternal},
		{Name: "p1", OFPort: 7, Tag: 10, OtherConfig: map[string]string{"storm-limit": "1000"}},
		{Name: "p2", Trunks: []uint16{20, 30}, VLANMode: "native-untagged"},
		{Name: "vx0", Type: api.PortTypeVXLAN, RemoteIP: "192.0.2.2", Key: "42", DstPort: 4790},
		{Name: "v1", Netns: "ns1", Address: "10.0.0.1/24", Mode: "copy", Queues: 2, MTU: 9000},
		{Name: "e1"},
	}
	if !reflect.DeepEqual(bc.Ports, want) {
		t.Errorf("br0's ports\n%+v\nwant\n%+v", bc.Ports, want)
	}
	for name, why := range map[string]string{
		"gre0": `interface type "gre" is not supported`,
		"t0":   "tag: 0 is not supported",
		"q0":   "vlan_mode: dot1q-tunnel (802.1ad QinQ) is not supported",
		"vx1":  `options:dst_port "x" is not a UDP port`,
		"b1":   "port bond0 has 2 interfaces: bonds are not supported",
		"b2":   "port bond0 has 2 interfaces",
		"o1":   `bridge odd: datapath_type "dpdk" is not supported`,
		"v2":   `other_config:xswitch-queues "-1" is not a number of queues`,
	} {
		if err := w.refused[name]; err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%s refused with %v, want %q", name, err, why)
		}
	}
	if len(w.refused) != 8 {
		t.Errorf("refused %v, want 8 interfaces", w.refused)
	}
	if !reflect.DeepEqual(w.ofports, map[string]uint16{"p2": 12}) {
		t.Errorf("ofports %v, want p2's 12 (a number, not a request)", w.ofports)
	}
	// Every interface of a listed bridge gets its status, run or not.
	if len(w.ifaces) != 14 || w.ifaces["o1"] == "" || w.bridgeRows["odd"] != odd {
		t.Errorf("status rows: interfaces %v, bridges %v", w.ifaces, w.bridgeRows)
	}
}

func TestWantFromEmptyDB(t *testing.T) {
	w := wantFromDB(newDBRows().t)
	if w.root != "" || len(w.bridges) != 0 {
		t.Errorf("an empty database asks for %+v", w)
	}
}

func TestSamePort(t *testing.T) {
	running := api.PortConfig{Name: "br0", OFPort: 65534, Type: api.PortTypeInternal, Device: internalDevice("br0"), Tag: 5}
	for _, tc := range []struct {
		want api.PortConfig
		same bool
	}{
		{api.PortConfig{Name: "br0", Type: api.PortTypeInternal}, true},
		{api.PortConfig{Name: "br0", Type: api.PortTypeInternal, Tag: 9, OtherConfig: map[string]string{"storm-limit": "5"}}, true},
		{api.PortConfig{Name: "br0", Type: api.PortTypeInternal, OFPort: 65534}, true},
		{api.PortConfig{Name: "br0", Type: api.PortTypeInternal, OFPort: 3}, true}, // a number is renumbered's
		{api.PortConfig{Name: "br0"}, false},
		{api.PortConfig{Name: "br0", Type: api.PortTypeTap}, false},
		{api.PortConfig{Name: "br0", Type: "nosuch"}, false},
	} {
		if got := samePort(running, tc.want); got != tc.same {
			t.Errorf("samePort(%+v, %+v) = %v, want %v", running, tc.want, got, tc.same)
		}
	}
}

// TestRenumbered: which running ports are added again for the numbers
// their ofport_request columns ask for, as ovs-vswitchd decides it.
func TestRenumbered(t *testing.T) {
	bc := store.BridgeConfig{Name: "br0", Ports: []api.PortConfig{
		{Name: "br0", OFPort: 65534}, {Name: "a", OFPort: 1}, {Name: "b", OFPort: 2}, {Name: "c", OFPort: 3}, {Name: "d", OFPort: 4},
	}}
	for _, tc := range []struct {
		requests map[string]uint16 // by name; the others request none
		want     map[string]bool
	}{
		{nil, map[string]bool{}},
		{map[string]uint16{"a": 1, "br0": 7}, map[string]bool{}},           // has it; LOCAL stays LOCAL
		{map[string]uint16{"a": 9}, map[string]bool{"a": true}},            // free
		{map[string]uint16{"a": 2}, map[string]bool{"a": true, "b": true}}, // b holds it, not asking
		{map[string]uint16{"a": 2, "b": 2}, map[string]bool{}},             // b holds it and asks: a keeps its own
		{map[string]uint16{"a": 2, "b": 3}, map[string]bool{"a": true, "b": true, "c": true}},
	} {
		wanted := map[string]*api.PortConfig{}
		for _, pc := range bc.Ports {
			w := api.PortConfig{Name: pc.Name, OFPort: tc.requests[pc.Name]}
			wanted[pc.Name] = &w
		}
		if got := renumbered(bc, wanted); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("requests %v: renumbered %v, want %v", tc.requests, got, tc.want)
		}
	}
}

func TestWantFromDBRefusesSharedInterfaces(t *testing.T) {
	r := newDBRows()
	shared := r.port("p1", ovsdb.Row{}, ovsdb.Row{})
	a := r.add("Bridge", "b-a", ovsdb.Row{"name": ovsdb.Set{"a"}, "ports": refs(shared, r.port("p2", ovsdb.Row{}, ovsdb.Row{}))})
	b := r.add("Bridge", "b-b", ovsdb.Row{"name": ovsdb.Set{"b"}, "ports": refs(shared)})
	r.add("Open_vSwitch", "root", ovsdb.Row{"bridges": refs(a, b)})
	w := wantFromDB(r.t)
	if len(w.bridges) != 2 || len(w.bridges[0].Ports) != 1 || w.bridges[0].Ports[0].Name != "p2" || len(w.bridges[1].Ports) != 0 {
		t.Errorf("bridges %+v, want a with p2 only and b with none", w.bridges)
	}
	if err := w.refused["p1"]; err == nil || err.Error() != "interface p1 is in more than one port (of bridges a, b)" {
		t.Errorf("p1 refused with %v", err)
	}
}

func TestMonitoredColumnsOfAnOlderSchema(t *testing.T) {
	schema, err := ovsdb.ParseSchema([]byte(`{"name": "Open_vSwitch", "tables": {
		"Interface": {"columns": {"name": {"type": "string"}, "ofport": {"type": {"key": "integer", "min": 0, "max": 1}}}},
		"Bridge": {"columns": {"name": {"type": "string"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := monitoredColumns(schema)
	want := map[string][]string{"Interface": {"name", "ofport"}, "Bridge": {"name"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("monitored %v, want %v", got, want)
	}
}

// TestControllerStatusColumns: a Controller row's is_connected, role and
// status, as ovs-vswitchd writes them, from what the agent said of the
// target.
func TestControllerStatusColumns(t *testing.T) {
	d := quietDaemon(t, filepath.Join(t.TempDir(), "conf.json"))
	defer d.Close()
	handle(t, d, api.Request{Verb: api.VerbAddBridge, Bridge: "br0"})
	handle(t, d, api.Request{Verb: api.VerbSetController, Bridge: "br0", Targets: []string{"tcp:127.0.0.1", "ptcp:6653"}})
	f := &ovsdbFollower{d: d}
	active, _ := ParseControllerTarget("tcp:127.0.0.1")
	passive, _ := ParseControllerTarget("ptcp:6653")
	now := time.Now()
	for _, tc := range []struct {
		conn ControllerConn
		want map[string]any
	}{
		{ControllerConn{}, map[string]any{"is_connected": false, "role": ovsdb.Set{}, "status": ovsdb.Map{}}},
		{ControllerConn{State: "BACKOFF", LastError: "Connection refused", DisconnectedAt: now.Add(-2500 * time.Millisecond)},
			map[string]any{"is_connected": false, "role": ovsdb.Set{}, "status": ovsdb.Map{
				{Key: "last_error", Value: "Connection refused"}, {Key: "state", Value: "BACKOFF"}, {Key: "sec_since_disconnect", Value: "2"}}}},
		{ControllerConn{Connected: true, Role: "equal", State: "IDLE", ConnectedAt: now.Add(-61 * time.Second)},
			map[string]any{"is_connected": true, "role": ovsdb.Set{"other"}, "status": ovsdb.Map{
				{Key: "state", Value: "IDLE"}, {Key: "sec_since_connect", Value: "61"}}}},
	} {
		d.SetControllerStatus("br0", "tcp:127.0.0.1", tc.conn)
		got := f.controllerStatus(dbController{bridge: "br0", target: active}, now)
		for col, want := range tc.want {
			if !ovsdb.Equal(got[col], want) {
				t.Errorf("%+v: %s %v, want %v", tc.conn, col, got[col], want)
			}
		}
	}
	d.SetControllerStatus("br0", "ptcp:6653", ControllerConn{Connected: true, Role: "master"})
	got := f.controllerStatus(dbController{bridge: "br0", target: passive}, now)
	if got["is_connected"] != false || !ovsdb.Equal(got["role"], ovsdb.Set{}) || !ovsdb.Equal(got["status"], ovsdb.Map{}) {
		t.Errorf("a ptcp target with ovs-ofctl on it: %v, want it not connected, with no role or status, as OVS", got)
	}
}

// TestRSTPStatusColumns: identifiers and names as OVS writes them in
// rstp_status.
func TestRSTPStatusColumns(t *testing.T) {
	id := rstp.NewBridgeID(0x8000, [6]byte{0x0a, 0x1b, 0x2c, 0x3d, 0x4e, 0x5f})
	if got := ovsRSTPID(id); got != "8.000.0a1b2c3d4e5f" {
		t.Errorf("ovsRSTPID %q, want 8.000.0a1b2c3d4e5f", got)
	}
	p := rstpPortStatus(rstp.PortStatus{ID: rstp.NewPortID(128, 3), Role: rstp.RoleAlternate, State: rstp.Discarding,
		DesignatedBridge: id, DesignatedPort: rstp.NewPortID(128, 1), DesignatedPathCost: 2000})
	want := ovsdb.Map{{Key: "rstp_port_id", Value: "8003"}, {Key: "rstp_port_role", Value: "Alternate"},
		{Key: "rstp_port_state", Value: "Discarding"}, {Key: "rstp_designated_bridge_id", Value: "8.000.0a1b2c3d4e5f"},
		{Key: "rstp_designated_port_id", Value: "8001"}, {Key: "rstp_designated_path_cost", Value: "2000"}}
	if !ovsdb.Equal(p, want) {
		t.Errorf("rstpPortStatus %v, want %v", p, want)
	}
}
