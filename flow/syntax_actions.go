package flow

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/xswitch/xswitch/header"
)

// What actions that rewrite headers need the match to guarantee, as OVS
// requires, so that a rule never rewrites a header the packet lacks.
var (
	actionNeedsIPv4  = &Prerequisite{holds: func(m *Match) bool { return hasDlType(m, EtherTypeIPv4) }, what: "an IPv4 match (ip)"}
	actionNeedsIPv6  = &Prerequisite{holds: func(m *Match) bool { return hasDlType(m, EtherTypeIPv6) }, what: "an IPv6 match (ipv6)"}
	actionNeedsIP    = &Prerequisite{holds: isIPMatch, what: "an ip or ipv6 match"}
	actionNeedsPorts = &Prerequisite{
		holds: func(m *Match) bool { return isTCPMatch(m) || isUDPMatch(m) || isSCTPMatch(m) },
		what:  "a tcp, udp or sctp match",
	}
	actionNeedsMPLS = &Prerequisite{holds: isMPLSMatch, what: "an MPLS match (mpls or mplsm), or a push_mpls before it"}
	actionNeedsTCP  = &Prerequisite{holds: isTCPMatch, what: "a tcp match"}
	actionNeedsUDP  = &Prerequisite{holds: isUDPMatch, what: "a udp match"}
)

// reservedPorts are the ports that actions name by word; OVS spells them in
// any case.
var reservedPorts = map[string]ActionType{
	"NORMAL":  ActNormal,
	"FLOOD":   ActFlood,
	"ALL":     ActAll,
	"IN_PORT": ActInPort,
}

// parseActions parses the text after "actions=" for a rule whose match is
// m. "drop" and the empty list are both nil.
func parseActions(text string, m *Match, ports PortNames) ([]Action, error) {
	items, err := splitActionList(text)
	if err != nil {
		return nil, err
	}
	var actions []Action
	instruction := ""
	// The match as the actions so far leave the frame: push_mpls and
	// pop_mpls change its EtherType, for the actions after them, as OVS
	// checks them (ofpacts_check).
	after := *m
	m = &after
	for _, item := range items {
		name, arg, hasArg, err := splitAction(item)
		if err != nil {
			return nil, err
		}
		switch name {
		case "apply_actions":
			return nil, errors.New("apply_actions is the default instruction: write its actions without it")
		case "meter":
			switch {
			case len(actions) > 0 && actions[0].Type == ActMeter:
				return nil, errors.New("a rule has one meter instruction at most")
			case len(actions) > 0 || instruction != "":
				return nil, errors.New("instruction meter must come first, before the actions and the other instructions")
			}
			a, err := meterAction(arg, hasArg)
			if err != nil {
				return nil, err
			}
			actions = append(actions, a)
			continue
		case "write_actions", "clear_actions", "write_metadata", "goto_table":
			if instructionRank[name] <= instructionRank[instruction] {
				return nil, fmt.Errorf("instruction %s may not follow instruction %s", name, instruction)
			}
			instruction = name
			if name == "clear_actions" {
				if hasArg {
					return nil, errors.New("instruction clear_actions takes no argument")
				}
				actions = append(actions, Action{Type: ActClearActions})
				continue
			}
			if !hasArg {
				return nil, fmt.Errorf("instruction %s needs an argument (%s:VALUE)", name, name)
			}
			var a []Action
			switch name {
			case "write_actions":
				a, err = writeActions(arg, m, ports)
			case "goto_table":
				var goTo Action
				goTo, err = gotoTableAction(arg, m.Key.Table)
				a = []Action{goTo}
			default:
				var write Action
				write, err = writeMetadataAction(arg)
				a = []Action{write}
			}
			if err != nil {
				return nil, err
			}
			actions = append(actions, a...)
			continue
		}
		if instruction != "" {
			return nil, fmt.Errorf("action %q after the instruction %s: actions come first", item, instruction)
		}
		if strings.EqualFold(name, "drop") {
			if hasArg {
				return nil, fmt.Errorf("action %q takes no argument", name)
			}
			if len(items) > 1 {
				return nil, errors.New(`"drop" must be the only action`)
			}
			return nil, nil
		}
		as, needs, err := parseAction(name, arg, hasArg, m, ports)
		if err != nil {
			return nil, err
		}
		for _, a := range as {
			if err := CheckPlace(a, false); err != nil {
				return nil, err
			}
		}
		if needs != nil && !needs.holds(m) {
			label := name
			if name == "set_field" {
				_, field, _ := cutLast(arg, "->")
				label = "set_field to " + field
			}
			return nil, fmt.Errorf("%s requires %s", label, needs.Unmet(m))
		}
		for _, a := range as {
			after.Follow(a)
		}
		actions = append(actions, as...)
	}
	return actions, nil
}

// instructionRank ranks the instructions that may end an action list, in
// the order OpenFlow 1.3 gives them: once one is seen, only later ones
// may follow. The meter instruction, OpenFlow's first, comes before the
// actions (parseActions).
var instructionRank = map[string]int{"": 0, "clear_actions": 1, "write_actions": 2, "write_metadata": 3, "goto_table": 4}

// meterAction parses the meter instruction's argument, the meter's id.
func meterAction(arg string, hasArg bool) (Action, error) {
	if !hasArg {
		return Action{}, errors.New("instruction meter needs the meter's id (meter:ID)")
	}
	id, err := numberFromText("meter", arg, math.MaxUint32)
	if err == nil && (id == 0 || id > MeterMax) {
		err = fmt.Errorf("meter:%s: a meter's id is from 1 to %d (OpenFlow's OFPMMFC_INVALID_METER)", arg, MeterMax)
	}
	return Action{Type: ActMeter, Meter: uint32(id)}, err
}

