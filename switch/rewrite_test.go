package vswitch

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"net"
	"slices"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/header"
	"github.com/xswitch/xswitch/internal/race"
)

// The rewrite tests describe a frame as a frameSpec and serialize it with
// gopacket, checksums computed from scratch. A rewrite is right when the
// frame it produces equals, byte for byte, the frame serialized from the
// spec with the field changed: that checks at once that the field changed,
// that nothing else did, and that the incremental checksums equal full
// recomputation.

type vlanTag struct{ tpid, tci uint16 }

type fragKind uint8

const (
	unfragmented fragKind = iota
	firstFragment
	laterFragment
)

type frameSpec struct {
	dlDst, dlSrc  [6]byte
	tags          []vlanTag // outermost first
	v6            bool
	ipOptionWords int  // IPv4: 4-byte words of NOP options
	hopByHop      bool // IPv6: a hop-by-hop options header first
	proto         layers.IPProtocol
	udpNoChecksum bool
	ip4Src        [4]byte
	ip4Dst        [4]byte
	ip6Src        [16]byte
	ip6Dst        [16]byte
	ttl           uint8
	tos           uint8 // IPv4 TOS, IPv6 traffic class
	flowLabel     uint32
	tpSrc, tpDst  uint16 // TCP, UDP and SCTP ports
	icmpType      uint8
	icmpCode      uint8
	payload       []byte
	frag          fragKind
	fragLen       int // upper-layer bytes in the first fragment, a multiple of 8
	padding       int // Ethernet padding after the IP packet
}

func (s frameSpec) String() string {
	ip := "ipv4"
	if s.v6 {
		ip = "ipv6"
	}
	return fmt.Sprintf("{tags %x %s options %d hbh %v %v nocsum %v ttl %d label %#x ports %d>%d icmp %d/%d payload %d frag %d/%d pad %d}",
		s.tags, ip, s.ipOptionWords, s.hopByHop, s.proto, s.udpNoChecksum, s.ttl, s.flowLabel, s.tpSrc, s.tpDst,
		s.icmpType, s.icmpCode, len(s.payload), s.frag, s.fragLen, s.padding)
}

func (s frameSpec) l3() int { return header.EthernetLen + header.VLANTagLen*len(s.tags) }

// ipHeaderLen includes the IPv6 hop-by-hop header.
func (s frameSpec) ipHeaderLen() int {
	switch {
	case !s.v6:
		return header.IPv4MinLen + 4*s.ipOptionWords
	case s.hopByHop:
		return header.IPv6Len + 16
	}
	return header.IPv6Len
}

func (s frameSpec) l3Visible() bool { return len(s.tags) <= flow.MaxVLANTags }

func (s frameSpec) hasPorts() bool {
	return s.proto == layers.IPProtocolTCP || s.proto == layers.IPProtocolUDP || s.proto == layers.IPProtocolSCTP
}

func (s frameSpec) isICMP() bool {
	return s.proto == layers.IPProtocolICMPv4 || s.proto == layers.IPProtocolICMPv6
}

func (s frameSpec) withTags(tags []vlanTag) frameSpec {
	s.tags = tags
	return s
}

// build serializes s, with room for a VLAN tag to be pushed.
func (s frameSpec) build(t testing.TB) []byte {
	t.Helper()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	var network gopacket.NetworkLayer
	var ipLayer gopacket.SerializableLayer
	etherType := uint16(header.EtherTypeIPv4)
	if s.v6 {
		ip := &layers.IPv6{Version: 6, NextHeader: s.proto, HopLimit: s.ttl, TrafficClass: s.tos, FlowLabel: s.flowLabel,
			SrcIP: net.IP(slices.Clone(s.ip6Src[:])), DstIP: net.IP(slices.Clone(s.ip6Dst[:]))}
		if s.hopByHop {
			ip.NextHeader = layers.IPProtocolIPv6HopByHop
		}
		network, ipLayer, etherType = ip, ip, header.EtherTypeIPv6
	} else {
		ip := &layers.IPv4{Version: 4, TTL: s.ttl, TOS: s.tos, Protocol: s.proto,
			SrcIP: net.IP(slices.Clone(s.ip4Src[:])), DstIP: net.IP(slices.Clone(s.ip4Dst[:]))}
		for range 4 * s.ipOptionWords {
			ip.Options = append(ip.Options, layers.IPv4Option{OptionType: 1})
		}
		network, ipLayer = ip, ip
	}

	var l4 gopacket.SerializableLayer
	switch s.proto {
	case layers.IPProtocolTCP:
		tcp := &layers.TCP{SrcPort: layers.TCPPort(s.tpSrc), DstPort: layers.TCPPort(s.tpDst),
			Seq: 1000, Ack: 2000, ACK: true, PSH: true, Window: 512}
		if err := tcp.SetNetworkLayerForChecksum(network); err != nil {
			t.Fatal(err)
		}
		l4 = tcp
	case layers.IPProtocolUDP:
		udp := &layers.UDP{SrcPort: layers.UDPPort(s.tpSrc), DstPort: layers.UDPPort(s.tpDst)}
		if err := udp.SetNetworkLayerForChecksum(network); err != nil {
			t.Fatal(err)
		}
		l4 = udp
	case layers.IPProtocolSCTP:
		l4 = &layers.SCTP{SrcPort: layers.SCTPPort(s.tpSrc), DstPort: layers.SCTPPort(s.tpDst), VerificationTag: 0xdeadbeef}
	case layers.IPProtocolICMPv4:
		l4 = &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(s.icmpType, s.icmpCode), Id: 7, Seq: 1}
	case layers.IPProtocolICMPv6:
		icmp := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(s.icmpType, s.icmpCode)}
		if err := icmp.SetNetworkLayerForChecksum(network); err != nil {
			t.Fatal(err)
		}
		l4 = icmp
	default:
		t.Fatalf("frameSpec: no protocol %v", s.proto)
	}
	l4Buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(l4Buf, opts, l4, gopacket.Payload(s.payload)); err != nil {
		t.Fatal(err)
	}
	ipPayload := l4Buf.Bytes()
	if s.proto == layers.IPProtocolUDP {
		switch {
		case s.udpNoChecksum:
			binary.BigEndian.PutUint16(ipPayload[header.UDPChecksumOffset:], 0)
		case binary.BigEndian.Uint16(ipPayload[header.UDPChecksumOffset:]) == 0:
			// gopacket sends a computed 0 as is; RFC 768 says 0xffff.
			binary.BigEndian.PutUint16(ipPayload[header.UDPChecksumOffset:], 0xffff)
		}
	}
	if s.hopByHop {
		// 16 bytes: a PadN option of 12 bytes.
		hopByHop := append([]byte{byte(s.proto), 1, 1, 12}, make([]byte, 12)...)
		ipPayload = append(hopByHop, ipPayload...)
	}
	ipBuf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(ipBuf, opts, ipLayer, gopacket.Payload(ipPayload)); err != nil {
		t.Fatal(err)
	}
	packet := ipBuf.Bytes()
	checkChecksums(t, s, packet)
	packet = s.fragment(packet)

	frame := make([]byte, 0, s.l3()+len(packet)+s.padding+header.VLANTagLen)
	frame = append(frame, s.dlDst[:]...)
	frame = append(frame, s.dlSrc[:]...)
	for _, tag := range s.tags {
		frame = binary.BigEndian.AppendUint16(frame, tag.tpid)
		frame = binary.BigEndian.AppendUint16(frame, tag.tci)
	}
	frame = binary.BigEndian.AppendUint16(frame, etherType)
	frame = append(frame, packet...)
	return append(frame, make([]byte, s.padding)...)
}

// fragment cuts the IP packet as s.frag says, keeping the fragment asked for.
func (s frameSpec) fragment(packet []byte) []byte {
	if s.frag == unfragmented {
		return packet
	}
	hl := s.ipHeaderLen()
	ipHeader, upper := slices.Clone(packet[:hl]), packet[hl:]
	data := upper[:s.fragLen]
	if s.frag == laterFragment {
		data = upper[s.fragLen:]
	}
	if !s.v6 {
		flags := uint16(0x2000) // more fragments, offset 0
		if s.frag == laterFragment {
			flags = uint16(s.fragLen / 8)
		}
		ip := header.IPv4(ipHeader)
		binary.BigEndian.PutUint16(ip[header.IPv4FlagsOffset:], flags)
		ip.SetTotalLen(uint16(hl + len(data)))
		ip.SetChecksum(ip.ComputeChecksum())
		return append(ipHeader, data...)
	}
	nextHeaderField := header.IPv6NextHeaderOffset
	if s.hopByHop {
		nextHeaderField = header.IPv6Len
	}
	fragHeader := []byte{ipHeader[nextHeaderField], 0, 0, 1, 0, 0, 0, 42} // offset 0, more fragments
	if s.frag == laterFragment {
		binary.BigEndian.PutUint16(fragHeader[2:], uint16(s.fragLen))
	}
	ipHeader[nextHeaderField] = header.ProtoIPv6Fragment
	header.IPv6(ipHeader).SetPayloadLen(uint16(hl - header.IPv6Len + header.IPv6FragmentLen + len(data)))
	return append(append(ipHeader, fragHeader...), data...)
}

