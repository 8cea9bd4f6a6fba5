package ofagent

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/internal/ofctltest"
	"github.com/xswitch/xswitch/openflow"
)

// The tests here take Open vSwitch as the oracle of what a match means on
// the wire: ovs-ofctl add-flow -O OpenFlow13 sends the FLOW_MOD of a flow
// to a listener of the test, whose match matchFromOF must read as
// xswitch's parser reads the flow's text; and ovs-ofctl parse-oxm, which
// reads a match into Open vSwitch's own and prints it back in its
// canonical form, must print matchToOF's encoding of the flow as it
// prints the one it sent.

// oracleFlows are flows of every kind of field and encoding: protocols,
// prefixes and masks, VLAN forms, ARP's and ICMP's fields over IPv4's
// and the ports', registers, and the NXM fields.
var oracleFlows = []string{
	"actions=drop",
	"in_port=1,actions=drop",
	"in_port=LOCAL,actions=drop",
	"dl_src=02:00:00:00:00:01,dl_dst=01:00:00:00:00:00/01:00:00:00:00:00,actions=drop",
	"dl_type=0x88cc,actions=drop",
	"dl_vlan=5,actions=drop",
	"dl_vlan=0xffff,actions=drop",
	"dl_vlan_pcp=3,actions=drop",
	"dl_vlan=7,dl_vlan_pcp=2,actions=drop",
	"vlan_tci=0x1000/0x1000,actions=drop",
	"vlan_tci=0x0000/0x1fff,actions=drop",
	"vlan_tci=0x0000/0x1000,actions=drop",
	"ip,nw_src=10.0.0.0/8,nw_dst=192.168.1.1,actions=drop",
	"ip,nw_src=10.0.0.1/255.0.255.0,actions=drop",
	"ip,nw_tos=184,nw_ecn=2,nw_ttl=9,actions=drop",
	"ip,ip_frag=first,actions=drop",
	"ip,ip_frag=not_later,actions=drop",
	"tcp,tp_src=1024,tp_dst=80,actions=drop",
	"tcp,tp_dst=0x50/0xfff0,actions=drop",
	"udp,tp_src=53,actions=drop",
	"tcp6,ipv6_src=2001:db8::/32,tp_dst=443,actions=drop",
	"ipv6,ipv6_dst=fe80::1,nw_proto=89,actions=drop",
	"icmp,icmp_type=8,icmp_code=0,actions=drop",
	"icmp6,icmp_type=135,actions=drop",
	"arp,arp_op=1,arp_spa=10.0.0.1,arp_tpa=10.0.0.0/24,actions=drop",
	"arp,arp_sha=02:00:00:00:00:01,arp_tha=00:00:00:00:00:00/01:00:00:00:00:00,actions=drop",
	"sctp,tp_src=38412,tp_dst=0x100/0xff00,actions=drop",
	"sctp6,sctp_dst=36412,actions=drop",
	"ipv6,ipv6_label=0x12345,actions=drop",
	"udp6,ipv6_label=0x5/0xf,actions=drop",
	"icmp6,icmp_type=135,icmp_code=0,nd_target=fe80::1,nd_sll=02:00:00:00:00:01,actions=drop",
	"icmp6,icmp_type=136,nd_target=fe80::/64,nd_tll=02:00:00:00:00:02/ff:ff:ff:00:00:00,actions=drop",
	"icmp6,icmpv6_type=128,icmpv6_code=0,actions=drop",
	"reg0=5,reg15=0x10/0xff,actions=drop",
	"metadata=0x1234/0xffff,actions=drop",
	"table=3,ip,reg3=1,metadata=7,actions=drop",
	"mpls,mpls_label=100,mpls_tc=3,mpls_bos=1,actions=drop",
	"mplsm,mpls_label=1048575,mpls_ttl=64,actions=drop",
	"ct_state=+trk+est-new,ct_zone=5,ct_mark=0x5/0xff,ct_label=0x1/0x1,ip,actions=drop",
	"ct_state=0x21/0x23,ct_label=0x1234567890abcdef1234567890abcdef,actions=drop",
	"ct_state=trk|est,ct_mark=7,actions=drop",
	"ip,ct_state=+est,ct_nw_src=10.0.0.0/8,ct_nw_dst=1.2.3.4,ct_nw_proto=6,ct_tp_src=1024,ct_tp_dst=0x50/0xfff0,actions=drop",
	"ipv6,ct_state=+trk-inv,ct_ipv6_src=fe80::/64,ct_ipv6_dst=::1,ct_nw_proto=58,actions=drop",
}