// splitAction splits one item of an action list into the action's name
// and its argument: "name:arg", "name=arg" or OVS's "name(arg)".
func splitAction(item string) (name, arg string, hasArg bool, err error) {
	name, arg, hasArg = strings.Cut(item, ":")
	if i := strings.IndexAny(name, "=("); i >= 0 {
		if name[i] == '(' {
			if !strings.HasSuffix(item, ")") {
				return "", "", false, fmt.Errorf("action %q: text after its closing parenthesis", item)
			}
			return item[:i], item[i+1 : len(item)-1], true, nil
		}
		return item[:i], item[i+1:], true, nil
	}
	return name, arg, hasArg, nil
}

// writeActions parses write_actions' list for a rule whose match is m.
func writeActions(text string, m *Match, ports PortNames) ([]Action, error) {
	written, err := parseActions(text, m, ports)
	if err != nil {
		return nil, fmt.Errorf("write_actions: %w", err)
	}
	return WriteActions(written)
}

// WriteActions is the instruction write_actions of the actions written:
// an ActWriteActions and them, each of a kind an action set holds, at
// most one of each kind.
func WriteActions(written []Action) ([]Action, error) {
	written = mergeWrittenSets(written)
	if len(written) > math.MaxUint8 {
		return nil, fmt.Errorf("write_actions: %d actions, more than an action set holds", len(written))
	}
	var seen [numSetKinds]bool
	for _, a := range written {
		k, ok := kindInSet(a.Type)
		if !ok {
			return nil, fmt.Errorf("write_actions: %s cannot go into an action set (it holds outputs and header changes)", actionText(a))
		}
		if seen[k] {
			return nil, fmt.Errorf("write_actions: an action set holds one action of each kind, and %s is the second of its kind", actionText(a))
		}
		if a.Type == ActController && (a.Table != ReasonAction || a.Port != 0) {
			// OpenFlow's output to CONTROLLER has only a max_len; the rest
			// is OVS's extension, which action sets do not take.
			return nil, fmt.Errorf("write_actions: %s cannot go into an action set (CONTROLLER:max_len can)", actionText(a))
		}
		seen[k] = true
	}
	return append([]Action{{Type: ActWriteActions, NBits: uint8(len(written))}}, written...), nil
}

// mergeWrittenSets makes the masked writes of one header field in an
// action list one write, as an action set holds one of each kind: a
// set_field of two runs of a field's bits is two loads (SetFieldActions),
// which do together what the one write does.
func mergeWrittenSets(written []Action) []Action {
	var merged []Action
	for _, a := range written {
		i := slices.IndexFunc(merged, func(m Action) bool {
			return !m.Mask.IsZero() && !a.Mask.IsZero() && m.Type == a.Type && m.Field == a.Field
		})
		if _, isSet := kindInSet(a.Type); isSet && i >= 0 {
			merged[i] = mergeMaskedSets(merged[i], a)
			continue
		}
		merged = append(merged, a)
	}
	return merged
}