// checkChecksums recomputes the checksums of an unfragmented packet from
// scratch, checking gopacket's (and the way the tests use it).
func checkChecksums(t testing.TB, s frameSpec, packet []byte) {
	t.Helper()
	hl := s.ipHeaderLen()
	if !s.v6 {
		if got, want := binary.BigEndian.Uint16(packet[header.IPv4ChecksumOffset:]), referenceChecksum(0, packet[:hl], header.IPv4ChecksumOffset); got != want {
			t.Fatalf("%v: IPv4 header checksum %#04x, recomputed %#04x", s, got, want)
		}
	}
	upper := packet[hl:]
	var pseudo uint32
	if s.v6 {
		pseudo = header.Sum(0, packet[header.IPv6SrcOffset:header.IPv6Len])
	} else {
		pseudo = header.Sum(0, packet[header.IPv4SrcOffset:header.IPv4MinLen])
	}
	pseudo += uint32(s.proto) + uint32(len(upper))
	csumOff := header.ICMPChecksumOffset
	if s.proto == layers.IPProtocolSCTP {
		sctp := slices.Clone(upper)
		stored := binary.LittleEndian.Uint32(sctp[header.SCTPChecksumOffset:])
		clear(sctp[header.SCTPChecksumOffset : header.SCTPChecksumOffset+4])
		if want := crc32.Checksum(sctp, crc32.MakeTable(crc32.Castagnoli)); stored != want {
			t.Fatalf("%v: SCTP CRC32c %#08x, recomputed %#08x", s, stored, want)
		}
		return
	}
	switch s.proto {
	case layers.IPProtocolTCP:
		csumOff = header.TCPChecksumOffset
	case layers.IPProtocolUDP:
		csumOff = header.UDPChecksumOffset
	case layers.IPProtocolICMPv4:
		pseudo = 0
	}
	got := binary.BigEndian.Uint16(upper[csumOff:])
	want := referenceChecksum(pseudo, upper, csumOff)
	if s.proto == layers.IPProtocolUDP {
		if s.udpNoChecksum {
			want = 0
		} else if want == 0 {
			want = 0xffff
		}
	}
	if got != want {
		t.Fatalf("%v: %v checksum %#04x, recomputed %#04x", s, s.proto, got, want)
	}
}

// referenceChecksum computes the checksum of data, whose checksum field is
// at csumOff, from scratch.
func referenceChecksum(pseudo uint32, data []byte, csumOff int) uint16 {
	data = slices.Clone(data)
	data[csumOff], data[csumOff+1] = 0, 0
	return header.Checksum(pseudo, data)
}

// rewriteAction is one rewrite with its arguments, and what it must do to
// a frame's spec.
type rewriteAction struct {
	name    string
	needsIP bool
	apply   func(frame []byte, l *flow.Layout) ([]byte, bool)
	expect  func(s frameSpec) (frameSpec, bool)
}

// layoutOf is where the extractor finds frame's headers: what the
// forwarder hands the rewrites.
func layoutOf(frame []byte) *flow.Layout {
	e := flow.NewExtractor()
	var k flow.Key
	e.Extract(frame, 1, &k)
	l := e.Layout()
	return &l
}

func dlSrcAction(mac [6]byte) rewriteAction {
	return rewriteAction{
		name:   fmt.Sprintf("setDlSrc(%x)", mac),
		apply:  func(f []byte, _ *flow.Layout) ([]byte, bool) { setDlSrc(f, mac); return f, true },
		expect: func(s frameSpec) (frameSpec, bool) { s.dlSrc = mac; return s, true },
	}
}

func dlDstAction(mac [6]byte) rewriteAction {
	return rewriteAction{
		name:   fmt.Sprintf("setDlDst(%x)", mac),
		apply:  func(f []byte, _ *flow.Layout) ([]byte, bool) { setDlDst(f, mac); return f, true },
		expect: func(s frameSpec) (frameSpec, bool) { s.dlDst = mac; return s, true },
	}
}

func nwSrcAction(ip [4]byte) rewriteAction {
	return rewriteAction{
		name:    fmt.Sprintf("setNwSrc(%v)", net.IP(ip[:])),
		needsIP: true,
		apply:   func(f []byte, l *flow.Layout) ([]byte, bool) { setNwSrc(f, l, ip); return f, true },
		expect: func(s frameSpec) (frameSpec, bool) {
			if s.l3Visible() && !s.v6 {
				s.ip4Src = ip
			}
			return s, true
		},
	}
}

func nwDstAction(ip [4]byte) rewriteAction {
	return rewriteAction{
		name:    fmt.Sprintf("setNwDst(%v)", net.IP(ip[:])),
		needsIP: true,
		apply:   func(f []byte, l *flow.Layout) ([]byte, bool) { setNwDst(f, l, ip); return f, true },
		expect: func(s frameSpec) (frameSpec, bool) {
			if s.l3Visible() && !s.v6 {
				s.ip4Dst = ip
			}
			return s, true
		},
	}
}

func ip6Action(dst bool, ip [16]byte) rewriteAction {
	addr := flow.Value{Hi: binary.BigEndian.Uint64(ip[:8]), Lo: binary.BigEndian.Uint64(ip[8:])}
	name, set := "setIPv6Src", setIPv6Src
	if dst {
		name, set = "setIPv6Dst", setIPv6Dst
	}
	return rewriteAction{
		name:    fmt.Sprintf("%s(%v)", name, net.IP(ip[:])),
		needsIP: true,
		apply:   func(f []byte, l *flow.Layout) ([]byte, bool) { set(f, l, addr); return f, true },
		expect: func(s frameSpec) (frameSpec, bool) {
			if s.l3Visible() && s.v6 {
				if dst {
					s.ip6Dst = ip
				} else {
					s.ip6Src = ip
				}
			}
			return s, true
		},
	}
}

func tpSrcAction(port uint16) rewriteAction {
	return rewriteAction{
		name:    fmt.Sprintf("setTpSrc(%d)", port),
		needsIP: true,
		apply:   func(f []byte, l *flow.Layout) ([]byte, bool) { setTpSrc(f, l, port); return f, true },
		expect: func(s frameSpec) (frameSpec, bool) {
			if s.l3Visible() && s.hasPorts() && s.frag != laterFragment {
				s.tpSrc = port
			}
			return s, true
		},
	}
}

func tpDstAction(port uint16) rewriteAction {
	return rewriteAction{
		name:    fmt.Sprintf("setTpDst(%d)", port),
		needsIP: true,
		apply:   func(f []byte, l *flow.Layout) ([]byte, bool) { setTpDst(f, l, port); return f, true },
		expect: func(s frameSpec) (frameSpec, bool) {
			if s.l3Visible() && s.hasPorts() && s.frag != laterFragment {
				s.tpDst = port
			}
			return s, true
		},
	}
}

var decTTLAction = rewriteAction{
	name:    "decTTL",
	needsIP: true,
	apply:   func(f []byte, l *flow.Layout) ([]byte, bool) { return f, decTTL(f, l) },
	expect: func(s frameSpec) (frameSpec, bool) {
		if !s.l3Visible() {
			return s, true
		}
		if s.ttl <= 1 {
			return s, false
		}
		s.ttl--
		return s, true
	},
}

func pushVLANAction(tpid uint16) rewriteAction {
	return rewriteAction{
		name:  fmt.Sprintf("pushVLAN(%#04x)", tpid),
		apply: func(f []byte, _ *flow.Layout) ([]byte, bool) { return pushVLAN(f, tpid) },
		expect: func(s frameSpec) (frameSpec, bool) {
			var tci uint16
			if len(s.tags) > 0 {
				tci = s.tags[0].tci
			}
			return s.withTags(append([]vlanTag{{tpid, tci}}, s.tags...)), true
		},
	}
}

