package test

import (
	"bytes"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/internal/testenv"
)

// Jumbo frames: ports at MTU 9000 carry 8000-byte pings and TCP in
// frames of up to 9014 bytes, which the AF_XDP sockets receive and send
// as chains of descriptors; a port asked to carry more than it can is
// refused or warned about, and what it cannot carry is counted.

const jumboMTU = "9000"

// pingDF pings addr from ns with count requests of size bytes that must
// not be fragmented (ping -M do), and wants every reply.
func pingDF(t testing.TB, ns, addr string, size, count int) {
	t.Helper()
	r := run(t, "ip", "netns", "exec", ns, "ping", "-n", "-M", "do", "-c", strconv.Itoa(count), "-i", "0.2", "-W", "2",
		"-s", strconv.Itoa(size), addr)
	m := pingSummary.FindStringSubmatch(r.stdout)
	if m == nil || m[1] != strconv.Itoa(count) || m[2] != m[1] {
		t.Fatalf("ping -M do -s %d %s from %s: want %d of %d replies:\n%s%s", size, addr, ns, count, count, r.stdout, r.stderr)
	}
}

// nsMTU is the MTU of dev inside namespace ns.
func nsMTU(t testing.TB, ns, dev string) string {
	t.Helper()
	return strings.TrimSpace(mustRun(t, "ip", "netns", "exec", ns, "cat", "/sys/class/net/"+dev+"/mtu"))
}

// shownPortAttrs returns what `xswitch show` printed for port name.
func shownPortAttrs(t testing.TB, d *daemon, name string) map[string]string {
	t.Helper()
	out := d.x(t, "show")
	for _, b := range parseShow(t, out) {
		for _, p := range b.ports {
			if p.name == name {
				return p.attrs
			}
		}
	}
	t.Fatalf("xswitch show: no port %s in:\n%s", name, out)
	return nil
}

// xskOversize is the rx_oversize of every port of br, by OpenFlow port
// number, from dump-ports --format json.
func xskOversize(t testing.TB, d *daemon, br string) map[int]uint64 {
	t.Helper()
	var dump jsonDumpPorts
	d.xJSON(t, &dump, "dump-ports", br)
	out := map[int]uint64{}
	for _, p := range dump.Ports {
		out[p.OFPort] = p.XSK.RxOversize
	}
	return out
}

