package openflow

import (
	"encoding/binary"
	"net/netip"
)

// NiciraExperimenter is the experimenter id of Nicira's (Open vSwitch's)
// extensions.
const NiciraExperimenter uint32 = 0x00002320

// Nicira's extension actions that ovs-ofctl sends for what xswitch does.
// An NXM or OXM field in them is named by its 32-bit header (class << 16
// | field << 9 | hasmask << 8 | length).
type (
	// NXResubmit is NXAST_RESUBMIT_TABLE, or NXAST_RESUBMIT, which is the
	// same with Table 0xff (OFPTT_ALL: the current table). It is encoded
	// as NXAST_RESUBMIT_TABLE, as ovs-ofctl does for both resubmit:PORT
	// and resubmit(PORT,TABLE).
	NXResubmit struct {
		InPort uint16 // OpenFlow 1.0 numbering; 0xfff8 (OFPP_IN_PORT): the frame's own
		Table  uint8
	}
	// NXRegLoad is NXAST_REG_LOAD: Value into bits Ofs..Ofs+NBits-1 of Dst
	// (NBits 1 to 64; Value has no bit at NBits or above).
	NXRegLoad struct {
		Ofs, NBits uint8
		Dst        uint32
		Value      uint64
	}
	// NXRegLoad2 is NXAST_REG_LOAD2: a set_field that may carry a mask.
	NXRegLoad2 struct{ Field OXM }
	// NXRegMove is NXAST_REG_MOVE.
	NXRegMove struct {
		NBits, SrcOfs, DstOfs uint16
		Src, Dst              uint32
	}
	// NXController is NXAST_CONTROLLER.
	NXController struct {
		MaxLen       uint16
		ControllerID uint16
		Reason       uint8
	}
	// NXController2 is NXAST_CONTROLLER2, whose arguments are properties.
	// Decoding gives the defaults of the absent ones (MaxLen 0xffff, Reason
	// 1 (OFPR_ACTION), no meter); encoding writes only the others, as Open
	// vSwitch does.
	NXController2 struct {
		MaxLen       uint16
		ControllerID uint16
		Reason       uint8
		UserData     []byte
		Pause        bool
		MeterID      uint32 // 0: none (a meter id starts at 1)
	}
	// NXConntrack is NXAST_CT: the frame goes through the connection
	// tracker. Its zone is ZoneImm, or when ZoneSrc (a field's NXM
	// header) is not 0, that field's ZoneNBits bits from ZoneOfs.
	// RecircTable is where a copy goes on, NXCTNoTable for none. Actions
	// run in the tracker: an NXNAT, and writes of ct_mark and ct_label.
	NXConntrack struct {
		Flags              uint16 // NXCTCommit, NXCTForce
		ZoneSrc            uint32
		ZoneOfs, ZoneNBits uint16
		ZoneImm            uint16
		RecircTable        uint8
		Alg                uint16 // the port of the protocol of an ALG (21: FTP), 0 for none
		Actions            []Action
	}
	// NXNAT is NXAST_NAT, which only an NXConntrack's Actions hold. The
	// range's parts are there when they are set: Min and Max (both of
	// one family), ProtoMin and ProtoMax when not 0.
	NXNAT struct {
		Flags              uint16 // NXNAT*
		Min, Max           netip.Addr
		ProtoMin, ProtoMax uint16
	}
	// NXCTClear is NXAST_CT_CLEAR.
	NXCTClear struct{}
)

// NXConntrack's flags (NX_CT_F_*) and its RecircTable for no table
// (NX_CT_RECIRC_NONE).
const (
	NXCTCommit  = 1 << 0
	NXCTForce   = 1 << 1
	NXCTNoTable = 0xff
)

// NXNAT's flags (NX_NAT_F_*).
const (
	NXNATSrc        = 1 << 0
	NXNATDst        = 1 << 1
	NXNATPersistent = 1 << 2
	NXNATProtoHash  = 1 << 3
	NXNATProtoRand  = 1 << 4
)