// sameMeaning are the oracle flows whose match ovs-ofctl encodes as
// another match of the same meaning, each with why.
var sameMeaning = map[string]string{
	"vlan_tci=0x0000/0x1fff,actions=drop": "an untagged frame's key has TCI 0, so OVS's \"no tag\" (VLAN_VID 0x0000), " +
		"which xswitch reads as vlan_tci=0x0000, matches the same frames",
}

// TestMatchOracle checks the two directions against ovs-ofctl.
func TestMatchOracle(t *testing.T) {
	ofctltest.Require(t)
	var ours, theirs []string
	for _, text := range oracleFlows {
		r := ruleOf(t, text)
		sent, table := ofctlFlowMod(t, text)
		m, err := matchFromOF(sent, table)
		if err != nil {
			t.Errorf("%s: ovs-ofctl's match %s: %v", text, oxmText(sent), err)
			continue
		}
		if m != r.Match && sameMeaning[text] == "" {
			t.Errorf("%s: ovs-ofctl's match %s reads as %q", text, oxmText(sent), flow.FormatMatch(m))
		}
		ours, theirs = append(ours, oxmText(matchToOF(r.Match))), append(theirs, oxmText(sent))
	}
	ourNorm, theirNorm := ofctltest.ParseOXM(t, ours), ofctltest.ParseOXM(t, theirs)
	for i := range ours {
		if ourNorm[i] != theirNorm[i] {
			t.Errorf("%s: ovs-ofctl parse-oxm reads\n\txswitch's %s\n\tas        %s\n\tand its own %s\n\tas          %s",
				oracleFlows[i], ours[i], ourNorm[i], theirs[i], theirNorm[i])
		}
	}
}

// oxmText writes a match as parse-oxm reads it: each TLV as its header in
// hex and its value (and mask).
func oxmText(m openflow.Match) string {
	var parts []string
	for _, o := range m.Fields {
		body := hex.EncodeToString(o.Value)
		if o.Mask != nil {
			body += "/" + hex.EncodeToString(o.Mask)
		}
		parts = append(parts, fmt.Sprintf("%08x(%s)", o.Header(), body))
	}
	if len(parts) == 0 {
		return "<any>"
	}
	return strings.Join(parts, ", ")
}

// ofctlFlowMod runs ovs-ofctl add-flow with text and returns the match
// and table of the FLOW_MOD it sends.
func ofctlFlowMod(t *testing.T, text string) (openflow.Match, uint8) {
	t.Helper()
	b := ofctltest.AddFlow(t, text)
	_, m, err := openflow.Decode(b)
	if err != nil {
		t.Fatalf("%s: ovs-ofctl's FLOW_MOD %x: %v", text, b, err)
	}
	fm := m.(openflow.FlowMod)
	return fm.Match, fm.TableID
}

