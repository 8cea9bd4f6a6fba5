package vswitch

// Header rewrites: the primitives behind the set-field, VLAN and dec_ttl
// actions. Each works in place on one frame's bytes and allocates nothing.
//
// Checksums are updated incrementally (RFC 1624, header.Update): rewriting
// an address or a port costs a few additions whatever the payload's size,
// where recomputing a TCP or UDP checksum would read every byte of the
// segment, up to a jumbo frame, pulling into the cache payload that
// forwarding otherwise never touches. The update gives the very bits that
// a full recomputation gives, zero results included; the tests check that
// against frames serialized from scratch.
//
// A rewrite applies only to a frame that has the header it needs, as in
// OVS, whose rules rewrite only fields their flow key has; any other frame
// is left as it is. The extractor found the headers when it read the key
// (flow.Layout), and the rewrites work from its offsets: a frame is
// parsed once. So an IP rewrite changes an IP header only if the key was
// read from it (at most two VLAN tags in front, and the packet whole in
// the frame), and a port rewrite a TCP or UDP header whose fixed part the
// packet holds: an unfragmented packet or a first fragment. A first
// fragment's checksum covers the reassembled datagram, and the incremental
// update is as right for it as for a whole one. Besides:
//   - a UDP checksum of 0 means "none" and stays 0; one that comes out 0 is
//     sent as 0xffff (RFC 768);
//   - the ICMP checksum covers no pseudo-header, so address rewrites leave
//     it alone;
//   - SCTP's checksum is a CRC32c of the SCTP packet, with no pseudo-header
//     either, which no few additions update: a port rewrite computes it
//     over the packet before and after, and changes it by the difference,
//     as OVS does, so that a right one stays right and a wrong one as
//     wrong (a first fragment's covers bytes the frame has not, and is
//     changed as OVS changes it, over the fragment's).
//
// Fields that no action of their own rewrites (set_field to arp_sha,
// nd_target, icmp_type, ipv6_label...) are written where their
// flow.InFrame says, by setField.

import (
	"encoding/binary"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/header"
)

// currentMAC, currentIPv4Addr and currentL4Port read the field a rewrite
// would change, for set_field with a mask, which keeps some of its bits.
// ok is false when the frame has no such field to rewrite.
func currentMAC(frame []byte, off int) (mac [6]byte, ok bool) {
	if len(frame) < header.EthernetLen {
		return mac, false
	}
	return [6]byte(frame[off : off+6]), true
}

func currentIPv4Addr(frame []byte, l *flow.Layout, fieldOff int) (addr [4]byte, ok bool) {
	if l.IPVersion != 4 {
		return addr, false
	}
	return [4]byte(frame[l.L3+fieldOff:]), true
}

func currentL4Port(frame []byte, l *flow.Layout, fieldOff int) (uint16, bool) {
	if !l.HasPorts() {
		return 0, false
	}
	return binary.BigEndian.Uint16(frame[l.L4+fieldOff:]), true
}

func setDlDst(frame []byte, mac [6]byte) {
	if len(frame) >= header.EthernetLen {
		header.Ethernet(frame).SetDst(mac)
	}
}

func setDlSrc(frame []byte, mac [6]byte) {
	if len(frame) >= header.EthernetLen {
		header.Ethernet(frame).SetSrc(mac)
	}
}

// setNwSrc rewrites the IPv4 source address.
func setNwSrc(frame []byte, l *flow.Layout, ip [4]byte) {
	setIPv4Addr(frame, l, header.IPv4SrcOffset, ip)
}

// setNwDst rewrites the IPv4 destination address.
func setNwDst(frame []byte, l *flow.Layout, ip [4]byte) {
	setIPv4Addr(frame, l, header.IPv4DstOffset, ip)
}

// setTpSrc rewrites the TCP or UDP source port, over IPv4 or IPv6.
func setTpSrc(frame []byte, l *flow.Layout, port uint16) {
	setL4Port(frame, l, header.SrcPortOffset, port)
}

