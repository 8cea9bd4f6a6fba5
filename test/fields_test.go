package test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xswitch/xswitch/header"
	"github.com/xswitch/xswitch/internal/testenv"
)

// arpFrame is an ARP request for IPv4 over Ethernet from sha, padded as
// Ethernet pads it.
func arpFrame(dst, sha net.HardwareAddr, op uint16, tha net.HardwareAddr, spa, tpa [4]byte) []byte {
	a := []byte{0, 1, 8, 0, 6, 4, byte(op >> 8), byte(op)}
	a = append(append(append(append(a, sha...), spa[:]...), tha...), tpa[:]...)
	return ethFrame(dst, sha, header.EtherTypeARP, a)
}

// TestSetFieldRewritesARPOnTheWire: ARP frames from made-up stations
// through rules that match on arp_sha and arp_tha, one of which rewrites
// arp_op, arp_tha and arp_tpa with set_field, arrive byte for byte as the
// rules say, every one of them, with the fast path on (which carries the
// rule that only matches, and leaves the rewrite to user space) and off.
func TestSetFieldRewritesARPOnTheWire(t *testing.T) {
	testenv.RequireRoot(t)
	for _, mode := range []string{"auto", "off"} {
		t.Run("fast path "+mode, func(t *testing.T) {
			r := newRig(t, 2, "--fast-path", mode)
			d, br, a, b := r.d, r.br, r.hosts[0], r.hosts[1]
			nums := ofports(t, d, br)
			bMAC, _ := net.ParseMAC(nsMAC(t, b.ns, "eth0"))
			rewritten, passed, dropped := net.HardwareAddr{2, 0xaa, 0, 0, 0, 1}, net.HardwareAddr{2, 0xaa, 0, 0, 0, 2},
				net.HardwareAddr{2, 0xaa, 0, 0, 0, 3}
			flows := fmt.Sprintf(`priority=100,in_port=%[1]d,arp,arp_sha=%[3]s,arp_op=1 actions=set_field:2->arp_op,set_field:02:bb:00:00:00:09->arp_tha,load:0xc0000263->NXM_OF_ARP_TPA[],output:%[2]d
priority=100,in_port=%[1]d,arp,arp_sha=%[4]s actions=output:%[2]d
priority=90,in_port=%[1]d,arp,arp_tha=02:cc:00:00:00:00/ff:ff:00:00:00:00 actions=drop
priority=0 actions=NORMAL
`, nums[a.name], nums[b.name], rewritten, passed)
			file := filepath.Join(t.TempDir(), "arp.flows")
			if err := os.WriteFile(file, []byte(flows), 0o600); err != nil {
				t.Fatal(err)
			}
			d.x(t, "add-flows", br, file)

			spa, tpa := [4]byte{10, 99, 0, 1}, [4]byte{10, 99, 0, 2}
			send := map[string][]byte{
				"rewritten": arpFrame(bMAC, rewritten, 1, make(net.HardwareAddr, 6), spa, tpa),
				"passed":    arpFrame(bMAC, passed, 1, net.HardwareAddr{2, 0xcc, 0, 0, 0, 5}, spa, tpa),
				"dropped":   arpFrame(bMAC, dropped, 2, net.HardwareAddr{2, 0xcc, 0, 0, 0, 5}, spa, tpa),
			}
			want := map[string][]byte{
				"rewritten": arpFrame(bMAC, rewritten, 2, net.HardwareAddr{2, 0xbb, 0, 0, 0, 9}, spa, [4]byte{192, 0, 2, 99}),
				"passed":    send["passed"],
			}
			fastPath := mode == "auto" && !fastPathOff()
			var carried0 uint64
			if fastPath {
				carried0 = kernelCarried(t, d, br)
			}
			sniff := sniffSocket(t, b.ns)
			out := openRaw(t, a.ns, rewritten)
			const n = 20
			for range n {
				for _, name := range []string{"rewritten", "passed", "dropped"} {
					out.send(t, send[name])
				}
				time.Sleep(5 * time.Millisecond) // the batch installs the fast path's entries
			}
			got := map[string]int{}
			buf, oob := make([]byte, 65536), make([]byte, 256)
			for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline) && got["rewritten"]+got["passed"] < 2*n; {
				arr, ok, err := receiveFrame(sniff, buf, oob)
				if err != nil {
					t.Fatal(err)
				}
				if !ok || !bytes.HasPrefix(arr.frame[6:12], []byte{2, 0xaa}) {
					continue
				}
				name := map[byte]string{1: "rewritten", 2: "passed", 3: "dropped"}[arr.frame[11]]
				got[name]++
				if !bytes.Equal(arr.frame, want[name]) {
					t.Errorf("%s ARP frame arrived as\n%x\nwant\n%x", name, arr.frame, want[name])
				}
			}
			// A straggler of the dropped kind would have come by now.
			if got["rewritten"] != n || got["passed"] != n || got["dropped"] != 0 {
				t.Errorf("arrived %v, want %d rewritten, %d passed, 0 dropped", got, n, n)
			}
			if fastPath {
				if carried := kernelCarried(t, d, br) - carried0; carried < n/2 {
					t.Errorf("the fast path carried %d frames, want most of the %d that only matched on arp_sha", carried, n)
				}
				if fp := d.x(t, "dump-fastpath", br); !strings.Contains(fp, "arp") {
					t.Errorf("dump-fastpath shows no ARP flow:\n%s", fp)
				}
			}
		})
	}
}