// The parts of an NXAST_NAT's range (enum nx_nat_range), in the order
// they follow its header.
const (
	nxNATIPv4Min  = 1 << 0
	nxNATIPv4Max  = 1 << 1
	nxNATIPv6Min  = 1 << 2
	nxNATIPv6Max  = 1 << 3
	nxNATProtoMin = 1 << 4
	nxNATProtoMax = 1 << 5
)

// The Nicira actions are experimenter actions.
func (NXResubmit) ActionType() ActionType    { return ActionTypeExperimenter }
func (NXRegLoad) ActionType() ActionType     { return ActionTypeExperimenter }
func (NXRegLoad2) ActionType() ActionType    { return ActionTypeExperimenter }
func (NXRegMove) ActionType() ActionType     { return ActionTypeExperimenter }
func (NXController) ActionType() ActionType  { return ActionTypeExperimenter }
func (NXController2) ActionType() ActionType { return ActionTypeExperimenter }
func (NXConntrack) ActionType() ActionType   { return ActionTypeExperimenter }
func (NXNAT) ActionType() ActionType         { return ActionTypeExperimenter }
func (NXCTClear) ActionType() ActionType     { return ActionTypeExperimenter }

// The subtypes of the Nicira actions (nx_action_header.subtype).
const (
	nxastResubmit      = 1
	nxastRegMove       = 6
	nxastRegLoad       = 7
	nxastResubmitTable = 14
	nxastController    = 20
	nxastRegLoad2      = 33
	nxastCT            = 35
	nxastNAT           = 36
	nxastController2   = 37
	nxastCTClear       = 43
)

// The properties of NXAST_CONTROLLER2 (enum nx_action_controller2_prop_type).
const (
	nxac2MaxLen       = 0
	nxac2ControllerID = 1
	nxac2Reason       = 2
	nxac2UserData     = 3
	nxac2Pause        = 4
	nxac2MeterID      = 5
)

const (
	reasonAction = 1          // OFPR_ACTION, NXAST_CONTROLLER2's default reason
	noMeter      = 0xffffffff // NX_CTLR_NO_METER
)

