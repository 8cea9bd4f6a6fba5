package flow

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// The connection tracking actions, as ovs-actions(7) writes them:
//
//	ct(commit,zone=5,table=1)   ct(zone=NXM_NX_REG0[0..15],nat)   ct_clear
//	ct(commit,nat(src=10.0.0.1-10.0.0.9:1024-65535,random),exec(set_field:1->ct_mark))
//
// ct()'s arguments are many and rare, so an Action holds them behind one
// pointer (Action.CT), to a Conntrack that does not change once made.

// Conntrack is what a ct() does: an ActCT's CT. CTAction checks it, and
// it does not change after: every copy of the action shares it.
type Conntrack struct {
	// Commit has the tracker keep the frame's connection; Force, with
	// it, ends a connection of the other direction first, to commit one
	// in this frame's.
	Commit, Force bool
	// Zone is the zone the frame is tracked in, unless ZoneSrc is set:
	// then it is the 16 bits of that field from ZoneOfs.
	Zone    uint16
	ZoneSrc *Field
	ZoneOfs uint8
	// Table is where a copy of the frame goes on, its connection's fields
	// filled in; CTNoTable: nowhere.
	Table uint8
	// Alg is the application layer gateway that finds the connections
	// related to this one in what it carries: ALGFTP, ALGTFTP, or 0.
	Alg uint16
	// NAT, when not nil, is the connection's address translation.
	NAT *NAT
	// Exec are the writes of the connection's ct_mark and ct_label that
	// the commit makes: ActSetField, ActLoad and ActMove to them.
	Exec []Action
}

// CTNoTable is a Conntrack's Table that sends no copy on (OVS's
// NX_CT_RECIRC_NONE).
const CTNoTable = 255

// The application layer gateways of ct(alg=), by their protocols' ports.
const (
	ALGFTP  = 21
	ALGTFTP = 69
)

// NAT is the address translation of a connection that ct(nat) commits,
// or applies when the connection has one.
type NAT struct {
	// Src or Dst translates the source or the destination of the
	// connection's original direction (the other for replies); neither
	// (a bare nat) applies what the connection has.
	Src, Dst bool
	// Min to Max are the addresses to translate to, Max invalid for Min
	// alone, Min invalid for no range; MinPort to MaxPort are the ports,
	// which only follow addresses, 0 for none, MaxPort 0 for MinPort
	// alone. OpenFlow may give a Max equal to Min, the flow syntax not.
	Min, Max         netip.Addr
	MinPort, MaxPort uint16
	// Persistent keeps a client's address the same across connections;
	// Hash and Random say how the port is chosen.
	Persistent, Hash, Random bool
}

// bare reports whether n is a nat without arguments, which ct() takes
// without commit.
func (n *NAT) bare() bool { return *n == NAT{} }

