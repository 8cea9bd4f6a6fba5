package flow

import "testing"

func withCT(set func(k, m *CTFields)) func(k, m *Key) {
	return func(k, m *Key) { set(&k.CT, &m.CT) }
}

func ctState(v, mask uint8) func(k, m *Key) {
	return withCT(func(k, m *CTFields) { k.State, m.State = v, mask })
}

// TestCTMatchSyntax: the ct_ fields read and print as ovs-ofctl reads and
// prints them (the corpus checks the meaning against ovs-ofctl itself).
func TestCTMatchSyntax(t *testing.T) {
	est := ctState(CTEstablished, CTEstablished)
	tests := []struct {
		in        string
		want      Match
		canonical string
	}{
		{"ct_state=+trk+est-new", matchOf(ctState(CTTracked|CTEstablished, CTTracked|CTEstablished|CTNew)), "ct_state=-new+est+trk"},
		{"ct_state=-trk", matchOf(ctState(0, CTTracked)), "ct_state=-trk"},
		{"ct_state=+snat+dnat+inv+rpl+rel", matchOf(ctState(CTSrcNAT|CTDstNAT|CTInvalid|CTReply|CTRelated, CTSrcNAT|CTDstNAT|CTInvalid|CTReply|CTRelated)),
			"ct_state=+rel+rpl+inv+snat+dnat"},
		{"ct_state=trk|est", matchOf(ctState(CTTracked|CTEstablished, 0xff)), "ct_state=est|trk"},
		{"ct_state=est|0x20|new", matchOf(ctState(CTTracked|CTEstablished|CTNew, 0xff)), "ct_state=new|est|trk"},
		{"ct_state=trk|", matchOf(ctState(CTTracked, 0xff)), "ct_state=trk"},
		{"ct_state=0", matchOf(ctState(0, 0xff)), "ct_state=0"},
		{"ct_state=0x20", matchOf(ctState(CTTracked, 0xff)), "ct_state=trk"},
		{"ct_state=0x21/0x23", matchOf(ctState(CTTracked|CTNew, 0x23)), "ct_state=+new-est+trk"},
		{"ct_state=0xff/0xff", matchOf(ctState(0xff, 0xff)), "ct_state=new|est|rel|rpl|inv|trk|snat|dnat"},
		{"ct_state=0/0", Match{}, ""},
		{"ct_zone=0x10", matchOf(withCT(func(k, m *CTFields) { k.Zone, m.Zone = 16, 0xffff })), "ct_zone=16"},
		{"ct_mark=16", matchOf(withCT(func(k, m *CTFields) { k.Mark, m.Mark = 16, 0xffffffff })), "ct_mark=0x10"},
		{"ct_mark=0x5/0xff", matchOf(withCT(func(k, m *CTFields) { k.Mark, m.Mark = 5, 0xff })), "ct_mark=0x5/0xff"},
		{"ct_label=0x1234567890abcdef1234567890abcdef", matchOf(withCT(func(k, m *CTFields) {
			k.Label = [16]byte{0x12, 0x34, 0x56, 0x78, 0x90, 0xab, 0xcd, 0xef, 0x12, 0x34, 0x56, 0x78, 0x90, 0xab, 0xcd, 0xef}
			m.Label = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		})), "ct_label=0x1234567890abcdef1234567890abcdef"},
		{"ct_label=0x10000000000000000/0x30000000000000000", matchOf(withCT(func(k, m *CTFields) {
			k.Label[7], m.Label[7] = 1, 3
		})), "ct_label=0x10000000000000000/0x30000000000000000"},
		{"ct_label=0", matchOf(withCT(func(k, m *CTFields) { m.Label = prefix16(128) })), "ct_label=0x0"},
		{"ip,ct_state=+est,ct_nw_src=10.0.0.0/8,ct_nw_dst=1.2.3.4", matchOf(isIPv4, est, withCT(func(k, m *CTFields) {
			k.Src, m.Src = [16]byte{10}, [16]byte{0xff}
			k.Dst, m.Dst = [16]byte{1, 2, 3, 4}, [16]byte{0xff, 0xff, 0xff, 0xff}
		})), "ip,ct_state=+est,ct_nw_src=10.0.0.0/8,ct_nw_dst=1.2.3.4"},
		{"ipv6,ct_state=+trk-inv,ct_ipv6_src=fe80::/64", matchOf(isIPv6, ctState(CTTracked, CTTracked|CTInvalid), withCT(func(k, m *CTFields) {
			k.Src, m.Src = [16]byte{0xfe, 0x80}, prefix16(64)
		})), "ipv6,ct_state=-inv+trk,ct_ipv6_src=fe80::/64"},
		{"ct_tp_dst=0x51/0xfff0,ct_nw_proto=6,ct_state=+rpl,ip,ct_tp_src=1024", matchOf(isIPv4, ctState(CTReply, CTReply), withCT(func(k, m *CTFields) {
			k.NwProto, m.NwProto = 6, 0xff
			k.TpSrc, m.TpSrc = 1024, 0xffff
			k.TpDst, m.TpDst = 0x50, 0xfff0
		})), "ip,ct_state=+rpl,ct_nw_proto=6,ct_tp_src=1024,ct_tp_dst=0x50/0xfff0"},
	}
	for _, tt := range tests {
		r, err := ParseRule(tt.in+",actions=drop", nil)
		if err != nil {
			t.Errorf("ParseRule(%q): %v", tt.in, err)
			continue
		}
		want := tt.want
		want.Mask.Table = 0xff
		if r.Match != want {
			t.Errorf("ParseRule(%q) matches\n%+v, want\n%+v", tt.in, r.Match.Key.CT, want.Key.CT)
		}
		if got := FormatMatch(r.Match); got != tt.canonical {
			t.Errorf("FormatMatch(ParseRule(%q)) = %q, want %q", tt.in, got, tt.canonical)
		}
		checkRuleRoundTrip(t, tt.in+",actions=drop")
	}
}

