package openflow

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/xswitch/xswitch/internal/ofctltest"
)

// everyInstruction has an instruction of each type and what ovs-ofctl
// prints for it.
var everyInstruction = []struct {
	in   Instruction
	ovs  string
	want string // the encoding, when ovs-ofctl cannot check it
}{
	{in: InstructionMeter{MeterID: 1}, ovs: "meter:1"},
	{in: InstructionApplyActions{Actions: []Action{ActionSetField{Field: basic(4, 0, 0x11, 0x22, 0x33, 0x44, 0x55)}, ActionOutput{Port: 2}}},
		ovs: "set_field:00:11:22:33:44:55->eth_src,output:2"},
	{in: InstructionClearActions{}, ovs: "clear_actions"},
	{in: InstructionWriteActions{Actions: []Action{ActionOutput{Port: 1}}}, ovs: "write_actions(output:1)"},
	{in: InstructionWriteMetadata{Metadata: 1, Mask: 0xff}, ovs: "write_metadata:0x1/0xff"},
	{in: InstructionGotoTable{TableID: 2}, ovs: "goto_table:2"},
	{in: InstructionExperimenter{Experimenter: 0x00abcdef, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8}},
		ovs: "bad OpenFlow13 instructions: OFPBIC_BAD_EXPERIMENTER", want: "ffff 0010 00abcdef 0102030405060708"},
}

// TestInstructionsOFCtl has ovs-ofctl decode the encoding of each
// instruction and of a list of all those it implements.
func TestInstructionsOFCtl(t *testing.T) {
	var encodings [][]byte
	var list []Instruction
	var texts []string
	for _, c := range everyInstruction {
		encodings = append(encodings, AppendInstructions(nil, []Instruction{c.in}))
		if !strings.HasPrefix(c.ovs, "bad ") {
			list = append(list, c.in)
			texts = append(texts, c.ovs)
		}
	}
	encodings = append(encodings, AppendInstructions(nil, list))
	got := ofctltest.Parse(t, "parse-instructions", encodings)
	for i, c := range everyInstruction {
		want := c.ovs
		if !strings.HasPrefix(want, "bad ") {
			want = "actions=" + want
		}
		if got[i] != want {
			t.Errorf("%#v, encoded %x: ovs-ofctl prints %q, want %q", c.in, encodings[i], got[i], want)
		}
	}
	if want := "actions=" + strings.Join(texts, ","); got[len(everyInstruction)] != want {
		t.Errorf("all instructions: ovs-ofctl prints\n%s\nwant\n%s", got[len(everyInstruction)], want)
	}
}

// TestInstructionsEncoding checks the encodings ovs-ofctl cannot, and
// that every instruction decodes to itself and encodes back to the same
// bytes.
func TestInstructionsEncoding(t *testing.T) {
	for _, c := range everyInstruction {
		b := AppendInstructions(nil, []Instruction{c.in})
		if c.want != "" {
			if want := unhex(t, c.want); string(b) != string(want) {
				t.Errorf("%#v encodes to %x, want %x", c.in, b, want)
			}
		}
		checkInstructionsRoundTrip(t, b, []Instruction{c.in})
	}
}

// checkInstructionsRoundTrip checks that b decodes to want and that want
// encodes to b.
func checkInstructionsRoundTrip(t *testing.T, b []byte, want []Instruction) {
	t.Helper()
	got, err := DecodeInstructions(b)
	if err != nil {
		t.Errorf("decoding %x: %v", b, err)
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%x decodes to %#v, want %#v", b, got, want)
	}
	if again := AppendInstructions(nil, got); string(again) != string(b) {
		t.Errorf("%x decodes to %#v, which encodes to %x", b, got, again)
	}
}

func TestDecodeInstructionsErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		hex  string
		typ  ErrorType
		code uint16
	}{
		{"header cut", "0001 00", ErrBadInstruction, BadInstructionBadLen},
		{"length under 8", "0001 0004 0000", ErrBadInstruction, BadInstructionBadLen},
		{"length not a multiple of 8", "ffff 000c 00abcdef 01020304", ErrBadInstruction, BadInstructionBadLen},
		{"length past the end", "0004 0020 00000000 0000 0010 00000002 ffff 000000000000", ErrBadInstruction, BadInstructionBadLen},
		{"goto_table of 16 bytes", "0001 0010 02000000 00000000 00000000", ErrBadInstruction, BadInstructionBadLen},
		{"write_metadata of 16 bytes", "0002 0010 00000000 0000000000000001", ErrBadInstruction, BadInstructionBadLen},
		{"clear_actions with an action", "0005 0010 00000000 0012 0008 00000000", ErrBadInstruction, BadInstructionBadLen},
		{"type 7", "0007 0008 00000000", ErrBadInstruction, BadInstructionUnknownInst},
		{"goto_table twice", "0001 0008 02000000 0001 0008 03000000", ErrBadInstruction, BadInstructionUnknownInst},
		{"apply_actions twice", "0004 0008 00000000 0004 0008 00000000", ErrBadInstruction, BadInstructionUnknownInst},
		{"apply_actions with a bad action", "0004 0010 00000000 0000 0008 00000002", ErrBadAction, BadActionBadLen},
		{"write_actions with a bad action", "0003 0010 00000000 0007 0008 00000000", ErrBadAction, BadActionBadType},
	} {
		got, err := DecodeInstructions(unhex(t, c.hex))
		var de *DecodeError
		if !errors.As(err, &de) || de.Type != c.typ || de.Code != c.code {
			t.Errorf("%s: %s decodes to %#v, %v; want error type %d code %d", c.name, c.hex, got, err, c.typ, c.code)
		}
	}
}

// apply is a flow's instructions when it has only actions.
func apply(as ...Action) []Instruction {
	return []Instruction{InstructionApplyActions{Actions: as}}
}

