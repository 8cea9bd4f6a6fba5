// Package tunnel encapsulates Ethernet frames in VXLAN (RFC 7348) and
// Geneve (RFC 8926) over IPv4 and UDP, and takes them out again; it owns
// the tunnel ports and their underlays, and resolves the way to a remote
// from the kernel's routing and neighbour tables.
//
// The underlay is an ordinary port: an encapsulated frame is a whole
// Ethernet frame, outer headers built here, sent on the underlay
// interface's AF_XDP socket as Open vSwitch's userspace datapath does, and
// a frame received there is decapsulated here. An underlay lives as long
// as a tunnel port holds it (Underlays: one per interface). Nothing on
// the way of a frame allocates or makes a system call: it works in the
// caller's buffers. The package knows no bridge: the switch polls an
// underlay as a port.Underlay, and the daemon decides which tunnels exist.
package tunnel

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"sync/atomic"

	"github.com/xswitch/xswitch/header"
	"github.com/xswitch/xswitch/port"
)

// Kind is the encapsulation.
type Kind uint8

const (
	VXLAN Kind = iota + 1
	Geneve
)

func (k Kind) String() string {
	switch k {
	case VXLAN:
		return "vxlan"
	case Geneve:
		return "geneve"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// ParseKind reads a port type as add-port --type gives it.
func ParseKind(s string) (Kind, error) {
	switch s {
	case "vxlan":
		return VXLAN, nil
	case "geneve":
		return Geneve, nil
	}
	return 0, fmt.Errorf("unknown tunnel type %q (vxlan or geneve)", s)
}

// DefaultPort is the IANA UDP port of the encapsulation.
func (k Kind) DefaultPort() uint16 {
	if k == Geneve {
		return 6081
	}
	return 4789
}

// Port is the UDP port of a tunnel configured with port: the default
// when it is 0.
func (k Kind) Port(port uint16) uint16 {
	if port == 0 {
		return k.DefaultPort()
	}
	return port
}

const (
	vxlanLen  = 8
	geneveLen = 8 // without options

	// Overhead is what VXLAN, or Geneve without options, adds to a frame
	// on an IPv4 underlay: outer Ethernet, IPv4, UDP and its own header.
	// The inner frame's MTU must be this much less than the underlay's
	// (1450 on a 1500-byte underlay).
	Overhead = header.EthernetLen + header.IPv4MinLen + header.UDPLen + vxlanLen

	vxlanFlagVNI = 0x08 // the I flag: the VNI is valid

	// The UDP source ports the kernel's vxlan device picks from by
	// default (its ephemeral range), so that underlay ECMP spreads inner
	// flows as it would theirs.
	srcPortMin = 32768
	srcPortMax = 60999
)

// Endpoint is one end of the underlay path: an IPv4 address and the MAC
// address frames to or from it carry on the wire (for the far end, the
// next hop's).
type Endpoint struct {
	IP  netip.Addr
	MAC [6]byte
}

// Encap holds the outer headers of one tunnel, built once, and writes
// them in front of inner frames.
type Encap struct {
	kind Kind
	hdr  [Overhead]byte
	// ipSum is the one's-complement sum of the outer IPv4 header with
	// its total length, ID and checksum zero; each frame adds its own.
	ipSum uint32
	// ipID numbers the outer datagrams: with DF clear the underlay may
	// fragment them, and fragments are reassembled by ID (RFC 6864).
	ipID atomic.Uint32
}

// NewEncap builds the outer headers from local to remote on UDP port
// dstPort. The IPv4 header has TTL 64 and DF clear, as the kernel's vxlan
// device sends by default; the UDP checksum is zero, as RFC 7348
// allows over IPv4 and the kernel's vxlan device sends by default.
func NewEncap(kind Kind, local, remote Endpoint, dstPort uint16) (*Encap, error) {
	if kind != VXLAN && kind != Geneve {
		return nil, fmt.Errorf("unknown tunnel kind %d", kind)
	}
	if !local.IP.Is4() || !remote.IP.Is4() {
		return nil, fmt.Errorf("tunnel endpoints %v and %v: only IPv4 underlays are supported", local.IP, remote.IP)
	}
	e := &Encap{kind: kind}
	eth := header.Ethernet(e.hdr[:])
	eth.SetDst(remote.MAC)
	eth.SetSrc(local.MAC)
	eth.SetType(header.EtherTypeIPv4)
	ip := header.IPv4(eth[header.EthernetLen:])
	ip.SetHeaderLen(header.IPv4MinLen)
	ip.SetTTL(64)
	ip.SetProtocol(header.ProtoUDP)
	ip.SetSrc(local.IP.As4())
	ip.SetDst(remote.IP.As4())
	e.ipSum = header.Sum(0, ip[:header.IPv4MinLen])
	udp := header.UDP(ip[header.IPv4MinLen:])
	udp.SetDstPort(dstPort)
	t := udp[header.UDPLen:]
	switch kind {
	case VXLAN:
		t[0] = vxlanFlagVNI
	case Geneve:
		binary.BigEndian.PutUint16(t[2:], header.EtherTypeTEB)
	}
	return e, nil
}

// Header returns the outer headers as Encapsulate starts from them.
func (e *Encap) Header() port.TunnelHeader {
	return port.TunnelHeader{Bytes: e.hdr, IPSum: e.ipSum}
}

// The fast path writes the same headers as Encapsulate.
var _ [port.TunnelHeaderLen - Overhead]struct{}
var _ [Overhead - port.TunnelHeaderLen]struct{}

// Encapsulate writes inner, wrapped for vni, into dst and returns the
// outer frame's length; flowHash (the inner flow's, so that one flow keeps
// one path) picks the UDP source port. It returns 0 if dst has no room,
// or inner is too long for an IPv4 datagram.
func (e *Encap) Encapsulate(dst, inner []byte, vni uint32, flowHash uint32) int {
	n := Overhead + len(inner)
	if n > len(dst) || n-header.EthernetLen > 0xffff {
		return 0
	}
	copy(dst[:Overhead], e.hdr[:])
	copy(dst[Overhead:], inner)
	ip := header.IPv4(dst[header.EthernetLen:])
	ipLen := uint16(n - header.EthernetLen)
	id := uint16(e.ipID.Add(1))
	ip.SetTotalLen(ipLen)
	ip.SetID(id)
	ip.SetChecksum(^header.Fold(e.ipSum + uint32(ipLen) + uint32(id)))
	udp := header.UDP(ip[header.IPv4MinLen:])
	udp.SetSrcPort(srcPortMin + uint16(flowHash%(srcPortMax-srcPortMin+1)))
	udp.SetLength(ipLen - header.IPv4MinLen)
	vni <<= 8
	binary.BigEndian.PutUint32(udp[header.UDPLen+4:], vni)
	return n
}

// Outer is what a decapsulated frame's outer headers said.
type Outer struct {
	Src, Dst         [4]byte // IPv4 addresses
	SrcPort, DstPort uint16
	VNI              uint32
}

// Result says whether a frame was decapsulated, and if not, why: each
// reason but NotTunnel is counted and the frame dropped, never forwarded.
type Result uint8

const (
	Decapsulated Result = iota
	NotTunnel           // not IPv4/UDP to a tunnel's port: the host's own traffic
	BadOuter            // outer IPv4 or UDP header malformed or lying about lengths
	Fragment            // an outer IPv4 fragment (not reassembled)
	BadHeader           // VXLAN without the I flag, Geneve of another version or protocol
	CriticalOpt         // Geneve with critical options, which xswitch does not understand
	ShortInner          // the inner frame is shorter than an Ethernet header
	numResults
)

var resultNames = [...]string{
	Decapsulated: "decapsulated",
	NotTunnel:    "not a tunnel frame",
	BadOuter:     "malformed outer header",
	Fragment:     "outer fragment",
	BadHeader:    "bad tunnel header",
	CriticalOpt:  "critical option",
	ShortInner:   "short inner frame",
}

func (r Result) String() string {
	if int(r) < len(resultNames) {
		return resultNames[r]
	}
	return fmt.Sprintf("result(%d)", uint8(r))
}

// Listener is a (local address, UDP port) that tunnels of one kind
// receive on; the zero address stands for any.
type Listener struct {
	Addr [4]byte
	Port uint16
	Kind Kind
}

// Listeners are what an underlay receives tunnels on.
type Listeners []Listener

// kind is the encapsulation of datagrams to dst and port, 0 for none.
func (ls Listeners) kind(dst [4]byte, port uint16) Kind {
	for _, l := range ls {
		if l.Port == port && (l.Addr == dst || l.Addr == [4]byte{}) {
			return l.Kind
		}
	}
	return 0
}

// Decapsulate takes frame apart if it is kind on UDP port dstPort, to
// any address: see DecapsulateFor.
func Decapsulate(kind Kind, dstPort uint16, frame []byte) ([]byte, Outer, Result) {
	return DecapsulateFor(Listeners{{Port: dstPort, Kind: kind}}, frame)
}

// DecapsulateFor takes frame apart if it is a datagram to one of ls: the
// inner frame (a slice of frame) and what the outer headers said, or why
// not. An outer VLAN tag is skipped. The outer IPv4 checksum is not
// checked (the kernel's vxlan device leaves that to the NIC, and a
// corrupted header that still parses is caught by the remote check the
// caller makes); the UDP checksum is not either, as RFC 7348 permits.
func DecapsulateFor(ls Listeners, frame []byte) ([]byte, Outer, Result) {
	var o Outer
	if len(frame) < header.EthernetLen {
		return nil, o, NotTunnel
	}
	off := header.EthernetTypeOffset
	et := header.Ethernet(frame).Type()
	if header.IsTPID(et) {
		if len(frame) < header.EthernetLen+header.VLANTagLen {
			return nil, o, NotTunnel
		}
		off += header.VLANTagLen
		et = binary.BigEndian.Uint16(frame[off:])
	}
	off += 2
	if et != header.EtherTypeIPv4 || len(frame) < off+header.IPv4MinLen {
		return nil, o, NotTunnel
	}
	ip := header.IPv4(frame[off:])
	ihl := ip.HeaderLen()
	if ip.Version() != 4 || ip.Protocol() != header.ProtoUDP {
		return nil, o, NotTunnel
	}
	if ihl < header.IPv4MinLen || len(ip) < ihl+header.UDPLen {
		return nil, o, BadOuter
	}
	udp := header.UDP(ip[ihl:])
	o.Dst = ip.Dst()
	o.DstPort = udp.DstPort()
	kind := ls.kind(o.Dst, o.DstPort)
	if kind == 0 {
		return nil, o, NotTunnel
	}
	totalLen := int(ip.TotalLen())
	if totalLen < ihl+header.UDPLen || totalLen > len(ip) {
		return nil, o, BadOuter
	}
	if ip.IsFragment() {
		return nil, o, Fragment
	}
	udpLen := int(udp.Length())
	if udpLen < header.UDPLen || udpLen > totalLen-ihl {
		return nil, o, BadOuter
	}
	payload := udp[header.UDPLen:udpLen]
	o.Src = ip.Src()
	o.SrcPort = udp.SrcPort()
	var inner []byte
	switch kind {
	case VXLAN:
		if len(payload) < vxlanLen || payload[0]&vxlanFlagVNI == 0 {
			return nil, o, BadHeader
		}
		o.VNI = binary.BigEndian.Uint32(payload[4:]) >> 8
		inner = payload[vxlanLen:]
	case Geneve:
		if len(payload) < geneveLen {
			return nil, o, BadHeader
		}
		optLen := int(payload[0]&0x3f) * 4
		if payload[0]>>6 != 0 || binary.BigEndian.Uint16(payload[2:]) != header.EtherTypeTEB || len(payload) < geneveLen+optLen {
			return nil, o, BadHeader
		}
		if payload[1]&0x40 != 0 { // C: a critical option is present
			return nil, o, CriticalOpt
		}
		o.VNI = binary.BigEndian.Uint32(payload[4:]) >> 8
		inner = payload[geneveLen+optLen:]
	default:
		return nil, o, NotTunnel
	}
	if len(inner) < header.EthernetLen {
		return nil, o, ShortInner
	}
	return inner, o, Decapsulated
}
