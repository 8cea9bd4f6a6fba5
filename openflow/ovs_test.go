package openflow

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/xswitch/xswitch/internal/ofctltest"
)

// TestOFPPrint: Open vSwitch decodes what Append encodes as intended.
func TestOFPPrint(t *testing.T) {
	for _, c := range ofpPrintCases {
		b := Append(nil, 0x11, c.m)
		out, err := ofctltest.Run(t, "ofp-print", hex.EncodeToString(b))
		if err != nil {
			t.Errorf("%T: %v\n%s", c.m, err, out)
			continue
		}
		if got := strings.TrimSpace(string(out)); got != strings.TrimSpace(c.want) {
			t.Errorf("%T: ovs-ofctl ofp-print %x:\n%s\nnot\n%s", c.m, b, got, c.want)
		}
	}
}

var ofpPrintCases = []struct {
	m    Message
	want string
}{
	{Hello{Versions: []uint8{1, 4}}, `OFPT_HELLO (OF1.3) (xid=0x11):
 version bitmap: 0x01, 0x04`},
	{Error{ErrType: ErrBadMatch, Code: BadMatchBadPrereq, Data: Append(nil, 1, BarrierRequest{})}, `OFPT_ERROR (OF1.3) (xid=0x11): OFPBMC_BAD_PREREQ
OFPT_BARRIER_REQUEST (OF1.3) (xid=0x1):`},
	{EchoRequest{Data: []byte{1, 2, 3}}, `OFPT_ECHO_REQUEST (OF1.3) (xid=0x11): 3 bytes of payload
00000000  01 02 03                                        |...             |`},
	{EchoReply{}, `OFPT_ECHO_REPLY (OF1.3) (xid=0x11): 0 bytes of payload`},
	{FeaturesRequest{}, `OFPT_FEATURES_REQUEST (OF1.3) (xid=0x11):`},
	{FeaturesReply{DatapathID: 0x1122334455667788, NBuffers: 0, NTables: 254, Capabilities: CapFlowStats | CapTableStats | CapPortStats | CapQueueStats}, `OFPT_FEATURES_REPLY (OF1.3) (xid=0x11): dpid:1122334455667788
n_tables:254, n_buffers:0
capabilities: FLOW_STATS TABLE_STATS PORT_STATS QUEUE_STATS`},
	{GetConfigRequest{}, `OFPT_GET_CONFIG_REQUEST (OF1.3) (xid=0x11):`},
	{GetConfigReply{Flags: ConfigFragNormal, MissSendLen: 128}, `OFPT_GET_CONFIG_REPLY (OF1.3) (xid=0x11): frags=normal miss_send_len=128`},
	{SetConfig{Flags: ConfigFragDrop, MissSendLen: ControllerMaxLenNoBuffer}, `OFPT_SET_CONFIG (OF1.3) (xid=0x11): frags=drop miss_send_len=65535`},
	{PacketIn{BufferID: NoBuffer, TotalLen: 42, Reason: PacketInAction, TableID: 1, Cookie: 0xabc, Match: testMatch, Data: testFrame}, `OFPT_PACKET_IN (OF1.3) (xid=0x11): table_id=1 cookie=0xabc total_len=42 ip,in_port=3,nw_src=10.0.0.0/24 (via action) data_len=42 (unbuffered)
arp,vlan_tci=0x0000,dl_src=02:00:00:00:00:07,dl_dst=ff:ff:ff:ff:ff:ff,arp_spa=10.0.0.3,arp_tpa=10.0.0.1,arp_op=1,arp_sha=02:00:00:00:00:07,arp_tha=00:00:00:00:00:00`},
	{FlowRemoved{Cookie: 1, Priority: 100, Reason: RemovedIdleTimeout, TableID: 2, DurationSec: 5, DurationNsec: 6,
		IdleTimeout: 10, HardTimeout: 20, PacketCount: 3, ByteCount: 300, Match: testMatch}, `OFPT_FLOW_REMOVED (OF1.3) (xid=0x11): priority=100,ip,in_port=3,nw_src=10.0.0.0/24 reason=idle table_id=2 cookie:0x1 duration5.000000006s idle10 hard20 pkts3 bytes300`},
	{PortStatus{Reason: PortModify, Desc: testPort}, `OFPT_PORT_STATUS (OF1.3) (xid=0x11): MOD: 7(veth7): addr:02:00:00:00:00:07
     config:     NO_PACKET_IN
     state:      LIVE
     current:    10GB-FD COPPER
     supported:  1GB-FD 10GB-FD COPPER
     speed: 10000 Mbps now, 10000 Mbps max`},
	{PacketOut{BufferID: NoBuffer, InPort: PortController, Data: testFrame}, `OFPT_PACKET_OUT (OF1.3) (xid=0x11): in_port=CONTROLLER actions=drop data_len=42
arp,vlan_tci=0x0000,dl_src=02:00:00:00:00:07,dl_dst=ff:ff:ff:ff:ff:ff,arp_spa=10.0.0.3,arp_tpa=10.0.0.1,arp_op=1,arp_sha=02:00:00:00:00:07,arp_tha=00:00:00:00:00:00`},
	{FlowMod{Cookie: 0x1234, Command: FlowAdd, IdleTimeout: 60, Priority: 1000, BufferID: NoBuffer, OutPort: PortAny, OutGroup: GroupAny,
		Flags: FlowFlagSendFlowRem | FlowFlagCheckOverlap, Match: testMatch}, `OFPT_FLOW_MOD (OF1.3) (xid=0x11): ADD priority=1000,ip,in_port=3,nw_src=10.0.0.0/24 cookie:0x1234 idle:60 send_flow_rem check_overlap actions=drop`},
	{FlowMod{Command: FlowDeleteStrict, TableID: TableAll, Priority: 5, BufferID: NoBuffer, OutPort: 3, OutGroup: GroupAny}, `OFPT_FLOW_MOD (OF1.3) (xid=0x11): DEL_STRICT table:255 priority=5 out_port:3 actions=drop`},
	{BarrierRequest{}, `OFPT_BARRIER_REQUEST (OF1.3) (xid=0x11):`},
	{BarrierReply{}, `OFPT_BARRIER_REPLY (OF1.3) (xid=0x11):`},
	{RoleRequest{Role: RoleMaster, GenerationID: 42}, `OFPT_ROLE_REQUEST (OF1.3) (xid=0x11): role=primary generation_id=42`},
	{RoleReply{Role: RoleSlave, GenerationID: 43}, `OFPT_ROLE_REPLY (OF1.3) (xid=0x11): role=secondary generation_id=43`},
	{GetAsyncRequest{}, `OFPT_GET_ASYNC_REQUEST (OF1.3) (xid=0x11):`},
	{GetAsyncReply{PacketInMask: [2]uint32{7, 0}, PortStatusMask: [2]uint32{7, 7}, FlowRemovedMask: [2]uint32{15, 0}}, `OFPT_GET_ASYNC_REPLY (OF1.3) (xid=0x11):
 primary:
       PACKET_IN: no_match action invalid_ttl
     PORT_STATUS: add delete modify
    FLOW_REMOVED: idle hard delete group_delete
     ROLE_STATUS: (off)
    TABLE_STATUS: (off)
  REQUESTFORWARD: (off)

 secondary:
       PACKET_IN: (off)
     PORT_STATUS: add delete modify
    FLOW_REMOVED: (off)
     ROLE_STATUS: (off)
    TABLE_STATUS: (off)
  REQUESTFORWARD: (off)`},
	{SetAsync{PacketInMask: [2]uint32{3, 1}, PortStatusMask: [2]uint32{7, 7}, FlowRemovedMask: [2]uint32{0, 0}}, `OFPT_SET_ASYNC (OF1.3) (xid=0x11):
 primary:
       PACKET_IN: no_match action
     PORT_STATUS: add delete modify
    FLOW_REMOVED: (off)
     ROLE_STATUS: (off)
    TABLE_STATUS: (off)
  REQUESTFORWARD: (off)

 secondary:
       PACKET_IN: no_match
     PORT_STATUS: add delete modify
    FLOW_REMOVED: (off)
     ROLE_STATUS: (off)
    TABLE_STATUS: (off)
  REQUESTFORWARD: (off)`},
	{MultipartRequest{MType: MultipartDesc}, `OFPST_DESC request (OF1.3) (xid=0x11):`},
	{MultipartRequest{MType: MultipartFlow, Body: testFlowStatsRequest}, `OFPST_FLOW request (OF1.3) (xid=0x11): ip,in_port=3,nw_src=10.0.0.0/24`},
	{MultipartRequest{MType: MultipartAggregate, Body: FlowStatsRequest{TableID: 3, OutPort: PortAny, OutGroup: GroupAny}}, `OFPST_AGGREGATE request (OF1.3) (xid=0x11): table=3`},
	{MultipartRequest{MType: MultipartTable}, `OFPST_TABLE request (OF1.3) (xid=0x11):`},
	{MultipartRequest{MType: MultipartPortStats, Body: PortStatsRequest{PortNo: PortAny}}, `OFPST_PORT request (OF1.3) (xid=0x11): port_no=ANY`},
	{MultipartRequest{MType: MultipartPortDesc}, `OFPST_PORT_DESC request (OF1.3) (xid=0x11): port=ANY`},
	{MultipartRequest{MType: MultipartGroupFeatures}, `OFPST_GROUP_FEATURES request (OF1.3) (xid=0x11):`},
	{MultipartRequest{MType: MultipartMeterFeatures}, `OFPST_METER_FEATURES request (OF1.3) (xid=0x11):`},
	{MultipartRequest{MType: MultipartTableFeatures}, `OFPST_TABLE_FEATURES request (OF1.3) (xid=0x11):`},
	{MultipartReply{MType: MultipartDesc, Body: Desc{MfrDesc: "xswitch", HWDesc: "AF_XDP", SWDesc: "0.1", SerialNum: "none", DPDesc: "br0"}}, `OFPST_DESC reply (OF1.3) (xid=0x11):
Manufacturer: xswitch
Hardware: AF_XDP
Software: 0.1
Serial Num: none
DP Description: br0`},
	{MultipartReply{MType: MultipartFlow, Body: []FlowStats{{TableID: 0, DurationSec: 1, DurationNsec: 500000000, Priority: 100, IdleTimeout: 10,
		HardTimeout: 20, Flags: FlowFlagSendFlowRem, Cookie: 5, PacketCount: 6, ByteCount: 700, Match: testMatch}, {TableID: 1}}}, `OFPST_FLOW reply (OF1.3) (xid=0x11):
 cookie=0x5, duration=1.500s, table=0, n_packets=6, n_bytes=700, idle_timeout=10, hard_timeout=20, send_flow_rem priority=100,ip,in_port=3,nw_src=10.0.0.0/24 actions=drop
 cookie=0x0, duration=0s, table=1, n_packets=0, n_bytes=0, priority=0 actions=drop`},
	{MultipartReply{MType: MultipartAggregate, Body: AggregateStats{PacketCount: 10, ByteCount: 1000, FlowCount: 3}}, `OFPST_AGGREGATE reply (OF1.3) (xid=0x11): packet_count=10 byte_count=1000 flow_count=3`},
	{MultipartReply{MType: MultipartTable, Body: []TableStats{{TableID: 0, ActiveCount: 3, LookupCount: 100, MatchedCount: 90}}}, `OFPST_TABLE reply (OF1.3) (xid=0x11):
  table 0:
    active=3, lookup=100, matched=90`},
	{MultipartReply{MType: MultipartPortStats, Body: []PortStats{{PortNo: 1, RxPackets: 1, TxPackets: 2, RxBytes: 3, TxBytes: 4,
		RxDropped: 5, TxDropped: 6, RxErrors: 7, TxErrors: 8, RxFrameErr: 9, RxOverErr: 10, RxCRCErr: 11, Collisions: 12, DurationSec: 13, DurationNsec: 14}}}, `OFPST_PORT reply (OF1.3) (xid=0x11): 1 ports
  port  1: rx pkts=1, bytes=3, drop=5, errs=7, frame=9, over=10, crc=11
           tx pkts=2, bytes=4, drop=6, errs=8, coll=12
           duration=13.000000014s`},
	{MultipartReply{MType: MultipartPortDesc, Body: []Port{testPort, {PortNo: PortLocal, Name: "br0", Config: PortConfigPortDown, State: PortStateLinkDown}}}, `OFPST_PORT_DESC reply (OF1.3) (xid=0x11):
 7(veth7): addr:02:00:00:00:00:07
     config:     NO_PACKET_IN
     state:      LIVE
     current:    10GB-FD COPPER
     supported:  1GB-FD 10GB-FD COPPER
     speed: 10000 Mbps now, 10000 Mbps max
 LOCAL(br0): addr:00:00:00:00:00:00
     config:     PORT_DOWN
     state:      LINK_DOWN
     speed: 0 Mbps now, 0 Mbps max`},
	{MultipartReply{MType: MultipartTableFeatures, Body: []TableFeatures{fullTableFeatures}}, `OFPST_TABLE_FEATURES reply (OF1.3) (xid=0x11):
  table 0 ("classifier"):
    metadata: match=0xffffffffffffffff write=0xffffffffffffffff
    max_entries=1000000
    instructions (table miss and others):
      next tables: 1-2
      instructions: apply_actions goto_table
      Write-Actions features:
        actions: output
      Apply-Actions features:
        actions: output set_field
        supported on Set-Field: eth_dst
    matching:
      arbitrary mask: ip_src
      exact match or wildcard: in_port_oxm`},
	{MultipartReply{MType: MultipartGroupFeatures, Body: GroupFeatures{Types: 1, Capabilities: 2, MaxGroups: [4]uint32{1, 2, 3, 4}, Actions: [4]uint32{1, 0, 0, 0}}}, `OFPST_GROUP_FEATURES reply (OF1.3) (xid=0x11):
 Group table:
    Types:  0x1
    Capabilities:  0x2
    all group:
       max_groups=0x1
       actions: output`},
	{GroupMod{Command: GroupCommandAdd, GroupType: GroupTypeSelect, GroupID: 1, Buckets: testBuckets}, `OFPT_GROUP_MOD (OF1.3) (xid=0x11):
 ADD group_id=1,type=select,bucket=weight:2,actions=output:1,bucket=actions=set_field:02:00:00:00:00:09->eth_dst,group:7`},
	{GroupMod{Command: GroupCommandModify, GroupType: GroupTypeFastFailover, GroupID: 5, Buckets: testFFBuckets}, `OFPT_GROUP_MOD (OF1.3) (xid=0x11):
 MOD group_id=5,type=ff,bucket=watch_port:3,actions=output:3,bucket=watch_group:7,actions=group:7`},
	{GroupMod{Command: GroupCommandDelete, GroupType: GroupTypeAll, GroupID: GroupAll}, `OFPT_GROUP_MOD (OF1.3) (xid=0x11):
 DEL group_id=4294967292,type=all`},
	{MultipartRequest{MType: MultipartGroup, Body: GroupStatsRequest{GroupID: 9}}, `OFPST_GROUP request (OF1.3) (xid=0x11): group_id=9`},
	{MultipartRequest{MType: MultipartGroupDesc}, `OFPST_GROUP_DESC request (OF1.3) (xid=0x11): group_id=ALL`},
	{MultipartReply{MType: MultipartGroup, Body: []GroupStats{
		{GroupID: 1, RefCount: 2, PacketCount: 30, ByteCount: 4000, DurationSec: 5, DurationNsec: 6, Buckets: []BucketCounter{{10, 1000}, {20, 3000}}},
		{GroupID: 2},
	}}, `OFPST_GROUP reply (OF1.3) (xid=0x11):
 group_id=1,duration=5.000000006s,ref_count=2,packet_count=30,byte_count=4000,bucket0:packet_count=10,byte_count=1000,bucket1:packet_count=20,byte_count=3000
 group_id=2,duration=0s,ref_count=0,packet_count=0,byte_count=0`},
	{MultipartReply{MType: MultipartGroupDesc, Body: []GroupDesc{
		{GroupType: GroupTypeSelect, GroupID: 1, Buckets: testBuckets},
		{GroupType: GroupTypeIndirect, GroupID: 4, Buckets: []Bucket{{WatchPort: PortAny, WatchGroup: GroupAny}}},
	}}, `OFPST_GROUP_DESC reply (OF1.3) (xid=0x11):
 group_id=1,type=select,bucket=weight:2,actions=output:1,bucket=actions=set_field:02:00:00:00:00:09->eth_dst,group:7
 group_id=4,type=indirect,bucket=actions=drop`},
	{MeterMod{Command: MeterCommandAdd, Flags: MeterFlagKbps | MeterFlagBurst | MeterFlagStats, MeterID: 1, Bands: testMeterBands}, `OFPT_METER_MOD (OF1.3) (xid=0x11): ADD meter=1 kbps burst stats bands=
type=drop rate=1000 burst_size=100
type=dscp_remark rate=500 burst_size=50 prec_level=2`},
	{MeterMod{Command: MeterCommandModify, Flags: MeterFlagPktps, MeterID: 7, Bands: testMeterBands[:1]}, `OFPT_METER_MOD (OF1.3) (xid=0x11): MOD meter=7 pktps bands=
type=drop rate=1000`},
	{MeterMod{Command: MeterCommandDelete, MeterID: MeterAll}, `OFPT_METER_MOD (OF1.3) (xid=0x11): DEL meter=all bands=`},
	{MultipartRequest{MType: MultipartMeter, Body: MeterRequest{MeterID: MeterAll}}, `OFPST_METER request (OF1.3) (xid=0x11): meter=all`},
	{MultipartRequest{MType: MultipartMeterConfig, Body: MeterRequest{MeterID: 7}}, `OFPST_METER_CONFIG request (OF1.3) (xid=0x11): meter=7`},
	{MultipartRequest{MType: MultipartMeterFeatures}, `OFPST_METER_FEATURES request (OF1.3) (xid=0x11):`},
	{MultipartReply{MType: MultipartMeterFeatures, Body: MeterFeatures{MaxMeter: 1024, BandTypes: 6, Capabilities: 0xf, MaxBands: 8}}, `OFPST_METER_FEATURES reply (OF1.3) (xid=0x11):
max_meter:1024 max_bands:8 max_color:0
band_types: drop dscp_remark
capabilities: kbps pktps burst stats`},
	{MultipartReply{MType: MultipartMeter, Body: []MeterStats{
		{MeterID: 1, FlowCount: 2, PacketInCount: 30, ByteInCount: 4000, DurationSec: 5, DurationNsec: 6, Bands: []MeterBandStats{{10, 1000}, {20, 3000}}},
		{MeterID: 2},
	}}, `OFPST_METER reply (OF1.3) (xid=0x11):
meter:1 flow_count:2 packet_in_count:30 byte_in_count:4000 duration:5.000000006s bands:
0: packet_count:10 byte_count:1000
1: packet_count:20 byte_count:3000

meter:2 flow_count:0 packet_in_count:0 byte_in_count:0 duration:0s bands:`},
	{MultipartReply{MType: MultipartMeterConfig, Body: []MeterConfig{
		{Flags: MeterFlagKbps | MeterFlagBurst, MeterID: 1, Bands: testMeterBands},
		{Flags: MeterFlagPktps, MeterID: 2},
	}}, `OFPST_METER_CONFIG reply (OF1.3) (xid=0x11):
meter=1 kbps burst bands=
type=drop rate=1000 burst_size=100
type=dscp_remark rate=500 burst_size=50 prec_level=2

meter=2 pktps bands=`},
}

