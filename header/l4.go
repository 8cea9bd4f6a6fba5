package header

import (
	"encoding/binary"
	"hash/crc32"
)

// TCP and UDP start with the ports:
//
//	0        2        4
//	|src port|dst port|
const (
	SrcPortOffset = 0
	DstPortOffset = 2
)

// UDP (RFC 768):
//
//	0        2        4        6        8
//	|src port|dst port| length |checksum|
const (
	UDPLengthOffset   = 4
	UDPChecksumOffset = 6
	UDPLen            = 8
)

// TCP (RFC 9293): the checksum, and the data offset, the header's length
// in 32-bit words, in the high nibble of byte 12.
const (
	TCPDataOffsetOffset = 12
	TCPChecksumOffset   = 16
	TCPMinLen           = 20 // without options
)

// ICMPChecksumOffset is where ICMP and ICMPv6 keep their checksum, after
// the type and the code. ICMPv6's covers the IPv6 pseudo-header; ICMP's
// covers the ICMP message alone.
const ICMPChecksumOffset = 2

// SCTP (RFC 9260): the ports, then the verification tag and the checksum,
// a CRC32c of the whole SCTP packet, kept least significant byte first
// (RFC 9260, appendix A).
//
//	0        2        4                 8                 12
//	|src port|dst port|verification tag|     checksum     |
const (
	SCTPChecksumOffset = 8
	SCTPLen            = 12
)

// SCTP is an SCTP packet: its common header and its chunks.
type SCTP []byte

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Rewrite runs write, which changes bytes of the packet other than its
// checksum, and changes the checksum by the CRC32c's difference: a
// packet whose checksum was wrong stays wrong, as a sum's update keeps
// it.
func (b SCTP) Rewrite(write func()) {
	checksum := b[SCTPChecksumOffset : SCTPChecksumOffset+4]
	stored := binary.LittleEndian.Uint32(checksum)
	clear(checksum)
	before := crc32.Checksum(b, castagnoli)
	write()
	binary.LittleEndian.PutUint32(checksum, stored^before^crc32.Checksum(b, castagnoli))
}

// ICMPv6 neighbour discovery (RFC 4861): a neighbour solicitation (135)
// and advertisement (136) are the ICMPv6 header, 4 bytes of flags and
// reserved bits, the target address, and options of 8-byte units, the
// first byte their type and the second their length in units; a
// link-layer address option holds an Ethernet address in one unit.
const (
	ICMPv6NeighborSolicitation = 135
	ICMPv6NeighborAdvert       = 136
	NDTargetOffset             = 8
	NDLen                      = 24 // to the end of the target
	NDOptUnit                  = 8
	NDOptSourceLinkAddr        = 1
	NDOptTargetLinkAddr        = 2
	NDOptLinkAddrOffset        = 2 // the address in a link-layer address option
)

// TCP is a TCP header.
type TCP []byte

func (b TCP) SrcPort() uint16 { return binary.BigEndian.Uint16(b[SrcPortOffset:]) }
func (b TCP) DstPort() uint16 { return binary.BigEndian.Uint16(b[DstPortOffset:]) }

// HeaderLen is the header's length in bytes, options included, as the data
// offset says; a valid header has at least TCPMinLen.
func (b TCP) HeaderLen() int { return int(b[TCPDataOffsetOffset]>>4) * 4 }

// UpdateChecksum updates the checksum for covered words (the header's, or
// the pseudo-header's) that changed by delta.
func (b TCP) UpdateChecksum(delta uint32) { updateAt(b[TCPChecksumOffset:], delta) }

// UDP is a UDP header.
type UDP []byte

func (b UDP) SrcPort() uint16      { return binary.BigEndian.Uint16(b[SrcPortOffset:]) }
func (b UDP) DstPort() uint16      { return binary.BigEndian.Uint16(b[DstPortOffset:]) }
func (b UDP) SetSrcPort(p uint16)  { binary.BigEndian.PutUint16(b[SrcPortOffset:], p) }
func (b UDP) SetDstPort(p uint16)  { binary.BigEndian.PutUint16(b[DstPortOffset:], p) }
func (b UDP) Length() uint16       { return binary.BigEndian.Uint16(b[UDPLengthOffset:]) }
func (b UDP) SetLength(n uint16)   { binary.BigEndian.PutUint16(b[UDPLengthOffset:], n) }
func (b UDP) Checksum() uint16     { return binary.BigEndian.Uint16(b[UDPChecksumOffset:]) }
func (b UDP) SetChecksum(c uint16) { binary.BigEndian.PutUint16(b[UDPChecksumOffset:], c) }

// UpdateChecksum updates the checksum for covered words that changed by
// delta, as RFC 768 has it: a checksum of 0 means the sender computed
// none, and stays 0; one that comes out 0 is sent as 0xffff, its other
// form in one's-complement arithmetic.
func (b UDP) UpdateChecksum(delta uint32) {
	c := b.Checksum()
	if c == 0 {
		return
	}
	c = Update(c, delta)
	if c == 0 {
		c = 0xffff
	}
	b.SetChecksum(c)
}

// ICMP is an ICMP or ICMPv6 header.
type ICMP []byte

// UpdateChecksum updates an ICMP (over IPv4) checksum for covered words
// that changed by delta. It covers no pseudo-header, so its message may be
// all zeros (an echo with identifier, sequence and data all 0), the one
// case where RFC 1624's update gives 0 where the sum needs 0xffff; 0xffff
// is right whenever 0 is (they are the two zeros of one's complement), so
// it is written instead.
func (b ICMP) UpdateChecksum(delta uint32) {
	c := Update(binary.BigEndian.Uint16(b[ICMPChecksumOffset:]), delta)
	if c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(b[ICMPChecksumOffset:], c)
}

// UpdatePseudoChecksum updates an ICMPv6 checksum, which covers a
// pseudo-header and so never sums to zero, for covered words that changed
// by delta.
func (b ICMP) UpdatePseudoChecksum(delta uint32) { updateAt(b[ICMPChecksumOffset:], delta) }
