package flow

import (
	"encoding/binary"

	"github.com/xswitch/xswitch/header"
)

// Key is what the flow tables match on: the header fields of one frame and
// the port it arrived on (Headers), and what the pipeline carries along
// with the frame from table to table: metadata, registers, and what the
// connection tracker said of it (CT).
//
// It is a packed, comparable struct of fixed-size arrays with no pointers,
// so that it hashes as plain memory when it is a map key (the classifier's
// subtables) and masks with a few word operations. A field that a frame
// does not have is zero: the IPv4 fields of an ARP frame, the L4 ports of a
// later fragment. Field meanings follow OVS's struct flow, so that matches
// translate one to one:
//
//   - ARP frames put arp_op in NwProto and the sender and target protocol
//     addresses in NwSrc and NwDst, as OVS does.
//   - ICMP and ICMPv6 put the type in TpSrc and the code in TpDst; SCTP
//     puts its ports where TCP and UDP put theirs.
//   - An IPv6 neighbour solicitation puts its source link-layer address
//     (nd_sll) in ArpSHA, and an advertisement its target one (nd_tll)
//     in ArpTHA: OVS's arp_sha and arp_tha hold them too.
//   - VLANTCI is the outermost 802.1Q tag's TCI with the CFI bit (0x1000)
//     forced on, so that "no tag" (0) and "tag with VID 0" differ; DlType is
//     then the EtherType inside the tag.
//   - An MPLS frame has its label stack in MPLS, and no network header as
//     far as a match goes: OVS's flow_extract reads nothing past the
//     stack, and no match on a network field can name an MPLS frame (the
//     field needs dl_type=ip, ipv6 or arp). The key keeps there what a pop
//     of the whole stack would show (UnderMPLS), where OVS, which
//     recirculates a packet whose last label a rule popped, would read it
//     again.
//
// fields.go describes each field once, for the parser, the formatter and
// the actions that read and write fields.
type Key struct {
	Headers
	Metadata uint64
	Regs     [NumRegs]uint32
	// CT is what the connection tracker says of the frame: zero (-trk)
	// until a ct() sends it on to a table with its connection's fields
	// filled in.
	CT CTFields
	// Table is the table the key is looked up in. Every rule matches it
	// exactly (a rule lives in one table), so one classifier holds the
	// whole pipeline. A frame starts in table 0.
	Table uint8
}

// NumTables is how many tables the pipeline has (0 to 254); 255 is
// OpenFlow's "all tables" in requests.
const NumTables = 255

// NumRegs is how many 32-bit registers the pipeline has (reg0 to reg15).
const NumRegs = 16

// Headers is the part of a Key that a frame brings: its header fields and
// its input port. A frame enters the pipeline with metadata and registers
// zero, so Headers alone keys what is cached about it.
type Headers struct {
	// A frame from a tunnel port brings what its outer headers said: the
	// VNI (tun_id) and the remote and local addresses (tun_src, tun_dst).
	// Zero for a frame from any other port.
	TunID  uint64
	TunSrc [4]byte
	TunDst [4]byte
	// IPv6Label is the IPv6 flow label, 20 bits. (It is here, where a
	// uint32 is aligned, so that Headers has no padding between its
	// fields, and hashes as one run of memory.)
	IPv6Label uint32
	InPort    uint16
	DlDst     [6]byte
	DlSrc     [6]byte
	DlType    uint16
	VLANTCI   uint16
	NwProto   uint8
	NwTOS     uint8 // the whole TOS / traffic class byte: DSCP << 2 | ECN
	NwTTL     uint8
	NwFrag    uint8 // FragAny, FragLater
	NwSrc     [4]byte
	NwDst     [4]byte
	IPv6Src   [16]byte
	IPv6Dst   [16]byte
	TpSrc     uint16
	TpDst     uint16
	ArpSHA    [6]byte
	ArpTHA    [6]byte
	// NDTarget is an IPv6 neighbour discovery message's target address.
	NDTarget [16]byte
	// MPLS is an MPLS frame's top label stack entry, the 32-bit word of
	// the wire, which matches read. The key holds the next entries too,
	// as OVS's struct flow does, up to MaxMPLSLabels (MPLSEntry), zero
	// past the bottom of the stack, in NDTarget's bytes: an MPLS frame
	// has no neighbour discovery target to match on, and the key keeps
	// none of a packet under its stack.
	MPLS uint32
	// UnderMPLS is the EtherType of the packet under an MPLS frame's
	// whole label stack whose fields the key's network and transport
	// fields then hold (but nd_target): those a frame would have whose
	// last label pop_mpls takes off, naming that EtherType. The extractor
	// reads an IPv4 or IPv6 packet there, by its version field; a push
	// keeps the fields of the frame it pushes onto. 0 for any other
	// frame, whose network fields, if it is MPLS, are zero.
	UnderMPLS uint32
	// IPv6ExtHdr is OpenFlow's ipv6_exthdr pseudo-field: which extension
	// headers an IPv6 packet has, and whether they repeat or come out of
	// RFC 8200's order (the IPv6ExtHdr bits, ExtHdrWalk).
	IPv6ExtHdr uint16
}

