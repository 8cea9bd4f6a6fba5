package test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/internal/netns"
	"github.com/xswitch/xswitch/internal/testenv"
)

// addVLANPort is addNSPort with the port's address (none when cidr is
// empty) and add-port flags of the caller's choosing.
func addVLANPort(t testing.TB, d *daemon, n *testNet, br string, i int, cidr string, flags ...string) nsPort {
	t.Helper()
	p := nsPort{name: n.name(fmt.Sprintf("p%d", i)), ns: n.namespace(t, fmt.Sprintf("n%d", i))}
	p.addr, _, _ = strings.Cut(cidr, "/")
	deleteLinkAtCleanup(t, p.name)
	args := []string{"add-port", br, p.name, "--netns", p.ns}
	if cidr != "" {
		args = append(args, "--address", cidr)
	}
	d.x(t, append(args, flags...)...)
	return p
}

// nsRun runs a command inside namespace ns; it must succeed.
func nsRun(t testing.TB, ns string, args ...string) {
	t.Helper()
	mustRun(t, "ip", append([]string{"netns", "exec", ns}, args...)...)
}

// frameCapture counts, from inside a namespace, the frames that arrive on
// its eth0, by source MAC address.
type frameCapture struct {
	fd   int
	done chan map[string]int
	stop chan struct{}
}

// sniffSocket opens an AF_PACKET socket on eth0 inside namespace ns,
// which sees every frame with its VLAN tag, inline or (as the kernel
// receives it) in the auxiliary data, and whose reads time out quickly.
func sniffSocket(t testing.TB, ns string) int {
	t.Helper()
	fd := -1
	err := netns.Do(ns, func() error {
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		proto := htons(unix.ETH_P_ALL)
		if fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(proto)); err != nil {
			return fmt.Errorf("AF_PACKET socket: %w", err)
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifi.Index}); err != nil {
			return fmt.Errorf("binding to eth0: %w", err)
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_AUXDATA, 1); err != nil {
			return fmt.Errorf("PACKET_AUXDATA: %w", err)
		}
		tv := unix.NsecToTimeval(int64(100 * time.Millisecond))
		return unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	})
	if fd >= 0 {
		t.Cleanup(func() { unix.Close(fd) })
	}
	if err != nil {
		t.Fatalf("packet socket in namespace %s: %v", ns, err)
	}
	return fd
}

// arrival is a frame that a packet socket received, without its VLAN tag.
type arrival struct {
	frame  []byte
	tagged bool
	vid    uint16
}

// receiveFrame reads one frame that arrived on fd (not one the namespace
// sent), or returns false when the read timed out.
func receiveFrame(fd int, buf, oob []byte) (arrival, bool, error) {
	n, oobn, _, from, err := unix.Recvmsg(fd, buf, oob, 0)
	if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
		return arrival{}, false, nil
	}
	if err != nil {
		return arrival{}, false, err
	}
	if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
		return arrival{}, false, nil
	}
	a := arrival{frame: buf[:n]}
	msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_PACKET && m.Header.Type == unix.PACKET_AUXDATA && len(m.Data) >= 18 {
			if binary.NativeEndian.Uint32(m.Data[0:])&unix.TP_STATUS_VLAN_VALID != 0 {
				a.tagged, a.vid = true, binary.NativeEndian.Uint16(m.Data[16:])&0xfff
			}
		}
	}
	if !a.tagged && n >= 18 && binary.BigEndian.Uint16(a.frame[12:]) == 0x8100 {
		a.tagged, a.vid = true, binary.BigEndian.Uint16(a.frame[14:])&0xfff
		a.frame = append(a.frame[:12:12], a.frame[16:]...)
	}
	return a, len(a.frame) >= 14, nil
}

// startCapture counts, by source MAC address, the frames that arrive on
// eth0 in namespace ns until stopCapture.
func startCapture(t testing.TB, ns string) *frameCapture {
	t.Helper()
	c := &frameCapture{fd: sniffSocket(t, ns), done: make(chan map[string]int, 1), stop: make(chan struct{})}
	go func() {
		counts := map[string]int{}
		buf, oob := make([]byte, 65536), make([]byte, 256)
		for {
			select {
			case <-c.stop:
				c.done <- counts
				return
			default:
			}
			a, ok, err := receiveFrame(c.fd, buf, oob)
			if err != nil {
				c.done <- counts
				return
			}
			if ok {
				counts[net.HardwareAddr(a.frame[6:12]).String()]++
			}
		}
	}()
	return c
}

