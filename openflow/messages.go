package openflow

import (
	"encoding/binary"
	"slices"
)

// Message is one OpenFlow message's body: the structs of this file, of
// port.go and of multipart.go, as values (not pointers).
type Message interface {
	Type() Type
}

// Reserved values of fields of several messages.
const (
	NoBuffer                 uint32 = 0xffffffff // OFP_NO_BUFFER: the frame is in the message
	ControllerMaxLenNoBuffer uint16 = 0xffff     // OFPCML_NO_BUFFER: send the whole frame
	TableAll                 uint8  = 0xff       // OFPTT_ALL
	GroupAny                 uint32 = 0xffffffff // OFPG_ANY
)

// The reserved port numbers (OFPP_*).
const (
	PortMax        uint32 = 0xffffff00 // the last number a port can have
	PortInPort     uint32 = 0xfffffff8
	PortTable      uint32 = 0xfffffff9
	PortNormal     uint32 = 0xfffffffa
	PortFlood      uint32 = 0xfffffffb
	PortAll        uint32 = 0xfffffffc
	PortController uint32 = 0xfffffffd
	PortLocal      uint32 = 0xfffffffe
	PortAny        uint32 = 0xffffffff
)

// Hello is OFPT_HELLO. Versions are the versions of its
// OFPHET_VERSIONBITMAP element, ascending; nil when the peer sent none,
// and then the version in its header (ParseHeader) is the highest it
// speaks.
type Hello struct {
	Versions []uint8
}

// Error is OFPT_ERROR. For the experimenter form (ErrType
// ErrExperimenter), Code is the exp_type and Experimenter the
// experimenter id. (ErrType is not Type, which is the Message method.)
type Error struct {
	ErrType      ErrorType
	Code         uint16
	Experimenter uint32
	Data         []byte // by convention the refused message's first bytes
}

type (
	EchoRequest struct{ Data []byte }
	EchoReply   struct{ Data []byte }
)

// Experimenter is OFPT_EXPERIMENTER.
type Experimenter struct {
	Experimenter uint32
	ExpType      uint32
	Data         []byte
}

type FeaturesRequest struct{}

// FeaturesReply is OFPT_FEATURES_REPLY.
type FeaturesReply struct {
	DatapathID   uint64
	NBuffers     uint32
	NTables      uint8
	AuxiliaryID  uint8
	Capabilities uint32 // Cap* bits
}

// The bits of FeaturesReply.Capabilities.
const (
	CapFlowStats   uint32 = 1 << 0
	CapTableStats  uint32 = 1 << 1
	CapPortStats   uint32 = 1 << 2
	CapGroupStats  uint32 = 1 << 3
	CapIPReasm     uint32 = 1 << 5
	CapQueueStats  uint32 = 1 << 6
	CapPortBlocked uint32 = 1 << 8
)

type GetConfigRequest struct{}

// GetConfigReply and SetConfig are ofp_switch_config.
type (
	GetConfigReply struct{ Flags, MissSendLen uint16 }
	SetConfig      struct{ Flags, MissSendLen uint16 }
)

// The values of the switch config's Flags: what to do with IP fragments.
const (
	ConfigFragNormal uint16 = 0
	ConfigFragDrop   uint16 = 1
	ConfigFragReasm  uint16 = 2
	ConfigFragMask   uint16 = 3
)

// PacketIn is OFPT_PACKET_IN.
type PacketIn struct {
	BufferID uint32
	TotalLen uint16
	Reason   uint8
	TableID  uint8
	Cookie   uint64
	Match    Match
	Data     []byte
}

// The values of PacketIn.Reason.
const (
	PacketInNoMatch    uint8 = 0
	PacketInAction     uint8 = 1
	PacketInInvalidTTL uint8 = 2
)

