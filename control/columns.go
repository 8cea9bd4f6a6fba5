package control

// The set, get, add, remove and clear verbs: ovs-vsctl's database
// commands, for the columns of OVS's Bridge and Port tables that xswitch
// has. A record is a bridge or a port by name; a column is a plain one or
// a key of a map column (other_config:forward-bpdu). As in OVSDB, a plain
// column holds a set of values, between a least and a most: rstp_enable
// exactly one, tag and vlan_mode at most one (none: []), trunks any
// number. Unlike OVS, which keeps any other_config key it is given, set
// refuses a key xswitch does not know: a misspelt key would otherwise be
// kept and silently do nothing.
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

	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/control/store"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/rstp"
	vswitch "github.com/xswitch/xswitch/switch"
)

// Columns.
const (
	columnRSTPEnable  = "rstp_enable"
	columnOtherConfig = "other_config"
	columnTag         = "tag"
	columnTrunks      = "trunks"
	columnVLANMode    = "vlan_mode"
)

// otherConfigKeys are the other_config keys of each table, with what
// checks a value; the rstp-* keys are checked again together, as the
// configuration the spanning tree gets (rstp.go).
var otherConfigKeys = map[string]map[string]func(string) error{
	api.TableBridge: {
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
	api.TablePort: {
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
	api.TableBridge: {columnRSTPEnable, columnOtherConfig},
	api.TablePort:   {columnOtherConfig, columnTag, columnTrunks, columnVLANMode},
}

// valueColumn is a column that holds values, not a map: a set of between
// min and max of them (max 0: no limit).
type valueColumn struct {
	min, max int
	// parse checks one value as written and returns the values it stands
	// for in their canonical form: itself, or a range's.
	parse func(string) ([]string, error)
	// toJSON is a canonical value as get gives it in JSON.
	toJSON func(string) any
	get    func(record) []string
	put    func(record, []string) // values parse gave, as many as min and max allow
}

// valueColumns are the value columns of each table.
var valueColumns = map[string]map[string]valueColumn{
	api.TableBridge: {
		columnRSTPEnable: {min: 1, max: 1,
			parse:  func(v string) ([]string, error) { return []string{v}, checkBool(v) },
			toJSON: func(v string) any { return v == "true" },
			get:    func(r record) []string { return []string{strconv.FormatBool(r.bridge.RSTPEnable)} },
			put:    func(r record, v []string) { r.bridge.RSTPEnable = v[0] == "true" },
		},
	},
	api.TablePort: {
		// OVS's columns of the port's VLANs (vswitch.VLANConfig).
		columnTag: {max: 1, parse: parseTag, toJSON: vlanJSON,
			get: func(r record) []string {
				if r.port.Tag == 0 { // none
					return nil
				}
				return formatVLANs([]uint16{r.port.Tag})
			},
			put: func(r record, v []string) {
				r.port.Tag = 0
				if len(v) > 0 {
					r.port.Tag = vlanNumbers(v)[0]
				}
			},
		},
		columnTrunks: {parse: parseTrunks, toJSON: vlanJSON,
			get: func(r record) []string { return formatVLANs(r.port.Trunks) },
			put: func(r record, v []string) { r.port.Trunks = vlanNumbers(v) },
		},
		columnVLANMode: {max: 1, parse: parseVLANModeValue, toJSON: func(v string) any { return v },
			get: func(r record) []string {
				if r.port.VLANMode == "" {
					return nil
				}
				return []string{r.port.VLANMode}
			},
			put: func(r record, v []string) {
				r.port.VLANMode = ""
				if len(v) > 0 {
					r.port.VLANMode = v[0]
				}
			},
		},
	},
}

// parseTag reads a tag: a VLAN from 1 to 4095. OVS's tag 0, an access
// port of untagged frames only, is vlan_mode access without a tag here,
// where a tag of 0 is none.
func parseTag(v string) ([]string, error) {
	n, err := strconv.ParseUint(v, 10, 16)
	switch {
	case err != nil || n > vswitch.MaxVLAN:
		return nil, fmt.Errorf("%q is not a VLAN from 1 to %d", v, vswitch.MaxVLAN)
	case n == 0:
		return nil, errors.New("0 is not supported: for a port of untagged frames only, clear tag and set vlan_mode=access")
	}
	return []string{strconv.FormatUint(n, 10)}, nil
}

// parseTrunks reads a trunk: a VLAN from 0 to 4095, or a range of them
// (10-20), as ovs-vsctl takes it.
func parseTrunks(v string) ([]string, error) {
	lo, hi, isRange := strings.Cut(v, "-")
	first, err := strconv.ParseUint(lo, 10, 16)
	last := first
	if err == nil && isRange {
		last, err = strconv.ParseUint(hi, 10, 16)
	}
	if err != nil || last > vswitch.MaxVLAN || first > last {
		return nil, fmt.Errorf("%q is not a VLAN from 0 to %d, nor a range of them (10-20)", v, vswitch.MaxVLAN)
	}
	out := make([]string, 0, last-first+1)
	for n := first; n <= last; n++ {
		out = append(out, strconv.FormatUint(n, 10))
	}
	return out, nil
}

// parseVLANModeValue reads a vlan_mode: one of the modes xswitch has,
// which are OVS's but dot1q-tunnel.
func parseVLANModeValue(v string) ([]string, error) {
	if v == "dot1q-tunnel" {
		return nil, errors.New("dot1q-tunnel (802.1ad QinQ) is not supported: xswitch has access, trunk, native-tagged and native-untagged")
	}
	if _, err := vswitch.ParseVLANMode(v); err != nil || v == "" {
		return nil, fmt.Errorf("%q is not one of access, trunk, native-tagged, native-untagged", v)
	}
	return []string{v}, nil
}

// formatVLANs are VLANs as a column's values.
func formatVLANs(vlans []uint16) []string {
	out := make([]string, 0, len(vlans))
	for _, v := range vlans {
		out = append(out, strconv.Itoa(int(v)))
	}
	return out
}

// vlanNumbers are a column's values (parseTag's or parseTrunks') as VLANs,
// in order; nil for none, as saving leaves an empty list out.
func vlanNumbers(values []string) []uint16 {
	var out []uint16
	for _, v := range values {
		n, _ := strconv.ParseUint(v, 10, 16) // parsed before
		out = append(out, uint16(n))
	}
	slices.Sort(out)
	return out
}

// vlanJSON is a VLAN value as JSON: a number.
func vlanJSON(v string) any {
	n, _ := strconv.Atoi(v) // parsed before
	return n
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
	bridge *store.BridgeConfig
	port   *api.PortConfig // nil for a bridge
	name   string
}

// findRecord finds the named row of table in c, for reading or changing.
func findRecord(c *store.Config, table, name string) (record, error) {
	t, err := lookupTable(table)
	if err != nil {
		return record{}, err
	}
	r := record{table: t, name: name}
	for i := range c.Bridges {
		bc := &c.Bridges[i]
		if t == api.TableBridge && bc.Name == name {
			r.bridge = bc
			return r, nil
		}
		if t == api.TablePort {
			if j := slices.IndexFunc(bc.Ports, func(pc api.PortConfig) bool { return pc.Name == name }); j >= 0 {
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
	for _, t := range []string{api.TableBridge, api.TablePort} {
		if strings.EqualFold(name, t) {
			return t, nil
		}
	}
	return "", fmt.Errorf("unknown table %q (xswitch has the tables %s and %s)", name, api.TableBridge, api.TablePort)
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

// setOtherConfig replaces r's other_config with a copy that edit changed:
// a configuration's maps are shared with its clones.
func (r record) setOtherConfig(edit func(map[string]string)) {
	m := r.otherConfig()
	next := maps.Clone(*m)
	if next == nil {
		next = map[string]string{}
	}
	edit(next)
	if len(next) == 0 {
		next = nil
	}
	*m = next
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
	if column != columnOtherConfig {
		values, err := parseValues(column, valueColumns[r.table][column], value)
		if err != nil {
			return err
		}
		return r.putValues(column, values)
	}
	if key == "" {
		return fmt.Errorf("setting the whole %s column is not supported: set one key at a time, as %s:KEY=VALUE", column, column)
	}
	// A value may be quoted, as ovs-vsctl prints and accepts it.
	if len(value) >= 2 && value[0] == '"' {
		if value, err = strconv.Unquote(value); err != nil {
			return fmt.Errorf("%s: bad quoted value: %v", lhs, err)
		}
	}
	if err := otherConfigKeys[r.table][key](value); err != nil {
		return fmt.Errorf("%s:%s: %w", column, key, err)
	}
	r.setOtherConfig(func(m map[string]string) { m[key] = value })
	return nil
}

// putValues makes values the value column's, if it holds so many.
func (r record) putValues(column string, values []string) error {
	vc := valueColumns[r.table][column]
	if n := len(values); n < vc.min || vc.max > 0 && n > vc.max {
		what := "at most one value"
		switch {
		case vc.min == vc.max:
			what = "exactly one value"
		case vc.max == 0:
			what = "any number of values"
		}
		return fmt.Errorf("%s holds %s, not %d", column, what, n)
	}
	vc.put(r, values)
	return nil
}

// add adds values to r's value column, or key=value pairs to its map
// column where the key is not there yet, as ovs-vsctl add does.
func (r record) add(column string, args []string) error {
	c, _, err := r.column(column)
	if err != nil {
		return err
	}
	if c == columnOtherConfig {
		for _, a := range args {
			key, value, ok := strings.Cut(a, "=")
			if !ok {
				return fmt.Errorf("%q: add to %s takes KEY=VALUE", a, c)
			}
			if _, there := (*r.otherConfig())[key]; there {
				continue
			}
			if err := r.set(c + ":" + key + "=" + value); err != nil {
				return err
			}
		}
		return nil
	}
	vc := valueColumns[r.table][c]
	values := vc.get(r)
	for _, a := range args {
		more, err := parseValues(c, vc, a)
		if err != nil {
			return err
		}
		for _, v := range more {
			if !slices.Contains(values, v) {
				values = append(values, v)
			}
		}
	}
	return r.putValues(c, values)
}

// remove deletes values from r's value column, or keys (or KEY=VALUE
// pairs, only where the key has that value) from its map column, as
// ovs-vsctl remove does. What is not there is no error.
func (r record) remove(column string, args []string) error {
	c, _, err := r.column(column)
	if err != nil {
		return err
	}
	if c == columnOtherConfig {
		r.setOtherConfig(func(m map[string]string) {
			for _, a := range args {
				key, value, pair := strings.Cut(a, "=")
				if !pair || m[key] == value {
					delete(m, key)
				}
			}
		})
		return nil
	}
	vc := valueColumns[r.table][c]
	values := vc.get(r)
	for _, a := range args {
		gone, err := parseValues(c, vc, a)
		if err != nil {
			return err
		}
		values = slices.DeleteFunc(values, func(v string) bool { return slices.Contains(gone, v) })
	}
	return r.putValues(c, values)
}

// clear empties r's column, as ovs-vsctl clear does: a map column, or a
// value column that may be empty.
func (r record) clear(column string) error {
	c, _, err := r.column(column)
	if err != nil {
		return err
	}
	if c == columnOtherConfig {
		*r.otherConfig() = nil
		return nil
	}
	if valueColumns[r.table][c].min > 0 {
		return fmt.Errorf("%s cannot be cleared: it always holds a value", c)
	}
	return r.putValues(c, nil)
}

// get returns the value of "column" or "column:key" as JSON: a value
// column's as a boolean, a number or a string, or a list of them for one
// that may hold several, or none ([]); a map column's as an object of
// strings, and one of its keys as a string.
func (r record) get(text string) (json.RawMessage, error) {
	column, key, err := r.column(text)
	if err != nil {
		return nil, err
	}
	var v any
	switch {
	case column != columnOtherConfig:
		vc := valueColumns[r.table][column]
		values := []any{}
		for _, s := range vc.get(r) {
			values = append(values, vc.toJSON(s))
		}
		v = values
		if vc.max == 1 && len(values) == 1 {
			v = values[0]
		}
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

// parseValues reads a value column's values as ovs-vsctl takes them: one
// value, or several separated by commas or spaces, in brackets or not;
// [] for none. A string may be quoted, as in JSON.
func parseValues(column string, vc valueColumn, text string) ([]string, error) {
	text = strings.TrimSpace(text)
	if strings.HasPrefix(text, "[") {
		if !strings.HasSuffix(text, "]") {
			return nil, fmt.Errorf("%s: %q opens a [ that it does not close", column, text)
		}
		text = text[1 : len(text)-1]
	}
	var values []string
	for text = strings.TrimLeft(text, " ,"); text != ""; text = strings.TrimLeft(text, " ,") {
		atom := text[:strings.IndexAny(text+" ", " ,")]
		if text[0] == '"' {
			end := quotedEnd(text)
			if end < 0 {
				return nil, fmt.Errorf("%s: %s has no closing quote", column, text)
			}
			var err error
			if atom, err = strconv.Unquote(text[:end]); err != nil {
				return nil, fmt.Errorf("%s: bad quoted value %s: %v", column, text[:end], err)
			}
			text = text[end:]
		} else {
			text = text[len(atom):]
		}
		each, err := vc.parse(atom)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", column, err)
		}
		for _, v := range each {
			if slices.Contains(values, v) {
				return nil, fmt.Errorf("%s: %s is given twice", column, v)
			}
			values = append(values, v)
		}
	}
	return values, nil
}

// quotedEnd is the index after the closing quote of the JSON string text
// starts with, or -1.
func quotedEnd(text string) int {
	for i := 1; i < len(text); i++ {
		switch text[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// validate checks the whole record as it would run.
func (r record) validate() error {
	if r.port != nil {
		_, err := portOptions(*r.port)
		return err
	}
	_, err := bridgeSettingsOf(r.bridge)
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
	meters                          *flow.MeterTable
}

// bridgeSettingsOf parses bc's columns, or says what is wrong with them.
// The spanning tree's configuration is checked even while it is off, so
// that turning it on cannot fail.
func bridgeSettingsOf(bc *store.BridgeConfig) (bridgeSettings, error) {
	var s bridgeSettings
	if err := checkOtherConfig(api.TableBridge, bc.OtherConfig); err != nil {
		return s, fmt.Errorf("bridge %s: %w", bc.Name, err)
	}
	s.forwardBPDU = bc.OtherConfig["forward-bpdu"] == "true"
	for key, to := range map[string]*uint32{"controller-rate-limit": &s.controllerRate, "controller-burst-limit": &s.controllerBurst} {
		if v, ok := bc.OtherConfig[key]; ok {
			n, _ := strconv.ParseUint(v, 10, 32) // checked above
			*to = uint32(n)
		}
	}
	cfg, err := rstpBridgeConfig(bc)
	if err != nil {
		return s, fmt.Errorf("bridge %s: %w", bc.Name, err)
	}
	if bc.RSTPEnable {
		s.rstp = &cfg
	}
	if s.meters, err = bc.MeterTable(); err != nil {
		return s, fmt.Errorf("bridge %s: %w", bc.Name, err)
	}
	return s, nil
}

// apply makes b run as s says.
func (s bridgeSettings) apply(b *vswitch.Bridge) error {
	b.SetForwardBPDU(s.forwardBPDU)
	b.SetControllerRateLimit(s.controllerRate, s.controllerBurst)
	return errors.Join(b.SetRSTP(s.rstp), b.SetMeters(s.meters))
}

// addOtherConfig adds what pc's other_config configures to opts.
func addPortOtherConfig(pc api.PortConfig, opts *vswitch.PortOptions) error {
	if err := checkOtherConfig(api.TablePort, pc.OtherConfig); err != nil {
		return fmt.Errorf("port %q: %w", pc.Name, err)
	}
	if v, ok := pc.OtherConfig["storm-limit"]; ok {
		opts.StormLimit, _ = parseStormLimit(v) // checked above
	}
	opts.RSTP = rstpPortConfig(pc)
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

// addValues is the add verb.
func (d *Daemon) addValues(table, name string, columnAndValues []string) error {
	if len(columnAndValues) < 2 {
		return errors.New("add needs a column and at least one value")
	}
	return d.changeRecord(table, name, func(r record) error { return r.add(columnAndValues[0], columnAndValues[1:]) })
}

// removeValues is the remove verb.
func (d *Daemon) removeValues(table, name string, columnAndValues []string) error {
	if len(columnAndValues) < 2 {
		return errors.New("remove needs a column and at least one key or value")
	}
	return d.changeRecord(table, name, func(r record) error { return r.remove(columnAndValues[0], columnAndValues[1:]) })
}

// clearColumns is the clear verb.
func (d *Daemon) clearColumns(table, name string, columns []string) error {
	if len(columns) == 0 {
		return errors.New("clear needs at least one column")
	}
	return d.changeRecord(table, name, func(r record) error {
		for _, c := range columns {
			if err := r.clear(c); err != nil {
				return err
			}
		}
		return nil
	})
}

// changeRecord changes one record of a copy of the configuration, checks
// it, saves it and applies it.
func (d *Daemon) changeRecord(table, name string, change func(record) error) error {
	next := d.cfg.Clone()
	r, err := findRecord(next, table, name)
	if err != nil {
		return err
	}
	var was api.PortConfig // a change replaces a port's lists, never edits them
	if r.port != nil {
		was = *r.port
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
		s, _ := bridgeSettingsOf(r.bridge) // validated above
		err = s.apply(b)
	} else if _, down := d.down[r.port.Name]; !down {
		opts, _ := runningOptions(*r.port) // validated above
		err = errors.Join(b.SetStormLimit(r.port.Name, opts.StormLimit), b.SetPortRSTP(r.port.Name, opts.RSTP))
		if !sameVLANs(was, *r.port) {
			err = errors.Join(err, b.SetPortVLAN(r.port.Name, opts.VLAN))
		}
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
