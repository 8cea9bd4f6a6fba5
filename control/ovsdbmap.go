package control

// What an Open_vSwitch database (OVS's vswitch.ovsschema) says xswitch
// should run, read with OVS's meaning of its columns: the bridges that the
// Open_vSwitch row lists, each with its ports and their one interface.
// This is only reading rows; ovsdb.go applies the result through the
// verbs' own code, where the rules of a configuration are checked.

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xswitch/xswitch/conntrack"
	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/control/store"
	"github.com/xswitch/xswitch/ovsdb"
	vswitch "github.com/xswitch/xswitch/switch"
)

// dbTables are the rows of the monitored tables, by table and UUID.
type dbTables map[string]map[ovsdb.UUID]ovsdb.Row

// dbWant is what the database asks for.
type dbWant struct {
	// root is the Open_vSwitch row ("" when the database has none yet),
	// and nextCfg its next_cfg: what cur_cfg says once this is applied.
	root    ovsdb.UUID
	nextCfg int64
	// bridges are the bridges to run; a port's OFPort is its interface's
	// ofport_request, 0 for any number.
	bridges []store.BridgeConfig
	// refused are the interfaces that cannot run as the database says,
	// by name, with why: they get it in their error column.
	refused map[string]error
	// problems are what of a bridge's own columns xswitch cannot follow,
	// by bridge: the bridge runs without it, and the log says why.
	problems map[string][]string
	// ifaces and bridgeRows are the rows of what runs, by name, where
	// the status goes back.
	ifaces     map[string]ovsdb.UUID
	bridgeRows map[string]ovsdb.UUID
	// portRows are the Port rows of one interface, by its name.
	portRows map[string]ovsdb.UUID
	// ofports are the ofport columns of the interfaces that have one, by
	// name: the number a port gets when it is added without an
	// ofport_request, if it is free, as ovs-vswitchd does, so that a
	// port keeps its number across a daemon that lost its own record of
	// it, or across a move from ovs-vswitchd to xswitch.
	ofports map[string]uint16
	// controllers are the Controller rows of the bridges that run, with
	// their targets.
	controllers map[ovsdb.UUID]dbController
	// zoneTimeouts are the zones' timeout policies, and timeoutProblems
	// what of them xswitch cannot follow.
	zoneTimeouts    map[uint16]conntrack.Timeouts
	timeoutProblems []string
}

// dbController is a Controller row's bridge and target.
type dbController struct {
	bridge string
	target ControllerTarget
}

// Datapath types a bridge may have: xswitch has one datapath, AF_XDP in
// user space, which is what each of these asks for as far as a bridge's
// configuration goes.
var dbDatapathTypes = []string{"netdev", "system"}

// Interface types xswitch runs, as OVS names them.
var dbIfaceTypes = []string{"geneve", "internal", "system", "tap", "vxlan"}

// wantFromDB reads what the database t asks for.
func wantFromDB(t dbTables) dbWant {
	w := dbWant{refused: map[string]error{}, problems: map[string][]string{},
		ifaces: map[string]ovsdb.UUID{}, bridgeRows: map[string]ovsdb.UUID{}, portRows: map[string]ovsdb.UUID{}, ofports: map[string]uint16{},
		controllers: map[ovsdb.UUID]dbController{}}
	var root ovsdb.Row
	for u, row := range t["Open_vSwitch"] {
		w.root, root = u, row
	}
	if root == nil {
		return w
	}
	w.nextCfg, _ = root.OptInt("next_cfg")
	w.zoneTimeouts, w.timeoutProblems = zoneTimeoutsFromDB(t, root)
	for _, bu := range root.UUIDs("bridges") {
		brow := t["Bridge"][bu]
		if brow == nil {
			continue
		}
		bc, targets, problems := bridgeFromRow(t, brow)
		w.bridgeRows[bc.Name] = bu
		if len(problems) > 0 {
			w.problems[bc.Name] = problems
		}
		dt := brow.String("datapath_type")
		refuseBridge := dt != "" && !slices.Contains(dbDatapathTypes, dt)
		for _, pu := range brow.UUIDs("ports") {
			prow := t["Port"][pu]
			if prow == nil {
				continue
			}
			irows := prow.UUIDs("interfaces")
			for _, iu := range irows {
				irow := t["Interface"][iu]
				if irow == nil {
					continue
				}
				name := irow.String("name")
				w.ifaces[name] = iu
				if len(irows) == 1 {
					w.portRows[name] = pu
				}
				if n, ok := irow.OptInt("ofport"); ok && n >= 1 && n <= vswitch.MaxOFPort {
					w.ofports[name] = uint16(n)
				}
				switch {
				case refuseBridge:
					w.refused[name] = fmt.Errorf("bridge %s: datapath_type %q is not supported (xswitch has one datapath, for \"\", system and netdev)", bc.Name, dt)
				case len(irows) > 1:
					w.refused[name] = fmt.Errorf("port %s has %d interfaces: bonds are not supported", prow.String("name"), len(irows))
				default:
					pc, err := portFromRows(prow, irow)
					if err != nil {
						w.refused[name] = err
						continue
					}
					bc.Ports = append(bc.Ports, pc)
				}
			}
		}
		if !refuseBridge {
			w.bridges = append(w.bridges, bc)
			for cu, target := range targets {
				w.controllers[cu] = dbController{bridge: bc.Name, target: target}
			}
		}
	}
	slices.SortFunc(w.bridges, func(a, b store.BridgeConfig) int { return strings.Compare(a.Name, b.Name) })
	w.refuseShared()
	return w
}

