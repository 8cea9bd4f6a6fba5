package test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/internal/netns"
	"github.com/xswitch/xswitch/port/veth"
)

// testNet names what one test creates: every namespace, link and bridge
// starts with tag, and addresses come from a random subnet, so that a
// leftover of an earlier run (or another test on the host) cannot collide.
type testNet struct {
	tag  string // "xt" + 6 hex digits: 8 characters, leaving 7 for suffixes
	x, y int
}

func newTestNet() *testNet {
	return &testNet{
		tag: fmt.Sprintf("xt%06x", rand.IntN(1<<24)),
		x:   16 + rand.IntN(224),
		y:   rand.IntN(256),
	}
}

func (n *testNet) name(suffix string) string { return n.tag + suffix }

// ipv4 and ipv6 give host number host its address in the test's subnet.
func (n *testNet) ipv4(host int) string { return fmt.Sprintf("10.%d.%d.%d", n.x, n.y, host) }

// ipv6's is in the form ip prints (a zero y is not written), so that tests
// can look for it in ip's output.
func (n *testNet) ipv6(host int) string {
	return netip.MustParseAddr(fmt.Sprintf("fd00:%x:%x::%x", n.x, n.y, host)).String()
}

// namespace creates a network namespace named tag+suffix and deletes it
// when the test ends; deleting it also destroys any veth end inside it.
func (n *testNet) namespace(t testing.TB, suffix string) string {
	t.Helper()
	name := n.name(suffix)
	if err := netns.Create(name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := netns.Delete(name); err != nil {
			t.Errorf("delete network namespace: %v", err)
		}
	})
	return name
}

// nsPort is a bridge port whose veth peer (eth0) sits in a namespace.
type nsPort struct {
	name, ns string
	addr     string // the namespace end's address, without prefix length
}

// addNSPort creates namespace tag+"n<i>" and has the daemon create port
// tag+"p<i>" with its peer in it, addressed with host number i (IPv4, or
// IPv6 when ipv6 is set).
func addNSPort(t testing.TB, d *daemon, n *testNet, br string, i int, ipv6 bool) nsPort {
	t.Helper()
	p := nsPort{name: n.name(fmt.Sprintf("p%d", i)), ns: n.namespace(t, fmt.Sprintf("n%d", i))}
	cidr := fmt.Sprintf("%s/24", n.ipv4(i))
	p.addr = n.ipv4(i)
	if ipv6 {
		cidr = fmt.Sprintf("%s/64", n.ipv6(i))
		p.addr = n.ipv6(i)
	}
	deleteLinkAtCleanup(t, p.name)
	d.x(t, "add-port", br, p.name, "--netns", p.ns, "--address", cidr)
	return p
}

// foreignPort creates namespace tag+"n<i>" and, as someone other than the
// daemon would, a veth pair tag+"p<i>" whose peer eth0 sits in it with host
// number i's address: an interface for add-port to attach, not create.
// Cleanup deletes it.
func foreignPort(t testing.TB, n *testNet, i int) nsPort {
	t.Helper()
	p := nsPort{name: n.name(fmt.Sprintf("p%d", i)), ns: n.namespace(t, fmt.Sprintf("n%d", i)), addr: n.ipv4(i)}
	deleteLinkAtCleanup(t, p.name)
	p.create(t)
	return p
}

// create makes p's veth pair (again).
func (p nsPort) create(t testing.TB) {
	t.Helper()
	if err := veth.Create(veth.Config{Name: p.name, Namespace: p.ns, Address: p.addr + "/24"}); err != nil {
		t.Fatal(err)
	}
}

// deleteLinkAtCleanup removes link name at the end of the test if it is
// still there (after a daemon that was killed, or a failed del-port).
func deleteLinkAtCleanup(t testing.TB, name string) {
	t.Cleanup(func() {
		if linkExists(t, name) {
			run(t, "ip", "link", "del", "dev", name)
		}
	})
}

func linkExists(t testing.TB, name string) bool {
	t.Helper()
	return run(t, "ip", "link", "show", "dev", name).code == 0
}

// nsLinkExists reports whether link dev exists inside namespace ns.
func nsLinkExists(t testing.TB, ns, dev string) bool {
	t.Helper()
	return run(t, "ip", "netns", "exec", ns, "ip", "link", "show", "dev", dev).code == 0
}

// nsMAC is the MAC address of dev inside namespace ns.
func nsMAC(t testing.TB, ns, dev string) string {
	t.Helper()
	return strings.TrimSpace(mustRun(t, "ip", "netns", "exec", ns, "cat", "/sys/class/net/"+dev+"/address"))
}

