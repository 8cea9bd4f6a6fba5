package flow

import (
	"fmt"
	"math"
	"math/bits"
	"net/netip"
	"strconv"
	"strings"
)

// Each match field parses into a partial Match that holds only its own
// bits. Fields that share bits (dl_vlan and vlan_tci, nw_src and arp_spa,
// tcp and nw_proto) merge when they agree on them and conflict otherwise,
// so the parser needs no list of which fields overlap. Prerequisites are
// checked once every field is in, so their order does not matter.

// fieldParser parses the value of the field called name.
type fieldParser func(name, value string, ports PortNames) (Match, error)

type matchField struct {
	parse       fieldParser
	isShorthand bool          // "tcp": a name without a value
	needs       *prerequisite // nil: none
}

// prerequisite is what the rest of a match must say for a field or an
// action to make sense, as OVS requires.
type prerequisite struct {
	holds func(m *Match) bool
	what  string // "ip or ipv6 (dl_type=0x0800 or 0x86dd)"
}

func hasDlType(m *Match, dlType uint16) bool {
	return m.Mask.DlType == math.MaxUint16 && m.Key.DlType == dlType
}

func hasNwProto(m *Match, proto uint8) bool {
	return m.Mask.NwProto == math.MaxUint8 && m.Key.NwProto == proto
}

func isIPMatch(m *Match) bool {
	return hasDlType(m, EtherTypeIPv4) || hasDlType(m, EtherTypeIPv6)
}

func isTCPMatch(m *Match) bool { return isIPMatch(m) && hasNwProto(m, ProtoTCP) }
func isUDPMatch(m *Match) bool { return isIPMatch(m) && hasNwProto(m, ProtoUDP) }

func isICMPMatch(m *Match) bool {
	return hasDlType(m, EtherTypeIPv4) && hasNwProto(m, ProtoICMP) ||
		hasDlType(m, EtherTypeIPv6) && hasNwProto(m, ProtoICMPv6)
}

var (
	needsIPv4OrARP = &prerequisite{
		holds: func(m *Match) bool { return hasDlType(m, EtherTypeIPv4) || hasDlType(m, EtherTypeARP) },
		what:  "ip or arp (dl_type=0x0800 or 0x0806)",
	}
	needsIPOrARP = &prerequisite{
		holds: func(m *Match) bool { return isIPMatch(m) || hasDlType(m, EtherTypeARP) },
		what:  "ip, ipv6 or arp (dl_type=0x0800, 0x86dd or 0x0806)",
	}
	needsIP       = &prerequisite{holds: isIPMatch, what: "ip or ipv6 (dl_type=0x0800 or 0x86dd)"}
	needsARP      = &prerequisite{holds: func(m *Match) bool { return hasDlType(m, EtherTypeARP) }, what: "arp (dl_type=0x0806)"}
	needsIPv6     = &prerequisite{holds: func(m *Match) bool { return hasDlType(m, EtherTypeIPv6) }, what: "ipv6 (dl_type=0x86dd)"}
	needsTCPOrUDP = &prerequisite{
		holds: func(m *Match) bool { return isTCPMatch(m) || isUDPMatch(m) },
		what:  "tcp or udp (nw_proto=6 or 17)",
	}
	needsTCP  = &prerequisite{holds: isTCPMatch, what: "tcp (nw_proto=6)"}
	needsUDP  = &prerequisite{holds: isUDPMatch, what: "udp (nw_proto=17)"}
	needsICMP = &prerequisite{holds: isICMPMatch, what: "icmp or icmp6 (nw_proto=1 with ip, 58 with ipv6)"}
)

