package control

// The set, get and remove verbs: ovs-vsctl's database commands, for the
// columns of OVS's Bridge and Port tables that xswitch has. A record is a
// bridge or a port by name; a column is a plain one or a key of a map
// column (other_config:forward-bpdu). Unlike OVS, which keeps any
// other_config key it is given, set refuses a key xswitch does not know:
// a misspelt key would otherwise be kept and silently do nothing.
//
// A change is validated as the whole record it produces, saved, and only
// then applied to the running bridge, so that what runs is always what a
// restart restores.

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/xswitch/xswitch/rstp"
	vswitch "github.com/xswitch/xswitch/switch"
)

// Tables, as ovs-vsctl names them.
const (
	TableBridge = "Bridge"
	TablePort   = "Port"
)

// Columns.
const (
	columnRSTPEnable  = "rstp_enable"
	columnOtherConfig = "other_config"
)

// otherConfigKeys are the other_config keys of each table, with what
// checks a value; the rstp-* keys are checked again together, as the
// configuration the spanning tree gets (rstp.go).
var otherConfigKeys = map[string]map[string]func(string) error{
	TableBridge: {
		"forward-bpdu":                checkBool,
		"datapath-id":                 checkDatapathID,
		"rstp-priority":               checkUint(0, 61440, 4096),
		"rstp-address":                checkAddress,
		"rstp-max-age":                checkUint(6, 40, 1),
		"rstp-forward-delay":          checkUint(4, 30, 1),
		"rstp-transmit-hold-count":    checkUint(1, 10, 1),
		"rstp-force-protocol-version": func(v string) error { return checkOneOf(v, "0", "2") },
		// OVS has these as the Controller table's controller_rate_limit
		// and controller_burst_limit, with these minimums.
		"controller-rate-limit":  checkUint(100, maxControllerRate, 1),
		"controller-burst-limit": checkUint(25, maxControllerRate, 1),
	},
	TablePort: {
		// Not an OVS key: OVS has no storm control.
		"storm-limit":          checkStormLimit,
		"rstp-enable":          checkBool,
		"rstp-port-priority":   checkUint(0, 240, 16),
		"rstp-path-cost":       checkUint(1, rstp.MaxPathCost, 1),
		"rstp-port-admin-edge": checkBool,
		"rstp-port-auto-edge":  checkBool,
	},
}

// tableColumns are each table's columns.
var tableColumns = map[string][]string{
	TableBridge: {columnRSTPEnable, columnOtherConfig},
	TablePort:   {columnOtherConfig},
}

func checkBool(v string) error {
	if v != "true" && v != "false" {
		return fmt.Errorf("%q is not true or false", v)
	}
	return nil
}

// maxStormLimit is the highest storm limit, in frames/s: far beyond what a
// port carries, and what the forwarder's clock resolves.
const maxStormLimit = 1_000_000_000

func checkStormLimit(v string) error {
	_, err := parseStormLimit(v)
	return err
}

func parseStormLimit(v string) (uint32, error) {
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil || n > maxStormLimit {
		return 0, fmt.Errorf("%q is not a number of frames per second from 0 (no limit) to %d", v, maxStormLimit)
	}
	return uint32(n), nil
}

// record is one row of a configuration: a bridge, or one of its ports.
type record struct {
	table  string
	bridge *BridgeConfig
	port   *PortConfig // nil for a bridge
	name   string
}

// findRecord finds the named row of table in c, for reading or changing.
func findRecord(c *Config, table, name string) (record, error) {
	t, err := lookupTable(table)
	if err != nil {
		return record{}, err
	}
	r := record{table: t, name: name}
	for i := range c.Bridges {
		bc := &c.Bridges[i]
		if t == TableBridge && bc.Name == name {
			r.bridge = bc
			return r, nil
		}
		if t == TablePort {
			if j := slices.IndexFunc(bc.Ports, func(pc PortConfig) bool { return pc.Name == name }); j >= 0 {
				r.bridge, r.port = bc, &bc.Ports[j]
				return r, nil
			}
		}
	}
	return record{}, fmt.Errorf("no row %q in table %s", name, t)
}

// lookupTable returns a table's name as ovs-vsctl spells it; like
// ovs-vsctl, it ignores case.
func lookupTable(name string) (string, error) {
	for _, t := range []string{TableBridge, TablePort} {
		if strings.EqualFold(name, t) {
			return t, nil
		}
	}
	return "", fmt.Errorf("unknown table %q (xswitch has the tables %s and %s)", name, TableBridge, TablePort)
}

