package ofagent

import (
	"fmt"
	"math"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/openflow"
)

// Matches. An OXM TLV names a field of flow's field table by its OXM
// column (flow.FieldByOXM), which gives its width on the wire and what
// the rest of the match must say for it; the field's own accessors put
// its value and mask into the flow.Match. Two encodings need more than
// the table: OXM_OF_IN_PORT holds a 32-bit OpenFlow 1.3 port number, and
// OXM_OF_VLAN_VID 0x0000 means "no tag", which xswitch's key says with a
// TCI of 0 under a full mask.

// The parts of the VLAN TCI that the VLAN TLVs encode, and
// NXM_OF_VLAN_TCI, which encodes all of it.
const (
	vlanCFI    = flow.VLANCFI // the key's "tagged" bit, OFPVID_PRESENT on the wire
	vidBits    = 0x1fff       // OXM_OF_VLAN_VID: the VID and its "present" bit
	pcpBits    = 0xe000
	nxmVLANTCI = 4
)

func isOXM(class uint16, num uint8, c *flow.OXMCode) bool {
	return c.Class == class && c.Num == num
}

// maxMatchFields bounds the TLVs a match holds: fields over the same bits
// are duplicates, so no match has more than the key's fields.
const maxMatchFields = 64

// matchFromOF reads an OXM match (and the flow mod's table) into an
// xswitch match. Table 255 (OFPTT_ALL) leaves the table out of the match,
// as requests that select flows in every table say it.
func matchFromOF(om openflow.Match, table uint8) (flow.Match, error) {
	var m flow.Match
	var seen flow.Key // the bits of the fields already read
	var needs [maxMatchFields]struct {
		field *flow.Field
		code  *flow.OXMCode
	}
	n := 0
	for i := range om.Fields {
		o := &om.Fields[i]
		f, c, ok := flow.FieldByOXM(o.Class, o.Field)
		if !ok || o.Class == openflow.OXMClassExperimenter {
			return flow.Match{}, matchError(openflow.BadMatchBadField, "no field OXM %#x:%d", o.Class, o.Field)
		}
		if len(o.Value) != int(c.Bytes) || o.Mask != nil && len(o.Mask) != len(o.Value) {
			return flow.Match{}, matchError(openflow.BadMatchBadLen, "%s: %d bytes, not %d", f.Name, len(o.Value), c.Bytes)
		}
		full := flow.Ones(f.Bits)
		v, mask := flow.ValueOfBytes(o.Value), full
		if o.Mask != nil {
			if !f.Maskable {
				return flow.Match{}, matchError(openflow.BadMatchBadMask, "%s takes no mask", f.Name)
			}
			if mask = flow.ValueOfBytes(o.Mask); mask.BitLen() > int(f.Bits) {
				return flow.Match{}, matchError(openflow.BadMatchBadMask, "%s: mask %x is wider than the field", f.Name, o.Mask)
			}
		}
		if f.Name == "in_port" {
			// Both encodings: a port that OXM_OF_IN_PORT cannot
			// give back (0, say, through NXM_OF_IN_PORT) is none.
			p, ok := uint16(v.Lo), true
			if isOXM(openflow.OXMClassOpenFlowBasic, openflow.OXMInPort, c) {
				p, ok = portFromOF(uint32(v.Lo))
			}
			if !ok || flow.CheckPort(p) != nil {
				return flow.Match{}, matchError(openflow.BadMatchBadValue, "in_port %d is no port of xswitch", v.Lo)
			}
			v = flow.Value{Lo: uint64(p)}
		}
		if v.BitLen() > int(f.Bits) {
			return flow.Match{}, matchError(openflow.BadMatchBadValue, "%s: %x is wider than the field", f.Name, o.Value)
		}
		if !v.And(mask.Not()).IsZero() {
			return flow.Match{}, matchError(openflow.BadMatchBadWildcards, "%s: value %x has bits outside its mask %x", f.Name, o.Value, o.Mask)
		}
		if !f.Get(&seen).IsZero() {
			return flow.Match{}, matchError(openflow.BadMatchDupField, "%s given twice, or a field over the same bits", f.Name)
		}
		f.Set(&seen, full)
		f.Set(&m.Key, v)
		f.Set(&m.Mask, mask)
		// The field may keep fewer bits than its width says: nw_tos's
		// DSCP bits alone.
		if f.Get(&m.Key) != v {
			return flow.Match{}, matchError(openflow.BadMatchBadValue, "%s: %x is not a value of the field", f.Name, o.Value)
		}
		if isOXM(openflow.OXMClassOpenFlowBasic, openflow.OXMVLANVID, c) && o.Mask == nil {
			switch {
			case v.Lo == 0: // no tag
				m.Mask.VLANTCI = math.MaxUint16
			case v.Lo&vlanCFI == 0:
				return flow.Match{}, matchError(openflow.BadMatchBadValue, "vlan_vid %#x: a VID without OFPVID_PRESENT", v.Lo)
			}
		}
		if c.Needs != nil {
			needs[n].field, needs[n].code = f, c
			n++
		}
	}
	for _, nd := range needs[:n] {
		if !nd.code.Needs.Holds(&m) {
			return flow.Match{}, matchError(openflow.BadMatchBadPrereq, "field %s requires %s", nd.field.Name, nd.code.Needs.Unmet(&m))
		}
	}
	if table != allTables {
		m.Key.Table, m.Mask.Table = table, math.MaxUint8
	}
	return m, nil
}

