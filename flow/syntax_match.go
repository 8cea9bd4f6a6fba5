package flow

import (
	"fmt"
	"math"
	"math/bits"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/xswitch/xswitch/header"
)

// Each match field parses into a partial Match that holds only its own
// bits. Fields that share bits (dl_vlan and vlan_tci, nw_src and arp_spa,
// tcp and nw_proto) merge when they agree on them and conflict otherwise,
// so the parser needs no list of which fields overlap. Prerequisites are
// checked once every field is in, so their order does not matter.

// Prerequisite is what the rest of a match must say for a field or an
// action to make sense, as OVS requires.
type Prerequisite struct {
	holds func(m *Match) bool
	what  string // "ip or ipv6 (dl_type=0x0800 or 0x86dd)"
	// all, for a prerequisite that is several (allNeeded), are they, so
	// that an error names the one a match lacks (Unmet).
	all []*Prerequisite
}

// Holds reports whether m says what p asks for.
func (p *Prerequisite) Holds(m *Match) bool { return p.holds(m) }

// HoldsFor reports whether a frame whose key is k meets p: whether a match
// of exactly k would.
func (p *Prerequisite) HoldsFor(k *Key) bool {
	m := Match{Key: *k, Mask: exactMask}
	return p.holds(&m)
}

// exactMask is the mask of every bit of a key.
var exactMask = func() (m Key) {
	b := (*[unsafe.Sizeof(m)]byte)(unsafe.Pointer(&m))
	for i := range b {
		b[i] = 0xff
	}
	return m
}()

// String says what p asks for, for error messages.
func (p *Prerequisite) String() string { return p.what }

// Unmet says what of p m lacks, for error messages: of a prerequisite
// that is several, the first that m does not meet.
func (p *Prerequisite) Unmet(m *Match) string {
	for _, q := range p.all {
		if !q.holds(m) {
			return q.Unmet(m)
		}
	}
	return p.what
}

// allNeeded is a prerequisite that holds when each of ps does (nil ones
// ask nothing): nil when they ask nothing, the one when they ask one
// thing.
func allNeeded(ps ...*Prerequisite) *Prerequisite {
	var all []*Prerequisite
	for _, p := range ps {
		if p != nil && !slices.Contains(all, p) {
			all = append(all, p)
		}
	}
	switch len(all) {
	case 0:
		return nil
	case 1:
		return all[0]
	}
	whats := make([]string, len(all))
	for i, p := range all {
		whats[i] = p.what
	}
	return &Prerequisite{
		holds: func(m *Match) bool {
			for _, p := range all {
				if !p.holds(m) {
					return false
				}
			}
			return true
		},
		what: strings.Join(whats, " and "),
		all:  all,
	}
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

func isTCPMatch(m *Match) bool  { return isIPMatch(m) && hasNwProto(m, ProtoTCP) }
func isUDPMatch(m *Match) bool  { return isIPMatch(m) && hasNwProto(m, ProtoUDP) }
func isSCTPMatch(m *Match) bool { return isIPMatch(m) && hasNwProto(m, ProtoSCTP) }

// isNDMatch reports whether m is on neighbour discovery messages of
// ICMPv6 type typ (either when 0), as OVS decides it: by the match's
// values, so that a match that leaves icmp_code out has its 0.
func isNDMatch(m *Match, typ uint16) bool {
	isND := m.Key.TpSrc == header.ICMPv6NeighborSolicitation || m.Key.TpSrc == header.ICMPv6NeighborAdvert
	return hasDlType(m, EtherTypeIPv6) && hasNwProto(m, ProtoICMPv6) && m.Key.TpDst == 0 &&
		isND && (typ == 0 || m.Key.TpSrc == typ)
}

func isMPLSMatch(m *Match) bool {
	return hasDlType(m, EtherTypeMPLS) || hasDlType(m, EtherTypeMPLSMulticast)
}

func isICMPMatch(m *Match) bool {
	return hasDlType(m, EtherTypeIPv4) && hasNwProto(m, ProtoICMP) ||
		hasDlType(m, EtherTypeIPv6) && hasNwProto(m, ProtoICMPv6)
}

var (
	needsIPv4OrARP = &Prerequisite{
		holds: func(m *Match) bool { return hasDlType(m, EtherTypeIPv4) || hasDlType(m, EtherTypeARP) },
		what:  "ip or arp (dl_type=0x0800 or 0x0806)",
	}
	needsIPOrARP = &Prerequisite{
		holds: func(m *Match) bool { return isIPMatch(m) || hasDlType(m, EtherTypeARP) },
		what:  "ip, ipv6 or arp (dl_type=0x0800, 0x86dd or 0x0806)",
	}
	needsIP    = &Prerequisite{holds: isIPMatch, what: "ip or ipv6 (dl_type=0x0800 or 0x86dd)"}
	needsIPv4  = &Prerequisite{holds: func(m *Match) bool { return hasDlType(m, EtherTypeIPv4) }, what: "ip (dl_type=0x0800)"}
	needsARP   = &Prerequisite{holds: func(m *Match) bool { return hasDlType(m, EtherTypeARP) }, what: "arp (dl_type=0x0806)"}
	needsIPv6  = &Prerequisite{holds: func(m *Match) bool { return hasDlType(m, EtherTypeIPv6) }, what: "ipv6 (dl_type=0x86dd)"}
	needsPorts = &Prerequisite{
		holds: func(m *Match) bool { return isTCPMatch(m) || isUDPMatch(m) || isSCTPMatch(m) },
		what:  "tcp, udp or sctp (nw_proto=6, 17 or 132)",
	}
	needsTCP       = &Prerequisite{holds: isTCPMatch, what: "tcp (nw_proto=6)"}
	needsUDP       = &Prerequisite{holds: isUDPMatch, what: "udp (nw_proto=17)"}
	needsSCTP      = &Prerequisite{holds: isSCTPMatch, what: "sctp (nw_proto=132)"}
	needsND        = &Prerequisite{holds: func(m *Match) bool { return isNDMatch(m, 0) }, what: "icmp6 with icmp_type=135 or 136 and icmp_code=0"}
	needsNDSolicit = &Prerequisite{
		holds: func(m *Match) bool { return isNDMatch(m, header.ICMPv6NeighborSolicitation) },
		what:  "icmp6 with icmp_type=135 and icmp_code=0",
	}
	needsNDAdvert = &Prerequisite{
		holds: func(m *Match) bool { return isNDMatch(m, header.ICMPv6NeighborAdvert) },
		what:  "icmp6 with icmp_type=136 and icmp_code=0",
	}
	needsICMP   = &Prerequisite{holds: isICMPMatch, what: "icmp or icmp6 (nw_proto=1 with ip, 58 with ipv6)"}
	needsICMPv4 = &Prerequisite{
		holds: func(m *Match) bool { return hasDlType(m, EtherTypeIPv4) && hasNwProto(m, ProtoICMP) },
		what:  "icmp (dl_type=0x0800, nw_proto=1)",
	}
	needsICMPv6 = &Prerequisite{
		holds: func(m *Match) bool { return hasDlType(m, EtherTypeIPv6) && hasNwProto(m, ProtoICMPv6) },
		what:  "icmp6 (dl_type=0x86dd, nw_proto=58)",
	}
	needsMPLS = &Prerequisite{holds: isMPLSMatch, what: "mpls or mplsm (dl_type=0x8847 or 0x8848)"}
	needsVLAN = &Prerequisite{
		holds: func(m *Match) bool { return m.Mask.VLANTCI&VLANCFI != 0 && m.Key.VLANTCI&VLANCFI != 0 },
		what:  "a VLAN tag (dl_vlan=N, or vlan_tci=0x1000/0x1000)",
	}
)

// matchBuilder merges the partial matches of a flow's fields.
type matchBuilder struct {
	match  Match
	fields []parsedField
}

type parsedField struct {
	name  string
	part  Match
	needs *Prerequisite
}

func (b *matchBuilder) add(name string, part Match, needs *Prerequisite) error {
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
			return fmt.Errorf("field %q requires %s", f.name, f.needs.Unmet(&b.match))
		}
	}
	return nil
}

