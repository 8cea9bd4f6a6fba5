package flow

import (
	"net/netip"
	"reflect"
	"testing"
)

// TestCTActionSyntax: ct() and ct_clear read into what they mean and
// print as ovs-ofctl prints them.
func TestCTActionSyntax(t *testing.T) {
	reg0, ctMark, ctLabel := fieldsByName["reg0"], fieldsByName["ct_mark"], fieldsByName["ct_label"]
	tests := []struct {
		in        string
		want      Conntrack
		canonical string
	}{
		{"ip,actions=ct", Conntrack{Table: CTNoTable}, "ct()"},
		{"ip,actions=ct()", Conntrack{Table: CTNoTable}, "ct()"},
		{"ip,actions=ct:commit", Conntrack{Commit: true, Table: CTNoTable}, "ct(commit)"},
		{"ip,actions=ct(zone=5,table=1)", Conntrack{Zone: 5, Table: 1}, "ct(table=1,zone=5)"},
		{"ip,actions=ct(zone=0,table=0)", Conntrack{Table: 0}, "ct(table=0)"},
		{"ip,actions=ct(force,commit,zone:0x10)", Conntrack{Commit: true, Force: true, Zone: 16, Table: CTNoTable}, "ct(commit,force,zone=16)"},
		{"ip,actions=ct(zone=1,zone=2,table=1,table=2)", Conntrack{Zone: 2, Table: 2}, "ct(table=2,zone=2)"},
		{"ip,actions=ct(zone=NXM_NX_REG0[16..31])", Conntrack{ZoneSrc: reg0, ZoneOfs: 16, Table: CTNoTable}, "ct(zone=reg0[16..31])"},
		{"ip,actions=ct(zone=7,zone=NXM_NX_REG0[0..15],commit)", Conntrack{Commit: true, ZoneSrc: reg0, Table: CTNoTable}, "ct(commit,zone=reg0[0..15])"},
		{"tcp,actions=ct(alg=ftp,commit)", Conntrack{Commit: true, Alg: ALGFTP, Table: CTNoTable}, "ct(commit,alg=ftp)"},
		{"udp6,actions=ct(commit,alg=tftp)", Conntrack{Commit: true, Alg: ALGTFTP, Table: CTNoTable}, "ct(commit,alg=tftp)"},
		{"ip,actions=ct(nat,table=1)", Conntrack{Table: 1, NAT: &NAT{}}, "ct(table=1,nat)"},
		{"ip,actions=ct(commit,nat(src))", Conntrack{Commit: true, Table: CTNoTable, NAT: &NAT{Src: true}}, "ct(commit,nat(src))"},
		{"ip,actions=ct(commit,nat(dst,persistent,random))", Conntrack{Commit: true, Table: CTNoTable, NAT: &NAT{Dst: true, Persistent: true, Random: true}},
			"ct(commit,nat(dst,persistent,random))"},
		{"ip,actions=ct(commit,nat(src=0.0.0.0))", Conntrack{Commit: true, Table: CTNoTable, NAT: &NAT{Src: true}}, "ct(commit,nat(src))"},
		{"ip,actions=ct(commit,nat(src=10.0.0.1-10.0.0.1:80-80))", Conntrack{Commit: true, Table: CTNoTable,
			NAT: &NAT{Src: true, Min: netip.MustParseAddr("10.0.0.1"), MinPort: 80}}, "ct(commit,nat(src=10.0.0.1:80))"},
		{"ip,actions=ct(commit,nat(src=10.0.0.1:0))", Conntrack{Commit: true, Table: CTNoTable,
			NAT: &NAT{Src: true, Min: netip.MustParseAddr("10.0.0.1")}}, "ct(commit,nat(src=10.0.0.1))"},
		{"ip,actions=ct(commit,nat(dst=10.0.0.128-10.0.0.254:1000-2000,hash))", Conntrack{Commit: true, Table: CTNoTable,
			NAT: &NAT{Dst: true, Min: netip.MustParseAddr("10.0.0.128"), Max: netip.MustParseAddr("10.0.0.254"), MinPort: 1000, MaxPort: 2000, Hash: true}},
			"ct(commit,nat(dst=10.0.0.128-10.0.0.254:1000-2000,hash))"},
		{"ipv6,actions=ct(commit,nat(src=[fe80::1]-[fe80::2]:255-4096,random))", Conntrack{Commit: true, Table: CTNoTable,
			NAT: &NAT{Src: true, Min: netip.MustParseAddr("fe80::1"), Max: netip.MustParseAddr("fe80::2"), MinPort: 255, MaxPort: 4096, Random: true}},
			"ct(commit,nat(src=[fe80::1]-[fe80::2]:255-4096,random))"},
		{"ipv6,actions=ct(commit,nat(src=fe80::1:80))", Conntrack{Commit: true, Table: CTNoTable,
			NAT: &NAT{Src: true, Min: netip.MustParseAddr("fe80::1:80")}}, "ct(commit,nat(src=fe80::1:80))"},
		{"ipv6,actions=ct(commit,nat(dst=[fe80::1]))", Conntrack{Commit: true, Table: CTNoTable,
			NAT: &NAT{Dst: true, Min: netip.MustParseAddr("fe80::1")}}, "ct(commit,nat(dst=fe80::1))"},
		{"ip,actions=ct(commit,exec(nat(src),set_field:1->ct_mark))", Conntrack{Commit: true, Table: CTNoTable, NAT: &NAT{Src: true},
			Exec: []Action{{Type: ActSetField, Field: ctMark, Imm: Value{Lo: 1}, Mask: Ones(32)}}},
			"ct(commit,nat(src),exec(set_field:0x1->ct_mark))"},
		{"ip,actions=ct(commit,exec(set_field:0x5/0xf->ct_label),exec(load:1->NXM_NX_CT_MARK[3],move:reg0[]->ct_label[96..127]))",
			Conntrack{Commit: true, Table: CTNoTable, Exec: []Action{
				{Type: ActLoad, Field: ctLabel, Imm: Value{Lo: 5}, Mask: Value{Lo: 0xf}, NBits: 4},
				{Type: ActLoad, Field: ctMark, Imm: Value{Lo: 8}, Mask: Value{Lo: 8}, Ofs: 3, NBits: 1},
				{Type: ActMove, Src: reg0, Field: ctLabel, Ofs: 96, NBits: 32},
			}},
			"ct(commit,exec(load:0x5->ct_label[0..3],load:0x1->ct_mark[3],move:reg0[]->ct_label[96..127]))"},
	}
	for _, tt := range tests {
		r, err := ParseRule(tt.in, nil)
		if err != nil {
			t.Errorf("ParseRule(%q): %v", tt.in, err)
			continue
		}
		if len(r.Actions) != 1 || r.Actions[0].Type != ActCT || !reflect.DeepEqual(*r.Actions[0].CT, tt.want) {
			t.Errorf("ParseRule(%q) has actions %+v, want ct %+v", tt.in, r.Actions, tt.want)
		}
		if got := FormatActions(r.Actions); got != tt.canonical {
			t.Errorf("FormatActions(ParseRule(%q)) = %q, want %q", tt.in, got, tt.canonical)
		}
		checkRuleRoundTrip(t, tt.in)
	}
	r, err := ParseRule("ip,actions=ct(commit),ct_clear,output:1", nil)
	if err != nil || len(r.Actions) != 3 || r.Actions[1] != (Action{Type: ActCTClear}) || FormatActions(r.Actions) != "ct(commit),ct_clear,output:1" {
		t.Errorf("ct_clear: %+v, %v", r.Actions, err)
	}
}