func (c *frameCapture) stopCapture() map[string]int {
	close(c.stop)
	return <-c.done
}

func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}

// noReply pings addr from ns and wants no answer at all.
func noReply(t testing.TB, ns, addr string) {
	t.Helper()
	if _, received, out := ping(t, ns, addr, 56, 2); received != 0 {
		t.Errorf("ping %s from %s across VLANs got %d replies; want none:\n%s", addr, ns, received, out)
	}
}

// station is a made-up host behind a trunk port, that speaks ARP with a
// packet socket: the kernel here may lack 802.1Q (CONFIG_VLAN_8021Q), so a
// namespace cannot have VLAN subinterfaces.
type station struct {
	fd  int
	mac net.HardwareAddr
	ip  net.IP
}

// arpRequest is a broadcast ARP request from s for target, tagged with vid
// unless it is 0.
func (s station) arpRequest(vid uint16, target net.IP) []byte {
	f := append([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, s.mac...)
	if vid != 0 {
		f = binary.BigEndian.AppendUint16(f, 0x8100)
		f = binary.BigEndian.AppendUint16(f, vid)
	}
	f = append(f, 0x08, 0x06, 0, 1, 0x08, 0x00, 6, 4, 0, 1)
	f = append(f, s.mac...)
	f = append(f, s.ip.To4()...)
	f = append(f, 0, 0, 0, 0, 0, 0)
	f = append(f, target.To4()...)
	return append(f, make([]byte, 18)...) // padding to the minimum frame
}

// resolve asks for target's MAC address in VLAN vid (0: untagged) and
// returns the VLAN the answer came back in; ok is false when none came.
func (s station) resolve(t testing.TB, vid uint16, target string) (answerVLAN uint16, ok bool) {
	t.Helper()
	ip := net.ParseIP(target).To4()
	buf, oob := make([]byte, 65536), make([]byte, 256)
	for range 3 {
		if _, err := unix.Write(s.fd, s.arpRequest(vid, ip)); err != nil {
			t.Fatalf("sending an ARP request: %v", err)
		}
		for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
			a, got, err := receiveFrame(s.fd, buf, oob)
			if err != nil {
				t.Fatal(err)
			}
			f := a.frame
			if got && len(f) >= 42 && binary.BigEndian.Uint16(f[12:]) == 0x0806 &&
				binary.BigEndian.Uint16(f[20:]) == 2 && net.IP(f[28:32]).Equal(ip) && net.IP(f[38:42]).Equal(s.ip) {
				return a.vid, true
			}
		}
	}
	return 0, false
}

// wantAnswer wants target to answer s's ARP request in VLAN vid, tagged.
func (s station) wantAnswer(t testing.TB, vid uint16, target string) {
	t.Helper()
	if got, ok := s.resolve(t, vid, target); !ok {
		t.Errorf("no ARP reply from %s to VLAN %d on the trunk", target, vid)
	} else if got != vid {
		t.Errorf("ARP reply from %s came back in VLAN %d on the trunk; want %d", target, got, vid)
	}
}

// wantNoAnswer wants no reply to s's ARP request for target in VLAN vid.
func (s station) wantNoAnswer(t testing.TB, vid uint16, target string) {
	t.Helper()
	if got, ok := s.resolve(t, vid, target); ok {
		t.Errorf("%s answered an ARP request in VLAN %d on the trunk, in VLAN %d; want no answer", target, vid, got)
	}
}

