package afxdp

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/internal/testenv"
	"github.com/xswitch/xswitch/port"
)

// testbed is a veth pair whose root-namespace end (Host) is where the port
// under test opens, and whose other end (Peer, PeerIP) lives in a fresh
// namespace (NS) with an address, standing in for a machine on the wire.
type testbed struct {
	NS      string
	Host    string
	Peer    string
	HostMAC net.HardwareAddr
	PeerMAC net.HardwareAddr
	// HostIP is the address the test speaks from: the peer knows it, with
	// HostMAC, through a permanent neighbor entry, so it never ARPs for it.
	HostIP net.IP
	PeerIP net.IP
	// AltHostIPs are more addresses the peer knows at HostMAC, so that
	// replies to them hash to different tx queues of the peer.
	AltHostIPs []net.IP
}

func randomHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func runCmd(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// newTestbed builds a single-queue veth pair and its namespace.
func newTestbed(t testing.TB) *testbed {
	t.Helper()
	return newMultiQueueTestbed(t, 1)
}

// newMultiQueueTestbed builds the veth pair, with queues rx and tx queues
// on each end, and the namespace, and removes them when the test ends.
func newMultiQueueTestbed(t testing.TB, queues int) *testbed {
	t.Helper()
	return buildTestbed(t, queues, 0)
}

// newJumboTestbed builds a single-queue pair whose ends both have MTU mtu.
func newJumboTestbed(t testing.TB, mtu int) *testbed {
	t.Helper()
	return buildTestbed(t, 1, mtu)
}

// buildTestbed builds the pair with queues queues and MTU mtu (0: the
// kernel's default) on each end, and the namespace. Every cleanup is
// registered before the step that could fail.
func buildTestbed(t testing.TB, queues, mtu int) *testbed {
	t.Helper()
	testenv.RequireRoot(t)
	id := randomHex(t, 4)
	b := &testbed{
		NS:     "xtns" + id,
		Host:   "xth" + id,
		Peer:   "xtp" + id,
		HostIP: net.IPv4(10, 213, 77, 1).To4(),
		PeerIP: net.IPv4(10, 213, 77, 2).To4(),
	}

	t.Cleanup(func() {
		_ = exec.Command("ip", "netns", "del", b.NS).Run()
	})
	runCmd(t, "ip", "netns", "add", b.NS)
	nsHandle, err := netns.GetFromName(b.NS)
	if err != nil {
		t.Fatalf("open namespace %s: %v", b.NS, err)
	}
	t.Cleanup(func() { nsHandle.Close() })

	t.Cleanup(func() {
		if l, err := netlink.LinkByName(b.Host); err == nil {
			_ = netlink.LinkDel(l)
		}
	})
	veth := &netlink.Veth{
		LinkAttrs:       netlink.LinkAttrs{Name: b.Host, NumRxQueues: queues, NumTxQueues: queues, MTU: mtu},
		PeerName:        b.Peer,
		PeerNamespace:   netlink.NsFd(nsHandle),
		PeerNumRxQueues: uint32(queues),
		PeerNumTxQueues: uint32(queues),
		PeerMTU:         uint32(mtu),
	}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatalf("create veth %s/%s: %v", b.Host, b.Peer, err)
	}
	host, err := netlink.LinkByName(b.Host)
	if err != nil {
		t.Fatal(err)
	}
	b.HostMAC = host.Attrs().HardwareAddr
	if err := netlink.LinkSetUp(host); err != nil {
		t.Fatalf("bring %s up: %v", b.Host, err)
	}

	nl, err := netlink.NewHandleAt(nsHandle)
	if err != nil {
		t.Fatalf("netlink in namespace %s: %v", b.NS, err)
	}
	t.Cleanup(nl.Close)
	peer, err := nl.LinkByName(b.Peer)
	if err != nil {
		t.Fatal(err)
	}
	b.PeerMAC = peer.Attrs().HardwareAddr
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: b.PeerIP, Mask: net.CIDRMask(24, 32)}}
	if err := nl.AddrAdd(peer, addr); err != nil {
		t.Fatalf("address %s: %v", b.Peer, err)
	}
	if err := nl.LinkSetUp(peer); err != nil {
		t.Fatalf("bring %s up: %v", b.Peer, err)
	}
	for i := range byte(16) {
		b.AltHostIPs = append(b.AltHostIPs, net.IPv4(10, 213, 77, 100+i).To4())
	}
	for _, ip := range append([]net.IP{b.HostIP}, b.AltHostIPs...) {
		neigh := &netlink.Neigh{
			LinkIndex:    peer.Attrs().Index,
			State:        netlink.NUD_PERMANENT,
			IP:           ip,
			HardwareAddr: b.HostMAC,
		}
		if err := nl.NeighAdd(neigh); err != nil {
			t.Fatalf("neighbor %s on %s: %v", ip, b.Peer, err)
		}
	}
	return b
}

// hostIndex is the host end's interface index.
func (b *testbed) hostIndex(t testing.TB) int {
	t.Helper()
	l, err := netlink.LinkByName(b.Host)
	if err != nil {
		t.Fatal(err)
	}
	return l.Attrs().Index
}

// open opens the port on the host end and closes it when the test ends.
func (b *testbed) open(t testing.TB, cfg Config) *Port {
	t.Helper()
	cfg.Interface = b.Host
	p, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open(%+v): %v", cfg, err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}

// receiveUntil polls the port's first queue until match accepts a frame or
// timeout passes, and reports whether it matched. Every frame is released.
func receiveUntil(t testing.TB, p *Port, timeout time.Duration, match func([]byte) bool) bool {
	t.Helper()
	q := p.RxQueues()[0]
	frames := make([]port.Frame, 64)
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		n := q.Receive(frames)
		found := false
		for _, f := range frames[:n] {
			found = found || match(f.Data)
		}
		q.Release(frames[:n])
		if found {
			return true
		}
		if n == 0 {
			pfd := []unix.PollFd{{Fd: int32(q.Fd()), Events: unix.POLLIN}}
			if _, err := unix.Poll(pfd, 50); err != nil && !errors.Is(err, unix.EINTR) {
				t.Fatalf("poll: %v", err)
			}
		}
	}
	return false
}
