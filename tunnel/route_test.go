package tunnel

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/internal/netns"
	"github.com/xswitch/xswitch/internal/testenv"
)

func TestRouteString(t *testing.T) {
	r := Route{Ifname: "eth1", Local: netip.MustParseAddr("192.168.1.1"), NextHop: netip.MustParseAddr("192.168.1.2")}
	if s := r.String(); !strings.Contains(s, "via eth1 192.168.1.2 (unresolved)") {
		t.Errorf("unresolved route reads %q", s)
	}
	r.NextHopMAC, r.Resolved = [6]byte{0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff}, true
	if s := r.String(); !strings.Contains(s, "via eth1 192.168.1.2 (aa:bb:cc:dd:ee:ff)") {
		t.Errorf("resolved route reads %q", s)
	}
}

// IPv6 is refused before the kernel is asked anything, so this needs no
// root.
func TestResolveRouteRefusesIPv6(t *testing.T) {
	for _, c := range []struct{ remote, local netip.Addr }{
		{netip.MustParseAddr("2001:db8::1"), netip.Addr{}},
		{netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2")},
		{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::2")},
		{netip.MustParseAddr("::ffff:192.0.2.1"), netip.Addr{}},
		{netip.Addr{}, netip.Addr{}},
	} {
		_, err := ResolveRoute(c.remote, c.local)
		if err == nil || !strings.Contains(err.Error(), "only IPv4 underlays are supported") {
			t.Errorf("ResolveRoute(%v, %v): %v, want the IPv4-only error", c.remote, c.local, err)
		}
	}
}

// The addresses of underlayNet: "here" is where the code under test runs.
var (
	hereAddr      = netip.MustParseAddr("192.0.2.1")
	hereSecond    = netip.MustParseAddr("192.0.2.3") // a secondary address of here's veth
	peerAddr      = netip.MustParseAddr("192.0.2.2")
	silentAddr    = netip.MustParseAddr("192.0.2.50")   // on the link, but nobody answers
	behindPeer    = netip.MustParseAddr("198.51.100.7") // routed via peerAddr
	unrouted      = netip.MustParseAddr("203.0.113.9")  // here has no default route
	notHostAddr   = netip.MustParseAddr("192.0.2.99")   // nobody's address
	hereLoAddr    = netip.MustParseAddr("198.18.0.1")   // here's, on its lo
	permAddr      = netip.MustParseAddr("192.0.2.77")   // a PERMANENT neighbour
	permMAC       = [6]byte{0x02, 0, 0, 0, 0, 0x77}     // its MAC address
	hereMTU       = 1400                                // not the default, so that it is seen to be read
	behindPeerNet = netip.MustParsePrefix("198.51.100.0/24")
)

// underlayNet is two network namespaces joined by a veth pair: here
// (hereAddr/24, and a route to 198.51.100.0/24 via the peer) and peer
// (peerAddr/24), whose kernel answers ARP. IPv6 is off in both, so that
// nothing but the test changes their tables or sends on the link.
type underlayNet struct {
	here, peer         string // namespace names
	hereH, peerH       *netlink.Handle
	hereLink, peerLink netlink.Link
	hereMAC, peerMAC   [6]byte
	prefix             string // of every name, unique to this test
}

func newUnderlayNet(t *testing.T) *underlayNet {
	t.Helper()
	testenv.RequireRoot(t)
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	n := &underlayNet{prefix: "xr" + hex.EncodeToString(b)}
	n.here, n.peer = n.prefix+"-here", n.prefix+"-peer"
	n.hereH = newNamespace(t, n.here)
	n.peerH = newNamespace(t, n.peer)

	hereNs, err := vnetns.GetFromName(n.here)
	if err != nil {
		t.Fatal(err)
	}
	defer hereNs.Close()
	peerNs, err := vnetns.GetFromName(n.peer)
	if err != nil {
		t.Fatal(err)
	}
	defer peerNs.Close()
	// Created inside the namespaces, the pair never exists in ours.
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: n.prefix + "h", Namespace: netlink.NsFd(hereNs)},
		PeerName:      n.prefix + "p",
		PeerNamespace: netlink.NsFd(peerNs),
	}
	if err := n.hereH.LinkAdd(veth); err != nil {
		t.Fatalf("add veth: %v", err)
	}
	t.Cleanup(func() { removeLink(t, n.hereH, veth.Name) })
	n.hereLink = setUpLink(t, n.hereH, veth.Name, hereMTU, hereAddr, hereSecond)
	n.peerLink = setUpLink(t, n.peerH, veth.PeerName, 1500, peerAddr)
	copy(n.hereMAC[:], n.hereLink.Attrs().HardwareAddr)
	copy(n.peerMAC[:], n.peerLink.Attrs().HardwareAddr)

	lo, err := n.hereH.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	if err := n.hereH.AddrAdd(lo, &netlink.Addr{IPNet: prefixNet(netip.PrefixFrom(hereLoAddr, 32))}); err != nil {
		t.Fatalf("add %v to lo: %v", hereLoAddr, err)
	}
	route := &netlink.Route{LinkIndex: n.hereLink.Attrs().Index, Dst: prefixNet(behindPeerNet), Gw: peerAddr.AsSlice()}
	if err := n.hereH.RouteAdd(route); err != nil {
		t.Fatalf("add route %v: %v", route, err)
	}
	return n
}

