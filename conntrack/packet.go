package conntrack

import (
	"strconv"
	"strings"

	"github.com/xswitch/xswitch/header"
)

// Packet is what the tracker needs of one packet: its headers (Header),
// which the switch fills from the frame (Decode reads them from the IP
// header on), and its conntrack metadata (CT), which travels with the
// packet through the pipeline as OVS's pkt->md does: each ct() action
// reads what the one before it left and writes its own.
type Packet struct {
	Header
	CT CT
}

// Header is a packet's network and transport header fields, as they are
// when the packet reaches a ct() action: after any rewrite an earlier
// action made (an earlier ct()'s NAT included, which Execute applies to
// Header itself).
type Header struct {
	IPv6     bool
	Src, Dst Addr
	// Proto is the IP protocol (IPv6: the last next header, past the
	// extension headers).
	Proto uint8
	// Fragment says the packet is a fragment of a datagram, first or
	// later; LaterFragment, that it is not the first, which alone holds
	// the transport header; FragmentID is the datagram's identification
	// (IPv4's 16 bits, IPv6's 32). The tracker does not reassemble: a
	// later fragment takes the transport header of its datagram's first
	// (Tracker's fragments), see the package's documentation.
	Fragment, LaterFragment bool
	FragmentID              uint32
	// Malformed says the caller found the packet unfit to track: cut
	// short, bad lengths, or a bad checksum if it checks them. It is
	// +inv, as OVS has a packet its conn_key_extract rejects.
	Malformed bool

	// SrcPort and DstPort are TCP's, UDP's or SCTP's. Port 0 is +inv.
	SrcPort, DstPort uint16

	// TCP: the flags byte (TCPFin...), sequence and acknowledgement
	// numbers, the window as sent (unscaled), the window scale option
	// if the segment has one, and the length of its payload.
	TCPFlags  uint8
	Seq, Ack  uint32
	Window    uint16
	HasWScale bool
	WScale    uint8
	Payload   uint32

	// ICMP and ICMPv6: the type and code, and the identifier of an echo,
	// timestamp or information message.
	ICMPType, ICMPCode uint8
	ICMPID             uint16

	// Inner is the header an ICMP or ICMPv6 error quotes.
	Inner Quoted
}

// Quoted is the header of the packet an ICMP or ICMPv6 error is about, as
// the error quotes it (its family is the error's). Valid says it was
// there: a whole IP header, not a later fragment, and enough of its
// transport header for the ports (8 bytes under IPv4, as ICMP must quote;
// the whole TCP, UDP, SCTP or ICMPv6 header under IPv6, as OVS asks).
type Quoted struct {
	Valid              bool
	Src, Dst           Addr
	Proto              uint8
	SrcPort, DstPort   uint16
	ICMPType, ICMPCode uint8
	ICMPID             uint16
}

// TCP flags, in the bit positions of the TCP header's flags byte.
const (
	TCPFin = 1 << iota
	TCPSyn
	TCPRst
	TCPPsh
	TCPAck
	TCPUrg
	TCPEce
	TCPCwr
)

// State is a packet's ct_state, in OVS's bits (the NXM field's).
type State uint8

const (
	StateNew         State = 1 << iota // 0x01: starts a connection (or would)
	StateEstablished                   // 0x02: part of one seen both ways
	StateRelated                       // 0x04: an ICMP error about one
	StateReply                         // 0x08: going the reply direction
	StateInvalid                       // 0x10: fits no connection, or breaks its rules
	StateTracked                       // 0x20: went through the tracker
	StateSrcNAT                        // 0x40: its source was translated
	StateDstNAT                        // 0x80: its destination was translated
)

var stateNames = [8]string{"new", "est", "rel", "rpl", "inv", "trk", "snat", "dnat"}

// String is the set bits as OVS writes a ct_state match: "+trk+est".
func (s State) String() string {
	if s == 0 {
		return "0"
	}
	var b strings.Builder
	for i, name := range stateNames {
		if s&(1<<i) != 0 {
			b.WriteByte('+')
			b.WriteString(name)
		}
	}
	return b.String()
}

// Label is a connection's 128-bit ct_label, Hi the first 64 bits of the
// NXM field's big-endian value.
type Label struct{ Hi, Lo uint64 }

// String is l as dumps write it, as OVS's ds_put_hex does: the 128-bit
// number in hex, without leading zeros.
func (l Label) String() string {
	if l.Hi == 0 {
		return "0x" + strconv.FormatUint(l.Lo, 16)
	}
	lo := strconv.FormatUint(l.Lo, 16)
	return "0x" + strconv.FormatUint(l.Hi, 16) + strings.Repeat("0", 16-len(lo)) + lo
}

// IsZero reports whether every bit of l is clear.
func (l Label) IsZero() bool { return l == Label{} }

func (l Label) and(m Label) Label       { return Label{l.Hi & m.Hi, l.Lo & m.Lo} }
func (l Label) andNot(m Label) Label    { return Label{l.Hi &^ m.Hi, l.Lo &^ m.Lo} }
func (l Label) or(m Label) Label        { return Label{l.Hi | m.Hi, l.Lo | m.Lo} }
func setMasked(old, v, m uint32) uint32 { return v | old&^m }

// OrigTuple is a tracked packet's ct_nw_src/dst (ct_ipv6_src/dst),
// ct_nw_proto and ct_tp_src/dst: its connection's original direction, as
// OVS fills them. For ICMP, SrcPort holds the original type and DstPort
// the code. Proto 0 means none.
type OrigTuple struct {
	Src, Dst         Addr
	SrcPort, DstPort uint16
	Proto            uint8
	IPv6             bool
}