// TestCTActionErrors: every refusal of ct() and ct_clear, in its words
// (Open vSwitch's, where ovs-ofctl has words for it).
func TestCTActionErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		// Where actions may be.
		{"ip,actions=set_field:1->ct_mark", `ct_mark: cannot set CT fields outside of ct action`},
		{"ip,actions=load:1->NXM_NX_CT_LABEL[0..3]", `ct_label: cannot set CT fields outside of ct action`},
		{"ip,actions=move:reg0[]->ct_mark[]", `ct_mark: cannot set CT fields outside of ct action`},
		{"ip,actions=nat", `cannot have NAT action outside of "ct" action: write ct(nat...)`},
		{"ip,actions=ct(commit,exec(output:1))", `ct action doesn't support nested action output`},
		{"ip,actions=ct(commit,exec(ct_clear))", `ct action doesn't support nested action ct_clear`},
		{"ip,actions=ct(commit,exec(ct(commit)))", `ct action doesn't support nested action ct`},
		{"ip,actions=ct(commit,exec(set_field:1->reg0))", `ct action doesn't support nested modification of reg0`},
		{"ip,actions=ct(commit,exec(set_field:10.0.0.1->ip_src))", `ct action doesn't support nested modification of nw_src`},
		{"ip,actions=ct(commit,exec(move:ct_mark[]->reg0[]))", `ct action doesn't support nested modification of reg0`},
		{"ip,actions=ct(commit,exec(set_field:1->ct_zone))", `ct_zone is read-only`},
		{"ip,actions=ct(commit,exec(bogus))", `unknown action "bogus"`},
		{"ip,actions=ct(commit,exec(load:1->NXM_NX_CT_STATE[]))", `load: field ct_state cannot be written`},
		{"ip,actions=ct(commit,exec(nat,nat))", `ct: nat given twice`},
		{"ip,actions=ct(commit,nat,exec(nat))", `ct: nat given twice`},
		{"ip,actions=write_actions(ct(commit))", `write_actions: ct(commit) cannot go into an action set (it holds outputs and header changes)`},
		{"ip,actions=write_actions(ct_clear)", `write_actions: ct_clear cannot go into an action set (it holds outputs and header changes)`},
		{"ip,actions=ct_clear(1)", `action "ct_clear" takes no argument`},
		// ct's arguments.
		{"ip,actions=ct(force)", `ct: "force" flag requires "commit" flag`},
		{"ip,actions=ct(exec(set_field:1->ct_mark))", `ct: exec() and a nat with arguments require commit`},
		{"ip,actions=ct(nat(src))", `ct: exec() and a nat with arguments require commit`},
		{"ip,actions=ct(commit=1)", `ct: commit takes no value`},
		{"ip,actions=ct(force:yes,commit)", `ct: force takes no value`},
		{"ip,actions=ct(table)", `ct: table needs a value (table=VALUE)`},
		{"ip,actions=ct(zone)", `ct: zone needs a value (zone=VALUE)`},
		{"ip,actions=ct(alg)", `ct: alg needs a value (alg=VALUE)`},
		{"ip,actions=ct(table=255)", `ct: invalid table 0xff`},
		{"ip,actions=ct(table=256)", `ct table 256 out of range`},
		{"ip,actions=ct(table=0x10)", `invalid ct table "0x10" (table numbers are decimal)`},
		{"ip,actions=ct(zone=65536)", `ct zone 65536 out of range`},
		{"ip,actions=ct(zone=NXM_NX_REG0[0..7])", `ct: zone NXM_NX_REG0[0..7]: 8 bits, and a zone is 16`},
		{"ip,actions=ct(zone=bogus[0..15])", `ct: zone: unknown field "bogus"`},
		{"ip,actions=ct(alg=21)", `ct: invalid conntrack helper "21" (want ftp or tftp)`},
		{"ip,actions=ct(bogus)", `invalid argument to "ct" action: "bogus" (want commit, force, table, zone, alg, nat or exec)`},
		{"ip,actions=ct(commit,nat(src),nat(dst))", `ct: nat given twice`},
		{"ip,actions=ct(nat(src)x)", `ct: action "nat(src)x": text after its closing parenthesis`},
		{"ip,actions=ct(commit,exec(nat(src)y))", `action "nat(src)y": text after its closing parenthesis`},
		{"ip,actions=ct(commit,nat(src(x)y))", `nat: action "src(x)y": text after its closing parenthesis`},
		{"ip,actions=ct(commit)x", `action "ct(commit)x": text after its closing parenthesis`},
		{"ip,actions=ct(commit,exec(output:1)", `unbalanced parentheses in actions "ct(commit,exec(output:1)"`},
		// What ct needs of the match.
		{"actions=ct()", `ct requires an ip or ipv6 match`},
		{"arp,actions=ct(commit)", `ct requires an ip or ipv6 match`},
		{"ip,ct_state=+trk+inv,actions=ct(commit)", `ct requires a match that is not on invalid connections (ct_state=+inv) to commit`},
		{"ip,actions=ct(commit,alg=ftp)", `ct requires a tcp match`},
		{"tcp,actions=ct(commit,alg=tftp)", `ct requires a udp match`},
		{"ip,actions=ct(zone=NXM_OF_TCP_SRC[])", `ct requires tcp (nw_proto=6)`},
		{"ipv6,actions=ct(commit,nat(src=10.0.0.1))", `ct requires an IPv4 match (ip)`},
		{"ip,actions=ct(commit,nat(dst=fe80::1))", `ct requires an IPv6 match (ipv6)`},
		{"ipv6,actions=ct(commit,exec(move:ct_nw_src[]->ct_mark[]))", `ct requires ip (dl_type=0x0800)`},
		// nat's arguments.
		{"ip,actions=ct(commit,nat(bogus))", `invalid key "bogus" in "nat" argument (want src, dst, persistent, hash or random)`},
		{"ip,actions=ct(commit,nat(src,random=1))", `nat: random takes no value`},
		{"ip,actions=ct(commit,nat(src,dst))", `nat: may only specify one of "src" or "dst"`},
		{"ip,actions=ct(commit,nat(persistent))", `nat: flags allowed only with "src" or "dst"`},
		{"ip,actions=ct(commit,nat(src,hash,random))", `nat: both "hash" and "random" are not allowed`},
		{"ip,actions=ct(commit,nat(src=10.0.0.9-10.0.0.1))", `invalid nat range "10.0.0.9-10.0.0.1"`},
		{"ip,actions=ct(commit,nat(src=10.0.0.1-fe80::1))", `invalid nat range "10.0.0.1-fe80::1"`},
		{"ip,actions=ct(commit,nat(src=10.0.0.1:90-80))", `invalid nat range "10.0.0.1:90-80"`},
		{"ip,actions=ct(commit,nat(src=10.0.0.1:0-80))", `invalid nat range "10.0.0.1:0-80"`},
		{"ip,actions=ct(commit,nat(src=10.0.0.1:70000))", `invalid nat range "10.0.0.1:70000"`},
		{"ip,actions=ct(commit,nat(src=0.0.0.0:80))", `invalid nat range "0.0.0.0:80"`},
		{"ip,actions=ct(commit,nat(src=10.0.0.1x))", `garbage (x) after nat range "10.0.0.1x"`},
		{"ip,actions=ct(commit,nat(src=:80))", `garbage (:80) after nat range ":80"`},
		{"ipv6,actions=ct(commit,nat(src=[fe80::1))", `garbage ([fe80::1) after nat range "[fe80::1"`},
	}
	for _, tt := range tests {
		if _, err := ParseRule(tt.in, nil); err == nil || err.Error() != tt.want {
			t.Errorf("ParseRule(%q): %v, want %s", tt.in, err, tt.want)
		}
	}
}

