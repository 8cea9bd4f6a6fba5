package ofagent

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/openflow"
)

// Actions and instructions. xswitch's rule holds one list: the actions
// of apply_actions, then the instructions in OpenFlow's order
// (clear_actions, write_actions and the actions it writes,
// write_metadata, goto_table). Each OpenFlow action becomes the flow
// action that Open vSwitch makes of it, built by the flow package's
// constructors, which make the checks the flow syntax makes (writable
// fields, prerequisites, goto_table forward only); their failures become
// the OpenFlow error the specification names.

// The packet-in reason of an output to the controller (OFPR_ACTION), and
// Nicira's NXAST_OUTPUT_TRUNC, which carries output(port=N,max_len=M).
const (
	ofprAction       = 1
	nxastOutputTrunc = 39
	ofPort10InPort   = 0xfff8 // OpenFlow 1.0's OFPP_IN_PORT, NXAST_RESUBMIT's "the frame's own"
	etherTypeVLAN    = flow.EtherTypeVLAN
)

func fieldNamed(name string) *flow.Field {
	f, ok := flow.FieldByName(name)
	if !ok {
		panic("ofagent: no field " + name)
	}
	return f
}

var (
	fieldDlSrc     = fieldNamed("dl_src")
	fieldDlDst     = fieldNamed("dl_dst")
	fieldVLANVID   = fieldNamed("vlan_vid")
	fieldVLANPCP   = fieldNamed("vlan_pcp")
	fieldNwSrc     = fieldNamed("nw_src")
	fieldNwDst     = fieldNamed("nw_dst")
	fieldIPv6Src   = fieldNamed("ipv6_src")
	fieldIPv6Dst   = fieldNamed("ipv6_dst")
	fieldIPDSCP    = fieldNamed("ip_dscp")
	fieldNwECN     = fieldNamed("nw_ecn")
	fieldNwTTL     = fieldNamed("nw_ttl")
	fieldTCPSrc    = fieldNamed("tcp_src")
	fieldTCPDst    = fieldNamed("tcp_dst")
	fieldUDPSrc    = fieldNamed("udp_src")
	fieldUDPDst    = fieldNamed("udp_dst")
	fieldSCTPSrc   = fieldNamed("sctp_src")
	fieldSCTPDst   = fieldNamed("sctp_dst")
	fieldMPLSLabel = fieldNamed("mpls_label")
	fieldMPLSTC    = fieldNamed("mpls_tc")
)

// hasVLAN reports whether m says the frame has a tag, as a set_field of
// vlan_vid needs.
func hasVLAN(m *flow.Match) bool { return fieldVLANVID.Needs.Holds(m) }

func actionError(code uint16, format string, args ...any) error {
	return &openflow.DecodeError{Type: openflow.ErrBadAction, Code: code, Reason: fmt.Sprintf(format, args...)}
}

func instructionError(code uint16, format string, args ...any) error {
	return &openflow.DecodeError{Type: openflow.ErrBadInstruction, Code: code, Reason: fmt.Sprintf(format, args...)}
}

// instructionsFromOF gives a rule's action list (flow.Action's instruction
// forms included: ActMeter, ActGotoTable, ActWriteMetadata, ActClearActions,
// ActWriteActions) for a rule with match m in table m.Key.Table.
func instructionsFromOF(is []openflow.Instruction, m flow.Match) ([]flow.Action, error) {
	var apply, write []openflow.Action
	var metadata *openflow.InstructionWriteMetadata
	var gotoTable *openflow.InstructionGotoTable
	var meter *openflow.InstructionMeter
	var seen [openflow.InstructionTypeMeter + 1]bool
	hasWrite, clear := false, false
	for _, in := range is {
		t := in.InstructionType()
		if t < openflow.InstructionTypeGotoTable || t > openflow.InstructionTypeMeter {
			if t == openflow.InstructionTypeExperimenter {
				return nil, instructionError(openflow.BadInstructionUnsupInst, "experimenter instructions are not supported")
			}
			return nil, instructionError(openflow.BadInstructionUnknownInst, "unknown instruction type %d", t)
		}
		if seen[t] {
			return nil, instructionError(openflow.BadInstructionUnsupInst, "instruction type %d given twice", t)
		}
		seen[t] = true
		switch in := in.(type) {
		case openflow.InstructionApplyActions:
			apply = in.Actions
		case openflow.InstructionWriteActions:
			write, hasWrite = in.Actions, true
		case openflow.InstructionClearActions:
			clear = true
		case openflow.InstructionWriteMetadata:
			metadata = &in
		case openflow.InstructionGotoTable:
			gotoTable = &in
		case openflow.InstructionMeter:
			meter = &in
		}
	}
	var out []flow.Action
	if meter != nil {
		if meter.MeterID == 0 || meter.MeterID > flow.MeterMax {
			return nil, &openflow.DecodeError{Type: openflow.ErrMeterModFailed, Code: uint16(flow.MeterInvalid),
				Reason: fmt.Sprintf("meter %#x is a reserved meter", meter.MeterID)}
		}
		out = append(out, flow.Action{Type: flow.ActMeter, Meter: meter.MeterID})
	}
	// One decoder for both lists: the written actions are checked
	// against the frame the applied ones leave, as Open vSwitch checks
	// them.
	d := actionDecoder{cur: m}
	applied, err := d.actions(apply)
	if err != nil {
		return nil, err
	}
	out = append(out, applied...)
	if clear {
		out = append(out, flow.Action{Type: flow.ActClearActions})
	}
	if hasWrite {
		written, err := d.actions(write)
		if err != nil {
			return nil, err
		}
		if written, err = flow.WriteActions(written); err != nil {
			return nil, actionError(openflow.BadActionUnsupportedOrder, "%v", err)
		}
		out = append(out, written...)
	}
	if metadata != nil {
		out = append(out, flow.WriteMetadataAction(metadata.Metadata, metadata.Mask))
	}
	if gotoTable != nil {
		a, err := flow.GotoTableAction(gotoTable.TableID, m.Key.Table)
		if err != nil {
			return nil, instructionError(openflow.BadInstructionBadTableID, "%v", err)
		}
		out = append(out, a)
	}
	return out, nil
}

