// Package rstp is the Rapid Spanning Tree Protocol of IEEE 802.1D-2004
// clause 17 (802.1w), with its compatibility with 802.1D's original STP:
// the BPDU codec, and one bridge's state machines as the standard gives
// them. It is pure logic: it owns no goroutine, reads no clock and touches
// no port. Its caller delivers received BPDUs (Receive), calls Tick once a
// second, and carries out what the machines decide through an Env: send a
// BPDU, set a port's state, forget what a port learned.
//
// # How it works
//
// Every bridge and port has a priority vector (17.5): the root it believes
// in, its cost to that root, and who told it. Designated ports send theirs
// in BPDUs every hello time; a port that hears a better vector than its
// own takes it (Port Information, 17.27), and the bridge then chooses its
// root port, the one with the best way to the root, and gives every other
// port a role (Port Role Selection, 17.28): designated if it offers the
// LAN a better way than anyone else there, alternate if it hears a better
// offer from another bridge, backup if the better offer comes from this
// bridge's own other port on the same LAN. Alternate and backup ports
// discard; they are where a loop is cut.
//
// A designated port becomes forwarding quickly when it is an edge port
// (no bridge behind it: configured so, or hearing no BPDU for a few
// seconds) or when its neighbour agrees: it sends a proposal, the
// neighbour puts all its other ports in sync (discarding, or edge, or
// agreed) and answers with an agreement (Port Role Transitions, 17.29).
// Otherwise it waits out the forward delay. A port that starts forwarding
// signals a topology change, and every bridge flushes the addresses it
// learned on its other ports (Topology Change, 17.31).
//
// A port that receives STP's configuration or TCN BPDUs falls back to
// sending them (Port Protocol Migration, 17.24), so that an 802.1D bridge,
// which discards RST BPDUs, can take part; the fallback holds until the
// port is reset.
//
// The machines are written as the standard's state diagrams: one method
// per machine evaluates the transitions out of its current state and, when
// one holds, enters the next state and runs its actions. After every event
// the bridge runs all machines until none moves.
package rstp

import (
	"errors"
	"fmt"
	"slices"
)

// Defaults and fixed values (Tables 17-1, 17-2 and 17-3), as OVS has them.
const (
	DefaultPriority          = 32768
	DefaultPortPriority      = 128
	DefaultMaxAge            = 20 // seconds
	DefaultForwardDelay      = 15 // seconds
	DefaultTransmitHoldCount = 6  // BPDUs a second, at most
	// HelloTime is fixed in RSTP, as in OVS.
	HelloTime = 2 // seconds
	// MigrateTime is how long a port waits to hear the other protocol.
	MigrateTime = 3 // seconds
	// DefaultPathCost is the cost of a 10 Gbit/s link, OVS's for a port
	// of unknown speed.
	DefaultPathCost = 2000
	MaxPathCost     = 200000000
	MaxPortNumber   = 4095
)

// Versions of the protocol a bridge can be forced to (ForceProtocolVersion).
const (
	VersionSTP  = 0 // STP compatibility: send only configuration and TCN BPDUs
	VersionRSTP = 2
)

// BridgeConfig configures a bridge.
type BridgeConfig struct {
	Priority          uint16  // 0 to 61440 in steps of 4096
	Address           [6]byte // with Priority, the bridge identifier
	MaxAge            uint16  // 6 to 40 s
	ForwardDelay      uint16  // 4 to 30 s
	TransmitHoldCount uint16  // 1 to 10
	ForceVersion      uint8   // VersionSTP or VersionRSTP
}

// DefaultBridgeConfig is the configuration OVS gives a bridge whose address
// is addr.
func DefaultBridgeConfig(addr [6]byte) BridgeConfig {
	return BridgeConfig{
		Priority: DefaultPriority, Address: addr,
		MaxAge: DefaultMaxAge, ForwardDelay: DefaultForwardDelay,
		TransmitHoldCount: DefaultTransmitHoldCount, ForceVersion: VersionRSTP,
	}
}