// FlowRemoved is OFPT_FLOW_REMOVED.
type FlowRemoved struct {
	Cookie                   uint64
	Priority                 uint16
	Reason                   uint8
	TableID                  uint8
	DurationSec              uint32
	DurationNsec             uint32
	IdleTimeout, HardTimeout uint16
	PacketCount, ByteCount   uint64
	Match                    Match
}

// The values of FlowRemoved.Reason.
const (
	RemovedIdleTimeout uint8 = 0
	RemovedHardTimeout uint8 = 1
	RemovedDelete      uint8 = 2
	RemovedGroupDelete uint8 = 3
	RemovedMeterDelete uint8 = 4
)

// PortStatus is OFPT_PORT_STATUS.
type PortStatus struct {
	Reason uint8
	Desc   Port
}

// The values of PortStatus.Reason.
const (
	PortAdd    uint8 = 0
	PortDelete uint8 = 1
	PortModify uint8 = 2
)

// PacketOut is OFPT_PACKET_OUT.
type PacketOut struct {
	BufferID uint32
	InPort   uint32
	Actions  []Action
	Data     []byte
}

// FlowMod is OFPT_FLOW_MOD.
type FlowMod struct {
	Cookie, CookieMask          uint64
	TableID                     uint8
	Command                     uint8
	IdleTimeout, HardTimeout    uint16
	Priority                    uint16
	BufferID, OutPort, OutGroup uint32
	Flags                       uint16
	Match                       Match
	Instructions                []Instruction
}

// FlowModEncoded returns the match's OXM TLVs (without the ofp_match
// header and its padding) and the instructions of msg, an OFPT_FLOW_MOD
// that Decode accepted, as they are on the wire, aliasing msg: what a
// switch keeps to give them back as they came (Match.Encoded,
// FlowStats.EncodedInstructions), which their decoded values may not
// (OpenFlow leaves the order of the TLVs free, and an action's encoding
// has fields a switch need not keep).
func FlowModEncoded(msg []byte) (match, instructions []byte) {
	p := msg[HeaderLen+flowModLen:]
	n := int(binary.BigEndian.Uint16(p[2:]))
	return p[4:n], p[pad8(n):]
}

// flowModLen is the length of an OFPT_FLOW_MOD's fields before its match.
const flowModLen = 40

// The values of FlowMod.Command.
const (
	FlowAdd          uint8 = 0
	FlowModify       uint8 = 1
	FlowModifyStrict uint8 = 2
	FlowDelete       uint8 = 3
	FlowDeleteStrict uint8 = 4
)

// The bits of FlowMod.Flags (and FlowStats.Flags).
const (
	FlowFlagSendFlowRem  uint16 = 1 << 0
	FlowFlagCheckOverlap uint16 = 1 << 1
	FlowFlagResetCounts  uint16 = 1 << 2
	FlowFlagNoPktCounts  uint16 = 1 << 3
	FlowFlagNoBytCounts  uint16 = 1 << 4
)

type (
	BarrierRequest struct{}
	BarrierReply   struct{}
)

// RoleRequest and RoleReply are ofp_role_request.
type (
	RoleRequest struct {
		Role         uint32
		GenerationID uint64
	}
	RoleReply struct {
		Role         uint32
		GenerationID uint64
	}
)

// The values of Role.
const (
	RoleNoChange uint32 = 0
	RoleEqual    uint32 = 1
	RoleMaster   uint32 = 2
	RoleSlave    uint32 = 3
)

type GetAsyncRequest struct{}

// GetAsyncReply and SetAsync are ofp_async_config: index 0 of each mask
// is for the master (and equal) role, 1 for the slave role; bit n
// enables reason n.
type (
	GetAsyncReply struct{ PacketInMask, PortStatusMask, FlowRemovedMask [2]uint32 }
	SetAsync      struct{ PacketInMask, PortStatusMask, FlowRemovedMask [2]uint32 }
)

