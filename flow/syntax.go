package flow

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// This file reads and writes flows in the text syntax of ovs-ofctl
// (ovs-ofctl(8), ovs-fields(7), ovs-actions(7)): the rule-level fields and
// the split into match and actions are here, the match fields in
// syntax_match.go, the actions in syntax_actions.go.
//
// The formatter is canonical: for every rule that ParseRule accepts,
// ParseRule(FormatRule(r)) == r, which is what lets dump-flows output be fed
// back to add-flow and lets the daemon persist flows as text.

// PortNames resolves the port names that flows use in place of numbers
// (in_port=p1, output:p1).
type PortNames interface {
	PortNumber(name string) (uint16, bool)
}

// NoPortError reports a port name that PortNames does not know. Its message
// is `no port "p9"`; the caller, who knows the bridge, can add it:
// errors.As(err, &noPort) → `no port "p9" on bridge br0`.
type NoPortError struct{ Name string }

func (e *NoPortError) Error() string { return fmt.Sprintf("no port %q", e.Name) }

// DumpStats are the counters dump-flows shows.
type DumpStats struct {
	Duration         time.Duration // since installation
	Packets, Bytes   uint64
	IdleAge, HardAge time.Duration // since the last hit, since the last modification
}

// MaxPort is OpenFlow's OFPP_MAX: higher numbers name reserved ports,
// which flows spell as NORMAL, FLOOD, ALL and IN_PORT.
const MaxPort = 0xff00

// ParseRule parses a flow as add-flow takes it:
//
//	priority=100,ip,nw_dst=10.0.0.2,actions=output:2
//
// Fields are separated by commas and/or whitespace; everything after
// "actions=" is the action list. The counters that dump-flows prints
// (duration, n_packets, n_bytes, idle_age, hard_age) are ignored, so a
// dump-flows line parses back to its rule. A port name that ports does not
// know is a *NoPortError. The options of a change (ModOptions) are an
// error: they are not the rule's; ParseAddition takes them.
func ParseRule(s string, ports PortNames) (Rule, error) {
	r, opts, err := ParseAddition(s, ports)
	if err == nil && opts != (ModOptions{}) {
		err = fmt.Errorf("%s asks something of add-flow or mod-flows, not of a rule", opts)
	}
	return r, err
}

// ModOptions are the words of a flow that ask something of the change
// that installs or modifies rules rather than describe a rule: OpenFlow's
// OFPFF_CHECK_OVERLAP and OFPFF_RESET_COUNTS.
type ModOptions struct {
	// CheckOverlap refuses an added rule that some packet could match as
	// well as another rule of its priority in its table.
	CheckOverlap bool
	// ResetCounts zeroes the counters of the rules a modification changes.
	ResetCounts bool
}

// String writes o as a flow writes it, as ovs-ofctl orders the words.
func (o ModOptions) String() string {
	var words []string
	if o.CheckOverlap {
		words = append(words, "check_overlap")
	}
	if o.ResetCounts {
		words = append(words, "reset_counts")
	}
	return strings.Join(words, ",")
}

// ParseAddition parses a flow as add-flow takes it: ParseRule's rule and
// the options of the change, as ovs-ofctl takes them:
//
//	check_overlap,priority=100,ip,actions=output:2
//
// reset_counts is accepted, as ovs-ofctl accepts it, and changes nothing
// for an add: a rule that replaces another starts from zero anyway.
func ParseAddition(s string, ports PortNames) (Rule, ModOptions, error) {
	tokens, actionText, hasActions, err := scanFlowText(s)
	if err != nil {
		return Rule{}, ModOptions{}, err
	}
	if !hasActions {
		return Rule{}, ModOptions{}, errors.New(`missing "actions=" (write actions=drop to drop)`)
	}
	p := flowParser{ports: ports}
	if err := p.parseFields(tokens); err != nil {
		return Rule{}, ModOptions{}, err
	}
	if p.hasCookieMask {
		return Rule{}, ModOptions{}, errors.New("a cookie mask only selects flows (del-flows, dump-flows); set a cookie without one")
	}
	if p.hasTable && p.table == allTables {
		return Rule{}, ModOptions{}, fmt.Errorf("table %d is not a table (0-%d): a rule goes into one", allTables, NumTables-1)
	}
	r := Rule{
		Priority:    DefaultPriority,
		Cookie:      p.cookie,
		IdleTimeout: p.idleTimeout,
		HardTimeout: p.hardTimeout,
		Flags:       p.flags,
		Match:       p.match.match,
	}
	r.Match.Key.Table, r.Match.Mask.Table = p.table, math.MaxUint8
	if p.hasPriority {
		r.Priority = p.priority
	}
	if r.Actions, err = parseActions(actionText, &r.Match, ports); err != nil {
		return Rule{}, ModOptions{}, err
	}
	return r, p.options, nil
}

