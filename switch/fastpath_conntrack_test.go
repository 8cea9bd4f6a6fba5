package vswitch

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/xswitch/xswitch/conntrack"
)

// tcpSegment is a TCP segment between two stations of the test's
// subnet: 10.0.0.src:sport to 10.0.0.dst:dport (fd00::src to fd00::dst
// with v6), of MAC addresses mac(src) and mac(dst).
type tcpSegment struct {
	v6           bool
	src, dst     byte
	sport, dport uint16
	flags        uint8 // conntrack.TCPSyn and the rest
	seq, ack     uint32
	payload      int
}

func (g tcpSegment) frame(tb testing.TB) []byte {
	tb.Helper()
	tcp := &layers.TCP{SrcPort: layers.TCPPort(g.sport), DstPort: layers.TCPPort(g.dport), Seq: g.seq, Ack: g.ack, Window: 65535,
		SYN: g.flags&conntrack.TCPSyn != 0, ACK: g.flags&conntrack.TCPAck != 0, FIN: g.flags&conntrack.TCPFin != 0,
		RST: g.flags&conntrack.TCPRst != 0, PSH: g.payload > 0}
	return ipFrame(tb, g.v6, g.src, g.dst, tcp, bytes.Repeat([]byte{'x'}, g.payload))
}

// ipFrame is an IP packet of transport header l4 and payload between
// stations src and dst of the test's subnets, as tcpSegment says.
func ipFrame(tb testing.TB, v6 bool, src, dst byte, l4 interface {
	gopacket.SerializableLayer
	SetNetworkLayerForChecksum(gopacket.NetworkLayer) error
}, payload []byte) []byte {
	tb.Helper()
	eth := &layers.Ethernet{SrcMAC: mac(src), DstMAC: mac(dst), EthernetType: layers.EthernetTypeIPv4}
	proto := layers.IPProtocolTCP
	if _, ok := l4.(*layers.UDP); ok {
		proto = layers.IPProtocolUDP
	}
	var ip interface {
		gopacket.NetworkLayer
		gopacket.SerializableLayer
	} = &layers.IPv4{Version: 4, TTL: 64, Protocol: proto, SrcIP: net.IPv4(10, 0, 0, src), DstIP: net.IPv4(10, 0, 0, dst)}
	if v6 {
		eth.EthernetType = layers.EthernetTypeIPv6
		ip = &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: proto, SrcIP: station6(src), DstIP: station6(dst)}
	}
	if err := l4.SetNetworkLayerForChecksum(ip); err != nil {
		tb.Fatal(err)
	}
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, eth, ip, l4, gopacket.Payload(payload)); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// station6 is fd00::n.
func station6(n byte) net.IP { return net.IP{0xfd, 15: n} }

// connTable is a stateful table between a client on port 1 (10.0.0.1)
// and a server on port 2 (10.0.0.2), and where the client's packets
// reach the server, as the server sees them.
type connTable struct {
	name  string
	v6    bool
	flows []string
	// to is the address and port the client connects to; seen, the
	// address the server sees the client by.
	to     byte
	toPort uint16
	seen   byte
}

