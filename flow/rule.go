// Package flow is xswitch's OpenFlow-style flow table: the Key extracted
// from a frame, rules (a masked match, a priority, actions), their text
// syntax (the one ovs-ofctl speaks), and the classifier that finds the
// highest-priority rule matching a key in a table.
//
// Rules are plain data (a spec); the classifier holds an immutable,
// versioned snapshot of installed rules that forwarding goroutines read
// without locks. The package is pure data and logic: it touches no
// frame's bytes but to read them, no port and no clock of its own.
package flow

import (
	"slices"

	"github.com/xswitch/xswitch/header"
)

// Match is a masked key: a frame matches when its key, masked, equals Key.
// Key holds no bits outside Mask.
type Match struct {
	Key  Key
	Mask Key
}

// Matches reports whether k satisfies m.
func (m *Match) Matches(k *Key) bool { return k.And(&m.Mask) == m.Key }

// Overlaps reports whether some key satisfies both m and o: whether they
// agree on every bit both masks hold.
func (m *Match) Overlaps(o *Match) bool {
	common := m.Mask.And(&o.Mask)
	return m.Key.And(&common) == o.Key.And(&common)
}

// Rule is one flow table entry as a user writes it.
type Rule struct {
	Priority    uint16 // higher wins; DefaultPriority when not given
	Cookie      uint64
	IdleTimeout uint16 // seconds without a hit before the rule expires; 0 = never
	HardTimeout uint16 // seconds after installation before it expires; 0 = never
	Flags       RuleFlags
	Match       Match
	Actions     []Action // empty: drop
	// Wire is the rule as an OpenFlow controller sent it, when one did.
	Wire WireForm
}

// WireForm is what an OpenFlow controller sent of a rule: its match's
// OXM TLVs, in the order they came, and its instructions, as encoded in
// the FLOW_MOD that added it (or, for the instructions, that modified
// it). The rule keeps them so that the controller reads it back in flow
// stats as it sent it, byte for byte: OpenFlow leaves the order of a
// match's fields free, and an action has fields that xswitch does not
// keep in Actions (the max_len of an output to a port other than the
// controller, which changes nothing). Match and Actions hold what the
// rule does. A part is nil when there is nothing to give back: for a
// rule written in the flow syntax, and for the instructions of one whose
// actions mod-flows replaced. Opaque to this package.
type WireForm struct{ Match, Instructions []byte }

// RuleFlags are the flags of OpenFlow's FLOW_MOD that a rule keeps, with
// OpenFlow's values (OFPFF_*), so that the agent takes them as they come.
// The flags that ask something of the change itself, check_overlap and
// reset_counts, are ModOptions.
type RuleFlags uint16

const (
	// FlagSendFlowRem has the controllers told when the rule times out or
	// is deleted (OFPT_FLOW_REMOVED).
	FlagSendFlowRem RuleFlags = 1 << 0
	// FlagNoPacketCounts and FlagNoByteCounts tell the switch that nobody
	// reads the counters. xswitch counts anyway: counting costs it nothing
	// per packet (once per rule per batch).
	FlagNoPacketCounts RuleFlags = 1 << 3
	FlagNoByteCounts   RuleFlags = 1 << 4
)

// ruleFlags are the flags by the words of the flow syntax, in the order
// ovs-ofctl prints them.
var ruleFlags = []struct {
	name string
	flag RuleFlags
}{
	{"send_flow_rem", FlagSendFlowRem},
	{"no_packet_counts", FlagNoPacketCounts},
	{"no_byte_counts", FlagNoByteCounts},
}

// OutputsTo reports whether one of r's actions, in write_actions too,
// sends the frame to port, as OpenFlow's out_port filter asks (OVS's
// ofpacts_output_to_port): output:N to N, and the actions of the reserved
// ports to those ports' numbers (NORMAL to NormalPort, and so on).
func (r *Rule) OutputsTo(port uint16) bool {
	for i := range r.Actions {
		if r.Actions[i].outputsTo(port) {
			return true
		}
	}
	return false
}

// SendsToGroup reports whether one of r's actions, in write_actions too,
// sends the frame to group id, as OpenFlow's out_group filter asks.
func (r *Rule) SendsToGroup(id uint32) bool {
	return slices.ContainsFunc(r.Actions, func(a Action) bool { return a.Type == ActGroup && a.Group == id })
}

func (a *Action) outputsTo(port uint16) bool {
	if a.Type == ActOutput {
		return a.Port == port
	}
	p, ok := reservedPortOf[a.Type]
	return ok && p == port
}

