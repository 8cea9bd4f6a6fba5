package flow

import "strings"

// Connection tracking, as Open vSwitch has it (ovs-fields(7),
// ovs-actions(7)): the fields that say what the connection tracker makes
// of a frame (ct_state, ct_zone, ct_mark, ct_label and the original
// direction's tuple, ct_nw_src to ct_tp_dst), and the actions that send a
// frame through the tracker, ct(), and forget what it said, ct_clear.
//
// A frame starts untracked, its fields zero. ct() tracks it in a zone,
// commits its connection (with a mark and a label, and an address
// translation), and sends a copy of it on to ct(table=N) with the
// connection's fields filled in, where rules match on them; the frame
// itself goes on with the actions after ct(), untracked again. This file
// has the fields; syntax_conntrack.go the actions.

// CTFields are the fields of a Key that the connection tracker fills in.
// Src and Dst are the addresses of the original direction of the
// connection, or of the connection it is related to: IPv6's, or IPv4's in
// their first 4 bytes. A frame's connection is of the frame's family, and
// a rule that names ct_nw_src matches IPv4 frames alone, one that names
// ct_ipv6_src IPv6 frames, as in OVS: the two share their bytes.
type CTFields struct {
	Mark     uint32 // ct_mark
	Zone     uint16 // ct_zone
	State    uint8  // ct_state: CTNew and on
	NwProto  uint8  // ct_nw_proto
	TpSrc    uint16 // ct_tp_src
	TpDst    uint16 // ct_tp_dst
	Label    [16]byte
	Src, Dst [16]byte
}

// Widen sets every bit of c that is set in m: the union of two masks.
func (c *CTFields) Widen(m *CTFields) {
	c.Mark |= m.Mark
	c.Zone |= m.Zone
	c.State |= m.State
	c.NwProto |= m.NwProto
	c.TpSrc |= m.TpSrc
	c.TpDst |= m.TpDst
	for i := range c.Label {
		c.Label[i] |= m.Label[i]
		c.Src[i] |= m.Src[i]
		c.Dst[i] |= m.Dst[i]
	}
}

// The bits of ct_state (CTFields.State), OVS's CS_*.
const (
	CTNew         = 1 << iota // the first packet of a connection not committed yet
	CTEstablished             // of a committed connection
	CTRelated                 // of a connection related to a committed one (an ICMP error about it, an FTP data connection)
	CTReply                   // of the reply direction
	CTInvalid                 // of no connection the tracker can make sense of
	CTTracked                 // through the tracker: the others mean something
	CTSrcNAT                  // its source translated
	CTDstNAT                  // its destination translated
)

// ctStateNames are ct_state's flags in the flow syntax, bit by bit.
var ctStateNames = flagNames{"new", "est", "rel", "rpl", "inv", "trk", "snat", "dnat"}

// isCTValid reports whether m is on frames of a connection that the
// tracker knows, as OVS's is_ct_valid decides it for a match: one of the
// states of such a connection, or tracked and not invalid. Only then do
// the original direction's fields mean something.
func isCTValid(m *Match) bool {
	st := m.Key.CT.State
	return st&(CTNew|CTEstablished|CTRelated|CTReply|CTSrcNAT|CTDstNAT) != 0 ||
		st&CTTracked != 0 && m.Mask.CT.State&CTInvalid != 0 && st&CTInvalid == 0
}

var (
	needsCT = &Prerequisite{holds: isCTValid,
		what: "a connection the tracker knows (ct_state with +new, +est, +rel, +rpl, +snat or +dnat, or +trk-inv)"}
	needsCTIPv4 = allNeeded(needsIPv4, needsCT)
	needsCTIPv6 = allNeeded(needsIPv6, needsCT)
	// OVS leaves ct_nw_proto=0 out of the match it sends, and the ports
	// with it: xswitch refuses to match on a protocol of 0, and on the
	// ports without a protocol.
	needsCTProto = allNeeded(needsCT, &Prerequisite{holds: func(m *Match) bool { return m.Key.CT.NwProto != 0 },
		what: "a protocol other than 0, which Open vSwitch leaves out of a match"})
	needsCTPorts = allNeeded(needsCT, &Prerequisite{holds: func(m *Match) bool { return m.Mask.CT.NwProto != 0 && m.Key.CT.NwProto != 0 },
		what: "ct_nw_proto, without which Open vSwitch leaves them out of a match"})
)