// TestVLANAccessAndTrunkPorts puts two VLANs on one bridge: two access
// ports in each, and a trunk behind which one station in each VLAN speaks
// tagged ARP.
func TestVLANAccessAndTrunkPorts(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	n := newTestNet()
	br := n.name("br")
	d.x(t, "add-br", br)

	// VLAN 10 uses the test's subnet, VLAN 20 another one.
	in10 := func(host int) string { return n.ipv4(host) }
	in20 := func(host int) string { return fmt.Sprintf("10.%d.%d.%d", n.x+1, n.y, host) }
	h1 := addVLANPort(t, d, n, br, 1, in10(1)+"/24", "--tag", "10")
	h2 := addVLANPort(t, d, n, br, 2, in10(2)+"/24", "--tag", "10")
	h3 := addVLANPort(t, d, n, br, 3, in20(3)+"/24", "--tag", "20")
	h4 := addVLANPort(t, d, n, br, 4, in20(4)+"/24", "--tag", "20")
	trunk := addVLANPort(t, d, n, br, 5, "", "--trunks", "10,20")
	// A trap: h3 also answers at an address of VLAN 10's subnet, which
	// VLAN 10's hosts would reach if frames leaked between the VLANs.
	trap := in10(3)
	nsRun(t, h3.ns, "ip", "addr", "add", trap+"/24", "dev", "eth0")
	fd := sniffSocket(t, trunk.ns)
	s10 := station{fd: fd, mac: net.HardwareAddr{0x02, 0, 0x5e, 0x10, 0, 0x05}, ip: net.ParseIP(in10(5)).To4()}
	s20 := station{fd: fd, mac: net.HardwareAddr{0x02, 0, 0x5e, 0x20, 0, 0x05}, ip: net.ParseIP(in20(5)).To4()}

	waitPing(t, h1.ns, h2.addr, 5*time.Second)
	waitPing(t, h3.ns, h4.addr, 5*time.Second)

	// Watch VLAN 20 from h3 while VLAN 10 talks, ARP broadcasts included.
	vlan10MACs := []string{nsMAC(t, h1.ns, "eth0"), nsMAC(t, h2.ns, "eth0"), s10.mac.String()}
	capture := startCapture(t, h3.ns)
	for _, ns := range []string{h1.ns, h2.ns} {
		nsRun(t, ns, "ip", "neigh", "flush", "all")
	}
	requirePing(t, h1.ns, h2.addr, 56)
	requirePing(t, h2.ns, h1.addr, 56)
	noReply(t, h1.ns, trap)
	// h2 answers only an untagged request (its kernel drops tagged ones),
	// and its answer reaches the trunk tagged 10.
	s10.wantAnswer(t, 10, h2.addr)
	s10.wantNoAnswer(t, 10, trap)
	requirePing(t, h4.ns, h3.addr, 56) // VLAN 20 traffic that h3 must see
	seen := capture.stopCapture()
	for _, m := range vlan10MACs {
		if seen[m] != 0 {
			t.Errorf("a VLAN 20 host received %d frames from VLAN 10's %s", seen[m], m)
		}
	}
	if h4MAC := nsMAC(t, h4.ns, "eth0"); seen[h4MAC] == 0 {
		t.Errorf("the capture saw nothing from %s in its own VLAN: it proves nothing (saw %v)", h4MAC, seen)
	}
	s20.wantAnswer(t, 20, h4.addr)
	s20.wantNoAnswer(t, 20, h1.addr)

	// The trunk carries VLANs 10 and 20 only: not untagged frames (VLAN 0)
	// nor VLAN 30. They are dropped, and counted as the trunk's rx drops.
	before := dumpPorts(t, d, br)[5].rxDrop
	s10.wantNoAnswer(t, 0, h1.addr)
	s10.wantNoAnswer(t, 30, h1.addr)
	if after := dumpPorts(t, d, br)[5].rxDrop; after < before+6 {
		t.Errorf("trunk rx drop = %d after 6 frames it does not carry, %d before", after, before)
	}

	checkShownVLANs(t, d, br, map[string]string{
		h1.name: "access 10", h3.name: "access 20", trunk.name: "trunk 10,20",
	})

	// The configuration survives a restart.
	d.stop(t, syscall.SIGTERM)
	d.start(t)
	checkShownVLANs(t, d, br, map[string]string{h2.name: "access 10", trunk.name: "trunk 10,20"})
	waitPing(t, h1.ns, h2.addr, 10*time.Second)
	noReply(t, h1.ns, trap)
	s10.wantAnswer(t, 10, h1.addr)
}

