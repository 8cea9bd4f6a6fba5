package flow

import (
	"bytes"
	"encoding/binary"
	"net"
	"reflect"
	"slices"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/xswitch/xswitch/internal/race"
)

var (
	exMACA = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x00, 0x0a}
	exMACB = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x00, 0x0b}
	exIP4A = net.IP{10, 0, 0, 1}
	exIP4B = net.IP{10, 0, 0, 2}
	exIP6A = net.ParseIP("fd00::a")
	exIP6B = net.ParseIP("fd00::b")

	// exPayload ends most test frames: the headers are what precedes it.
	exPayload = gopacket.Payload("xswitch")
)

const exInPort = 7

// exCase is a frame and the key it must give.
type exCase struct {
	name  string
	frame []byte
	want  Key
	ok    bool
	// headerEnd is where the last header the key reads ends: a frame cut
	// before it is not well formed.
	headerEnd int
	// allocates is set for frames gopacket cannot decode without allocating.
	allocates bool
}

func exSerialize(tb testing.TB, ls ...gopacket.SerializableLayer) []byte {
	tb.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true}, ls...); err != nil {
		tb.Fatalf("serialize %v: %v", ls, err)
	}
	return bytes.Clone(buf.Bytes())
}

func exEth(typ layers.EthernetType) *layers.Ethernet {
	return &layers.Ethernet{SrcMAC: exMACA, DstMAC: exMACB, EthernetType: typ}
}

func exIPv4(proto layers.IPProtocol) *layers.IPv4 {
	return &layers.IPv4{Version: 4, IHL: 5, TOS: 0xb9, TTL: 64, Flags: layers.IPv4DontFragment,
		Protocol: proto, SrcIP: exIP4A, DstIP: exIP4B}
}

func exIPv6(next layers.IPProtocol) *layers.IPv6 {
	return &layers.IPv6{Version: 6, TrafficClass: 0x2a, FlowLabel: 0x12345, HopLimit: 63,
		NextHeader: next, SrcIP: exIP6A, DstIP: exIP6B}
}

func exTCP() *layers.TCP {
	// A SYN as Linux sends it; port 443 tempts gopacket into TLS.
	return &layers.TCP{SrcPort: 43210, DstPort: 443, SYN: true, Window: 64240, Options: []layers.TCPOption{
		{OptionType: layers.TCPOptionKindMSS, OptionLength: 4, OptionData: []byte{0x05, 0xb4}},
		{OptionType: layers.TCPOptionKindSACKPermitted, OptionLength: 2},
		{OptionType: layers.TCPOptionKindTimestamps, OptionLength: 10, OptionData: make([]byte, 8)},
		{OptionType: layers.TCPOptionKindNop},
		{OptionType: layers.TCPOptionKindWindowScale, OptionLength: 3, OptionData: []byte{7}},
	}}
}

// exUDP goes to port 53 (4789 with vxlan): gopacket would decode DNS (VXLAN).
func exUDP(vxlan bool) *layers.UDP {
	u := &layers.UDP{SrcPort: 5353, DstPort: 53}
	if vxlan {
		u.DstPort = 4789
	}
	return u
}

func exIPv4Key(proto uint8, tpSrc, tpDst uint16) Key {
	return Key{Headers: Headers{InPort: exInPort, DlDst: [6]byte(exMACB), DlSrc: [6]byte(exMACA), DlType: EtherTypeIPv4,
		NwProto: proto, NwTOS: 0xb9, NwTTL: 64, NwSrc: [4]byte(exIP4A), NwDst: [4]byte(exIP4B),
		TpSrc: tpSrc, TpDst: tpDst}}
}

func exIPv6Key(proto uint8, tpSrc, tpDst uint16) Key {
	return Key{Headers: Headers{InPort: exInPort, DlDst: [6]byte(exMACB), DlSrc: [6]byte(exMACA), DlType: EtherTypeIPv6,
		NwProto: proto, NwTOS: 0x2a, NwTTL: 63, IPv6Src: [16]byte(exIP6A), IPv6Dst: [16]byte(exIP6B),
		TpSrc: tpSrc, TpDst: tpDst, IPv6Label: 0x12345}}
}

func exL2Key(dlType uint16) Key {
	return Key{Headers: Headers{InPort: exInPort, DlDst: [6]byte(exMACB), DlSrc: [6]byte(exMACA), DlType: dlType}}
}

func exWith(k Key, set func(*Key)) Key {
	set(&k)
	return k
}