// column parses "column" or "column:key" of r's table.
func (r record) column(text string) (column, key string, err error) {
	column, key, hasKey := strings.Cut(text, ":")
	i := slices.IndexFunc(tableColumns[r.table], func(c string) bool { return strings.EqualFold(c, column) })
	if i < 0 {
		return "", "", fmt.Errorf("%s does not contain a column whose name matches %q (xswitch has %s)",
			r.table, column, strings.Join(tableColumns[r.table], ", "))
	}
	column = tableColumns[r.table][i]
	if hasKey && column != columnOtherConfig {
		return "", "", fmt.Errorf("cannot specify key to set for non-map column %s", column)
	}
	if hasKey {
		if _, ok := otherConfigKeys[r.table][key]; !ok {
			return "", "", fmt.Errorf("%s has no other_config key %q (xswitch knows %s)",
				r.table, key, strings.Join(slices.Sorted(maps.Keys(otherConfigKeys[r.table])), ", "))
		}
	}
	return column, key, nil
}

func (r record) otherConfig() *map[string]string {
	if r.port != nil {
		return &r.port.OtherConfig
	}
	return &r.bridge.OtherConfig
}

// set applies one "column=value" or "column:key=value" to r.
func (r record) set(setting string) error {
	lhs, value, ok := strings.Cut(setting, "=")
	if !ok {
		return fmt.Errorf("%q: want COLUMN=VALUE or COLUMN:KEY=VALUE", setting)
	}
	column, key, err := r.column(lhs)
	if err != nil {
		return err
	}
	// A value may be quoted, as ovs-vsctl prints and accepts it.
	if len(value) >= 2 && value[0] == '"' {
		if value, err = strconv.Unquote(value); err != nil {
			return fmt.Errorf("%s: bad quoted value: %v", lhs, err)
		}
	}
	switch {
	case column == columnRSTPEnable:
		if err := checkBool(value); err != nil {
			return fmt.Errorf("%s: %w", column, err)
		}
		r.bridge.RSTPEnable = value == "true"
	case key == "":
		return fmt.Errorf("setting the whole %s column is not supported: set one key at a time, as %s:KEY=VALUE", column, column)
	default:
		if err := otherConfigKeys[r.table][key](value); err != nil {
			return fmt.Errorf("%s:%s: %w", column, key, err)
		}
		m := r.otherConfig()
		next := maps.Clone(*m)
		if next == nil {
			next = map[string]string{}
		}
		next[key] = value
		*m = next
	}
	return nil
}

// remove deletes keys from r's map column.
func (r record) remove(column string, keys []string) error {
	c, _, err := r.column(column)
	if err != nil {
		return err
	}
	if c != columnOtherConfig {
		return fmt.Errorf("remove works on a map column (%s), not %s", columnOtherConfig, c)
	}
	m := r.otherConfig()
	next := maps.Clone(*m)
	for _, k := range keys {
		delete(next, k)
	}
	if len(next) == 0 {
		next = nil
	}
	*m = next
	return nil
}

// get returns the value of "column" or "column:key" as JSON: true or
// false, a string, or an object of strings.
func (r record) get(text string) (json.RawMessage, error) {
	column, key, err := r.column(text)
	if err != nil {
		return nil, err
	}
	var v any
	switch {
	case column == columnRSTPEnable:
		v = r.bridge.RSTPEnable
	case key == "":
		m := *r.otherConfig()
		if m == nil {
			m = map[string]string{}
		}
		v = m
	default:
		s, ok := (*r.otherConfig())[key]
		if !ok {
			return nil, fmt.Errorf("no key %q in %s record %q column %s", key, r.table, r.name, column)
		}
		v = s
	}
	return json.Marshal(v)
}

// validate checks the whole record as it would run.
func (r record) validate() error {
	if r.port != nil {
		_, err := r.port.portOptions()
		return err
	}
	_, err := r.bridge.settings()
	return err
}

// maxControllerRate bounds the controller's rate and burst limits,
// packet-ins a second: far beyond what an agent takes.
const maxControllerRate = 1_000_000

// bridgeSettings are what a bridge's columns configure.
type bridgeSettings struct {
	forwardBPDU bool
	rstp        *rstp.BridgeConfig // nil: no spanning tree
	// controllerRate and controllerBurst limit the packet-ins; 0: no
	// limit, and a quarter of the rate (vswitch.Bridge.SetControllerRateLimit).
	controllerRate, controllerBurst uint32
}

