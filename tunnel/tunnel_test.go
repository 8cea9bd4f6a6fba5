package tunnel

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/xswitch/xswitch/header"
)

var (
	local  = Endpoint{IP: netip.MustParseAddr("192.0.2.1"), MAC: [6]byte{2, 0, 0, 0, 0, 1}}
	remote = Endpoint{IP: netip.MustParseAddr("192.0.2.2"), MAC: [6]byte{2, 0, 0, 0, 0, 2}}
)

// innerFrame is an Ethernet/IPv4/UDP frame with a payload of n bytes.
func innerFrame(t testing.TB, n int) []byte {
	t.Helper()
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 1, 1, 1, 1, 1}, DstMAC: net.HardwareAddr{2, 2, 2, 2, 2, 2}, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 9, Protocol: layers.IPProtocolUDP, SrcIP: net.IP{10, 0, 0, 1}, DstIP: net.IP{10, 0, 0, 2}}
	udp := &layers.UDP{SrcPort: 1000, DstPort: 2000}
	udp.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		eth, ip, udp, gopacket.Payload(bytes.Repeat([]byte{0xab}, n))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func newEncap(t testing.TB, kind Kind) *Encap {
	t.Helper()
	e, err := NewEncap(kind, local, remote, kind.DefaultPort())
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// What Encapsulate writes reads in gopacket as the outer headers it
// should have, with a valid IPv4 checksum, and the inner frame intact.
func TestEncapsulateReadsInGopacket(t *testing.T) {
	for _, kind := range []Kind{VXLAN, Geneve} {
		for _, n := range []int{0, 18, 1400} {
			inner := innerFrame(t, n)
			out, second := make([]byte, 2048), make([]byte, 2048)
			e2 := newEncap(t, kind)
			m := e2.Encapsulate(out, inner, 0xabcdef, 12345)
			if m != Overhead+len(inner) {
				t.Fatalf("%v: Encapsulate wrote %d bytes, want %d", kind, m, Overhead+len(inner))
			}
			pkt := gopacket.NewPacket(out[:m], layers.LayerTypeEthernet, gopacket.Default)
			if el := pkt.ErrorLayer(); el != nil {
				t.Fatalf("%v: gopacket: %v", kind, el.Error())
			}
			eth := pkt.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
			ip := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
			udp := pkt.Layer(layers.LayerTypeUDP).(*layers.UDP)
			if !bytes.Equal(eth.SrcMAC, local.MAC[:]) || !bytes.Equal(eth.DstMAC, remote.MAC[:]) {
				t.Errorf("%v: outer MACs %v -> %v", kind, eth.SrcMAC, eth.DstMAC)
			}
			if !ip.SrcIP.Equal(net.IP{192, 0, 2, 1}) || !ip.DstIP.Equal(net.IP{192, 0, 2, 2}) || ip.TTL != 64 ||
				ip.Flags != 0 || int(ip.Length) != m-header.EthernetLen || ip.IHL != 5 {
				t.Errorf("%v: outer IPv4 %+v", kind, ip)
			}
			e2.Encapsulate(second, inner, 1, 1)
			if binary.BigEndian.Uint16(second[header.EthernetLen+4:]) == ip.Id {
				t.Errorf("%v: two datagrams with IPv4 ID %d", kind, ip.Id)
			}
			if !header.IPv4(out[header.EthernetLen:]).ChecksumValid() {
				t.Errorf("%v: outer IPv4 checksum %#x is wrong", kind, ip.Checksum)
			}
			if udp.DstPort != layers.UDPPort(kind.DefaultPort()) || udp.SrcPort < srcPortMin || udp.SrcPort > srcPortMax ||
				int(udp.Length) != m-header.EthernetLen-header.IPv4MinLen || udp.Checksum != 0 {
				t.Errorf("%v: outer UDP %+v", kind, udp)
			}
			var payload []byte
			switch kind {
			case VXLAN:
				vx := pkt.Layer(layers.LayerTypeVXLAN).(*layers.VXLAN)
				if !vx.ValidIDFlag || vx.VNI != 0xabcdef {
					t.Errorf("vxlan header %+v", vx)
				}
				payload = vx.Payload
			case Geneve:
				gn := pkt.Layer(layers.LayerTypeGeneve).(*layers.Geneve)
				if gn.Version != 0 || gn.VNI != 0xabcdef || gn.Protocol != layers.EthernetTypeTransparentEthernetBridging ||
					gn.OptionsLength != 0 || gn.CriticalOption || gn.OAMPacket {
					t.Errorf("geneve header %+v", gn)
				}
				payload = gn.Payload
			}
			if !bytes.Equal(payload, inner) {
				t.Errorf("%v: inner frame changed", kind)
			}
		}
	}
}

// The UDP source port follows the flow hash, over the whole range.
func TestSourcePortFollowsTheFlow(t *testing.T) {
	e := newEncap(t, VXLAN)
	inner := innerFrame(t, 0)
	out := make([]byte, 256)
	port := func(h uint32) uint16 {
		e.Encapsulate(out, inner, 1, h)
		return binary.BigEndian.Uint16(out[header.EthernetLen+header.IPv4MinLen:])
	}
	if first, again := port(7), port(7); first != again {
		t.Fatalf("one flow hash gave source ports %d and %d", first, again)
	}
	seen := map[uint16]bool{}
	for h := uint32(0); h < 1000; h++ {
		seen[port(h*2654435761)] = true
	}
	if len(seen) < 900 {
		t.Fatalf("1000 flow hashes gave %d source ports", len(seen))
	}
}

func TestEncapsulateRefusesWhatDoesNotFit(t *testing.T) {
	e := newEncap(t, VXLAN)
	inner := innerFrame(t, 100)
	if n := e.Encapsulate(make([]byte, Overhead+len(inner)-1), inner, 1, 1); n != 0 {
		t.Fatalf("Encapsulate into a buffer one byte short wrote %d bytes", n)
	}
	if n := e.Encapsulate(make([]byte, 70000), make([]byte, 0xffff), 1, 1); n != 0 {
		t.Fatalf("Encapsulate of a frame too long for IPv4 wrote %d bytes", n)
	}
	if _, err := NewEncap(VXLAN, Endpoint{IP: netip.MustParseAddr("fd00::1")}, remote, 4789); err == nil {
		t.Fatal("NewEncap took an IPv6 endpoint")
	}
	if _, err := NewEncap(Kind(9), local, remote, 4789); err == nil {
		t.Fatal("NewEncap took an unknown kind")
	}
}

// encapsulated is inner in kind's outer headers, from remote to local, as
// a peer sends it, for Decapsulate's cases to spoil.
func encapsulated(t *testing.T, kind Kind, inner []byte) []byte {
	e, err := NewEncap(kind, remote, local, kind.DefaultPort())
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, Overhead+len(inner))
	e.Encapsulate(out, inner, 0x123456, 99)
	return out
}