// instructionsToOF gives the instructions of a rule's action list, for a
// rule with match m: its leading actions as apply_actions.
func instructionsToOF(as []flow.Action, m flow.Match) []openflow.Instruction {
	var out []openflow.Instruction
	if id, ok := flow.MeterOf(as); ok {
		out = append(out, openflow.InstructionMeter{MeterID: id})
		as = as[1:] // the meter instruction comes first
	}
	i := 0
	for i < len(as) && !isInstruction(as[i].Type) {
		i++
	}
	if i > 0 {
		out = append(out, openflow.InstructionApplyActions{Actions: actionsToOF(as[:i], m)})
	}
	for i < len(as) {
		a := as[i]
		switch a.Type {
		case flow.ActClearActions:
			out = append(out, openflow.InstructionClearActions{})
		case flow.ActWriteActions:
			var written []flow.Action
			written, i = flow.WrittenActions(as, i)
			out = append(out, openflow.InstructionWriteActions{Actions: actionsToOF(written, m)})
			continue
		case flow.ActWriteMetadata:
			out = append(out, openflow.InstructionWriteMetadata{Metadata: a.Imm.Lo, Mask: a.Mask.Lo})
		case flow.ActGotoTable:
			out = append(out, openflow.InstructionGotoTable{TableID: a.Table})
		}
		i++
	}
	return out
}

func isInstruction(t flow.ActionType) bool {
	switch t {
	case flow.ActClearActions, flow.ActWriteActions, flow.ActWriteMetadata, flow.ActGotoTable:
		return true
	}
	return false
}

// actionDecoder reads an action list for a rule with match m. cur is
// what the frame is known to be at the action being read: push_vlan
// gives it a tag, which a set_field of vlan_vid then needs, and pop_vlan
// takes it away; push_mpls and pop_mpls give it their EtherType
// (flow.Match.Follow), as Open vSwitch checks them. anyFrame says that the
// list has no match of its own, a group's bucket's: its prerequisites are
// not checked. inCT says that the list is a ct()'s, which holds writes of
// the connection's fields alone (flow.CheckPlace).
type actionDecoder struct {
	cur      flow.Match
	anyFrame bool
	inCT     bool
}

// actionsFromOF gives a plain action list (PACKET_OUT's, and those inside
// apply_actions and write_actions) for a rule with match m.
func actionsFromOF(as []openflow.Action, m flow.Match) ([]flow.Action, error) {
	d := actionDecoder{cur: m}
	return d.actions(as)
}

func (d *actionDecoder) actions(as []openflow.Action) ([]flow.Action, error) {
	out := make([]flow.Action, 0, len(as))
	for i := 0; i < len(as); i++ {
		// Open vSwitch sends mod_vlan_vid and mod_vlan_pcp, which push a
		// tag when there is none, as a push_vlan before the set_field
		// where the frame has no tag: they are one action again.
		if push, ok := as[i].(openflow.ActionPushVLAN); ok && push.EtherType == etherTypeVLAN &&
			!hasVLAN(&d.cur) && i+1 < len(as) && isVLANSet(as[i+1]) {
			i++
			d.tag()
		}
		n := len(out)
		var err error
		if out, err = d.appendAction(out, as[i]); err != nil {
			return nil, err
		}
		for _, a := range out[n:] {
			d.cur.Follow(a)
		}
	}
	return out, nil
}

