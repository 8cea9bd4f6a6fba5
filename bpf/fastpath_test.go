package bpf

import (
	"bytes"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/internal/testenv"
)

// The fast path's parser is tested against flow.Extractor, the slow
// obvious one: on every frame, either the parser gives up, or the
// extractor calls the frame well formed and reads the same key from it.
// And the parser must not give up on the frames it is there for.

const testInPort = 7

// parser is the fast path program loaded to record what it parses.
type parser struct {
	objs *FastpathPort
}

func loadParser(tb testing.TB) *parser {
	tb.Helper()
	testenv.RequireRoot(tb)
	objs, err := LoadFastpathProgram(FastpathConfig{InPort: testInPort, MaxFrameLen: 1 << 16, SocketQueues: 1, RecordKey: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { objs.Close() })
	return &parser{objs: objs}
}

// parse runs the program on frame and returns what it read.
func (p *parser) parse(tb testing.TB, frame []byte) (flow.Headers, bool) {
	tb.Helper()
	if err := p.objs.Parsed.Put(uint32(0), FastpathFpParsed{}); err != nil {
		tb.Fatal(err)
	}
	if _, err := p.objs.Fastpath.Run(&ebpf.RunOptions{Data: frame}); err != nil {
		tb.Fatalf("run on %x: %v", frame, err)
	}
	var out FastpathFpParsed
	if err := p.objs.Parsed.Lookup(uint32(0), &out); err != nil {
		tb.Fatal(err)
	}
	return out.Key.Headers(), out.Ok == 1
}

// check compares the parser with the extractor on frame, and reports
// whether the parser read it.
func (p *parser) check(tb testing.TB, e *flow.Extractor, frame []byte) bool {
	tb.Helper()
	// BPF_PROG_RUN takes frames of at least an Ethernet header.
	if len(frame) < 14 {
		return false
	}
	got, ok := p.parse(tb, frame)
	if !ok {
		return false
	}
	var want flow.Key
	if !e.Extract(frame, testInPort, &want) {
		tb.Fatalf("the fast path read a frame the extractor calls malformed:\n%x\nfast path %+v", frame, got)
	}
	if got != want.Headers {
		tb.Fatalf("keys differ on %x:\nfast path %+v\nextractor %+v", frame, got, want.Headers)
	}
	return true
}

func serialize(tb testing.TB, ls ...gopacket.SerializableLayer) []byte {
	tb.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		tb.Fatal(err)
	}
	return bytes.Clone(buf.Bytes())
}

