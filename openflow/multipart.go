package openflow

import "encoding/binary"

// MultipartType is a multipart message's type (ofp_multipart_type).
type MultipartType uint16

// The OpenFlow 1.3 multipart types.
const (
	MultipartDesc          MultipartType = 0
	MultipartFlow          MultipartType = 1
	MultipartAggregate     MultipartType = 2
	MultipartTable         MultipartType = 3
	MultipartPortStats     MultipartType = 4
	MultipartQueue         MultipartType = 5
	MultipartGroup         MultipartType = 6
	MultipartGroupDesc     MultipartType = 7
	MultipartGroupFeatures MultipartType = 8
	MultipartMeter         MultipartType = 9
	MultipartMeterConfig   MultipartType = 10
	MultipartMeterFeatures MultipartType = 11
	MultipartTableFeatures MultipartType = 12
	MultipartPortDesc      MultipartType = 13
	MultipartExperimenter  MultipartType = 0xffff
)

// The Flags bit that says more messages of the same request or reply
// follow.
const (
	MultipartRequestMore uint16 = 1
	MultipartReplyMore   uint16 = 1
)

// MultipartRequest is OFPT_MULTIPART_REQUEST. Decode gives Body by MType:
//
//	MultipartDesc, MultipartTable, MultipartPortDesc,
//	MultipartGroupDesc, MultipartGroupFeatures,
//	MultipartMeterFeatures:                         nil
//	MultipartFlow, MultipartAggregate:              FlowStatsRequest
//	MultipartPortStats:                             PortStatsRequest
//	MultipartGroup:                                 GroupStatsRequest
//	MultipartMeter, MultipartMeterConfig:           MeterRequest
//	MultipartTableFeatures:                         []TableFeatures
//	the others:                                     []byte, undecoded
//
// Append encodes Body by its Go type, whatever MType says.
type MultipartRequest struct {
	MType MultipartType
	Flags uint16
	Body  any
}

// MultipartReply is OFPT_MULTIPART_REPLY. Decode gives Body by MType:
//
//	MultipartDesc:          Desc
//	MultipartFlow:          []FlowStats
//	MultipartAggregate:     AggregateStats
//	MultipartTable:         []TableStats
//	MultipartPortStats:     []PortStats
//	MultipartPortDesc:      []Port
//	MultipartTableFeatures: []TableFeatures
//	MultipartGroup:         []GroupStats
//	MultipartGroupDesc:     []GroupDesc
//	MultipartGroupFeatures: GroupFeatures
//	MultipartMeter:         []MeterStats
//	MultipartMeterConfig:   []MeterConfig
//	MultipartMeterFeatures: MeterFeatures
//	the others:             []byte, undecoded
//
// Append encodes Body by its Go type, whatever MType says; a reply with
// many items may need AppendMultipartReplies.
type MultipartReply struct {
	MType MultipartType
	Flags uint16
	Body  any
}

func (MultipartRequest) Type() Type { return TypeMultipartRequest }
func (MultipartReply) Type() Type   { return TypeMultipartReply }

// FlowStatsRequest is the body of a MultipartFlow or MultipartAggregate
// request.
type FlowStatsRequest struct {
	TableID            uint8
	OutPort, OutGroup  uint32
	Cookie, CookieMask uint64
	Match              Match
}

// PortStatsRequest is the body of a MultipartPortStats request.
type PortStatsRequest struct {
	PortNo uint32 // PortAny: all
}

// Desc is the body of a MultipartDesc reply.
type Desc struct {
	MfrDesc, HWDesc, SWDesc string // at most 255 bytes each
	SerialNum               string // at most 31 bytes
	DPDesc                  string // at most 255 bytes
}

// FlowStats is one flow of a MultipartFlow reply.
type FlowStats struct {
	TableID                            uint8
	DurationSec, DurationNsec          uint32
	Priority, IdleTimeout, HardTimeout uint16
	Flags                              uint16
	Cookie, PacketCount, ByteCount     uint64
	Match                              Match
	Instructions                       []Instruction
	// EncodedInstructions, when not nil, is the instructions already
	// encoded, written as they are instead of Instructions, as
	// Match.Encoded is. Decoding leaves it nil.
	EncodedInstructions []byte
}