// isVLANSet reports whether a is a set_field of vlan_vid or vlan_pcp.
func isVLANSet(a openflow.Action) bool {
	sf, ok := a.(openflow.ActionSetField)
	if !ok {
		return false
	}
	f, _, ok := flow.FieldByOXM(sf.Field.Class, sf.Field.Field)
	return ok && (f == fieldVLANVID || f == fieldVLANPCP)
}

// tag and untag make cur say that the frame has an outer tag, or that its
// outer tag is unknown.
func (d *actionDecoder) tag() {
	d.cur.Key.VLANTCI |= vlanCFI
	d.cur.Mask.VLANTCI |= vlanCFI
}

func (d *actionDecoder) untag() { d.cur.Key.VLANTCI, d.cur.Mask.VLANTCI = 0, 0 }

// appendAction appends the flow actions of oa: one, or for a set_field
// of part of a field, one for each run of its mask's bits
// (flow.SetFieldActions).
func (d *actionDecoder) appendAction(out []flow.Action, oa openflow.Action) ([]flow.Action, error) {
	n := len(out)
	var err error
	switch a := oa.(type) {
	case openflow.ActionSetField:
		out, err = d.setField(out, a.Field, false)
	case openflow.NXRegLoad2:
		out, err = d.setField(out, a.Field, true)
	default:
		var fa flow.Action
		if fa, err = d.action(oa); err == nil {
			out = append(out, fa)
		}
	}
	if err != nil {
		return nil, err
	}
	for _, a := range out[n:] {
		if err := flow.CheckPlace(a, d.inCT); err != nil {
			return nil, placeError(err)
		}
	}
	return out, nil
}

// placeError is the OpenFlow error of an action where it may not be, as
// Open vSwitch answers it (ofpacts_verify_nested).
func placeError(err error) error {
	if errors.Is(err, flow.ErrCTFieldOutsideCT) {
		return actionError(openflow.BadActionBadSetArgument, "%v", err)
	}
	return actionError(openflow.BadActionBadArgument, "%v", err)
}

func (d *actionDecoder) action(oa openflow.Action) (flow.Action, error) {
	switch a := oa.(type) {
	case openflow.ActionOutput:
		return outputFromOF(a)
	case openflow.ActionPushVLAN:
		fa, err := flow.PushVLANAction(a.EtherType)
		if err != nil {
			return flow.Action{}, actionError(openflow.BadActionBadArgument, "%v", err)
		}
		d.tag()
		return fa, nil
	case openflow.ActionPopVLAN:
		d.untag()
		return flow.Action{Type: flow.ActStripVLAN}, nil
	case openflow.ActionPushMPLS:
		fa, err := flow.PushMPLSAction(a.EtherType)
		if err != nil {
			return flow.Action{}, actionError(openflow.BadActionBadArgument, "%v", err)
		}
		return fa, nil
	case openflow.ActionPopMPLS:
		fa, needs := flow.PopMPLSAction(a.EtherType)
		return d.checked(fa, needs, nil, "pop_mpls")
	case openflow.ActionSetMPLSTTL:
		fa, needs := flow.SetMPLSTTLAction(a.TTL)
		return d.checked(fa, needs, nil, "set_mpls_ttl")
	case openflow.ActionDecMPLSTTL:
		fa, needs := flow.DecMPLSTTLAction()
		return d.checked(fa, needs, nil, "dec_mpls_ttl")
	case openflow.ActionCopyTTLOut:
		fa, needs := flow.CopyTTLOutAction()
		return d.checked(fa, needs, nil, "copy_ttl_out")
	case openflow.ActionCopyTTLIn:
		fa, needs := flow.CopyTTLInAction()
		return d.checked(fa, needs, nil, "copy_ttl_in")
	case openflow.ActionSetNwTTL:
		fa, needs, err := flow.SetFieldAction(fieldNwTTL, flow.Value{Lo: uint64(a.TTL)})
		return d.checked(fa, needs, err, "set_nw_ttl")
	case openflow.ActionDecNwTTL:
		fa, needs := flow.DecTTLAction()
		return d.checked(fa, needs, nil, "dec_nw_ttl")
	case openflow.NXRegLoad:
		return d.load(a)
	case openflow.NXRegMove:
		return d.move(a)
	case openflow.NXResubmit:
		return resubmitFromOF(a)
	case openflow.NXController:
		return controllerAction(a.MaxLen, a.ControllerID, a.Reason), nil
	case openflow.NXController2:
		if a.UserData != nil || a.Pause {
			return flow.Action{}, actionError(openflow.BadActionBadArgument, "controller: userdata and pause are not supported")
		}
		return controllerAction(a.MaxLen, a.ControllerID, a.Reason), nil
	case openflow.ActionGroup:
		if a.GroupID > flow.GroupMax {
			return flow.Action{}, actionError(openflow.BadActionBadOutGroup, "group %#x is a reserved group", a.GroupID)
		}
		return flow.Action{Type: flow.ActGroup, Group: a.GroupID}, nil
	case openflow.NXConntrack:
		return d.conntrack(a)
	case openflow.NXCTClear:
		return flow.Action{Type: flow.ActCTClear}, nil
	case openflow.NXNAT:
		return flow.Action{}, actionError(openflow.BadActionBadSetArgument, `Cannot have NAT action outside of "ct" action`)
	case openflow.ActionExperimenter:
		return experimenterFromOF(a)
	}
	return flow.Action{}, actionError(openflow.BadActionBadType, "action type %d is not supported", oa.ActionType())
}