func TestDecapsulate(t *testing.T) {
	inner := innerFrame(t, 30)
	vlanTagged := func(f []byte) []byte {
		g := append([]byte{}, f[:12]...)
		g = append(g, 0x81, 0x00, 0x00, 0x0a)
		return append(g, f[12:]...)
	}
	withGeneveOptions := func(f []byte, critical bool) []byte {
		// one 8-byte option (class, type, length 1 word, its word)
		opt := []byte{0x01, 0x02, 0x03, 0x01, 1, 2, 3, 4}
		if critical {
			opt[2] |= 0x80
		}
		g := append([]byte{}, f[:Overhead]...)
		g = append(g, opt...)
		g = append(g, f[Overhead:]...)
		gn := g[Overhead-geneveLen:]
		gn[0] = 2 // option length, in 4-byte words
		if critical {
			gn[1] |= 0x40
		}
		fixLengths(g, len(opt))
		return g
	}
	set := func(f []byte, off int, v byte) []byte {
		g := append([]byte{}, f...)
		g[off] = v
		return g
	}
	vx := encapsulated(t, VXLAN, inner)
	gn := encapsulated(t, Geneve, inner)
	ipOff, udpOff, tunOff := header.EthernetLen, header.EthernetLen+header.IPv4MinLen, header.EthernetLen+header.IPv4MinLen+header.UDPLen
	cases := []struct {
		name  string
		kind  Kind
		frame []byte
		want  Result
	}{
		{"vxlan", VXLAN, vx, Decapsulated},
		{"geneve", Geneve, gn, Decapsulated},
		{"vxlan behind an outer VLAN tag", VXLAN, vlanTagged(vx), Decapsulated},
		{"geneve with an option", Geneve, withGeneveOptions(gn, false), Decapsulated},
		{"geneve with a critical option", Geneve, withGeneveOptions(gn, true), CriticalOpt},
		{"geneve version 1", Geneve, set(gn, tunOff, 0x40), BadHeader},
		{"geneve carrying IPv4", Geneve, set(gn, tunOff+3, 0x00), BadHeader},
		{"vxlan without the I flag", VXLAN, set(vx, tunOff, 0), BadHeader},
		{"vxlan to the geneve port", Geneve, vx, NotTunnel},
		{"vxlan read as geneve on its port", Geneve, set(set(vx, udpOff+2, 0x17), udpOff+3, 0xc1), BadHeader},
		{"a TCP segment", VXLAN, set(vx, ipOff+9, 6), NotTunnel},
		{"IPv6", VXLAN, set(vx, 12, 0x86), NotTunnel},
		{"a short frame", VXLAN, vx[:10], NotTunnel},
		{"truncated in the UDP header", VXLAN, vx[:udpOff+4], BadOuter},
		{"truncated in the tunnel header", VXLAN, vx[:tunOff+4], BadOuter},
		{"an IPv4 length past the frame", VXLAN, vx[:len(vx)-1], BadOuter},
		{"an IHL below 5", VXLAN, set(vx, ipOff, 0x44), BadOuter},
		{"a first fragment", VXLAN, set(vx, ipOff+6, 0x20), Fragment},
		{"a later fragment", VXLAN, set(vx, ipOff+7, 0x01), Fragment},
		{"a UDP length below 8", VXLAN, set(set(vx, udpOff+4, 0), udpOff+5, 4), BadOuter},
		{"a UDP length past the datagram", VXLAN, set(vx, udpOff+4, 0xff), BadOuter},
		{"a UDP length that leaves no inner frame", VXLAN, shortened(vx, len(inner)-4), ShortInner},
	}
	for _, c := range cases {
		got, o, r := Decapsulate(c.kind, c.kind.DefaultPort(), c.frame)
		if r != c.want {
			t.Errorf("%s: %v, want %v", c.name, r, c.want)
			continue
		}
		if r != Decapsulated {
			if got != nil {
				t.Errorf("%s: refused, but returned an inner frame", c.name)
			}
			continue
		}
		if !bytes.Equal(got, inner) {
			t.Errorf("%s: inner frame % x, want % x", c.name, got, inner)
		}
		want := Outer{Src: [4]byte{192, 0, 2, 2}, Dst: [4]byte{192, 0, 2, 1}, VNI: 0x123456, SrcPort: binary.BigEndian.Uint16(vx[udpOff:]),
			DstPort: c.kind.DefaultPort()}
		if o != want {
			t.Errorf("%s: outer %+v, want %+v", c.name, o, want)
		}
	}
}

