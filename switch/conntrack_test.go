package vswitch

import (
	"bytes"
	"fmt"
	"net"
	"slices"
	"testing"

	"github.com/xswitch/xswitch/conntrack"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/internal/race"
)

// The ct() action in a forwarder with in-memory ports: the tracker's
// verdicts reach the tables through recirculation, NAT reaches the
// frames, and the frame itself goes on after ct() as OVS sends it.

// udpBetween is a UDP datagram from a to b (10.0.0.a:pa to 10.0.0.b:pb),
// with the stations' MAC addresses.
func udpBetween(tb testing.TB, a, b byte, pa, pb uint16) []byte {
	return udpFrame(tb, mac(b), mac(a), net.IPv4(10, 0, 0, a), net.IPv4(10, 0, 0, b), pa, pb, []byte("conntrack"))
}

// firewall is OVS's stateful firewall of system-traffic.at: port 1's
// side opens connections, port 2's side answers them and nothing else.
var firewall = []string{
	"priority=1,actions=drop",
	"priority=10,arp,actions=NORMAL",
	"priority=100,in_port=1,ip,actions=ct(commit),output:2",
	"priority=100,in_port=2,ip,actions=ct(table=1)",
	"table=1,priority=100,in_port=2,ct_state=+trk+est,ip,actions=output:1",
	"table=1,priority=1,actions=drop",
}

func TestStatefulFirewall(t *testing.T) {
	ports := newPorts(2)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t, firewall...))

	unsolicited := udpBetween(t, 2, 1, 7000, 8000)
	ports[1].Inject(unsolicited)
	forwardAll(f)
	wantFrames(t, ports[0])

	out, back := udpBetween(t, 1, 2, 8000, 7000), udpBetween(t, 2, 1, 7000, 8000)
	ports[0].Inject(out)
	forwardAll(f)
	wantFrames(t, ports[1], out)
	ports[1].Inject(back)
	forwardAll(f)
	wantFrames(t, ports[0], back)

	// Another port of the same hosts is another connection.
	ports[1].Inject(udpBetween(t, 2, 1, 7001, 8000))
	forwardAll(f)
	wantFrames(t, ports[0])
	if n := f.ct.tracker.Count(); n != 1 {
		t.Errorf("the tracker holds %d connections, want 1", n)
	}
}

// TestRecirculationKeepsRegisters: registers and metadata written before
// ct(table=N) are there in table N, as in OVS; the connection's fields
// too.
func TestRecirculationKeepsRegisters(t *testing.T) {
	ports := newPorts(3)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t,
		"in_port=1,ip,actions=load:0x5->NXM_NX_REG0[],load:0x7->OXM_OF_METADATA[],ct(zone=3,table=1)",
		"table=1,reg0=5,metadata=0x7,ct_state=+trk+new,ct_zone=3,actions=output:2",
		"table=1,priority=0,actions=output:3"))
	fr := udpBetween(t, 1, 2, 1, 2)
	ports[0].Inject(fr)
	forwardAll(f)
	wantFrames(t, ports[1], fr)
	wantFrames(t, ports[2])
}

// TestCTForksTheFrame: the actions after ct(table=N) run on the frame as
// well, untracked, while a copy goes on in table N.
func TestCTForksTheFrame(t *testing.T) {
	ports := newPorts(3)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t,
		"in_port=1,ip,actions=ct(table=1),mod_dl_dst:02:00:00:00:00:99,output:3",
		"table=1,ct_state=+trk,actions=mod_dl_dst:02:00:00:00:00:77,output:2"))
	fr := udpBetween(t, 1, 2, 1, 2)
	ports[0].Inject(fr)
	forwardAll(f)
	toTwo, toThree := bytes.Clone(fr), bytes.Clone(fr)
	copy(toTwo, mac(0x77))
	copy(toThree, mac(0x99))
	wantFrames(t, ports[1], toTwo)
	wantFrames(t, ports[2], toThree)
}

// TestMarkAndLabelAreSetAndMatched: a commit's exec() writes the
// connection's mark and label, which its later packets match.
func TestMarkAndLabelAreSetAndMatched(t *testing.T) {
	ports := newPorts(2)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t,
		"in_port=1,ip,actions=load:0x2a->NXM_NX_REG1[],ct(commit,exec(set_field:0x10/0xf0->ct_mark,move:NXM_NX_REG1[0..7]->NXM_NX_CT_LABEL[120..127])),output:2",
		"in_port=2,ip,actions=ct(table=1)",
		"table=1,ct_state=+trk+est+rpl,ct_mark=0x10,ct_label=0x2a000000000000000000000000000000,actions=output:1"))
	out, back := udpBetween(t, 1, 2, 1, 2), udpBetween(t, 2, 1, 2, 1)
	ports[0].Inject(out)
	forwardAll(f)
	ports[1].Inject(back)
	forwardAll(f)
	wantFrames(t, ports[0], back)
	entries := f.ct.tracker.Dump(nil, f.ct.epoch+f.now())
	if len(entries) != 1 || entries[0].Mark != 0x10 || entries[0].Label != (conntrack.Label{Hi: 0x2a << 56}) {
		t.Fatalf("the tracker holds %+v, want one connection of mark 0x10 and label 0x2a<<120", entries)
	}
}

