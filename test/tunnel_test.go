package test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/xswitch/xswitch/bench"
	"github.com/xswitch/xswitch/internal/testenv"
)

// Tunnel ports between "hosts": network namespaces joined by an underlay,
// each running what a host would (an xswitch daemon of its own, or the
// kernel's vxlan device behind a Linux bridge), with namespaces behind
// them as their VMs.

// underlayMTU is the underlay's MTU: 50 bytes more than the 1500 of the
// namespaces behind the hosts, for the encapsulation.
const underlayMTU = 1550

// underlayHost is one host of a tunnel test.
type underlayHost struct {
	ns   string // the host's namespace
	dev  string // its underlay interface
	addr string // its underlay address
}

// newUnderlay makes count hosts joined by an underlay: a veth pair for two,
// a Linux bridge in a namespace of its own for more. Host i gets underlay
// address 192.168.Y.i+1/24.
func newUnderlay(t *testing.T, n *testNet, count int) []underlayHost {
	t.Helper()
	hosts := make([]underlayHost, count)
	for i := range hosts {
		hosts[i] = underlayHost{ns: n.namespace(t, fmt.Sprintf("h%d", i)), dev: n.name(fmt.Sprintf("u%d", i)),
			addr: fmt.Sprintf("192.168.%d.%d", n.y, i+1)}
	}
	mtu := strconv.Itoa(underlayMTU)
	if count == 2 {
		mustRun(t, "ip", "link", "add", hosts[0].dev, "netns", hosts[0].ns, "mtu", mtu, "type", "veth",
			"peer", "name", hosts[1].dev, "netns", hosts[1].ns, "mtu", mtu)
	} else {
		fabric := n.namespace(t, "fab")
		mustRun(t, "ip", "-n", fabric, "link", "add", "fabric", "type", "bridge")
		mustRun(t, "ip", "-n", fabric, "link", "set", "fabric", "up")
		for i, h := range hosts {
			port := fmt.Sprintf("f%d", i)
			mustRun(t, "ip", "link", "add", port, "netns", fabric, "mtu", mtu, "type", "veth", "peer", "name", h.dev, "netns", h.ns, "mtu", mtu)
			mustRun(t, "ip", "-n", fabric, "link", "set", port, "master", "fabric", "up")
		}
	}
	for _, h := range hosts {
		mustRun(t, "ip", "-n", h.ns, "addr", "add", h.addr+"/24", "dev", h.dev)
		mustRun(t, "ip", "-n", h.ns, "link", "set", h.dev, "up")
		// The kernel leaves the checksums of what it sends over a veth
		// to be filled in by a NIC that is not there; an XDP program on
		// the other end sees them unfilled. (On a real underlay the NIC
		// fills them in.) The same holds for the ports' veths. GRO is
		// left off, as a veth has it: xswitch turns it on at its
		// underlay's peer, which must poll with NAPI, as every NIC does,
		// to take the frames the fast path redirects into the underlay.
		mustRun(t, "ip", "netns", "exec", h.ns, "ethtool", "-K", h.dev, "tx", "off")
	}
	return hosts
}

// kernelVXLAN makes h forward VNI vni to remote with the kernel's vxlan
// device, bridged to a new namespace (suffix) whose eth0 has address
// addr/24, as a Linux host would; it returns that namespace.
func kernelVXLAN(t *testing.T, n *testNet, h underlayHost, remote string, vni int, suffix, addr string) string {
	t.Helper()
	ns := n.namespace(t, suffix)
	br, vx, vm := "br"+suffix, "vx"+suffix, "vm"+suffix
	mustRun(t, "ip", "-n", h.ns, "link", "add", br, "type", "bridge")
	mustRun(t, "ip", "-n", h.ns, "link", "add", vx, "type", "vxlan", "id", strconv.Itoa(vni), "local", h.addr, "remote", remote,
		"dstport", "4789", "dev", h.dev)
	mustRun(t, "ip", "-n", h.ns, "link", "add", vm, "type", "veth", "peer", "name", "eth0", "netns", ns)
	for _, dev := range []string{vx, vm} {
		mustRun(t, "ip", "-n", h.ns, "link", "set", dev, "master", br, "up")
	}
	mustRun(t, "ip", "-n", h.ns, "link", "set", br, "up")
	mustRun(t, "ip", "-n", ns, "addr", "add", addr+"/24", "dev", "eth0")
	mustRun(t, "ip", "-n", ns, "link", "set", "eth0", "up")
	return ns
}