// matchFields are the match fields by name, with OVS's newer aliases
// (eth_src, ip_dst, tcp_dst, …) next to the names ovs-ofctl prints.
var matchFields = map[string]matchField{
	"in_port": {parse: parseInPort},

	"dl_src":   {parse: macField(func(k *Key) *[6]byte { return &k.DlSrc })},
	"eth_src":  {parse: macField(func(k *Key) *[6]byte { return &k.DlSrc })},
	"dl_dst":   {parse: macField(func(k *Key) *[6]byte { return &k.DlDst })},
	"eth_dst":  {parse: macField(func(k *Key) *[6]byte { return &k.DlDst })},
	"dl_type":  {parse: uintField(func(k *Key) *uint16 { return &k.DlType }, math.MaxUint16, false)},
	"eth_type": {parse: uintField(func(k *Key) *uint16 { return &k.DlType }, math.MaxUint16, false)},

	"dl_vlan":     {parse: parseDlVLAN},
	"dl_vlan_pcp": {parse: parseDlVLANPCP},
	"vlan_tci":    {parse: uintField(func(k *Key) *uint16 { return &k.VLANTCI }, math.MaxUint16, true)},

	"nw_src":  {parse: ipv4Field(func(k *Key) *[4]byte { return &k.NwSrc }), needs: needsIPv4OrARP},
	"ip_src":  {parse: ipv4Field(func(k *Key) *[4]byte { return &k.NwSrc }), needs: needsIPv4OrARP},
	"arp_spa": {parse: ipv4Field(func(k *Key) *[4]byte { return &k.NwSrc }), needs: needsARP},
	"nw_dst":  {parse: ipv4Field(func(k *Key) *[4]byte { return &k.NwDst }), needs: needsIPv4OrARP},
	"ip_dst":  {parse: ipv4Field(func(k *Key) *[4]byte { return &k.NwDst }), needs: needsIPv4OrARP},
	"arp_tpa": {parse: ipv4Field(func(k *Key) *[4]byte { return &k.NwDst }), needs: needsARP},

	"ipv6_src": {parse: ipv6Field(func(k *Key) *[16]byte { return &k.IPv6Src }), needs: needsIPv6},
	"ipv6_dst": {parse: ipv6Field(func(k *Key) *[16]byte { return &k.IPv6Dst }), needs: needsIPv6},

	"nw_proto": {parse: uintField(func(k *Key) *uint8 { return &k.NwProto }, math.MaxUint8, false), needs: needsIPOrARP},
	"ip_proto": {parse: uintField(func(k *Key) *uint8 { return &k.NwProto }, math.MaxUint8, false), needs: needsIP},
	"arp_op":   {parse: uintField(func(k *Key) *uint8 { return &k.NwProto }, math.MaxUint8, false), needs: needsARP},
	"nw_tos":   {parse: parseNwTOS, needs: needsIP},
	"ip_dscp":  {parse: parseIPDSCP, needs: needsIP},
	"nw_ecn":   {parse: parseNwECN, needs: needsIP},
	"ip_ecn":   {parse: parseNwECN, needs: needsIP},
	"nw_ttl":   {parse: uintField(func(k *Key) *uint8 { return &k.NwTTL }, math.MaxUint8, false), needs: needsIP},
	"ip_frag":  {parse: parseIPFrag, needs: needsIP},

	"tp_src":      {parse: uintField(func(k *Key) *uint16 { return &k.TpSrc }, math.MaxUint16, true), needs: needsTCPOrUDP},
	"tp_dst":      {parse: uintField(func(k *Key) *uint16 { return &k.TpDst }, math.MaxUint16, true), needs: needsTCPOrUDP},
	"tcp_src":     {parse: uintField(func(k *Key) *uint16 { return &k.TpSrc }, math.MaxUint16, true), needs: needsTCP},
	"tcp_dst":     {parse: uintField(func(k *Key) *uint16 { return &k.TpDst }, math.MaxUint16, true), needs: needsTCP},
	"udp_src":     {parse: uintField(func(k *Key) *uint16 { return &k.TpSrc }, math.MaxUint16, true), needs: needsUDP},
	"udp_dst":     {parse: uintField(func(k *Key) *uint16 { return &k.TpDst }, math.MaxUint16, true), needs: needsUDP},
	"icmp_type":   {parse: uintField(func(k *Key) *uint16 { return &k.TpSrc }, math.MaxUint8, false), needs: needsICMP},
	"icmp_code":   {parse: uintField(func(k *Key) *uint16 { return &k.TpDst }, math.MaxUint8, false), needs: needsICMP},
	"icmpv6_type": {parse: uintField(func(k *Key) *uint16 { return &k.TpSrc }, math.MaxUint8, false), needs: needsICMP},
	"icmpv6_code": {parse: uintField(func(k *Key) *uint16 { return &k.TpDst }, math.MaxUint8, false), needs: needsICMP},

	"ip":    protocolShorthand(EtherTypeIPv4, 0, false),
	"icmp":  protocolShorthand(EtherTypeIPv4, ProtoICMP, true),
	"tcp":   protocolShorthand(EtherTypeIPv4, ProtoTCP, true),
	"udp":   protocolShorthand(EtherTypeIPv4, ProtoUDP, true),
	"ipv6":  protocolShorthand(EtherTypeIPv6, 0, false),
	"icmp6": protocolShorthand(EtherTypeIPv6, ProtoICMPv6, true),
	"tcp6":  protocolShorthand(EtherTypeIPv6, ProtoTCP, true),
	"udp6":  protocolShorthand(EtherTypeIPv6, ProtoUDP, true),
	"arp":   protocolShorthand(EtherTypeARP, 0, false),
}