var stripVLANAction = rewriteAction{
	name:  "stripVLAN",
	apply: func(f []byte, _ *flow.Layout) ([]byte, bool) { return stripVLAN(f), true },
	expect: func(s frameSpec) (frameSpec, bool) {
		if len(s.tags) == 0 {
			return s, true
		}
		return s.withTags(s.tags[1:]), true
	},
}

func setVLANVIDAction(vid uint16) rewriteAction {
	return rewriteAction{
		name:  fmt.Sprintf("setVLANVID(%d)", vid),
		apply: func(f []byte, _ *flow.Layout) ([]byte, bool) { return setVLANVID(f, vid) },
		expect: func(s frameSpec) (frameSpec, bool) {
			if len(s.tags) == 0 {
				return s.withTags([]vlanTag{{header.EtherTypeVLAN, vid & header.VLANVIDMask}}), true
			}
			tags := slices.Clone(s.tags)
			tags[0].tci = tags[0].tci&^header.VLANVIDMask | vid&header.VLANVIDMask
			return s.withTags(tags), true
		},
	}
}

func setTOSAction(name string, mask, value uint8) rewriteAction {
	return rewriteAction{
		name:    fmt.Sprintf("%s(%#x)", name, value),
		needsIP: true,
		apply:   func(f []byte, l *flow.Layout) ([]byte, bool) { setTOS(f, l, mask, value); return f, true },
		expect: func(s frameSpec) (frameSpec, bool) {
			if s.l3Visible() {
				s.tos = s.tos&^mask | value&mask
			}
			return s, true
		},
	}
}

func setTTLAction(ttl uint8) rewriteAction {
	return rewriteAction{
		name:    fmt.Sprintf("setTTL(%d)", ttl),
		needsIP: true,
		apply:   func(f []byte, l *flow.Layout) ([]byte, bool) { setTTL(f, l, ttl); return f, true },
		expect: func(s frameSpec) (frameSpec, bool) {
			if s.l3Visible() {
				s.ttl = ttl
			}
			return s, true
		},
	}
}

func setVLANPCPAction(pcp uint8) rewriteAction {
	return rewriteAction{
		name:  fmt.Sprintf("setVLANPCP(%d)", pcp),
		apply: func(f []byte, _ *flow.Layout) ([]byte, bool) { return setVLANPCP(f, pcp) },
		expect: func(s frameSpec) (frameSpec, bool) {
			tags := slices.Clone(s.tags)
			if len(tags) == 0 {
				tags = []vlanTag{{header.EtherTypeVLAN, 0}}
			}
			tags[0].tci = tags[0].tci&^header.VLANPCPMask | uint16(pcp&7)<<header.VLANPCPShift
			return s.withTags(tags), true
		},
	}
}

// fieldAction is the write of v into field name where its flow.InFrame
// says: what the pipeline makes of set_field to a field without an
// action of its own. set changes the spec as the write must.
func fieldAction(name string, v uint64, set func(s *frameSpec)) rewriteAction {
	f, ok := flow.FieldByName(name)
	if !ok || f.Frame == nil {
		panic("no field " + name + " written where it is in the frame")
	}
	return rewriteAction{
		name:    fmt.Sprintf("setField(%s, %#x)", name, v),
		needsIP: true,
		apply:   func(fr []byte, l *flow.Layout) ([]byte, bool) { setField(fr, l, f, flow.Value{Lo: v}); return fr, true },
		expect: func(s frameSpec) (frameSpec, bool) {
			if s.l3Visible() {
				set(&s)
			}
			return s, true
		},
	}
}

func icmpTypeAction(name string, typ uint8) rewriteAction {
	return fieldAction(name, uint64(typ), func(s *frameSpec) {
		if s.isICMP() && s.frag != laterFragment {
			s.icmpType = typ
		}
	})
}

func icmpCodeAction(name string, code uint8) rewriteAction {
	return fieldAction(name, uint64(code), func(s *frameSpec) {
		if s.isICMP() && s.frag != laterFragment {
			s.icmpCode = code
		}
	})
}

func sctpPortAction(dst bool, port uint16) rewriteAction {
	name := "sctp_src"
	if dst {
		name = "sctp_dst"
	}
	return fieldAction(name, uint64(port), func(s *frameSpec) {
		switch {
		case s.proto != layers.IPProtocolSCTP || s.frag == laterFragment:
		case dst:
			s.tpDst = port
		default:
			s.tpSrc = port
		}
	})
}

func flowLabelAction(label uint32) rewriteAction {
	return fieldAction("ipv6_label", uint64(label), func(s *frameSpec) {
		if s.v6 {
			s.flowLabel = label
		}
	})
}

// fixedActions covers each rewrite with ordinary and extreme arguments, and
// with arguments equal to the fields of the base spec.
func fixedActions() []rewriteAction {
	return []rewriteAction{
		icmpTypeAction("icmp_type", 0),
		icmpTypeAction("icmpv6_type", 0xff),
		icmpCodeAction("icmp_code", 3),
		icmpCodeAction("icmpv6_code", 0),
		sctpPortAction(false, 0),
		sctpPortAction(true, 0xffff),
		sctpPortAction(false, baseSpec().tpSrc),
		flowLabelAction(0),
		flowLabelAction(0xfffff),
		flowLabelAction(0x12345),
		dlSrcAction([6]byte{0x02, 0, 0, 0, 0, 0x99}),
		dlDstAction([6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}),
		nwSrcAction([4]byte{192, 0, 2, 99}),
		nwSrcAction([4]byte{}),
		nwSrcAction(baseSpec().ip4Src),
		nwDstAction([4]byte{255, 255, 255, 255}),
		nwDstAction([4]byte{198, 51, 100, 7}),
		ip6Action(false, [16]byte{0: 0x20, 1: 0x01, 2: 0x0d, 3: 0xb8, 15: 0x99}),
		ip6Action(true, [16]byte{0: 0xff, 1: 0xff, 15: 0xff}),
		ip6Action(false, baseSpec().ip6Src),
		tpSrcAction(0),
		tpSrcAction(baseSpec().tpSrc),
		tpSrcAction(0xffff),
		tpDstAction(80),
		tpDstAction(0x8000),
		decTTLAction,
		pushVLANAction(header.EtherTypeVLAN),
		pushVLANAction(header.EtherTypeQinQ),
		stripVLANAction,
		setVLANVIDAction(0),
		setVLANVIDAction(100),
		setVLANVIDAction(0xffff),
		setVLANPCPAction(0),
		setVLANPCPAction(5),
		setTOSAction("setDSCP", header.DSCPMask, 0xb8),
		setTOSAction("setDSCP", header.DSCPMask, 0),
		setTOSAction("setECN", header.ECNMask, 3),
		setTOSAction("setECN", header.ECNMask, 0),
		setTTLAction(1),
		setTTLAction(255),
	}
}

func baseSpec() frameSpec {
	return frameSpec{
		dlDst:     [6]byte{0x02, 0, 0, 0, 0, 2},
		dlSrc:     [6]byte{0x02, 0, 0, 0, 0, 1},
		proto:     layers.IPProtocolTCP,
		ip4Src:    [4]byte{10, 0, 0, 1},
		ip4Dst:    [4]byte{10, 0, 0, 2},
		ip6Src:    [16]byte{0: 0xfd, 15: 1},
		ip6Dst:    [16]byte{0: 0xfd, 15: 2},
		ttl:       64,
		tpSrc:     40000,
		tpDst:     443,
		icmpType:  8,
		flowLabel: 0xabcde,
		payload:   []byte("0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz"),
	}
}