var connTables = []connTable{
	{name: "firewall", flows: firewall, to: 2, toPort: 80, seen: 1},
	{name: "snat", to: 2, toPort: 80, seen: 240, flows: []string{
		"priority=1,actions=drop",
		"priority=100,in_port=1,ip,actions=ct(commit,zone=5,nat(src=10.0.0.240)),output:2",
		"priority=100,in_port=2,ip,actions=ct(zone=5,nat,table=1)",
		"table=1,priority=100,in_port=2,ct_state=+trk+est,ip,actions=mod_dl_src:02:00:00:00:00:99,output:1",
		"table=1,priority=1,actions=drop",
	}},
	// The rules tell a connection seen one way (+new) from an
	// established one.
	{name: "one way", to: 2, toPort: 80, seen: 1, flows: []string{
		"priority=1,actions=drop",
		"priority=100,in_port=1,ip,actions=ct(commit,table=1)",
		"priority=100,in_port=2,ip,actions=ct(table=1)",
		"table=1,priority=100,in_port=1,ct_state=+trk+new,ip,actions=mod_nw_tos:32,output:2",
		"table=1,priority=100,in_port=1,ct_state=+trk+est,ip,actions=output:2",
		"table=1,priority=100,in_port=2,ct_state=+trk+est,ip,actions=output:1",
		"table=1,priority=1,actions=drop",
	}},
	{name: "firewall6", v6: true, to: 2, toPort: 80, seen: 1, flows: []string{
		"priority=1,actions=drop",
		"priority=100,in_port=1,ipv6,actions=ct(commit),output:2",
		"priority=100,in_port=2,ipv6,actions=ct(table=1)",
		"table=1,priority=100,in_port=2,ct_state=+trk+est,ipv6,actions=dec_ttl,output:1",
		"table=1,priority=1,actions=drop",
	}},
	// IPv6 NAT: the words of an address that change, and a port.
	{name: "snat6", v6: true, to: 2, toPort: 80, seen: 240, flows: []string{
		"priority=1,actions=drop",
		"priority=100,in_port=1,ipv6,actions=ct(commit,zone=5,nat(src=[fd00::f0])),output:2",
		"priority=100,in_port=2,ipv6,actions=ct(zone=5,nat,table=1)",
		"table=1,priority=100,in_port=2,ct_state=+trk+est,ipv6,actions=mod_dl_src:02:00:00:00:00:99,output:1",
		"table=1,priority=1,actions=drop",
	}},
	{name: "dnat6", v6: true, to: 100, toPort: 8080, seen: 1, flows: []string{
		"priority=1,actions=drop",
		"priority=100,in_port=1,ipv6,actions=ct(nat(dst=[fd00::2]:80),commit,table=1)",
		"priority=100,in_port=2,ipv6,actions=ct(nat,table=1)",
		"table=1,priority=100,in_port=1,ct_state=+trk+est,ipv6,actions=output:2",
		"table=1,priority=100,in_port=1,ct_state=+trk+new,ipv6,actions=output:2",
		"table=1,priority=100,in_port=2,ct_state=+trk+est,ipv6,actions=output:1",
		"table=1,priority=1,actions=drop",
	}},
	{name: "dnat", to: 100, toPort: 8080, seen: 1, flows: []string{
		"priority=1,actions=drop",
		"priority=100,in_port=1,ip,actions=ct(nat(dst=10.0.0.2:80),commit,table=1)",
		"priority=100,in_port=2,ip,actions=ct(nat,table=1)",
		"table=1,priority=100,in_port=1,ct_state=+trk+est,ip,actions=output:2",
		"table=1,priority=100,in_port=1,ct_state=+trk+new,ip,actions=output:2",
		"table=1,priority=100,in_port=2,ct_state=+trk+est,ip,actions=output:1",
		"table=1,priority=1,actions=drop",
	}},
}

