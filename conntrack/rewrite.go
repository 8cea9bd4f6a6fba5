package conntrack

import (
	"encoding/binary"

	"github.com/xswitch/xswitch/header"
)

// ApplyNAT writes the translation Execute made (rw, the new values in h)
// into the packet whose IP header starts l3, the packet h was read from:
// addresses, ports and ICMP identifier, each checksum that covers them
// updated (SCTP's CRC32c computed again); for an ICMP error, the quoted
// packet's addresses and ports, its IPv4 header checksum, its transport
// checksum where the quote holds it, and the ICMP checksum computed again
// over the whole message, as OVS's nat_inner_packet does. It allocates
// nothing. It reports false, having changed nothing, when l3 does not
// hold the headers h describes.
func ApplyNAT(l3 []byte, h *Header, rw Rewrite) bool {
	if rw == 0 {
		return true
	}
	if h.LaterFragment {
		// Addresses alone: the transport header, and the checksum that
		// covers them, are in the first fragment.
		if _, ok := locateL4(l3, h.IPv6); !ok {
			return false
		}
		rewriteAddrs(l3, h, rw)
		return true
	}
	l4, ok := locateL4(l3, h.IPv6)
	if !ok || len(l4) < 8 {
		return false
	}
	var inner []byte
	if rw&RewriteInner != 0 {
		if !isICMP(h.IPv6, h.Proto) || !quotedFits(l4[icmpErrorHeaderLen:], h.IPv6, &h.Inner) {
			return false
		}
		inner = l4[icmpErrorHeaderLen:]
	}
	if h.Proto == header.ProtoTCP && len(l4) < header.TCPMinLen || h.Proto == header.ProtoSCTP && len(l4) < header.SCTPLen {
		return false
	}

	pseudo := rewriteAddrs(l3, h, rw)
	switch {
	case h.Proto == header.ProtoTCP || h.Proto == header.ProtoUDP:
		delta := pseudo
		if rw&RewriteSrcPort != 0 {
			delta += putPort(l4[header.SrcPortOffset:], h.SrcPort)
		}
		if rw&RewriteDstPort != 0 {
			delta += putPort(l4[header.DstPortOffset:], h.DstPort)
		}
		if h.Proto == header.ProtoTCP {
			header.TCP(l4).UpdateChecksum(delta)
		} else {
			updateUDPChecksum(l4, h.IPv6, delta)
		}
	case h.Proto == header.ProtoSCTP:
		header.SCTP(l4).Rewrite(func() {
			if rw&RewriteSrcPort != 0 {
				putPort(l4[header.SrcPortOffset:], h.SrcPort)
			}
			if rw&RewriteDstPort != 0 {
				putPort(l4[header.DstPortOffset:], h.DstPort)
			}
		})
	case isICMP(h.IPv6, h.Proto):
		delta := uint32(0)
		if h.IPv6 {
			delta = pseudo
		}
		if rw&RewriteICMPID != 0 {
			delta += putPort(l4[icmpEchoIDOffset:], h.ICMPID)
		}
		if inner == nil {
			updateICMPChecksum(l4, h.IPv6, delta)
			break
		}
		rewriteQuoted(inner, h.IPv6, &h.Inner)
		var sum uint32
		if h.IPv6 {
			n := len(l4)
			sum = header.Sum(header.Sum(0, l3[header.IPv6SrcOffset:header.IPv6Len]),
				[]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n), 0, 0, 0, h.Proto})
		}
		binary.BigEndian.PutUint16(l4[header.ICMPChecksumOffset:], 0)
		binary.BigEndian.PutUint16(l4[header.ICMPChecksumOffset:], header.Checksum(sum, l4))
	}
	return true
}

// rewriteAddrs writes h's addresses that rw changed into the IP header
// at l3, updating IPv4's header checksum, and returns what the change
// adds to a checksum over the pseudo-header.
func rewriteAddrs(l3 []byte, h *Header, rw Rewrite) (pseudo uint32) {
	if h.IPv6 {
		if rw&RewriteSrc != 0 {
			pseudo += putAddr16(l3[header.IPv6SrcOffset:], h.Src)
		}
		if rw&RewriteDst != 0 {
			pseudo += putAddr16(l3[header.IPv6DstOffset:], h.Dst)
		}
		return pseudo
	}
	if rw&RewriteSrc != 0 {
		pseudo += putAddr4(l3[header.IPv4SrcOffset:], h.Src)
	}
	if rw&RewriteDst != 0 {
		pseudo += putAddr4(l3[header.IPv4DstOffset:], h.Dst)
	}
	header.IPv4(l3).UpdateChecksum(pseudo)
	return pseudo
}

