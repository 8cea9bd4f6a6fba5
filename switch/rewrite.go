package vswitch

// Header rewrites: the primitives behind the set-field, VLAN and dec_ttl
// actions. Each works in place on one frame's bytes and allocates nothing.
//
// Checksums are updated incrementally (RFC 1624). When a 16-bit word m of
// the data that a one's-complement checksum HC covers becomes m', the new
// checksum is
//
//	HC' = ~(~HC + ~m + m')    (one's-complement addition)
//
// so rewriting an address or a port costs a few additions whatever the
// payload's size, where recomputing a TCP or UDP checksum would read every
// byte of the segment, up to a jumbo frame, pulling into the cache payload
// that forwarding otherwise never touches. This form (equation 3 of the
// RFC, not RFC 1141's HC - ~m - m') gives the very bits that a full
// recomputation gives, zero results included; the tests check that against
// frames serialized from scratch.
//
// A rewrite applies only to a frame that has the header it needs, as in
// OVS, whose rules rewrite only fields their flow key has; any other frame
// is left as it is:
//   - up to maxVLANTags 802.1Q or 802.1ad tags are looked through;
//   - an IPv4 or IPv6 header counts only if it is sane (version, header
//     length, a total length that the frame holds: Ethernet padding may
//     follow it); an IP frame whose header is not sane is dropped by
//     decTTL, as OVS's dec_ttl does (its key then holds TTL 0);
//   - the TCP or UDP header is rewritten only in a packet that carries its
//     fixed part (20 or 8 bytes): an unfragmented packet or a first
//     fragment. A first fragment's checksum covers the reassembled
//     datagram, and the incremental update is as right for it as for a
//     whole one;
//   - a UDP checksum of 0 means "none" and stays 0; one that comes out 0 is
//     sent as 0xffff (RFC 768);
//   - the ICMP checksum covers no pseudo-header, so address rewrites leave
//     it alone.

import "encoding/binary"

const (
	// maxVLANTags is how many tags the rewrites look through to find the
	// IP header: as many as OVS's flow key holds (FLOW_MAX_VLAN_HEADERS).
	// Deeper frames are not IP to the flow table, so not to its actions.
	maxVLANTags  = 2
	vlanTagLen   = 4
	tpidDot1Q    = 0x8100
	tpidDot1AD   = 0x88a8
	vlanVIDMask  = 0x0fff
	vlanPCPMask  = 0xe000
	vlanPCPShift = 13
	tosDSCPMask  = 0xfc
	tosECNMask   = 0x03

	etherTypeIPv4 = 0x0800
	etherTypeIPv6 = 0x86dd

	ipv4MinHeaderLen = 20
	ipv6HeaderLen    = 40
	tcpMinHeaderLen  = 20
	udpHeaderLen     = 8

	ipProtoTCP      = 6
	ipProtoUDP      = 17
	ipv6HopByHop    = 0
	ipv6Routing     = 43
	ipv6Fragment    = 44
	ipv6AuthHeader  = 51
	ipv6DestOptions = 60
	ipv6FragmentLen = 8
	ipv4FragOffMask = 0x1fff
	ipv6FragOffMask = 0xfff8

	// Field offsets within their header.
	ipv4TTLOff        = 8
	ipv4ChecksumOff   = 10
	ipv4SrcOff        = 12
	ipv4DstOff        = 16
	ipv6NextHeaderOff = 6
	ipv6HopLimitOff   = 7
	l4SrcPortOff      = 0
	l4DstPortOff      = 2
	udpChecksumOff    = 6
	tcpChecksumOff    = 16
)

// currentMAC, currentIPv4Addr and currentL4Port read the field a rewrite
// would change, for set_field with a mask, which keeps some of its bits.
// ok is false when the frame has no such field to rewrite.
func currentMAC(frame []byte, off int) (mac [6]byte, ok bool) {
	if len(frame) < ethHeaderLen {
		return mac, false
	}
	return [6]byte(frame[off : off+6]), true
}

func currentIPv4Addr(frame []byte, fieldOff int) (addr [4]byte, ok bool) {
	etherType, l3, ok := findL3(frame)
	if !ok || etherType != etherTypeIPv4 {
		return addr, false
	}
	if _, ok := parseIPv4(frame, l3); !ok {
		return addr, false
	}
	return [4]byte(frame[l3+fieldOff : l3+fieldOff+4]), true
}

func currentL4Port(frame []byte, fieldOff int) (uint16, bool) {
	p, ok := parseIP(frame)
	if !ok {
		return 0, false
	}
	if _, ok := l4Checksum(p); !ok {
		return 0, false
	}
	return binary.BigEndian.Uint16(frame[p.l4+fieldOff:]), true
}