// CTAction is the action ct() with c's arguments, and what it needs of
// the match, as Open vSwitch checks them (parse_CT, decode_NXAST_RAW_CT,
// check_CT): an IP frame; one that is not invalid, to commit it; TCP for
// the FTP gateway and UDP for TFTP's; a NAT range of the frame's family;
// and what the zone's field and the writes' sources need. c must not
// change after.
func CTAction(c *Conntrack) (Action, *Prerequisite, error) {
	switch {
	case c.Force && !c.Commit:
		return Action{}, nil, errors.New(`ct: "force" flag requires "commit" flag`)
	case !c.Commit && (len(c.Exec) > 0 || c.NAT != nil && !c.NAT.bare()):
		return Action{}, nil, errors.New("ct: exec() and a nat with arguments require commit")
	case c.ZoneSrc != nil && uint(c.ZoneOfs)+16 > c.ZoneSrc.Bits:
		return Action{}, nil, fmt.Errorf("ct: zone %s[%d..%d]: a zone is 16 bits of a field", c.ZoneSrc.Name, c.ZoneOfs, c.ZoneOfs+15)
	case c.Alg != 0 && c.Alg != ALGFTP && c.Alg != ALGTFTP:
		return Action{}, nil, fmt.Errorf("ct: no gateway for alg %d (ftp and tftp have one)", c.Alg)
	}
	if c.NAT != nil {
		if err := c.NAT.check(); err != nil {
			return Action{}, nil, err
		}
	}
	needs := []*Prerequisite{actionNeedsIP}
	if c.Commit {
		needs = append(needs, actionNeedsNotInvalid)
	}
	switch c.Alg {
	case ALGFTP:
		needs = append(needs, actionNeedsTCP)
	case ALGTFTP:
		needs = append(needs, actionNeedsUDP)
	}
	if c.ZoneSrc != nil {
		needs = append(needs, c.ZoneSrc.actionNeeds())
	}
	if c.NAT != nil && c.NAT.Min.Is4() {
		needs = append(needs, actionNeedsIPv4)
	}
	if c.NAT != nil && c.NAT.Min.Is6() {
		needs = append(needs, actionNeedsIPv6)
	}
	for _, a := range c.Exec {
		if err := CheckPlace(a, true); err != nil {
			return Action{}, nil, err
		}
		if a.Type == ActMove {
			needs = append(needs, a.Src.actionNeeds())
		}
	}
	return Action{Type: ActCT, CT: c}, allNeeded(needs...), nil
}

// actionNeedsNotInvalid is what ct(commit) needs: a frame the match does
// not say is invalid, which has no connection to commit.
var actionNeedsNotInvalid = &Prerequisite{holds: func(m *Match) bool { return m.Key.CT.State&CTInvalid == 0 },
	what: "a match that is not on invalid connections (ct_state=+inv) to commit"}

// ErrCTFieldOutsideCT is the error of a write of ct_mark or ct_label
// outside a ct()'s exec(): errors.Is finds it.
var ErrCTFieldOutsideCT = errors.New("cannot set CT fields outside of ct action")

// CheckPlace checks that a may be where it is, in a ct()'s exec()
// (inCT) or not: writes of ct_mark and ct_label go there, and nothing
// else, as in OVS, whose words the errors are.
func CheckPlace(a Action, inCT bool) error {
	writes := a.Type == ActSetField || a.Type == ActLoad || a.Type == ActMove
	switch {
	case writes && a.Field.CTOnly && !inCT:
		return fmt.Errorf("%s: %w", a.Field.Name, ErrCTFieldOutsideCT)
	case !inCT || writes && a.Field.CTOnly:
		return nil
	case a.Field != nil:
		return fmt.Errorf("ct action doesn't support nested modification of %s", a.Field.Name)
	}
	name, _, _ := strings.Cut(actionText(a), "(")
	name, _, _ = strings.Cut(name, ":")
	return fmt.Errorf("ct action doesn't support nested action %s", name)
}