// TestFastPathCarriesEstablishedConnections is the differential test of
// connections in the kernel: two switches with the same stateful tables
// see the same TCP connections, segment by segment; one forwards all of
// them in user space, the other runs each through the fast path's
// program first (BPF_PROG_RUN), and in user space only what the program
// does not carry. Whatever the program carries (data and acks of
// established connections, NATed), it sends where user space sends it,
// with the same bytes; what it hands over (handshakes, FINs, segments
// out of their windows, resets at wrong sequence numbers) user space
// judges with the state the program moved on, and both switches agree
// on every segment, and on the connections' states at the end.
func TestFastPathCarriesEstablishedConnections(t *testing.T) {
	for _, ct := range connTables {
		t.Run(ct.name, func(t *testing.T) {
			fast := newFastPathBed(t, 64, trunk(), trunk())
			slow := newFastPathBed(t, 64, trunk(), trunk())
			for _, bed := range []*fastPathBed{fast, slow} {
				bed.fp.publish(bed.cls, rules(t, ct.flows...))
			}
			rnd := rand.New(rand.NewPCG(uint64(len(ct.name)), 29))
			carried, handedOver := 0, 0
			send := func(in int, fr []byte, flags uint8, what string) {
				t.Helper()
				k := fast.kernel(t, in, fr)
				var sent [][]byte
				var on []int
				switch {
				case k.redirected:
					sent, on = [][]byte{k.frame}, []int{int(k.slot)}
				case !k.hit:
					sent, on = fast.userSpace(in, bytes.Clone(fr))
				}
				wantSent, wantOn := slow.userSpace(in, bytes.Clone(fr))
				if k.hit {
					carried++
					if flags&(conntrack.TCPSyn|conntrack.TCPFin|conntrack.TCPRst) != 0 {
						t.Errorf("%s: the program carried a segment with SYN, FIN or RST", what)
					}
				} else if k.punted {
					handedOver++
				}
				if !slices.Equal(on, wantOn) || !slices.EqualFunc(sent, wantSent, bytes.Equal) {
					t.Fatalf("%s (carried by the program: %v): sent %x to %v; user space alone sends %x to %v", what, k.hit, sent, on, wantSent, wantOn)
				}
			}
			sendSeg := func(in int, g tcpSegment, what string) {
				t.Helper()
				send(in, g.frame(t), g.flags, what)
			}
			for conn := range 3 {
				cport := uint16(40000 + conn)
				c, s := uint32(1000+conn*7919), uint32(5000+conn*104729)
				out := func(flags uint8, payload int) tcpSegment {
					return tcpSegment{v6: ct.v6, src: 1, dst: ct.to, sport: cport, dport: ct.toPort, flags: flags, seq: c, ack: s, payload: payload}
				}
				back := func(flags uint8, payload int) tcpSegment {
					return tcpSegment{v6: ct.v6, src: 2, dst: ct.seen, sport: 80, dport: cport, flags: flags, seq: s, ack: c, payload: payload}
				}
				sendSeg(0, out(conntrack.TCPSyn, 0), "SYN")
				c++
				sendSeg(1, back(conntrack.TCPSyn|conntrack.TCPAck, 0), "SYN-ACK")
				s++
				sendSeg(0, out(conntrack.TCPAck, 0), "ACK")
				for i := range 300 {
					what := fmt.Sprintf("connection %d segment %d", conn, i)
					switch n := rnd.IntN(20); {
					case n < 9:
						size := 700 + rnd.IntN(700)
						sendSeg(0, out(conntrack.TCPAck, size), what+": data")
						c += uint32(size)
					case n < 16:
						sendSeg(1, back(conntrack.TCPAck, 0), what+": ack")
					case n < 18:
						size := rnd.IntN(1400)
						sendSeg(1, back(conntrack.TCPAck, size), what+": data back")
						s += uint32(size)
					case n < 19:
						g := out(conntrack.TCPAck, 100)
						g.seq += 1 << 30
						sendSeg(0, g, what+": out of window")
					default:
						g := back(conntrack.TCPRst, 0)
						g.seq += 1 << 30
						sendSeg(1, g, what+": reset at a wrong sequence number")
					}
				}
				// The windows the program moved on are the tracker's
				// once it reads them.
				if got, want := windows(t, fast, cport), windows(t, slow, cport); got != want {
					t.Errorf("connection %d: with the fast path its ends are %+v; without, %+v", conn, got, want)
				}
				sendSeg(0, out(conntrack.TCPFin|conntrack.TCPAck, 0), "FIN")
				c++
				sendSeg(1, back(conntrack.TCPFin|conntrack.TCPAck, 0), "FIN back")
				s++
				sendSeg(0, out(conntrack.TCPAck, 0), "last ACK")
			}
			// UDP: datagrams one way, then both ways.
			for conn := range 3 {
				cport := uint16(30000 + conn)
				out := ipFrame(t, ct.v6, 1, ct.to, &layers.UDP{SrcPort: layers.UDPPort(cport), DstPort: layers.UDPPort(ct.toPort)}, []byte("out"))
				back := ipFrame(t, ct.v6, 2, ct.seen, &layers.UDP{SrcPort: 80, DstPort: layers.UDPPort(cport)}, []byte("back"))
				for i := range 20 {
					send(0, out, 0, fmt.Sprintf("UDP connection %d datagram %d one way", conn, i))
				}
				for i := range 40 {
					if rnd.IntN(2) == 0 {
						send(0, out, 0, fmt.Sprintf("UDP connection %d datagram %d out", conn, i))
					} else {
						send(1, back, 0, fmt.Sprintf("UDP connection %d datagram %d back", conn, i))
					}
				}
			}
			t.Logf("the program carried %d segments and datagrams and handed %d over", carried, handedOver)
			if carried < 400 || handedOver == 0 {
				t.Errorf("the program carried %d segments and handed %d over: the test hardly tests it", carried, handedOver)
			}
			now := conntrack.Now()
			dump := func(bed *fastPathBed) string {
				var b strings.Builder
				for _, e := range bed.f.ct.tracker.Dump(nil, now) {
					fmt.Fprintln(&b, e.Format(false, false), e.State())
				}
				return b.String()
			}
			if got, want := dump(fast), dump(slow); got != want {
				t.Errorf("connections with the fast path:\n%s\nwithout:\n%s", got, want)
			}
		})
	}
}

// windows are the TCP ends of the connection from client port cport, as
// the bed's tracker holds them once it read what the program made of
// them.
func windows(t *testing.T, bed *fastPathBed, cport uint16) [2]conntrack.KernelTCPEnd {
	t.Helper()
	tr := bed.f.ct.tracker
	for _, e := range tr.Dump(nil, conntrack.Now()) {
		if e.Orig.Src.Port == cport {
			k, ok := tr.KernelState(e.Handle)
			if !ok {
				t.Fatalf("connection from port %d is not established", cport)
			}
			return k.TCP
		}
	}
	t.Fatalf("no connection from port %d", cport)
	return [2]conntrack.KernelTCPEnd{}
}