func setDlDst(frame []byte, mac [6]byte) {
	if len(frame) >= ethHeaderLen {
		copy(frame[0:6], mac[:])
	}
}

func setDlSrc(frame []byte, mac [6]byte) {
	if len(frame) >= ethHeaderLen {
		copy(frame[6:12], mac[:])
	}
}

// setNwSrc rewrites the IPv4 source address.
func setNwSrc(frame []byte, ip [4]byte) { setIPv4Addr(frame, ipv4SrcOff, ip) }

// setNwDst rewrites the IPv4 destination address.
func setNwDst(frame []byte, ip [4]byte) { setIPv4Addr(frame, ipv4DstOff, ip) }

// setTpSrc rewrites the TCP or UDP source port, over IPv4 or IPv6.
func setTpSrc(frame []byte, port uint16) { setL4Port(frame, l4SrcPortOff, port) }

// setTpDst rewrites the TCP or UDP destination port, over IPv4 or IPv6.
func setTpDst(frame []byte, port uint16) { setL4Port(frame, l4DstPortOff, port) }

func setIPv4Addr(frame []byte, fieldOff int, addr [4]byte) {
	etherType, l3, ok := findL3(frame)
	if !ok || etherType != etherTypeIPv4 {
		return
	}
	p, ok := parseIPv4(frame, l3)
	if !ok {
		return
	}
	field := frame[l3+fieldOff : l3+fieldOff+4]
	old := binary.BigEndian.Uint32(field)
	updated := binary.BigEndian.Uint32(addr[:])
	if old == updated {
		return
	}
	// The address is in the IPv4 header and in the TCP/UDP pseudo-header.
	delta := wordsDelta32(old, updated)
	updateChecksum(frame[l3+ipv4ChecksumOff:], delta)
	if csumOff, ok := l4Checksum(p); ok {
		updateL4Checksum(frame[csumOff:], p.proto, delta)
	}
	copy(field, addr[:])
}

func setL4Port(frame []byte, fieldOff int, port uint16) {
	p, ok := parseIP(frame)
	if !ok {
		return
	}
	csumOff, ok := l4Checksum(p)
	if !ok {
		return
	}
	field := frame[p.l4+fieldOff:]
	old := binary.BigEndian.Uint16(field)
	if old == port {
		return
	}
	updateL4Checksum(frame[csumOff:], p.proto, wordsDelta16(old, port))
	binary.BigEndian.PutUint16(field, port)
}

// decTTL decrements the IPv4 TTL or the IPv6 hop limit. It returns false,
// leaving the frame as it is, when the frame must be dropped: the TTL is 0
// or 1 (it would reach 0), or the frame says IP but its header is not sane.
// OVS would send such a frame to the controller; xswitch has none. A frame
// that is not IP is kept unchanged.
func decTTL(frame []byte) (keep bool) {
	etherType, l3, isIP, sane := ipHeader(frame)
	switch {
	case !isIP:
		return true
	case !sane:
		return false
	}
	ttl := frame[l3+ipv4TTLOff]
	if etherType == etherTypeIPv6 {
		ttl = frame[l3+ipv6HopLimitOff]
	}
	if ttl <= 1 {
		return false
	}
	putTTL(frame, etherType, l3, ttl-1)
	return true
}

// setTOS sets the bits of mask in the IPv4 TOS byte, or the IPv6 traffic
// class, to value: the DSCP bits for mod_nw_tos, the ECN bits for
// mod_nw_ecn.
func setTOS(frame []byte, mask, value uint8) {
	etherType, l3, _, sane := ipHeader(frame)
	if !sane {
		return
	}
	word := binary.BigEndian.Uint16(frame[l3:])
	if etherType == etherTypeIPv4 {
		// TOS shares its checksummed word with the version and length.
		putIPv4Word(frame, l3, 0, word&^uint16(mask)|uint16(value&mask))
		return
	}
	// The traffic class is bits 4-11 of the first word.
	m := uint16(mask) << 4
	binary.BigEndian.PutUint16(frame[l3:], word&^m|uint16(value)<<4&m)
}

// setTTL sets the IPv4 TTL or the IPv6 hop limit.
func setTTL(frame []byte, ttl uint8) {
	if etherType, l3, _, sane := ipHeader(frame); sane {
		putTTL(frame, etherType, l3, ttl)
	}
}

