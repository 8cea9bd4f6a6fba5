package tunnel

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/xswitch/xswitch/header"
	"github.com/xswitch/xswitch/port"
)

// Underlay is the port on an interface that tunnels' frames arrive on and
// leave by, shared by every tunnel over that interface: an AF_XDP port
// whose XDP program steers to its sockets only the datagrams to the
// (address, UDP port) pairs its tunnels listen on, so that the host's own
// traffic on the interface goes up the stack as before.
//
// It implements port.Underlay: the bridge polls its queues and hands each
// frame, decapsulated here, to the tunnel it belongs to; tunnels send
// through it (Port.TransmitTunneled), encapsulating into its buffers.
//
// An underlay lives as long as a tunnel port holds it: each Port holds
// its underlay from NewPort to Close, and the last to close closes it.
// No one else closes an underlay.
type Underlay struct {
	port.Port
	// listener is the port's XDP side, when it has one (an AF_XDP port):
	// what it steers to the sockets follows the listeners.
	listener tunnelListener

	mu        sync.Mutex // serializes changes to the listeners and holds
	refs      map[Listener]int
	listeners atomic.Pointer[Listeners] // read per frame by the forwarders
	holds     int                       // the tunnel ports over it
	// set is the set the underlay was opened in, which it leaves when it
	// closes; nil for one made by NewUnderlay alone.
	set *Underlays

	drops         [numResults]atomic.Uint64
	unknownRemote atomic.Uint64
	wrongKey      atomic.Uint64

	// mtu is the interface's: what an encapsulated frame's outer IPv4
	// datagram may take.
	mtu int
	// Encapsulation happens under txMu, into buffers of the longest frame
	// the underlay sends, one per frame of the largest batch seen.
	txMu sync.Mutex
	bufs [][]byte
	out  [][]byte
}

// tunnelListener is an XDP program that steers datagrams to the sockets
// by their (address, port): afxdp.Port with Config.Underlay.
type tunnelListener interface {
	ListenTunnel(addr netip.Addr, port uint16, kind uint32) error
	UnlistenTunnel(addr netip.Addr, port uint16) error
}

var _ port.Underlay = (*Underlay)(nil)

// NewUnderlay makes p, which the underlay then owns, carry tunnels over an
// interface of MTU mtu. The first tunnel port made over it (NewPort)
// holds it; p closes with the last.
func NewUnderlay(p port.Port, mtu int) *Underlay {
	u := &Underlay{Port: p, refs: map[Listener]int{}, mtu: mtu}
	u.listener, _ = p.(tunnelListener)
	u.listeners.Store(&Listeners{})
	return u
}

// hold counts one more tunnel port over the underlay.
func (u *Underlay) hold() {
	u.mu.Lock()
	u.holds++
	u.mu.Unlock()
}

// release lets go of one hold, and with the last closes the underlay and
// takes it out of its set.
func (u *Underlay) release() error {
	if u.set != nil {
		u.set.mu.Lock()
		defer u.set.mu.Unlock()
	}
	u.mu.Lock()
	u.holds--
	last := u.holds == 0
	u.mu.Unlock()
	if !last {
		return nil
	}
	if u.set != nil {
		delete(u.set.open, u.Name())
		if u.set.Closed != nil {
			u.set.Closed(u.Name())
		}
	}
	return u.Port.Close()
}

// Underlays are the underlays open on a host's interfaces, by the
// interface's name: one on each, shared by the tunnel ports over it, and
// open for as long as one of them is. The zero value is an empty set.
type Underlays struct {
	// Closed, if set, is told the interface of each underlay closed with
	// its last tunnel port. It runs with the set locked: it must not call
	// the set.
	Closed func(ifname string)

	mu   sync.Mutex
	open map[string]*Underlay
}

// NewPort makes a tunnel port over the underlay on the interface ifname:
// the one open there, or else the one open opens (which the set then
// owns). The port holds the underlay until it closes.
func (s *Underlays) NewPort(cfg Config, ifname string, open func() (*Underlay, error)) (*Port, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.open[ifname]
	if !ok {
		var err error
		if u, err = open(); err != nil {
			return nil, err
		}
		if s.open == nil {
			s.open = map[string]*Underlay{}
		}
		u.set = s
		s.open[ifname] = u
	}
	return newPort(cfg, u), nil
}

// On returns the underlay open on the interface ifname, nil if none is.
func (s *Underlays) On(ifname string) *Underlay {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open[ifname]
}

// Interfaces are the interfaces an underlay is open on.
func (s *Underlays) Interfaces() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Collect(maps.Keys(s.open))
}

