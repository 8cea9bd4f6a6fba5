package openflow

import (
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/xswitch/xswitch/internal/ofctltest"
)

// Port numbers and fields the tests use.
const (
	portInPort     = 0xfffffff8
	portNormal     = 0xfffffffa
	portFlood      = 0xfffffffb
	portAll        = 0xfffffffc
	portController = 0xfffffffd
	portLocal      = 0xfffffffe

	nxmReg0 = 0x00010004 // NXM_NX_REG0
	nxmReg1 = 0x00010204 // NXM_NX_REG1
)

// basic is an OpenFlow basic OXM.
func basic(field uint8, value ...byte) OXM {
	return OXM{Class: OXMClassOpenFlowBasic, Field: field, Value: value}
}

// everyAction has an action of each type, and what ovs-ofctl prints for
// it (or the error it answers, for what Open vSwitch does not implement).
var everyAction = []struct {
	a    Action
	ovs  string
	want string // the encoding, when ovs-ofctl cannot check it
}{
	{a: ActionOutput{Port: 2}, ovs: "output:2"},
	{a: ActionOutput{Port: portController, MaxLen: 128}, ovs: "CONTROLLER:128"},
	{a: ActionCopyTTLOut{}, ovs: "bad OpenFlow13 actions: OFPBAC_BAD_TYPE", want: "000b 0008 00000000"},
	{a: ActionCopyTTLIn{}, ovs: "bad OpenFlow13 actions: OFPBAC_BAD_TYPE", want: "000c 0008 00000000"},
	{a: ActionSetMPLSTTL{TTL: 9}, ovs: "set_mpls_ttl(9)"},
	{a: ActionDecMPLSTTL{}, ovs: "dec_mpls_ttl"},
	{a: ActionPushVLAN{EtherType: 0x88a8}, ovs: "push_vlan:0x88a8"},
	{a: ActionPopVLAN{}, ovs: "pop_vlan"},
	{a: ActionPushMPLS{EtherType: 0x8847}, ovs: "push_mpls:0x8847"},
	{a: ActionPopMPLS{EtherType: 0x0800}, ovs: "pop_mpls:0x0800"},
	{a: ActionSetQueue{QueueID: 3}, ovs: "set_queue:3"},
	{a: ActionGroup{GroupID: 5}, ovs: "group:5"},
	{a: ActionSetNwTTL{TTL: 9}, ovs: "mod_nw_ttl:9"},
	{a: ActionDecNwTTL{}, ovs: "dec_ttl"},
	{a: ActionSetField{Field: basic(4, 0, 0x11, 0x22, 0x33, 0x44, 0x55)}, ovs: "set_field:00:11:22:33:44:55->eth_src"},
	{a: ActionSetField{Field: basic(27, 0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1)}, ovs: "set_field:2001:db8::1->ipv6_dst"},
	{a: ActionSetField{Field: OXM{Class: OXMClassNXM1, Field: 0, Value: []byte{0, 0, 0, 7}}}, ovs: "set_field:0x7->reg0"},
	{a: ActionPushPBB{EtherType: 0x88e7}, ovs: "bad OpenFlow13 actions: OFPBAC_BAD_TYPE", want: "001a 0008 88e7 0000"},
	{a: ActionPopPBB{}, ovs: "bad OpenFlow13 actions: OFPBAC_BAD_TYPE", want: "001b 0008 00000000"},
	{a: ActionExperimenter{Experimenter: 0x00abcdef, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8}},
		ovs: "bad OpenFlow13 actions: OFPBAC_BAD_VENDOR", want: "ffff 0010 00abcdef 0102030405060708"},
	{a: NXResubmit{InPort: 3, Table: 0xff}, ovs: "resubmit:3"},
	{a: NXResubmit{InPort: 0xfff8, Table: 2}, ovs: "resubmit(,2)"},
	{a: NXRegLoad{Ofs: 8, NBits: 8, Dst: nxmReg0, Value: 0x5}, ovs: "load:0x5->NXM_NX_REG0[8..15]"},
	{a: NXRegLoad2{Field: OXM{Class: OXMClassOpenFlowBasic, Field: 2, Value: []byte{0, 0, 0, 0, 0, 0, 0, 1}, Mask: []byte{0, 0, 0, 0, 0, 0, 0, 0xff}}},
		ovs: "set_field:0x1/0xff->metadata"},
	{a: NXRegMove{NBits: 16, SrcOfs: 0, DstOfs: 16, Src: nxmReg0, Dst: nxmReg1}, ovs: "move:NXM_NX_REG0[0..15]->NXM_NX_REG1[16..31]"},
	{a: NXController{MaxLen: 64, ControllerID: 3, Reason: 0}, ovs: "controller(reason=no_match,max_len=64,id=3)"},
	{a: NXController2{MaxLen: 0xffff, Reason: 1, UserData: []byte{1, 2}, Pause: true}, ovs: "controller(userdata=01.02,pause)"},
	{a: NXController2{MaxLen: 100, ControllerID: 2, Reason: 2, MeterID: 7}, ovs: "controller(reason=invalid_ttl,max_len=100,id=2,meter_id=7)"},
	{a: NXConntrack{Flags: NXCTCommit, ZoneImm: 5, RecircTable: 3}, ovs: "ct(commit,table=3,zone=5)"},
	{a: NXConntrack{RecircTable: NXCTNoTable, Actions: []Action{NXNAT{}}}, ovs: "ct(nat)"},
	{a: NXConntrack{Flags: NXCTCommit | NXCTForce, ZoneSrc: nxmReg0, ZoneOfs: 16, ZoneNBits: 16, RecircTable: NXCTNoTable, Alg: 21, Actions: []Action{
		NXNAT{Flags: NXNATSrc | NXNATProtoRand, Min: netip.MustParseAddr("10.0.0.1"), Max: netip.MustParseAddr("10.0.0.2"), ProtoMin: 1000, ProtoMax: 2000},
		ActionSetField{Field: OXM{Class: OXMClassNXM1, Field: 107, Value: []byte{0, 0, 0, 1}}},
		NXRegLoad{Ofs: 0, NBits: 4, Dst: 0x0001d810, Value: 5},
	}}, ovs: "ct(commit,force,zone=NXM_NX_REG0[16..31],nat(src=10.0.0.1-10.0.0.2:1000-2000,random),exec(set_field:0x1->ct_mark,load:0x5->NXM_NX_CT_LABEL[0..3]),alg=ftp)"},
	{a: NXConntrack{Flags: NXCTCommit, RecircTable: NXCTNoTable, Actions: []Action{
		NXNAT{Flags: NXNATDst | NXNATPersistent, Min: netip.MustParseAddr("fe80::1"), ProtoMin: 80},
	}}, ovs: "ct(commit,nat(dst=[fe80::1]:80,persistent))"},
	{a: NXNAT{Flags: NXNATSrc}, ovs: "bad OpenFlow13 actions: OFPBAC_BAD_SET_ARGUMENT", want: "ffff 0010 00002320 0024 0000 0001 0000"},
	{a: NXCTClear{}, ovs: "ct_clear"},
}

