package header

import "encoding/binary"

// IPv6 (RFC 8200):
//
//	 0       4               12                                      31
//	|Version| Traffic Class |              Flow Label               |
//	|        Payload Length         |  Next Header  |   Hop Limit   |
//	|                   Source Address (16 bytes)                   |
//	|                Destination Address (16 bytes)                 |
//
// IPv6 has no header checksum: its addresses are in the pseudo-header of
// the TCP, UDP and ICMPv6 checksums.
const (
	IPv6PayloadLenOffset = 4
	IPv6NextHeaderOffset = 6
	IPv6HopLimitOffset   = 7
	IPv6SrcOffset        = 8
	IPv6DstOffset        = 24
	IPv6Len              = 40
	IPv6AddrLen          = 16

	// IPv6TrafficClassShift places the traffic class in the first 16-bit
	// word, after the version.
	IPv6TrafficClassShift = 4

	// IPv6FlowLabelMask is the flow label's bits in the first 32-bit
	// word.
	IPv6FlowLabelMask = 0x000fffff

	// IPv6ExtHeaderMinLen is the least length of an extension header.
	IPv6ExtHeaderMinLen = 8
	IPv6FragmentLen     = 8 // a fragment header
)

// IPv6 is an IPv6 header.
type IPv6 []byte

func (b IPv6) SetPayloadLen(n uint16) { binary.BigEndian.PutUint16(b[IPv6PayloadLenOffset:], n) }
func (b IPv6) HopLimit() uint8        { return b[IPv6HopLimitOffset] }
func (b IPv6) SetHopLimit(h uint8)    { b[IPv6HopLimitOffset] = h }

// IPv6Fragment is an IPv6 fragment header, IPv6FragmentLen bytes.
type IPv6Fragment []byte

// NextHeader is the header after the fragment header: the first
// fragment's next one, and what the later ones continue.
func (b IPv6Fragment) NextHeader() uint8 { return b[0] }

// Offset is where the fragment's data starts in its datagram, in 8-byte
// units: 0 for the first fragment.
func (b IPv6Fragment) Offset() uint16 { return binary.BigEndian.Uint16(b[2:]) >> 3 }

// MoreFragments says that fragments of the datagram follow this one.
func (b IPv6Fragment) MoreFragments() bool { return b[3]&1 != 0 }

// ID is the identification the fragments of one datagram share.
func (b IPv6Fragment) ID() uint32 { return binary.BigEndian.Uint32(b[4:]) }
