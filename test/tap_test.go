package test

import (
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/internal/netns"
	"github.com/xswitch/xswitch/internal/testenv"
)

const vmPayloadSize = 16 << 20

// openTap attaches to the tap device name in the calling thread's network
// namespace, creating it if it does not exist, as a VM monitor does: the
// descriptor carries the device's frames, without any header before them.
func openTap(name string) (*os.File, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	ifr.SetUint16(unix.IFF_TAP | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("TUNSETIFF %q: %w", name, err)
	}
	// Non-blocking, so the runtime's poller waits for it and Close ends a
	// Read in progress.
	return os.NewFile(uintptr(fd), "tap "+name), nil
}

// startVM plays a VM whose NIC is the switch's tap port: the test process
// is the virtual NIC, relaying frames between the port's tap and a second
// tap whose netdev is in a fresh namespace "vm" with address cidr, so that
// namespace's kernel is the guest. It returns the namespace.
func startVM(t *testing.T, n *testNet, tapPort, cidr string) string {
	t.Helper()
	vmNS := n.namespace(t, "vm")
	nic, err := openTap(tapPort)
	if err != nil {
		t.Fatal(err)
	}
	var guest *os.File
	// A tap is created in the namespace of whoever opened /dev/net/tun.
	err = netns.Do(vmNS, func() error {
		var err error
		guest, err = openTap("eth0")
		return err
	})
	if err != nil {
		nic.Close()
		t.Fatalf("create the guest's tap in %s: %v", vmNS, err)
	}
	var relays sync.WaitGroup
	t.Cleanup(func() {
		nic.Close()
		guest.Close()
		relays.Wait()
	})
	relays.Go(func() { relay(t, guest, nic) })
	relays.Go(func() { relay(t, nic, guest) })
	mustRun(t, "ip", "netns", "exec", vmNS, "ip", "addr", "add", cidr, "dev", "eth0")
	mustRun(t, "ip", "netns", "exec", vmNS, "ip", "link", "set", "eth0", "up")
	return vmNS
}

// relay copies frames from one tap descriptor to the other until either
// is closed. A frame the destination refuses is lost, as on a wire.
func relay(t *testing.T, from, to *os.File) {
	buf := make([]byte, 65536)
	for {
		n, err := from.Read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) && !errors.Is(err, unix.EBADFD) {
				t.Logf("relay %s → %s: read: %v", from.Name(), to.Name(), err)
			}
			return
		}
		if _, err := to.Write(buf[:n]); errors.Is(err, os.ErrClosed) || errors.Is(err, unix.EBADFD) {
			return
		}
	}
}

// showPort is port name of bridge br as `xswitch show` printed it.
func showPort(t testing.TB, d *daemon, br, name string) shownPort {
	t.Helper()
	out := d.x(t, "show")
	for _, b := range parseShow(t, out) {
		for _, p := range b.ports {
			if b.name == br && p.name == name {
				return p
			}
		}
	}
	t.Fatalf("xswitch show: no port %s on bridge %s:\n%s", name, br, out)
	return shownPort{}
}

// TestTapVM bridges a "VM" on a tap port and a namespace: ping both ways
// and TCP both ways, in each AF_XDP mode that works on a tap, with the
// throughput logged to compare them.
func TestTapVM(t *testing.T) {
	testenv.RequireRoot(t)
	for _, mode := range []string{"auto", "copy", "generic"} {
		t.Run(mode, func(t *testing.T) {
			d := startDaemon(t)
			n := newTestNet()
			br := n.name("br")
			d.x(t, "add-br", br)
			tapPort := n.name("t")
			deleteLinkAtCleanup(t, tapPort)
			d.x(t, "add-port", br, tapPort, "--type", "tap", "--mode", mode)
			if !linkExists(t, tapPort) {
				t.Fatalf("add-port --type tap did not create %s", tapPort)
			}
			if typ := showPort(t, d, br, tapPort).attrs["type"]; !strings.HasPrefix(typ, "afxdp on tap (") {
				t.Errorf("show: type %q, want afxdp on tap (...)", typ)
			}
			p := addNSPort(t, d, n, br, 1, false)
			vmAddr := n.ipv4(2)
			vmNS := startVM(t, n, tapPort, vmAddr+"/24")

			waitPing(t, p.ns, vmAddr, 5*time.Second)
			requirePing(t, p.ns, vmAddr, 56)
			requirePing(t, p.ns, vmAddr, 1400)
			requirePing(t, vmNS, p.addr, 56)

			for _, dir := range []struct{ from, to, addr, what string }{
				{p.ns, vmNS, vmAddr, "namespace → VM"},
				{vmNS, p.ns, p.addr, "VM → namespace"},
			} {
				elapsed := transferTCP(t, dir.from, dir.to, dir.addr, dir.addr, vmPayloadSize)
				t.Logf("mode %s, %s (%s): %d MiB in %v: %.0f Mbit/s", mode, dir.what, showPort(t, d, br, tapPort).attrs["type"],
					vmPayloadSize>>20, elapsed.Round(time.Millisecond), float64(vmPayloadSize)*8/elapsed.Seconds()/1e6)
			}
		})
	}
}