// checked returns the flow action a, or the OpenFlow error of err or of
// needs (check).
func (d *actionDecoder) checked(a flow.Action, needs *flow.Prerequisite, err error, what string) (flow.Action, error) {
	if err := d.check(needs, err, what); err != nil {
		return flow.Action{}, err
	}
	return a, nil
}

// check gives the OpenFlow error of err (a value the field cannot take),
// or of a prerequisite the frame does not meet.
func (d *actionDecoder) check(needs *flow.Prerequisite, err error, what string) error {
	switch {
	case err != nil:
		return actionError(openflow.BadActionBadSetArgument, "%v", err)
	case needs != nil && !d.anyFrame && !needs.Holds(&d.cur):
		return actionError(openflow.BadActionMatchInconsistent, "%s requires %s", what, needs.Unmet(&d.cur))
	}
	return nil
}

// conntrack reads NXAST_CT: its arguments, and the actions it runs, of
// which an NXAST_NAT is its nat and the others, writes of the
// connection's fields, its exec.
func (d *actionDecoder) conntrack(a openflow.NXConntrack) (flow.Action, error) {
	if a.Flags&^(openflow.NXCTCommit|openflow.NXCTForce) != 0 {
		return flow.Action{}, actionError(openflow.BadActionBadArgument, "ct: unknown flags %#x", a.Flags)
	}
	c := &flow.Conntrack{Commit: a.Flags&openflow.NXCTCommit != 0, Force: a.Flags&openflow.NXCTForce != 0,
		Zone: a.ZoneImm, Table: a.RecircTable, Alg: a.Alg}
	if a.ZoneSrc != 0 {
		f, ok := subfieldFromOF(a.ZoneSrc)
		switch {
		case !ok:
			return flow.Action{}, actionError(openflow.BadActionBadArgument, "ct: zone from field %#x, which xswitch does not have", a.ZoneSrc)
		case a.ZoneNBits != 16:
			// Open vSwitch's answer (decode_ct_zone).
			return flow.Action{}, actionError(openflow.BadActionBadSetLen, "ct: zone of %d bits, not 16", a.ZoneNBits)
		}
		c.ZoneSrc, c.ZoneOfs = f, uint8(min(a.ZoneOfs, 0xff))
	}
	nested := actionDecoder{cur: d.cur, anyFrame: d.anyFrame, inCT: true}
	for _, na := range a.Actions {
		var err error
		switch na := na.(type) {
		case openflow.NXNAT:
			if c.NAT != nil {
				return flow.Action{}, actionError(openflow.BadActionBadArgument, "ct: a second nat")
			}
			c.NAT, err = natFromOF(na)
		default:
			c.Exec, err = nested.appendAction(c.Exec, na)
		}
		if err != nil {
			return flow.Action{}, err
		}
	}
	fa, needs, err := flow.CTAction(c)
	if err != nil {
		return flow.Action{}, actionError(openflow.BadActionBadArgument, "%v", err)
	}
	return d.checked(fa, needs, nil, "ct")
}

// natFlags are NXAST_NAT's flags, by what they set of a flow.NAT.
var natFlags = []struct {
	bit uint16
	set func(n *flow.NAT) *bool
}{
	{openflow.NXNATSrc, func(n *flow.NAT) *bool { return &n.Src }},
	{openflow.NXNATDst, func(n *flow.NAT) *bool { return &n.Dst }},
	{openflow.NXNATPersistent, func(n *flow.NAT) *bool { return &n.Persistent }},
	{openflow.NXNATProtoHash, func(n *flow.NAT) *bool { return &n.Hash }},
	{openflow.NXNATProtoRand, func(n *flow.NAT) *bool { return &n.Random }},
}

