package tunnel

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/xswitch/xswitch/header"
	"github.com/xswitch/xswitch/port"
)

// MaxVNI is the largest VNI VXLAN and Geneve carry: 24 bits.
const MaxVNI = 1<<24 - 1

// Config is one tunnel port, as add-port describes it.
type Config struct {
	Name   string
	Kind   Kind
	Remote netip.Addr
	// Local is the source address of what the port sends, and the address
	// it receives on; unset, the address the kernel's route to Remote
	// prefers.
	Local netip.Addr
	// Key is the VNI the port sends and the only one it receives, unless
	// KeyFlow: then it sends the VNI the frame's tun_id says
	// (set_field:V->tun_id) and receives any, as OVS's key=flow.
	Key     uint32
	KeyFlow bool
	DstPort uint16 // 0: the kind's (Kind.DefaultPort)
}

// Validate checks c without looking at the host.
func (c Config) Validate() error {
	if c.Kind != VXLAN && c.Kind != Geneve {
		return fmt.Errorf("tunnel port %q: unknown tunnel type %d", c.Name, c.Kind)
	}
	if !c.Remote.Is4() {
		return fmt.Errorf("tunnel port %q: remote IP %v: only IPv4 underlays are supported", c.Name, c.Remote)
	}
	if c.Remote.IsUnspecified() || c.Remote.IsMulticast() || c.Remote.IsLoopback() {
		return fmt.Errorf("tunnel port %q: remote IP %v is not a unicast address of another host", c.Name, c.Remote)
	}
	if c.Local.IsValid() && (!c.Local.Is4() || c.Local.IsUnspecified() || c.Local.IsMulticast()) {
		return fmt.Errorf("tunnel port %q: local IP %v is not a unicast IPv4 address", c.Name, c.Local)
	}
	if c.Key > MaxVNI {
		return fmt.Errorf("tunnel port %q: key %d is beyond the 24 bits of a VNI (at most %d)", c.Name, c.Key, MaxVNI)
	}
	return nil
}

// dstPort is the UDP port the tunnel uses.
func (c Config) dstPort() uint16 {
	return c.Kind.Port(c.DstPort)
}

// Port is a tunnel port: frames sent to it leave encapsulated towards its
// remote through its underlay, and the underlay's frames from the remote
// come to the bridge as the port's. It implements port.Tunnel.
//
// How the remote is reached (the interface, the source address and the
// next hop's MAC address) is the kernel's routing and neighbour tables'
// business: the control plane resolves it and hands it over with
// SetRoute whenever it changes; until a route with a resolved next hop
// is known, frames to the port are dropped and counted.
type Port struct {
	cfg Config
	u   *Underlay
	// tx is how frames leave now: nil while the remote is unreachable.
	tx atomic.Pointer[txPath]
	// mu serializes SetRoute and Close, which change what the underlay
	// listens on for the port.
	mu        sync.Mutex
	listening Listener // zero: nothing
	route     Route
	unreach   error // why tx is nil
	closed    bool
	// version counts the changes of tx, for Header.
	version atomic.Uint64

	txOversize, txNoRoute atomic.Uint64
}

// txPath is a resolved way to the remote.
type txPath struct {
	encap *Encap
}

var _ port.Tunnel = (*Port)(nil)

// NewPort makes a tunnel port over u, which it holds until it closes
// (see Underlays.NewPort for an underlay shared by interface).
func NewPort(cfg Config, u *Underlay) (*Port, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return newPort(cfg, u), nil
}

// newPort makes a port of a valid cfg, holding u.
func newPort(cfg Config, u *Underlay) *Port {
	u.hold()
	return &Port{cfg: cfg, u: u}
}

// Config returns the port's configuration.
func (p *Port) Config() Config { return p.cfg }

// SetRoute makes r, resolved by the control plane, the way to the remote.
// A route through another interface than the underlay's is refused: the
// port keeps its underlay for its life.
func (p *Port) SetRoute(r Route) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("tunnel port is closed")
	}
	if r.Ifname != p.u.Name() {
		p.setTx(nil)
		p.unreach = fmt.Errorf("the route to %v now leaves by %s, not by the tunnel's underlay %s: re-add the port",
			p.cfg.Remote, r.Ifname, p.u.Name())
		return fmt.Errorf("tunnel port %q: %w", p.cfg.Name, p.unreach)
	}
	l := Listener{Addr: r.Local.As4(), Port: p.cfg.dstPort(), Kind: p.cfg.Kind}
	if l != p.listening {
		if err := p.u.listen(l); err != nil {
			return fmt.Errorf("tunnel port %q: %w", p.cfg.Name, err)
		}
		if p.listening != (Listener{}) {
			p.u.unlisten(p.listening)
		}
		p.listening = l
	}
	p.route = r
	if !r.Resolved {
		p.setTx(nil)
		p.unreach = fmt.Errorf("the next hop %v on %s is not resolved yet (ARP)", r.NextHop, r.Ifname)
		return nil
	}
	e, err := NewEncap(p.cfg.Kind, Endpoint{IP: r.Local, MAC: r.LocalMAC}, Endpoint{IP: p.cfg.Remote, MAC: r.NextHopMAC}, p.cfg.dstPort())
	if err != nil {
		return fmt.Errorf("tunnel port %q: %w", p.cfg.Name, err)
	}
	p.setTx(&txPath{encap: e})
	p.unreach = nil
	return nil
}

