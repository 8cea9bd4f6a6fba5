package flow

import (
	"encoding/binary"
	"errors"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/xswitch/xswitch/header"
)

// Extractor turns frames into Keys. It owns one gopacket DecodingLayerParser
// over preallocated layers and is used by one forwarding goroutine (not safe
// for concurrent use).
//
// The layers are thin wrappers around gopacket's. gopacket's NextLayerType
// follows its whole protocol graph (IP in IP, transparent Ethernet bridging,
// VXLAN and DNS guessed from ports, whatever a program registers), and a
// second IPv4 or Ethernet header would overwrite the one the key is made
// of. The wrappers stop where OVS's flow extraction stops; they also carry
// what gopacket does not decode the way OVS does: first IPv4 fragments
// continue into their L4 header, LLC/SNAP frames get their SNAP type, and
// the IPv6 extension headers that OVS looks through (routing, destination
// options, fragment, AH) have decoders.
//
// Two choices differ from OVS: a later IPv6 fragment keeps its upper-layer
// protocol in NwProto, as a later IPv4 fragment does (OVS puts 44, the
// fragment header, there); and an ARP opcode above 255 keys on its low 8
// bits (OVS leaves arp_op zero).
//
// An IPv6 neighbour solicitation or advertisement (ICMPv6 type 135 or
// 136, code 0) gives its target address and its link-layer address
// options as OVS's flow_extract reads them: the target if the message
// holds it, then options up to the first of length 0 or longer than what
// is left; a source (target) link-layer address option of one unit is
// nd_sll (nd_tll), and a second one with an address already read makes
// the message's target and addresses zero.
//
// Frames decode without allocating, except IPv6 packets with hop-by-hop
// options (MLD reports): gopacket decodes each option into a new object.
//
// Extract also records where it found the headers (Layout): the actions
// that rewrite a frame work from there, so a frame is parsed once.
type Extractor struct {
	parser  *gopacket.DecodingLayerParser
	layers  gopacket.DecodingLayerContainer
	decoded []gopacket.LayerType
	layout  Layout
	// underIPv4 and underIPv6 read the packet under an MPLS label stack,
	// over the same layers, into decodedUnder.
	underIPv4, underIPv6 *gopacket.DecodingLayerParser
	decodedUnder         []gopacket.LayerType

	eth      ethernetLayer
	dot1q    dot1qLayer
	mpls     mplsLayer
	arp      arpLayer
	ipv4     ipv4Layer
	ipv6     ipv6Layer
	routing  ipv6ExtHeader
	destOpts ipv6ExtHeader
	ah       ipv6ExtHeader
	fragment ipv6FragmentHeader
	tcp      tcpLayer
	udp      udpLayer
	sctp     sctpLayer
	icmpv4   icmpv4Layer
	icmpv6   icmpv6Layer
}

// NewExtractor returns an Extractor ready to use.
func NewExtractor() *Extractor {
	e := &Extractor{
		// Ethernet, two tags, IPv6, a few extension headers, L4: more only
		// for odd frames, for which growing once is fine.
		decoded:      make([]gopacket.LayerType, 0, 16),
		decodedUnder: make([]gopacket.LayerType, 0, 16),
	}
	// The extension headers name the next header in the IPv6 layer's
	// walk of the chain, as each one decodes: the parser decodes a second
	// header of a kind into the same layer, so that the fill that follows
	// sees only the last.
	walk := &e.ipv6.extHdrs
	e.routing = ipv6ExtHeader{layerType: layers.LayerTypeIPv6Routing, walk: walk}
	e.destOpts = ipv6ExtHeader{layerType: layers.LayerTypeIPv6Destination, walk: walk}
	e.ah = ipv6ExtHeader{layerType: layers.LayerTypeIPSecAH, walk: walk}
	e.fragment.walk = walk
	// Options take at least one byte of a header's 40 bytes of options:
	// with this capacity, option lists never grow, and never allocate.
	e.ipv4.Options = make([]layers.IPv4Option, 0, 40)

	var container gopacket.DecodingLayerContainer = gopacket.DecodingLayerSparse(nil)
	for _, l := range []gopacket.DecodingLayer{
		&e.eth, &e.dot1q, &e.mpls, &e.arp, &e.ipv4, &e.ipv6, &e.routing, &e.destOpts, &e.ah, &e.fragment,
		&e.tcp, &e.udp, &e.sctp, &e.icmpv4, &e.icmpv6,
	} {
		container = container.Put(l)
	}
	e.layers = container
	e.parser = gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet)
	e.parser.SetDecodingLayerContainer(container)
	// Without it, every frame that ends in a protocol the key ignores would
	// be an error, and building that error allocates.
	e.parser.IgnoreUnsupported = true
	e.underIPv4 = gopacket.NewDecodingLayerParser(layers.LayerTypeIPv4)
	e.underIPv6 = gopacket.NewDecodingLayerParser(layers.LayerTypeIPv6)
	for _, p := range []*gopacket.DecodingLayerParser{e.underIPv4, e.underIPv6} {
		p.SetDecodingLayerContainer(container)
		p.IgnoreUnsupported = true
	}
	return e
}

