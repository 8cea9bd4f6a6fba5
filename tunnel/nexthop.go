package tunnel

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Route is how the underlay reaches a remote endpoint now, as the
// kernel's routing and neighbour tables (of the calling thread's network
// namespace) say.
type Route struct {
	Ifindex  int
	Ifname   string     // the interface the kernel sends to the remote by
	Local    netip.Addr // the source address
	LocalMAC [6]byte
	// NextHop is the route's gateway, or the remote itself on a connected
	// route; NextHopMAC its address, known when Resolved.
	NextHop    netip.Addr
	NextHopMAC [6]byte
	Resolved   bool
	MTU        int // the interface's
}

func (r Route) String() string {
	hop := "unresolved"
	if r.Resolved {
		hop = net.HardwareAddr(r.NextHopMAC[:]).String()
	}
	return fmt.Sprintf("from %v via %s %v (%s)", r.Local, r.Ifname, r.NextHop, hop)
}

// ResolveRoute asks the kernel how it would send to remote, from local
// when it is valid (it must be an address of the interface the route
// leaves by), else from the route's preferred source. A next hop without
// a usable neighbour entry is asked for (RequestNeighbour), and the route
// returned unresolved: not an error, as the kernel's own first packets to
// a new neighbour wait for ARP.
func ResolveRoute(remote, local netip.Addr) (Route, error) {
	if !remote.Is4() || local.IsValid() && !local.Is4() {
		return Route{}, fmt.Errorf("tunnel endpoints %v and %v: only IPv4 underlays are supported", remote, local)
	}
	opts := &netlink.RouteGetOptions{}
	if local.IsValid() {
		opts.SrcAddr = local.AsSlice()
	}
	routes, err := netlink.RouteGetWithOptions(remote.AsSlice(), opts)
	if err != nil {
		if local.IsValid() && errors.Is(err, unix.EINVAL) {
			return Route{}, fmt.Errorf("local address %v is not an address of this host", local)
		}
		return Route{}, fmt.Errorf("no route to %v: %w", remote, err)
	}
	if len(routes) == 0 {
		return Route{}, fmt.Errorf("no route to %v", remote)
	}
	rt := routes[0]
	if rt.Type == unix.RTN_LOCAL {
		return Route{}, fmt.Errorf("%v is an address of this host, not a remote one", remote)
	}
	link, err := netlink.LinkByIndex(rt.LinkIndex)
	if err != nil {
		return Route{}, fmt.Errorf("the route to %v leaves by interface %d: %w", remote, rt.LinkIndex, err)
	}
	attrs := link.Attrs()
	if attrs.Flags&net.FlagLoopback != 0 {
		return Route{}, fmt.Errorf("the route to %v goes through the loopback device %s", remote, attrs.Name)
	}
	if len(attrs.HardwareAddr) != 6 {
		return Route{}, fmt.Errorf("the route to %v leaves by %s, which is not an Ethernet interface", remote, attrs.Name)
	}
	r := Route{Ifindex: attrs.Index, Ifname: attrs.Name, NextHop: remote, MTU: attrs.MTU}
	copy(r.LocalMAC[:], attrs.HardwareAddr)
	if gw, ok := netip.AddrFromSlice(rt.Gw); ok && gw.Unmap().IsValid() && !gw.IsUnspecified() {
		r.NextHop = gw.Unmap()
	}
	if local.IsValid() {
		r.Local = local
		if !hasAddress(link, local) {
			return Route{}, fmt.Errorf("local address %v is not an address of %s, which the route to %v leaves by", local, attrs.Name, remote)
		}
	} else if src, ok := netip.AddrFromSlice(rt.Src); ok {
		r.Local = src.Unmap()
	}
	if !r.Local.Is4() {
		return Route{}, fmt.Errorf("the route to %v leaves by %s, which has no IPv4 address to send from", remote, attrs.Name)
	}
	if mac, ok := usableNeighbour(r.Ifindex, r.NextHop); ok {
		r.NextHopMAC, r.Resolved = mac, true
		return r, nil
	}
	if err := RequestNeighbour(r.Ifindex, r.NextHop); err != nil {
		return r, err
	}
	return r, nil
}

// hasAddress reports whether addr is one of link's addresses.
func hasAddress(link netlink.Link, addr netip.Addr) bool {
	addrs, err := netlink.AddrList(link, netlink.FAMILY_V4)
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if got, ok := netip.AddrFromSlice(a.IP); ok && got.Unmap() == addr {
			return true
		}
	}
	return false
}

// neighbourUsable are the states in which the kernel itself sends to a
// neighbour's address.
const neighbourUsable = netlink.NUD_REACHABLE | netlink.NUD_STALE | netlink.NUD_DELAY | netlink.NUD_PROBE |
	netlink.NUD_PERMANENT | netlink.NUD_NOARP

