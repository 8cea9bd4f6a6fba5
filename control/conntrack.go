package control

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xswitch/xswitch/conntrack"
	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/control/store"
	"github.com/xswitch/xswitch/header"
)

// The daemon's connection tracker: one table for all its bridges, as OVS
// has one per datapath, swept every second; its settings (maxconns, zone
// limits, TCP sequence checking, zones' timeout policies) are part of the
// configuration, and come back with a restart; its connections do not.
// Its verbs are ovs-appctl's dpctl/*conntrack* and dpctl/ct-*, each of
// which may name a bridge, as OVS's name a datapath: the bridge must
// exist, and the verb still reads or changes the one table; and
// ovs-vsctl's add-zone-tp, del-zone-tp and list-zone-tp, which name a
// datapath type.

// sweepInterval is how often the daemon frees the room of connections
// past their time; they are gone for packets the moment their time
// passes.
const sweepInterval = time.Second

// Conntrack is the daemon's connection tracker, which its bridges share.
func (d *Daemon) Conntrack() *conntrack.Tracker { return d.conntrack }

// applyConntrackConfig makes the tracker's settings c's; nil: the
// defaults. Under --ovsdb the zones' timeout policies are the database's
// (ovsdb.go), not c's.
func (d *Daemon) applyConntrackConfig(c *store.ConntrackConfig) {
	t := d.conntrack
	if c == nil {
		c = &store.ConntrackConfig{}
	}
	if d.ovsdb == "" {
		policies := map[uint16]conntrack.Timeouts{}
		for _, z := range c.ZoneTimeouts {
			policies[z.Zone], _ = zonePolicy(z.Timeouts)
		}
		t.SetZoneTimeouts(policies)
	}
	maxConns := uint32(conntrack.DefaultMaxConns)
	if c.MaxConns != nil {
		maxConns = *c.MaxConns
	}
	t.SetMaxConns(maxConns)
	t.SetTCPSeqCheck(!c.TCPSeqCheckOff)
	t.SetDefaultZoneLimit(c.DefaultLimit)
	_, current := t.ZoneLimits()
	for _, z := range current {
		if !slices.ContainsFunc(c.ZoneLimits, func(l store.ZoneLimit) bool { return l.Zone == z.Zone }) {
			t.DeleteZoneLimit(z.Zone)
		}
	}
	for _, l := range c.ZoneLimits {
		t.SetZoneLimit(l.Zone, l.Limit)
	}
}

// validateConntrackConfig checks saved conntrack settings as the verbs
// check theirs.
func validateConntrackConfig(c *store.ConntrackConfig) error {
	if c == nil {
		return nil
	}
	for i := 1; i < len(c.ZoneLimits); i++ {
		if c.ZoneLimits[i].Zone <= c.ZoneLimits[i-1].Zone {
			return fmt.Errorf("conntrack zone limits not in zone order, or zone %d twice", c.ZoneLimits[i].Zone)
		}
	}
	for i, z := range c.ZoneTimeouts {
		if i > 0 && z.Zone <= c.ZoneTimeouts[i-1].Zone {
			return fmt.Errorf("conntrack zone timeout policies not in zone order, or zone %d twice", z.Zone)
		}
		if _, err := zonePolicy(z.Timeouts); err != nil {
			return fmt.Errorf("zone %d: %w", z.Zone, err)
		}
	}
	return nil
}

// zonePolicy reads a zone's timeout policy, seconds by OVS's attribute
// names.
func zonePolicy(timeouts map[string]uint32) (conntrack.Timeouts, error) {
	var p conntrack.Timeouts
	for _, key := range slices.Sorted(maps.Keys(timeouts)) {
		if !p.Set(key, time.Duration(timeouts[key])*time.Second) {
			return p, fmt.Errorf("timeout policy key %q: not one of OVS's userspace datapath (%s)", key, strings.Join(timeoutKeys(), ", "))
		}
	}
	return p, nil
}

// timeoutKeys are the timeout policy keys there are, in OVS's order.
func timeoutKeys() []string {
	var keys []string
	for _, a := range conntrack.DefaultTimeouts.Attributes() {
		keys = append(keys, a.Key)
	}
	return keys
}