// natFromOF reads NXAST_NAT, which flow.CTAction checks.
func natFromOF(a openflow.NXNAT) (*flow.NAT, error) {
	n := &flow.NAT{Min: a.Min, Max: a.Max, MinPort: a.ProtoMin, MaxPort: a.ProtoMax}
	flags := a.Flags
	for _, f := range natFlags {
		*f.set(n) = flags&f.bit != 0
		flags &^= f.bit
	}
	if flags != 0 {
		return nil, actionError(openflow.BadActionBadArgument, "nat: unknown flags %#x", flags)
	}
	return n, nil
}

// natToOF is NXAST_NAT of n.
func natToOF(n *flow.NAT) openflow.NXNAT {
	a := openflow.NXNAT{Min: n.Min, Max: n.Max, ProtoMin: n.MinPort, ProtoMax: n.MaxPort}
	for _, f := range natFlags {
		if *f.set(n) {
			a.Flags |= f.bit
		}
	}
	return a
}

// conntrackToOF is NXAST_CT of c, for a rule with match m: its nat first,
// as Open vSwitch sends a ct() that says it first.
func conntrackToOF(c *flow.Conntrack, m flow.Match) openflow.NXConntrack {
	a := openflow.NXConntrack{ZoneImm: c.Zone, RecircTable: c.Table, Alg: c.Alg}
	if c.Commit {
		a.Flags |= openflow.NXCTCommit
	}
	if c.Force {
		a.Flags |= openflow.NXCTForce
	}
	if c.ZoneSrc != nil {
		a.ZoneImm, a.ZoneSrc, a.ZoneOfs, a.ZoneNBits = 0, subfieldToOF(c.ZoneSrc), uint16(c.ZoneOfs), 16
	}
	if c.NAT != nil {
		a.Actions = append(a.Actions, natToOF(c.NAT))
	}
	a.Actions = append(a.Actions, actionsToOF(c.Exec, m)...)
	return a
}

func outputFromOF(a openflow.ActionOutput) (flow.Action, error) {
	if a.Port == openflow.PortController {
		return controllerAction(a.MaxLen, 0, ofprAction), nil
	}
	p, ok := portFromOF(a.Port)
	if !ok {
		return flow.Action{}, actionError(openflow.BadActionBadOutPort, "output to port %#x", a.Port)
	}
	// max_len is the controller's alone (OpenFlow 1.3, 7.2.5).
	fa, err := flow.OutputAction(p, 0)
	if err != nil {
		return flow.Action{}, actionError(openflow.BadActionBadOutPort, "%v", err)
	}
	return fa, nil
}

func controllerAction(maxLen, id uint16, reason uint8) flow.Action {
	return flow.Action{Type: flow.ActController, Value: maxLen, Port: id, Table: reason}
}

func resubmitFromOF(a openflow.NXResubmit) (flow.Action, error) {
	fa := flow.Action{Type: flow.ActResubmit, Table: a.Table}
	if a.InPort != ofPort10InPort {
		if err := flow.CheckPort(a.InPort); err != nil {
			return flow.Action{}, actionError(openflow.BadActionBadArgument, "resubmit: %v", err)
		}
		fa.Port = a.InPort
	}
	return fa, nil
}

// experimenterFromOF reads the one Nicira action that the codec does not
// model and xswitch has: NXAST_OUTPUT_TRUNC (subtype, port, max_len).
func experimenterFromOF(a openflow.ActionExperimenter) (flow.Action, error) {
	if a.Experimenter != openflow.NiciraExperimenter {
		return flow.Action{}, actionError(openflow.BadActionBadExperimenter, "experimenter %#x", a.Experimenter)
	}
	if len(a.Data) < 2 || binary.BigEndian.Uint16(a.Data) != nxastOutputTrunc {
		return flow.Action{}, actionError(openflow.BadActionBadExpType, "Nicira action not supported")
	}
	if len(a.Data) != 8 {
		return flow.Action{}, actionError(openflow.BadActionBadLen, "output_trunc of %d bytes", len(a.Data)+8)
	}
	port, maxLen := binary.BigEndian.Uint16(a.Data[2:]), binary.BigEndian.Uint32(a.Data[4:])
	if maxLen == 0 || maxLen > 0xffff {
		return flow.Action{}, actionError(openflow.BadActionBadArgument, "output_trunc max_len %d", maxLen)
	}
	fa, err := flow.OutputAction(port, uint16(maxLen))
	if err != nil {
		return flow.Action{}, actionError(openflow.BadActionBadArgument, "%v", err)
	}
	return fa, nil
}