// Validate reports what is out of range, and timers that break 17.14's
// rule 2 × (Forward Delay − 1) ≥ Max Age ≥ 2 × (Hello Time + 1).
func (c BridgeConfig) Validate() error {
	switch {
	case c.Priority%4096 != 0 || c.Priority > 61440:
		return fmt.Errorf("priority %d is not a multiple of 4096 from 0 to 61440", c.Priority)
	case c.MaxAge < 6 || c.MaxAge > 40:
		return fmt.Errorf("max age %d s is not from 6 to 40", c.MaxAge)
	case c.ForwardDelay < 4 || c.ForwardDelay > 30:
		return fmt.Errorf("forward delay %d s is not from 4 to 30", c.ForwardDelay)
	case c.TransmitHoldCount < 1 || c.TransmitHoldCount > 10:
		return fmt.Errorf("transmit hold count %d is not from 1 to 10", c.TransmitHoldCount)
	case c.ForceVersion != VersionSTP && c.ForceVersion != VersionRSTP:
		return fmt.Errorf("protocol version %d is not %d (STP) or %d (RSTP)", c.ForceVersion, VersionSTP, VersionRSTP)
	case 2*(c.ForwardDelay-1) < c.MaxAge:
		return fmt.Errorf("max age %d s is more than 2 × (forward delay %d s − 1)", c.MaxAge, c.ForwardDelay)
	case c.MaxAge < 2*(HelloTime+1):
		return fmt.Errorf("max age %d s is less than 2 × (hello time %d s + 1)", c.MaxAge, HelloTime)
	}
	return nil
}

// PortConfig configures a port.
type PortConfig struct {
	Priority uint8  // 0 to 240 in steps of 16
	PathCost uint32 // 1 to MaxPathCost
	// AdminEdge declares the port an edge port: no bridge behind it, so it
	// forwards at once. A BPDU it receives proves otherwise.
	AdminEdge bool
	// AutoEdge makes a designated port that hears no BPDU within
	// MigrateTime an edge port.
	AutoEdge bool
}

// DefaultPortConfig is the configuration OVS gives a port of unknown
// speed.
func DefaultPortConfig() PortConfig {
	return PortConfig{Priority: DefaultPortPriority, PathCost: DefaultPathCost, AutoEdge: true}
}

// PathCostForSpeed is the recommended cost of a link of the given speed
// (Table 17-3): 20,000,000,000 kbit/s divided by the speed, at most
// MaxPathCost; DefaultPathCost when the speed is unknown (0).
func PathCostForSpeed(mbps uint64) uint32 {
	if mbps == 0 {
		return DefaultPathCost
	}
	return uint32(max(min(20_000_000/mbps, MaxPathCost), 1))
}

// Validate reports what is out of range.
func (c PortConfig) Validate() error {
	switch {
	case c.Priority%16 != 0 || c.Priority > 240:
		return fmt.Errorf("port priority %d is not a multiple of 16 from 0 to 240", c.Priority)
	case c.PathCost < 1 || c.PathCost > MaxPathCost:
		return fmt.Errorf("path cost %d is not from 1 to %d", c.PathCost, MaxPathCost)
	}
	return nil
}

// Role is a port's role in the spanning tree.
type Role uint8

// The roles (17.7).
const (
	RoleDisabled Role = iota
	RoleRoot
	RoleDesignated
	RoleAlternate
	RoleBackup
)

var roleNames = [...]string{"disabled", "root", "designated", "alternate", "backup"}

func (r Role) String() string {
	if int(r) < len(roleNames) {
		return roleNames[r]
	}
	return fmt.Sprintf("Role(%d)", r)
}

// State is what a port does with frames other than BPDUs (17.30).
type State uint8

// The states. A discarding port neither forwards nor learns; a learning
// port learns from what it receives but forwards nothing.
const (
	Discarding State = iota
	Learning
	Forwarding
)

var stateNames = [...]string{"discarding", "learning", "forwarding"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", s)
}

// Env is what the state machines act on. Its methods are called from
// within the bridge's methods, and must have taken effect when they
// return: a port is not in sync until it has stopped forwarding.
type Env interface {
	// Transmit sends bpdu out of port n.
	Transmit(n uint16, bpdu BPDU)
	// SetState makes port n discard, learn or forward.
	SetState(n uint16, s State)
	// Flush forgets the addresses learned on port n.
	Flush(n uint16)
}

// Bridge is one bridge's spanning tree: its state machines and what they
// know. It is not safe for concurrent use.
type Bridge struct {
	cfg   BridgeConfig
	env   Env
	ports []*port // sorted by number

	// The bridge's variables (17.18).
	id             BridgeID
	bridgePriority priorityVector
	bridgeTimes    Times
	rootPortID     PortID
	rootPriority   priorityVector
	rootTimes      Times

	prsState        prsState
	topologyChanges uint64
	// unsettled counts the events after which the machines did not come to
	// rest within maxRounds: a defect, which Status reports.
	unsettled uint64
}

