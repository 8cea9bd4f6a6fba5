package flow

import "testing"

// TestMPLSActionsOnTheKey runs the MPLS actions on keys, as OVS's
// flow_push_mpls, flow_pop_mpls and the set and dec_mpls_ttl actions of
// its translation change its flow.
func TestMPLSActionsOnTheKey(t *testing.T) {
	ip := exIPv4Key(ProtoTCP, 43210, 443) // TOS 0xb9: DSCP 46, whose low 3 bits are 6; TTL 64
	ip.NwTTL = 9
	ip6 := exIPv6Key(ProtoUDP, 5353, 53) // traffic class 0x2a: DSCP 10; hop limit 63
	nd := exIPv6Key(ProtoICMPv6, 135, 0)
	nd.NDTarget, nd.ArpSHA = [16]byte(exIP6B), [6]byte(exMACA)
	noTarget := nd
	noTarget.NDTarget = [16]byte{}
	arp := exL2Key(EtherTypeARP)
	arp.NwProto, arp.NwSrc, arp.ArpSHA = 1, [4]byte(exIP4A), [6]byte(exMACA)
	mpls := func(k Key, dlType uint16, stack ...uint32) Key {
		if !k.IsMPLS() {
			k.UnderMPLS = uint32(k.DlType)
		}
		k.DlType, k.NDTarget = dlType, [16]byte{}
		for i := range MaxMPLSLabels {
			k.setMPLSEntry(i, 0)
			if i < len(stack) {
				k.setMPLSEntry(i, stack[i])
			}
		}
		return k
	}
	const bos = 1 << 8
	lse := func(label, tc, ttl uint32) uint32 { return label<<12 | tc<<9 | ttl }
	ttl0 := ip
	ttl0.NwTTL = 0
	deep := mpls(exL2Key(0), EtherTypeMPLS, lse(1, 0, 1), lse(2, 0, 2), lse(3, 0, 3))
	tests := []struct {
		name    string
		in      Key
		actions []Action
		want    Key
		drop    bool
	}{
		{"push onto ipv4: null label, the DSCP's low bits, the TTL", ip, []Action{{Type: ActPushMPLS, Value: EtherTypeMPLS}},
			mpls(ip, EtherTypeMPLS, lse(0, 6, 9)|bos), false},
		{"push onto ipv6: the IPv6 null label", ip6, []Action{{Type: ActPushMPLS, Value: EtherTypeMPLSMulticast}},
			mpls(ip6, EtherTypeMPLSMulticast, lse(2, 2, 63)|bos), false},
		{"push onto a TTL of 0: 64", ttl0, []Action{{Type: ActPushMPLS, Value: EtherTypeMPLS}},
			mpls(ttl0, EtherTypeMPLS, lse(0, 6, 64)|bos), false},
		{"push onto arp: TC 0, TTL 64", arp, []Action{{Type: ActPushMPLS, Value: EtherTypeMPLS}},
			mpls(arp, EtherTypeMPLS, lse(0, 0, 64)|bos), false},
		{"push onto mpls: a copy of the top, not the bottom", mpls(ip, EtherTypeMPLS, lse(5, 1, 7)|bos),
			[]Action{{Type: ActPushMPLS, Value: EtherTypeMPLS}}, mpls(ip, EtherTypeMPLS, lse(5, 1, 7), lse(5, 1, 7)|bos), false},
		{"push onto as many as the key holds: dropped", deep, []Action{{Type: ActPushMPLS, Value: EtherTypeMPLS}}, deep, true},
		{"push and pop: the packet again", ip, []Action{{Type: ActPushMPLS, Value: EtherTypeMPLS}, {Type: ActPopMPLS, Value: EtherTypeIPv4}},
			ip, false},
		// nd_target's bytes hold the stack: the key keeps no target under it.
		{"push and pop of neighbour discovery: its target given up", nd, []Action{{Type: ActPushMPLS, Value: EtherTypeMPLS},
			{Type: ActPushMPLS, Value: EtherTypeMPLS}, {Type: ActPopMPLS, Value: EtherTypeMPLS}, {Type: ActPopMPLS, Value: EtherTypeIPv6}},
			noTarget, false},
		{"pop to another packet than the one under it: no network fields", mpls(ip, EtherTypeMPLS, lse(5, 0, 7)|bos),
			[]Action{{Type: ActPopMPLS, Value: EtherTypeIPv6}}, exL2Key(EtherTypeIPv6), false},
		{"pop of a label that is not the bottom: the next on top", mpls(ip, EtherTypeMPLS, lse(5, 0, 7), lse(6, 0, 8)|bos),
			[]Action{{Type: ActPopMPLS, Value: EtherTypeMPLSMulticast}}, mpls(ip, EtherTypeMPLSMulticast, lse(6, 0, 8)|bos), false},
		{"pop of a label that is not the bottom to ipv4: no network fields", mpls(ip, EtherTypeMPLS, lse(5, 0, 7), lse(6, 0, 8)|bos),
			[]Action{{Type: ActPopMPLS, Value: EtherTypeIPv4}}, exL2Key(EtherTypeIPv4), false},
		{"pop of a stack deeper than the key: dropped", deep, []Action{{Type: ActPopMPLS, Value: EtherTypeMPLS}}, deep, true},
		{"pop of what is not mpls: nothing", ip, []Action{{Type: ActPopMPLS, Value: EtherTypeIPv6}}, ip, false},
		{"sets", mpls(ip, EtherTypeMPLS, lse(5, 0, 7)|bos), []Action{{Type: ActSetMPLSLabel, Imm: Value{Lo: 0xfffff}},
			{Type: ActSetMPLSTC, Value: 5}, {Type: ActSetMPLSTTL, Value: 200}, {Type: ActDecMPLSTTL}},
			mpls(ip, EtherTypeMPLS, lse(0xfffff, 5, 199)|bos), false},
		{"sets of what is not mpls: nothing", ip, []Action{{Type: ActSetMPLSLabel, Imm: Value{Lo: 3}}, {Type: ActSetMPLSTTL, Value: 2}}, ip, false},
		{"dec_mpls_ttl of 1: dropped", mpls(ip, EtherTypeMPLS, lse(5, 0, 1)|bos), []Action{{Type: ActDecMPLSTTL}},
			mpls(ip, EtherTypeMPLS, lse(5, 0, 1)|bos), true},
		{"dec_mpls_ttl of what is not mpls: dropped, as OVS stops it", ip, []Action{{Type: ActDecMPLSTTL}}, ip, true},
	}
	for _, tt := range tests {
		k := tt.in
		dropped := false
		for _, a := range tt.actions {
			if !a.ApplyToKey(&k) {
				dropped = true
				break
			}
		}
		if dropped != tt.drop || k != tt.want {
			t.Errorf("%s: dropped %v, key\n%+v\nwant dropped %v, key\n%+v", tt.name, dropped, k.Headers, tt.drop, tt.want.Headers)
		}
	}
}