// parseZoneTP reads add-zone-tp's and del-zone-tp's arguments: the
// datapath, zone=N and, with policy, the policy's key=seconds pairs.
func parseZoneTP(verb string, args []string, policy bool) (zone uint16, timeouts map[string]uint32, err error) {
	if len(args) < 2 || !policy && len(args) > 2 {
		usage := "DATAPATH zone=N"
		if policy {
			usage += " [KEY=SECONDS]..."
		}
		return 0, nil, fmt.Errorf("%s takes %s, not %s", verb, usage, quoteArgs(args))
	}
	if err := checkDatapath(args[0]); err != nil {
		return 0, nil, err
	}
	v, ok := strings.CutPrefix(args[1], "zone=")
	if !ok {
		return 0, nil, fmt.Errorf("%s: %q is not zone=N", verb, args[1])
	}
	if zone, err = parseZone(v); err != nil {
		return 0, nil, err
	}
	timeouts = map[string]uint32{}
	for _, arg := range args[2:] {
		key, v, _ := strings.Cut(arg, "=")
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return 0, nil, fmt.Errorf("%s: %q is not KEY=SECONDS", verb, arg)
		}
		timeouts[key] = uint32(n)
	}
	if _, err := zonePolicy(timeouts); err != nil {
		return 0, nil, err
	}
	return zone, timeouts, nil
}

// checkDatapath checks a zone-tp verb's datapath, which ovs-vsctl names
// as ovs-vswitchd's datapath types: xswitch has one datapath for both.
func checkDatapath(dp string) error {
	if dp != "netdev" && dp != "system" {
		return fmt.Errorf("datapath %s does not exist (xswitch has one datapath, netdev or system)", dp)
	}
	return nil
}

