package control

// xswitch as the switch daemon of an OVSDB server (--ovsdb), as
// ovs-vswitchd is: it takes the server's lock "ovs_vswitchd", so that one
// daemon drives the switch, monitors the Open_vSwitch, Bridge, Port,
// Interface and Controller tables, makes the bridges and ports what they
// say (ovsdbmap.go reads them) through the verbs' own code, and writes
// back the status columns and cur_cfg, as ovs-vswitchd does. While the
// server is away the switch keeps forwarding as it was; the connection is
// made again with backoff, and a new monitor's full state is the truth
// from then on.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/control/store"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/ovsdb"
	"github.com/xswitch/xswitch/rstp"
)

const (
	// ovsdbLock is the lock ovs-vswitchd takes: holding it keeps
	// ovs-vswitchd (or another xswitch) from driving the same switch.
	ovsdbLock = "ovs_vswitchd"
	dbName    = "Open_vSwitch"
	// ovsdbRefresh is how often the status is looked at (and ports that
	// could not be opened are tried again) without a change in the
	// database: links go up and down, devices appear. The interfaces'
	// statistics are written then, and only then, as ovs-vswitchd's are
	// (other_config:stats-update-interval, 5 s by default).
	ovsdbRefresh = 5 * time.Second
	// ovsdbBackoff and ovsdbMaxBackoff bound the wait before connecting
	// again.
	ovsdbBackoff    = 100 * time.Millisecond
	ovsdbMaxBackoff = 8 * time.Second
	// datapathVersion is Bridge:datapath_version: one datapath, whatever
	// datapath_type says.
	datapathVersion = "xswitch AF_XDP (one datapath for system and netdev)"
)

// ovsdbColumns are the columns monitored: those read and those written
// back, so that a write can be skipped when the value is there already.
var ovsdbColumns = map[string][]string{
	"Open_vSwitch": {"bridges", "next_cfg", "cur_cfg", "ovs_version", "datapath_types", "iface_types", "datapaths"},
	"Bridge": {"name", "ports", "fail_mode", "controller", "protocols", "other_config", "rstp_enable",
		"datapath_type", "datapath_id", "datapath_version", "rstp_status"},
	"Port": {"name", "interfaces", "tag", "trunks", "vlan_mode", "other_config", "rstp_status"},
	"Interface": {"name", "type", "options", "other_config", "mtu_request", "ofport_request", "ofport", "error", "admin_state", "link_state",
		"mtu", "mac_in_use", "ifindex", "statistics"},
	"Controller":        {"target", "is_connected", "role", "status"},
	"Datapath":          {"ct_zones"},
	"CT_Zone":           {"timeout_policy"},
	"CT_Timeout_Policy": {"timeouts"},
}

// monitoredColumns are the columns of ovsdbColumns that schema has: an
// older schema lacks some (mtu_request, datapath_version, ...), which are
// then neither read nor written.
func monitoredColumns(schema *ovsdb.Schema) map[string][]string {
	out := map[string][]string{}
	for table, cols := range ovsdbColumns {
		if t := schema.Tables[table]; t != nil {
			out[table] = slices.DeleteFunc(slices.Clone(cols), func(c string) bool { return t.Columns[c] == nil })
		}
	}
	return out
}

// configVerbs are the verbs that change bridges, ports and zones'
// timeout policies: with --ovsdb the database is the one truth of those,
// and ovs-vsctl changes it.
var configVerbs = map[string]bool{
	api.VerbAddBridge: true, api.VerbDelBridge: true, api.VerbAddPort: true, api.VerbDelPort: true,
	api.VerbSet: true, api.VerbAdd: true, api.VerbRemove: true, api.VerbClear: true,
	api.VerbSetController: true, api.VerbDelController: true, api.VerbSetFailMode: true, api.VerbDelFailMode: true,
	api.VerbAddZoneTP: true, api.VerbDelZoneTP: true,
}

// ovsdbFollower is the daemon's side of one OVSDB server.
type ovsdbFollower struct {
	d       *Daemon
	target  string
	version string // Open_vSwitch:ovs_version
	// failed are the ports that could not be added, by name, with why.
	failed map[string]error
	// said are the problems the log told of last (report).
	said map[string]string
}

