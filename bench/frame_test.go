package bench

import (
	"net"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

func TestBuildFrame(t *testing.T) {
	for _, size := range []int{MinFrameSize, 64, 1500, MaxFrameSize} {
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
		if got, want := int(ip.Length), size-14; got != want {
			t.Errorf("size %d: IPv4 length %d, want %d", size, got, want)
		}
		// A header's ones' complement sum including its checksum is 0xffff.
		if sum := onesComplementSum(frame[14:34]); sum != 0xffff {
			t.Errorf("size %d: IPv4 header checksum is wrong (sum %#x)", size, sum)
		}
		pseudo := append(append([]byte{}, frame[26:34]...), 0, 17, byte((size-34)>>8), byte(size-34))
		if sum := onesComplementSum(append(pseudo, frame[34:]...)); sum != 0xffff {
			t.Errorf("size %d: UDP checksum is wrong (sum %#x)", size, sum)
		}
	}
}

func TestBuildFrameRejectsSizes(t *testing.T) {
	for _, size := range []int{0, MinFrameSize - 1, MaxFrameSize + 1} {
		if _, err := BuildFrame(FrameConfig{SrcIP: net.IPv4(10, 0, 0, 1), DstIP: net.IPv4(10, 0, 0, 2), Size: size}); err == nil {
			t.Errorf("size %d accepted", size)
		}
	}
}

func onesComplementSum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return uint16(sum)
}