// xdpInIPLink matches how `ip -d link` shows an attached XDP program: a
// flag "xdp" (or xdpgeneric, xdpdrv, xdpoffload, maybe with "/id:N") on the
// first line and a "prog/xdp id N" line.
var xdpInIPLink = regexp.MustCompile(`prog/xdp\b|\sxdp(generic|drv|offload)?(/id:\d+)?\s`)

// xdpAttached reports whether an XDP program is attached to link name in
// the host namespace.
func xdpAttached(t testing.TB, name string) bool {
	t.Helper()
	return xdpInIPLink.MatchString(mustRun(t, "ip", "-d", "link", "show", "dev", name))
}

// bpftoolNetMentions returns the lines of `bpftool net show` that mention
// any of names: XDP or tc programs attached to them.
func bpftoolNetMentions(t testing.TB, names ...string) []string {
	t.Helper()
	var found []string
	for _, line := range strings.Split(mustRun(t, "bpftool", "net", "show"), "\n") {
		for _, name := range names {
			if strings.Contains(line, name) {
				found = append(found, line)
				break
			}
		}
	}
	return found
}

// xskCount is how many AF_XDP sockets process pid holds open. The host may
// lack /proc/net/xdp and xsk_diag (`ss --xdp`), so it duplicates each of
// the process's socket descriptors with pidfd_getfd and asks the kernel
// for its domain.
func xskCount(t testing.TB, pid int) int {
	t.Helper()
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("pidfd_open(%d): %v", pid, err)
	}
	defer unix.Close(pidfd)
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(fdDir)
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for _, e := range entries {
		target, err := os.Readlink(fdDir + "/" + e.Name())
		if err != nil || !strings.HasPrefix(target, "socket:") {
			continue // closed meanwhile, or not a socket
		}
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			t.Fatalf("%s/%s: not a descriptor number", fdDir, e.Name())
		}
		local, err := unix.PidfdGetfd(pidfd, fd, 0)
		if errors.Is(err, unix.EBADF) {
			continue
		}
		if err != nil {
			t.Fatalf("pidfd_getfd(pid %d, fd %d): %v", pid, fd, err)
		}
		domain, err := unix.GetsockoptInt(local, unix.SOL_SOCKET, unix.SO_DOMAIN)
		unix.Close(local)
		if err != nil {
			t.Fatalf("SO_DOMAIN of pid %d fd %d: %v", pid, fd, err)
		}
		if domain == unix.AF_XDP {
			count++
		}
	}
	return count
}

var pingSummary = regexp.MustCompile(`(\d+) packets transmitted, (\d+) received`)

// ping runs ping(8) in namespace ns and returns how many echo requests it
// sent and how many replies came back, with its output for messages.
func ping(t testing.TB, ns, addr string, size, count int) (sent, received int, output string) {
	t.Helper()
	args := []string{"netns", "exec", ns, "ping"}
	if strings.Contains(addr, ":") {
		args = append(args, "-6")
	}
	args = append(args, "-n", "-c", strconv.Itoa(count), "-i", "0.2", "-W", "2", "-s", strconv.Itoa(size), addr)
	r := run(t, "ip", args...)
	output = r.stdout + r.stderr
	m := pingSummary.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("ip %s: no summary in output (exit %d):\n%s", strings.Join(args, " "), r.code, output)
	}
	sent, _ = strconv.Atoi(m[1])
	received, _ = strconv.Atoi(m[2])
	return sent, received, output
}