// Headers is 128 bytes: past that, Go hashes a map key (the decision
// cache's) by a slower loop, which costs forwarding a few percent.

// MaxMPLSLabels is how many label stack entries the key holds, as OVS's
// flow does (FLOW_MAX_MPLS_LABELS): past them, a frame's stack is only
// pushed onto or popped from as far as the key knows it.
const MaxMPLSLabels = 3

// MPLSEntry returns entry i (from 0, the top; i < MaxMPLSLabels) of an
// MPLS frame's label stack, as the key holds it.
func (h *Headers) MPLSEntry(i int) uint32 {
	if i == 0 {
		return h.MPLS
	}
	return binary.BigEndian.Uint32(h.NDTarget[4*(i-1):])
}

func (h *Headers) setMPLSEntry(i int, lse uint32) {
	if i == 0 {
		h.MPLS = lse
		return
	}
	binary.BigEndian.PutUint32(h.NDTarget[4*(i-1):], lse)
}

// VLANCFI marks VLANTCI as present (OVS's VLAN_CFI).
const VLANCFI = 0x1000

// NwFrag bits, as in OVS (nw_frag).
const (
	FragAny   = 1 << 0 // the packet is a fragment
	FragLater = 1 << 1 // and not the first one: it has no L4 header
)

// EtherTypes and IP protocols the table knows by name.
const (
	EtherTypeIPv4 = header.EtherTypeIPv4
	EtherTypeARP  = header.EtherTypeARP
	EtherTypeVLAN = header.EtherTypeVLAN
	EtherTypeIPv6 = header.EtherTypeIPv6

	EtherTypeMPLS          = header.EtherTypeMPLS
	EtherTypeMPLSMulticast = header.EtherTypeMPLSMulticast

	ProtoICMP   = header.ProtoICMP
	ProtoTCP    = header.ProtoTCP
	ProtoUDP    = header.ProtoUDP
	ProtoICMPv6 = header.ProtoICMPv6
	ProtoSCTP   = header.ProtoSCTP
)

// Widen sets every bit of h that is set in m: the union of two masks.
func (h *Headers) Widen(m *Headers) {
	h.TunID |= m.TunID
	h.InPort |= m.InPort
	h.DlType |= m.DlType
	h.VLANTCI |= m.VLANTCI
	h.NwProto |= m.NwProto
	h.NwTOS |= m.NwTOS
	h.NwTTL |= m.NwTTL
	h.NwFrag |= m.NwFrag
	h.TpSrc |= m.TpSrc
	h.TpDst |= m.TpDst
	h.IPv6Label |= m.IPv6Label
	h.MPLS |= m.MPLS
	h.UnderMPLS |= m.UnderMPLS
	h.IPv6ExtHdr |= m.IPv6ExtHdr
	for _, f := range [][2][]byte{{h.TunSrc[:], m.TunSrc[:]}, {h.TunDst[:], m.TunDst[:]}, {h.DlDst[:], m.DlDst[:]}, {h.DlSrc[:], m.DlSrc[:]}, {h.NwSrc[:], m.NwSrc[:]},
		{h.NwDst[:], m.NwDst[:]}, {h.IPv6Src[:], m.IPv6Src[:]}, {h.IPv6Dst[:], m.IPv6Dst[:]},
		{h.ArpSHA[:], m.ArpSHA[:]}, {h.ArpTHA[:], m.ArpTHA[:]}, {h.NDTarget[:], m.NDTarget[:]}} {
		for i := range f[0] {
			f[0][i] |= f[1][i]
		}
	}
}

