package header

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// serialize builds a frame with gopacket, lengths and checksums computed
// by it: a second opinion on every offset here.
func serialize(t *testing.T, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestViewsReadWhatGopacketWrote(t *testing.T) {
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2},
		EthernetType: layers.EthernetTypeDot1Q}
	tag := &layers.Dot1Q{Priority: 5, DropEligible: true, VLANIdentifier: 42, Type: layers.EthernetTypeIPv4}
	ip4 := &layers.IPv4{Version: 4, TOS: 0xb9, Id: 0x1234, Flags: layers.IPv4MoreFragments, TTL: 61,
		Protocol: layers.IPProtocolTCP, SrcIP: net.IPv4(10, 0, 0, 1).To4(), DstIP: net.IPv4(192, 0, 2, 9).To4(),
		Options: []layers.IPv4Option{{OptionType: 1}, {OptionType: 1}, {OptionType: 1}, {OptionType: 1}}}
	tcp := &layers.TCP{SrcPort: 1234, DstPort: 80, DataOffset: 6, Options: []layers.TCPOption{{OptionType: 1}, {OptionType: 1}, {OptionType: 1}, {OptionType: 1}}}
	if err := tcp.SetNetworkLayerForChecksum(ip4); err != nil {
		t.Fatal(err)
	}
	frame := serialize(t, eth, tag, ip4, tcp, gopacket.Payload("data"))

	e := Ethernet(frame)
	if !bytes.Equal(e[EthernetDstOffset:][:MACLen], eth.DstMAC) || !bytes.Equal(e[EthernetSrcOffset:][:MACLen], eth.SrcMAC) || !IsTPID(e.Type()) {
		t.Errorf("Ethernet: %x", e[:EthernetLen])
	}
	v := e.OuterTag()
	if e.Type() != EtherTypeVLAN || v.TCI()&VLANVIDMask != 42 || v.TCI()>>VLANPCPShift != 5 || v.TCI()&VLANDEIMask == 0 {
		t.Errorf("tag: TPID %#04x TCI %#04x", e.Type(), v.TCI())
	}
	if next := binary.BigEndian.Uint16(frame[EthernetTypeOffset+VLANTagLen:]); next != EtherTypeIPv4 {
		t.Errorf("EtherType behind the tag %#04x", next)
	}

	ip := IPv4(frame[EthernetLen+VLANTagLen:])
	if ip.Version() != 4 || ip.HeaderLen() != IPv4MinLen+4 || ip[IPv4TOSOffset] != 0xb9 ||
		binary.BigEndian.Uint16(ip[IPv4IDOffset:]) != 0x1234 || ip.TTL() != 61 || ip.Protocol() != ProtoTCP || int(ip.TotalLen()) != len(ip) || !ip.IsFragment() {
		t.Errorf("IPv4: %x", ip[:ip.HeaderLen()])
	}
	if ip.Src() != [4]byte{10, 0, 0, 1} || ip.Dst() != [4]byte{192, 0, 2, 9} {
		t.Errorf("IPv4 addresses %v -> %v", ip.Src(), ip.Dst())
	}
	if c := binary.BigEndian.Uint16(ip[IPv4ChecksumOffset:]); !ip.ChecksumValid() || ip.ComputeChecksum() != c || c != ip4.Checksum {
		t.Errorf("IPv4 checksum %#04x, computed %#04x, gopacket's %#04x", c, ip.ComputeChecksum(), ip4.Checksum)
	}
	ip.SetTTL(60)
	if ip.ChecksumValid() {
		t.Error("the checksum holds after a change the update missed")
	}
	ip.UpdateChecksum(Delta16(61<<8|ProtoTCP, 60<<8|ProtoTCP))
	if !ip.ChecksumValid() {
		t.Error("the checksum does not hold after the TTL's update")
	}

	l4 := TCP(frame[EthernetLen+VLANTagLen+ip.HeaderLen():])
	if l4.SrcPort() != 1234 || l4.DstPort() != 80 || l4.HeaderLen() != TCPMinLen+4 {
		t.Errorf("TCP: %x", l4[:TCPMinLen])
	}
	if got := binary.BigEndian.Uint16(l4[TCPChecksumOffset:]); got != tcp.Checksum {
		t.Errorf("TCP checksum at its offset %#04x, gopacket's %#04x", got, tcp.Checksum)
	}
}