// orKeys returns the bits set in a or b (the counterpart of Key.And).
func orKeys(a, b *Key) Key {
	out := *a
	out.Headers.Widen(&b.Headers)
	out.Metadata |= b.Metadata
	for i := range out.Regs {
		out.Regs[i] |= b.Regs[i]
	}
	out.CT.Widen(&b.CT)
	out.Table |= b.Table
	return out
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
func parseDlVLAN(f *Field, value string) (Match, error) {
	vid, err := numberFromText(f.Name, value, math.MaxUint16)
	var m Match
	switch {
	case err != nil:
		return Match{}, err
	case vid == math.MaxUint16:
		m.Mask.VLANTCI = math.MaxUint16
	case vid <= vlanVIDMask:
		m.Key.VLANTCI, m.Mask.VLANTCI = VLANCFI|uint16(vid), VLANCFI|vlanVIDMask
	default:
		return Match{}, fmt.Errorf("%s %s out of range (0-4095, or 0xffff for no tag)", f.Name, value)
	}
	return m, nil
}

const (
	vlanVIDMask  = 0x0fff
	vlanPCPMask  = 0xe000
	vlanPCPShift = 13
)

// parseVLANPCP reads dl_vlan_pcp: a tagged frame with that priority.
func parseVLANPCP(f *Field, value string) (Match, error) {
	pcp, err := numberFromText(f.Name, value, 7)
	var m Match
	m.Key.VLANTCI, m.Mask.VLANTCI = VLANCFI|uint16(pcp)<<vlanPCPShift, VLANCFI|vlanPCPMask
	return m, err
}

const (
	tosDSCPMask = 0xfc
	tosECNMask  = 0x03
)

// parseNwTOS reads the TOS byte's DSCP bits as the byte, its ECN bits 0.
func parseNwTOS(f *Field, value string) (Match, error) {
	tos, err := numberFromText(f.Name, value, math.MaxUint8)
	if err == nil && tos&tosECNMask != 0 {
		err = fmt.Errorf("%s %s: the 2 low (ECN) bits must be 0", f.Name, value)
	}
	var m Match
	m.Key.NwTOS, m.Mask.NwTOS = uint8(tos), tosDSCPMask
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

// FormatMatch formats m in ovs-ofctl's syntax, canonically: the protocol
// shorthand (or dl_type) first, then the fields in the order of the field
// table, each with its mask only when the mask is not full ("" for a
// match-all). Every match that ParseFilter produces parses back from its
// text to itself.
func FormatMatch(m Match) string {
	var parts []string
	for _, f := range fields {
		if f.print == nil {
			continue
		}
		if text := f.print(f, &m); text != "" {
			parts = append(parts, text)
		}
	}
	return strings.Join(parts, ",")
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
		case ProtoSCTP:
			return "sctp", true
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
		case ProtoSCTP:
			return "sctp6", true
		}
		return "ipv6", false
	case hasDlType(m, EtherTypeARP):
		return "arp", false
	case hasDlType(m, EtherTypeMPLS):
		return "mpls", false
	case hasDlType(m, EtherTypeMPLSMulticast):
		return "mplsm", false
	}
	return "", false
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