// commonFrames are the frames the fast path is for: it must read each.
func commonFrames(tb testing.TB) map[string][]byte {
	src, dst := net.HardwareAddr{2, 0, 0, 0, 0, 1}, net.HardwareAddr{2, 0, 0, 0, 0, 2}
	eth := func(t layers.EthernetType) *layers.Ethernet {
		return &layers.Ethernet{SrcMAC: src, DstMAC: dst, EthernetType: t}
	}
	ip4 := func(p layers.IPProtocol) *layers.IPv4 {
		return &layers.IPv4{Version: 4, TTL: 64, TOS: 0xb9, Protocol: p, SrcIP: net.IP{10, 0, 0, 1}, DstIP: net.IP{10, 0, 0, 2}}
	}
	ip6 := func(p layers.IPProtocol) *layers.IPv6 {
		return &layers.IPv6{Version: 6, HopLimit: 9, TrafficClass: 0x2e, NextHeader: p,
			SrcIP: net.ParseIP("fd00::1"), DstIP: net.ParseIP("fd00::2")}
	}
	payload := gopacket.Payload("some payload bytes")
	withChecksum := func(l interface {
		SetNetworkLayerForChecksum(gopacket.NetworkLayer) error
	}, n gopacket.NetworkLayer) {
		if err := l.SetNetworkLayerForChecksum(n); err != nil {
			tb.Fatal(err)
		}
	}
	tcp4, udp4, tcp6, udp6 := ip4(layers.IPProtocolTCP), ip4(layers.IPProtocolUDP), ip6(layers.IPProtocolTCP), ip6(layers.IPProtocolUDP)
	tcp := func(n gopacket.NetworkLayer) *layers.TCP {
		l := &layers.TCP{SrcPort: 43210, DstPort: 443, Seq: 1, SYN: true, Window: 512}
		withChecksum(l, n)
		return l
	}
	udp := func(n gopacket.NetworkLayer) *layers.UDP {
		l := &layers.UDP{SrcPort: 5353, DstPort: 53}
		withChecksum(l, n)
		return l
	}
	icmp6ip := ip6(layers.IPProtocolICMPv6)
	icmp6 := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(layers.ICMPv6TypeEchoRequest, 0)}
	withChecksum(icmp6, icmp6ip)
	fragment := ip4(layers.IPProtocolUDP)
	fragment.Flags, fragment.FragOffset = layers.IPv4MoreFragments, 0
	later := ip4(layers.IPProtocolUDP)
	later.FragOffset = 8
	arp := &layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
		Operation: layers.ARPRequest, SourceHwAddress: src, SourceProtAddress: []byte{10, 0, 0, 1},
		DstHwAddress: make([]byte, 6), DstProtAddress: []byte{10, 0, 0, 2}}
	arpReply := *arp
	arpReply.Operation, arpReply.DstHwAddress = layers.ARPReply, dst
	sctp4, sctp6 := ip4(layers.IPProtocolSCTP), ip6(layers.IPProtocolSCTP)
	flowLabel := ip6(layers.IPProtocolUDP)
	flowLabel.FlowLabel = 0xabcde
	sctp := &layers.SCTP{SrcPort: 38412, DstPort: 36412, VerificationTag: 7}
	tag := func(vid uint16, next layers.EthernetType) *layers.Dot1Q {
		return &layers.Dot1Q{Priority: 5, VLANIdentifier: vid, Type: next}
	}
	return map[string][]byte{
		"ipv4/tcp":              serialize(tb, eth(layers.EthernetTypeIPv4), tcp4, tcp(tcp4), payload),
		"ipv4/udp":              serialize(tb, eth(layers.EthernetTypeIPv4), udp4, udp(udp4), payload),
		"ipv4/icmp":             serialize(tb, eth(layers.EthernetTypeIPv4), ip4(layers.IPProtocolICMPv4), &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(8, 0), Id: 1, Seq: 2}, payload),
		"ipv4/first fragment":   serialize(tb, eth(layers.EthernetTypeIPv4), fragment, udp(fragment), payload),
		"ipv4/later fragment":   serialize(tb, eth(layers.EthernetTypeIPv4), later, payload),
		"ipv4/gre":              serialize(tb, eth(layers.EthernetTypeIPv4), ip4(layers.IPProtocolGRE), payload),
		"ipv6/tcp":              serialize(tb, eth(layers.EthernetTypeIPv6), tcp6, tcp(tcp6), payload),
		"ipv6/udp":              serialize(tb, eth(layers.EthernetTypeIPv6), udp6, udp(udp6), payload),
		"ipv6/icmpv6":           serialize(tb, eth(layers.EthernetTypeIPv6), icmp6ip, icmp6, payload),
		"arp":                   serialize(tb, eth(layers.EthernetTypeARP), arp),
		"arp/reply":             serialize(tb, eth(layers.EthernetTypeARP), &arpReply),
		"ipv4/sctp":             serialize(tb, eth(layers.EthernetTypeIPv4), sctp4, sctp, payload),
		"ipv6/sctp":             serialize(tb, eth(layers.EthernetTypeIPv6), sctp6, sctp, payload),
		"ipv6/flow label/udp":   serialize(tb, eth(layers.EthernetTypeIPv6), flowLabel, udp(flowLabel), payload),
		"vlan/ipv4/udp":         serialize(tb, eth(layers.EthernetTypeDot1Q), tag(100, layers.EthernetTypeIPv4), udp4, udp(udp4), payload),
		"qinq/ipv6/tcp":         serialize(tb, eth(layers.EthernetTypeQinQ), tag(10, layers.EthernetTypeDot1Q), tag(20, layers.EthernetTypeIPv6), tcp6, tcp(tcp6), payload),
		"three tags":            serialize(tb, eth(layers.EthernetTypeDot1Q), tag(1, layers.EthernetTypeDot1Q), tag(2, layers.EthernetTypeDot1Q), tag(3, layers.EthernetTypeIPv4), udp4, udp(udp4), payload),
		"other EtherType":       serialize(tb, &layers.Ethernet{SrcMAC: src, DstMAC: dst, EthernetType: 0x88b5}, payload),
		"broadcast/ipv4/udp":    serialize(tb, &layers.Ethernet{SrcMAC: src, DstMAC: layers.EthernetBroadcast, EthernetType: layers.EthernetTypeIPv4}, udp4, udp(udp4), payload),
		"ipv4/udp with padding": append(serialize(tb, eth(layers.EthernetTypeIPv4), udp4, udp(udp4)), make([]byte, 18)...),
	}
}