// ParseFilter parses a match without actions, as del-flows, dump-flows and
// mod-flows --strict select rules and as trace describes a packet:
// "tcp,tp_dst=80", "priority=5,in_port=1", "cookie=0x5/-1",
// "out_port=2", "out_group=1". The empty string matches everything. A cookie without a
// mask must match exactly.
func ParseFilter(s string, ports PortNames) (Filter, error) {
	tokens, _, hasActions, err := scanFlowText(s)
	if err != nil {
		return Filter{}, err
	}
	if hasActions {
		return Filter{}, errors.New("actions are not allowed in a match")
	}
	p := flowParser{ports: ports, matchOnly: true, outGroup: GroupAny}
	if err := p.parseFields(tokens); err != nil {
		return Filter{}, err
	}
	f := Filter{Match: p.match.match, Priority: p.priority, HasPriority: p.hasPriority, OutPort: p.outPort}
	if p.outGroup != GroupAny {
		f.OutGroup, f.ByOutGroup = p.outGroup, true
	}
	if p.hasTable && p.table != allTables {
		f.Match.Key.Table, f.Match.Mask.Table = p.table, math.MaxUint8
	}
	if p.hasCookie {
		f.CookieMask = math.MaxUint64
		if p.hasCookieMask {
			f.CookieMask = p.cookieMask
		}
		f.Cookie = p.cookie & f.CookieMask
	}
	return f, nil
}

// Filter selects rules for mod-flows, del-flows and dump-flows, and
// describes a packet for trace; Cookie is already masked. A filter that
// names no table (Match.Mask.Table zero, or table=255 as OpenFlow spells
// "all") selects in every table.
type Filter struct {
	Match              Match
	Priority           uint16
	HasPriority        bool
	Cookie, CookieMask uint64
	// OutPort, unless 0 or AnyPort, selects only the rules that output to
	// it (Rule.OutputsTo): OpenFlow's out_port.
	OutPort uint16
	// OutGroup, when ByOutGroup, selects only the rules that send to that
	// group (Rule.SendsToGroup): OpenFlow's out_group.
	OutGroup   uint32
	ByOutGroup bool
}

// FormatRule formats r as add-flow takes it, canonically:
//
//	cookie=0x5, idle_timeout=10, hard_timeout=20, send_flow_rem priority=100,tcp,nw_dst=10.0.0.2,tp_dst=80 actions=output:2
//
// The cookie, the table, the timeouts and the flags appear only when they
// are not zero; the flags follow the timeouts as in ovs-ofctl's
// dump-flows.
func FormatRule(r Rule) string {
	var b strings.Builder
	if r.Cookie != 0 {
		fmt.Fprintf(&b, "cookie=%#x, ", r.Cookie)
	}
	if t := r.Table(); t != 0 {
		fmt.Fprintf(&b, "table=%d, ", t)
	}
	writeTimeouts(&b, &r)
	writeFlags(&b, r.Flags)
	writeMatchAndActions(&b, &r)
	return b.String()
}

// FormatDumpLine formats r and its counters as one line of ovs-ofctl
// dump-flows:
//
//	cookie=0x0, duration=3.205s, table=0, n_packets=10, n_bytes=980, idle_timeout=10, send_flow_rem idle_age=2, priority=100,ip,nw_dst=10.0.0.2 actions=output:2
//
// hard_age appears only when r has a hard_timeout. ParseRule reads the line
// back as r.
func FormatDumpLine(r Rule, s DumpStats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cookie=%#x, duration=%.3fs, table=%d, n_packets=%d, n_bytes=%d, ",
		r.Cookie, s.Duration.Seconds(), r.Table(), s.Packets, s.Bytes)
	writeTimeouts(&b, &r)
	writeFlags(&b, r.Flags)
	fmt.Fprintf(&b, "idle_age=%d, ", int64(s.IdleAge/time.Second))
	if r.HardTimeout != 0 {
		fmt.Fprintf(&b, "hard_age=%d, ", int64(s.HardAge/time.Second))
	}
	writeMatchAndActions(&b, &r)
	return b.String()
}

