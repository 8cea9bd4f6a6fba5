package vswitch

import (
	"net"
	"slices"
	"testing"
	"time"

	"github.com/google/gopacket/layers"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/header"
	"github.com/xswitch/xswitch/internal/race"
	"github.com/xswitch/xswitch/port/porttest"
)

// TestGotoTableACLThenNormal: table 0 classifies, table 1 drops one TCP
// port, table 2 is NORMAL; the counters of each table see the frames.
func TestGotoTableACLThenNormal(t *testing.T) {
	ports := newPorts(2)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t,
		"table=0,priority=0,actions=goto_table:1",
		"table=1,priority=100,udp,tp_dst=9,actions=drop",
		"table=1,priority=0,actions=goto_table:2",
		"table=2,priority=0,actions=NORMAL"))
	pass := udpFrame(t, broadcast, mac(1), net.IPv4(10, 0, 0, 1), net.IPv4(10, 0, 0, 2), 1000, 80, nil)
	blocked := udpFrame(t, broadcast, mac(1), net.IPv4(10, 0, 0, 1), net.IPv4(10, 0, 0, 2), 1000, 9, nil)
	ports[0].Inject(pass, blocked, pass)
	forwardAll(f)
	wantFrames(t, ports[1], pass, pass)
	for table, want := range map[uint8][2]uint64{0: {3, 3}, 1: {3, 3}, 2: {2, 2}, 3: {0, 0}} {
		c := &f.tableCounters[table]
		if got := [2]uint64{c.lookups.Load(), c.matched.Load()}; got != want {
			t.Errorf("table %d: lookups, matched = %v; want %v", table, got, want)
		}
	}
	if got := f.bridgeDrops[dropRule].Load(); got != 1 {
		t.Errorf("rule drops = %d; want 1", got)
	}
}

// TestResubmitCarriesRegisters: table 0 stores the input port's choice in
// reg0 and resubmits; table 1 outputs by reg0. The input port is restored
// after a resubmit that changes it.
func TestResubmitCarriesRegisters(t *testing.T) {
	ports := newPorts(3)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t,
		"in_port=1,actions=load:3->reg0[0..15],resubmit(,1),resubmit(2,2)",
		"table=1,reg0=3,actions=output:3",
		"table=2,in_port=2,actions=output:1", // back to port 1: in_port is 2 here
		"table=2,in_port=1,actions=output:2"))
	fr := frame(mac(9), mac(1), "x")
	ports[0].Inject(fr)
	forwardAll(f)
	wantFrames(t, ports[2], fr)
	wantFrames(t, ports[1])
	wantFrames(t, ports[0], fr)
}

// TestResubmitLoopIsCutAndCounted: two tables that resubmit to each other
// drop the frame at the depth limit; forwarding goes on.
func TestResubmitLoopIsCutAndCounted(t *testing.T) {
	ports := newPorts(2)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t,
		"priority=10,udp,actions=resubmit(,1)",
		"table=1,actions=resubmit(,0)",
		"priority=0,actions=NORMAL"))
	loop := udpFrame(t, broadcast, mac(1), net.IPv4(10, 0, 0, 1), net.IPv4(10, 0, 0, 2), 1, 2, nil)
	other := frame(broadcast, mac(1), "not udp")
	ports[0].Inject(loop, other, loop)
	forwardAll(f)
	wantFrames(t, ports[1], other)
	if got := f.bridgeDrops[dropLoop].Load(); got != 2 {
		t.Errorf("loop drops = %d; want 2", got)
	}
	// Deep as the limit, and no deeper.
	if got := f.tableCounters[1].lookups.Load(); got != 2*(MaxPipelineDepth/2) {
		t.Errorf("table 1 lookups = %d; want %d", got, 2*(MaxPipelineDepth/2))
	}
}

// TestResubmitLimitCutsAWideTree: a rule that resubmits twice to a table
// that does the same makes a tree of 2^64 lookups; the resubmit limit
// cuts it long before.
func TestResubmitLimitCutsAWideTree(t *testing.T) {
	ports := newPorts(2)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t, "actions=resubmit(,0),resubmit(,0)"))
	ports[0].Inject(frame(broadcast, mac(1), "x"))
	forwardAll(f)
	if got := f.bridgeDrops[dropLoop].Load(); got != 1 {
		t.Errorf("loop drops = %d; want 1", got)
	}
	if got := f.tableCounters[0].lookups.Load(); got > MaxResubmits+1 {
		t.Errorf("%d lookups; the limit is %d resubmits", got, MaxResubmits)
	}
}

