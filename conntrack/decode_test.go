package conntrack

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/xswitch/xswitch/header"
)

// l3Bytes serializes the IP packet h describes with gopacket (a second
// implementation of the formats), checksums computed, with h.Payload
// bytes of data; extra layers (IPv6 extension headers) go between the
// IP header and the transport one.
func l3Bytes(t testing.TB, h *Header, extra ...gopacket.SerializableLayer) []byte {
	t.Helper()
	var ls []gopacket.SerializableLayer
	var netLayer gopacket.NetworkLayer
	if h.IPv6 {
		next := layers.IPProtocol(h.Proto)
		if len(extra) != 0 {
			next = layers.IPProtocolIPv6HopByHop
		}
		ip6 := &layers.IPv6{Version: 6, NextHeader: next, HopLimit: 64, SrcIP: net.IP(h.Src[:]), DstIP: net.IP(h.Dst[:])}
		ls, netLayer = append(ls, ip6), ip6
	} else {
		ip4 := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocol(h.Proto),
			SrcIP: net.IP(h.Src[:4]), DstIP: net.IP(h.Dst[:4])}
		ls, netLayer = append(ls, ip4), ip4
	}
	ls = append(ls, extra...)
	switch {
	case h.Proto == header.ProtoTCP:
		l := &layers.TCP{SrcPort: layers.TCPPort(h.SrcPort), DstPort: layers.TCPPort(h.DstPort), Seq: h.Seq, Ack: h.Ack,
			Window: h.Window, FIN: h.TCPFlags&TCPFin != 0, SYN: h.TCPFlags&TCPSyn != 0, RST: h.TCPFlags&TCPRst != 0,
			PSH: h.TCPFlags&TCPPsh != 0, ACK: h.TCPFlags&TCPAck != 0, URG: h.TCPFlags&TCPUrg != 0}
		if h.HasWScale {
			l.Options = []layers.TCPOption{{OptionType: layers.TCPOptionKindNop},
				{OptionType: layers.TCPOptionKindWindowScale, OptionLength: 3, OptionData: []byte{h.WScale}}}
		}
		l.SetNetworkLayerForChecksum(netLayer)
		ls = append(ls, l)
	case h.Proto == header.ProtoUDP:
		l := &layers.UDP{SrcPort: layers.UDPPort(h.SrcPort), DstPort: layers.UDPPort(h.DstPort)}
		l.SetNetworkLayerForChecksum(netLayer)
		ls = append(ls, l)
	case h.Proto == header.ProtoICMP:
		ls = append(ls, &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(h.ICMPType, h.ICMPCode), Id: h.ICMPID})
	case h.Proto == header.ProtoICMPv6:
		l := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(h.ICMPType, h.ICMPCode)}
		l.SetNetworkLayerForChecksum(netLayer)
		ls = append(ls, l, &layers.ICMPv6Echo{Identifier: h.ICMPID})
	}
	ls = append(ls, gopacket.Payload(bytes.Repeat([]byte{0xab}, int(h.Payload))))
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// ipv6ICMPError is an ICMPv6 error from src to dst quoting the packet q
// describes.
func ipv6ICMPError(src, dst string, typ uint8, q *Packet) []byte {
	var tb testing.T
	quoted := l3Bytes(&tb, &q.Header)
	ip6 := &layers.IPv6{Version: 6, NextHeader: layers.IPProtocolICMPv6, HopLimit: 64, SrcIP: net.ParseIP(src), DstIP: net.ParseIP(dst)}
	icmp := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(typ, 0)}
	icmp.SetNetworkLayerForChecksum(ip6)
	buf := gopacket.NewSerializeBuffer()
	mtu := []byte{0, 0, 5, 0}
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		ip6, icmp, gopacket.Payload(append(mtu, quoted...))); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// ipv4ICMPError is an ICMP error from src to dst quoting the first 28
// bytes of the packet q describes, as a router does.
func ipv4ICMPError(t *testing.T, src, dst string, typ, code uint8, q *Header) []byte {
	quoted := l3Bytes(t, q)[:28]
	ip4 := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolICMPv4, SrcIP: net.ParseIP(src).To4(), DstIP: net.ParseIP(dst).To4()}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		ip4, &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(typ, code)}, gopacket.Payload(quoted)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDecode(t *testing.T) {
	syn := tcp("10.1.1.1", "10.1.1.2", 40000, 80, TCPSyn, 7, 0, 29200, 0).Header
	syn.HasWScale, syn.WScale = true, 7
	data := tcp("fc00::1", "fc00::2", 40000, 80, TCPAck|TCPPsh, 100, 200, 512, 1000).Header
	for _, c := range []struct {
		name string
		h    Header
	}{
		{"TCP SYN with window scale", syn},
		{"TCP data over IPv6", data},
		{"UDP", udp("10.1.1.1", "10.1.1.2", 5000, 53).Header},
		{"ICMP echo", icmpMsg("10.1.1.1", "10.1.1.2", 8, 0, 77).Header},
		{"ICMPv6 echo reply", icmpMsg("fc00::1", "fc00::2", 129, 0, 77).Header},
	} {
		t.Run(c.name, func(t *testing.T) {
			l3 := l3Bytes(t, &c.h)
			var got Header
			got.Decode(l3, true)
			if got != c.h {
				t.Errorf("decoded\n%+v\nwant\n%+v", got, c.h)
			}
			// Ethernet padding past the IP packet is not payload.
			got.Decode(append(l3, 0, 0, 0, 0), true)
			if got != c.h {
				t.Errorf("with padding, decoded\n%+v\nwant\n%+v", got, c.h)
			}
			// A flipped bit in the transport header is a bad checksum,
			// seen only when asked.
			l3[len(l3)-int(c.h.Payload)-1] ^= 0x10
			got.Decode(l3, false)
			if got.Malformed {
				t.Errorf("bad checksum seen without checksums")
			}
			got.Decode(l3, true)
			if !got.Malformed {
				t.Errorf("bad checksum not seen")
			}
		})
	}
}