func writeTimeouts(b *strings.Builder, r *Rule) {
	if r.IdleTimeout != 0 {
		fmt.Fprintf(b, "idle_timeout=%d, ", r.IdleTimeout)
	}
	if r.HardTimeout != 0 {
		fmt.Fprintf(b, "hard_timeout=%d, ", r.HardTimeout)
	}
}

// writeFlags writes each of flags followed by a space, not a comma, as
// ovs-ofctl does.
func writeFlags(b *strings.Builder, flags RuleFlags) {
	for _, f := range ruleFlags {
		if flags&f.flag != 0 {
			b.WriteString(f.name + " ")
		}
	}
}

// writeMatchAndActions writes "priority=N,MATCH actions=ACTIONS", leaving
// out the default priority as ovs-ofctl does.
func writeMatchAndActions(b *strings.Builder, r *Rule) {
	var fields []string
	if r.Priority != DefaultPriority {
		fields = append(fields, fmt.Sprintf("priority=%d", r.Priority))
	}
	if m := FormatMatch(r.Match); m != "" {
		fields = append(fields, m)
	}
	if len(fields) > 0 {
		b.WriteString(strings.Join(fields, ","))
		b.WriteByte(' ')
	}
	b.WriteString("actions=")
	b.WriteString(FormatActions(r.Actions))
}

// flowToken is one field of the text before "actions=": "nw_dst=10.0.0.2"
// or a bare name such as "tcp".
type flowToken struct {
	name, value string
	hasValue    bool
}

func isFieldSeparator(c byte) bool {
	return c == ',' || c == ' ' || c == '\t' || c == '\r' || c == '\n'
}

// scanFlowText splits s into its fields and, if there is one, the action
// list: all the text after "actions=" (or OVS's "action="), whatever it
// holds.
func scanFlowText(s string) (tokens []flowToken, actionText string, hasActions bool, err error) {
	i := 0
	for {
		for i < len(s) && isFieldSeparator(s[i]) {
			i++
		}
		if i == len(s) {
			return tokens, "", false, nil
		}
		start := i
		for i < len(s) && !isFieldSeparator(s[i]) && s[i] != '=' {
			i++
		}
		tok := flowToken{name: s[start:i]}
		if tok.name == "actions" || tok.name == "action" {
			for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
				i++
			}
			if i == len(s) || s[i] != '=' {
				return nil, "", false, fmt.Errorf(`%q must be followed by "=" and the action list`, tok.name)
			}
			return tokens, s[i+1:], true, nil
		}
		if i < len(s) && s[i] == '=' {
			i++
			valueStart := i
			for i < len(s) && !isFieldSeparator(s[i]) {
				i++
			}
			tok.value, tok.hasValue = s[valueStart:i], true
		}
		if tok.name == "" {
			return nil, "", false, fmt.Errorf("missing field name before %q", s[start:i])
		}
		tokens = append(tokens, tok)
	}
}

// flowParser gathers the fields before "actions=".
type flowParser struct {
	ports     PortNames
	matchOnly bool // a Filter: no timeouts, flags or options; out_port
	seen      map[string]bool
	match     matchBuilder
	flags     RuleFlags
	options   ModOptions
	outPort   uint16
	outGroup  uint32

	priority                 uint16
	hasPriority              bool
	cookie, cookieMask       uint64
	hasCookie, hasCookieMask bool
	idleTimeout, hardTimeout uint16
	table                    uint8
	hasTable                 bool
}

func (p *flowParser) parseFields(tokens []flowToken) error {
	for _, tok := range tokens {
		if err := p.parseField(tok); err != nil {
			return err
		}
	}
	return p.match.checkPrerequisites()
}

