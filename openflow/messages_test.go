package openflow

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

var (
	testMatch = Match{Fields: []OXM{
		{Class: OXMClassOpenFlowBasic, Field: OXMInPort, Value: []byte{0, 0, 0, 3}},
		{Class: OXMClassOpenFlowBasic, Field: OXMEthType, Value: []byte{0x08, 0x00}},
		{Class: OXMClassOpenFlowBasic, Field: OXMIPv4Src, Value: []byte{10, 0, 0, 0}, Mask: []byte{255, 255, 255, 0}},
	}}
	testPort = Port{
		PortNo: 7, HWAddr: [6]byte{0x02, 0, 0, 0, 0, 0x07}, Name: "veth7",
		Config: PortConfigNoPacketIn, State: PortStateLive,
		Curr:      PortFeature10GbFD | PortFeatureCopper,
		Supported: PortFeature1GbFD | PortFeature10GbFD | PortFeatureCopper,
		CurrSpeed: 10000000, MaxSpeed: 10000000,
	}
	testFlowStatsRequest = FlowStatsRequest{TableID: TableAll, OutPort: PortAny, OutGroup: GroupAny, Cookie: 0x10, CookieMask: 0xff, Match: testMatch}
	testBuckets          = []Bucket{
		{Weight: 2, WatchPort: PortAny, WatchGroup: GroupAny, Actions: []Action{ActionOutput{Port: 1}}},
		{Weight: 1, WatchPort: PortAny, WatchGroup: GroupAny, Actions: []Action{ActionSetField{Field: basic(OXMEthDst, 2, 0, 0, 0, 0, 9)}, ActionGroup{GroupID: 7}}},
	}
	testMeterBands = []MeterBand{
		{Type: MeterBandDrop, Rate: 1000, BurstSize: 100},
		{Type: MeterBandDSCPRemark, Rate: 500, BurstSize: 50, PrecLevel: 2},
	}
	testFFBuckets = []Bucket{
		{WatchPort: 3, WatchGroup: GroupAny, Actions: []Action{ActionOutput{Port: 3}}},
		{WatchPort: PortAny, WatchGroup: 7, Actions: []Action{ActionGroup{GroupID: 7}}},
	}
	testTableFeatures = TableFeatures{
		TableID: 0, Name: "classifier", MetadataMatch: ^uint64(0), MetadataWrite: ^uint64(0), MaxEntries: 1000000,
		Properties: []TableFeatureProp{
			{Type: TableFeatureInstructions, InstructionIDs: []uint16{uint16(InstructionTypeGotoTable), uint16(InstructionTypeApplyActions)}},
			{Type: TableFeatureNextTables, NextTables: []uint8{1, 2, 3}},
			{Type: TableFeatureApplyActions, ActionIDs: []uint16{uint16(ActionTypeOutput), uint16(ActionTypeSetField)}},
			{Type: TableFeatureMatch, OXMIDs: []uint32{OXM{Class: OXMClassOpenFlowBasic, Field: OXMInPort, Value: make([]byte, 4)}.Header()}},
			{Type: TableFeatureApplySetfieldMiss, OXMIDs: []uint32{OXM{Class: OXMClassOpenFlowBasic, Field: OXMEthDst, Value: make([]byte, 6)}.Header()}},
			{Type: TableFeatureExperimenter, Data: []byte{0, 0, 0x23, 0x20, 0, 0, 0, 1}},
		},
	}
)