// TestActionsOFCtl has ovs-ofctl decode the encoding of each action and
// of a list of all those it implements.
func TestActionsOFCtl(t *testing.T) {
	var encodings [][]byte
	var list []Action
	var texts []string
	for _, c := range everyAction {
		encodings = append(encodings, AppendActions(nil, []Action{c.a}))
		if !strings.HasPrefix(c.ovs, "bad ") {
			list = append(list, c.a)
			texts = append(texts, c.ovs)
		}
	}
	encodings = append(encodings, AppendActions(nil, list))
	got := ofctltest.Parse(t, "parse-actions", encodings)
	for i, c := range everyAction {
		want := c.ovs
		if !strings.HasPrefix(want, "bad ") {
			want = "actions=" + want
		}
		if got[i] != want {
			t.Errorf("%#v, encoded %x: ovs-ofctl prints %q, want %q", c.a, encodings[i], got[i], want)
		}
	}
	if want := "actions=" + strings.Join(texts, ","); got[len(everyAction)] != want {
		t.Errorf("all actions: ovs-ofctl prints\n%s\nwant\n%s", got[len(everyAction)], want)
	}
}

// TestActionsEncoding checks the encodings ovs-ofctl cannot, and that
// every action decodes to itself and encodes back to the same bytes.
func TestActionsEncoding(t *testing.T) {
	for _, c := range everyAction {
		b := AppendActions(nil, []Action{c.a})
		if c.want != "" {
			if want := unhex(t, c.want); string(b) != string(want) {
				t.Errorf("%#v encodes to %x, want %x", c.a, b, want)
			}
		}
		checkActionsRoundTrip(t, b, []Action{c.a})
	}
}

// checkActionsRoundTrip checks that b decodes to want and that want
// encodes to b.
func checkActionsRoundTrip(t *testing.T, b []byte, want []Action) {
	t.Helper()
	got, err := DecodeActions(b)
	if err != nil {
		t.Errorf("decoding %x: %v", b, err)
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%x decodes to %#v, want %#v", b, got, want)
	}
	if again := AppendActions(nil, got); string(again) != string(b) {
		t.Errorf("%x decodes to %#v, which encodes to %x", b, got, again)
	}
}

