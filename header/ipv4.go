package header

import "encoding/binary"

// IPv4 (RFC 791):
//
//	 0       4       8               16      19                      31
//	|Version|  IHL  |      TOS      |          Total Length         |
//	|        Identification         |Flags|    Fragment Offset      |
//	|      TTL      |   Protocol    |        Header Checksum        |
//	|                        Source Address                         |
//	|                     Destination Address                       |
//	|                    Options (IHL > 5)                          |
const (
	IPv4TOSOffset      = 1
	IPv4TotalLenOffset = 2
	IPv4IDOffset       = 4
	IPv4FlagsOffset    = 6 // flags and fragment offset
	IPv4TTLOffset      = 8
	IPv4ProtocolOffset = 9
	IPv4ChecksumOffset = 10
	IPv4SrcOffset      = 12
	IPv4DstOffset      = 16
	IPv4MinLen         = 20 // without options
	IPv4AddrLen        = 4

	// IPv4VersionIHL is the first byte of a header without options.
	IPv4VersionIHL = 4<<4 | IPv4MinLen/4

	ipv4MoreFragments = 0x2000
	ipv4FragOffMask   = 0x1fff
)

// IP protocol numbers (IPv4's protocol, IPv6's next header).
const (
	ProtoIPv6HopByHop    = 0
	ProtoICMP            = 1
	ProtoTCP             = 6
	ProtoUDP             = 17
	ProtoIPv6Routing     = 43
	ProtoIPv6Fragment    = 44
	ProtoESP             = 50
	ProtoAH              = 51
	ProtoICMPv6          = 58
	ProtoIPv6NoNext      = 59
	ProtoIPv6Destination = 60
	ProtoSCTP            = 132
)

// DSCPMask and ECNMask are the parts of the IPv4 TOS byte and of the IPv6
// traffic class (RFC 2474, RFC 3168).
const (
	DSCPMask = 0xfc
	ECNMask  = 0x03
)

// IPv4 is an IPv4 header.
type IPv4 []byte

func (b IPv4) Version() uint8 { return b[0] >> 4 }

// HeaderLen is the header's length in bytes, options included, as IHL
// says; a valid header has at least IPv4MinLen.
func (b IPv4) HeaderLen() int { return int(b[0]&0x0f) * 4 }

// SetHeaderLen writes the version, 4, and the header length n in bytes,
// a multiple of 4.
func (b IPv4) SetHeaderLen(n int) { b[0] = 4<<4 | byte(n/4) }

func (b IPv4) TotalLen() uint16           { return binary.BigEndian.Uint16(b[IPv4TotalLenOffset:]) }
func (b IPv4) SetTotalLen(n uint16)       { binary.BigEndian.PutUint16(b[IPv4TotalLenOffset:], n) }
func (b IPv4) SetID(id uint16)            { binary.BigEndian.PutUint16(b[IPv4IDOffset:], id) }
func (b IPv4) TTL() uint8                 { return b[IPv4TTLOffset] }
func (b IPv4) SetTTL(ttl uint8)           { b[IPv4TTLOffset] = ttl }
func (b IPv4) Protocol() uint8            { return b[IPv4ProtocolOffset] }
func (b IPv4) SetProtocol(p uint8)        { b[IPv4ProtocolOffset] = p }
func (b IPv4) SetChecksum(c uint16)       { binary.BigEndian.PutUint16(b[IPv4ChecksumOffset:], c) }
func (b IPv4) Src() [IPv4AddrLen]byte     { return [IPv4AddrLen]byte(b[IPv4SrcOffset:]) }
func (b IPv4) Dst() [IPv4AddrLen]byte     { return [IPv4AddrLen]byte(b[IPv4DstOffset:]) }
func (b IPv4) SetSrc(a [IPv4AddrLen]byte) { copy(b[IPv4SrcOffset:], a[:]) }
func (b IPv4) SetDst(a [IPv4AddrLen]byte) { copy(b[IPv4DstOffset:], a[:]) }

// IsFragment reports whether the packet is a fragment: more follow, or
// this one does not start the datagram.
func (b IPv4) IsFragment() bool {
	return binary.BigEndian.Uint16(b[IPv4FlagsOffset:])&(ipv4MoreFragments|ipv4FragOffMask) != 0
}

// ID is the identification field, which the fragments of one datagram
// share.
func (b IPv4) ID() uint16 { return binary.BigEndian.Uint16(b[IPv4IDOffset:]) }

// FragmentOffset is where the fragment's data starts in its datagram, in
// 8-byte units: 0 for the first fragment (and an unfragmented packet).
func (b IPv4) FragmentOffset() uint16 {
	return binary.BigEndian.Uint16(b[IPv4FlagsOffset:]) & ipv4FragOffMask
}

// ComputeChecksum is the header checksum computed from scratch, whatever
// the checksum field holds.
func (b IPv4) ComputeChecksum() uint16 {
	sum := Sum(0, b[:IPv4ChecksumOffset])
	return Checksum(sum, b[IPv4ChecksumOffset+2:b.HeaderLen()])
}

// ChecksumValid reports whether the header checksum holds.
func (b IPv4) ChecksumValid() bool { return Fold(Sum(0, b[:b.HeaderLen()])) == 0xffff }

// UpdateChecksum updates the header checksum for words of the header that
// changed by delta.
func (b IPv4) UpdateChecksum(delta uint32) { updateAt(b[IPv4ChecksumOffset:], delta) }