// AggregateStats is the body of a MultipartAggregate reply.
type AggregateStats struct {
	PacketCount, ByteCount uint64
	FlowCount              uint32
}

// TableStats is one table of a MultipartTable reply.
type TableStats struct {
	TableID                   uint8
	ActiveCount               uint32
	LookupCount, MatchedCount uint64
}

// PortStats is one port of a MultipartPortStats reply.
type PortStats struct {
	PortNo                                      uint32
	RxPackets, TxPackets, RxBytes, TxBytes      uint64
	RxDropped, TxDropped, RxErrors, TxErrors    uint64
	RxFrameErr, RxOverErr, RxCRCErr, Collisions uint64
	DurationSec, DurationNsec                   uint32
}

// TableFeatures is one table of a MultipartTableFeatures request or
// reply.
type TableFeatures struct {
	TableID                      uint8
	Name                         string // at most 31 bytes
	MetadataMatch, MetadataWrite uint64
	Config, MaxEntries           uint32
	Properties                   []TableFeatureProp
}

// TableFeatureProp is one property of a TableFeatures. Type says which
// of the other fields it has:
//
//	TableFeatureInstructions(Miss):                   InstructionIDs
//	TableFeatureNextTables(Miss):                     NextTables
//	TableFeatureWrite/ApplyActions(Miss):             ActionIDs
//	TableFeatureMatch, TableFeatureWildcards,
//	TableFeatureWrite/ApplySetfield(Miss):            OXMIDs
//	the experimenter properties and unknown types:    Data, undecoded
//
// Instruction and action ids are their types: an experimenter id's
// experimenter is not kept. OXMIDs are the property's 32-bit words, OXM
// headers (an experimenter OXM's id takes two).
type TableFeatureProp struct {
	Type           uint16
	InstructionIDs []uint16
	NextTables     []uint8
	ActionIDs      []uint16
	OXMIDs         []uint32
	Data           []byte
}

// The table feature property types (OFPTFPT_*).
const (
	TableFeatureInstructions      uint16 = 0
	TableFeatureInstructionsMiss  uint16 = 1
	TableFeatureNextTables        uint16 = 2
	TableFeatureNextTablesMiss    uint16 = 3
	TableFeatureWriteActions      uint16 = 4
	TableFeatureWriteActionsMiss  uint16 = 5
	TableFeatureApplyActions      uint16 = 6
	TableFeatureApplyActionsMiss  uint16 = 7
	TableFeatureMatch             uint16 = 8
	TableFeatureWildcards         uint16 = 10
	TableFeatureWriteSetfield     uint16 = 12
	TableFeatureWriteSetfieldMiss uint16 = 13
	TableFeatureApplySetfield     uint16 = 14
	TableFeatureApplySetfieldMiss uint16 = 15
	TableFeatureExperimenter      uint16 = 0xfffe
	TableFeatureExperimenterMiss  uint16 = 0xffff
)

// GroupFeatures is the body of a MultipartGroupFeatures reply; the
// arrays are indexed by group type.
type GroupFeatures struct {
	Types, Capabilities uint32
	MaxGroups, Actions  [4]uint32
}

const (
	descLen           = 3*256 + 32 + 256
	flowStatsLen      = 48
	flowStatsReqLen   = 32
	aggregateLen      = 24
	tableStatsLen     = 24
	portStatsLen      = 112
	tableFeaturesLen  = 64
	groupFeaturesLen  = 40
	multipartFixedLen = 8
)

func appendMultipartRequest(b []byte, m MultipartRequest) []byte {
	return appendMultipartBody(appendMultipartFixed(b, m.MType, m.Flags), m.Body)
}

func appendMultipartReply(b []byte, m MultipartReply) []byte {
	return appendMultipartBody(appendMultipartFixed(b, m.MType, m.Flags), m.Body)
}

func appendMultipartFixed(b []byte, t MultipartType, flags uint16) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(t))
	b = binary.BigEndian.AppendUint16(b, flags)
	return append(b, 0, 0, 0, 0)
}