// Extract fills *k from frame, which arrived on OpenFlow port inPort, and
// reports whether the frame was well formed. A truncated or malformed frame
// yields a key with what could be read (fields of layers that did not
// decode stay zero) and false; it never panics.
func (e *Extractor) Extract(frame []byte, inPort uint16, k *Key) (ok bool) {
	*k = Key{Headers: Headers{InPort: inPort}}
	e.dot1q.depth = 0
	err := e.parser.DecodeLayers(frame, &e.decoded)
	e.layout = Layout{}
	for _, typ := range e.decoded {
		e.fill(typ, k)
		e.locate(typ, frame, &e.layout.Net)
	}
	ok = err == nil && !e.parser.Truncated && !e.endsBeforeHeader(e.decoded)
	e.layout.MPLS = k.IsMPLS()
	if ok && e.layout.MPLS {
		e.extractUnderMPLS(frame, k)
	}
	return ok
}

// extractUnderMPLS reads the packet under an MPLS frame's label stack,
// if the stack ends within the key's entries and the packet is IP by its
// version field, whole and well formed: what a pop of the stack would
// show (Headers.UnderMPLS). Any other packet is no error: the frame is
// MPLS, whose packet OVS does not read.
func (e *Extractor) extractUnderMPLS(frame []byte, k *Key) {
	packet := e.mpls.Payload
	if !e.mpls.bottom || len(packet) == 0 {
		return
	}
	parser, etherType := e.underIPv4, uint16(EtherTypeIPv4)
	switch packet[0] >> 4 {
	case 4:
	case 6:
		parser, etherType = e.underIPv6, EtherTypeIPv6
	default:
		return
	}
	err := parser.DecodeLayers(packet, &e.decodedUnder)
	if err != nil || parser.Truncated || e.endsBeforeHeader(e.decodedUnder) {
		return
	}
	under := *k
	for _, typ := range e.decodedUnder {
		e.fill(typ, &under)
		e.locate(typ, frame, &e.layout.Under)
	}
	under.NDTarget = k.NDTarget // the stack's, not a target's (Headers.MPLS)
	if e.layout.Under.etherType() != etherType {
		// Cut short, as far as the key goes.
		e.layout.Under = Net{}
		return
	}
	*k = under
	k.UnderMPLS = uint32(etherType)
}

// Layout is where the last frame's headers are, if the key was read from
// them.
func (e *Extractor) Layout() Layout { return e.layout }

// Layout is where a frame's headers are, for the actions that rewrite
// them. It names only headers the key was read from, whole: an IP header
// whose packet the frame holds, and a TCP, UDP, SCTP, ICMP or ICMPv6
// header whose fixed part that packet holds (an unfragmented packet or a
// first fragment); or an ARP header for IPv4 over Ethernet. A rewrite of
// a field the key does not have leaves the frame as it is, as in OVS,
// whose actions change only fields of the flow key.
type Layout struct {
	// Net is where the network and transport headers are; none in an
	// MPLS frame, whose packet is under its label stack.
	Net
	// Under is where the headers of the packet under an MPLS frame's
	// label stack are, as the key's UnderMPLS says: what Net becomes
	// when pop_mpls takes the last label off, naming that packet's
	// EtherType.
	Under Net
	// EtherType is where the field is that the key's DlType was read
	// from, in the Ethernet header or the last VLAN tag the key looks
	// through: push_mpls and pop_mpls write theirs there, and the label
	// stack starts after it. 0 for an 802.3 frame, which has none.
	// (Layout is copied for every frame: it is kept small.)
	EtherType uint16
	// MPLS says that a label stack starts after the EtherType.
	MPLS bool
}

// Net is where a frame's network and transport headers are.
type Net struct {
	L3, L4    int   // offsets from the frame's start
	IPVersion uint8 // 4 or 6; 0 when the frame has no such IP header
	// L4Proto is ProtoTCP, ProtoUDP, ProtoSCTP, ProtoICMP (over IPv4) or
	// ProtoICMPv6 (over IPv6); 0 when the frame has no such header.
	L4Proto uint8
	// ARP says that L3 is an ARP header for IPv4 over Ethernet.
	ARP bool
	// ND says that L4 is an IPv6 neighbour solicitation or advertisement
	// with its target whole; SLL and TLL are where, from L4, the
	// addresses of the link-layer address options the key read are (0:
	// none).
	ND       bool
	SLL, TLL uint16
}