// setField appends the actions of a set_field (OFPAT_SET_FIELD) or, masked,
// of NXAST_REG_LOAD2.
func (d *actionDecoder) setField(out []flow.Action, o openflow.OXM, masked bool) ([]flow.Action, error) {
	f, c, ok := flow.FieldByOXM(o.Class, o.Field)
	if !ok || !f.Writable || o.Class == openflow.OXMClassExperimenter {
		return nil, actionError(openflow.BadActionBadSetType, "set_field: OXM %#x:%d cannot be written", o.Class, o.Field)
	}
	if len(o.Value) != int(c.Bytes) || o.Mask != nil && len(o.Mask) != len(o.Value) {
		return nil, actionError(openflow.BadActionBadSetLen, "set_field %s: %d bytes, not %d", f.Name, len(o.Value), c.Bytes)
	}
	v, mask := flow.ValueOfBytes(o.Value), flow.Ones(f.Bits)
	if o.Mask != nil {
		if !masked {
			return nil, actionError(openflow.BadActionBadSetArgument, "set_field %s: OpenFlow 1.3's set_field takes no mask", f.Name)
		}
		mask = flow.ValueOfBytes(o.Mask)
	}
	if isOXM(openflow.OXMClassOpenFlowBasic, openflow.OXMInPort, c) {
		p, ok := portFromOF(uint32(v.Lo))
		if !ok {
			return nil, actionError(openflow.BadActionBadSetArgument, "set_field in_port %d", v.Lo)
		}
		v = flow.Value{Lo: uint64(p)}
	}
	setField := flow.SetFieldActions
	if d.anyFrame {
		setField = flow.SetFieldActionsOfAnyFrame
	}
	as, needs, err := setField(f, v, mask)
	if err := d.check(needs, err, "set_field to "+f.Name); err != nil {
		return nil, err
	}
	if f == fieldVLANVID || f == fieldVLANPCP {
		d.tag()
	}
	return append(out, as...), nil
}

// subfieldFromOF is the field an NXM/OXM header names in NXAST_REG_LOAD and
// NXAST_REG_MOVE.
func subfieldFromOF(header uint32) (*flow.Field, bool) {
	o := openflow.OXMFromHeader(header)
	f, c, ok := flow.FieldByOXM(o.Class, o.Field)
	return f, ok && header&0x100 == 0 && header&0xff == uint32(c.Bytes)
}

func (d *actionDecoder) load(a openflow.NXRegLoad) (flow.Action, error) {
	f, ok := subfieldFromOF(a.Dst)
	if !ok || !f.Writable {
		return flow.Action{}, actionError(openflow.BadActionBadSetType, "load: field %#x cannot be written", a.Dst)
	}
	fa, needs, err := flow.LoadAction(f, uint(a.Ofs), uint(a.NBits), flow.Value{Lo: a.Value})
	if err != nil {
		return flow.Action{}, actionError(openflow.BadActionBadArgument, "%v", err)
	}
	return d.checked(fa, needs, nil, "load")
}

func (d *actionDecoder) move(a openflow.NXRegMove) (flow.Action, error) {
	src, ok := subfieldFromOF(a.Src)
	if !ok {
		return flow.Action{}, actionError(openflow.BadActionBadArgument, "move: no field %#x", a.Src)
	}
	dst, ok := subfieldFromOF(a.Dst)
	if !ok || !dst.Writable {
		return flow.Action{}, actionError(openflow.BadActionBadSetType, "move: field %#x cannot be written", a.Dst)
	}
	fa, needs, err := flow.MoveAction(src, uint(a.SrcOfs), dst, uint(a.DstOfs), uint(a.NBits))
	if err != nil {
		return flow.Action{}, actionError(openflow.BadActionBadArgument, "%v", err)
	}
	return d.checked(fa, needs, nil, "move")
}

// actionsToOF gives a plain action list's OpenFlow form, as ovs-ofctl -O
// OpenFlow13 sends it, for a rule with match m: mod_tp_src is a set_field
// of tcp_src or udp_src by m's protocol, and mod_vlan_vid pushes a tag
// first when m has none.
func actionsToOF(as []flow.Action, m flow.Match) []openflow.Action {
	out := make([]openflow.Action, 0, len(as))
	tagged := hasVLAN(&m)
	for _, a := range as {
		out = appendActionOF(out, a, &m, tagged)
		// Whether the frame has a tag at the next action, as Open
		// vSwitch follows it.
		switch a.Type {
		case flow.ActPushVLAN, flow.ActSetVLANVID, flow.ActSetVLANPCP:
			tagged = true
		case flow.ActStripVLAN:
			tagged = false
		}
	}
	return out
}