// wellFormed builds one frame of each kind the extractor knows, with
// its key. Frames end in exPayload unless headerEnd says otherwise.
func exWellFormed(tb testing.TB) []exCase {
	arp := func(proto layers.EthernetType, protSize uint8, op uint16) *layers.ARP {
		a := &layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: proto, HwAddressSize: 6,
			ProtAddressSize: protSize, Operation: op, SourceHwAddress: exMACA, DstHwAddress: make([]byte, 6),
			SourceProtAddress: exIP4A, DstProtAddress: exIP4B}
		if protSize == 16 {
			a.SourceProtAddress, a.DstProtAddress = exIP6A, exIP6B
		}
		return a
	}
	fragment := func(ip *layers.IPv4, offset uint16) *layers.IPv4 {
		ip.Flags, ip.FragOffset = layers.IPv4MoreFragments, offset
		return ip
	}
	// An IPv6 fragment header: next header, reserved, offset<<3 | M, id.
	ipv6Fragment := func(offset uint16, more bool) gopacket.Payload {
		h := []byte{byte(layers.IPProtocolUDP), 0, 0, 0, 0xca, 0xfe, 0xf0, 0x0d}
		binary.BigEndian.PutUint16(h[2:], offset<<3)
		if more {
			h[3] |= 1
		}
		return h
	}
	vlan := func(pcp uint8, vid uint16, typ layers.EthernetType) *layers.Dot1Q {
		return &layers.Dot1Q{Priority: pcp, VLANIdentifier: vid, Type: typ}
	}
	mldv2Report := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(layers.ICMPv6TypeMLDv2MulticastListenerReportMessageV2, 0)}
	ns := &layers.ICMPv6NeighborSolicitation{TargetAddress: exIP6B, Options: layers.ICMPv6Options{
		{Type: layers.ICMPv6OptSourceAddress, Data: exMACA},
	}}
	icmpv6 := func(typ uint8, code uint8) *layers.ICMPv6 {
		return &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(typ, code)}
	}
	// A neighbour discovery message after its ICMPv6 header: flags, the
	// target, options.
	nd := func(target net.IP, options ...byte) gopacket.Payload {
		return append(append([]byte{0x60, 0, 0, 0}, target...), options...)
	}
	ndKey := func(typ uint16, target net.IP, sll, tll net.HardwareAddr) Key {
		k := exIPv6Key(ProtoICMPv6, typ, 0)
		copy(k.NDTarget[:], target)
		copy(k.ArpSHA[:], sll)
		copy(k.ArpTHA[:], tll)
		return k
	}
	sllOpt := append([]byte{1, 1}, exMACA...)
	tllOpt := append([]byte{2, 1}, exMACB...)
	sctp := &layers.SCTP{SrcPort: 38412, DstPort: 36412, VerificationTag: 0xcafe}

	var cases []exCase
	add := func(name string, want Key, ls ...gopacket.SerializableLayer) *exCase {
		frame := exSerialize(tb, ls...)
		headerEnd := bytes.Index(frame, exPayload) // else set by the caller
		cases = append(cases, exCase{name: name, frame: frame, want: want, ok: true, headerEnd: headerEnd})
		return &cases[len(cases)-1]
	}

	add("ipv4/tcp", exIPv4Key(ProtoTCP, 43210, 443),
		exEth(layers.EthernetTypeIPv4), exIPv4(layers.IPProtocolTCP), exTCP(), exPayload)
	add("vlan/ipv4/udp", exWith(exIPv4Key(ProtoUDP, 5353, 53), func(k *Key) { k.VLANTCI = 5<<13 | VLANCFI | 100 }),
		exEth(layers.EthernetTypeDot1Q), vlan(5, 100, layers.EthernetTypeIPv4), exIPv4(layers.IPProtocolUDP), exUDP(false), exPayload)
	add("qinq/ipv4/udp", exWith(exIPv4Key(ProtoUDP, 5353, 4789), func(k *Key) { k.VLANTCI = 1<<13 | VLANCFI | 10 }),
		exEth(layers.EthernetTypeQinQ), vlan(1, 10, layers.EthernetTypeDot1Q), vlan(2, 20, layers.EthernetTypeIPv4),
		exIPv4(layers.IPProtocolUDP), exUDP(true), exPayload)
	add("vlan0/arp", Key{Headers: Headers{InPort: exInPort, DlDst: [6]byte(exMACB), DlSrc: [6]byte(exMACA), DlType: EtherTypeARP,
		VLANTCI: 3<<13 | VLANCFI, NwProto: 1, NwSrc: [4]byte(exIP4A), NwDst: [4]byte(exIP4B), ArpSHA: [6]byte(exMACA)}},
		exEth(layers.EthernetTypeDot1Q), vlan(3, 0, layers.EthernetTypeARP), arp(layers.EthernetTypeIPv4, 4, 1)).headerEnd = 14 + 4 + 28
	add("ipv6/tcp", exIPv6Key(ProtoTCP, 43210, 443),
		exEth(layers.EthernetTypeIPv6), exIPv6(layers.IPProtocolTCP), exTCP(), exPayload)
	add("arp", Key{Headers: Headers{InPort: exInPort, DlDst: [6]byte(exMACB), DlSrc: [6]byte(exMACA), DlType: EtherTypeARP,
		NwProto: 1, NwSrc: [4]byte(exIP4A), NwDst: [4]byte(exIP4B), ArpSHA: [6]byte(exMACA)}},
		exEth(layers.EthernetTypeARP), arp(layers.EthernetTypeIPv4, 4, 1)).headerEnd = 14 + 28
	reply := arp(layers.EthernetTypeIPv4, 4, 2)
	reply.SourceHwAddress, reply.DstHwAddress = exMACB, exMACA
	add("arp/reply", Key{Headers: Headers{InPort: exInPort, DlDst: [6]byte(exMACB), DlSrc: [6]byte(exMACA), DlType: EtherTypeARP,
		NwProto: 2, NwSrc: [4]byte(exIP4A), NwDst: [4]byte(exIP4B), ArpSHA: [6]byte(exMACB), ArpTHA: [6]byte(exMACA)}},
		exEth(layers.EthernetTypeARP), reply).headerEnd = 14 + 28
	add("arp/op>255", Key{Headers: Headers{InPort: exInPort, DlDst: [6]byte(exMACB), DlSrc: [6]byte(exMACA), DlType: EtherTypeARP,
		NwProto: 0x02, NwSrc: [4]byte(exIP4A), NwDst: [4]byte(exIP4B), ArpSHA: [6]byte(exMACA)}},
		exEth(layers.EthernetTypeARP), arp(layers.EthernetTypeIPv4, 4, 0x0102)).headerEnd = 14 + 28
	add("arp/not ipv4", exL2Key(EtherTypeARP),
		exEth(layers.EthernetTypeARP), arp(layers.EthernetTypeIPv6, 16, 1)).headerEnd = 14 + 8 + 2*6 + 2*16
	add("icmp", exIPv4Key(ProtoICMP, 8, 0),
		exEth(layers.EthernetTypeIPv4), exIPv4(layers.IPProtocolICMPv4),
		&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(layers.ICMPv4TypeEchoRequest, 0), Id: 1, Seq: 1}, exPayload)
	add("icmp/port unreachable", exIPv4Key(ProtoICMP, 3, 3),
		exEth(layers.EthernetTypeIPv4), exIPv4(layers.IPProtocolICMPv4),
		&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(layers.ICMPv4TypeDestinationUnreachable, layers.ICMPv4CodePort)}, exPayload)
	// The message's target and options are no header: cut in them, it
	// keys on what it has, as in OVS.
	add("icmpv6/neighbour solicitation", ndKey(135, exIP6B, exMACA, nil),
		exEth(layers.EthernetTypeIPv6), exIPv6(layers.IPProtocolICMPv6), icmpv6(135, 0), ns).headerEnd = 14 + 40 + 4
	add("icmpv6/neighbour advertisement", ndKey(136, exIP6A, nil, exMACB),
		exEth(layers.EthernetTypeIPv6), exIPv6(layers.IPProtocolICMPv6), icmpv6(136, 0),
		nd(exIP6A, tllOpt...), exPayload).headerEnd = 14 + 40 + 4
	// Options other than link-layer addresses are skipped, and a
	// link-layer address of a length other than one unit is none.
	add("icmpv6/neighbour solicitation/other options", ndKey(135, exIP6B, exMACA, exMACB),
		exEth(layers.EthernetTypeIPv6), exIPv6(layers.IPProtocolICMPv6), icmpv6(135, 0),
		nd(exIP6B, slices.Concat([]byte{14, 1, 1, 2, 3, 4, 5, 6}, []byte{1, 2}, make([]byte, 14), sllOpt, tllOpt)...)).headerEnd = 14 + 40 + 4
	// An option of length 0, or longer than the rest, ends the options,
	// keeping what came before.
	add("icmpv6/neighbour advertisement/option of length 0", ndKey(136, exIP6A, exMACA, nil),
		exEth(layers.EthernetTypeIPv6), exIPv6(layers.IPProtocolICMPv6), icmpv6(136, 0),
		nd(exIP6A, slices.Concat(sllOpt, []byte{2, 0, 1, 2, 3, 4, 5, 6}, tllOpt)...)).headerEnd = 14 + 40 + 4
	add("icmpv6/neighbour advertisement/code 1", exIPv6Key(ProtoICMPv6, 136, 1),
		exEth(layers.EthernetTypeIPv6), exIPv6(layers.IPProtocolICMPv6), icmpv6(136, 1),
		nd(exIP6A, tllOpt...)).headerEnd = 14 + 40 + 4
	add("ipv4/sctp", exIPv4Key(ProtoSCTP, 38412, 36412),
		exEth(layers.EthernetTypeIPv4), exIPv4(layers.IPProtocolSCTP), sctp, exPayload)
	add("ipv6/sctp", exIPv6Key(ProtoSCTP, 38412, 36412),
		exEth(layers.EthernetTypeIPv6), exIPv6(layers.IPProtocolSCTP), sctp, exPayload)
	add("ipv4/first fragment/udp", exWith(exIPv4Key(ProtoUDP, 5353, 53), func(k *Key) { k.NwFrag = FragAny }),
		exEth(layers.EthernetTypeIPv4), fragment(exIPv4(layers.IPProtocolUDP), 0), exUDP(false), exPayload)
	// The first fragment of a datagram longer than itself, whose UDP length
	// counts the whole datagram: iperf3's, beyond the MTU.
	longDatagram := gopacket.Payload{0x14, 0xe9, 0x00, 0x35, 0x20, 0x00, 0x00, 0x00}
	add("ipv4/first fragment of a long datagram/udp", exWith(exIPv4Key(ProtoUDP, 5353, 53), func(k *Key) { k.NwFrag = FragAny }),
		exEth(layers.EthernetTypeIPv4), fragment(exIPv4(layers.IPProtocolUDP), 0), longDatagram, exPayload)
	add("ipv6/first fragment of a long datagram/udp", exWith(exIPv6Key(ProtoUDP, 5353, 53), func(k *Key) { k.NwFrag, k.IPv6ExtHdr = FragAny, ExtHdrFrag }),
		exEth(layers.EthernetTypeIPv6), exIPv6(layers.IPProtocolIPv6Fragment), ipv6Fragment(0, true), longDatagram, exPayload)
	add("ipv4/later fragment", exWith(exIPv4Key(ProtoUDP, 0, 0), func(k *Key) { k.NwFrag = FragAny | FragLater }),
		exEth(layers.EthernetTypeIPv4), fragment(exIPv4(layers.IPProtocolUDP), 185), exUDP(false), exPayload).headerEnd = 34
	add("ipv4/last fragment", exWith(exIPv4Key(ProtoUDP, 0, 0), func(k *Key) { k.NwFrag = FragAny | FragLater }),
		exEth(layers.EthernetTypeIPv4), &layers.IPv4{Version: 4, IHL: 5, TOS: 0xb9, TTL: 64, FragOffset: 185,
			Protocol: layers.IPProtocolUDP, SrcIP: exIP4A, DstIP: exIP4B}, exPayload)
	add("ipv6/first fragment/udp", exWith(exIPv6Key(ProtoUDP, 5353, 53), func(k *Key) { k.NwFrag, k.IPv6ExtHdr = FragAny, ExtHdrFrag }),
		exEth(layers.EthernetTypeIPv6), exIPv6(layers.IPProtocolIPv6Fragment), ipv6Fragment(0, true), exUDP(false), exPayload)
	add("ipv6/atomic fragment/udp", exWith(exIPv6Key(ProtoUDP, 5353, 53), func(k *Key) { k.IPv6ExtHdr = ExtHdrFrag }),
		exEth(layers.EthernetTypeIPv6), exIPv6(layers.IPProtocolIPv6Fragment), ipv6Fragment(0, false), exUDP(false), exPayload)
	add("ipv6/later fragment", exWith(exIPv6Key(ProtoUDP, 0, 0), func(k *Key) { k.NwFrag, k.IPv6ExtHdr = FragAny|FragLater, ExtHdrFrag }),
		exEth(layers.EthernetTypeIPv6), exIPv6(layers.IPProtocolIPv6Fragment), ipv6Fragment(100, true), exUDP(false), exPayload).headerEnd = 14 + 40 + 8
	// Router alert and a 0-byte PadN: an MLD report's hop-by-hop header.
	add("ipv6/hop-by-hop/mldv2", exWith(exIPv6Key(ProtoICMPv6, 143, 0), func(k *Key) { k.IPv6ExtHdr = ExtHdrHop }),
		exEth(layers.EthernetTypeIPv6), exIPv6(layers.IPProtocolIPv6HopByHop),
		gopacket.Payload{byte(layers.IPProtocolICMPv6), 0, 5, 2, 0, 0, 1, 0}, mldv2Report, exPayload).allocates = true
	// Two destination options headers, one each side of the routing
	// header, as RFC 8200 orders them.
	add("ipv6/destination options/routing/destination options/udp",
		exWith(exIPv6Key(ProtoUDP, 5353, 53), func(k *Key) { k.IPv6ExtHdr = ExtHdrDest | ExtHdrRouter }),
		exEth(layers.EthernetTypeIPv6), exIPv6(layers.IPProtocolIPv6Destination),
		gopacket.Payload{byte(layers.IPProtocolIPv6Routing), 0, 1, 4, 0, 0, 0, 0},
		gopacket.Payload{byte(layers.IPProtocolIPv6Destination), 2, 0, 0, 0, 0, 0, 0, // type 0, one address
			0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		gopacket.Payload{byte(layers.IPProtocolUDP), 1, 1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		exUDP(false), exPayload)
	add("ipv6/ah/tcp", exWith(exIPv6Key(ProtoTCP, 43210, 443), func(k *Key) { k.IPv6ExtHdr = ExtHdrAuth }),
		exEth(layers.EthernetTypeIPv6), exIPv6(layers.IPProtocolAH),
		gopacket.Payload{byte(layers.IPProtocolTCP), 4, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, // 24 bytes, 12 of ICV
			1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
		exTCP(), exPayload)
	// ipv6_exthdr: extension headers of 8 bytes (a routing header with
	// no address, options of one PadN) naming the next one.
	extHdr := func(next layers.IPProtocol, routing bool) gopacket.Payload {
		if routing {
			return gopacket.Payload{byte(next), 0, 0, 0, 0, 0, 0, 0}
		}
		return gopacket.Payload{byte(next), 0, 1, 4, 0, 0, 0, 0}
	}
	exthdr := func(k Key, bits uint16) Key { return exWith(k, func(k *Key) { k.IPv6ExtHdr = bits }) }
	add("ipv6/esp", exthdr(exIPv6Key(50, 0, 0), ExtHdrESP),
		exEth(layers.EthernetTypeIPv6), exIPv6(layers.IPProtocolESP), exPayload)
	add("ipv6/no next header", exthdr(exIPv6Key(59, 0, 0), ExtHdrNoNext),
		exEth(layers.EthernetTypeIPv6), exIPv6(layers.IPProtocolNoNextHeader), exPayload)
	add("ipv6/routing/no next header", exthdr(exIPv6Key(59, 0, 0), ExtHdrRouter|ExtHdrNoNext),
		exEth(layers.EthernetTypeIPv6), exIPv6(layers.IPProtocolIPv6Routing), extHdr(layers.IPProtocolNoNextHeader, true), exPayload)
	// A conformance suite's frame: hop-by-hop and AH, ipv6_exthdr=68.
	add("ipv6/hop-by-hop/ah/tcp", exthdr(exIPv6Key(ProtoTCP, 43210, 443), ExtHdrHop|ExtHdrAuth),
		exEth(layers.EthernetTypeIPv6), exIPv6(layers.IPProtocolIPv6HopByHop), extHdr(layers.IPProtocolAH, false),
		gopacket.Payload{byte(layers.IPProtocolTCP), 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, exTCP(), exPayload).allocates = true
	add("ipv6/routing/routing/udp", exthdr(exIPv6Key(ProtoUDP, 5353, 53), ExtHdrRouter|ExtHdrUnrep),
		exEth(layers.EthernetTypeIPv6), exIPv6(layers.IPProtocolIPv6Routing), extHdr(layers.IPProtocolIPv6Routing, true),
		extHdr(layers.IPProtocolUDP, true), exUDP(false), exPayload)
	add("ipv6/first fragment/routing/udp", exthdr(exWith(exIPv6Key(ProtoUDP, 5353, 53), func(k *Key) { k.NwFrag = FragAny }),
		ExtHdrFrag|ExtHdrRouter|ExtHdrUnseq),
		exEth(layers.EthernetTypeIPv6), exIPv6(layers.IPProtocolIPv6Fragment),
		append(gopacket.Payload{byte(layers.IPProtocolIPv6Routing)}, ipv6Fragment(0, true)[1:]...),
		extHdr(layers.IPProtocolUDP, true), exUDP(false), exPayload)
	add("ipv6/destination options x3/udp", exthdr(exIPv6Key(ProtoUDP, 5353, 53), ExtHdrDest|ExtHdrUnrep),
		exEth(layers.EthernetTypeIPv6), exIPv6(layers.IPProtocolIPv6Destination), extHdr(layers.IPProtocolIPv6Destination, false),
		extHdr(layers.IPProtocolIPv6Destination, false), extHdr(layers.IPProtocolUDP, false), exUDP(false), exPayload)
	// A hop-by-hop header anywhere but first is out of order; the key
	// reads no further.
	add("ipv6/routing/hop-by-hop", exthdr(exIPv6Key(0, 0, 0), ExtHdrRouter|ExtHdrHop|ExtHdrUnseq),
		exEth(layers.EthernetTypeIPv6), exIPv6(layers.IPProtocolIPv6Routing), extHdr(layers.IPProtocolIPv6HopByHop, true),
		exPayload)
	withOptions := exIPv4(layers.IPProtocolTCP)
	withOptions.Options = []layers.IPv4Option{
		{OptionType: 148, OptionLength: 4, OptionData: []byte{0, 0}}, // router alert
		{OptionType: 1}, {OptionType: 1}, {OptionType: 1}, {OptionType: 0},
	}
	add("ipv4 options/tcp", exIPv4Key(ProtoTCP, 43210, 443),
		exEth(layers.EthernetTypeIPv4), withOptions, exTCP(), exPayload)
	add("802.3 llc", exL2Key(dlTypeNone),
		exEth(layers.EthernetTypeLLC), &layers.LLC{DSAP: 0x42, SSAP: 0x42, Control: 3}, exPayload).headerEnd = 14
	add("snap/ipv4/udp", exIPv4Key(ProtoUDP, 5353, 53),
		exEth(layers.EthernetTypeLLC), &layers.LLC{DSAP: 0xaa, SSAP: 0xaa, Control: 3},
		&layers.SNAP{OrganizationalCode: []byte{0, 0, 0}, Type: layers.EthernetTypeIPv4}, exIPv4(layers.IPProtocolUDP), exUDP(false), exPayload)
	add("lldp", exL2Key(0x88cc), exEth(layers.EthernetTypeLinkLayerDiscovery), exPayload).headerEnd = 14
	add("ipv4 in ipv4", exIPv4Key(4, 0, 0),
		exEth(layers.EthernetTypeIPv4), exIPv4(layers.IPProtocolIPv4), exIPv4(layers.IPProtocolTCP), exTCP(), exPayload).headerEnd = 34
	add("transparent ethernet bridging", exL2Key(0x6558),
		exEth(layers.EthernetTypeTransparentEthernetBridging),
		&layers.Ethernet{SrcMAC: exMACB, DstMAC: exMACA, EthernetType: layers.EthernetTypeIPv4},
		exIPv4(layers.IPProtocolTCP), exTCP(), exPayload).headerEnd = 14
	add("ipv6/udp/no payload", exIPv6Key(ProtoUDP, 5353, 53),
		exEth(layers.EthernetTypeIPv6), exIPv6(layers.IPProtocolUDP), exUDP(false)).headerEnd = 14 + 40 + 8
	// Ethernet pads short frames to 60 bytes, past the IP total length.
	add("ipv4/udp/padded", exIPv4Key(ProtoUDP, 5353, 53),
		exEth(layers.EthernetTypeIPv4), exIPv4(layers.IPProtocolUDP), exUDP(false)).headerEnd = 14 + 20 + 8

	// MPLS: the key holds the label stack, and the IP packet under a
	// stack that ends within its entries, as a pop would show it.
	lse := func(label uint32, tc uint8, bottom bool, ttl uint8) *layers.MPLS {
		return &layers.MPLS{Label: label, TrafficClass: tc, StackBottom: bottom, TTL: ttl}
	}
	mplsKey := func(k Key, dlType uint16, stack ...uint32) Key {
		k.UnderMPLS, k.DlType = uint32(k.DlType), dlType
		for i, lse := range stack {
			k.setMPLSEntry(i, lse)
		}
		return k
	}
	add("mpls/ipv4/tcp", mplsKey(exIPv4Key(ProtoTCP, 43210, 443), EtherTypeMPLS, 100<<12|5<<9|1<<8|63),
		exEth(layers.EthernetTypeMPLSUnicast), lse(100, 5, true, 63), exIPv4(layers.IPProtocolTCP), exTCP(), exPayload).headerEnd = 18
	add("mplsm/two labels/ipv6/udp", mplsKey(exIPv6Key(ProtoUDP, 5353, 53), EtherTypeMPLSMulticast, 0xfffff<<12|7<<9|255, 16<<12|1<<8|1),
		exEth(layers.EthernetTypeMPLSMulticast), lse(0xfffff, 7, false, 255), lse(16, 0, true, 1),
		exIPv6(layers.IPProtocolUDP), exUDP(false), exPayload).headerEnd = 22
	add("vlan/mpls/ipv4/udp", exWith(mplsKey(exIPv4Key(ProtoUDP, 5353, 53), EtherTypeMPLS, 3<<12|1<<8|64),
		func(k *Key) { k.VLANTCI = VLANCFI | 9 }),
		exEth(layers.EthernetTypeDot1Q), vlan(0, 9, layers.EthernetTypeMPLSUnicast), lse(3, 0, true, 64),
		exIPv4(layers.IPProtocolUDP), exUDP(false), exPayload).headerEnd = 22
	// Past the entries the key holds, the packet is not read.
	add("mpls/four labels/ipv4", mplsKey(exL2Key(0), EtherTypeMPLS, 1<<12|1, 2<<12|2, 3<<12|3),
		exEth(layers.EthernetTypeMPLSUnicast), lse(1, 0, false, 1), lse(2, 0, false, 2), lse(3, 0, false, 3), lse(4, 0, true, 4),
		exIPv4(layers.IPProtocolTCP), exTCP(), exPayload).headerEnd = 30
	// A pseudowire's control word, not IP: the frame is MPLS all the same.
	add("mpls/control word", mplsKey(exL2Key(0), EtherTypeMPLS, 7<<12|1<<8|64),
		exEth(layers.EthernetTypeMPLSUnicast), lse(7, 0, true, 64), gopacket.Payload{0, 0, 0, 0}, exPayload).headerEnd = 18

	for _, c := range cases {
		if c.headerEnd <= 0 {
			tb.Fatalf("%s: no header end", c.name)
		}
	}
	return cases
}

// exMalformed are frames that lie, with what can still be read of them.
func exMalformed(tb testing.TB) []exCase {
	ipv4TCP := exSerialize(tb, exEth(layers.EthernetTypeIPv4), exIPv4(layers.IPProtocolTCP), exTCP(), exPayload)
	ipv6TCP := exSerialize(tb, exEth(layers.EthernetTypeIPv6), exIPv6(layers.IPProtocolTCP), exTCP(), exPayload)
	edit := func(frame []byte, set func(f []byte)) []byte {
		f := bytes.Clone(frame)
		set(f)
		return f
	}
	const ip, ip6, tcp = 14, 14, 14 + 20 // where the headers start
	mplsIPv4 := exSerialize(tb, exEth(layers.EthernetTypeMPLSUnicast), &layers.MPLS{Label: 100, StackBottom: true},
		exIPv4(layers.IPProtocolTCP), exTCP(), exPayload)
	mplsKey := exWith(exL2Key(EtherTypeMPLS), func(k *Key) { k.MPLS = 100<<12 | 1<<8 })
	var stacked []gopacket.SerializableLayer
	stacked = append(stacked, exEth(layers.EthernetTypeDot1Q))
	for i := range 20 {
		typ := layers.EthernetTypeDot1Q
		if i == 19 {
			typ = layers.EthernetTypeIPv4
		}
		stacked = append(stacked, &layers.Dot1Q{VLANIdentifier: uint16(i + 1), Type: typ})
	}
	stacked = append(stacked, exIPv4(layers.IPProtocolUDP), exUDP(false), exPayload)

	l2 := exL2Key(EtherTypeIPv4)
	l3 := exIPv4Key(ProtoTCP, 0, 0)
	// A second source link-layer address makes the message's target and
	// addresses zero, as in OVS; cut before it, the message has them.
	sll := append([]byte{1, 1}, exMACA...)
	twoSources := exSerialize(tb, exEth(layers.EthernetTypeIPv6), exIPv6(layers.IPProtocolICMPv6),
		&layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(135, 0)},
		gopacket.Payload(slices.Concat([]byte{0, 0, 0, 0}, []byte(exIP6B), sll, []byte{2, 1}, []byte(exMACB), sll)))
	return []exCase{
		{name: "icmpv6/neighbour solicitation/two source addresses", frame: twoSources, ok: true,
			want: exIPv6Key(ProtoICMPv6, 135, 0)},
		// The options are the TCP header, and do not parse.
		{name: "ipv4/ihl 15", frame: edit(ipv4TCP, func(f []byte) { f[ip] = 0x4f }), want: l2},
		{name: "ipv4/ihl 3", frame: edit(ipv4TCP, func(f []byte) { f[ip] = 0x43 }), want: l2},
		{name: "ipv4/total length past the frame", frame: edit(ipv4TCP, func(f []byte) { f[ip+2] = 0x40 }),
			want: exIPv4Key(ProtoTCP, 43210, 443)},
		{name: "ipv4/total length under the header", frame: edit(ipv4TCP, func(f []byte) { f[ip+2], f[ip+3] = 0, 19 }), want: l2},
		{name: "ipv4/total length 0", frame: edit(ipv4TCP, func(f []byte) { f[ip+2], f[ip+3] = 0, 0 }), want: l2},
		{name: "ipv4/total length cuts tcp", frame: edit(ipv4TCP, func(f []byte) { f[ip+2], f[ip+3] = 0, 30 }), want: l3},
		{name: "ipv4/version 6", frame: edit(ipv4TCP, func(f []byte) { f[ip] = 0x65 }), want: l2},
		{name: "ipv4/tcp data offset 15", frame: edit(ipv4TCP, func(f []byte) { f[tcp+12] = 0xf0 }), want: l3},
		{name: "ipv4/tcp data offset 4", frame: edit(ipv4TCP, func(f []byte) { f[tcp+12] = 0x40 }), want: l3},
		{name: "ipv4/tcp cut", frame: ipv4TCP[:tcp+19], want: l3},
		// The key reads no TCP option: options that do not walk (the
		// payload taken for 16 bytes of them) harm nothing, as in OVS.
		{name: "ipv4/tcp options that do not walk", frame: edit(ipv4TCP, func(f []byte) { f[tcp+12] = 0x90 }), ok: true,
			want: exIPv4Key(ProtoTCP, 43210, 443)},
		{name: "ipv6/payload length past the frame", frame: edit(ipv6TCP, func(f []byte) { f[ip6+4] = 0x40 }),
			want: exIPv6Key(ProtoTCP, 43210, 443)},
		{name: "ipv6/payload length 0", frame: edit(ipv6TCP, func(f []byte) { f[ip6+4], f[ip6+5] = 0, 0 }),
			want: exL2Key(EtherTypeIPv6)},
		{name: "ipv6/version 4", frame: edit(ipv6TCP, func(f []byte) { f[ip6] = 0x42 }), want: exL2Key(EtherTypeIPv6)},
		// gopacket reads the ICMPv6 header from the trailer.
		{name: "ipv6/hop-by-hop/no icmpv6 header/trailer", frame: append(exSerialize(tb,
			exEth(layers.EthernetTypeIPv6), exIPv6(layers.IPProtocolIPv6HopByHop),
			gopacket.Payload{byte(layers.IPProtocolICMPv6), 0, 5, 2, 0, 0, 1, 0}), 0x80, 0, 0, 0, 0, 0, 0, 0),
			want: exWith(exIPv6Key(ProtoICMPv6, 0, 0), func(k *Key) { k.IPv6ExtHdr = ExtHdrHop })},
		// As in OVS, the key looks through two tags: the third one's TPID
		// is its dl_type.
		{name: "20 stacked tags", frame: exSerialize(tb, stacked...), ok: true,
			want: exWith(exL2Key(EtherTypeVLAN), func(k *Key) { k.VLANTCI = VLANCFI | 1 })},
		{name: "arp/address sizes past the frame", frame: edit(
			exSerialize(tb, exEth(layers.EthernetTypeARP), &layers.ARP{AddrType: layers.LinkTypeEthernet,
				Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4, Operation: 1,
				SourceHwAddress: exMACA, DstHwAddress: exMACB, SourceProtAddress: exIP4A, DstProtAddress: exIP4B}),
			func(f []byte) { f[14+4] = 255 }), want: exL2Key(EtherTypeARP)},
		// What is under a label stack is no header of the frame's: a
		// packet there cut short is only not read.
		{name: "mpls/ipv4 total length past the frame", ok: true,
			frame: edit(mplsIPv4, func(f []byte) { f[18+2] = 0x40 }), want: mplsKey},
		{name: "mpls/ipv4 version 5", ok: true, frame: edit(mplsIPv4, func(f []byte) { f[18] = 0x55 }), want: mplsKey},
		{name: "mpls/no bottom of stack", frame: exSerialize(tb, exEth(layers.EthernetTypeMPLSUnicast),
			&layers.MPLS{Label: 100, TTL: 1}, &layers.MPLS{Label: 200, TTL: 2}),
			want: exWith(mplsKey, func(k *Key) { k.MPLS = 100<<12 | 1; k.setMPLSEntry(1, 200<<12|2) })},
		{name: "runt", frame: ipv4TCP[:13]},
		{name: "empty"},
	}
}

func TestExtract(t *testing.T) {
	e := NewExtractor()
	for _, c := range append(exWellFormed(t), exMalformed(t)...) {
		var k Key
		ok := e.Extract(c.frame, exInPort, &k)
		if ok != c.ok {
			t.Errorf("%s: ok = %v, want %v", c.name, ok, c.ok)
		}
		exCheckLayout(t, c.frame, &k, e.Layout())
		if l := e.Layout(); c.ok && (k.DlType == EtherTypeIPv4 || k.DlType == EtherTypeIPv6) && l.IPVersion == 0 {
			t.Errorf("%s: well formed IP, but the layout %+v has no IP header", c.name, l)
		}
		if c.name == "runt" || c.name == "empty" {
			c.want = Key{Headers: Headers{InPort: exInPort}}
		}
		if k != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, k, c.want)
		}
	}
}

