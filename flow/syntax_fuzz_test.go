package flow

import (
	"strings"
	"testing"
)

var syntaxFuzzSeeds = []string{
	"priority=100,ip,nw_dst=10.0.0.2,actions=output:2",
	"priority=0,actions=NORMAL",
	"cookie=0x5, idle_timeout=10, hard_timeout=20, priority=100,tcp,nw_dst=10.0.0.2,tp_dst=80 actions=output:2",
	"cookie=0x0, duration=3.205s, table=0, n_packets=10, n_bytes=980, idle_age=2, priority=100,ip,nw_dst=10.0.0.2 actions=output:2",
	"in_port=p1,dl_src=02:00:00:00:00:01,dl_dst=01:00:00:00:00:00/01:00:00:00:00:00,actions=FLOOD",
	"dl_vlan=10,dl_vlan_pcp=3,actions=strip_vlan,output:p2",
	"vlan_tci=0x0000,actions=mod_vlan_vid:20,output:3",
	"vlan_tci=0x1000/0x1000,actions=push_vlan:0x88a8,in_port",
	"arp,arp_op=1,arp_spa=10.0.0.0/8,arp_tpa=10.0.0.1,actions=ALL",
	"icmp,icmp_type=8,icmp_code=0,nw_tos=184,nw_ttl=64,actions=dec_ttl,output:1",
	"udp,nw_src=10.0.0.0/255.0.255.0,tp_dst=0x50/0xfff0,actions=mod_tp_dst:53,mod_nw_dst:10.0.0.9",
	"tcp6,ipv6_src=2001:db8::/32,ipv6_dst=::1,tp_src=22,actions=set_field:2222->tcp_src",
	"icmp6,icmp_type=135,ip_frag=no,actions=set_field:02:00:00:00:00:02->eth_dst",
	"ipv6,ip_dscp=46,nw_ecn=1,dl_vlan=9,actions=set_field:0x1005->vlan_vid",
	"dl_type=0x88cc actions=",
	"ip ip_frag=later nw_proto=47 actions=drop",
	"table=3,reg0=0x5/0xff,metadata=0x1,actions=load:0x3->NXM_NX_REG1[0..7],move:reg0[0..15]->reg2[16..31],resubmit(2,4),goto_table:7",
	"in_port=LOCAL,actions=resubmit:3,output(port=2,max_len=64),clear_actions,write_actions(mod_dl_dst:02:00:00:00:00:09,output:LOCAL),write_metadata:0x1/0xff",
	"ip,actions=set_field:10.0.0.0/255.0.0.0->ip_dst,set_field:0x5/0xf->reg3,mod_nw_tos:184,mod_nw_ecn:1,mod_nw_ttl:9,mod_vlan_pcp:2",
	"in_port=CONTROLLER,actions=controller(reason=invalid_ttl,max_len=5,id=3),CONTROLLER:64,TABLE,write_actions(CONTROLLER)",
	"send_flow_rem no_byte_counts idle_timeout=5 no_packet_counts priority=5 ip actions=NORMAL",
	"dl_vlan=5,actions=push_vlan:0x88a8,set_field:0x1201/0xefff->vlan_tci,move:dl_vlan_pcp[]->reg0[0..2],load:1->dl_vlan[3]",
	"ct_state=+trk+est-new,ct_zone=5,ct_mark=0x1/0xff,ct_label=0x1/0x1,ip,actions=ct(commit,zone=NXM_NX_REG0[0..15],table=3," +
		"nat(src=10.0.0.1-10.0.0.9:1000-2000,persistent,random),exec(set_field:1->ct_mark,set_field:0x5/0xf->ct_label,move:reg1[]->ct_mark[])),ct_clear",
	"ct_state=est|trk,ct_nw_proto=6,ct_nw_src=10.0.0.0/8,ct_tp_dst=0x50/0xfff0,ip,actions=ct(table=1,nat),move:ct_nw_dst[]->reg2[]",
	"tcp6,ct_state=0x22/0x33,ct_nw_proto=6,ct_ipv6_dst=fe80::/64,actions=ct(commit,force,alg=ftp,nat(dst=[fe80::1]-[fe80::2]:80),exec(load:1->ct_label[127]))",
}

// FuzzParseRule checks that ParseRule never panics and that every rule it
// accepts survives FormatRule and FormatDumpLine unchanged.
func FuzzParseRule(f *testing.F) {
	for _, s := range syntaxFuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s, testPorts)
		if err != nil {
			return
		}
		if err := ruleRoundTrips(r); err != nil {
			t.Fatalf("ParseRule(%q): %v", s, err)
		}
	})
}

// FuzzParseFilter checks the same for matches without actions.
func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{"", "tcp,tp_dst=80", "priority=5,in_port=1", "cookie=0x5/-1", "arp,arp_tpa=10.0.0.1/24", "out_port=2", "ip,out_port=NORMAL"} {
		f.Add(s)
	}
	for _, s := range syntaxFuzzSeeds {
		match, _, _ := strings.Cut(s, "actions")
		f.Add(match)
	}
	f.Fuzz(func(t *testing.T, s string) {
		filter, err := ParseFilter(s, testPorts)
		if err != nil {
			return
		}
		text := filterText(filter)
		back, err := ParseFilter(text, testPorts)
		if err != nil || back != filter {
			t.Fatalf("ParseFilter(%q) = %+v; ParseFilter(%q) = %+v, %v", s, filter, text, back, err)
		}
	})
}

// TestSyntaxFuzzSeedsParse keeps the seeds useful: each must be a valid flow.
func TestSyntaxFuzzSeedsParse(t *testing.T) {
	for _, s := range syntaxFuzzSeeds {
		if _, err := ParseRule(s, testPorts); err != nil {
			t.Errorf("seed %q: %v", s, err)
		}
	}
}
