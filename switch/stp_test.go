package vswitch

import (
	"fmt"
	"testing"
	"time"

	"github.com/xswitch/xswitch/internal/race"
	"github.com/xswitch/xswitch/port"
	"github.com/xswitch/xswitch/port/porttest"
	"github.com/xswitch/xswitch/rstp"
)

// testBPDU is a configuration BPDU's frame from src.
func testBPDU(src []byte) []byte {
	b := rstp.BPDU{Type: rstp.TypeConfig, MaxAge: rstp.TimeOf(20)}
	return b.AppendFrame(nil, [6]byte(src))
}

// TestSTPStatesGateForwarding drives a forwarder's port states by hand:
// a discarding port takes nothing in and gets nothing out but from ALL; a
// learning port learns what it receives and passes nothing on.
func TestSTPStatesGateForwarding(t *testing.T) {
	ports := newPorts(3)
	f := testForwarder(t, 64, ports...)
	f.setSTPState(2, stpDiscarding)

	bcast := frame(broadcast, mac(1), "flood")
	send(f, ports, 0, bcast)
	wantFrames(t, ports[1], bcast)
	wantFrames(t, ports[2]) // discarding: NORMAL does not flood to it
	send(f, ports, 2, frame(broadcast, mac(3), "from a discarding port"))
	wantFrames(t, ports[0])
	wantFrames(t, ports[1])
	if _, learned := f.fdb.lookup(macKey(mac(3), 0), f.now()); learned {
		t.Error("a discarding port's source was learned")
	}
	if got := f.ports[2].counters.dropped[dropSTP].Load(); got != 1 {
		t.Errorf("the discarding port counts %d stp drops; want 1", got)
	}

	f.setSTPState(2, stpLearning)
	send(f, ports, 2, frame(broadcast, mac(3), "from a learning port"))
	wantFrames(t, ports[0])
	wantFrames(t, ports[1])
	if out, learned := f.fdb.lookup(macKey(mac(3), 0), f.now()); !learned || out != 2 {
		t.Errorf("a learning port's source: learned %v on slot %d; want slot 2", learned, out)
	}
	// NORMAL does not send to a learned station behind a port that is
	// not forwarding.
	send(f, ports, 0, frame(mac(3), mac(1), "to the learning port's station"))
	wantFrames(t, ports[2])

	// OpenFlow: output and FLOOD leave the port out, ALL does not.
	f.flows.Publish(rules(t, "priority=10,in_port=1,actions=output:3,FLOOD", "priority=10,in_port=2,actions=ALL"))
	one := frame(mac(9), mac(1), "output and flood")
	send(f, ports, 0, one)
	wantFrames(t, ports[1], one)
	wantFrames(t, ports[2])
	all := frame(mac(9), mac(2), "all")
	send(f, ports, 1, all)
	wantFrames(t, ports[0], all)
	wantFrames(t, ports[2], all)

	f.setSTPState(2, stpForwarding)
	send(f, ports, 0, one)
	wantFrames(t, ports[2], one, one)
}

// TestBPDUsGoToTheSpanningTreeOnly: while the bridge runs a spanning tree
// the forwarders queue BPDUs, whatever the port's state, and forward none;
// when the queue is full they count the drops. Without one, a BPDU is a
// reserved frame that NORMAL drops.
func TestBPDUsGoToTheSpanningTreeOnly(t *testing.T) {
	ports := newPorts(2)
	f := testForwarder(t, 64, ports...)
	bpdu := testBPDU(mac(1))
	send(f, ports, 0, bpdu)
	wantFrames(t, ports[1])
	if got := f.ports[0].counters.dropped[dropReserved].Load(); got != 1 {
		t.Errorf("without a spanning tree, a BPDU is a reserved frame: %d reserved drops; want 1", got)
	}

	q := newBPDUQueue()
	f.bpdus = q
	f.setSTPState(0, stpDiscarding)
	var many [][]byte
	for range bpduQueueSize + 5 {
		many = append(many, bpdu)
	}
	send(f, ports, 0, many...)
	wantFrames(t, ports[1])
	if len(q.full) != bpduQueueSize || q.dropped.Load() != 5 {
		t.Fatalf("%d BPDUs queued, %d dropped; want %d and 5", len(q.full), q.dropped.Load(), bpduQueueSize)
	}
	b := <-q.full
	if b.port != f.ports[0] || string(b.data[:b.n]) != string(bpdu) {
		t.Errorf("queued %d bytes from %v; want the BPDU from port 1", b.n, b.port)
	}
	if got := f.ports[0].counters.dropped[dropSTP].Load(); got != 0 {
		t.Errorf("BPDUs on a discarding port count %d stp drops; want none, they are the tree's", got)
	}
}

func TestSTPForwardingAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector changes allocation counts")
	}
	frames := make([][]byte, DefaultBatchSize)
	for i := range frames {
		frames[i] = frame(broadcast, mac(1), fmt.Sprint(i))
		if i%8 == 0 {
			frames[i] = testBPDU(mac(1))
		}
	}
	f, _ := loopForwarder(t, frames, portVLAN{})
	f.addPort(&bridgePort{Port: porttest.NewLoop("out", nil), ofport: 2})
	f.addPort(&bridgePort{Port: porttest.NewLoop("blocked", nil), ofport: 3})
	f.setSTPState(2, stpDiscarding)
	q := newBPDUQueue()
	f.bpdus = q
	drain := func() {
		for len(q.full) > 0 {
			q.free <- <-q.full
		}
	}
	if allocs := testing.AllocsPerRun(100, func() { f.forwardBatch(f.queues[0]); drain() }); allocs != 0 {
		t.Fatalf("forwarding with a spanning tree allocates %.1f times a batch; want 0", allocs)
	}
}

// wire joins two test ports: what one transmits, the other receives.
type wire struct {
	*porttest.Port
	peer *porttest.Port
}

func (w wire) Transmit(frames [][]byte) int {
	n := w.Port.Transmit(frames)
	var copies [][]byte
	for _, f := range frames[:n] {
		copies = append(copies, append([]byte(nil), f...))
	}
	w.peer.Inject(copies...)
	return n
}

// nonBPDUs counts the frames p transmitted that are not BPDUs.
func nonBPDUs(p *porttest.Port) int {
	n := 0
	for _, f := range p.Transmitted() {
		if !isBPDU(f) {
			n++
		}
	}
	return n
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5 s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func roleOf(b *Bridge, name string) (rstp.Role, rstp.State) {
	s, ok := b.RSTPStatus()
	if !ok {
		return 0, 0
	}
	for _, p := range s.Ports {
		if s.Names[p.Number] == name {
			return p.Role, p.State
		}
	}
	return 0, 0
}

// TestRSTPCutsALoopThroughTwoPorts wires two ports of a bridge to each
// other: one broadcast circles forever, until the spanning tree makes one
// of the two a backup port. Then a broadcast is flooded once.
func TestRSTPCutsALoopThroughTwoPorts(t *testing.T) {
	b := newTestBridge(t)
	a, z, host := porttest.New("a"), porttest.New("z"), porttest.New("host")
	cfg := rstp.DefaultPortConfig()
	edge := cfg
	edge.AdminEdge = true
	for _, p := range []struct {
		port port.Port
		cfg  *rstp.PortConfig
	}{{wire{a, z}, &cfg}, {wire{z, a}, &cfg}, {host, &edge}} {
		if _, err := b.AddPort(p.port, PortOptions{RSTP: p.cfg}); err != nil {
			t.Fatal(err)
		}
	}
	host.Inject(frame(broadcast, mac(1), "storm"))
	waitFor(t, "the storm", func() bool { return host.Counts().Transmitted > 1000 })

	bridgeCfg := rstp.DefaultBridgeConfig([6]byte{2, 0, 0, 0, 0, 1})
	if err := b.SetRSTP(&bridgeCfg); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a backup port", func() bool {
		role, state := roleOf(b, "z")
		return role == rstp.RoleBackup && state == rstp.Discarding
	})
	waitFor(t, "the other port forwarding", func() bool {
		role, state := roleOf(b, "a")
		return role == rstp.RoleDesignated && state == rstp.Forwarding
	})
	if role, state := roleOf(b, "host"); role != rstp.RoleDesignated || state != rstp.Forwarding {
		t.Fatalf("the edge port is %v %v; want designated forwarding", role, state)
	}
	time.Sleep(50 * time.Millisecond) // the last frames of the storm
	for _, p := range []*porttest.Port{a, z, host} {
		p.Transmitted()
	}
	host.Inject(frame(broadcast, mac(1), "once"))
	waitFor(t, "the broadcast through a", func() bool { return a.Counts().Transmitted > 0 })
	time.Sleep(50 * time.Millisecond)
	if got := nonBPDUs(a); got != 1 {
		t.Errorf("a sent %d frames; want the broadcast once", got)
	}
	if got := nonBPDUs(z); got != 0 {
		t.Errorf("the backup port sent %d frames; want none", got)
	}
	if got := nonBPDUs(host); got != 0 {
		t.Errorf("the broadcast came back to its sender %d times", got)
	}
	if got := b.Ports()[1].Stats.RxSTPDropped; got == 0 {
		t.Error("the backup port counted no stp drops: the broadcast arriving on it was not dropped")
	}

	// Without the loop, the remaining port forwards on.
	if err := b.RemovePort("z"); err != nil {
		t.Fatal(err)
	}
	if role, state := roleOf(b, "a"); role != rstp.RoleDesignated || state != rstp.Forwarding {
		t.Errorf("after the loop was removed, a is %v %v; want designated forwarding", role, state)
	}
	// And with no spanning tree, every port forwards.
	if err := b.SetRSTP(nil); err != nil {
		t.Fatal(err)
	}
	if _, on := b.RSTPStatus(); on {
		t.Error("RSTPStatus reports a spanning tree after SetRSTP(nil)")
	}
}