// appendNX appends a Nicira action after its type and length: the
// experimenter id, the subtype and the arguments (beginTLV and endTLV
// frame it).
func appendNX(b []byte, a Action) []byte {
	be := binary.BigEndian
	b = be.AppendUint32(b, NiciraExperimenter)
	switch a := a.(type) {
	case NXResubmit:
		b = be.AppendUint16(b, nxastResubmitTable)
		b = be.AppendUint16(b, a.InPort)
		b = append(b, a.Table)
	case NXRegLoad:
		b = be.AppendUint16(b, nxastRegLoad)
		b = be.AppendUint16(b, uint16(a.Ofs)<<6|uint16(a.NBits-1)&0x3f)
		b = be.AppendUint32(b, a.Dst)
		b = be.AppendUint64(b, a.Value)
	case NXRegLoad2:
		b = be.AppendUint16(b, nxastRegLoad2)
		b = AppendOXM(b, a.Field)
	case NXRegMove:
		b = be.AppendUint16(b, nxastRegMove)
		b = be.AppendUint16(b, a.NBits)
		b = be.AppendUint16(b, a.SrcOfs)
		b = be.AppendUint16(b, a.DstOfs)
		b = be.AppendUint32(b, a.Src)
		b = be.AppendUint32(b, a.Dst)
	case NXController:
		b = be.AppendUint16(b, nxastController)
		b = be.AppendUint16(b, a.MaxLen)
		b = be.AppendUint16(b, a.ControllerID)
		b = append(b, a.Reason)
	case NXController2:
		b = be.AppendUint16(b, nxastController2)
		b = append(b, 0, 0, 0, 0, 0, 0)
		// As Open vSwitch does, a 16-bit value takes 4 bytes, as in the
		// properties of the OpenFlow specification.
		if a.MaxLen != 0xffff {
			b = appendProp(b, nxac2MaxLen, []byte{byte(a.MaxLen >> 8), byte(a.MaxLen), 0, 0})
		}
		if a.ControllerID != 0 {
			b = appendProp(b, nxac2ControllerID, []byte{byte(a.ControllerID >> 8), byte(a.ControllerID), 0, 0})
		}
		if a.Reason != reasonAction {
			b = appendProp(b, nxac2Reason, []byte{a.Reason})
		}
		if len(a.UserData) > 0 {
			b = appendProp(b, nxac2UserData, a.UserData)
		}
		if a.Pause {
			b = appendProp(b, nxac2Pause, nil)
		}
		if a.MeterID != 0 {
			b = appendProp(b, nxac2MeterID, be.AppendUint32(nil, a.MeterID))
		}
	case NXConntrack:
		b = be.AppendUint16(b, nxastCT)
		b = be.AppendUint16(b, a.Flags)
		b = be.AppendUint32(b, a.ZoneSrc)
		if a.ZoneSrc != 0 {
			b = be.AppendUint16(b, a.ZoneOfs<<6|(a.ZoneNBits-1)&0x3f)
		} else {
			b = be.AppendUint16(b, a.ZoneImm)
		}
		b = append(b, a.RecircTable, 0, 0, 0)
		b = be.AppendUint16(b, a.Alg)
		b = AppendActions(b, a.Actions)
	case NXNAT:
		b = be.AppendUint16(b, nxastNAT)
		b = append(b, 0, 0)
		b = be.AppendUint16(b, a.Flags)
		at := len(b)
		b = append(b, 0, 0)
		var present uint16
		for _, p := range []struct {
			addr netip.Addr
			v4   uint16
			v6   uint16
		}{{a.Min, nxNATIPv4Min, nxNATIPv6Min}, {a.Max, nxNATIPv4Max, nxNATIPv6Max}} {
			switch {
			case p.addr.Is4():
				present |= p.v4
			case p.addr.Is6():
				present |= p.v6
			default:
				continue
			}
			b = append(b, p.addr.AsSlice()...)
		}
		if a.ProtoMin != 0 {
			present |= nxNATProtoMin
			b = be.AppendUint16(b, a.ProtoMin)
		}
		if a.ProtoMax != 0 {
			present |= nxNATProtoMax
			b = be.AppendUint16(b, a.ProtoMax)
		}
		be.PutUint16(b[at:], present)
	case NXCTClear:
		b = be.AppendUint16(b, nxastCTClear)
	default:
		cannotEncode(a)
	}
	return b
}

// appendProp appends an ofp_prop_header and its value, padded to 8 bytes;
// unlike an action's, a property's length leaves the padding out.
func appendProp(b []byte, t uint16, v []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, t)
	b = binary.BigEndian.AppendUint16(b, uint16(4+len(v)))
	b = append(b, v...)
	return appendPad8(b, 4+len(v))
}

// nxLen is the length of each fixed-size Nicira action.
var nxLen = map[uint16]int{
	nxastResubmit:      16,
	nxastResubmitTable: 16,
	nxastRegMove:       24,
	nxastRegLoad:       24,
	nxastController:    16,
	nxastCTClear:       16,
}

