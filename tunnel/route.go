package tunnel

import (
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
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
// when it is valid, else from the route's preferred source. local must be
// an address of the interface the route leaves by, as the underlay
// receives only on that interface. A next hop without a usable neighbour
// entry is asked for (RequestNeighbour), and the route returned
// unresolved: not an error, as the kernel's own first packets to a new
// neighbour wait for ARP.
func ResolveRoute(remote, local netip.Addr) (Route, error) {
	if !remote.Is4() || local.IsValid() && !local.Is4() {
		return Route{}, fmt.Errorf("tunnel endpoints %v and %v: only IPv4 underlays are supported", remote, local)
	}
	opts := &netlink.RouteGetOptions{}
	localIfindex := 0
	if local.IsValid() {
		// Checked first: the kernel answers a lookup from an address that
		// is not the host's with ENETUNREACH, which would blame the route.
		var err error
		if localIfindex, err = addressIfindex(local); err != nil {
			return Route{}, err
		}
		opts.SrcAddr = local.AsSlice()
	}
	routes, err := netlink.RouteGetWithOptions(remote.AsSlice(), opts)
	if err != nil {
		return Route{}, fmt.Errorf("no route to %v: %w", remote, err)
	}
	if len(routes) == 0 {
		return Route{}, fmt.Errorf("no route to %v", remote)
	}
	rt := routes[0]
	switch rt.Type {
	case unix.RTN_UNICAST:
	case unix.RTN_LOCAL:
		return Route{}, fmt.Errorf("%v is an address of this host: the route to it goes through lo, not an underlay", remote)
	case unix.RTN_BROADCAST, unix.RTN_MULTICAST:
		return Route{}, fmt.Errorf("%v is a broadcast or multicast address: a tunnel's remote is one host", remote)
	default:
		return Route{}, fmt.Errorf("the route to %v is not a unicast route (type %d)", remote, rt.Type)
	}
	if rt.Via != nil {
		return Route{}, fmt.Errorf("the route to %v goes via %v: IPv6 next hops are not supported", remote, rt.Via)
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
	if gw, ok := netip.AddrFromSlice(rt.Gw); ok && !gw.Unmap().IsUnspecified() {
		r.NextHop = gw.Unmap()
	}
	switch {
	case local.IsValid() && localIfindex != attrs.Index:
		return Route{}, fmt.Errorf("local address %v is not an address of %s, which the route to %v leaves by", local, attrs.Name, remote)
	case local.IsValid():
		r.Local = local
	default:
		if src, ok := netip.AddrFromSlice(rt.Src); ok {
			r.Local = src.Unmap()
		}
	}
	if !r.Local.Is4() {
		return Route{}, fmt.Errorf("the route to %v leaves by %s, which has no IPv4 address to send from", remote, attrs.Name)
	}
	n, found, err := findNeighbour(r.Ifindex, r.NextHop)
	if err != nil {
		return Route{}, err
	}
	if found && n.State&neighbourUsable != 0 && len(n.HardwareAddr) == 6 {
		copy(r.NextHopMAC[:], n.HardwareAddr)
		r.Resolved = true
		return r, nil
	}
	if err := RequestNeighbour(r.Ifindex, r.NextHop); err != nil {
		return Route{}, err
	}
	return r, nil
}

// addressIfindex returns the interface addr is an address of.
func addressIfindex(addr netip.Addr) (int, error) {
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return 0, fmt.Errorf("list this host's addresses: %w", err)
	}
	for _, a := range addrs {
		if got, ok := netip.AddrFromSlice(a.IP); ok && got.Unmap() == addr {
			return a.LinkIndex, nil
		}
	}
	return 0, fmt.Errorf("local address %v is not an address of this host", addr)
}

// neighbourUsable are the states in which the kernel itself sends to a
// neighbour's address.
const neighbourUsable = netlink.NUD_REACHABLE | netlink.NUD_STALE | netlink.NUD_DELAY | netlink.NUD_PROBE |
	netlink.NUD_PERMANENT | netlink.NUD_NOARP

// findNeighbour returns the neighbour table's entry for ip on ifindex.
func findNeighbour(ifindex int, ip netip.Addr) (netlink.Neigh, bool, error) {
	neighs, err := netlink.NeighList(ifindex, netlink.FAMILY_V4)
	if err != nil {
		return netlink.Neigh{}, false, fmt.Errorf("read the neighbour table for %v: %w", ip, err)
	}
	for _, n := range neighs {
		if got, ok := netip.AddrFromSlice(n.IP); ok && got.Unmap() == ip {
			return n, true, nil
		}
	}
	return netlink.Neigh{}, false, nil
}

// RequestNeighbour asks the kernel to resolve ip on ifindex, as its own
// first packet to ip would: an RTM_NEWNEIGH with NTF_USE sends the ARP
// request (or probes an entry gone stale). The answer comes as a
// neighbour event (WatchUnderlay).
func RequestNeighbour(ifindex int, ip netip.Addr) error {
	n, found, err := findNeighbour(ifindex, ip)
	if err != nil {
		return err
	}
	// Since Linux 5.16 NTF_USE takes PERMANENT off an entry and resolves
	// it afresh; an administrator's entry, and a NOARP one, are left as
	// they are.
	if found && n.State&(netlink.NUD_PERMANENT|netlink.NUD_NOARP) != 0 {
		return nil
	}
	err = netlink.NeighSet(&netlink.Neigh{LinkIndex: ifindex, Family: netlink.FAMILY_V4, IP: ip.AsSlice(), Flags: netlink.NTF_USE})
	if err != nil {
		return fmt.Errorf("ask the kernel to resolve %v: %w", ip, err)
	}
	return nil
}

const (
	// watchSettle is how long WatchUnderlay lets a burst of events go on
	// before it says the tables changed.
	watchSettle = 50 * time.Millisecond
	// watchRetry is how long WatchUnderlay waits before it tries again to
	// subscribe, when subscribing fails.
	watchRetry = time.Second
	// watchBuffer is how many events of a kind may wait for the watcher
	// while changed runs, before the kernel's socket buffer takes them.
	watchBuffer = 256
)

// WatchUnderlay calls changed, from a goroutine of its own and never
// twice at once, after the routing, neighbour, address or link tables of
// the calling thread's network namespace change: once per burst of
// events, at most once per 50ms. When the kernel drops events (they came
// faster than they were read), it subscribes again, in the same
// namespace, and calls changed, which must then look at everything
// afresh. It returns once subscribed. When stop is closed, it ends
// without calling changed again, and so does every goroutine it started,
// netlink's included; logf says what went wrong on the way.
func WatchUnderlay(stop <-chan struct{}, changed func(), logf func(format string, args ...any)) error {
	// The namespace is pinned now: the watcher's goroutine, which may have
	// to subscribe again, runs on threads of the process's own.
	ns, err := vnetns.Get()
	if err != nil {
		return fmt.Errorf("watch the routing and neighbour tables: open this thread's network namespace: %w", err)
	}
	w := &underlayWatch{ns: ns, logf: logf}
	sub, err := w.subscribe()
	if err != nil {
		ns.Close()
		return err
	}
	go w.run(stop, sub, changed)
	return nil
}

type underlayWatch struct {
	ns   vnetns.NsHandle
	logf func(format string, args ...any)
}

// underlaySubscription is one subscription to each of the four tables.
type underlaySubscription struct {
	done   chan struct{} // closed to end it
	routes chan netlink.RouteUpdate
	neighs chan netlink.NeighUpdate
	addrs  chan netlink.AddrUpdate
	links  chan netlink.LinkUpdate
	// drains wait for netlink's readers of the subscriptions made to
	// close their channels.
	drains []func()
}

func (w *underlayWatch) subscribe() (*underlaySubscription, error) {
	s := &underlaySubscription{
		done:   make(chan struct{}),
		routes: make(chan netlink.RouteUpdate, watchBuffer),
		neighs: make(chan netlink.NeighUpdate, watchBuffer),
		addrs:  make(chan netlink.AddrUpdate, watchBuffer),
		links:  make(chan netlink.LinkUpdate, watchBuffer),
	}
	onError := func(err error) {
		select {
		case <-s.done: // ended on purpose: the receive fails
		default:
			w.logf("watching the routing and neighbour tables: %v", err)
		}
	}
	subscriptions := []struct {
		subscribe func() error
		drain     func()
	}{
		{func() error {
			return netlink.RouteSubscribeWithOptions(s.routes, s.done, netlink.RouteSubscribeOptions{Namespace: &w.ns, ErrorCallback: onError})
		}, func() { drain(s.routes) }},
		{func() error {
			return netlink.NeighSubscribeWithOptions(s.neighs, s.done, netlink.NeighSubscribeOptions{Namespace: &w.ns, ErrorCallback: onError})
		}, func() { drain(s.neighs) }},
		{func() error {
			return netlink.AddrSubscribeWithOptions(s.addrs, s.done, netlink.AddrSubscribeOptions{Namespace: &w.ns, ErrorCallback: onError})
		}, func() { drain(s.addrs) }},
		{func() error {
			return netlink.LinkSubscribeWithOptions(s.links, s.done, netlink.LinkSubscribeOptions{Namespace: &w.ns, ErrorCallback: onError})
		}, func() { drain(s.links) }},
	}
	for _, sub := range subscriptions {
		if err := sub.subscribe(); err != nil {
			s.end()
			return nil, fmt.Errorf("subscribe to the routing and neighbour tables: %w", err)
		}
		s.drains = append(s.drains, sub.drain)
	}
	return s, nil
}

// end closes the subscription and waits for netlink's readers to finish.
func (s *underlaySubscription) end() {
	close(s.done)
	for _, drain := range s.drains {
		drain()
	}
}

func drain[T any](ch <-chan T) {
	for range ch {
	}
}

func (w *underlayWatch) run(stop <-chan struct{}, sub *underlaySubscription, changed func()) {
	defer w.ns.Close()
	// settle is pending while a burst goes on; the events keep being read
	// meanwhile, lest the kernel drop them.
	var settle <-chan time.Time
	for {
		var ok bool
		select {
		case <-stop:
			sub.end()
			return
		case <-settle:
			settle = nil
			changed()
			continue
		case _, ok = <-sub.routes:
		case _, ok = <-sub.neighs:
		case _, ok = <-sub.addrs:
		case _, ok = <-sub.links:
		}
		if ok {
			if settle == nil {
				settle = time.After(watchSettle)
			}
			continue
		}
		sub.end()
		w.logf("events of the routing and neighbour tables were lost; subscribing again, and looking at every tunnel afresh")
		if sub = w.resubscribe(stop); sub == nil {
			return
		}
		settle = nil
		changed()
	}
}

// resubscribe subscribes until it succeeds, or returns nil when stop is
// closed first.
func (w *underlayWatch) resubscribe(stop <-chan struct{}) *underlaySubscription {
	for {
		sub, err := w.subscribe()
		if err == nil {
			return sub
		}
		w.logf("%v; trying again in %v", err, watchRetry)
		select {
		case <-stop:
			return nil
		case <-time.After(watchRetry):
		}
	}
}