// namedSpecs are the hand-picked frames every rewrite is tried on.
func namedSpecs() map[string]frameSpec {
	specs := map[string]frameSpec{}
	add := func(name string, edit func(s *frameSpec)) {
		s := baseSpec()
		edit(&s)
		specs[name] = s
	}
	add("ipv4/tcp", func(s *frameSpec) {})
	add("ipv4/udp", func(s *frameSpec) { s.proto = layers.IPProtocolUDP })
	add("ipv4/udp without checksum", func(s *frameSpec) { s.proto, s.udpNoChecksum = layers.IPProtocolUDP, true })
	add("ipv4 with options/tcp", func(s *frameSpec) { s.ipOptionWords = 3 })
	add("ipv4 with 40 bytes of options/udp", func(s *frameSpec) { s.ipOptionWords, s.proto = 10, layers.IPProtocolUDP })
	add("ipv4/icmp", func(s *frameSpec) { s.proto = layers.IPProtocolICMPv4 })
	add("ipv4/udp padded", func(s *frameSpec) { s.proto, s.payload, s.padding = layers.IPProtocolUDP, []byte{1}, 17 })
	add("ipv4 ttl 1", func(s *frameSpec) { s.ttl = 1 })
	add("ipv4 ttl 0", func(s *frameSpec) { s.ttl = 0 })
	add("ipv4 tos 0xb9/udp", func(s *frameSpec) { s.tos, s.proto = 0xb9, layers.IPProtocolUDP })
	add("ipv6 traffic class 0x2e/tcp", func(s *frameSpec) { s.v6, s.tos = true, 0x2e })
	add("ipv4 first fragment/tcp", func(s *frameSpec) { s.frag, s.fragLen = firstFragment, 32 })
	add("ipv4 later fragment/tcp", func(s *frameSpec) { s.frag, s.fragLen = laterFragment, 32 })
	add("ipv4 first fragment/udp", func(s *frameSpec) { s.proto, s.frag, s.fragLen = layers.IPProtocolUDP, firstFragment, 8 })
	add("ipv6/tcp", func(s *frameSpec) { s.v6 = true })
	add("ipv6/udp", func(s *frameSpec) { s.v6, s.proto = true, layers.IPProtocolUDP })
	add("ipv6/udp without checksum", func(s *frameSpec) { s.v6, s.proto, s.udpNoChecksum = true, layers.IPProtocolUDP, true })
	add("ipv6 hop-by-hop/tcp", func(s *frameSpec) { s.v6, s.hopByHop = true, true })
	add("ipv6/icmpv6", func(s *frameSpec) { s.v6, s.proto, s.icmpType = true, layers.IPProtocolICMPv6, 128 })
	add("ipv4/icmp port unreachable", func(s *frameSpec) { s.proto, s.icmpType, s.icmpCode = layers.IPProtocolICMPv4, 3, 3 })
	add("ipv4 first fragment/icmp", func(s *frameSpec) { s.proto, s.frag, s.fragLen = layers.IPProtocolICMPv4, firstFragment, 16 })
	add("ipv4/sctp", func(s *frameSpec) { s.proto = layers.IPProtocolSCTP })
	add("ipv4 with options/sctp", func(s *frameSpec) { s.proto, s.ipOptionWords = layers.IPProtocolSCTP, 2 })
	add("ipv4/sctp padded", func(s *frameSpec) { s.proto, s.payload, s.padding = layers.IPProtocolSCTP, []byte{1}, 17 })
	add("ipv6/sctp", func(s *frameSpec) { s.v6, s.proto = true, layers.IPProtocolSCTP })
	add("ipv6 hop-by-hop/sctp", func(s *frameSpec) { s.v6, s.hopByHop, s.proto = true, true, layers.IPProtocolSCTP })
	add("ipv6 later fragment/sctp", func(s *frameSpec) {
		s.v6, s.proto, s.frag, s.fragLen = true, layers.IPProtocolSCTP, laterFragment, 24
	})
	add("ipv6 hop limit 1", func(s *frameSpec) { s.v6, s.ttl = true, 1 })
	add("ipv6 first fragment/udp", func(s *frameSpec) {
		s.v6, s.proto, s.frag, s.fragLen = true, layers.IPProtocolUDP, firstFragment, 16
	})
	add("ipv6 later fragment/tcp", func(s *frameSpec) { s.v6, s.frag, s.fragLen = true, laterFragment, 24 })
	add("ipv6 hop-by-hop first fragment/tcp", func(s *frameSpec) {
		s.v6, s.hopByHop, s.frag, s.fragLen = true, true, firstFragment, 24
	})
	add("802.1q/ipv4/tcp", func(s *frameSpec) { s.tags = []vlanTag{{header.EtherTypeVLAN, 0xa00a}} })
	add("802.1q with DEI/ipv4/udp", func(s *frameSpec) {
		s.tags, s.proto = []vlanTag{{header.EtherTypeVLAN, 0x7fff}}, layers.IPProtocolUDP
	})
	add("802.1ad+802.1q/ipv6/udp", func(s *frameSpec) {
		s.tags, s.v6, s.proto = []vlanTag{{header.EtherTypeQinQ, 0x2064}, {header.EtherTypeVLAN, 0x000a}}, true, layers.IPProtocolUDP
	})
	add("802.1q+802.1q/ipv4 later fragment", func(s *frameSpec) {
		s.tags, s.frag, s.fragLen = []vlanTag{{header.EtherTypeVLAN, 1}, {header.EtherTypeVLAN, 2}}, laterFragment, 24
	})
	add("three tags/ipv4/tcp (beyond maxVLANTags)", func(s *frameSpec) {
		s.tags = []vlanTag{{header.EtherTypeQinQ, 1}, {header.EtherTypeVLAN, 2}, {header.EtherTypeVLAN, 3}}
	})
	return specs
}

// applyAndCheck applies a to the frame built from s and compares the
// result with the frame built from the spec a expects.
func applyAndCheck(t *testing.T, s frameSpec, a rewriteAction) {
	t.Helper()
	frame := s.build(t)
	got, keep := a.apply(frame, layoutOf(frame))
	wantSpec, wantKeep := a.expect(s)
	want := wantSpec.build(t)
	if keep != wantKeep {
		t.Errorf("%s on %v: keep = %v, want %v", a.name, s, keep, wantKeep)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s on %v:\n got %x\nwant %x", a.name, s, got, want)
	}
}

func TestRewritesMatchFullRecomputation(t *testing.T) {
	for name, s := range namedSpecs() {
		t.Run(name, func(t *testing.T) {
			for _, a := range fixedActions() {
				applyAndCheck(t, s, a)
			}
		})
	}
}

func randomSpec(r *rand.Rand) frameSpec {
	s := frameSpec{
		v6:      r.IntN(2) == 0,
		ttl:     uint8(r.Uint32()),
		tos:     uint8(r.Uint32()),
		tpSrc:   uint16(r.Uint32()),
		tpDst:   uint16(r.Uint32()),
		payload: make([]byte, r.IntN(1400)),
	}
	fillRandom(r, s.dlDst[:], s.dlSrc[:], s.ip4Src[:], s.ip4Dst[:], s.ip6Src[:], s.ip6Dst[:], s.payload)
	for range r.IntN(flow.MaxVLANTags + 2) {
		tpid := uint16(header.EtherTypeVLAN)
		if r.IntN(2) == 0 {
			tpid = header.EtherTypeQinQ
		}
		s.tags = append(s.tags, vlanTag{tpid, uint16(r.Uint32())})
	}
	headerLen := header.UDPLen
	switch r.IntN(4) {
	case 0:
		s.proto, headerLen = layers.IPProtocolTCP, header.TCPMinLen
	case 1:
		s.proto = layers.IPProtocolUDP
		s.udpNoChecksum = r.IntN(4) == 0
	case 2:
		s.proto = layers.IPProtocolICMPv4
		if s.v6 {
			s.proto = layers.IPProtocolICMPv6
		}
		// Not neighbour discovery, whose message the frame has not.
		s.icmpType, s.icmpCode = uint8(r.IntN(135)), uint8(r.Uint32())
	case 3:
		s.proto, headerLen = layers.IPProtocolSCTP, header.SCTPLen
	}
	s.flowLabel = r.Uint32() & header.IPv6FlowLabelMask
	if s.v6 {
		s.hopByHop = r.IntN(3) == 0
	} else {
		s.ipOptionWords = r.IntN(11)
	}
	// A first fragment carries the whole upper-layer header. An SCTP
	// packet's CRC32c covers all of it, which a first fragment has not:
	// its port rewrites are OVS's, not right (see rewrite.go).
	if upperLen := headerLen + len(s.payload); r.IntN(2) == 0 && upperLen > 32 {
		s.frag = firstFragment + fragKind(r.IntN(2))
		if s.proto == layers.IPProtocolSCTP {
			s.frag = laterFragment
		}
		s.fragLen = 8 * (3 + r.IntN((upperLen-25)/8))
	}
	if r.IntN(4) == 0 {
		s.padding = r.IntN(40)
	}
	return s
}

