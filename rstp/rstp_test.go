package rstp

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func wantPort(t *testing.T, n *simNet, e end, role Role, state State) {
	t.Helper()
	if p := n.portStatus(e); p.Role != role || p.State != state {
		t.Fatalf("%v is %v %v; want %v %v\n%s", e, p.Role, p.State, role, state, n.describe())
	}
}

// TestTwoBridgesAgreeAtOnce: over a point-to-point link, proposal and
// agreement make both ends forward without waiting for a timer.
func TestTwoBridgesAgreeAtOnce(t *testing.T) {
	n := newSimNet(t)
	root, other := n.addBridge(4096), n.addBridge(32768)
	n.link(root, 1, other, 1)
	wantPort(t, n, end{root, 1}, RoleDesignated, Forwarding)
	wantPort(t, n, end{other, 1}, RoleRoot, Forwarding)
	s := n.bridges[other].Status()
	if s.Root != n.bridges[root].Status().BridgeID || s.RootPathCost != DefaultPathCost || s.RootPort != 1 || s.IsRoot() {
		t.Fatalf("the other bridge: root %v cost %d port %d; want the first bridge, %d, port 1", s.Root, s.RootPathCost, s.RootPort, DefaultPathCost)
	}
	n.tick(60)
	wantPort(t, n, end{root, 1}, RoleDesignated, Forwarding)
	wantPort(t, n, end{other, 1}, RoleRoot, Forwarding)
	n.settled()
}

// TestParallelLinksLeaveOneAlternate: two links between two bridges are a
// loop; the non-root bridge's worse port becomes an alternate and discards.
func TestParallelLinksLeaveOneAlternate(t *testing.T) {
	n := newSimNet(t)
	root, other := n.addBridge(4096), n.addBridge(32768)
	n.link(root, 1, other, 1)
	n.link(root, 2, other, 2)
	n.tick(1)
	wantPort(t, n, end{other, 1}, RoleRoot, Forwarding)
	wantPort(t, n, end{other, 2}, RoleAlternate, Discarding)
	wantPort(t, n, end{root, 1}, RoleDesignated, Forwarding)
	wantPort(t, n, end{root, 2}, RoleDesignated, Forwarding)
	n.tick(60)
	wantPort(t, n, end{other, 2}, RoleAlternate, Discarding)
	if links := n.forwardingLinks(); len(links) != 1 {
		t.Fatalf("%d links forward; want 1:\n%s", len(links), n.describe())
	}
	n.settled()
}

// TestSelfLoopLeavesOneBackup: two ports of one bridge on the same wire.
// The port with the higher identifier hears the other's better offer from
// its own bridge: a backup, discarding. A third port with no bridge behind
// it becomes an edge port and forwards after MigrateTime.
func TestSelfLoopLeavesOneBackup(t *testing.T) {
	n := newSimNet(t)
	b := n.addBridge(32768)
	n.link(b, 1, b, 2)
	if err := n.bridges[b].AddPort(3, DefaultPortConfig()); err != nil {
		t.Fatal(err)
	}
	wantPort(t, n, end{b, 1}, RoleDesignated, Forwarding)
	wantPort(t, n, end{b, 2}, RoleBackup, Discarding)
	n.tick(MigrateTime - 1)
	if p := n.portStatus(end{b, 3}); p.State != Discarding || p.Edge {
		t.Fatalf("the lone port is %v, edge %v, before MigrateTime; want discarding, not edge", p.State, p.Edge)
	}
	n.tick(1)
	if p := n.portStatus(end{b, 3}); p.State != Forwarding || !p.Edge || p.Role != RoleDesignated {
		t.Fatalf("the lone port is %v %v, edge %v, after MigrateTime; want a designated edge port, forwarding", p.Role, p.State, p.Edge)
	}
	n.tick(60)
	wantPort(t, n, end{b, 2}, RoleBackup, Discarding)
	if got := n.bridges[b].Status().TopologyChanges; got != 1 {
		t.Errorf("%d topology changes; want 1, port 1 starting to forward (an edge port's is none)", got)
	}
	n.settled()
}