// Unsupported is a message of a type xswitch does not implement
// (PORT_MOD, TABLE_MOD, QUEUE_GET_CONFIG_*): its
// body undecoded, so that the agent can refuse it with the right error.
type Unsupported struct {
	MsgType Type
	Body    []byte
}

func (Hello) Type() Type            { return TypeHello }
func (Error) Type() Type            { return TypeError }
func (EchoRequest) Type() Type      { return TypeEchoRequest }
func (EchoReply) Type() Type        { return TypeEchoReply }
func (Experimenter) Type() Type     { return TypeExperimenter }
func (FeaturesRequest) Type() Type  { return TypeFeaturesRequest }
func (FeaturesReply) Type() Type    { return TypeFeaturesReply }
func (GetConfigRequest) Type() Type { return TypeGetConfigRequest }
func (GetConfigReply) Type() Type   { return TypeGetConfigReply }
func (SetConfig) Type() Type        { return TypeSetConfig }
func (PacketIn) Type() Type         { return TypePacketIn }
func (FlowRemoved) Type() Type      { return TypeFlowRemoved }
func (PortStatus) Type() Type       { return TypePortStatus }
func (PacketOut) Type() Type        { return TypePacketOut }
func (FlowMod) Type() Type          { return TypeFlowMod }
func (BarrierRequest) Type() Type   { return TypeBarrierRequest }
func (BarrierReply) Type() Type     { return TypeBarrierReply }
func (RoleRequest) Type() Type      { return TypeRoleRequest }
func (RoleReply) Type() Type        { return TypeRoleReply }
func (GetAsyncRequest) Type() Type  { return TypeGetAsyncRequest }
func (GetAsyncReply) Type() Type    { return TypeGetAsyncReply }
func (SetAsync) Type() Type         { return TypeSetAsync }
func (u Unsupported) Type() Type    { return u.MsgType }

// ErrorData is how much of a refused message an Error carries back: the
// 64 bytes the specification asks for at least.
const ErrorData = 64

// Refusal is the OFPT_ERROR that refuses msg, the whole message, for e.
// Its Data aliases msg.
func (e *DecodeError) Refusal(msg []byte) Error {
	return Error{ErrType: e.Type, Code: e.Code, Data: msg[:min(len(msg), ErrorData)]}
}

// Append appends m as a whole message with header and xid. A message
// longer than 65535 bytes is the caller's bug: its length field is cut to
// 16 bits (multipart replies split with AppendMultipartReplies). m must
// be one of this package's messages, a value: anything else is the
// caller's bug and gets a header with type 0xff, which peers refuse.
func Append(b []byte, xid uint32, m Message) []byte {
	start := len(b)
	b = append(b, Version, 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, xid)
	b, t := appendBody(b, m)
	b[start+1] = uint8(t)
	binary.BigEndian.PutUint16(b[start+2:], uint16(len(b)-start))
	return b
}

