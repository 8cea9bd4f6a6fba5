package test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xswitch/xswitch/internal/testenv"
)

// ovsdbServer is an ovsdb-server that `xswitch ovsdb-start` started on a
// database of its own.
type ovsdbServer struct {
	dir, sock string
}

// startOVSDB starts a server in a fresh directory; cleanup stops it.
func startOVSDB(t *testing.T) *ovsdbServer {
	t.Helper()
	testenv.RequireOVSDB(t)
	s := &ovsdbServer{dir: t.TempDir()}
	s.start(t)
	t.Cleanup(func() { s.kill(t) })
	return s
}

// start runs ovsdb-start (again) on s's directory.
func (s *ovsdbServer) start(t *testing.T) {
	t.Helper()
	s.sock = strings.TrimSpace(mustRun(t, xswitchBin, "ovsdb-start", "--dir", s.dir))
	if want := "unix:" + filepath.Join(s.dir, "db.sock"); s.sock != want {
		t.Fatalf("ovsdb-start printed %q, want %q", s.sock, want)
	}
}

// kill stops the server, which ovsdb-start detached, by its pid file.
func (s *ovsdbServer) kill(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(s.dir, "ovsdb-server.pid"))
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || syscall.Kill(pid, syscall.SIGTERM) != nil {
		return
	}
	for deadline := time.Now().Add(5 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// vsctl runs ovs-vsctl on the server, waiting (as without --no-wait it
// does) until the switch daemon has applied the change: cur_cfg.
func (s *ovsdbServer) vsctl(t *testing.T, args ...string) string {
	t.Helper()
	return mustRun(t, "ovs-vsctl", append([]string{"--db=" + s.sock, "--timeout=10"}, args...)...)
}

// get is a column's value as ovs-vsctl get prints it, unquoted.
func (s *ovsdbServer) get(t *testing.T, table, record, column string) string {
	t.Helper()
	v := strings.TrimSpace(mustRun(t, "ovs-vsctl", "--db="+s.sock, "get", table, record, column))
	if u, err := strconv.Unquote(v); err == nil {
		return u
	}
	return v
}

// ovsdbBed is a server, a daemon that follows it, a test network and the
// name of a bridge of it, whose own interface goes at the end.
func ovsdbBed(t *testing.T) (*ovsdbServer, *daemon, *testNet, string) {
	t.Helper()
	testenv.RequireRoot(t)
	s := startOVSDB(t)
	d := startDaemonWith(t, "--ovsdb", s.sock)
	n := newTestNet()
	br := n.name("br")
	deleteLinkAtCleanup(t, br)
	return s, d, n, br
}

// noPing wants no echo reply from addr.
func noPing(t *testing.T, ns, addr string) {
	t.Helper()
	if _, received, out := ping(t, ns, addr, 56, 2); received != 0 {
		t.Errorf("ping %s from %s: %d replies, want none:\n%s", addr, ns, received, out)
	}
}

// TestOVSDBDrivesTheSwitch drives the daemon with the real ovs-vsctl
// through the real ovsdb-server, as ovs-vswitchd is driven.
func TestOVSDBDrivesTheSwitch(t *testing.T) {
	testenv.RequireRoot(t)
	s := startOVSDB(t)
	pid := func() string { data, _ := os.ReadFile(filepath.Join(s.dir, "ovsdb-server.pid")); return string(data) }
	first := pid()
	s.start(t) // a server already running is left as it is
	if again := pid(); again != first {
		t.Errorf("ovsdb-start again: the server's pid went from %q to %q, want it left running", first, again)
	}
	d := startDaemonWith(t, "--ovsdb", s.sock)
	n := newTestNet()
	br := n.name("br")
	deleteLinkAtCleanup(t, br) // the bridge's internal port, if del-br does not come
	p1, p2 := foreignPort(t, n, 1), foreignPort(t, n, 2)

	s.vsctl(t, "add-br", br, "--", "set", "Bridge", br, "fail_mode=secure")
	// ovs-vsctl returned: the daemon has applied it (cur_cfg).
	if got := strings.TrimSpace(d.x(t, "get-fail-mode", br)); got != "secure" {
		t.Errorf("fail mode after add-br with fail_mode=secure: %q", got)
	}
	if got := s.get(t, "Interface", br, "ofport"); got != "65534" {
		t.Errorf("the bridge's own interface has ofport %s, want 65534 (LOCAL)", got)
	}
	if got := s.get(t, "Bridge", br, "datapath_id"); len(got) != 16 {
		t.Errorf("Bridge:datapath_id %q, want 16 hex digits", got)
	}
	// The bridge's own interface starts down, as OVS's does, until its
	// owner brings it up.
	if got := s.get(t, "Interface", br, "admin_state"); got != "down" {
		t.Errorf("the bridge's own interface has admin_state %s right after add-br, want down", got)
	}
	mustRun(t, "ip", "link", "set", br, "up")
	s.waitColumn(t, "Interface", br, "admin_state", "up", 8*time.Second)
	for col, want := range map[string]string{"datapath_types": "[netdev, system]", "iface_types": "[geneve, internal, system, tap, vxlan]"} {
		if got := s.get(t, "Open_vSwitch", ".", col); got != want {
			t.Errorf("Open_vSwitch:%s %s, want %s", col, got, want)
		}
	}

	began := time.Now()
	s.vsctl(t, "add-port", br, p1.name, "--", "set", "Interface", p1.name, "ofport_request=7")
	t.Logf("ovs-vsctl add-port returned, applied, in %v", time.Since(began))
	s.vsctl(t, "add-port", br, p2.name)
	if got := ofports(t, d, br); got[p1.name] != 7 || got[p2.name] == 0 {
		t.Errorf("ofports right after add-port returned: %v, want %s at 7 and %s", got, p1.name, p2.name)
	}
	if got := s.get(t, "Interface", p1.name, "ofport"); got != "7" {
		t.Errorf("ovs-vsctl get Interface %s ofport: %s, want 7", p1.name, got)
	}
	for col, want := range map[string]string{"admin_state": "up", "link_state": "up", "error": "[]", "mtu": "1500"} {
		if got := s.get(t, "Interface", p1.name, col); got != want {
			t.Errorf("Interface %s %s: %s, want %s", p1.name, col, got, want)
		}
	}
	if got := s.get(t, "Interface", p1.name, "mac_in_use"); len(got) != 17 {
		t.Errorf("Interface %s mac_in_use: %q", p1.name, got)
	}
	s.vsctl(t, "set", "Bridge", br, "fail_mode=standalone")
	if got := strings.TrimSpace(d.x(t, "get-fail-mode", br)); got != "standalone" {
		t.Errorf("fail mode after setting standalone: %q", got)
	}
	waitPing(t, p1.ns, p2.addr, 5*time.Second)
	// Statistics come every 5 s, as OVS's do.
	for deadline := time.Now().Add(7 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		r := run(t, "ovs-vsctl", "--db="+s.sock, "get", "Interface", p1.name, "statistics:rx_packets")
		if rx, _ := strconv.Atoi(strings.TrimSpace(r.stdout)); rx > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Interface %s statistics: %s after 7 s, want rx_packets counting the pings", p1.name, s.get(t, "Interface", p1.name, "statistics"))
		}
	}

	// VLANs: p2 alone on VLAN 10 is cut off from the untagged p1, then
	// joined by it.
	s.vsctl(t, "set", "Port", p2.name, "tag=10")
	if got := strings.TrimSpace(d.x(t, "get", "Port", p2.name, "tag")); got != "10" {
		t.Errorf("xswitch get Port %s tag: %q, want 10", p2.name, got)
	}
	noPing(t, p1.ns, p2.addr)
	s.vsctl(t, "set", "Port", p1.name, "tag=10")
	waitPing(t, p1.ns, p2.addr, 5*time.Second)
	s.vsctl(t, "clear", "Port", p1.name, "tag", "--", "clear", "Port", p2.name, "tag")
	waitPing(t, p1.ns, p2.addr, 5*time.Second)

	// An interface that does not exist is said so, as OVS says it; the rest
	// forwards on.
	ghost := n.name("gh")
	r := run(t, "ovs-vsctl", "--db="+s.sock, "--timeout=10", "add-port", br, ghost)
	t.Logf("ovs-vsctl add-port %s (no such interface): exit %d: %s", ghost, r.code, strings.TrimSpace(r.stderr))
	if got, want := s.get(t, "Interface", ghost, "error"), "could not open network device "+ghost+" (No such device)"; got != want {
		t.Errorf("Interface %s error: %q, want %q", ghost, got, want)
	}
	if got := s.get(t, "Interface", ghost, "ofport"); got != "-1" {
		t.Errorf("Interface %s ofport: %s, want -1", ghost, got)
	}
	requirePing(t, p1.ns, p2.addr, 56)
	if got := s.vsctl(t, "show"); !strings.Contains(got, `error: "could not open network device `+ghost+` (No such device)"`) {
		t.Errorf("ovs-vsctl show does not tell of %s's error:\n%s", ghost, got)
	}

	// With the database, the verbs that change bridges and ports refuse.
	if msg, _ := d.xErr(t, "add-br", n.name("no")); !strings.Contains(msg, "ovs-vsctl --db="+s.sock) {
		t.Errorf("add-br under --ovsdb: %q, want it to point at ovs-vsctl", msg)
	}

	// A second daemon on the same database waits for the lock and leaves
	// the switch alone.
	second := startDaemonWith(t, "--ovsdb", s.sock)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(second.log(), "holds the OVSDB lock ovs_vswitchd"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the second daemon does not say it waits for the lock:\n%s", second.log())
		}
	}
	if got := strings.TrimSpace(second.x(t, "list-br")); got != "" {
		t.Errorf("the second daemon runs bridges %q, want none", got)
	}
	second.stop(t, syscall.SIGTERM)

	// The server goes away: forwarding goes on; it comes back: the
	// daemon follows it again.
	s.kill(t)
	requirePing(t, p1.ns, p2.addr, 56)
	s.start(t)
	s.vsctl(t, "set", "Interface", p2.name, "ofport_request=9")
	if got := ofports(t, d, br)[p2.name]; got != 9 {
		t.Errorf("%s has ofport %d after ofport_request=9 through a new server, want 9", p2.name, got)
	}
	waitPing(t, p1.ns, p2.addr, 5*time.Second)

	s.vsctl(t, "del-port", br, p2.name)
	if _, ok := ofports(t, d, br)[p2.name]; ok {
		t.Errorf("%s still on the bridge after del-port", p2.name)
	}
	noPing(t, p1.ns, p2.addr)

	s.vsctl(t, "del-br", br)
	if got := strings.TrimSpace(d.x(t, "list-br")); got != "" {
		t.Errorf("bridges after del-br: %q", got)
	}
}