// HasPorts reports whether the frame has a TCP, UDP or SCTP header.
func (l *Net) HasPorts() bool {
	return l.L4Proto == ProtoTCP || l.L4Proto == ProtoUDP || l.L4Proto == ProtoSCTP
}

// HasICMP reports whether the frame has an ICMP or ICMPv6 header.
func (l *Net) HasICMP() bool { return l.L4Proto == ProtoICMP || l.L4Proto == ProtoICMPv6 }

// Header returns where header h starts in the frame, if the frame has it.
func (l *Net) Header(h FrameHeader) (int, bool) {
	switch h {
	case InARP:
		return l.L3, l.ARP
	case InIPv6:
		return l.L3, l.IPVersion == 6
	case InSCTP:
		return l.L4, l.L4Proto == ProtoSCTP
	case InICMP:
		return l.L4, l.HasICMP()
	case InND:
		return l.L4, l.ND
	case InNDSLL:
		return l.L4 + int(l.SLL), l.SLL != 0
	case InNDTLL:
		return l.L4 + int(l.TLL), l.TLL != 0
	}
	return 0, false
}

// Shift moves the layout by n bytes, for a tag pushed (4) or popped (-4)
// in front of the headers.
func (l *Layout) Shift(n int) {
	l.Net.shift(n)
	l.Under.shift(n)
	if l.EtherType != 0 {
		l.EtherType = uint16(int(l.EtherType) + n)
	}
}

func (l *Net) shift(n int) {
	l.L3 += n
	l.L4 += n
}

// PushMPLS moves the layout for a label stack entry pushed after the
// EtherType: the frame's headers go under the stack, if they were not.
func (l *Layout) PushMPLS() {
	if !l.MPLS {
		l.MPLS, l.Under, l.Net = true, l.Net, Net{}
	}
	l.Under.shift(header.MPLSLen)
}

// PopMPLS moves the layout for the top label stack entry taken off, with
// etherType written in its place. bottom says it was the last: the packet
// under the stack is then the frame's, if etherType names it.
func (l *Layout) PopMPLS(etherType uint16, bottom bool) {
	l.Under.shift(-header.MPLSLen)
	switch {
	case !bottom && header.IsMPLS(etherType):
		return
	case bottom && etherType == l.Under.etherType():
		l.Net = l.Under
	default:
		l.Net = Net{}
	}
	l.MPLS, l.Under = false, Net{}
}

// etherType is the EtherType of the packet whose headers l places, if it
// places any.
func (l *Net) etherType() uint16 {
	switch {
	case l.IPVersion == 4:
		return EtherTypeIPv4
	case l.IPVersion == 6:
		return EtherTypeIPv6
	case l.ARP:
		return EtherTypeARP
	}
	return 0
}

// locate records in e.layout where the header of the layer of type typ
// starts. gopacket's layers slice the bytes they decode without limiting
// their capacity, so a header's capacity tells how far into the frame it
// starts.
func (e *Extractor) locate(typ gopacket.LayerType, frame []byte, l *Net) {
	switch typ {
	case layers.LayerTypeEthernet:
		if header.Ethernet(frame).Type() >= header.MinEtherType {
			e.layout.EtherType = header.EthernetTypeOffset
		}
	case layers.LayerTypeDot1Q:
		e.layout.EtherType = 0
		if uint16(e.dot1q.Type) >= header.MinEtherType {
			// The tag's EtherType follows its TCI.
			e.layout.EtherType = uint16(cap(frame) - cap(e.dot1q.Contents) + header.VLANTCIOffset)
		}
	case layers.LayerTypeIPv4:
		if !e.ipv4.feedback.truncated {
			l.IPVersion, l.L3 = 4, cap(frame)-cap(e.ipv4.Contents)
		}
	case layers.LayerTypeIPv6:
		if !e.ipv6.truncated {
			l.IPVersion, l.L3 = 6, cap(frame)-cap(e.ipv6.Contents)
		}
	case layers.LayerTypeTCP:
		if l.IPVersion != 0 {
			l.L4Proto, l.L4 = ProtoTCP, cap(frame)-cap(e.tcp.Contents)
		}
	case layers.LayerTypeUDP:
		if l.IPVersion != 0 {
			l.L4Proto, l.L4 = ProtoUDP, cap(frame)-cap(e.udp.Contents)
		}
	case layers.LayerTypeSCTP:
		if l.IPVersion != 0 {
			l.L4Proto, l.L4 = ProtoSCTP, cap(frame)-cap(e.sctp.Contents)
		}
	case layers.LayerTypeICMPv4:
		if l.IPVersion == 4 {
			l.L4Proto, l.L4 = ProtoICMP, cap(frame)-cap(e.icmpv4.Contents)
		}
	case layers.LayerTypeICMPv6:
		if l.IPVersion == 6 {
			l.L4Proto, l.L4 = ProtoICMPv6, cap(frame)-cap(e.icmpv6.Contents)
			nd := &e.icmpv6.nd
			l.ND, l.SLL, l.TLL = nd.target, uint16(nd.sll), uint16(nd.tll)
		}
	case layers.LayerTypeARP:
		if e.arp.ipv4OverEthernet() {
			l.ARP, l.L3 = true, cap(frame)-cap(e.arp.Contents)
		}
	}
}