// appendActionOF appends a's OpenFlow form for a rule with match m, where
// tagged says whether the frame has a tag when a runs.
func appendActionOF(out []openflow.Action, a flow.Action, m *flow.Match, tagged bool) []openflow.Action {
	switch a.Type {
	case flow.ActOutput:
		if a.Value == 0 {
			return append(out, openflow.ActionOutput{Port: portToOF(a.Port)})
		}
		data := make([]byte, 8)
		binary.BigEndian.PutUint16(data, nxastOutputTrunc)
		binary.BigEndian.PutUint16(data[2:], a.Port)
		binary.BigEndian.PutUint32(data[4:], uint32(a.Value))
		return append(out, openflow.ActionExperimenter{Experimenter: openflow.NiciraExperimenter, Data: data})
	case flow.ActGroup:
		return append(out, openflow.ActionGroup{GroupID: a.Group})
	case flow.ActNormal:
		return append(out, openflow.ActionOutput{Port: openflow.PortNormal})
	case flow.ActFlood:
		return append(out, openflow.ActionOutput{Port: openflow.PortFlood})
	case flow.ActAll:
		return append(out, openflow.ActionOutput{Port: openflow.PortAll})
	case flow.ActInPort:
		return append(out, openflow.ActionOutput{Port: openflow.PortInPort})
	case flow.ActController:
		if a.Port == 0 && a.Table == ofprAction {
			return append(out, openflow.ActionOutput{Port: openflow.PortController, MaxLen: a.Value})
		}
		return append(out, openflow.NXController{MaxLen: a.Value, ControllerID: a.Port, Reason: a.Table})
	case flow.ActSetDlSrc:
		return appendHeaderSetOF(out, &a, fieldDlSrc, flow.ValueOfBytes(a.MAC[:]))
	case flow.ActSetDlDst:
		return appendHeaderSetOF(out, &a, fieldDlDst, flow.ValueOfBytes(a.MAC[:]))
	case flow.ActSetVLANVID, flow.ActSetVLANPCP:
		if !tagged {
			out = append(out, openflow.ActionPushVLAN{EtherType: etherTypeVLAN})
		}
		if a.Type == flow.ActSetVLANPCP {
			return append(out, setFieldOF(fieldVLANPCP, flow.Value{Lo: uint64(a.Value)}))
		}
		return append(out, setFieldOF(fieldVLANVID, flow.Value{Lo: uint64(a.Value | openflow.VLANPresent)}))
	case flow.ActStripVLAN:
		return append(out, openflow.ActionPopVLAN{})
	case flow.ActPushVLAN:
		return append(out, openflow.ActionPushVLAN{EtherType: a.Value})
	case flow.ActSetNwSrc:
		return appendHeaderSetOF(out, &a, fieldNwSrc, flow.ValueOfBytes(a.IPv4[:]))
	case flow.ActSetNwDst:
		return appendHeaderSetOF(out, &a, fieldNwDst, flow.ValueOfBytes(a.IPv4[:]))
	case flow.ActSetIPv6Src:
		return append(out, setFieldOF(fieldIPv6Src, a.Imm))
	case flow.ActSetIPv6Dst:
		return append(out, setFieldOF(fieldIPv6Dst, a.Imm))
	case flow.ActSetTpSrc, flow.ActSetTpDst:
		// The field of the match's protocol: TCP's, UDP's or SCTP's.
		fields := []*flow.Field{fieldTCPSrc, fieldUDPSrc, fieldSCTPSrc}
		if a.Type == flow.ActSetTpDst {
			fields = []*flow.Field{fieldTCPDst, fieldUDPDst, fieldSCTPDst}
		}
		f := fields[1]
		for _, g := range fields {
			if g.Needs.Holds(m) {
				f = g
			}
		}
		return appendHeaderSetOF(out, &a, f, flow.Value{Lo: uint64(a.Value)})
	case flow.ActDecTTL:
		return append(out, openflow.ActionDecNwTTL{})
	case flow.ActSetNwTOS:
		return append(out, setFieldOF(fieldIPDSCP, flow.Value{Lo: uint64(a.Value >> 2)}))
	case flow.ActSetNwECN:
		return append(out, setFieldOF(fieldNwECN, flow.Value{Lo: uint64(a.Value)}))
	case flow.ActSetNwTTL:
		return append(out, openflow.ActionSetNwTTL{TTL: uint8(a.Value)})
	case flow.ActPushMPLS:
		return append(out, openflow.ActionPushMPLS{EtherType: a.Value})
	case flow.ActPopMPLS:
		return append(out, openflow.ActionPopMPLS{EtherType: a.Value})
	case flow.ActSetMPLSLabel:
		// OpenFlow 1.3 has set_field for the label and the TC, which
		// Open vSwitch sends, and an action of its own for the TTL.
		return append(out, setFieldOF(fieldMPLSLabel, a.Imm))
	case flow.ActSetMPLSTC:
		return append(out, setFieldOF(fieldMPLSTC, flow.Value{Lo: uint64(a.Value)}))
	case flow.ActSetMPLSTTL:
		return append(out, openflow.ActionSetMPLSTTL{TTL: uint8(a.Value)})
	case flow.ActDecMPLSTTL:
		return append(out, openflow.ActionDecMPLSTTL{})
	case flow.ActCopyTTLOut:
		return append(out, openflow.ActionCopyTTLOut{})
	case flow.ActCopyTTLIn:
		return append(out, openflow.ActionCopyTTLIn{})
	case flow.ActLoad:
		return append(out, loadOF(a.Field, uint(a.Ofs), uint(a.NBits), a.Imm.Shr(uint(a.Ofs))))
	case flow.ActSetField:
		return append(out, setFieldOF(a.Field, a.Imm))
	case flow.ActMove:
		return append(out, openflow.NXRegMove{NBits: uint16(a.NBits), SrcOfs: uint16(a.SrcOfs), DstOfs: uint16(a.Ofs),
			Src: subfieldToOF(a.Src), Dst: subfieldToOF(a.Field)})
	case flow.ActResubmit:
		port := a.Port
		if port == 0 {
			port = ofPort10InPort
		}
		return append(out, openflow.NXResubmit{InPort: port, Table: a.Table})
	case flow.ActCT:
		return append(out, conntrackToOF(a.CT, *m))
	case flow.ActCTClear:
		return append(out, openflow.NXCTClear{})
	}
	panic(fmt.Sprintf("ofagent: action %d has no OpenFlow form", a.Type))
}