// TestTableMissAfterGotoDrops: a goto into an empty table drops the frame
// and says why.
func TestTableMissAfterGotoDrops(t *testing.T) {
	ports := newPorts(2)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t, "actions=goto_table:5"))
	ports[0].Inject(frame(broadcast, mac(1), "x"))
	forwardAll(f)
	wantFrames(t, ports[1])
	if got := f.bridgeDrops[dropTableMiss].Load(); got != 1 {
		t.Errorf("table-miss drops = %d; want 1", got)
	}
}

// TestRewriteIsSeenByLaterTables: a later table matches on what an earlier
// one rewrote.
func TestRewriteIsSeenByLaterTables(t *testing.T) {
	ports := newPorts(3)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t,
		"actions=mod_dl_dst:02:00:00:00:00:33,goto_table:1",
		"table=1,dl_dst=02:00:00:00:00:33,actions=output:3",
		"table=1,priority=0,actions=output:2"))
	ports[0].Inject(frame(mac(9), mac(1), "x"))
	forwardAll(f)
	wantFrames(t, ports[2], frame(mac(0x33), mac(1), "x"))
	wantFrames(t, ports[1])
}

// TestOutputMaxLenTruncates: output(port=N,max_len=M) sends the first M
// bytes.
func TestOutputMaxLenTruncates(t *testing.T) {
	ports := newPorts(2)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t, "actions=output(port=2,max_len=20)"))
	fr := frame(mac(9), mac(1), "a payload longer than six bytes")
	ports[0].Inject(fr)
	forwardAll(f)
	wantFrames(t, ports[1], fr[:20])
}

// TestRepeatedOutputsAllocateNothing: rules that send one frame to a port
// several times fill its group faster than one per frame; the group is
// sent early rather than grown.
func TestRepeatedOutputsAllocateNothing(t *testing.T) {
	for _, tt := range []struct {
		actions string
		copies  uint64 // of each frame that port 2 sends
	}{{"actions=output:2,output:2,output:2", 3}, {"actions=NORMAL,FLOOD,ALL", 3}} {
		f, loop := benchForwarder(t, 3, 1)
		f.flows.Publish(rules(t, tt.actions))
		f.forwardBatch(f.queues[0])
		if !race.Enabled {
			if allocs := testing.AllocsPerRun(50, func() { f.forwardBatch(f.queues[0]) }); allocs != 0 {
				t.Errorf("%s: forwarding a batch allocates %.1f times; want 0", tt.actions, allocs)
			}
		}
		received := loop.Counts().Received
		if sent := f.ports[1].Port.(*porttest.Port).Counts().Transmitted; received == 0 || sent != tt.copies*received {
			t.Errorf("%s: port 2 sent %d frames of %d received; want %d of each", tt.actions, sent, received, tt.copies)
		}
	}
}

// BenchmarkForwardBatchPipeline forwards batches of one flow through
// three tables (classify into reg0, an ACL, NORMAL), against
// BenchmarkForwardBatchOneFlow's one NORMAL rule.
func BenchmarkForwardBatchPipeline(b *testing.B) {
	benchmarkForwardBatch(b, 1,
		"table=0,priority=10,in_port=1,actions=load:1->reg0[],goto_table:1",
		"table=1,priority=100,tcp,tp_dst=23,actions=drop",
		"table=1,priority=0,actions=goto_table:2",
		"table=2,priority=0,actions=NORMAL")
}

// TestActionSetRunsAtTheEnd: write_actions fills OpenFlow 1.3's action
// set, one action of each kind (a later output replaces an earlier),
// which runs in the spec's order (rewrites before the output) when the
// pipeline ends; clear_actions empties it; a table miss discards it.
func TestActionSetRunsAtTheEnd(t *testing.T) {
	for _, tt := range []struct {
		name  string
		flows []string
		want  []int // ports that get the frame
		src   byte  // its source MAC's last byte there
	}{
		{"replaced output, rewrite first", []string{
			"actions=write_actions(output:3),goto_table:1",
			"table=1,actions=write_actions(output:2,mod_dl_src:02:00:00:00:00:44)"}, []int{2}, 0x44},
		{"cleared", []string{
			"actions=write_actions(output:3),goto_table:1",
			"table=1,actions=clear_actions"}, nil, 0},
		{"ended in a miss", []string{
			"actions=write_actions(output:3),goto_table:1"}, nil, 0},
		{"a miss in a resubmit ends nothing", []string{
			"actions=resubmit(,7),write_actions(output:3)"}, []int{3}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ports := newPorts(3)
			f := testForwarder(t, 64, ports...)
			f.flows.Publish(rules(t, tt.flows...))
			ports[0].Inject(frame(mac(9), mac(1), "x"))
			forwardAll(f)
			for i, p := range ports {
				got := p.Transmitted()
				wanted := slices.Contains(tt.want, i+1)
				if len(got) != map[bool]int{true: 1}[wanted] {
					t.Fatalf("port %d sent %d frames; want it to get the frame: %v", i+1, len(got), wanted)
				}
				if wanted && got[0][11] != tt.src {
					t.Errorf("port %d: source %x, want ...%02x", i+1, got[0][6:12], tt.src)
				}
			}
		})
	}
}