// TestExtractRandomEtherTypes puts every EtherType in front of an IPv4/TCP
// body.
func TestExtractRandomEtherTypes(t *testing.T) {
	e := NewExtractor()
	frame := exSerialize(t, exEth(layers.EthernetTypeIPv4), exIPv4(layers.IPProtocolTCP), exTCP(), exPayload)
	for typ := range 1 << 16 {
		binary.BigEndian.PutUint16(frame[12:], uint16(typ))
		var k Key
		e.Extract(frame, exInPort, &k)
		want := uint16(typ)
		if want < 0x600 {
			want = dlTypeNone
		}
		// A tag is read from the IPv4 header.
		isVLAN := typ == EtherTypeVLAN || typ == int(layers.EthernetTypeQinQ)
		if k.DlType != want && !isVLAN {
			t.Fatalf("EtherType %#04x: DlType = %#04x, want %#04x", typ, k.DlType, want)
		}
		exCheckInvariants(t, &k, exInPort)
	}
}

// TestExtractTruncated cuts every well-formed frame at every byte: the key
// holds only fields of the whole frame's key, and a frame cut inside its
// headers is not well formed.
func TestExtractTruncated(t *testing.T) {
	e := NewExtractor()
	for _, c := range exWellFormed(t) {
		for n := range len(c.frame) {
			frame := bytes.Clone(c.frame[:n]) // exactly sized, so that reading past the end panics
			var k Key
			ok := e.Extract(frame, exInPort, &k)
			exCheckLayout(t, frame, &k, e.Layout())
			if n < c.headerEnd && ok {
				t.Errorf("%s cut at %d of %d: ok, want not well formed", c.name, n, len(c.frame))
			}
			if field, ok := exSubKey(&k, &c.want); !ok {
				t.Errorf("%s cut at %d: field %s = %v, neither zero nor the whole frame's\n got %+v\nwant %+v",
					c.name, n, field, reflect.ValueOf(k.Headers).FieldByName(field), k, c.want)
			}
			exCheckInvariants(t, &k, exInPort)
		}
	}
}