// setTpDst rewrites the TCP or UDP destination port, over IPv4 or IPv6.
func setTpDst(frame []byte, l *flow.Layout, port uint16) {
	setL4Port(frame, l, header.DstPortOffset, port)
}

func setIPv4Addr(frame []byte, l *flow.Layout, fieldOff int, addr [4]byte) {
	if l.IPVersion != 4 {
		return
	}
	field := frame[l.L3+fieldOff : l.L3+fieldOff+4]
	old := binary.BigEndian.Uint32(field)
	updated := binary.BigEndian.Uint32(addr[:])
	if old == updated {
		return
	}
	// The address is in the IPv4 header and in the TCP/UDP pseudo-header.
	delta := header.Delta32(old, updated)
	header.IPv4(frame[l.L3:]).UpdateChecksum(delta)
	updatePseudoHeaderChecksum(frame, l, delta)
	copy(field, addr[:])
}

// setIPv6Src and setIPv6Dst rewrite an IPv6 address.
func setIPv6Src(frame []byte, l *flow.Layout, addr flow.Value) {
	setIPv6Addr(frame, l, header.IPv6SrcOffset, addr)
}
func setIPv6Dst(frame []byte, l *flow.Layout, addr flow.Value) {
	setIPv6Addr(frame, l, header.IPv6DstOffset, addr)
}

func setIPv6Addr(frame []byte, l *flow.Layout, fieldOff int, addr flow.Value) {
	if l.IPVersion != 6 {
		return
	}
	// IPv6 has no header checksum; the address is in the TCP, UDP and
	// ICMPv6 pseudo-header, which covers it word by word.
	field := frame[l.L3+fieldOff : l.L3+fieldOff+header.IPv6AddrLen]
	var delta uint32
	for i, half := range [2]uint64{addr.Hi, addr.Lo} {
		old := binary.BigEndian.Uint64(field[8*i:])
		delta += header.Delta32(uint32(old>>32), uint32(half>>32)) + header.Delta32(uint32(old), uint32(half))
		binary.BigEndian.PutUint64(field[8*i:], half)
	}
	updatePseudoHeaderChecksum(frame, l, delta)
}

func setL4Port(frame []byte, l *flow.Layout, fieldOff int, port uint16) {
	if !l.HasPorts() {
		return
	}
	field := frame[l.L4+fieldOff : l.L4+fieldOff+2]
	old := binary.BigEndian.Uint16(field)
	if old == port {
		return
	}
	if l.L4Proto == flow.ProtoSCTP {
		writeSCTP(frame, l, field, flow.Value{Lo: uint64(port)}, 16)
		return
	}
	updatePseudoHeaderChecksum(frame, l, header.Delta16(old, port))
	binary.BigEndian.PutUint16(field, port)
}

// setField writes v, the whole value of field f, where f.Frame says it
// is, in a frame that has that header: a field in an ICMP or ICMPv6
// header (neighbour discovery's are) with its checksum updated for the
// words that changed, one in an SCTP header with its CRC32c.
func setField(frame []byte, l *flow.Layout, f *flow.Field, v flow.Value) {
	at, ok := l.Header(f.Frame.Header)
	if !ok {
		return
	}
	start := at + f.Frame.Off
	field := frame[start : start+f.Frame.Len]
	switch f.Frame.Header {
	case flow.InARP, flow.InIPv6: // no checksum covers them
		putBits(field, v, f.Bits)
	case flow.InSCTP:
		writeSCTP(frame, l, field, v, f.Bits)
	default:
		// The checksum sums 16-bit words from the ICMP header's start:
		// the words around the field change by the difference.
		words := frame[l.L4+(start-l.L4)&^1 : l.L4+(start+len(field)-l.L4+1)&^1]
		var delta uint32
		for i := 0; i < len(words); i += 2 {
			delta += uint32(^binary.BigEndian.Uint16(words[i:]))
		}
		putBits(field, v, f.Bits)
		for i := 0; i < len(words); i += 2 {
			delta += uint32(binary.BigEndian.Uint16(words[i:]))
		}
		if l.L4Proto == flow.ProtoICMPv6 {
			header.ICMP(frame[l.L4:]).UpdatePseudoChecksum(delta)
		} else {
			header.ICMP(frame[l.L4:]).UpdateChecksum(delta)
		}
	}
}