// ipHeader finds the IP header that the TTL and TOS rewrites change:
// isIP says the frame says IPv4 or IPv6, sane that its header passes the
// extractor's checks.
func ipHeader(frame []byte) (etherType uint16, l3 int, isIP, sane bool) {
	etherType, l3, ok := findL3(frame)
	if !ok {
		return 0, 0, false, false
	}
	switch etherType {
	case etherTypeIPv4:
		_, sane = parseIPv4(frame, l3)
	case etherTypeIPv6:
		_, sane = parseIPv6(frame, l3)
	default:
		return etherType, l3, false, false
	}
	return etherType, l3, true, sane
}

// putTTL writes the TTL (hop limit) of the sane IP header at l3.
func putTTL(frame []byte, etherType uint16, l3 int, ttl uint8) {
	if etherType == etherTypeIPv6 {
		frame[l3+ipv6HopLimitOff] = ttl
		return
	}
	// TTL shares its checksummed word with the protocol byte.
	word := binary.BigEndian.Uint16(frame[l3+ipv4TTLOff:])
	putIPv4Word(frame, l3, ipv4TTLOff, word&0x00ff|uint16(ttl)<<8)
}

// putIPv4Word writes the 16-bit word at off in the IPv4 header at l3 and
// updates the header checksum for it.
func putIPv4Word(frame []byte, l3, off int, updated uint16) {
	word := binary.BigEndian.Uint16(frame[l3+off:])
	updateChecksum(frame[l3+ipv4ChecksumOff:], wordsDelta16(word, updated))
	binary.BigEndian.PutUint16(frame[l3+off:], updated)
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
	if cap(frame)-len(frame) < vlanTagLen {
		return frame, false
	}
	var tci uint16
	if tagged {
		tci = binary.BigEndian.Uint16(frame[14:])
	}
	n := len(frame)
	frame = frame[:n+vlanTagLen]
	copy(frame[12+vlanTagLen:], frame[12:n])
	binary.BigEndian.PutUint16(frame[12:], tpid)
	binary.BigEndian.PutUint16(frame[14:], tci)
	return frame, true
}

// stripVLAN removes the outermost tag, if there is one; the frame shrinks
// by 4 bytes.
func stripVLAN(frame []byte) []byte {
	if tagged, ok := outerTag(frame); !ok || !tagged {
		return frame
	}
	copy(frame[12:], frame[12+vlanTagLen:])
	return frame[:len(frame)-vlanTagLen]
}

// setVLANVID sets the VID of the outermost tag, keeping its PCP and DEI.
// An untagged frame gets an 802.1Q tag with that VID and PCP 0, as OVS's
// mod_vlan_vid does; the result is then pushVLAN's.
func setVLANVID(frame []byte, vid uint16) ([]byte, bool) {
	vid &= vlanVIDMask
	tagged, ok := outerTag(frame)
	if !ok {
		return frame, true
	}
	if tagged {
		tci := binary.BigEndian.Uint16(frame[14:])
		binary.BigEndian.PutUint16(frame[14:], tci&^vlanVIDMask|vid)
		return frame, true
	}
	frame, ok = pushVLAN(frame, tpidDot1Q)
	if ok {
		binary.BigEndian.PutUint16(frame[14:], vid)
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
		if frame, ok = pushVLAN(frame, tpidDot1Q); !ok {
			return frame, false
		}
	}
	tci := binary.BigEndian.Uint16(frame[14:])
	binary.BigEndian.PutUint16(frame[14:], tci&^vlanPCPMask|uint16(pcp&7)<<vlanPCPShift)
	return frame, true
}

// outerTag reports whether frame starts with a VLAN tag; ok is false when
// frame is not Ethernet, or says it is tagged but is too short for the tag.
func outerTag(frame []byte) (tagged, ok bool) {
	if len(frame) < ethHeaderLen {
		return false, false
	}
	if !isTPID(binary.BigEndian.Uint16(frame[12:])) {
		return false, true
	}
	return true, len(frame) >= ethHeaderLen+vlanTagLen
}

func isTPID(etherType uint16) bool { return etherType == tpidDot1Q || etherType == tpidDot1AD }

// findL3 returns the EtherType after at most maxVLANTags tags and the
// offset of the header it announces.
func findL3(frame []byte) (etherType uint16, l3 int, ok bool) {
	if len(frame) < ethHeaderLen {
		return 0, 0, false
	}
	off := 12
	for range maxVLANTags + 1 {
		etherType = binary.BigEndian.Uint16(frame[off:])
		if !isTPID(etherType) {
			return etherType, off + 2, true
		}
		off += vlanTagLen
		if off+2 > len(frame) {
			return 0, 0, false
		}
	}
	return 0, 0, false
}

// ipPacket locates an IP packet's headers within a frame.
type ipPacket struct {
	l4    int   // upper-layer header; -1 when the packet does not carry it
	end   int   // end of the IP packet: Ethernet padding may follow
	proto uint8 // upper-layer protocol, when l4 >= 0
}