// exSubKey reports whether every field of k is zero or the one of whole,
// except those a cut frame changes: the EtherType after a cut tag, the
// protocol after a cut IPv6 extension header, and ipv6_exthdr, which has
// the bits of the headers named before the cut. It names the first one that is not.
func exSubKey(k, whole *Key) (string, bool) {
	kv, wv := reflect.ValueOf(k.Headers), reflect.ValueOf(whole.Headers)
	for i := range kv.NumField() {
		name := kv.Type().Field(i).Name
		if name == "DlType" || name == "NwProto" {
			continue
		}
		if name == "IPv6ExtHdr" {
			// The headers named before the cut.
			if k.IPv6ExtHdr&^whole.IPv6ExtHdr != 0 {
				return name, false
			}
			continue
		}
		if name == "NDTarget" && k.IsMPLS() {
			// A stack cut short has the entries before the cut.
			for j := 1; j < MaxMPLSLabels; j++ {
				if lse := k.MPLSEntry(j); lse != 0 && lse != whole.MPLSEntry(j) {
					return name, false
				}
			}
			continue
		}
		if f := kv.Field(i); !f.IsZero() && !f.Equal(wv.Field(i)) {
			return name, false
		}
	}
	return "", true
}

// exCheckInvariants checks what holds for the key of any frame.
func exCheckInvariants(tb testing.TB, k *Key, inPort uint16) {
	tb.Helper()
	if k.InPort != inPort {
		tb.Errorf("InPort = %d, want %d", k.InPort, inPort)
	}
	if k.NwFrag&^(FragAny|FragLater) != 0 || k.NwFrag == FragLater {
		tb.Errorf("NwFrag = %#x", k.NwFrag)
	}
	if k.NwFrag&FragLater != 0 && (k.TpSrc != 0 || k.TpDst != 0) {
		tb.Errorf("later fragment with L4 ports %d > %d", k.TpSrc, k.TpDst)
	}
	if k.VLANTCI != 0 && k.VLANTCI&VLANCFI == 0 {
		tb.Errorf("VLANTCI %#04x without CFI", k.VLANTCI)
	}
	if !k.IsMPLS() && k.MPLS != 0 || k.IsMPLS() && [8]byte(k.NDTarget[8:]) != [8]byte{} ||
		k.UnderMPLS != 0 && (!k.IsMPLS() || k.UnderMPLS != EtherTypeIPv4 && k.UnderMPLS != EtherTypeIPv6) {
		tb.Errorf("MPLS fields %#x %x under %#04x in a frame of type %#04x", k.MPLS, k.NDTarget, k.UnderMPLS, k.DlType)
	}
	if k.IsMPLS() {
		// The packet under the stack, if the key holds one, is the
		// frame's, to its fields; but nd_target's bytes hold the stack.
		under := *k
		under.DlType, under.UnderMPLS, under.MPLS, under.NDTarget = uint16(k.UnderMPLS), 0, 0, [16]byte{}
		k = &under
	}
	isIP := k.DlType == EtherTypeIPv4 || k.DlType == EtherTypeIPv6
	if !isIP && (k.NwTOS != 0 || k.NwTTL != 0 || k.NwFrag != 0 || k.TpSrc != 0 || k.TpDst != 0) {
		tb.Errorf("IP fields in a frame of type %#04x: %+v", k.DlType, k)
	}
	if k.DlType != EtherTypeIPv6 && (k.IPv6Src != [16]byte{} || k.IPv6Dst != [16]byte{}) {
		tb.Errorf("IPv6 addresses in a frame of type %#04x: %+v", k.DlType, k)
	}
	if k.DlType != EtherTypeIPv4 && k.DlType != EtherTypeARP && (k.NwSrc != [4]byte{} || k.NwDst != [4]byte{}) {
		tb.Errorf("IPv4 addresses in a frame of type %#04x: %+v", k.DlType, k)
	}
}