// TestCTActionChecks: what CTAction refuses of arguments that the flow
// syntax cannot write but OpenFlow can carry.
func TestCTActionChecks(t *testing.T) {
	reg0, ctMark := fieldsByName["reg0"], fieldsByName["ct_mark"]
	v4 := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	tests := []struct {
		c    Conntrack
		want string
	}{
		{Conntrack{ZoneSrc: reg0, ZoneOfs: 17}, `ct: zone reg0[17..32]: a zone is 16 bits of a field`},
		{Conntrack{Alg: 22}, `ct: no gateway for alg 22 (ftp and tftp have one)`},
		{Conntrack{Commit: true, Exec: []Action{{Type: ActOutput, Port: 1}}}, `ct action doesn't support nested action output`},
		{Conntrack{Commit: true, Exec: []Action{{Type: ActLoad, Field: reg0, Mask: Ones(32), NBits: 32}}}, `ct action doesn't support nested modification of reg0`},
		{Conntrack{Commit: true, NAT: &NAT{Src: true, Dst: true}}, `nat: may only specify one of "src" or "dst"`},
		{Conntrack{Commit: true, NAT: &NAT{Random: true}}, `nat: flags allowed only with "src" or "dst"`},
		{Conntrack{Commit: true, NAT: &NAT{Min: v4("10.0.0.1")}}, `nat: range allowed only with "src" or "dst"`},
		{Conntrack{Commit: true, NAT: &NAT{Src: true, Hash: true, Random: true}}, `nat: both "hash" and "random" are not allowed`},
		{Conntrack{Commit: true, NAT: &NAT{Src: true, Min: v4("0.0.0.0")}}, `nat: 0.0.0.0 is no address to translate to`},
		{Conntrack{Commit: true, NAT: &NAT{Src: true, Min: v4("10.0.0.2"), Max: v4("10.0.0.1")}}, `nat: invalid range 10.0.0.2-10.0.0.1`},
		{Conntrack{Commit: true, NAT: &NAT{Src: true, Min: v4("10.0.0.2"), Max: v4("fe80::1")}}, `nat: invalid range 10.0.0.2-fe80::1`},
		{Conntrack{Commit: true, NAT: &NAT{Src: true, Max: v4("10.0.0.1")}}, `nat: invalid range invalid IP-10.0.0.1`},
		{Conntrack{Commit: true, NAT: &NAT{Src: true, Min: v4("10.0.0.1"), MinPort: 9, MaxPort: 8}}, `nat: invalid port range 9-8`},
		{Conntrack{Commit: true, NAT: &NAT{Src: true, Min: v4("10.0.0.1"), MaxPort: 8}}, `nat: invalid port range 0-8`},
		{Conntrack{Commit: true, NAT: &NAT{Src: true, MinPort: 8}}, `nat: a port range needs an address range`},
	}
	for _, tt := range tests {
		if _, _, err := CTAction(&tt.c); err == nil || err.Error() != tt.want {
			t.Errorf("CTAction(%+v): %v, want %s", tt.c, err, tt.want)
		}
	}
	c := &Conntrack{Commit: true, Table: 3, Exec: []Action{{Type: ActSetField, Field: ctMark, Imm: Value{Lo: 1}, Mask: Ones(32)}}}
	if a, needs, err := CTAction(c); err != nil || a.Type != ActCT || a.CT != c || needs == nil || needs.Holds(&Match{}) {
		t.Errorf("CTAction(%+v) = %+v, %v, %v; want the action, needing an IP match", c, a, needs, err)
	}
}

// TestCTActionsUntrackTheKey: after ct() and ct_clear, the frame goes on
// untracked, its connection's fields zero, as in OVS.
func TestCTActionsUntrackTheKey(t *testing.T) {
	for _, text := range []string{"ip,actions=ct(commit,table=1)", "ip,actions=ct_clear"} {
		r, err := ParseRule(text, nil)
		if err != nil {
			t.Fatal(err)
		}
		k := Key{CT: CTFields{State: CTTracked | CTEstablished, Zone: 3, Mark: 5, NwProto: 6, TpDst: 80, Label: [16]byte{15: 1}, Src: [16]byte{10, 0, 0, 1}}}
		k.DlType = EtherTypeIPv4
		if !r.Actions[0].ApplyToKey(&k) || k.CT != (CTFields{}) || k.DlType != EtherTypeIPv4 {
			t.Errorf("%s leaves the key %+v", text, k)
		}
	}
}