// refuseShared refuses the interfaces that more than one port lists (a
// Port row in two bridges, say), in every port: running one of them
// would be a guess, and both would be half of what was asked.
func (w *dbWant) refuseShared() {
	owners := map[string][]string{} // bridges, by interface
	for _, bc := range w.bridges {
		for _, pc := range bc.Ports {
			owners[pc.Name] = append(owners[pc.Name], bc.Name)
		}
	}
	for i := range w.bridges {
		w.bridges[i].Ports = slices.DeleteFunc(w.bridges[i].Ports, func(pc api.PortConfig) bool {
			if len(owners[pc.Name]) < 2 {
				return false
			}
			w.refused[pc.Name] = fmt.Errorf("interface %s is in more than one port (of bridges %s)", pc.Name, strings.Join(owners[pc.Name], ", "))
			return true
		})
	}
}

// bridgeFromRow reads a Bridge row's own columns, without its ports, and
// its Controller rows' targets; problems are what it leaves out, and why.
func bridgeFromRow(t dbTables, row ovsdb.Row) (bc store.BridgeConfig, targets map[ovsdb.UUID]ControllerTarget, problems []string) {
	bc = store.BridgeConfig{Name: row.String("name"), Ports: []api.PortConfig{}, FailMode: row.String("fail_mode"),
		OtherConfig: knownKeys(api.TableBridge, row.StringMap("other_config"))}
	bc.RSTPEnable, _ = row.OptBool("rstp_enable")
	targets = map[ovsdb.UUID]ControllerTarget{}
	for _, cu := range row.UUIDs("controller") {
		crow := t["Controller"][cu]
		if crow == nil {
			continue
		}
		target, err := ParseControllerTarget(crow.String("target"))
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		targets[cu] = target
		if !slices.Contains(bc.Controllers, target.String()) {
			bc.Controllers = append(bc.Controllers, target.String())
		}
	}
	slices.Sort(bc.Controllers)
	if protocols := row.Strings("protocols"); len(protocols) > 0 && !slices.Contains(protocols, "OpenFlow13") {
		problems = append(problems, fmt.Sprintf("protocols %v: xswitch speaks OpenFlow13 only", protocols))
	}
	return bc, targets, problems
}

// knownKeys are the other_config keys of m that xswitch has for table:
// OVS keeps any key, and xswitch follows those it has, leaving the others
// (disable-in-band, hwaddr, ...) to the tools that read them.
func knownKeys(table string, m map[string]string) map[string]string {
	maps.DeleteFunc(m, func(k, _ string) bool {
		_, ok := otherConfigKeys[table][k]
		return !ok
	})
	if len(m) == 0 {
		return nil
	}
	return m
}