// testMessages are one value of each message, and of each multipart
// body, as Decode gives them back. Those with actions or instructions
// have none until the action codec is merged.
var testMessages = []Message{
	Hello{},
	Hello{Versions: []uint8{1, 4}},
	Error{ErrType: ErrBadRequest, Code: BadRequestBadType, Data: []byte{4, 0x1e, 0, 8, 0, 0, 0, 9}},
	Error{ErrType: ErrExperimenter, Code: 7, Experimenter: NiciraExperimenter, Data: []byte{1, 2}},
	EchoRequest{},
	EchoRequest{Data: []byte("ping")},
	EchoReply{Data: []byte("pong")},
	Experimenter{Experimenter: NiciraExperimenter, ExpType: 20, Data: []byte{1, 2, 3}},
	FeaturesRequest{},
	FeaturesReply{DatapathID: 0x1122334455667788, NBuffers: 0, NTables: 254, AuxiliaryID: 0,
		Capabilities: CapFlowStats | CapTableStats | CapPortStats | CapGroupStats | CapQueueStats},
	GetConfigRequest{},
	GetConfigReply{Flags: ConfigFragNormal, MissSendLen: 128},
	SetConfig{Flags: ConfigFragDrop, MissSendLen: ControllerMaxLenNoBuffer},
	PacketIn{BufferID: NoBuffer, TotalLen: 6, Reason: PacketInAction, TableID: 1, Cookie: 0xabc, Match: testMatch, Data: []byte{1, 2, 3, 4, 5, 6}},
	PacketIn{BufferID: NoBuffer, Reason: PacketInNoMatch},
	FlowRemoved{Cookie: 1, Priority: 100, Reason: RemovedIdleTimeout, TableID: 2, DurationSec: 5, DurationNsec: 6,
		IdleTimeout: 10, HardTimeout: 20, PacketCount: 3, ByteCount: 300, Match: testMatch},
	PortStatus{Reason: PortModify, Desc: testPort},
	PacketOut{BufferID: NoBuffer, InPort: PortController, Data: []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	PacketOut{BufferID: NoBuffer, InPort: 1, Actions: []Action{
		NXConntrack{Flags: NXCTCommit, ZoneImm: 3, RecircTable: 2, Actions: []Action{
			NXNAT{Flags: NXNATDst, Min: netip.MustParseAddr("fe80::1"), Max: netip.MustParseAddr("fe80::2"), ProtoMin: 80},
			ActionSetField{Field: OXM{Class: OXMClassNXM1, Field: 107, Value: []byte{0, 0, 0, 1}}},
		}},
		NXCTClear{}, ActionOutput{Port: 2},
	}, Data: []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	FlowMod{Cookie: 0x1234, CookieMask: 0, TableID: 0, Command: FlowAdd, IdleTimeout: 60, HardTimeout: 0, Priority: 1000,
		BufferID: NoBuffer, OutPort: PortAny, OutGroup: GroupAny, Flags: FlowFlagSendFlowRem | FlowFlagCheckOverlap, Match: testMatch},
	FlowMod{Command: FlowDeleteStrict, TableID: TableAll, BufferID: NoBuffer, OutPort: PortAny, OutGroup: GroupAny},
	BarrierRequest{},
	BarrierReply{},
	RoleRequest{Role: RoleMaster, GenerationID: 42},
	RoleReply{Role: RoleSlave, GenerationID: 43},
	GetAsyncRequest{},
	GetAsyncReply{PacketInMask: [2]uint32{7, 0}, PortStatusMask: [2]uint32{7, 7}, FlowRemovedMask: [2]uint32{15, 0}},
	SetAsync{PacketInMask: [2]uint32{3, 1}, PortStatusMask: [2]uint32{7, 7}, FlowRemovedMask: [2]uint32{0, 0}},
	Unsupported{MsgType: TypePortMod, Body: []byte{0, 0, 0, 0, 0, 0, 0, 1}},
	GroupMod{Command: GroupCommandAdd, GroupType: GroupTypeSelect, GroupID: 1, Buckets: testBuckets},
	GroupMod{Command: GroupCommandModify, GroupType: GroupTypeFastFailover, GroupID: GroupMax, Buckets: testFFBuckets},
	GroupMod{Command: GroupCommandDelete, GroupType: GroupTypeAll, GroupID: GroupAll},
	GroupMod{Command: GroupCommandAdd, GroupType: GroupTypeIndirect, GroupID: 2, Buckets: []Bucket{{WatchPort: PortAny, WatchGroup: GroupAny}}},
	MeterMod{Command: MeterCommandAdd, Flags: MeterFlagKbps | MeterFlagBurst | MeterFlagStats, MeterID: 1, Bands: testMeterBands},
	MeterMod{Command: MeterCommandModify, Flags: MeterFlagPktps, MeterID: MeterMax, Bands: testMeterBands[1:]},
	MeterMod{Command: MeterCommandDelete, MeterID: MeterAll},

	MultipartRequest{MType: MultipartDesc},
	MultipartRequest{MType: MultipartFlow, Body: testFlowStatsRequest},
	MultipartRequest{MType: MultipartAggregate, Body: FlowStatsRequest{TableID: 3, OutPort: PortAny, OutGroup: GroupAny}},
	MultipartRequest{MType: MultipartTable},
	MultipartRequest{MType: MultipartPortStats, Body: PortStatsRequest{PortNo: PortAny}},
	MultipartRequest{MType: MultipartPortDesc},
	MultipartRequest{MType: MultipartGroupFeatures},
	MultipartRequest{MType: MultipartGroup, Body: GroupStatsRequest{GroupID: GroupAll}},
	MultipartRequest{MType: MultipartGroupDesc},
	MultipartRequest{MType: MultipartMeterFeatures},
	MultipartRequest{MType: MultipartMeter, Body: MeterRequest{MeterID: MeterAll}},
	MultipartRequest{MType: MultipartMeterConfig, Body: MeterRequest{MeterID: 7}},
	MultipartRequest{MType: MultipartTableFeatures, Body: []TableFeatures(nil)},
	MultipartRequest{MType: MultipartTableFeatures, Flags: MultipartRequestMore, Body: []TableFeatures{testTableFeatures}},
	MultipartRequest{MType: MultipartQueue, Body: []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},

	MultipartReply{MType: MultipartDesc, Body: Desc{MfrDesc: "xswitch", HWDesc: "AF_XDP", SWDesc: "0.1", SerialNum: "none", DPDesc: "br0"}},
	MultipartReply{MType: MultipartFlow, Body: []FlowStats{
		{TableID: 0, DurationSec: 1, DurationNsec: 2, Priority: 100, IdleTimeout: 10, HardTimeout: 20, Flags: FlowFlagSendFlowRem,
			Cookie: 5, PacketCount: 6, ByteCount: 700, Match: testMatch},
		{TableID: 1, Priority: 0},
	}},
	MultipartReply{MType: MultipartFlow, Body: []FlowStats(nil)},
	MultipartReply{MType: MultipartAggregate, Body: AggregateStats{PacketCount: 10, ByteCount: 1000, FlowCount: 3}},
	MultipartReply{MType: MultipartTable, Body: []TableStats{{TableID: 0, ActiveCount: 3, LookupCount: 100, MatchedCount: 90}, {TableID: 1}}},
	MultipartReply{MType: MultipartPortStats, Flags: MultipartReplyMore, Body: []PortStats{
		{PortNo: 1, RxPackets: 1, TxPackets: 2, RxBytes: 3, TxBytes: 4, RxDropped: 5, TxDropped: 6, RxErrors: 7, TxErrors: 8,
			RxFrameErr: 9, RxOverErr: 10, RxCRCErr: 11, Collisions: 12, DurationSec: 13, DurationNsec: 14},
	}},
	MultipartReply{MType: MultipartPortDesc, Body: []Port{testPort, {PortNo: PortLocal, Name: "br0", Config: PortConfigPortDown, State: PortStateLinkDown}}},
	MultipartReply{MType: MultipartTableFeatures, Body: []TableFeatures{testTableFeatures, {TableID: 1, Name: "t1"}}},
	MultipartReply{MType: MultipartGroupFeatures, Body: GroupFeatures{Types: 1, Capabilities: 2, MaxGroups: [4]uint32{1, 2, 3, 4}, Actions: [4]uint32{5, 6, 7, 8}}},
	MultipartReply{MType: MultipartGroup, Body: []GroupStats{
		{GroupID: 1, RefCount: 2, PacketCount: 30, ByteCount: 4000, DurationSec: 5, DurationNsec: 6, Buckets: []BucketCounter{{10, 1000}, {20, 3000}}},
		{GroupID: 2},
	}},
	MultipartReply{MType: MultipartGroupDesc, Body: []GroupDesc{
		{GroupType: GroupTypeSelect, GroupID: 1, Buckets: testBuckets},
		{GroupType: GroupTypeFastFailover, GroupID: 3, Buckets: testFFBuckets},
		{GroupType: GroupTypeAll, GroupID: 4},
	}},
	MultipartReply{MType: MultipartMeterFeatures, Body: MeterFeatures{MaxMeter: 1024, BandTypes: 6, Capabilities: 0xf, MaxBands: 8, MaxColor: 1}},
	MultipartReply{MType: MultipartMeter, Body: []MeterStats{
		{MeterID: 1, FlowCount: 2, PacketInCount: 30, ByteInCount: 4000, DurationSec: 5, DurationNsec: 6, Bands: []MeterBandStats{{10, 1000}, {20, 3000}}},
		{MeterID: 2},
	}},
	MultipartReply{MType: MultipartMeterConfig, Body: []MeterConfig{
		{Flags: MeterFlagKbps | MeterFlagBurst, MeterID: 1, Bands: testMeterBands},
		{Flags: MeterFlagPktps, MeterID: 2},
	}},
}

func TestRoundTrip(t *testing.T) {
	for i, m := range testMessages {
		b := Append([]byte{0xaa}, uint32(1000+i), m)[1:]
		h, err := ParseHeader(b)
		if err != nil || h.Version != Version || h.Type != m.Type() || int(h.Length) != len(b) || h.Xid != uint32(1000+i) {
			t.Errorf("%d %T: header %+v, %v, for %d bytes", i, m, h, err, len(b))
		}
		xid, got, err := Decode(b)
		if err != nil {
			t.Errorf("%d %T: %v\n%x", i, m, err, b)
			continue
		}
		if xid != uint32(1000+i) || !reflect.DeepEqual(got, m) {
			t.Errorf("%d: xid %d, decoded\n%#v\nnot\n%#v", i, xid, got, m)
		}
	}
}

func TestTypeString(t *testing.T) {
	for tt, want := range map[Type]string{TypeHello: "HELLO", TypeFlowMod: "FLOW_MOD", TypeMeterMod: "METER_MOD", 30: "Type(30)"} {
		if got := tt.String(); got != want {
			t.Errorf("%d: %q, not %q", uint8(tt), got, want)
		}
	}
}

// TestHelloVersions decodes HELLOs as other implementations send them.
func TestHelloVersions(t *testing.T) {
	for _, c := range []struct {
		hex  string
		want []uint8
	}{
		{"0100000800000001", nil},                                           // OpenFlow 1.0, no elements
		{"04000010000000010001000800000012", []uint8{1, 4}},                 // a bitmap of 1.0 and 1.3
		{"0600001000000001000100080000005e", []uint8{1, 2, 3, 4, 6}},        // from a later version
		{"0400001800000001ffff0005aabbccdd0001000800000010", []uint8{4}},    // an unknown element first
		{"04000014000000010001000c0000001000000001", []uint8{4, 32}},        // two words, no padding
		{"040000180000000100010008000000100001000800000012", []uint8{1, 4}}, // two bitmaps
	} {
		_, m, err := Decode(unhex(t, c.hex))
		if err != nil || !reflect.DeepEqual(m, Hello{Versions: c.want}) {
			t.Errorf("%s: %#v, %v; want %v", c.hex, m, err, c.want)
		}
	}
	// An element longer than the message.
	if _, _, err := Decode(unhex(t, "0400000c0000000100010008")); !isDecodeError(err, ErrBadRequest, BadRequestBadLen) {
		t.Errorf("cut element: %v", err)
	}
}

func TestDecodeErrors(t *testing.T) {
	flowMod := Append(nil, 1, FlowMod{Match: testMatch})
	meterMod := Append(nil, 1, MeterMod{Command: MeterCommandAdd, Flags: MeterFlagKbps, MeterID: 1, Bands: testMeterBands})
	groupMod := Append(nil, 1, GroupMod{Command: GroupCommandAdd, GroupType: GroupTypeSelect, GroupID: 1, Buckets: testBuckets})
	for _, c := range []struct {
		name string
		b    []byte
		typ  ErrorType
		code uint16
	}{
		{"short header", []byte{4, 0, 0}, ErrBadRequest, BadRequestBadLen},
		{"length beyond", patch(Append(nil, 1, EchoRequest{Data: []byte("x")}), 2, 0, 12), ErrBadRequest, BadRequestBadLen},
		{"length short", patch(Append(nil, 1, EchoRequest{Data: []byte("x")}), 2, 0, 8), ErrBadRequest, BadRequestBadLen},
		{"trailing garbage", append(Append(nil, 1, BarrierRequest{}), 0)[:9], ErrBadRequest, BadRequestBadLen},
		{"body in a barrier", patch(append(Append(nil, 1, BarrierRequest{}), 0), 2, 0, 9), ErrBadRequest, BadRequestBadLen},
		{"version 1.0", patch(Append(nil, 1, EchoRequest{}), 0, 1), ErrBadRequest, BadRequestBadVersion},
		{"version 1.5", patch(Append(nil, 1, FeaturesRequest{}), 0, 6), ErrBadRequest, BadRequestBadVersion},
		{"type 30", patch(Append(nil, 1, BarrierRequest{}), 1, 30), ErrBadRequest, BadRequestBadType},
		{"type 255", patch(Append(nil, 1, BarrierRequest{}), 1, 255), ErrBadRequest, BadRequestBadType},
		{"standard match", patch(bytes.Clone(flowMod), 48, 0, 0), ErrBadMatch, BadMatchBadType},
		{"match longer than the message", patch(bytes.Clone(flowMod), 50, 0x10, 0), ErrBadMatch, BadMatchBadLen},
		{"match shorter than its header", patch(bytes.Clone(flowMod), 50, 0, 3), ErrBadMatch, BadMatchBadLen},
		{"OXM past its match", patch(bytes.Clone(flowMod), 55, 0x20), ErrBadMatch, BadMatchBadLen},
		{"OXM mask of odd length", patch(bytes.Clone(flowMod), 54, 0x01, 0x03), ErrBadMatch, BadMatchBadLen},
		{"flow mod short", patch(Append(nil, 1, FlowMod{})[:40], 2, 0, 40), ErrBadRequest, BadRequestBadLen},
		{"actions past the packet out", patch(Append(nil, 1, PacketOut{}), 16, 0, 8), ErrBadRequest, BadRequestBadLen},
		{"port stats request short", Append(nil, 1, MultipartRequest{MType: MultipartPortStats, Body: []byte{0, 0, 0, 1}}), ErrBadRequest, BadRequestBadLen},
		{"desc request with a body", Append(nil, 1, MultipartRequest{MType: MultipartDesc, Body: []byte{0}}), ErrBadRequest, BadRequestBadLen},
		{"table stats not a multiple", Append(nil, 1, MultipartReply{MType: MultipartTable, Body: make([]byte, 25)}), ErrBadRequest, BadRequestBadLen},
		{"flow stats length short", Append(nil, 1, MultipartReply{MType: MultipartFlow, Body: make([]byte, 48)}), ErrBadRequest, BadRequestBadLen},
		{"bucket shorter than its header", patch(bytes.Clone(groupMod), 16, 0, 8), ErrGroupModFailed, GroupModFailedBadBucket},
		{"bucket past the message", patch(bytes.Clone(groupMod), 16, 1, 0), ErrGroupModFailed, GroupModFailedBadBucket},
		{"buckets end short", patch(append(bytes.Clone(groupMod[:16]), make([]byte, 8)...), 2, 0, 24), ErrGroupModFailed, GroupModFailedBadBucket},
		{"action past its bucket", patch(bytes.Clone(groupMod), 16+16+2, 0, 24), ErrBadAction, BadActionBadLen},
		{"group mod short", patch(Append(nil, 1, GroupMod{})[:12], 2, 0, 12), ErrBadRequest, BadRequestBadLen},
		{"group stats request short", Append(nil, 1, MultipartRequest{MType: MultipartGroup, Body: []byte{0, 0, 0, 1}}), ErrBadRequest, BadRequestBadLen},
		{"group desc request with a body", Append(nil, 1, MultipartRequest{MType: MultipartGroupDesc, Body: make([]byte, 8)}), ErrBadRequest, BadRequestBadLen},
		{"bucket counters not a multiple", Append(nil, 1, MultipartReply{MType: MultipartGroup, Body: patch(make([]byte, 48), 1, 48)}), ErrBadRequest, BadRequestBadLen},
		{"meter band of an experimenter", patch(bytes.Clone(meterMod), 16, 0xff, 0xff), ErrMeterModFailed, MeterModFailedBadBand},
		{"meter band of an unknown type", patch(bytes.Clone(meterMod), 16, 0, 3), ErrMeterModFailed, MeterModFailedBadBand},
		{"meter band shorter than its type", patch(bytes.Clone(meterMod), 18, 0, 8), ErrBadRequest, BadRequestBadLen},
		{"meter band past the message", patch(bytes.Clone(meterMod), 18, 0, 40), ErrBadRequest, BadRequestBadLen},
		{"meter band shorter than its header", patch(bytes.Clone(meterMod), 18, 0, 2), ErrBadRequest, BadRequestBadLen},
		{"meter bands end short", patch(append(bytes.Clone(meterMod), 0, 1), 2, 0, byte(len(meterMod)+2)), ErrBadRequest, BadRequestBadLen},
		{"meter mod short", patch(Append(nil, 1, MeterMod{})[:12], 2, 0, 12), ErrBadRequest, BadRequestBadLen},
		{"meter stats request short", Append(nil, 1, MultipartRequest{MType: MultipartMeter, Body: []byte{0, 0, 0, 1}}), ErrBadRequest, BadRequestBadLen},
		{"meter config request without a body", Append(nil, 1, MultipartRequest{MType: MultipartMeterConfig}), ErrBadRequest, BadRequestBadLen},
		{"meter stats shorter than their length", Append(nil, 1, MultipartReply{MType: MultipartMeter, Body: patch(make([]byte, 40), 4, 0, 39)}), ErrBadRequest, BadRequestBadLen},
		{"meter band stats not a multiple", Append(nil, 1, MultipartReply{MType: MultipartMeter, Body: patch(make([]byte, 48), 4, 0, 48)}), ErrBadRequest, BadRequestBadLen},
		{"meter features short", Append(nil, 1, MultipartReply{MType: MultipartMeterFeatures, Body: make([]byte, 12)}), ErrBadRequest, BadRequestBadLen},
		{"table features property past", patch(Append(nil, 1, MultipartRequest{MType: MultipartTableFeatures, Body: []TableFeatures{testTableFeatures}}), 16+64+2, 0x7f), ErrBadRequest, BadRequestBadLen},
	} {
		_, _, err := Decode(c.b)
		if !isDecodeError(err, c.typ, c.code) {
			t.Errorf("%s: %v, not type %d code %d\n%x", c.name, err, c.typ, c.code, c.b)
		}
	}
}

// TestTruncated cuts every test message at every byte, with the header's
// length as it was (a length that lies) and set to the cut (a short
// body): decoding gives a *DecodeError or, where the cut leaves a valid
// message (a shorter ECHO), a message, and never panics.
func TestTruncated(t *testing.T) {
	for _, m := range testMessages {
		full := Append(nil, 1, m)
		for k := range len(full) {
			b := bytes.Clone(full[:k])
			if _, _, err := Decode(b); !isDecodeError(err, ErrBadRequest, BadRequestBadLen) {
				t.Errorf("%T cut at %d: %v", m, k, err)
			}
			if k < HeaderLen {
				continue
			}
			binary.BigEndian.PutUint16(b[2:], uint16(k))
			if _, _, err := Decode(b); err != nil {
				var de *DecodeError
				if !errors.As(err, &de) {
					t.Errorf("%T cut at %d, length %d: %v", m, k, k, err)
				}
			}
		}
	}
}

func TestOXM(t *testing.T) {
	exp := OXM{Class: OXMClassExperimenter, Field: 5, Experimenter: 0x4f4e4600, Value: []byte{1, 2}, Mask: []byte{3, 4}}
	if h := exp.Header(); h != 0xffff0b08 {
		t.Errorf("experimenter header %#x", h)
	}
	b := AppendOXM(nil, exp)
	if want := unhex(t, "ffff0b084f4e460001020304"); !bytes.Equal(b, want) {
		t.Errorf("%x, not %x", b, want)
	}
	o, n, err := DecodeOXM(append(b, 0xee))
	if err != nil || n != len(b) || !reflect.DeepEqual(o, exp) {
		t.Errorf("%#v %d %v", o, n, err)
	}
	reg := OXMFromHeader(0x00010204) // NXM_NX_REG1
	if reg.Class != OXMClassNXM1 || reg.Field != 1 || reg.Value != nil {
		t.Errorf("%#v", reg)
	}
	if h := (OXM{Class: OXMClassNXM1, Field: 1, Value: make([]byte, 4)}).Header(); h != 0x00010204 {
		t.Errorf("reg1 header %#x", h)
	}
	for _, bad := range []string{"800006", "80000606000000", "ffff0003000000", "80000103000000", "ffff0105000000000000"} {
		if _, _, err := DecodeOXM(unhex(t, bad)); !isDecodeError(err, ErrBadMatch, BadMatchBadLen) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func TestRefusal(t *testing.T) {
	msg := Append(nil, 9, PacketOut{Data: make([]byte, 100)})
	_, _, err := Decode(patch(bytes.Clone(msg), 0, 5))
	var de *DecodeError
	if !errors.As(err, &de) {
		t.Fatal(err)
	}
	e := de.Refusal(msg)
	if e.ErrType != ErrBadRequest || e.Code != BadRequestBadVersion || !bytes.Equal(e.Data, msg[:ErrorData]) {
		t.Errorf("%+v", e)
	}
}

func TestMultipartSplit(t *testing.T) {
	stats := make([]PortStats, 1500)
	for i := range stats {
		stats[i] = PortStats{PortNo: uint32(i), RxPackets: uint64(i)}
	}
	b := AppendMultipartReplies(nil, 77, MultipartReply{MType: MultipartPortStats, Body: stats})
	var got []PortStats
	for len(b) > 0 {
		h, err := ParseHeader(b)
		if err != nil || int(h.Length) > len(b) || h.Xid != 77 {
			t.Fatalf("%+v %v", h, err)
		}
		_, m, err := Decode(b[:h.Length])
		if err != nil {
			t.Fatal(err)
		}
		r := m.(MultipartReply)
		b = b[h.Length:]
		if more := len(b) > 0; (r.Flags&MultipartReplyMore != 0) != more {
			t.Errorf("flags %#x with %d bytes to follow", r.Flags, len(b))
		}
		got = append(got, r.Body.([]PortStats)...)
	}
	if !reflect.DeepEqual(got, stats) {
		t.Errorf("%d stats back of %d", len(got), len(stats))
	}
	// 1500 port stats of 112 bytes take three messages.
	n := 0
	for b := AppendMultipartReplies(nil, 1, MultipartReply{MType: MultipartPortStats, Body: stats}); len(b) > 0; n++ {
		b = b[binary.BigEndian.Uint16(b[2:]):]
	}
	if n != 3 {
		t.Errorf("%d messages", n)
	}
	one := AppendMultipartReplies(nil, 1, MultipartReply{MType: MultipartDesc, Body: Desc{}})
	if !bytes.Equal(one, Append(nil, 1, MultipartReply{MType: MultipartDesc, Body: Desc{}})) {
		t.Errorf("a desc reply split")
	}
	empty := AppendMultipartReplies(nil, 1, MultipartReply{MType: MultipartFlow, Body: []FlowStats{}})
	if _, m, err := Decode(empty); err != nil || !reflect.DeepEqual(m, MultipartReply{MType: MultipartFlow, Body: []FlowStats(nil)}) {
		t.Errorf("no flows: %#v %v", m, err)
	}
}

func isDecodeError(err error, typ ErrorType, code uint16) bool {
	var de *DecodeError
	return errors.As(err, &de) && de.Type == typ && de.Code == code
}

// patch overwrites b from offset i.
func patch(b []byte, i int, v ...byte) []byte {
	copy(b[i:], v)
	return b
}

// unhex decodes hex; it panics on a typo when t is nil.
func unhex(t testing.TB, s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		if t == nil {
			panic(err)
		}
		t.Fatalf("%s: %v", s, err)
	}
	return b
}

// TestAppendAllocs: encoding a PACKET_IN into a buffer with room
// allocates nothing, for the agent's path of frames to the controller.
func TestAppendAllocs(t *testing.T) {
	m := PacketIn{BufferID: NoBuffer, TotalLen: 42, Reason: PacketInAction, Match: testMatch, Data: testFrame}
	buf := Append(nil, 1, m)
	if allocs := testing.AllocsPerRun(100, func() { buf = Append(buf[:0], 1, m) }); allocs != 0 {
		t.Errorf("%v allocations", allocs)
	}
}

type foreignMessage struct{}

func (foreignMessage) Type() Type { return TypeHello }

// TestAppendForeign: a Message of another package is encoded so that
// peers refuse it, and so does Decode.
func TestAppendForeign(t *testing.T) {
	if _, _, err := Decode(Append(nil, 1, foreignMessage{})); !isDecodeError(err, ErrBadRequest, BadRequestBadType) {
		t.Errorf("%v", err)
	}
}

// TestFlowModEncoded: a flow mod's match and instructions, as
// FlowModEncoded gives them, go back into flow stats and a flow removed
// message as they came.
func TestFlowModEncoded(t *testing.T) {
	fm := FlowMod{Command: FlowAdd, BufferID: NoBuffer, OutPort: PortAny, OutGroup: GroupAny, Match: testMatch,
		Instructions: []Instruction{InstructionGotoTable{TableID: 3},
			InstructionApplyActions{Actions: []Action{ActionOutput{Port: 1, MaxLen: 0xffe5}}}}}
	match, instructions := FlowModEncoded(Append(nil, 1, fm))
	var tlvs []byte
	for _, o := range testMatch.Fields {
		tlvs = AppendOXM(tlvs, o)
	}
	if !bytes.Equal(match, tlvs) || !bytes.Equal(instructions, AppendInstructions(nil, fm.Instructions)) {
		t.Fatalf("FlowModEncoded: match %x, instructions %x", match, instructions)
	}
	encoded := FlowStats{Priority: 5, Match: Match{Encoded: match}, EncodedInstructions: instructions}
	decoded := FlowStats{Priority: 5, Match: testMatch, Instructions: fm.Instructions}
	if got, want := Append(nil, 1, MultipartReply{MType: MultipartFlow, Body: []FlowStats{encoded}}),
		Append(nil, 1, MultipartReply{MType: MultipartFlow, Body: []FlowStats{decoded}}); !bytes.Equal(got, want) {
		t.Errorf("flow stats of the encoded match and instructions:\n%x\nnot\n%x", got, want)
	}
	if got, want := Append(nil, 1, FlowRemoved{Match: Match{Encoded: match}}), Append(nil, 1, FlowRemoved{Match: testMatch}); !bytes.Equal(got, want) {
		t.Errorf("flow removed with the encoded match:\n%x\nnot\n%x", got, want)
	}
	if match, instructions := FlowModEncoded(Append(nil, 1, FlowMod{Command: FlowDelete})); len(match) != 0 || len(instructions) != 0 {
		t.Errorf("a flow mod without a match and instructions: %x, %x", match, instructions)
	}
}