// And returns k with only the bits set in mask kept.
func (k *Key) And(mask *Key) Key {
	var out Key
	maskKey(&out, k, mask)
	return out
}

// maskKey sets *dst to k & m. Each array moves as one or two words rather
// than byte by byte, which matters because a lookup masks the key once per
// subtable it probes.
func maskKey(dst, k, m *Key) {
	le := binary.LittleEndian
	dst.TunID = k.TunID & m.TunID
	le.PutUint32(dst.TunSrc[:], le.Uint32(k.TunSrc[:])&le.Uint32(m.TunSrc[:]))
	le.PutUint32(dst.TunDst[:], le.Uint32(k.TunDst[:])&le.Uint32(m.TunDst[:]))
	dst.InPort = k.InPort & m.InPort
	and48(&dst.DlDst, &k.DlDst, &m.DlDst)
	and48(&dst.DlSrc, &k.DlSrc, &m.DlSrc)
	dst.DlType = k.DlType & m.DlType
	dst.VLANTCI = k.VLANTCI & m.VLANTCI
	dst.NwProto = k.NwProto & m.NwProto
	dst.NwTOS = k.NwTOS & m.NwTOS
	dst.NwTTL = k.NwTTL & m.NwTTL
	dst.NwFrag = k.NwFrag & m.NwFrag
	le.PutUint32(dst.NwSrc[:], le.Uint32(k.NwSrc[:])&le.Uint32(m.NwSrc[:]))
	le.PutUint32(dst.NwDst[:], le.Uint32(k.NwDst[:])&le.Uint32(m.NwDst[:]))
	and128(&dst.IPv6Src, &k.IPv6Src, &m.IPv6Src)
	and128(&dst.IPv6Dst, &k.IPv6Dst, &m.IPv6Dst)
	dst.TpSrc = k.TpSrc & m.TpSrc
	dst.TpDst = k.TpDst & m.TpDst
	dst.IPv6Label = k.IPv6Label & m.IPv6Label
	and48(&dst.ArpSHA, &k.ArpSHA, &m.ArpSHA)
	and48(&dst.ArpTHA, &k.ArpTHA, &m.ArpTHA)
	and128(&dst.NDTarget, &k.NDTarget, &m.NDTarget)
	dst.MPLS = k.MPLS & m.MPLS
	dst.UnderMPLS = k.UnderMPLS & m.UnderMPLS
	dst.IPv6ExtHdr = k.IPv6ExtHdr & m.IPv6ExtHdr
	dst.Metadata = k.Metadata & m.Metadata
	for i := range k.Regs {
		dst.Regs[i] = k.Regs[i] & m.Regs[i]
	}
	dst.CT.Mark = k.CT.Mark & m.CT.Mark
	dst.CT.Zone = k.CT.Zone & m.CT.Zone
	dst.CT.State = k.CT.State & m.CT.State
	dst.CT.NwProto = k.CT.NwProto & m.CT.NwProto
	dst.CT.TpSrc = k.CT.TpSrc & m.CT.TpSrc
	dst.CT.TpDst = k.CT.TpDst & m.CT.TpDst
	and128(&dst.CT.Label, &k.CT.Label, &m.CT.Label)
	and128(&dst.CT.Src, &k.CT.Src, &m.CT.Src)
	and128(&dst.CT.Dst, &k.CT.Dst, &m.CT.Dst)
	dst.Table = k.Table & m.Table
}