// checkConntrackBridge checks that bridge, if named, exists.
func (d *Daemon) checkConntrackBridge(bridge string) error {
	if bridge == "" {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	_, err := d.bridge(bridge)
	return err
}

// conntrackRead runs the conntrack verbs that change no setting: the
// dumps, the counts and flush-conntrack. They take the verb lock only to
// check the bridge: a dump of millions of connections holds up no other
// verb, and the tracker serves them while the bridges forward.
func (d *Daemon) conntrackRead(req api.Request) (*api.ConntrackStatus, error) {
	if err := d.checkConntrackBridge(req.Bridge); err != nil {
		return nil, err
	}
	t, now := d.conntrack, conntrack.Now()
	switch req.Verb {
	case api.VerbDumpConntrack, api.VerbCTStatsShow:
		f, err := zoneFilter(req.Verb, req.Args)
		if err != nil {
			return nil, err
		}
		entries := t.Dump(&f, now)
		if req.Verb == api.VerbCTStatsShow {
			return &api.ConntrackStatus{Stats: conntrackStats(entries, req.More)}, nil
		}
		out := make([]api.ConntrackEntry, len(entries))
		for i := range entries {
			out[i] = conntrackEntry(&entries[i], req.More, req.Statistics)
		}
		return &api.ConntrackStatus{Entries: out}, nil
	case api.VerbFlushConntrack:
		f, err := conntrack.ParseFlushArgs(req.Args)
		if err != nil {
			return nil, fmt.Errorf("flush-conntrack %s: %w", quoteArgs(req.Args), err)
		}
		n := t.Flush(&f, now)
		d.log.Info("connections flushed", "count", n, "args", req.Args)
		return &api.ConntrackStatus{}, nil
	case api.VerbListZoneTP:
		if len(req.Args) != 1 {
			return nil, fmt.Errorf("list-zone-tp takes DATAPATH, not %s", quoteArgs(req.Args))
		}
		if err := checkDatapath(req.Args[0]); err != nil {
			return nil, err
		}
		policies := t.ZoneTimeouts()
		out := &api.ConntrackStatus{ZoneTimeouts: []api.ZoneTimeouts{}}
		for _, z := range slices.Sorted(maps.Keys(policies)) {
			zt := api.ZoneTimeouts{Zone: z, Timeouts: map[string]uint32{}}
			for _, a := range policies[z].Attributes() {
				zt.Timeouts[a.Key] = uint32(a.Timeout / time.Second)
			}
			out.ZoneTimeouts = append(out.ZoneTimeouts, zt)
		}
		return out, nil
	case api.VerbCTGetLimits:
		var zones []uint16
		for _, arg := range req.Args {
			z, err := parseZoneList(arg)
			if err != nil {
				return nil, err
			}
			zones = append(zones, z...)
		}
		def, limits := t.ZoneLimits(zones...)
		out := &api.ConntrackLimits{Text: conntrack.FormatZoneLimits(def, limits), Default: def}
		for _, l := range limits {
			out.Zones = append(out.Zones, api.ConntrackZoneLimit{Zone: l.Zone, Limit: l.Limit, Count: l.Count})
		}
		return &api.ConntrackStatus{Limits: out}, nil
	}
	if len(req.Args) > 0 {
		return nil, fmt.Errorf("%s takes no argument but the bridge, not %s", req.Verb, quoteArgs(req.Args))
	}
	switch req.Verb {
	case api.VerbCTGetMaxConns:
		return &api.ConntrackStatus{MaxConns: t.MaxConns()}, nil
	case api.VerbCTGetNConns:
		return &api.ConntrackStatus{NConns: uint32(t.Count())}, nil
	case api.VerbCTGetTCPSeqChk:
		return &api.ConntrackStatus{TCPSeqCheck: t.TCPSeqCheck()}, nil
	}
	return nil, fmt.Errorf("unknown verb %q", req.Verb)
}

// conntrackSetting runs, under the verb lock, the conntrack verbs that
// change the tracker's settings: the change is saved, then made.
func (d *Daemon) conntrackSetting(req api.Request) error {
	if req.Bridge != "" {
		if _, err := d.bridge(req.Bridge); err != nil {
			return err
		}
	}
	var next store.ConntrackConfig
	if d.cfg.Conntrack != nil {
		next = *d.cfg.Conntrack
	}
	// The saved slices are never changed in place.
	limits := map[uint16]uint32{}
	for _, l := range next.ZoneLimits {
		limits[l.Zone] = l.Limit
	}
	policies := map[uint16]map[string]uint32{}
	for _, z := range next.ZoneTimeouts {
		policies[z.Zone] = z.Timeouts
	}
	switch req.Verb {
	case api.VerbAddZoneTP:
		zone, timeouts, err := parseZoneTP(req.Verb, req.Args, true)
		switch _, had := policies[zone]; {
		case err != nil:
			return err
		case had && req.MayExist:
			return nil
		case had:
			return fmt.Errorf("zone id %d already exists", zone)
		}
		policies[zone] = timeouts
	case api.VerbDelZoneTP:
		zone, _, err := parseZoneTP(req.Verb, req.Args, false)
		switch _, had := policies[zone]; {
		case err != nil:
			return err
		case !had && req.IfExists:
			return nil
		case !had:
			return fmt.Errorf("zone id %d does not exist", zone)
		}
		delete(policies, zone)
	case api.VerbCTSetMaxConns:
		if len(req.Args) != 1 {
			return fmt.Errorf("ct-set-maxconns takes one number, not %s", quoteArgs(req.Args))
		}
		n, err := parseCount("maxconns", req.Args[0])
		if err != nil {
			return err
		}
		next.MaxConns = &n
	case api.VerbCTEnableTCPSeqChk, api.VerbCTDisableTCPSeqChk:
		if len(req.Args) > 0 {
			return fmt.Errorf("%s takes no argument but the bridge, not %s", req.Verb, quoteArgs(req.Args))
		}
		next.TCPSeqCheckOff = req.Verb == api.VerbCTDisableTCPSeqChk
	case api.VerbCTSetLimits:
		if len(req.Args) == 0 {
			return errors.New("ct-set-limits needs default=N or zone=N,limit=N")
		}
		for _, arg := range req.Args {
			if v, ok := strings.CutPrefix(arg, "default="); ok {
				n, err := parseCount("default limit", v)
				if err != nil {
					return err
				}
				next.DefaultLimit = n
				continue
			}
			zone, limit, err := parseZoneLimit(arg)
			if err != nil {
				return err
			}
			limits[zone] = limit
		}
	case api.VerbCTDelLimits:
		if len(req.Args) == 0 {
			return errors.New("ct-del-limits needs default or zone=N[,N...]")
		}
		for _, arg := range req.Args {
			if arg == "default" {
				next.DefaultLimit = 0
				continue
			}
			zones, err := parseZoneList(arg)
			if err != nil {
				return err
			}
			for _, z := range zones {
				delete(limits, z)
			}
		}
	default:
		return fmt.Errorf("unknown verb %q", req.Verb)
	}
	next.ZoneLimits, next.ZoneTimeouts = nil, nil
	for _, z := range slices.Sorted(maps.Keys(limits)) {
		next.ZoneLimits = append(next.ZoneLimits, store.ZoneLimit{Zone: z, Limit: limits[z]})
	}
	for _, z := range slices.Sorted(maps.Keys(policies)) {
		next.ZoneTimeouts = append(next.ZoneTimeouts, api.ZoneTimeouts{Zone: z, Timeouts: policies[z]})
	}
	cfg := d.cfg.Clone()
	cfg.Conntrack = &next
	if next.IsDefault() {
		cfg.Conntrack = nil
	}
	if err := d.commit(cfg); err != nil {
		return err
	}
	d.applyConntrackConfig(cfg.Conntrack)
	d.log.Info("conntrack settings changed", "verb", req.Verb, "args", req.Args)
	return nil
}

// zoneFilter reads dump-conntrack's and ct-stats-show's [zone=N].
func zoneFilter(verb string, args []string) (conntrack.Filter, error) {
	var f conntrack.Filter
	switch {
	case len(args) > 1:
		return f, fmt.Errorf("%s takes [zone=N], not %s", verb, quoteArgs(args))
	case len(args) == 1:
		v, ok := strings.CutPrefix(args[0], "zone=")
		if !ok {
			return f, fmt.Errorf("%s takes [zone=N], not %s", verb, quoteArgs(args))
		}
		zone, err := parseZone(v)
		if err != nil {
			return f, err
		}
		f.Zone = &zone
	}
	return f, nil
}

// parseZone reads a zone, 0 to 65535.
func parseZone(s string) (uint16, error) {
	z, err := strconv.ParseUint(s, 10, 16)
	if err != nil {
		return 0, fmt.Errorf("bad zone %q: want a number 0-%d", s, math.MaxUint16)
	}
	return uint16(z), nil
}

// parseCount reads what, a count of connections: maxconns or a limit.
func parseCount(what, s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("bad %s %q: want a number 0-%d", what, s, uint32(math.MaxUint32))
	}
	return uint32(n), nil
}

