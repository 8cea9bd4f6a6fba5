package rstp

import (
	"fmt"
	"slices"
	"testing"
)

// A simulated network: bridges whose ports are joined by point-to-point
// links, a clock that the test advances a second at a time, and every
// BPDU carried through the frame codec, as the switch carries it.

// end is one end of a link: a bridge (by index) and a port number.
type end struct {
	bridge int
	port   uint16
}

func (e end) String() string { return fmt.Sprintf("b%d/p%d", e.bridge, e.port) }

type delivery struct {
	to    end
	frame []byte
}

type simNet struct {
	t       testing.TB
	bridges []*Bridge
	peer    map[end]end // both directions
	up      map[end]bool
	state   map[end]State
	flushes map[end]int
	sent    map[end][]BPDU
	queue   []delivery
	now     int // seconds
}

type simEnv struct {
	n *simNet
	i int
}

func (e simEnv) Transmit(port uint16, bpdu BPDU) {
	from := end{e.i, port}
	e.n.sent[from] = append(e.n.sent[from], bpdu)
	if to, ok := e.n.peer[from]; ok && e.n.up[from] {
		e.n.queue = append(e.n.queue, delivery{to: to, frame: bpdu.AppendFrame(nil, [6]byte{2, 0, 0, 0, byte(e.i), byte(port)})})
	}
}

func (e simEnv) SetState(port uint16, s State) { e.n.state[end{e.i, port}] = s }
func (e simEnv) Flush(port uint16)             { e.n.flushes[end{e.i, port}]++ }

func newSimNet(t testing.TB) *simNet {
	return &simNet{
		t: t, peer: map[end]end{}, up: map[end]bool{},
		state: map[end]State{}, flushes: map[end]int{}, sent: map[end][]BPDU{},
	}
}

// addBridge adds a bridge with the given priority and the address
// 02:00:00:00:00:i, i being its index.
func (n *simNet) addBridge(priority uint16, mutate ...func(*BridgeConfig)) int {
	n.t.Helper()
	i := len(n.bridges)
	cfg := DefaultBridgeConfig([6]byte{2, 0, 0, 0, 0, byte(i + 1)})
	cfg.Priority = priority
	for _, m := range mutate {
		m(&cfg)
	}
	b, err := New(cfg, simEnv{n, i})
	if err != nil {
		n.t.Fatal(err)
	}
	n.bridges = append(n.bridges, b)
	return i
}

// link joins port pa of bridge a and port pb of bridge b, adding the ports.
func (n *simNet) link(a int, pa uint16, b int, pb uint16) {
	n.t.Helper()
	x, y := end{a, pa}, end{b, pb}
	n.peer[x], n.peer[y] = y, x
	n.up[x], n.up[y] = true, true
	for _, e := range []end{x, y} {
		if n.bridges[e.bridge].port(e.port) == nil {
			if err := n.bridges[e.bridge].AddPort(e.port, DefaultPortConfig()); err != nil {
				n.t.Fatal(err)
			}
		}
	}
	n.deliver()
}

// cut takes the link at e down: both ends lose their link.
func (n *simNet) cut(e end) {
	f := n.peer[e]
	n.up[e], n.up[f] = false, false
	n.bridges[e.bridge].SetPortEnabled(e.port, false)
	n.bridges[f.bridge].SetPortEnabled(f.port, false)
	n.deliver()
}

// deliver hands over queued BPDUs until none are left.
func (n *simNet) deliver() {
	n.t.Helper()
	for rounds := 0; len(n.queue) > 0; rounds++ {
		if rounds > 100000 {
			n.t.Fatal("BPDUs never stop flowing without a tick")
		}
		d := n.queue[0]
		n.queue = n.queue[1:]
		bpdu, err := DecodeFrame(d.frame)
		if err != nil {
			n.t.Fatalf("a BPDU sent to %v does not decode: %v", d.to, err)
		}
		n.bridges[d.to.bridge].Receive(d.to.port, bpdu)
		n.noLoop()
	}
}

// tick advances the clock by seconds, delivering after each second.
func (n *simNet) tick(seconds int) {
	for range seconds {
		n.now++
		for _, b := range n.bridges {
			b.Tick()
		}
		n.deliver()
		n.noLoop()
	}
}

// noLoop fails the test if the forwarding links form a cycle: a loop,
// even for a second, is what the protocol exists to prevent.
func (n *simNet) noLoop() {
	n.t.Helper()
	set := make([]int, len(n.bridges))
	for i := range set {
		set[i] = i
	}
	find := func(i int) int {
		for set[i] != i {
			i = set[i]
		}
		return i
	}
	for _, l := range n.forwardingLinks() {
		a, b := find(l[0].bridge), find(l[1].bridge)
		if a == b {
			n.t.Fatalf("at %d s the forwarding links close a loop at %v:\n%s", n.now, l, n.describe())
		}
		set[a] = b
	}
}

func (n *simNet) portStatus(e end) PortStatus {
	n.t.Helper()
	for _, p := range n.bridges[e.bridge].Status().Ports {
		if p.Number == e.port {
			return p
		}
	}
	n.t.Fatalf("no port %v", e)
	return PortStatus{}
}

// settled fails the test if a bridge's machines ever failed to come to
// rest, and checks that the state Env heard is the state the port has.
func (n *simNet) settled() {
	n.t.Helper()
	for i, b := range n.bridges {
		s := b.Status()
		if s.Unsettled != 0 {
			n.t.Fatalf("bridge %d: the machines failed to come to rest %d times", i, s.Unsettled)
		}
		for _, p := range s.Ports {
			if got := n.state[end{i, p.Number}]; got != p.State {
				n.t.Fatalf("%v is %v but Env was told %v", end{i, p.Number}, p.State, got)
			}
		}
	}
}

// forwardingLinks are the links both of whose ends forward, each once.
func (n *simNet) forwardingLinks() [][2]end {
	var out [][2]end
	for x, y := range n.peer {
		if x.bridge < y.bridge || x.bridge == y.bridge && x.port < y.port {
			if n.up[x] && n.state[x] == Forwarding && n.state[y] == Forwarding {
				out = append(out, [2]end{x, y})
			}
		}
	}
	slices.SortFunc(out, func(a, b [2]end) int {
		return a[0].bridge*10000 + int(a[0].port) - b[0].bridge*10000 - int(b[0].port)
	})
	return out
}

// describe lists every port's role and state, for failure messages.
func (n *simNet) describe() string {
	var s string
	for i, b := range n.bridges {
		st := b.Status()
		s += fmt.Sprintf("bridge %d %v root %v cost %d root port %d\n", i, st.BridgeID, st.Root, st.RootPathCost, st.RootPort)
		for _, p := range st.Ports {
			peer := "-"
			if e, ok := n.peer[end{i, p.Number}]; ok {
				peer = e.String()
			}
			s += fmt.Sprintf("  port %d (to %s): %v %v edge=%v rstp=%v\n", p.Number, peer, p.Role, p.State, p.Edge, p.SendRSTP)
		}
	}
	return s
}