func TestAdminEdgeForwardsAtOnceUntilABPDUArrives(t *testing.T) {
	n := newSimNet(t)
	b := n.addBridge(32768)
	cfg := DefaultPortConfig()
	cfg.AdminEdge = true
	if err := n.bridges[b].AddPort(1, cfg); err != nil {
		t.Fatal(err)
	}
	wantPort(t, n, end{b, 1}, RoleDesignated, Forwarding)
	// A better bridge appears behind it: the port is no edge after all.
	better := BPDU{Version: 2, Type: TypeRST, Flags: roleDesignatedPort << flagRoleShift,
		Root: NewBridgeID(0, [6]byte{2}), Bridge: NewBridgeID(0, [6]byte{2}), Port: NewPortID(128, 1),
		MaxAge: TimeOf(20), HelloTime: TimeOf(2), ForwardDelay: TimeOf(15)}
	if err := n.bridges[b].Receive(1, better); err != nil {
		t.Fatal(err)
	}
	if p := n.portStatus(end{b, 1}); p.Edge || p.Role != RoleRoot {
		t.Fatalf("after a BPDU, the admin edge port is %v, edge %v; want the root port, not edge", p.Role, p.Edge)
	}
}

// TestRoleSelectionOnCraftedVectors hands one bridge BPDUs made by hand
// and checks the roles that 17.21.25 gives its ports.
func TestRoleSelectionOnCraftedVectors(t *testing.T) {
	n := newSimNet(t)
	x := n.addBridge(32768) // 8000.020000000001
	br := n.bridges[x]
	for p := uint16(1); p <= 5; p++ {
		if err := br.AddPort(p, DefaultPortConfig()); err != nil {
			t.Fatal(err)
		}
	}
	root := NewBridgeID(4096, [6]byte{2, 0, 0, 0, 0, 0xaa})
	y := NewBridgeID(32768, [6]byte{0, 0, 0, 0, 0, 0x01}) // better than x at equal priority
	z := NewBridgeID(32768, [6]byte{2, 0, 0, 0, 0, 0xcc}) // worse than x
	designated := func(rootID BridgeID, cost uint32, from BridgeID, port PortID) BPDU {
		return BPDU{Version: 2, Type: TypeRST, Flags: roleDesignatedPort << flagRoleShift,
			Root: rootID, RootPathCost: cost, Bridge: from, Port: port,
			MaxAge: TimeOf(20), HelloTime: TimeOf(2), ForwardDelay: TimeOf(15)}
	}
	self := br.Status().BridgeID
	for port, bpdu := range map[uint16]BPDU{
		1: designated(root, 0, root, NewPortID(128, 7)),    // the root itself: cost 2000 through here
		2: designated(root, 2000, y, NewPortID(128, 1)),    // as far as x, and better: alternate
		3: designated(root, 4000, z, NewPortID(128, 1)),    // worse than what x offers: designated
		4: designated(root, 2000, self, NewPortID(128, 3)), // x's own port 3 on this LAN: backup
		5: designated(root, 0, root, NewPortID(128, 8)),    // the root again, through a worse port
	} {
		if err := br.Receive(port, bpdu); err != nil {
			t.Fatalf("port %d: %v", port, err)
		}
	}
	s := br.Status()
	if s.Root != root || s.RootPathCost != 2000 || s.RootPort != 1 {
		t.Fatalf("root %v cost %d port %d; want %v 2000 port 1\n%s", s.Root, s.RootPathCost, s.RootPort, root, n.describe())
	}
	want := map[uint16]Role{1: RoleRoot, 2: RoleAlternate, 3: RoleDesignated, 4: RoleBackup, 5: RoleAlternate}
	for _, p := range s.Ports {
		if p.Role != want[p.Number] {
			t.Errorf("port %d is %v; want %v\n%s", p.Number, p.Role, want[p.Number], n.describe())
		}
	}
	// What port 3 now sends is x's designated vector: root, 2000, x, port 3.
	sent := n.sent[end{x, 3}]
	last := sent[len(sent)-1]
	if last.Root != root || last.RootPathCost != 2000 || last.Bridge != self || last.Port != NewPortID(128, 3) ||
		last.Type != TypeRST || last.role() != roleDesignatedPort {
		t.Errorf("port 3 sends %+v; want x's designated vector", last)
	}
}

