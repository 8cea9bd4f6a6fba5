package openflow

import "encoding/binary"

// Match is an ofp_match of type OFPMT_OXM: a list of OXM TLVs.
type Match struct {
	Fields []OXM
	// Encoded, when not nil, is the TLVs already encoded, which an
	// encoder writes as they are instead of Fields: a switch gives a
	// controller back the match it sent (FlowModEncoded), byte for byte.
	// Decoding leaves it nil.
	Encoded []byte
}

// OXM is one OXM TLV. Which fields exist, their widths and their
// prerequisites are the switch's concern (ofagent); the codec checks only
// the framing.
type OXM struct {
	Class uint16
	Field uint8 // 7 bits
	// Experimenter is the experimenter id of an OXMClassExperimenter TLV,
	// which comes before its Value on the wire.
	Experimenter uint32
	Value        []byte
	Mask         []byte // nil when the TLV has no mask; else as long as Value
}

// The OXM classes.
const (
	OXMClassNXM0          uint16 = 0x0000 // Nicira's NXM_OF_* fields
	OXMClassNXM1          uint16 = 0x0001 // Nicira's NXM_NX_* fields (registers among them)
	OXMClassOpenFlowBasic uint16 = 0x8000
	OXMClassPacketRegs    uint16 = 0x8001 // OpenFlow 1.5's 64-bit packet registers (xreg0-7)
	OXMClassExperimenter  uint16 = 0xffff
)

// The OpenFlow basic fields (OFPXMT_OFB_*), OXMClassOpenFlowBasic's field
// numbers.
const (
	OXMInPort       uint8 = 0
	OXMInPhyPort    uint8 = 1
	OXMMetadata     uint8 = 2
	OXMEthDst       uint8 = 3
	OXMEthSrc       uint8 = 4
	OXMEthType      uint8 = 5
	OXMVLANVID      uint8 = 6
	OXMVLANPCP      uint8 = 7
	OXMIPDSCP       uint8 = 8
	OXMIPECN        uint8 = 9
	OXMIPProto      uint8 = 10
	OXMIPv4Src      uint8 = 11
	OXMIPv4Dst      uint8 = 12
	OXMTCPSrc       uint8 = 13
	OXMTCPDst       uint8 = 14
	OXMUDPSrc       uint8 = 15
	OXMUDPDst       uint8 = 16
	OXMSCTPSrc      uint8 = 17
	OXMSCTPDst      uint8 = 18
	OXMICMPv4Type   uint8 = 19
	OXMICMPv4Code   uint8 = 20
	OXMARPOp        uint8 = 21
	OXMARPSPA       uint8 = 22
	OXMARPTPA       uint8 = 23
	OXMARPSHA       uint8 = 24
	OXMARPTHA       uint8 = 25
	OXMIPv6Src      uint8 = 26
	OXMIPv6Dst      uint8 = 27
	OXMIPv6FLabel   uint8 = 28
	OXMICMPv6Type   uint8 = 29
	OXMICMPv6Code   uint8 = 30
	OXMIPv6NDTarget uint8 = 31
	OXMIPv6NDSLL    uint8 = 32
	OXMIPv6NDTLL    uint8 = 33
	OXMMPLSLabel    uint8 = 34
	OXMMPLSTC       uint8 = 35
	OXMMPLSBOS      uint8 = 36
	OXMPBBISID      uint8 = 37
	OXMTunnelID     uint8 = 38
	OXMIPv6Exthdr   uint8 = 39
	OXMPBBUCA       uint8 = 41 // OpenFlow 1.4's, which Open vSwitch accepts in 1.3
)

// VLANPresent is OFPVID_PRESENT, the bit of an OXMVLANVID value that says
// the frame has a VLAN tag at all.
const VLANPresent uint16 = 0x1000

// Header is the TLV's 32-bit header: class << 16 | field << 9 | hasmask
// << 8 | payload length, where the payload is the experimenter id (of an
// OXMClassExperimenter TLV), Value and Mask. A payload over 255 bytes is
// the caller's bug: its length is cut to 8 bits.
func (o OXM) Header() uint32 {
	n := len(o.Value) + len(o.Mask)
	if o.Class == OXMClassExperimenter {
		n += 4
	}
	h := uint32(o.Class)<<16 | uint32(o.Field&0x7f)<<9 | uint32(uint8(n))
	if o.Mask != nil {
		h |= 1 << 8
	}
	return h
}