// newNamespace creates the namespace name, with IPv6 off, and returns a
// handle on it; both go when the test ends.
func newNamespace(t *testing.T, name string) *netlink.Handle {
	t.Helper()
	if err := netns.Create(name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := netns.Delete(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("cleanup: %v", err)
		}
	})
	err := netns.Do(name, func() error {
		for _, conf := range []string{"all", "default"} {
			err := os.WriteFile("/proc/sys/net/ipv6/conf/"+conf+"/disable_ipv6", []byte("1"), 0)
			if err != nil && !errors.Is(err, fs.ErrNotExist) { // ErrNotExist: no IPv6 at all
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("turn IPv6 off in %s: %v", name, err)
	}
	ns, err := vnetns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// setUpLink gives the link name in h's namespace its MTU and addresses,
// each in a /24, and brings it up.
func setUpLink(t *testing.T, h *netlink.Handle, name string, mtu int, addrs ...netip.Addr) netlink.Link {
	t.Helper()
	l, err := h.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.LinkSetMTU(l, mtu); err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if err := h.AddrAdd(l, &netlink.Addr{IPNet: prefixNet(netip.PrefixFrom(a, 24))}); err != nil {
			t.Fatalf("add %v/24 to %s: %v", a, name, err)
		}
	}
	if err := h.LinkSetUp(l); err != nil {
		t.Fatal(err)
	}
	if l, err = h.LinkByName(name); err != nil {
		t.Fatal(err)
	}
	return l
}

// removeLink deletes the link name in h's namespace, if it is still
// there.
func removeLink(t *testing.T, h *netlink.Handle, name string) {
	l, err := h.LinkByName(name)
	if errors.As(err, &netlink.LinkNotFoundError{}) {
		return
	}
	if err == nil {
		err = h.LinkDel(l)
	}
	if err != nil {
		t.Errorf("cleanup: delete %s: %v", name, err)
	}
}

func prefixNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// resolve runs ResolveRoute in namespace ns.
func resolve(t *testing.T, ns string, remote, local netip.Addr) (Route, error) {
	t.Helper()
	var r Route
	var resolveErr error
	if err := netns.Do(ns, func() error {
		r, resolveErr = ResolveRoute(remote, local)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return r, resolveErr
}

// resolved polls ResolveRoute in ns until the route to remote is
// resolved, as it is once the next hop answers ARP.
func resolved(t *testing.T, ns string, remote netip.Addr) Route {
	t.Helper()
	var r Route
	ok := eventually(3*time.Second, func() bool {
		var err error
		if r, err = resolve(t, ns, remote, netip.Addr{}); err != nil {
			t.Fatalf("ResolveRoute(%v): %v", remote, err)
		}
		return r.Resolved
	})
	if !ok {
		t.Fatalf("the route to %v was still unresolved after 3s: %v", remote, r)
	}
	return r
}

// eventually polls cond until it holds or within has passed.
func eventually(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// neighbour is the entry for ip on link in h's namespace, if any.
func neighbour(t *testing.T, h *netlink.Handle, link netlink.Link, ip netip.Addr) (netlink.Neigh, bool) {
	t.Helper()
	neighs, err := h.NeighList(link.Attrs().Index, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range neighs {
		if got, ok := netip.AddrFromSlice(n.IP); ok && got.Unmap() == ip {
			return n, true
		}
	}
	return netlink.Neigh{}, false
}

func (n *underlayNet) checkRoute(t *testing.T, r Route, local, nextHop netip.Addr) {
	t.Helper()
	if r.Ifname != n.hereLink.Attrs().Name || r.Ifindex != n.hereLink.Attrs().Index {
		t.Errorf("route leaves by %s (%d), want %s (%d)", r.Ifname, r.Ifindex, n.hereLink.Attrs().Name, n.hereLink.Attrs().Index)
	}
	if r.Local != local || r.LocalMAC != n.hereMAC {
		t.Errorf("route from %v %v, want %v %v", r.Local, net.HardwareAddr(r.LocalMAC[:]), local, net.HardwareAddr(n.hereMAC[:]))
	}
	if r.NextHop != nextHop {
		t.Errorf("next hop %v, want %v", r.NextHop, nextHop)
	}
	if r.MTU != hereMTU {
		t.Errorf("MTU %d, want %d", r.MTU, hereMTU)
	}
}

// A remote on the link is its own next hop, unresolved until it answers
// the ARP request ResolveRoute has the kernel send.
func TestResolveRouteConnected(t *testing.T) {
	n := newUnderlayNet(t)
	r, err := resolve(t, n.here, peerAddr, netip.Addr{})
	if err != nil {
		t.Fatal(err)
	}
	n.checkRoute(t, r, hereAddr, peerAddr)
	if r.Resolved {
		t.Errorf("resolved before anything asked for %v: %v", peerAddr, r)
	}
	r = resolved(t, n.here, peerAddr)
	n.checkRoute(t, r, hereAddr, peerAddr)
	if r.NextHopMAC != n.peerMAC {
		t.Errorf("next hop MAC %v, want the peer's %v", net.HardwareAddr(r.NextHopMAC[:]), net.HardwareAddr(n.peerMAC[:]))
	}
	want := fmt.Sprintf("via %s %v (%v)", n.hereLink.Attrs().Name, peerAddr, net.HardwareAddr(n.peerMAC[:]))
	if !strings.Contains(r.String(), want) {
		t.Errorf("String() = %q, want it to say %q", r.String(), want)
	}
}

func TestResolveRouteViaGateway(t *testing.T) {
	n := newUnderlayNet(t)
	r, err := resolve(t, n.here, behindPeer, netip.Addr{})
	if err != nil {
		t.Fatal(err)
	}
	n.checkRoute(t, r, hereAddr, peerAddr)
	r = resolved(t, n.here, behindPeer)
	if r.NextHop != peerAddr || r.NextHopMAC != n.peerMAC {
		t.Errorf("next hop %v %v, want the gateway %v %v", r.NextHop, net.HardwareAddr(r.NextHopMAC[:]), peerAddr, net.HardwareAddr(n.peerMAC[:]))
	}
}

func TestResolveRouteLocal(t *testing.T) {
	n := newUnderlayNet(t)
	for _, local := range []netip.Addr{hereAddr, hereSecond} {
		r, err := resolve(t, n.here, behindPeer, local)
		if err != nil {
			t.Errorf("from %v: %v", local, err)
			continue
		}
		n.checkRoute(t, r, local, peerAddr)
	}
}

func TestResolveRouteErrors(t *testing.T) {
	n := newUnderlayNet(t)
	lo, err := n.hereH.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	throughLo := &netlink.Route{LinkIndex: lo.Attrs().Index, Dst: prefixNet(netip.MustParsePrefix("203.0.113.128/25"))}
	if err := n.hereH.RouteAdd(throughLo); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name          string
		remote, local netip.Addr
		want          []string // what the error must say
	}{
		{"no route", unrouted, netip.Addr{}, []string{"no route to 203.0.113.9"}},
		{"no route from a good local", unrouted, hereAddr, []string{"no route to 203.0.113.9"}},
		{"local not the host's", peerAddr, notHostAddr, []string{"local address 192.0.2.99 is not an address of this host"}},
		{"local of another interface", peerAddr, hereLoAddr, []string{"198.18.0.1", n.hereLink.Attrs().Name}},
		{"remote is this host, on the link", hereAddr, netip.Addr{}, []string{"192.0.2.1", "this host"}},
		{"remote is this host, on lo", hereLoAddr, netip.Addr{}, []string{"198.18.0.1", "this host"}},
		{"route through lo", netip.MustParseAddr("203.0.113.129"), netip.Addr{}, []string{"203.0.113.129", "lo"}},
		{"remote is the link's broadcast", netip.MustParseAddr("192.0.2.255"), netip.Addr{}, []string{"192.0.2.255", "broadcast"}},
	} {
		r, err := resolve(t, n.here, c.remote, c.local)
		if err == nil {
			t.Errorf("%s: ResolveRoute(%v, %v) = %v, want an error", c.name, c.remote, c.local, r)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", c.name, err, w)
			}
		}
	}
}

// A next hop nobody answers for leaves the route unresolved, not failed,
// and the kernel has been asked: its ARP request is on the wire.
func TestResolveRouteUnresolvedAsksKernel(t *testing.T) {
	n := newUnderlayNet(t)
	arp := listenARP(t, n.peer, n.peerLink.Attrs().Name)
	r, err := resolve(t, n.here, silentAddr, netip.Addr{})
	if err != nil {
		t.Fatal(err)
	}
	n.checkRoute(t, r, hereAddr, silentAddr)
	if r.Resolved {
		t.Errorf("a silent next hop resolved: %v", r)
	}
	if !strings.Contains(r.String(), "(unresolved)") {
		t.Errorf("String() = %q, want it to say unresolved", r.String())
	}
	arp.waitRequest(t, hereAddr, silentAddr)
}

// RequestNeighbour has the kernel send an ARP request, and the entry
// becomes REACHABLE with the peer's answer.
func TestRequestNeighbour(t *testing.T) {
	n := newUnderlayNet(t)
	arp := listenARP(t, n.peer, n.peerLink.Attrs().Name)
	request := func() {
		t.Helper()
		if err := netns.Do(n.here, func() error { return RequestNeighbour(n.hereLink.Attrs().Index, peerAddr) }); err != nil {
			t.Fatal(err)
		}
	}
	request()
	arp.waitRequest(t, hereAddr, peerAddr)
	var entry netlink.Neigh
	if !eventually(3*time.Second, func() bool {
		var ok bool
		entry, ok = neighbour(t, n.hereH, n.hereLink, peerAddr)
		return ok && entry.State == netlink.NUD_REACHABLE
	}) {
		t.Fatalf("neighbour %v is %v after 3s, want REACHABLE", peerAddr, entry)
	}
	if !bytes.Equal(entry.HardwareAddr, n.peerMAC[:]) {
		t.Errorf("neighbour %v at %v, want the peer's %v", peerAddr, entry.HardwareAddr, net.HardwareAddr(n.peerMAC[:]))
	}

	// Asking again for an entry the kernel has is harmless.
	request()
	if again, ok := neighbour(t, n.hereH, n.hereLink, peerAddr); !ok || again.State&neighbourUsable == 0 || !bytes.Equal(again.HardwareAddr, entry.HardwareAddr) {
		t.Errorf("asking again for a REACHABLE neighbour left %v", again)
	}
}

// An entry an administrator set stays as set: no ARP request replaces it.
func TestRequestNeighbourKeepsPermanent(t *testing.T) {
	n := newUnderlayNet(t)
	perm := &netlink.Neigh{LinkIndex: n.hereLink.Attrs().Index, Family: netlink.FAMILY_V4, State: netlink.NUD_PERMANENT,
		IP: permAddr.AsSlice(), HardwareAddr: permMAC[:]}
	if err := n.hereH.NeighAdd(perm); err != nil {
		t.Fatal(err)
	}
	if err := netns.Do(n.here, func() error { return RequestNeighbour(n.hereLink.Attrs().Index, permAddr) }); err != nil {
		t.Fatal(err)
	}
	if got, ok := neighbour(t, n.hereH, n.hereLink, permAddr); !ok || got.State != netlink.NUD_PERMANENT || !bytes.Equal(got.HardwareAddr, permMAC[:]) {
		t.Errorf("the PERMANENT entry became %v", got)
	}
	r, err := resolve(t, n.here, permAddr, netip.Addr{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Resolved || r.NextHopMAC != permMAC {
		t.Errorf("route over a PERMANENT neighbour: %v", r)
	}
}

// A STALE entry is usable as it is: asking for it keeps its address while
// the kernel confirms it.
func TestRequestNeighbourKeepsStale(t *testing.T) {
	n := newUnderlayNet(t)
	stale := &netlink.Neigh{LinkIndex: n.hereLink.Attrs().Index, Family: netlink.FAMILY_V4, State: netlink.NUD_STALE,
		IP: peerAddr.AsSlice(), HardwareAddr: n.peerMAC[:]}
	if err := n.hereH.NeighAdd(stale); err != nil {
		t.Fatal(err)
	}
	r, err := resolve(t, n.here, peerAddr, netip.Addr{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Resolved || r.NextHopMAC != n.peerMAC {
		t.Errorf("route over a STALE neighbour: %v", r)
	}
	if err := netns.Do(n.here, func() error { return RequestNeighbour(n.hereLink.Attrs().Index, peerAddr) }); err != nil {
		t.Fatal(err)
	}
	if got, ok := neighbour(t, n.hereH, n.hereLink, peerAddr); !ok || got.State&neighbourUsable == 0 || !bytes.Equal(got.HardwareAddr, n.peerMAC[:]) {
		t.Errorf("asking for a STALE neighbour left %v", got)
	}
}

func TestRequestNeighbourNoInterface(t *testing.T) {
	n := newUnderlayNet(t)
	err := netns.Do(n.here, func() error { return RequestNeighbour(n.hereLink.Attrs().Index+1000, peerAddr) })
	if err == nil || !strings.Contains(err.Error(), peerAddr.String()) {
		t.Errorf("RequestNeighbour on no interface: %v, want an error naming %v", err, peerAddr)
	}
}

// arpListener is a packet socket that sees the ARP frames on one link.
type arpListener struct{ fd int }

// listenARP opens an arpListener on link ifname in namespace ns, until
// the test ends.
func listenARP(t *testing.T, ns, ifname string) arpListener {
	t.Helper()
	var l arpListener
	err := netns.Do(ns, func() error {
		link, err := netlink.LinkByName(ifname)
		if err != nil {
			return err
		}
		proto := htons(unix.ETH_P_ARP)
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(proto))
		if err != nil {
			return err
		}
		l.fd = fd
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: link.Attrs().Index}); err != nil {
			return err
		}
		tv := unix.NsecToTimeval((100 * time.Millisecond).Nanoseconds())
		return unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	})
	if l.fd > 0 {
		t.Cleanup(func() { unix.Close(l.fd) })
	}
	if err != nil {
		t.Fatalf("listen for ARP on %s: %v", ifname, err)
	}
	return l
}

// waitRequest waits up to 3s for an ARP request from sender for target.
func (l arpListener) waitRequest(t *testing.T, sender, target netip.Addr) {
	t.Helper()
	const (
		arpOff   = 14 // after the Ethernet header
		opOff    = arpOff + 6
		senderIP = arpOff + 14
		targetIP = arpOff + 24
	)
	buf := make([]byte, 128)
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		n, _, err := unix.Recvfrom(l.fd, buf, 0)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("receive ARP: %v", err)
		}
		if n < targetIP+4 || binary.BigEndian.Uint16(buf[opOff:]) != 1 {
			continue
		}
		if netip.AddrFrom4([4]byte(buf[senderIP:])) == sender && netip.AddrFrom4([4]byte(buf[targetIP:])) == target {
			return
		}
	}
	t.Fatalf("no ARP request from %v for %v within 3s", sender, target)
}

func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}

// changeLog records WatchUnderlay's calls.
type changeLog struct {
	calls    atomic.Int64
	inFlight atomic.Int32
	overlap  atomic.Bool

	mu   sync.Mutex
	logs []string
	// callsAtLog is how many calls there had been at the last log.
	callsAtLog int64
}

func (c *changeLog) changed() {
	if c.inFlight.Add(1) > 1 {
		c.overlap.Store(true)
	}
	time.Sleep(5 * time.Millisecond) // long enough for a second call to overlap
	c.inFlight.Add(-1)
	c.calls.Add(1)
}

func (c *changeLog) logf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.logs = append(c.logs, fmt.Sprintf(format, args...))
	c.callsAtLog = c.calls.Load()
}

// calledSinceLog reports whether changed was called after the last log.
func (c *changeLog) calledSinceLog() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls.Load() > c.callsAtLog
}