// addCTFields adds the connection tracking fields to the field table, in
// the order ovs-ofctl prints them. Only ct_mark and ct_label may be
// written, and only in a ct()'s exec().
func addCTFields(add func(*Field, func(*Key) Value, func(*Key, Value)) *Field) {
	parseState, printState := ctStateNames.syntax()
	get, set := u8Field(func(k *Key) *uint8 { return &k.CT.State })
	add(&Field{Name: "ct_state", Aliases: []string{"NXM_NX_CT_STATE"}, Bits: 8, Maskable: true, readOnly: true,
		OXM: []OXMCode{oxm(oxmNXM1, 105, 4)}, syntax: syntaxHex, parse: parseState, print: printState}, get, set)
	get, set = u16Field(func(k *Key) *uint16 { return &k.CT.Zone })
	add(&Field{Name: "ct_zone", Aliases: []string{"NXM_NX_CT_ZONE"}, Bits: 16, readOnly: true,
		OXM: []OXMCode{oxm(oxmNXM1, 106, 2)}, syntax: syntaxDecimal}, get, set)
	add(&Field{Name: "ct_mark", Aliases: []string{"NXM_NX_CT_MARK"}, Bits: 32, Maskable: true, Writable: true, Carried: true,
		CTOnly: true, OXM: []OXMCode{oxm(oxmNXM1, 107, 4)}, syntax: syntaxHex},
		func(k *Key) Value { return Value{Lo: uint64(k.CT.Mark)} }, func(k *Key, v Value) { k.CT.Mark = uint32(v.Lo) })
	get, set = bytesField(func(k *Key) []byte { return k.CT.Label[:] })
	add(&Field{Name: "ct_label", Aliases: []string{"NXM_NX_CT_LABEL"}, Bits: 128, Maskable: true, Writable: true, Carried: true,
		CTOnly: true, OXM: []OXMCode{oxm(oxmNXM1, 108, 16)}, syntax: syntaxHex}, get, set)
	for _, dir := range []struct {
		name, nxm string
		at        func(*Key) *[16]byte
		v4, v6    uint8 // the NXM field numbers
	}{
		{"src", "SRC", func(k *Key) *[16]byte { return &k.CT.Src }, 120, 122},
		{"dst", "DST", func(k *Key) *[16]byte { return &k.CT.Dst }, 121, 123},
	} {
		get, set = bytesField(func(k *Key) []byte { return dir.at(k)[:4] })
		add(&Field{Name: "ct_nw_" + dir.name, Aliases: []string{"NXM_NX_CT_NW_" + dir.nxm}, Bits: 32, Maskable: true, readOnly: true,
			Needs: needsCTIPv4, OXM: []OXMCode{oxm(oxmNXM1, dir.v4, 4)}, syntax: syntaxIPv4, print: printIfIPv4}, get, set)
		get, set = bytesField(func(k *Key) []byte { return dir.at(k)[:] })
		add(&Field{Name: "ct_ipv6_" + dir.name, Aliases: []string{"NXM_NX_CT_IPV6_" + dir.nxm}, Bits: 128, Maskable: true, readOnly: true,
			Needs: needsCTIPv6, OXM: []OXMCode{oxm(oxmNXM1, dir.v6, 16)}, syntax: syntaxIPv6, print: printUnlessIPv4}, get, set)
	}
	get, set = u8Field(func(k *Key) *uint8 { return &k.CT.NwProto })
	add(&Field{Name: "ct_nw_proto", Aliases: []string{"NXM_NX_CT_NW_PROTO"}, Bits: 8, readOnly: true,
		Needs: needsCTProto, OXM: []OXMCode{oxm(oxmNXM1, 119, 1)}, syntax: syntaxDecimal}, get, set)
	get, set = u16Field(func(k *Key) *uint16 { return &k.CT.TpSrc })
	add(&Field{Name: "ct_tp_src", Aliases: []string{"NXM_NX_CT_TP_SRC"}, Bits: 16, Maskable: true, readOnly: true,
		Needs: needsCTPorts, OXM: []OXMCode{oxm(oxmNXM1, 124, 2)}, syntax: syntaxDecimal}, get, set)
	get, set = u16Field(func(k *Key) *uint16 { return &k.CT.TpDst })
	add(&Field{Name: "ct_tp_dst", Aliases: []string{"NXM_NX_CT_TP_DST"}, Bits: 16, Maskable: true, readOnly: true,
		Needs: needsCTPorts, OXM: []OXMCode{oxm(oxmNXM1, 125, 2)}, syntax: syntaxDecimal}, get, set)
}

// printIfIPv4 and printUnlessIPv4 print the original direction's
// addresses, which share their bytes, by the family of the match.
func printIfIPv4(f *Field, m *Match) string {
	if !hasDlType(m, EtherTypeIPv4) {
		return ""
	}
	return printValue(f, m)
}

func printUnlessIPv4(f *Field, m *Match) string {
	if hasDlType(m, EtherTypeIPv4) {
		return ""
	}
	return printValue(f, m)
}

// ParseCTState reads a ct_state as a trace's --ct-next gives it, as OVS
// reads it there: flags by name, separated by commas or |, or a number.
func ParseCTState(text string) (uint8, error) {
	f, _ := FieldByName("ct_state")
	v, _, err := ctStateNames.parse(f, strings.ReplaceAll(text, ",", "|"))
	return uint8(v.Lo), err
}