func and48(dst, a, b *[6]byte) {
	le := binary.LittleEndian
	le.PutUint32(dst[:4], le.Uint32(a[:4])&le.Uint32(b[:4]))
	le.PutUint16(dst[4:], le.Uint16(a[4:])&le.Uint16(b[4:]))
}

func and128(dst, a, b *[16]byte) {
	le := binary.LittleEndian
	le.PutUint64(dst[:8], le.Uint64(a[:8])&le.Uint64(b[:8]))
	le.PutUint64(dst[8:], le.Uint64(a[8:])&le.Uint64(b[8:]))
}

// HasPorts reports whether the frame has the TCP, UDP or SCTP header that
// the key's ports were read from: a header rewrite of the ports needs one.
func (k *Key) HasPorts() bool {
	return k.hasL4() && (k.NwProto == ProtoTCP || k.NwProto == ProtoUDP || k.NwProto == ProtoSCTP)
}

// HasICMP reports whether the frame has the ICMP (over IPv4) or ICMPv6
// (over IPv6) header that the key's type and code were read from.
func (k *Key) HasICMP() bool {
	return k.hasL4() && (k.DlType == EtherTypeIPv4 && k.NwProto == ProtoICMP || k.DlType == EtherTypeIPv6 && k.NwProto == ProtoICMPv6)
}

// IsND reports whether the frame is an IPv6 neighbour solicitation or
// advertisement: its key has nd_target, and nd_sll or nd_tll, as OVS
// reads them.
func (k *Key) IsND() bool {
	return k.HasICMP() && k.DlType == EtherTypeIPv6 && k.TpDst == 0 &&
		(k.TpSrc == header.ICMPv6NeighborSolicitation || k.TpSrc == header.ICMPv6NeighborAdvert)
}

// hasL4 reports whether the frame is IP with an L4 header: not a later
// fragment.
func (k *Key) hasL4() bool {
	return (k.DlType == EtherTypeIPv4 || k.DlType == EtherTypeIPv6) && k.NwFrag&FragLater == 0
}

// IsMPLS reports whether the frame is MPLS, unicast or multicast.
func (h *Headers) IsMPLS() bool { return header.IsMPLS(h.DlType) }

// mplsLabels is how many entries of an MPLS frame's label stack the key
// holds, as OVS's flow_count_mpls_labels counts them: to the bottom of
// the stack, or the entries that are not zero when the stack goes on
// past the key.
func (k *Key) mplsLabels() int {
	if !k.IsMPLS() {
		return 0
	}
	n := 0
	for i := range MaxMPLSLabels {
		lse := k.MPLSEntry(i)
		if lse&header.MPLSBOSMask != 0 {
			return i + 1
		}
		if lse != 0 {
			n++
		}
	}
	return n
}

// pushMPLS is push_mpls to the key, as OVS's flow_push_mpls: onto an
// MPLS frame, a copy of the top entry that is not the bottom; onto
// another, an entry of the explicit null label for the packet's IP
// version, the DSCP's low 3 bits as TC (as OVS takes them) and the IP
// TTL, 64 if there is none or it is 0, at the bottom of the stack. ok is
// false when the stack is as deep as the key holds, which OVS drops.
func (k *Key) pushMPLS(etherType uint16) (ok bool) {
	n := k.mplsLabels()
	switch {
	case n >= MaxMPLSLabels:
		return false
	case n > 0:
		for i := n; i > 0; i-- {
			k.setMPLSEntry(i, k.MPLSEntry(i-1))
		}
		k.MPLS &^= header.MPLSBOSMask
	default:
		label, tc, ttl := uint32(header.MPLSLabelIPv4Null), uint32(0), uint32(64)
		if k.DlType == EtherTypeIPv6 {
			label = header.MPLSLabelIPv6Null
		}
		if k.DlType == EtherTypeIPv4 || k.DlType == EtherTypeIPv6 {
			tc = uint32(k.NwTOS >> 2)
			if k.NwTTL != 0 {
				ttl = uint32(k.NwTTL)
			}
		}
		k.MPLS = label<<header.MPLSLabelShift | tc<<header.MPLSTCShift&header.MPLSTCMask | header.MPLSBOSMask | ttl
		if !k.IsMPLS() {
			// The packet's fields stay, under the stack, for a pop to
			// show; its neighbour discovery target gives its place to
			// the stack.
			k.UnderMPLS, k.NDTarget = uint32(k.DlType), [16]byte{}
		}
	}
	k.DlType = etherType
	return true
}