func randomAction(r *rand.Rand, s frameSpec) rewriteAction {
	var mac [6]byte
	var ip [4]byte
	var ip6 [16]byte
	fillRandom(r, mac[:], ip[:], ip6[:])
	port := uint16(r.Uint32())
	if r.IntN(8) == 0 {
		port = s.tpSrc
	}
	switch r.IntN(24) {
	case 17:
		return icmpTypeAction("icmp_type", uint8(r.Uint32()))
	case 18:
		return icmpCodeAction("icmpv6_code", uint8(r.Uint32()))
	case 19:
		return sctpPortAction(false, port)
	case 20:
		return sctpPortAction(true, port)
	case 21:
		return flowLabelAction(r.Uint32() & header.IPv6FlowLabelMask)
	case 22:
		return setTOSAction("setDSCP", header.DSCPMask, uint8(r.Uint32())) // beside the flow label
	case 15:
		return ip6Action(false, ip6)
	case 16:
		return ip6Action(true, ip6)
	case 0:
		return dlSrcAction(mac)
	case 1:
		return dlDstAction(mac)
	case 2:
		return nwSrcAction(ip)
	case 3:
		return nwDstAction(ip)
	case 4:
		return tpSrcAction(port)
	case 5:
		return tpDstAction(port)
	case 6:
		return decTTLAction
	case 7:
		return pushVLANAction(header.EtherTypeVLAN)
	case 8:
		return pushVLANAction(header.EtherTypeQinQ)
	case 9:
		return stripVLANAction
	case 10:
		return setTOSAction("setDSCP", header.DSCPMask, uint8(r.Uint32()))
	case 11:
		return setTOSAction("setECN", header.ECNMask, uint8(r.Uint32()))
	case 12:
		return setTTLAction(uint8(r.Uint32()))
	case 13:
		return setVLANPCPAction(uint8(r.IntN(8)))
	}
	return setVLANVIDAction(uint16(r.Uint32()))
}

// withRoom copies frame into a buffer with room for a pushed tag.
func withRoom(frame []byte) []byte {
	room := make([]byte, len(frame), len(frame)+header.VLANTagLen)
	copy(room, frame)
	return room
}

func fillRandom(r *rand.Rand, fields ...[]byte) {
	for _, f := range fields {
		for i := range f {
			f[i] = byte(r.Uint32())
		}
	}
}

// TestRewritesRandomFrames is the property: over random frames and random
// arguments, every rewrite gives what serializing from scratch gives.
func TestRewritesRandomFrames(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 5000
	if testing.Short() {
		n = 500
	}
	for range n {
		s := randomSpec(r)
		applyAndCheck(t, s, randomAction(r, s))
		if t.Failed() {
			return
		}
	}
}

// TestChecksumZeroResults tries every port on one TCP and one UDP frame,
// so that the checksum takes every value, 0 included: TCP keeps the 0
// that recomputation gives; UDP sends it as 0xffff.
func TestChecksumZeroResults(t *testing.T) {
	for _, proto := range []layers.IPProtocol{layers.IPProtocolTCP, layers.IPProtocolUDP} {
		s := baseSpec()
		s.proto = proto
		frame := s.build(t)
		l4 := s.l3() + s.ipHeaderLen()
		csumOff := l4 + header.TCPChecksumOffset
		if proto == layers.IPProtocolUDP {
			csumOff = l4 + header.UDPChecksumOffset
		}
		zeroField := uint16(0)
		if proto == layers.IPProtocolUDP {
			zeroField = 0xffff
		}
		l := layoutOf(frame)
		sawZero := false
		for port := range 0x10000 {
			setTpDst(frame, l, uint16(port))
			s.tpDst = uint16(port)
			checkChecksums(t, s, frame[s.l3():])
			sawZero = sawZero || binary.BigEndian.Uint16(frame[csumOff:]) == zeroField
		}
		if !sawZero {
			t.Errorf("%v: no port gave a zero checksum", proto)
		}
	}
}

// TestRewritesTruncatedFrames applies every rewrite to every prefix of
// each frame, with the prefix's layout: nothing may panic or write past
// the prefix (but for the 4 bytes a push grows into); a frame whose IP
// packet is cut short is not IP to the rewrites (nor to the forwarder,
// which drops it as malformed before any action); cutting only padding
// changes nothing.
func TestRewritesTruncatedFrames(t *testing.T) {
	const guard = 16
	const sentinel = 0xa5
	for name, s := range namedSpecs() {
		full := s.build(t)
		ipEnd := len(full) - s.padding
		for _, a := range fixedActions() {
			fullResult, fullKeep := a.apply(withRoom(full), layoutOf(full))
			for n := range len(full) + 1 {
				buf := bytes.Repeat([]byte{sentinel}, n+header.VLANTagLen+guard)
				copy(buf, full[:n])
				got, keep := a.apply(buf[:n:n+header.VLANTagLen], layoutOf(full[:n]))
				grown := len(got) - n
				if grown != 0 && grown != header.VLANTagLen && grown != -header.VLANTagLen {
					t.Fatalf("%s, %s cut to %d bytes: length %d", a.name, name, n, len(got))
				}
				for i := max(n, len(got)); i < len(buf); i++ {
					if buf[i] != sentinel {
						t.Fatalf("%s, %s cut to %d bytes: wrote byte %d", a.name, name, n, i)
					}
				}
				switch {
				case n >= ipEnd:
					if !bytes.Equal(got, fullResult[:len(got)]) || keep != fullKeep {
						t.Errorf("%s, %s cut to %d bytes (padding only): got %x (keep %v), want %x (keep %v)",
							a.name, name, n, got, keep, fullResult[:len(got)], fullKeep)
					}
				case n < header.EthernetLen:
					if !bytes.Equal(got, full[:n]) || !keep {
						t.Errorf("%s, %s cut to %d bytes: changed a runt frame", a.name, name, n)
					}
				case a.needsIP:
					if !bytes.Equal(got, full[:n]) || !keep {
						t.Errorf("%s, %s cut to %d bytes: changed a cut IP packet (keep %v)", a.name, name, n, keep)
					}
				case n >= s.l3():
					// Link-layer rewrites do not care about the IP packet.
					if !bytes.Equal(got, fullResult[:len(got)]) || keep != fullKeep {
						t.Errorf("%s, %s cut to %d bytes: got %x, want %x", a.name, name, n, got, fullResult[:len(got)])
					}
				}
			}
		}
	}
}

// TestTinyFirstFragment: a first fragment too short for its TCP header
// gets its address rewritten but its TCP bytes left alone.
func TestTinyFirstFragment(t *testing.T) {
	s := baseSpec()
	s.frag, s.fragLen = firstFragment, 8
	frame := s.build(t)
	l := layoutOf(frame)
	original := slices.Clone(frame)
	setTpDst(frame, l, 1)
	if !bytes.Equal(frame, original) {
		t.Errorf("setTpDst changed a first fragment without the whole TCP header:\n got %x\nwant %x", frame, original)
	}
	setNwSrc(frame, l, [4]byte{192, 0, 2, 1})
	want := s
	want.ip4Src = [4]byte{192, 0, 2, 1}
	wantFrame := want.build(t)
	l4 := s.l3() + s.ipHeaderLen()
	if !bytes.Equal(frame[:l4], wantFrame[:l4]) || !bytes.Equal(frame[l4:], original[l4:]) {
		t.Errorf("setNwSrc on a first fragment without the whole TCP header:\n got %x\nwant %x then %x",
			frame, wantFrame[:l4], original[l4:])
	}
}

// TestRewritesLeaveMalformedIPAlone: an IP header that lies is no IP
// header to the key, so none to the rewrites. (The forwarder drops such a
// frame as malformed before its actions run; this checks the layout it
// would get.)
func TestRewritesLeaveMalformedIPAlone(t *testing.T) {
	v4, v6 := baseSpec(), baseSpec()
	v6.v6 = true
	tests := []struct {
		name    string
		spec    frameSpec
		corrupt func(ip []byte)
	}{
		{"ipv4 version 5", v4, func(ip []byte) { ip[0] = 0x55 }},
		{"ipv4 header length 16", v4, func(ip []byte) { ip[0] = 0x44 }},
		{"ipv4 header longer than the packet", v4, func(ip []byte) { binary.BigEndian.PutUint16(ip[2:], 16) }},
		{"ipv4 total length past the frame", v4, func(ip []byte) { ip[3]++ }},
		{"ipv6 version 4", v6, func(ip []byte) { ip[0] = 0x40 }},
		{"ipv6 payload length past the frame", v6, func(ip []byte) { ip[5]++ }},
	}
	for _, tt := range tests {
		frame := tt.spec.build(t)
		tt.corrupt(frame[tt.spec.l3():])
		var k flow.Key
		if flow.NewExtractor().Extract(frame, 1, &k) {
			t.Errorf("%s: the extractor calls the frame well formed", tt.name)
		}
		l := layoutOf(frame)
		original := slices.Clone(frame)
		setNwSrc(frame, l, [4]byte{1, 2, 3, 4})
		setNwDst(frame, l, [4]byte{1, 2, 3, 4})
		setTpSrc(frame, l, 1)
		setTpDst(frame, l, 1)
		setTTL(frame, l, 9)
		setTOS(frame, l, header.DSCPMask, 0xb8)
		if !decTTL(frame, l) {
			t.Errorf("%s: decTTL dropped a frame that is not IP to the key", tt.name)
		}
		if !bytes.Equal(frame, original) {
			t.Errorf("%s: rewritten:\n got %x\nwant %x", tt.name, frame, original)
		}
	}
}