// fill copies into k the fields of the layer of type typ, which decoded
// last among the layers of its type. The parser reuses one layer per type,
// so when a type repeats (stacked tags, destination options before and
// after a routing header), the layer holds its last occurrence; the fields
// that come from the outermost one are taken with that in mind.
func (e *Extractor) fill(typ gopacket.LayerType, k *Key) {
	switch typ {
	case layers.LayerTypeEthernet:
		copy(k.DlDst[:], e.eth.DstMAC)
		copy(k.DlSrc[:], e.eth.SrcMAC)
		k.DlType = e.eth.dlType
	case layers.LayerTypeMPLS:
		for i, lse := range e.mpls.stack {
			k.setMPLSEntry(i, lse)
		}
	case layers.LayerTypeDot1Q:
		if k.VLANTCI == 0 {
			// The outermost tag starts the Ethernet payload.
			k.VLANTCI = binary.BigEndian.Uint16(e.eth.Payload) | VLANCFI
		}
		k.DlType = e.dot1q.dlType
	case layers.LayerTypeARP:
		a := &e.arp
		if a.ipv4OverEthernet() {
			k.NwProto = uint8(a.Operation)
			copy(k.NwSrc[:], a.SourceProtAddress)
			copy(k.NwDst[:], a.DstProtAddress)
			copy(k.ArpSHA[:], a.SourceHwAddress)
			copy(k.ArpTHA[:], a.DstHwAddress)
		}
	case layers.LayerTypeIPv4:
		ip := &e.ipv4
		copy(k.NwSrc[:], ip.SrcIP)
		copy(k.NwDst[:], ip.DstIP)
		k.NwProto = uint8(ip.Protocol)
		k.NwTOS = ip.TOS
		k.NwTTL = ip.TTL
		if ip.Flags&layers.IPv4MoreFragments != 0 || ip.FragOffset != 0 {
			k.NwFrag = FragAny
		}
		if ip.FragOffset != 0 {
			k.NwFrag |= FragLater
		}
	case layers.LayerTypeIPv6:
		ip := &e.ipv6
		copy(k.IPv6Src[:], ip.SrcIP)
		copy(k.IPv6Dst[:], ip.DstIP)
		k.NwProto = uint8(ip.nextHeader())
		k.NwTOS = ip.TrafficClass
		k.NwTTL = ip.HopLimit
		k.IPv6Label = ip.FlowLabel
		k.IPv6ExtHdr = ip.extHdrs.Bits()
	case layers.LayerTypeIPv6Routing:
		k.NwProto = uint8(e.routing.nextHeader)
	case layers.LayerTypeIPv6Destination:
		k.NwProto = uint8(e.destOpts.nextHeader)
	case layers.LayerTypeIPSecAH:
		k.NwProto = uint8(e.ah.nextHeader)
	case layers.LayerTypeIPv6Fragment:
		f := &e.fragment
		k.NwProto = uint8(f.nextHeader)
		if f.more || f.offset != 0 {
			k.NwFrag = FragAny
		}
		if f.offset != 0 {
			k.NwFrag |= FragLater
		}
	case layers.LayerTypeTCP:
		k.TpSrc = uint16(e.tcp.SrcPort)
		k.TpDst = uint16(e.tcp.DstPort)
	case layers.LayerTypeUDP:
		k.TpSrc = uint16(e.udp.SrcPort)
		k.TpDst = uint16(e.udp.DstPort)
	case layers.LayerTypeSCTP:
		k.TpSrc = uint16(e.sctp.SrcPort)
		k.TpDst = uint16(e.sctp.DstPort)
	case layers.LayerTypeICMPv4:
		k.TpSrc = uint16(e.icmpv4.TypeCode.Type())
		k.TpDst = uint16(e.icmpv4.TypeCode.Code())
	case layers.LayerTypeICMPv6:
		k.TpSrc = uint16(e.icmpv6.TypeCode.Type())
		k.TpDst = uint16(e.icmpv6.TypeCode.Code())
		nd := &e.icmpv6.nd
		k.NDTarget, k.ArpSHA, k.ArpTHA = nd.targetAddr, nd.sllAddr, nd.tllAddr
	}
}

