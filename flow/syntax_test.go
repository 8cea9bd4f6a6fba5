package flow

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"
)

// syntaxTestPorts names ports as a bridge would; "bad" resolves to a number
// no port can have.
type syntaxTestPorts map[string]uint16

func (p syntaxTestPorts) PortNumber(name string) (uint16, bool) {
	n, ok := p[name]
	return n, ok
}

var testPorts = syntaxTestPorts{"p1": 1, "p2": 2, "eth0": 3, "bad": 0xff01}

// matchOf builds the expected Match from setters of (key, mask) pairs.
func matchOf(sets ...func(k, m *Key)) Match {
	var mt Match
	for _, set := range sets {
		set(&mt.Key, &mt.Mask)
	}
	return mt
}

func withDlType(t uint16) func(k, m *Key) {
	return func(k, m *Key) { k.DlType, m.DlType = t, 0xffff }
}

func inTable(t uint8) func(k, m *Key) {
	return func(k, m *Key) { k.Table, m.Table = t, 0xff }
}

func withNwProto(p uint8) func(k, m *Key) {
	return func(k, m *Key) { k.NwProto, m.NwProto = p, 0xff }
}

var (
	isIPv4 = withDlType(EtherTypeIPv4)
	isIPv6 = withDlType(EtherTypeIPv6)
	isARP  = withDlType(EtherTypeARP)
	isTCP  = withNwProto(ProtoTCP)
	isUDP  = withNwProto(ProtoUDP)
)