// appendBody appends m's body and gives its type, calling only the
// concrete types' Type methods: m does not escape.
func appendBody(b []byte, m Message) ([]byte, Type) {
	be := binary.BigEndian
	switch m := m.(type) {
	case Hello:
		return appendHello(b, m), m.Type()
	case Error:
		b = be.AppendUint16(b, uint16(m.ErrType))
		b = be.AppendUint16(b, m.Code)
		if m.ErrType == ErrExperimenter {
			b = be.AppendUint32(b, m.Experimenter)
		}
		return append(b, m.Data...), m.Type()
	case EchoRequest:
		return append(b, m.Data...), m.Type()
	case EchoReply:
		return append(b, m.Data...), m.Type()
	case Experimenter:
		b = be.AppendUint32(b, m.Experimenter)
		b = be.AppendUint32(b, m.ExpType)
		return append(b, m.Data...), m.Type()
	case FeaturesReply:
		b = be.AppendUint64(b, m.DatapathID)
		b = be.AppendUint32(b, m.NBuffers)
		b = append(b, m.NTables, m.AuxiliaryID, 0, 0)
		b = be.AppendUint32(b, m.Capabilities)
		return be.AppendUint32(b, 0), m.Type()
	case GetConfigReply:
		return appendSwitchConfig(b, SetConfig(m)), m.Type()
	case SetConfig:
		return appendSwitchConfig(b, m), m.Type()
	case PacketIn:
		b = be.AppendUint32(b, m.BufferID)
		b = be.AppendUint16(b, m.TotalLen)
		b = append(b, m.Reason, m.TableID)
		b = be.AppendUint64(b, m.Cookie)
		b = appendMatch(b, m.Match)
		b = append(b, 0, 0)
		return append(b, m.Data...), m.Type()
	case FlowRemoved:
		b = be.AppendUint64(b, m.Cookie)
		b = be.AppendUint16(b, m.Priority)
		b = append(b, m.Reason, m.TableID)
		b = be.AppendUint32(b, m.DurationSec)
		b = be.AppendUint32(b, m.DurationNsec)
		b = be.AppendUint16(b, m.IdleTimeout)
		b = be.AppendUint16(b, m.HardTimeout)
		b = be.AppendUint64(b, m.PacketCount)
		b = be.AppendUint64(b, m.ByteCount)
		return appendMatch(b, m.Match), m.Type()
	case PortStatus:
		b = append(b, m.Reason, 0, 0, 0, 0, 0, 0, 0)
		return appendPort(b, m.Desc), m.Type()
	case PacketOut:
		b = be.AppendUint32(b, m.BufferID)
		b = be.AppendUint32(b, m.InPort)
		lenAt := len(b)
		b = append(b, 0, 0, 0, 0, 0, 0, 0, 0)
		b = AppendActions(b, m.Actions)
		be.PutUint16(b[lenAt:], uint16(len(b)-lenAt-8))
		return append(b, m.Data...), m.Type()
	case FlowMod:
		b = be.AppendUint64(b, m.Cookie)
		b = be.AppendUint64(b, m.CookieMask)
		b = append(b, m.TableID, m.Command)
		b = be.AppendUint16(b, m.IdleTimeout)
		b = be.AppendUint16(b, m.HardTimeout)
		b = be.AppendUint16(b, m.Priority)
		b = be.AppendUint32(b, m.BufferID)
		b = be.AppendUint32(b, m.OutPort)
		b = be.AppendUint32(b, m.OutGroup)
		b = be.AppendUint16(b, m.Flags)
		b = append(b, 0, 0)
		b = appendMatch(b, m.Match)
		return AppendInstructions(b, m.Instructions), m.Type()
	case GroupMod:
		return appendGroupMod(b, m), m.Type()
	case MeterMod:
		return appendMeterMod(b, m), m.Type()
	case RoleRequest:
		return appendRole(b, RoleReply(m)), m.Type()
	case RoleReply:
		return appendRole(b, m), m.Type()
	case GetAsyncReply:
		return appendAsync(b, SetAsync(m)), m.Type()
	case SetAsync:
		return appendAsync(b, m), m.Type()
	case MultipartRequest:
		return appendMultipartRequest(b, m), m.Type()
	case MultipartReply:
		return appendMultipartReply(b, m), m.Type()
	case Unsupported:
		return append(b, m.Body...), m.Type()
	case FeaturesRequest:
		return b, m.Type()
	case GetConfigRequest:
		return b, m.Type()
	case BarrierRequest:
		return b, m.Type()
	case BarrierReply:
		return b, m.Type()
	case GetAsyncRequest:
		return b, m.Type()
	}
	return b, typeInvalid
}

// typeInvalid is the type Append gives a Message of another package,
// which it cannot encode, so that the peer refuses it.
const typeInvalid Type = 0xff

// helloElemVersionBitmap is OFPHET_VERSIONBITMAP.
const helloElemVersionBitmap = 1

