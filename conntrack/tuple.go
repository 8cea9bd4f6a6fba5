package conntrack

import (
	"encoding/binary"
	"math/bits"
	"net/netip"

	"github.com/xswitch/xswitch/header"
)

// Addr is an IPv4 or IPv6 address as the tracker keys it: an IPv4
// address in its first four bytes and zeros after, as OVS's ct_addr holds
// one, so that a tuple is one fixed-size value whatever the family. Which
// family it is, the tuple or packet it belongs to says.
type Addr [16]byte

// AddrFrom4 is the Addr of an IPv4 address.
func AddrFrom4(a [4]byte) Addr {
	var out Addr
	copy(out[:], a[:])
	return out
}

// AddrFrom is the Addr of a netip.Addr; an IPv4-mapped IPv6 address stays
// IPv6, as on the wire.
func AddrFrom(a netip.Addr) Addr {
	if a.Is4() {
		return AddrFrom4(a.As4())
	}
	return Addr(a.As16())
}

// As4 is the IPv4 address in a's first four bytes.
func (a Addr) As4() [4]byte { return [4]byte(a[:4]) }

// IP is a as a netip.Addr of the family ipv6 names.
func (a Addr) IP(ipv6 bool) netip.Addr {
	if ipv6 {
		return netip.AddrFrom16(a)
	}
	return netip.AddrFrom4(a.As4())
}

// IsZero reports whether a is all zeros: the unspecified address of
// either family.
func (a Addr) IsZero() bool { return a == Addr{} }

// Endpoint is one end of a connection as the tracker keys it. For TCP,
// UDP and SCTP, Port is the end's port; for an ICMP or ICMPv6 echo (and
// ICMP's timestamp and information) exchange, Port is the identifier,
// the same at both ends, and ICMPType is the message type this end
// sends: the request for the end that asks, the reply for the end that
// answers, so that a reply's tuple is the reverse of its request's, as in
// OVS. Other protocols are keyed by addresses alone, Port zero.
type Endpoint struct {
	Addr     Addr
	Port     uint16
	ICMPType uint8
	ICMPCode uint8
}

// Tuple is one direction of a connection: what a packet going that way
// carries, and the zone it is tracked in. It is a packed comparable
// struct without pointers or padding (44 bytes), so that it is a cheap
// map key, as flow keys are elsewhere in xswitch.
type Tuple struct {
	Src, Dst Endpoint
	Zone     uint16
	IPv6     bool
	Proto    uint8
}

// Reverse is the tuple of packets going the other way.
func (t Tuple) Reverse() Tuple {
	t.Src, t.Dst = t.Dst, t.Src
	return t
}

// hasPorts reports whether the protocol's tuples carry ports (and so
// whether NAT may change them, OVS's pat_proto without ICMP).
func hasPorts(proto uint8) bool {
	return proto == header.ProtoTCP || proto == header.ProtoUDP || proto == header.ProtoSCTP
}

// isICMP reports whether proto is the ICMP of the family: ICMP over IPv4,
// ICMPv6 over IPv6. The other pairing is tracked as any other protocol,
// as OVS does.
func isICMP(ipv6 bool, proto uint8) bool {
	if ipv6 {
		return proto == header.ProtoICMPv6
	}
	return proto == header.ProtoICMP
}

// ICMP and ICMPv6 message types the tracker tells apart.
const (
	icmpEchoReply      = 0
	icmpDestUnreach    = 3
	icmpSourceQuench   = 4
	icmpRedirect       = 5
	icmpEcho           = 8
	icmpTimeExceeded   = 11
	icmpParamProblem   = 12
	icmpTimestamp      = 13
	icmpTimestampReply = 14
	icmpInfoRequest    = 15
	icmpInfoReply      = 16

	icmp6DestUnreach   = 1
	icmp6PacketTooBig  = 2
	icmp6TimeExceeded  = 3
	icmp6ParamProblem  = 4
	icmp6EchoRequest   = 128
	icmp6EchoReply     = 129
	icmpHeaderLen      = 8 // type, code, checksum and 4 bytes (id and sequence, or unused)
	icmpErrorQuotedL4  = 8 // of the quoted packet's transport header, as much as ICMP must quote
	icmpEchoIDOffset   = 4
	icmpErrorHeaderLen = 8 // what precedes the quoted packet
)

// icmpQuery reports whether an ICMP or ICMPv6 type is one end of a
// request/reply exchange keyed by identifier, and the type of the other
// end.
func icmpQuery(ipv6 bool, typ uint8) (reverse uint8, ok bool) {
	if ipv6 {
		switch typ {
		case icmp6EchoRequest:
			return icmp6EchoReply, true
		case icmp6EchoReply:
			return icmp6EchoRequest, true
		}
		return 0, false
	}
	switch typ {
	case icmpEcho:
		return icmpEchoReply, true
	case icmpEchoReply:
		return icmpEcho, true
	case icmpTimestamp:
		return icmpTimestampReply, true
	case icmpTimestampReply:
		return icmpTimestamp, true
	case icmpInfoRequest:
		return icmpInfoReply, true
	case icmpInfoReply:
		return icmpInfoRequest, true
	}
	return 0, false
}

// icmpRequest reports whether a query type may open a connection: a
// reply with nothing asked is not new but invalid, as in OVS.
func icmpRequest(ipv6 bool, typ uint8) bool {
	if ipv6 {
		return typ == icmp6EchoRequest
	}
	return typ == icmpEcho || typ == icmpTimestamp || typ == icmpInfoRequest
}

// icmpError reports whether an ICMP or ICMPv6 type is an error that
// quotes the packet it is about.
func icmpError(ipv6 bool, typ uint8) bool {
	if ipv6 {
		return typ == icmp6DestUnreach || typ == icmp6PacketTooBig || typ == icmp6TimeExceeded || typ == icmp6ParamProblem
	}
	switch typ {
	case icmpDestUnreach, icmpTimeExceeded, icmpParamProblem, icmpSourceQuench, icmpRedirect:
		return true
	}
	return false
}

// hash mixes t's words with a seed: the tracker picks a tuple's shard by
// it, and NAT its address and port offsets. Six words, three
// multiplications: a few nanoseconds.
func (t *Tuple) hash(seed uint64) uint64 {
	le := binary.LittleEndian
	ports := uint64(t.Src.Port) | uint64(t.Src.ICMPType)<<16 | uint64(t.Src.ICMPCode)<<24 |
		uint64(t.Dst.Port)<<32 | uint64(t.Dst.ICMPType)<<48 | uint64(t.Dst.ICMPCode)<<56
	rest := uint64(t.Zone) | uint64(t.Proto)<<16 | uint64(b2u(t.IPv6))<<24
	h := mix(seed^le.Uint64(t.Src.Addr[:8]), le.Uint64(t.Src.Addr[8:]))
	h = mix(h^le.Uint64(t.Dst.Addr[:8]), le.Uint64(t.Dst.Addr[8:]))
	return mix(h^ports, rest)
}

// mix is a 64-bit multiply-and-fold step (as wyhash's), good enough to
// spread tuples over shards and NAT ranges; it is not a defence against
// an attacker who knows the seed.
func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a^0x9e3779b97f4a7c15, b^0xbf58476d1ce4e5b9)
	return hi ^ lo
}

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}