// exCheckLayout checks that the layout points at the headers the key was
// read from, whole.
func exCheckLayout(tb testing.TB, frame []byte, k *Key, l Layout) {
	tb.Helper()
	switch {
	case l.MPLS != k.IsMPLS():
		tb.Errorf("layout %+v: MPLS, but the key %+v is not, or the other way round", l, k)
	case l.MPLS && (l.Net != Net{}):
		tb.Errorf("layout %+v: headers above the label stack", l)
	case l.MPLS && k.UnderMPLS == 0 && (l.Under != Net{}):
		tb.Errorf("layout %+v: headers under the label stack, which the key %+v has not", l, k)
	case l.MPLS && k.UnderMPLS != 0:
		under := *k
		under.DlType, under.NDTarget = uint16(k.UnderMPLS), [16]byte{}
		exCheckLayout(tb, frame, &under, Layout{Net: l.Under})
		return
	case !l.MPLS && (l.Under != Net{}):
		tb.Errorf("layout %+v: headers under no label stack", l)
	}
	if l.EtherType != 0 && binary.BigEndian.Uint16(frame[int(l.EtherType):]) != k.DlType && !k.IsMPLS() && k.UnderMPLS == 0 {
		tb.Errorf("layout %+v: no EtherType %#04x there", l, k.DlType)
	}
	if l.ND && !k.IsND() || l.L4Proto == ProtoICMPv6 && !l.ND && k.NDTarget != [16]byte{} || !l.ND && (l.SLL != 0 || l.TLL != 0) {
		tb.Errorf("layout %+v: neighbour discovery, but the key %+v is not, or the other way round", l, k)
	}
	if l.ND && (l.L4+24 > len(frame) || k.NDTarget != [16]byte{} && [16]byte(frame[l.L4+8:]) != k.NDTarget ||
		l.SLL != 0 && (l.L4+int(l.SLL)+6 > len(frame) || [6]byte(frame[l.L4+int(l.SLL):]) != k.ArpSHA) ||
		l.TLL != 0 && (l.L4+int(l.TLL)+6 > len(frame) || [6]byte(frame[l.L4+int(l.TLL):]) != k.ArpTHA)) {
		tb.Errorf("layout %+v: no neighbour discovery message the key %+v was read from", l, k)
	}
	switch l.IPVersion {
	case 0:
		if l.L4Proto != 0 || l.ND {
			tb.Errorf("layout %+v: an L4 header without an IP header", l)
		}
		if !l.ARP && k.DlType == EtherTypeARP && k.NwProto != 0 {
			tb.Errorf("layout %+v: no ARP header, but the key %+v has one", l, k)
		}
		if l.ARP && (k.DlType != EtherTypeARP || l.L3+28 > len(frame) || [4]byte(frame[l.L3+14:]) != k.NwSrc ||
			[6]byte(frame[l.L3+8:]) != k.ArpSHA || [6]byte(frame[l.L3+18:]) != k.ArpTHA) {
			tb.Errorf("layout %+v: no ARP header the key %+v was read from", l, k)
		}
		return
	case 4:
		if k.DlType != EtherTypeIPv4 || l.L3+20 > len(frame) || frame[l.L3]>>4 != 4 ||
			l.L3+int(binary.BigEndian.Uint16(frame[l.L3+2:])) > len(frame) ||
			[4]byte(frame[l.L3+12:]) != k.NwSrc || [4]byte(frame[l.L3+16:]) != k.NwDst {
			tb.Errorf("layout %+v: no whole IPv4 header the key %+v was read from", l, k)
			return
		}
	case 6:
		if k.DlType != EtherTypeIPv6 || l.L3+40 > len(frame) || frame[l.L3]>>4 != 6 ||
			l.L3+40+int(binary.BigEndian.Uint16(frame[l.L3+4:])) > len(frame) ||
			[16]byte(frame[l.L3+8:]) != k.IPv6Src || [16]byte(frame[l.L3+24:]) != k.IPv6Dst {
			tb.Errorf("layout %+v: no whole IPv6 header the key %+v was read from", l, k)
			return
		}
	default:
		tb.Errorf("layout %+v: IP version %d", l, l.IPVersion)
		return
	}
	switch l.L4Proto {
	case 0:
		if k.NwFrag&FragLater == 0 && (k.NwProto == ProtoTCP || k.NwProto == ProtoUDP) && k.TpSrc|k.TpDst != 0 {
			tb.Errorf("layout %+v: no L4 header for the key's ports %+v", l, k)
		}
	case ProtoTCP, ProtoUDP:
		if l.L4Proto != k.NwProto || l.L4 < l.L3+20 || l.L4+8 > len(frame) ||
			binary.BigEndian.Uint16(frame[l.L4:]) != k.TpSrc || binary.BigEndian.Uint16(frame[l.L4+2:]) != k.TpDst {
			tb.Errorf("layout %+v: no L4 header the key %+v was read from", l, k)
		}
	case ProtoSCTP:
		if k.NwProto != ProtoSCTP || l.L4 < l.L3+20 || l.L4+12 > len(frame) ||
			binary.BigEndian.Uint16(frame[l.L4:]) != k.TpSrc || binary.BigEndian.Uint16(frame[l.L4+2:]) != k.TpDst {
			tb.Errorf("layout %+v: no SCTP header the key %+v was read from", l, k)
		}
	case ProtoICMP, ProtoICMPv6:
		if l.IPVersion != map[uint8]uint8{ProtoICMP: 4, ProtoICMPv6: 6}[l.L4Proto] || k.NwProto != l.L4Proto ||
			l.L4 < l.L3+20 || l.L4+4 > len(frame) || uint16(frame[l.L4]) != k.TpSrc || uint16(frame[l.L4+1]) != k.TpDst {
			tb.Errorf("layout %+v: no ICMP header the key %+v was read from", l, k)
		}
	default:
		tb.Errorf("layout %+v: L4 protocol %d", l, l.L4Proto)
	}
}

func TestExtractAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates")
	}
	e := NewExtractor()
	for _, c := range append(exWellFormed(t), exMalformed(t)...) {
		if c.allocates || !c.ok {
			continue
		}
		var k Key
		if allocs := testing.AllocsPerRun(100, func() { e.Extract(c.frame, exInPort, &k) }); allocs != 0 {
			t.Errorf("%s: %v allocations per frame, want 0", c.name, allocs)
		}
	}
}

func BenchmarkExtract(b *testing.B) {
	frames := map[string][]byte{}
	for _, c := range exWellFormed(b) {
		frames[c.name] = c.frame
	}
	for _, name := range []string{
		"ipv4/tcp", "vlan/ipv4/udp", "ipv6/tcp", "arp", "icmp", "icmpv6/neighbour solicitation",
		"ipv6/later fragment", "ipv6/hop-by-hop/mldv2", "mpls/ipv4/tcp", "mplsm/two labels/ipv6/udp",
	} {
		frame := frames[name]
		b.Run(name, func(b *testing.B) {
			e := NewExtractor()
			var k Key
			b.ReportAllocs()
			for b.Loop() {
				e.Extract(frame, exInPort, &k)
			}
		})
	}
}

func FuzzExtract(f *testing.F) {
	wellFormed := exWellFormed(f)
	for _, c := range append(wellFormed, exMalformed(f)...) {
		f.Add(c.frame)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e := NewExtractor()
		frame := bytes.Clone(data) // exactly sized, so that reading past the end panics
		var k Key
		e.Extract(frame, exInPort, &k)
		exCheckInvariants(t, &k, exInPort)
		exCheckLayout(t, frame, &k, e.Layout())

		// Nothing of one frame leaks into the key of the next.
		var other, again Key
		e.Extract(wellFormed[0].frame, 1, &other)
		e.Extract(frame, exInPort, &again)
		if again != k {
			t.Errorf("same frame, another key after another frame:\n got %+v\nwant %+v", again, k)
		}
		if !bytes.Equal(frame, data) {
			t.Error("Extract changed the frame")
		}
	})
}
