package test

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/xswitch/xswitch/header"
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
	onTheWire(t, func(t *testing.T, w *wire) {
		rewritten, passed, dropped := madeUp(1), madeUp(2), madeUp(3)
		w.addFlows(t, fmt.Sprintf(`priority=100,in_port=%[1]d,arp,arp_sha=%[3]s,arp_op=1 actions=set_field:2->arp_op,set_field:02:bb:00:00:00:09->arp_tha,load:0xc0000263->NXM_OF_ARP_TPA[],output:%[2]d
priority=100,in_port=%[1]d,arp,arp_sha=%[4]s actions=output:%[2]d
priority=90,in_port=%[1]d,arp,arp_tha=02:cc:00:00:00:00/ff:ff:00:00:00:00 actions=drop
priority=0 actions=NORMAL
`, w.inA, w.inB, rewritten, passed))
		spa, tpa := [4]byte{10, 99, 0, 1}, [4]byte{10, 99, 0, 2}
		send := map[string][]byte{
			"rewritten": arpFrame(w.bMAC, rewritten, 1, make(net.HardwareAddr, 6), spa, tpa),
			"passed":    arpFrame(w.bMAC, passed, 1, net.HardwareAddr{2, 0xcc, 0, 0, 0, 5}, spa, tpa),
			"dropped":   arpFrame(w.bMAC, dropped, 2, net.HardwareAddr{2, 0xcc, 0, 0, 0, 5}, spa, tpa),
		}
		want := map[string][]byte{
			"rewritten": arpFrame(w.bMAC, rewritten, 2, net.HardwareAddr{2, 0xbb, 0, 0, 0, 9}, spa, [4]byte{192, 0, 2, 99}),
			"passed":    send["passed"],
		}
		var carried0 uint64
		if w.fastPath {
			carried0 = kernelCarried(t, w.d, w.br)
		}
		stationFrames(t, w.a.ns, w.b.ns, []string{"rewritten", "passed", "dropped"}, send, want)
		if w.fastPath {
			if carried := kernelCarried(t, w.d, w.br) - carried0; carried < 10 {
				t.Errorf("the fast path carried %d frames, want most of the 20 that only matched on arp_sha", carried)
			}
			if fp := w.d.x(t, "dump-fastpath", w.br); !strings.Contains(fp, "arp") {
				t.Errorf("dump-fastpath shows no ARP flow:\n%s", fp)
			}
		}
	})
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
	tcp := []byte{0x0f, 0xa0, 0x13, 0x88, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0}
	data := []byte("a TCP segment behind IPv6 extension headers")
	hopTo := func(next uint8) []byte { return []byte{next, 0, 1, 4, 0, 0, 0, 0} } // one PadN
	onTheWire(t, func(t *testing.T, w *wire) {
		// Only the made-up stations' packets: the namespaces' own
		// (neighbour and router solicitations) take the last rule.
		w.addFlows(t, fmt.Sprintf(`priority=100,in_port=%[1]d,%[3]s,ipv6_exthdr=0x44 actions=output:%[2]d
priority=100,in_port=%[1]d,%[3]s,ipv6_exthdr=+esp actions=output:%[2]d
priority=100,in_port=%[1]d,%[3]s,ipv6_exthdr=+unseq actions=drop
priority=100,in_port=%[1]d,%[3]s,ipv6_exthdr=0 actions=drop
priority=0 actions=NORMAL
`, w.inA, w.inB, "ipv6,dl_src=02:aa:00:00:00:00/ff:ff:ff:ff:ff:00"))
		names := []string{"hop-auth", "esp", "unseq", "none"}
		send := map[string][]byte{
			"hop-auth": ipv6Frame(w.bMAC, madeUp(1), header.ProtoIPv6HopByHop, hopTo(header.ProtoAH),
				[]byte{header.ProtoTCP, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, tcp, data),
			"esp":   ipv6Frame(w.bMAC, madeUp(2), header.ProtoESP, []byte{0, 0, 1, 0, 0, 0, 0, 1}, data),
			"unseq": ipv6Frame(w.bMAC, madeUp(3), header.ProtoIPv6Routing, []byte{header.ProtoIPv6HopByHop, 0, 0, 0, 0, 0, 0, 0}, hopTo(header.ProtoTCP), tcp, data),
			"none":  ipv6Frame(w.bMAC, madeUp(4), header.ProtoTCP, tcp, data),
		}
		var carried0 uint64
		if w.fastPath {
			carried0 = kernelCarried(t, w.d, w.br)
		}
		stationFrames(t, w.a.ns, w.b.ns, names, send, map[string][]byte{"hop-auth": send["hop-auth"], "esp": send["esp"]})
		for _, rule := range []string{"ipv6_exthdr=auth|hop", "ipv6_exthdr=+esp", "ipv6_exthdr=+unseq", "ipv6_exthdr=0 "} {
			if got := flowPackets(t, w.d, w.br, rule); got != 20 {
				t.Errorf("the rule of %s counted %d packets, want 20", rule, got)
			}
		}
		if w.fastPath {
			if carried := kernelCarried(t, w.d, w.br) - carried0; carried < 20 {
				t.Errorf("the fast path carried %d packets, want most of the 40 ESP ones and those without extension headers", carried)
			}
		}
	})
}