// IPv6 neighbour discovery is left to user space: the key has no room
// for its target address.
func TestFastpathLeavesNeighbourDiscoveryToUserSpace(t *testing.T) {
	p := loadParser(t)
	src := net.HardwareAddr{2, 0, 0, 0, 0, 1}
	ip := &layers.IPv6{Version: 6, HopLimit: 255, NextHeader: layers.IPProtocolICMPv6,
		SrcIP: net.ParseIP("fd00::1"), DstIP: net.ParseIP("ff02::1:ff00:2")}
	for _, typ := range []uint8{layers.ICMPv6TypeNeighborSolicitation, layers.ICMPv6TypeNeighborAdvertisement} {
		icmp := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(typ, 0)}
		if err := icmp.SetNetworkLayerForChecksum(ip); err != nil {
			t.Fatal(err)
		}
		frame := serialize(t, &layers.Ethernet{SrcMAC: src, DstMAC: net.HardwareAddr{0x33, 0x33, 0xff, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv6},
			ip, icmp, &layers.ICMPv6NeighborSolicitation{TargetAddress: net.ParseIP("fd00::2"),
				Options: layers.ICMPv6Options{{Type: layers.ICMPv6OptSourceAddress, Data: src}}})
		if _, ok := p.parse(t, frame); ok {
			t.Errorf("ICMPv6 type %d: the fast path read it", typ)
		}
		frame[14+40+1] = 1 // code 1: not neighbour discovery
		if _, ok := p.parse(t, frame); !ok {
			t.Errorf("ICMPv6 type %d code 1: the fast path gave up on it", typ)
		}
	}
}

// mplsFrames are MPLS frames, which the fast path leaves to user space:
// the key has no room for their label stack.
func mplsFrames(tb testing.TB) map[string][]byte {
	src, dst := net.HardwareAddr{2, 0, 0, 0, 0, 1}, net.HardwareAddr{2, 0, 0, 0, 0, 2}
	eth := func(t layers.EthernetType) *layers.Ethernet {
		return &layers.Ethernet{SrcMAC: src, DstMAC: dst, EthernetType: t}
	}
	ip4 := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: net.IP{10, 0, 0, 1}, DstIP: net.IP{10, 0, 0, 2}}
	udp := &layers.UDP{SrcPort: 5353, DstPort: 53}
	if err := udp.SetNetworkLayerForChecksum(ip4); err != nil {
		tb.Fatal(err)
	}
	payload := gopacket.Payload("some payload bytes")
	return map[string][]byte{
		"mpls/ipv4/udp": serialize(tb, eth(layers.EthernetTypeMPLSUnicast), &layers.MPLS{Label: 100, StackBottom: true, TTL: 64},
			ip4, udp, payload),
		"mplsm/two labels/ipv4/udp": serialize(tb, eth(layers.EthernetTypeMPLSMulticast), &layers.MPLS{Label: 16, TTL: 9},
			&layers.MPLS{Label: 17, StackBottom: true, TTL: 9}, ip4, udp, payload),
		"vlan/mpls/ipv4/udp": serialize(tb, eth(layers.EthernetTypeDot1Q), &layers.Dot1Q{VLANIdentifier: 5, Type: layers.EthernetTypeMPLSUnicast},
			&layers.MPLS{Label: 3, StackBottom: true, TTL: 1}, ip4, udp, payload),
	}
}