// ctAction parses ct's arguments, in any order, for a rule whose match is
// m: commit, force, table=N, zone=N or zone=FIELD[a..b], alg=ftp or tftp,
// nat or nat(...), exec(ACTIONS). As in ovs-ofctl, a value may follow
// "=", ":" or be in parentheses, and the last table, zone and alg given
// count.
func ctAction(arg string, m *Match, ports PortNames) (Action, *Prerequisite, error) {
	items, err := splitActionList(arg)
	if err != nil {
		return Action{}, nil, err
	}
	c := &Conntrack{Table: CTNoTable}
	for _, item := range items {
		key, value, hasValue, err := splitAction(item)
		if err != nil {
			return Action{}, nil, fmt.Errorf("ct: %w", err)
		}
		switch {
		case (key == "commit" || key == "force") && hasValue:
			return Action{}, nil, fmt.Errorf("ct: %s takes no value", key)
		case (key == "table" || key == "zone" || key == "alg") && !hasValue:
			return Action{}, nil, fmt.Errorf("ct: %s needs a value (%s=VALUE)", key, key)
		}
		switch key {
		case "commit":
			c.Commit = true
		case "force":
			c.Force = true
		case "table":
			if value == strconv.Itoa(CTNoTable) {
				return Action{}, nil, fmt.Errorf("ct: invalid table %#x", CTNoTable)
			}
			t, err := tableFromText("ct table", value, NumTables-1)
			if err != nil {
				return Action{}, nil, err
			}
			c.Table = uint8(t)
		case "zone":
			if err := c.parseZone(value, m); err != nil {
				return Action{}, nil, err
			}
		case "alg":
			switch value {
			case "ftp":
				c.Alg = ALGFTP
			case "tftp":
				c.Alg = ALGTFTP
			default:
				return Action{}, nil, fmt.Errorf("ct: invalid conntrack helper %q (want ftp or tftp)", value)
			}
		case "nat":
			if err := c.addNAT(value); err != nil {
				return Action{}, nil, err
			}
		case "exec":
			if err := c.parseExec(value, m, ports); err != nil {
				return Action{}, nil, err
			}
		default:
			return Action{}, nil, fmt.Errorf("invalid argument to \"ct\" action: %q (want commit, force, table, zone, alg, nat or exec)", key)
		}
	}
	return CTAction(c)
}

// parseZone reads ct's zone: a number, or 16 bits of a field.
func (c *Conntrack) parseZone(text string, m *Match) error {
	if text != "" && text[0] >= '0' && text[0] <= '9' {
		n, err := numberFromText("ct zone", text, 0xffff)
		c.Zone, c.ZoneSrc, c.ZoneOfs = uint16(n), nil, 0
		return err
	}
	sf, err := parseSubfield(text, m)
	switch {
	case err != nil:
		return fmt.Errorf("ct: zone: %w", err)
	case sf.nbits != 16:
		return fmt.Errorf("ct: zone %s: %d bits, and a zone is 16", text, sf.nbits)
	}
	c.Zone, c.ZoneSrc, c.ZoneOfs = 0, sf.field, uint8(sf.ofs)
	return nil
}

// addNAT reads a nat argument of ct: a ct has one.
func (c *Conntrack) addNAT(text string) error {
	if c.NAT != nil {
		return errors.New("ct: nat given twice")
	}
	var err error
	c.NAT, err = natAction(text)
	return err
}

// parseExec reads exec's actions, for a rule whose match is m: writes of
// ct_mark and ct_label, and a nat, which the text may put there too.
func (c *Conntrack) parseExec(text string, m *Match, ports PortNames) error {
	items, err := splitActionList(text)
	if err != nil {
		return err
	}
	for _, item := range items {
		name, arg, hasArg, err := splitAction(item)
		if err != nil {
			return err
		}
		if name == "nat" {
			if err := c.addNAT(arg); err != nil {
				return err
			}
			continue
		}
		if name == "set_field" || name == "load" || name == "move" {
			// Whether the field may be written here first: its write
			// elsewhere may be another action (set_field to nw_src is
			// mod_nw_src).
			_, dst, _ := cutLast(arg, "->")
			dst, _, _ = strings.Cut(dst, "[")
			if f, ok := fieldsByName[dst]; ok && f.Writable && !f.CTOnly {
				return fmt.Errorf("ct action doesn't support nested modification of %s", f.Name)
			}
		}
		as, _, err := parseAction(name, arg, hasArg, m, ports)
		if err != nil {
			return err
		}
		c.Exec = append(c.Exec, as...)
	}
	return nil
}