// TestLinkFailureMovesToTheAlternate: in a triangle, the bridge with an
// alternate port loses its root port's link and takes the alternate as
// its root port, forwarding without waiting.
func TestLinkFailureMovesToTheAlternate(t *testing.T) {
	n := newSimNet(t)
	a, b, c := n.addBridge(4096), n.addBridge(8192), n.addBridge(32768)
	n.link(a, 1, b, 1)
	n.link(a, 2, c, 1)
	n.link(b, 2, c, 2)
	n.tick(30)
	wantPort(t, n, end{c, 1}, RoleRoot, Forwarding)
	wantPort(t, n, end{c, 2}, RoleAlternate, Discarding)
	n.cut(end{a, 2})
	n.tick(1)
	wantPort(t, n, end{c, 2}, RoleRoot, Forwarding)
	wantPort(t, n, end{b, 2}, RoleDesignated, Forwarding)
	if s := n.bridges[c].Status(); s.RootPathCost != 2*DefaultPathCost {
		t.Errorf("c's root path cost is %d; want %d, through b", s.RootPathCost, 2*DefaultPathCost)
	}
	n.settled()
}

// TestTopologyChangeFlushesTheOtherPorts: a port that starts forwarding
// makes its bridge and the bridges it tells forget what their other ports
// learned.
func TestTopologyChangeFlushesTheOtherPorts(t *testing.T) {
	n := newSimNet(t)
	a, b, c := n.addBridge(4096), n.addBridge(32768), n.addBridge(32768)
	n.link(a, 1, b, 1)
	n.link(a, 2, b, 2)
	n.tick(10)
	before := map[end]int{}
	for e, k := range n.flushes {
		before[e] = k
	}
	n.link(b, 3, c, 1) // b's new designated port agrees with c and forwards
	n.tick(1)
	if n.flushes[end{b, 1}] == before[end{b, 1}] {
		t.Errorf("b's root port was not flushed when b's port 3 began to forward")
	}
	if n.flushes[end{a, 2}] == before[end{a, 2}] {
		t.Errorf("a's port 2 was not flushed when b told a of the topology change (through port 1)")
	}
	if n.flushes[end{b, 3}] != before[end{b, 3}]+1 {
		t.Errorf("b's port 3 was flushed %d times; want once, when it came up", n.flushes[end{b, 3}]-before[end{b, 3}])
	}
}

// TestSTPNeighbourMakesThePortSpeakSTP: a bridge forced to STP sends only
// configuration BPDUs; the RSTP bridge's ports migrate to STP, the loop of
// two links is still cut, and with no proposal and agreement the STP
// bridge's ports wait out max age and two forward delays.
func TestSTPNeighbourMakesThePortSpeakSTP(t *testing.T) {
	n := newSimNet(t)
	short := func(c *BridgeConfig) { c.MaxAge, c.ForwardDelay = 6, 4 }
	rapid := n.addBridge(32768, short)
	legacy := n.addBridge(4096, short, func(c *BridgeConfig) { c.ForceVersion = VersionSTP })
	n.link(rapid, 1, legacy, 1)
	n.link(rapid, 2, legacy, 2)
	n.tick(MigrateTime + 2*HelloTime)
	for _, p := range []uint16{1, 2} {
		if s := n.portStatus(end{rapid, p}); s.SendRSTP {
			t.Errorf("the RSTP bridge's port %d still sends RST BPDUs to an STP bridge", p)
		}
	}
	if n.portStatus(end{legacy, 1}).State == Forwarding {
		t.Fatalf("the STP bridge's port forwards after %d s, before max age and two forward delays", n.now)
	}
	n.tick(6 + 2*4)
	wantPort(t, n, end{rapid, 1}, RoleRoot, Forwarding)
	wantPort(t, n, end{rapid, 2}, RoleAlternate, Discarding)
	wantPort(t, n, end{legacy, 1}, RoleDesignated, Forwarding)
	wantPort(t, n, end{legacy, 2}, RoleDesignated, Forwarding)

	// A topology change behind the RSTP bridge: its root port, speaking
	// STP, tells the STP bridge with TCNs until it acknowledges them.
	clear(n.sent)
	third := n.addBridge(32768, short)
	n.link(rapid, 3, third, 1)
	n.tick(2 * HelloTime)
	var tcn, ack bool
	for e, sent := range n.sent {
		for _, bpdu := range sent {
			switch {
			case e.bridge == rapid && e.port != 3 && bpdu.Type == TypeRST:
				t.Errorf("%v sent an RST BPDU to the STP bridge after migrating", e)
			case e.bridge == legacy && bpdu.Type != TypeConfig:
				t.Errorf("the STP bridge sent a %v BPDU", bpdu.Type)
			case e.bridge == rapid && bpdu.Type == TypeTCN:
				tcn = true
			case e.bridge == legacy && bpdu.Flags&FlagTopologyChangeAck != 0:
				ack = true
			}
		}
	}
	if !tcn || !ack {
		t.Errorf("TCN sent: %v, acknowledged: %v; want both", tcn, ack)
	}
	n.tick(60)
	if links := n.forwardingLinks(); len(links) != 2 {
		t.Fatalf("%d links forward; want 2:\n%s", len(links), n.describe())
	}
	n.settled()
}