// ofctlFlows are flows as Open vSwitch users write them, with the
// instructions ovs-ofctl sends for them.
var ofctlFlows = []struct {
	flow string
	want []Instruction
}{
	{"actions=output:2", apply(ActionOutput{Port: 2})},
	{"actions=2", apply(ActionOutput{Port: 2})},
	{"actions=NORMAL", apply(ActionOutput{Port: portNormal})},
	{"actions=FLOOD", apply(ActionOutput{Port: portFlood})},
	{"actions=ALL", apply(ActionOutput{Port: portAll})},
	{"actions=IN_PORT", apply(ActionOutput{Port: portInPort})},
	{"actions=LOCAL", apply(ActionOutput{Port: portLocal})},
	{"actions=CONTROLLER", apply(ActionOutput{Port: portController, MaxLen: 0xffff})},
	{"actions=CONTROLLER:128", apply(ActionOutput{Port: portController, MaxLen: 128})},
	{"actions=controller(reason=no_match,max_len=64,id=3)", apply(NXController{MaxLen: 64, ControllerID: 3, Reason: 0})},
	{"actions=controller(userdata=01.02.03,pause)", apply(NXController2{MaxLen: 0xffff, Reason: 1, UserData: []byte{1, 2, 3}, Pause: true})},
	{"actions=controller(max_len=100,meter_id=7)", apply(NXController2{MaxLen: 100, Reason: 1, MeterID: 7})},
	{"actions=drop", nil},
	{"actions=mod_dl_src:00:11:22:33:44:55", apply(ActionSetField{Field: basic(4, 0, 0x11, 0x22, 0x33, 0x44, 0x55)})},
	{"actions=mod_dl_dst:00:11:22:33:44:56", apply(ActionSetField{Field: basic(3, 0, 0x11, 0x22, 0x33, 0x44, 0x56)})},
	{"actions=mod_vlan_vid:5", apply(ActionPushVLAN{EtherType: 0x8100}, ActionSetField{Field: basic(6, 0x10, 5)})},
	{"dl_vlan=7,actions=mod_vlan_vid:5", apply(ActionSetField{Field: basic(6, 0x10, 5)})},
	{"dl_vlan=7,actions=strip_vlan", apply(ActionPopVLAN{})},
	{"actions=push_vlan:0x8100", apply(ActionPushVLAN{EtherType: 0x8100})},
	{"ip,actions=mod_nw_src:10.0.0.1,mod_nw_dst:10.0.0.2", apply(
		ActionSetField{Field: basic(11, 10, 0, 0, 1)}, ActionSetField{Field: basic(12, 10, 0, 0, 2)})},
	{"tcp,actions=mod_tp_src:80,mod_tp_dst:8080", apply(
		ActionSetField{Field: basic(13, 0, 80)}, ActionSetField{Field: basic(14, 0x1f, 0x90)})},
	{"actions=set_field:00:11:22:33:44:57->eth_dst", apply(ActionSetField{Field: basic(3, 0, 0x11, 0x22, 0x33, 0x44, 0x57)})},
	{"actions=set_field:00:11:22:33:44:58->eth_src", apply(ActionSetField{Field: basic(4, 0, 0x11, 0x22, 0x33, 0x44, 0x58)})},
	{"dl_vlan=7,actions=set_field:0x1009->vlan_vid", apply(ActionSetField{Field: basic(6, 0x10, 9)})},
	{"dl_vlan=7,actions=set_field:3->vlan_pcp", apply(ActionSetField{Field: basic(7, 3)})},
	{"ip,actions=set_field:10->ip_dscp", apply(ActionSetField{Field: basic(8, 10)})},
	{"ip,actions=set_field:1->ip_ecn", apply(ActionSetField{Field: basic(9, 1)})},
	{"ip,actions=set_field:10.1.2.3->ip_src,set_field:10.1.2.4->ip_dst", apply(
		ActionSetField{Field: basic(11, 10, 1, 2, 3)}, ActionSetField{Field: basic(12, 10, 1, 2, 4)})},
	{"ipv6,actions=set_field:2001:db8::1->ipv6_src,set_field:2001:db8::2->ipv6_dst", apply(
		ActionSetField{Field: basic(26, 0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1)},
		ActionSetField{Field: basic(27, 0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2)})},
	{"tcp,actions=set_field:80->tcp_src,set_field:81->tcp_dst", apply(
		ActionSetField{Field: basic(13, 0, 80)}, ActionSetField{Field: basic(14, 0, 81)})},
	{"udp,actions=set_field:53->udp_src,set_field:54->udp_dst", apply(
		ActionSetField{Field: basic(15, 0, 53)}, ActionSetField{Field: basic(16, 0, 54)})},
	{"actions=set_field:0x2a->reg0", apply(ActionSetField{Field: OXM{Class: OXMClassNXM1, Field: 0, Value: []byte{0, 0, 0, 0x2a}}})},
	{"actions=set_field:0x5/0xff->reg0", apply(NXRegLoad{Ofs: 0, NBits: 8, Dst: nxmReg0, Value: 5})},
	{"actions=set_field:0x1234->metadata", apply(ActionSetField{Field: basic(2, 0, 0, 0, 0, 0, 0, 0x12, 0x34)})},
	{"actions=set_field:0x1/0xff->metadata", apply(NXRegLoad{Ofs: 0, NBits: 8, Dst: 0x80000408, Value: 1})}, // OXM_OF_METADATA
	{"actions=set_field:0x99->tun_id", apply(ActionSetField{Field: basic(38, 0, 0, 0, 0, 0, 0, 0, 0x99)})},
	{"actions=set_tunnel:0x99", apply(ActionSetField{Field: basic(38, 0, 0, 0, 0, 0, 0, 0, 0x99)})},
	{"ip,actions=mod_nw_tos:40", apply(ActionSetField{Field: basic(8, 10)})},
	{"actions=load:0x5->reg0[0..7]", apply(NXRegLoad{Ofs: 0, NBits: 8, Dst: nxmReg0, Value: 5})},
	{"actions=load:0xffffffff->reg1[]", apply(NXRegLoad{Ofs: 0, NBits: 32, Dst: nxmReg1, Value: 0xffffffff})},
	{"actions=move:reg0[0..15]->reg1[16..31]", apply(NXRegMove{NBits: 16, SrcOfs: 0, DstOfs: 16, Src: nxmReg0, Dst: nxmReg1})},
	{"actions=resubmit(,2)", apply(NXResubmit{InPort: 0xfff8, Table: 2})},
	{"actions=resubmit:3", apply(NXResubmit{InPort: 3, Table: 0xff})},
	{"actions=resubmit(3,4)", apply(NXResubmit{InPort: 3, Table: 4})},
	{"ip,actions=dec_ttl", apply(ActionDecNwTTL{})},
	{"ip,actions=mod_nw_ttl:9", apply(ActionSetNwTTL{TTL: 9})},
	{"actions=goto_table:2", []Instruction{InstructionGotoTable{TableID: 2}}},
	{"actions=write_metadata:0x1/0xff", []Instruction{InstructionWriteMetadata{Metadata: 1, Mask: 0xff}}},
	{"actions=write_metadata:0x10", []Instruction{InstructionWriteMetadata{Metadata: 0x10, Mask: ^uint64(0)}}},
	{"actions=write_actions(output:1)", []Instruction{InstructionWriteActions{Actions: []Action{ActionOutput{Port: 1}}}}},
	{"actions=clear_actions", []Instruction{InstructionClearActions{}}},
	{"ip,actions=meter:1,dec_ttl,output:2,clear_actions,write_actions(output:1),write_metadata:0x1/0xff,goto_table:2", []Instruction{
		InstructionMeter{MeterID: 1},
		InstructionApplyActions{Actions: []Action{ActionDecNwTTL{}, ActionOutput{Port: 2}}},
		InstructionClearActions{},
		InstructionWriteActions{Actions: []Action{ActionOutput{Port: 1}}},
		InstructionWriteMetadata{Metadata: 1, Mask: 0xff},
		InstructionGotoTable{TableID: 2},
	}},
}

