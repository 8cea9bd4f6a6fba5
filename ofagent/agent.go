// Package ofagent is xswitch's OpenFlow 1.3 agent: the connections to the
// controllers each bridge is given (set-controller), and what crosses them
// — flow table edits, ports and their counters through the daemon's typed
// calls (Switch, all it may ask of the daemon; never the protocol of
// package api), packet-ins, packet-outs and the tables' counters through
// the bridge. It follows Open vSwitch's
// connection manager: active targets (tcp:) are dialled again with backoff
// when they fail, passive ones (ptcp:) take any number of connections (as
// ovs-ofctl makes them), an idle connection is probed with an echo and
// dropped when it does not answer, and in fail mode standalone a bridge
// whose active controllers are all unreachable forwards as a learning
// switch until one comes back.
package ofagent

import (
	"log/slog"
	"sync"
	"time"

	"github.com/xswitch/xswitch/control"
	"github.com/xswitch/xswitch/control/api"
	vswitch "github.com/xswitch/xswitch/switch"
)

// Timings, as Open vSwitch's defaults.
const (
	// probeInterval is how long a connection may be silent before it is
	// sent an echo request, and then how long the answer may take
	// (OVS's inactivity_probe).
	probeInterval = 5 * time.Second
	// minBackoff and maxBackoff bound the wait between two attempts to
	// reach an active target (OVS's max_backoff).
	minBackoff = time.Second
	maxBackoff = 8 * time.Second
	// writeTimeout is how long a controller may leave its socket unread
	// before the connection is dropped.
	writeTimeout = 10 * time.Second
	// portPollInterval is how often ports are compared with what the
	// controllers were told, for PORT_STATUS.
	portPollInterval = time.Second
)

// Options configure an agent.
type Options struct {
	Log     *slog.Logger // nil: slog.Default()
	Version string       // the software version, for OFPMP_DESC
}

// Switch is what the agent asks of the daemon, and all it may: the
// bridges' controller settings and what removes their rules, the bridges
// themselves for what crosses the wire frame by frame and for their
// tables, typed edits of their tables, groups and meters, their groups'
// and meters' counters, and their ports. *control.Daemon is one.
type Switch interface {
	// OnControllers and OnFlowsRemoved have the agent told, in order and
	// without the daemon's lock held, of every bridge's controller
	// settings and of the rules removed with send_flow_rem.
	OnControllers(fn func(bridge string, s control.ControllerSettings))
	OnFlowsRemoved(fn func(bridge string, removed []control.RemovedFlow))
	// SetControllerStatus reports a target's connection, for show and
	// Controller:status.
	SetControllerStatus(bridge, target string, c control.ControllerConn)
	Bridge(name string) (*vswitch.Bridge, error)
	ApplyFlowMods(bridge string, mods []control.FlowMod) ([]int, error)
	OpenFlowPorts(bridge string) ([]control.OpenFlowPort, error)
	PortStats(bridge string) ([]control.PortCounters, error)
	ApplyGroupMod(bridge string, m control.GroupMod) error
	Groups(bridge string, id uint32) ([]api.GroupStatus, error)
	ApplyMeterMod(bridge string, m control.MeterMod) error
	Meters(bridge string, id uint32) ([]api.MeterStatus, error)
}

// Agent runs every bridge's controller connections.
type Agent struct {
	sw   Switch
	log  *slog.Logger
	opts Options

	// configuring serializes configure and Close, which start and stop
	// connections; mu guards the map alone, so that what a connection
	// calls back (flowsRemoved) never waits for a connection to stop.
	configuring sync.Mutex
	mu          sync.Mutex
	bridges     map[string]*bridgeAgent
	closed      bool
}

// New starts an agent for sw's bridges; from then on it follows their
// controller settings until Close.
func New(sw Switch, opts Options) *Agent {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	a := &Agent{sw: sw, log: opts.Log, opts: opts, bridges: map[string]*bridgeAgent{}}
	sw.OnFlowsRemoved(a.flowsRemoved)
	sw.OnControllers(a.configure)
	return a
}

// Close drops every connection and stops listening.
func (a *Agent) Close() {
	a.configuring.Lock()
	defer a.configuring.Unlock()
	a.mu.Lock()
	a.closed = true
	bridges := a.bridges
	a.bridges = map[string]*bridgeAgent{}
	a.mu.Unlock()
	for _, ba := range bridges {
		ba.close()
	}
}

