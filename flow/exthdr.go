package flow

import "github.com/xswitch/xswitch/header"

// The bits of ipv6_exthdr (Headers.IPv6ExtHdr), OpenFlow 1.3's
// OFPIEH_* flags.
const (
	ExtHdrNoNext = 1 << iota // the chain ends in "no next header" (59)
	ExtHdrESP                // an encapsulating security payload
	ExtHdrAuth               // an authentication header
	ExtHdrDest               // one or two destination options headers
	ExtHdrFrag               // a fragment header
	ExtHdrRouter             // a routing header
	ExtHdrHop                // a hop-by-hop options header
	ExtHdrUnrep              // a header more often than RFC 8200 allows
	ExtHdrUnseq              // headers out of RFC 8200's order
)

// extHdrNames are the flags' names in the flow syntax, bit by bit: the
// spec's names, lower case. The field reads and prints as ovs-ofctl
// reads and prints tcp_flags: "+hop-frag", "auth|hop", or 0x44/0x1ff as
// OpenFlow carries it.
var extHdrNames = flagNames{"nonext", "esp", "auth", "dest", "frag", "router", "hop", "unrep", "unseq"}

// ExtHdrWalk works out ipv6_exthdr as a parser walks an IPv6 packet's
// header chain: Next takes each next-header value the chain names, the
// fixed header's first. A header is present once named, whether or not
// the parser goes on into it (a later fragment's, the ESP's).
type ExtHdrWalk struct {
	bits uint16
	// last is the rank (RFC 8200 section 4.1's order) of the furthest
	// header so far; 0 before any.
	last  uint8
	dests uint8
}

// The headers' ranks in RFC 8200's order. A destination options header
// ranks before the routing header until a header of the routing header's
// rank or later has come, after which it is the final one, before the
// upper-layer header.
const (
	rankHop = iota + 1
	rankDestFirst
	rankRouter
	rankFrag
	rankAuth
	rankESP
	rankDestLast
)

// Next records the header that next names.
func (w *ExtHdrWalk) Next(next uint8) {
	var bit uint16
	var rank uint8
	switch next {
	case header.ProtoIPv6NoNext:
		w.bits |= ExtHdrNoNext
		return
	case header.ProtoIPv6HopByHop:
		bit, rank = ExtHdrHop, rankHop
		if w.last != 0 {
			w.bits |= ExtHdrUnseq // hop-by-hop comes first or not at all
		}
	case header.ProtoIPv6Destination:
		w.dests++
		if w.dests > 2 {
			w.bits |= ExtHdrUnrep
		}
		bit, rank = ExtHdrDest, rankDestLast
		if w.dests == 1 && w.last < rankRouter {
			rank = rankDestFirst
		}
		w.see(bit, rank)
		return
	case header.ProtoIPv6Routing:
		bit, rank = ExtHdrRouter, rankRouter
	case header.ProtoIPv6Fragment:
		bit, rank = ExtHdrFrag, rankFrag
	case header.ProtoAH:
		bit, rank = ExtHdrAuth, rankAuth
	case header.ProtoESP:
		bit, rank = ExtHdrESP, rankESP
	default:
		return
	}
	if w.bits&bit != 0 {
		w.bits |= ExtHdrUnrep
	}
	w.see(bit, rank)
}

func (w *ExtHdrWalk) see(bit uint16, rank uint8) {
	if rank < w.last {
		w.bits |= ExtHdrUnseq
	}
	w.bits |= bit
	w.last = max(w.last, rank)
}

// Bits is ipv6_exthdr for the headers named so far.
func (w *ExtHdrWalk) Bits() uint16 { return w.bits }
