package rstp

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/xswitch/xswitch/header"
)

// BPDU encoding, IEEE 802.1D-2004 clause 9. A BPDU travels in an 802.3
// frame (a length, not an EtherType) to the Bridge Group Address, behind
// an LLC header with both SAPs 0x42. Times are in units of 1/256 s.

// GroupAddress is the Bridge Group Address that BPDUs are sent to.
var GroupAddress = [6]byte{0x01, 0x80, 0xc2, 0x00, 0x00, 0x00}

// Type is a BPDU's type.
type Type uint8

// The BPDU types.
const (
	TypeConfig Type = 0x00 // configuration BPDU of STP
	TypeRST    Type = 0x02 // rapid spanning tree BPDU
	TypeTCN    Type = 0x80 // topology change notification of STP
)

func (t Type) String() string {
	switch t {
	case TypeConfig:
		return "Config"
	case TypeRST:
		return "RST"
	case TypeTCN:
		return "TCN"
	}
	return fmt.Sprintf("Type(%#x)", uint8(t))
}

// Flags of configuration and RST BPDUs (9.3.3). Only TopologyChange and
// TopologyChangeAck mean anything in a configuration BPDU.
const (
	FlagTopologyChange    = 0x01
	FlagProposal          = 0x02
	flagRoleMask          = 0x0c
	flagRoleShift         = 2
	FlagLearning          = 0x10
	FlagForwarding        = 0x20
	FlagAgreement         = 0x40
	FlagTopologyChangeAck = 0x80
)

// The port role values of an RST BPDU's flags (9.2.9).
const (
	roleUnknown        = 0
	roleAlternateOrBup = 1
	roleRootPort       = 2
	roleDesignatedPort = 3
)

// Lengths of the BPDUs, without the LLC header (9.3.1, 9.3.2, 9.3.3).
const (
	lenTCN    = 4
	lenConfig = 35
	lenRST    = 36
)

// Time is a BPDU time value, in 1/256 s.
type Time uint16

// Seconds returns t rounded to whole seconds, the unit the state machines
// count in.
func (t Time) Seconds() uint16 { return uint16((uint32(t) + 128) >> 8) }

// TimeOf encodes whole seconds.
func TimeOf(seconds uint16) Time { return Time(uint32(seconds) << 8) }

// BPDU is one decoded BPDU. A TCN carries only its version and type.
type BPDU struct {
	Version      uint8 // protocol version identifier: 0 for STP, 2 for RSTP
	Type         Type
	Flags        uint8
	Root         BridgeID
	RootPathCost uint32
	Bridge       BridgeID // the transmitting bridge
	Port         PortID   // the transmitting port
	MessageAge   Time
	MaxAge       Time
	HelloTime    Time
	ForwardDelay Time
}

// role is the port role an RST BPDU conveys, and designated for a
// configuration BPDU, which is always sent by a designated port.
func (b *BPDU) role() uint8 {
	if b.Type == TypeConfig {
		return roleDesignatedPort
	}
	return (b.Flags & flagRoleMask) >> flagRoleShift
}

// ErrNotBPDU is the error of a frame that is not a BPDU, or not a valid
// one (9.3.4).
var ErrNotBPDU = errors.New("not a valid BPDU")

// DecodeFrame decodes the BPDU in an Ethernet frame to the Bridge Group
// Address: the LLC header after an 802.3 length, then the BPDU, whose
// padding the length excludes.
func DecodeFrame(frame []byte) (BPDU, error) {
	const llcStart = header.EthernetLen
	if len(frame) < llcStart+3 {
		return BPDU{}, fmt.Errorf("%w: %d bytes is too short", ErrNotBPDU, len(frame))
	}
	length := int(binary.BigEndian.Uint16(frame[header.EthernetTypeOffset:]))
	if length > 1500 {
		return BPDU{}, fmt.Errorf("%w: EtherType %#04x, not an 802.3 length", ErrNotBPDU, length)
	}
	if length < 3 || llcStart+length > len(frame) {
		return BPDU{}, fmt.Errorf("%w: 802.3 length %d in a frame of %d bytes", ErrNotBPDU, length, len(frame))
	}
	if llc := frame[llcStart : llcStart+3]; llc[0] != 0x42 || llc[1] != 0x42 || llc[2] != 0x03 {
		return BPDU{}, fmt.Errorf("%w: LLC header %x, want 424203", ErrNotBPDU, llc)
	}
	return Decode(frame[llcStart+3 : llcStart+length])
}