// followOVSDB follows the server at target until d.stop is closed.
func (d *Daemon) followOVSDB(target, version string) {
	defer close(d.ovsdbDone)
	f := &ovsdbFollower{d: d, target: target, version: version, failed: map[string]error{}, said: map[string]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-d.stop
		cancel()
	}()
	backoff := ovsdbBackoff
	for {
		began := time.Now()
		err := f.session(ctx)
		if ctx.Err() != nil {
			return
		}
		if time.Since(began) > ovsdbMaxBackoff {
			backoff = ovsdbBackoff
		}
		d.log.Warn("no longer following the OVSDB server: the switch forwards on as configured; connecting again",
			"ovsdb", target, "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, ovsdbMaxBackoff)
	}
}

// session is one connection: it returns why it ended.
func (f *ovsdbFollower) session(ctx context.Context) error {
	log := f.d.log
	c, err := ovsdb.Dial(ctx, f.target)
	if err != nil {
		return err
	}
	defer c.Close()
	schema, err := c.GetSchema(ctx, dbName)
	if err != nil {
		return err
	}
	lock := make(chan bool, 1)
	c.OnLock(func(name string, held bool) {
		select {
		case lock <- held:
		default:
		}
	})
	held, err := c.Lock(ctx, ovsdbLock)
	if err != nil {
		return err
	}
	if !held {
		log.Error("another daemon (ovs-vswitchd or xswitch) holds the OVSDB lock "+ovsdbLock+": waiting for it; this daemon leaves the switch as it is meanwhile", "ovsdb", f.target)
		for !held {
			select {
			case held = <-lock:
			case <-c.Done():
				return c.Err()
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	changed := make(chan struct{}, 1)
	replica, err := c.Monitor(ctx, dbName, schema, monitoredColumns(schema), func([]ovsdb.Change) {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return err
	}
	log.Info("following the OVSDB server", "ovsdb", f.target, "lock", ovsdbLock)
	tick := time.NewTicker(ovsdbRefresh)
	defer tick.Stop()
	stats := true
	for {
		t := dbTables(replica.Snapshot())
		if ops := f.sync(t, schema, stats); len(ops) > 0 {
			if _, err := c.Transact(ctx, dbName, append([]ovsdb.Op{ovsdb.Assert(ovsdbLock)}, ops...)...); err != nil {
				log.Warn("writing the status to the OVSDB server", "err", err)
			}
		}
		stats = false
		select {
		case <-changed:
		case <-tick.C:
			stats = true
		case held := <-lock:
			if !held {
				return errors.New("the lock " + ovsdbLock + " was stolen: another daemon drives the switch")
			}
		case <-c.Done():
			return c.Err()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// sync makes the switch what t asks for, and returns the writes of the
// status that differs from t's, the statistics included when stats says.
func (f *ovsdbFollower) sync(t dbTables, schema *ovsdb.Schema, stats bool) []ovsdb.Op {
	want := wantFromDB(t)
	d := f.d
	d.mu.Lock()
	defer d.unlock()
	var failed map[string]error
	var err error
	saveErr := d.holdConfigWrites(func() { failed, err = d.reconcile(want) })
	err = errors.Join(err, saveErr)
	f.failed = failed
	problems := map[string]string{}
	for br, p := range want.problems {
		problems["bridge "+br] = strings.Join(p, "; ")
	}
	for _, m := range []map[string]error{want.refused, failed} {
		for name, err := range m {
			problems["interface "+name] = err.Error()
		}
	}
	if err != nil {
		problems["switch"] = err.Error()
	}
	if len(want.timeoutProblems) > 0 {
		problems["conntrack timeout policies"] = strings.Join(want.timeoutProblems, "; ")
	}
	f.report(problems)
	return f.statusOps(t, schema, want, stats)
}

// report logs what the database asks for that the switch cannot do, by
// what it is about, each once until it changes, not at every refresh.
func (f *ovsdbFollower) report(problems map[string]string) {
	for _, what := range slices.Sorted(maps.Keys(problems)) {
		if f.said[what] != problems[what] {
			f.d.log.Warn("the OVSDB server asks for what the switch cannot do", "what", what, "problem", problems[what])
		}
	}
	f.said = problems
}

// reconcile makes the bridges and ports those of want, through the verbs'
// code, and the zones' timeout policies want's. It returns the ports it could not add, by name, with why, and
// what else it could not do.
func (d *Daemon) reconcile(want dbWant) (map[string]error, error) {
	d.conntrack.SetZoneTimeouts(want.zoneTimeouts)
	before := d.cfg
	var errs []error
	failed := map[string]error{}
	wanted := map[string]*api.PortConfig{} // by name
	bridgeOf := map[string]string{}
	for i := range want.bridges {
		for j := range want.bridges[i].Ports {
			pc := &want.bridges[i].Ports[j]
			wanted[pc.Name], bridgeOf[pc.Name] = pc, want.bridges[i].Name
		}
	}
	// Deletions first: a port that moves to another bridge, or changes
	// what it is, or its number, is added again after.
	for _, bc := range before.Bridges {
		if !slices.ContainsFunc(want.bridges, func(w store.BridgeConfig) bool { return w.Name == bc.Name }) {
			errs = append(errs, d.delBridge(bc.Name))
			continue
		}
		renumber := renumbered(bc, wanted)
		for _, pc := range bc.Ports {
			if w := wanted[pc.Name]; w == nil || bridgeOf[pc.Name] != bc.Name || !samePort(pc, *w) || renumber[pc.Name] {
				errs = append(errs, d.delPort(bc.Name, pc.Name))
			}
		}
	}
	for _, wb := range want.bridges {
		if _, ok := d.bridges[wb.Name]; !ok {
			if err := d.addBridge(wb.Name); err != nil {
				for _, pc := range wb.Ports {
					failed[pc.Name] = err
				}
				continue
			}
		}
		errs = append(errs, d.reconcileBridge(wb))
		running := func(name string) (api.PortConfig, bool) {
			i := slices.IndexFunc(d.cfg.Bridge(wb.Name).Ports, func(pc api.PortConfig) bool { return pc.Name == name })
			if i < 0 {
				return api.PortConfig{}, false
			}
			return d.cfg.Bridge(wb.Name).Ports[i], true
		}
		held := func(n uint16) bool {
			return slices.ContainsFunc(d.cfg.Bridge(wb.Name).Ports, func(pc api.PortConfig) bool { return pc.OFPort == n })
		}
		for _, wp := range wb.Ports {
			if cur, ok := running(wp.Name); ok {
				errs = append(errs, d.reconcilePort(cur, wp))
			}
		}
		// As ovs-vswitchd adds them (bridge_add_ports): first the ports
		// that request a number, so that no other takes it by chance.
		// A number that is taken leaves its requester one chosen as for
		// a port that requests none, as ofproto's alloc_ofp_port does;
		// a port that requests none gets the one its Interface:ofport
		// has, if free. The bridge's own port is LOCAL whatever it
		// requests, as in OVS.
		for _, requests := range []bool{true, false} {
			for _, wp := range wb.Ports {
				if _, ok := running(wp.Name); ok || (wp.OFPort != 0) != requests {
					continue
				}
				switch h := want.ofports[wp.Name]; {
				case wp.Name == wb.Name:
					wp.OFPort = 0
				case wp.OFPort != 0 && held(wp.OFPort):
					wp.OFPort = 0
				case wp.OFPort == 0 && h != 0 && !held(h):
					wp.OFPort = h
				}
				if err := d.addPort(wb.Name, wp); err != nil {
					failed[wp.Name] = openError(wp, err)
				}
			}
		}
	}
	d.changed(before, nil)
	return failed, errors.Join(errs...)
}

// reconcileBridge gives the bridge wb's own columns.
func (d *Daemon) reconcileBridge(wb store.BridgeConfig) error {
	cur := d.cfg.Bridge(wb.Name)
	var errs []error
	if cur.FailMode != wb.FailMode {
		errs = append(errs, d.setFailMode(wb.Name, wb.FailMode))
	}
	if !slices.Equal(cur.Controllers, wb.Controllers) {
		errs = append(errs, d.setControllers(wb.Name, wb.Controllers))
	}
	if cur.RSTPEnable != wb.RSTPEnable || !maps.Equal(cur.OtherConfig, wb.OtherConfig) {
		errs = append(errs, d.changeRecord(api.TableBridge, wb.Name, func(r record) error {
			r.bridge.RSTPEnable, r.bridge.OtherConfig = wb.RSTPEnable, wb.OtherConfig
			return nil
		}))
	}
	return errors.Join(errs...)
}

// reconcilePort gives the port cur the columns of want that change a
// running port: its VLANs and other_config.
func (d *Daemon) reconcilePort(cur, want api.PortConfig) error {
	if sameVLANs(cur, want) && maps.Equal(cur.OtherConfig, want.OtherConfig) {
		return nil
	}
	return d.changeRecord(api.TablePort, cur.Name, func(r record) error {
		r.port.Tag, r.port.Trunks, r.port.VLANMode, r.port.OtherConfig = want.Tag, want.Trunks, want.VLANMode, want.OtherConfig
		return nil
	})
}

// renumbered are the ports of the running bridge bc to add again for
// their numbers, as ovs-vswitchd decides it
// (bridge_delete_or_reconfigure_ports): a port whose ofport_request (in
// wanted, by name) is not its number, when that number is free, or held
// by a port that does not request it, which is added again too, with
// another. When both request it, the one that holds it keeps it, and the
// other keeps its own.
func renumbered(bc store.BridgeConfig, wanted map[string]*api.PortConfig) map[string]bool {
	holder := map[uint16]string{}
	for _, pc := range bc.Ports {
		holder[pc.OFPort] = pc.Name
	}
	out := map[string]bool{}
	for _, pc := range bc.Ports {
		w := wanted[pc.Name]
		if w == nil || w.OFPort == 0 || w.OFPort == pc.OFPort || pc.OFPort == flow.LocalPort {
			continue
		}
		victim, held := holder[w.OFPort]
		if !held {
			out[pc.Name] = true
		} else if v := wanted[victim]; v == nil || v.OFPort != w.OFPort {
			out[pc.Name], out[victim] = true, true
		}
	}
	return out
}

// samePort says whether the running port cur is the interface want
// describes, so that only its settings may differ; its number is
// renumbered's.
func samePort(cur, want api.PortConfig) bool {
	if err := completePortType(&want); err != nil {
		return false
	}
	for _, pc := range []*api.PortConfig{&cur, &want} {
		pc.OFPort, pc.Tag, pc.Trunks, pc.VLANMode, pc.OtherConfig = 0, 0, nil, "", nil
	}
	return reflect.DeepEqual(cur, want)
}

// openError says why a port could not be added as ovs-vswitchd says it
// of an interface that does not exist.
func openError(pc api.PortConfig, err error) error {
	if pc.Type == "" {
		var notFound netlink.LinkNotFoundError
		if _, lerr := netlink.LinkByName(pc.Name); errors.As(lerr, &notFound) {
			return fmt.Errorf("could not open network device %s (No such device)", pc.Name)
		}
	}
	return err
}

// statusOps are the writes of the status columns whose values differ
// from t's: of every interface of want (with its statistics when stats
// says), every bridge and port of one interface, every controller (its
// status when stats says, or its connection changed), and the
// Open_vSwitch row, with cur_cfg last, once the rest is in place.
func (f *ovsdbFollower) statusOps(t dbTables, schema *ovsdb.Schema, want dbWant, stats bool) []ovsdb.Op {
	var ops []ovsdb.Op
	update := func(table string, u ovsdb.UUID, cols map[string]any) {
		row, tbl := t[table][u], schema.Tables[table]
		if tbl == nil {
			return // an older schema's
		}
		changes := map[string]any{}
		for col, v := range cols {
			c := tbl.Columns[col]
			if c == nil {
				continue // an older schema's
			}
			old, ok := row[col]
			if !ok {
				old = c.Type.Default()
			}
			if !ovsdb.Equal(old, v) {
				changes[col] = v
			}
		}
		if len(changes) > 0 {
			ops = append(ops, ovsdb.Update(table, changes, ovsdb.Cond("_uuid", "==", u)))
		}
	}
	var counts map[string]ovsdb.Map
	if stats {
		counts = f.d.ovsdbStatistics()
	}
	for _, name := range slices.Sorted(maps.Keys(want.ifaces)) {
		cols := f.ifaceStatus(name, want)
		if c, ok := counts[name]; ok {
			cols["statistics"] = c
		}
		update("Interface", want.ifaces[name], cols)
	}
	rstpPorts := map[string]ovsdb.Map{} // by name
	for _, name := range slices.Sorted(maps.Keys(want.bridgeRows)) {
		cols := map[string]any{"datapath_id": ovsdb.Set{}, "datapath_version": datapathVersion, "rstp_status": ovsdb.Map{}}
		if bc := f.d.cfg.Bridge(name); bc != nil {
			s, _ := controllerSettingsOf(bc) // validated
			cols["datapath_id"] = ovsdb.Set{formatDatapathID(s.DatapathID)}
		}
		if b := f.d.bridges[name]; b != nil {
			if st, ok := b.RSTPStatus(); ok {
				cols["rstp_status"] = rstpBridgeStatus(st.Status)
				for _, p := range st.Ports {
					rstpPorts[st.Names[p.Number]] = rstpPortStatus(p)
				}
			}
		}
		update("Bridge", want.bridgeRows[name], cols)
	}
	for _, name := range slices.Sorted(maps.Keys(want.portRows)) {
		st, ok := rstpPorts[name]
		if !ok {
			st = ovsdb.Map{}
		}
		update("Port", want.portRows[name], map[string]any{"rstp_status": st})
	}
	now := time.Now()
	for _, cu := range slices.Sorted(maps.Keys(want.controllers)) {
		cols := f.controllerStatus(want.controllers[cu], now)
		if row := t["Controller"][cu]; !stats && ovsdb.Equal(row["is_connected"], cols["is_connected"]) && ovsdb.Equal(row["role"], cols["role"]) {
			// As ovs-vswitchd, whose status counts seconds: with the
			// statistics, or with a change of connection.
			delete(cols, "status")
		}
		update("Controller", cu, cols)
	}
	if want.root != "" {
		update("Open_vSwitch", want.root, map[string]any{
			"ovs_version":    ovsdb.Set{f.version},
			"datapath_types": stringSet(dbDatapathTypes),
			"iface_types":    stringSet(dbIfaceTypes),
		})
		update("Open_vSwitch", want.root, map[string]any{"cur_cfg": want.nextCfg})
	}
	return ops
}

// controllerStatus are a Controller row's is_connected, role and status
// at now, as ovs-vswitchd writes them (bridge.c's
// refresh_controller_status, connmgr.c's connmgr_get_controller_info): of
// a tcp: target, whether the agent has a controller connected there, its
// role while it has, and the connection's state, last error and seconds
// since it was last made and lost; a ptcp: target, where controllers
// come to the switch, is not connected and has none of these.
func (f *ovsdbFollower) controllerStatus(c dbController, now time.Time) map[string]any {
	cols := map[string]any{"is_connected": false, "role": ovsdb.Set{}, "status": ovsdb.Map{}}
	if c.target.Listen {
		return cols
	}
	st := f.d.controllers.conn(c.bridge, c.target.String())
	status := ovsdb.Map{}
	add := func(k, v string) { status = append(status, ovsdb.Pair{Key: k, Value: v}) }
	if st.LastError != "" {
		add("last_error", st.LastError)
	}
	if st.State != "" {
		add("state", st.State)
	}
	for k, at := range map[string]time.Time{"sec_since_connect": st.ConnectedAt, "sec_since_disconnect": st.DisconnectedAt} {
		if !at.IsZero() {
			add(k, strconv.FormatInt(int64(now.Sub(at)/time.Second), 10))
		}
	}
	cols["is_connected"], cols["status"] = st.Connected, status
	if st.Connected {
		cols["role"] = ovsdb.Set{ovsdbRole(st.Role)}
	}
	return cols
}

// rstpBridgeStatus is Bridge:rstp_status as ovs-vswitchd writes it of a
// bridge that runs RSTP (bridge.c's br_refresh_rstp_status): the bridge's
// and the root's identifiers, and its root priority vector.
func rstpBridgeStatus(st rstp.Status) ovsdb.Map {
	return ovsdb.Map{
		{Key: "rstp_bridge_id", Value: ovsRSTPID(st.BridgeID)},
		{Key: "rstp_root_id", Value: ovsRSTPID(st.Root)},
		{Key: "rstp_root_path_cost", Value: strconv.FormatUint(uint64(st.RootPathCost), 10)},
		{Key: "rstp_designated_id", Value: ovsRSTPID(st.DesignatedBridge)},
		{Key: "rstp_designated_port_id", Value: fmt.Sprintf("%04x", uint16(st.DesignatedPort))},
		{Key: "rstp_bridge_port_id", Value: fmt.Sprintf("%04x", uint16(st.RootPortID))},
	}
}

// rstpPortStatus is Port:rstp_status as ovs-vswitchd writes it of a port
// in its bridge's spanning tree (port_refresh_rstp_status).
func rstpPortStatus(p rstp.PortStatus) ovsdb.Map {
	capital := func(s string) string { return strings.ToUpper(s[:1]) + s[1:] }
	return ovsdb.Map{
		{Key: "rstp_port_id", Value: fmt.Sprintf("%04x", uint16(p.ID))},
		{Key: "rstp_port_role", Value: capital(p.Role.String())},
		{Key: "rstp_port_state", Value: capital(p.State.String())},
		{Key: "rstp_designated_bridge_id", Value: ovsRSTPID(p.DesignatedBridge)},
		{Key: "rstp_designated_port_id", Value: fmt.Sprintf("%04x", uint16(p.DesignatedPort))},
		{Key: "rstp_designated_path_cost", Value: strconv.FormatUint(uint64(p.DesignatedPathCost), 10)},
	}
}

// ovsRSTPID is a bridge identifier as OVS writes it in the database
// (RSTP_ID_FMT): priority, system ID extension, address, 8.000.0a1b2c3d4e5f.
func ovsRSTPID(id rstp.BridgeID) string {
	return fmt.Sprintf("%01x.%03x.%012x", uint64(id)>>60, uint64(id)>>48&0xfff, uint64(id)&(1<<48-1))
}

// ovsdbRole is the agent's name of a role as the Controller table has it:
// master, slave, or other (OpenFlow's equal).
func ovsdbRole(role string) string {
	if role == "master" || role == "slave" {
		return role
	}
	return "other"
}

func stringSet(ss []string) ovsdb.Set {
	out := make(ovsdb.Set, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// ifaceStatus are the status columns of the interface name, as
// ovs-vswitchd writes them: ofport -1 and error for one that does not
// run, and what the kernel says of its link for one that does.
func (f *ovsdbFollower) ifaceStatus(name string, want dbWant) map[string]any {
	d := f.d
	none := ovsdb.Set{}
	cols := map[string]any{"ofport": ovsdb.Set{int64(-1)}, "error": none, "admin_state": none,
		"link_state": none, "mtu": none, "mac_in_use": none, "ifindex": none}
	why := want.refused[name]
	if why == nil {
		why = f.failed[name]
	}
	if why == nil {
		why = d.down[name]
	}
	_, pc, configured := d.findPort(name)
	if why == nil && !configured {
		why = errors.New("not added to the switch")
	}
	if why != nil {
		cols["error"] = ovsdb.Set{why.Error()}
		return cols
	}
	cols["ofport"] = ovsdb.Set{int64(pc.OFPort)}
	if pc.IsTunnel() {
		cols["admin_state"], cols["link_state"] = ovsdb.Set{"up"}, ovsdb.Set{"up"}
		return cols
	}
	link, err := netlink.LinkByName(pc.Name)
	if err != nil {
		return cols
	}
	a := link.Attrs()
	cols["admin_state"], cols["link_state"] = upDown(a.Flags&net.FlagUp != 0), upDown(a.RawFlags&unix.IFF_RUNNING != 0)
	cols["mtu"], cols["ifindex"] = ovsdb.Set{int64(a.MTU)}, ovsdb.Set{int64(a.Index)}
	if len(a.HardwareAddr) > 0 {
		cols["mac_in_use"] = ovsdb.Set{a.HardwareAddr.String()}
	}
	return cols
}

// ovsdbStatistics are the counters of every configured port, by name, as
// Interface:statistics has them: those the OpenFlow agent gives too.
func (d *Daemon) ovsdbStatistics() map[string]ovsdb.Map {
	out := map[string]ovsdb.Map{}
	for i := range d.cfg.Bridges {
		bc := &d.cfg.Bridges[i]
		b := d.bridges[bc.Name]
		b.SyncFastPath() // so that the counters include what the kernel carried
		for _, cp := range d.configuredPorts(b, bc) {
			s := cp.counts
			out[cp.Name] = ovsdb.Map{
				{Key: "rx_packets", Value: int64(s.RxPackets)}, {Key: "rx_bytes", Value: int64(s.RxBytes)},
				{Key: "rx_dropped", Value: int64(s.Port.RxDropped)}, {Key: "rx_errors", Value: int64(s.RxErrors)},
				{Key: "tx_packets", Value: int64(s.TxPackets)}, {Key: "tx_bytes", Value: int64(s.TxBytes)},
				{Key: "tx_dropped", Value: int64(s.TxDropped)},
			}
		}
	}
	return out
}

func upDown(up bool) ovsdb.Set {
	if up {
		return ovsdb.Set{"up"}
	}
	return ovsdb.Set{"down"}
}
