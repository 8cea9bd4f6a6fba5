package vswitch

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/header"
	"github.com/xswitch/xswitch/internal/race"
)

// mplsSpec is a UDP datagram over IPv4 or IPv6, under a label stack (none
// for a plain IP frame), behind 802.1Q tags: what the MPLS tests send,
// and what they expect, serialized from scratch by gopacket.
type mplsSpec struct {
	tags   []uint16 // the tags' TCIs, outermost first
	labels []layers.MPLS
	v6     bool
	tos    uint8 // IPv4 TOS, IPv6 traffic class
	ttl    uint8
	dst    byte // IPv4: the destination's last byte, 10.0.0.2 if 0
	// etherType, when set, is what the last tag (or the Ethernet header)
	// says in place of the EtherType of what follows it.
	etherType uint16
}

func (s mplsSpec) build(tb testing.TB) []byte {
	tb.Helper()
	var ip gopacket.NetworkLayer
	ipType := layers.EthernetTypeIPv4
	if s.v6 {
		ip, ipType = &layers.IPv6{Version: 6, TrafficClass: s.tos, HopLimit: s.ttl, NextHeader: layers.IPProtocolUDP,
			SrcIP: net.ParseIP("fd00::1"), DstIP: net.ParseIP("fd00::2")}, layers.EthernetTypeIPv6
	} else {
		dst := net.IP{10, 0, 0, 2}
		if s.dst != 0 {
			dst[3] = s.dst
		}
		ip = &layers.IPv4{Version: 4, TOS: s.tos, TTL: s.ttl, Protocol: layers.IPProtocolUDP,
			SrcIP: net.IP{10, 0, 0, 1}, DstIP: dst}
	}
	udp := &layers.UDP{SrcPort: 4000, DstPort: 5000}
	if err := udp.SetNetworkLayerForChecksum(ip); err != nil {
		tb.Fatal(err)
	}
	// The EtherType before each header, from the innermost out.
	next := ipType
	if len(s.labels) > 0 {
		next = layers.EthernetTypeMPLSUnicast
	}
	if s.etherType != 0 {
		next = layers.EthernetType(s.etherType)
	}
	var l2 []gopacket.SerializableLayer
	for i := len(s.tags) - 1; i >= 0; i-- {
		tag := &layers.Dot1Q{Priority: uint8(s.tags[i] >> 13), VLANIdentifier: s.tags[i] & header.VLANVIDMask, Type: next}
		l2, next = append([]gopacket.SerializableLayer{tag}, l2...), layers.EthernetTypeDot1Q
	}
	ls := append([]gopacket.SerializableLayer{&layers.Ethernet{SrcMAC: mac(1), DstMAC: mac(2), EthernetType: next}}, l2...)
	for i := range s.labels {
		ls = append(ls, &s.labels[i])
	}
	ls = append(ls, ip.(gopacket.SerializableLayer), udp, gopacket.Payload("the datagram's payload"))
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		tb.Fatal(err)
	}
	return bytes.Clone(buf.Bytes())
}

func lse(label uint32, tc uint8, bottom bool, ttl uint8) layers.MPLS {
	return layers.MPLS{Label: label, TrafficClass: tc, StackBottom: bottom, TTL: ttl}
}