func (p *flowParser) parseField(tok flowToken) error {
	if p.seen[tok.name] {
		return fmt.Errorf("field %q given twice", tok.name)
	}
	if p.seen == nil {
		p.seen = make(map[string]bool)
	}
	p.seen[tok.name] = true

	switch tok.name {
	case "duration", "n_packets", "n_bytes", "idle_age", "hard_age":
		// dump-flows prints these; OVS ignores them on input too.
		return nil
	case "priority", "idle_timeout", "hard_timeout", "table", "cookie", "out_port", "out_group":
		if !tok.hasValue {
			return fmt.Errorf("field %q needs a value", tok.name)
		}
		return p.parseRuleField(tok)
	case "send_flow_rem", "no_packet_counts", "no_byte_counts", "check_overlap", "reset_counts":
		switch {
		case tok.hasValue:
			return fmt.Errorf("field %q takes no value", tok.name)
		case p.matchOnly:
			return fmt.Errorf("field %q is not allowed in a match", tok.name)
		}
		p.parseFlag(tok.name)
		return nil
	}
	field, ok := fieldsByName[tok.name]
	switch {
	case ok && isWireName(tok.name):
		return fmt.Errorf("unknown field %q (NXM and OXM names are for load and move: a match says %s)", tok.name, field.Name)
	case !ok:
		return fmt.Errorf("unknown field %q", tok.name)
	case field.shorthand && tok.hasValue:
		return fmt.Errorf("field %q takes no value", tok.name)
	case !field.shorthand && !tok.hasValue:
		return fmt.Errorf("field %q needs a value", tok.name)
	}
	part, err := field.parseMatch(tok.value, p.ports)
	if err != nil {
		return err
	}
	return p.match.add(tok.name, part, field.Needs)
}

// parseRuleField parses the fields that describe the rule rather than the
// packets it matches.
func (p *flowParser) parseRuleField(tok flowToken) error {
	switch tok.name {
	case "priority":
		v, err := numberFromText(tok.name, tok.value, math.MaxUint16)
		p.priority, p.hasPriority = uint16(v), true
		return err
	case "idle_timeout", "hard_timeout":
		if p.matchOnly {
			return fmt.Errorf("field %q is not allowed in a match", tok.name)
		}
		v, err := numberFromText(tok.name, tok.value, math.MaxUint16)
		if tok.name == "idle_timeout" {
			p.idleTimeout = uint16(v)
		} else {
			p.hardTimeout = uint16(v)
		}
		return err
	case "table":
		v, err := tableFromText(tok.name, tok.value, math.MaxUint8)
		p.table, p.hasTable = uint8(v), true
		return err
	case "out_port":
		if !p.matchOnly {
			// As ovs-ofctl: only del-flows and dump-flows select by it.
			return errors.New(`field "out_port" only selects flows (del-flows, dump-flows)`)
		}
		var err error
		p.outPort, err = outPortFromText(tok.value, p.ports)
		return err
	case "out_group":
		if !p.matchOnly {
			return errors.New(`field "out_group" only selects flows (del-flows, dump-flows)`)
		}
		var err error
		p.outGroup, err = ParseGroupID(tok.value)
		return err
	default: // cookie
		return p.parseCookie(tok.value)
	}
}

// parseFlag records one of the bare words that are a rule's flags or a
// change's options.
func (p *flowParser) parseFlag(name string) {
	switch name {
	case "check_overlap":
		p.options.CheckOverlap = true
	case "reset_counts":
		p.options.ResetCounts = true
	default:
		for _, f := range ruleFlags {
			if f.name == name {
				p.flags |= f.flag
			}
		}
	}
}

// parseCookie reads "V" or, to select flows, "V/MASK", where MASK -1 is all
// ones as in OVS.
func (p *flowParser) parseCookie(text string) error {
	valueText, maskText, hasMask := strings.Cut(text, "/")
	v, err := numberFromText("cookie", valueText, math.MaxUint64)
	if err != nil {
		return err
	}
	p.cookie, p.hasCookie = v, true
	if !hasMask {
		return nil
	}
	p.cookieMask, p.hasCookieMask = math.MaxUint64, true
	if maskText != "-1" {
		p.cookieMask, err = numberFromText("cookie mask", maskText, math.MaxUint64)
	}
	return err
}

// scanUint reads a decimal or 0x-prefixed hexadecimal number. isNumber is
// false for anything else; fits is false for a number beyond 64 bits.
func scanUint(text string) (v uint64, isNumber, fits bool) {
	digits, base := text, 10
	if len(text) > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X') {
		digits, base = text[2:], 16
	}
	v, err := strconv.ParseUint(digits, base, 64)
	if err != nil {
		return 0, errors.Is(err, strconv.ErrRange), false
	}
	return v, true, true
}

// numberFromText reads the number that field name holds, at most max.
func numberFromText(name, text string, max uint64) (uint64, error) {
	v, isNumber, fits := scanUint(text)
	switch {
	case !isNumber:
		return 0, fmt.Errorf("invalid %s %q", name, text)
	case !fits || v > max:
		return 0, fmt.Errorf("%s %s out of range", name, text)
	}
	return v, nil
}