// putBits writes the low bits bits of v into field, big-endian, keeping
// the bits of field above them: the traffic class beside the flow label.
func putBits(field []byte, v flow.Value, bits uint) {
	mask := flow.Ones(bits)
	for i := len(field) - 1; i >= 0; i-- {
		m := byte(mask.Lo)
		field[i] = field[i]&^m | byte(v.Lo)&m
		v, mask = v.Shr(8), mask.Shr(8)
	}
}

// writeSCTP writes v's low bits bits into field, in the SCTP header of the
// packet at l.L4, and changes the packet's CRC32c by the difference.
func writeSCTP(frame []byte, l *flow.Layout, field []byte, v flow.Value, bits uint) {
	header.SCTP(frame[l.L4:ipPacketEnd(frame, l)]).Rewrite(func() { putBits(field, v, bits) })
}

// ipPacketEnd is where the frame's IP packet ends, before any Ethernet
// padding: the layout's IP header says, and the frame holds it whole. A
// length past the frame, or IPv6's payload length of 0 (a jumbogram's), is
// read as the extractor reads it, gopacket's way: to the frame's end.
func ipPacketEnd(frame []byte, l *flow.Layout) int {
	var end int
	if l.IPVersion == 6 {
		end = l.L3 + header.IPv6Len + int(binary.BigEndian.Uint16(frame[l.L3+header.IPv6PayloadLenOffset:]))
	} else {
		end = l.L3 + int(header.IPv4(frame[l.L3:]).TotalLen())
	}
	if end <= l.L4 || end > len(frame) {
		return len(frame)
	}
	return end
}

// decTTL decrements the IPv4 TTL or the IPv6 hop limit. It returns false,
// leaving the frame as it is, when the frame must be dropped: the TTL is 0
// or 1 (it would reach 0). OVS would send such a frame to the controller;
// xswitch has none. A frame that is not IP is kept unchanged.
func decTTL(frame []byte, l *flow.Layout) (keep bool) {
	if l.IPVersion == 0 {
		return true
	}
	ttl := header.IPv4(frame[l.L3:]).TTL()
	if l.IPVersion == 6 {
		ttl = header.IPv6(frame[l.L3:]).HopLimit()
	}
	if ttl <= 1 {
		return false
	}
	putTTL(frame, l, ttl-1)
	return true
}

// setTOS sets the bits of mask in the IPv4 TOS byte, or the IPv6 traffic
// class, to value: the DSCP bits for mod_nw_tos, the ECN bits for
// mod_nw_ecn.
func setTOS(frame []byte, l *flow.Layout, mask, value uint8) {
	if l.IPVersion == 0 {
		return
	}
	word := binary.BigEndian.Uint16(frame[l.L3:])
	if l.IPVersion == 4 {
		// TOS shares its checksummed word with the version and length.
		putIPv4Word(header.IPv4(frame[l.L3:]), 0, word&^uint16(mask)|uint16(value&mask))
		return
	}
	m := uint16(mask) << header.IPv6TrafficClassShift
	binary.BigEndian.PutUint16(frame[l.L3:], word&^m|uint16(value)<<header.IPv6TrafficClassShift&m)
}

// setTTL sets the IPv4 TTL or the IPv6 hop limit.
func setTTL(frame []byte, l *flow.Layout, ttl uint8) {
	if l.IPVersion != 0 {
		putTTL(frame, l, ttl)
	}
}

// putTTL writes the TTL (hop limit) of the frame's IP header.
func putTTL(frame []byte, l *flow.Layout, ttl uint8) {
	if l.IPVersion == 6 {
		header.IPv6(frame[l.L3:]).SetHopLimit(ttl)
		return
	}
	// TTL shares its checksummed word with the protocol byte.
	ip := header.IPv4(frame[l.L3:])
	putIPv4Word(ip, header.IPv4TTLOffset, uint16(ttl)<<8|uint16(ip.Protocol()))
}