func TestDecodeICMPErrors(t *testing.T) {
	q := udp("10.1.1.1", "10.1.1.2", 5000, 53).Header
	var h Header
	h.Decode(ipv4ICMPError(t, "10.1.1.2", "10.1.1.1", 3, 3, &q), true)
	want := Quoted{Valid: true, Src: q.Src, Dst: q.Dst, Proto: q.Proto, SrcPort: 5000, DstPort: 53}
	if h.Malformed || h.ICMPType != 3 || h.ICMPCode != 3 || h.Inner != want {
		t.Errorf("decoded %+v", h)
	}
	q6 := tcp("fc00::1", "fc00::2", 40000, 80, TCPSyn, 1, 0, 1000, 0)
	h.Decode(ipv6ICMPError("fc00::9", "fc00::1", 2, q6), true)
	want = Quoted{Valid: true, Src: q6.Src, Dst: q6.Dst, Proto: q6.Proto, SrcPort: 40000, DstPort: 80}
	if h.Malformed || h.ICMPType != 2 || h.Inner != want {
		t.Errorf("decoded %+v", h)
	}
	// Quoting less than 8 bytes of UDP is not enough.
	short := ipv4ICMPError(t, "10.1.1.2", "10.1.1.1", 3, 3, &q)
	short = short[:len(short)-1]
	binary.BigEndian.PutUint16(short[2:], uint16(len(short)))
	h.Decode(short, false)
	if h.Malformed || h.Inner.Valid {
		t.Errorf("short quote decoded as %+v", h)
	}
}

func TestDecodeIPv6ExtensionHeadersAndFragments(t *testing.T) {
	u := udp("fc00::1", "fc00::2", 5000, 53).Header
	hop := &layers.IPv6HopByHop{}
	hop.NextHeader = layers.IPProtocolUDP
	hop.Options = []*layers.IPv6HopByHopOption{{OptionType: 1, OptionData: []byte{0, 0, 0, 0}}}
	var h Header
	h.Decode(l3Bytes(t, &u, hop), true)
	if h != u {
		t.Errorf("through hop-by-hop: %+v, want %+v", h, u)
	}
	// A first fragment: a fragment header (more fragments) before UDP.
	whole := l3Bytes(t, &u)
	b := append(append(append([]byte{}, whole[:header.IPv6Len]...), header.ProtoUDP, 0, 0, 1, 0, 0, 0, 9), whole[header.IPv6Len:]...)
	b[header.IPv6NextHeaderOffset] = header.ProtoIPv6Fragment
	header.IPv6(b).SetPayloadLen(uint16(len(b) - header.IPv6Len))
	h.Decode(b, false)
	if !h.Fragment || h.Malformed {
		t.Errorf("IPv6 fragment: %+v", h)
	}
	v4 := l3Bytes(t, &udp("10.1.1.1", "10.1.1.2", 1, 2).Header)
	v4[header.IPv4FlagsOffset] |= 0x20 // more fragments
	h.Decode(v4, false)
	if !h.Fragment {
		t.Errorf("IPv4 first fragment: %+v", h)
	}
}

// TestDecodeCutShort: a packet cut at any byte decodes without panicking,
// and either as Malformed or as what the whole packet is.
func TestDecodeCutShort(t *testing.T) {
	q := udp("10.1.1.1", "10.1.1.2", 5000, 53).Header
	syn := tcp("fc00::1", "fc00::2", 40000, 80, TCPSyn, 1, 0, 1000, 0)
	syn.HasWScale, syn.WScale = true, 9
	for _, whole := range [][]byte{
		ipv4ICMPError(t, "10.1.1.2", "10.1.1.1", 3, 3, &q),
		ipv6ICMPError("fc00::9", "fc00::1", 2, syn),
		l3Bytes(t, &syn.Header),
	} {
		var full Header
		full.Decode(whole, true)
		for n := range len(whole) {
			var h Header
			h.Decode(whole[:n], true)
			if !h.Malformed {
				t.Errorf("cut at %d of %d decodes as %+v", n, len(whole), h)
			}
		}
	}
}