// natAction reads nat's arguments, as ovs-ofctl does: src or dst, with a
// range (src=ADDR[-ADDR][:PORT[-PORT]], an IPv6 address in brackets when
// a port follows), and the flags persistent, and hash or random.
func natAction(text string) (*NAT, error) {
	items, err := splitActionList(text)
	if err != nil {
		return nil, err
	}
	n := &NAT{}
	for _, item := range items {
		key, value, hasValue, err := splitAction(item)
		if err != nil {
			return nil, fmt.Errorf("nat: %w", err)
		}
		flag := map[string]*bool{"src": &n.Src, "dst": &n.Dst, "persistent": &n.Persistent, "hash": &n.Hash, "random": &n.Random}[key]
		switch {
		case flag == nil:
			return nil, fmt.Errorf("invalid key %q in \"nat\" argument (want src, dst, persistent, hash or random)", key)
		case hasValue && key != "src" && key != "dst":
			return nil, fmt.Errorf("nat: %s takes no value", key)
		}
		*flag = true
		if hasValue {
			if err := n.parseRange(value); err != nil {
				return nil, err
			}
		}
	}
	return n, n.check()
}

// check refuses what no NAT is: the checks of parse_NAT and
// decode_NXAST_RAW_NAT.
func (n *NAT) check() error {
	switch {
	case n.Src && n.Dst:
		return errors.New(`nat: may only specify one of "src" or "dst"`)
	case !n.Src && !n.Dst && (n.Persistent || n.Hash || n.Random):
		return errors.New(`nat: flags allowed only with "src" or "dst"`)
	case !n.Src && !n.Dst && (n.Min.IsValid() || n.MinPort != 0):
		return errors.New(`nat: range allowed only with "src" or "dst"`)
	case n.Hash && n.Random:
		return errors.New(`nat: both "hash" and "random" are not allowed`)
	case n.Min.IsValid() && n.Min.IsUnspecified():
		return fmt.Errorf("nat: %s is no address to translate to", n.Min)
	case n.Max.IsValid() && (!n.Min.IsValid() || n.Max.Is4() != n.Min.Is4() || n.Max.Less(n.Min)):
		return fmt.Errorf("nat: invalid range %s-%s", n.Min, n.Max)
	case n.MinPort == 0 && n.MaxPort != 0 || n.MaxPort != 0 && n.MaxPort < n.MinPort:
		return fmt.Errorf("nat: invalid port range %d-%d", n.MinPort, n.MaxPort)
	case n.MinPort != 0 && !n.Min.IsValid():
		return errors.New("nat: a port range needs an address range")
	}
	return nil
}

// parseRange reads nat's "ADDR[-ADDR][:PORT[-PORT]]": ports only after an
// address, as OVS reads them. A range of one address or port is that
// address or port alone, and an address or port of 0 alone is none, as
// OVS sends them.
func (n *NAT) parseRange(s string) error {
	invalid := fmt.Errorf("invalid nat range %q", s)
	min, rest := natAddr(s)
	if min.IsUnspecified() {
		if rest != "" {
			return invalid
		}
		return nil
	}
	if min.IsValid() {
		n.Min = min
		if after, ok := strings.CutPrefix(rest, "-"); ok {
			var max netip.Addr
			if max, rest = natAddr(after); !max.IsValid() || max.Is4() != min.Is4() || max.Less(min) {
				return invalid
			}
			if max != min {
				n.Max = max
			}
		}
		if after, ok := strings.CutPrefix(rest, ":"); ok {
			var lo, hi uint16
			if lo, rest, ok = natPort(after); !ok || lo == 0 && rest != "" {
				return invalid
			}
			n.MinPort = lo
			if after, ok := strings.CutPrefix(rest, "-"); ok {
				if hi, rest, ok = natPort(after); !ok || hi == 0 || hi < lo {
					return invalid
				}
				if hi != lo {
					n.MaxPort = hi
				}
			}
		}
	}
	if rest != "" {
		return fmt.Errorf("garbage (%s) after nat range %q", rest, s)
	}
	return nil
}