// setFieldOF is set_field of v into the whole of f: OFPAT_SET_FIELD.
func setFieldOF(f *flow.Field, v flow.Value) openflow.Action {
	c := &f.OXM[0]
	if isOXM(openflow.OXMClassOpenFlowBasic, openflow.OXMInPort, c) {
		v = flow.Value{Lo: uint64(portToOF(uint16(v.Lo)))}
	}
	return openflow.ActionSetField{Field: openflow.OXM{Class: c.Class, Field: c.Num, Value: valueBytes(v, c.Bytes)}}
}

// appendHeaderSetOF appends a header rewrite of field f to v: a set_field
// of the whole field, or, for one with a Mask, the loads of the bits it
// writes (a's Field's, one run of them, or more in an action set), as
// Open vSwitch sends a set_field of part of a field.
func appendHeaderSetOF(out []openflow.Action, a *flow.Action, f *flow.Field, v flow.Value) []openflow.Action {
	if a.Mask.IsZero() {
		return append(out, setFieldOF(f, v))
	}
	for ofs, nbits := range a.Mask.Runs() {
		out = append(out, loadOF(a.Field, ofs, nbits, v.Shr(ofs).And(flow.Ones(nbits))))
	}
	return out
}

// loadOF is the load of v into bits [ofs, ofs+nbits) of field f:
// NXAST_REG_LOAD, or NXAST_REG_LOAD2 (a set_field under a mask) for more
// bits than its 64-bit value holds.
func loadOF(f *flow.Field, ofs, nbits uint, v flow.Value) openflow.Action {
	if nbits > 64 {
		c := &f.OXM[0]
		return openflow.NXRegLoad2{Field: openflow.OXM{Class: c.Class, Field: c.Num,
			Value: valueBytes(v.Shl(ofs), c.Bytes), Mask: valueBytes(flow.Ones(nbits).Shl(ofs), c.Bytes)}}
	}
	return openflow.NXRegLoad{Ofs: uint8(ofs), NBits: uint8(nbits), Dst: subfieldToOF(f), Value: v.Lo}
}

// subfieldToOF gives the NXM/OXM header that names field f in
// NXAST_REG_LOAD and NXAST_REG_MOVE: its encoding of its own width
// (in_port's 16-bit NXM_OF_IN_PORT), or its first. Every field an action
// names has one: the flow syntax names the others by the field Open
// vSwitch knows their bits by (tp_src is tcp_src).
func subfieldToOF(f *flow.Field) uint32 {
	for i := range f.OXM {
		if c := &f.OXM[i]; uint(c.Bytes) == (f.Bits+7)/8 {
			return oxmHeader(c)
		}
	}
	return oxmHeader(&f.OXM[0])
}

// oxmHeader is the 32-bit header of an unmasked TLV of type c.
func oxmHeader(c *flow.OXMCode) uint32 {
	return openflow.OXM{Class: c.Class, Field: c.Num, Value: make([]byte, c.Bytes)}.Header()
}