func origOf(t *Tuple) OrigTuple {
	o := OrigTuple{Src: t.Src.Addr, Dst: t.Dst.Addr, Proto: t.Proto, IPv6: t.IPv6, SrcPort: t.Src.Port, DstPort: t.Dst.Port}
	if isICMP(t.IPv6, t.Proto) {
		o.SrcPort, o.DstPort = uint16(t.Src.ICMPType), uint16(t.Src.ICMPCode)
	}
	return o
}

// Handle names a connection in its tracker for as long as it lives: a
// slot and the slot's generation, so that a handle outliving its
// connection names nothing rather than the slot's next occupant. The zero
// Handle names nothing.
type Handle uint64

func makeHandle(slot, gen uint32) Handle { return Handle(uint64(gen)<<32 | uint64(slot)) }
func (h Handle) slot() uint32            { return uint32(h) }
func (h Handle) gen() uint32             { return uint32(h >> 32) }

// CT is a packet's conntrack metadata: what the flow tables match after a
// ct() action (ct_state, ct_zone, ct_mark, ct_label and the original
// tuple), and what the next ct() action of the same pipeline needs to know
// of the last one, as OVS keeps them in the packet's metadata. The zero
// CT is an untracked packet; ct_clear sets it back to zero.
type CT struct {
	State State
	Zone  uint16
	Mark  uint32
	Label Label
	Orig  OrigTuple
	// Conn is the packet's connection, if it has one in the table.
	Conn Handle

	// cached says the next ct() in the same zone may take Conn as it is,
	// without looking the packet up again or running its state machine
	// (OVS's pkt->md.conn): set after a ct() without nat, as OVS does.
	cached  bool
	reply   bool
	related bool
}

// key is the tuple a packet is looked up by in zone, and whether it is an
// ICMP error, whose tuple is the reverse of the packet it quotes (the
// direction the error goes). ok is false for a packet the tracker cannot
// key, which is +inv (OVS's conn_key_extract failing).
func (h *Header) key(zone uint16) (k Tuple, related, ok bool) {
	if h.Malformed {
		return k, false, false
	}
	k = Tuple{Zone: zone, IPv6: h.IPv6, Proto: h.Proto}
	k.Src.Addr, k.Dst.Addr = h.Src, h.Dst
	switch {
	case hasPorts(h.Proto):
		if h.SrcPort == 0 || h.DstPort == 0 {
			return k, false, false
		}
		k.Src.Port, k.Dst.Port = h.SrcPort, h.DstPort
	case isICMP(h.IPv6, h.Proto):
		if rev, query := icmpQuery(h.IPv6, h.ICMPType); query {
			if h.ICMPCode != 0 {
				return k, false, false
			}
			k.Src = Endpoint{Addr: h.Src, Port: h.ICMPID, ICMPType: h.ICMPType}
			k.Dst = Endpoint{Addr: h.Dst, Port: h.ICMPID, ICMPType: rev}
			return k, false, true
		}
		if !icmpError(h.IPv6, h.ICMPType) || !h.Inner.Valid {
			return k, false, false
		}
		// An error goes back to the sender of the packet it quotes
		// (OVS checks this, beyond pf).
		if h.Inner.Src != h.Dst {
			return k, false, false
		}
		inner, ok := h.Inner.key(zone, h.IPv6)
		return inner.Reverse(), true, ok
	}
	return k, false, true
}

// key is the tuple of the quoted packet, which must not itself be an
// ICMP error (OVS's extract_l4 without a related pointer).
func (q *Quoted) key(zone uint16, ipv6 bool) (Tuple, bool) {
	k := Tuple{Zone: zone, IPv6: ipv6, Proto: q.Proto}
	k.Src.Addr, k.Dst.Addr = q.Src, q.Dst
	switch {
	case hasPorts(q.Proto):
		if q.SrcPort == 0 || q.DstPort == 0 {
			return k, false
		}
		k.Src.Port, k.Dst.Port = q.SrcPort, q.DstPort
	case isICMP(ipv6, q.Proto):
		rev, query := icmpQuery(ipv6, q.ICMPType)
		if !query || q.ICMPCode != 0 {
			return k, false
		}
		k.Src = Endpoint{Addr: q.Src, Port: q.ICMPID, ICMPType: q.ICMPType}
		k.Dst = Endpoint{Addr: q.Dst, Port: q.ICMPID, ICMPType: rev}
	}
	return k, true
}

// Rewrite says which of a Packet's header fields a ct() action's NAT
// changed: the caller writes the new values (in Header) into the frame
// and fixes the checksums. For an ICMP error, RewriteInner means the
// quoted packet's header changed (Header.Inner: addresses, ports or ICMP
// identifier): the caller writes them into the quoted headers, fixes the
// quoted IPv4 header's checksum and the quoted transport checksum if the
// quote holds it (OVS updates both incrementally), and computes the ICMP
// checksum again over the whole message.
type Rewrite uint8

const (
	RewriteSrc     Rewrite = 1 << iota // Header.Src
	RewriteDst                         // Header.Dst
	RewriteSrcPort                     // Header.SrcPort
	RewriteDstPort                     // Header.DstPort
	RewriteICMPID                      // Header.ICMPID
	RewriteInner                       // Header.Inner
)

// validNew reports whether a packet may open a connection (OVS's
// valid_new): a TCP segment with sane flags that is not a SYN-ACK (a
// connection picked up midway starts from any such segment, as in OVS),
// an ICMP or ICMPv6 request, or anything of another protocol.
func (h *Header) validNew() bool {
	switch {
	case h.Proto == header.ProtoTCP:
		return !tcpInvalidFlags(h.TCPFlags) && h.TCPFlags&(TCPSyn|TCPAck) != TCPSyn|TCPAck
	case isICMP(h.IPv6, h.Proto):
		return icmpRequest(h.IPv6, h.ICMPType)
	}
	return true
}