// zoneTimeoutsFromDB reads the zones' timeout policies (ovs-vsctl
// add-zone-tp: Open_vSwitch:datapaths, Datapath:ct_zones,
// CT_Zone:timeout_policy) of the system and netdev datapaths. xswitch has
// one datapath for both: where both give a zone a policy, netdev's is
// taken.
func zoneTimeoutsFromDB(t dbTables, root ovsdb.Row) (map[uint16]conntrack.Timeouts, []string) {
	zones := map[uint16]conntrack.Timeouts{}
	var problems []string
	datapaths := map[string]ovsdb.UUID{}
	for _, p := range root.Pairs("datapaths") {
		name, _ := p.Key.(string)
		datapaths[name], _ = p.Value.(ovsdb.UUID)
	}
	for _, dp := range []string{"system", "netdev"} {
		drow := t["Datapath"][datapaths[dp]]
		for _, p := range drow.Pairs("ct_zones") {
			zone, _ := p.Key.(int64)
			zu, _ := p.Value.(ovsdb.UUID)
			zrow := t["CT_Zone"][zu]
			if zrow == nil {
				continue
			}
			var tm conntrack.Timeouts
			if pu, ok := zrow.OptUUID("timeout_policy"); ok {
				for _, kv := range t["CT_Timeout_Policy"][pu].Pairs("timeouts") {
					key, _ := kv.Key.(string)
					secs, _ := kv.Value.(int64)
					if !tm.Set(key, time.Duration(secs)*time.Second) {
						problems = append(problems, fmt.Sprintf("%s zone %d: %s is the kernel datapath's, not OVS userspace's: ignored", dp, zone, key))
					}
				}
			}
			zones[uint16(zone)] = tm
		}
	}
	slices.Sort(problems)
	return zones, problems
}

// portFromRows reads a port of one interface.
func portFromRows(prow, irow ovsdb.Row) (api.PortConfig, error) {
	pc := api.PortConfig{Name: irow.String("name"), OtherConfig: knownKeys(api.TablePort, prow.StringMap("other_config"))}
	switch typ := irow.String("type"); typ {
	case "", "system":
	case api.PortTypeInternal, api.PortTypeTap:
		pc.Type = typ
	case api.PortTypeVXLAN, api.PortTypeGeneve:
		pc.Type = typ
		opts := irow.StringMap("options")
		pc.RemoteIP, pc.LocalIP, pc.Key = opts["remote_ip"], opts["local_ip"], opts["key"]
		if v, ok := opts["dst_port"]; ok {
			n, err := strconv.ParseUint(v, 10, 16)
			if err != nil || n == 0 {
				return pc, fmt.Errorf("options:dst_port %q is not a UDP port", v)
			}
			pc.DstPort = uint16(n)
		}
	default:
		return pc, fmt.Errorf("interface type %q is not supported (xswitch has system, internal, tap, vxlan and geneve)", typ)
	}
	if err := addXswitchConfig(&pc, irow); err != nil {
		return pc, err
	}
	if n, ok := irow.OptInt("ofport_request"); ok {
		if n < 1 || n > vswitch.MaxOFPort {
			return pc, fmt.Errorf("ofport_request %d out of range 1-%d", n, vswitch.MaxOFPort)
		}
		pc.OFPort = uint16(n)
	}
	if tag, ok := prow.OptInt("tag"); ok {
		if _, err := parseTag(strconv.FormatInt(tag, 10)); err != nil {
			return pc, fmt.Errorf("tag: %w", err)
		}
		pc.Tag = uint16(tag)
	}
	for _, v := range prow.Ints("trunks") {
		pc.Trunks = append(pc.Trunks, uint16(v)) // the schema holds them to 0-4095
	}
	slices.Sort(pc.Trunks)
	if mode := prow.String("vlan_mode"); mode != "" {
		if _, err := parseVLANModeValue(mode); err != nil {
			return pc, fmt.Errorf("vlan_mode: %w", err)
		}
		pc.VLANMode = mode
	}
	return pc, nil
}

// xswitchKeys are the Interface other_config keys of what xswitch has and
// OVS does not: add-port's --netns, --peer and --address (a veth pair
// that xswitch creates, its peer in a namespace), --mode and --queues.
const (
	keyNetns   = "xswitch-netns"
	keyPeer    = "xswitch-peer"
	keyAddress = "xswitch-address"
	keyMode    = "xswitch-mode"
	keyQueues  = "xswitch-queues"
)

// addXswitchConfig reads into pc what of irow's other_config is
// xswitch's, and its mtu_request, which sets the MTU of an interface that
// xswitch creates; an existing interface keeps the MTU its owner gave it,
// as without the database (mtu.go).
func addXswitchConfig(pc *api.PortConfig, irow ovsdb.Row) error {
	oc := irow.StringMap("other_config")
	pc.Netns, pc.Peer, pc.Address, pc.Mode = oc[keyNetns], oc[keyPeer], oc[keyAddress], oc[keyMode]
	if v, ok := oc[keyQueues]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("other_config:%s %q is not a number of queues", keyQueues, v)
		}
		pc.Queues = n
	}
	if mtu, ok := irow.OptInt("mtu_request"); ok && ownsDevice(*pc) {
		pc.MTU = int(mtu)
	}
	return nil
}