// configure is the daemon's hook: it is called in order, without the
// daemon's lock, whenever a bridge's controller settings change.
func (a *Agent) configure(bridge string, s control.ControllerSettings) {
	a.configuring.Lock()
	defer a.configuring.Unlock()
	a.mu.Lock()
	closed, ba := a.closed, a.bridges[bridge]
	a.mu.Unlock()
	switch {
	case closed:
		return
	case len(s.Targets) == 0:
		if ba != nil {
			a.mu.Lock()
			delete(a.bridges, bridge)
			a.mu.Unlock()
			ba.close()
		}
		return
	case ba == nil:
		br, err := a.sw.Bridge(bridge)
		if err != nil {
			a.log.Error("openflow: no such bridge for its controllers", "bridge", bridge, "err", err)
			return
		}
		ba = newBridgeAgent(a, bridge, br)
		a.mu.Lock()
		a.bridges[bridge] = ba
		a.mu.Unlock()
	}
	ba.configure(s)
}

func (a *Agent) flowsRemoved(bridge string, removed []control.RemovedFlow) {
	a.mu.Lock()
	ba := a.bridges[bridge]
	a.mu.Unlock()
	if ba != nil {
		ba.flowsRemoved(removed)
	}
}

// bridgeAgent is one bridge's side of the agent: its targets, their
// connections, and what goes to all of them.
type bridgeAgent struct {
	a    *Agent
	name string
	br   *vswitch.Bridge
	log  *slog.Logger

	mu       sync.Mutex
	settings control.ControllerSettings
	targets  map[string]*target // by canonical target
	conns    map[*conn]bool
	// Role arbitration (OpenFlow 1.3 §6.3.6): the last generation id a
	// master or slave request carried.
	generation    uint64
	hasGeneration bool

	stop chan struct{}
	done sync.WaitGroup
}

func newBridgeAgent(a *Agent, name string, br *vswitch.Bridge) *bridgeAgent {
	ba := &bridgeAgent{
		a: a, name: name, br: br, log: a.log.With("bridge", name),
		targets: map[string]*target{}, conns: map[*conn]bool{}, stop: make(chan struct{}),
	}
	ba.done.Add(2)
	go func() {
		defer ba.done.Done()
		ba.pumpPacketIns()
	}()
	go func() {
		defer ba.done.Done()
		ba.watchPorts()
	}()
	return ba
}

// configure starts the targets s adds, stops those it drops, and applies
// its fail mode.
func (ba *bridgeAgent) configure(s control.ControllerSettings) {
	ba.mu.Lock()
	ba.settings = s
	want := map[string]control.ControllerTarget{}
	for _, t := range s.Targets {
		want[t.String()] = t
	}
	var stopped []*target
	for key, t := range ba.targets {
		if _, ok := want[key]; !ok {
			stopped = append(stopped, t)
			delete(ba.targets, key)
		}
	}
	for key, ct := range want {
		if _, ok := ba.targets[key]; !ok {
			t := newTarget(ba, ct)
			ba.targets[key] = t
			t.start()
		}
	}
	ba.mu.Unlock()
	for _, t := range stopped {
		t.stop()
	}
	ba.updateFailOpen()
}

// close stops every target and connection, and leaves the bridge
// forwarding by its tables.
func (ba *bridgeAgent) close() {
	ba.mu.Lock()
	targets := ba.targets
	ba.targets = map[string]*target{}
	ba.mu.Unlock()
	for _, t := range targets {
		t.stop()
	}
	close(ba.stop)
	ba.done.Wait()
	ba.br.SetFailOpen(false)
}

// updateFailOpen applies OVS's fail-open rule: in fail mode standalone, a
// bridge that has active controllers and is connected to none of them
// forwards every frame as NORMAL. Passive targets (ovs-ofctl's way in)
// do not count, as OVS's service connections do not.
func (ba *bridgeAgent) updateFailOpen() {
	ba.mu.Lock()
	active, connected := 0, 0
	for _, t := range ba.targets {
		if t.ct.Listen {
			continue
		}
		active++
		if t.connected() {
			connected++
		}
	}
	open := ba.settings.FailMode != control.FailSecure && active > 0 && connected == 0
	ba.mu.Unlock()
	ba.br.SetFailOpen(open)
}

func (ba *bridgeAgent) addConn(c *conn) {
	ba.mu.Lock()
	ba.conns[c] = true
	ba.mu.Unlock()
}

func (ba *bridgeAgent) removeConn(c *conn) {
	ba.mu.Lock()
	delete(ba.conns, c)
	ba.mu.Unlock()
}

// each calls fn for every connection that has finished its handshake.
func (ba *bridgeAgent) each(fn func(*conn)) {
	ba.mu.Lock()
	conns := make([]*conn, 0, len(ba.conns))
	for c := range ba.conns {
		conns = append(conns, c)
	}
	ba.mu.Unlock()
	for _, c := range conns {
		fn(c)
	}
}