// matchBuilder merges the partial matches of a flow's fields.
type matchBuilder struct {
	match  Match
	fields []parsedField
}

type parsedField struct {
	name  string
	part  Match
	needs *prerequisite
}

func (b *matchBuilder) add(name string, part Match, needs *prerequisite) error {
	for _, earlier := range b.fields {
		if part.Key.And(&earlier.part.Mask) != earlier.part.Key.And(&part.Mask) {
			return fmt.Errorf("field %q conflicts with %q", name, earlier.name)
		}
	}
	b.match.Key = orKeys(&b.match.Key, &part.Key)
	b.match.Mask = orKeys(&b.match.Mask, &part.Mask)
	b.fields = append(b.fields, parsedField{name: name, part: part, needs: needs})
	return nil
}

func (b *matchBuilder) checkPrerequisites() error {
	for _, f := range b.fields {
		if f.needs != nil && !f.needs.holds(&b.match) {
			return fmt.Errorf("field %q requires %s", f.name, f.needs.what)
		}
	}
	return nil
}

// orKeys returns the bits set in a or b (the counterpart of Key.And).
func orKeys(a, b *Key) Key {
	out := Key{
		InPort:  a.InPort | b.InPort,
		DlType:  a.DlType | b.DlType,
		VLANTCI: a.VLANTCI | b.VLANTCI,
		NwProto: a.NwProto | b.NwProto,
		NwTOS:   a.NwTOS | b.NwTOS,
		NwTTL:   a.NwTTL | b.NwTTL,
		NwFrag:  a.NwFrag | b.NwFrag,
		TpSrc:   a.TpSrc | b.TpSrc,
		TpDst:   a.TpDst | b.TpDst,
	}
	orBytes(out.DlDst[:], a.DlDst[:], b.DlDst[:])
	orBytes(out.DlSrc[:], a.DlSrc[:], b.DlSrc[:])
	orBytes(out.NwSrc[:], a.NwSrc[:], b.NwSrc[:])
	orBytes(out.NwDst[:], a.NwDst[:], b.NwDst[:])
	orBytes(out.IPv6Src[:], a.IPv6Src[:], b.IPv6Src[:])
	orBytes(out.IPv6Dst[:], a.IPv6Dst[:], b.IPv6Dst[:])
	return out
}

func orBytes(dst, a, b []byte) {
	for i := range dst {
		dst[i] = a[i] | b[i]
	}
}

func parseInPort(_, value string, ports PortNames) (Match, error) {
	n, err := portFromText(value, ports)
	var m Match
	m.Key.InPort, m.Mask.InPort = n, math.MaxUint16
	return m, err
}