// TestOVSDBRestartsAndController restarts the daemon, with the database
// changed while it was away, gives a bridge a controller target through
// the database, and adds an interface of a type xswitch does not have.
func TestOVSDBRestartsAndController(t *testing.T) {
	s, d, n, br := ovsdbBed(t)
	p1, p2, p3 := foreignPort(t, n, 1), foreignPort(t, n, 2), foreignPort(t, n, 3)
	s.vsctl(t, "add-br", br, "--", "add-port", br, p1.name, "--", "set", "Interface", p1.name, "ofport_request=10",
		"--", "add-port", br, p2.name, "--", "add-port", br, p3.name)
	// The number stays the port's once the request is gone.
	s.vsctl(t, "clear", "Interface", p1.name, "ofport_request")
	waitPing(t, p1.ns, p2.addr, 5*time.Second)
	before := ofports(t, d, br)
	if before[p1.name] != 10 {
		t.Fatalf("ofports %v, want %s at 10", before, p1.name)
	}

	// Restarted, the daemon forwards with the same numbers.
	d.stop(t, syscall.SIGTERM)
	d.start(t)
	waitPing(t, p1.ns, p2.addr, 5*time.Second)
	if after := ofports(t, d, br); !reflect.DeepEqual(after, before) {
		t.Errorf("ofports after a restart %v, want %v", after, before)
	}

	// Restarted without its own configuration (as after a move from
	// ovs-vswitchd, or a lost --db) and the devices it made (as after a
	// reboot), the daemon gives the ports the numbers the database has.
	d.stop(t, syscall.SIGTERM)
	for _, f := range []string{d.db, d.db + ".journal"} {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	mustRun(t, "ip", "link", "del", "dev", br)
	d.start(t)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		after := ofports(t, d, br)
		if reflect.DeepEqual(after, before) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ofports after a restart without --db %v, want the database's %v", after, before)
		}
	}
	waitPing(t, p1.ns, p2.addr, 5*time.Second)

	// What the database says while the daemon is away is what it runs
	// once back.
	d.stop(t, syscall.SIGTERM)
	s.vsctl(t, "--no-wait", "del-port", br, p2.name, "--", "set", "Port", p3.name, "tag=20")
	d.start(t)
	mustRun(t, "ovs-vsctl", "--db="+s.sock, "--timeout=10", "wait-until", "Open_vSwitch", ".", "cur_cfg="+s.get(t, "Open_vSwitch", ".", "next_cfg"))
	if got := ofports(t, d, br); got[p2.name] != 0 || got[p1.name] != before[p1.name] {
		t.Errorf("ofports after del-port %s while the daemon was away: %v", p2.name, got)
	}
	if got := strings.TrimSpace(d.x(t, "get", "Port", p3.name, "tag")); got != "20" {
		t.Errorf("%s's tag after a change while the daemon was away: %q, want 20", p3.name, got)
	}
	noPing(t, p1.ns, p2.addr)

	// A listening controller target: ovs-ofctl reaches the bridge on it;
	// as in OVS, such a target is never "connected".
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	s.vsctl(t, "set-controller", br, "ptcp:"+port+":127.0.0.1")
	if got := strings.TrimSpace(d.x(t, "get-controller", br)); got != "ptcp:"+port+":127.0.0.1" {
		t.Errorf("get-controller after set-controller through the database: %q", got)
	}
	var dumped result
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if dumped = run(t, "ovs-ofctl", "-O", "OpenFlow13", "dump-flows", "tcp:127.0.0.1:"+port); dumped.code == 0 || time.Now().After(deadline) {
			break
		}
	}
	if dumped.code != 0 || !strings.Contains(dumped.stdout, "actions=NORMAL") {
		t.Errorf("ovs-ofctl dump-flows on the bridge's ptcp target: exit %d: %s%s", dumped.code, dumped.stdout, dumped.stderr)
	}
	if got := strings.TrimSpace(mustRun(t, "ovs-vsctl", "--db="+s.sock, "--bare", "--columns=is_connected", "list", "Controller")); got != "false" {
		t.Errorf("Controller is_connected of a ptcp target: %q, want false", got)
	}

	// A type xswitch does not have is said so in the interface's error.
	s.vsctl(t, "add-port", br, n.name("pt"), "--", "set", "Interface", n.name("pt"), "type=patch", "options:peer=x")
	if got := s.get(t, "Interface", n.name("pt"), "error"); !strings.Contains(got, `interface type "patch" is not supported`) {
		t.Errorf("a patch interface's error: %q", got)
	}
	// The rest goes on.
	s.vsctl(t, "clear", "Port", p3.name, "tag")
	waitPing(t, p1.ns, p3.addr, 5*time.Second)
}