// xswitchHost runs a daemon on h with bridge br and a port into a new
// namespace (suffix) whose eth0 has address addr/24; it returns the daemon
// and that namespace.
func xswitchHost(t *testing.T, n *testNet, h underlayHost, br, suffix, addr string, portArgs ...string) (*daemon, string) {
	t.Helper()
	d := startDaemonIn(t, h.ns)
	d.x(t, "add-br", br)
	ns := n.namespace(t, suffix)
	d.x(t, append([]string{"add-port", br, "vm" + suffix, "--netns", ns, "--address", addr + "/24"}, portArgs...)...)
	return d, ns
}

// underlayDrops are the drops of a tunnel's underlay, from dump-ports.
var underlayDropsLine = regexp.MustCompile(`underlay \S+ rx drops (.*)`)

func underlayDrops(t testing.TB, d *daemon, br string) map[string]uint64 {
	t.Helper()
	out := d.x(t, "dump-ports", br)
	m := underlayDropsLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("dump-ports %s shows no underlay drops:\n%s", br, out)
	}
	drops := map[string]uint64{}
	for _, kv := range strings.Split(m[1], ", ") {
		k, v, _ := strings.Cut(kv, "=")
		drops[k] = atou(v)
	}
	return drops
}

// tunnelTxDrops are a tunnel port's own drops, from dump-ports.
var tunnelTxLine = regexp.MustCompile(`tunnel tx_oversize=(\d+) .*tx_no_route=(\d+)`)

func tunnelTxOversize(t testing.TB, d *daemon, br string) uint64 {
	t.Helper()
	out := d.x(t, "dump-ports", br)
	m := tunnelTxLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("dump-ports %s shows no tunnel drops:\n%s", br, out)
	}
	return atou(m[1])
}