func appendMultipartBody(b []byte, body any) []byte {
	be := binary.BigEndian
	switch m := body.(type) {
	case []byte:
		return append(b, m...)
	case FlowStatsRequest:
		b = append(b, m.TableID, 0, 0, 0)
		b = be.AppendUint32(b, m.OutPort)
		b = be.AppendUint32(b, m.OutGroup)
		b = append(b, 0, 0, 0, 0)
		b = be.AppendUint64(b, m.Cookie)
		b = be.AppendUint64(b, m.CookieMask)
		return appendMatch(b, m.Match)
	case PortStatsRequest:
		b = be.AppendUint32(b, m.PortNo)
		return append(b, 0, 0, 0, 0)
	case GroupStatsRequest:
		b = be.AppendUint32(b, m.GroupID)
		return append(b, 0, 0, 0, 0)
	case MeterRequest:
		b = be.AppendUint32(b, m.MeterID)
		return append(b, 0, 0, 0, 0)
	case MeterFeatures:
		return appendMeterFeatures(b, m)
	case Desc:
		for _, f := range [...]struct {
			s     string
			width int
		}{{m.MfrDesc, 256}, {m.HWDesc, 256}, {m.SWDesc, 256}, {m.SerialNum, 32}, {m.DPDesc, 256}} {
			b = appendString(b, f.s, f.width)
		}
		return b
	case AggregateStats:
		b = be.AppendUint64(b, m.PacketCount)
		b = be.AppendUint64(b, m.ByteCount)
		b = be.AppendUint32(b, m.FlowCount)
		return append(b, 0, 0, 0, 0)
	case GroupFeatures:
		b = be.AppendUint32(b, m.Types)
		b = be.AppendUint32(b, m.Capabilities)
		for _, v := range m.MaxGroups {
			b = be.AppendUint32(b, v)
		}
		for _, v := range m.Actions {
			b = be.AppendUint32(b, v)
		}
		return b
	}
	n, item := multipartItems(body)
	for i := range n {
		b = item(b, i)
	}
	return b
}

// multipartItems gives the number of items of a list body and a function
// that appends item i; none for other bodies.
func multipartItems(body any) (n int, item func(b []byte, i int) []byte) {
	switch m := body.(type) {
	case []FlowStats:
		return len(m), func(b []byte, i int) []byte { return appendFlowStats(b, m[i]) }
	case []TableStats:
		return len(m), func(b []byte, i int) []byte { return appendTableStats(b, m[i]) }
	case []PortStats:
		return len(m), func(b []byte, i int) []byte { return appendPortStats(b, m[i]) }
	case []Port:
		return len(m), func(b []byte, i int) []byte { return appendPort(b, m[i]) }
	case []TableFeatures:
		return len(m), func(b []byte, i int) []byte { return appendTableFeatures(b, m[i]) }
	case []GroupStats:
		return len(m), func(b []byte, i int) []byte { return appendGroupStats(b, m[i]) }
	case []GroupDesc:
		return len(m), func(b []byte, i int) []byte { return appendGroupDesc(b, m[i]) }
	case []MeterStats:
		return len(m), func(b []byte, i int) []byte { return appendMeterStats(b, m[i]) }
	case []MeterConfig:
		return len(m), func(b []byte, i int) []byte { return appendMeterConfig(b, m[i]) }
	}
	return 0, nil
}

// maxMessageLen is the longest message the 16-bit length can say.
const maxMessageLen = 0xffff

// AppendMultipartReplies appends r as as many multipart replies as its
// items need to keep each message within 65535 bytes, with
// MultipartReplyMore in the flags of all but the last. A body that is not
// a list ([]FlowStats, []TableStats, []PortStats, []Port,
// []TableFeatures, []GroupStats, []GroupDesc, []MeterStats,
// []MeterConfig) makes one message, as Append does.
func AppendMultipartReplies(b []byte, xid uint32, r MultipartReply) []byte {
	n, item := multipartItems(r.Body)
	if item == nil {
		return Append(b, xid, r)
	}
	start := len(b)
	b = append(b, make([]byte, multipartHeaderLen)...)
	putMultipartHeader(b[start:], xid, r)
	for i := range n {
		at := len(b)
		b = item(b, i)
		if len(b)-start <= maxMessageLen || at-start == multipartHeaderLen {
			continue
		}
		// Item i does not fit: end this message before it and move it
		// into the next one.
		finishMultipart(b[start:at], MultipartReplyMore)
		b = append(b, make([]byte, multipartHeaderLen)...)
		copy(b[at+multipartHeaderLen:], b[at:len(b)-multipartHeaderLen])
		putMultipartHeader(b[at:], xid, r)
		start = at
	}
	finishMultipart(b[start:], 0)
	return b
}