// TestOVSDBVXLANWithTheKernel has ovs-vsctl make a VXLAN port, as OVS's
// users write it (datapath_type=netdev, options:remote_ip and key), on
// an xswitch host whose namespace is reached over the tunnel from the
// kernel's vxlan device on another host.
func TestOVSDBVXLANWithTheKernel(t *testing.T) {
	testenv.RequireRoot(t)
	n := newTestNet()
	hosts := newUnderlay(t, n, 2)
	a, b := hosts[0], hosts[1]
	s := startOVSDB(t)
	d := startDaemonIn(t, a.ns, "--ovsdb", s.sock)
	nsA := vmBehind(t, n, a, "a", n.ipv4(1))
	nsB := kernelVXLAN(t, n, b, a.addr, 42, "b", n.ipv4(2))

	br := n.name("br")
	s.vsctl(t, "add-br", br, "--", "set", "Bridge", br, "datapath_type=netdev",
		"--", "add-port", br, "vma",
		"--", "add-port", br, "vx0", "--", "set", "Interface", "vx0", "type=vxlan", "options:remote_ip="+b.addr, "options:key=42")
	if got := s.get(t, "Interface", "vx0", "error"); got != "[]" {
		t.Errorf("Interface vx0 error: %s", got)
	}
	if got := s.get(t, "Interface", "vx0", "ofport"); got == "-1" || got == "[]" {
		t.Errorf("Interface vx0 ofport: %s", got)
	}
	waitPing(t, nsA, n.ipv4(2), 10*time.Second)
	requirePing(t, nsB, n.ipv4(1), 1400)
	if got := strings.TrimSpace(d.x(t, "list-ports", br)); !strings.Contains(got, "vx0") {
		t.Errorf("list-ports: %q, want vx0 among them", got)
	}
}