// parseZoneLimit reads ct-set-limits' zone=N,limit=N.
func parseZoneLimit(arg string) (zone uint16, limit uint32, err error) {
	var haveZone, haveLimit bool
	for kv := range strings.SplitSeq(arg, ",") {
		key, value, _ := strings.Cut(kv, "=")
		switch {
		case key == "zone" && !haveZone:
			zone, err = parseZone(value)
			haveZone = true
		case key == "limit" && !haveLimit:
			limit, err = parseCount("limit", value)
			haveLimit = true
		default:
			err = errors.New("want zone=N,limit=N")
		}
		if err != nil {
			return 0, 0, fmt.Errorf("zone limit %q: %w", arg, err)
		}
	}
	if !haveZone || !haveLimit {
		return 0, 0, fmt.Errorf("zone limit %q: want zone=N,limit=N", arg)
	}
	return zone, limit, nil
}

// parseZoneList reads ct-get-limits' and ct-del-limits' zone=N[,N]...
func parseZoneList(arg string) ([]uint16, error) {
	list, ok := strings.CutPrefix(arg, "zone=")
	if !ok {
		return nil, fmt.Errorf("bad argument %q: want zone=N[,N...]", arg)
	}
	var zones []uint16
	for v := range strings.SplitSeq(list, ",") {
		z, err := parseZone(v)
		if err != nil {
			return nil, err
		}
		zones = append(zones, z)
	}
	return zones, nil
}

// quoteArgs writes args as a shell would take them back.
func quoteArgs(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = strconv.Quote(a)
	}
	return strings.Join(quoted, " ")
}

// conntrackEntry is e as dump-conntrack shows it; more and stats are its
// -m and -s.
func conntrackEntry(e *conntrack.Entry, more, stats bool) api.ConntrackEntry {
	out := api.ConntrackEntry{Text: e.Format(more, stats), Zone: e.Orig.Zone, IPProto: e.Orig.Proto,
		Orig: conntrackTuple(&e.Orig), Reply: conntrackTuple(&e.Reply), Timeout: e.Timeout, Mark: e.Mark}
	if !e.Label.IsZero() {
		out.Labels = e.Label.String()
	}
	if e.Orig.Proto == header.ProtoTCP {
		out.TCP = &api.ConntrackTCP{State: e.State().String(), StateOrig: e.TCP[0].State.String(), StateReply: e.TCP[1].State.String()}
	}
	return out
}

func conntrackTuple(t *conntrack.Tuple) api.ConntrackTuple {
	out := api.ConntrackTuple{Src: t.Src.Addr.IP(t.IPv6).String(), Dst: t.Dst.Addr.IP(t.IPv6).String()}
	if t.Proto == header.ProtoICMP || t.Proto == header.ProtoICMPv6 {
		out.ICMP = &api.ConntrackICMP{ID: t.Src.Port, Type: t.Src.ICMPType, Code: t.Src.ICMPCode}
	} else {
		out.SrcPort, out.DstPort = t.Src.Port, t.Dst.Port
	}
	return out
}

// conntrackStats are ct-stats-show's counts of entries; more is its -m.
func conntrackStats(entries []conntrack.Entry, more bool) *api.ConntrackStats {
	s := conntrack.CountConns(entries)
	out := &api.ConntrackStats{Text: s.Format(more), Total: s.Total, Protocols: map[string]int{}, TCPStates: map[string]int{}}
	for _, p := range s.Protocols {
		out.Protocols[p.Name] = p.Count
	}
	for _, st := range s.TCPStates {
		out.TCPStates[st.State.String()] = st.Count
	}
	return out
}