// xswitch's VXLAN port against the kernel's vxlan device on another host:
// ping and TCP both ways, a second VNI out of reach, tun_id in the flows,
// oversize frames counted, a restart, del-port.
func TestVXLANWithTheKernel(t *testing.T) {
	testenv.RequireRoot(t)
	n := newTestNet()
	hosts := newUnderlay(t, n, 2)
	a, b := hosts[0], hosts[1]
	br := n.name("br")
	// A port of MTU 1600 behind xswitch, so that it can send frames too
	// long for the tunnel.
	d, nsA := xswitchHost(t, n, a, br, "a", n.ipv4(1), "--mtu", "1600")
	d.x(t, "add-port", br, "vx1", "--type", "vxlan", "--remote-ip", b.addr, "--key", "42")
	nsB := kernelVXLAN(t, n, b, a.addr, 42, "b", n.ipv4(2))
	nsC := kernelVXLAN(t, n, b, a.addr, 43, "c", n.ipv4(3)) // another VNI: another network

	waitPing(t, nsA, n.ipv4(2), 10*time.Second)
	requirePing(t, nsB, n.ipv4(1), 56)
	requirePing(t, nsA, n.ipv4(2), 1472) // a full 1500-byte inner packet
	transferTCP(t, nsA, nsB, n.ipv4(2), n.ipv4(2), 8<<20)
	transferTCP(t, nsB, nsA, n.ipv4(1), n.ipv4(1), 8<<20)

	// VNI 43's host is out of reach, and what it sends is counted as of a
	// VNI no tunnel carries.
	if _, received, out := ping(t, nsA, n.ipv4(3), 56, 2); received != 0 {
		t.Errorf("VNI 42 reached VNI 43's host:\n%s", out)
	}
	ping(t, nsC, n.ipv4(1), 56, 2)
	if drops := underlayDrops(t, d, br); drops["wrong_key"] == 0 {
		t.Errorf("the frames of VNI 43 were not counted as of a wrong key: %v", drops)
	}

	// What the show says of the tunnel, and where NORMAL learned the
	// remote station.
	ports := ofports(t, d, br)
	var tunnelShown map[string]string
	for _, sb := range parseShow(t, d.x(t, "show")) {
		for _, p := range sb.ports {
			if p.name == "vx1" {
				tunnelShown = p.attrs
			}
		}
	}
	macB := nsMAC(t, b.ns, b.dev)
	if want := fmt.Sprintf("vxlan (remote_ip=%s, local_ip=%s, key=42, dst_port=4789)", b.addr, a.addr); tunnelShown["type"] != want {
		t.Errorf("show: vx1's type %q, want %q", tunnelShown["type"], want)
	}
	if want := fmt.Sprintf("from %s via %s at %s", a.addr, b.addr, macB); tunnelShown["route"] != want {
		t.Errorf("show: vx1's route %q, want %q", tunnelShown["route"], want)
	}
	if !strings.HasPrefix(tunnelShown["underlay"], a.dev+" ") || tunnelShown["mtu"] != strconv.Itoa(underlayMTU-50) {
		t.Errorf("show: vx1's underlay %q and mtu %q, want %s and %d", tunnelShown["underlay"], tunnelShown["mtu"], a.dev, underlayMTU-50)
	}
	var shown jsonShow
	d.xJSON(t, &shown, "show")
	for _, p := range shown.Bridges[0].Ports {
		if p.Name != "vx1" {
			continue
		}
		if p.PortType != "vxlan" || p.RemoteIP != b.addr || p.Key != "42" || p.Tunnel == nil ||
			p.Tunnel.Underlay != a.dev || p.Tunnel.NextHopMAC != macB || p.Tunnel.LocalIP != a.addr {
			t.Errorf("show --format json: vx1 is %+v, tunnel %+v", p, p.Tunnel)
		}
	}
	var dumped jsonDumpPorts
	d.xJSON(t, &dumped, "dump-ports", br, "vx1")
	if len(dumped.Ports) != 1 || dumped.Ports[0].Tunnel == nil || dumped.Ports[0].Tunnel.UnderlayDrops.WrongKey == 0 {
		t.Errorf("dump-ports --format json: vx1's tunnel drops missing: %+v", dumped.Ports)
	}
	vmB := nsMAC(t, nsB, "eth0")
	learned := false
	for _, e := range fdbShow(t, d, br) {
		learned = learned || e.mac == vmB && e.port == ports["vx1"]
	}
	if !learned {
		t.Errorf("fdb-show: %s not learned on vx1 (port %d)", vmB, ports["vx1"])
	}

	// The tunnel's fields in the flows: a rule that counts VNI 42 from b,
	// and one that drops its echo replies.
	d.x(t, "add-flow", br, fmt.Sprintf("priority=100,in_port=vx1,tun_id=42,tun_src=%s,tun_dst=%s,actions=NORMAL", b.addr, a.addr))
	requirePing(t, nsA, n.ipv4(2), 56)
	if got := flowPackets(t, d, br, "tun_id=0x2a"); got < 3 {
		t.Errorf("the tun_id=42 rule counted %d packets, want the 3 echo replies at least", got)
	}
	d.x(t, "add-flow", br, "priority=200,tun_id=42,icmp,icmp_type=0,actions=drop")
	if _, received, out := ping(t, nsA, n.ipv4(2), 56, 2); received != 0 {
		t.Errorf("echo replies from VNI 42 passed a rule that drops them:\n%s", out)
	}
	d.x(t, "del-flows", br, "tun_id=42,icmp,icmp_type=0")
	requirePing(t, nsA, n.ipv4(2), 56)

	// A frame longer than the tunnel carries is dropped and counted.
	before := tunnelTxOversize(t, d, br)
	if _, received, _ := ping(t, nsA, n.ipv4(2), 1500, 2); received != 0 {
		t.Errorf("a 1528-byte packet crossed a tunnel of MTU %d", underlayMTU-50)
	}
	if after := tunnelTxOversize(t, d, br); after < before+2 {
		t.Errorf("tunnel tx_oversize went from %d to %d, want 2 more", before, after)
	}

	// The tunnel is saved with the rest, and comes back after a restart.
	d.stop(t, syscall.SIGTERM)
	d.start(t)
	waitPing(t, nsA, n.ipv4(2), 10*time.Second)

	// del-port takes the underlay's program off its interface.
	d.x(t, "del-port", br, "vx1")
	if _, received, _ := ping(t, nsA, n.ipv4(2), 56, 1); received != 0 {
		t.Error("a ping crossed a deleted tunnel")
	}
	if out := mustRun(t, "ip", "-n", a.ns, "-d", "link", "show", "dev", a.dev); xdpInIPLink.MatchString(out) {
		t.Errorf("the underlay %s keeps an XDP program after its last tunnel left:\n%s", a.dev, out)
	}
	// The host's own traffic on the underlay never stopped.
	requirePing(t, a.ns, b.addr, 56)
}