// TestTapVMLinuxBridgeBaseline does what TestTapVM does through the Linux
// bridge instead of xswitch, so that their logged throughputs compare in
// one run; it checks only that the data arrives.
func TestTapVMLinuxBridgeBaseline(t *testing.T) {
	testenv.RequireRoot(t)
	n := newTestNet()
	br, tapName, vethName := n.name("lb"), n.name("t"), n.name("v")
	for _, name := range []string{br, tapName, vethName} {
		deleteLinkAtCleanup(t, name)
	}
	ns := n.namespace(t, "n1")
	mustRun(t, "ip", "link", "add", br, "type", "bridge")
	mustRun(t, "ip", "tuntap", "add", "dev", tapName, "mode", "tap")
	mustRun(t, "ip", "link", "add", vethName, "type", "veth", "peer", "name", "eth0", "netns", ns)
	for _, name := range []string{tapName, vethName} {
		mustRun(t, "ip", "link", "set", name, "master", br, "up")
	}
	mustRun(t, "ip", "link", "set", br, "up")
	mustRun(t, "ip", "netns", "exec", ns, "ip", "addr", "add", n.ipv4(1)+"/24", "dev", "eth0")
	mustRun(t, "ip", "netns", "exec", ns, "ip", "link", "set", "eth0", "up")
	vmAddr := n.ipv4(2)
	vmNS := startVM(t, n, tapName, vmAddr+"/24")
	waitPing(t, ns, vmAddr, 5*time.Second)
	for _, dir := range []struct{ from, to, addr, what string }{
		{ns, vmNS, vmAddr, "namespace → VM"},
		{vmNS, ns, n.ipv4(1), "VM → namespace"},
	} {
		elapsed := transferTCP(t, dir.from, dir.to, dir.addr, dir.addr, vmPayloadSize)
		t.Logf("Linux bridge, %s: %d MiB in %v: %.0f Mbit/s", dir.what,
			vmPayloadSize>>20, elapsed.Round(time.Millisecond), float64(vmPayloadSize)*8/elapsed.Seconds()/1e6)
	}
}

// internalDevice is the switch end's name the daemon derives for an
// internal port.
func internalDevice(name string) string {
	h := fnv.New32a()
	h.Write([]byte(name))
	return fmt.Sprintf("xi%08x", h.Sum32())
}

// TestInternalPort gives a namespace an interface on the bridge with
// --type internal and pings it from a namespace port.
func TestInternalPort(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	n := newTestNet()
	br := n.name("br")
	d.x(t, "add-br", br)
	ns := n.namespace(t, "i")
	name := n.name("in")
	deleteLinkAtCleanup(t, internalDevice(name))
	d.x(t, "add-port", br, name, "--type", "internal", "--netns", ns, "--address", n.ipv4(3)+"/24")
	if !nsLinkExists(t, ns, name) {
		t.Fatalf("no interface %s in namespace %s", name, ns)
	}
	if !linkExists(t, internalDevice(name)) {
		t.Fatalf("no switch end %s", internalDevice(name))
	}
	shown := showPort(t, d, br, name)
	if typ := shown.attrs["type"]; !strings.HasPrefix(typ, "afxdp on internal (") {
		t.Errorf("show: type %q, want afxdp on internal (...)", typ)
	}
	if want := fmt.Sprintf("%s (device %s, address %s/24)", ns, internalDevice(name), n.ipv4(3)); shown.attrs["netns"] != want {
		t.Errorf("show: netns %q, want %q", shown.attrs["netns"], want)
	}
	if ports := strings.Fields(d.x(t, "list-ports", br)); len(ports) != 1 || ports[0] != name {
		t.Errorf("list-ports: %q, want [%s]", ports, name)
	}
	p := addNSPort(t, d, n, br, 1, false)
	waitPing(t, p.ns, n.ipv4(3), 5*time.Second)
	requirePing(t, p.ns, n.ipv4(3), 56)
	requirePing(t, ns, p.addr, 1400)
	// Flows name the port by its own name, not its switch end's.
	d.x(t, "add-flow", br, "priority=100,in_port="+name+",icmp,actions=drop")
	if sent, received, out := ping(t, ns, p.addr, 56, 2); received != 0 {
		t.Errorf("in_port=%s drop rule: %d of %d pings came back:\n%s", name, received, sent, out)
	}
}