// New makes a bridge with no ports.
func New(cfg BridgeConfig, env Env) (*Bridge, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b := &Bridge{env: env}
	b.setConfig(cfg)
	b.enterInitBridge()
	b.run()
	return b, nil
}

func (b *Bridge) setConfig(cfg BridgeConfig) {
	b.cfg = cfg
	b.id = NewBridgeID(cfg.Priority, cfg.Address)
	b.bridgePriority = priorityVector{root: b.id, designatedBridge: b.id}
	b.bridgeTimes = Times{MaxAge: cfg.MaxAge, HelloTime: HelloTime, ForwardDelay: cfg.ForwardDelay}
}

// SetConfig changes the bridge's configuration (17.13): the ports' roles
// are selected again for the new identifier and times, a new transmit
// hold count resets the ports' transmit counts, a new protocol version
// restarts every port's machines.
func (b *Bridge) SetConfig(cfg BridgeConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	old := b.cfg
	if cfg == old {
		return nil
	}
	b.setConfig(cfg)
	for _, p := range b.ports {
		if cfg.ForceVersion != old.ForceVersion {
			p.begin()
		} else if cfg.TransmitHoldCount != old.TransmitHoldCount {
			p.txCount = 0
		}
	}
	// Role selection runs now, not when a port asks for it: a bridge
	// without ports has a new root all the same, itself.
	b.enterRoleSelection()
	b.run()
	return nil
}