func TestParseMatchFields(t *testing.T) {
	tests := []struct {
		in        string
		want      Match
		canonical string
	}{
		{"", Match{}, ""},
		{"in_port=3", matchOf(func(k, m *Key) { k.InPort, m.InPort = 3, 0xffff }), "in_port=3"},
		{"in_port=p1", matchOf(func(k, m *Key) { k.InPort, m.InPort = 1, 0xffff }), "in_port=1"},
		{"in_port=65280", matchOf(func(k, m *Key) { k.InPort, m.InPort = 0xff00, 0xffff }), "in_port=65280"},
		{"dl_src=02:00:00:00:00:01", matchOf(func(k, m *Key) {
			k.DlSrc, m.DlSrc = [6]byte{2, 0, 0, 0, 0, 1}, [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		}), "dl_src=02:00:00:00:00:01"},
		{"dl_src=2:0:0:0:0:AB", matchOf(func(k, m *Key) {
			k.DlSrc, m.DlSrc = [6]byte{2, 0, 0, 0, 0, 0xab}, [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		}), "dl_src=02:00:00:00:00:ab"},
		{"dl_dst=01:00:00:00:00:00/01:00:00:00:00:00", matchOf(func(k, m *Key) {
			k.DlDst, m.DlDst = [6]byte{1}, [6]byte{1}
		}), "dl_dst=01:00:00:00:00:00/01:00:00:00:00:00"},
		{"dl_dst=ff:ff:ff:ff:ff:ff/01:00:00:00:00:00", matchOf(func(k, m *Key) {
			k.DlDst, m.DlDst = [6]byte{1}, [6]byte{1}
		}), "dl_dst=01:00:00:00:00:00/01:00:00:00:00:00"},
		{"dl_type=0x88cc", matchOf(withDlType(0x88cc)), "dl_type=0x88cc"},
		{"dl_type=2048", matchOf(isIPv4), "ip"},
		{"dl_vlan=5", matchOf(func(k, m *Key) { k.VLANTCI, m.VLANTCI = 0x1005, 0x1fff }), "dl_vlan=5"},
		{"dl_vlan=0", matchOf(func(k, m *Key) { k.VLANTCI, m.VLANTCI = 0x1000, 0x1fff }), "dl_vlan=0"},
		{"dl_vlan=0xffff", matchOf(func(k, m *Key) { m.VLANTCI = 0xffff }), "vlan_tci=0x0000"},
		{"dl_vlan_pcp=3", matchOf(func(k, m *Key) { k.VLANTCI, m.VLANTCI = 0x7000, 0xf000 }), "dl_vlan_pcp=3"},
		{"dl_vlan_pcp=3,dl_vlan=5", matchOf(func(k, m *Key) { k.VLANTCI, m.VLANTCI = 0x7005, 0xffff }), "dl_vlan=5,dl_vlan_pcp=3"},
		{"vlan_tci=0x1000/0x1000", matchOf(func(k, m *Key) { k.VLANTCI, m.VLANTCI = 0x1000, 0x1000 }), "vlan_tci=0x1000/0x1000"},
		{"vlan_tci=0x1005/0x1fff", matchOf(func(k, m *Key) { k.VLANTCI, m.VLANTCI = 0x1005, 0x1fff }), "dl_vlan=5"},
		{"vlan_tci=0x0005/0x0fff", matchOf(func(k, m *Key) { k.VLANTCI, m.VLANTCI = 5, 0x0fff }), "vlan_tci=0x0005/0x0fff"},
		{"dl_vlan=4,vlan_tci=0x8000/0x8000", matchOf(func(k, m *Key) { k.VLANTCI, m.VLANTCI = 0x9004, 0x9fff }), "vlan_tci=0x9004/0x9fff"},
		{"ip,nw_src=10.0.0.0/24", matchOf(isIPv4, func(k, m *Key) {
			k.NwSrc, m.NwSrc = [4]byte{10, 0, 0, 0}, [4]byte{255, 255, 255, 0}
		}), "ip,nw_src=10.0.0.0/24"},
		{"ip,nw_dst=10.1.2.3/255.255.0.0", matchOf(isIPv4, func(k, m *Key) {
			k.NwDst, m.NwDst = [4]byte{10, 1, 0, 0}, [4]byte{255, 255, 0, 0}
		}), "ip,nw_dst=10.1.0.0/16"},
		{"ip,nw_dst=10.1.2.3/255.0.255.0", matchOf(isIPv4, func(k, m *Key) {
			k.NwDst, m.NwDst = [4]byte{10, 0, 2, 0}, [4]byte{255, 0, 255, 0}
		}), "ip,nw_dst=10.0.2.0/255.0.255.0"},
		{"ip,nw_dst=10.1.2.3/0", matchOf(isIPv4), "ip"},
		{"ip,nw_dst=10.1.2.3/32", matchOf(isIPv4, func(k, m *Key) {
			k.NwDst, m.NwDst = [4]byte{10, 1, 2, 3}, [4]byte{255, 255, 255, 255}
		}), "ip,nw_dst=10.1.2.3"},
		{"arp,nw_src=10.0.0.1", matchOf(isARP, func(k, m *Key) {
			k.NwSrc, m.NwSrc = [4]byte{10, 0, 0, 1}, [4]byte{255, 255, 255, 255}
		}), "arp,arp_spa=10.0.0.1"},
		{"arp,arp_tpa=10.0.0.2,arp_op=2", matchOf(isARP, withNwProto(2), func(k, m *Key) {
			k.NwDst, m.NwDst = [4]byte{10, 0, 0, 2}, [4]byte{255, 255, 255, 255}
		}), "arp,arp_tpa=10.0.0.2,arp_op=2"},
		{"arp,nw_proto=1", matchOf(isARP, withNwProto(1)), "arp,arp_op=1"},
		{"ip,nw_proto=47", matchOf(isIPv4, withNwProto(47)), "ip,nw_proto=47"},
		{"ip,nw_proto=6", matchOf(isIPv4, isTCP), "tcp"},
		{"ipv6,nw_proto=1", matchOf(isIPv6, withNwProto(1)), "ipv6,nw_proto=1"},
		{"ip,nw_tos=184", matchOf(isIPv4, func(k, m *Key) { k.NwTOS, m.NwTOS = 184, 0xfc }), "ip,nw_tos=184"},
		{"ip,ip_dscp=46", matchOf(isIPv4, func(k, m *Key) { k.NwTOS, m.NwTOS = 184, 0xfc }), "ip,nw_tos=184"},
		{"ip,nw_ecn=3", matchOf(isIPv4, func(k, m *Key) { k.NwTOS, m.NwTOS = 3, 0x03 }), "ip,nw_ecn=3"},
		{"ipv6,nw_tos=8,ip_ecn=1", matchOf(isIPv6, func(k, m *Key) { k.NwTOS, m.NwTOS = 9, 0xff }), "ipv6,nw_tos=8,nw_ecn=1"},
		{"ip,nw_ttl=64", matchOf(isIPv4, func(k, m *Key) { k.NwTTL, m.NwTTL = 64, 0xff }), "ip,nw_ttl=64"},
		{"ip,ip_frag=no", matchOf(isIPv4, func(k, m *Key) { m.NwFrag = 3 }), "ip,ip_frag=no"},
		{"ip,ip_frag=first", matchOf(isIPv4, func(k, m *Key) { k.NwFrag, m.NwFrag = 1, 3 }), "ip,ip_frag=first"},
		{"ip,ip_frag=later", matchOf(isIPv4, func(k, m *Key) { k.NwFrag, m.NwFrag = 3, 3 }), "ip,ip_frag=later"},
		{"ip,ip_frag=yes", matchOf(isIPv4, func(k, m *Key) { k.NwFrag, m.NwFrag = 1, 1 }), "ip,ip_frag=yes"},
		{"ipv6,ip_frag=not_later", matchOf(isIPv6, func(k, m *Key) { m.NwFrag = 2 }), "ipv6,ip_frag=not_later"},
		{"ipv6,ipv6_exthdr=+hop-frag", matchOf(isIPv6, func(k, m *Key) {
			k.IPv6ExtHdr, m.IPv6ExtHdr = ExtHdrHop, ExtHdrHop|ExtHdrFrag
		}), "ipv6,ipv6_exthdr=-frag+hop"},
		{"ipv6,ipv6_exthdr=68", matchOf(isIPv6, func(k, m *Key) { k.IPv6ExtHdr, m.IPv6ExtHdr = 68, 0x1ff }), "ipv6,ipv6_exthdr=auth|hop"},
		{"ipv6,ipv6_exthdr=hop|auth", matchOf(isIPv6, func(k, m *Key) { k.IPv6ExtHdr, m.IPv6ExtHdr = 68, 0x1ff }), "ipv6,ipv6_exthdr=auth|hop"},
		{"ipv6,ipv6_exthdr=0", matchOf(isIPv6, func(k, m *Key) { m.IPv6ExtHdr = 0x1ff }), "ipv6,ipv6_exthdr=0"},
		{"ipv6,ipv6_exthdr=0x101/0x181", matchOf(isIPv6, func(k, m *Key) {
			k.IPv6ExtHdr, m.IPv6ExtHdr = 0x101, 0x181
		}), "ipv6,ipv6_exthdr=+nonext-unrep+unseq"},
		{"tcp,tp_src=1024,tp_dst=80", matchOf(isIPv4, isTCP, func(k, m *Key) {
			k.TpSrc, m.TpSrc, k.TpDst, m.TpDst = 1024, 0xffff, 80, 0xffff
		}), "tcp,tp_src=1024,tp_dst=80"},
		{"udp,tp_dst=0x51/0xfff0", matchOf(isIPv4, isUDP, func(k, m *Key) { k.TpDst, m.TpDst = 0x50, 0xfff0 }), "udp,tp_dst=0x50/0xfff0"},
		{"tcp6,tp_dst=443", matchOf(isIPv6, isTCP, func(k, m *Key) { k.TpDst, m.TpDst = 443, 0xffff }), "tcp6,tp_dst=443"},
		{"icmp,icmp_type=8,icmp_code=0", matchOf(isIPv4, withNwProto(ProtoICMP), func(k, m *Key) {
			k.TpSrc, m.TpSrc, m.TpDst = 8, 0xff, 0xff // ICMP types and codes are 8 bits
		}), "icmp,icmp_type=8,icmp_code=0"},
		{"icmp6,icmpv6_type=135", matchOf(isIPv6, withNwProto(ProtoICMPv6), func(k, m *Key) {
			k.TpSrc, m.TpSrc = 135, 0xff
		}), "icmp6,icmp_type=135"},
		{"ipv6,ipv6_src=2001:db8::/32,ipv6_dst=::1", matchOf(isIPv6, func(k, m *Key) {
			k.IPv6Src, m.IPv6Src = [16]byte{0x20, 0x01, 0x0d, 0xb8}, [16]byte{0xff, 0xff, 0xff, 0xff}
			k.IPv6Dst[15] = 1
			m.IPv6Dst = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		}), "ipv6,ipv6_src=2001:db8::/32,ipv6_dst=::1"},
		{"ipv6,ipv6_dst=2001:db8::1/ffff::ffff", matchOf(isIPv6, func(k, m *Key) {
			k.IPv6Dst, m.IPv6Dst = [16]byte{0x20, 0x01, 15: 1}, [16]byte{0xff, 0xff, 14: 0xff, 15: 0xff}
		}), "ipv6,ipv6_dst=2001::1/ffff::ffff"},
		{"ipv6,ipv6_src=::ffff:1.2.3.4", matchOf(isIPv6, func(k, m *Key) {
			k.IPv6Src = [16]byte{10: 0xff, 11: 0xff, 12: 1, 13: 2, 14: 3, 15: 4}
			m.IPv6Src = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		}), "ipv6,ipv6_src=::ffff:1.2.3.4"},

		// Shorthands.
		{"ip", matchOf(isIPv4), "ip"},
		{"ipv6", matchOf(isIPv6), "ipv6"},
		{"arp", matchOf(isARP), "arp"},
		{"icmp", matchOf(isIPv4, withNwProto(ProtoICMP)), "icmp"},
		{"icmp6", matchOf(isIPv6, withNwProto(ProtoICMPv6)), "icmp6"},
		{"tcp", matchOf(isIPv4, isTCP), "tcp"},
		{"udp", matchOf(isIPv4, isUDP), "udp"},
		{"tcp6", matchOf(isIPv6, isTCP), "tcp6"},
		{"udp6", matchOf(isIPv6, isUDP), "udp6"},

		// OVS's newer names print as the classic ones.
		{"eth_src=02:00:00:00:00:01", matchOf(func(k, m *Key) {
			k.DlSrc, m.DlSrc = [6]byte{2, 0, 0, 0, 0, 1}, [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		}), "dl_src=02:00:00:00:00:01"},
		{"eth_type=0x0806", matchOf(isARP), "arp"},
		{"ip,ip_dst=1.2.3.4", matchOf(isIPv4, func(k, m *Key) {
			k.NwDst, m.NwDst = [4]byte{1, 2, 3, 4}, [4]byte{255, 255, 255, 255}
		}), "ip,nw_dst=1.2.3.4"},
		{"ip,ip_proto=6", matchOf(isIPv4, isTCP), "tcp"},
		{"tcp,tcp_dst=22", matchOf(isIPv4, isTCP, func(k, m *Key) { k.TpDst, m.TpDst = 22, 0xffff }), "tcp,tp_dst=22"},
		{"udp6,udp_src=53", matchOf(isIPv6, isUDP, func(k, m *Key) { k.TpSrc, m.TpSrc = 53, 0xffff }), "udp6,tp_src=53"},

		// Order and separators do not matter; fields that agree merge.
		{"nw_dst=10.0.0.1 ip", matchOf(isIPv4, func(k, m *Key) {
			k.NwDst, m.NwDst = [4]byte{10, 0, 0, 1}, [4]byte{255, 255, 255, 255}
		}), "ip,nw_dst=10.0.0.1"},
		{"tcp, ip ,nw_proto=6,\tdl_type=0x0800", matchOf(isIPv4, isTCP), "tcp"},
		{"arp,nw_src=10.0.0.0/8,arp_spa=10.1.0.0/16", matchOf(isARP, func(k, m *Key) {
			k.NwSrc, m.NwSrc = [4]byte{10, 1, 0, 0}, [4]byte{255, 255, 0, 0}
		}), "arp,arp_spa=10.1.0.0/16"},
		{
			"tp_src=1000,nw_ttl=9,nw_tos=4,tp_dst=80,nw_dst=10.0.0.2,nw_src=10.0.0.1,dl_dst=02:00:00:00:00:02,dl_src=02:00:00:00:00:01,dl_vlan=10,in_port=2,tcp",
			matchOf(isIPv4, isTCP, func(k, m *Key) {
				k.InPort, m.InPort = 2, 0xffff
				k.VLANTCI, m.VLANTCI = 0x100a, 0x1fff
				k.DlSrc, m.DlSrc = [6]byte{2, 0, 0, 0, 0, 1}, [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
				k.DlDst, m.DlDst = [6]byte{2, 0, 0, 0, 0, 2}, [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
				k.NwSrc, m.NwSrc = [4]byte{10, 0, 0, 1}, [4]byte{255, 255, 255, 255}
				k.NwDst, m.NwDst = [4]byte{10, 0, 0, 2}, [4]byte{255, 255, 255, 255}
				k.NwTOS, m.NwTOS = 4, 0xfc
				k.NwTTL, m.NwTTL = 9, 0xff
				k.TpSrc, m.TpSrc, k.TpDst, m.TpDst = 1000, 0xffff, 80, 0xffff
			}),
			"tcp,in_port=2,dl_vlan=10,dl_src=02:00:00:00:00:01,dl_dst=02:00:00:00:00:02,nw_src=10.0.0.1,nw_dst=10.0.0.2,nw_tos=4,nw_ttl=9,tp_src=1000,tp_dst=80",
		},
	}
	for _, tt := range tests {
		f, err := ParseFilter(tt.in, testPorts)
		if err != nil {
			t.Errorf("ParseFilter(%q): %v", tt.in, err)
			continue
		}
		if f.Match != tt.want {
			t.Errorf("ParseFilter(%q).Match =\n%+v, want\n%+v", tt.in, f.Match, tt.want)
		}
		if got := FormatMatch(f.Match); got != tt.canonical {
			t.Errorf("FormatMatch(ParseFilter(%q)) = %q, want %q", tt.in, got, tt.canonical)
		}
		checkRuleRoundTrip(t, tt.in+",actions=drop")
	}
}

func TestParseActions(t *testing.T) {
	mac1 := [6]byte{2, 0, 0, 0, 0, 1}
	tests := []struct {
		in        string // the whole flow
		want      []Action
		canonical string // FormatActions
	}{
		{"actions=output:2", []Action{{Type: ActOutput, Port: 2}}, "output:2"},
		{"actions=2", []Action{{Type: ActOutput, Port: 2}}, "output:2"},
		{"actions=p2", []Action{{Type: ActOutput, Port: 2}}, "output:2"},
		{"actions=output:p1", []Action{{Type: ActOutput, Port: 1}}, "output:1"},
		{"actions=output=3", []Action{{Type: ActOutput, Port: 3}}, "output:3"},
		{"actions=output:65279", []Action{{Type: ActOutput, Port: 0xfeff}}, "output:65279"},
		{"actions=normal", []Action{{Type: ActNormal}}, "NORMAL"},
		{"actions=NORMAL", []Action{{Type: ActNormal}}, "NORMAL"},
		{"actions=output:normal", []Action{{Type: ActNormal}}, "NORMAL"},
		{"actions=Flood,all,in_port", []Action{{Type: ActFlood}, {Type: ActAll}, {Type: ActInPort}}, "FLOOD,ALL,IN_PORT"},
		{"actions=drop", nil, "drop"},
		{"actions=DROP", nil, "drop"},
		{"actions=", nil, "drop"},
		{"actions= ", nil, "drop"},
		{"actions=mod_dl_src:02:00:00:00:00:01", []Action{{Type: ActSetDlSrc, MAC: mac1}}, "mod_dl_src:02:00:00:00:00:01"},
		{"actions=mod_dl_dst:2:0:0:0:0:1", []Action{{Type: ActSetDlDst, MAC: mac1}}, "mod_dl_dst:02:00:00:00:00:01"},
		{"actions=mod_vlan_vid:10", []Action{{Type: ActSetVLANVID, Value: 10}}, "mod_vlan_vid:10"},
		{"actions=strip_vlan", []Action{{Type: ActStripVLAN}}, "strip_vlan"},
		{"actions=pop_vlan", []Action{{Type: ActStripVLAN}}, "strip_vlan"},
		{"actions=push_vlan:0x88a8", []Action{{Type: ActPushVLAN, Value: 0x88a8}}, "push_vlan:0x88a8"},
		{"actions=push_vlan:33024", []Action{{Type: ActPushVLAN, Value: 0x8100}}, "push_vlan:0x8100"},
		{"ip,actions=mod_nw_src:10.0.0.1", []Action{{Type: ActSetNwSrc, IPv4: [4]byte{10, 0, 0, 1}}}, "mod_nw_src:10.0.0.1"},
		{"tcp,actions=mod_nw_dst:10.0.0.2", []Action{{Type: ActSetNwDst, IPv4: [4]byte{10, 0, 0, 2}}}, "mod_nw_dst:10.0.0.2"},
		{"tcp,actions=mod_tp_src:1000", []Action{{Type: ActSetTpSrc, Value: 1000}}, "mod_tp_src:1000"},
		{"udp6,actions=mod_tp_dst:53", []Action{{Type: ActSetTpDst, Value: 53}}, "mod_tp_dst:53"},
		{"ip,actions=dec_ttl", []Action{{Type: ActDecTTL}}, "dec_ttl"},
		// MPLS: set_mpls_label and set_mpls_tc are set_field in OpenFlow
		// 1.3, as ovs-ofctl prints them there; a push makes the frame
		// MPLS for the actions after it, a pop makes it what it says.
		{"ip,actions=push_mpls:0x8847,set_mpls_label:10,set_mpls_tc(3),set_mpls_ttl:64,dec_mpls_ttl", []Action{
			{Type: ActPushMPLS, Value: 0x8847}, {Type: ActSetMPLSLabel, Imm: Value{Lo: 10}}, {Type: ActSetMPLSTC, Value: 3},
			{Type: ActSetMPLSTTL, Value: 64}, {Type: ActDecMPLSTTL}},
			"push_mpls:0x8847,set_field:10->mpls_label,set_field:3->mpls_tc,set_mpls_ttl(64),dec_mpls_ttl"},
		{"mpls,actions=set_field:0x10->mpls_label,set_field:7->mpls_tc", []Action{
			{Type: ActSetMPLSLabel, Imm: Value{Lo: 16}}, {Type: ActSetMPLSTC, Value: 7}}, "set_field:16->mpls_label,set_field:7->mpls_tc"},
		{"mplsm,actions=pop_mpls:0x0800,mod_nw_src:10.0.0.1,dec_ttl", []Action{
			{Type: ActPopMPLS, Value: 0x0800}, {Type: ActSetNwSrc, IPv4: [4]byte{10, 0, 0, 1}}, {Type: ActDecTTL}},
			"pop_mpls:0x0800,mod_nw_src:10.0.0.1,dec_ttl"},
		{"mpls,actions=pop_mpls:34887,pop_mpls:0x86dd", []Action{{Type: ActPopMPLS, Value: 0x8847}, {Type: ActPopMPLS, Value: 0x86dd}},
			"pop_mpls:0x8847,pop_mpls:0x86dd"},
		// OpenFlow 1.3's TTL copies, which Open vSwitch lacks.
		{"ip,actions=push_mpls:0x8847,copy_ttl_out,copy_ttl_in", []Action{{Type: ActPushMPLS, Value: 0x8847}, {Type: ActCopyTTLOut},
			{Type: ActCopyTTLIn}}, "push_mpls:0x8847,copy_ttl_out,copy_ttl_in"},
		{"ipv6,actions=dec_ttl", []Action{{Type: ActDecTTL}}, "dec_ttl"},
		{"actions=set_field:02:00:00:00:00:01->eth_src", []Action{{Type: ActSetDlSrc, MAC: mac1}}, "mod_dl_src:02:00:00:00:00:01"},
		{"actions=set_field:02:00:00:00:00:01->dl_dst", []Action{{Type: ActSetDlDst, MAC: mac1}}, "mod_dl_dst:02:00:00:00:00:01"},
		{"ip,actions=set_field:10.0.0.1->ip_src", []Action{{Type: ActSetNwSrc, IPv4: [4]byte{10, 0, 0, 1}}}, "mod_nw_src:10.0.0.1"},
		{"ip,actions=set_field:10.0.0.1->nw_dst", []Action{{Type: ActSetNwDst, IPv4: [4]byte{10, 0, 0, 1}}}, "mod_nw_dst:10.0.0.1"},
		{"tcp,actions=set_field:80->tcp_dst", []Action{{Type: ActSetTpDst, Value: 80}}, "mod_tp_dst:80"},
		{"tcp,actions=set_field:81->tcp_src", []Action{{Type: ActSetTpSrc, Value: 81}}, "mod_tp_src:81"},
		{"udp,actions=set_field:53->udp_src", []Action{{Type: ActSetTpSrc, Value: 53}}, "mod_tp_src:53"},
		{"udp,actions=set_field:54->udp_dst", []Action{{Type: ActSetTpDst, Value: 54}}, "mod_tp_dst:54"},
		{"tcp6,actions=set_field:1->tp_src,set_field:2->tp_dst", []Action{{Type: ActSetTpSrc, Value: 1}, {Type: ActSetTpDst, Value: 2}}, "mod_tp_src:1,mod_tp_dst:2"},
		{"actions=mod_dl_dst:02:00:00:00:00:01, output:3  p1", []Action{{Type: ActSetDlDst, MAC: mac1}, {Type: ActOutput, Port: 3}, {Type: ActOutput, Port: 1}}, "mod_dl_dst:02:00:00:00:00:01,output:3,output:1"},
	}
	for _, tt := range tests {
		r, err := ParseRule(tt.in, testPorts)
		if err != nil {
			t.Errorf("ParseRule(%q): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(r.Actions, tt.want) {
			t.Errorf("ParseRule(%q).Actions = %+v, want %+v", tt.in, r.Actions, tt.want)
		}
		if got := FormatActions(r.Actions); got != tt.canonical {
			t.Errorf("FormatActions(ParseRule(%q).Actions) = %q, want %q", tt.in, got, tt.canonical)
		}
		checkRuleRoundTrip(t, tt.in)
	}
}

func TestParseRule(t *testing.T) {
	ipDst := func(a, b, c, d byte) func(k, m *Key) {
		return func(k, m *Key) { k.NwDst, m.NwDst = [4]byte{a, b, c, d}, [4]byte{255, 255, 255, 255} }
	}
	tests := []struct {
		in        string
		want      Rule
		canonical string
	}{
		{
			"priority=100,ip,nw_dst=10.0.0.2,actions=output:2",
			Rule{Priority: 100, Match: matchOf(isIPv4, ipDst(10, 0, 0, 2)), Actions: []Action{{Type: ActOutput, Port: 2}}},
			"priority=100,ip,nw_dst=10.0.0.2 actions=output:2",
		},
		{
			"priority=100 ip nw_dst=10.0.0.2 actions=output:2",
			Rule{Priority: 100, Match: matchOf(isIPv4, ipDst(10, 0, 0, 2)), Actions: []Action{{Type: ActOutput, Port: 2}}},
			"priority=100,ip,nw_dst=10.0.0.2 actions=output:2",
		},
		{
			"cookie=0x5, idle_timeout=10, hard_timeout=20, priority=100,tcp,nw_dst=10.0.0.2,tp_dst=80 actions=output:2",
			Rule{Priority: 100, Cookie: 5, IdleTimeout: 10, HardTimeout: 20,
				Match:   matchOf(isIPv4, isTCP, ipDst(10, 0, 0, 2), func(k, m *Key) { k.TpDst, m.TpDst = 80, 0xffff }),
				Actions: []Action{{Type: ActOutput, Port: 2}}},
			"cookie=0x5, idle_timeout=10, hard_timeout=20, priority=100,tcp,nw_dst=10.0.0.2,tp_dst=80 actions=output:2",
		},
		{"actions=NORMAL", Rule{Priority: DefaultPriority, Actions: []Action{{Type: ActNormal}}}, "actions=NORMAL"},
		{"priority=0,actions=NORMAL", Rule{Actions: []Action{{Type: ActNormal}}}, "priority=0 actions=NORMAL"},
		{"priority=65535,cookie=10,table=0,actions=drop", Rule{Priority: 65535, Cookie: 10}, "cookie=0xa, priority=65535 actions=drop"},
		{"cookie=0xffffffffffffffff,action=drop", Rule{Priority: DefaultPriority, Cookie: math.MaxUint64}, "cookie=0xffffffffffffffff, actions=drop"},
		{"priority=5 actions = output:1", Rule{Priority: 5, Actions: []Action{{Type: ActOutput, Port: 1}}}, "priority=5 actions=output:1"},
		// A line of ovs-ofctl dump-flows, decorations and all.
		{
			" cookie=0x0, duration=5.032s, table=0, n_packets=7, n_bytes=594, idle_age=5, priority=0 actions=NORMAL",
			Rule{Actions: []Action{{Type: ActNormal}}},
			"priority=0 actions=NORMAL",
		},
		{
			"cookie=0x1, duration=3.205s, table=0, n_packets=10, n_bytes=980, idle_timeout=10, hard_timeout=60, idle_age=2, hard_age=3, priority=100,ip,nw_dst=10.0.0.2 actions=output:2",
			Rule{Priority: 100, Cookie: 1, IdleTimeout: 10, HardTimeout: 60, Match: matchOf(isIPv4, ipDst(10, 0, 0, 2)), Actions: []Action{{Type: ActOutput, Port: 2}}},
			"cookie=0x1, idle_timeout=10, hard_timeout=60, priority=100,ip,nw_dst=10.0.0.2 actions=output:2",
		},
	}
	for _, tt := range tests {
		r, err := ParseRule(tt.in, testPorts)
		if err != nil {
			t.Errorf("ParseRule(%q): %v", tt.in, err)
			continue
		}
		want := tt.want
		want.Match.Mask.Table = math.MaxUint8 // every rule is in a table: here 0
		if !reflect.DeepEqual(r, want) {
			t.Errorf("ParseRule(%q) =\n%+v, want\n%+v", tt.in, r, want)
		}
		if got := FormatRule(r); got != tt.canonical {
			t.Errorf("FormatRule(ParseRule(%q)) = %q, want %q", tt.in, got, tt.canonical)
		}
		checkRuleRoundTrip(t, tt.in)
	}
}

func TestFormatDumpLine(t *testing.T) {
	r := Rule{
		Priority:    100,
		IdleTimeout: 10,
		Match:       matchOf(isIPv4, func(k, m *Key) { k.NwDst, m.NwDst = [4]byte{10, 0, 0, 2}, [4]byte{255, 255, 255, 255} }),
		Actions:     []Action{{Type: ActOutput, Port: 2}},
	}
	stats := DumpStats{Duration: 3205 * time.Millisecond, Packets: 10, Bytes: 980, IdleAge: 2900 * time.Millisecond, HardAge: 7 * time.Second}
	want := "cookie=0x0, duration=3.205s, table=0, n_packets=10, n_bytes=980, idle_timeout=10, idle_age=2, priority=100,ip,nw_dst=10.0.0.2 actions=output:2"
	if got := FormatDumpLine(r, stats); got != want {
		t.Errorf("FormatDumpLine = %q, want %q", got, want)
	}
	r.HardTimeout, r.Cookie = 60, 0xabc
	want = "cookie=0xabc, duration=3.205s, table=0, n_packets=10, n_bytes=980, idle_timeout=10, hard_timeout=60, idle_age=2, hard_age=7, priority=100,ip,nw_dst=10.0.0.2 actions=output:2"
	if got := FormatDumpLine(r, stats); got != want {
		t.Errorf("FormatDumpLine = %q, want %q", got, want)
	}
	r.Match.Mask.Table = math.MaxUint8
	back, err := ParseRule(want, nil)
	if err != nil || !reflect.DeepEqual(back, r) {
		t.Errorf("ParseRule(FormatDumpLine) = %+v, %v; want %+v", back, err, r)
	}
}

func TestParseRuleErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"nw_dest=1.2.3.4,actions=drop", `unknown field "nw_dest"`},
		{"mpls_label=5,actions=drop", `field "mpls_label" requires mpls or mplsm (dl_type=0x8847 or 0x8848)`},
		{"mpls,mpls_label=5/0xff,actions=drop", `invalid mpls_label "5/0xff"`},
		{"mpls,mpls_tc=8,actions=drop", `mpls_tc 8 out of range`},
		{"mpls,actions=set_field:1->mpls_bos", `mpls_bos is read-only`},
		{"ipv6_exthdr=+hop,actions=drop", `field "ipv6_exthdr" requires ipv6 (dl_type=0x86dd)`},
		{"ipv6,ipv6_exthdr=+hop+bogus,actions=drop", `ipv6_exthdr: unknown flag "bogus" (want nonext, esp, auth, dest, frag, router, hop, unrep, unseq)`},
		{"ipv6,ipv6_exthdr=hop|x,actions=drop", `ipv6_exthdr: unknown flag "x" (want nonext, esp, auth, dest, frag, router, hop, unrep, unseq)`},
		{"ipv6,ipv6_exthdr=+hop-hop,actions=drop", `ipv6_exthdr: "+hop-hop" names hop twice`},
		{"ipv6,ipv6_exthdr=0x200,actions=drop", `ipv6_exthdr 0x200 out of range`},
		{"ipv6,actions=set_field:1->ipv6_exthdr", `ipv6_exthdr is read-only`},
		{"mpls,actions=copy_ttl_in:1", `action "copy_ttl_in" takes no argument`},
		{"ip,actions=copy_ttl_out", `copy_ttl_out requires an MPLS match (mpls or mplsm), or a push_mpls before it`},
		{"actions=push_mpls:0x0800", `push_mpls 0x0800: want 0x8847 or 0x8848`},
		{"mpls,actions=pop_mpls", `action "pop_mpls" needs an argument (pop_mpls:VALUE)`},
		{"mpls,actions=set_mpls_label:1048576", `1048576: not a valid MPLS label`},
		{"mpls,actions=set_mpls_tc:8", `8: not a valid MPLS TC`},
		{"mpls,actions=set_mpls_ttl:300", `invalid MPLS TTL "300"`},
		{"ip,actions=set_mpls_label:5", `set_mpls_label requires an MPLS match (mpls or mplsm), or a push_mpls before it`},
		{"actions=pop_mpls:0x0800", `pop_mpls requires an MPLS match (mpls or mplsm), or a push_mpls before it`},
		{"ip,actions=push_mpls:0x8847,mod_nw_src:10.0.0.1", `mod_nw_src requires an IPv4 match (ip)`},
		{"mpls,actions=pop_mpls:0x0800,set_mpls_ttl:5", `set_mpls_ttl requires an MPLS match (mpls or mplsm), or a push_mpls before it`},
		{"ip,nw_dst=300.1.1.1,actions=drop", `invalid IPv4 address "300.1.1.1"`},
		{"ip,nw_dst=10.0.0.0/33,actions=drop", `invalid IPv4 mask "33"`},
		{"ip,nw_dst=10.0.0.0/255.0.0.300,actions=drop", `invalid IPv4 mask "255.0.0.300"`},
		{"ipv6,ipv6_src=1.2.3.4,actions=drop", `invalid IPv6 address "1.2.3.4"`},
		{"ipv6,ipv6_src=fe80::1%eth0,actions=drop", `invalid IPv6 address "fe80::1%eth0"`},
		{"ipv6,ipv6_src=::/129,actions=drop", `invalid IPv6 mask "129"`},
		{"dl_src=zz,actions=drop", `invalid MAC address "zz"`},
		{"dl_src=02:00:00:00:00:001,actions=drop", `invalid MAC address "02:00:00:00:00:001"`},
		{"dl_dst=01:00:00:00:00:00/zz,actions=drop", `invalid MAC mask "zz"`},
		{"priority=70000,actions=drop", `priority 70000 out of range`},
		{"priority=abc,actions=drop", `invalid priority "abc"`},
		{"priority=-1,actions=drop", `invalid priority "-1"`},
		{"priority,actions=drop", `field "priority" needs a value`},
		{"priority=1,priority=2,actions=drop", `field "priority" given twice`},
		{"ip,nw_dst=1.1.1.1,nw_dst=1.1.1.2,actions=drop", `field "nw_dst" given twice`},
		{"tcp,udp,actions=drop", `field "udp" conflicts with "tcp"`},
		{"ipv6,tcp,actions=drop", `field "tcp" conflicts with "ipv6"`},
		{"ip,nw_dst=1.1.1.1,ip_dst=1.1.1.2,actions=drop", `field "ip_dst" conflicts with "nw_dst"`},
		{"dl_vlan=0xffff,dl_vlan_pcp=1,actions=drop", `field "dl_vlan_pcp" conflicts with "dl_vlan"`},
		{"tp_dst=80,actions=drop", `field "tp_dst" requires tcp, udp or sctp (nw_proto=6, 17 or 132)`},
		{"ip,tp_src=80,actions=drop", `field "tp_src" requires tcp, udp or sctp (nw_proto=6, 17 or 132)`},
		{"arp,arp_op=6,tp_dst=80,actions=drop", `field "tp_dst" requires tcp, udp or sctp (nw_proto=6, 17 or 132)`},
		{"udp,tcp_dst=80,actions=drop", `field "tcp_dst" requires tcp (nw_proto=6)`},
		{"tcp,udp_src=80,actions=drop", `field "udp_src" requires udp (nw_proto=17)`},
		{"nw_src=1.2.3.4,actions=drop", `field "nw_src" requires ip or arp (dl_type=0x0800 or 0x0806)`},
		{"ipv6,nw_dst=1.2.3.4,actions=drop", `field "nw_dst" requires ip or arp (dl_type=0x0800 or 0x0806)`},
		{"ip,arp_spa=1.2.3.4,actions=drop", `field "arp_spa" requires arp (dl_type=0x0806)`},
		{"ip,arp_op=1,actions=drop", `field "arp_op" requires arp (dl_type=0x0806)`},
		{"ip,ipv6_src=::1,actions=drop", `field "ipv6_src" requires ipv6 (dl_type=0x86dd)`},
		{"nw_proto=6,actions=drop", `field "nw_proto" requires ip, ipv6 or arp (dl_type=0x0800, 0x86dd or 0x0806)`},
		{"arp,nw_tos=4,actions=drop", `field "nw_tos" requires ip or ipv6 (dl_type=0x0800 or 0x86dd)`},
		{"nw_ttl=4,actions=drop", `field "nw_ttl" requires ip or ipv6 (dl_type=0x0800 or 0x86dd)`},
		{"tcp,icmp_type=3,actions=drop", `field "icmp_type" requires icmp or icmp6 (nw_proto=1 with ip, 58 with ipv6)`},
		{"ipv6,nw_proto=1,icmp_code=3,actions=drop", `field "icmp_code" requires icmp or icmp6 (nw_proto=1 with ip, 58 with ipv6)`},
		{"ip,nw_tos=3,actions=drop", `nw_tos 3: the 2 low (ECN) bits must be 0`},
		{"ip,ip_dscp=64,actions=drop", `ip_dscp 64 out of range`},
		{"ip,nw_ecn=4,actions=drop", `nw_ecn 4 out of range`},
		{"ip,nw_ttl=1/1,actions=drop", `invalid nw_ttl "1/1"`},
		{"ip,ip_frag=maybe,actions=drop", `invalid ip_frag "maybe" (want no, yes, first, later or not_later)`},
		{"icmp,icmp_type=256,actions=drop", `icmp_type 256 out of range`},
		{"tcp,tp_dst=65536,actions=drop", `tp_dst 65536 out of range`},
		{"tcp,tp_dst=80/0x1ffff,actions=drop", `tp_dst mask 0x1ffff out of range`},
		{"tcp,tp_dst=80/x,actions=drop", `invalid tp_dst mask "x"`},
		{"dl_type=0x10000,actions=drop", `dl_type 0x10000 out of range`},
		{"in_port=p9,actions=drop", `no port "p9"`},
		{"in_port=0,actions=drop", `port 0 out of range (1-65280)`},
		{"in_port=65281,actions=drop", `port 65281 is one of OpenFlow's reserved ports, of which xswitch has LOCAL (65534) and CONTROLLER (65533)`},
		{"in_port=bad,actions=drop", `port "bad" has number 65281, out of range (1-65280)`},
		{"in_port=,actions=drop", `invalid port ""`},
		{"dl_vlan=4096,actions=drop", `dl_vlan 4096 out of range (0-4095, or 0xffff for no tag)`},
		{"dl_vlan_pcp=8,actions=drop", `dl_vlan_pcp 8 out of range`},
		{"vlan_tci=0x10000,actions=drop", `vlan_tci 0x10000 out of range`},
		{"table=255,actions=drop", `table 255 is not a table (0-254): a rule goes into one`},
		{"table=256,actions=drop", `table 256 out of range`},
		{"table=x,actions=drop", `invalid table "x"`},
		{"cookie=0x5/0xff,actions=drop", `a cookie mask only selects flows (del-flows, dump-flows); set a cookie without one`},
		{"cookie=0x1ffffffffffffffff,actions=drop", `cookie 0x1ffffffffffffffff out of range`},
		{"idle_timeout=70000,actions=drop", `idle_timeout 70000 out of range`},
		{"hard_timeout=x,actions=drop", `invalid hard_timeout "x"`},
		{"tcp=1,actions=drop", `field "tcp" takes no value`},
		{"ip,nw_dst,actions=drop", `field "nw_dst" needs a value`},
		{"=5,actions=drop", `missing field name before "=5"`},
		{"priority=1", `missing "actions=" (write actions=drop to drop)`},
		{"", `missing "actions=" (write actions=drop to drop)`},
		{"priority=1,actions", `"actions" must be followed by "=" and the action list`},

		{"actions=foo", `unknown action "foo"`},
		{"actions=foo:1", `unknown action "foo"`},
		{"actions=learn(table=1)", `unknown action "learn"`},
		{"ip,actions=dec_ttl(1)", `action "dec_ttl" takes no argument`},
		{"actions=resubmit(,)", `resubmit needs a port or a table: resubmit:PORT or resubmit(,TABLE)`},
		{"actions=resubmit(,255)", `resubmit table 255 out of range`},
		{"table=2,actions=goto_table:2", `goto_table:2 in table 2: a rule may only go to a later table (resubmit can go back)`},
		{"actions=goto_table:1,output:1", `action "output:1" after the instruction goto_table: actions come first`},
		{"actions=goto_table:1,write_metadata:1", `instruction write_metadata may not follow instruction goto_table`},
		{"actions=apply_actions(output:1)", `apply_actions is the default instruction: write its actions without it`},
		{"actions=load:0x10->reg0[0..3]", `load: value 0x10 does not fit in 4 bits`},
		{"actions=load:1->reg0[4..3]", `load: "reg0[4..3]": the range runs backwards`},
		{"actions=load:1->reg0[32]", `load: "reg0[32]": reg0 has only 32 bits`},
		{"actions=load:1->nw_ttl[]", `load requires ip or ipv6 (dl_type=0x0800 or 0x86dd)`},
		{"ip,actions=set_field:2001:db8::1->ipv6_src", `set_field to ipv6_src requires an IPv6 match (ipv6)`},
		{"actions=move:reg0[0..3]->reg1[0..4]", `move: the source has 4 bits and the destination 5`},
		{"actions=move:reg0[]->ip_proto[]", `move: field nw_proto cannot be written`},
		{"actions=move:nw_src[]->reg0[]", `move requires ip or arp (dl_type=0x0800 or 0x0806)`},
		{"actions=output(port=1,max_len=10)", `max_len 10 is shorter than an Ethernet header`},
		{"actions=output(max_len=100)", `output(max_len=100): want both port= and max_len= (or write output:PORT)`},
		{"actions=write_actions(resubmit(,1))", `write_actions: resubmit(,1) cannot go into an action set (it holds outputs and header changes)`},
		{"actions=write_actions(output:1,output:2)", `write_actions: an action set holds one action of each kind, and output:2 is the second of its kind`},
		{"actions=write_actions(goto_table:1)", `write_actions: goto_table:1 cannot go into an action set (it holds outputs and header changes)`},
		{"actions=goto_table:1,clear_actions", `instruction clear_actions may not follow instruction goto_table`},
		{"actions=write_actions(output:1),clear_actions", `instruction clear_actions may not follow instruction write_actions`},
		{"ip,actions=mod_nw_tos:1", `mod_nw_tos 1: the DSCP bits only, a multiple of 4 (mod_nw_ecn sets the others)`},
		{"actions=mod_nw_ttl:5", `mod_nw_ttl requires an ip or ipv6 match`},
		{"ip,actions=mod_nw_ecn:4", `mod_nw_ecn 4 out of range`},
		{"actions=set_field:3->vlan_pcp", `set_field to vlan_pcp requires a VLAN tag (dl_vlan=N, or vlan_tci=0x1000/0x1000)`},
		{"in_port=ANY,actions=drop", `reserved port ANY is not supported`},
		{"actions=output(port=1)", `output(port=1): want both port= and max_len= (or write output:PORT)`},
		{"actions=output:65280", `output to port 65280: OpenFlow's OFPP_MAX is not a port frames can leave by`},
		{"actions=output:0xfeff", `invalid port "0xfeff" (port numbers are decimal)`},
		{"in_port=0x10,actions=drop", `invalid port "0x10" (port numbers are decimal)`},
		{"table=0x10,actions=drop", `invalid table "0x10" (table numbers are decimal)`},
		{"NXM_OF_IN_PORT=3,actions=drop", `unknown field "NXM_OF_IN_PORT" (NXM and OXM names are for load and move: a match says in_port)`},
		{"actions=set_field:1->NXM_NX_REG7", `set_field: unknown field "NXM_NX_REG7" (NXM and OXM names are for load and move)`},
		{"actions=set_field:0x1005->vlan_vid", `set_field to vlan_vid requires a VLAN tag (dl_vlan=N, or vlan_tci=0x1000/0x1000)`},
		{"dl_vlan=9,actions=set_field:7->dl_vlan", `set_field: unsupported field "dl_vlan"`},
		{"udp,actions=set_field:53->tp_dst", `set_field to tp_dst requires a tcp match`},
		{"actions=resubmit:IN_PORT", `resubmit to IN_PORT needs a table: resubmit(,TABLE)`},
		{"dl_type=0x0800/0xff00,actions=drop", `invalid dl_type "0x0800/0xff00"`},
		{"actions=drop,output:1", `"drop" must be the only action`},
		{"actions=output:1,drop", `"drop" must be the only action`},
		{"actions=drop:1", `action "drop" takes no argument`},
		{"actions=output", `action "output" needs an argument (output:VALUE)`},
		{"actions=output:p9", `no port "p9"`},
		{"actions=output:0", `port 0 out of range (1-65280)`},
		{"actions=70000", `port 70000 out of range (1-65280)`},
		{"actions=output:)", `unbalanced parentheses in actions "output:)"`},
		{"actions=output:(", `unbalanced parentheses in actions "output:("`},
		{"actions=NORMAL:1", `action "NORMAL" takes no argument`},
		{"actions=strip_vlan:1", `action "strip_vlan" takes no argument`},
		{"actions=mod_dl_src:zz", `invalid MAC address "zz"`},
		{"actions=mod_vlan_vid:4096", `mod_vlan_vid 4096 out of range`},
		{"actions=push_vlan:0x0800", `push_vlan 0x0800: want 0x8100 or 0x88a8`},
		{"actions=mod_nw_dst:10.0.0.1", `mod_nw_dst requires an IPv4 match (ip)`},
		{"ipv6,actions=mod_nw_src:10.0.0.1", `mod_nw_src requires an IPv4 match (ip)`},
		{"ip,actions=mod_nw_dst:300.0.0.1", `invalid IPv4 address "300.0.0.1"`},
		{"ip,actions=mod_tp_dst:80", `mod_tp_dst requires a tcp, udp or sctp match`},
		{"tcp,actions=mod_tp_src:65536", `mod_tp_src 65536 out of range`},
		{"arp,actions=dec_ttl", `dec_ttl requires an ip or ipv6 match`},
		{"udp,actions=set_field:80->tcp_dst", `set_field to tcp_dst requires a tcp match`},
		{"tcp,actions=set_field:80->udp_dst", `set_field to udp_dst requires a udp match`},
		{"actions=set_field:10.0.0.1->ip_dst", `set_field to ip_dst requires an IPv4 match (ip)`},
		{"actions=set_field:1->nw_tos", `set_field: unsupported field "nw_tos"`},
		{"actions=set_field:1", `set_field "1": want VALUE->FIELD`},
		{"actions=set_field:0x2000->vlan_vid", `set_field vlan_vid 0x2000 out of range`},
		{"tcp,actions=set_field:x->tcp_dst", `invalid set_field tcp_dst "x"`},
	}
	for _, tt := range tests {
		r, err := ParseRule(tt.in, testPorts)
		if err == nil {
			t.Errorf("ParseRule(%q) = %+v, want error %q", tt.in, r, tt.want)
		} else if err.Error() != tt.want {
			t.Errorf("ParseRule(%q) error = %q, want %q", tt.in, err, tt.want)
		}
	}
}

func TestNoPortErrorNamesThePort(t *testing.T) {
	for _, in := range []string{"in_port=p9,actions=drop", "actions=output:p9"} {
		_, err := ParseRule(in, testPorts)
		var noPort *NoPortError
		if !errors.As(err, &noPort) || noPort.Name != "p9" {
			t.Errorf("ParseRule(%q) error = %v, want a *NoPortError for p9", in, err)
		}
	}
	// Without PortNames, names are unknown and numbers still work.
	if _, err := ParseRule("in_port=p1,actions=drop", nil); err == nil || err.Error() != `no port "p1"` {
		t.Errorf("ParseRule with nil ports: error = %v, want no port \"p1\"", err)
	}
	if _, err := ParseRule("in_port=1,actions=output:2", nil); err != nil {
		t.Errorf("ParseRule with nil ports and numbers: %v", err)
	}
}

func TestParseFilter(t *testing.T) {
	tests := []struct {
		in   string
		want Filter
	}{
		{"", Filter{}},
		{"tcp,tp_dst=80", Filter{Match: matchOf(isIPv4, isTCP, func(k, m *Key) { k.TpDst, m.TpDst = 80, 0xffff })}},
		{"priority=5,in_port=1", Filter{Priority: 5, HasPriority: true, Match: matchOf(func(k, m *Key) { k.InPort, m.InPort = 1, 0xffff })}},
		{"priority=0", Filter{HasPriority: true}},
		{"cookie=0x5/-1", Filter{Cookie: 5, CookieMask: math.MaxUint64}},
		{"cookie=0x15/0xf", Filter{Cookie: 5, CookieMask: 0xf}},
		{"cookie=7", Filter{Cookie: 7, CookieMask: math.MaxUint64}},
		{"cookie=7/0", Filter{}},
		{"n_packets=5 n_bytes=10 duration=1s idle_age=1 hard_age=2 table=0 arp", Filter{Match: matchOf(isARP, inTable(0))}},
		{"table=3,arp", Filter{Match: matchOf(isARP, inTable(3))}},
		{"table=255,arp", Filter{Match: matchOf(isARP)}}, // OpenFlow's "all tables"
	}
	for _, tt := range tests {
		got, err := ParseFilter(tt.in, testPorts)
		if err != nil {
			t.Errorf("ParseFilter(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseFilter(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}

	errTests := []struct{ in, want string }{
		{"idle_timeout=5", `field "idle_timeout" is not allowed in a match`},
		{"hard_timeout=5", `field "hard_timeout" is not allowed in a match`},
		{"tcp,actions=drop", "actions are not allowed in a match"},
		{"cookie=1/x", `invalid cookie mask "x"`},
		{"cookie=/1", `invalid cookie ""`},
		{"tp_dst=80", `field "tp_dst" requires tcp, udp or sctp (nw_proto=6, 17 or 132)`},
		{"in_port=p9", `no port "p9"`},
	}
	for _, tt := range errTests {
		got, err := ParseFilter(tt.in, testPorts)
		if err == nil {
			t.Errorf("ParseFilter(%q) = %+v, want error %q", tt.in, got, tt.want)
		} else if err.Error() != tt.want {
			t.Errorf("ParseFilter(%q) error = %q, want %q", tt.in, err, tt.want)
		}
	}
}

func TestFormatMatchOfHandBuiltMatches(t *testing.T) {
	// Matches the parser cannot produce still print every bit they hold.
	tests := []struct {
		m    Match
		want string
	}{
		{matchOf(func(k, m *Key) { k.InPort, m.InPort = 1, 0xf }), "in_port=0x1/0xf"},
		{matchOf(func(k, m *Key) { k.DlType, m.DlType = 0x0800, 0xff00 }), "dl_type=0x0800/0xff00"},
		{matchOf(isIPv4, func(k, m *Key) { k.NwFrag, m.NwFrag = 2, 3 }), "ip,ip_frag=0x2/0x3"},
		{matchOf(isIPv4, func(k, m *Key) { k.NwTOS, m.NwTOS = 0x10, 0x30 }), "ip,nw_tos=0x10/0x30"},
	}
	for _, tt := range tests {
		if got := FormatMatch(tt.m); got != tt.want {
			t.Errorf("FormatMatch(%+v) = %q, want %q", tt.m, got, tt.want)
		}
	}
	if got := FormatActions([]Action{{Type: 200}}); got != "unknown_action_type_200" {
		t.Errorf("FormatActions(type 200) = %q", got)
	}
}

// TestOrKeysCoversEveryField guards orKeys against a field added to Key.
func TestOrKeysCoversEveryField(t *testing.T) {
	var zero Key
	var each func(v reflect.Value, path string, fill func())
	each = func(v reflect.Value, path string, fill func()) {
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				each(v.Field(i), path+"."+v.Type().Field(i).Name, fill)
			}
			return
		case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			v.SetUint(math.MaxUint64 >> (64 - 8*v.Type().Size()))
		case reflect.Array:
			for j := range v.Len() {
				v.Index(j).SetUint(math.MaxUint64 >> (64 - 8*v.Type().Elem().Size()))
			}
		default:
			t.Fatalf("Key%s has kind %s that orKeys does not know", path, v.Kind())
		}
		fill()
	}
	var k Key
	each(reflect.ValueOf(&k).Elem(), "", func() {
		if got := orKeys(&zero, &k); got != k {
			t.Errorf("orKeys drops a field of %+v", k)
		}
		k = Key{}
	})
}

// checkRuleRoundTrip checks the core property on the rule that text parses
// to: formatting it (as a rule or as a dump line) and parsing the result
// gives the same rule, and formatting is a fixed point.
func checkRuleRoundTrip(t testing.TB, text string) {
	t.Helper()
	r, err := ParseRule(text, testPorts)
	if err != nil {
		return
	}
	if err := ruleRoundTrips(r); err != nil {
		t.Errorf("ParseRule(%q): %v", text, err)
	}
}

func ruleRoundTrips(r Rule) error {
	formatted := FormatRule(r)
	back, err := ParseRule(formatted, testPorts)
	if err != nil {
		return fmt.Errorf("ParseRule(FormatRule = %q): %v", formatted, err)
	}
	if !reflect.DeepEqual(back, r) {
		return fmt.Errorf("ParseRule(FormatRule = %q) =\n%+v, want\n%+v", formatted, back, r)
	}
	if again := FormatRule(back); again != formatted {
		return fmt.Errorf("FormatRule not canonical: %q then %q", formatted, again)
	}
	line := FormatDumpLine(r, DumpStats{Duration: 1500 * time.Millisecond, Packets: 3, Bytes: 180, IdleAge: time.Second, HardAge: 2 * time.Second})
	if back, err = ParseRule(line, nil); err != nil || !reflect.DeepEqual(back, r) {
		return fmt.Errorf("ParseRule(FormatDumpLine = %q) = %+v, %v; want %+v", line, back, err, r)
	}
	return nil
}

// filterText formats f the way ParseFilter reads it.
func filterText(f Filter) string {
	var fields []string
	if f.HasPriority {
		fields = append(fields, fmt.Sprintf("priority=%d", f.Priority))
	}
	if f.CookieMask != 0 {
		fields = append(fields, fmt.Sprintf("cookie=%#x/%#x", f.Cookie, f.CookieMask))
	}
	if f.Match.Mask.Table != 0 {
		fields = append(fields, fmt.Sprintf("table=%d", f.Match.Key.Table))
	}
	if f.OutPort != 0 {
		name, reserved := map[uint16]string{LocalPort: "LOCAL", NormalPort: "NORMAL", FloodPort: "FLOOD", AllPort: "ALL", InPortPort: "IN_PORT"}[f.OutPort]
		if !reserved {
			name = fmt.Sprint(f.OutPort)
		}
		fields = append(fields, "out_port="+name)
	}
	if m := FormatMatch(f.Match); m != "" {
		fields = append(fields, m)
	}
	return strings.Join(fields, ",")
}

// randomFlowText writes a flow from random fields with random values: most
// are valid, some break a prerequisite or conflict.
func randomFlowText(rnd *rand.Rand) string {
	mac := func() string {
		return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", rnd.IntN(256), rnd.IntN(256), rnd.IntN(256), rnd.IntN(256), rnd.IntN(256), rnd.IntN(256))
	}
	ipv4 := func() string {
		addr := fmt.Sprintf("%d.%d.%d.%d", rnd.IntN(256), rnd.IntN(256), rnd.IntN(256), rnd.IntN(256))
		switch rnd.IntN(3) {
		case 0:
			return addr + fmt.Sprintf("/%d", rnd.IntN(33))
		case 1:
			return addr + fmt.Sprintf("/%d.%d.%d.%d", rnd.IntN(256), rnd.IntN(256), rnd.IntN(256), rnd.IntN(256))
		}
		return addr
	}
	ipv6 := func() string {
		var a [16]byte
		for i := range a {
			if rnd.IntN(3) == 0 {
				a[i] = byte(rnd.IntN(256))
			}
		}
		text := netip.AddrFrom16(a).String()
		if rnd.IntN(2) == 0 {
			text += fmt.Sprintf("/%d", rnd.IntN(129))
		}
		return text
	}
	port := func() string {
		if rnd.IntN(3) == 0 {
			return fmt.Sprintf("%d/%#x", rnd.IntN(65536), rnd.IntN(65536))
		}
		return fmt.Sprint(rnd.IntN(65536))
	}
	fields := []func() string{
		func() string { return fmt.Sprintf("in_port=%d", 1+rnd.IntN(5)) },
		func() string { return "in_port=p2" },
		func() string { return "dl_src=" + mac() },
		func() string { return "dl_dst=" + mac() + "/" + mac() },
		func() string { return fmt.Sprintf("dl_vlan=%d", rnd.IntN(4096)) },
		func() string { return "dl_vlan=0xffff" },
		func() string { return fmt.Sprintf("dl_vlan_pcp=%d", rnd.IntN(8)) },
		func() string { return fmt.Sprintf("vlan_tci=%#x/%#x", rnd.IntN(65536), rnd.IntN(65536)) },
		func() string { return "nw_src=" + ipv4() },
		func() string { return "nw_dst=" + ipv4() },
		func() string { return "arp_spa=" + ipv4() },
		func() string { return "arp_tpa=" + ipv4() },
		func() string { return "ipv6_src=" + ipv6() },
		func() string { return "ipv6_dst=" + ipv6() },
		func() string { return fmt.Sprintf("nw_proto=%d", []int{1, 6, 17, 58, 47, rnd.IntN(256)}[rnd.IntN(6)]) },
		func() string { return fmt.Sprintf("arp_op=%d", rnd.IntN(3)) },
		func() string { return fmt.Sprintf("nw_tos=%d", rnd.IntN(64)*4) },
		func() string { return fmt.Sprintf("ip_dscp=%d", rnd.IntN(64)) },
		func() string { return fmt.Sprintf("nw_ecn=%d", rnd.IntN(4)) },
		func() string { return fmt.Sprintf("nw_ttl=%d", rnd.IntN(256)) },
		func() string { return "ip_frag=" + []string{"no", "yes", "first", "later", "not_later"}[rnd.IntN(5)] },
		func() string { return "tp_src=" + port() },
		func() string { return "tp_dst=" + port() },
		func() string { return "tcp_dst=" + port() },
		func() string { return "udp_src=" + port() },
		func() string { return fmt.Sprintf("icmp_type=%d", rnd.IntN(256)) },
		func() string { return fmt.Sprintf("icmp_code=%d", rnd.IntN(256)) },
		func() string { return fmt.Sprintf("dl_type=%#04x", []int{0x0800, 0x86dd, 0x0806, 0x88cc}[rnd.IntN(4)]) },
		func() string { return fmt.Sprintf("priority=%d", rnd.IntN(65536)) },
		func() string { return fmt.Sprintf("cookie=%#x", rnd.Uint64()) },
		func() string { return fmt.Sprintf("idle_timeout=%d", rnd.IntN(65536)) },
		func() string { return fmt.Sprintf("hard_timeout=%d", rnd.IntN(65536)) },
		func() string { return []string{"send_flow_rem", "no_packet_counts", "no_byte_counts"}[rnd.IntN(3)] },
	}
	shorthands := []string{"", "ip", "ipv6", "arp", "icmp", "icmp6", "tcp", "udp", "tcp6", "udp6"}
	actions := []func() string{
		func() string { return fmt.Sprintf("output:%d", 1+rnd.IntN(10)) },
		func() string { return "p1" },
		func() string { return []string{"NORMAL", "flood", "ALL", "in_port"}[rnd.IntN(4)] },
		func() string { return "mod_dl_src:" + mac() },
		func() string { return "set_field:" + mac() + "->eth_dst" },
		func() string { return fmt.Sprintf("mod_vlan_vid:%d", rnd.IntN(4096)) },
		func() string { return fmt.Sprintf("set_field:%#x->vlan_vid", 0x1000|rnd.IntN(4096)) },
		func() string {
			return []string{"strip_vlan", "pop_vlan", "push_vlan:0x8100", "push_vlan:0x88a8", "dec_ttl"}[rnd.IntN(5)]
		},
		func() string {
			return fmt.Sprintf("mod_nw_src:%d.%d.%d.%d", rnd.IntN(256), rnd.IntN(256), rnd.IntN(256), rnd.IntN(256))
		},
		func() string { return fmt.Sprintf("set_field:10.0.0.%d->ip_dst", rnd.IntN(256)) },
		func() string { return fmt.Sprintf("mod_tp_dst:%d", rnd.IntN(65536)) },
		func() string { return fmt.Sprintf("set_field:%d->tcp_src", rnd.IntN(65536)) },
	}

	var parts []string
	if s := shorthands[rnd.IntN(len(shorthands))]; s != "" {
		parts = append(parts, s)
	}
	for range rnd.IntN(5) {
		parts = append(parts, fields[rnd.IntN(len(fields))]())
	}
	rnd.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	var acts []string
	for range rnd.IntN(4) {
		acts = append(acts, actions[rnd.IntN(len(actions))]())
	}
	return strings.Join(parts, []string{",", " ", ", "}[rnd.IntN(3)]) + " actions=" + strings.Join(acts, ",")
}

// TestRandomRulesRoundTrip checks the round trip on many valid flows, which
// the fuzzer, starting from bytes, rarely builds.
func TestRandomRulesRoundTrip(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	const n = 20000
	accepted := 0
	for range n {
		text := randomFlowText(rnd)
		r, err := ParseRule(text, testPorts)
		if err != nil {
			continue
		}
		accepted++
		if err := ruleRoundTrips(r); err != nil {
			t.Fatalf("ParseRule(%q): %v", text, err)
		}
		match, _, _ := strings.Cut(text, "actions=")
		if ruleOnlyWords(match) {
			continue // not allowed in a match
		}
		f, err := ParseFilter(match, testPorts)
		if err != nil {
			t.Fatalf("ParseFilter(%q) of an accepted rule: %v", match, err)
		}
		want := r.Match
		if !strings.Contains(match, "table=") {
			want.Key.Table, want.Mask.Table = 0, 0 // a filter without table= is for all tables
		}
		if f.Match != want {
			t.Fatalf("ParseFilter(%q).Match differs from ParseRule's", match)
		}
	}
	if accepted < n/4 {
		t.Errorf("only %d of %d random flows parsed; the generator has drifted", accepted, n)
	}
	t.Logf("%d of %d random flows parsed and round-tripped", accepted, n)
}