// waitPing pings until one echo comes back, for at most within: the
// first frames after a port comes up may race ARP/ND or a restarting
// daemon. Failing to get any reply fails the test.
func waitPing(t testing.TB, ns, addr string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		_, received, out := ping(t, ns, addr, 56, 1)
		if received == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no echo reply from %s in namespace %s within %v; last ping:\n%s", addr, ns, within, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// requirePing sends 3 echo requests of size bytes and wants every reply.
func requirePing(t testing.TB, ns, addr string, size int) {
	t.Helper()
	sent, received, out := ping(t, ns, addr, size, 3)
	if sent != 3 || received != 3 {
		t.Errorf("ping -s %d %s from %s: %d sent, %d received, want 3/3:\n%s", size, addr, ns, sent, received, out)
	}
}

// shownPort and shownBridge are what `xswitch show` printed.
type shownPort struct {
	name  string
	attrs map[string]string // "ofport" → "1", "netns" → "ns1 (peer eth0, ...)", ...
}

type shownBridge struct {
	name  string
	ports []shownPort
}

// parseShow reads the tree `xswitch show` prints.
func parseShow(t testing.TB, out string) []shownBridge {
	t.Helper()
	var bridges []shownBridge
	for _, line := range strings.Split(out, "\n") {
		text := strings.TrimSpace(line)
		switch {
		case text == "":
		case strings.HasPrefix(text, "Bridge "):
			bridges = append(bridges, shownBridge{name: strings.TrimPrefix(text, "Bridge ")})
		case strings.HasPrefix(text, "Port ") && len(bridges) > 0:
			br := &bridges[len(bridges)-1]
			br.ports = append(br.ports, shownPort{name: strings.TrimPrefix(text, "Port "), attrs: map[string]string{}})
		case len(bridges) > 0 && len(bridges[len(bridges)-1].ports) == 0:
			// The bridge's own lines (datapath id, controllers, fail
			// mode), which no test reads from the text.
		case strings.Contains(text, ": ") && len(bridges) > 0 && len(bridges[len(bridges)-1].ports) > 0:
			br := &bridges[len(bridges)-1]
			key, value, _ := strings.Cut(text, ": ")
			br.ports[len(br.ports)-1].attrs[key] = value
		default:
			t.Fatalf("xswitch show: unexpected line %q in:\n%s", line, out)
		}
	}
	return bridges
}

// ofports maps each port name of bridge br to its OpenFlow port number,
// as `xswitch show` tells.
func ofports(t testing.TB, d *daemon, br string) map[string]int {
	t.Helper()
	out := d.x(t, "show")
	for _, b := range parseShow(t, out) {
		if b.name != br {
			continue
		}
		numbers := map[string]int{}
		for _, p := range b.ports {
			n, err := strconv.Atoi(p.attrs["ofport"])
			if err != nil {
				t.Fatalf("xswitch show: port %s has ofport %q:\n%s", p.name, p.attrs["ofport"], out)
			}
			numbers[p.name] = n
		}
		return numbers
	}
	t.Fatalf("xswitch show: no bridge %s in:\n%s", br, out)
	return nil
}

// portCounters are one port's counters from `xswitch dump-ports`.
type portCounters struct {
	rxPkts, rxBytes, rxDrop uint64
	txPkts, txBytes, txDrop uint64
}

var (
	dumpPortsHeader = regexp.MustCompile(`^OFPST_PORT reply: (\d+) ports?$`)
	dumpPortsRx     = regexp.MustCompile(`^port\s+(\d+): rx pkts=(\d+), bytes=(\d+), drop=(\d+),`)
	dumpPortsTx     = regexp.MustCompile(`^tx pkts=(\d+), bytes=(\d+), drop=(\d+),`)
)

// dumpPorts runs `xswitch dump-ports br` and returns the counters by
// OpenFlow port number.
func dumpPorts(t testing.TB, d *daemon, br string) map[int]portCounters {
	t.Helper()
	out := d.x(t, "dump-ports", br)
	counters := map[int]portCounters{}
	announced, current := -1, -1
	for _, line := range strings.Split(out, "\n") {
		text := strings.TrimSpace(line)
		if m := dumpPortsHeader.FindStringSubmatch(text); m != nil {
			announced, _ = strconv.Atoi(m[1])
		} else if m := dumpPortsRx.FindStringSubmatch(text); m != nil {
			current, _ = strconv.Atoi(m[1])
			counters[current] = portCounters{rxPkts: atou(m[2]), rxBytes: atou(m[3]), rxDrop: atou(m[4])}
		} else if m := dumpPortsTx.FindStringSubmatch(text); m != nil && current >= 0 {
			c := counters[current]
			c.txPkts, c.txBytes, c.txDrop = atou(m[1]), atou(m[2]), atou(m[3])
			counters[current] = c
		}
	}
	if announced != len(counters) {
		t.Fatalf("xswitch dump-ports %s: header says %d ports, found %d:\n%s", br, announced, len(counters), out)
	}
	return counters
}

func atou(s string) uint64 {
	n, _ := strconv.ParseUint(s, 10, 64)
	return n
}

// fdbEntry is one learned MAC from `xswitch fdb-show`.
type fdbEntry struct {
	port, vlan int
	mac        string
}

var fdbLine = regexp.MustCompile(`^(\d+)\s+(\d+)\s+([0-9a-f]{2}(?::[0-9a-f]{2}){5})\s+(\d+)$`)

func fdbShow(t testing.TB, d *daemon, br string) []fdbEntry {
	t.Helper()
	out := d.x(t, "fdb-show", br)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) == 0 || !strings.Contains(lines[0], "MAC") {
		t.Fatalf("xswitch fdb-show %s: no header line:\n%s", br, out)
	}
	var entries []fdbEntry
	for _, line := range lines[1:] {
		m := fdbLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			t.Fatalf("xswitch fdb-show %s: unexpected line %q in:\n%s", br, line, out)
		}
		port, _ := strconv.Atoi(m[1])
		vlan, _ := strconv.Atoi(m[2])
		entries = append(entries, fdbEntry{port: port, vlan: vlan, mac: m[3]})
	}
	return entries
}