func (c *changeLog) logged() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.logs, "\n")
}

// quiet waits until changed has not been called for 300ms, and returns
// how many times it has been.
func (c *changeLog) quiet(t *testing.T) int64 {
	t.Helper()
	last := c.calls.Load()
	for range 50 {
		time.Sleep(300 * time.Millisecond)
		now := c.calls.Load()
		if now == last {
			return now
		}
		last = now
	}
	t.Fatal("changed is still being called after 15s")
	return 0
}

// expectChange does what and waits for changed to be called for it.
func (c *changeLog) expectChange(t *testing.T, what string, do func() error) {
	t.Helper()
	before := c.quiet(t)
	if err := do(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !eventually(2*time.Second, func() bool { return c.calls.Load() > before }) {
		t.Errorf("%s: changed not called within 2s", what)
	}
}

// watch starts WatchUnderlay in namespace ns until stop is called or the
// test ends.
func watch(t *testing.T, ns string) (c *changeLog, stop func()) {
	t.Helper()
	c = &changeLog{}
	done := make(chan struct{})
	if err := netns.Do(ns, func() error { return WatchUnderlay(done, c.changed, c.logf) }); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() { once.Do(func() { close(done) }) }
	t.Cleanup(stop)
	t.Cleanup(func() {
		if c.overlap.Load() {
			t.Error("changed was called while it ran")
		}
		if s := c.logged(); s != "" {
			t.Logf("WatchUnderlay logged:\n%s", s)
		}
	})
	return c, stop
}

func TestWatchUnderlay(t *testing.T) {
	n := newUnderlayNet(t)
	c, stop := watch(t, n.here)
	hereIndex := n.hereLink.Attrs().Index

	c.expectChange(t, "add a route", func() error {
		return n.hereH.RouteAdd(&netlink.Route{LinkIndex: hereIndex, Dst: prefixNet(netip.MustParsePrefix("203.0.113.0/24")), Gw: peerAddr.AsSlice()})
	})
	c.expectChange(t, "add a neighbour", func() error {
		return n.hereH.NeighAdd(&netlink.Neigh{LinkIndex: hereIndex, Family: netlink.FAMILY_V4, State: netlink.NUD_PERMANENT,
			IP: permAddr.AsSlice(), HardwareAddr: permMAC[:]})
	})
	c.expectChange(t, "add an address", func() error {
		return n.hereH.AddrAdd(n.hereLink, &netlink.Addr{IPNet: prefixNet(netip.MustParsePrefix("192.0.2.4/24"))})
	})
	c.expectChange(t, "change the MTU", func() error { return n.hereH.LinkSetMTU(n.hereLink, hereMTU-100) })

	// Another namespace's tables are not this watcher's business.
	before := c.quiet(t)
	if err := n.peerH.RouteAdd(&netlink.Route{LinkIndex: n.peerLink.Attrs().Index, Dst: prefixNet(netip.MustParsePrefix("203.0.113.0/24")), Gw: hereAddr.AsSlice()}); err != nil {
		t.Fatal(err)
	}
	if after := c.quiet(t); after != before {
		t.Errorf("a route added in another namespace called changed %d times", after-before)
	}

	// A burst is coalesced.
	before = c.quiet(t)
	const burst = 200
	for i := range burst {
		dst := netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 51, byte(101 + i/256), byte(i)}), 32)
		if err := n.hereH.RouteAdd(&netlink.Route{LinkIndex: hereIndex, Dst: prefixNet(dst), Gw: peerAddr.AsSlice()}); err != nil {
			t.Fatal(err)
		}
	}
	calls := c.quiet(t) - before
	t.Logf("%d route events: changed called %d times", burst, calls)
	if calls < 1 || calls > burst/20 {
		t.Errorf("%d route events called changed %d times, want between 1 and %d", burst, calls, burst/20)
	}

	stop()
	waitWatcherEnded(t)
	before = c.calls.Load()
	if err := n.hereH.RouteDel(&netlink.Route{LinkIndex: hereIndex, Dst: prefixNet(netip.MustParsePrefix("203.0.113.0/24")), Gw: peerAddr.AsSlice()}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if after := c.calls.Load(); after != before {
		t.Errorf("changed called %d times after stop", after-before)
	}
}