// With the fast path, a flow through a tunnel runs in the kernel both
// ways once its first frames went through user space: pushed by the
// port's XDP program, popped by the underlay's. The counters still count
// every frame.
func TestVXLANFastPath(t *testing.T) {
	testenv.RequireRoot(t)
	requireFastPath(t)
	n := newTestNet()
	hosts := newUnderlay(t, n, 2)
	a, b := hosts[0], hosts[1]
	br := n.name("br")
	d, nsA := xswitchHost(t, n, a, br, "a", n.ipv4(1))
	d.x(t, "add-port", br, "vx1", "--type", "vxlan", "--remote-ip", b.addr, "--key", "42")
	nsB := kernelVXLAN(t, n, b, a.addr, 42, "b", n.ipv4(2))
	waitPing(t, nsA, n.ipv4(2), 10*time.Second)
	for _, p := range parseShow(t, d.x(t, "show"))[0].ports {
		if p.attrs["fastpath"] != "on" {
			t.Fatalf("show: port %s fastpath %q, want on", p.name, p.attrs["fastpath"])
		}
	}
	ports := ofports(t, d, br)
	before := dumpPorts(t, d, br)
	carried := kernelCarried(t, d, br)
	const flood = 2000
	pingFlood(t, nsA, n.ipv4(2), flood)
	if got := kernelCarried(t, d, br) - carried; got < flood {
		t.Errorf("the kernel carried %d of the %d echo requests and their replies", got, 2*flood)
	}
	dump := d.x(t, "dump-fastpath", br)
	if !strings.Contains(dump, "tnl_push(tnl_port("+strconv.Itoa(ports["vx1"])+"),vni=42),output:"+a.dev) ||
		!strings.Contains(dump, "tun_id=0x2a") {
		t.Errorf("dump-fastpath shows no entry into the tunnel and none out of it:\n%s", dump)
	}
	after := dumpPorts(t, d, br)
	tun := after[ports["vx1"]]
	if tun.txPkts-before[ports["vx1"]].txPkts < flood || tun.rxPkts-before[ports["vx1"]].rxPkts < flood {
		t.Errorf("vx1 counted %d frames sent and %d received during a flood of %d each way",
			tun.txPkts-before[ports["vx1"]].txPkts, tun.rxPkts-before[ports["vx1"]].rxPkts, flood)
	}
	transferTCP(t, nsA, nsB, n.ipv4(2), n.ipv4(2), 32<<20)
	transferTCP(t, nsB, nsA, n.ipv4(1), n.ipv4(1), 32<<20)

	// The next hop forgotten and learned again: for a moment the remote
	// cannot be reached (the frames sent then are dropped and counted as
	// tx_no_route: the daemon does not queue them as the kernel's ARP
	// does), then the kernel carries the flows again, with the headers as
	// they are now.
	mustRun(t, "ip", "-n", a.ns, "neigh", "flush", "dev", a.dev)
	waitPing(t, nsA, n.ipv4(2), 10*time.Second)
	carried = kernelCarried(t, d, br)
	r := run(t, "ip", "netns", "exec", nsA, "ping", "-n", "-q", "-f", "-c", strconv.Itoa(flood), "-W", "1", n.ipv4(2))
	if m := pingSummary.FindStringSubmatch(r.stdout); m == nil || atou(m[2]) < flood*9/10 {
		t.Fatalf("ping -f after the next hop was learned again:\n%s%s", r.stdout, r.stderr)
	}
	if got := kernelCarried(t, d, br) - carried; got < flood {
		t.Errorf("after the next hop was learned again, the kernel carried %d of %d frames", got, 2*flood)
	}
}