// AddPort adds port number n (1 to MaxPortNumber) and starts its
// machines: it discards until they decide otherwise.
func (b *Bridge) AddPort(n uint16, cfg PortConfig) error {
	if n < 1 || n > MaxPortNumber {
		return fmt.Errorf("port number %d is not from 1 to %d", n, MaxPortNumber)
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	i, found := slices.BinarySearchFunc(b.ports, n, func(p *port, n uint16) int { return int(p.number) - int(n) })
	if found {
		return fmt.Errorf("port %d is already on the bridge", n)
	}
	p := &port{b: b, number: n, cfg: cfg, portEnabled: true}
	p.id = NewPortID(cfg.Priority, n)
	b.ports = slices.Insert(b.ports, i, p)
	p.begin()
	b.run()
	return nil
}

// RemovePort takes port n off the bridge; the others reselect their roles.
func (b *Bridge) RemovePort(n uint16) {
	i := slices.IndexFunc(b.ports, func(p *port) bool { return p.number == n })
	if i < 0 {
		return
	}
	b.ports = slices.Delete(b.ports, i, i+1)
	for _, p := range b.ports {
		p.reselect, p.selected = true, false
	}
	b.run()
}

// SetPortConfig changes port n's configuration (17.13).
func (b *Bridge) SetPortConfig(n uint16, cfg PortConfig) error {
	p := b.port(n)
	if p == nil {
		return fmt.Errorf("no port %d", n)
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	old := p.cfg
	p.cfg = cfg
	if cfg.Priority != old.Priority || cfg.PathCost != old.PathCost {
		p.id = NewPortID(cfg.Priority, n)
		p.reselect, p.selected = true, false
	}
	if cfg.AdminEdge != old.AdminEdge {
		p.enterBdm(cfg.AdminEdge)
	}
	b.run()
	return nil
}

// SetPortEnabled tells the machines whether port n's link is up. A port
// whose link is down has the disabled role.
func (b *Bridge) SetPortEnabled(n uint16, up bool) {
	if p := b.port(n); p != nil && p.portEnabled != up {
		p.portEnabled = up
		b.run()
	}
}

// ErrBPDUDropped is the error of a BPDU that a port did not take: one the
// bridge sent itself and that came back on the same port, or one on a
// disabled or unknown port.
var ErrBPDUDropped = errors.New("BPDU dropped")

// Receive hands the machines a BPDU that arrived on port n.
func (b *Bridge) Receive(n uint16, bpdu BPDU) error {
	p := b.port(n)
	if p == nil {
		return fmt.Errorf("%w: no port %d", ErrBPDUDropped, n)
	}
	if !p.portEnabled {
		p.rxDropped++
		return fmt.Errorf("%w: port %d is disabled", ErrBPDUDropped, n)
	}
	// 9.3.4: a configuration BPDU that this very port sent is its own
	// echo, off a shared medium.
	if bpdu.Type == TypeConfig && bpdu.Bridge == b.id && bpdu.Port == p.id {
		p.rxDropped++
		return fmt.Errorf("%w: port %d received its own BPDU", ErrBPDUDropped, n)
	}
	p.rxBPDUs++
	p.rcvd, p.rcvdBPDU = bpdu, true
	b.run()
	return nil
}

// ReceiveFrame decodes the BPDU in an Ethernet frame that arrived on port
// n and hands it to the machines. A frame that is no valid BPDU counts
// as dropped.
func (b *Bridge) ReceiveFrame(n uint16, frame []byte) error {
	bpdu, err := DecodeFrame(frame)
	if err != nil {
		if p := b.port(n); p != nil {
			p.rxDropped++
		}
		return err
	}
	return b.Receive(n, bpdu)
}

// Tick is one second passing: every port's timers count down (17.22).
func (b *Bridge) Tick() {
	for _, p := range b.ports {
		for _, t := range []*uint16{&p.helloWhen, &p.tcWhile, &p.fdWhile, &p.rcvdInfoWhile,
			&p.rrWhile, &p.rbWhile, &p.mdelayWhile, &p.edgeDelayWhile, &p.txCount} {
			if *t > 0 {
				*t--
			}
		}
	}
	b.run()
}

func (b *Bridge) port(n uint16) *port {
	for _, p := range b.ports {
		if p.number == n {
			return p
		}
	}
	return nil
}

// Status is what a bridge knows, as rstp-show prints it.
type Status struct {
	Config       BridgeConfig
	BridgeID     BridgeID
	Root         BridgeID
	RootPathCost uint32
	RootPort     uint16 // its number; 0 when this bridge is the root
	// DesignatedBridge, DesignatedPort and RootPortID are the rest of
	// the root priority vector (17.6): the bridge and port the root port
	// hears the root through, and the root port's identifier; this
	// bridge, 0 and 0 when it is the root.
	DesignatedBridge BridgeID
	DesignatedPort   PortID
	RootPortID       PortID
	// RootTimes are the root's times, which this bridge uses; they are its
	// own when it is the root.
	RootTimes       Times
	TopologyChanges uint64 // detected here, or notified by a neighbour
	Unsettled       uint64 // events after which the machines did not come to rest: a defect
	Ports           []PortStatus
}

// PortStatus is what a port knows.
type PortStatus struct {
	Number   uint16
	ID       PortID
	Config   PortConfig
	Role     Role
	State    State
	Enabled  bool
	Edge     bool // operating as an edge port
	SendRSTP bool // false: speaking STP to an 802.1D neighbour
	// DesignatedBridge and DesignatedPort are the designated port of the
	// port's LAN: this bridge and port when the port is designated.
	DesignatedBridge BridgeID
	DesignatedPort   PortID
	// DesignatedPathCost is the designated port's cost to the root.
	DesignatedPathCost uint32
	RxBPDUs            uint64
	TxBPDUs            uint64
	RxDropped          uint64 // BPDUs not taken: invalid, or refused by Receive
}

// IsRoot reports whether the bridge believes itself the root.
func (s Status) IsRoot() bool { return s.Root == s.BridgeID }

// Status reports what the bridge knows now.
func (b *Bridge) Status() Status {
	s := Status{
		Config: b.cfg, BridgeID: b.id,
		Root: b.rootPriority.root, RootPathCost: b.rootPriority.rootPathCost,
		RootPort: b.rootPortID.Number(), RootTimes: b.rootTimes,
		DesignatedBridge: b.rootPriority.designatedBridge, DesignatedPort: b.rootPriority.designatedPort,
		RootPortID:      b.rootPriority.bridgePort,
		TopologyChanges: b.topologyChanges, Unsettled: b.unsettled,
	}
	for _, p := range b.ports {
		s.Ports = append(s.Ports, PortStatus{
			Number: p.number, ID: p.id, Config: p.cfg, Role: p.role, State: p.state(),
			Enabled: p.portEnabled, Edge: p.operEdge, SendRSTP: p.sendRSTP,
			DesignatedBridge: p.portPriority.designatedBridge, DesignatedPort: p.portPriority.designatedPort,
			DesignatedPathCost: p.portPriority.rootPathCost,
			RxBPDUs:            p.rxBPDUs, TxBPDUs: p.txBPDUs, RxDropped: p.rxDropped,
		})
	}
	return s
}
