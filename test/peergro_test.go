package test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/xswitch/xswitch/internal/testenv"
)

// containerVeth is a veth pair made as a container runtime makes one: by
// hand, its peer eth0 in a namespace, addressed, with GRO off (the veth
// default) and TX checksum offload off.
type containerVeth struct {
	name, addr string
	in         []string // the command prefix that runs a command in the peer's namespace
}

// newContainerVeth makes veth pair tag+"p<i>" with host number i's
// address at its peer, in the namespace into: a name in /run/netns, or a
// process's pid, for a namespace without a name as a runtime's.
func newContainerVeth(t *testing.T, n *testNet, i int, into string, in ...string) containerVeth {
	t.Helper()
	v := containerVeth{name: n.name(fmt.Sprintf("p%d", i)), addr: n.ipv4(i), in: in}
	deleteLinkAtCleanup(t, v.name)
	mustRun(t, "ip", "link", "add", v.name, "type", "veth", "peer", "name", "eth0", "netns", into)
	v.run(t, "ip", "addr", "add", v.addr+"/24", "dev", "eth0")
	v.run(t, "ip", "link", "set", "eth0", "up")
	v.run(t, "ethtool", "-K", "eth0", "tx", "off", "gro", "off")
	mustRun(t, "ip", "link", "set", v.name, "up")
	return v
}

func (v containerVeth) run(t *testing.T, args ...string) string {
	t.Helper()
	all := append(append([]string{}, v.in...), args...)
	return mustRun(t, all[0], all[1:]...)
}

// peerGRO is what ethtool says of GRO at v's peer: "on" or "off".
func (v containerVeth) peerGRO(t *testing.T) string {
	t.Helper()
	for _, line := range strings.Split(v.run(t, "ethtool", "-k", "eth0"), "\n") {
		if value, ok := strings.CutPrefix(line, "generic-receive-offload: "); ok {
			return strings.Fields(value)[0]
		}
	}
	t.Fatalf("ethtool -k shows no GRO for the peer of %s", v.name)
	return ""
}

// TestAttachedVethGetsTheFastPath keeps a fix: a veth that xswitch did
// not create (by hand, or a container runtime's) has GRO off at its
// peer, where redirected frames then do not arrive, so the fast path
// never sent to it and every frame to it stayed in user space, said only
// in show. add-port now turns GRO on at the peer, in a named namespace or
// in one that only a process is in, logs it, and leaves the peer as the
// operator sets it afterwards. With the fast path off it leaves the peer
// alone.
func TestAttachedVethGetsTheFastPath(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	n := newTestNet()
	br := n.name("br")
	d.x(t, "add-br", br)
	named := n.namespace(t, "n1")
	pid, _ := testenv.UnnamedNetns(t)
	a := newContainerVeth(t, n, 1, named, "ip", "netns", "exec", named)
	b := newContainerVeth(t, n, 2, pid, "nsenter", "-t", pid, "-n")
	d.x(t, "add-port", br, a.name)
	d.x(t, "add-port", br, b.name)
	ports := ofports(t, d, br)

	if fastPathOff() {
		for _, v := range []containerVeth{a, b} {
			if got := v.peerGRO(t); got != "off" {
				t.Errorf("with the fast path off, add-port %s turned GRO %s at its peer; want it left off", v.name, got)
			}
		}
		return
	}
	for _, v := range []containerVeth{a, b} {
		if got := v.peerGRO(t); got != "on" {
			t.Errorf("add-port %s left GRO %s at its peer", v.name, got)
		}
		if got := strings.Count(d.log(), "turned GRO on at the veth peer, so that the fast path can send to it\" port="+v.name+" "); got != 1 {
			t.Errorf("the daemon log says %d times that it turned GRO on at %s's peer; want once:\n%s", got, v.name, d.log())
		}
	}
	fastPathOf := func(port string) string {
		t.Helper()
		for _, p := range parseShow(t, d.x(t, "show"))[0].ports {
			if p.name == port {
				return p.attrs["fastpath"]
			}
		}
		t.Fatalf("show has no port %s", port)
		return ""
	}
	for _, v := range []containerVeth{a, b} {
		if got := fastPathOf(v.name); got != "on" {
			t.Errorf("port %s: fastpath %q, want on", v.name, got)
		}
	}
	waitPing(t, named, b.addr, 5*time.Second)
	pingFlood(t, named, b.addr, 1000)
	var entries jsonFastPath
	d.xJSON(t, &entries, "dump-fastpath", br)
	carried := map[string]uint64{}
	for _, e := range entries.Entries {
		for _, v := range []containerVeth{a, b} {
			if e.Actions == fmt.Sprintf("output:%d", ports[v.name]) {
				carried[v.name] += e.Packets
			}
		}
	}
	for _, v := range []containerVeth{a, b} {
		if carried[v.name] < 900 {
			t.Errorf("the fast path carried %d of the flood's 1,000 frames to %s:\n%s", carried[v.name], v.name, d.x(t, "dump-fastpath", br))
		}
	}

	// An operator who turns GRO off again is obeyed, and told why the
	// fast path no longer sends to the port.
	b.run(t, "ethtool", "-K", "eth0", "gro", "off")
	want := fmt.Sprintf("off (frames to it stay in user space: its veth peer eth0 has GRO off (nsenter -t %s -n ethtool -K eth0 gro on; xswitch turns it on only when it attaches the port))", pid)
	for deadline := time.Now().Add(5 * time.Second); fastPathOf(b.name) != want; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("port %s: fastpath %q after its peer's GRO went off; want %q", b.name, fastPathOf(b.name), want)
		}
	}
	requirePing(t, named, b.addr, 56) // user space carries it
	if got := b.peerGRO(t); got != "off" {
		t.Errorf("xswitch turned GRO %s again at %s's peer, which the operator had turned off", got, b.name)
	}
}
