package ofagent

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/openflow"
)

// The agent gives a controller its flows back as it sent them: flow stats
// and flow removed messages carry each flow's match and instructions byte
// for byte, whatever order the match's TLVs came in and whatever the
// actions carry that xswitch does not keep (an output's max_len to a
// port), while the flows do what they mean.

// hexMessage is a message written as ofp-print.at writes it.
func hexMessage(t *testing.T, text string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(text), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func basicOXM(num uint8, value ...byte) openflow.OXM {
	return openflow.OXM{Class: openflow.OXMClassOpenFlowBasic, Field: num, Value: value}
}

func applyActions(as ...openflow.Action) openflow.InstructionApplyActions {
	return openflow.InstructionApplyActions{Actions: as}
}

// wireFlowMods are FLOW_MODs (adds) as a controller may send them, and
// what xswitch's dump-flows prints of each (its match and actions).
func wireFlowMods(t *testing.T) []struct {
	name, dump string
	msg        []byte
} {
	add := func(priority uint16, table uint8, fields []openflow.OXM, is ...openflow.Instruction) []byte {
		return openflow.Append(nil, 9, openflow.FlowMod{Command: openflow.FlowAdd, TableID: table, Priority: priority,
			BufferID: openflow.NoBuffer, OutPort: openflow.PortAny, OutGroup: openflow.GroupAny,
			Match: openflow.Match{Fields: fields}, Instructions: is})
	}
	nicira := func(data ...byte) openflow.Action {
		return openflow.ActionExperimenter{Experimenter: openflow.NiciraExperimenter, Data: data}
	}
	return []struct {
		name, dump string
		msg        []byte
	}{
		{
			// OVS's ofp-print.at, "OFPT_FLOW_MOD - OF1.3 - flags": eth_type
			// after the addresses, every flag.
			"OVS's OF1.3 flags", "arp,in_port=1,vlan_tci=0x0000,dl_src=50:54:00:00:00:06,dl_dst=50:54:00:00:00:05,arp_spa=192.168.0.2,arp_tpa=192.168.0.1,arp_op=2 output:3",
			hexMessage(t, `04 0e 00 90 00 00 00 02 00 00 00 00 00 00 00 00
				00 00 00 00 00 00 00 00 01 00 00 00 00 00 ff ff
				ff ff ff ff ff ff ff ff ff ff ff ff 00 1f 00 00
				00 01 00 42 80 00 00 04 00 00 00 01 80 00 08 06
				50 54 00 00 00 06 80 00 06 06 50 54 00 00 00 05
				80 00 0a 02 08 06 80 00 0c 02 00 00 80 00 2a 02
				00 02 80 00 2c 04 c0 a8 00 02 80 00 2e 04 c0 a8
				00 01 00 00 00 00 00 00 00 04 00 18 00 00 00 00
				00 00 00 10 00 00 00 03 00 00 00 00 00 00 00 00`),
		},
		{
			// OVS's ofp-print.at, "OFPT_FLOW_MOD - OF1.2 - set-field
			// ip_src", in OpenFlow 1.3.
			"OVS's set-field ip_src", "ip mod_nw_src:192.168.3.92",
			hexMessage(t, `04 0e 00 58 52 33 45 02 00 00 00 00 00 00 00 00
				00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 ff
				ff ff ff ff ff ff ff ff ff ff ff ff 00 00 00 00
				00 01 00 0a 80 00 0a 02 08 00 00 00 00 00 00 00
				00 04 00 18 00 00 00 00 00 19 00 10 80 00 16 04
				c0 a8 03 5c 00 00 00 00`),
		},
		{
			// What the conformance suite sends: an output to a port with
			// max_len OFPCML_MAX, vlan_vid before eth_type, and a mask of
			// all ones written out.
			"max_len to a port, vlan_vid first", "ip,dl_vlan=5,nw_dst=10.0.0.2 output:1",
			add(100, 0, []openflow.OXM{basicOXM(openflow.OXMVLANVID, 0x10, 0x05), basicOXM(openflow.OXMEthType, 0x08, 0x00),
				{Class: openflow.OXMClassOpenFlowBasic, Field: openflow.OXMIPv4Dst, Value: []byte{10, 0, 0, 2}, Mask: []byte{0xff, 0xff, 0xff, 0xff}}},
				applyActions(openflow.ActionOutput{Port: 1, MaxLen: 0xffe5})),
		},
		{
			"instructions out of their order", "metadata=0x1/0xff,in_port=1 mod_vlan_vid:7,output:2,write_metadata:0x10/0xff,goto_table:2",
			add(7, 0, []openflow.OXM{{Class: openflow.OXMClassOpenFlowBasic, Field: openflow.OXMMetadata, Value: []byte{0, 0, 0, 0, 0, 0, 0, 1},
				Mask: []byte{0, 0, 0, 0, 0, 0, 0, 0xff}}, basicOXM(openflow.OXMInPort, 0, 0, 0, 1)},
				openflow.InstructionGotoTable{TableID: 2},
				openflow.InstructionWriteMetadata{Metadata: 0x10, Mask: 0xff},
				applyActions(openflow.ActionPushVLAN{EtherType: 0x8100}, openflow.ActionSetField{Field: basicOXM(openflow.OXMVLANVID, 0x10, 0x07)},
					openflow.ActionOutput{Port: 2, MaxLen: 0xffe5})),
		},
		{
			"an action set with max_len", " CONTROLLER:128,clear_actions,write_actions(output:2,mod_dl_dst:02:00:00:00:00:09)",
			add(8, 0, nil, openflow.InstructionClearActions{},
				openflow.InstructionWriteActions{Actions: []openflow.Action{openflow.ActionOutput{Port: 2, MaxLen: 0xffe5},
					openflow.ActionSetField{Field: basicOXM(openflow.OXMEthDst, 2, 0, 0, 0, 0, 9)}}},
				applyActions(openflow.ActionOutput{Port: openflow.PortController, MaxLen: 128})),
		},
		{
			// NXAST_RESUBMIT, which the codec reads as the
			// NXAST_RESUBMIT_TABLE it sends, and NXAST_REG_LOAD; fields
			// after the ones they need.
			"Nicira actions, fields before their prerequisites", "tcp,reg0=0x7,tp_dst=80 resubmit:5,load:0x2a->reg0[]",
			add(9, 0, []openflow.OXM{{Class: openflow.OXMClassNXM1, Field: 0, Value: []byte{0, 0, 0, 7}}, basicOXM(openflow.OXMTCPDst, 0, 80),
				basicOXM(openflow.OXMIPProto, 6), basicOXM(openflow.OXMEthType, 0x08, 0x00)},
				applyActions(nicira(0, 1, 0, 5, 0, 0, 0, 0),
					nicira(0, 7, 0, 0x1f, 0, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0x2a))),
		},
		{
			"a VLAN and IPv6", "ipv6,dl_vlan=1,dl_vlan_pcp=3,ipv6_dst=2001:db8::/32 strip_vlan,dec_ttl,set_field:2001:db8::1->ipv6_src,output:3",
			add(10, 0, []openflow.OXM{basicOXM(openflow.OXMVLANPCP, 3), basicOXM(openflow.OXMVLANVID, 0x10, 0x01), basicOXM(openflow.OXMEthType, 0x86, 0xdd),
				{Class: openflow.OXMClassOpenFlowBasic, Field: openflow.OXMIPv6Dst, Value: []byte{0x20, 0x01, 0x0d, 0xb8, 15: 0},
					Mask: []byte{0xff, 0xff, 0xff, 0xff, 15: 0}}},
				applyActions(openflow.ActionPopVLAN{}, openflow.ActionDecNwTTL{},
					openflow.ActionSetField{Field: openflow.OXM{Class: openflow.OXMClassOpenFlowBasic, Field: openflow.OXMIPv6Src,
						Value: []byte{0x20, 0x01, 0x0d, 0xb8, 15: 1}}}, openflow.ActionOutput{Port: 3})),
		},
	}
}

// rawReplies sends m and a barrier, and returns the messages that came
// before the barrier's reply, as they came, but for the asynchronous
// ones, which come when they come.
func (c *client) rawReplies(m openflow.Message) [][]byte {
	c.t.Helper()
	c.send(m)
	return c.rawBarrier()
}

func (c *client) rawBarrier() [][]byte {
	c.t.Helper()
	barrier := c.send(openflow.BarrierRequest{})
	var got [][]byte
	for {
		c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		raw, err := c.rd.Next()
		if err != nil {
			c.t.Fatalf("reading from the switch: %v", err)
		}
		h, _ := openflow.ParseHeader(raw)
		switch h.Type {
		case openflow.TypeBarrierReply:
			if h.Xid == barrier {
				return got
			}
		case openflow.TypeEchoRequest, openflow.TypeFlowRemoved, openflow.TypePacketIn, openflow.TypePortStatus:
			continue
		}
		got = append(got, bytes.Clone(raw))
	}
}

// sendRaw sends msg as it is and fails the test if the switch answers it
// (with an error).
func (c *client) sendRaw(what string, msg []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(msg); err != nil {
		c.t.Fatal(err)
	}
	if got := c.rawBarrier(); len(got) != 0 {
		_, m, _ := openflow.Decode(got[0])
		c.t.Fatalf("%s: the switch answered %#v", what, m)
	}
}

// flowStatsWire returns the match TLVs and the instructions of the one
// flow of a flow stats reply, as they are on the wire.
func flowStatsWire(t *testing.T, replies [][]byte) (match, instructions []byte) {
	t.Helper()
	const (
		multipartHeader = openflow.HeaderLen + 8 // type, flags, padding
		flowStatsFixed  = 48                     // ofp_flow_stats before its match
	)
	if len(replies) != 1 {
		t.Fatalf("%d flow stats replies", len(replies))
	}
	body := replies[0][multipartHeader:]
	n := int(binary.BigEndian.Uint16(body))
	if n != len(body) {
		t.Fatalf("flow stats of %d bytes in a body of %d: not one flow", n, len(body))
	}
	m := body[flowStatsFixed:]
	l := int(binary.BigEndian.Uint16(m[2:]))
	return m[4:l], m[(l+7)/8*8:]
}

var (
	allFlows  = openflow.MultipartRequest{MType: openflow.MultipartFlow, Body: openflow.FlowStatsRequest{TableID: openflow.TableAll, OutPort: openflow.PortAny, OutGroup: openflow.GroupAny}}
	deleteAll = openflow.FlowMod{Command: openflow.FlowDelete, TableID: openflow.TableAll, BufferID: openflow.NoBuffer, OutPort: openflow.PortAny, OutGroup: openflow.GroupAny}
)

// TestFlowStatsGiveBackWhatWasSent: each FLOW_MOD's match and
// instructions come back in flow stats as they were sent, and the flow is
// what the FLOW_MOD means.
func TestFlowStatsGiveBackWhatWasSent(t *testing.T) {
	s := newTestSwitch(t)
	c := s.connect(t)
	for _, v := range wireFlowMods(t) {
		c.reply(deleteAll)
		c.sendRaw(v.name, v.msg)
		wantMatch, wantInstructions := openflow.FlowModEncoded(v.msg)
		match, instructions := flowStatsWire(t, c.rawReplies(allFlows))
		if !bytes.Equal(match, wantMatch) {
			t.Errorf("%s: flow stats give the match\n\t%x\nnot\n\t%x", v.name, match, wantMatch)
		}
		if !bytes.Equal(instructions, wantInstructions) {
			t.Errorf("%s: flow stats give the instructions\n\t%x\nnot\n\t%x", v.name, instructions, wantInstructions)
		}
		if got := s.flows(t); len(got) != 1 || got[0] != v.dump {
			t.Errorf("%s: dump-flows gives %q, want %q", v.name, got, v.dump)
		}
	}
}

// TestFlowModifyGivesBackWhatWasSent: a FLOW_MOD modify's instructions
// come back in flow stats as it sent them, with the add's match; once
// mod-flows has replaced the actions, the instructions are xswitch's
// encoding of them, which is how a rule added without OpenFlow comes back.
func TestFlowModifyGivesBackWhatWasSent(t *testing.T) {
	s := newTestSwitch(t)
	c := s.connect(t)
	c.reply(deleteAll)
	v := wireFlowMods(t)[2] // the max_len output with vlan_vid first
	c.sendRaw("the add", v.msg)
	wantMatch, _ := openflow.FlowModEncoded(v.msg)
	mod := openflow.Append(nil, 10, openflow.FlowMod{Command: openflow.FlowModify,
		BufferID: openflow.NoBuffer, OutPort: openflow.PortAny, OutGroup: openflow.GroupAny,
		Instructions: []openflow.Instruction{applyActions(openflow.ActionOutput{Port: 3, MaxLen: 64})}})
	c.sendRaw("the modify", mod)
	_, wantInstructions := openflow.FlowModEncoded(mod)
	match, instructions := flowStatsWire(t, c.rawReplies(allFlows))
	if !bytes.Equal(match, wantMatch) || !bytes.Equal(instructions, wantInstructions) {
		t.Errorf("after a modify, flow stats give\n\t%x %x\nnot\n\t%x %x", match, instructions, wantMatch, wantInstructions)
	}
	if got := s.flows(t); len(got) != 1 || !strings.HasSuffix(got[0], " output:3") {
		t.Errorf("after a modify to an output with max_len 64, dump-flows gives %q: the output does not cut frames", got)
	}

	s.handle(t, api.Request{Verb: api.VerbModFlows, Bridge: s.bridge, Flows: []string{"actions=output:4"}})
	want := openflow.AppendInstructions(nil, []openflow.Instruction{applyActions(openflow.ActionOutput{Port: 4})})
	match, instructions = flowStatsWire(t, c.rawReplies(allFlows))
	if !bytes.Equal(match, wantMatch) || !bytes.Equal(instructions, want) {
		t.Errorf("after mod-flows, flow stats give\n\t%x %x\nnot\n\t%x %x", match, instructions, wantMatch, want)
	}
}

// TestFlowRemovedGivesBackTheMatch: a flow removed message carries the
// match as its flow's FLOW_MOD sent it.
func TestFlowRemovedGivesBackTheMatch(t *testing.T) {
	s := newTestSwitch(t)
	c := s.connect(t)
	c.reply(deleteAll)
	v := wireFlowMods(t)[0] // with send_flow_rem
	c.sendRaw(v.name, v.msg)
	wantMatch, _ := openflow.FlowModEncoded(v.msg)
	c.send(deleteAll)
	for {
		c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		raw, err := c.rd.Next()
		if err != nil {
			t.Fatalf("no flow removed message after deleting a flow with send_flow_rem: %v", err)
		}
		if h, _ := openflow.ParseHeader(raw); h.Type != openflow.TypeFlowRemoved {
			continue
		}
		const flowRemovedFixed = openflow.HeaderLen + 40 // ofp_flow_removed before its match
		m := raw[flowRemovedFixed:]
		if l := int(binary.BigEndian.Uint16(m[2:])); !bytes.Equal(m[4:l], wantMatch) {
			t.Errorf("the flow removed message gives the match\n\t%x\nnot\n\t%x", m[4:l], wantMatch)
		}
		return
	}
}