// decodeNX decodes the Nicira action b (whose length decodeAction checked).
func decodeNX(b []byte) (Action, error) {
	if len(b) < 16 {
		return nil, errorf(ErrBadAction, BadActionBadLen, "Nicira action: length %d", len(b))
	}
	be := binary.BigEndian
	st := be.Uint16(b[8:])
	if want, ok := nxLen[st]; ok && len(b) != want {
		return nil, errorf(ErrBadAction, BadActionBadLen, "Nicira action %d: length %d, not %d", st, len(b), want)
	}
	switch st {
	case nxastResubmit:
		return NXResubmit{InPort: be.Uint16(b[10:]), Table: 0xff}, nil
	case nxastResubmitTable:
		if !allZero(b[13:]) {
			return nil, errorf(ErrBadAction, BadActionBadArgument, "resubmit: padding not zero")
		}
		return NXResubmit{InPort: be.Uint16(b[10:]), Table: b[12]}, nil
	case nxastRegMove:
		return NXRegMove{
			NBits:  be.Uint16(b[10:]),
			SrcOfs: be.Uint16(b[12:]),
			DstOfs: be.Uint16(b[14:]),
			Src:    be.Uint32(b[16:]),
			Dst:    be.Uint32(b[20:]),
		}, nil
	case nxastRegLoad:
		return decodeRegLoad(b)
	case nxastRegLoad2:
		f, err := decodeSetField(b, 10, true)
		if err != nil {
			return nil, err
		}
		return NXRegLoad2{Field: f}, nil
	case nxastController:
		return NXController{MaxLen: be.Uint16(b[10:]), ControllerID: be.Uint16(b[12:]), Reason: b[14]}, nil
	case nxastController2:
		return decodeController2(b)
	case nxastCT:
		return decodeConntrack(b)
	case nxastNAT:
		return decodeNAT(b)
	case nxastCTClear:
		return NXCTClear{}, nil
	}
	return nil, errorf(ErrBadAction, BadActionBadExpType, "Nicira action subtype %d", st)
}

// decodeRegLoad decodes NXAST_REG_LOAD, whose ofs_nbits packs the offset
// into its upper 10 bits and the number of bits less one into the lower 6.
func decodeRegLoad(b []byte) (Action, error) {
	be := binary.BigEndian
	on := be.Uint16(b[10:])
	ofs, nbits := on>>6, on&0x3f+1
	if ofs > 0xff {
		// No field is that wide: the widest, an IPv6 address, has 128 bits.
		return nil, errorf(ErrBadAction, BadActionBadArgument, "load: offset %d", ofs)
	}
	v := be.Uint64(b[16:])
	if nbits < 64 && v>>nbits != 0 {
		return nil, errorf(ErrBadAction, BadActionBadArgument, "load: value %#x wider than %d bits", v, nbits)
	}
	return NXRegLoad{Ofs: uint8(ofs), NBits: uint8(nbits), Dst: be.Uint32(b[12:]), Value: v}, nil
}

// nxac2Len is the least length of the value of each fixed-size property
// of NXAST_CONTROLLER2: like Open vSwitch, decoding takes a 16-bit value
// of 2 bytes or more (it sends 4) and an 8-bit one of 1 or more.
var nxac2Len = map[uint16]int{nxac2MaxLen: 2, nxac2ControllerID: 2, nxac2Reason: 1, nxac2MeterID: 4}

// decodeController2 decodes NXAST_CONTROLLER2: 6 bytes of zeros after
// the subtype, then properties.
func decodeController2(b []byte) (Action, error) {
	if !allZero(b[10:16]) {
		return nil, errorf(ErrBadAction, BadActionBadArgument, "controller2: padding not zero")
	}
	be := binary.BigEndian
	c := NXController2{MaxLen: 0xffff, Reason: reasonAction}
	for p := b[16:]; len(p) > 0; {
		if len(p) < 4 {
			return nil, errorf(ErrBadAction, BadActionBadLen, "controller2: property header: %d of 4 bytes", len(p))
		}
		t, n := be.Uint16(p), int(be.Uint16(p[2:]))
		if n < 4 || pad8(n) > len(p) {
			return nil, errorf(ErrBadAction, BadActionBadLen, "controller2: property %d: length %d in %d bytes", t, n, len(p))
		}
		v := p[4:n:n]
		p = p[pad8(n):]
		if w, ok := nxac2Len[t]; ok && len(v) < w {
			return nil, errorf(ErrBadAction, BadActionBadLen, "controller2: property %d: %d bytes, under %d", t, len(v), w)
		}
		switch t {
		case nxac2MaxLen:
			c.MaxLen = be.Uint16(v)
		case nxac2ControllerID:
			c.ControllerID = be.Uint16(v)
		case nxac2Reason:
			c.Reason = v[0]
		case nxac2UserData:
			// An empty one is none: encoding leaves it out.
			c.UserData = nil
			if len(v) > 0 {
				c.UserData = v
			}
		case nxac2Pause:
			c.Pause = true
		case nxac2MeterID:
			switch m := be.Uint32(v); m {
			case 0:
				return nil, errorf(ErrBadAction, BadActionBadArgument, "controller2: meter 0")
			case noMeter:
				c.MeterID = 0
			default:
				c.MeterID = m
			}
		default:
			return nil, errorf(ErrBadAction, BadActionBadArgument, "controller2: property type %d", t)
		}
	}
	return c, nil
}