// TestOXMColumnOracle checks every encoding of every field in the field
// table's OXM column, the NXM ones that ovs-ofctl does not send among
// them: a match on the field in that encoding, with what the field needs
// in the rest of the match, means to ovs-ofctl parse-oxm what ovs-ofctl's
// own encoding of the same match means, and to matchFromOF the same
// match.
func TestOXMColumnOracle(t *testing.T) {
	ofctltest.Require(t)
	var contexts []flow.Match
	for _, text := range []string{"", "ip", "ipv6", "arp", "tcp", "udp", "sctp", "icmp", "icmp6", "icmp6,icmp_type=135", "icmp6,icmp_type=136", "dl_vlan=5", "mpls",
		"ip,ct_state=+est", "ipv6,ct_state=+est", "ip,ct_state=+est,ct_nw_proto=6"} {
		contexts = append(contexts, ruleOf(t, text+",actions=drop").Match)
	}
	var names, ours, canonical []string
	for _, f := range flow.Fields() {
		if f.Name == "ipv6_exthdr" {
			continue // which Open vSwitch lacks: TestMatchIPv6ExtHdr
		}
		for i := range f.OXM {
			c := &f.OXM[i]
			var m flow.Match
			found := false
			for _, ctx := range contexts {
				if m, found = ctx, c.Needs == nil || c.Needs.Holds(&ctx); found {
					break
				}
			}
			if !found {
				t.Errorf("%s %#x:%d: no context gives what it needs, %s", f.Name, c.Class, c.Num, c.Needs)
				continue
			}
			v := flow.Value{Lo: 1}
			switch f.Name {
			case "vlan_tci", "vlan_vid":
				v.Lo = 0x1007
			case "nw_tos":
				v.Lo = 4
			}
			// The context may match on the field itself, ct_nw_proto
			// for its own prerequisite: the TLV says it instead.
			f.Set(&m.Key, flow.Value{})
			f.Set(&m.Mask, flow.Value{})
			wire := matchToOF(m)
			wire.Fields = append(wire.Fields, openflow.OXM{Class: c.Class, Field: c.Num, Value: valueBytes(v, c.Bytes)})
			f.Set(&m.Key, v)
			f.Set(&m.Mask, flow.Ones(f.Bits))
			name := fmt.Sprintf("%s as %#x:%d", f.Name, c.Class, c.Num)
			got, err := matchFromOF(wire, 0)
			m.Key.Table, m.Mask.Table = 0, 0xff
			if err != nil || got != m {
				t.Errorf("%s: %s reads as %q, %v; want %q", name, oxmText(wire), flow.FormatMatch(got), err, flow.FormatMatch(m))
				continue
			}
			theirs, _ := ofctlFlowMod(t, flow.FormatMatch(m)+",actions=drop")
			names, ours, canonical = append(names, name), append(ours, oxmText(wire)), append(canonical, oxmText(theirs))
		}
	}
	ourNorm, canonicalNorm := ofctltest.ParseOXM(t, ours), ofctltest.ParseOXM(t, canonical)
	for i := range ours {
		if ourNorm[i] != canonicalNorm[i] || strings.Contains(ourNorm[i], "error") {
			t.Errorf("%s: ovs-ofctl parse-oxm reads %s as %s, and its own %s as %s", names[i], ours[i], ourNorm[i], canonical[i], canonicalNorm[i])
		}
	}
	t.Logf("%d encodings checked", len(ours))
}

// mplsOracleFlows are flows of every MPLS action, in each form.
var mplsOracleFlows = []string{
	"ip,actions=push_mpls:0x8847,set_mpls_label:10,set_mpls_tc:3,set_mpls_ttl:64,dec_mpls_ttl,output:1",
	"ipv6,actions=push_mpls:0x8848,push_mpls:0x8848,set_field:7->mpls_label,output:1",
	"mpls,mpls_label=5,actions=pop_mpls:0x0800,dec_ttl,output:1",
	"mpls,mpls_bos=0,actions=pop_mpls:0x8847,set_field:2->mpls_tc,set_field:9->mpls_ttl,output:1",
	"mpls,actions=load:0x5->OXM_OF_MPLS_LABEL[],move:NXM_NX_MPLS_TTL[]->NXM_NX_REG0[0..7],output:1",
	"ip,actions=write_actions(push_mpls:0x8847,set_mpls_label:9,output:2)",
	"mplsm,actions=write_actions(dec_mpls_ttl,pop_mpls:0x86dd,output:2)",
}

// ctOracleFlows are flows of ct() in each of its forms, and ct_clear.
var ctOracleFlows = []string{
	"ip,actions=ct()",
	"ip,actions=ct(commit,table=3,zone=5),ct_clear,output:1",
	"ip,actions=ct(commit,force,zone=NXM_NX_REG0[16..31])",
	"ip,actions=ct(zone=NXM_OF_IN_PORT[],table=0,nat)",
	"tcp,actions=ct(commit,nat(src=10.0.0.1-10.0.0.2:1000-2000,persistent,random),alg=ftp)",
	"udp6,actions=ct(commit,nat(dst=[fe80::1]-[fe80::2]:80,hash),alg=tftp)",
	"ipv6,actions=ct(commit,nat(src=fe80::1))",
	"ip,actions=ct(commit,nat(dst),exec(set_field:1->ct_mark,set_field:0x1234567890abcdef1234567890abcdef->ct_label))",
	"ip,actions=ct(commit,exec(set_field:0x5/0xf->ct_mark,set_field:0x10000000000000001/0x30000000000000001->ct_label))",
	"ip,actions=ct(commit,exec(load:1->NXM_NX_CT_MARK[3],load:0x1234567890abcdef->NXM_NX_CT_LABEL[32..95],move:NXM_NX_REG0[]->NXM_NX_CT_LABEL[96..127]))",
	"ip,ct_state=+est,actions=ct(commit,exec(move:NXM_NX_CT_NW_SRC[]->NXM_NX_CT_MARK[])),move:NXM_NX_CT_LABEL[0..31]->NXM_NX_REG1[]",
}