func appendHello(b []byte, m Hello) []byte {
	if len(m.Versions) == 0 {
		return b
	}
	words := 1 + int(slices.Max(m.Versions))/32
	start := len(b)
	b = binary.BigEndian.AppendUint16(b, helloElemVersionBitmap)
	b = binary.BigEndian.AppendUint16(b, uint16(4+4*words))
	bitmap := len(b)
	b = append(b, make([]byte, 4*words)...)
	for _, v := range m.Versions {
		w := bitmap + 4*(int(v)/32)
		binary.BigEndian.PutUint32(b[w:], binary.BigEndian.Uint32(b[w:])|1<<(v%32))
	}
	return appendPad8(b, len(b)-start)
}

func appendSwitchConfig(b []byte, m SetConfig) []byte {
	b = binary.BigEndian.AppendUint16(b, m.Flags)
	return binary.BigEndian.AppendUint16(b, m.MissSendLen)
}

func appendRole(b []byte, m RoleReply) []byte {
	b = binary.BigEndian.AppendUint32(b, m.Role)
	b = append(b, 0, 0, 0, 0)
	return binary.BigEndian.AppendUint64(b, m.GenerationID)
}

func appendAsync(b []byte, m SetAsync) []byte {
	for _, mask := range [...][2]uint32{m.PacketInMask, m.PortStatusMask, m.FlowRemovedMask} {
		b = binary.BigEndian.AppendUint32(b, mask[0])
		b = binary.BigEndian.AppendUint32(b, mask[1])
	}
	return b
}

// Decode decodes b, exactly one message (as long as its header says).
// Byte slices in m (Data, Body, OXM values) alias b. A malformed message
// gives a *DecodeError, the error to send back; xid is the header's
// whenever b has one, for that reply. Only HELLO is decoded in versions
// other than Version, for the version negotiation.
func Decode(b []byte) (xid uint32, m Message, err error) {
	h, err := ParseHeader(b)
	if err != nil {
		return 0, nil, err
	}
	if int(h.Length) != len(b) {
		return h.Xid, nil, errorf(ErrBadRequest, BadRequestBadLen, "%v: header says %d bytes, message has %d", h.Type, h.Length, len(b))
	}
	if h.Version != Version && h.Type != TypeHello {
		return h.Xid, nil, errorf(ErrBadRequest, BadRequestBadVersion, "%v: version %#02x", h.Type, h.Version)
	}
	if m, err = decodeBody(h.Type, b[HeaderLen:]); err != nil {
		return h.Xid, nil, err
	}
	return h.Xid, m, nil
}