// TestDecodeNXResubmit: the old NXAST_RESUBMIT decodes as resubmit:PORT,
// which is encoded as NXAST_RESUBMIT_TABLE with table 255, as ovs-ofctl
// does.
func TestDecodeNXResubmit(t *testing.T) {
	got, err := DecodeActions(unhex(t, "ffff 0010 00002320 0001 0003 2a 000000"))
	if want := []Action{NXResubmit{InPort: 3, Table: 0xff}}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("NXAST_RESUBMIT decodes to %#v, %v; want %#v", got, err, want)
	}
	if b, want := AppendActions(nil, got), unhex(t, "ffff 0010 00002320 000e 0003 ff 000000"); string(b) != string(want) {
		t.Errorf("encodes to %x, want %x", b, want)
	}
}

// TestDecodeActionsErrors feeds malformed action lists and checks the
// error OpenFlow names for each.
func TestDecodeActionsErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		hex  string
		code uint16
	}{
		{"header cut", "0000 00", BadActionBadLen},
		{"length under 8", "0018 0004", BadActionBadLen},
		{"length not a multiple of 8", "ffff 000c 00abcdef 01020304", BadActionBadLen},
		{"length past the end", "0000 0018 00000002 ffff 000000000000", BadActionBadLen},
		{"output of 8 bytes", "0000 0008 00000002", BadActionBadLen},
		{"pop_vlan of 16 bytes", "0012 0010 00000000 00000000 00000000", BadActionBadLen},
		{"OpenFlow 1.0's set_vlan_vid", "0001 0008 0005 0000", BadActionBadType},
		{"type 28", "001c 0008 00000000", BadActionBadType},
		{"set_field with a cut OXM", "0019 0008 80000806 ", BadActionBadSetLen},
		{"set_field with room to spare", "0019 0018 80000a01 06 000000 0000000000000000 00000000", BadActionBadSetLen},
		{"set_field with a mask", "0019 0010 80000504 0800ffff 00000000", BadActionBadSetArgument},
		{"set_field with padding not zero", "0019 0010 80000806 001122334455 0001", BadActionBadSetArgument},
		{"experimenter of 8 bytes: fine, then a cut one", "ffff 0008 00abcdef ffff", BadActionBadLen},
		{"Nicira action of 8 bytes", "ffff 0008 00002320", BadActionBadLen},
		{"Nicira learn", "ffff 0010 00002320 0010 0000 00000000", BadActionBadExpType},
		{"resubmit of 24 bytes", "ffff 0018 00002320 000e fff8 02 000000 00000000 00000000", BadActionBadLen},
		{"resubmit_table with padding not zero", "ffff 0010 00002320 000e fff8 02 000100", BadActionBadArgument},
		{"load of a value wider than its bits", "ffff 0018 00002320 0007 0007 00010004 0000000000000100", BadActionBadArgument},
		{"load at offset 256", "ffff 0018 00002320 0007 4000 00010004 0000000000000001", BadActionBadArgument},
		{"reg_load2 with a cut OXM", "ffff 0010 00002320 0021 80000808 0011", BadActionBadSetLen},
		{"controller2 with padding not zero", "ffff 0010 00002320 0025 000000000001", BadActionBadArgument},
		{"controller2 with a property of length 3", "ffff 0018 00002320 0025 000000000000 0000 0003 00000000", BadActionBadLen},
		{"controller2 with a property past the end", "ffff 0018 00002320 0025 000000000000 0003 000c 01020304", BadActionBadLen},
		{"controller2 max_len of 1 byte", "ffff 0018 00002320 0025 000000000000 0000 0005 00000000", BadActionBadLen},
		{"controller2 with property 9", "ffff 0018 00002320 0025 000000000000 0009 0004 00000000", BadActionBadArgument},
		{"controller2 with meter 0", "ffff 0018 00002320 0025 000000000000 0005 0008 00000000", BadActionBadArgument},
		{"ct of 16 bytes", "ffff 0010 00002320 0023 0000 00000000", BadActionBadLen},
		{"ct with a nested action cut", "ffff 0020 00002320 0023 0001 00000000 0000 ff 000000 0000 0000 0010 00000001", BadActionBadLen},
		{"nat with IPv4 and IPv6 parts", "ffff 0010 00002320 0024 0000 0001 0005", BadActionBadArgument},
		{"nat with a part it does not define", "ffff 0010 00002320 0024 0000 0001 0040", BadActionBadArgument},
		{"nat with its range cut", "ffff 0010 00002320 0024 0000 0001 0001", BadActionBadLen},
		{"nat with port 0", "ffff 0018 00002320 0024 0000 0001 0010 0000 000000000000", BadActionBadArgument},
		{"ct_clear of 24 bytes", "ffff 0018 00002320 002b 000000000000 0000000000000000", BadActionBadLen},
	} {
		got, err := DecodeActions(unhex(t, c.hex))
		var de *DecodeError
		if !errors.As(err, &de) || de.Type != ErrBadAction || de.Code != c.code {
			t.Errorf("%s: %s decodes to %#v, %v; want error type %d code %d", c.name, c.hex, got, err, ErrBadAction, c.code)
		}
	}
}