// vmBehind makes a new namespace (suffix), a VM of host h, whose eth0 has
// address addr/24 and is a veth whose other end, "vm"+suffix, sits in h
// for its switch to take as a port; it returns the namespace.
func vmBehind(t *testing.T, n *testNet, h underlayHost, suffix, addr string) string {
	t.Helper()
	ns := n.namespace(t, suffix)
	mustRun(t, "ip", "-n", h.ns, "link", "add", "vm"+suffix, "type", "veth", "peer", "name", "eth0", "netns", ns)
	mustRun(t, "ip", "-n", h.ns, "link", "set", "vm"+suffix, "up")
	mustRun(t, "ip", "-n", ns, "addr", "add", addr+"/24", "dev", "eth0")
	mustRun(t, "ip", "-n", ns, "link", "set", "eth0", "up")
	// As for the underlay (newUnderlay): the kernel leaves a veth's
	// checksums to a NIC that is not there.
	mustRun(t, "ip", "netns", "exec", ns, "ethtool", "-K", "eth0", "tx", "off")
	return ns
}

// TestOVSDBOVNChassis does what ovn-controller does on a new chassis
// (br-int with fail_mode=secure and other_config:disable-in-band=true, a
// Geneve port with options:remote_ip, key=flow and csum=true, a VM's port
// with external_ids:iface-id), then installs the flows OVN would, with
// the flow verbs that work under --ovsdb; the VM reaches one behind an
// xswitch on another host over the tunnel.
func TestOVSDBOVNChassis(t *testing.T) {
	testenv.RequireRoot(t)
	n := newTestNet()
	hosts := newUnderlay(t, n, 2)
	a, b := hosts[0], hosts[1]
	s := startOVSDB(t)
	dA := startDaemonIn(t, a.ns, "--ovsdb", s.sock)
	nsA := vmBehind(t, n, a, "a", n.ipv4(1))
	br := n.name("br")
	dB, nsB := xswitchHost(t, n, b, br, "b", n.ipv4(2))
	dB.x(t, "add-port", br, "gn1", "--type", "geneve", "--remote-ip", a.addr, "--key", "5000")

	s.vsctl(t, "--may-exist", "add-br", "br-int", "--", "set", "Bridge", "br-int", "fail_mode=secure", "other_config:disable-in-band=true")
	s.vsctl(t, "--may-exist", "add-port", "br-int", "ovn-b-0", "--", "set", "Interface", "ovn-b-0", "type=geneve",
		"options:remote_ip="+b.addr, "options:key=flow", "options:csum=true")
	s.vsctl(t, "add-port", "br-int", "vma", "--", "set", "Interface", "vma", "external_ids:iface-id=lsp-a")
	for _, iface := range []string{"br-int", "ovn-b-0", "vma"} {
		if got := s.get(t, "Interface", iface, "error"); got != "[]" {
			t.Errorf("Interface %s error: %s", iface, got)
		}
	}
	if got := s.get(t, "Interface", "vma", "external_ids:iface-id"); got != "lsp-a" {
		t.Errorf("external_ids:iface-id %q, want it kept as given", got)
	}
	if got := strings.TrimSpace(dA.x(t, "get-fail-mode", "br-int")); got != "secure" {
		t.Errorf("br-int's fail mode: %q", got)
	}
	dA.x(t, "del-flows", "br-int")
	dA.x(t, "add-flow", "br-int", "in_port=vma,actions=set_tunnel:5000,output:ovn-b-0")
	dA.x(t, "add-flow", "br-int", "in_port=ovn-b-0,tun_id=5000,actions=output:vma")
	waitPing(t, nsA, n.ipv4(2), 10*time.Second)
	requirePing(t, nsB, n.ipv4(1), 1400)
}