// checkShownVLANs wants show's "vlan:" line of each named port to read as
// given, and show --format json to agree.
func checkShownVLANs(t *testing.T, d *daemon, br string, want map[string]string) {
	t.Helper()
	out := d.x(t, "show")
	for _, b := range parseShow(t, out) {
		if b.name != br {
			continue
		}
		for _, p := range b.ports {
			if w, ok := want[p.name]; ok && p.attrs["vlan"] != w {
				t.Errorf("show: port %s has vlan %q; want %q:\n%s", p.name, p.attrs["vlan"], w, out)
			}
		}
	}
	var shown jsonShow
	js := d.xJSON(t, &shown, "show")
	for _, b := range shown.Bridges {
		for _, p := range b.Ports {
			w, ok := want[p.Name]
			if !ok {
				continue
			}
			trunks := "all"
			if len(p.Trunks) > 0 {
				trunks = strings.Trim(strings.ReplaceAll(fmt.Sprint(p.Trunks), " ", ","), "[]")
			}
			got := fmt.Sprintf("%s %d, trunks %s", p.VLANMode, p.Tag, trunks)
			switch p.VLANMode {
			case "access":
				got = fmt.Sprintf("access %d", p.Tag)
			case "trunk":
				got = "trunk " + trunks
			}
			if got != w {
				t.Errorf("show --format json: port %s is %q; want %q:\n%s", p.Name, got, w, js)
			}
		}
	}
}

// TestVLANFlagsAreValidatedAndShown checks add-port's VLAN flags: what is
// refused leaves nothing behind, what is accepted shows as configured.
func TestVLANFlagsAreValidatedAndShown(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	n := newTestNet()
	br := n.name("br")
	d.x(t, "add-br", br)
	ns := n.namespace(t, "n1")
	bad := n.name("bad")
	deleteLinkAtCleanup(t, bad)
	for _, c := range []struct {
		flags []string
		why   string
	}{
		{[]string{"--tag", "10", "--trunks", "20"}, "trunks"},
		{[]string{"--vlan-mode", "trunk", "--tag", "10"}, "no tag"},
		{[]string{"--vlan-mode", "native-tagged"}, "needs a tag"},
		{[]string{"--vlan-mode", "hybrid"}, "not one of"},
		{[]string{"--tag", "4096"}, "out of range"},
		{[]string{"--trunks", "10,4096"}, "out of range"},
	} {
		stderr, _ := d.xErr(t, append([]string{"add-port", br, bad, "--netns", ns}, c.flags...)...)
		if !strings.Contains(stderr, c.why) {
			t.Errorf("add-port %s: error %q does not say %q", strings.Join(c.flags, " "), stderr, c.why)
		}
		if linkExists(t, bad) {
			t.Fatalf("add-port %s failed but left its veth %s behind", strings.Join(c.flags, " "), bad)
		}
	}
	native := addVLANPort(t, d, n, br, 2, "", "--vlan-mode", "native-untagged", "--tag", "10", "--trunks", "20,30")
	tagged := addVLANPort(t, d, n, br, 3, "", "--vlan-mode", "native-tagged", "--tag", "10")
	plain := addVLANPort(t, d, n, br, 4, "")
	checkShownVLANs(t, d, br, map[string]string{
		native.name: "native-untagged 10, trunks 20,30",
		tagged.name: "native-tagged 10, trunks all",
	})
	for _, b := range parseShow(t, d.x(t, "show")) {
		for _, p := range b.ports {
			if _, ok := p.attrs["vlan"]; ok && p.name == plain.name {
				t.Errorf("port %s without VLAN flags shows a vlan line: %q", p.name, p.attrs["vlan"])
			}
		}
	}

	// trace applies the VLANs as NORMAL does. Ports: 1 native-untagged 10
	// trunks 20,30; 2 native-tagged 10; 3 a trunk of every VLAN.
	for _, c := range []struct{ packet, want string }{
		{"in_port=1,dl_dst=ff:ff:ff:ff:ff:ff", "flooding VLAN 10 to 2,3\n"},
		{"in_port=3,dl_vlan=30,dl_dst=ff:ff:ff:ff:ff:ff", "flooding VLAN 30 to 1,2\n"},
		{"in_port=3,dl_vlan=40,dl_dst=ff:ff:ff:ff:ff:ff", "flooding VLAN 40 to 2\n"},
		{"in_port=3,dl_dst=ff:ff:ff:ff:ff:ff", "Datapath actions: drop"}, // VLAN 0
		{"in_port=1,dl_vlan=40,dl_dst=ff:ff:ff:ff:ff:ff", "does not carry VLAN 40: dropped"},
	} {
		if out := d.x(t, "trace", br, c.packet); !strings.Contains(out, c.want) {
			t.Errorf("trace %s lacks %q:\n%s", c.packet, c.want, out)
		}
	}
}

