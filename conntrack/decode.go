package conntrack

import (
	"encoding/binary"

	"github.com/xswitch/xswitch/header"
)

// Decode fills h from a packet whose IP header starts l3, which runs to
// the end of the frame (anything after the IP packet's own length, such
// as Ethernet padding, is cut off). It reads what OVS's conn_key_extract
// reads, and reports a packet it cannot track in h.Malformed (or
// h.Fragment) rather than as an error; it allocates nothing.
//
// With checksums, a packet with a bad IPv4 header checksum or a bad TCP,
// UDP, ICMP or ICMPv6 checksum is Malformed too, as in OVS's tracker when
// no NIC vouched for the packet (a zero UDP checksum over IPv4 means none
// was sent). SCTP's CRC32c is not checked, nor the checksums of the packet
// an ICMP error quotes (OVS checks neither of these).
func (h *Header) Decode(l3 []byte, checksums bool) {
	*h = Header{}
	ok := false
	if len(l3) > 0 && l3[0]>>4 == 6 {
		ok = h.decodeIPv6(l3, checksums)
	} else {
		ok = h.decodeIPv4(l3, checksums)
	}
	if !ok {
		h.Malformed = true
	}
}

func (h *Header) decodeIPv4(b []byte, checksums bool) bool {
	ip := header.IPv4(b)
	if len(b) < header.IPv4MinLen || ip.Version() != 4 {
		return false
	}
	hl, total := ip.HeaderLen(), int(ip.TotalLen())
	if hl < header.IPv4MinLen || total < hl || total > len(b) {
		return false
	}
	ip = ip[:total]
	h.Src, h.Dst = AddrFrom4(ip.Src()), AddrFrom4(ip.Dst())
	h.Proto = ip.Protocol()
	if checksums && !ip.ChecksumValid() {
		return false
	}
	l4 := ip[hl:]
	if ip.IsFragment() {
		// A first fragment's transport checksum covers the whole
		// datagram, which the tracker does not see.
		h.Fragment, h.FragmentID, h.LaterFragment = true, uint32(ip.ID()), ip.FragmentOffset() != 0
		return h.LaterFragment || h.decodeL4(l4, false, 0)
	}
	var pseudo uint32
	if checksums {
		pseudo = header.Sum(header.Sum(0, ip[header.IPv4SrcOffset:header.IPv4DstOffset+header.IPv4AddrLen]),
			[]byte{0, h.Proto, byte(len(l4) >> 8), byte(len(l4))})
	}
	return h.decodeL4(l4, checksums, pseudo)
}

func (h *Header) decodeIPv6(b []byte, checksums bool) bool {
	if len(b) < header.IPv6Len {
		return false
	}
	total := header.IPv6Len + int(binary.BigEndian.Uint16(b[header.IPv6PayloadLenOffset:]))
	if total > len(b) {
		return false
	}
	b = b[:total]
	h.IPv6 = true
	h.Src = Addr(b[header.IPv6SrcOffset:])
	h.Dst = Addr(b[header.IPv6DstOffset:])
	proto, l4, frag, ok := walkIPv6(b[header.IPv6NextHeaderOffset], b[header.IPv6Len:])
	h.Proto = proto
	if !ok {
		return false
	}
	if frag {
		return h.decodeIPv6Fragment(l4)
	}
	var pseudo uint32
	if checksums {
		n := len(l4)
		pseudo = header.Sum(header.Sum(0, b[header.IPv6SrcOffset:header.IPv6Len]),
			[]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n), 0, 0, 0, proto})
	}
	return h.decodeL4(l4, checksums, pseudo)
}

// decodeIPv6Fragment reads a fragment from its fragment header, fh on: a
// later fragment's protocol is the header after it, a first fragment's
// the one past any extension headers that follow. A first fragment's
// transport checksum covers the whole datagram, which the tracker does
// not see.
func (h *Header) decodeIPv6Fragment(fh header.IPv6Fragment) bool {
	h.Fragment, h.FragmentID = true, fh.ID()
	h.Proto, h.LaterFragment = fh.NextHeader(), fh.Offset() != 0
	if h.LaterFragment {
		return true
	}
	proto, l4, frag, ok := walkIPv6(fh.NextHeader(), fh[header.IPv6FragmentLen:])
	h.Proto = proto
	return ok && !frag && h.decodeL4(l4, false, 0)
}

// walkIPv6 follows IPv6 extension headers from next header next over b
// to the transport protocol and its header. A fragment header ends the
// walk, which returns it in place of the transport header.
func walkIPv6(next uint8, b []byte) (proto uint8, l4 []byte, frag, ok bool) {
	for {
		var n int
		switch next {
		case header.ProtoIPv6HopByHop, header.ProtoIPv6Routing, header.ProtoIPv6Destination:
			if len(b) < header.IPv6ExtHeaderMinLen {
				return next, nil, false, false
			}
			n = (int(b[1]) + 1) * 8
		case header.ProtoAH:
			if len(b) < header.IPv6ExtHeaderMinLen {
				return next, nil, false, false
			}
			n = (int(b[1]) + 2) * 4
		case header.ProtoIPv6Fragment:
			return next, b, true, len(b) >= header.IPv6FragmentLen
		default:
			return next, b, false, true
		}
		if len(b) < n {
			return next, nil, false, false
		}
		next, b = b[0], b[n:]
	}
}