// TestOVSDBBadInput gives the daemon through the database what it cannot
// run: a port in two bridges, a tunnel whose options are malformed. Each
// gets a clear error column, and the rest of the switch runs on.
func TestOVSDBBadInput(t *testing.T) {
	testenv.RequireRoot(t)
	s := startOVSDB(t)
	d := startDaemonWith(t, "--ovsdb", s.sock)
	n := newTestNet()
	br1, br2 := n.name("b1"), n.name("b2")
	deleteLinkAtCleanup(t, br1)
	deleteLinkAtCleanup(t, br2)
	p1, p2 := foreignPort(t, n, 1), foreignPort(t, n, 2)
	s.vsctl(t, "add-br", br1, "--", "add-br", br2, "--", "add-port", br1, p1.name, "--", "add-port", br1, p2.name)
	waitPing(t, p1.ns, p2.addr, 5*time.Second)

	// ovs-vsctl's own commands keep a port in one bridge; its generic
	// ones do not.
	port := s.get(t, "Port", p2.name, "_uuid")
	s.vsctl(t, "add", "Bridge", br2, "ports", port)
	if got := s.get(t, "Interface", p2.name, "error"); !strings.Contains(got, "is in more than one port") {
		t.Errorf("a port in two bridges: Interface error %q", got)
	}
	if got := s.get(t, "Interface", p2.name, "ofport"); got != "-1" {
		t.Errorf("a port in two bridges: ofport %s, want -1", got)
	}
	noPing(t, p1.ns, p2.addr)
	s.vsctl(t, "remove", "Bridge", br2, "ports", port)
	waitPing(t, p1.ns, p2.addr, 5*time.Second)
	if got := s.get(t, "Interface", p2.name, "error"); got != "[]" {
		t.Errorf("the port back in one bridge: Interface error %q", got)
	}

	for name, c := range map[string]struct{ options, why string }{
		n.name("v1"): {"options:remote_ip=not-an-ip", `"not-an-ip" is not an IP address`},
		n.name("v2"): {"options:dst_port=x", `options:dst_port "x" is not a UDP port`},
		n.name("v3"): {"options:key=7", "needs --remote-ip"},
	} {
		run(t, "ovs-vsctl", "--db="+s.sock, "--timeout=10", "add-port", br1, name, "--", "set", "Interface", name, "type=vxlan", c.options)
		if got := s.get(t, "Interface", name, "error"); !strings.Contains(got, c.why) {
			t.Errorf("a vxlan port with %s: Interface error %q, want %q in it", c.options, got, c.why)
		}
		if got := s.get(t, "Interface", name, "ofport"); got != "-1" {
			t.Errorf("a vxlan port with %s: ofport %s, want -1", c.options, got)
		}
	}
	requirePing(t, p1.ns, p2.addr, 56)
	if got := strings.Fields(d.x(t, "list-ports", br1)); len(got) != 3 {
		t.Errorf("list-ports %s: %v, want the bridge's own port, %s and %s", br1, got, p1.name, p2.name)
	}
}