// The numbers of OpenFlow's reserved ports (OpenFlow 1.0's, 16 bits, as
// xswitch's ports are). IN_PORT, NORMAL, FLOOD, ALL and CONTROLLER are
// actions of their own, which the out_port filter names by their ports.
const (
	InPortPort uint16 = 0xfff8 // OFPP_IN_PORT
	// TablePort is OFPP_TABLE: output:TABLE runs the frame through the
	// pipeline from table 0, as resubmit(,0) does.
	TablePort  uint16 = 0xfff9
	NormalPort uint16 = 0xfffa // OFPP_NORMAL
	FloodPort  uint16 = 0xfffb // OFPP_FLOOD
	AllPort    uint16 = 0xfffc // OFPP_ALL
	// ControllerPort is OFPP_CONTROLLER: a packet-out's input port when
	// the controller made the frame up, and in_port=CONTROLLER. Output to
	// it is ActController.
	ControllerPort uint16 = 0xfffd
	// LocalPort is OFPP_LOCAL, the bridge's own port, which flows spell
	// LOCAL.
	LocalPort uint16 = 0xfffe
	// AnyPort is OFPP_ANY (OpenFlow 1.0's OFPP_NONE): no port. An out_port
	// filter of AnyPort, as of 0, selects whatever rules output to.
	AnyPort uint16 = 0xffff
)

// reservedPortOf gives the actions that stand for a reserved port that
// port's number.
var reservedPortOf = map[ActionType]uint16{
	ActNormal:     NormalPort,
	ActFlood:      FloodPort,
	ActAll:        AllPort,
	ActInPort:     InPortPort,
	ActController: ControllerPort,
}

// Table returns the table r lives in.
func (r *Rule) Table() uint8 { return r.Match.Key.Table }

// allTables is how OpenFlow requests say "every table".
const allTables = 255

// DefaultPriority is OpenFlow's default (OFP_DEFAULT_PRIORITY).
const DefaultPriority = 32768

// ActionType says what an Action does.
type ActionType uint8

const (
	ActOutput     ActionType = iota + 1 // to Port
	ActNormal                           // the learning switch
	ActFlood                            // every port but the input one
	ActAll                              // every port but the input one (no port is excluded from flooding yet)
	ActInPort                           // back out of the input port
	ActSetDlSrc                         // MAC
	ActSetDlDst                         // MAC
	ActSetVLANVID                       // Value (VID); pushes a tag if there is none, as OVS's mod_vlan_vid
	ActStripVLAN                        // pop the outermost tag
	ActPushVLAN                         // Value (the tag's EtherType, 0x8100 or 0x88a8)
	ActSetNwSrc                         // IPv4
	ActSetNwDst                         // IPv4
	ActSetTpSrc                         // Value (port)
	ActSetTpDst                         // Value (port)
	ActDecTTL                           // drop when the TTL (hop limit) reaches 0
	ActSetNwTOS                         // Value: the DSCP bits of the TOS (traffic class) byte, ECN kept
	ActSetNwECN                         // Value: the ECN bits of the TOS (traffic class) byte
	ActSetNwTTL                         // Value: the TTL (hop limit)
	ActSetVLANPCP                       // Value (PCP); pushes a tag if there is none, as OVS's mod_vlan_pcp
	ActSetIPv6Src                       // Imm (the address)
	ActSetIPv6Dst                       // Imm (the address)

	// The pipeline's actions, which work on the frame's metadata, and on
	// its header fields by their bits (syntax_pipeline.go).
	ActLoad          // Field's bits under Mask become Imm (load:V->F[a..b]; set_field:V/M->F is one per run of M's bits)
	ActSetField      // the whole Field becomes Imm, written set_field:V->F
	ActMove          // NBits bits of Src from SrcOfs go to Field from Ofs
	ActWriteMetadata // the instruction write_metadata: metadata under Mask becomes Imm
	ActResubmit      // look the frame up in Table (ThisTable: the same), as from Port if not 0, and run what it finds
	ActGotoTable     // the instruction goto_table: continue in Table, a later one
	ActClearActions  // the instruction clear_actions: empty the action set
	// ActWriteActions is the instruction write_actions: the NBits actions
	// that follow it in the list go into the action set (actionset.go),
	// which runs when the pipeline ends.
	ActWriteActions

	// ActController sends a copy of the frame to the controller as a
	// packet-in: Value bytes of it (max_len), with Table as its reason,
	// to controller Port (id).
	ActController

	// ActGroup sends the frame to group Group: its buckets' actions run
	// on copies of it, as the group's type says.
	ActGroup

	// ActMeter is the instruction meter (OVS's meter:N), which comes
	// first: the frame goes through meter Meter, whose bands may drop it
	// or raise its DSCP's drop precedence, before the rule's actions.
	ActMeter

	// The MPLS actions. push_mpls and pop_mpls take the label stack entry
	// after the EtherType on and off, and write their EtherType (Value)
	// there; in a decision, ActPushMPLS's Imm.Lo is the entry it pushes,
	// which translation works out from the key. The sets write a part of
	// the top entry: ActSetMPLSLabel the label (Imm.Lo), ActSetMPLSTC the
	// TC (Value), ActSetMPLSTTL the TTL (Value). ActDecMPLSTTL drops the
	// frame when its TTL would reach 0, as dec_ttl does. ActCopyTTLOut
	// copies the TTL of the header under the top entry (the next entry,
	// or the IP packet under the stack) into the top entry, and
	// ActCopyTTLIn the top entry's TTL into that header, as OpenFlow 1.3
	// has them (Open vSwitch has neither).
	ActPushMPLS
	ActPopMPLS
	ActSetMPLSLabel
	ActSetMPLSTC
	ActSetMPLSTTL
	ActDecMPLSTTL
	ActCopyTTLOut
	ActCopyTTLIn

	// ActCT is ct(): the frame goes through the connection tracker, as
	// CT says, and goes on untracked, its key's CT fields zero
	// (conntrack.go). ActCTClear is ct_clear: the frame is untracked.
	ActCT
	ActCTClear
)