// fullTableFeatures has every property Open vSwitch requires in 1.3.
var fullTableFeatures = TableFeatures{
	TableID: 0, Name: "classifier", MetadataMatch: ^uint64(0), MetadataWrite: ^uint64(0), MaxEntries: 1000000,
	Properties: []TableFeatureProp{
		{Type: TableFeatureInstructions, InstructionIDs: []uint16{uint16(InstructionTypeGotoTable), uint16(InstructionTypeApplyActions)}},
		{Type: TableFeatureNextTables, NextTables: []uint8{1, 2}},
		{Type: TableFeatureWriteActions, ActionIDs: []uint16{uint16(ActionTypeOutput)}},
		{Type: TableFeatureApplyActions, ActionIDs: []uint16{uint16(ActionTypeOutput), uint16(ActionTypeSetField)}},
		{Type: TableFeatureMatch, OXMIDs: []uint32{testMatch.Fields[0].Header(), testMatch.Fields[2].Header()}},
		{Type: TableFeatureWildcards, OXMIDs: []uint32{testMatch.Fields[0].Header()}},
		{Type: TableFeatureWriteSetfield},
		{Type: TableFeatureApplySetfield, OXMIDs: []uint32{OXM{Class: OXMClassOpenFlowBasic, Field: OXMEthDst, Value: make([]byte, 6)}.Header()}},
	},
}