func decodeBody(t Type, p []byte) (Message, error) {
	be := binary.BigEndian
	switch t {
	case TypeHello:
		return decodeHello(p)
	case TypeError:
		if err := atLeast(t, p, 4); err != nil {
			return nil, err
		}
		m := Error{ErrType: ErrorType(be.Uint16(p)), Code: be.Uint16(p[2:])}
		p = p[4:]
		if m.ErrType == ErrExperimenter {
			if err := atLeast(t, p, 4); err != nil {
				return nil, err
			}
			m.Experimenter, p = be.Uint32(p), p[4:]
		}
		m.Data = bytesOrNil(p)
		return m, nil
	case TypeEchoRequest:
		return EchoRequest{Data: bytesOrNil(p)}, nil
	case TypeEchoReply:
		return EchoReply{Data: bytesOrNil(p)}, nil
	case TypeExperimenter:
		if err := atLeast(t, p, 8); err != nil {
			return nil, err
		}
		return Experimenter{Experimenter: be.Uint32(p), ExpType: be.Uint32(p[4:]), Data: bytesOrNil(p[8:])}, nil
	case TypeFeaturesRequest:
		return FeaturesRequest{}, exactly(t, p, 0)
	case TypeFeaturesReply:
		if err := exactly(t, p, 24); err != nil {
			return nil, err
		}
		return FeaturesReply{
			DatapathID:   be.Uint64(p),
			NBuffers:     be.Uint32(p[8:]),
			NTables:      p[12],
			AuxiliaryID:  p[13],
			Capabilities: be.Uint32(p[16:]),
		}, nil
	case TypeGetConfigRequest:
		return GetConfigRequest{}, exactly(t, p, 0)
	case TypeGetConfigReply, TypeSetConfig:
		if err := exactly(t, p, 4); err != nil {
			return nil, err
		}
		c := SetConfig{Flags: be.Uint16(p), MissSendLen: be.Uint16(p[2:])}
		if t == TypeGetConfigReply {
			return GetConfigReply(c), nil
		}
		return c, nil
	case TypePacketIn:
		if err := atLeast(t, p, 16); err != nil {
			return nil, err
		}
		m := PacketIn{BufferID: be.Uint32(p), TotalLen: be.Uint16(p[4:]), Reason: p[6], TableID: p[7], Cookie: be.Uint64(p[8:])}
		match, n, err := decodeMatch(p[16:])
		if err != nil {
			return nil, err
		}
		m.Match = match
		if err := atLeast(t, p, 16+n+2); err != nil {
			return nil, err
		}
		m.Data = bytesOrNil(p[16+n+2:])
		return m, nil
	case TypeFlowRemoved:
		if err := atLeast(t, p, 40); err != nil {
			return nil, err
		}
		m := FlowRemoved{
			Cookie:       be.Uint64(p),
			Priority:     be.Uint16(p[8:]),
			Reason:       p[10],
			TableID:      p[11],
			DurationSec:  be.Uint32(p[12:]),
			DurationNsec: be.Uint32(p[16:]),
			IdleTimeout:  be.Uint16(p[20:]),
			HardTimeout:  be.Uint16(p[22:]),
			PacketCount:  be.Uint64(p[24:]),
			ByteCount:    be.Uint64(p[32:]),
		}
		match, n, err := decodeMatch(p[40:])
		if err != nil {
			return nil, err
		}
		m.Match = match
		return m, exactly(t, p, 40+n)
	case TypePortStatus:
		if err := exactly(t, p, 8+portLen); err != nil {
			return nil, err
		}
		return PortStatus{Reason: p[0], Desc: decodePort(p[8:])}, nil
	case TypePacketOut:
		if err := atLeast(t, p, 16); err != nil {
			return nil, err
		}
		m := PacketOut{BufferID: be.Uint32(p), InPort: be.Uint32(p[4:])}
		n := 16 + int(be.Uint16(p[8:]))
		if err := atLeast(t, p, n); err != nil {
			return nil, err
		}
		as, err := DecodeActions(p[16:n])
		if err != nil {
			return nil, err
		}
		m.Actions, m.Data = as, bytesOrNil(p[n:])
		return m, nil
	case TypeFlowMod:
		if err := atLeast(t, p, flowModLen); err != nil {
			return nil, err
		}
		m := FlowMod{
			Cookie:      be.Uint64(p),
			CookieMask:  be.Uint64(p[8:]),
			TableID:     p[16],
			Command:     p[17],
			IdleTimeout: be.Uint16(p[18:]),
			HardTimeout: be.Uint16(p[20:]),
			Priority:    be.Uint16(p[22:]),
			BufferID:    be.Uint32(p[24:]),
			OutPort:     be.Uint32(p[28:]),
			OutGroup:    be.Uint32(p[32:]),
			Flags:       be.Uint16(p[36:]),
		}
		match, n, err := decodeMatch(p[flowModLen:])
		if err != nil {
			return nil, err
		}
		is, err := DecodeInstructions(p[flowModLen+n:])
		if err != nil {
			return nil, err
		}
		m.Match, m.Instructions = match, is
		return m, nil
	case TypeMultipartRequest:
		return decodeMultipartRequest(p)
	case TypeMultipartReply:
		return decodeMultipartReply(p)
	case TypeBarrierRequest:
		return BarrierRequest{}, exactly(t, p, 0)
	case TypeBarrierReply:
		return BarrierReply{}, exactly(t, p, 0)
	case TypeRoleRequest, TypeRoleReply:
		if err := exactly(t, p, 16); err != nil {
			return nil, err
		}
		r := RoleReply{Role: be.Uint32(p), GenerationID: be.Uint64(p[8:])}
		if t == TypeRoleRequest {
			return RoleRequest(r), nil
		}
		return r, nil
	case TypeGetAsyncRequest:
		return GetAsyncRequest{}, exactly(t, p, 0)
	case TypeGetAsyncReply, TypeSetAsync:
		if err := exactly(t, p, 24); err != nil {
			return nil, err
		}
		var a SetAsync
		for i, mask := range [...]*[2]uint32{&a.PacketInMask, &a.PortStatusMask, &a.FlowRemovedMask} {
			mask[0], mask[1] = be.Uint32(p[8*i:]), be.Uint32(p[8*i+4:])
		}
		if t == TypeGetAsyncReply {
			return GetAsyncReply(a), nil
		}
		return a, nil
	case TypeGroupMod:
		return decodeGroupMod(p)
	case TypeMeterMod:
		return decodeMeterMod(p)
	case TypePortMod, TypeTableMod, TypeQueueGetConfigRequest, TypeQueueGetConfigReply:
		return Unsupported{MsgType: t, Body: bytesOrNil(p)}, nil
	}
	return nil, errorf(ErrBadRequest, BadRequestBadType, "message type %d", uint8(t))
}