// locateL4 finds the transport header of the packet at l3, cut to the IP
// packet's length: a first fragment's is there; a later fragment's is
// not (under IPv6 l4 is nil, under IPv4 the fragment's data).
func locateL4(l3 []byte, ipv6 bool) ([]byte, bool) {
	if ipv6 {
		if len(l3) < header.IPv6Len {
			return nil, false
		}
		total := header.IPv6Len + int(binary.BigEndian.Uint16(l3[header.IPv6PayloadLenOffset:]))
		if total > len(l3) {
			return nil, false
		}
		_, l4, frag, ok := walkIPv6(l3[header.IPv6NextHeaderOffset], l3[header.IPv6Len:total])
		if ok && frag {
			if header.IPv6Fragment(l4).Offset() != 0 {
				return nil, true // a later fragment
			}
			_, l4, frag, ok = walkIPv6(l4[0], l4[header.IPv6FragmentLen:])
		}
		return l4, ok && !frag
	}
	ip := header.IPv4(l3)
	if len(l3) < header.IPv4MinLen {
		return nil, false
	}
	hl, total := ip.HeaderLen(), int(ip.TotalLen())
	if hl < header.IPv4MinLen || total < hl || total > len(l3) {
		return nil, false
	}
	return l3[hl:total], true
}

// quotedFits reports whether the quoted packet at b has the headers q's
// rewrite writes.
func quotedFits(b []byte, ipv6 bool, q *Quoted) bool {
	l4, ok := quotedL4(b, ipv6)
	switch {
	case !ok:
		return false
	case hasPorts(q.Proto):
		return len(l4) >= 4
	case isICMP(ipv6, q.Proto):
		return len(l4) >= icmpHeaderLen
	}
	return true
}

func quotedL4(b []byte, ipv6 bool) ([]byte, bool) {
	if ipv6 {
		if len(b) < header.IPv6Len {
			return nil, false
		}
		_, l4, frag, ok := walkIPv6(b[header.IPv6NextHeaderOffset], b[header.IPv6Len:])
		return l4, ok && !frag
	}
	if len(b) < header.IPv4MinLen {
		return nil, false
	}
	hl := header.IPv4(b).HeaderLen()
	if hl < header.IPv4MinLen || hl > len(b) {
		return nil, false
	}
	return b[hl:], true
}

// rewriteQuoted writes q into the quoted packet at b (quotedFits said it
// has room), updating its IPv4 header checksum, and its transport
// checksum if the quote holds it.
func rewriteQuoted(b []byte, ipv6 bool, q *Quoted) {
	l4, _ := quotedL4(b, ipv6)
	var pseudo uint32
	if ipv6 {
		pseudo = putAddr16(b[header.IPv6SrcOffset:], q.Src) + putAddr16(b[header.IPv6DstOffset:], q.Dst)
	} else {
		pseudo = putAddr4(b[header.IPv4SrcOffset:], q.Src) + putAddr4(b[header.IPv4DstOffset:], q.Dst)
		header.IPv4(b).UpdateChecksum(pseudo)
	}
	switch {
	case hasPorts(q.Proto):
		delta := pseudo + putPort(l4[header.SrcPortOffset:], q.SrcPort) + putPort(l4[header.DstPortOffset:], q.DstPort)
		switch {
		case q.Proto == header.ProtoTCP && len(l4) >= header.TCPChecksumOffset+2:
			header.TCP(l4).UpdateChecksum(delta)
		case q.Proto == header.ProtoUDP && len(l4) >= header.UDPLen:
			updateUDPChecksum(l4, ipv6, delta)
		}
	case isICMP(ipv6, q.Proto):
		delta := putPort(l4[icmpEchoIDOffset:], q.ICMPID)
		if ipv6 {
			delta += pseudo
		}
		updateICMPChecksum(l4, ipv6, delta)
	}
}

// updateUDPChecksum updates a UDP checksum. Over IPv4 a zero checksum
// means none was sent and stays so; over IPv6 there is always one (RFC
// 8200), so a zero is a sum like any other.
func updateUDPChecksum(b []byte, ipv6 bool, delta uint32) {
	u := header.UDP(b)
	if !ipv6 {
		u.UpdateChecksum(delta)
		return
	}
	c := header.Update(u.Checksum(), delta)
	if c == 0 {
		c = 0xffff
	}
	u.SetChecksum(c)
}

// updateICMPChecksum updates an ICMP or ICMPv6 checksum.
func updateICMPChecksum(b []byte, ipv6 bool, delta uint32) {
	if ipv6 {
		header.ICMP(b).UpdatePseudoChecksum(delta)
	} else {
		header.ICMP(b).UpdateChecksum(delta)
	}
}

// putAddr4 writes an IPv4 address and returns what the change adds to a
// checksum covering it (nothing if it is the same: RFC 1624's update of
// an unchanged word would turn a checksum of 0xffff into 0).
func putAddr4(field []byte, a Addr) uint32 {
	return putWords(field[:4], a[:4])
}

func putAddr16(field []byte, a Addr) uint32 {
	return putWords(field[:16], a[:])
}

func putPort(field []byte, p uint16) uint32 {
	var v [2]byte
	binary.BigEndian.PutUint16(v[:], p)
	return putWords(field[:2], v[:])
}

// putWords writes v over field (an even number of bytes) and returns
// the checksum delta of the 16-bit words that changed.
func putWords(field, v []byte) uint32 {
	var delta uint32
	for i := 0; i < len(field); i += 2 {
		old, updated := binary.BigEndian.Uint16(field[i:]), binary.BigEndian.Uint16(v[i:])
		if old != updated {
			delta += header.Delta16(old, updated)
		}
	}
	copy(field, v)
	return delta
}