// TestJumboFramesCrossTheBridge bridges two namespaces with --mtu 9000:
// both ends of each veth get the MTU, which survives a restart that has to
// recreate a pair; 8000-byte pings that may not fragment cross both ways
// with every frame counted in once and out once; and 32 MiB of TCP arrive
// intact in segments longer than one UMEM frame.
func TestJumboFramesCrossTheBridge(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	n := newTestNet()
	br := n.name("br")
	d.x(t, "add-br", br)
	a := addVLANPort(t, d, n, br, 1, n.ipv4(1)+"/24", "--mtu", jumboMTU)
	b := addVLANPort(t, d, n, br, 2, n.ipv4(2)+"/24", "--mtu", jumboMTU)
	for _, p := range []nsPort{a, b} {
		if got := nsMTU(t, p.ns, "eth0"); got != jumboMTU {
			t.Errorf("%s: eth0 in the namespace has MTU %s, want %s", p.name, got, jumboMTU)
		}
		if got := strings.TrimSpace(mustRun(t, "cat", "/sys/class/net/"+p.name+"/mtu")); got != jumboMTU {
			t.Errorf("%s: the switch end has MTU %s, want %s", p.name, got, jumboMTU)
		}
		attrs := shownPortAttrs(t, d, p.name)
		if attrs["mtu"] != jumboMTU || attrs["warning"] != "" || !strings.Contains(attrs["type"], "xdp=native") {
			t.Errorf("show: port %s has mtu %q, type %q, warning %q; want mtu %s, native XDP and no warning",
				p.name, attrs["mtu"], attrs["type"], attrs["warning"], jumboMTU)
		}
	}
	var shown jsonShow
	d.xJSON(t, &shown, "show")
	for _, sb := range shown.Bridges {
		for _, p := range sb.Ports {
			if p.MTU != 9000 || p.MaxFrame < 9018 || p.Warning != "" {
				t.Errorf("show --format json: port %s has mtu %d, max_frame %d, warning %q", p.Name, p.MTU, p.MaxFrame, p.Warning)
			}
		}
	}
	waitPing(t, a.ns, b.addr, 5*time.Second)

	numbers := ofports(t, d, br)
	na, nb := numbers[a.name], numbers[b.name]
	before := dumpPorts(t, d, br)
	const count, size = 3, 8000
	pingDF(t, a.ns, b.addr, size, count)
	pingDF(t, b.ns, a.addr, size, count)
	after := dumpPorts(t, d, br)
	frameLen := uint64(14 + 20 + 8 + size)
	for _, dir := range []struct{ from, to int }{{na, nb}, {nb, na}} {
		rx := after[dir.from].rxPkts - before[dir.from].rxPkts
		rxBytes := after[dir.from].rxBytes - before[dir.from].rxBytes
		tx := after[dir.to].txPkts - before[dir.to].txPkts
		txBytes := after[dir.to].txBytes - before[dir.to].txBytes
		// Two ports: every frame in on one goes out on the other.
		if rx != tx || rxBytes != txBytes || rx < 2*count || rxBytes < 2*count*frameLen {
			t.Errorf("port %d to %d: rx %d frames, %d bytes; tx %d frames, %d bytes; want equal, with %d frames of %d bytes at least",
				dir.from, dir.to, rx, rxBytes, tx, txBytes, 2*count, frameLen)
		}
		if after[dir.from].rxDrop != 0 || after[dir.to].txDrop != 0 {
			t.Errorf("drops: port %d rx %d, port %d tx %d", dir.from, after[dir.from].rxDrop, dir.to, after[dir.to].txDrop)
		}
	}

	before = dumpPorts(t, d, br)
	elapsed := transferTCP(t, a.ns, b.ns, b.addr, b.addr, tcpPayloadSize)
	t.Logf("%d MiB over TCP at MTU %s in %v: %.0f Mbit/s", tcpPayloadSize>>20, jumboMTU, elapsed.Round(time.Millisecond),
		float64(tcpPayloadSize)*8/elapsed.Seconds()/1e6)
	after = dumpPorts(t, d, br)
	frames := after[nb].txPkts - before[nb].txPkts
	bytesOut := after[nb].txBytes - before[nb].txBytes
	if bytesOut < tcpPayloadSize || frames == 0 || bytesOut/frames < 4096 {
		t.Errorf("TCP toward %s: %d bytes in %d frames; want the payload in frames averaging more than a 4 KiB UMEM frame",
			b.name, bytesOut, frames)
	}
	if over := xskOversize(t, d, br); over[na]+over[nb] != 0 {
		t.Errorf("rx_oversize %v, want none", over)
	}

	// The MTU is part of the configuration: a pair that is gone when the
	// daemon starts is recreated with it.
	d.stop(t, syscall.SIGTERM)
	conf, err := os.ReadFile(d.db)
	if err != nil {
		t.Fatal(err)
	}
	if c := strings.Count(string(conf), `"mtu": 9000`); c != 2 {
		t.Errorf("the configuration holds %d \"mtu\": 9000, want 2:\n%s", c, conf)
	}
	mustRun(t, "ip", "link", "del", "dev", a.name)
	d.start(t)
	if got := nsMTU(t, a.ns, "eth0"); got != jumboMTU {
		t.Errorf("recreated %s: eth0 has MTU %s, want %s", a.name, got, jumboMTU)
	}
	waitPing(t, a.ns, b.addr, 10*time.Second)
	pingDF(t, a.ns, b.addr, size, count)
}