// TestMPLSThroughThePipeline sends frames through rules that push, pop and
// set labels, and match on them: each leaves byte for byte as gopacket
// serializes the frame it should be, and a label's TTL that would reach 0
// drops its frame, counted as a ttl drop, as a stack deeper than the key
// holds does a push onto it, counted as an mpls drop.
func TestMPLSThroughThePipeline(t *testing.T) {
	ports := newPorts(3)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t,
		// On IP: a push, the label worked out of the IP header.
		"priority=10,ip,nw_tos=0xb8,actions=push_mpls:0x8847,output:2",
		"priority=10,ipv6,actions=push_mpls:0x8848,set_mpls_label:1000,set_mpls_tc:1,output:2",
		// Pushed, then matched in the next table on what was pushed.
		"priority=10,ip,nw_tos=0x20,actions=push_mpls:0x8847,goto_table:1",
		"table=1,priority=10,mpls,mpls_label=0,mpls_tc=0,mpls_ttl=64,mpls_bos=1,actions=output:3",
		// On MPLS: a pop to the IP packet under the stack, which the next
		// actions and tables see.
		"priority=10,mpls,mpls_label=100,actions=pop_mpls:0x0800,dec_ttl,output:2",
		"priority=10,mpls,mpls_label=101,actions=pop_mpls:0x0800,goto_table:2",
		"table=2,priority=10,udp,nw_dst=10.0.0.2,tp_dst=5000,actions=mod_nw_dst:10.0.0.9,output:3",
		"priority=10,mpls,mpls_label=200,mpls_bos=0,actions=pop_mpls:0x8847,set_mpls_ttl:7,dec_mpls_ttl,output:2",
		"priority=10,mpls,mpls_label=300,actions=set_field:301->mpls_label,load:5->OXM_OF_MPLS_TC[],set_field:33->reg0,"+
			"move:NXM_NX_REG0[0..7]->NXM_NX_MPLS_TTL[],output:2",
		"priority=10,mpls,mpls_label=400,actions=dec_mpls_ttl,output:2",
		"priority=10,mpls,mpls_label=500,actions=push_mpls:0x8847,output:2",
		"priority=0,actions=drop"))

	ip4 := mplsSpec{tos: 0xb9, ttl: 9} // DSCP 46: TC 6, its low bits, as OVS takes them
	tagged := mplsSpec{tags: []uint16{5<<13 | 10}, tos: 0xb8, ttl: 0}
	ip6 := mplsSpec{v6: true, tos: 0x28, ttl: 63}
	pushedNext := mplsSpec{tos: 0x20, ttl: 64}
	popped := mplsSpec{labels: []layers.MPLS{lse(100, 3, true, 20)}, tos: 4, ttl: 30}
	poppedNext := mplsSpec{labels: []layers.MPLS{lse(101, 0, true, 20)}, ttl: 30}
	two := mplsSpec{tags: []uint16{7}, labels: []layers.MPLS{lse(200, 1, false, 9), lse(201, 2, true, 8)}, ttl: 5}
	set := mplsSpec{labels: []layers.MPLS{lse(300, 0, true, 2)}, v6: true, ttl: 5}
	last := mplsSpec{labels: []layers.MPLS{lse(400, 0, true, 1)}, ttl: 5}
	deep := mplsSpec{labels: []layers.MPLS{lse(500, 0, false, 1), lse(501, 0, false, 1), lse(502, 0, true, 1)}, ttl: 5}

	with := func(s mplsSpec, edit func(*mplsSpec)) []byte {
		s.labels, s.tags = append([]layers.MPLS(nil), s.labels...), append([]uint16(nil), s.tags...)
		edit(&s)
		return s.build(t)
	}
	for _, s := range []mplsSpec{ip4, tagged, ip6, pushedNext, popped, poppedNext, two, set, last, deep} {
		ports[0].Inject(s.build(t))
	}
	forwardAll(f)
	wantFrames(t, ports[1],
		with(ip4, func(s *mplsSpec) { s.labels = []layers.MPLS{lse(0, 6, true, 9)} }),
		// A TTL of 0 pushes 64; the label goes after the tags.
		with(tagged, func(s *mplsSpec) { s.labels = []layers.MPLS{lse(0, 6, true, 64)} }),
		with(ip6, func(s *mplsSpec) {
			s.labels, s.etherType = []layers.MPLS{lse(1000, 1, true, 63)}, header.EtherTypeMPLSMulticast
		}),
		with(popped, func(s *mplsSpec) { s.labels, s.ttl = nil, 29 }),
		with(two, func(s *mplsSpec) { s.labels = []layers.MPLS{lse(201, 2, true, 6)} }),
		with(set, func(s *mplsSpec) { s.labels = []layers.MPLS{lse(301, 5, true, 33)} }),
	)
	wantFrames(t, ports[2],
		with(pushedNext, func(s *mplsSpec) { s.labels = []layers.MPLS{lse(0, 0, true, 64)} }),
		// The packet under the stack is whole again: its headers are
		// rewritten, and matched, after the pop.
		with(poppedNext, func(s *mplsSpec) { s.labels, s.dst = nil, 9 }),
	)
	if got := f.bridgeDrops.pipeline(); got[dropTTL] != 1 || got[dropMPLS] != 1 {
		t.Errorf("pipeline drops %v: want 1 ttl drop (dec_mpls_ttl of 1) and 1 mpls drop (a push onto 3 labels)", got.ByReason())
	}
}