// validSum reports whether a transport checksum covering b (and the
// pseudo-header summed in pseudo) holds.
func validSum(pseudo uint32, b []byte) bool { return header.Fold(header.Sum(pseudo, b)) == 0xffff }

func (h *Header) decodeL4(b []byte, checksums bool, pseudo uint32) bool {
	be := binary.BigEndian
	switch {
	case h.Proto == header.ProtoTCP:
		if len(b) < header.TCPMinLen {
			return false
		}
		hl := header.TCP(b).HeaderLen()
		if hl < header.TCPMinLen || hl > len(b) {
			return false
		}
		h.SrcPort, h.DstPort = be.Uint16(b), be.Uint16(b[2:])
		h.Seq, h.Ack = be.Uint32(b[4:]), be.Uint32(b[8:])
		h.TCPFlags = b[13]
		h.Window = be.Uint16(b[14:])
		h.Payload = uint32(len(b) - hl)
		if h.TCPFlags&TCPSyn != 0 {
			h.HasWScale, h.WScale = tcpWScale(b[header.TCPMinLen:hl])
		}
		return !checksums || validSum(pseudo, b)
	case h.Proto == header.ProtoUDP:
		if len(b) < header.UDPLen {
			return false
		}
		// A first fragment's length field is the whole datagram's.
		if n := int(header.UDP(b).Length()); n < header.UDPLen || n > len(b) && !h.Fragment {
			return false
		}
		h.SrcPort, h.DstPort = be.Uint16(b), be.Uint16(b[2:])
		return !checksums || !h.IPv6 && header.UDP(b).Checksum() == 0 || validSum(pseudo, b)
	case h.Proto == header.ProtoSCTP:
		if len(b) < header.SCTPLen {
			return false
		}
		h.SrcPort, h.DstPort = be.Uint16(b), be.Uint16(b[2:])
		return true
	case isICMP(h.IPv6, h.Proto):
		if len(b) < icmpHeaderLen {
			return false
		}
		h.ICMPType, h.ICMPCode = b[0], b[1]
		h.ICMPID = be.Uint16(b[icmpEchoIDOffset:])
		if icmpError(h.IPv6, h.ICMPType) {
			h.Inner.decode(b[icmpErrorHeaderLen:], h.IPv6)
		}
		if !h.IPv6 {
			pseudo = 0 // ICMP's checksum covers the message alone
		}
		return !checksums || validSum(pseudo, b)
	}
	return true
}

// tcpWScale finds the window scale option among a SYN's options, as
// OVS's tcp_get_wscale walks them.
func tcpWScale(opts []byte) (bool, uint8) {
	const optEOL, optNOP, optWScale = 0, 1, 3
	for len(opts) >= 3 {
		switch opts[0] {
		case optEOL:
			return false, 0
		case optNOP:
			opts = opts[1:]
			continue
		case optWScale:
			return true, opts[2]
		}
		n := max(int(opts[1]), 2)
		if n > len(opts) {
			break
		}
		opts = opts[n:]
	}
	return false, 0
}

// decode reads the packet an ICMP error quotes, starting at its IP
// header; Valid stays false if too little of it is there.
func (q *Quoted) decode(b []byte, ipv6 bool) {
	be := binary.BigEndian
	var l4 []byte
	need := icmpErrorQuotedL4
	if ipv6 {
		if len(b) < header.IPv6Len || b[0]>>4 != 6 {
			return
		}
		q.Src, q.Dst = Addr(b[header.IPv6SrcOffset:]), Addr(b[header.IPv6DstOffset:])
		proto, rest, frag, ok := walkIPv6(b[header.IPv6NextHeaderOffset], b[header.IPv6Len:])
		if !ok || frag {
			return
		}
		q.Proto, l4 = proto, rest
		// OVS asks the whole header of a packet ICMPv6 quotes.
		switch proto {
		case header.ProtoTCP:
			need = header.TCPMinLen
		case header.ProtoSCTP:
			need = header.SCTPLen
		}
	} else {
		ip := header.IPv4(b)
		if len(b) < header.IPv4MinLen || ip.Version() != 4 {
			return
		}
		hl := ip.HeaderLen()
		if hl < header.IPv4MinLen || hl > len(b) || ip.FragmentOffset() != 0 {
			return
		}
		q.Src, q.Dst = AddrFrom4(ip.Src()), AddrFrom4(ip.Dst())
		q.Proto, l4 = ip.Protocol(), b[hl:]
	}
	switch {
	case hasPorts(q.Proto):
		if len(l4) < need {
			return
		}
		q.SrcPort, q.DstPort = be.Uint16(l4), be.Uint16(l4[2:])
	case isICMP(ipv6, q.Proto):
		if len(l4) < icmpHeaderLen {
			return
		}
		q.ICMPType, q.ICMPCode = l4[0], l4[1]
		q.ICMPID = be.Uint16(l4[icmpEchoIDOffset:])
	}
	q.Valid = true
}