// tableFromText reads a table number, which OVS takes in decimal only.
func tableFromText(what, text string, max uint64) (uint64, error) {
	if strings.HasPrefix(text, "0x") || strings.HasPrefix(text, "0X") {
		return 0, fmt.Errorf("invalid %s %q (table numbers are decimal)", what, text)
	}
	return numberFromText(what, text, max)
}

// unsupportedReservedPorts are OpenFlow's other reserved ports, which
// xswitch does not have (yet): naming one is an error that says so. TABLE
// is only an output (outputTo).
var unsupportedReservedPorts = map[string]bool{"TABLE": true, "ANY": true, "NONE": true, "UNSET": true}

// portText prints a port number, as in_port and output do.
func portText(n uint16) string {
	switch n {
	case LocalPort:
		return "LOCAL"
	case ControllerPort:
		return "CONTROLLER"
	case TablePort:
		return "TABLE"
	}
	return strconv.FormatUint(uint64(n), 10)
}

// outPortFromText reads an out_port filter: a port as output names it, or
// the word of a reserved port's action (NORMAL, FLOOD, ALL, IN_PORT), or
// ANY (NONE), which filters nothing, as in ovs-ofctl.
func outPortFromText(text string, ports PortNames) (uint16, error) {
	switch upper := strings.ToUpper(text); {
	case upper == "ANY" || upper == "NONE":
		return 0, nil
	case reservedPorts[upper] != 0:
		return reservedPortOf[reservedPorts[upper]], nil
	}
	return portFromText(text, ports)
}

// portFromText reads an OpenFlow port number (decimal, as OVS reads
// them), LOCAL or a port name.
func portFromText(text string, ports PortNames) (uint16, error) {
	if v, isNumber, fits := scanUint(text); isNumber {
		switch {
		case strings.HasPrefix(text, "0x") || strings.HasPrefix(text, "0X"):
			return 0, fmt.Errorf("invalid port %q (port numbers are decimal)", text)
		case !fits || v > math.MaxUint16:
			return 0, fmt.Errorf("port %s out of range (1-%d)", text, MaxPort)
		}
		if err := CheckPort(uint16(v)); err != nil {
			return 0, err
		}
		return uint16(v), nil
	}
	switch upper := strings.ToUpper(text); {
	case upper == "LOCAL":
		return LocalPort, nil
	case upper == "CONTROLLER":
		return ControllerPort, nil
	case unsupportedReservedPorts[upper]:
		return 0, fmt.Errorf("reserved port %s is not supported", upper)
	}
	if text == "" {
		return 0, errors.New(`invalid port ""`)
	}
	if ports != nil {
		if n, ok := ports.PortNumber(text); ok {
			if n == 0 || n > MaxPort && n != LocalPort {
				return 0, fmt.Errorf("port %q has number %d, out of range (1-%d)", text, n, MaxPort)
			}
			return n, nil
		}
	}
	return 0, &NoPortError{Name: text}
}

// CheckPort checks that n is the number a port can have: 1 to OFPP_MAX
// (65280), or LOCAL.
func CheckPort(n uint16) error {
	switch {
	case n == LocalPort || n == ControllerPort:
		return nil
	case n > MaxPort:
		return fmt.Errorf("port %d is one of OpenFlow's reserved ports, of which xswitch has LOCAL (65534) and CONTROLLER (65533)", n)
	case n == 0:
		return fmt.Errorf("port %d out of range (1-%d)", n, MaxPort)
	}
	return nil
}

// ParseModification parses a flow as mod-flows takes it: the rules its
// match selects (in every table unless it names one, at its priority for
// --strict, with its cookie if it gives one) take its actions, with the
// options it gives (reset_counts; check_overlap is accepted, as ovs-ofctl
// accepts it, and means nothing to a modification). Its flags are
// ignored: as OpenFlow says, a modification keeps a rule's flags.
func ParseModification(s string, ports PortNames) (Filter, []Action, ModOptions, error) {
	tokens, _, _, err := scanFlowText(s)
	if err != nil {
		return Filter{}, nil, ModOptions{}, err
	}
	r, opts, err := ParseAddition(s, ports)
	if err != nil {
		return Filter{}, nil, ModOptions{}, err
	}
	f := Filter{Match: r.Match, Priority: r.Priority, HasPriority: true}
	if !slices.ContainsFunc(tokens, func(t flowToken) bool { return t.name == "table" }) {
		f.Match.Key.Table, f.Match.Mask.Table = 0, 0
	}
	if r.Cookie != 0 {
		f.Cookie, f.CookieMask = r.Cookie, math.MaxUint64
	}
	return f, r.Actions, opts, nil
}