// TestMPLSActionsOracle and TestCTActionsOracle: ovs-ofctl add-flow -O
// OpenFlow13 sends each flow's instructions as instructionsToOF encodes
// the rule xswitch parses from it, byte for byte, and instructionsFromOF
// reads them as that rule; ovs-ofctl ofp-print prints xswitch's FLOW_MOD
// of the rule as it prints its own.
func TestMPLSActionsOracle(t *testing.T) { checkActionsOracle(t, mplsOracleFlows) }

func TestCTActionsOracle(t *testing.T) { checkActionsOracle(t, ctOracleFlows) }

func checkActionsOracle(t *testing.T, flows []string) {
	ofctltest.Require(t)
	printed := func(msg []byte) string {
		out, err := ofctltest.Run(t, "ofp-print", hex.EncodeToString(msg))
		if err != nil {
			t.Fatalf("ovs-ofctl ofp-print %x: %v: %s", msg, err, out)
		}
		_, text, _ := strings.Cut(string(out), "ADD ")
		return strings.TrimSpace(text)
	}
	for _, text := range flows {
		r := ruleOf(t, text)
		sent := ofctltest.AddFlow(t, text)
		_, msg, err := openflow.Decode(sent)
		if err != nil {
			t.Fatalf("%s: ovs-ofctl's FLOW_MOD: %v", text, err)
		}
		fm := msg.(openflow.FlowMod)
		theirs := openflow.AppendInstructions(nil, fm.Instructions)
		fm.Match, fm.Instructions = matchToOF(r.Match), instructionsToOF(r.Actions, r.Match)
		ours := openflow.AppendInstructions(nil, fm.Instructions)
		if !bytes.Equal(ours, theirs) {
			t.Errorf("%s: xswitch sends\n\t%x\nwhere ovs-ofctl sends\n\t%x", text, ours, theirs)
		}
		back, err := instructionsFromOF(msg.(openflow.FlowMod).Instructions, r.Match)
		if err != nil || flow.FormatActions(back) != flow.FormatActions(r.Actions) {
			t.Errorf("%s: ovs-ofctl's instructions read as %s, %v; want %s", text, flow.FormatActions(back), err, flow.FormatActions(r.Actions))
		}
		if ourText, theirText := printed(openflow.Append(nil, 1, fm)), printed(sent); ourText != theirText || ourText == "" {
			t.Errorf("%s: ovs-ofctl ofp-print prints xswitch's FLOW_MOD as %q, its own as %q", text, ourText, theirText)
		}
	}
}

// TestPacketInCarriesTheConnection: a packet-in of a tracked frame gives
// its ct_state, ct_zone, ct_mark and ct_label beside the registers, as
// OVS's packet-ins do; ovs-ofctl ofp-print reads them so.
func TestPacketInCarriesTheConnection(t *testing.T) {
	ofctltest.Require(t)
	var k flow.Key
	k.InPort, k.Regs[0] = 3, 7
	k.CT = flow.CTFields{State: flow.CTTracked | flow.CTEstablished | flow.CTReply, Zone: 5, Mark: 0x2a}
	k.CT.Label[15] = 1
	msg := openflow.PacketIn{BufferID: openflow.NoBuffer, TotalLen: 60, Reason: 1, Match: packetInMatch(&k), Data: make([]byte, 60)}
	out, err := ofctltest.Run(t, "ofp-print", hex.EncodeToString(openflow.Append(nil, 1, msg)))
	if err != nil {
		t.Fatalf("ovs-ofctl ofp-print: %v: %s", err, out)
	}
	for _, want := range []string{"ct_state=est|rpl|trk", "ct_zone=5", "ct_mark=0x2a", "ct_label=0x1", "reg0=0x7", "in_port=3"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("ovs-ofctl prints the packet-in as %q, without %q", out, want)
		}
	}
}