// multipartHeaderLen is the length of a multipart message without its
// body.
const multipartHeaderLen = HeaderLen + multipartFixedLen

// putMultipartHeader writes the header of a message of r, without its
// length, into p.
func putMultipartHeader(p []byte, xid uint32, r MultipartReply) {
	p[0], p[1] = Version, uint8(TypeMultipartReply)
	binary.BigEndian.PutUint32(p[4:], xid)
	binary.BigEndian.PutUint16(p[8:], uint16(r.MType))
	binary.BigEndian.PutUint16(p[10:], r.Flags)
}

// finishMultipart sets the length of the multipart message msg and adds
// flags to its flags.
func finishMultipart(msg []byte, flags uint16) {
	binary.BigEndian.PutUint16(msg[2:], uint16(len(msg)))
	f := msg[HeaderLen+2:]
	binary.BigEndian.PutUint16(f, binary.BigEndian.Uint16(f)|flags)
}

func appendFlowStats(b []byte, f FlowStats) []byte {
	be := binary.BigEndian
	start := len(b)
	b = append(b, 0, 0, f.TableID, 0)
	b = be.AppendUint32(b, f.DurationSec)
	b = be.AppendUint32(b, f.DurationNsec)
	for _, v := range [...]uint16{f.Priority, f.IdleTimeout, f.HardTimeout, f.Flags} {
		b = be.AppendUint16(b, v)
	}
	b = append(b, 0, 0, 0, 0)
	for _, v := range [...]uint64{f.Cookie, f.PacketCount, f.ByteCount} {
		b = be.AppendUint64(b, v)
	}
	b = appendMatch(b, f.Match)
	if f.EncodedInstructions != nil {
		b = append(b, f.EncodedInstructions...)
	} else {
		b = AppendInstructions(b, f.Instructions)
	}
	be.PutUint16(b[start:], uint16(len(b)-start))
	return b
}

func appendTableStats(b []byte, t TableStats) []byte {
	b = append(b, t.TableID, 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, t.ActiveCount)
	b = binary.BigEndian.AppendUint64(b, t.LookupCount)
	return binary.BigEndian.AppendUint64(b, t.MatchedCount)
}

func appendPortStats(b []byte, p PortStats) []byte {
	be := binary.BigEndian
	b = be.AppendUint32(b, p.PortNo)
	b = append(b, 0, 0, 0, 0)
	for _, v := range p.counters() {
		b = be.AppendUint64(b, *v)
	}
	b = be.AppendUint32(b, p.DurationSec)
	return be.AppendUint32(b, p.DurationNsec)
}

// counters are p's counters in their order on the wire.
func (p *PortStats) counters() [12]*uint64 {
	return [...]*uint64{&p.RxPackets, &p.TxPackets, &p.RxBytes, &p.TxBytes, &p.RxDropped, &p.TxDropped,
		&p.RxErrors, &p.TxErrors, &p.RxFrameErr, &p.RxOverErr, &p.RxCRCErr, &p.Collisions}
}

func appendTableFeatures(b []byte, t TableFeatures) []byte {
	be := binary.BigEndian
	start := len(b)
	b = append(b, 0, 0, t.TableID, 0, 0, 0, 0, 0)
	b = appendString(b, t.Name, 32)
	b = be.AppendUint64(b, t.MetadataMatch)
	b = be.AppendUint64(b, t.MetadataWrite)
	b = be.AppendUint32(b, t.Config)
	b = be.AppendUint32(b, t.MaxEntries)
	for _, p := range t.Properties {
		b = appendTableFeatureProp(b, p)
	}
	be.PutUint16(b[start:], uint16(len(b)-start))
	return b
}