// endsBeforeHeader reports whether the frame ends where a header the key
// reads should start: gopacket stops quietly at an empty payload, whatever
// the last layer announced.
func (e *Extractor) endsBeforeHeader(decoded []gopacket.LayerType) bool {
	if len(decoded) == 0 {
		return false
	}
	last, _ := e.layers.Decoder(decoded[len(decoded)-1])
	_, known := e.layers.Decoder(last.NextLayerType())
	return known && len(last.LayerPayload()) == 0
}

// stopDecoding is the next layer type of a layer after which the key reads
// nothing: no layer of the Extractor decodes it.
var stopDecoding = gopacket.LayerTypePayload

// OVS's dl_type for an 802.3 frame that is not Ethernet II or SNAP
// (FLOW_DL_TYPE_NONE).
const dlTypeNone = 0x05ff

// dlType returns OVS's dl_type for the EtherType or 802.3 length field typ
// followed by payload, and what follows the LLC/SNAP header of a SNAP frame
// (payload itself otherwise).
func dlType(typ uint16, payload []byte) (uint16, []byte) {
	if typ >= header.MinEtherType {
		return typ, payload
	}
	// 802.2 LLC with DSAP = SSAP = SNAP, unnumbered information, and the
	// SNAP organization code 0 that marks an EtherType.
	if len(payload) < 8 || payload[0] != 0xaa || payload[1] != 0xaa || payload[2] != 0x03 ||
		payload[3] != 0 || payload[4] != 0 || payload[5] != 0 {
		return dlTypeNone, payload
	}
	if snapType := binary.BigEndian.Uint16(payload[6:8]); snapType >= header.MinEtherType {
		return snapType, payload[8:]
	}
	return dlTypeNone, payload
}

func etherTypeNextLayer(dlType uint16) gopacket.LayerType {
	switch dlType {
	case header.EtherTypeVLAN, header.EtherTypeQinQ:
		return layers.LayerTypeDot1Q
	case EtherTypeARP:
		return layers.LayerTypeARP
	case EtherTypeIPv4:
		return layers.LayerTypeIPv4
	case EtherTypeIPv6:
		return layers.LayerTypeIPv6
	case EtherTypeMPLS, EtherTypeMPLSMulticast:
		return layers.LayerTypeMPLS
	}
	return stopDecoding
}

type ethernetLayer struct {
	layers.Ethernet
	dlType uint16
}

func (eth *ethernetLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := eth.Ethernet.DecodeFromBytes(data, df); err != nil {
		return err
	}
	// gopacket replaces an 802.3 length with EthernetTypeLLC: read the field.
	eth.dlType, eth.Payload = dlType(header.Ethernet(data).Type(), eth.Payload)
	return nil
}

func (eth *ethernetLayer) NextLayerType() gopacket.LayerType { return etherTypeNextLayer(eth.dlType) }

// MaxVLANTags is how many VLAN tags the key looks through: as many as
// OVS's flow key holds (FLOW_MAX_VLAN_HEADERS). Behind a third tag the
// key's dl_type is that tag's TPID, and the frame has no network header.
const MaxVLANTags = 2

type dot1qLayer struct {
	layers.Dot1Q
	dlType uint16
	depth  int // tags decoded in this frame so far
}

func (d *dot1qLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := d.Dot1Q.DecodeFromBytes(data, df); err != nil {
		return err
	}
	d.depth++
	d.dlType, d.Payload = dlType(uint16(d.Type), d.Payload)
	return nil
}

func (d *dot1qLayer) NextLayerType() gopacket.LayerType {
	next := etherTypeNextLayer(d.dlType)
	if next == layers.LayerTypeDot1Q && d.depth >= MaxVLANTags {
		return stopDecoding
	}
	return next
}