// Two xswitch hosts joined by VXLAN: NORMAL learns each side's stations
// on the tunnel port, and ping and TCP cross both ways.
func TestVXLANBetweenXswitches(t *testing.T) {
	testenv.RequireRoot(t)
	n := newTestNet()
	hosts := newUnderlay(t, n, 2)
	a, b := hosts[0], hosts[1]
	br := n.name("br")
	dA, nsA := xswitchHost(t, n, a, br, "a", n.ipv4(1))
	dB, nsB := xswitchHost(t, n, b, br, "b", n.ipv4(2))
	dA.x(t, "add-port", br, "vx1", "--type", "vxlan", "--remote-ip", b.addr, "--key", "7")
	dB.x(t, "add-port", br, "vx1", "--type", "vxlan", "--remote-ip", a.addr, "--key", "7")
	waitPing(t, nsA, n.ipv4(2), 10*time.Second)
	requirePing(t, nsB, n.ipv4(1), 1472)
	transferTCP(t, nsA, nsB, n.ipv4(2), n.ipv4(2), 8<<20)
	transferTCP(t, nsB, nsA, n.ipv4(1), n.ipv4(1), 8<<20)
	for _, side := range []struct {
		d      *daemon
		remote string // the namespace behind the other host
	}{{dA, nsB}, {dB, nsA}} {
		mac := nsMAC(t, side.remote, "eth0")
		tunnel := ofports(t, side.d, br)["vx1"]
		learned := false
		for _, e := range fdbShow(t, side.d, br) {
			learned = learned || e.mac == mac && e.port == tunnel
		}
		if !learned {
			t.Errorf("fdb-show: %s, behind the other host, not learned on the tunnel (port %d)", mac, tunnel)
		}
	}
}

// Geneve between xswitches, one side's key flow: the flows choose the VNI
// a frame leaves with and match the one it came with.
func TestGeneveKeyFlowBetweenXswitches(t *testing.T) {
	testenv.RequireRoot(t)
	n := newTestNet()
	hosts := newUnderlay(t, n, 2)
	a, b := hosts[0], hosts[1]
	br := n.name("br")
	dA, nsA := xswitchHost(t, n, a, br, "a", n.ipv4(1))
	dB, nsB := xswitchHost(t, n, b, br, "b", n.ipv4(2))
	dA.x(t, "add-port", br, "gn1", "--type", "geneve", "--remote-ip", b.addr, "--key", "flow")
	dB.x(t, "add-port", br, "gn1", "--type", "geneve", "--remote-ip", a.addr, "--key", "5000")
	dA.x(t, "del-flows", br)
	dA.x(t, "add-flow", br, "in_port=vma,actions=set_tunnel:5000,output:gn1")
	dA.x(t, "add-flow", br, "in_port=gn1,tun_id=5000,actions=output:vma")
	waitPing(t, nsA, n.ipv4(2), 10*time.Second)
	transferTCP(t, nsB, nsA, n.ipv4(1), n.ipv4(1), 8<<20)
	// Another VNI from b's side is dropped by A's tables.
	dA.x(t, "mod-flows", br, "in_port=vma,actions=set_tunnel:5001,output:gn1")
	if _, received, out := ping(t, nsA, n.ipv4(2), 56, 2); received != 0 {
		t.Errorf("VNI 5001 reached a tunnel that takes 5000 only:\n%s", out)
	}
	if drops := underlayDrops(t, dB, br); drops["wrong_key"] < 2 {
		t.Errorf("b's underlay counted %d frames of a wrong key, want the 2 echo requests at least", drops["wrong_key"])
	}
}

// Three xswitch hosts in a full mesh of tunnels: every pair reaches each
// other, and a broadcast crosses each tunnel once, never looping (split
// horizon).
func TestVXLANFullMeshHasNoLoops(t *testing.T) {
	testenv.RequireRoot(t)
	n := newTestNet()
	hosts := newUnderlay(t, n, 3)
	br := n.name("br")
	var ds []*daemon
	var nss []string
	for i, h := range hosts {
		d, ns := xswitchHost(t, n, h, br, fmt.Sprintf("v%d", i), n.ipv4(i+1))
		for j, other := range hosts {
			if j != i {
				d.x(t, "add-port", br, fmt.Sprintf("vx%d", j), "--type", "vxlan", "--remote-ip", other.addr, "--key", "100")
			}
		}
		ds, nss = append(ds, d), append(nss, ns)
	}
	for i := range hosts {
		for j := range hosts {
			if i != j {
				waitPing(t, nss[i], n.ipv4(j+1), 10*time.Second)
			}
		}
	}
	tunnelRx := func() uint64 {
		var sum uint64
		for _, d := range ds {
			ports := ofports(t, d, br)
			counters := dumpPorts(t, d, br)
			for name, ofport := range ports {
				if strings.HasPrefix(name, "vx") {
					sum += counters[ofport].rxPkts
				}
			}
		}
		return sum
	}
	before := tunnelRx()
	// Three broadcast echo requests from the first host: each reaches the
	// two others over one tunnel apiece. A loop would bring thousands.
	run(t, "ip", "netns", "exec", nss[0], "ping", "-b", "-c", "3", "-i", "0.2", "-W", "1", fmt.Sprintf("10.%d.%d.255", n.x, n.y))
	time.Sleep(time.Second)
	if got := tunnelRx() - before; got < 6 || got > 30 {
		t.Errorf("three broadcasts brought %d frames in on the tunnels, want 6 (and their answers, at most a few more)", got)
	}
	// Each host learned each other's station on the tunnel to that host.
	for i, d := range ds {
		ports := ofports(t, d, br)
		entries := fdbShow(t, d, br)
		for j := range hosts {
			if j == i {
				continue
			}
			mac, want := nsMAC(t, nss[j], "eth0"), ports[fmt.Sprintf("vx%d", j)]
			found := false
			for _, e := range entries {
				found = found || e.mac == mac && e.port == want
			}
			if !found {
				t.Errorf("host %d: %s not learned on its tunnel to host %d (port %d)", i, mac, j, want)
			}
		}
	}
}