func appendTableFeatureProp(b []byte, p TableFeatureProp) []byte {
	be := binary.BigEndian
	start := len(b)
	b = be.AppendUint16(b, p.Type)
	b = append(b, 0, 0)
	switch tableFeaturePropKind(p.Type) {
	case propInstructions:
		for _, id := range p.InstructionIDs {
			b = be.AppendUint16(b, id)
			b = be.AppendUint16(b, 4)
		}
	case propNextTables:
		b = append(b, p.NextTables...)
	case propActions:
		for _, id := range p.ActionIDs {
			b = be.AppendUint16(b, id)
			b = be.AppendUint16(b, 4)
		}
	case propOXMs:
		for _, h := range p.OXMIDs {
			b = be.AppendUint32(b, h)
		}
	default:
		b = append(b, p.Data...)
	}
	be.PutUint16(b[start+2:], uint16(len(b)-start))
	return appendPad8(b, len(b)-start)
}

// The layouts of table feature properties.
const (
	propData = iota
	propInstructions
	propNextTables
	propActions
	propOXMs
)

func tableFeaturePropKind(t uint16) int {
	switch t {
	case TableFeatureInstructions, TableFeatureInstructionsMiss:
		return propInstructions
	case TableFeatureNextTables, TableFeatureNextTablesMiss:
		return propNextTables
	case TableFeatureWriteActions, TableFeatureWriteActionsMiss, TableFeatureApplyActions, TableFeatureApplyActionsMiss:
		return propActions
	case TableFeatureMatch, TableFeatureWildcards, TableFeatureWriteSetfield, TableFeatureWriteSetfieldMiss,
		TableFeatureApplySetfield, TableFeatureApplySetfieldMiss:
		return propOXMs
	}
	return propData
}