// TestJumboFramesVLANPushAndPop sends 8000-byte pings between an access
// port of VLAN 10 and a station behind a trunk, which speaks through a
// packet socket (the kernel here may lack 802.1Q): the request is popped
// on its way to the access port, the reply pushed on its way back, both
// frames longer than one UMEM frame, the reply tagged one longer still.
func TestJumboFramesVLANPushAndPop(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	n := newTestNet()
	br := n.name("br")
	d.x(t, "add-br", br)
	host := addVLANPort(t, d, n, br, 1, n.ipv4(1)+"/24", "--tag", "10", "--mtu", jumboMTU)
	trunk := addVLANPort(t, d, n, br, 2, "", "--trunks", "10", "--mtu", jumboMTU)
	fd := sniffSocket(t, trunk.ns)
	stationMAC := net.HardwareAddr{0x02, 0, 0x5e, 0x10, 0, 0x02}
	stationIP := net.ParseIP(n.ipv4(2)).To4()
	hostIP := net.ParseIP(host.addr).To4()
	hostMAC, err := net.ParseMAC(nsMAC(t, host.ns, "eth0"))
	if err != nil {
		t.Fatal(err)
	}
	nsRun(t, host.ns, "ip", "neigh", "replace", stationIP.String(), "lladdr", stationMAC.String(), "dev", "eth0", "nud", "permanent")

	// Pop: the station's tagged request reaches the host untagged, which
	// answers; push: the answer comes back tagged 10.
	for seq := range uint16(3) {
		payload := make([]byte, 8000)
		for i := range payload {
			payload[i] = byte(i*3 + int(seq))
		}
		req := taggedEchoRequest(t, 10, stationMAC, hostMAC, stationIP, hostIP, seq, payload)
		if _, err := unix.Write(fd, req); err != nil {
			t.Fatalf("send a %d-byte tagged echo request from the trunk: %v", len(req), err)
		}
		reply, vid, ok := awaitEchoReply(t, fd, hostIP, stationIP, seq)
		if !ok {
			t.Fatalf("seq %d: no echo reply from %s reached the trunk", seq, host.addr)
		}
		if vid != 10 || !bytes.Equal(reply.Payload, payload) {
			t.Errorf("seq %d: reply in VLAN %d with %d payload bytes (equal: %v); want VLAN 10 and the 8000 sent",
				seq, vid, len(reply.Payload), bytes.Equal(reply.Payload, payload))
		}
	}

	// Push the other way round: the host's request leaves the trunk tagged.
	requestSeen := make(chan bool, 1)
	go func() { requestSeen <- awaitEchoRequestTagged(fd, hostIP, stationIP, 10, 8000) }()
	run(t, "ip", "netns", "exec", host.ns, "ping", "-n", "-M", "do", "-c", "2", "-i", "0.2", "-W", "1", "-s", "8000", stationIP.String())
	if !<-requestSeen {
		t.Error("the host's 8000-byte echo request did not reach the trunk tagged 10")
	}
}

// taggedEchoRequest is an ICMP echo request tagged with vid.
func taggedEchoRequest(t testing.TB, vid uint16, src, dst net.HardwareAddr, srcIP, dstIP net.IP, seq uint16, payload []byte) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		&layers.Ethernet{SrcMAC: src, DstMAC: dst, EthernetType: layers.EthernetTypeDot1Q},
		&layers.Dot1Q{VLANIdentifier: vid, Type: layers.EthernetTypeIPv4},
		&layers.IPv4{Version: 4, TTL: 64, Flags: layers.IPv4DontFragment, Protocol: layers.IPProtocolICMPv4, SrcIP: srcIP, DstIP: dstIP},
		&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(layers.ICMPv4TypeEchoRequest, 0), Id: 0x7e57, Seq: seq},
		gopacket.Payload(payload),
	)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// awaitEchoReply reads frames arriving on fd for two seconds until the
// echo reply from src to dst with sequence seq comes, and returns it with
// the VID of its tag.
func awaitEchoReply(t testing.TB, fd int, src, dst net.IP, seq uint16) (*layers.ICMPv4, uint16, bool) {
	t.Helper()
	buf, oob := make([]byte, 65536), make([]byte, 256)
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		a, got, err := receiveFrame(fd, buf, oob)
		if err != nil {
			t.Fatal(err)
		}
		if !got {
			continue
		}
		ip, icmp := decodeICMP(a.frame)
		if ip != nil && ip.SrcIP.Equal(src) && ip.DstIP.Equal(dst) &&
			icmp.TypeCode.Type() == layers.ICMPv4TypeEchoReply && icmp.Seq == seq {
			return icmp, a.vid, true
		}
	}
	return nil, 0, false
}