func decodeHello(p []byte) (Message, error) {
	// The versions of all bitmap elements, of which there is usually one.
	var bitmap [256 / 32]uint32
	for len(p) > 0 {
		if len(p) < 4 {
			return nil, errorf(ErrBadRequest, BadRequestBadLen, "HELLO element header: %d of 4 bytes", len(p))
		}
		t, n := binary.BigEndian.Uint16(p), int(binary.BigEndian.Uint16(p[2:]))
		if n < 4 || n > len(p) {
			return nil, errorf(ErrBadRequest, BadRequestBadLen, "HELLO element length %d in %d bytes", n, len(p))
		}
		if t == helloElemVersionBitmap {
			if (n-4)%4 != 0 {
				return nil, errorf(ErrBadRequest, BadRequestBadLen, "HELLO version bitmap of %d bytes", n-4)
			}
			for w := 0; w < min((n-4)/4, len(bitmap)); w++ {
				bitmap[w] |= binary.BigEndian.Uint32(p[4+4*w:])
			}
		}
		// The last element's padding may be missing: some peers leave it
		// out, and it carries nothing.
		p = p[min(pad8(n), len(p)):]
	}
	var m Hello
	for v := range 256 {
		if bitmap[v/32]&(1<<(v%32)) != 0 {
			m.Versions = append(m.Versions, uint8(v))
		}
	}
	return m, nil
}

// exactly checks that the body p of a message of type t is n bytes long.
func exactly(t Type, p []byte, n int) error {
	if len(p) != n {
		return errorf(ErrBadRequest, BadRequestBadLen, "%v: body of %d bytes, not %d", t, len(p), n)
	}
	return nil
}

// atLeast checks that the body p of a message of type t has n bytes.
func atLeast(t Type, p []byte, n int) error {
	if len(p) < n {
		return errorf(ErrBadRequest, BadRequestBadLen, "%v: body of %d bytes, short of %d", t, len(p), n)
	}
	return nil
}

// bytesOrNil keeps decoded values comparable with those built by hand,
// whose empty byte slices are nil.
func bytesOrNil(p []byte) []byte {
	if len(p) == 0 {
		return nil
	}
	return p
}