// OpenFlow's packet-in reasons (OFPR_*), which an ActController's Table
// holds; OVS's controller(reason=) names them no_match, action and
// invalid_ttl.
const (
	ReasonNoMatch    = 0
	ReasonAction     = 1 // the default
	ReasonInvalidTTL = 2
)

// ControllerMaxLen is ActController's default max_len: the whole frame
// (OFPCML_NO_BUFFER).
const ControllerMaxLen = 65535

// Action is one action of a rule. Which fields mean something depends on
// Type; the others are zero, so that Actions compare with ==.
type Action struct {
	Type ActionType
	// Port is ActOutput's port, ActResubmit's input port (0: the
	// frame's own), and ActController's controller id (OVS's id=, 0 by
	// default).
	Port uint16
	// Value is ActSetVLANVID's VID, ActSetVLANPCP's PCP, ActPushVLAN's
	// EtherType, ActSetTpSrc's and ActSetTpDst's port, ActSetNwTOS's,
	// ActSetNwECN's and ActSetNwTTL's bits, ActOutput's max_len (0: the
	// whole frame), and ActController's max_len, the bytes of the frame
	// the packet-in carries (ControllerMaxLen: all of it, the default).
	Value uint16
	MAC   [6]byte // ActSetDlSrc, ActSetDlDst
	IPv4  [4]byte // ActSetNwSrc, ActSetNwDst
	// Table is ActResubmit's and ActGotoTable's table, and ActController's
	// packet-in reason, an OFPR_* code (ReasonAction by default).
	Table uint8
	// Group is ActGroup's group id; it fits where Table's padding was.
	Group uint32
	// Meter is ActMeter's meter id.
	Meter uint32

	// ActLoad, ActSetField, ActWriteMetadata and ActMove write Field; Imm
	// is already shifted under Mask, which is contiguous for ActLoad.
	// ActSetIPv6Src and ActSetIPv6Dst keep their address in Imm.
	Field, Src         *Field
	Imm, Mask          Value
	Ofs, SrcOfs, NBits uint8 // ActMove

	// CT is ActCT's arguments, shared by every copy of the action: many,
	// and rare, they are not worth a place of their own in every action.
	CT *Conntrack
}

// SetAddress makes addr, a MAC (ActSetDlSrc, ActSetDlDst) or IPv4 address
// (ActSetNwSrc, ActSetNwDst), what a makes of it: a's address, or with a
// Mask (set_field:V/M) the mask's bits taken from a's.
func (a *Action) SetAddress(addr []byte) {
	set := a.MAC[:]
	if len(addr) == 4 {
		set = a.IPv4[:]
	}
	if a.Mask.IsZero() {
		copy(addr, set)
		return
	}
	m := a.Mask
	for i := len(addr) - 1; i >= 0; i-- {
		b := byte(m.Lo)
		addr[i] = addr[i]&^b | set[i]&b
		m = m.Shr(8)
	}
}

// MaskedPort is what a port set (ActSetTpSrc, ActSetTpDst) makes of old.
func (a *Action) MaskedPort(old uint16) uint16 {
	if a.Mask.IsZero() {
		return a.Value
	}
	m := uint16(a.Mask.Lo)
	return old&^m | a.Value&m
}

// ThisTable in an ActResubmit's Table means the table of the rule that
// resubmits (OVS's resubmit:PORT).
const ThisTable = 255