// usableNeighbour returns the MAC address of ip on ifindex, if the
// neighbour table has one the kernel would send to.
func usableNeighbour(ifindex int, ip netip.Addr) ([6]byte, bool) {
	var mac [6]byte
	neighs, err := netlink.NeighList(ifindex, netlink.FAMILY_V4)
	if err != nil {
		return mac, false
	}
	for _, n := range neighs {
		if got, ok := netip.AddrFromSlice(n.IP); ok && got.Unmap() == ip && n.State&neighbourUsable != 0 && len(n.HardwareAddr) == 6 {
			copy(mac[:], n.HardwareAddr)
			return mac, true
		}
	}
	return mac, false
}

// RequestNeighbour asks the kernel to resolve ip on ifindex, as its own
// first packet to ip would: an RTM_NEWNEIGH with NTF_USE sends the ARP
// request (or probes an entry gone stale) and leaves a usable entry as it
// is. The answer comes as a neighbour event (WatchUnderlay).
func RequestNeighbour(ifindex int, ip netip.Addr) error {
	err := netlink.NeighSet(&netlink.Neigh{LinkIndex: ifindex, Family: netlink.FAMILY_V4, IP: ip.AsSlice(), Flags: netlink.NTF_USE})
	if err != nil {
		return fmt.Errorf("ask the kernel to resolve %v: %w", ip, err)
	}
	return nil
}

// watchSettle is how long WatchUnderlay waits after an event for more of
// a burst before it says the tables changed.
const watchSettle = 50 * time.Millisecond

// WatchUnderlay calls changed, from a goroutine of its own and never
// twice at once, after the routing, neighbour, address or link tables of
// the calling thread's network namespace change: once per burst of
// events. When the kernel drops events (they came faster than they were
// read), it subscribes again and calls changed, which must then look at
// everything afresh. It returns once subscribed, and stops when stop is
// closed, logf saying what went wrong on the way.
func WatchUnderlay(stop <-chan struct{}, changed func(), logf func(format string, args ...any)) error {
	events := make(chan struct{}, 1)
	w := &underlayWatch{events: events, logf: logf, stop: stop}
	if err := w.subscribe(); err != nil {
		return err
	}
	go w.run(changed)
	return nil
}

type underlayWatch struct {
	events chan struct{}
	logf   func(format string, args ...any)
	stop   <-chan struct{}
	// done ends the current subscriptions; lost says one of them ended.
	done chan struct{}
	lost chan struct{}
	once *sync.Once
}

// subscribe opens the four subscriptions, each forwarding its events as
// a signal on w.events.
func (w *underlayWatch) subscribe() error {
	done, lost, once := make(chan struct{}), make(chan struct{}), new(sync.Once)
	fail := func() { once.Do(func() { close(lost) }) }
	onError := func(err error) {
		select {
		case <-done: // ended on purpose: the receive fails
		default:
			w.logf("watching the routing and neighbour tables: %v", err)
		}
	}
	routes, neighs := make(chan netlink.RouteUpdate, 64), make(chan netlink.NeighUpdate, 64)
	addrs, links := make(chan netlink.AddrUpdate, 64), make(chan netlink.LinkUpdate, 64)
	var err error
	if err = netlink.RouteSubscribeWithOptions(routes, done, netlink.RouteSubscribeOptions{ErrorCallback: onError}); err == nil {
		if err = netlink.NeighSubscribeWithOptions(neighs, done, netlink.NeighSubscribeOptions{ErrorCallback: onError}); err == nil {
			if err = netlink.AddrSubscribeWithOptions(addrs, done, netlink.AddrSubscribeOptions{ErrorCallback: onError}); err == nil {
				err = netlink.LinkSubscribeWithOptions(links, done, netlink.LinkSubscribeOptions{ErrorCallback: onError})
			}
		}
	}
	if err != nil {
		close(done)
		return fmt.Errorf("subscribe to the routing and neighbour tables: %w", err)
	}
	go signal(routes, w.events, fail)
	go signal(neighs, w.events, fail)
	go signal(addrs, w.events, fail)
	go signal(links, w.events, fail)
	w.done, w.lost, w.once = done, lost, once
	return nil
}

// signal turns each event on ch into a signal on events, and calls lost
// when ch closes: netlink ended the subscription.
func signal[T any](ch <-chan T, events chan<- struct{}, lost func()) {
	for range ch {
		select {
		case events <- struct{}{}:
		default:
		}
	}
	lost()
}

func (w *underlayWatch) run(changed func()) {
	for {
		select {
		case <-w.stop:
			close(w.done)
			return
		case <-w.lost:
			close(w.done)
			w.logf("events of the routing and neighbour tables were lost; subscribing again")
			for w.subscribe() != nil {
				select {
				case <-w.stop:
					return
				case <-time.After(time.Second):
				}
			}
			changed()
		case <-w.events:
			// Let the rest of a burst come before looking.
			select {
			case <-w.stop:
				close(w.done)
				return
			case <-time.After(watchSettle):
			}
			select {
			case <-w.events:
			default:
			}
			changed()
		}
	}
}