// TestTapInternalRestart: after a crash, tap and internal ports come back
// (the tap recreated when it went missing meanwhile), and del-port deletes
// their devices.
func TestTapInternalRestart(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	n := newTestNet()
	br := n.name("br")
	d.x(t, "add-br", br)
	tapPort := n.name("t")
	deleteLinkAtCleanup(t, tapPort)
	d.x(t, "add-port", br, tapPort, "--type", "tap", "--owner", "4242")
	ns := n.namespace(t, "i")
	internal := n.name("in")
	deleteLinkAtCleanup(t, internalDevice(internal))
	d.x(t, "add-port", br, internal, "--type", "internal", "--netns", ns, "--address", n.ipv4(3)+"/24")
	p := addNSPort(t, d, n, br, 1, false)
	waitPing(t, p.ns, n.ipv4(3), 5*time.Second)

	d.stop(t, syscall.SIGKILL)
	mustRun(t, "ip", "link", "del", "dev", tapPort)
	d.start(t)
	for _, name := range []string{tapPort, internal, p.name} {
		if state := showPort(t, d, br, name).attrs["state"]; state != "up" {
			t.Errorf("after restart, port %s is %q, want up", name, state)
		}
	}
	if out := mustRun(t, "ip", "-d", "link", "show", "dev", tapPort); !strings.Contains(out, "user 4242") {
		t.Errorf("recreated tap lost its owner:\n%s", out)
	}
	waitPing(t, p.ns, n.ipv4(3), 5*time.Second)
	vmNS := startVM(t, n, tapPort, n.ipv4(2)+"/24")
	waitPing(t, vmNS, n.ipv4(3), 5*time.Second)

	d.x(t, "del-port", br, tapPort)
	d.x(t, "del-port", br, internal)
	if linkExists(t, tapPort) {
		t.Errorf("del-port left tap %s", tapPort)
	}
	if linkExists(t, internalDevice(internal)) || nsLinkExists(t, ns, internal) {
		t.Errorf("del-port left internal port %s or its switch end %s", internal, internalDevice(internal))
	}
}

// TestTapInternalErrors: options that do not fit a port type are refused,
// and nothing is created.
func TestTapInternalErrors(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	n := newTestNet()
	br := n.name("br")
	d.x(t, "add-br", br)
	name := n.name("x")
	deleteLinkAtCleanup(t, name)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--type", "bogus"}, `unknown port type "bogus" (want tap, internal, vxlan or geneve)`},
		{[]string{"--owner", "1000"}, "--owner needs --type tap"},
		{[]string{"--type", "internal", "--owner", "1000"}, "--owner needs --type tap"},
		{[]string{"--type", "tap", "--netns", "nowhere"}, "do not apply to a tap port"},
		{[]string{"--type", "tap", "--address", "10.0.0.1/24"}, "do not apply to a tap port"},
		{[]string{"--type", "tap", "--owner", "-1"}, "owner -1 is not a user ID"},
		{[]string{"--type", "internal", "--peer", "eth1"}, "--peer does not apply to an internal port"},
	} {
		stderr, code := d.xErr(t, append([]string{"add-port", br, name}, tc.args...)...)
		if code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("add-port %s: exit %d, %q; want exit 1 and %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
		if linkExists(t, name) {
			t.Fatalf("add-port %s: failed but created %s", strings.Join(tc.args, " "), name)
		}
	}
}