// TestRewritesLeaveCutL4HeaderAlone: when the IP packet ends inside the TCP
// or UDP header (the rest of the frame is padding), the ports and the L4
// checksum stay as they are.
func TestRewritesLeaveCutL4HeaderAlone(t *testing.T) {
	for _, proto := range []layers.IPProtocol{layers.IPProtocolTCP, layers.IPProtocolUDP} {
		for _, v6 := range []bool{false, true} {
			s := baseSpec()
			s.proto, s.v6 = proto, v6
			frame := s.build(t)
			ip := frame[s.l3():]
			const upperLen = 4
			if v6 {
				binary.BigEndian.PutUint16(ip[4:], upperLen)
			} else {
				binary.BigEndian.PutUint16(ip[2:], uint16(s.ipHeaderLen()+upperLen))
				binary.BigEndian.PutUint16(ip[header.IPv4ChecksumOffset:], referenceChecksum(0, ip[:s.ipHeaderLen()], header.IPv4ChecksumOffset))
			}
			l := layoutOf(frame)
			original := slices.Clone(frame)
			setTpSrc(frame, l, 1)
			setTpDst(frame, l, 1)
			if !bytes.Equal(frame, original) {
				t.Errorf("%v over ipv6 %v: ports rewritten in a cut header:\n got %x\nwant %x", proto, v6, frame, original)
			}
			if v6 {
				continue
			}
			setNwSrc(frame, l, [4]byte{192, 0, 2, 1})
			l4 := s.l3() + s.ipHeaderLen()
			if got, want := binary.BigEndian.Uint16(ip[header.IPv4ChecksumOffset:]), referenceChecksum(0, ip[:s.ipHeaderLen()], header.IPv4ChecksumOffset); got != want {
				t.Errorf("%v: IPv4 checksum %#04x after setNwSrc, want %#04x", proto, got, want)
			}
			if !bytes.Equal(frame[l4:], original[l4:]) {
				t.Errorf("%v: setNwSrc changed a cut header:\n got %x\nwant %x", proto, frame[l4:], original[l4:])
			}
		}
	}
}

func TestRewritesLeaveNonIPAlone(t *testing.T) {
	buf := gopacket.NewSerializeBuffer()
	err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true},
		&layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
			EthernetType: layers.EthernetTypeARP},
		&layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
			Operation: layers.ARPRequest, SourceHwAddress: []byte{2, 0, 0, 0, 0, 1}, SourceProtAddress: []byte{10, 0, 0, 1},
			DstHwAddress: make([]byte, 6), DstProtAddress: []byte{10, 0, 0, 2}})
	if err != nil {
		t.Fatal(err)
	}
	frame := buf.Bytes()
	l := layoutOf(frame)
	original := slices.Clone(frame)
	setNwSrc(frame, l, [4]byte{1, 2, 3, 4})
	setNwDst(frame, l, [4]byte{1, 2, 3, 4})
	setTpSrc(frame, l, 1)
	setTpDst(frame, l, 1)
	if !decTTL(frame, l) {
		t.Error("decTTL dropped an ARP frame")
	}
	if !bytes.Equal(frame, original) {
		t.Errorf("ARP frame rewritten:\n got %x\nwant %x", frame, original)
	}
}

func TestDecTTL(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		for _, tt := range []struct {
			ttl     uint8
			keep    bool
			wantTTL uint8
		}{{64, true, 63}, {2, true, 1}, {1, false, 1}, {0, false, 0}, {255, true, 254}} {
			s := baseSpec()
			s.v6, s.ttl = v6, tt.ttl
			frame := s.build(t)
			keep := decTTL(frame, layoutOf(frame))
			want := s
			want.ttl = tt.wantTTL
			if keep != tt.keep || !bytes.Equal(frame, want.build(t)) {
				t.Errorf("ipv6 %v, TTL %d: keep %v (want %v), frame %x", v6, tt.ttl, keep, tt.keep, frame)
			}
		}
	}
}

func TestPushVLANCopiesOuterTCI(t *testing.T) {
	s := baseSpec()
	s.tags = []vlanTag{{header.EtherTypeVLAN, 0xb005}} // PCP 5, DEI, VID 5
	frame, ok := pushVLAN(s.build(t), header.EtherTypeQinQ)
	if !ok {
		t.Fatal("pushVLAN had no room")
	}
	want := []byte{0x88, 0xa8, 0xb0, 0x05, 0x81, 0x00, 0xb0, 0x05, 0x08, 0x00}
	if got := frame[12:22]; !bytes.Equal(got, want) {
		t.Errorf("after push: %x, want %x", got, want)
	}
}

func TestPushVLANWithoutRoom(t *testing.T) {
	s := baseSpec()
	for _, push := range []func([]byte) ([]byte, bool){
		func(f []byte) ([]byte, bool) { return pushVLAN(f, header.EtherTypeVLAN) },
		func(f []byte) ([]byte, bool) { return setVLANVID(f, 10) },
	} {
		built := s.build(t)
		frame := built[:len(built):len(built)]
		original := slices.Clone(frame)
		got, ok := push(frame)
		if ok || !bytes.Equal(got, original) {
			t.Errorf("push into a full buffer: ok %v, frame %x", ok, got)
		}
	}
}

func TestPushStripRoundTrip(t *testing.T) {
	for name, s := range namedSpecs() {
		for _, tpid := range []uint16{header.EtherTypeVLAN, header.EtherTypeQinQ} {
			original := s.build(t)
			pushed, ok := pushVLAN(withRoom(original), tpid)
			if !ok {
				t.Fatalf("%s: pushVLAN had no room", name)
			}
			if got := stripVLAN(pushed); !bytes.Equal(got, original) {
				t.Errorf("%s: push %#04x then strip:\n got %x\nwant %x", name, tpid, got, original)
			}
		}
	}
	untagged := baseSpec().build(t)
	if got := stripVLAN(slices.Clone(untagged)); !bytes.Equal(got, untagged) {
		t.Errorf("strip on an untagged frame changed it: %x", got)
	}
}

// TestFrameBuilder checks the hand-built link layer of frameSpec.build
// against gopacket's decoder.
func TestFrameBuilder(t *testing.T) {
	s := namedSpecs()["802.1ad+802.1q/ipv6/udp"]
	packet := gopacket.NewPacket(s.build(t), layers.LayerTypeEthernet, gopacket.Default)
	var vids []uint16
	for _, l := range packet.Layers() {
		if tag, ok := l.(*layers.Dot1Q); ok {
			vids = append(vids, tag.VLANIdentifier)
		}
	}
	udp, _ := packet.Layer(layers.LayerTypeUDP).(*layers.UDP)
	ip, _ := packet.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
	if !slices.Equal(vids, []uint16{0x064, 0x00a}) || udp == nil || ip == nil ||
		uint16(udp.SrcPort) != s.tpSrc || !ip.SrcIP.Equal(net.IP(s.ip6Src[:])) {
		t.Errorf("gopacket decodes %v", packet)
	}
}

func TestRewritesAllocateNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates")
	}
	s := baseSpec()
	s.tags = []vlanTag{{header.EtherTypeVLAN, 10}}
	built := s.build(t)
	n := len(built)
	frame := built[: n : n+header.VLANTagLen]
	l := layoutOf(frame)
	allocs := testing.AllocsPerRun(100, func() {
		setDlSrc(frame, [6]byte{2, 0, 0, 0, 0, 9})
		setDlDst(frame, [6]byte{2, 0, 0, 0, 0, 8})
		setNwSrc(frame, l, [4]byte{10, 1, 1, 1})
		setNwDst(frame, l, [4]byte{10, 1, 1, 2})
		setNwSrc(frame, l, [4]byte{10, 0, 0, 1})
		setTpSrc(frame, l, 1)
		setTpDst(frame, l, 2)
		setTOS(frame, l, header.ECNMask, 1)
		setTTL(frame, l, 64)
		decTTL(frame, l)
		f, _ := pushVLAN(frame, header.EtherTypeQinQ)
		f = stripVLAN(f)
		f, _ = setVLANVID(f, 20)
		_, _ = setVLANPCP(f, 3)
	})
	if allocs != 0 {
		t.Errorf("rewrites allocate %v times per run, want 0", allocs)
	}
	v6 := baseSpec()
	v6.v6 = true
	frame6 := v6.build(t)
	l6 := layoutOf(frame6)
	allocs = testing.AllocsPerRun(100, func() {
		setIPv6Src(frame6, l6, flow.Value{Hi: 0x20010db8 << 32, Lo: 1})
		setIPv6Dst(frame6, l6, flow.Value{Hi: 0x20010db8 << 32, Lo: 2})
		decTTL(frame6, l6)
	})
	if allocs != 0 {
		t.Errorf("IPv6 rewrites allocate %v times per run, want 0", allocs)
	}
	for _, c := range []struct {
		spec  func(s *frameSpec)
		field string
	}{
		{func(s *frameSpec) { s.proto = layers.IPProtocolSCTP }, "sctp_src"},
		{func(s *frameSpec) { s.v6, s.proto = true, layers.IPProtocolSCTP }, "sctp_dst"},
		{func(s *frameSpec) { s.proto = layers.IPProtocolICMPv4 }, "icmp_type"},
		{func(s *frameSpec) { s.v6, s.proto = true, layers.IPProtocolICMPv6 }, "icmpv6_code"},
		{func(s *frameSpec) { s.v6 = true }, "ipv6_label"},
	} {
		s := baseSpec()
		c.spec(&s)
		frame := s.build(t)
		l := layoutOf(frame)
		f, _ := flow.FieldByName(c.field)
		v := uint64(0)
		allocs = testing.AllocsPerRun(100, func() {
			v++
			setField(frame, l, f, flow.Value{Lo: v & 0xff})
		})
		if allocs != 0 {
			t.Errorf("set_field to %s allocates %v times per run, want 0", c.field, allocs)
		}
	}
}

func FuzzRewrites(f *testing.F) {
	for _, s := range namedSpecs() {
		f.Add(s.build(f))
	}
	f.Add(mplsSpec{tags: []uint16{5}, labels: []layers.MPLS{lse(16, 1, false, 9), lse(17, 0, true, 9)}, ttl: 9}.build(f))
	const guard = 8
	f.Fuzz(func(t *testing.T, data []byte) {
		l := layoutOf(data)
		for _, a := range fixedActions() {
			buf := make([]byte, len(data)+header.VLANTagLen+guard)
			copy(buf, data)
			got, _ := a.apply(buf[:len(data):len(data)+header.VLANTagLen], l)
			if len(got) > len(data)+header.VLANTagLen || !bytes.Equal(buf[len(data)+header.VLANTagLen:], make([]byte, guard)) {
				t.Fatalf("%s wrote past the frame's room", a.name)
			}
		}
		// Whatever the options, a valid IPv4 header checksum stays valid.
		frame := withRoom(data)
		if l.IPVersion == 4 {
			ip := header.IPv4(frame[l.L3:])
			if ip.ChecksumValid() {
				setNwSrc(frame, l, [4]byte{192, 0, 2, 1})
				decTTL(frame, l)
				setTOS(frame, l, header.DSCPMask, 0x28)
				if !ip.ChecksumValid() {
					t.Fatalf("IPv4 header checksum broken: %x", ip[:ip.HeaderLen()])
				}
			}
		}
		if len(data) >= header.EthernetLen {
			pushed, ok := pushVLAN(withRoom(data), header.EtherTypeVLAN)
			if got := stripVLAN(pushed); !ok || !bytes.Equal(got, data) {
				t.Fatalf("push then strip: %x, want %x", got, data)
			}
		}
		// A label pushed, set and popped gives the frame, and its layout,
		// back; the sets stay within the label.
		if l.EtherType != 0 {
			was := binary.BigEndian.Uint16(data[int(l.EtherType):])
			entry := uint32(0x12345000 | header.MPLSBOSMask)
			if l.MPLS {
				entry &^= header.MPLSBOSMask
			}
			ml := *l
			pushed, ok := pushMPLS(withRoom(data), &ml, header.EtherTypeMPLS, entry)
			setMPLS(pushed, &ml, header.MPLSTTLMask, 7)
			setMPLS(pushed, &ml, header.MPLSLabelMask|header.MPLSTCMask, 0xfffffe00)
			if got := popMPLS(pushed, &ml, was); !ok || !bytes.Equal(got, data) || ml != *l {
				t.Fatalf("push, set and pop of a label: %x, layout %+v; want %x, %+v", got, ml, data, *l)
			}
		}
	})
}

// The benchmarks show that a rewrite's cost does not grow with the frame.
func BenchmarkRewrites(b *testing.B) {
	for _, size := range []int{64, 1500, 9000} {
		s := baseSpec()
		s.payload = make([]byte, size-header.EthernetLen-header.IPv4MinLen-header.TCPMinLen)
		built := s.build(b)
		frame := built[: len(built) : len(built)+header.VLANTagLen]
		l := layoutOf(frame)
		b.Run(fmt.Sprintf("setNwSrc/%dB", size), func(b *testing.B) {
			ips := [2][4]byte{{10, 0, 0, 1}, {10, 9, 9, 9}}
			for i := 0; b.Loop(); i++ {
				setNwSrc(frame, l, ips[i&1])
			}
		})
		b.Run(fmt.Sprintf("setTpDst/%dB", size), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				setTpDst(frame, l, uint16(i))
			}
		})
		b.Run(fmt.Sprintf("decTTL/%dB", size), func(b *testing.B) {
			for b.Loop() {
				frame[s.l3()+header.IPv4TTLOffset] = 64
				decTTL(frame, l)
			}
		})
		b.Run(fmt.Sprintf("pushVLAN+stripVLAN/%dB", size), func(b *testing.B) {
			for b.Loop() {
				f, _ := pushVLAN(frame, header.EtherTypeVLAN)
				stripVLAN(f)
			}
		})
	}
}

// arpSpec and ndSpec are an ARP frame and a neighbour discovery message,
// for the rewrites of their fields, serialized from scratch as frameSpec
// is.
type arpSpec struct {
	tags     []vlanTag
	op       uint16
	sha, tha [6]byte
	spa, tpa [4]byte
}

func (s arpSpec) build(t testing.TB) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true},
		&layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
			Operation: s.op, SourceHwAddress: s.sha[:], SourceProtAddress: s.spa[:], DstHwAddress: s.tha[:], DstProtAddress: s.tpa[:]}); err != nil {
		t.Fatal(err)
	}
	return linkLayer(s.tags, header.EtherTypeARP, buf.Bytes())
}

type ndSpec struct {
	typ      uint8 // 135 or 136
	target   [16]byte
	sll, tll []byte // the options, when not nil
}

func (s ndSpec) build(t testing.TB) []byte {
	t.Helper()
	ip := &layers.IPv6{Version: 6, NextHeader: layers.IPProtocolICMPv6, HopLimit: 255, FlowLabel: 0x54321,
		SrcIP: net.ParseIP("fd00::1"), DstIP: net.ParseIP("ff02::1:ff00:2")}
	icmp := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(s.typ, 0)}
	if err := icmp.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	body := append([]byte{0x60, 0, 0, 0}, s.target[:]...)
	if s.sll != nil {
		body = append(append(body, header.NDOptSourceLinkAddr, 1), s.sll...)
	}
	if s.tll != nil {
		body = append(append(body, header.NDOptTargetLinkAddr, 1), s.tll...)
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		ip, icmp, gopacket.Payload(body)); err != nil {
		t.Fatal(err)
	}
	return linkLayer(nil, header.EtherTypeIPv6, buf.Bytes())
}

// linkLayer puts an Ethernet header, and tags, in front of packet.
func linkLayer(tags []vlanTag, etherType uint16, packet []byte) []byte {
	frame := []byte{0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1}
	for _, tag := range tags {
		frame = binary.BigEndian.AppendUint16(frame, tag.tpid)
		frame = binary.BigEndian.AppendUint16(frame, tag.tci)
	}
	frame = binary.BigEndian.AppendUint16(frame, etherType)
	return append(frame, packet...)
}