// awaitEchoRequestTagged reports whether an echo request from src to dst
// with size payload bytes arrives on fd tagged vid within two seconds.
func awaitEchoRequestTagged(fd int, src, dst net.IP, vid uint16, size int) bool {
	buf, oob := make([]byte, 65536), make([]byte, 256)
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		a, got, err := receiveFrame(fd, buf, oob)
		if err != nil {
			return false
		}
		if !got {
			continue
		}
		ip, icmp := decodeICMP(a.frame)
		if ip != nil && ip.SrcIP.Equal(src) && ip.DstIP.Equal(dst) && a.tagged && a.vid == vid &&
			icmp.TypeCode.Type() == layers.ICMPv4TypeEchoRequest && len(icmp.Payload) == size {
			return true
		}
	}
	return false
}

// decodeICMP returns the IPv4 and ICMPv4 layers of an untagged frame, or
// nils.
func decodeICMP(frame []byte) (*layers.IPv4, *layers.ICMPv4) {
	pkt := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
	ip, _ := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	icmp, _ := pkt.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4)
	if ip == nil || icmp == nil {
		return nil, nil
	}
	return ip, icmp
}

// TestJumboMTUBeyondThePort asks for an MTU of 12000, more than a port
// carries (9216): copy mode, which insists, refuses it and leaves nothing
// behind; auto mode adds the port with a warning in show and the log, and
// the frames it cannot carry are counted as rx_oversize, not lost without
// a trace.
func TestJumboMTUBeyondThePort(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	n := newTestNet()
	br := n.name("br")
	d.x(t, "add-br", br)
	const big = "12000"

	refused := n.name("p9")
	deleteLinkAtCleanup(t, refused)
	stderr, _ := d.xErr(t, "add-port", br, refused, "--netns", n.namespace(t, "n9"), "--mtu", big, "--mode", "copy")
	if !strings.Contains(stderr, "MTU "+big+" needs frames of up to 12018 bytes") || !strings.Contains(stderr, "rx_oversize") {
		t.Errorf("add-port --mtu %s --mode copy: %q, want the MTU and what the port carries explained", big, stderr)
	}
	if linkExists(t, refused) {
		t.Errorf("the refused add-port left its veth %s behind", refused)
	}

	a := addVLANPort(t, d, n, br, 1, n.ipv4(1)+"/24", "--mtu", big)
	b := addVLANPort(t, d, n, br, 2, n.ipv4(2)+"/24", "--mtu", big)
	attrs := shownPortAttrs(t, d, a.name)
	if attrs["mtu"] != big || !strings.Contains(attrs["warning"], "MTU "+big+" needs frames") {
		t.Errorf("show: port %s has mtu %q, warning %q; want mtu %s and a warning", a.name, attrs["mtu"], attrs["warning"], big)
	}
	if log := d.log(); !strings.Contains(log, "port cannot carry its interface's MTU") {
		t.Errorf("the daemon log does not warn about the MTU:\n%s", log)
	}
	waitPing(t, a.ns, b.addr, 5*time.Second)
	pingDF(t, a.ns, b.addr, 9000-28, 2) // a frame of 9014 bytes still fits

	number := ofports(t, d, br)[a.name]
	const tooLong = 11000
	r := run(t, "ip", "netns", "exec", a.ns, "ping", "-n", "-M", "do", "-c", "3", "-i", "0.2", "-W", "1",
		"-s", strconv.Itoa(tooLong), b.addr)
	if m := pingSummary.FindStringSubmatch(r.stdout); m == nil || m[2] != "0" {
		t.Fatalf("ping -s %d through a port that carries 9234-byte frames got replies:\n%s%s", tooLong, r.stdout, r.stderr)
	}
	deadline := time.Now().Add(5 * time.Second)
	for xskOversize(t, d, br)[number] < 3 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := xskOversize(t, d, br)[number]; got < 3 {
		t.Errorf("rx_oversize of port %s = %d after 3 frames of %d bytes, want 3", a.name, got, tooLong+42)
	}
	line := ""
	for _, l := range strings.Split(d.x(t, "dump-ports", br, a.name), "\n") {
		if strings.Contains(l, "xsk ") {
			line = l
		}
	}
	if !strings.Contains(line, "rx_oversize=") || strings.Contains(line, "rx_oversize=0") {
		t.Errorf("dump-ports %s: xsk line %q, want rx_oversize counted", a.name, line)
	}
	if errs := rxCountersOf(t, d, br)[number].errs; errs < 3 {
		t.Errorf("dump-ports %s: rx errs %d, want the oversize frames counted there too", a.name, errs)
	}
}