// ApplyToKey makes the change that a runs on a frame to the frame's key,
// so that a later table sees the frame as the actions left it. keep is
// false when a drops the frame (dec_ttl or dec_mpls_ttl of a TTL of 1 or
// 0, a push or pop of MPLS that OVS drops, see Key.pushMPLS). A header
// rewrite changes the key only where the frame has that header, as the
// rewrite itself does; strip_vlan leaves no tag in the key, since the key
// keeps only the outer one. It allocates nothing.
func (a *Action) ApplyToKey(k *Key) (keep bool) {
	isIPv4, isIPv6 := k.DlType == EtherTypeIPv4, k.DlType == EtherTypeIPv6
	isIP, hasPorts := isIPv4 || isIPv6, k.HasPorts()
	switch a.Type {
	case ActLoad, ActSetField, ActWriteMetadata:
		a.Field.Set(k, a.Field.Get(k).And(a.Mask.Not()).Or(a.Imm))
	case ActMove:
		bits := Ones(uint(a.NBits))
		v := a.Src.Get(k).Shr(uint(a.SrcOfs)).And(bits).Shl(uint(a.Ofs))
		mask := bits.Shl(uint(a.Ofs))
		a.Field.Set(k, a.Field.Get(k).And(mask.Not()).Or(v))
	case ActSetDlSrc:
		a.SetAddress(k.DlSrc[:])
	case ActSetDlDst:
		a.SetAddress(k.DlDst[:])
	case ActSetNwSrc:
		if isIPv4 {
			a.SetAddress(k.NwSrc[:])
		}
	case ActSetNwDst:
		if isIPv4 {
			a.SetAddress(k.NwDst[:])
		}
	case ActSetIPv6Src:
		if isIPv6 {
			PutValueBytes(k.IPv6Src[:], a.Imm)
		}
	case ActSetIPv6Dst:
		if isIPv6 {
			PutValueBytes(k.IPv6Dst[:], a.Imm)
		}
	case ActSetTpSrc:
		if hasPorts {
			k.TpSrc = a.MaskedPort(k.TpSrc)
		}
	case ActSetTpDst:
		if hasPorts {
			k.TpDst = a.MaskedPort(k.TpDst)
		}
	case ActSetVLANVID:
		k.VLANTCI = k.VLANTCI&^vlanVIDMask | VLANCFI | a.Value
	case ActSetVLANPCP:
		k.VLANTCI = k.VLANTCI&^vlanPCPMask | VLANCFI | a.Value<<vlanPCPShift
	case ActSetNwTOS:
		if isIP {
			k.NwTOS = k.NwTOS&^tosDSCPMask | uint8(a.Value)
		}
	case ActSetNwECN:
		if isIP {
			k.NwTOS = k.NwTOS&tosDSCPMask | uint8(a.Value)
		}
	case ActSetNwTTL:
		if isIP {
			k.NwTTL = uint8(a.Value)
		}
	case ActPushVLAN:
		k.VLANTCI |= VLANCFI
	case ActStripVLAN:
		k.VLANTCI = 0
	case ActDecTTL:
		if !isIP {
			return true
		}
		if k.NwTTL <= 1 {
			return false
		}
		k.NwTTL--
	case ActPushMPLS:
		return k.pushMPLS(a.Value)
	case ActPopMPLS:
		return k.popMPLS(a.Value)
	case ActSetMPLSLabel, ActSetMPLSTC, ActSetMPLSTTL:
		if k.IsMPLS() {
			f := mplsFields[a.Type]
			f.set(k, a.mplsValue())
		}
	case ActDecMPLSTTL:
		// As OVS, which stops a frame that is not MPLS too: dec_mpls_ttl
		// needs an MPLS match, or a push before it.
		ttl := k.MPLS & header.MPLSTTLMask
		if !k.IsMPLS() || ttl <= 1 {
			return false
		}
		k.MPLS--
	case ActCopyTTLOut:
		k.copyTTLOut()
	case ActCopyTTLIn:
		k.copyTTLIn()
	case ActCT, ActCTClear:
		// ct()'s copy goes on in its table, tracked; the frame, after
		// it, is untracked, as after ct_clear (OVS's
		// flow_clear_conntrack).
		k.CT = CTFields{}
	}
	return true
}

// mplsFields are the fields that the set_mpls_ actions write.
var mplsFields map[ActionType]*Field

// mplsValue is the value a set_mpls_ action writes.
func (a *Action) mplsValue() Value {
	if a.Type == ActSetMPLSLabel {
		return a.Imm
	}
	return Value{Lo: uint64(a.Value)}
}

// mplsSetAction is the set_mpls_ action of type typ that writes its part
// of label stack entry lse.
func mplsSetAction(typ ActionType, lse uint32) Action {
	var k Key
	k.MPLS = lse
	v := mplsFields[typ].get(&k)
	if typ == ActSetMPLSLabel {
		return Action{Type: typ, Imm: v}
	}
	return Action{Type: typ, Value: uint16(v.Lo)}
}
