package bench

import (
	"encoding/binary"
	"fmt"
	"net"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/xswitch/xswitch/header"
)

// MinFrameSize is Ethernet's minimum frame, without the FCS, which XDP
// never sees.
const MinFrameSize = 60

// MaxFrameSize is the largest frame veths of MTU mtu carry (0: 1500, so
// 1514), without the FCS.
func MaxFrameSize(mtu int) int {
	if mtu == 0 {
		mtu = 1500
	}
	return mtu + header.EthernetLen
}

// FrameConfig describes the one UDP datagram the generator sends again and
// again.
type FrameConfig struct {
	SrcMAC, DstMAC net.HardwareAddr
	SrcIP, DstIP   net.IP // IPv4
	Size           int    // of the whole Ethernet frame
}

const (
	benchSrcPort = 9
	benchDstPort = 9 // discard
)

// BuildFrame returns an Ethernet/IPv4/UDP frame of exactly cfg.Size bytes
// with correct IPv4 and UDP checksums.
func BuildFrame(cfg FrameConfig) ([]byte, error) {
	if limit := MaxFrameSize(maxMTU); cfg.Size < MinFrameSize || cfg.Size > limit {
		return nil, fmt.Errorf("frame size %d is outside %d..%d", cfg.Size, MinFrameSize, limit)
	}
	if cfg.SrcIP.To4() == nil || cfg.DstIP.To4() == nil {
		return nil, fmt.Errorf("bench frames are IPv4; got %v -> %v", cfg.SrcIP, cfg.DstIP)
	}
	eth := &layers.Ethernet{SrcMAC: cfg.SrcMAC, DstMAC: cfg.DstMAC, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{
		Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP,
		SrcIP: cfg.SrcIP.To4(), DstIP: cfg.DstIP.To4(),
	}
	udp := &layers.UDP{SrcPort: benchSrcPort, DstPort: benchDstPort}
	if err := udp.SetNetworkLayerForChecksum(ip); err != nil {
		return nil, err
	}
	payload := make(gopacket.Payload, cfg.Size-udpPayloadOffset)
	for i := range payload {
		payload[i] = byte(i)
	}
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, eth, ip, udp, payload); err != nil {
		return nil, fmt.Errorf("build the bench frame: %w", err)
	}
	return buf.Bytes(), nil
}

// Offsets in the bench frame: its UDP header follows Ethernet and an IPv4
// header without options.
const (
	udpOffset         = header.EthernetLen + header.IPv4MinLen
	udpChecksumOffset = udpOffset + header.UDPChecksumOffset
	udpPayloadOffset  = udpOffset + header.UDPLen
)

// setFlow makes a bench frame one of flow i's, as xdp_gen does to spread
// frames over flows: UDP source port FirstFlowPort + i % MaxFlows,
// destination port benchDstPort + i / MaxFlows (so the first MaxFlows
// flows differ by the source port alone), i in the payload's first 4
// bytes, where the receiver's counter reads it (see flowSet), and no UDP
// checksum (0: none, for IPv4), which would have to be worked out for
// each frame.
func setFlow(frame []byte, i int) {
	udp := header.UDP(frame[udpOffset:])
	udp.SetSrcPort(uint16(FirstFlowPort + i%MaxFlows))
	udp.SetDstPort(uint16(benchDstPort + i/MaxFlows))
	udp.SetChecksum(0)
	binary.BigEndian.PutUint32(frame[udpPayloadOffset:], uint32(i))
}

// flowOf is the flow setFlow made frame one of.
func flowOf(frame []byte) int {
	return int(binary.BigEndian.Uint32(frame[udpPayloadOffset:]))
}
