// Package header names the fields of the Ethernet, VLAN, IPv4, IPv6, TCP,
// UDP and ICMP headers, and computes the Internet checksum (RFC 1071) and
// its incremental update (RFC 1624): the one place the rest of xswitch
// takes header offsets, lengths, EtherTypes, protocol numbers and
// checksums from.
//
// A header is a byte slice starting at its first byte (type IPv4 []byte,
// as gVisor's pkg/tcpip/header has it); its methods read and write the
// frame in place, allocate nothing, and check no bounds beyond Go's own:
// the caller has made sure the header is there and whole (the flow
// extractor's Layout says so for the headers it found). The package owns
// what the wire formats say, not what xswitch does with them: which
// frames to rewrite, and how, stays with the switch, and this package
// imports nothing of xswitch's. The XDP program in bpf/ keeps its own C
// definitions of the same formats.
package header

import "encoding/binary"

// Sum adds the 16-bit big-endian words of b to sum: the one's-complement
// sum of RFC 1071 with its carries not yet folded in. An odd last byte
// counts as the high byte of a word, padded with a zero, so a sum run
// over pieces of one buffer is right only if every piece but the last is
// of even length. The result stays below 2^32 whatever b's length, and
// equals the plain sum of the words while that does, so a partial sum
// kept for later (a tunnel's outer header) is the same number however it
// was computed.
func Sum(sum uint32, b []byte) uint32 {
	s := uint64(sum)
	for len(b) >= 8 {
		w := binary.BigEndian.Uint64(b)
		s += w>>48 + w>>32&0xffff + w>>16&0xffff + w&0xffff
		b = b[8:]
	}
	for len(b) >= 2 {
		s += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint64(b[0]) << 8
	}
	// 2^32 is 1 in one's-complement arithmetic, so a carry out of the low
	// 32 bits adds back into them.
	for s>>32 != 0 {
		s = s&0xffffffff + s>>32
	}
	return uint32(s)
}

// Fold adds sum's carries back into its low 16 bits: the one's-complement
// sum as it goes on the wire, before the complement that makes it a
// checksum. Two rounds fold any uint32: the first leaves at most 0x1fffe.
func Fold(sum uint32) uint16 {
	sum = sum&0xffff + sum>>16
	sum = sum&0xffff + sum>>16
	return uint16(sum)
}

// Checksum is the Internet checksum of b: the complement of its folded
// sum, added to sum (a pseudo-header's, say). b's own checksum field must
// be zero.
func Checksum(sum uint32, b []byte) uint16 { return ^Fold(Sum(sum, b)) }

// Delta16 is what a 16-bit word changing from old to updated adds to a
// checksum's sum: ~m + m' in RFC 1624's terms. Deltas add up, so one
// update covers any number of changed words.
func Delta16(old, updated uint16) uint32 { return uint32(^old) + uint32(updated) }

// Delta32 is the delta of two adjacent words (an IPv4 address).
func Delta32(old, updated uint32) uint32 {
	return Delta16(uint16(old>>16), uint16(updated>>16)) + Delta16(uint16(old), uint16(updated))
}

// Update returns checksum hc after the words it covers changed by delta:
// HC' = ~(~HC + ~m + m'), equation 3 of RFC 1624. Updating costs a few
// additions whatever the length of the data covered, and this form (not
// RFC 1141's HC - ~m - m') gives the very bits a recomputation from
// scratch gives, 0 included, for any data but all zeros.
func Update(hc uint16, delta uint32) uint16 { return ^Fold(uint32(^hc) + delta) }

// updateAt applies delta to the checksum field at b[0:2].
func updateAt(b []byte, delta uint32) {
	binary.BigEndian.PutUint16(b, Update(binary.BigEndian.Uint16(b), delta))
}