// natPort reads the port at the start of s.
func natPort(s string) (port uint16, rest string, ok bool) {
	n := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	if n < 0 {
		n = len(s)
	}
	p, err := strconv.ParseUint(s[:n], 10, 16)
	return uint16(p), s[n:], err == nil
}

// natAddr reads the address at the start of s, as ovs-ofctl reads a NAT
// range's: IPv4, or else IPv6, bare or in brackets. The address is
// invalid when there is none.
func natAddr(s string) (netip.Addr, string) {
	if n := strings.IndexFunc(s, func(r rune) bool { return r != '.' && (r < '0' || r > '9') }); n != 0 {
		if n < 0 {
			n = len(s)
		}
		if a, err := netip.ParseAddr(s[:n]); err == nil && a.Is4() {
			return a, s[n:]
		}
	}
	if inner, ok := strings.CutPrefix(s, "["); ok {
		text, rest, closed := strings.Cut(inner, "]")
		if a, err := netip.ParseAddr(text); closed && err == nil && a.Is6() && a.Zone() == "" {
			return a, rest
		}
		return netip.Addr{}, s
	}
	n := strings.IndexFunc(s, func(r rune) bool { return !strings.ContainsRune("0123456789abcdefABCDEF:.", r) })
	if n < 0 {
		n = len(s)
	}
	if a, err := netip.ParseAddr(s[:n]); err == nil && a.Is6() {
		return a, s[n:]
	}
	return netip.Addr{}, s
}

// ctText prints a ct() as ovs-ofctl does.
func ctText(c *Conntrack) string {
	var parts []string
	if c.Commit {
		parts = append(parts, "commit")
	}
	if c.Force {
		parts = append(parts, "force")
	}
	if c.Table != CTNoTable {
		parts = append(parts, "table="+strconv.Itoa(int(c.Table)))
	}
	switch {
	case c.ZoneSrc != nil:
		parts = append(parts, "zone="+subfield{field: c.ZoneSrc, ofs: uint(c.ZoneOfs), nbits: 16}.String())
	case c.Zone != 0:
		parts = append(parts, "zone="+strconv.Itoa(int(c.Zone)))
	}
	if c.NAT != nil {
		parts = append(parts, c.NAT.String())
	}
	if len(c.Exec) > 0 {
		parts = append(parts, "exec("+FormatActions(c.Exec)+")")
	}
	switch c.Alg {
	case ALGFTP:
		parts = append(parts, "alg=ftp")
	case ALGTFTP:
		parts = append(parts, "alg=tftp")
	}
	return "ct(" + strings.Join(parts, ",") + ")"
}

// String prints n as ovs-ofctl does (a range's end only when it is not
// its start), but for the flags of a nat(src) or nat(dst) without a
// range, which ovs-ofctl leaves out although they are there.
func (n *NAT) String() string {
	if !n.Src && !n.Dst {
		return "nat"
	}
	var b strings.Builder
	if n.Src {
		b.WriteString("nat(src")
	} else {
		b.WriteString("nat(dst")
	}
	if n.Min.IsValid() {
		addr := func(a netip.Addr) string {
			if a.Is6() && n.MinPort != 0 {
				return "[" + a.String() + "]"
			}
			return a.String()
		}
		b.WriteString("=" + addr(n.Min))
		if n.Max.IsValid() && n.Max != n.Min {
			b.WriteString("-" + addr(n.Max))
		}
		if n.MinPort != 0 {
			b.WriteString(":" + strconv.Itoa(int(n.MinPort)))
			if n.MaxPort != 0 && n.MaxPort != n.MinPort {
				b.WriteString("-" + strconv.Itoa(int(n.MaxPort)))
			}
		}
	}
	for _, f := range []struct {
		on   bool
		name string
	}{{n.Persistent, "persistent"}, {n.Hash, "hash"}, {n.Random, "random"}} {
		if f.on {
			b.WriteString("," + f.name)
		}
	}
	b.WriteString(")")
	return b.String()
}