// An underlay with several listeners reads each datagram by the kind of
// the (address, port) it was sent to, and leaves alone what none of them
// listens on.
func TestDecapsulateForListeners(t *testing.T) {
	inner := innerFrame(t, 30)
	vx, gn := encapsulated(t, VXLAN, inner), encapsulated(t, Geneve, inner)
	here, elsewhere := [4]byte{192, 0, 2, 1}, [4]byte{192, 0, 2, 99}
	cases := []struct {
		name  string
		ls    Listeners
		frame []byte
		want  Result
	}{
		{"vxlan, both listened on", Listeners{{here, 4789, VXLAN}, {here, 6081, Geneve}}, vx, Decapsulated},
		{"geneve, both listened on", Listeners{{here, 4789, VXLAN}, {here, 6081, Geneve}}, gn, Decapsulated},
		{"geneve on a port read as vxlan", Listeners{{here, 6081, VXLAN}}, gn, BadHeader},
		{"to another address", Listeners{{elsewhere, 4789, VXLAN}}, vx, NotTunnel},
		{"any address", Listeners{{Port: 4789, Kind: VXLAN}}, vx, Decapsulated},
		{"no listener", nil, vx, NotTunnel},
	}
	for _, c := range cases {
		if _, _, r := DecapsulateFor(c.ls, c.frame); r != c.want {
			t.Errorf("%s: %v, want %v", c.name, r, c.want)
		}
	}
}