// TestOVSDBNamespacePorts has ovs-vsctl make xswitch's own kind of port,
// a veth pair into a namespace (Interface other_config:xswitch-netns and
// xswitch-address), with an mtu_request; del-port deletes the pair.
func TestOVSDBNamespacePorts(t *testing.T) {
	s, d, n, br := ovsdbBed(t)
	s.vsctl(t, "add-br", br)
	p1, p2 := s.namespacePorts(t, n, br, "mtu_request=2000")
	waitPing(t, p1.ns, p2.addr, 5*time.Second)
	requirePing(t, p1.ns, p2.addr, 1900)
	if got := s.get(t, "Interface", p1.name, "mtu"); got != "2000" {
		t.Errorf("Interface %s mtu: %s, want 2000 (its mtu_request)", p1.name, got)
	}
	if got := mustRun(t, "ip", "-n", p1.ns, "link", "show", "dev", "eth0"); !strings.Contains(got, "mtu 2000") {
		t.Errorf("the namespace's end of %s: %s, want mtu 2000", p1.name, got)
	}
	if got := strings.TrimSpace(d.x(t, "--format", "json", "show")); !strings.Contains(got, `"netns": "`+p1.ns+`"`) {
		t.Errorf("show %s: want %s's netns %s in\n%s", br, p1.name, p1.ns, got)
	}
	s.vsctl(t, "del-port", br, p2.name)
	if linkExists(t, p2.name) || nsLinkExists(t, p2.ns, "eth0") {
		t.Errorf("%s's veth pair is still there after del-port", p2.name)
	}
}

// namespacePorts adds two ports to br with ovs-vsctl, each a veth pair
// into a namespace of its own with an address (xswitch's other_config
// keys), and the Interface columns set, if any.
func (s *ovsdbServer) namespacePorts(t *testing.T, n *testNet, br string, set ...string) (nsPort, nsPort) {
	t.Helper()
	var ports []nsPort
	for i := 1; i <= 2; i++ {
		p := nsPort{name: n.name(fmt.Sprintf("p%d", i)), ns: n.namespace(t, fmt.Sprintf("n%d", i)), addr: n.ipv4(i)}
		deleteLinkAtCleanup(t, p.name)
		s.vsctl(t, append([]string{"add-port", br, p.name, "--", "set", "Interface", p.name,
			"other_config:xswitch-netns=" + p.ns, "other_config:xswitch-address=" + p.addr + "/24"}, set...)...)
		ports = append(ports, p)
	}
	return ports[0], ports[1]
}

// waitColumn waits, polling ovs-vsctl get, until a column (or a map
// column's key, "status:state") of a record is want; a missing key is
// "". ovs-vswitchd refreshes some status (a controller's) only every 5 s.
func (s *ovsdbServer) waitColumn(t *testing.T, table, record, column, want string, within time.Duration) {
	t.Helper()
	var got string
	for deadline := time.Now().Add(within); ; time.Sleep(200 * time.Millisecond) {
		r := run(t, "ovs-vsctl", "--db="+s.sock, "get", table, record, column)
		got = strings.TrimSpace(r.stdout)
		if u, err := strconv.Unquote(got); err == nil {
			got = u
		}
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s %s: %q after %v, want %q; the row:\n%s", table, record, column, got, within, want,
				mustRun(t, "ovs-vsctl", "--db="+s.sock, "list", table, record))
		}
	}
}

// TestOVSDBControllerStatus connects a bridge to a real controller (os-ken)
// through a tcp: target set with ovs-vsctl, and reads back what
// ovs-vswitchd writes of it: is_connected, role and the status map (the
// connection's state, seconds since it was made), then, the controller
// gone, that it is not connected and why.
func TestOVSDBControllerStatus(t *testing.T) {
	requireTool(t, "osken-manager")
	s, _, _, br := ovsdbBed(t)
	port := freeTCPPort(t)
	ctl := startOsKen(t, port)
	target := "tcp:127.0.0.1:" + strconv.Itoa(port)
	s.vsctl(t, "add-br", br, "--", "set-controller", br, target)
	c := strings.TrimSpace(mustRun(t, "ovs-vsctl", "--db="+s.sock, "--bare", "--columns=_uuid", "find", "Controller", "target=\""+target+"\""))
	s.waitColumn(t, "Controller", c, "is_connected", "true", 15*time.Second)
	s.waitColumn(t, "Controller", c, "status:state", "ACTIVE", 7*time.Second)
	if got := s.get(t, "Controller", c, "role"); got != "other" {
		t.Errorf("Controller role of os-ken, which asks for none: %q, want other (OpenFlow's equal)", got)
	}
	if got, err := strconv.Atoi(s.get(t, "Controller", c, "status:sec_since_connect")); err != nil || got < 0 || got > 60 {
		t.Errorf("Controller status:sec_since_connect %d (%v), want the seconds since os-ken connected", got, err)
	}
	t.Logf("connected: %s", s.get(t, "Controller", c, "status"))

	ctl.stop()
	s.waitColumn(t, "Controller", c, "is_connected", "false", 15*time.Second)
	if got := s.get(t, "Controller", c, "role"); got != "[]" {
		t.Errorf("Controller role with the controller gone: %q, want none", got)
	}
	if got := s.get(t, "Controller", c, "status:state"); got != "BACKOFF" && got != "CONNECTING" {
		t.Errorf("Controller status:state with the controller gone: %q, want BACKOFF or CONNECTING", got)
	}
	for _, key := range []string{"last_error", "sec_since_disconnect", "sec_since_connect"} {
		if r := run(t, "ovs-vsctl", "--db="+s.sock, "get", "Controller", c, "status:"+key); r.code != 0 {
			t.Errorf("Controller status has no %s with the controller gone: %s", key, s.get(t, "Controller", c, "status"))
		}
	}
	t.Logf("gone: %s", s.get(t, "Controller", c, "status"))
}