// splitActionList splits at commas and whitespace outside parentheses.
func splitActionList(text string) ([]string, error) {
	var items []string
	depth, start := 0, 0
	for i := 0; i <= len(text); i++ {
		switch {
		case i < len(text) && text[i] == '(':
			depth++
		case i < len(text) && text[i] == ')':
			if depth--; depth < 0 {
				return nil, fmt.Errorf("unbalanced parentheses in actions %q", text)
			}
		case i == len(text) || depth == 0 && isFieldSeparator(text[i]):
			if i > start {
				items = append(items, text[start:i])
			}
			start = i + 1
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("unbalanced parentheses in actions %q", text)
	}
	return items, nil
}

// actionNames are the actions parseAction knows by name, other than the
// reserved ports.
var actionNames = map[string]bool{
	"output": true, "mod_dl_src": true, "mod_dl_dst": true, "mod_vlan_vid": true,
	"strip_vlan": true, "pop_vlan": true, "push_vlan": true, "mod_nw_src": true,
	"mod_nw_dst": true, "mod_tp_src": true, "mod_tp_dst": true, "dec_ttl": true,
	"mod_nw_tos": true, "mod_nw_ecn": true, "mod_nw_ttl": true, "mod_vlan_pcp": true,
	"set_field": true, "load": true, "move": true, "resubmit": true,
	"set_tunnel": true, "set_tunnel64": true, "group": true,
	"push_mpls": true, "pop_mpls": true, "set_mpls_label": true, "set_mpls_tc": true,
	"set_mpls_ttl": true, "dec_mpls_ttl": true, "copy_ttl_out": true, "copy_ttl_in": true,
	"ct_clear": true,
}

// parseAction parses one action other than drop, of a rule whose match is
// m: one flow action, or for a set_field of part of a field, one for each
// run of the mask's bits (SetFieldActions).
func parseAction(name, arg string, hasArg bool, m *Match, ports PortNames) ([]Action, *Prerequisite, error) {
	one := func(a Action, needs *Prerequisite, err error) ([]Action, *Prerequisite, error) {
		if err != nil {
			return nil, nil, err
		}
		return []Action{a}, needs, nil
	}
	if strings.EqualFold(name, "controller") {
		a, err := controllerAction(arg)
		return one(a, nil, err)
	}
	switch name {
	case "ct":
		return one(ctAction(arg, m, ports))
	case "nat":
		return one(Action{}, nil, errors.New(`cannot have NAT action outside of "ct" action: write ct(nat...)`))
	}
	if typ, ok := reservedPorts[strings.ToUpper(name)]; ok {
		if hasArg {
			return one(Action{}, nil, fmt.Errorf("action %q takes no argument", name))
		}
		return one(Action{Type: typ}, nil, nil)
	}
	if !actionNames[name] {
		if hasArg {
			return one(Action{}, nil, fmt.Errorf("unknown action %q", name))
		}
		return one(bareOutput(name, ports))
	}
	if bare, ok := bareActions[name]; ok {
		if hasArg {
			return one(Action{}, nil, fmt.Errorf("action %q takes no argument", name))
		}
		a, needs := bare()
		return one(a, needs, nil)
	}
	if !hasArg {
		return one(Action{}, nil, fmt.Errorf("action %q needs an argument (%s:VALUE)", name, name))
	}
	switch name {
	case "output":
		if strings.Contains(arg, "=") {
			return one(outputWithMaxLen(arg, ports))
		}
		if typ, ok := reservedPorts[strings.ToUpper(arg)]; ok {
			return one(Action{Type: typ}, nil, nil)
		}
		return one(outputTo(arg, ports))
	case "group":
		id, err := numberFromText("group", arg, GroupMax)
		return one(Action{Type: ActGroup, Group: uint32(id)}, nil, err)
	case "set_tunnel", "set_tunnel64":
		// OVS's older words for set_field to tun_id; ovs-ofctl reads
		// either back as that.
		return setFieldAction(arg+"->tun_id", SetFieldActions)
	case "load":
		return one(loadAction(arg, m))
	case "move":
		return one(moveAction(arg, m))
	case "resubmit":
		a, err := resubmitAction(arg, ports)
		return one(a, nil, err)
	case "mod_dl_src", "mod_dl_dst":
		typ := ActSetDlSrc
		if name == "mod_dl_dst" {
			typ = ActSetDlDst
		}
		return one(macAction(typ, arg))
	case "mod_vlan_vid":
		vid, err := numberFromText(name, arg, vlanVIDMask)
		return one(Action{Type: ActSetVLANVID, Value: uint16(vid)}, nil, err)
	case "mod_vlan_pcp":
		pcp, err := numberFromText(name, arg, 7)
		return one(Action{Type: ActSetVLANPCP, Value: uint16(pcp)}, nil, err)
	case "mod_nw_tos":
		tos, err := numberFromText(name, arg, math.MaxUint8)
		if err == nil && tos&^tosDSCPMask != 0 {
			err = fmt.Errorf("mod_nw_tos %s: the DSCP bits only, a multiple of 4 (mod_nw_ecn sets the others)", arg)
		}
		return one(Action{Type: ActSetNwTOS, Value: uint16(tos)}, actionNeedsIP, err)
	case "mod_nw_ecn":
		ecn, err := numberFromText(name, arg, 3)
		return one(Action{Type: ActSetNwECN, Value: uint16(ecn)}, actionNeedsIP, err)
	case "mod_nw_ttl":
		ttl, err := numberFromText(name, arg, math.MaxUint8)
		return one(Action{Type: ActSetNwTTL, Value: uint16(ttl)}, actionNeedsIP, err)
	case "push_vlan":
		return one(pushVLANAction(arg))
	case "push_mpls", "pop_mpls":
		etherType, err := numberFromText(name, arg, math.MaxUint16)
		if err != nil {
			return one(Action{}, nil, err)
		}
		if name == "pop_mpls" {
			a, needs := PopMPLSAction(uint16(etherType))
			return one(a, needs, nil)
		}
		a, err := PushMPLSAction(uint16(etherType))
		return one(a, nil, err)
	case "set_mpls_label", "set_mpls_tc", "set_mpls_ttl":
		a, err := setMPLSAction(name, arg)
		return one(a, actionNeedsMPLS, err)
	case "mod_nw_src", "mod_nw_dst":
		typ := ActSetNwSrc
		if name == "mod_nw_dst" {
			typ = ActSetNwDst
		}
		return one(ipv4Action(typ, arg))
	case "mod_tp_src", "mod_tp_dst":
		typ := ActSetTpSrc
		if name == "mod_tp_dst" {
			typ = ActSetTpDst
		}
		port, err := numberFromText(name, arg, math.MaxUint16)
		return one(Action{Type: typ, Value: uint16(port)}, actionNeedsPorts, err)
	default: // set_field
		return setFieldAction(arg, SetFieldActions)
	}
}

// PushMPLSAction is push_mpls of a label stack entry, the frame's
// EtherType becoming etherType.
func PushMPLSAction(etherType uint16) (Action, error) {
	if !header.IsMPLS(etherType) {
		return Action{}, fmt.Errorf("push_mpls 0x%04x: want 0x%04x or 0x%04x", etherType, EtherTypeMPLS, EtherTypeMPLSMulticast)
	}
	return Action{Type: ActPushMPLS, Value: etherType}, nil
}

// setMPLSAction parses set_mpls_label, set_mpls_tc or set_mpls_ttl, with
// ovs-ofctl's words for values out of range.
func setMPLSAction(name, arg string) (Action, error) {
	var typ ActionType
	var what string
	switch name {
	case "set_mpls_label":
		typ, what = ActSetMPLSLabel, "MPLS label"
	case "set_mpls_tc":
		typ, what = ActSetMPLSTC, "MPLS TC"
	default:
		typ, what = ActSetMPLSTTL, "MPLS TTL"
	}
	f := mplsFields[typ]
	n, err := numberFromText(what, arg, math.MaxUint32)
	switch {
	case err != nil && typ == ActSetMPLSLabel:
		return Action{}, err
	case err != nil || typ == ActSetMPLSTTL && n > math.MaxUint8:
		return Action{}, fmt.Errorf("invalid %s %q", what, arg)
	case n > f.full().Lo:
		return Action{}, fmt.Errorf("%s: not a valid %s", arg, what)
	}
	var k Key
	f.set(&k, Value{Lo: n})
	return mplsSetAction(typ, k.MPLS), nil
}

// Follow makes m say what the frame is after a, as OVS checks the actions
// after it (ofpacts_check): push_mpls and pop_mpls give it their
// EtherType, and nothing is known of its network header, which is under
// a label stack, or whatever the pop says it is.
func (m *Match) Follow(a Action) {
	if a.Type == ActPushMPLS || a.Type == ActPopMPLS {
		m.Key.DlType, m.Mask.DlType = a.Value, math.MaxUint16
		m.Key.NwProto = 0
	}
}

// PopMPLSAction is pop_mpls, the frame's EtherType becoming etherType,
// and what it needs of the match.
func PopMPLSAction(etherType uint16) (Action, *Prerequisite) {
	return Action{Type: ActPopMPLS, Value: etherType}, actionNeedsMPLS
}

// SetMPLSTTLAction is set_mpls_ttl, and what it needs of the match.
func SetMPLSTTLAction(ttl uint8) (Action, *Prerequisite) {
	return Action{Type: ActSetMPLSTTL, Value: uint16(ttl)}, actionNeedsMPLS
}

// DecMPLSTTLAction is dec_mpls_ttl, and what it needs of the match.
func DecMPLSTTLAction() (Action, *Prerequisite) { return Action{Type: ActDecMPLSTTL}, actionNeedsMPLS }

// CopyTTLOutAction and CopyTTLInAction are copy_ttl_out and copy_ttl_in,
// and what they need of the match: xswitch copies TTLs within a label
// stack and between it and the IP packet under it, not between IP headers
// (the key reads one).
func CopyTTLOutAction() (Action, *Prerequisite) { return Action{Type: ActCopyTTLOut}, actionNeedsMPLS }

func CopyTTLInAction() (Action, *Prerequisite) { return Action{Type: ActCopyTTLIn}, actionNeedsMPLS }

// bareActions are the actions that take no argument, by name: each makes
// its action and says what it needs of the match.
var bareActions = map[string]func() (Action, *Prerequisite){
	"strip_vlan":   stripVLANAction,
	"pop_vlan":     stripVLANAction,
	"dec_ttl":      DecTTLAction,
	"dec_mpls_ttl": DecMPLSTTLAction,
	"copy_ttl_out": CopyTTLOutAction,
	"copy_ttl_in":  CopyTTLInAction,
	"ct_clear":     ctClearAction,
}

func stripVLANAction() (Action, *Prerequisite) { return Action{Type: ActStripVLAN}, nil }
func ctClearAction() (Action, *Prerequisite)   { return Action{Type: ActCTClear}, nil }

// DecTTLAction is dec_ttl and what it needs of the match.
func DecTTLAction() (Action, *Prerequisite) { return Action{Type: ActDecTTL}, actionNeedsIP }

// outputTo parses output's port. Output to CONTROLLER is the controller
// action with its defaults, and TABLE (OFPP_TABLE, which ovs-ofctl takes
// in flows, as OVS's switch does) is an output port of its own.
func outputTo(text string, ports PortNames) (Action, *Prerequisite, error) {
	if strings.EqualFold(text, "TABLE") || text == strconv.Itoa(int(TablePort)) {
		return Action{Type: ActOutput, Port: TablePort}, nil, nil
	}
	port, err := portFromText(text, ports)
	if err != nil {
		return Action{}, nil, err
	}
	a, err := OutputAction(port, 0)
	return a, nil, err
}

// reservedPortActions are the reserved ports, by their OpenFlow 1.0
// numbers, that are actions of their own.
var reservedPortActions = map[uint16]ActionType{
	0xfff8: ActInPort, 0xfffa: ActNormal, 0xfffb: ActFlood, 0xfffc: ActAll,
}

// OutputAction is the action that sends a frame out of port, an OpenFlow
// 1.0 port number: a port's, LOCAL's, or a reserved port's that is an
// action of its own (NORMAL). A maxLen other than 0 cuts the frame to its
// first maxLen bytes. OFPP_MAX (65280) may be an input port but not an
// output one, as in OVS.
func OutputAction(port, maxLen uint16) (Action, error) {
	if typ, ok := reservedPortActions[port]; ok && maxLen == 0 {
		return Action{Type: typ}, nil
	}
	switch {
	case port == ControllerPort && maxLen == 0:
		return Action{Type: ActController, Value: ControllerMaxLen, Table: ReasonAction}, nil
	case port == TablePort && maxLen == 0:
		return Action{Type: ActOutput, Port: TablePort}, nil
	}
	switch {
	case port == MaxPort:
		return Action{}, fmt.Errorf("output to port %d: OpenFlow's OFPP_MAX is not a port frames can leave by", port)
	case maxLen != 0 && maxLen < header.EthernetLen:
		return Action{}, fmt.Errorf("max_len %d is shorter than an Ethernet header", maxLen)
	}
	if err := CheckPort(port); err != nil {
		return Action{}, fmt.Errorf("output: %w", err)
	}
	return Action{Type: ActOutput, Port: port, Value: maxLen}, nil
}

// packetInReasons are controller(reason=)'s names of the OFPR_* codes.
var packetInReasons = []string{ReasonNoMatch: "no_match", ReasonAction: "action", ReasonInvalidTTL: "invalid_ttl"}

// controllerAction parses the controller action's argument, as OVS does:
// none, a decimal max_len (CONTROLLER:N), or a list of reason=, max_len=
// and id=, in any order, the last of a key winning.
func controllerAction(arg string) (Action, error) {
	a := Action{Type: ActController, Value: ControllerMaxLen, Table: ReasonAction}
	if strings.Trim(arg, "0123456789") == "" {
		if arg == "" {
			return a, nil
		}
		n, err := numberFromText("max_len", arg, math.MaxUint16)
		a.Value = uint16(n)
		return a, err
	}
	for _, part := range strings.Split(arg, ",") {
		key, value, _ := strings.Cut(part, "=")
		switch key {
		case "reason":
			i := slices.Index(packetInReasons, value)
			if i < 0 {
				return Action{}, fmt.Errorf("controller: unknown reason %q (want no_match, action or invalid_ttl)", value)
			}
			a.Table = uint8(i)
		case "max_len":
			n, err := numberFromText("max_len", value, math.MaxUint16)
			if err != nil {
				return Action{}, fmt.Errorf("controller: %w", err)
			}
			a.Value = uint16(n)
		case "id":
			n, err := numberFromText("controller id", value, math.MaxUint16)
			if err != nil {
				return Action{}, fmt.Errorf("controller: %w", err)
			}
			a.Port = uint16(n)
		case "userdata", "pause", "meter_id":
			return Action{}, fmt.Errorf("controller: %s is not supported (reason=, max_len= and id= are)", key)
		default:
			return Action{}, fmt.Errorf("controller: unknown key %q (want reason=, max_len= or id=)", key)
		}
	}
	return a, nil
}

// controllerText prints the controller action as ovs-ofctl does: the
// short form when it has the default reason and id.
func controllerText(a Action) string {
	if a.Table == ReasonAction && a.Port == 0 {
		return "CONTROLLER:" + strconv.Itoa(int(a.Value))
	}
	var parts []string
	if a.Table != ReasonAction {
		if int(a.Table) < len(packetInReasons) {
			parts = append(parts, "reason="+packetInReasons[a.Table])
		} else {
			parts = append(parts, "reason="+strconv.Itoa(int(a.Table)))
		}
	}
	if a.Value != ControllerMaxLen {
		parts = append(parts, "max_len="+strconv.Itoa(int(a.Value)))
	}
	if a.Port != 0 {
		parts = append(parts, "id="+strconv.Itoa(int(a.Port)))
	}
	return "controller(" + strings.Join(parts, ",") + ")"
}

// outputWithMaxLen parses output's "port=N,max_len=M": the frame sent is
// cut to its first M bytes, as OVS's truncate does.
func outputWithMaxLen(arg string, ports PortNames) (Action, *Prerequisite, error) {
	var port, maxLen uint16
	var hasPort, hasMaxLen bool
	for _, part := range strings.Split(arg, ",") {
		key, value, _ := strings.Cut(part, "=")
		switch key {
		case "port":
			out, _, err := outputTo(value, ports)
			if err != nil {
				return Action{}, nil, err
			}
			if out.Type != ActOutput || out.Port == TablePort {
				return Action{}, nil, fmt.Errorf("output(%s): max_len cuts frames to ports, not to %s", arg, value)
			}
			port, hasPort = out.Port, true
		case "max_len":
			n, err := numberFromText("max_len", value, math.MaxUint16)
			if err != nil {
				return Action{}, nil, err
			}
			if n == 0 {
				// OutputAction's "the whole frame".
				return Action{}, nil, fmt.Errorf("max_len %d is shorter than an Ethernet header", n)
			}
			maxLen, hasMaxLen = uint16(n), true
		default:
			return Action{}, nil, fmt.Errorf("output(%s): unknown argument %q (want port= and max_len=)", arg, key)
		}
	}
	if !hasPort || !hasMaxLen {
		return Action{}, nil, fmt.Errorf("output(%s): want both port= and max_len= (or write output:PORT)", arg)
	}
	a, err := OutputAction(port, maxLen)
	return a, nil, err
}

// bareOutput parses an action that is only a port number or name.
func bareOutput(text string, ports PortNames) (Action, *Prerequisite, error) {
	a, needs, err := outputTo(text, ports)
	if _, unknownName := errors.AsType[*NoPortError](err); unknownName {
		return Action{}, nil, fmt.Errorf("unknown action %q", text)
	}
	if a.Type == ActController {
		// A bare 65533 is OpenFlow 1.0's output action, whose max_len
		// OVS leaves at 0.
		a.Value = 0
	}
	return a, needs, err
}

func macAction(typ ActionType, text string) (Action, *Prerequisite, error) {
	mac, ok := macFromText(text)
	if !ok {
		return Action{}, nil, fmt.Errorf("invalid MAC address %q", text)
	}
	return Action{Type: typ, MAC: mac}, nil, nil
}

func ipv4Action(typ ActionType, text string) (Action, *Prerequisite, error) {
	addr, ok := ipFromText(text, 4)
	if !ok {
		return Action{}, nil, fmt.Errorf("invalid IPv4 address %q", text)
	}
	return Action{Type: typ, IPv4: [4]byte(addr)}, actionNeedsIPv4, nil
}

func pushVLANAction(text string) (Action, *Prerequisite, error) {
	tpid, err := numberFromText("push_vlan", text, math.MaxUint16)
	if err != nil {
		return Action{}, nil, err
	}
	a, err := PushVLANAction(uint16(tpid))
	return a, nil, err
}

// PushVLANAction is push_vlan of a tag of EtherType tpid.
func PushVLANAction(tpid uint16) (Action, error) {
	if !header.IsTPID(tpid) {
		return Action{}, fmt.Errorf("push_vlan 0x%04x: want 0x8100 or 0x88a8", tpid)
	}
	return Action{Type: ActPushVLAN, Value: tpid}, nil
}

// setFieldAction parses set_field's "VALUE[/MASK]->FIELD", into actions
// as actions makes them (SetFieldActions, or SetFieldActionsOfAnyFrame).
func setFieldAction(arg string, actions func(f *Field, v, mask Value) ([]Action, *Prerequisite, error)) ([]Action, *Prerequisite, error) {
	value, name, ok := cutLast(arg, "->")
	if !ok {
		return nil, nil, fmt.Errorf("set_field %q: want VALUE->FIELD", arg)
	}
	if isWireName(name) {
		return nil, nil, fmt.Errorf("set_field: unknown field %q (NXM and OXM names are for load and move)", name)
	}
	f, ok := fieldsByName[name]
	if ok && (f.Name == "tp_src" || f.Name == "tp_dst") {
		f = fieldsByName["tcp"+f.Name[2:]] // as OVS's set_field reads them
	}
	switch {
	case ok && f.readOnly:
		return nil, nil, fmt.Errorf("%s is read-only", name) // as ovs-ofctl says it
	case !ok || !f.Writable:
		return nil, nil, fmt.Errorf("set_field: unsupported field %q", name)
	}
	v, mask, err := setFieldValue(f, name, value)
	if err != nil {
		return nil, nil, err
	}
	return actions(f, v, mask)
}

// setFieldValue reads set_field's value (and mask) for field f, called
// name.
func setFieldValue(f *Field, name, text string) (v, mask Value, err error) {
	switch {
	case f.Carried || f == fieldVLANTCI || strings.Contains(text, "/"):
		if strings.Contains(text, "/") && !f.isMaskedSettable() {
			return v, mask, fmt.Errorf("set_field: %s takes no mask", name)
		}
		if v, mask, err = f.parseValue(text, nil); err != nil {
			err = fmt.Errorf("set_field: %w", err)
		}
		return v, mask, err
	case f.syntax == syntaxMAC:
		mac, ok := macFromText(text)
		if !ok {
			return v, mask, fmt.Errorf("invalid MAC address %q", text)
		}
		return ValueOfBytes(mac[:]), f.full(), nil
	case f.syntax == syntaxIPv4:
		addr, ok := ipFromText(text, 4)
		if !ok {
			return v, mask, fmt.Errorf("invalid IPv4 address %q", text)
		}
		return ValueOfBytes(addr), f.full(), nil
	case f.syntax == syntaxIPv6:
		if v, mask, err = f.parseValue(text, nil); err != nil {
			err = fmt.Errorf("set_field: %w", err)
		}
		return v, mask, err
	}
	n, err := numberFromText("set_field "+name, text, f.full().Lo)
	return Value{Lo: n}, f.full(), err
}

// SetFieldActions is set_field of v under mask into field f, and what it
// needs of the match. A mask of all ones writes the whole field
// (SetFieldAction). Another changes the mask's bits alone, with a load of
// each run of them from the lowest (LoadAction), none for a mask of 0:
// what OpenFlow 1.3 carries such a set_field as (NXAST_REG_LOAD), and how
// Open vSwitch prints it back. Printed as set_field, the write would not
// read back the same: OpenFlow 1.0 and 1.1, which ovs-ofctl picks for
// many flows, carry a set_field of a header as its whole-field action,
// the mask dropped.
func SetFieldActions(f *Field, v, mask Value) ([]Action, *Prerequisite, error) {
	if mask == f.full() {
		a, needs, err := SetFieldAction(f, v)
		if err != nil {
			return nil, nil, err
		}
		return []Action{a}, needs, nil
	}
	switch {
	case !f.Writable:
		return nil, nil, fmt.Errorf("set_field: unsupported field %q", f.Name)
	case !f.isMaskedSettable():
		return nil, nil, fmt.Errorf("set_field: %s takes no mask", f.Name)
	case v.BitLen() > int(f.Bits) || mask.BitLen() > int(f.Bits):
		return nil, nil, fmt.Errorf("set_field: %#x/%#x does not fit in %s's %d bits", v.Lo, mask.Lo, f.Name, f.Bits)
	}
	needs := f.actionNeeds()
	if h, ok := maskedHeaders[f.Name]; ok {
		needs = h.needs
	}
	var loads []Action
	for ofs, nbits := range mask.Runs() {
		a, _, err := LoadAction(f, ofs, nbits, v.Shr(ofs).And(Ones(nbits)))
		if err != nil {
			return nil, nil, err
		}
		loads = append(loads, a)
	}
	return loads, needs, nil
}

// SetFieldActionsOfAnyFrame are SetFieldActions where no match says what
// the frame is (a group's bucket), as OpenFlow's set_field means them: a
// whole TCP or UDP port is written as itself (ActSetField), which
// translation makes only on a frame of that protocol, where the mod_
// action would write the port of whichever of TCP, UDP and SCTP the frame
// has. A part of a port is a load, which translation checks the same way.
func SetFieldActionsOfAnyFrame(f *Field, v, mask Value) ([]Action, *Prerequisite, error) {
	as, needs, err := SetFieldActions(f, v, mask)
	if err == nil && len(as) == 1 && (as[0].Type == ActSetTpSrc || as[0].Type == ActSetTpDst) && as[0].Mask.IsZero() {
		as[0] = Action{Type: ActSetField, Field: f, Imm: v, Mask: mask}
	}
	return as, needs, err
}

// SetFieldAction is set_field of v into the whole of field f, and what it
// needs of the match: the mod_ action that does the same where there is
// one, so that set_field and mod_ are one action.
func SetFieldAction(f *Field, v Value) (Action, *Prerequisite, error) {
	if !f.Writable {
		return Action{}, nil, fmt.Errorf("set_field: unsupported field %q", f.Name)
	}
	if v.BitLen() > int(f.Bits) {
		return Action{}, nil, fmt.Errorf("set_field: %#x does not fit in %s's %d bits", v.Lo, f.Name, f.Bits)
	}
	if f.Carried || f == fieldVLANTCI || f.Frame != nil || f == mplsFields[ActSetMPLSTTL] {
		// vlan_tci and the fields with an InFrame have no mod_ action:
		// the pipeline works the write out (Field.AppendRewrites), as it
		// does a load's. OpenFlow 1.3 has set_field to mpls_ttl apart
		// from set_mpls_ttl, which OVS keeps apart.
		return Action{Type: ActSetField, Field: f, Imm: v, Mask: f.full()}, f.actionNeeds(), nil
	}
	switch f.Name {
	case "dl_src":
		return Action{Type: ActSetDlSrc, MAC: [6]byte(valueBytes(v, 6))}, nil, nil
	case "dl_dst":
		return Action{Type: ActSetDlDst, MAC: [6]byte(valueBytes(v, 6))}, nil, nil
	case "vlan_vid":
		// OpenFlow writes vlan_vid with its "present" bit (0x1000). It
		// changes a tag, never pushes one: the match must have a tag.
		return Action{Type: ActSetVLANVID, Value: uint16(v.Lo) &^ VLANCFI}, needsVLAN, nil
	case "vlan_pcp":
		return Action{Type: ActSetVLANPCP, Value: uint16(v.Lo)}, needsVLAN, nil
	case "nw_src":
		return Action{Type: ActSetNwSrc, IPv4: [4]byte(valueBytes(v, 4))}, actionNeedsIPv4, nil
	case "nw_dst":
		return Action{Type: ActSetNwDst, IPv4: [4]byte(valueBytes(v, 4))}, actionNeedsIPv4, nil
	case "ipv6_src":
		return Action{Type: ActSetIPv6Src, Imm: v}, actionNeedsIPv6, nil
	case "ipv6_dst":
		return Action{Type: ActSetIPv6Dst, Imm: v}, actionNeedsIPv6, nil
	case "ip_dscp":
		return Action{Type: ActSetNwTOS, Value: uint16(v.Lo) << 2}, actionNeedsIP, nil
	case "nw_ecn":
		return Action{Type: ActSetNwECN, Value: uint16(v.Lo)}, actionNeedsIP, nil
	case "nw_ttl":
		return Action{Type: ActSetNwTTL, Value: uint16(v.Lo)}, actionNeedsIP, nil
	case "tcp_src", "udp_src", "tcp_dst", "udp_dst":
		h := maskedHeaders[f.Name]
		return Action{Type: h.typ, Value: uint16(v.Lo)}, h.needs, nil
	case "mpls_label":
		return Action{Type: ActSetMPLSLabel, Imm: v}, actionNeedsMPLS, nil
	case "mpls_tc":
		return Action{Type: ActSetMPLSTC, Value: uint16(v.Lo)}, actionNeedsMPLS, nil
	}
	return Action{}, nil, fmt.Errorf("set_field: unsupported field %q", f.Name)
}

// The fields that set_field handles apart (set by init, once the field
// table is in).
var fieldVLANTCI, fieldIPv6Src, fieldIPv6Dst *Field

// maskedHeaders are the header fields whose part a load or set_field
// writes as the field's mod_ action under a mask, and that action.
var maskedHeaders = map[string]struct {
	typ   ActionType
	needs *Prerequisite
}{
	"dl_src": {ActSetDlSrc, nil}, "dl_dst": {ActSetDlDst, nil},
	"nw_src": {ActSetNwSrc, actionNeedsIPv4}, "nw_dst": {ActSetNwDst, actionNeedsIPv4},
	"tcp_src": {ActSetTpSrc, actionNeedsTCP}, "udp_src": {ActSetTpSrc, actionNeedsUDP},
	"tcp_dst": {ActSetTpDst, actionNeedsTCP}, "udp_dst": {ActSetTpDst, actionNeedsUDP},
}

// isMaskedSettable reports whether set_field may write the field under a
// mask.
func (f *Field) isMaskedSettable() bool {
	_, header := maskedHeaders[f.Name]
	return header || f.Maskable && (f.Carried || f == fieldVLANTCI || f == fieldIPv6Src || f == fieldIPv6Dst || f.Frame != nil)
}

// maskedHeaderSet is the write of v's bits under mask into f, a field of
// maskedHeaders: the field's mod_ action with Mask set, and Field naming
// it for printing.
func maskedHeaderSet(f *Field, v, mask Value) (Action, *Prerequisite) {
	h := maskedHeaders[f.Name]
	a := Action{Type: h.typ, Field: f, Mask: mask}
	switch h.typ {
	case ActSetDlSrc, ActSetDlDst:
		a.MAC = [6]byte(valueBytes(v.And(mask), 6))
	case ActSetNwSrc, ActSetNwDst:
		a.IPv4 = [4]byte(valueBytes(v.And(mask), 4))
	default:
		a.Value = uint16(v.And(mask).Lo)
	}
	return a, h.needs
}

// maskedValue is the value a masked header set writes under its Mask.
func (a *Action) maskedValue() Value {
	switch a.Type {
	case ActSetDlSrc, ActSetDlDst:
		return ValueOfBytes(a.MAC[:])
	case ActSetNwSrc, ActSetNwDst:
		return ValueOfBytes(a.IPv4[:])
	}
	return Value{Lo: uint64(a.Value)}
}

// maskedHeaderText prints a masked header set as the loads it is, one
// for each run of its Mask's bits (one, but in an action set).
func maskedHeaderText(a Action) string {
	v := a.maskedValue()
	var loads []string
	for ofs, nbits := range a.Mask.Runs() {
		loads = append(loads, loadText(subfield{field: a.Field, ofs: ofs, nbits: nbits}, v.Shr(ofs).And(Ones(nbits))))
	}
	return strings.Join(loads, ",")
}

// mergeMaskedSets gives the masked header set that does what a, then b,
// do to the same field: b's bits over a's.
func mergeMaskedSets(a, b Action) Action {
	merged, _ := maskedHeaderSet(a.Field, a.maskedValue().And(b.Mask.Not()).Or(b.maskedValue()), a.Mask.Or(b.Mask))
	return merged
}

func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

// FormatActions formats actions in ovs-ofctl's syntax, canonically
// ("output:2,mod_dl_src:02:00:00:00:00:01"); no actions is "drop".
// set_field prints as the mod_* action it is equivalent to.
func FormatActions(actions []Action) string {
	if len(actions) == 0 {
		return "drop"
	}
	texts := make([]string, 0, len(actions))
	for i := 0; i < len(actions); i++ {
		if actions[i].Type == ActWriteActions {
			var written []Action
			written, i = WrittenActions(actions, i)
			i--
			inner := ""
			if len(written) > 0 {
				inner = FormatActions(written)
			}
			texts = append(texts, "write_actions("+inner+")")
			continue
		}
		texts = append(texts, actionText(actions[i]))
	}
	return strings.Join(texts, ",")
}

func actionText(a Action) string {
	if text, ok := pipelineActionText(a); ok {
		return text
	}
	if !a.Mask.IsZero() {
		return maskedHeaderText(a)
	}
	switch a.Type {
	case ActOutput:
		if a.Value != 0 {
			return fmt.Sprintf("output(port=%s,max_len=%d)", portText(a.Port), a.Value)
		}
		return "output:" + portText(a.Port)
	case ActNormal:
		return "NORMAL"
	case ActFlood:
		return "FLOOD"
	case ActAll:
		return "ALL"
	case ActInPort:
		return "IN_PORT"
	case ActController:
		return controllerText(a)
	case ActSetDlSrc:
		return "mod_dl_src:" + macText(a.MAC)
	case ActSetDlDst:
		return "mod_dl_dst:" + macText(a.MAC)
	case ActSetVLANVID:
		return "mod_vlan_vid:" + strconv.Itoa(int(a.Value))
	case ActStripVLAN:
		return "strip_vlan"
	case ActPushVLAN:
		return fmt.Sprintf("push_vlan:0x%04x", a.Value)
	case ActSetNwSrc:
		return "mod_nw_src:" + ipText(a.IPv4[:])
	case ActSetNwDst:
		return "mod_nw_dst:" + ipText(a.IPv4[:])
	case ActSetTpSrc:
		return "mod_tp_src:" + strconv.Itoa(int(a.Value))
	case ActSetTpDst:
		return "mod_tp_dst:" + strconv.Itoa(int(a.Value))
	case ActDecTTL:
		return "dec_ttl"
	case ActSetNwTOS:
		return "mod_nw_tos:" + strconv.Itoa(int(a.Value))
	case ActSetNwECN:
		return "mod_nw_ecn:" + strconv.Itoa(int(a.Value))
	case ActSetNwTTL:
		return "mod_nw_ttl:" + strconv.Itoa(int(a.Value))
	case ActSetVLANPCP:
		return "mod_vlan_pcp:" + strconv.Itoa(int(a.Value))
	case ActSetIPv6Src:
		return "set_field:" + fieldsByName["ipv6_src"].formatValue(a.Imm, Ones(128)) + "->ipv6_src"
	case ActSetIPv6Dst:
		return "set_field:" + fieldsByName["ipv6_dst"].formatValue(a.Imm, Ones(128)) + "->ipv6_dst"
	case ActGroup:
		return "group:" + strconv.FormatUint(uint64(a.Group), 10)
	case ActMeter:
		return "meter:" + strconv.FormatUint(uint64(a.Meter), 10)
	case ActPushMPLS:
		return fmt.Sprintf("push_mpls:0x%04x", a.Value)
	case ActPopMPLS:
		return fmt.Sprintf("pop_mpls:0x%04x", a.Value)
	case ActSetMPLSLabel:
		// set_mpls_label and set_mpls_tc are set_field in OpenFlow 1.3,
		// as OVS sends them, and prints them back.
		return fmt.Sprintf("set_field:%d->mpls_label", a.Imm.Lo)
	case ActSetMPLSTC:
		return fmt.Sprintf("set_field:%d->mpls_tc", a.Value)
	case ActSetMPLSTTL:
		return fmt.Sprintf("set_mpls_ttl(%d)", a.Value)
	case ActDecMPLSTTL:
		return "dec_mpls_ttl"
	case ActCopyTTLOut:
		return "copy_ttl_out"
	case ActCopyTTLIn:
		return "copy_ttl_in"
	case ActCT:
		return ctText(a.CT)
	case ActCTClear:
		return "ct_clear"
	}
	return fmt.Sprintf("unknown_action_type_%d", a.Type)
}