func protocolShorthand(dlType uint16, proto uint8, hasProto bool) matchField {
	var m Match
	m.Key.DlType, m.Mask.DlType = dlType, math.MaxUint16
	if hasProto {
		m.Key.NwProto, m.Mask.NwProto = proto, math.MaxUint8
	}
	return matchField{
		parse:       func(string, string, PortNames) (Match, error) { return m, nil },
		isShorthand: true,
	}
}

// uintField parses a number of at most max into the Key field at, with a
// "/MASK" if masked allows one.
func uintField[T uint8 | uint16](at func(*Key) *T, max uint64, masked bool) fieldParser {
	return func(name, value string, _ PortNames) (Match, error) {
		valueText, maskText, hasMask := value, "", false
		if masked {
			valueText, maskText, hasMask = strings.Cut(value, "/")
		}
		v, err := numberFromText(name, valueText, max)
		if err != nil {
			return Match{}, err
		}
		mask := ^T(0)
		if hasMask {
			wide, err := numberFromText(name+" mask", maskText, uint64(^T(0)))
			if err != nil {
				return Match{}, err
			}
			mask = T(wide)
		}
		var m Match
		*at(&m.Key), *at(&m.Mask) = T(v)&mask, mask
		return m, nil
	}
}

func macField(at func(*Key) *[6]byte) fieldParser {
	return func(_, value string, _ PortNames) (Match, error) {
		addrText, maskText, hasMask := strings.Cut(value, "/")
		addr, ok := macFromText(addrText)
		if !ok {
			return Match{}, fmt.Errorf("invalid MAC address %q", addrText)
		}
		mask := [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		if hasMask {
			if mask, ok = macFromText(maskText); !ok {
				return Match{}, fmt.Errorf("invalid MAC mask %q", maskText)
			}
		}
		var m Match
		andBytes(at(&m.Key)[:], addr[:], mask[:])
		*at(&m.Mask) = mask
		return m, nil
	}
}

func ipv4Field(at func(*Key) *[4]byte) fieldParser {
	return func(_, value string, _ PortNames) (Match, error) {
		addr, mask, err := maskedIPFromText(value, 4)
		var m Match
		if err == nil {
			*at(&m.Key), *at(&m.Mask) = [4]byte(addr), [4]byte(mask)
		}
		return m, err
	}
}

func ipv6Field(at func(*Key) *[16]byte) fieldParser {
	return func(_, value string, _ PortNames) (Match, error) {
		addr, mask, err := maskedIPFromText(value, 16)
		var m Match
		if err == nil {
			*at(&m.Key), *at(&m.Mask) = [16]byte(addr), [16]byte(mask)
		}
		return m, err
	}
}

// maskedIPFromText reads "ADDR", "ADDR/PREFIXLEN" or "ADDR/MASK" of an
// address of size bytes (4 or 16) and returns the address already masked.
func maskedIPFromText(text string, size int) (addr, mask []byte, err error) {
	family := "IPv4"
	if size == 16 {
		family = "IPv6"
	}
	addrText, maskText, hasMask := strings.Cut(text, "/")
	addr, ok := ipFromText(addrText, size)
	if !ok {
		return nil, nil, fmt.Errorf("invalid %s address %q", family, addrText)
	}
	if mask, ok = ipMaskFromText(maskText, hasMask, size); !ok {
		return nil, nil, fmt.Errorf("invalid %s mask %q", family, maskText)
	}
	andBytes(addr, addr, mask)
	return addr, mask, nil
}

// ipMaskFromText reads a prefix length or a mask written as an address;
// without one (given false), the mask is full.
func ipMaskFromText(text string, given bool, size int) ([]byte, bool) {
	prefix := uint64(size * 8)
	if given {
		var err error
		if prefix, err = strconv.ParseUint(text, 10, 8); err != nil {
			return ipFromText(text, size)
		}
		if prefix > uint64(size*8) {
			return nil, false
		}
	}
	mask := make([]byte, size)
	for i := range mask {
		mask[i] = prefixMaskByte(int(prefix), i)
	}
	return mask, true
}

func ipFromText(text string, size int) ([]byte, bool) {
	a, err := netip.ParseAddr(text)
	switch {
	case err != nil || a.Zone() != "":
		return nil, false
	case size == 4 && a.Is4():
		b := a.As4()
		return b[:], true
	case size == 16 && a.Is6():
		b := a.As16()
		return b[:], true
	}
	return nil, false
}

// macFromText reads six colon-separated groups of one or two hex digits.
func macFromText(text string) ([6]byte, bool) {
	var mac [6]byte
	groups := strings.Split(text, ":")
	if len(groups) != len(mac) {
		return mac, false
	}
	for i, g := range groups {
		v, err := strconv.ParseUint(g, 16, 8)
		if err != nil || len(g) > 2 {
			return mac, false
		}
		mac[i] = byte(v)
	}
	return mac, true
}

// parseDlVLAN reads a VID (a tagged frame with that VID) or 0xffff (a frame
// without a tag).
func parseDlVLAN(name, value string, _ PortNames) (Match, error) {
	vid, err := numberFromText(name, value, math.MaxUint16)
	var m Match
	switch {
	case err != nil:
		return Match{}, err
	case vid == math.MaxUint16:
		m.Mask.VLANTCI = math.MaxUint16
	case vid <= vlanVIDMask:
		m.Key.VLANTCI, m.Mask.VLANTCI = VLANCFI|uint16(vid), VLANCFI|vlanVIDMask
	default:
		return Match{}, fmt.Errorf("%s %s out of range (0-4095, or 0xffff for no tag)", name, value)
	}
	return m, nil
}

const (
	vlanVIDMask  = 0x0fff
	vlanPCPMask  = 0xe000
	vlanPCPShift = 13
)

func parseDlVLANPCP(name, value string, _ PortNames) (Match, error) {
	pcp, err := numberFromText(name, value, 7)
	var m Match
	m.Key.VLANTCI, m.Mask.VLANTCI = VLANCFI|uint16(pcp)<<vlanPCPShift, VLANCFI|vlanPCPMask
	return m, err
}

const (
	tosDSCPMask = 0xfc
	tosECNMask  = 0x03
)

func parseNwTOS(name, value string, _ PortNames) (Match, error) {
	tos, err := numberFromText(name, value, math.MaxUint8)
	if err == nil && tos&tosECNMask != 0 {
		err = fmt.Errorf("%s %s: the 2 low (ECN) bits must be 0", name, value)
	}
	var m Match
	m.Key.NwTOS, m.Mask.NwTOS = uint8(tos), tosDSCPMask
	return m, err
}

func parseIPDSCP(name, value string, _ PortNames) (Match, error) {
	dscp, err := numberFromText(name, value, tosDSCPMask>>2)
	var m Match
	m.Key.NwTOS, m.Mask.NwTOS = uint8(dscp)<<2, tosDSCPMask
	return m, err
}

func parseNwECN(name, value string, _ PortNames) (Match, error) {
	ecn, err := numberFromText(name, value, tosECNMask)
	var m Match
	m.Key.NwTOS, m.Mask.NwTOS = uint8(ecn), tosECNMask
	return m, err
}

// ipFragValues are OVS's ip_frag names, by (mask, value); "no" and
// "later" have two encodings in OVS, and the parser takes the first.
var ipFragValues = []struct {
	name        string
	mask, value uint8
}{
	{"no", FragAny | FragLater, 0},
	{"first", FragAny | FragLater, FragAny},
	{"later", FragAny | FragLater, FragAny | FragLater},
	{"no", FragAny, 0},
	{"yes", FragAny, FragAny},
	{"not_later", FragLater, 0},
	{"later", FragLater, FragLater},
}

func parseIPFrag(name, value string, _ PortNames) (Match, error) {
	for _, f := range ipFragValues {
		if f.name == value {
			var m Match
			m.Key.NwFrag, m.Mask.NwFrag = f.value, f.mask
			return m, nil
		}
	}
	return Match{}, fmt.Errorf("invalid %s %q (want no, yes, first, later or not_later)", name, value)
}

// FormatMatch formats m in ovs-ofctl's syntax, canonically: the protocol
// shorthand (or dl_type) first, then the fields in a fixed order, each with
// its mask only when the mask is not full ("" for a match-all). Every match
// that ParseFilter produces parses back from its text to itself.
func FormatMatch(m Match) string {
	k, mask := &m.Key, &m.Mask
	var fields []string
	add := func(name, value string) { fields = append(fields, name+"="+value) }

	shorthand, impliesProto := protocolShorthandOf(&m)
	switch {
	case shorthand != "":
		fields = append(fields, shorthand)
	case mask.DlType != 0:
		add("dl_type", maskedHexText(k.DlType, mask.DlType))
	}
	if mask.InPort != 0 {
		add("in_port", maskedUintText(k.InPort, mask.InPort))
	}
	fields = appendVLANFields(fields, k.VLANTCI, mask.VLANTCI)
	if mask.DlSrc != ([6]byte{}) {
		add("dl_src", maskedMACText(k.DlSrc, mask.DlSrc))
	}
	if mask.DlDst != ([6]byte{}) {
		add("dl_dst", maskedMACText(k.DlDst, mask.DlDst))
	}
	isARP := hasDlType(&m, EtherTypeARP)
	if mask.NwSrc != ([4]byte{}) {
		add(pick(isARP, "arp_spa", "nw_src"), maskedIPText(k.NwSrc[:], mask.NwSrc[:]))
	}
	if mask.NwDst != ([4]byte{}) {
		add(pick(isARP, "arp_tpa", "nw_dst"), maskedIPText(k.NwDst[:], mask.NwDst[:]))
	}
	if mask.IPv6Src != ([16]byte{}) {
		add("ipv6_src", maskedIPText(k.IPv6Src[:], mask.IPv6Src[:]))
	}
	if mask.IPv6Dst != ([16]byte{}) {
		add("ipv6_dst", maskedIPText(k.IPv6Dst[:], mask.IPv6Dst[:]))
	}
	if mask.NwProto != 0 && !impliesProto {
		add(pick(isARP, "arp_op", "nw_proto"), maskedUintText(k.NwProto, mask.NwProto))
	}
	if dscpMask := mask.NwTOS & tosDSCPMask; dscpMask != 0 {
		add("nw_tos", maskedUintTextFull(k.NwTOS&tosDSCPMask, dscpMask, tosDSCPMask))
	}
	if ecnMask := mask.NwTOS & tosECNMask; ecnMask != 0 {
		add("nw_ecn", maskedUintTextFull(k.NwTOS&tosECNMask, ecnMask, tosECNMask))
	}
	if mask.NwTTL != 0 {
		add("nw_ttl", maskedUintText(k.NwTTL, mask.NwTTL))
	}
	if mask.NwFrag != 0 {
		add("ip_frag", ipFragText(k.NwFrag, mask.NwFrag))
	}
	isICMP := isICMPMatch(&m)
	if mask.TpSrc != 0 {
		add(pick(isICMP, "icmp_type", "tp_src"), maskedUintText(k.TpSrc, mask.TpSrc))
	}
	if mask.TpDst != 0 {
		add(pick(isICMP, "icmp_code", "tp_dst"), maskedUintText(k.TpDst, mask.TpDst))
	}
	return strings.Join(fields, ",")
}

// protocolShorthandOf names m's protocol as one word when it can: "tcp",
// "ipv6", "arp". impliesProto says whether that word covers NwProto.
func protocolShorthandOf(m *Match) (name string, impliesProto bool) {
	proto := -1
	if m.Mask.NwProto == math.MaxUint8 {
		proto = int(m.Key.NwProto)
	}
	switch {
	case hasDlType(m, EtherTypeIPv4):
		switch proto {
		case ProtoICMP:
			return "icmp", true
		case ProtoTCP:
			return "tcp", true
		case ProtoUDP:
			return "udp", true
		}
		return "ip", false
	case hasDlType(m, EtherTypeIPv6):
		switch proto {
		case ProtoICMPv6:
			return "icmp6", true
		case ProtoTCP:
			return "tcp6", true
		case ProtoUDP:
			return "udp6", true
		}
		return "ipv6", false
	case hasDlType(m, EtherTypeARP):
		return "arp", false
	}
	return "", false
}

// appendVLANFields prints the VLAN TCI as OVS does: dl_vlan and
// dl_vlan_pcp when the match is on a tagged frame's whole VID and/or PCP,
// vlan_tci otherwise (including "no tag", vlan_tci=0x0000).
func appendVLANFields(fields []string, tci, mask uint16) []string {
	vidMask, pcpMask := mask&vlanVIDMask, mask&vlanPCPMask
	switch {
	case mask == 0:
	case mask&VLANCFI != 0 && tci&VLANCFI != 0 &&
		(vidMask == 0 || vidMask == vlanVIDMask) && (pcpMask == 0 || pcpMask == vlanPCPMask) &&
		vidMask|pcpMask != 0:
		if vidMask != 0 {
			fields = append(fields, fmt.Sprintf("dl_vlan=%d", tci&vlanVIDMask))
		}
		if pcpMask != 0 {
			fields = append(fields, fmt.Sprintf("dl_vlan_pcp=%d", tci>>vlanPCPShift))
		}
	default:
		fields = append(fields, "vlan_tci="+maskedHexText(tci, mask))
	}
	return fields
}

func pick(cond bool, ifTrue, ifFalse string) string {
	if cond {
		return ifTrue
	}
	return ifFalse
}

// maskedUintText prints v in decimal under a full mask, else as
// "0xV/0xMASK".
func maskedUintText[T uint8 | uint16](v, mask T) string {
	return maskedUintTextFull(v, mask, ^T(0))
}

func maskedUintTextFull[T uint8 | uint16](v, mask, full T) string {
	if mask == full {
		return strconv.FormatUint(uint64(v), 10)
	}
	return fmt.Sprintf("%#x/%#x", v, mask)
}

func maskedHexText(v, mask uint16) string {
	if mask == math.MaxUint16 {
		return fmt.Sprintf("0x%04x", v)
	}
	return fmt.Sprintf("0x%04x/0x%04x", v, mask)
}

func maskedMACText(v, mask [6]byte) string {
	if mask == [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff} {
		return macText(v)
	}
	return macText(v) + "/" + macText(mask)
}

func macText(mac [6]byte) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4], mac[5])
}