// TestOVSDBOFPortRequestConflicts has two interfaces (and the bridge's
// own) request one number, as ovs-vswitchd takes it: one gets it, the
// other a number of its own, neither an error; once the holder no longer
// asks for it, the other, which still does, gets it.
func TestOVSDBOFPortRequestConflicts(t *testing.T) {
	s, d, n, br := ovsdbBed(t)
	p1, p2 := foreignPort(t, n, 1), foreignPort(t, n, 2)
	s.vsctl(t, "add-br", br, "--", "set", "Interface", br, "ofport_request=7",
		"--", "add-port", br, p1.name, "--", "set", "Interface", p1.name, "ofport_request=7",
		"--", "add-port", br, p2.name, "--", "set", "Interface", p2.name, "ofport_request=7")
	// The bridge's own port is LOCAL whatever it asks for, as in OVS.
	if got, e := s.get(t, "Interface", br, "ofport"), s.get(t, "Interface", br, "error"); got != "65534" || e != "[]" {
		t.Errorf("the bridge's own interface, asking for 7: ofport %s, error %s; want 65534 (LOCAL), no error", got, e)
	}
	holder, other := p1, p2
	if s.get(t, "Interface", p2.name, "ofport") == "7" {
		holder, other = p2, p1
	}
	check := func(when string, want map[string]bool) { // by name: whether at 7
		t.Helper()
		got := ofports(t, d, br)
		for name, at7 := range want {
			col := s.get(t, "Interface", name, "ofport")
			if at7 != (col == "7") || col == "-1" || col == "[]" || col != strconv.Itoa(int(got[name])) {
				t.Errorf("%s: %s has ofport %s in the database, %d in the switch; want 7: %v", when, name, col, got[name], at7)
			}
			if e := s.get(t, "Interface", name, "error"); e != "[]" {
				t.Errorf("%s: %s has error %s", when, name, e)
			}
		}
	}
	check("both asking for 7", map[string]bool{holder.name: true, other.name: false})
	waitPing(t, p1.ns, p2.addr, 5*time.Second)

	s.vsctl(t, "clear", "Interface", holder.name, "ofport_request")
	check("the holder no longer asking", map[string]bool{holder.name: false, other.name: true})
	waitPing(t, p1.ns, p2.addr, 5*time.Second)
}