func parseIP(frame []byte) (ipPacket, bool) {
	etherType, l3, ok := findL3(frame)
	if !ok {
		return ipPacket{}, false
	}
	switch etherType {
	case etherTypeIPv4:
		return parseIPv4(frame, l3)
	case etherTypeIPv6:
		return parseIPv6(frame, l3)
	}
	return ipPacket{}, false
}

// parseIPv4 applies the sanity checks of OVS's key extraction.
func parseIPv4(frame []byte, l3 int) (ipPacket, bool) {
	if l3+ipv4MinHeaderLen > len(frame) || frame[l3]>>4 != 4 {
		return ipPacket{}, false
	}
	headerLen := int(frame[l3]&0x0f) * 4
	totalLen := int(binary.BigEndian.Uint16(frame[l3+2:]))
	if headerLen < ipv4MinHeaderLen || totalLen < headerLen || l3+totalLen > len(frame) {
		return ipPacket{}, false
	}
	p := ipPacket{l4: -1, end: l3 + totalLen}
	if binary.BigEndian.Uint16(frame[l3+6:])&ipv4FragOffMask == 0 {
		p.l4, p.proto = l3+headerLen, frame[l3+9]
	}
	return p, true
}

// parseIPv6 walks the extension headers that OVS's key extraction walks
// to find the upper-layer header. The walk ends: each header is at least
// 8 bytes long and must start within the packet.
func parseIPv6(frame []byte, l3 int) (ipPacket, bool) {
	if l3+ipv6HeaderLen > len(frame) || frame[l3]>>4 != 6 {
		return ipPacket{}, false
	}
	end := l3 + ipv6HeaderLen + int(binary.BigEndian.Uint16(frame[l3+4:]))
	if end > len(frame) {
		return ipPacket{}, false
	}
	p := ipPacket{l4: -1, end: end}
	next := frame[l3+ipv6NextHeaderOff]
	off := l3 + ipv6HeaderLen
	for {
		switch next {
		case ipv6HopByHop, ipv6Routing, ipv6DestOptions:
			if off+2 > end {
				return p, true
			}
			next, off = frame[off], off+(int(frame[off+1])+1)*8
		case ipv6AuthHeader:
			if off+2 > end {
				return p, true
			}
			next, off = frame[off], off+(int(frame[off+1])+2)*4
		case ipv6Fragment:
			if off+ipv6FragmentLen > end {
				return p, true
			}
			if binary.BigEndian.Uint16(frame[off+2:])&ipv6FragOffMask != 0 {
				return p, true // a later fragment: no upper-layer header
			}
			next, off = frame[off], off+ipv6FragmentLen
		default:
			p.l4, p.proto = off, next
			return p, true
		}
	}
}

// l4Checksum returns the offset of the checksum of the TCP or UDP header
// whose fixed part p carries.
func l4Checksum(p ipPacket) (int, bool) {
	if p.l4 < 0 {
		return 0, false
	}
	switch p.proto {
	case ipProtoTCP:
		if p.l4+tcpMinHeaderLen > p.end {
			return 0, false
		}
		return p.l4 + tcpChecksumOff, true
	case ipProtoUDP:
		if p.l4+udpHeaderLen > p.end {
			return 0, false
		}
		return p.l4 + udpChecksumOff, true
	}
	return 0, false
}

func updateL4Checksum(field []byte, proto uint8, delta uint32) {
	if proto == ipProtoUDP {
		if binary.BigEndian.Uint16(field) == 0 {
			return
		}
		updateChecksum(field, delta)
		if binary.BigEndian.Uint16(field) == 0 {
			binary.BigEndian.PutUint16(field, 0xffff)
		}
		return
	}
	updateChecksum(field, delta)
}

// wordsDelta16 is ~m + m' for a 16-bit word changing from old to updated.
func wordsDelta16(old, updated uint16) uint32 { return uint32(^old) + uint32(updated) }

// wordsDelta32 is the delta for two adjacent words.
func wordsDelta32(old, updated uint32) uint32 {
	return wordsDelta16(uint16(old>>16), uint16(updated>>16)) + wordsDelta16(uint16(old), uint16(updated))
}

// updateChecksum applies delta to the checksum at field[0:2]:
// HC' = ~(~HC + delta), folded to 16 bits.
func updateChecksum(field []byte, delta uint32) {
	sum := uint32(^binary.BigEndian.Uint16(field)) + delta
	sum = sum&0xffff + sum>>16
	sum = sum&0xffff + sum>>16
	binary.BigEndian.PutUint16(field, ^uint16(sum))
}