// OXMFromHeader gives the Class and Field a TLV header names (Nicira's
// actions name the field they write by its header); the rest is zero.
func OXMFromHeader(h uint32) OXM {
	return OXM{Class: uint16(h >> 16), Field: uint8(h>>9) & 0x7f}
}

// AppendOXM appends o as one TLV.
func AppendOXM(b []byte, o OXM) []byte {
	b = binary.BigEndian.AppendUint32(b, o.Header())
	if o.Class == OXMClassExperimenter {
		b = binary.BigEndian.AppendUint32(b, o.Experimenter)
	}
	b = append(b, o.Value...)
	return append(b, o.Mask...)
}

// DecodeOXM decodes the TLV at the start of b; n is its length. Value and
// Mask alias b.
func DecodeOXM(b []byte) (o OXM, n int, err error) {
	if len(b) < 4 {
		return OXM{}, 0, errorf(ErrBadMatch, BadMatchBadLen, "OXM header: %d of 4 bytes", len(b))
	}
	h := binary.BigEndian.Uint32(b)
	o = OXMFromHeader(h)
	n = 4 + int(h&0xff)
	if n > len(b) {
		return OXM{}, 0, errorf(ErrBadMatch, BadMatchBadLen, "OXM %#08x: %d of %d bytes", h, len(b), n)
	}
	p := b[4:n:n]
	if o.Class == OXMClassExperimenter {
		if len(p) < 4 {
			return OXM{}, 0, errorf(ErrBadMatch, BadMatchBadLen, "experimenter OXM %#08x without its experimenter id", h)
		}
		o.Experimenter = binary.BigEndian.Uint32(p)
		p = p[4:]
	}
	if h&(1<<8) == 0 {
		o.Value = p
		return o, n, nil
	}
	if len(p)%2 != 0 {
		return OXM{}, 0, errorf(ErrBadMatch, BadMatchBadLen, "OXM %#08x has a mask and an odd length", h)
	}
	o.Value, o.Mask = p[:len(p)/2:len(p)/2], p[len(p)/2:]
	return o, n, nil
}

// matchTypeOXM is OFPMT_OXM, the only match type of OpenFlow 1.3.
const matchTypeOXM = 1

// appendMatch appends m as an ofp_match, padded to 8 bytes.
func appendMatch(b []byte, m Match) []byte {
	start := len(b)
	b = append(b, 0, matchTypeOXM, 0, 0)
	if m.Encoded != nil {
		b = append(b, m.Encoded...)
	} else {
		for _, o := range m.Fields {
			b = AppendOXM(b, o)
		}
	}
	binary.BigEndian.PutUint16(b[start+2:], uint16(len(b)-start))
	return appendPad8(b, len(b)-start)
}

// decodeMatch decodes the ofp_match at the start of b; n is its length
// with its padding.
func decodeMatch(b []byte) (m Match, n int, err error) {
	if len(b) < 4 {
		return Match{}, 0, errorf(ErrBadMatch, BadMatchBadLen, "match header: %d of 4 bytes", len(b))
	}
	if t := binary.BigEndian.Uint16(b); t != matchTypeOXM {
		return Match{}, 0, errorf(ErrBadMatch, BadMatchBadType, "match type %d, not OFPMT_OXM", t)
	}
	l := int(binary.BigEndian.Uint16(b[2:]))
	n = pad8(l)
	if l < 4 || n > len(b) {
		return Match{}, 0, errorf(ErrBadMatch, BadMatchBadLen, "match length %d in %d bytes", l, len(b))
	}
	// Count the TLVs first, to allocate Fields once.
	count := 0
	for p := b[4:l]; len(p) > 0; count++ {
		_, k, err := DecodeOXM(p)
		if err != nil {
			return Match{}, 0, err
		}
		p = p[k:]
	}
	if count > 0 {
		m.Fields = make([]OXM, count)
		for i, p := 0, b[4:l]; i < count; i++ {
			o, k, _ := DecodeOXM(p)
			m.Fields[i], p = o, p[k:]
		}
	}
	return m, n, nil
}