// When the kernel drops events, the watcher subscribes again, in the
// namespace it started in, and calls changed so that the caller looks
// afresh.
func TestWatchUnderlayResubscribes(t *testing.T) {
	n := newUnderlayNet(t)
	c, stop := watch(t, n.here)

	// Deleting a link deletes its neighbours in one go, an event each,
	// far more than a socket's default buffer holds. (A veth pair, both
	// ends here: not every kernel has dummy links.)
	flood := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: n.prefix + "d"}, PeerName: n.prefix + "e"}
	if err := n.hereH.LinkAdd(flood); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeLink(t, n.hereH, flood.Name) })
	link, err := n.hereH.LinkByName(flood.Name)
	if err != nil {
		t.Fatal(err)
	}
	const neighbours = 4000
	for i := range neighbours {
		ip := netip.AddrFrom4([4]byte{10, 99, byte(i >> 8), byte(i)})
		if err := n.hereH.NeighAdd(&netlink.Neigh{LinkIndex: link.Attrs().Index, Family: netlink.FAMILY_V4, State: netlink.NUD_PERMANENT,
			IP: ip.AsSlice(), HardwareAddr: permMAC[:]}); err != nil {
			t.Fatalf("add neighbour %d: %v", i, err)
		}
	}
	if err := n.hereH.LinkDel(flood); err != nil {
		t.Fatal(err)
	}
	if !eventually(3*time.Second, func() bool { return strings.Contains(c.logged(), unix.ENOBUFS.Error()) }) {
		t.Fatalf("deleting %d neighbours at once did not overflow the subscription; logged:\n%s", neighbours, c.logged())
	}
	if !eventually(2*time.Second, c.calledSinceLog) {
		t.Error("changed not called after the events were lost")
	}
	c.expectChange(t, "add a route after resubscribing", func() error {
		return n.hereH.RouteAdd(&netlink.Route{LinkIndex: n.hereLink.Attrs().Index, Dst: prefixNet(netip.MustParsePrefix("203.0.113.0/24")), Gw: peerAddr.AsSlice()})
	})
	stop()
	waitWatcherEnded(t)
}

// waitWatcherEnded waits up to 2s for the goroutines of WatchUnderlay,
// and of the netlink subscriptions it opened, to end.
func waitWatcherEnded(t *testing.T) {
	t.Helper()
	var left []string
	if !eventually(2*time.Second, func() bool {
		left = watcherGoroutines()
		return len(left) == 0
	}) {
		t.Errorf("goroutines left running after stop:\n%s", strings.Join(left, "\n\n"))
	}
}

// watcherGoroutines are the stacks of the goroutines running code of this
// package or of netlink, other than tests.
func watcherGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var found []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "testing.tRunner") || strings.Contains(g, "testing.(*M)") {
			continue
		}
		if strings.Contains(g, "xswitch/xswitch/tunnel.") || strings.Contains(g, "github.com/vishvananda/netlink.") {
			found = append(found, g)
		}
	}
	return found
}
