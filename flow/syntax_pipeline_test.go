package flow

import (
	"reflect"
	"testing"
)

func TestParsePipelineActions(t *testing.T) {
	checkCanonical(t, []struct{ in, canonical string }{
		{"table=1,reg0=5,actions=load:0x3->NXM_NX_REG1[0..7],resubmit(,2)", "table=1, reg0=0x5 actions=load:0x3->reg1[0..7],resubmit(,2)"},
		{"actions=load:1->reg2[3]", "actions=load:0x1->reg2[3]"},
		{"actions=load:0xdeadbeef->reg3", "actions=load:0xdeadbeef->reg3[]"},
		{"actions=load:2->NXM_OF_IN_PORT[],resubmit(,1)", "actions=load:0x2->in_port[],resubmit(,1)"},
		{"actions=set_field:0x5/0xff->reg0", "actions=load:0x5->reg0[0..7]"},
		{"actions=set_field:7->metadata", "actions=set_field:0x7->metadata"},
		{"actions=move:NXM_NX_REG0[0..15]->NXM_NX_REG1[16..31]", "actions=move:reg0[0..15]->reg1[16..31]"},
		{"ip,actions=move:nw_src[]->reg0[]", "ip actions=move:nw_src[]->reg0[]"},
		{"actions=write_metadata:0x1/0xff,goto_table:3", "actions=write_metadata:0x1/0xff,goto_table:3"},
		{"actions=output:1,goto_table:254", "actions=output:1,goto_table:254"},
		{"actions=resubmit:2", "actions=resubmit:2"},
		{"actions=resubmit(3,4)", "actions=resubmit(3,4)"},
		{"actions=resubmit(in_port,4)", "actions=resubmit(,4)"},
		{"actions=output(port=2,max_len=100)", "actions=output(port=2,max_len=100)"},
		{"actions=mod_vlan_vid(5)", "actions=mod_vlan_vid:5"},
		{"in_port=LOCAL,actions=output:1", "in_port=LOCAL actions=output:1"},
		{"ip,actions=mod_nw_tos:184,mod_nw_ecn:1,mod_nw_ttl:9", "ip actions=mod_nw_tos:184,mod_nw_ecn:1,mod_nw_ttl:9"},
		{"ipv6,actions=set_field:46->ip_dscp,set_field:2->ip_ecn,set_field:1->nw_ttl", "ipv6 actions=mod_nw_tos:184,mod_nw_ecn:2,mod_nw_ttl:1"},
		{"actions=mod_vlan_pcp:5", "actions=mod_vlan_pcp:5"},
		{"actions=output:1,clear_actions,write_actions(mod_dl_dst:02:00:00:00:00:09,output:2),goto_table:1",
			"actions=output:1,clear_actions,write_actions(mod_dl_dst:02:00:00:00:00:09,output:2),goto_table:1"},
		{"actions=write_actions()", "actions=write_actions()"},
		{"dl_vlan=5,actions=set_field:3->vlan_pcp", "dl_vlan=5 actions=mod_vlan_pcp:3"},
		{"in_port=65534,actions=LOCAL", "in_port=LOCAL actions=output:LOCAL"},
		{"in_port=1,actions=output:local,resubmit(LOCAL,1)", "in_port=1 actions=output:LOCAL,resubmit(LOCAL,1)"},
		{"table=7,metadata=0x1/0xff,actions=goto_table:8", "table=7, metadata=0x1/0xff actions=goto_table:8"},
		// Loads and moves into header fields, and set_field to the header
		// fields that have no mod_ action.
		{"actions=load:0x1->NXM_OF_ETH_DST[0..23]", "actions=load:0x1->dl_dst[0..23]"},
		{"actions=move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[]", "actions=move:dl_src[]->dl_dst[]"},
		{"ip,actions=move:NXM_OF_IP_SRC[]->NXM_OF_IP_DST[],load:0x40->NXM_NX_IP_TTL[]", "ip actions=move:nw_src[]->nw_dst[],load:0x40->nw_ttl[]"},
		{"tcp,actions=move:NXM_OF_TCP_SRC[]->NXM_OF_TCP_DST[]", "tcp actions=move:tcp_src[]->tcp_dst[]"},
		{"actions=load:0x1005->NXM_OF_VLAN_TCI[]", "actions=load:0x1005->vlan_tci[]"},
		{"actions=set_field:0x1005->vlan_tci", "actions=set_field:0x1005->vlan_tci"},
		{"ipv6,actions=set_field:2001:db8::1->ipv6_src,set_field:2001:db8::2->ipv6_dst",
			"ipv6 actions=set_field:2001:db8::1->ipv6_src,set_field:2001:db8::2->ipv6_dst"},
		{"ipv6,actions=move:NXM_NX_IPV6_SRC[]->NXM_NX_IPV6_DST[]", "ipv6 actions=move:ipv6_src[]->ipv6_dst[]"},
		{"ipv6,actions=set_field:2001:db8::1/ffff:ffff::->ipv6_dst", "ipv6 actions=load:0x20010db8->ipv6_dst[96..127]"},
		{"ipv6,actions=load:0x20010db8000000000000000000000001->ipv6_src[]", "ipv6 actions=load:0x20010db8000000000000000000000001->ipv6_src[]"},
		// The bits named by the field Open vSwitch knows them by.
		{"tcp,actions=move:tp_src[]->reg0[0..15],load:1->tp_dst[0..3]", "tcp actions=move:tcp_src[]->reg0[0..15],load:0x1->tcp_dst[0..3]"},
		{"udp,actions=move:tp_src[]->reg0[0..15]", "udp actions=move:udp_src[]->reg0[0..15]"},
		{"dl_vlan=5,actions=move:dl_vlan_pcp[]->reg0[0..2],load:3->dl_vlan[]", "dl_vlan=5 actions=move:vlan_tci[13..15]->reg0[0..2],load:0x3->vlan_tci[0..11]"},
		{"dl_vlan=5,actions=load:7->OXM_OF_VLAN_VID[0..11]", "dl_vlan=5 actions=load:0x7->vlan_vid[0..11]"},
		{"dl_vlan=5,actions=load:0x1005->vlan_vid[]", "dl_vlan=5 actions=load:0x1005->vlan_tci[0..12]"},
	})
}