// mplsLayer reads an MPLS label stack as OVS's parse_mpls does: entries
// to the bottom of the stack, or to the frame's end, of which the key
// keeps the first MaxMPLSLabels. What follows is read apart
// (Extractor.extractUnderMPLS).
type mplsLayer struct {
	layers.BaseLayer
	stack [MaxMPLSLabels]uint32
	// bottom says that the stack ends within the entries kept.
	bottom bool
}

// DecodeFromBytes reads the stack. A frame that ends before the bottom of
// its stack is cut short, as a frame that ends inside any header the key
// reads is, where OVS reads what there is.
func (m *mplsLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	m.stack, m.bottom = [MaxMPLSLabels]uint32{}, false
	n, ended := 0, false
	for !ended && len(data)-n >= header.MPLSLen {
		lse := binary.BigEndian.Uint32(data[n:])
		ended = lse&header.MPLSBOSMask != 0
		if i := n / header.MPLSLen; i < len(m.stack) {
			m.stack[i], m.bottom = lse, ended
		}
		n += header.MPLSLen
	}
	if !ended {
		df.SetTruncated()
	}
	m.BaseLayer = layers.BaseLayer{Contents: data[:n], Payload: data[n:]}
	return nil
}

func (m *mplsLayer) CanDecode() gopacket.LayerClass    { return layers.LayerTypeMPLS }
func (m *mplsLayer) NextLayerType() gopacket.LayerType { return stopDecoding }

var (
	errIPv4Version      = errors.New("IPv4 header with another IP version")
	errIPv4TotalLength  = errors.New("IPv4 total length 0")
	errIPv6Version      = errors.New("IPv6 header with another IP version")
	errIPv6ExtTruncated = errors.New("truncated IPv6 extension header")
	errTCPTruncated     = errors.New("truncated TCP header")
	errSCTPTruncated    = errors.New("truncated SCTP header")
	errTCPDataOffset    = errors.New("TCP data offset outside the header or the packet")

	errIPv6HopByHopPastPayload = errors.New("IPv6 hop-by-hop header longer than the payload length")
)

// truncationFeedback keeps what a gopacket layer reports, for a wrapper that
// knows better.
type truncationFeedback struct{ truncated bool }

func (f *truncationFeedback) SetTruncated() { f.truncated = true }

type ipv4Layer struct {
	layers.IPv4
	feedback truncationFeedback
}

func (ip *ipv4Layer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	ip.feedback = truncationFeedback{}
	err := ip.IPv4.DecodeFromBytes(data, &ip.feedback)
	if ip.feedback.truncated {
		df.SetTruncated()
	}
	if err != nil {
		return err
	}
	if ip.Version != 4 {
		return errIPv4Version
	}
	if header.IPv4(data).TotalLen() == 0 {
		// gopacket takes a total length of 0 for the frame's (TCP
		// segmentation offload's); to OVS it is less than the header, as
		// to the rewrites that find the packet's end by it.
		return errIPv4TotalLength
	}
	return nil
}

// NextLayerType goes on into the L4 header of a first fragment, where
// gopacket stops at every fragment: OVS keys first fragments on their ports.
func (ip *ipv4Layer) NextLayerType() gopacket.LayerType {
	if ip.FragOffset != 0 {
		return stopDecoding
	}
	switch ip.Protocol {
	case layers.IPProtocolTCP:
		return layers.LayerTypeTCP
	case layers.IPProtocolUDP:
		return layers.LayerTypeUDP
	case layers.IPProtocolSCTP:
		return layers.LayerTypeSCTP
	case layers.IPProtocolICMPv4:
		return layers.LayerTypeICMPv4
	}
	return stopDecoding
}

type ipv6Layer struct {
	layers.IPv6
	feedback truncationFeedback
	// truncated says the frame ends before the packet does.
	truncated bool
	// extHdrs are the headers the chain named, as far as it decoded.
	extHdrs ExtHdrWalk
}

func (ip *ipv6Layer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	ip.feedback = truncationFeedback{}
	err := ip.IPv6.DecodeFromBytes(data, &ip.feedback)
	if err == nil && ip.Version != 6 {
		err = errIPv6Version
	}
	ip.extHdrs = ExtHdrWalk{}
	if err == nil {
		ip.extHdrs.Next(uint8(ip.NextHeader))
		if ip.HopByHop != nil {
			ip.extHdrs.Next(uint8(ip.HopByHop.NextHeader))
		}
	}
	if err != nil || ip.HopByHop == nil || ip.Length == 0 {
		ip.truncated = ip.feedback.truncated
		if ip.truncated {
			df.SetTruncated()
		}
		return err
	}
	// gopacket 1.1.19 counts the payload length from after the hop-by-hop
	// header, so that it calls every such packet truncated, and lets its
	// payload run hop-by-hop-length bytes into the Ethernet padding.
	end := header.IPv6Len + int(ip.Length)
	ip.truncated = end > len(data)
	if ip.truncated {
		df.SetTruncated()
		end = len(data)
	}
	start := header.IPv6Len + ip.HopByHop.ActualLength
	if start > end {
		return errIPv6HopByHopPastPayload
	}
	ip.Payload = data[start:end]
	return nil
}