// TestRandomNetworksConvergeToSpanningTrees builds random networks of
// bridges and links (parallel links and self-loops included) and checks
// the result against what a spanning tree is, computed the obvious way:
// in every connected part of the network the forwarding links join every
// bridge and form no cycle, every bridge agrees on the part's lowest
// bridge identifier as the root, and no link forwards at one end only
// towards a bridge that discards it. Then it makes another bridge the
// root, and cuts links, and checks again; and at no moment may the
// forwarding links close a loop (simNet.noLoop).
func TestRandomNetworksConvergeToSpanningTrees(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 1))
		n := newSimNet(t)
		bridges := 1 + rng.IntN(7)
		for range bridges {
			n.addBridge(uint16(rng.IntN(4)) * 4096)
		}
		nextPort := make([]uint16, bridges)
		links := rng.IntN(3 * bridges)
		var ends []end
		for range links {
			a, b := rng.IntN(bridges), rng.IntN(bridges)
			nextPort[a]++
			pa := nextPort[a]
			nextPort[b]++
			pb := nextPort[b]
			n.link(a, pa, b, pb)
			ends = append(ends, end{a, pa})
		}
		n.tick(60)
		checkSpanningTree(t, seed, n)
		// A new root: every bridge re-roots, none may loop meanwhile.
		nb := n.bridges[rng.IntN(bridges)]
		cfg := nb.Status().Config
		cfg.Priority = 0
		cfg.Address[0] = 0 // lower than any other address too
		if err := nb.SetConfig(cfg); err != nil {
			t.Fatal(err)
		}
		n.deliver()
		n.tick(60)
		checkSpanningTree(t, seed, n)
		for range min(2, len(ends)) {
			n.cut(ends[rng.IntN(len(ends))])
		}
		n.tick(60)
		checkSpanningTree(t, seed, n)
		n.settled()
	}
}

func checkSpanningTree(t *testing.T, seed uint64, n *simNet) {
	t.Helper()
	// Connected parts of the network, by the links that are up.
	part := make([]int, len(n.bridges))
	for i := range part {
		part[i] = i
	}
	find := func(i int) int {
		for part[i] != i {
			i = part[i]
		}
		return i
	}
	for x, y := range n.peer {
		if n.up[x] {
			part[find(x.bridge)] = find(y.bridge)
		}
	}
	// Per part: its bridges, its lowest identifier, its forwarding links.
	members := map[int][]int{}
	for i := range n.bridges {
		members[find(i)] = append(members[find(i)], i)
	}
	treeLinks := map[int]int{}
	for _, l := range n.forwardingLinks() {
		if l[0].bridge == l[1].bridge {
			t.Fatalf("seed %d: a bridge forwards both ends of a link to itself %v:\n%s", seed, l, n.describe())
		}
		treeLinks[find(l[0].bridge)]++
	}
	for p, ms := range members {
		var lowest BridgeID
		for k, i := range ms {
			if id := n.bridges[i].Status().BridgeID; k == 0 || id < lowest {
				lowest = id
			}
		}
		for _, i := range ms {
			if root := n.bridges[i].Status().Root; root != lowest {
				t.Fatalf("seed %d: bridge %d takes %v for the root; its part's lowest is %v:\n%s", seed, i, root, lowest, n.describe())
			}
		}
		if got := treeLinks[p]; got != len(ms)-1 {
			t.Fatalf("seed %d: a part of %d bridges has %d forwarding links; a spanning tree has %d:\n%s",
				seed, len(ms), got, len(ms)-1, n.describe())
		}
	}
	// Forwarding links number one less than the bridges in each part, so
	// if they also connect every part they are a tree: check connection.
	tree := make([]int, len(n.bridges))
	for i := range tree {
		tree[i] = i
	}
	treeFind := func(i int) int {
		for tree[i] != i {
			i = tree[i]
		}
		return i
	}
	for _, l := range n.forwardingLinks() {
		tree[treeFind(l[0].bridge)] = treeFind(l[1].bridge)
	}
	for _, ms := range members {
		for _, i := range ms[1:] {
			if treeFind(i) != treeFind(ms[0]) {
				t.Fatalf("seed %d: bridges %d and %d are connected but not by forwarding links:\n%s", seed, ms[0], i, n.describe())
			}
		}
	}
	// A link that is up forwards at both ends or discards at one: one end
	// forwarding into a discarding port is fine, but then the other must
	// be an alternate or backup port, never a root or designated one that
	// waits forever.
	for x, y := range n.peer {
		if !n.up[x] {
			continue
		}
		px, py := n.portStatus(x), n.portStatus(y)
		blocked := func(p PortStatus) bool { return p.Role == RoleAlternate || p.Role == RoleBackup }
		if px.State != Forwarding && !blocked(px) && !(py.State != Forwarding && blocked(py)) {
			t.Fatalf("seed %d: %v is %v %v after a minute, facing %v %v:\n%s", seed, x, px.Role, px.State, py.Role, py.State, n.describe())
		}
	}
}