// popMPLS is pop_mpls to the key, as OVS's flow_pop_mpls: the next entry
// comes to the top, and the frame is of etherType. When the entry popped
// was the bottom of the stack and etherType names the packet under it,
// the key shows that packet's fields, as OVS's recirculation of the
// popped frame reads them; otherwise the frame has no network fields. ok
// is false when the key does not know what the stack holds past its
// entries, which OVS drops.
func (k *Key) popMPLS(etherType uint16) (ok bool) {
	n := k.mplsLabels()
	switch {
	case n == 0:
		return true // nothing to pop
	case n == MaxMPLSLabels && k.MPLSEntry(n-1)&header.MPLSBOSMask == 0:
		return false
	}
	bottom := k.MPLS&header.MPLSBOSMask != 0
	for i := 1; i < n; i++ {
		k.setMPLSEntry(i-1, k.MPLSEntry(i))
	}
	k.setMPLSEntry(n-1, 0)
	k.DlType = etherType
	switch {
	case !bottom && header.IsMPLS(etherType):
		return true
	case bottom && uint32(etherType) == k.UnderMPLS:
		k.UnderMPLS = 0
	default:
		k.clearNetwork()
	}
	if !header.IsMPLS(etherType) {
		// A frame of another EtherType has no label stack to the key,
		// whatever its bytes say.
		k.MPLS, k.NDTarget = 0, [16]byte{}
	}
	return true
}

// copyTTLOut is copy_ttl_out to the key: the top label stack entry takes
// the TTL of the entry under it, or at the bottom of the stack that of
// the IP packet under it. A frame that is not MPLS, or whose bottom entry
// has no IP packet under it that the key knows, has no TTL to copy.
func (k *Key) copyTTLOut() {
	switch {
	case !k.IsMPLS():
	case k.MPLS&header.MPLSBOSMask == 0:
		k.MPLS = k.MPLS&^header.MPLSTTLMask | k.MPLSEntry(1)&header.MPLSTTLMask
	case k.UnderMPLS != 0:
		k.MPLS = k.MPLS&^header.MPLSTTLMask | uint32(k.NwTTL)
	}
}

// copyTTLIn is copy_ttl_in to the key: the top entry's TTL goes to the
// entry under it, or at the bottom of the stack to the IP packet under
// it, as copyTTLOut finds them.
func (k *Key) copyTTLIn() {
	ttl := k.MPLS & header.MPLSTTLMask
	switch {
	case !k.IsMPLS():
	case k.MPLS&header.MPLSBOSMask == 0:
		k.setMPLSEntry(1, k.MPLSEntry(1)&^header.MPLSTTLMask|ttl)
	case k.UnderMPLS != 0:
		k.NwTTL = uint8(ttl)
	}
}

// clearNetwork zeroes the key's network and transport fields.
func (k *Key) clearNetwork() {
	h := &k.Headers
	h.NwProto, h.NwTOS, h.NwTTL, h.NwFrag = 0, 0, 0, 0
	h.NwSrc, h.NwDst, h.IPv6Src, h.IPv6Dst, h.IPv6Label = [4]byte{}, [4]byte{}, [16]byte{}, [16]byte{}, 0
	h.TpSrc, h.TpDst, h.ArpSHA, h.ArpTHA, h.NDTarget = 0, 0, [6]byte{}, [6]byte{}, [16]byte{}
	h.UnderMPLS, h.IPv6ExtHdr = 0, 0
}
