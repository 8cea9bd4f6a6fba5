package bench

import (
	"net"
	"slices"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/xswitch/xswitch/header"
)

func TestBuildFrame(t *testing.T) {
	for _, size := range []int{MinFrameSize, 64, 1500, MaxFrameSize(0), 9014, MaxFrameSize(maxMTU)} {
		frame, err := BuildFrame(FrameConfig{
			SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2},
			SrcIP: net.IPv4(10, 0, 0, 1), DstIP: net.IPv4(10, 0, 0, 2), Size: size,
		})
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		if len(frame) != size {
			t.Errorf("size %d: frame has %d bytes", size, len(frame))
		}
		pkt := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
		ip, _ := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		udp, _ := pkt.Layer(layers.LayerTypeUDP).(*layers.UDP)
		if ip == nil || udp == nil {
			t.Fatalf("size %d: not an IPv4/UDP frame: %v", size, pkt)
		}
		if got, want := int(ip.Length), size-header.EthernetLen; got != want {
			t.Errorf("size %d: IPv4 length %d, want %d", size, got, want)
		}
		if !header.IPv4(frame[header.EthernetLen:]).ChecksumValid() {
			t.Errorf("size %d: IPv4 header checksum is wrong: %x", size, frame[header.EthernetLen:udpOffset])
		}
		// A sum over what a checksum covers, itself included, is 0xffff.
		pseudo := header.Sum(0, frame[header.EthernetLen+header.IPv4SrcOffset:udpOffset]) + header.ProtoUDP + uint32(size-udpOffset)
		if sum := header.Fold(header.Sum(pseudo, frame[udpOffset:])); sum != 0xffff {
			t.Errorf("size %d: UDP checksum is wrong (sum %#x)", size, sum)
		}
	}
}

func TestBuildFrameRejectsSizes(t *testing.T) {
	for _, size := range []int{0, MinFrameSize - 1, MaxFrameSize(maxMTU) + 1} {
		if _, err := BuildFrame(FrameConfig{SrcIP: net.IPv4(10, 0, 0, 1), DstIP: net.IPv4(10, 0, 0, 2), Size: size}); err == nil {
			t.Errorf("size %d accepted", size)
		}
	}
}

func TestMaxFrameSize(t *testing.T) {
	for mtu, want := range map[int]int{0: 1514, 1500: 1514, 9000: 9014, 68: 82} {
		if got := MaxFrameSize(mtu); got != want {
			t.Errorf("MaxFrameSize(%d) = %d, want %d", mtu, got, want)
		}
	}
}

func TestFlowEditor(t *testing.T) {
	frame, err := BuildFrame(FrameConfig{
		SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2},
		SrcIP: net.IPv4(10, 0, 0, 1), DstIP: net.IPv4(10, 0, 0, 2), Size: 64,
	})
	if err != nil {
		t.Fatal(err)
	}
	if flowEditor(1) != nil || flowEditor(0) != nil {
		t.Error("flowEditor for one flow edits: want the frame sent as built, with its checksum")
	}
	if got := flowTemplate(frame, 1); &got[0] != &frame[0] {
		t.Error("flowTemplate for one flow is not the frame itself")
	}
	template := flowTemplate(frame, 3)
	if c := header.UDP(template[udpOffset:]).Checksum(); c != 0 {
		t.Errorf("flowTemplate for 3 flows keeps a UDP checksum: %#04x", c)
	}
	if header.UDP(frame[udpOffset:]).Checksum() == 0 {
		t.Error("flowTemplate changed the frame it was given")
	}
	edit := flowEditor(3)
	buf := append([]byte(nil), template...)
	var ports []int
	for range 7 {
		edit(buf)
		pkt := gopacket.NewPacket(buf, layers.LayerTypeEthernet, gopacket.Default)
		udp, _ := pkt.Layer(layers.LayerTypeUDP).(*layers.UDP)
		if udp == nil {
			t.Fatalf("an edited frame is no UDP frame: %v", pkt)
		}
		if udp.Checksum != 0 || udp.DstPort != benchDstPort {
			t.Errorf("edited frame: checksum %#x, destination port %d; want none and %d", udp.Checksum, udp.DstPort, benchDstPort)
		}
		ports = append(ports, int(udp.SrcPort))
	}
	want := []int{FirstFlowPort, FirstFlowPort + 1, FirstFlowPort + 2, FirstFlowPort, FirstFlowPort + 1, FirstFlowPort + 2, FirstFlowPort}
	if !slices.Equal(ports, want) {
		t.Errorf("source ports %v, want %v: each flow in turn, as xdp_gen", ports, want)
	}
}

// TestSetFlowBeyondTheSourcePorts checks that flows past the source
// ports' range differ by their destination port, and that each carries
// its index.
func TestSetFlowBeyondTheSourcePorts(t *testing.T) {
	frame, err := BuildFrame(FrameConfig{
		SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2},
		SrcIP: net.IPv4(10, 0, 0, 1), DstIP: net.IPv4(10, 0, 0, 2), Size: MinFrameSize,
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[[2]uint16]int{}
	for _, i := range []int{0, 1, MaxFlows - 1, MaxFlows, MaxFlows + 1, 2*MaxFlows + 7, MaxConnections - 1} {
		setFlow(frame, i)
		udp := header.UDP(frame[udpOffset:])
		ports := [2]uint16{udp.SrcPort(), udp.DstPort()}
		if other, ok := seen[ports]; ok {
			t.Errorf("flows %d and %d both have ports %v", other, i, ports)
		}
		seen[ports] = i
		if want := [2]uint16{uint16(FirstFlowPort + i%MaxFlows), uint16(benchDstPort + i/MaxFlows)}; ports != want {
			t.Errorf("flow %d: ports %v, want %v", i, ports, want)
		}
		if got := flowOf(frame); got != i {
			t.Errorf("flow %d carries index %d", i, got)
		}
	}
}