// checkCanonical checks that each flow parses, formats as its canonical
// text, and round-trips.
func checkCanonical(t *testing.T, flows []struct{ in, canonical string }) {
	t.Helper()
	for _, tt := range flows {
		r, err := ParseRule(tt.in, testPorts)
		if err != nil {
			t.Errorf("ParseRule(%q): %v", tt.in, err)
			continue
		}
		if got := FormatRule(r); got != tt.canonical {
			t.Errorf("FormatRule(ParseRule(%q)) = %q, want %q", tt.in, got, tt.canonical)
		}
		checkRuleRoundTrip(t, tt.in)
	}
}

// TestPipelineActionsOnTheKey checks what load, set_field, move and
// write_metadata do to a key against the arithmetic done by hand.
func TestPipelineActionsOnTheKey(t *testing.T) {
	r, err := ParseRule("ip,actions=load:0xab->reg0[8..15],set_field:0x5/0xf->reg1,move:reg0[8..15]->reg2[0..7],"+
		"move:nw_src[24..31]->reg3[0..7],load:7->in_port[],write_metadata:0xf0/0xff", nil)
	if err != nil {
		t.Fatal(err)
	}
	k := Key{Headers: Headers{InPort: 1, NwSrc: [4]byte{10, 1, 2, 3}}, Metadata: 0x1234}
	k.Regs = [NumRegs]uint32{0x11223344, 0xfffffff0}
	for i := range r.Actions {
		r.Actions[i].ApplyToKey(&k)
	}
	want := [4]uint32{0x1122ab44, 0xfffffff5, 0xab, 10}
	if [4]uint32(k.Regs[:4]) != want || k.InPort != 7 || k.Metadata != 0x12f0 {
		t.Errorf("regs %#x, in_port %d, metadata %#x; want regs %#x, in_port 7, metadata 0x12f0", k.Regs[:4], k.InPort, k.Metadata, want)
	}
}

// TestActionSetOrder: the action set runs copy_ttl_in, pop, push,
// copy_ttl_out, dec_ttl, the field sets, then the output, whatever the order they were written in, and a
// later write of a kind replaces an earlier one.
func TestActionSetOrder(t *testing.T) {
	var set ActionSet
	for _, text := range []string{
		"dl_vlan=5,actions=write_actions(output:1,mod_dl_src:02:00:00:00:00:01,strip_vlan)",
		"ip,actions=write_actions(NORMAL,dec_ttl,push_vlan:0x8100,mod_dl_src:02:00:00:00:00:02)",
	} {
		r, err := ParseRule(text, nil)
		if err != nil {
			t.Fatal(err)
		}
		written, _ := WrittenActions(r.Actions, 0)
		set.Write(written)
	}
	var got []Action
	set.Each(func(a Action) { got = append(got, a) })
	if want := "strip_vlan,push_vlan:0x8100,dec_ttl,mod_dl_src:02:00:00:00:00:02,NORMAL"; FormatActions(got) != want {
		t.Errorf("the action set runs %s, want %s", FormatActions(got), want)
	}
	set.Clear()
	set.Each(func(a Action) { t.Errorf("a cleared set runs %s", actionText(a)) })

	// The TTL copies: inwards before the pops, outwards after the pushes.
	r, err := ParseRule("mpls,actions=write_actions(output:2,copy_ttl_out,dec_mpls_ttl,push_mpls:0x8847,pop_mpls:0x8847,copy_ttl_in)", nil)
	if err != nil {
		t.Fatal(err)
	}
	written, _ := WrittenActions(r.Actions, 0)
	set.Write(written)
	got = got[:0]
	set.Each(func(a Action) { got = append(got, a) })
	if want := "copy_ttl_in,pop_mpls:0x8847,push_mpls:0x8847,copy_ttl_out,dec_mpls_ttl,output:2"; FormatActions(got) != want {
		t.Errorf("the action set runs %s, want %s", FormatActions(got), want)
	}
}