// TestARPAndNDRewritesMatchFullRecomputation: set_field to ARP's fields
// and to neighbour discovery's gives the frame serialized from scratch
// with the field changed, the ICMPv6 checksum recomputed; and a message
// without the option a field is in is left alone, as are frames without
// the header.
func TestARPAndNDRewritesMatchFullRecomputation(t *testing.T) {
	write := func(name string, v flow.Value, frame []byte) []byte {
		f, _ := flow.FieldByName(name)
		frame = slices.Clone(frame)
		setField(frame, layoutOf(frame), f, v)
		return frame
	}
	mac := [6]byte{0x0a, 0xbb, 0xcc, 0xdd, 0xee, 0xff}
	macValue := flow.ValueOfBytes(mac[:])
	for _, tags := range [][]vlanTag{nil, {{header.EtherTypeQinQ, 5}, {header.EtherTypeVLAN, 6}}} {
		base := arpSpec{tags: tags, op: 1, sha: [6]byte{2, 0, 0, 0, 0, 1}, spa: [4]byte{10, 0, 0, 1}, tpa: [4]byte{10, 0, 0, 2}}
		for _, c := range []struct {
			name string
			v    flow.Value
			edit func(s *arpSpec)
		}{
			{"arp_op", flow.Value{Lo: 2}, func(s *arpSpec) { s.op = 2 }},
			{"arp_op", flow.Value{Lo: 0xff}, func(s *arpSpec) { s.op = 0xff }},
			{"arp_spa", flow.Value{Lo: 0xc0000263}, func(s *arpSpec) { s.spa = [4]byte{192, 0, 2, 99} }},
			{"arp_tpa", flow.Value{Lo: 0xffffffff}, func(s *arpSpec) { s.tpa = [4]byte{255, 255, 255, 255} }},
			{"arp_sha", macValue, func(s *arpSpec) { s.sha = mac }},
			{"arp_tha", macValue, func(s *arpSpec) { s.tha = mac }},
			{"arp_tha", flow.Value{}, func(s *arpSpec) {}},
		} {
			want := base
			c.edit(&want)
			if got := write(c.name, c.v, base.build(t)); !bytes.Equal(got, want.build(t)) {
				t.Errorf("%s := %#x, tags %x:\n got %x\nwant %x", c.name, c.v, tags, got, want.build(t))
			}
		}
	}
	// ARP of another protocol is no ARP the key reads: left alone.
	other := arpSpec{op: 1}.build(t)
	binary.BigEndian.PutUint16(other[header.EthernetLen+2:], header.EtherTypeIPv6)
	if got := write("arp_sha", macValue, other); !bytes.Equal(got, other) {
		t.Errorf("arp_sha written into ARP for IPv6:\n got %x\nwant %x", got, other)
	}

	target := [16]byte{0: 0xfd, 15: 2}
	newTarget := [16]byte{0: 0xfe, 1: 0x80, 15: 0x99}
	ns := ndSpec{typ: 135, target: target, sll: []byte{2, 0, 0, 0, 0, 1}}
	na := ndSpec{typ: 136, target: target, tll: []byte{2, 0, 0, 0, 0, 2}}
	both := ndSpec{typ: 135, target: target, sll: []byte{2, 0, 0, 0, 0, 1}, tll: []byte{2, 0, 0, 0, 0, 2}}
	for _, c := range []struct {
		name  string
		v     flow.Value
		on    ndSpec
		after func(s ndSpec) ndSpec
	}{
		{"nd_target", flow.ValueOfBytes(newTarget[:]), ns, func(s ndSpec) ndSpec { s.target = newTarget; return s }},
		{"nd_target", flow.ValueOfBytes(newTarget[:]), na, func(s ndSpec) ndSpec { s.target = newTarget; return s }},
		{"nd_sll", macValue, ns, func(s ndSpec) ndSpec { s.sll = mac[:]; return s }},
		{"nd_tll", macValue, na, func(s ndSpec) ndSpec { s.tll = mac[:]; return s }},
		{"nd_sll", macValue, both, func(s ndSpec) ndSpec { s.sll = mac[:]; return s }},
		{"nd_tll", macValue, both, func(s ndSpec) ndSpec { s.tll = mac[:]; return s }},
		{"nd_tll", macValue, ns, func(s ndSpec) ndSpec { return s }}, // no such option
		{"nd_sll", macValue, na, func(s ndSpec) ndSpec { return s }},
		{"icmpv6_type", flow.Value{Lo: 136}, ns, func(s ndSpec) ndSpec { s.typ = 136; return s }},
	} {
		if got, want := write(c.name, c.v, c.on.build(t)), c.after(c.on).build(t); !bytes.Equal(got, want) {
			t.Errorf("%s := %#x on %+v:\n got %x\nwant %x", c.name, c.v, c.on, got, want)
		}
	}
}

// TestNewFieldsThroughThePipeline: rules that match on the new fields and
// set_field them, through translation and the decision cache, send what
// serializing from scratch gives; frames that the matches do not take go
// to the next rule.
func TestNewFieldsThroughThePipeline(t *testing.T) {
	ports := newPorts(3)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t,
		"priority=10,arp,arp_sha=02:00:00:00:00:01,arp_op=1,actions=set_field:2->arp_op,set_field:0a:bb:cc:dd:ee:ff->arp_tha,load:0xc0000263->NXM_OF_ARP_TPA[],output:2",
		"priority=10,icmp6,icmp_type=135,nd_target=fd00::2,nd_sll=02:00:00:00:00:01,actions=set_field:fe80::99->nd_target,set_field:0a:bb:cc:dd:ee:ff->nd_sll,output:2",
		"priority=10,sctp,sctp_dst=443,actions=set_field:7->sctp_src,output:2",
		"priority=10,udp6,ipv6_label=0xabcde,actions=set_field:0x12345->ipv6_label,output:2",
		"priority=10,icmp,icmp_type=8,actions=set_field:0->icmp_type,set_field:3->icmp_code,output:2",
		"priority=0,actions=output:3"))

	arp := arpSpec{op: 1, sha: [6]byte{2, 0, 0, 0, 0, 1}, spa: [4]byte{10, 0, 0, 1}, tpa: [4]byte{10, 0, 0, 2}}
	arpOut := arp
	arpOut.op, arpOut.tha, arpOut.tpa = 2, [6]byte{0x0a, 0xbb, 0xcc, 0xdd, 0xee, 0xff}, [4]byte{192, 0, 2, 99}
	otherARP := arp
	otherARP.sha = [6]byte{2, 0, 0, 0, 0, 9}

	ns := ndSpec{typ: 135, target: [16]byte{0: 0xfd, 15: 2}, sll: []byte{2, 0, 0, 0, 0, 1}}
	nsOut := ns
	nsOut.target, nsOut.sll = [16]byte{0: 0xfe, 1: 0x80, 15: 0x99}, []byte{0x0a, 0xbb, 0xcc, 0xdd, 0xee, 0xff}
	otherNS := ns
	otherNS.target = [16]byte{0: 0xfd, 15: 3}

	sctp := baseSpec()
	sctp.proto, sctp.tpDst = layers.IPProtocolSCTP, 443
	sctpOut := sctp
	sctpOut.tpSrc = 7
	label := baseSpec()
	label.v6, label.proto = true, layers.IPProtocolUDP
	labelOut := label
	labelOut.flowLabel = 0x12345
	otherLabel := label
	otherLabel.flowLabel = 0xabcdf
	icmp := baseSpec()
	icmp.proto = layers.IPProtocolICMPv4
	icmpOut := icmp
	icmpOut.icmpType, icmpOut.icmpCode = 0, 3

	var toPort2, toPort3 [][]byte
	for _, c := range []struct {
		in, out []byte
		matched bool
	}{
		{arp.build(t), arpOut.build(t), true},
		{otherARP.build(t), otherARP.build(t), false},
		{ns.build(t), nsOut.build(t), true},
		{otherNS.build(t), otherNS.build(t), false},
		{sctp.build(t), sctpOut.build(t), true},
		{label.build(t), labelOut.build(t), true},
		{otherLabel.build(t), otherLabel.build(t), false},
		{icmp.build(t), icmpOut.build(t), true},
	} {
		ports[0].Inject(c.in)
		if c.matched {
			toPort2 = append(toPort2, c.out)
		} else {
			toPort3 = append(toPort3, c.out)
		}
	}
	forwardAll(f)
	wantFrames(t, ports[1], toPort2...)
	wantFrames(t, ports[2], toPort3...)
}