// TestMPLSCopiesTTLs: copy_ttl_out gives the top label the TTL of the
// next label, or of the IP packet under the stack; copy_ttl_in gives the
// top label's TTL to them, the IPv4 checksum right: a conformance suite's
// frames (a label of TTL 64 over IPv4 or IPv6 of TTL 32), and two labels,
// each leaving as gopacket serializes what it should be.
func TestMPLSCopiesTTLs(t *testing.T) {
	ports := newPorts(2)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t,
		"priority=10,mpls,mpls_label=100,actions=copy_ttl_out,output:2",
		"priority=10,mpls,mpls_label=101,actions=copy_ttl_in,output:2",
		"priority=10,mpls,mpls_label=200,actions=copy_ttl_out,output:2",
		"priority=10,mpls,mpls_label=201,actions=copy_ttl_in,output:2",
		// Into the packet under the stack, which the pop shows.
		"priority=10,mpls,mpls_label=300,actions=copy_ttl_in,pop_mpls:0x0800,goto_table:1",
		"table=1,priority=10,ip,nw_ttl=64,actions=output:2",
		"priority=0,actions=drop"))
	out4 := mplsSpec{labels: []layers.MPLS{lse(100, 3, true, 64)}, tos: 32, ttl: 32}
	out6 := mplsSpec{labels: []layers.MPLS{lse(100, 3, true, 64)}, v6: true, tos: 32, ttl: 32}
	in4 := mplsSpec{labels: []layers.MPLS{lse(101, 3, true, 64)}, tos: 32, ttl: 32}
	in6 := mplsSpec{labels: []layers.MPLS{lse(101, 3, true, 64)}, v6: true, ttl: 32}
	outTwo := mplsSpec{labels: []layers.MPLS{lse(200, 0, false, 9), lse(7, 0, true, 5)}, ttl: 3}
	inTwo := mplsSpec{labels: []layers.MPLS{lse(201, 0, false, 9), lse(7, 0, true, 5)}, ttl: 3}
	popped := mplsSpec{labels: []layers.MPLS{lse(300, 0, true, 64)}, ttl: 2}
	for _, s := range []mplsSpec{out4, out6, in4, in6, outTwo, inTwo, popped} {
		ports[0].Inject(s.build(t))
	}
	forwardAll(f)
	with := func(s mplsSpec, edit func(*mplsSpec)) []byte {
		s.labels = append([]layers.MPLS(nil), s.labels...)
		edit(&s)
		return s.build(t)
	}
	wantFrames(t, ports[1],
		with(out4, func(s *mplsSpec) { s.labels[0].TTL = 32 }),
		with(out6, func(s *mplsSpec) { s.labels[0].TTL = 32 }),
		with(in4, func(s *mplsSpec) { s.ttl = 64 }),
		with(in6, func(s *mplsSpec) { s.ttl = 64 }),
		with(outTwo, func(s *mplsSpec) { s.labels[0].TTL = 5 }),
		with(inTwo, func(s *mplsSpec) { s.labels[1].TTL = 9 }),
		with(popped, func(s *mplsSpec) { s.labels, s.ttl = nil, 64 }),
	)
}