func TestIPv4Fragments(t *testing.T) {
	for _, c := range []struct {
		flags    layers.IPv4Flag
		offset   uint16
		fragment bool
	}{
		{0, 0, false}, {layers.IPv4DontFragment, 0, false},
		{layers.IPv4MoreFragments, 0, true}, {0, 185, true}, {layers.IPv4DontFragment, 1, true},
	} {
		frame := serialize(t, &layers.IPv4{Version: 4, TTL: 1, Flags: c.flags, FragOffset: c.offset,
			Protocol: layers.IPProtocolUDP, SrcIP: net.IPv4zero.To4(), DstIP: net.IPv4zero.To4()})
		if got := IPv4(frame).IsFragment(); got != c.fragment {
			t.Errorf("flags %v offset %d: IsFragment %v", c.flags, c.offset, got)
		}
	}
}

func TestIPv6View(t *testing.T) {
	ip6 := &layers.IPv6{Version: 6, TrafficClass: 0xb9, HopLimit: 7, NextHeader: layers.IPProtocolUDP,
		SrcIP: net.ParseIP("2001:db8::1"), DstIP: net.ParseIP("2001:db8::2")}
	udp := &layers.UDP{SrcPort: 53, DstPort: 5353}
	if err := udp.SetNetworkLayerForChecksum(ip6); err != nil {
		t.Fatal(err)
	}
	frame := serialize(t, ip6, udp, gopacket.Payload("query"))
	ip := IPv6(frame)
	tc := uint8(binary.BigEndian.Uint16(ip) >> IPv6TrafficClassShift)
	if ip[0]>>4 != 6 || tc != 0xb9 || ip.HopLimit() != 7 || ip[IPv6NextHeaderOffset] != ProtoUDP ||
		int(binary.BigEndian.Uint16(ip[IPv6PayloadLenOffset:])) != len(frame)-IPv6Len {
		t.Errorf("IPv6: %x", frame[:IPv6Len])
	}
	if [16]byte(ip[IPv6SrcOffset:]) != [16]byte(ip6.SrcIP) || [16]byte(ip[IPv6DstOffset:]) != [16]byte(ip6.DstIP) {
		t.Errorf("IPv6 addresses %x", frame[IPv6SrcOffset:IPv6Len])
	}
	u := UDP(frame[IPv6Len:])
	if u.SrcPort() != 53 || u.DstPort() != 5353 || int(u.Length()) != UDPLen+len("query") || u.Checksum() != udp.Checksum {
		t.Errorf("UDP: %x", u[:UDPLen])
	}
	// The pseudo-header: addresses, upper-layer length, next header.
	pseudo := Sum(0, frame[IPv6SrcOffset:IPv6Len]) + uint32(len(u)) + ProtoUDP
	u.SetChecksum(0)
	if got := Checksum(pseudo, u); got != udp.Checksum {
		t.Errorf("UDP checksum recomputed %#04x, gopacket's %#04x", got, udp.Checksum)
	}
}

// TestUDPChecksumZero checks RFC 768's two rules, where TCP has neither.
func TestUDPChecksumZero(t *testing.T) {
	const c = 0x1234
	// A word going from 0 to the checksum's value brings the sum to ffff
	// and the checksum to 0.
	delta := Delta16(0, c)
	if Update(c, delta) != 0 {
		t.Fatalf("Update(%#04x, %#x) = %#04x, want 0", c, delta, Update(c, delta))
	}
	b := make([]byte, TCPMinLen)
	u, tcp := UDP(b), TCP(b)
	u.SetChecksum(c)
	u.UpdateChecksum(delta)
	if u.Checksum() != 0xffff {
		t.Errorf("UDP checksum that comes out 0: %#04x, want 0xffff", u.Checksum())
	}
	binary.BigEndian.PutUint16(tcp[TCPChecksumOffset:], c)
	tcp.UpdateChecksum(delta)
	if got := binary.BigEndian.Uint16(tcp[TCPChecksumOffset:]); got != 0 {
		t.Errorf("TCP checksum that comes out 0: %#04x, want 0", got)
	}
	u.SetChecksum(0)
	u.UpdateChecksum(Delta16(0x0a00, 0x0a09))
	if u.Checksum() != 0 {
		t.Errorf("UDP without a checksum got one: %#04x", u.Checksum())
	}
}