// Bad input on the tunnel's UDP port, sent from the remote host's side
// of the underlay: each kind is counted by its reason, none reaches a
// port, and the tunnel keeps working.
func TestTunnelBadInputIsCountedAndHarmless(t *testing.T) {
	testenv.RequireRoot(t)
	n := newTestNet()
	hosts := newUnderlay(t, n, 2)
	a, b := hosts[0], hosts[1]
	br := n.name("br")
	d, nsA := xswitchHost(t, n, a, br, "a", n.ipv4(1))
	d.x(t, "add-port", br, "vx1", "--type", "vxlan", "--remote-ip", b.addr, "--key", "42")
	kernelVXLAN(t, n, b, a.addr, 42, "b", n.ipv4(2))
	waitPing(t, nsA, n.ipv4(2), 10*time.Second)

	src, _ := net.ParseMAC(nsMAC(t, b.ns, b.dev))
	dst, _ := net.ParseMAC(nsMAC(t, a.ns, a.dev))
	innerFrom := func(src net.HardwareAddr) []byte {
		return serializeLayers(t, &layers.Ethernet{SrcMAC: src, DstMAC: layers.EthernetBroadcast,
			EthernetType: 0x88b5}, gopacket.Payload("an inner frame"))
	}
	// The bad datagrams' inner frames come from badSrc; one good datagram,
	// sent last, from goodSrc shows that the capture would have seen them.
	badSrc, goodSrc := net.HardwareAddr{2, 0, 0, 0, 0, 0x77}, net.HardwareAddr{2, 0, 0, 0, 0, 0x78}
	inner := innerFrom(badSrc)
	vxlan := func(flags byte, vni uint32, inner []byte) []byte {
		return append([]byte{flags, 0, 0, 0, byte(vni >> 16), byte(vni >> 8), byte(vni), 0}, inner...)
	}
	datagram := func(from string, udpPayload []byte, edit func(ip *layers.IPv4)) []byte {
		ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: net.ParseIP(from).To4(), DstIP: net.ParseIP(a.addr).To4()}
		udp := &layers.UDP{SrcPort: 40000, DstPort: 4789}
		udp.SetNetworkLayerForChecksum(ip)
		if edit != nil {
			edit(ip)
		}
		return serializeLayers(t, &layers.Ethernet{SrcMAC: src, DstMAC: dst, EthernetType: layers.EthernetTypeIPv4}, ip, udp, gopacket.Payload(udpPayload))
	}
	patched := func(off int, v uint16) []byte {
		f := datagram(b.addr, vxlan(0x08, 42, inner), nil)
		f[off], f[off+1] = byte(v>>8), byte(v)
		return f
	}
	cases := []struct {
		reason string
		frame  []byte
	}{
		{"bad_header", datagram(b.addr, vxlan(0x00, 42, inner), nil)},         // no I flag
		{"bad_header", datagram(b.addr, []byte{0x08, 0, 0}, nil)},             // shorter than a VXLAN header
		{"short_inner", datagram(b.addr, vxlan(0x08, 42, inner)[:8+10], nil)}, // an inner frame of 10 bytes
		{"bad_outer", patched(14+2, 1500)},                                    // an IPv4 length past the frame
		{"bad_outer", patched(14+20+4, 4)},                                    // a UDP length below its header's
		{"fragment", datagram(b.addr, vxlan(0x08, 42, inner), func(ip *layers.IPv4) { ip.Flags = layers.IPv4MoreFragments })},
		{"unknown_remote", datagram(fmt.Sprintf("192.168.%d.77", n.y), vxlan(0x08, 42, inner), nil)},
		{"wrong_key", datagram(b.addr, vxlan(0x08, 4242, inner), nil)},
	}
	before := underlayDrops(t, d, br)
	capture := startCapture(t, nsA)
	fd, to := packetSocket(t, b.ns, b.dev)
	const copies = 50
	want := map[string]uint64{}
	var frames [][]byte
	for _, c := range cases {
		for range copies {
			frames = append(frames, c.frame)
		}
		want[c.reason] += copies
	}
	if r := sendPaced(fd, to, frames, 16); r.unsent > 0 {
		t.Fatalf("%d of %d bad frames could not be sent", r.unsent, len(frames))
	}
	requirePing(t, nsA, n.ipv4(2), 56)
	good := datagram(b.addr, vxlan(0x08, 42, innerFrom(goodSrc)), nil)
	if r := sendPaced(fd, to, [][]byte{good}, 1); r.unsent > 0 {
		t.Fatal("the good datagram could not be sent")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		after := underlayDrops(t, d, br)
		missing := ""
		for reason, n := range want {
			if got := after[reason] - before[reason]; got != n {
				missing += fmt.Sprintf(" %s=%d (want %d)", reason, got, n)
			}
		}
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the underlay's drops:%s\n%s", missing, d.x(t, "dump-ports", br))
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // for the good frame to cross the namespace's veth
	arrived := capture.stopCapture()
	if got := arrived[badSrc.String()]; got != 0 {
		t.Errorf("%d of the bad datagrams' inner frames arrived behind the tunnel", got)
	}
	if got := arrived[goodSrc.String()]; got != 1 {
		t.Errorf("the good datagram's inner frame arrived %d times behind the tunnel, want once", got)
	}
	if fdb := d.x(t, "fdb-show", br); strings.Contains(fdb, badSrc.String()) {
		t.Errorf("the bad datagrams' inner source was learned:\n%s", fdb)
	}
}