// Decode decodes a BPDU, as 9.3.4 validates it: a configuration BPDU of at
// least 35 bytes whose message age is below its max age, a TCN, or an RST
// BPDU of protocol version 2 or above and at least 36 bytes. An RST BPDU
// whose port role is Unknown is taken as the configuration BPDU it then
// is (9.2.9).
func Decode(data []byte) (BPDU, error) {
	if len(data) < lenTCN {
		return BPDU{}, fmt.Errorf("%w: %d bytes is too short", ErrNotBPDU, len(data))
	}
	if id := binary.BigEndian.Uint16(data); id != 0 {
		return BPDU{}, fmt.Errorf("%w: protocol identifier %#04x", ErrNotBPDU, id)
	}
	b := BPDU{Version: data[2], Type: Type(data[3])}
	switch {
	case b.Type == TypeTCN:
		return b, nil
	case b.Type == TypeConfig && len(data) >= lenConfig:
	case b.Type == TypeRST && b.Version >= 2 && len(data) >= lenRST:
	default:
		return BPDU{}, fmt.Errorf("%w: %v BPDU of version %d in %d bytes", ErrNotBPDU, b.Type, b.Version, len(data))
	}
	b.Flags = data[4]
	b.Root = BridgeID(binary.BigEndian.Uint64(data[5:]))
	b.RootPathCost = binary.BigEndian.Uint32(data[13:])
	b.Bridge = BridgeID(binary.BigEndian.Uint64(data[17:]))
	b.Port = PortID(binary.BigEndian.Uint16(data[25:]))
	b.MessageAge = Time(binary.BigEndian.Uint16(data[27:]))
	b.MaxAge = Time(binary.BigEndian.Uint16(data[29:]))
	b.HelloTime = Time(binary.BigEndian.Uint16(data[31:]))
	b.ForwardDelay = Time(binary.BigEndian.Uint16(data[33:]))
	if b.Type == TypeRST && b.role() == roleUnknown {
		b.Type = TypeConfig
	}
	if b.Type == TypeConfig && b.MessageAge >= b.MaxAge {
		return BPDU{}, fmt.Errorf("%w: message age %d/256 s is not below max age %d/256 s", ErrNotBPDU, b.MessageAge, b.MaxAge)
	}
	return b, nil
}

// Append appends b's encoding, without the LLC header, to dst.
func (b *BPDU) Append(dst []byte) []byte {
	dst = append(dst, 0, 0, b.Version, byte(b.Type))
	if b.Type == TypeTCN {
		return dst
	}
	dst = append(dst, b.Flags)
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.Root))
	dst = binary.BigEndian.AppendUint32(dst, b.RootPathCost)
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.Bridge))
	dst = binary.BigEndian.AppendUint16(dst, uint16(b.Port))
	for _, t := range []Time{b.MessageAge, b.MaxAge, b.HelloTime, b.ForwardDelay} {
		dst = binary.BigEndian.AppendUint16(dst, uint16(t))
	}
	if b.Type == TypeRST {
		dst = append(dst, 0) // Version 1 Length
	}
	return dst
}

// AppendFrame appends an Ethernet frame carrying b from src to the Bridge
// Group Address, padded to the minimum frame size, to dst.
func (b *BPDU) AppendFrame(dst []byte, src [6]byte) []byte {
	start := len(dst)
	dst = append(dst, GroupAddress[:]...)
	dst = append(dst, src[:]...)
	lengthAt := len(dst)
	dst = append(dst, 0, 0, 0x42, 0x42, 0x03)
	dst = b.Append(dst)
	binary.BigEndian.PutUint16(dst[lengthAt:], uint16(len(dst)-lengthAt-2))
	for len(dst)-start < 60 {
		dst = append(dst, 0)
	}
	return dst
}