// TestSNATRewritesBothWays: a committed source translation rewrites the
// frames out and back, checksums included, and the tables after ct(nat)
// see the translated headers.
func TestSNATRewritesBothWays(t *testing.T) {
	ports := newPorts(2)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t,
		"in_port=1,ip,actions=ct(commit,nat(src=10.0.0.99:4000),table=1)",
		"table=1,in_port=1,ct_state=+trk+snat,udp,nw_src=10.0.0.99,tp_src=4000,actions=output:2",
		"in_port=2,ip,actions=ct(nat,table=1)",
		"table=1,in_port=2,ct_state=+trk+est+dnat,udp,nw_dst=10.0.0.1,tp_dst=1234,actions=output:1"))
	ports[0].Inject(udpBetween(t, 1, 2, 1234, 53))
	forwardAll(f)
	translated := udpFrame(t, mac(2), mac(1), net.IPv4(10, 0, 0, 99), net.IPv4(10, 0, 0, 2), 4000, 53, []byte("conntrack"))
	wantFrames(t, ports[1], translated)
	ports[1].Inject(udpFrame(t, mac(1), mac(2), net.IPv4(10, 0, 0, 2), net.IPv4(10, 0, 0, 99), 53, 4000, []byte("conntrack")))
	forwardAll(f)
	wantFrames(t, ports[0], udpBetween(t, 2, 1, 53, 1234))
}

// TestCTClearUntracks: after ct_clear the tables see an untracked frame.
func TestCTClearUntracks(t *testing.T) {
	ports := newPorts(3)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t,
		"in_port=1,ip,actions=ct(table=1)",
		"table=1,ct_state=+trk,actions=ct_clear,resubmit(,2)",
		"table=2,ct_state=-trk,actions=output:2",
		"table=2,ct_state=+trk,actions=output:3"))
	fr := udpBetween(t, 1, 2, 1, 2)
	ports[0].Inject(fr)
	forwardAll(f)
	wantFrames(t, ports[1], fr)
	wantFrames(t, ports[2])
}

// TestRecirculationLoopIsCut: rules that recirculate for ever drop the
// frame at the limit, counted as a loop.
func TestRecirculationLoopIsCut(t *testing.T) {
	ports := newPorts(2)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t, "ip,actions=ct(table=0)"))
	ports[0].Inject(udpBetween(t, 1, 2, 1, 2))
	forwardAll(f)
	wantFrames(t, ports[1])
	if n := f.bridgeDrops[dropLoop].Load(); n != 1 {
		t.Errorf("%d loop drops, want 1", n)
	}
}

// TestEstablishedAllocatesNothing: a batch of an established
// connection's frames through ct() and a recirculation allocates nothing.
func TestEstablishedAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector changes allocation counts")
	}
	f, loop := benchForwarder(t, 3, 8)
	f.flows.Publish(rules(t, "in_port=1,ip,actions=ct(commit,table=1)", "table=1,ct_state=+trk,actions=NORMAL"))
	f.forwardBatch(f.queues[0])
	allocs := testing.AllocsPerRun(100, func() { f.forwardBatch(f.queues[0]) })
	if allocs != 0 {
		t.Fatalf("forwarding a batch through ct() allocates %.1f times; want 0", allocs)
	}
	if loop.Counts().Received == 0 {
		t.Fatal("the benchmark port received nothing")
	}
}

// BenchmarkForwardBatchConntrack forwards batches of eight established
// flows through ct(commit,table=1) and NORMAL.
func BenchmarkForwardBatchConntrack(b *testing.B) {
	benchmarkForwardBatch(b, 8, "in_port=1,ip,actions=ct(commit,table=1)", "table=1,ct_state=+trk,actions=NORMAL")
}

// TestTraceFollowsRecirculations: trace follows ct(table=N) into table N
// as a new connection's packet, or with the state --ct-next gives, and
// says so.
func TestTraceFollowsRecirculations(t *testing.T) {
	ports := newPorts(2)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t, firewall...))
	var k flow.Key
	if !flow.NewExtractor().Extract(udpBetween(t, 2, 1, 7000, 8000), 2, &k) {
		t.Fatal("the test frame does not extract")
	}
	asNew := f.trace(k.Headers, nil)
	if len(asNew.Outputs) != 0 {
		t.Errorf("a new connection's packet from port 2 leaves by %v, want nowhere", asNew.Outputs)
	}
	established := f.trace(k.Headers, []uint8{flow.CTTracked | flow.CTEstablished})
	if !slices.Equal(established.Outputs, []uint16{1}) {
		t.Errorf("an established connection's packet from port 2 leaves by %v, want port 1", established.Outputs)
	}
	var lookups []string
	for _, s := range established.Steps {
		switch {
		case s.Lookup:
			lookups = append(lookups, fmt.Sprint(s.Table))
		case s.Action == "recirc":
			lookups = append(lookups, s.Notes...)
		}
	}
	want := []string{"0", "the copy ct() sent on resumes in table 1 with ct_state=+est+trk ct_zone=0, as --ct-next says", "1"}
	if !slices.Equal(lookups, want) {
		t.Errorf("the trace's lookups and recirculations are %q, want %q", lookups, want)
	}
	if established.Final.CT.State != flow.CTTracked|flow.CTEstablished {
		t.Errorf("the final key's ct_state is %#x, want +trk+est", established.Final.CT.State)
	}
}

// TestDropInAForkedRecirculation: a frame the recirculation of a
// ct(table=N) with actions after it drops (dec_ttl at TTL 1) ends that
// copy's way; the frame goes on with the actions after ct().
func TestDropInAForkedRecirculation(t *testing.T) {
	ports := newPorts(3)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t,
		"in_port=1,ip,actions=ct(table=1),output:3",
		"table=1,ip,actions=dec_ttl,output:2"))
	fr := udpBetween(t, 1, 2, 1, 2)
	fr[14+8] = 1 // the IPv4 TTL
	ports[0].Inject(fr)
	forwardAll(f)
	wantFrames(t, ports[1])
	wantFrames(t, ports[2], fr)
}
