package flow

import "testing"

func TestParsePipelineActions(t *testing.T) {
	checkCanonical(t, []struct{ in, canonical string }{
		{"table=1,reg0=5,actions=load:0x3->NXM_NX_REG1[0..7],resubmit(,2)", "table=1, reg0=0x5 actions=load:0x3->reg1[0..7],resubmit(,2)"},
		{"actions=load:1->reg2[3]", "actions=load:0x1->reg2[3]"},
		{"actions=load:0xdeadbeef->reg3", "actions=load:0xdeadbeef->reg3[]"},
		{"actions=load:2->NXM_OF_IN_PORT[],resubmit(,1)", "actions=load:0x2->in_port[],resubmit(,1)"},
		{"actions=set_field:0x5/0xff->reg0", "actions=set_field:0x5/0xff->reg0"},
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
		{"ipv6,actions=set_field:2001:db8::1/ffff:ffff::->ipv6_dst", "ipv6 actions=set_field:2001:db8::/32->ipv6_dst"},
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

// TestActionSetOrder: the action set runs pop, push, dec_ttl, the field
// sets, then the output, whatever the order they were written in, and a
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
}

func TestParseMaskedSetField(t *testing.T) {
	checkCanonical(t, []struct{ in, canonical string }{
		{"ip,actions=set_field:192.168.0.0/255.255.0.0->ip_dst", "ip actions=set_field:192.168.0.0/16->nw_dst"},
		{"actions=set_field:00:00:00:00:00:77/00:00:00:00:00:ff->eth_src", "actions=set_field:00:00:00:00:00:77/00:00:00:00:00:ff->dl_src"},
		{"udp,actions=set_field:0x2200/0xff00->udp_dst", "udp actions=set_field:0x2200/0xff00->udp_dst"},
		{"ip,actions=set_field:10.0.0.9/32->ip_src", "ip actions=mod_nw_src:10.0.0.9"}, // the whole field
	})
	if _, err := ParseRule("ip,actions=set_field:5/0xf->nw_ttl", nil); err == nil || err.Error() != "set_field: nw_ttl takes no mask" {
		t.Errorf("a masked set_field to nw_ttl: %v", err)
	}
}