// TestCTMatchErrors: every refusal of the ct fields, in its words.
func TestCTMatchErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		// ct_state's flags.
		{"ct_state=+trk+trk", `ct_state: "+trk+trk" names trk twice`},
		{"ct_state=trk+est", `ct_state: unknown flag "trk+est" (want new, est, rel, rpl, inv, trk, snat, dnat)`},
		{"ct_state=+trk-est+", `ct_state: unknown flag "" (want new, est, rel, rpl, inv, trk, snat, dnat)`},
		{"ct_state=TRK", `ct_state: unknown flag "TRK" (want new, est, rel, rpl, inv, trk, snat, dnat)`},
		{"ct_state=0x100", `ct_state 0x100 out of range`},
		{"ct_state=0x21/0x1ff", `ct_state mask 0x1ff out of range`},
		// The other fields' values.
		{"ct_zone=65536", `ct_zone 65536 out of range`},
		{"ct_zone=5/0xff", `invalid ct_zone "5/0xff"`},
		{"ct_mark=0x100000000", `ct_mark 0x100000000 out of range`},
		{"ct_label=0x100000000000000000000000000000000", `ct_label 0x100000000000000000000000000000000 out of range`},
		{"ct_nw_proto=6/0xf", `invalid ct_nw_proto "6/0xf"`},
		// The original direction's fields need a connection the tracker
		// knows, of the frame's family, and the ports a protocol.
		{"ct_nw_src=10.0.0.1", `field "ct_nw_src" requires ip (dl_type=0x0800)`},
		{"ip,ct_state=+trk,ct_nw_src=10.0.0.1",
			`field "ct_nw_src" requires a connection the tracker knows (ct_state with +new, +est, +rel, +rpl, +snat or +dnat, or +trk-inv)`},
		{"ip,ct_state=-new,ct_nw_proto=6",
			`field "ct_nw_proto" requires a connection the tracker knows (ct_state with +new, +est, +rel, +rpl, +snat or +dnat, or +trk-inv)`},
		{"ipv6,ct_state=+est,ct_nw_dst=10.0.0.1", `field "ct_nw_dst" requires ip (dl_type=0x0800)`},
		{"ip,ct_state=+est,ct_ipv6_dst=::1", `field "ct_ipv6_dst" requires ipv6 (dl_type=0x86dd)`},
		{"ip,ct_state=+est,ct_nw_proto=0", `field "ct_nw_proto" requires a protocol other than 0, which Open vSwitch leaves out of a match`},
		{"ip,ct_state=+est,ct_tp_src=80", `field "ct_tp_src" requires ct_nw_proto, without which Open vSwitch leaves them out of a match`},
	}
	for _, tt := range tests {
		if _, err := ParseRule(tt.in+",actions=drop", nil); err == nil || err.Error() != tt.want {
			t.Errorf("ParseRule(%q): %v, want %s", tt.in, err, tt.want)
		}
	}
}