// testFrame is an Ethernet frame for PACKET_IN and PACKET_OUT.
var testFrame = unhex(nil, "ffffffffffff020000000007080600010800060400010200000000070a0000030000000000000a000001")

// ofSwitch is a minimal switch for ovs-ofctl to talk to: it answers
// HELLO, FEATURES_REQUEST, GET_CONFIG_REQUEST, BARRIER_REQUEST and the
// multipart requests of replies, and takes FLOW_MOD and PACKET_OUT.
func ofSwitch(t *testing.T, replies map[MultipartType]any) *ofctltest.Switch {
	t.Helper()
	return ofctltest.NewSwitch(t, func(b []byte) ([]byte, error) {
		xid, m, err := Decode(b)
		if err != nil {
			return nil, fmt.Errorf("decoding %x from ovs-ofctl: %v", b, err)
		}
		var reply Message
		switch m := m.(type) {
		case Hello:
			reply = Hello{Versions: []uint8{Version}}
		case FeaturesRequest:
			reply = FeaturesReply{DatapathID: 0xfeed, NTables: 2, Capabilities: CapFlowStats | CapPortStats}
		case GetConfigRequest:
			reply = GetConfigReply{MissSendLen: 128}
		case BarrierRequest:
			reply = BarrierReply{}
		case EchoRequest:
			reply = EchoReply(m)
		case FlowMod, PacketOut, GroupMod, MeterMod:
			return nil, nil // no reply unless refused
		case MultipartRequest:
			body, ok := replies[m.MType]
			if !ok {
				return nil, fmt.Errorf("ovs-ofctl asked for multipart type %d", m.MType)
			}
			reply = MultipartReply{MType: m.MType, Body: body}
		default:
			return nil, fmt.Errorf("ovs-ofctl sent %#v", m)
		}
		return Append(nil, xid, reply), nil
	})
}