// TestMaskedSetFieldKeepsTheOtherBits: set_field with a mask on an
// address or a port changes only the mask's bits, checksums and all.
func TestMaskedSetFieldKeepsTheOtherBits(t *testing.T) {
	ports := newPorts(2)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t, "udp,actions=set_field:192.168.0.0/255.255.0.0->ip_dst,"+
		"set_field:00:00:00:00:00:77/00:00:00:00:00:ff->eth_src,set_field:0x2200/0xff00->udp_dst,output:2"))
	in := udpFrame(t, mac(9), mac(1), net.IPv4(10, 0, 0, 1), net.IPv4(10, 1, 2, 3), 1000, 0x1388, []byte("masked"))
	ports[0].Inject(in)
	forwardAll(f)
	wantFrames(t, ports[1], udpFrame(t, mac(9), []byte{2, 0, 0, 0, 0, 0x77}, net.IPv4(10, 0, 0, 1), net.IPv4(192, 168, 2, 3), 1000, 0x2288, []byte("masked")))
}

// TestRewritesFollowTheHeadersAcrossTags: rewrites work from where the
// extractor found the headers, moved by the tags the actions push and
// pop before them.
func TestRewritesFollowTheHeadersAcrossTags(t *testing.T) {
	ports := newPorts(3)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t, "udp,actions=mod_vlan_vid:5,mod_nw_dst:10.9.9.9,mod_tp_dst:99,dec_ttl,output:2,"+
		"strip_vlan,mod_nw_src:10.8.8.8,mod_nw_tos:0x28,output:3"))
	in := baseSpec()
	in.proto = layers.IPProtocolUDP
	ports[0].Inject(in.build(t))
	forwardAll(f)

	tagged := in
	tagged.tags = []vlanTag{{header.EtherTypeVLAN, 5}}
	tagged.ip4Dst, tagged.tpDst, tagged.ttl = [4]byte{10, 9, 9, 9}, 99, in.ttl-1
	wantFrames(t, ports[1], tagged.build(t))
	untagged := tagged
	untagged.tags = nil
	untagged.ip4Src, untagged.tos = [4]byte{10, 8, 8, 8}, 0x28
	wantFrames(t, ports[2], untagged.build(t))
}

// TestDropsAreCountedPerInputPort: the pipeline's drops count for the
// bridge and for the port the frames came in on, output to a port the
// bridge does not have among them.
func TestDropsAreCountedPerInputPort(t *testing.T) {
	ports := newPorts(3)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t,
		"in_port=1,actions=goto_table:5",
		"in_port=2,actions=output:9",
		"in_port=3,actions=output:9,output:1"))
	ports[0].Inject(frame(broadcast, mac(1), "a"), frame(broadcast, mac(1), "b"), frame(broadcast, mac(1), "c"))
	ports[1].Inject(frame(broadcast, mac(2), "a"), frame(broadcast, mac(2), "b"))
	ports[2].Inject(frame(broadcast, mac(3), "a"))
	forwardAll(f)
	wantFrames(t, ports[0], frame(broadcast, mac(3), "a"))

	var want1, want2 DropCounts
	want1[dropTableMiss], want2[dropPortDown] = 3, 2
	if got := f.ports[0].counters.dropped.pipeline(); got != want1 {
		t.Errorf("port 1's pipeline drops %v; want %v", got, want1)
	}
	if got := f.ports[1].counters.dropped.pipeline(); got != want2 {
		t.Errorf("port 2's pipeline drops %v; want %v", got, want2)
	}
	if got := f.ports[2].counters.dropped.pipeline(); got != (DropCounts{}) {
		t.Errorf("port 3's pipeline drops %v; want none: its frame went out on port 1", got)
	}
	if got := f.bridgeDrops.pipeline(); got[dropTableMiss] != 3 || got[dropPortDown] != 2 {
		t.Errorf("bridge's pipeline drops %v; want 3 table misses and 2 to a port that is down", got)
	}
}