// Unwrap returns the port the underlay runs on, whose XDP program the
// fast path may replace.
func (u *Underlay) Unwrap() port.Port { return u.Port }

// listen has the underlay receive kind on l's address and port, for one
// more tunnel.
func (u *Underlay) listen(l Listener) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	for other := range u.refs {
		if other.Addr == l.Addr && other.Port == l.Port && other.Kind != l.Kind {
			return fmt.Errorf("UDP port %d of %s already receives %v on %s", l.Port, netip.AddrFrom4(l.Addr), other.Kind, u.Name())
		}
	}
	if u.refs[l] == 0 && u.listener != nil {
		if err := u.listener.ListenTunnel(netip.AddrFrom4(l.Addr), l.Port, uint32(l.Kind)); err != nil {
			return err
		}
	}
	u.refs[l]++
	u.publish()
	return nil
}

// unlisten undoes one listen of l.
func (u *Underlay) unlisten(l Listener) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.refs[l] == 0 {
		return nil
	}
	if u.refs[l]--; u.refs[l] > 0 {
		return nil
	}
	delete(u.refs, l)
	u.publish()
	if u.listener != nil {
		return u.listener.UnlistenTunnel(netip.AddrFrom4(l.Addr), l.Port)
	}
	return nil
}

// publish makes the listeners in refs those Decapsulate reads. It runs
// under mu.
func (u *Underlay) publish() {
	ls := make(Listeners, 0, len(u.refs))
	for l := range u.refs {
		ls = append(ls, l)
	}
	u.listeners.Store(&ls)
}

// Decapsulate takes apart a frame the underlay received for one of its
// listeners, and counts why not when it cannot.
func (u *Underlay) Decapsulate(frame []byte) ([]byte, port.TunnelMeta, bool) {
	inner, o, r := DecapsulateFor(*u.listeners.Load(), frame)
	if r != Decapsulated {
		u.drops[r].Add(1)
		return nil, port.TunnelMeta{}, false
	}
	return inner, port.TunnelMeta{ID: o.VNI, Src: o.Src, Dst: o.Dst, DstPort: o.DstPort}, true
}

// Unclaimed counts frames no tunnel took.
func (u *Underlay) Unclaimed(n uint64, unknownRemote bool) {
	if unknownRemote {
		u.unknownRemote.Add(n)
	} else {
		u.wrongKey.Add(n)
	}
}

// UnderlayStats are the frames an underlay received for its tunnels and
// dropped, by why: none of them reaches a bridge.
type UnderlayStats struct {
	NotTunnel     uint64 // for an (address, port) no longer listened on
	BadOuter      uint64
	Fragment      uint64
	BadHeader     uint64
	CriticalOpt   uint64
	ShortInner    uint64
	UnknownRemote uint64
	WrongKey      uint64
}

// Total is every frame the underlay dropped.
func (s UnderlayStats) Total() uint64 {
	return s.NotTunnel + s.BadOuter + s.Fragment + s.BadHeader + s.CriticalOpt + s.ShortInner + s.UnknownRemote + s.WrongKey
}

// DropStats reports what the underlay dropped.
func (u *Underlay) DropStats() UnderlayStats {
	return UnderlayStats{
		NotTunnel: u.drops[NotTunnel].Load(), BadOuter: u.drops[BadOuter].Load(), Fragment: u.drops[Fragment].Load(),
		BadHeader: u.drops[BadHeader].Load(), CriticalOpt: u.drops[CriticalOpt].Load(), ShortInner: u.drops[ShortInner].Load(),
		UnknownRemote: u.unknownRemote.Load(), WrongKey: u.wrongKey.Load(),
	}
}

// transmit encapsulates each frame short enough for the underlay with e,
// for vni (or tx[i].ID when flow says the VNI is the frame's), and sends
// them. It returns how many it sent and how many were too long.
func (u *Underlay) transmit(e *Encap, frames [][]byte, tx []port.TunnelTx, vni uint32, flow bool) (sent, oversize int) {
	u.txMu.Lock()
	defer u.txMu.Unlock()
	for len(u.bufs) < len(frames) {
		u.bufs = append(u.bufs, make([]byte, u.mtu+header.EthernetLen))
		u.out = append(u.out, nil)
	}
	n := 0
	for i, f := range frames {
		var t port.TunnelTx
		if tx != nil {
			t = tx[i]
		}
		id := vni
		if flow {
			id = t.ID
		}
		m := e.Encapsulate(u.bufs[n], f, id, t.Hash)
		if m == 0 {
			oversize++
			continue
		}
		u.out[n] = u.bufs[n][:m]
		n++
	}
	sent = u.Transmit(u.out[:n])
	clear(u.out[:n])
	return sent, oversize
}