// TestMPLSKeyFollowsTheFrame is the property that translation rests on:
// random MPLS actions (and IP ones, which a pop may make fit) worked out
// by the translator on a frame's key, and run by the executor on the
// frame, leave a frame whose key and layout, extracted afresh, are the
// ones the translation and the executor ended with.
func TestMPLSKeyFollowsTheFrame(t *testing.T) {
	ports := newPorts(1)
	f := testForwarder(t, 64, ports...)
	e := flow.NewExtractor()
	rnd := rand.New(rand.NewPCG(28, 8847))
	etherTypes := []uint16{header.EtherTypeIPv4, header.EtherTypeIPv6, header.EtherTypeMPLS, header.EtherTypeMPLSMulticast, header.EtherTypeARP}
	var compared, pushed, revealed int
	for range 6000 {
		s := mplsSpec{v6: rnd.IntN(2) == 0, tos: uint8(rnd.Uint32()), ttl: uint8(rnd.Uint32())}
		for range rnd.IntN(3) {
			s.tags = append(s.tags, uint16(rnd.IntN(1<<16))&^header.VLANDEIMask)
		}
		for i, n := 0, rnd.IntN(4); i < n; i++ {
			// Labels whose entries start with a 0 nibble: popped to IP
			// while not the bottom, an entry is no IP header.
			s.labels = append(s.labels, lse(uint32(rnd.IntN(1<<16)), uint8(rnd.IntN(8)), i == n-1, uint8(rnd.Uint32())))
		}
		frame := s.build(t)
		frame = append(make([]byte, 0, len(frame)+64), frame...)
		var actions []flow.Action
		for range 1 + rnd.IntN(6) {
			var a flow.Action
			switch rnd.IntN(9) {
			case 0, 1:
				a = flow.Action{Type: flow.ActPushMPLS, Value: etherTypes[2+rnd.IntN(2)]}
			case 2:
				a = flow.Action{Type: flow.ActPopMPLS, Value: etherTypes[rnd.IntN(len(etherTypes))]}
			case 3:
				// The packet's own, mostly right.
				a = flow.Action{Type: flow.ActPopMPLS, Value: map[bool]uint16{false: flow.EtherTypeIPv4, true: flow.EtherTypeIPv6}[s.v6]}
			case 4:
				a = flow.Action{Type: flow.ActSetMPLSLabel, Imm: flow.Value{Lo: uint64(rnd.IntN(1 << 16))}}
			case 5:
				a = flow.Action{Type: flow.ActSetMPLSTC, Value: uint16(rnd.IntN(8))}
			case 6:
				ttlActions := []flow.ActionType{flow.ActSetMPLSTTL, flow.ActDecMPLSTTL, flow.ActCopyTTLOut, flow.ActCopyTTLIn}
				a = flow.Action{Type: ttlActions[rnd.IntN(len(ttlActions))], Value: uint16(rnd.IntN(256))}
			case 7:
				a = flow.Action{Type: flow.ActDecTTL}
			default:
				a = flow.Action{Type: flow.ActSetNwDst, IPv4: [4]byte{10, 9, 9, byte(rnd.IntN(256))}}
			}
			actions = append(actions, a)
		}
		var k flow.Key
		if !e.Extract(frame, 1, &k) {
			t.Fatalf("%x does not extract", frame)
		}
		layout := e.Layout()
		var d decision
		tr := &f.decisions.tr
		tr.translateActions(f.flows.Load(), &k.Headers, actions, &d, 0)
		want := tr.key.Headers
		context := fmt.Sprintf("frame %x\nactions %s\ndecision %s", s.build(t), flow.FormatActions(actions), flow.FormatActions(d.actions))
		// misnamed says that a pop named something other than what is
		// under the entry it took off: the last entry, to MPLS; another,
		// to other than MPLS; the last, to other than the packet.
		kept, misnamed := true, false
		for i := range d.actions {
			a := &d.actions[i]
			if a.Type == flow.ActPushMPLS {
				pushed++
			}
			if a.Type == flow.ActPopMPLS && layout.MPLS {
				bottom := binary.BigEndian.Uint32(frame[int(layout.EtherType)+2:])&header.MPLSBOSMask != 0
				misnamed = misnamed || bottom == header.IsMPLS(a.Value) ||
					bottom && a.Value != map[uint8]uint16{4: flow.EtherTypeIPv4, 6: flow.EtherTypeIPv6}[layout.Under.IPVersion]
			}
			if frame, kept = rewrite(a, frame, &layout); !kept {
				break
			}
		}
		switch {
		case !kept && !d.dropped.stopsActions():
			t.Fatalf("the executor dropped what translation kept (%v)\n%s", DropReasons[d.dropped], context)
		case !kept || d.dropped.stopsActions():
			continue
		case misnamed:
			// Then the frame's EtherType says its bytes are what they are
			// not. The key knows nothing of them, as OVS's flow does not:
			// it keeps the fields of such a packet zero, which rewrites
			// write where the frame has no header, and remembers what a
			// push onto it goes over as the pop named it; the extractor
			// reads the bytes as the EtherType, or the version field under
			// a stack, says.
			continue
		}
		var got flow.Key
		e.Extract(frame, 1, &got)
		if got.Headers != want {
			t.Fatalf("the frame's key\n%+v\nthe translation's\n%+v\n%s\nframe now %x", got.Headers, want, context, frame)
		}
		if e.Layout() != layout {
			t.Fatalf("the frame's layout\n%+v\nthe executor's\n%+v\n%s\nframe now %x", e.Layout(), layout, context, frame)
		}
		if k.IsMPLS() && !want.IsMPLS() && (want.DlType == flow.EtherTypeIPv4 || want.DlType == flow.EtherTypeIPv6) && want.NwTTL != 0 {
			revealed++
		}
		compared++
	}
	t.Logf("%d frames compared, %d pushes run, %d packets revealed by a pop", compared, pushed, revealed)
	if compared < 2000 || pushed < 1500 || revealed < 150 {
		t.Errorf("the test hardly tests it")
	}
}

