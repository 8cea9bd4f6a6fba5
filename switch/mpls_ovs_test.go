package vswitch

import (
	"testing"

	"github.com/google/gopacket/layers"
)

// TestMPLSAsOVSDoesIt is a differential test against Open vSwitch itself
// (its dummy datapath, run by the test): the same rules, the same frames
// in, and each port sends the same frames out, byte for byte, in the same
// order. It covers what OVS's own tests and its ofproto/trace cannot show
// at once: the label a push works out of the IP header, and the packet
// that a pop of the last label shows to the actions and tables after it,
// which OVS reads by recirculating the frame.
func TestMPLSAsOVSDoesIt(t *testing.T) {
	flows := []string{
		"priority=10,in_port=1,ip,nw_tos=0xb8,actions=push_mpls:0x8847,output:2",
		"priority=10,in_port=1,ipv6,actions=push_mpls:0x8848,set_mpls_label:1000,set_mpls_tc:1,output:2",
		"priority=10,in_port=1,ip,nw_tos=0x20,actions=push_mpls:0x8847,goto_table:1",
		"table=1,priority=10,mpls,mpls_label=0,mpls_tc=0,mpls_bos=1,actions=set_mpls_ttl:5,output:3",
		"priority=10,in_port=1,mpls,mpls_label=100,actions=pop_mpls:0x0800,dec_ttl,output:2",
		"priority=10,in_port=1,mpls,mpls_label=101,actions=pop_mpls:0x0800,goto_table:2",
		"table=2,priority=10,udp,nw_dst=10.0.0.2,tp_dst=5000,nw_ttl=30,actions=mod_nw_dst:10.0.0.9,output:3",
		"priority=10,in_port=1,mpls,mpls_label=200,mpls_bos=0,actions=pop_mpls:0x8847,set_mpls_ttl:7,dec_mpls_ttl,output:2",
		"priority=10,in_port=1,mpls,mpls_label=300,actions=set_field:301->mpls_label,load:5->OXM_OF_MPLS_TC[],output:2",
		"priority=10,in_port=1,mpls,mpls_label=400,actions=dec_mpls_ttl,output:2",
		"priority=10,in_port=1,mpls,mpls_label=500,actions=push_mpls:0x8847,output:2",
		"priority=10,in_port=1,mpls,mpls_label=600,actions=push_mpls:0x8848,set_mpls_label:601,output:3",
		"priority=10,in_port=1,mpls,mpls_label=700,actions=pop_mpls:0x86dd,output:3",
		"priority=10,in_port=1,mpls,mpls_label=800,actions=output:2,pop_mpls:0x0800,output:3",
		"priority=0,actions=drop",
	}
	frames := []mplsSpec{
		{tos: 0xb9, ttl: 9},
		{tags: []uint16{5<<13 | 10}, tos: 0xb8, ttl: 0},
		{v6: true, tos: 0x28, ttl: 63},
		{tos: 0x20, ttl: 64},
		{labels: []layers.MPLS{lse(100, 3, true, 20)}, tos: 4, ttl: 30},
		{labels: []layers.MPLS{lse(101, 0, true, 20)}, ttl: 30},
		{labels: []layers.MPLS{lse(101, 0, true, 20)}, ttl: 31},
		{tags: []uint16{7}, labels: []layers.MPLS{lse(200, 1, false, 9), lse(201, 2, true, 8)}, ttl: 5},
		{labels: []layers.MPLS{lse(300, 0, true, 2)}, v6: true, ttl: 5},
		{labels: []layers.MPLS{lse(400, 0, true, 1)}, ttl: 5},
		{labels: []layers.MPLS{lse(400, 0, true, 2)}, ttl: 5},
		{labels: []layers.MPLS{lse(500, 0, false, 1), lse(501, 0, false, 1), lse(502, 0, true, 1)}, ttl: 5},
		{labels: []layers.MPLS{lse(600, 4, false, 3), lse(601, 0, true, 1)}, ttl: 5},
		{labels: []layers.MPLS{lse(700, 0, true, 9)}, ttl: 5},
		{labels: []layers.MPLS{lse(800, 0, true, 9)}, tos: 0x10, ttl: 5},
	}
	var in [][]byte
	for _, s := range frames {
		in = append(in, s.build(t))
	}
	sent := 0
	for _, n := range sameAsOVS(t, flows, 3, in) {
		sent += n
	}
	if sent < 10 {
		t.Errorf("OVS sent only %d frames: the test hardly tests it", sent)
	}
}