// setTx makes path the way frames leave, under mu.
func (p *Port) setTx(path *txPath) {
	p.tx.Store(path)
	p.version.Add(1)
}

// Header returns the outer headers frames leave with now.
func (p *Port) Header() (port.TunnelHeader, uint64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	path := p.tx.Load()
	if path == nil {
		return port.TunnelHeader{}, p.version.Load(), false
	}
	return path.encap.Header(), p.version.Load(), true
}

// Unreachable says the remote cannot be reached now, and why: frames to
// the port are dropped and counted until SetRoute gives a way again.
func (p *Port) Unreachable(why error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setTx(nil)
	p.route, p.unreach = Route{}, why
}

// WhyUnreachable says why frames to the port are dropped now; nil when
// they are not.
func (p *Port) WhyUnreachable() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.unreach
}

// Route is the way to the remote that SetRoute set last.
func (p *Port) Route() Route {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.route
}

// Name is the port's name, which no interface has.
func (p *Port) Name() string { return p.cfg.Name }

// RxQueues is empty: the port's frames arrive on its underlay.
func (p *Port) RxQueues() []port.RxQueue { return nil }

// Underlay is the port the tunnel's frames arrive on and leave by.
func (p *Port) Underlay() port.Underlay { return p.u }

// Endpoint says which of the underlay's frames are the port's.
func (p *Port) Endpoint() port.TunnelEndpoint {
	ep := port.TunnelEndpoint{Remote: p.cfg.Remote.As4(), DstPort: p.cfg.dstPort(), Key: p.cfg.Key, KeyFlow: p.cfg.KeyFlow}
	if p.cfg.Local.IsValid() {
		ep.Local = p.cfg.Local.As4()
	}
	return ep
}

// Transmit sends frames as a frame that set no tun_id leaves: with the
// port's key, VNI 0 for a key of flow.
func (p *Port) Transmit(frames [][]byte) int { return p.TransmitTunneled(frames, nil) }

// TransmitTunneled encapsulates frames and sends them through the
// underlay; a nil tx is VNI 0 and hash 0 for every frame.
func (p *Port) TransmitTunneled(frames [][]byte, tx []port.TunnelTx) int {
	path := p.tx.Load()
	if path == nil {
		p.txNoRoute.Add(uint64(len(frames)))
		return 0
	}
	sent, oversize := p.u.transmit(path.encap, frames, tx, p.cfg.Key, p.cfg.KeyFlow)
	if oversize > 0 {
		p.txOversize.Add(uint64(oversize))
	}
	return sent
}

// MaxInnerFrame is the longest frame the port encapsulates within the
// underlay's MTU: that less the outer IPv4, UDP and tunnel headers.
func (p *Port) MaxInnerFrame() int { return p.u.mtu + header.EthernetLen - Overhead }

// Info describes the port: its kind, and the MTU its frames may have:
// the underlay's less the encapsulation's overhead, as the kernel's vxlan
// device takes.
func (p *Port) Info() port.Info {
	return port.Info{Kind: p.cfg.Kind.String(), MaxFrame: p.MaxInnerFrame(), MTU: p.u.mtu - Overhead}
}

// Stats are empty: a tunnel port has no kernel counters of its own. What
// it drops is in TunnelStats, and its underlay's in Underlay.DropStats.
func (p *Port) Stats() port.Stats { return port.Stats{} }

// TunnelStats are what a tunnel port dropped on its own account: frames
// too long to encapsulate within its underlay's MTU, and frames sent while
// its remote was unreachable (no route by its underlay, or its next hop
// not resolved yet).
type TunnelStats struct {
	TxOversize uint64
	TxNoRoute  uint64
}

// TunnelStats reports the port's drops.
func (p *Port) TunnelStats() TunnelStats {
	return TunnelStats{TxOversize: p.txOversize.Load(), TxNoRoute: p.txNoRoute.Load()}
}

// Close stops the port listening and lets go of its underlay, which
// closes when no other port holds it.
func (p *Port) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	p.setTx(nil)
	var errs []error
	if p.listening != (Listener{}) {
		errs = append(errs, p.u.unlisten(p.listening))
	}
	errs = append(errs, p.u.release())
	return errors.Join(errs...)
}
