// Package cttest fills a conntrack.Tracker for the tests of what shows
// and changes it (the daemon's verbs, the metrics) with real packets:
// serialized by gopacket, checksums and all, and decoded as the switch
// decodes a frame's IP packet for the tracker.
package cttest

import (
	"net"
	"net/netip"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/xswitch/xswitch/conntrack"
)

// Decode is the packet that layers (an IPv4 or IPv6 header first)
// serialize to, as the tracker takes it.
func Decode(t testing.TB, ls ...gopacket.SerializableLayer) *conntrack.Packet {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	p := &conntrack.Packet{}
	p.Header.Decode(buf.Bytes(), true)
	if p.Header.Malformed {
		t.Fatalf("the tracker finds the packet of %v malformed", ls)
	}
	return p
}

// ipLayer is the IP header from src to dst, carrying proto.
func ipLayer(t testing.TB, src, dst string, proto layers.IPProtocol) gopacket.NetworkLayer {
	t.Helper()
	s, err1 := netip.ParseAddr(src)
	d, err2 := netip.ParseAddr(dst)
	if err1 != nil || err2 != nil || s.Is4() != d.Is4() {
		t.Fatalf("addresses %q and %q: want two of one family", src, dst)
	}
	if s.Is4() {
		return &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: proto, SrcIP: net.IP(s.AsSlice()), DstIP: net.IP(d.AsSlice())}
	}
	return &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: proto, SrcIP: net.IP(s.AsSlice()), DstIP: net.IP(d.AsSlice())}
}

// UDP is a datagram of a few bytes from src to dst.
func UDP(t testing.TB, src, dst string, sport, dport uint16) *conntrack.Packet {
	t.Helper()
	ip := ipLayer(t, src, dst, layers.IPProtocolUDP)
	udp := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
	udp.SetNetworkLayerForChecksum(ip)
	return Decode(t, ip.(gopacket.SerializableLayer), udp, gopacket.Payload("data"))
}

// TCP is a segment without payload from src to dst with flags
// (conntrack.TCPSyn...), seq and ack, and a window of 65535.
func TCP(t testing.TB, src, dst string, sport, dport uint16, flags uint8, seq, ack uint32) *conntrack.Packet {
	t.Helper()
	ip := ipLayer(t, src, dst, layers.IPProtocolTCP)
	tcp := &layers.TCP{SrcPort: layers.TCPPort(sport), DstPort: layers.TCPPort(dport), Seq: seq, Ack: ack, Window: 65535,
		FIN: flags&conntrack.TCPFin != 0, SYN: flags&conntrack.TCPSyn != 0, RST: flags&conntrack.TCPRst != 0,
		PSH: flags&conntrack.TCPPsh != 0, ACK: flags&conntrack.TCPAck != 0}
	tcp.SetNetworkLayerForChecksum(ip)
	return Decode(t, ip.(gopacket.SerializableLayer), tcp)
}

// Echo is an ICMP (for IPv6 addresses, ICMPv6) echo request from src to
// dst, or with reply an echo reply.
func Echo(t testing.TB, src, dst string, id uint16, reply bool) *conntrack.Packet {
	t.Helper()
	s := netip.MustParseAddr(src)
	if s.Is4() {
		ip := ipLayer(t, src, dst, layers.IPProtocolICMPv4)
		typ := uint8(layers.ICMPv4TypeEchoRequest)
		if reply {
			typ = layers.ICMPv4TypeEchoReply
		}
		return Decode(t, ip.(gopacket.SerializableLayer), &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(typ, 0), Id: id, Seq: 1})
	}
	ip := ipLayer(t, src, dst, layers.IPProtocolICMPv6)
	typ := uint8(layers.ICMPv6TypeEchoRequest)
	if reply {
		typ = layers.ICMPv6TypeEchoReply
	}
	icmp := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(typ, 0)}
	icmp.SetNetworkLayerForChecksum(ip)
	return Decode(t, ip.(gopacket.SerializableLayer), icmp, &layers.ICMPv6Echo{Identifier: id, SeqNumber: 1})
}

// Run passes p through ct(a) at now and returns the connection state
// the packet gets.
func Run(tr *conntrack.Tracker, p *conntrack.Packet, a conntrack.Action, now int64) conntrack.State {
	q := *p
	tr.Execute(&q, &a, now)
	return q.CT.State
}

// Handshake opens a TCP connection from client to server in zone through
// ct(commit) at now: SYN, SYN-ACK and ACK, which leave it established.
func Handshake(t testing.TB, tr *conntrack.Tracker, zone uint16, client, server string, cport, sport uint16, now int64) {
	t.Helper()
	a := conntrack.Action{Zone: zone, Commit: true}
	steps := []*conntrack.Packet{
		TCP(t, client, server, cport, sport, conntrack.TCPSyn, 1000, 0),
		TCP(t, server, client, sport, cport, conntrack.TCPSyn|conntrack.TCPAck, 5000, 1001),
		TCP(t, client, server, cport, sport, conntrack.TCPAck, 1001, 5001),
	}
	for i, p := range steps {
		if st := Run(tr, p, a, now); st&conntrack.StateInvalid != 0 || st&conntrack.StateTracked == 0 {
			t.Fatalf("handshake %s:%d -> %s:%d, segment %d: ct_state %v", client, cport, server, sport, i+1, st)
		}
	}
}