// ipv6Frame is an IPv6 packet from src to dst whose fixed header names
// next, with body after that header.
func ipv6Frame(dst, src net.HardwareAddr, next uint8, body ...[]byte) []byte {
	payload := bytes.Join(body, nil)
	ip := []byte{0x60, 0, 0, 0, byte(len(payload) >> 8), byte(len(payload)), next, 64}
	ip = append(ip, net.ParseIP("fd00:99::1")...)
	ip = append(ip, net.ParseIP("fd00:99::2")...)
	return ethFrame(dst, src, header.EtherTypeIPv6, append(ip, payload...))
}

// TestIPv6ExtHdrOnTheWire: IPv6 packets from made-up stations through
// rules on ipv6_exthdr, OpenFlow's pseudo-field of the extension headers a
// packet has: a conformance suite's hop-by-hop and AH packet meets the
// rule of exactly those (ipv6_exthdr=68), an ESP packet the rule of ESP,
// a hop-by-hop header after a routing header the rule of headers out of
// order, and a packet without extension headers the rule of none; each
// arrives, or not, as its rule says, and each rule counts its packets,
// with the fast path on (which carries the ESP packets and those without
// extension headers, and leaves the others to user space) and off.
func TestIPv6ExtHdrOnTheWire(t *testing.T) {
	testenv.RequireRoot(t)
	tcp := []byte{0x0f, 0xa0, 0x13, 0x88, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0}
	data := []byte("a TCP segment behind IPv6 extension headers")
	hopTo := func(next uint8) []byte { return []byte{next, 0, 1, 4, 0, 0, 0, 0} } // one PadN
	for _, mode := range []string{"auto", "off"} {
		t.Run("fast path "+mode, func(t *testing.T) {
			r := newRig(t, 2, "--fast-path", mode)
			d, br, a, b := r.d, r.br, r.hosts[0], r.hosts[1]
			nums := ofports(t, d, br)
			bMAC, _ := net.ParseMAC(nsMAC(t, b.ns, "eth0"))
			station := func(n byte) net.HardwareAddr { return net.HardwareAddr{2, 0xaa, 0, 0, 0, n} }
			flows := fmt.Sprintf(`priority=100,in_port=%[1]d,ipv6,ipv6_exthdr=0x44 actions=output:%[2]d
priority=100,in_port=%[1]d,ipv6,ipv6_exthdr=+esp actions=output:%[2]d
priority=100,in_port=%[1]d,ipv6,ipv6_exthdr=+unseq actions=drop
priority=100,in_port=%[1]d,ipv6,ipv6_exthdr=0 actions=drop
priority=0 actions=NORMAL
`, nums[a.name], nums[b.name])
			file := filepath.Join(t.TempDir(), "exthdr.flows")
			if err := os.WriteFile(file, []byte(flows), 0o600); err != nil {
				t.Fatal(err)
			}
			d.x(t, "add-flows", br, file)
			names := []string{"hop-auth", "esp", "unseq", "none"}
			send := map[string][]byte{
				"hop-auth": ipv6Frame(bMAC, station(1), header.ProtoIPv6HopByHop, hopTo(header.ProtoAH),
					[]byte{header.ProtoTCP, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, tcp, data),
				"esp":   ipv6Frame(bMAC, station(2), header.ProtoESP, []byte{0, 0, 1, 0, 0, 0, 0, 1}, data),
				"unseq": ipv6Frame(bMAC, station(3), header.ProtoIPv6Routing, []byte{header.ProtoIPv6HopByHop, 0, 0, 0, 0, 0, 0, 0}, hopTo(header.ProtoTCP), tcp, data),
				"none":  ipv6Frame(bMAC, station(4), header.ProtoTCP, tcp, data),
			}
			fastPath := mode == "auto" && !fastPathOff()
			var carried0 uint64
			if fastPath {
				carried0 = kernelCarried(t, d, br)
			}
			sniff := sniffSocket(t, b.ns)
			out := openRaw(t, a.ns, station(1))
			const n = 20
			for range n {
				for _, name := range names {
					out.send(t, send[name])
				}
				time.Sleep(5 * time.Millisecond)
			}
			got := map[string]int{}
			buf, oob := make([]byte, 65536), make([]byte, 256)
			for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline) && got["hop-auth"]+got["esp"] < 2*n; {
				arr, ok, err := receiveFrame(sniff, buf, oob)
				if err != nil {
					t.Fatal(err)
				}
				if !ok || !bytes.HasPrefix(arr.frame[6:12], []byte{2, 0xaa}) {
					continue
				}
				name := names[arr.frame[11]-1]
				got[name]++
				if !bytes.Equal(arr.frame, send[name]) {
					t.Errorf("%s packet arrived as\n%x\nwant\n%x", name, arr.frame, send[name])
				}
			}
			// A straggler of the dropped kinds would have come by now.
			if got["hop-auth"] != n || got["esp"] != n || got["unseq"] != 0 || got["none"] != 0 {
				t.Errorf("arrived %v, want %d hop-auth and esp, 0 unseq and none", got, n)
			}
			for _, rule := range []string{"ipv6_exthdr=auth|hop", "ipv6_exthdr=+esp", "ipv6_exthdr=+unseq", "ipv6_exthdr=0 "} {
				if got := flowPackets(t, d, br, rule); got != n {
					t.Errorf("the rule of %s counted %d packets, want %d", rule, got, n)
				}
			}
			if fastPath {
				if carried := kernelCarried(t, d, br) - carried0; carried < n {
					t.Errorf("the fast path carried %d packets, want most of the %d ESP ones and those without extension headers", carried, 2*n)
				}
			}
		})
	}
}