// nextHeader is the header after the fixed header and the hop-by-hop
// options, which gopacket decodes as part of the IPv6 layer.
func (ip *ipv6Layer) nextHeader() layers.IPProtocol {
	if ip.HopByHop != nil {
		return ip.HopByHop.NextHeader
	}
	return ip.NextHeader
}

func (ip *ipv6Layer) NextLayerType() gopacket.LayerType { return ipv6NextLayer(ip.nextHeader()) }

// ipv6NextLayer looks through the extension headers OVS skips to find the
// upper-layer protocol.
func ipv6NextLayer(next layers.IPProtocol) gopacket.LayerType {
	switch next {
	case layers.IPProtocolTCP:
		return layers.LayerTypeTCP
	case layers.IPProtocolUDP:
		return layers.LayerTypeUDP
	case layers.IPProtocolSCTP:
		return layers.LayerTypeSCTP
	case layers.IPProtocolICMPv6:
		return layers.LayerTypeICMPv6
	case layers.IPProtocolIPv6Routing:
		return layers.LayerTypeIPv6Routing
	case layers.IPProtocolIPv6Destination:
		return layers.LayerTypeIPv6Destination
	case layers.IPProtocolAH:
		return layers.LayerTypeIPSecAH
	case layers.IPProtocolIPv6Fragment:
		return layers.LayerTypeIPv6Fragment
	}
	return stopDecoding
}

// ipv6ExtHeader is an IPv6 routing, destination options or AH header: only
// its length and next header matter to the key. (gopacket's own decoders
// for these allocate, or are not DecodingLayers.)
type ipv6ExtHeader struct {
	layers.BaseLayer
	layerType  gopacket.LayerType
	nextHeader layers.IPProtocol
	walk       *ExtHdrWalk
}

func (h *ipv6ExtHeader) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < header.IPv6ExtHeaderMinLen {
		df.SetTruncated()
		return errIPv6ExtTruncated
	}
	size := (int(data[1]) + 1) * 8
	if h.layerType == layers.LayerTypeIPSecAH {
		size = (int(data[1]) + 2) * 4 // RFC 4302 counts 4-byte words, less 2
	}
	if len(data) < size {
		df.SetTruncated()
		return errIPv6ExtTruncated
	}
	h.nextHeader = layers.IPProtocol(data[0])
	h.walk.Next(data[0])
	h.BaseLayer = layers.BaseLayer{Contents: data[:size], Payload: data[size:]}
	return nil
}

func (h *ipv6ExtHeader) CanDecode() gopacket.LayerClass    { return h.layerType }
func (h *ipv6ExtHeader) NextLayerType() gopacket.LayerType { return ipv6NextLayer(h.nextHeader) }

// ipv6FragmentHeader decodes the IPv6 fragment header (gopacket's is not a
// DecodingLayer).
type ipv6FragmentHeader struct {
	layers.BaseLayer
	nextHeader layers.IPProtocol
	offset     uint16 // in 8-byte units
	more       bool
	walk       *ExtHdrWalk
}

func (f *ipv6FragmentHeader) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < header.IPv6FragmentLen {
		df.SetTruncated()
		return errIPv6ExtTruncated
	}
	fh := header.IPv6Fragment(data)
	f.nextHeader = layers.IPProtocol(fh.NextHeader())
	f.walk.Next(fh.NextHeader())
	f.offset = fh.Offset()
	f.more = fh.MoreFragments()
	f.BaseLayer = layers.BaseLayer{Contents: data[:header.IPv6FragmentLen], Payload: data[header.IPv6FragmentLen:]}
	return nil
}

func (f *ipv6FragmentHeader) CanDecode() gopacket.LayerClass { return layers.LayerTypeIPv6Fragment }

// NextLayerType stops at a later fragment, which has no upper-layer header.
func (f *ipv6FragmentHeader) NextLayerType() gopacket.LayerType {
	if f.offset != 0 {
		return stopDecoding
	}
	return ipv6NextLayer(f.nextHeader)
}

type arpLayer struct{ layers.ARP }