// allTables is OFPTT_ALL.
const allTables = 0xff

func matchError(code uint16, format string, args ...any) error {
	return &openflow.DecodeError{Type: openflow.ErrBadMatch, Code: code, Reason: fmt.Sprintf(format, args...)}
}

// matchToOF gives m's OXM match, as ovs-ofctl -O OpenFlow13 encodes it:
// each field by the first of its encodings that fits the match (IPv4's
// addresses as OXM_OF_IPV4_SRC, ARP's as OXM_OF_ARP_SPA), and where
// fields share bits, the first in the field table's order that encodes
// them whole. The table is not in it (it travels in the message).
func matchToOF(m flow.Match) openflow.Match {
	rest := m.Mask // the bits still to encode
	rest.Table = 0
	fields := appendVLAN(nil, &m)
	rest.VLANTCI = 0
	for _, f := range flow.Fields() {
		mask := f.Get(&rest)
		if mask.IsZero() {
			continue
		}
		c, ok := f.OXMFor(&m)
		full := mask == flow.Ones(f.Bits)
		if !ok || !full && !f.Maskable {
			continue // another field over the same bits encodes them
		}
		v := f.Get(&m.Key)
		if isOXM(openflow.OXMClassOpenFlowBasic, openflow.OXMInPort, c) {
			v = flow.Value{Lo: uint64(portToOF(uint16(v.Lo)))}
		}
		o := openflow.OXM{Class: c.Class, Field: c.Num, Value: valueBytes(v, c.Bytes)}
		if !full {
			o.Mask = valueBytes(mask, c.Bytes)
		}
		fields = append(fields, o)
		f.Set(&rest, flow.Value{})
	}
	return openflow.Match{Fields: fields}
}

// appendVLAN appends the TLVs of m's VLAN TCI: OXM_OF_VLAN_VID and
// OXM_OF_VLAN_PCP as Open vSwitch sends them, or, for a TCI mask they
// cannot say (some of the PCP's bits, or the PCP of no tag), the whole
// TCI as NXM_OF_VLAN_TCI, which Open vSwitch also reads.
func appendVLAN(fields []openflow.OXM, m *flow.Match) []openflow.OXM {
	tci, mask := m.Key.VLANTCI, m.Mask.VLANTCI
	switch {
	case mask == 0:
		return fields
	case mask == math.MaxUint16 && tci == 0:
		return append(fields, openflow.OXM{Class: openflow.OXMClassOpenFlowBasic, Field: openflow.OXMVLANVID, Value: be16(0)})
	case mask&pcpBits == 0:
		return append(fields, vlanVID(tci, mask))
	case mask&pcpBits == pcpBits && mask&vlanCFI != 0 && tci&vlanCFI != 0:
		return append(fields, vlanVID(tci&vidBits, mask&vidBits),
			openflow.OXM{Class: openflow.OXMClassOpenFlowBasic, Field: openflow.OXMVLANPCP, Value: []byte{byte(tci >> 13)}})
	}
	o := openflow.OXM{Class: openflow.OXMClassNXM0, Field: nxmVLANTCI, Value: be16(tci)}
	if mask != math.MaxUint16 {
		o.Mask = be16(mask)
	}
	return append(fields, o)
}

// vlanVID is OXM_OF_VLAN_VID: unmasked when the mask is whole, except for
// a value without OFPVID_PRESENT, which unmasked means "no tag" (0x0000)
// or nothing (a VID without the bit, which a reader refuses), and masked
// is a match that no tagged frame meets.
func vlanVID(vid, mask uint16) openflow.OXM {
	o := openflow.OXM{Class: openflow.OXMClassOpenFlowBasic, Field: openflow.OXMVLANVID, Value: be16(vid)}
	if mask != vidBits || vid&vlanCFI == 0 {
		o.Mask = be16(mask)
	}
	return o
}

func be16(v uint16) []byte { return []byte{byte(v >> 8), byte(v)} }

// valueBytes is v's low n bytes, big-endian.
func valueBytes(v flow.Value, n uint8) []byte {
	b := make([]byte, n)
	flow.PutValueBytes(b, v)
	return b
}