func serializeLayers(t testing.TB, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(buf.Bytes())
}

// A tunnel follows its underlay: restored without a route to its remote
// it is down and says why, and comes up when the route does; when the
// underlay interface goes away its tunnels go down, and come up again
// with a new one.
func TestTunnelFollowsItsUnderlay(t *testing.T) {
	testenv.RequireRoot(t)
	n := newTestNet()
	hosts := newUnderlay(t, n, 2)
	a, b := hosts[0], hosts[1]
	br := n.name("br")
	dA, nsA := xswitchHost(t, n, a, br, "a", n.ipv4(1))
	dB, _ := xswitchHost(t, n, b, br, "b", n.ipv4(2))
	dA.x(t, "add-port", br, "vx1", "--type", "vxlan", "--remote-ip", b.addr)
	dB.x(t, "add-port", br, "vx1", "--type", "vxlan", "--remote-ip", a.addr)
	waitPing(t, nsA, n.ipv4(2), 10*time.Second)
	state := func(d *daemon) string {
		for _, p := range parseShow(t, d.x(t, "show"))[0].ports {
			if p.name == "vx1" {
				return p.attrs["state"]
			}
		}
		t.Fatal("show has no vx1")
		return ""
	}
	waitState := func(d *daemon, prefix string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !strings.HasPrefix(state(d), prefix) {
			if time.Now().After(deadline) {
				t.Fatalf("vx1's state %q, want %s...\n%s", state(d), prefix, d.x(t, "show"))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// Restored with no route to the remote: down, saying so; up with it.
	dA.stop(t, syscall.SIGTERM)
	mustRun(t, "ip", "-n", a.ns, "addr", "flush", "dev", a.dev)
	dA.start(t)
	waitState(dA, "down (no route to "+b.addr)
	mustRun(t, "ip", "-n", a.ns, "addr", "add", a.addr+"/24", "dev", a.dev)
	waitState(dA, "up")
	waitPing(t, nsA, n.ipv4(2), 10*time.Second)

	// The underlay goes away, and another comes.
	mustRun(t, "ip", "-n", a.ns, "link", "del", a.dev)
	// Down because the underlay vanished, then because, without it, the
	// remote has no route.
	waitState(dA, "down (")
	waitState(dB, "down (")
	mtu := strconv.Itoa(underlayMTU)
	mustRun(t, "ip", "link", "add", a.dev, "netns", a.ns, "mtu", mtu, "type", "veth", "peer", "name", b.dev, "netns", b.ns, "mtu", mtu)
	for _, h := range hosts {
		mustRun(t, "ip", "-n", h.ns, "addr", "add", h.addr+"/24", "dev", h.dev)
		mustRun(t, "ip", "-n", h.ns, "link", "set", h.dev, "up")
		mustRun(t, "ip", "netns", "exec", h.ns, "ethtool", "-K", h.dev, "tx", "off")
	}
	waitState(dA, "up")
	waitState(dB, "up")
	waitPing(t, nsA, n.ipv4(2), 10*time.Second)
}

// xswitch's Geneve port against Open vSwitch's userspace datapath on the
// other host (this kernel has no geneve module, so OVS is the peer):
// ping and TCP both ways, VNI 5000 in both datapaths, and OVS's own
// datapath pushing and popping Geneve.
func TestGeneveWithOVS(t *testing.T) {
	testenv.RequireRoot(t)
	if _, err := exec.LookPath("ovs-vswitchd"); err != nil {
		t.Fatal("Open vSwitch is not installed (test/deps installs it): it is the Geneve peer")
	}
	n := newTestNet()
	hosts := newUnderlay(t, n, 2)
	a, b := hosts[0], hosts[1]
	br := n.name("br")
	d, nsA := xswitchHost(t, n, a, br, "a", n.ipv4(1))
	d.x(t, "add-port", br, "gn1", "--type", "geneve", "--remote-ip", b.addr, "--key", "5000")

	// Host B: a namespace behind OVS's br-int, by a veth whose switch end
	// OVS opens as an afxdp port.
	nsB := n.namespace(t, "b")
	mustRun(t, "ip", "link", "add", "vmb", "netns", b.ns, "type", "veth", "peer", "name", "eth0", "netns", nsB)
	mustRun(t, "ip", "-n", b.ns, "link", "set", "vmb", "up")
	mustRun(t, "ip", "-n", nsB, "addr", "add", n.ipv4(2)+"/24", "dev", "eth0")
	mustRun(t, "ip", "-n", nsB, "link", "set", "eth0", "up")
	mustRun(t, "ip", "netns", "exec", nsB, "ethtool", "-K", "eth0", "tx", "off")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ovs, err := bench.StartOVSTunnelHost(ctx, bench.OVSTunnelHostConfig{Netns: b.ns, Underlay: b.dev, UnderlayAddr: b.addr + "/24",
		Type: bench.TunnelTypeGeneve, Remote: a.addr, Key: "5000", InnerPort: "vmb", Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ovs.Close(); err != nil {
			t.Error(err)
		}
	})
	if err := ovs.ResolveRemote(ctx); err != nil {
		t.Fatal(err)
	}

	waitPing(t, nsA, n.ipv4(2), 15*time.Second)
	requirePing(t, nsB, n.ipv4(1), 1400)
	transferTCP(t, nsA, nsB, n.ipv4(2), n.ipv4(2), 8<<20)
	transferTCP(t, nsB, nsA, n.ipv4(1), n.ipv4(1), 8<<20)

	d.x(t, "add-flow", br, "priority=100,in_port=gn1,tun_id=5000,actions=NORMAL")
	requirePing(t, nsA, n.ipv4(2), 56)
	if got := flowPackets(t, d, br, "tun_id=0x1388"); got < 3 {
		t.Errorf("the tun_id=5000 rule counted %d packets from OVS, want the 3 echo replies at least", got)
	}
	flows, err := ovs.Appctl(ctx, "dpctl/dump-flows")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(flows, "geneve(vni=0x1388)") || !strings.Contains(flows, "tnl_pop(") {
		t.Errorf("OVS's datapath flows lack a Geneve push of VNI 5000 or a pop:\n%s", flows)
	}
	if drops := underlayDrops(t, d, br); drops["bad_header"]+drops["critical_option"]+drops["wrong_key"] != 0 {
		t.Errorf("xswitch refused some of what OVS sent: %v", drops)
	}
}