// decodeConntrack decodes NXAST_CT: 24 bytes, then the actions it runs.
func decodeConntrack(b []byte) (Action, error) {
	if len(b) < 24 {
		return nil, errorf(ErrBadAction, BadActionBadLen, "ct: length %d, under 24", len(b))
	}
	be := binary.BigEndian
	c := NXConntrack{Flags: be.Uint16(b[10:]), ZoneSrc: be.Uint32(b[12:]), RecircTable: b[18], Alg: be.Uint16(b[22:])}
	if c.ZoneSrc != 0 {
		on := be.Uint16(b[16:])
		c.ZoneOfs, c.ZoneNBits = on>>6, on&0x3f+1
	} else {
		c.ZoneImm = be.Uint16(b[16:])
	}
	var err error
	if c.Actions, err = DecodeActions(b[24:]); err != nil {
		return nil, err
	}
	return c, nil
}

// decodeNAT decodes NXAST_NAT: 16 bytes, then the parts of its range
// that it says are there, padded to 8 bytes.
func decodeNAT(b []byte) (Action, error) {
	be := binary.BigEndian
	n := NXNAT{Flags: be.Uint16(b[12:])}
	present := be.Uint16(b[14:])
	opts := b[16:]
	take := func(size int) ([]byte, error) {
		if len(opts) < size {
			return nil, errorf(ErrBadAction, BadActionBadLen, "nat: range of %d bytes, cut", len(b)-16)
		}
		v := opts[:size]
		opts = opts[size:]
		return v, nil
	}
	switch {
	case present&^(nxNATIPv4Min|nxNATIPv4Max|nxNATIPv6Min|nxNATIPv6Max|nxNATProtoMin|nxNATProtoMax) != 0,
		present&(nxNATIPv4Min|nxNATIPv4Max) != 0 && present&(nxNATIPv6Min|nxNATIPv6Max) != 0:
		return nil, errorf(ErrBadAction, BadActionBadArgument, "nat: range parts %#x", present)
	}
	for _, p := range []struct {
		bit  uint16
		size int
		addr *netip.Addr
	}{{nxNATIPv4Min, 4, &n.Min}, {nxNATIPv4Max, 4, &n.Max}, {nxNATIPv6Min, 16, &n.Min}, {nxNATIPv6Max, 16, &n.Max}} {
		if present&p.bit != 0 {
			v, err := take(p.size)
			if err != nil {
				return nil, err
			}
			*p.addr, _ = netip.AddrFromSlice(v)
		}
	}
	for _, p := range []struct {
		bit  uint16
		port *uint16
	}{{nxNATProtoMin, &n.ProtoMin}, {nxNATProtoMax, &n.ProtoMax}} {
		if present&p.bit != 0 {
			v, err := take(2)
			if err != nil {
				return nil, err
			}
			if *p.port = be.Uint16(v); *p.port == 0 {
				// 0 is what encoding leaves out.
				return nil, errorf(ErrBadAction, BadActionBadArgument, "nat: port 0")
			}
		}
	}
	return n, nil
}