func decodeMultipartRequest(p []byte) (Message, error) {
	t, flags, p, err := decodeMultipartFixed(TypeMultipartRequest, p)
	if err != nil {
		return nil, err
	}
	m := MultipartRequest{MType: t, Flags: flags}
	switch t {
	case MultipartDesc, MultipartTable, MultipartPortDesc, MultipartGroupDesc, MultipartGroupFeatures, MultipartMeterFeatures:
		err = exactly(TypeMultipartRequest, p, 0)
	case MultipartGroup:
		if err = exactly(TypeMultipartRequest, p, groupStatsReqLen); err == nil {
			m.Body = GroupStatsRequest{GroupID: binary.BigEndian.Uint32(p)}
		}
	case MultipartMeter, MultipartMeterConfig:
		if err = exactly(TypeMultipartRequest, p, meterRequestLen); err == nil {
			m.Body = MeterRequest{MeterID: binary.BigEndian.Uint32(p)}
		}
	case MultipartFlow, MultipartAggregate:
		m.Body, err = decodeFlowStatsRequest(p)
	case MultipartPortStats:
		if err = exactly(TypeMultipartRequest, p, 8); err == nil {
			m.Body = PortStatsRequest{PortNo: binary.BigEndian.Uint32(p)}
		}
	case MultipartTableFeatures:
		m.Body, err = decodeTableFeaturesList(p)
	default:
		m.Body = bytesOrNil(p)
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

func decodeMultipartReply(p []byte) (Message, error) {
	const mt = TypeMultipartReply
	t, flags, p, err := decodeMultipartFixed(mt, p)
	if err != nil {
		return nil, err
	}
	be := binary.BigEndian
	m := MultipartReply{MType: t, Flags: flags}
	switch t {
	case MultipartDesc:
		if err = exactly(mt, p, descLen); err == nil {
			m.Body = Desc{
				MfrDesc:   cString(p[:256]),
				HWDesc:    cString(p[256:512]),
				SWDesc:    cString(p[512:768]),
				SerialNum: cString(p[768:800]),
				DPDesc:    cString(p[800:]),
			}
		}
	case MultipartFlow:
		m.Body, err = decodeFlowStatsList(p)
	case MultipartAggregate:
		if err = exactly(mt, p, aggregateLen); err == nil {
			m.Body = AggregateStats{PacketCount: be.Uint64(p), ByteCount: be.Uint64(p[8:]), FlowCount: be.Uint32(p[16:])}
		}
	case MultipartTable:
		m.Body, err = decodeFixedList(p, tableStatsLen, func(q []byte) TableStats {
			return TableStats{TableID: q[0], ActiveCount: be.Uint32(q[4:]), LookupCount: be.Uint64(q[8:]), MatchedCount: be.Uint64(q[16:])}
		})
	case MultipartPortStats:
		m.Body, err = decodeFixedList(p, portStatsLen, func(q []byte) PortStats {
			s := PortStats{PortNo: be.Uint32(q), DurationSec: be.Uint32(q[104:]), DurationNsec: be.Uint32(q[108:])}
			for i, v := range s.counters() {
				*v = be.Uint64(q[8+8*i:])
			}
			return s
		})
	case MultipartPortDesc:
		m.Body, err = decodeFixedList(p, portLen, decodePort)
	case MultipartTableFeatures:
		m.Body, err = decodeTableFeaturesList(p)
	case MultipartGroup:
		m.Body, err = decodeGroupStatsList(p)
	case MultipartGroupDesc:
		m.Body, err = decodeGroupDescList(p)
	case MultipartGroupFeatures:
		if err = exactly(mt, p, groupFeaturesLen); err == nil {
			g := GroupFeatures{Types: be.Uint32(p), Capabilities: be.Uint32(p[4:])}
			for i := range 4 {
				g.MaxGroups[i], g.Actions[i] = be.Uint32(p[8+4*i:]), be.Uint32(p[24+4*i:])
			}
			m.Body = g
		}
	case MultipartMeter:
		m.Body, err = decodeMeterStatsList(p)
	case MultipartMeterConfig:
		m.Body, err = decodeMeterConfigList(p)
	case MultipartMeterFeatures:
		m.Body, err = decodeMeterFeatures(p)
	default:
		m.Body = bytesOrNil(p)
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

func decodeMultipartFixed(mt Type, p []byte) (t MultipartType, flags uint16, body []byte, err error) {
	if err := atLeast(mt, p, multipartFixedLen); err != nil {
		return 0, 0, nil, err
	}
	return MultipartType(binary.BigEndian.Uint16(p)), binary.BigEndian.Uint16(p[2:]), p[multipartFixedLen:], nil
}

func decodeFlowStatsRequest(p []byte) (FlowStatsRequest, error) {
	if err := atLeast(TypeMultipartRequest, p, flowStatsReqLen); err != nil {
		return FlowStatsRequest{}, err
	}
	be := binary.BigEndian
	r := FlowStatsRequest{TableID: p[0], OutPort: be.Uint32(p[4:]), OutGroup: be.Uint32(p[8:]), Cookie: be.Uint64(p[16:]), CookieMask: be.Uint64(p[24:])}
	m, n, err := decodeMatch(p[flowStatsReqLen:])
	if err != nil {
		return FlowStatsRequest{}, err
	}
	r.Match = m
	return r, exactly(TypeMultipartRequest, p, flowStatsReqLen+n)
}

// decodeFixedList decodes p as a list of items of n bytes each.
func decodeFixedList[T any](p []byte, n int, decode func([]byte) T) ([]T, error) {
	if len(p)%n != 0 {
		return nil, errorf(ErrBadRequest, BadRequestBadLen, "MULTIPART_REPLY: body of %d bytes, not items of %d", len(p), n)
	}
	var items []T
	for ; len(p) > 0; p = p[n:] {
		items = append(items, decode(p[:n]))
	}
	return items, nil
}

// nextItem splits the item that starts with its 16-bit length off p; an
// item has at least fixed bytes.
func nextItem(p []byte, fixed int, what string) (item, rest []byte, err error) {
	if len(p) < 2 {
		return nil, nil, errorf(ErrBadRequest, BadRequestBadLen, "%s: %d bytes left", what, len(p))
	}
	n := int(binary.BigEndian.Uint16(p))
	if n < fixed || n > len(p) {
		return nil, nil, errorf(ErrBadRequest, BadRequestBadLen, "%s of %d bytes in %d", what, n, len(p))
	}
	return p[:n], p[n:], nil
}

func decodeFlowStatsList(p []byte) ([]FlowStats, error) {
	be := binary.BigEndian
	var list []FlowStats
	for len(p) > 0 {
		q, rest, err := nextItem(p, flowStatsLen, "flow stats")
		if err != nil {
			return nil, err
		}
		f := FlowStats{
			TableID:      q[2],
			DurationSec:  be.Uint32(q[4:]),
			DurationNsec: be.Uint32(q[8:]),
			Priority:     be.Uint16(q[12:]),
			IdleTimeout:  be.Uint16(q[14:]),
			HardTimeout:  be.Uint16(q[16:]),
			Flags:        be.Uint16(q[18:]),
			Cookie:       be.Uint64(q[24:]),
			PacketCount:  be.Uint64(q[32:]),
			ByteCount:    be.Uint64(q[40:]),
		}
		m, n, err := decodeMatch(q[flowStatsLen:])
		if err != nil {
			return nil, err
		}
		if f.Instructions, err = DecodeInstructions(q[flowStatsLen+n:]); err != nil {
			return nil, err
		}
		f.Match = m
		list = append(list, f)
		p = rest
	}
	return list, nil
}

func decodeTableFeaturesList(p []byte) ([]TableFeatures, error) {
	be := binary.BigEndian
	var list []TableFeatures
	for len(p) > 0 {
		q, rest, err := nextItem(p, tableFeaturesLen, "table features")
		if err != nil {
			return nil, err
		}
		t := TableFeatures{
			TableID:       q[2],
			Name:          cString(q[8:40]),
			MetadataMatch: be.Uint64(q[40:]),
			MetadataWrite: be.Uint64(q[48:]),
			Config:        be.Uint32(q[56:]),
			MaxEntries:    be.Uint32(q[60:]),
		}
		for q = q[tableFeaturesLen:]; len(q) > 0; {
			prop, n, err := decodeTableFeatureProp(q)
			if err != nil {
				return nil, err
			}
			t.Properties = append(t.Properties, prop)
			q = q[n:]
		}
		list = append(list, t)
		p = rest
	}
	return list, nil
}

// decodeTableFeatureProp decodes the property at the start of p; n is its
// length with its padding.
func decodeTableFeatureProp(p []byte) (prop TableFeatureProp, n int, err error) {
	be := binary.BigEndian
	if len(p) < 4 {
		return prop, 0, errorf(ErrBadRequest, BadRequestBadLen, "table feature property header: %d of 4 bytes", len(p))
	}
	prop.Type = be.Uint16(p)
	l := int(be.Uint16(p[2:]))
	n = pad8(l)
	if l < 4 || n > len(p) {
		return prop, 0, errorf(ErrBadRequest, BadRequestBadLen, "table feature property %d: length %d in %d bytes", prop.Type, l, len(p))
	}
	q := p[4:l]
	switch tableFeaturePropKind(prop.Type) {
	case propInstructions, propActions:
		var ids []uint16
		for len(q) > 0 {
			if len(q) < 4 || be.Uint16(q[2:]) < 4 || int(be.Uint16(q[2:])) > len(q) {
				return prop, 0, errorf(ErrBadRequest, BadRequestBadLen, "table feature property %d: a bad id", prop.Type)
			}
			ids = append(ids, be.Uint16(q))
			q = q[be.Uint16(q[2:]):]
		}
		if tableFeaturePropKind(prop.Type) == propInstructions {
			prop.InstructionIDs = ids
		} else {
			prop.ActionIDs = ids
		}
	case propNextTables:
		prop.NextTables = bytesOrNil(q)
	case propOXMs:
		if len(q)%4 != 0 {
			return prop, 0, errorf(ErrBadRequest, BadRequestBadLen, "table feature property %d: %d bytes of OXM ids", prop.Type, len(q))
		}
		for ; len(q) > 0; q = q[4:] {
			prop.OXMIDs = append(prop.OXMIDs, be.Uint32(q))
		}
	default:
		prop.Data = bytesOrNil(q)
	}
	return prop, n, nil
}