// shortened is frame with its datagram's lengths cut by n bytes, the
// bytes left in place as Ethernet padding.
func shortened(frame []byte, n int) []byte {
	g := append([]byte{}, frame...)
	fixLengths(g, -n)
	return g
}

// fixLengths adds n to the outer IPv4 and UDP lengths of frame.
func fixLengths(frame []byte, n int) {
	ip := frame[header.EthernetLen:]
	binary.BigEndian.PutUint16(ip[2:], uint16(int(binary.BigEndian.Uint16(ip[2:]))+n))
	udp := ip[header.IPv4MinLen:]
	binary.BigEndian.PutUint16(udp[4:], uint16(int(binary.BigEndian.Uint16(udp[4:]))+n))
}

func TestNoAllocations(t *testing.T) {
	for _, kind := range []Kind{VXLAN, Geneve} {
		e := newEncap(t, kind)
		inner := innerFrame(t, 46)
		out := make([]byte, 2048)
		frame := encapsulated(t, kind, inner)
		if a := testing.AllocsPerRun(1000, func() { e.Encapsulate(out, inner, 5, 5) }); a != 0 {
			t.Errorf("%v: Encapsulate allocates %v times", kind, a)
		}
		if a := testing.AllocsPerRun(1000, func() { Decapsulate(kind, kind.DefaultPort(), frame) }); a != 0 {
			t.Errorf("%v: Decapsulate allocates %v times", kind, a)
		}
	}
}

func BenchmarkEncapsulate(b *testing.B) {
	e := newEncap(b, VXLAN)
	inner := innerFrame(b, 18)
	out := make([]byte, 2048)
	for i := 0; b.Loop(); i++ {
		e.Encapsulate(out, inner, 5, uint32(i))
	}
}

func BenchmarkDecapsulate(b *testing.B) {
	e := newEncap(b, VXLAN)
	inner := innerFrame(b, 18)
	out := make([]byte, 2048)
	frame := out[:e.Encapsulate(out, inner, 5, 5)]
	for b.Loop() {
		Decapsulate(VXLAN, 4789, frame)
	}
}

// Whatever arrives on a tunnel's port, Decapsulate does not panic, and
// what it takes out is inside the frame; taken out and put back in, the
// inner frame and VNI come out the same again.
func FuzzDecapsulate(f *testing.F) {
	inner := innerFrame(f, 10)
	for _, kind := range []Kind{VXLAN, Geneve} {
		e := newEncap(f, kind)
		out := make([]byte, 256)
		f.Add(uint8(kind), out[:e.Encapsulate(out, inner, 77, 3)])
	}
	f.Add(uint8(VXLAN), []byte{})
	f.Fuzz(func(t *testing.T, k uint8, frame []byte) {
		kind := Kind(k%2 + 1)
		got, o, r := Decapsulate(kind, kind.DefaultPort(), frame)
		if r != Decapsulated {
			if got != nil {
				t.Fatalf("refused (%v) with an inner frame", r)
			}
			return
		}
		if len(got) < header.EthernetLen || !within(got, frame) {
			t.Fatalf("inner frame of %d bytes not inside the frame of %d", len(got), len(frame))
		}
		e := newEncap(t, kind)
		out := make([]byte, Overhead+len(got))
		if e.Encapsulate(out, got, o.VNI, 1) == 0 {
			if len(got) <= 0xffff-Overhead {
				t.Fatal("Encapsulate refused what Decapsulate gave")
			}
			return
		}
		again, o2, r := Decapsulate(kind, kind.DefaultPort(), out)
		if r != Decapsulated || !bytes.Equal(again, got) || o2.VNI != o.VNI {
			t.Fatalf("round trip: %v, VNI %d -> %d", r, o.VNI, o2.VNI)
		}
	})
}

// within says whether sub's bytes lie inside b's.
func within(sub, b []byte) bool {
	if len(sub) == 0 {
		return true
	}
	for i := 0; i+len(sub) <= len(b); i++ {
		if &b[i] == &sub[0] {
			return true
		}
	}
	return false
}