// TestOVSDBRSTPStatus turns RSTP on with ovs-vsctl and reads back the
// rstp_status columns ovs-vswitchd writes: the bridge's, alone and so
// the root, and its ports', which become designated and forwarding; the
// bridge's own (internal) port takes no part, as in OVS. Turned off, the
// columns are empty again.
func TestOVSDBRSTPStatus(t *testing.T) {
	s, _, n, br := ovsdbBed(t)
	p1, p2 := foreignPort(t, n, 1), foreignPort(t, n, 2)
	s.vsctl(t, "add-br", br, "--", "add-port", br, p1.name, "--", "add-port", br, p2.name)
	if got := s.get(t, "Bridge", br, "rstp_status"); got != "{}" {
		t.Errorf("Bridge rstp_status without RSTP: %s, want {}", got)
	}
	s.vsctl(t, "set", "Bridge", br, "rstp_enable=true", "other_config:rstp-priority=4096")
	id := s.get(t, "Bridge", br, "rstp_status:rstp_bridge_id")
	if !regexp.MustCompile(`^1\.000\.[0-9a-f]{12}$`).MatchString(id) {
		t.Errorf("Bridge rstp_status:rstp_bridge_id %q, want 1.000.<address> (priority 4096)", id)
	}
	for key, want := range map[string]string{"rstp_root_id": id, "rstp_designated_id": id, "rstp_root_path_cost": "0",
		"rstp_designated_port_id": "0000", "rstp_bridge_port_id": "0000"} {
		if got := s.get(t, "Bridge", br, "rstp_status:"+key); got != want {
			t.Errorf("Bridge rstp_status:%s of a bridge alone, the root: %q, want %q", key, got, want)
		}
	}
	for _, p := range []nsPort{p1, p2} {
		s.waitColumn(t, "Port", p.name, "rstp_status:rstp_port_state", "Forwarding", 15*time.Second)
		for key, want := range map[string]string{"rstp_port_role": "Designated", "rstp_designated_bridge_id": id, "rstp_designated_path_cost": "0"} {
			if got := s.get(t, "Port", p.name, "rstp_status:"+key); got != want {
				t.Errorf("Port %s rstp_status:%s: %q, want %q", p.name, key, got, want)
			}
		}
		if got := s.get(t, "Port", p.name, "rstp_status:rstp_port_id"); !regexp.MustCompile(`^8[0-9a-f]{3}$`).MatchString(got) {
			t.Errorf("Port %s rstp_status:rstp_port_id %q, want 8nnn (priority 128, the port's number)", p.name, got)
		}
	}
	if got := s.get(t, "Port", br, "rstp_status"); got != "{}" {
		t.Errorf("the bridge's internal port has rstp_status %s, want {} (it takes no part)", got)
	}
	waitPing(t, p1.ns, p2.addr, 5*time.Second)

	s.vsctl(t, "set", "Bridge", br, "rstp_enable=false")
	for table, rec := range map[string]string{"Bridge": br, "Port": p1.name} {
		if got := s.get(t, table, rec, "rstp_status"); got != "{}" {
			t.Errorf("%s %s rstp_status with RSTP off: %s, want {}", table, rec, got)
		}
	}
}

// TestOVSDBZoneTimeoutPolicy is the intent of OVS's "conntrack -
// zone-based timeout policy", typed as an OVS user types it: ovs-vsctl
// add-zone-tp shortens ICMP's timeouts in zone 5, whose pings' connection
// is then gone within seconds, where it stays with OVS's defaults;
// del-zone-tp gives the defaults back. xswitch list-zone-tp prints what
// ovs-vsctl's does; xswitch add-zone-tp refuses: the database holds the
// policies.
func TestOVSDBZoneTimeoutPolicy(t *testing.T) {
	s, d, n, br := ovsdbBed(t)
	s.vsctl(t, "add-br", br)
	p1, p2 := s.namespacePorts(t, n, br)
	for _, f := range []string{
		"priority=10,arp,actions=normal",
		"priority=100,in_port=" + p1.name + ",icmp,actions=ct(commit,zone=5),output:" + p2.name,
		"priority=100,in_port=" + p2.name + ",icmp,ct_state=-trk,actions=ct(zone=5,table=0)",
		"priority=100,in_port=" + p2.name + ",icmp,ct_state=+trk+est,actions=output:" + p1.name,
	} {
		d.x(t, "add-flow", br, f)
	}
	zone5 := func() int { return strings.Count(d.x(t, "dump-conntrack", "zone=5"), "icmp,") }
	pingOnce := func() {
		t.Helper()
		if _, received, out := ping(t, p1.ns, p2.addr, 56, 1); received != 1 {
			t.Fatalf("ping through zone 5: no reply:\n%s", out)
		}
	}

	s.vsctl(t, "--", "--id=@dp", "create", "Datapath", "datapath_version=0", "--", "set", "Open_vSwitch", ".", "datapaths:netdev=@dp")
	s.vsctl(t, "add-zone-tp", "netdev", "zone=5", "icmp_first=1", "icmp_reply=1")
	// ovs-vsctl list-zone-tp is the oracle of xswitch's.
	if got, want := d.x(t, "list-zone-tp", "netdev"), s.vsctl(t, "list-zone-tp", "netdev"); got != want {
		t.Errorf("xswitch list-zone-tp netdev:\n%s\novs-vsctl list-zone-tp netdev:\n%s", got, want)
	}
	if msg, _ := d.xErr(t, "add-zone-tp", "netdev", "zone=6", "udp_first=1"); !strings.Contains(msg, "ovs-vsctl") {
		t.Errorf("xswitch add-zone-tp under --ovsdb: %q; want it refused, pointing at ovs-vsctl", msg)
	}
	pingOnce()
	if got := zone5(); got != 1 {
		t.Fatalf("zone 5 holds %d ICMP connections after a ping, want 1", got)
	}
	time.Sleep(2 * time.Second)
	if got := zone5(); got != 0 {
		t.Errorf("zone 5 holds %d ICMP connections 2 s after a ping, with icmp_reply=1: want none", got)
	}

	s.vsctl(t, "del-zone-tp", "netdev", "zone=5")
	pingOnce()
	time.Sleep(2 * time.Second)
	if got := zone5(); got != 1 {
		t.Errorf("zone 5 holds %d ICMP connections 2 s after a ping, with OVS's default icmp_reply (30 s): want 1", got)
	}
}