// TestHeaderLoadsAndMovesRewriteTheFrame: loads and moves into header
// fields, and set_field to IPv6 addresses, reach the frame's bytes,
// checksums and tags included.
func TestHeaderLoadsAndMovesRewriteTheFrame(t *testing.T) {
	ports := newPorts(3)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t,
		"tcp,actions=move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],load:0xa->NXM_OF_IP_DST[0..7],"+
			"move:NXM_OF_TCP_SRC[]->NXM_OF_TCP_DST[],load:0x1005->NXM_OF_VLAN_TCI[],output:2,"+
			"load:0->NXM_OF_VLAN_TCI[],load:0x7->NXM_NX_IP_TTL[],output:3",
		"icmp6,actions=move:NXM_NX_IPV6_SRC[]->NXM_NX_IPV6_DST[],set_field:2001:db8::7->ipv6_src,output:2",
		"udp6,actions=set_field:2001:db8::7/ffff::->ipv6_src,output:2"))
	in := baseSpec()
	ports[0].Inject(in.build(t))
	forwardAll(f)
	tagged := in
	tagged.dlDst, tagged.ip4Dst, tagged.tpDst = in.dlSrc, [4]byte{10, 0, 0, 10}, in.tpSrc
	tagged.tags = []vlanTag{{header.EtherTypeVLAN, 5}}
	wantFrames(t, ports[1], tagged.build(t))
	untagged := tagged
	untagged.tags, untagged.ttl = nil, 7
	wantFrames(t, ports[2], untagged.build(t))

	v6 := baseSpec()
	v6.v6, v6.proto = true, layers.IPProtocolICMPv6
	ports[0].Inject(v6.build(t))
	forwardAll(f)
	moved := v6
	moved.ip6Dst, moved.ip6Src = v6.ip6Src, [16]byte{0: 0x20, 1: 0x01, 2: 0x0d, 3: 0xb8, 15: 7}
	wantFrames(t, ports[1], moved.build(t))

	// A masked set keeps the address's other bits: fd00::1 becomes 2001::1.
	v6.proto = layers.IPProtocolUDP
	ports[0].Inject(v6.build(t))
	forwardAll(f)
	masked := v6
	masked.ip6Src = [16]byte{0: 0x20, 1: 0x01, 15: 1}
	wantFrames(t, ports[1], masked.build(t))
}

// TestOutputToTableRunsThePipelineAgain: output:TABLE in a rule looks the
// frame up from table 0 again, as it is then, and a rule that sends every
// frame there is cut as a loop.
func TestOutputToTableRunsThePipelineAgain(t *testing.T) {
	ports := newPorts(3)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t,
		"priority=10,in_port=1,reg0=0,actions=load:1->reg0[],mod_dl_dst:02:00:00:00:00:05,TABLE,output:3",
		"priority=5,reg0=1,actions=output:2",
		"priority=10,in_port=2,actions=TABLE"))
	fr := frame(mac(9), mac(1), "again")
	ports[0].Inject(fr)
	ports[1].Inject(frame(mac(9), mac(2), "loops"))
	forwardAll(f)
	rewritten := append([]byte{}, fr...)
	copy(rewritten, mac(5))
	wantFrames(t, ports[1], rewritten)
	wantFrames(t, ports[2], rewritten) // after TABLE, the rule goes on
	if got := f.bridgeDrops[dropLoop].Load(); got != 1 {
		t.Errorf("loop drops = %d; want 1, the frame that TABLE sent round for ever", got)
	}
}

// A group's bucket has no match to say what the frame is: its set_field
// to tcp_src writes TCP's port, and leaves a UDP frame's as it is, as
// OpenFlow's set_field (and OVS) does, where mod_tp_src would write
// either.
func TestBucketSetFieldWritesOnlyItsProtocol(t *testing.T) {
	ports := newPorts(2)
	f := testForwarder(t, 64, ports...)
	g, err := flow.ParseGroup("group_id=1,type=all,bucket=set_field:80->tcp_src,output:2", nil)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := flow.NewGroupTable().Add(g, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	f.flows.Publish(rules(t, "in_port=1,actions=group:1").WithGroups(groups))
	spec := frameSpec{proto: layers.IPProtocolTCP, ttl: 64, tpSrc: 1000, tpDst: 5000, payload: []byte("a segment")}
	tcp, udp := spec, spec
	udp.proto = layers.IPProtocolUDP
	ports[0].Inject(tcp.build(t), udp.build(t))
	forwardAll(f)
	tcp.tpSrc = 80
	wantFrames(t, ports[1], tcp.build(t), udp.build(t))
}