// TestParseMaskedSetField: a set_field of part of a field is the loads of
// the mask's runs of bits, as OpenFlow 1.3 carries it and ovs-ofctl
// prints it, so that no protocol reads the printed flow as a write of the
// whole field. A load and a set_field of the same bits are one action.
func TestParseMaskedSetField(t *testing.T) {
	checkCanonical(t, []struct{ in, canonical string }{
		{"ip,actions=set_field:192.168.0.0/255.255.0.0->ip_dst", "ip actions=load:0xc0a8->nw_dst[16..31]"},
		{"actions=set_field:00:00:00:00:00:77/00:00:00:00:00:ff->eth_src", "actions=load:0x77->dl_src[0..7]"},
		{"udp,actions=set_field:0x2200/0xff00->udp_dst", "udp actions=load:0x22->udp_dst[8..15]"},
		{"ip,actions=set_field:10.0.0.9/32->ip_src", "ip actions=mod_nw_src:10.0.0.9"}, // the whole field
		// OVS's ofproto-dpif.at, "Multi-VLAN actions": the PCP is kept.
		{"in_port=1,vlan_tci=0x1101/0x1fff,actions=push_vlan:0x8100,set_field:0x1201/0x1fff->vlan_tci,output:2",
			"in_port=1,dl_vlan=257 actions=push_vlan:0x8100,load:0x1201->vlan_tci[0..12],output:2"},
		{"actions=set_field:0x1201/0xefff->vlan_tci", "actions=load:0x201->vlan_tci[0..11],load:0x0->vlan_tci[13..15]"},
		{"actions=set_field:01:00:01:00:00:00/ff:00:ff:00:00:00->eth_dst", "actions=load:0x1->dl_dst[24..31],load:0x1->dl_dst[40..47]"},
		{"actions=set_field:0x10/0xf0f0->reg3", "actions=load:0x1->reg3[4..7],load:0x0->reg3[12..15]"},
		{"actions=set_field:0/0->reg4,output:1", "actions=output:1"}, // no bit: no load, as in OVS
		{"udp,actions=load:1->tp_src[4..7]", "udp actions=load:0x1->udp_src[4..7]"},
		// An action set holds one write of a header: the loads of two
		// runs of its bits are that one.
		{"actions=write_actions(set_field:01:00:01:00:00:00/ff:00:ff:00:00:00->eth_dst)", "actions=write_actions(load:0x1->dl_dst[24..31],load:0x1->dl_dst[40..47])"},
	})
	for _, tt := range []struct{ a, b string }{
		{"ip,actions=set_field:192.168.0.0/255.255.0.0->ip_dst", "ip,actions=load:0xc0a8->NXM_OF_IP_DST[16..31]"},
		{"tcp,actions=set_field:0x10/0xf0->tcp_src", "tcp,actions=load:1->NXM_OF_TCP_SRC[4..7]"},
		{"actions=set_field:0x1201/0x1fff->vlan_tci", "actions=load:0x1201->NXM_OF_VLAN_TCI[0..12]"},
	} {
		a, errA := ParseRule(tt.a, nil)
		b, errB := ParseRule(tt.b, nil)
		if errA != nil || errB != nil || !reflect.DeepEqual(a, b) {
			t.Errorf("%s and %s: %+v (%v) and %+v (%v), want the same rule", tt.a, tt.b, a, errA, b, errB)
		}
	}
	for _, tt := range []struct{ flow, err string }{
		{"ip,actions=set_field:5/0xf->nw_ttl", "set_field: nw_ttl takes no mask"},
		{"udp,actions=set_field:0x10/0xf0->tp_src", "set_field to tp_src requires a tcp match"}, // as OVS reads tp_src there
		{"actions=write_actions(set_field:01:00:00:00:00:00/ff:00:00:00:00:00->eth_dst,mod_dl_dst:02:00:00:00:00:01)",
			"write_actions: an action set holds one action of each kind, and mod_dl_dst:02:00:00:00:00:01 is the second of its kind"},
	} {
		if _, err := ParseRule(tt.flow, nil); err == nil || err.Error() != tt.err {
			t.Errorf("%s: %v, want %q", tt.flow, err, tt.err)
		}
	}
}