func TestFastpathLeavesMPLSToUserSpace(t *testing.T) {
	p := loadParser(t)
	for name, frame := range mplsFrames(t) {
		if _, ok := p.parse(t, frame); ok {
			t.Errorf("%s: the fast path read it", name)
		}
	}
}

func TestFastpathParsesTheCommonFrames(t *testing.T) {
	p := loadParser(t)
	e := flow.NewExtractor()
	for name, frame := range commonFrames(t) {
		if !p.check(t, e, frame) {
			t.Errorf("%s: the fast path gave up on it:\n%x", name, frame)
		}
	}
}

// TestFastpathAgreesWithTheExtractor runs the parser on every prefix of
// the common frames, on random mutations of them, and on the extractor's
// fuzz corpus.
func TestFastpathAgreesWithTheExtractor(t *testing.T) {
	p := loadParser(t)
	e := flow.NewExtractor()
	frames := commonFrames(t)
	rnd := rand.New(rand.NewPCG(11, 12))
	var read, tried int
	try := func(frame []byte) {
		tried++
		if p.check(t, e, frame) {
			read++
		}
	}
	for name, frame := range mplsFrames(t) {
		frames[name] = frame
	}
	for _, frame := range frames {
		for n := 14; n <= len(frame); n++ {
			try(frame[:n])
		}
		for range 300 {
			m := bytes.Clone(frame)
			for range 1 + rnd.IntN(3) {
				// Mostly in the headers, where it matters.
				i := rnd.IntN(min(len(m), 80))
				m[i] = byte(rnd.Uint32())
			}
			try(m)
		}
	}
	for _, frame := range extractorCorpus(t) {
		try(frame)
	}
	t.Logf("%d frames: the fast path read %d, gave %d back to user space", tried, read, tried-read)
}

// extractorCorpus reads flow's committed FuzzExtract inputs.
func extractorCorpus(tb testing.TB) [][]byte {
	paths, err := filepath.Glob("../flow/testdata/fuzz/FuzzExtract/*")
	if err != nil || len(paths) == 0 {
		tb.Fatalf("no FuzzExtract corpus: %v", err)
	}
	var frames [][]byte
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			tb.Fatal(err)
		}
		// go test fuzz v1, then one line: []byte("...")
		for _, line := range strings.Split(string(data), "\n") {
			quoted, ok := strings.CutPrefix(line, "[]byte(")
			if !ok {
				continue
			}
			s, err := strconv.Unquote(strings.TrimSuffix(quoted, ")"))
			if err != nil {
				tb.Fatalf("%s: %v", path, err)
			}
			frames = append(frames, []byte(s))
		}
	}
	return frames
}

func FuzzFastpathParser(f *testing.F) {
	for _, frame := range commonFrames(f) {
		f.Add(frame)
	}
	for _, frame := range mplsFrames(f) {
		f.Add(frame)
	}
	p := loadParser(f)
	e := flow.NewExtractor()
	f.Fuzz(func(t *testing.T, frame []byte) {
		p.check(t, e, frame)
	})
}

// SetState's stores into the maps' memory are what the maps hold, the
// slot it writes alternating, so that the program reads each state whole.
func TestSetStateWritesTheMaps(t *testing.T) {
	testenv.RequireRoot(t)
	s, err := NewFastpathShared(0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for g := uint64(1); g <= 3; g++ {
		want := FastpathFpState{Generation: g, Masked: uint32(FastpathFpMaskKindFP_MASK_BITS)}
		want.Mask.InPort, want.Mask.DlSrc[5] = 0xffff, byte(g)
		if err := s.SetState(&want); err != nil {
			t.Fatal(err)
		}
		var slot uint32
		if err := s.StateSlot.Lookup(uint32(0), &slot); err != nil {
			t.Fatal(err)
		}
		if slot != uint32(g%2) {
			t.Errorf("generation %d: state_slot %d, want %d", g, slot, g%2)
		}
		var got FastpathFpState
		if err := s.State.Lookup(slot, &got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("generation %d: state[%d] holds %+v, want %+v", g, slot, got, want)
		}
	}
}