// TestMPLSRewritesAllocateNothing: a push, the sets and a pop, each on
// the frame in place.
func TestMPLSRewritesAllocateNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates")
	}
	e := flow.NewExtractor()
	in := mplsSpec{tags: []uint16{10}, ttl: 9}.build(t)
	buf := make([]byte, len(in)+64)
	actions := []flow.Action{
		{Type: flow.ActPushMPLS, Value: header.EtherTypeMPLS, Imm: flow.Value{Lo: 5<<12 | 1<<8 | 9}},
		{Type: flow.ActSetMPLSLabel, Imm: flow.Value{Lo: 77}}, {Type: flow.ActSetMPLSTC, Value: 3}, {Type: flow.ActSetMPLSTTL, Value: 8},
		{Type: flow.ActPopMPLS, Value: header.EtherTypeIPv4},
	}
	var k flow.Key
	allocs := testing.AllocsPerRun(100, func() {
		frame := buf[:copy(buf, in)]
		e.Extract(frame, 1, &k)
		l := e.Layout()
		for i := range actions {
			frame, _ = rewrite(&actions[i], frame, &l)
		}
		if !bytes.Equal(frame, in) {
			panic("push, sets and pop are not the frame again")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per frame, want 0", allocs)
	}
}

// TestTraceOfMPLS: trace says what the MPLS actions did to the label
// stack, and why a frame went nowhere.
func TestTraceOfMPLS(t *testing.T) {
	b := newTestBridge(t)
	ports := newPorts(2)
	for _, p := range ports {
		if _, err := b.AddPort(p, PortOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	b.SetFlows(rules(t, "priority=10,mpls,actions=dec_mpls_ttl,output:2",
		"priority=10,ip,actions=push_mpls:0x8847,push_mpls:0x8847,push_mpls:0x8847,push_mpls:0x8847,output:2"))
	for _, c := range []struct {
		frame []byte
		note  string
	}{
		{mplsSpec{labels: []layers.MPLS{lse(5, 0, true, 9)}, ttl: 1}.build(t), "MPLS TTL is now 8"},
		{mplsSpec{labels: []layers.MPLS{lse(5, 0, true, 1)}, ttl: 1}.build(t), "MPLS TTL 1 would reach 0: dropped"},
		{mplsSpec{ttl: 1}.build(t), "the label stack is deeper than the 3 entries the key holds: dropped, as OVS drops it"},
	} {
		res, notes := traced(t, b, 1, c.frame)
		if !strings.Contains(notes, c.note) || len(res.Outputs) != map[bool]int{true: 1, false: 0}[strings.HasSuffix(c.note, "8")] {
			t.Errorf("trace of %x: outputs %v, notes\n%s\nwant %q", c.frame, res.Outputs, notes, c.note)
		}
	}
}