// putIPv4Word writes the 16-bit word at off in IPv4 header ip and updates
// the header checksum for it.
func putIPv4Word(ip header.IPv4, off int, updated uint16) {
	ip.UpdateChecksum(header.Delta16(binary.BigEndian.Uint16(ip[off:]), updated))
	binary.BigEndian.PutUint16(ip[off:], updated)
}

// pushVLAN inserts a tag of EtherType tpid after the MAC addresses. As
// OpenFlow's push_vlan, the tag copies the TCI (PCP, DEI, VID) of the
// outer tag if there is one, else it is 0. The frame grows by 4 bytes into
// its capacity: the result is false, and the frame unchanged, when the
// capacity has no room for them.
func pushVLAN(frame []byte, tpid uint16) ([]byte, bool) {
	tagged, ok := outerTag(frame)
	if !ok {
		return frame, true
	}
	if cap(frame)-len(frame) < header.VLANTagLen {
		return frame, false
	}
	var tci uint16
	if tagged {
		tci = header.Ethernet(frame).OuterTag().TCI()
	}
	n := len(frame)
	frame = frame[:n+header.VLANTagLen]
	copy(frame[header.EthernetTypeOffset+header.VLANTagLen:], frame[header.EthernetTypeOffset:n])
	tag := header.Ethernet(frame).OuterTag()
	tag.SetTPID(tpid)
	tag.SetTCI(tci)
	return frame, true
}

// stripVLAN removes the outermost tag, if there is one; the frame shrinks
// by 4 bytes.
func stripVLAN(frame []byte) []byte {
	if tagged, ok := outerTag(frame); !ok || !tagged {
		return frame
	}
	copy(frame[header.EthernetTypeOffset:], frame[header.EthernetTypeOffset+header.VLANTagLen:])
	return frame[:len(frame)-header.VLANTagLen]
}

// setVLANVID sets the VID of the outermost tag, keeping its PCP and DEI.
// An untagged frame gets an 802.1Q tag with that VID and PCP 0, as OVS's
// mod_vlan_vid does; the result is then pushVLAN's.
func setVLANVID(frame []byte, vid uint16) ([]byte, bool) {
	vid &= header.VLANVIDMask
	tagged, ok := outerTag(frame)
	if !ok {
		return frame, true
	}
	if tagged {
		tag := header.Ethernet(frame).OuterTag()
		tag.SetTCI(tag.TCI()&^header.VLANVIDMask | vid)
		return frame, true
	}
	frame, ok = pushVLAN(frame, header.EtherTypeVLAN)
	if ok {
		header.Ethernet(frame).OuterTag().SetTCI(vid)
	}
	return frame, ok
}

// setVLANPCP sets the PCP of the outermost tag, keeping its VID and DEI.
// An untagged frame gets an 802.1Q tag with VID 0 and that PCP, as OVS's
// mod_vlan_pcp does; the result is then pushVLAN's.
func setVLANPCP(frame []byte, pcp uint8) ([]byte, bool) {
	tagged, ok := outerTag(frame)
	if !ok {
		return frame, true
	}
	if !tagged {
		if frame, ok = pushVLAN(frame, header.EtherTypeVLAN); !ok {
			return frame, false
		}
	}
	tag := header.Ethernet(frame).OuterTag()
	tag.SetTCI(tag.TCI()&^header.VLANPCPMask | uint16(pcp&7)<<header.VLANPCPShift)
	return frame, true
}

// outerTag reports whether frame starts with a VLAN tag; ok is false when
// frame is not Ethernet, or says it is tagged but is too short for the tag.
func outerTag(frame []byte) (tagged, ok bool) {
	if len(frame) < header.EthernetLen {
		return false, false
	}
	if !header.IsTPID(header.Ethernet(frame).Type()) {
		return false, true
	}
	return true, len(frame) >= header.EthernetLen+header.VLANTagLen
}