// decodeAll decodes the messages ovs-ofctl sent to an ofSwitch, after
// framing them again with the codec's Reader, which the switch does not
// use, so that ovs-ofctl's stream still tests it.
func decodeAll(t *testing.T, raw [][]byte) []Message {
	t.Helper()
	rd := NewReader(bytes.NewReader(bytes.Join(raw, nil)), 0xffff)
	var ms []Message
	for _, want := range raw {
		if b, err := rd.Next(); err != nil || !bytes.Equal(b, want) {
			t.Errorf("the Reader frames ovs-ofctl's %x as %x, %v", want, b, err)
			return ms
		}
		// The switch reported the messages that do not decode.
		if _, m, err := Decode(want); err == nil {
			ms = append(ms, m)
		}
	}
	return ms
}

// TestOVSOfctl runs ovs-ofctl against ofSwitch: its requests decode to
// what each command asks for, and it prints the replies Append encoded.
func TestOVSOfctl(t *testing.T) {
	flowStats := []FlowStats{{TableID: 0, DurationSec: 1, Priority: 100, IdleTimeout: 10, Flags: FlowFlagSendFlowRem,
		Cookie: 5, PacketCount: 6, ByteCount: 700, Match: testMatch}}
	replies := map[MultipartType]any{
		MultipartPortDesc:      []Port{testPort},
		MultipartFlow:          flowStats,
		MultipartAggregate:     AggregateStats{PacketCount: 10, ByteCount: 1000, FlowCount: 3},
		MultipartTable:         []TableStats{{TableID: 0, ActiveCount: 3, LookupCount: 100, MatchedCount: 90}, {TableID: 1, ActiveCount: 0}},
		MultipartPortStats:     []PortStats{{PortNo: 7, RxPackets: 11, TxPackets: 12, RxBytes: 1300, TxBytes: 1400, DurationSec: 3}},
		MultipartDesc:          Desc{MfrDesc: "xswitch", HWDesc: "AF_XDP", SWDesc: "0.1", SerialNum: "none", DPDesc: "br0"},
		MultipartTableFeatures: []TableFeatures{fullTableFeatures},
		MultipartGroupDesc:     []GroupDesc{{GroupType: GroupTypeSelect, GroupID: 1, Buckets: testBuckets}},
		MultipartGroup: []GroupStats{{GroupID: 1, RefCount: 2, PacketCount: 30, ByteCount: 4000, DurationSec: 5,
			Buckets: []BucketCounter{{10, 1000}, {20, 3000}}}},
		MultipartMeterConfig: []MeterConfig{{Flags: MeterFlagKbps | MeterFlagBurst | MeterFlagStats, MeterID: 1, Bands: testMeterBands}},
		MultipartMeter: []MeterStats{{MeterID: 1, FlowCount: 2, PacketInCount: 30, ByteInCount: 4000, DurationSec: 5,
			Bands: []MeterBandStats{{10, 1000}, {20, 3000}}}},
		MultipartMeterFeatures: MeterFeatures{MaxMeter: 1024, BandTypes: 6, Capabilities: 0xf, MaxBands: 8},
	}
	// ovs-ofctl asks for these to parse names in flows.
	tableNames := MultipartRequest{MType: MultipartTableFeatures, Body: []TableFeatures(nil)}
	portNames := MultipartRequest{MType: MultipartPortDesc}
	allFlows := FlowStatsRequest{TableID: TableAll, OutPort: PortAny, OutGroup: GroupAny}
	hello := Hello{Versions: []uint8{Version}}
	for _, c := range []struct {
		args []string
		want []Message // what ovs-ofctl sends
		says []string  // what it prints of the replies
	}{
		// ovs-ofctl opens a connection for each transaction, and asks for
		// the ports and tables to know their names.
		{[]string{"show"}, []Message{hello, FeaturesRequest{}, MultipartRequest{MType: MultipartPortDesc}, hello, GetConfigRequest{}},
			[]string{"dpid:000000000000feed", "n_tables:2", "7(veth7): addr:02:00:00:00:00:07", "miss_send_len=128"}},
		{[]string{"dump-flows", "in_port=3,ip,nw_src=10.0.0.0/24"},
			[]Message{hello, portNames, hello, tableNames,
				hello, MultipartRequest{MType: MultipartFlow, Body: FlowStatsRequest{TableID: TableAll, OutPort: PortAny, OutGroup: GroupAny, Match: testMatch}}},
			[]string{"cookie=0x5", "n_packets=6", "n_bytes=700", "priority=100,ip,in_port=3,nw_src=10.0.0.0/24"}},
		{[]string{"dump-aggregate"}, []Message{hello, MultipartRequest{MType: MultipartAggregate, Body: allFlows}},
			[]string{"packet_count=10 byte_count=1000 flow_count=3"}},
		{[]string{"dump-ports"}, []Message{hello, MultipartRequest{MType: MultipartPortStats, Body: PortStatsRequest{PortNo: PortAny}}},
			[]string{"port  7: rx pkts=11, bytes=1300"}},
		{[]string{"dump-ports-desc"}, []Message{hello, MultipartRequest{MType: MultipartPortDesc}},
			[]string{"7(veth7): addr:02:00:00:00:00:07"}},
		{[]string{"dump-tables"}, []Message{hello, MultipartRequest{MType: MultipartTable}},
			[]string{"active=3"}},
		{[]string{"add-flow", "cookie=0x1234,priority=1000,idle_timeout=60,ip,in_port=3,nw_src=10.0.0.0/24,actions=drop"},
			[]Message{hello, tableNames, hello, portNames, hello, FlowMod{Cookie: 0x1234, Command: FlowAdd, IdleTimeout: 60, Priority: 1000, BufferID: NoBuffer,
				OutPort: PortAny, OutGroup: GroupAny, Match: testMatch}, BarrierRequest{}}, nil},
		{[]string{"del-flows", "--strict", "priority=5,in_port=3"},
			[]Message{hello, tableNames, hello, portNames, hello, FlowMod{TableID: TableAll, Command: FlowDeleteStrict, Priority: 5, BufferID: NoBuffer,
				OutPort: PortAny, OutGroup: GroupAny, Match: Match{Fields: testMatch.Fields[:1]}}, BarrierRequest{}}, nil},
		{[]string{"packet-out", "in_port=controller packet=" + hex.EncodeToString(testFrame) + " actions=drop"},
			[]Message{hello, tableNames, hello, portNames, hello, PacketOut{BufferID: NoBuffer, InPort: PortController, Data: testFrame}, BarrierRequest{}}, nil},
		{[]string{"dump-desc"}, []Message{hello, MultipartRequest{MType: MultipartDesc}},
			[]string{"Manufacturer: xswitch", "DP Description: br0"}},
		{[]string{"add-group", "group_id=1,type=select,bucket=weight:2,output:1,bucket=set_field:02:00:00:00:00:09->eth_dst,group:7"},
			[]Message{hello, tableNames, hello, portNames, hello, GroupMod{Command: GroupCommandAdd, GroupType: GroupTypeSelect, GroupID: 1, Buckets: testBuckets}, BarrierRequest{}}, nil},
		{[]string{"mod-group", "group_id=5,type=ff,bucket=watch_port:3,output:3,bucket=watch_group:7,group:7"},
			[]Message{hello, tableNames, hello, portNames, hello, GroupMod{Command: GroupCommandModify, GroupType: GroupTypeFastFailover, GroupID: 5, Buckets: testFFBuckets}, BarrierRequest{}}, nil},
		{[]string{"del-groups"}, []Message{hello, tableNames, hello, portNames, hello, GroupMod{Command: GroupCommandDelete, GroupID: GroupAll}, BarrierRequest{}}, nil},
		{[]string{"dump-groups"}, []Message{hello, MultipartRequest{MType: MultipartGroupDesc}},
			[]string{"group_id=1,type=select,bucket=weight:2,actions=output:1,bucket=actions=set_field:02:00:00:00:00:09->eth_dst,group:7"}},
		{[]string{"dump-group-stats"}, []Message{hello, tableNames, hello, portNames, hello, MultipartRequest{MType: MultipartGroup, Body: GroupStatsRequest{GroupID: GroupAll}}},
			[]string{"group_id=1,duration=5s,ref_count=2,packet_count=30,byte_count=4000,bucket0:packet_count=10,byte_count=1000,bucket1:packet_count=20,byte_count=3000"}},
		{[]string{"add-meter", "meter=1,kbps,burst,stats,bands=type=drop,rate=1000,burst_size=100,type=dscp_remark,rate=500,burst_size=50,prec_level=2"},
			[]Message{hello, MeterMod{Command: MeterCommandAdd, Flags: MeterFlagKbps | MeterFlagBurst | MeterFlagStats, MeterID: 1, Bands: testMeterBands}, BarrierRequest{}}, nil},
		{[]string{"mod-meter", "meter=7 pktps bands=type=drop rate=1000"},
			[]Message{hello, MeterMod{Command: MeterCommandModify, Flags: MeterFlagPktps, MeterID: 7, Bands: []MeterBand{{Type: MeterBandDrop, Rate: 1000}}}, BarrierRequest{}}, nil},
		{[]string{"del-meters"}, []Message{hello, MeterMod{Command: MeterCommandDelete, MeterID: MeterAll}, BarrierRequest{}}, nil},
		{[]string{"del-meter", "meter=3"}, []Message{hello, MeterMod{Command: MeterCommandDelete, MeterID: 3}, BarrierRequest{}}, nil},
		{[]string{"dump-meters"}, []Message{hello, MultipartRequest{MType: MultipartMeterConfig, Body: MeterRequest{MeterID: MeterAll}}},
			[]string{"meter=1 kbps burst stats bands=\ntype=drop rate=1000 burst_size=100\ntype=dscp_remark rate=500 burst_size=50 prec_level=2"}},
		{[]string{"meter-stats", "meter=1"}, []Message{hello, MultipartRequest{MType: MultipartMeter, Body: MeterRequest{MeterID: 1}}},
			[]string{"meter:1 flow_count:2 packet_in_count:30 byte_in_count:4000 duration:5s bands:\n0: packet_count:10 byte_count:1000\n1: packet_count:20 byte_count:3000"}},
		{[]string{"meter-features"}, []Message{hello, MultipartRequest{MType: MultipartMeterFeatures}},
			[]string{"max_meter:1024 max_bands:8 max_color:0\nband_types: drop dscp_remark\ncapabilities: kbps pktps burst stats"}},
	} {
		sw := ofSwitch(t, replies)
		args := append([]string{"-O", "OpenFlow13", c.args[0], sw.Target()}, c.args[1:]...)
		out, err := ofctltest.Run(t, args...)
		if err != nil {
			t.Errorf("ovs-ofctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if got := decodeAll(t, sw.Received()); !reflect.DeepEqual(got, c.want) {
			t.Errorf("ovs-ofctl %s sent\n%#v\nnot\n%#v", c.args[0], got, c.want)
		}
		for _, s := range c.says {
			if !strings.Contains(string(out), s) {
				t.Errorf("ovs-ofctl %s does not say %q:\n%s", c.args[0], s, out)
			}
		}
	}
}