// settings parses bc's columns, or says what is wrong with them. The
// spanning tree's configuration is checked even while it is off, so that
// turning it on cannot fail.
func (bc *BridgeConfig) settings() (bridgeSettings, error) {
	var s bridgeSettings
	if err := checkOtherConfig(TableBridge, bc.OtherConfig); err != nil {
		return s, fmt.Errorf("bridge %s: %w", bc.Name, err)
	}
	s.forwardBPDU = bc.OtherConfig["forward-bpdu"] == "true"
	for key, to := range map[string]*uint32{"controller-rate-limit": &s.controllerRate, "controller-burst-limit": &s.controllerBurst} {
		if v, ok := bc.OtherConfig[key]; ok {
			n, _ := strconv.ParseUint(v, 10, 32) // checked above
			*to = uint32(n)
		}
	}
	cfg, err := bc.rstpBridgeConfig()
	if err != nil {
		return s, fmt.Errorf("bridge %s: %w", bc.Name, err)
	}
	if bc.RSTPEnable {
		s.rstp = &cfg
	}
	return s, nil
}

// apply makes b run as s says.
func (s bridgeSettings) apply(b *vswitch.Bridge) error {
	b.SetForwardBPDU(s.forwardBPDU)
	b.SetControllerRateLimit(s.controllerRate, s.controllerBurst)
	return b.SetRSTP(s.rstp)
}

// addOtherConfig adds what pc's other_config configures to opts.
func (pc PortConfig) addOtherConfig(opts *vswitch.PortOptions) error {
	if err := checkOtherConfig(TablePort, pc.OtherConfig); err != nil {
		return fmt.Errorf("port %q: %w", pc.Name, err)
	}
	if v, ok := pc.OtherConfig["storm-limit"]; ok {
		opts.StormLimit, _ = parseStormLimit(v) // checked above
	}
	opts.RSTP = pc.rstpPortConfig()
	return nil
}

// checkOtherConfig checks every key of an other_config map.
func checkOtherConfig(table string, m map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		check, ok := otherConfigKeys[table][k]
		if !ok {
			return fmt.Errorf("unknown other_config key %q", k)
		}
		if err := check(m[k]); err != nil {
			return fmt.Errorf("other_config:%s: %w", k, err)
		}
	}
	return nil
}

// dropEmpty makes an empty other_config, or an empty list of
// controllers, none, as saving leaves them out, so that a configuration
// reads back as it was written.
func (c *Config) dropEmpty() {
	for i := range c.Bridges {
		bc := &c.Bridges[i]
		if len(bc.OtherConfig) == 0 {
			bc.OtherConfig = nil
		}
		if len(bc.Controllers) == 0 {
			bc.Controllers = nil
		}
		for j := range bc.Ports {
			if pc := &bc.Ports[j]; len(pc.OtherConfig) == 0 {
				pc.OtherConfig = nil
			}
		}
	}
}

// setColumns is the set verb.
func (d *Daemon) setColumns(table, name string, settings []string) error {
	if len(settings) == 0 {
		return errors.New("set needs at least one COLUMN=VALUE")
	}
	return d.changeRecord(table, name, func(r record) error {
		for _, s := range settings {
			if err := r.set(s); err != nil {
				return err
			}
		}
		return nil
	})
}

// removeKeys is the remove verb.
func (d *Daemon) removeKeys(table, name string, columnAndKeys []string) error {
	if len(columnAndKeys) < 2 {
		return errors.New("remove needs a column and at least one key")
	}
	return d.changeRecord(table, name, func(r record) error { return r.remove(columnAndKeys[0], columnAndKeys[1:]) })
}

// changeRecord changes one record of a copy of the configuration, checks
// it, saves it and applies it.
func (d *Daemon) changeRecord(table, name string, change func(record) error) error {
	next := d.cfg.clone()
	r, err := findRecord(next, table, name)
	if err != nil {
		return err
	}
	if err := change(r); err != nil {
		return err
	}
	if err := r.validate(); err != nil {
		return err
	}
	if err := d.commit(next); err != nil {
		return err
	}
	b := d.bridges[r.bridge.Name]
	if r.port == nil {
		s, _ := r.bridge.settings() // validated above
		err = s.apply(b)
	} else if _, down := d.down[r.port.Name]; !down {
		opts, _ := r.port.runningOptions() // validated above
		err = errors.Join(b.SetStormLimit(r.port.Name, opts.StormLimit), b.SetPortRSTP(r.port.Name, opts.RSTP))
	}
	if err != nil {
		// Saved, and checked: only a defect gets here. A restart applies
		// what was saved.
		d.log.Error("applying settings", "table", r.table, "record", name, "err", err)
	}
	d.log.Info("record changed", "table", r.table, "record", name)
	return nil
}

// getColumns is the get verb.
func (d *Daemon) getColumns(table, name string, columns []string) ([]json.RawMessage, error) {
	if len(columns) == 0 {
		return nil, errors.New("get needs at least one column")
	}
	r, err := findRecord(d.cfg, table, name)
	if err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, 0, len(columns))
	for _, c := range columns {
		v, err := r.get(c)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