// updatePseudoHeaderChecksum applies delta to the checksum that covers
// the IP pseudo-header and the ports: TCP's, UDP's or ICMPv6's, if the
// frame has one.
func updatePseudoHeaderChecksum(frame []byte, l *flow.Layout, delta uint32) {
	switch l.L4Proto {
	case flow.ProtoTCP:
		header.TCP(frame[l.L4:]).UpdateChecksum(delta)
	case flow.ProtoUDP:
		header.UDP(frame[l.L4:]).UpdateChecksum(delta)
	case flow.ProtoICMPv6:
		header.ICMP(frame[l.L4:]).UpdatePseudoChecksum(delta)
	}
}

// pushMPLS inserts label stack entry lse after the EtherType the key's
// was read from, and writes etherType there: onto a frame that was not
// MPLS, its packet goes under the stack. The frame grows by 4 bytes into
// its capacity: the result is false, and the frame unchanged, when the
// capacity has no room for them. An 802.3 frame, which has no EtherType
// to write, is left as it is.
func pushMPLS(frame []byte, l *flow.Layout, etherType uint16, lse uint32) ([]byte, bool) {
	if l.EtherType == 0 {
		return frame, true
	}
	if cap(frame)-len(frame) < header.MPLSLen {
		return frame, false
	}
	typ := int(l.EtherType)
	at := typ + 2
	n := len(frame)
	frame = frame[:n+header.MPLSLen]
	copy(frame[at+header.MPLSLen:], frame[at:n])
	binary.BigEndian.PutUint32(frame[at:], lse)
	binary.BigEndian.PutUint16(frame[typ:], etherType)
	l.PushMPLS()
	return frame, true
}

// popMPLS takes an MPLS frame's top label stack entry off and writes
// etherType in its place; the frame shrinks by 4 bytes. A frame that is
// not MPLS is left as it is.
func popMPLS(frame []byte, l *flow.Layout, etherType uint16) []byte {
	typ := int(l.EtherType)
	if !l.MPLS || len(frame) < typ+2+header.MPLSLen {
		return frame
	}
	at := typ + 2
	bottom := binary.BigEndian.Uint32(frame[at:])&header.MPLSBOSMask != 0
	copy(frame[at:], frame[at+header.MPLSLen:])
	binary.BigEndian.PutUint16(frame[typ:], etherType)
	l.PopMPLS(etherType, bottom)
	return frame[:len(frame)-header.MPLSLen]
}

// copyTTLIn copies an MPLS frame's top label stack entry's TTL into the
// header under it, as flow.Key's copyTTLIn finds it: the next entry, or
// below the bottom of the stack the IP packet the layout has there, an
// IPv4 header's checksum updated. (copy_ttl_out is a set_mpls_ttl of the
// TTL translation reads in the key.)
func copyTTLIn(frame []byte, l *flow.Layout) {
	at := int(l.EtherType) + 2
	if !l.MPLS || len(frame) < at+header.MPLSLen {
		return
	}
	ttl := frame[at+header.MPLSLen-1]
	switch {
	case binary.BigEndian.Uint32(frame[at:])&header.MPLSBOSMask == 0:
		if next := at + 2*header.MPLSLen - 1; next < len(frame) {
			frame[next] = ttl
		}
	case l.Under.IPVersion != 0:
		putTTL(frame, &flow.Layout{Net: l.Under}, ttl)
	}
}

// setMPLS sets the bits of mask in an MPLS frame's top label stack entry
// to value's. No checksum covers the stack.
func setMPLS(frame []byte, l *flow.Layout, mask, value uint32) {
	at := int(l.EtherType) + 2
	if !l.MPLS || len(frame) < at+header.MPLSLen {
		return
	}
	entry := frame[at:]
	binary.BigEndian.PutUint32(entry, binary.BigEndian.Uint32(entry)&^mask|value&mask)
}