// maskedIPText prints an IPv4 or IPv6 address (4 or 16 bytes) with its mask
// as a prefix length when the mask is one, as an address otherwise.
func maskedIPText(addr, mask []byte) string {
	text := ipText(addr)
	ones := 0
	for _, b := range mask {
		ones += bits.OnesCount8(b)
	}
	switch {
	case ones == 8*len(mask):
		return text
	case isPrefixMask(mask, ones):
		return text + "/" + strconv.Itoa(ones)
	}
	return text + "/" + ipText(mask)
}

func isPrefixMask(mask []byte, ones int) bool {
	for i, b := range mask {
		if b != prefixMaskByte(ones, i) {
			return false
		}
	}
	return true
}

// prefixMaskByte is byte i of the mask of a prefix of prefixLen bits.
func prefixMaskByte(prefixLen, i int) byte {
	return ^byte(0xff >> min(8, max(0, prefixLen-8*i)))
}

func ipText(addr []byte) string {
	if len(addr) == 4 {
		return netip.AddrFrom4([4]byte(addr)).String()
	}
	return netip.AddrFrom16([16]byte(addr)).String()
}

func ipFragText(v, mask uint8) string {
	for _, f := range ipFragValues {
		if f.mask == mask && f.value == v {
			return f.name
		}
	}
	return fmt.Sprintf("%#x/%#x", v, mask)
}

// andBytes sets dst to a & b, byte by byte.
func andBytes(dst, a, b []byte) {
	for i := range dst {
		dst[i] = a[i] & b[i]
	}
}
