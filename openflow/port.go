package openflow

import (
	"bytes"
	"encoding/binary"
)

// Port is ofp_port, a port's description.
type Port struct {
	PortNo uint32
	HWAddr [6]byte
	Name   string // at most 15 bytes on the wire
	Config uint32 // PortConfig* bits
	State  uint32 // PortState* bits
	// PortFeature* bits
	Curr, Advertised, Supported, Peer uint32
	CurrSpeed, MaxSpeed               uint32 // kb/s
}

// The bits of Port.Config.
const (
	PortConfigPortDown   uint32 = 1 << 0
	PortConfigNoRecv     uint32 = 1 << 2
	PortConfigNoFwd      uint32 = 1 << 5
	PortConfigNoPacketIn uint32 = 1 << 6
)

// The bits of Port.State.
const (
	PortStateLinkDown uint32 = 1 << 0
	PortStateBlocked  uint32 = 1 << 1
	PortStateLive     uint32 = 1 << 2
)

// The bits of Port.Curr, Advertised, Supported and Peer.
const (
	PortFeature10MbHD    uint32 = 1 << 0
	PortFeature10MbFD    uint32 = 1 << 1
	PortFeature100MbHD   uint32 = 1 << 2
	PortFeature100MbFD   uint32 = 1 << 3
	PortFeature1GbHD     uint32 = 1 << 4
	PortFeature1GbFD     uint32 = 1 << 5
	PortFeature10GbFD    uint32 = 1 << 6
	PortFeature40GbFD    uint32 = 1 << 7
	PortFeature100GbFD   uint32 = 1 << 8
	PortFeature1TbFD     uint32 = 1 << 9
	PortFeatureOther     uint32 = 1 << 10
	PortFeatureCopper    uint32 = 1 << 11
	PortFeatureFiber     uint32 = 1 << 12
	PortFeatureAutoneg   uint32 = 1 << 13
	PortFeaturePause     uint32 = 1 << 14
	PortFeaturePauseAsym uint32 = 1 << 15
)

// portLen is the length of ofp_port.
const portLen = 64

func appendPort(b []byte, p Port) []byte {
	be := binary.BigEndian
	b = be.AppendUint32(b, p.PortNo)
	b = append(b, 0, 0, 0, 0)
	b = append(b, p.HWAddr[:]...)
	b = append(b, 0, 0)
	b = appendString(b, p.Name, 16)
	for _, v := range [...]uint32{p.Config, p.State, p.Curr, p.Advertised, p.Supported, p.Peer, p.CurrSpeed, p.MaxSpeed} {
		b = be.AppendUint32(b, v)
	}
	return b
}

// decodePort decodes the portLen bytes of b.
func decodePort(b []byte) Port {
	be := binary.BigEndian
	p := Port{PortNo: be.Uint32(b), Name: cString(b[16:32])}
	copy(p.HWAddr[:], b[8:14])
	for i, v := range [...]*uint32{&p.Config, &p.State, &p.Curr, &p.Advertised, &p.Supported, &p.Peer, &p.CurrSpeed, &p.MaxSpeed} {
		*v = be.Uint32(b[32+4*i:])
	}
	return p
}

// appendString appends s as a NUL-terminated string in a field of width
// bytes, cut to fit.
func appendString(b []byte, s string, width int) []byte {
	s = s[:min(len(s), width-1)]
	b = append(b, s...)
	return append(b, make([]byte, width-len(s))...)
}

// cString is the string in a NUL-padded field, whose last byte is a
// NUL even when the peer did not put one there.
func cString(b []byte) string {
	b = b[:len(b)-1]
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