func TestReceiveDropsOwnConfigBPDU(t *testing.T) {
	n := newSimNet(t)
	b := n.addBridge(32768)
	br := n.bridges[b]
	br.AddPort(1, DefaultPortConfig())
	own := BPDU{Type: TypeConfig, Root: br.Status().BridgeID, Bridge: br.Status().BridgeID, Port: NewPortID(128, 1), MaxAge: TimeOf(20)}
	if err := br.Receive(1, own); err == nil {
		t.Error("a port took its own configuration BPDU")
	}
	if err := br.Receive(9, own); err == nil {
		t.Error("a BPDU on a port the bridge lacks was taken")
	}
	if p := n.portStatus(end{b, 1}); p.RxDropped != 1 || p.RxBPDUs != 0 {
		t.Errorf("port 1 counts %d BPDUs dropped, %d taken; want 1 and 0", p.RxDropped, p.RxBPDUs)
	}
}

func TestConfigValidation(t *testing.T) {
	good := DefaultBridgeConfig([6]byte{2})
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []func(*BridgeConfig){
		func(c *BridgeConfig) { c.Priority = 100 },
		func(c *BridgeConfig) { c.MaxAge = 5 },
		func(c *BridgeConfig) { c.MaxAge = 41 },
		func(c *BridgeConfig) { c.ForwardDelay = 3 },
		func(c *BridgeConfig) { c.ForwardDelay = 4; c.MaxAge = 20 }, // 2 × (4 − 1) < 20
		func(c *BridgeConfig) { c.TransmitHoldCount = 0 },
		func(c *BridgeConfig) { c.ForceVersion = 1 },
	} {
		c := good
		bad(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%+v validates", c)
		}
	}
	for _, bad := range []PortConfig{{Priority: 8, PathCost: 1}, {Priority: 128, PathCost: 0}, {Priority: 128, PathCost: MaxPathCost + 1}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v validates", bad)
		}
	}
	for mbps, want := range map[uint64]uint32{0: 2000, 10: 2000000, 100: 200000, 1000: 20000, 10000: 2000, 100000: 200, 1e8: 1} {
		if got := PathCostForSpeed(mbps); got != want {
			t.Errorf("PathCostForSpeed(%d) = %d; want %d", mbps, got, want)
		}
	}
}

// TestSetConfigReelects: lowering the non-root bridge's priority below
// the root's makes it the root.
func TestSetConfigReelects(t *testing.T) {
	n := newSimNet(t)
	a, b := n.addBridge(4096), n.addBridge(32768)
	n.link(a, 1, b, 1)
	cfg := n.bridges[b].Status().Config
	cfg.Priority = 0
	if err := n.bridges[b].SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	n.tick(1)
	wantPort(t, n, end{a, 1}, RoleRoot, Forwarding)
	wantPort(t, n, end{b, 1}, RoleDesignated, Forwarding)
	if !n.bridges[b].Status().IsRoot() {
		t.Error("the bridge with priority 0 is not the root")
	}
	if ports := n.bridges[a].Status().Ports; !slices.EqualFunc(ports, []PortStatus{{Number: 1}}, func(p, q PortStatus) bool { return p.Number == q.Number }) {
		t.Errorf("ports %+v", ports)
	}
}