// TestSetPortVLANColumnsMoveTheRunningPort keeps a fix: `set Port P
// tag=20` was refused, only other_config could be set. OVS's VLAN columns
// of a port (tag, trunks, vlan_mode) now change with set, add, remove and
// clear, move the running port at once, past the decisions that the
// forwarder and the fast path cached for it, and stay across a restart.
func TestSetPortVLANColumnsMoveTheRunningPort(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	n := newTestNet()
	br := n.name("br")
	d.x(t, "add-br", br)
	// One subnet over both VLANs: only the VLANs keep m from h20.
	m := addVLANPort(t, d, n, br, 1, n.ipv4(1)+"/24", "--tag", "10")
	h10 := addVLANPort(t, d, n, br, 2, n.ipv4(2)+"/24", "--tag", "10")
	h20 := addVLANPort(t, d, n, br, 3, n.ipv4(3)+"/24", "--tag", "20")
	waitPing(t, m.ns, h10.addr, 5*time.Second)
	noReply(t, m.ns, h20.addr)
	// m and h10's flow is cached, and with the fast path in the kernel.
	var carried uint64
	if !fastPathOff() {
		carried = kernelCarried(t, d, br)
	}
	pingFlood(t, m.ns, h10.addr, 1000)
	if !fastPathOff() && kernelCarried(t, d, br)-carried < 1000 {
		t.Fatalf("the fast path carried %d of the 2,000 frames between m and h10: the test would not try its entries\n%s",
			kernelCarried(t, d, br)-carried, d.x(t, "dump-fastpath", br))
	}

	get := func(column string) string {
		t.Helper()
		return strings.TrimSpace(d.x(t, "get", "Port", m.name, column))
	}
	d.x(t, "set", "Port", m.name, "tag=20")
	noReply(t, m.ns, h10.addr)
	waitPing(t, m.ns, h20.addr, 5*time.Second)
	requirePing(t, m.ns, h20.addr, 56)
	if got := get("tag"); got != "20" {
		t.Errorf("get Port %s tag: %q; want 20", m.name, got)
	}
	checkShownVLANs(t, d, br, map[string]string{m.name: "access 20"})

	d.stop(t, syscall.SIGTERM)
	d.start(t)
	waitPortState(t, d, br, m.name, "up", 5*time.Second)
	waitPing(t, m.ns, h20.addr, 5*time.Second)
	noReply(t, m.ns, h10.addr)
	if got := get("tag"); got != "20" {
		t.Errorf("after a restart, get Port %s tag: %q; want 20", m.name, got)
	}

	// Back to VLAN 10, as a native-untagged port that also carries VLAN
	// 30 and 40 tagged; then 40 goes, and the port is a plain trunk.
	d.x(t, "set", "Port", m.name, "vlan_mode=native-untagged", "tag=10", "trunks=[30]")
	d.x(t, "add", "Port", m.name, "trunks", "40")
	waitPing(t, m.ns, h10.addr, 5*time.Second)
	noReply(t, m.ns, h20.addr)
	checkShownVLANs(t, d, br, map[string]string{m.name: "native-untagged 10, trunks 30,40"})
	if got := get("trunks") + " " + get("vlan_mode"); got != "[30, 40] native-untagged" {
		t.Errorf("get Port %s trunks vlan_mode: %q; want [30, 40] native-untagged", m.name, got)
	}
	d.x(t, "remove", "Port", m.name, "trunks", "40")
	d.x(t, "clear", "Port", m.name, "tag", "vlan_mode")
	if got := get("tag") + " " + get("trunks") + " " + get("vlan_mode"); got != "[] [30] []" {
		t.Errorf("get Port %s tag trunks vlan_mode: %q; want [] [30] []", m.name, got)
	}
	checkShownVLANs(t, d, br, map[string]string{m.name: "trunk 30"})
	noReply(t, m.ns, h10.addr) // untagged, VLAN 0: a trunk of 30 does not carry it

	// A refused change changes nothing.
	stderr, code := d.xErr(t, "set", "Port", m.name, "tag=20")
	if code != 1 || !strings.Contains(stderr, "an access port carries only its tag: trunks 30 are not allowed") {
		t.Errorf("set tag on a trunk of 30: exit %d, %q", code, stderr)
	}
	if got := get("tag"); got != "[]" {
		t.Errorf("a refused set left tag %q", got)
	}
}