// TestOFCtlAddFlow decodes what ovs-ofctl add-flow sends for each flow of
// ofctlFlows, and encodes it back to the same bytes.
func TestOFCtlAddFlow(t *testing.T) {
	ofctltest.Require(t)
	for _, c := range ofctlFlows {
		t.Run(c.flow, func(t *testing.T) {
			t.Parallel()
			b, err := flowModInstructions(ofctltest.AddFlow(t, "priority=1,"+c.flow))
			if err != nil {
				t.Fatal(err)
			}
			checkInstructionsRoundTrip(t, b, c.want)
		})
	}
}

// flowModInstructions slices the instructions out of a FLOW_MOD: after
// the header and fixed fields (48 bytes) comes the match, whose length is
// at offset 50 and which is padded to 8 bytes.
func flowModInstructions(fm []byte) ([]byte, error) {
	if len(fm) < 52 {
		return nil, fmt.Errorf("FLOW_MOD of %d bytes", len(fm))
	}
	off := 48 + pad8(int(binary.BigEndian.Uint16(fm[50:])))
	if off > len(fm) {
		return nil, fmt.Errorf("FLOW_MOD of %d bytes with a match to %d", len(fm), off)
	}
	return fm[off:], nil
}

// fuzzSeeds are the encodings of everyAction, everyInstruction and
// ofctlFlows (TestOFCtlAddFlow checks the latter are ovs-ofctl's own).
func fuzzSeeds() (actions, instructions [][]byte) {
	for _, c := range everyAction {
		actions = append(actions, AppendActions(nil, []Action{c.a}))
	}
	for _, c := range everyInstruction {
		instructions = append(instructions, AppendInstructions(nil, []Instruction{c.in}))
	}
	for _, c := range ofctlFlows {
		instructions = append(instructions, AppendInstructions(nil, c.want))
		for _, in := range c.want {
			if a, ok := in.(InstructionApplyActions); ok {
				actions = append(actions, AppendActions(nil, a.Actions))
			}
		}
	}
	return actions, instructions
}

func FuzzDecodeActions(f *testing.F) {
	seeds, _ := fuzzSeeds()
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		as, err := DecodeActions(b)
		if err != nil {
			if !errors.As(err, new(*DecodeError)) {
				t.Fatalf("%x: %v is not a *DecodeError", b, err)
			}
			return
		}
		again := AppendActions(nil, as)
		as2, err := DecodeActions(again)
		if err != nil || !reflect.DeepEqual(as2, as) {
			t.Fatalf("%x decodes to %#v, encoded %x, which decodes to %#v, %v", b, as, again, as2, err)
		}
	})
}

func FuzzDecodeInstructions(f *testing.F) {
	_, seeds := fuzzSeeds()
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		is, err := DecodeInstructions(b)
		if err != nil {
			if !errors.As(err, new(*DecodeError)) {
				t.Fatalf("%x: %v is not a *DecodeError", b, err)
			}
			return
		}
		again := AppendInstructions(nil, is)
		is2, err := DecodeInstructions(again)
		if err != nil || !reflect.DeepEqual(is2, is) {
			t.Fatalf("%x decodes to %#v, encoded %x, which decodes to %#v, %v", b, is, again, is2, err)
		}
	})
}

// BenchmarkDecodeInstructions decodes a typical flow's instructions: a
// rewrite, a TTL decrement and an output, then metadata and a table.
func BenchmarkDecodeInstructions(b *testing.B) {
	enc := AppendInstructions(nil, []Instruction{
		InstructionApplyActions{Actions: []Action{
			ActionSetField{Field: basic(3, 0, 0x11, 0x22, 0x33, 0x44, 0x55)},
			ActionDecNwTTL{},
			ActionOutput{Port: 2},
		}},
		InstructionWriteMetadata{Metadata: 1, Mask: 0xff},
		InstructionGotoTable{TableID: 1},
	})
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeInstructions(enc); err != nil {
			b.Fatal(err)
		}
	}
}