// ipv4OverEthernet reports whether the ARP header is the one the key
// reads, as OVS does.
func (a *arpLayer) ipv4OverEthernet() bool {
	return a.AddrType == layers.LinkTypeEthernet && a.Protocol == layers.EthernetTypeIPv4 &&
		a.HwAddressSize == header.MACLen && a.ProtAddressSize == header.IPv4AddrLen
}

// The L4 layers end the decoding: the key has no field above them.
type (
	tcpLayer    struct{ layers.TCP }
	udpLayer    struct{ layers.UDP }
	sctpLayer   struct{ layers.SCTP }
	icmpv4Layer struct{ layers.ICMPv4 }
	icmpv6Layer struct {
		layers.ICMPv6
		nd ndMessage
	}
)

func (*tcpLayer) NextLayerType() gopacket.LayerType    { return stopDecoding }
func (*udpLayer) NextLayerType() gopacket.LayerType    { return stopDecoding }
func (*sctpLayer) NextLayerType() gopacket.LayerType   { return stopDecoding }
func (*icmpv4Layer) NextLayerType() gopacket.LayerType { return stopDecoding }
func (*icmpv6Layer) NextLayerType() gopacket.LayerType { return stopDecoding }

// ndMessage is what the key reads of a neighbour solicitation or
// advertisement, and where: target says the message holds its target,
// sll and tll are where the link-layer addresses read are, from the
// ICMPv6 header (0: none).
type ndMessage struct {
	target           bool
	sll, tll         int
	targetAddr       [16]byte
	sllAddr, tllAddr [6]byte
}

func (i *icmpv6Layer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	i.nd = ndMessage{}
	if err := i.ICMPv6.DecodeFromBytes(data, df); err != nil {
		return err
	}
	if i.TypeCode.Code() == 0 && (i.TypeCode.Type() == header.ICMPv6NeighborSolicitation || i.TypeCode.Type() == header.ICMPv6NeighborAdvert) {
		i.nd.read(data)
	}
	return nil
}

// read reads message, from its ICMPv6 header on, as OVS's parse_icmpv6
// does.
func (nd *ndMessage) read(message []byte) {
	if len(message) < header.NDLen {
		return
	}
	nd.target = true
	nd.targetAddr = [16]byte(message[header.NDTargetOffset:])
	for off := header.NDLen; len(message)-off >= header.NDOptUnit; {
		optLen := int(message[off+1]) * header.NDOptUnit
		if optLen == 0 || optLen > len(message)-off {
			return
		}
		if optLen == header.NDOptUnit {
			addr := [6]byte(message[off+header.NDOptLinkAddrOffset:])
			switch message[off] {
			case header.NDOptSourceLinkAddr:
				if nd.sllAddr != [6]byte{} {
					*nd = ndMessage{target: true}
					return
				}
				nd.sllAddr, nd.sll = addr, off+header.NDOptLinkAddrOffset
			case header.NDOptTargetLinkAddr:
				if nd.tllAddr != [6]byte{} {
					*nd = ndMessage{target: true}
					return
				}
				nd.tllAddr, nd.tll = addr, off+header.NDOptLinkAddrOffset
			}
		}
		off += optLen
	}
}

// DecodeFromBytes reads the ports and checks the header's length, and
// leaves the options alone: the key has none of them, and OVS forwards a
// segment whatever its options say, where gopacket's decoder calls one
// whose options it cannot walk malformed.
func (t *tcpLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < header.TCPMinLen {
		df.SetTruncated()
		return errTCPTruncated
	}
	tcp := header.TCP(data)
	headerLen := tcp.HeaderLen()
	if headerLen < header.TCPMinLen {
		return errTCPDataOffset
	}
	if headerLen > len(data) {
		df.SetTruncated()
		return errTCPDataOffset
	}
	t.SrcPort = layers.TCPPort(tcp.SrcPort())
	t.DstPort = layers.TCPPort(tcp.DstPort())
	t.BaseLayer = layers.BaseLayer{Contents: data[:headerLen], Payload: data[headerLen:]}
	return nil
}

// DecodeFromBytes reads the common header: what follows is chunks, which
// the key has none of.
func (s *sctpLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < header.SCTPLen {
		df.SetTruncated()
		return errSCTPTruncated
	}
	return s.SCTP.DecodeFromBytes(data, df)
}

// DecodeFromBytes reads the header and no further: a UDP length beyond the
// packet is no error to the key, as in OVS. A first fragment has just
// that: the length of the whole datagram, whose rest is in later ones.
func (u *udpLayer) DecodeFromBytes(data []byte, _ gopacket.DecodeFeedback) error {
	return u.UDP.DecodeFromBytes(data, gopacket.NilDecodeFeedback)
}
