package flow

// Fields.
//
// Every field a flow can match on, and that set_field, load and move can
// read or write, is described once here, as Open vSwitch's meta-flow
// describes its fields: its names, its width, whether it takes a mask,
// what the rest of a match must say for it to make sense, whether actions
// may write it, how its values read and print, and where it lives in the
// Key. The match parser and formatter, the actions that read and write
// fields, and trace all work from this table, and so does the OpenFlow
// agent (ofagent), from its OXM column; the in-kernel fast path's key will
// be one more column of it.
//
// Several fields may be views of the same bits: nw_src and arp_spa are one
// address, ip_dscp is nw_tos shifted, dl_vlan is part of vlan_tci. Each
// field's get and set touch only its own bits, so that a field's mask in a
// Match is set(Mask, all ones), and fields that share bits merge when they
// agree on them (matchBuilder). Of the fields over one piece of storage,
// exactly one prints it (Field.print), choosing the name that fits the
// match (arp_spa for ARP, nw_src otherwise), as ovs-ofctl does.

import (
	"fmt"
	"iter"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/xswitch/xswitch/header"
)

// Value is a field's value, right-aligned in 128 bits: the widest field is
// an IPv6 address.
type Value struct{ Hi, Lo uint64 }

// And, Or and Not are bitwise.
func (v Value) And(m Value) Value { return Value{v.Hi & m.Hi, v.Lo & m.Lo} }
func (v Value) Or(m Value) Value  { return Value{v.Hi | m.Hi, v.Lo | m.Lo} }
func (v Value) Not() Value        { return Value{^v.Hi, ^v.Lo} }

// IsZero reports whether no bit is set.
func (v Value) IsZero() bool { return v.Hi == 0 && v.Lo == 0 }

// Shl shifts v left by n bits, n < 128.
func (v Value) Shl(n uint) Value {
	switch {
	case n == 0:
		return v
	case n >= 64:
		return Value{Hi: v.Lo << (n - 64)}
	}
	return Value{Hi: v.Hi<<n | v.Lo>>(64-n), Lo: v.Lo << n}
}

// Shr shifts v right by n bits, n < 128.
func (v Value) Shr(n uint) Value {
	switch {
	case n == 0:
		return v
	case n >= 64:
		return Value{Lo: v.Hi >> (n - 64)}
	}
	return Value{Hi: v.Hi >> n, Lo: v.Lo>>n | v.Hi<<(64-n)}
}

// Ones is the value of n one bits, n <= 128.
func Ones(n uint) Value {
	switch {
	case n == 0:
		return Value{}
	case n <= 64:
		return Value{Lo: math.MaxUint64 >> (64 - n)}
	}
	return Value{Hi: math.MaxUint64 >> (128 - n), Lo: math.MaxUint64}
}

// Runs yields each run of v's one bits, from the lowest: its offset and
// its length.
func (v Value) Runs() iter.Seq2[uint, uint] {
	return func(yield func(ofs, n uint) bool) {
		for ofs := uint(0); ofs < 128; {
			if v.Shr(ofs).Lo&1 == 0 {
				ofs++
				continue
			}
			n := uint(1)
			for ofs+n < 128 && v.Shr(ofs+n).Lo&1 != 0 {
				n++
			}
			if !yield(ofs, n) {
				return
			}
			ofs += n
		}
	}
}

// BitLen is the number of bits needed to hold v.
func (v Value) BitLen() int {
	if v.Hi != 0 {
		return 64 + bits.Len64(v.Hi)
	}
	return bits.Len64(v.Lo)
}

// Field is one field of the Key as flows name it.
type Field struct {
	// Name is what a match prints it as; Aliases are its other names:
	// OVS's newer ones (eth_src), and the NXM_ and OXM_ names that load
	// and move use.
	Name    string
	Aliases []string
	Bits    uint // width
	// Maskable fields take "VALUE/MASK" in a match.
	Maskable bool
	// Writable fields may be written by set_field, load and move.
	Writable bool
	// readOnly fields are those that OVS's meta-flow says no action may
	// write: set_field says so in ovs-ofctl's words.
	readOnly bool
	// Carried fields are not in the frame's bytes: the pipeline carries
	// them along with it (registers, metadata, the input port), so load
	// and move write them in the key alone. A header field that is
	// Writable has a rewrite instead.
	Carried bool
	// CTOnly fields (ct_mark and ct_label) are a connection's, which the
	// actions in a ct()'s exec() alone write, as in OVS: a set_field,
	// load or move to one anywhere else is refused (CheckPlace).
	CTOnly bool
	// Needs is what the rest of a match must say for the field to make
	// sense (nil: nothing).
	Needs *Prerequisite
	// ActionNeeds, when set, is what an action that reads or writes the
	// field needs of the match, where that is stricter than Needs: a
	// match on ICMP or ICMPv6 takes icmp_type and icmpv6_type alike, as
	// ovs-ofctl reads them, but in actions icmp_type is ICMP's alone and
	// icmpv6_type ICMPv6's, as OVS has them.
	ActionNeeds *Prerequisite
	// OXM are the field's OpenFlow 1.3 encodings in matches, set_field
	// and the Nicira actions that name fields, as Open vSwitch's
	// meta-flow.xml gives them, the one a switch sends first; none for a
	// field that OpenFlow has no encoding of (a view of bits another
	// field encodes: tp_src is tcp_src or udp_src, dl_vlan is bits of
	// vlan_tci).
	OXM []OXMCode

	get func(k *Key) Value
	set func(k *Key, v Value) // writes only the field's bits
	// syntax reads and prints the field's values.
	syntax valueSyntax
	// parse, when set, reads a match on the field instead of syntax, for
	// fields whose text is more than a value and a mask (dl_vlan=0xffff
	// matches a frame without a tag).
	parse func(f *Field, value string) (Match, error)
	// print, when set, says how the bits this field owns print in a match
	// (nil: the field does not print: another over the same bits does),
	// or "" when they do not.
	print func(f *Field, m *Match) string
	// shorthand fields ("tcp") take no value.
	shorthand bool
	// rewrite, for a Writable header field, appends the header rewrites
	// that make a frame whose key is old into one whose key is updated as
	// far as the field's header goes (see AppendRewrites).
	rewrite func(out []Action, old, updated *Key) ([]Action, bool)
	// Frame, for a writable header field that set_field writes as
	// itself, not as a mod_ action (OVS has none for it, or prints the
	// write as set_field, as SCTP's ports), is where the field is in a
	// frame: the field's rewrite is an ActSetField of its whole value,
	// which writes those bytes.
	Frame *InFrame
}

// InFrame is where a field is in a frame: in which header (Layout.Header
// finds it), and the bytes there that hold it, right-aligned: the bits of
// the first byte above the field's Bits are another field's.
type InFrame struct {
	Header   FrameHeader
	Off, Len int
}

// FrameHeader names a header that Layout places.
type FrameHeader uint8

const (
	InARP   FrameHeader = iota + 1 // the ARP header
	InIPv6                         // the IPv6 header
	InSCTP                         // the SCTP header: its CRC32c covers the field
	InICMP                         // the ICMP or ICMPv6 header: its checksum covers the field
	InND                           // the neighbour discovery message, from its ICMPv6 header
	InNDSLL                        // the source link-layer address option's address
	InNDTLL                        // the target link-layer address option's address
)

// inKey reports whether a frame whose key is k has header h, as far as
// the key says: the rewrite of a field in h changes the key only then.
func (h FrameHeader) inKey(k *Key) bool {
	switch h {
	case InARP:
		return k.DlType == EtherTypeARP
	case InIPv6:
		return k.DlType == EtherTypeIPv6
	case InSCTP:
		return k.HasPorts() && k.NwProto == ProtoSCTP
	case InICMP:
		return k.HasICMP()
	}
	return k.IsND()
}

// actionNeeds is what an action that reads or writes f needs of the
// match.
func (f *Field) actionNeeds() *Prerequisite {
	if f.ActionNeeds != nil {
		return f.ActionNeeds
	}
	return f.Needs
}

// AppendRewrites appends to out the header rewrites that give a frame
// whose key is old what updated, which a load, move or set_field of this
// header field made of old, says of the field's header. ok is false when
// the frame has no such header: the write then changes nothing, in the
// frame or in the key, as a mod_ action does to a frame without its
// header. It may normalize updated (a VLAN TCI without its present bit is
// no tag).
func (f *Field) AppendRewrites(out []Action, old, updated *Key) ([]Action, bool) {
	return f.rewrite(out, old, updated)
}

// Rewrites of header fields, by the header they change.

func rewriteMAC(typ ActionType, at func(*Key) *[6]byte) func([]Action, *Key, *Key) ([]Action, bool) {
	return func(out []Action, _, updated *Key) ([]Action, bool) {
		return append(out, Action{Type: typ, MAC: *at(updated)}), true
	}
}

func rewriteIPv4(typ ActionType, at func(*Key) *[4]byte) func([]Action, *Key, *Key) ([]Action, bool) {
	return func(out []Action, old, updated *Key) ([]Action, bool) {
		if old.DlType != EtherTypeIPv4 {
			return out, false
		}
		return append(out, Action{Type: typ, IPv4: *at(updated)}), true
	}
}

func rewriteIPv6(typ ActionType, at func(*Key) *[16]byte) func([]Action, *Key, *Key) ([]Action, bool) {
	return func(out []Action, old, updated *Key) ([]Action, bool) {
		if old.DlType != EtherTypeIPv6 {
			return out, false
		}
		return append(out, Action{Type: typ, Imm: ValueOfBytes(at(updated)[:])}), true
	}
}

func rewritePort(typ ActionType, at func(*Key) *uint16) func([]Action, *Key, *Key) ([]Action, bool) {
	return func(out []Action, old, updated *Key) ([]Action, bool) {
		if !old.HasPorts() {
			return out, false
		}
		return append(out, Action{Type: typ, Value: *at(updated)}), true
	}
}

// rewriteInFrame is the rewrite of f, a field with an InFrame, in a frame
// that has its header (has says which do): an ActSetField of its whole
// updated value.
func rewriteInFrame(f *Field, has func(*Key) bool) func([]Action, *Key, *Key) ([]Action, bool) {
	return func(out []Action, old, updated *Key) ([]Action, bool) {
		if !has(old) {
			return out, false
		}
		return append(out, Action{Type: ActSetField, Field: f, Imm: f.get(updated), Mask: f.full()}), true
	}
}

// rewriteIP rewrites a byte of the IP header (TOS, TTL): value reads it
// from the updated key as the action takes it.
func rewriteIP(typ ActionType, value func(*Key) uint16) func([]Action, *Key, *Key) ([]Action, bool) {
	return func(out []Action, old, updated *Key) ([]Action, bool) {
		if old.DlType != EtherTypeIPv4 && old.DlType != EtherTypeIPv6 {
			return out, false
		}
		return append(out, Action{Type: typ, Value: value(updated)}), true
	}
}

// rewriteVLAN makes the frame's outer tag what the updated TCI says, as
// OVS does when a write reaches vlan_tci: without the present bit (CFI),
// no tag, so a tag there is popped; with it, a tag with that VID and PCP,
// pushed if there was none.
func rewriteVLAN(out []Action, old, updated *Key) ([]Action, bool) {
	if updated.VLANTCI&VLANCFI == 0 {
		if old.VLANTCI&VLANCFI != 0 {
			out = append(out, Action{Type: ActStripVLAN})
		}
		updated.VLANTCI = 0
		return out, true
	}
	vid, pcp := updated.VLANTCI&vlanVIDMask, updated.VLANTCI&vlanPCPMask>>vlanPCPShift
	// Without a tag, setting the VID pushes one, of PCP 0.
	oldTagged, oldPCP := old.VLANTCI&VLANCFI != 0, old.VLANTCI&vlanPCPMask>>vlanPCPShift
	if !oldTagged {
		oldPCP = 0
	}
	if !oldTagged || vid != old.VLANTCI&vlanVIDMask {
		out = append(out, Action{Type: ActSetVLANVID, Value: vid})
	}
	if pcp != oldPCP {
		out = append(out, Action{Type: ActSetVLANPCP, Value: pcp})
	}
	return out, true
}

// rewriteMPLS gives an MPLS frame's top label stack entry the updated
// key's: the part of it that the field is, by its set_mpls_ action.
func rewriteMPLS(typ ActionType) func([]Action, *Key, *Key) ([]Action, bool) {
	return func(out []Action, old, updated *Key) ([]Action, bool) {
		if !old.IsMPLS() {
			return out, false
		}
		return append(out, mplsSetAction(typ, updated.MPLS)), true
	}
}

// OXMCode is one OXM (or NXM) TLV type.
type OXMCode struct {
	Class uint16
	Num   uint8 // the TLV's field number, 7 bits
	// Bytes is the value's width on the wire, which may be more than the
	// field's Bits: a value with bits beyond those is not the field's
	// (OXM_OF_IN_PORT is wider still: it holds an OpenFlow 1.3 port).
	Bytes uint8
	// Needs is what a match must say for the TLV to make sense: the
	// field's Needs, or stricter where OpenFlow is (OXM_OF_IPV4_SRC is
	// IPv4's alone, where nw_src also names ARP's address).
	Needs *Prerequisite
}

// The OXM classes the table uses (openflow.OXMClass*).
const (
	oxmNXM0    = 0x0000
	oxmNXM1    = 0x0001
	oxmBasic   = 0x8000
	oxmPktRegs = 0x8001
)

func oxm(class uint16, num, bytes uint8) OXMCode {
	return OXMCode{Class: class, Num: num, Bytes: bytes}
}

func oxmNeeds(class uint16, num, bytes uint8, needs *Prerequisite) OXMCode {
	return OXMCode{Class: class, Num: num, Bytes: bytes, Needs: needs}
}

// noNeeds, as an OXMCode's Needs, lifts the field's: OXM_OF_VLAN_VID
// also says "no tag".
var noNeeds = &Prerequisite{holds: func(*Match) bool { return true }}

// fieldsByOXM holds every field by each of its OXM codes (class << 8 |
// number).
var fieldsByOXM = map[uint32]oxmEntry{}

type oxmEntry struct {
	field *Field
	code  *OXMCode
}

// FieldByOXM returns the field that the OXM TLV type class:num encodes,
// and that encoding.
func FieldByOXM(class uint16, num uint8) (*Field, *OXMCode, bool) {
	e, ok := fieldsByOXM[uint32(class)<<8|uint32(num)]
	return e.field, e.code, ok
}

// Fields returns every field, in the field table's order (the order a
// match prints in). The caller must not change it.
func Fields() []*Field { return fields }

// OXMFor returns the encoding of the field that fits a match m: its first
// whose Needs m gives. ok is false when there is none.
func (f *Field) OXMFor(m *Match) (c *OXMCode, ok bool) {
	for i := range f.OXM {
		if c := &f.OXM[i]; c.Needs == nil || c.Needs.Holds(m) {
			return c, true
		}
	}
	return nil, false
}

// Get returns the field's value in k.
func (f *Field) Get(k *Key) Value { return f.get(k) }

// Set writes v into the field's bits of k, leaving the others.
func (f *Field) Set(k *Key, v Value) { f.set(k, v.And(Ones(f.Bits))) }

// full is the field's mask when it is matched whole.
func (f *Field) full() Value { return Ones(f.Bits) }

// valueSyntax is how a field's values read and print.
type valueSyntax int

const (
	syntaxDecimal valueSyntax = iota // 80, masks as 0x50/0xf0
	syntaxHex                        // 0x50, masks 0x50/0xf0
	syntaxHex4                       // 0x0800: four digits, as dl_type and vlan_tci print
	syntaxMAC
	syntaxIPv4
	syntaxIPv6
	syntaxPort // a port number, name or reserved word (LOCAL)
	syntaxFrag // ip_frag's words
)

// fields are the fields in the order a match prints them, OVS's order:
// the protocol shorthand, registers and metadata, the input port, then the
// headers from outside in.
var fields []*Field

// fieldsByName holds every field by each of its names.
var fieldsByName = map[string]*Field{}

// FieldByName returns the field called name, by any of its names.
func FieldByName(name string) (*Field, bool) {
	f, ok := fieldsByName[name]
	return f, ok
}

// isWireName reports whether name is one of OVS's NXM_ or OXM_ names,
// which only load and move take, as in OVS: a match or set_field names a
// field as ovs-fields(7) does.
func isWireName(name string) bool {
	return strings.HasPrefix(name, "NXM_") || strings.HasPrefix(name, "OXM_")
}

func init() {
	for _, f := range fieldTable() {
		if f.Writable && !f.Carried && f.rewrite == nil {
			panic("writable header field " + f.Name + " has no rewrite")
		}
		fields = append(fields, f)
		for i := range f.OXM {
			c := &f.OXM[i]
			switch c.Needs {
			case nil:
				c.Needs = f.Needs
			case noNeeds:
				c.Needs = nil
			}
			key := uint32(c.Class)<<8 | uint32(c.Num)
			if _, dup := fieldsByOXM[key]; dup {
				panic(fmt.Sprintf("OXM %#x:%d of field %s defined twice", c.Class, c.Num, f.Name))
			}
			fieldsByOXM[key] = oxmEntry{field: f, code: c}
		}
		for _, name := range append([]string{f.Name}, f.Aliases...) {
			if _, dup := fieldsByName[name]; dup {
				panic("field name " + name + " defined twice")
			}
			fieldsByName[name] = f
		}
	}
	fieldVLANTCI, fieldIPv6Src, fieldIPv6Dst = fieldsByName["vlan_tci"], fieldsByName["ipv6_src"], fieldsByName["ipv6_dst"]
	fieldMetadata = fieldsByName["metadata"]
	mplsFields = map[ActionType]*Field{ActSetMPLSLabel: fieldsByName["mpls_label"],
		ActSetMPLSTC: fieldsByName["mpls_tc"], ActSetMPLSTTL: fieldsByName["mpls_ttl"]}
}

// Accessors for fields stored in Key members of each type.

func u8Field(at func(*Key) *uint8) (func(*Key) Value, func(*Key, Value)) {
	return func(k *Key) Value { return Value{Lo: uint64(*at(k))} },
		func(k *Key, v Value) { *at(k) = uint8(v.Lo) }
}

func u16Field(at func(*Key) *uint16) (func(*Key) Value, func(*Key, Value)) {
	return func(k *Key) Value { return Value{Lo: uint64(*at(k))} },
		func(k *Key, v Value) { *at(k) = uint16(v.Lo) }
}

// bitsOf is a view of bits [shift, shift+n) of a 16-bit member.
func bitsOf16(at func(*Key) *uint16, shift, n uint) (func(*Key) Value, func(*Key, Value)) {
	mask := uint16(Ones(n).Lo) << shift
	return func(k *Key) Value { return Value{Lo: uint64(*at(k)&mask) >> shift} },
		func(k *Key, v Value) { *at(k) = *at(k)&^mask | uint16(v.Lo)<<shift&mask }
}

func bitsOf8(at func(*Key) *uint8, shift, n uint) (func(*Key) Value, func(*Key, Value)) {
	mask := uint8(Ones(n).Lo) << shift
	return func(k *Key) Value { return Value{Lo: uint64(*at(k)&mask) >> shift} },
		func(k *Key, v Value) { *at(k) = *at(k)&^mask | uint8(v.Lo)<<shift&mask }
}

func bitsOf32(at func(*Key) *uint32, shift, n uint) (func(*Key) Value, func(*Key, Value)) {
	mask := uint32(Ones(n).Lo) << shift
	return func(k *Key) Value { return Value{Lo: uint64(*at(k)&mask) >> shift} },
		func(k *Key, v Value) { *at(k) = *at(k)&^mask | uint32(v.Lo)<<shift&mask }
}

// bytesField is a field stored as bytes, big-endian: an address.
func bytesField(at func(*Key) []byte) (func(*Key) Value, func(*Key, Value)) {
	return func(k *Key) Value { return ValueOfBytes(at(k)) },
		func(k *Key, v Value) { PutValueBytes(at(k), v) }
}

// ValueOfBytes reads big-endian bytes (at most 16) as a Value.
func ValueOfBytes(b []byte) Value {
	var v Value
	for _, c := range b {
		v = v.Shl(8)
		v.Lo |= uint64(c)
	}
	return v
}

// PutValueBytes writes the low len(b) bytes of v into b, big-endian.
func PutValueBytes(b []byte, v Value) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte(v.Lo)
		v = v.Shr(8)
	}
}

func regField(i int) (func(*Key) Value, func(*Key, Value)) {
	return func(k *Key) Value { return Value{Lo: uint64(k.Regs[i])} },
		func(k *Key, v Value) { k.Regs[i] = uint32(v.Lo) }
}

// xregField is OVS's xregN: registers 2N and 2N+1 as one 64-bit field.
func xregField(i int) (func(*Key) Value, func(*Key, Value)) {
	return func(k *Key) Value { return Value{Lo: uint64(k.Regs[2*i])<<32 | uint64(k.Regs[2*i+1])} },
		func(k *Key, v Value) { k.Regs[2*i], k.Regs[2*i+1] = uint32(v.Lo>>32), uint32(v.Lo) }
}

func fieldTable() []*Field {
	var table []*Field
	add := func(f *Field, get func(*Key) Value, set func(*Key, Value)) *Field {
		f.get, f.set = get, set
		if f.print == nil && !f.shorthand {
			f.print = printValue
		}
		if f.Frame != nil {
			f.rewrite = rewriteInFrame(f, f.Frame.Header.inKey)
		}
		table = append(table, f)
		return f
	}
	noPrint := func(*Field, *Match) string { return "" }

	// The protocol shorthands print first, for the fields they imply.
	for _, s := range []struct {
		name     string
		dlType   uint16
		proto    uint8
		hasProto bool
	}{
		{"ip", EtherTypeIPv4, 0, false}, {"icmp", EtherTypeIPv4, ProtoICMP, true},
		{"tcp", EtherTypeIPv4, ProtoTCP, true}, {"udp", EtherTypeIPv4, ProtoUDP, true},
		{"ipv6", EtherTypeIPv6, 0, false}, {"icmp6", EtherTypeIPv6, ProtoICMPv6, true},
		{"tcp6", EtherTypeIPv6, ProtoTCP, true}, {"udp6", EtherTypeIPv6, ProtoUDP, true},
		{"sctp", EtherTypeIPv4, ProtoSCTP, true}, {"sctp6", EtherTypeIPv6, ProtoSCTP, true},
		{"arp", EtherTypeARP, 0, false},
		{"mpls", EtherTypeMPLS, 0, false}, {"mplsm", EtherTypeMPLSMulticast, 0, false},
	} {
		var m Match
		m.Key.DlType, m.Mask.DlType = s.dlType, math.MaxUint16
		if s.hasProto {
			m.Key.NwProto, m.Mask.NwProto = s.proto, math.MaxUint8
		}
		f := &Field{Name: s.name, shorthand: true, parse: func(*Field, string) (Match, error) { return m, nil }}
		if s.name == "ipv6" {
			f.Aliases = []string{"ip6"} // as OVS also spells it
		}
		if s.name == "ip" {
			f.print = printShorthand
		}
		add(f, func(*Key) Value { return Value{} }, func(*Key, Value) {})
	}
	get, set := u16Field(func(k *Key) *uint16 { return &k.DlType })
	add(&Field{Name: "dl_type", Aliases: []string{"eth_type", "NXM_OF_ETH_TYPE", "OXM_OF_ETH_TYPE"},
		Bits: 16, readOnly: true, OXM: []OXMCode{oxm(oxmBasic, 5, 2), oxm(oxmNXM0, 3, 2)}, syntax: syntaxHex4, print: printDlType}, get, set)

	for i := range NumRegs {
		get, set := regField(i)
		add(&Field{Name: fmt.Sprintf("reg%d", i), Aliases: []string{fmt.Sprintf("NXM_NX_REG%d", i)},
			Bits: 32, Maskable: true, Writable: true, Carried: true, OXM: []OXMCode{oxm(oxmNXM1, uint8(i), 4)},
			syntax: syntaxHex}, get, set)
	}
	for i := range NumRegs / 2 {
		get, set := xregField(i)
		add(&Field{Name: fmt.Sprintf("xreg%d", i), Aliases: []string{fmt.Sprintf("OXM_OF_PKT_REG%d", i)},
			Bits: 64, Maskable: true, Writable: true, Carried: true, OXM: []OXMCode{oxm(oxmPktRegs, uint8(i), 8)},
			syntax: syntaxHex, print: noPrint}, get, set)
	}
	// The tunnel's fields, as a frame from a tunnel port brings them;
	// tun_id is what an output to a tunnel port whose key is "flow"
	// sends with. The remote and local addresses are the port's own, so
	// only matches read them.
	add(&Field{Name: "tun_id", Aliases: []string{"tunnel_id", "NXM_NX_TUN_ID", "OXM_OF_TUNNEL_ID"}, Bits: 64, Maskable: true,
		Writable: true, Carried: true, OXM: []OXMCode{oxm(oxmBasic, 38, 8), oxm(oxmNXM1, 16, 8)}, syntax: syntaxHex},
		func(k *Key) Value { return Value{Lo: k.TunID} }, func(k *Key, v Value) { k.TunID = v.Lo })
	get, set = bytesField(func(k *Key) []byte { return k.TunSrc[:] })
	add(&Field{Name: "tun_src", Aliases: []string{"NXM_NX_TUN_IPV4_SRC"}, Bits: 32, Maskable: true, Carried: true,
		OXM: []OXMCode{oxm(oxmNXM1, 31, 4)}, syntax: syntaxIPv4}, get, set)
	get, set = bytesField(func(k *Key) []byte { return k.TunDst[:] })
	add(&Field{Name: "tun_dst", Aliases: []string{"NXM_NX_TUN_IPV4_DST"}, Bits: 32, Maskable: true, Carried: true,
		OXM: []OXMCode{oxm(oxmNXM1, 32, 4)}, syntax: syntaxIPv4}, get, set)
	add(&Field{Name: "metadata", Aliases: []string{"OXM_OF_METADATA"}, Bits: 64, Maskable: true, Writable: true, Carried: true,
		OXM: []OXMCode{oxm(oxmBasic, 2, 8)}, syntax: syntaxHex}, func(k *Key) Value { return Value{Lo: k.Metadata} }, func(k *Key, v Value) { k.Metadata = v.Lo })

	addCTFields(add)

	get, set = u16Field(func(k *Key) *uint16 { return &k.InPort })
	// OXM_OF_IN_PORT holds the port's 32-bit OpenFlow 1.3 number,
	// NXM_OF_IN_PORT its 16-bit one, which load and move name.
	add(&Field{Name: "in_port", Aliases: []string{"NXM_OF_IN_PORT"}, Bits: 16, Writable: true, Carried: true,
		OXM: []OXMCode{oxm(oxmBasic, 0, 4), oxm(oxmNXM0, 0, 2)}, syntax: syntaxPort}, get, set)

	get, set = u16Field(func(k *Key) *uint16 { return &k.VLANTCI })
	add(&Field{Name: "vlan_tci", Aliases: []string{"NXM_OF_VLAN_TCI"}, Bits: 16, Maskable: true, Writable: true,
		OXM: []OXMCode{oxm(oxmNXM0, 4, 2)}, syntax: syntaxHex4, print: printVLAN, rewrite: rewriteVLAN}, get, set)
	get, set = bitsOf16(func(k *Key) *uint16 { return &k.VLANTCI }, 0, 12)
	add(&Field{Name: "dl_vlan", Bits: 12, Writable: true, parse: parseDlVLAN, print: noPrint, rewrite: rewriteVLAN}, get, set)
	get, set = bitsOf16(func(k *Key) *uint16 { return &k.VLANTCI }, 13, 3)
	add(&Field{Name: "dl_vlan_pcp", Bits: 3, Writable: true, parse: parseVLANPCP, print: noPrint, rewrite: rewriteVLAN}, get, set)
	get, set = bitsOf16(func(k *Key) *uint16 { return &k.VLANTCI }, 0, 13)
	add(&Field{Name: "vlan_vid", Aliases: []string{"OXM_OF_VLAN_VID"}, Bits: 13, Maskable: true, Writable: true,
		Needs: needsVLAN, OXM: []OXMCode{oxmNeeds(oxmBasic, 6, 2, noNeeds)}, syntax: syntaxDecimal, print: noPrint, rewrite: rewriteVLAN}, get, set)
	get, set = bitsOf16(func(k *Key) *uint16 { return &k.VLANTCI }, 13, 3)
	add(&Field{Name: "vlan_pcp", Aliases: []string{"OXM_OF_VLAN_PCP"}, Bits: 3, Writable: true,
		Needs: needsVLAN, OXM: []OXMCode{oxm(oxmBasic, 7, 1)}, syntax: syntaxDecimal, print: noPrint, rewrite: rewriteVLAN}, get, set)

	get, set = bytesField(func(k *Key) []byte { return k.DlSrc[:] })
	add(&Field{Name: "dl_src", Aliases: []string{"eth_src", "NXM_OF_ETH_SRC", "OXM_OF_ETH_SRC"}, Bits: 48,
		Maskable: true, Writable: true, OXM: []OXMCode{oxm(oxmBasic, 4, 6), oxm(oxmNXM0, 2, 6)}, syntax: syntaxMAC,
		rewrite: rewriteMAC(ActSetDlSrc, func(k *Key) *[6]byte { return &k.DlSrc })}, get, set)
	get, set = bytesField(func(k *Key) []byte { return k.DlDst[:] })
	add(&Field{Name: "dl_dst", Aliases: []string{"eth_dst", "NXM_OF_ETH_DST", "OXM_OF_ETH_DST"}, Bits: 48,
		Maskable: true, Writable: true, OXM: []OXMCode{oxm(oxmBasic, 3, 6), oxm(oxmNXM0, 1, 6)}, syntax: syntaxMAC,
		rewrite: rewriteMAC(ActSetDlDst, func(k *Key) *[6]byte { return &k.DlDst })}, get, set)

	// The top label stack entry's parts, as OVS names them: none takes
	// a mask, and the bottom of stack bit is the frame's to say.
	get, set = bitsOf32(func(k *Key) *uint32 { return &k.MPLS }, header.MPLSLabelShift, 20)
	add(&Field{Name: "mpls_label", Aliases: []string{"OXM_OF_MPLS_LABEL"}, Bits: 20, Writable: true, Needs: needsMPLS,
		OXM: []OXMCode{oxm(oxmBasic, 34, 4)}, syntax: syntaxDecimal, rewrite: rewriteMPLS(ActSetMPLSLabel)}, get, set)
	get, set = bitsOf32(func(k *Key) *uint32 { return &k.MPLS }, header.MPLSTCShift, 3)
	add(&Field{Name: "mpls_tc", Aliases: []string{"OXM_OF_MPLS_TC"}, Bits: 3, Writable: true, Needs: needsMPLS,
		OXM: []OXMCode{oxm(oxmBasic, 35, 1)}, syntax: syntaxDecimal, rewrite: rewriteMPLS(ActSetMPLSTC)}, get, set)
	get, set = bitsOf32(func(k *Key) *uint32 { return &k.MPLS }, 0, 8)
	add(&Field{Name: "mpls_ttl", Aliases: []string{"NXM_NX_MPLS_TTL"}, Bits: 8, Writable: true, Needs: needsMPLS,
		OXM: []OXMCode{oxm(oxmNXM1, 30, 1)}, syntax: syntaxDecimal, rewrite: rewriteMPLS(ActSetMPLSTTL)}, get, set)
	get, set = bitsOf32(func(k *Key) *uint32 { return &k.MPLS }, header.MPLSBOSShift, 1)
	add(&Field{Name: "mpls_bos", Aliases: []string{"OXM_OF_MPLS_BOS"}, Bits: 1, readOnly: true, Needs: needsMPLS,
		OXM: []OXMCode{oxm(oxmBasic, 36, 1)}, syntax: syntaxDecimal}, get, set)

	get, set = bytesField(func(k *Key) []byte { return k.NwSrc[:] })
	add(&Field{Name: "nw_src", Aliases: []string{"ip_src", "NXM_OF_IP_SRC", "OXM_OF_IPV4_SRC"}, Bits: 32, Maskable: true,
		Writable: true, Needs: needsIPv4OrARP, OXM: []OXMCode{oxmNeeds(oxmBasic, 11, 4, needsIPv4), oxmNeeds(oxmNXM0, 7, 4, needsIPv4)},
		syntax: syntaxIPv4, print: printUnlessARP, rewrite: rewriteIPv4(ActSetNwSrc, func(k *Key) *[4]byte { return &k.NwSrc })}, get, set)
	add(&Field{Name: "arp_spa", Aliases: []string{"NXM_OF_ARP_SPA", "OXM_OF_ARP_SPA"}, Bits: 32, Maskable: true, Writable: true,
		Needs: needsARP, OXM: []OXMCode{oxm(oxmBasic, 22, 4), oxm(oxmNXM0, 16, 4)}, syntax: syntaxIPv4, print: printIfARP,
		Frame: &InFrame{InARP, header.ARPSPAOffset, header.IPv4AddrLen}}, get, set)
	get, set = bytesField(func(k *Key) []byte { return k.NwDst[:] })
	add(&Field{Name: "nw_dst", Aliases: []string{"ip_dst", "NXM_OF_IP_DST", "OXM_OF_IPV4_DST"}, Bits: 32, Maskable: true,
		Writable: true, Needs: needsIPv4OrARP, OXM: []OXMCode{oxmNeeds(oxmBasic, 12, 4, needsIPv4), oxmNeeds(oxmNXM0, 8, 4, needsIPv4)},
		syntax: syntaxIPv4, print: printUnlessARP, rewrite: rewriteIPv4(ActSetNwDst, func(k *Key) *[4]byte { return &k.NwDst })}, get, set)
	add(&Field{Name: "arp_tpa", Aliases: []string{"NXM_OF_ARP_TPA", "OXM_OF_ARP_TPA"}, Bits: 32, Maskable: true, Writable: true,
		Needs: needsARP, OXM: []OXMCode{oxm(oxmBasic, 23, 4), oxm(oxmNXM0, 17, 4)}, syntax: syntaxIPv4, print: printIfARP,
		Frame: &InFrame{InARP, header.ARPTPAOffset, header.IPv4AddrLen}}, get, set)
	// An ARP frame's hardware addresses, and a neighbour discovery
	// message's link-layer ones: the same bits, as in OVS.
	get, set = bytesField(func(k *Key) []byte { return k.ArpSHA[:] })
	add(&Field{Name: "arp_sha", Aliases: []string{"NXM_NX_ARP_SHA", "OXM_OF_ARP_SHA"}, Bits: 48, Maskable: true, Writable: true,
		Needs: needsARP, OXM: []OXMCode{oxm(oxmBasic, 24, 6), oxm(oxmNXM1, 17, 6)}, syntax: syntaxMAC, print: printIfARP,
		Frame: &InFrame{InARP, header.ARPSHAOffset, header.MACLen}}, get, set)
	add(&Field{Name: "nd_sll", Aliases: []string{"NXM_NX_ND_SLL", "OXM_OF_IPV6_ND_SLL"}, Bits: 48, Maskable: true, Writable: true,
		Needs: needsNDSolicit, OXM: []OXMCode{oxm(oxmBasic, 32, 6), oxm(oxmNXM1, 24, 6)}, syntax: syntaxMAC, print: printUnlessARP,
		Frame: &InFrame{InNDSLL, 0, header.MACLen}}, get, set)
	get, set = bytesField(func(k *Key) []byte { return k.ArpTHA[:] })
	add(&Field{Name: "arp_tha", Aliases: []string{"NXM_NX_ARP_THA", "OXM_OF_ARP_THA"}, Bits: 48, Maskable: true, Writable: true,
		Needs: needsARP, OXM: []OXMCode{oxm(oxmBasic, 25, 6), oxm(oxmNXM1, 18, 6)}, syntax: syntaxMAC, print: printIfARP,
		Frame: &InFrame{InARP, header.ARPTHAOffset, header.MACLen}}, get, set)
	add(&Field{Name: "nd_tll", Aliases: []string{"NXM_NX_ND_TLL", "OXM_OF_IPV6_ND_TLL"}, Bits: 48, Maskable: true, Writable: true,
		Needs: needsNDAdvert, OXM: []OXMCode{oxm(oxmBasic, 33, 6), oxm(oxmNXM1, 25, 6)}, syntax: syntaxMAC, print: printUnlessARP,
		Frame: &InFrame{InNDTLL, 0, header.MACLen}}, get, set)

	get, set = bytesField(func(k *Key) []byte { return k.IPv6Src[:] })
	add(&Field{Name: "ipv6_src", Aliases: []string{"NXM_NX_IPV6_SRC", "OXM_OF_IPV6_SRC"}, Bits: 128, Maskable: true,
		Writable: true, Needs: needsIPv6, OXM: []OXMCode{oxm(oxmBasic, 26, 16), oxm(oxmNXM1, 19, 16)}, syntax: syntaxIPv6,
		rewrite: rewriteIPv6(ActSetIPv6Src, func(k *Key) *[16]byte { return &k.IPv6Src })}, get, set)
	get, set = bytesField(func(k *Key) []byte { return k.IPv6Dst[:] })
	add(&Field{Name: "ipv6_dst", Aliases: []string{"NXM_NX_IPV6_DST", "OXM_OF_IPV6_DST"}, Bits: 128, Maskable: true,
		Writable: true, Needs: needsIPv6, OXM: []OXMCode{oxm(oxmBasic, 27, 16), oxm(oxmNXM1, 20, 16)}, syntax: syntaxIPv6,
		rewrite: rewriteIPv6(ActSetIPv6Dst, func(k *Key) *[16]byte { return &k.IPv6Dst })}, get, set)
	get, set = func(k *Key) Value { return Value{Lo: uint64(k.IPv6Label)} }, func(k *Key, v Value) { k.IPv6Label = uint32(v.Lo) }
	// The label's 20 bits are the low ones of the header's first word.
	add(&Field{Name: "ipv6_label", Aliases: []string{"NXM_NX_IPV6_LABEL", "OXM_OF_IPV6_FLABEL"}, Bits: 20, Maskable: true,
		Writable: true, Needs: needsIPv6, OXM: []OXMCode{oxm(oxmBasic, 28, 4), oxm(oxmNXM1, 27, 4)}, syntax: syntaxHex,
		print: printIPv6Label, Frame: &InFrame{InIPv6, 1, 3}}, get, set)
	// Which extension headers the packet has (ExtHdrWalk): OpenFlow 1.3's
	// pseudo-field, which Open vSwitch does not have, so the flow syntax
	// is xswitch's, that of tcp_flags in ovs-ofctl (extHdrNames).
	get, set = u16Field(func(k *Key) *uint16 { return &k.IPv6ExtHdr })
	parseFlags, printFlags := extHdrNames.syntax()
	add(&Field{Name: "ipv6_exthdr", Aliases: []string{"OXM_OF_IPV6_EXTHDR"}, Bits: 9, Maskable: true, readOnly: true,
		Needs: needsIPv6, OXM: []OXMCode{oxm(oxmBasic, 39, 2)}, syntax: syntaxHex, parse: parseFlags, print: printFlags}, get, set)

	get, set = u8Field(func(k *Key) *uint8 { return &k.NwProto })
	add(&Field{Name: "nw_proto", Aliases: []string{"ip_proto", "NXM_OF_IP_PROTO", "OXM_OF_IP_PROTO"}, Bits: 8, readOnly: true,
		Needs: needsIPOrARP, OXM: []OXMCode{oxmNeeds(oxmBasic, 10, 1, needsIP), oxmNeeds(oxmNXM0, 6, 1, needsIP)},
		syntax: syntaxDecimal, print: printNwProto}, get, set)
	// The opcode is 16 bits in the frame, of which the key keeps the low
	// 8, as OVS's does; its rewrite writes the 8 bits, the high byte 0.
	add(&Field{Name: "arp_op", Aliases: []string{"NXM_OF_ARP_OP", "OXM_OF_ARP_OP"}, Bits: 8, Writable: true,
		Needs: needsARP, OXM: []OXMCode{oxm(oxmBasic, 21, 2), oxm(oxmNXM0, 15, 2)}, syntax: syntaxDecimal, print: noPrint,
		Frame: &InFrame{InARP, header.ARPOpOffset, 2}}, get, set)

	get, set = bitsOf8(func(k *Key) *uint8 { return &k.NwTOS }, 2, 6)
	dscpGet, dscpSet := get, set
	rewriteDSCP := rewriteIP(ActSetNwTOS, func(k *Key) uint16 { return uint16(k.NwTOS & tosDSCPMask) })
	add(&Field{Name: "nw_tos", Aliases: []string{"NXM_OF_IP_TOS"}, Bits: 8, Writable: true, Needs: needsIP,
		OXM: []OXMCode{oxm(oxmNXM0, 5, 1)}, parse: parseNwTOS, print: printNwTOS, rewrite: rewriteDSCP},
		func(k *Key) Value { return Value{Lo: dscpGet(k).Lo << 2} },
		func(k *Key, v Value) { dscpSet(k, Value{Lo: v.Lo >> 2}) })
	add(&Field{Name: "ip_dscp", Aliases: []string{"OXM_OF_IP_DSCP"}, Bits: 6, Writable: true, Needs: needsIP,
		OXM: []OXMCode{oxm(oxmBasic, 8, 1)}, syntax: syntaxDecimal, print: noPrint, rewrite: rewriteDSCP}, get, set)
	get, set = bitsOf8(func(k *Key) *uint8 { return &k.NwTOS }, 0, 2)
	add(&Field{Name: "nw_ecn", Aliases: []string{"ip_ecn", "NXM_NX_IP_ECN", "OXM_OF_IP_ECN"}, Bits: 2, Writable: true,
		Needs: needsIP, OXM: []OXMCode{oxm(oxmBasic, 9, 1), oxm(oxmNXM1, 28, 1)}, syntax: syntaxDecimal,
		rewrite: rewriteIP(ActSetNwECN, func(k *Key) uint16 { return uint16(k.NwTOS & tosECNMask) })}, get, set)
	get, set = u8Field(func(k *Key) *uint8 { return &k.NwTTL })
	add(&Field{Name: "nw_ttl", Aliases: []string{"NXM_NX_IP_TTL"}, Bits: 8, Writable: true, Needs: needsIP,
		OXM: []OXMCode{oxm(oxmNXM1, 29, 1)}, syntax: syntaxDecimal, rewrite: rewriteIP(ActSetNwTTL, func(k *Key) uint16 { return uint16(k.NwTTL) })}, get, set)
	get, set = u8Field(func(k *Key) *uint8 { return &k.NwFrag })
	add(&Field{Name: "ip_frag", Aliases: []string{"nw_frag", "NXM_NX_IP_FRAG"}, Bits: 2, Maskable: true, readOnly: true,
		Needs: needsIP, OXM: []OXMCode{oxm(oxmNXM1, 26, 1)}, syntax: syntaxFrag}, get, set)

	get, set = u16Field(func(k *Key) *uint16 { return &k.TpSrc })
	rewriteTpSrc := rewritePort(ActSetTpSrc, func(k *Key) *uint16 { return &k.TpSrc })
	add(&Field{Name: "tp_src", Bits: 16, Maskable: true, Writable: true, Needs: needsPorts,
		syntax: syntaxDecimal, print: printUnlessICMP, rewrite: rewriteTpSrc}, get, set)
	add(&Field{Name: "tcp_src", Aliases: []string{"NXM_OF_TCP_SRC", "OXM_OF_TCP_SRC"}, Bits: 16, Maskable: true,
		Writable: true, Needs: needsTCP, OXM: []OXMCode{oxm(oxmBasic, 13, 2), oxm(oxmNXM0, 9, 2)}, syntax: syntaxDecimal, print: noPrint, rewrite: rewriteTpSrc}, get, set)
	add(&Field{Name: "udp_src", Aliases: []string{"NXM_OF_UDP_SRC", "OXM_OF_UDP_SRC"}, Bits: 16, Maskable: true,
		Writable: true, Needs: needsUDP, OXM: []OXMCode{oxm(oxmBasic, 15, 2), oxm(oxmNXM0, 11, 2)}, syntax: syntaxDecimal, print: noPrint, rewrite: rewriteTpSrc}, get, set)
	// set_field to an SCTP port is OVS's too, unlike TCP's and UDP's,
	// which are mod_tp_src and mod_tp_dst: it is the field's write.
	add(&Field{Name: "sctp_src", Aliases: []string{"OXM_OF_SCTP_SRC"}, Bits: 16, Maskable: true, Writable: true,
		Needs: needsSCTP, OXM: []OXMCode{oxm(oxmBasic, 17, 2)}, syntax: syntaxDecimal, print: noPrint,
		Frame: &InFrame{InSCTP, header.SrcPortOffset, 2}}, get, set)
	// icmp_type and icmp_code are ICMP's, and icmpv6_type and icmpv6_code
	// ICMPv6's, over the same bits: in actions. A match on either names
	// them by either, as ovs-ofctl reads them, and prints icmp_type and
	// icmp_code.
	get, set = bitsOf16(func(k *Key) *uint16 { return &k.TpSrc }, 0, 8)
	add(&Field{Name: "icmp_type", Aliases: []string{"NXM_OF_ICMP_TYPE", "OXM_OF_ICMPV4_TYPE"}, Bits: 8, Writable: true,
		Needs: needsICMP, ActionNeeds: needsICMPv4, OXM: []OXMCode{oxmNeeds(oxmBasic, 19, 1, needsICMPv4), oxmNeeds(oxmNXM0, 13, 1, needsICMPv4)},
		syntax: syntaxDecimal, print: printIfICMP, Frame: &InFrame{InICMP, 0, 1}}, get, set)
	add(&Field{Name: "icmpv6_type", Aliases: []string{"NXM_NX_ICMPV6_TYPE", "OXM_OF_ICMPV6_TYPE"}, Bits: 8, Writable: true,
		Needs: needsICMP, ActionNeeds: needsICMPv6, OXM: []OXMCode{oxmNeeds(oxmBasic, 29, 1, needsICMPv6), oxmNeeds(oxmNXM1, 21, 1, needsICMPv6)},
		syntax: syntaxDecimal, print: noPrint, Frame: &InFrame{InICMP, 0, 1}}, get, set)
	get, set = u16Field(func(k *Key) *uint16 { return &k.TpDst })
	rewriteTpDst := rewritePort(ActSetTpDst, func(k *Key) *uint16 { return &k.TpDst })
	add(&Field{Name: "tp_dst", Bits: 16, Maskable: true, Writable: true, Needs: needsPorts,
		syntax: syntaxDecimal, print: printUnlessICMP, rewrite: rewriteTpDst}, get, set)
	add(&Field{Name: "tcp_dst", Aliases: []string{"NXM_OF_TCP_DST", "OXM_OF_TCP_DST"}, Bits: 16, Maskable: true,
		Writable: true, Needs: needsTCP, OXM: []OXMCode{oxm(oxmBasic, 14, 2), oxm(oxmNXM0, 10, 2)}, syntax: syntaxDecimal, print: noPrint, rewrite: rewriteTpDst}, get, set)
	add(&Field{Name: "udp_dst", Aliases: []string{"NXM_OF_UDP_DST", "OXM_OF_UDP_DST"}, Bits: 16, Maskable: true,
		Writable: true, Needs: needsUDP, OXM: []OXMCode{oxm(oxmBasic, 16, 2), oxm(oxmNXM0, 12, 2)}, syntax: syntaxDecimal, print: noPrint, rewrite: rewriteTpDst}, get, set)
	add(&Field{Name: "sctp_dst", Aliases: []string{"OXM_OF_SCTP_DST"}, Bits: 16, Maskable: true, Writable: true,
		Needs: needsSCTP, OXM: []OXMCode{oxm(oxmBasic, 18, 2)}, syntax: syntaxDecimal, print: noPrint,
		Frame: &InFrame{InSCTP, header.DstPortOffset, 2}}, get, set)
	get, set = bitsOf16(func(k *Key) *uint16 { return &k.TpDst }, 0, 8)
	add(&Field{Name: "icmp_code", Aliases: []string{"NXM_OF_ICMP_CODE", "OXM_OF_ICMPV4_CODE"}, Bits: 8, Writable: true,
		Needs: needsICMP, ActionNeeds: needsICMPv4, OXM: []OXMCode{oxmNeeds(oxmBasic, 20, 1, needsICMPv4), oxmNeeds(oxmNXM0, 14, 1, needsICMPv4)},
		syntax: syntaxDecimal, print: printIfICMP, Frame: &InFrame{InICMP, 1, 1}}, get, set)
	add(&Field{Name: "icmpv6_code", Aliases: []string{"NXM_NX_ICMPV6_CODE", "OXM_OF_ICMPV6_CODE"}, Bits: 8, Writable: true,
		Needs: needsICMP, ActionNeeds: needsICMPv6, OXM: []OXMCode{oxmNeeds(oxmBasic, 30, 1, needsICMPv6), oxmNeeds(oxmNXM1, 22, 1, needsICMPv6)},
		syntax: syntaxDecimal, print: noPrint, Frame: &InFrame{InICMP, 1, 1}}, get, set)

	get, set = bytesField(func(k *Key) []byte { return k.NDTarget[:] })
	add(&Field{Name: "nd_target", Aliases: []string{"NXM_NX_ND_TARGET", "OXM_OF_IPV6_ND_TARGET"}, Bits: 128, Maskable: true, Writable: true,
		Needs: needsND, OXM: []OXMCode{oxm(oxmBasic, 31, 16), oxm(oxmNXM1, 23, 16)}, syntax: syntaxIPv6,
		Frame: &InFrame{InND, header.NDTargetOffset, header.IPv6AddrLen}}, get, set)
	return table
}

// Printers for the bits a field owns in a match.

func printValue(f *Field, m *Match) string {
	mask := f.get(&m.Mask)
	if mask.IsZero() {
		return ""
	}
	return f.Name + "=" + f.formatValue(f.get(&m.Key), mask)
}

// printShorthand prints the protocol shorthand of m, if it has one: it
// stands for dl_type and, for some, nw_proto.
func printShorthand(_ *Field, m *Match) string {
	name, _ := protocolShorthandOf(m)
	return name
}

func printDlType(f *Field, m *Match) string {
	if name, _ := protocolShorthandOf(m); name != "" {
		return "" // the shorthand said it
	}
	return printValue(f, m)
}

func printNwProto(f *Field, m *Match) string {
	if _, implied := protocolShorthandOf(m); implied {
		return ""
	}
	if hasDlType(m, EtherTypeARP) {
		return printValue(fieldsByName["arp_op"], m)
	}
	return printValue(f, m)
}

func printUnlessARP(f *Field, m *Match) string {
	if hasDlType(m, EtherTypeARP) {
		return ""
	}
	return printValue(f, m)
}

func printIfARP(f *Field, m *Match) string {
	if !hasDlType(m, EtherTypeARP) {
		return ""
	}
	return printValue(f, m)
}

// printIPv6Label prints the flow label in five hex digits, as ovs-ofctl.
func printIPv6Label(f *Field, m *Match) string {
	mask := f.get(&m.Mask)
	switch {
	case mask.IsZero():
		return ""
	case mask == f.full():
		return fmt.Sprintf("%s=0x%05x", f.Name, f.get(&m.Key).Lo)
	}
	return fmt.Sprintf("%s=0x%05x/0x%05x", f.Name, f.get(&m.Key).Lo, mask.Lo)
}

func printUnlessICMP(f *Field, m *Match) string {
	if isICMPMatch(m) {
		return ""
	}
	return printValue(f, m)
}

func printIfICMP(f *Field, m *Match) string {
	if !isICMPMatch(m) {
		return ""
	}
	return printValue(f, m)
}

// printNwTOS prints the DSCP bits of the TOS byte as nw_tos does: the whole
// byte with its low two bits zero, in decimal when matched whole.
func printNwTOS(f *Field, m *Match) string {
	mask := f.get(&m.Mask)
	if mask.IsZero() {
		return ""
	}
	v := f.get(&m.Key)
	if mask.Lo == tosDSCPMask {
		return fmt.Sprintf("nw_tos=%d", v.Lo)
	}
	return fmt.Sprintf("nw_tos=%#x/%#x", v.Lo, mask.Lo)
}

// printVLAN prints the VLAN TCI as OVS does: dl_vlan and dl_vlan_pcp when
// the match is on a tagged frame's whole VID and/or PCP, vlan_tci otherwise
// (including "no tag", vlan_tci=0x0000).
func printVLAN(f *Field, m *Match) string {
	tci, mask := m.Key.VLANTCI, m.Mask.VLANTCI
	vidMask, pcpMask := mask&vlanVIDMask, mask&vlanPCPMask
	switch {
	case mask == 0:
		return ""
	case mask&VLANCFI != 0 && tci&VLANCFI != 0 &&
		(vidMask == 0 || vidMask == vlanVIDMask) && (pcpMask == 0 || pcpMask == vlanPCPMask) &&
		vidMask|pcpMask != 0:
		var parts []string
		if vidMask != 0 {
			parts = append(parts, fmt.Sprintf("dl_vlan=%d", tci&vlanVIDMask))
		}
		if pcpMask != 0 {
			parts = append(parts, fmt.Sprintf("dl_vlan_pcp=%d", tci>>vlanPCPShift))
		}
		return strings.Join(parts, ",")
	}
	return "vlan_tci=" + f.formatValue(Value{Lo: uint64(tci)}, Value{Lo: uint64(mask)})
}

// formatValue prints v under mask in the field's syntax.
func (f *Field) formatValue(v, mask Value) string {
	full := mask == f.full()
	switch f.syntax {
	case syntaxMAC:
		text := macText([6]byte(valueBytes(v, 6)))
		if !full {
			text += "/" + macText([6]byte(valueBytes(mask, 6)))
		}
		return text
	case syntaxIPv4:
		return maskedIPText(valueBytes(v, 4), valueBytes(mask, 4))
	case syntaxIPv6:
		return maskedIPText(valueBytes(v, 16), valueBytes(mask, 16))
	case syntaxFrag:
		return ipFragText(uint8(v.Lo), uint8(mask.Lo))
	case syntaxHex4:
		if full {
			return fmt.Sprintf("0x%04x", v.Lo)
		}
		return fmt.Sprintf("0x%04x/0x%04x", v.Lo, mask.Lo)
	case syntaxHex:
		if full {
			return hexText(v)
		}
		return hexText(v) + "/" + hexText(mask)
	case syntaxPort:
		if full {
			return portText(uint16(v.Lo))
		}
		return fmt.Sprintf("%#x/%#x", v.Lo, mask.Lo)
	}
	if full {
		return formatDecimal(v)
	}
	return fmt.Sprintf("%#x/%#x", v.Lo, mask.Lo)
}

// hexText prints v in hexadecimal, 0x first, all 128 bits of it.
func hexText(v Value) string {
	if v.Hi != 0 {
		return fmt.Sprintf("0x%x%016x", v.Hi, v.Lo)
	}
	return fmt.Sprintf("%#x", v.Lo)
}

func formatDecimal(v Value) string {
	if v.Hi != 0 {
		return fmt.Sprintf("0x%x%016x", v.Hi, v.Lo)
	}
	return strconv.FormatUint(v.Lo, 10)
}

// valueBytes is the low n bytes of v, big-endian.
func valueBytes(v Value, n int) []byte {
	b := make([]byte, n)
	PutValueBytes(b, v)
	return b
}

// parseValue reads a value of the field, and a mask if it is maskable;
// without one the mask is full.
func (f *Field) parseValue(text string, ports PortNames) (v, mask Value, err error) {
	mask = f.full()
	switch f.syntax {
	case syntaxMAC:
		addrText, maskText, hasMask := strings.Cut(text, "/")
		addr, ok := macFromText(addrText)
		if !ok {
			return v, mask, fmt.Errorf("invalid MAC address %q", addrText)
		}
		if hasMask {
			m, ok := macFromText(maskText)
			if !ok {
				return v, mask, fmt.Errorf("invalid MAC mask %q", maskText)
			}
			mask = ValueOfBytes(m[:])
		}
		return ValueOfBytes(addr[:]).And(mask), mask, nil
	case syntaxIPv4, syntaxIPv6:
		size := 4
		if f.syntax == syntaxIPv6 {
			size = 16
		}
		addr, m, err := maskedIPFromText(text, size)
		if err != nil {
			return v, mask, err
		}
		return ValueOfBytes(addr), ValueOfBytes(m), nil
	case syntaxFrag:
		for _, fr := range ipFragValues {
			if fr.name == text {
				return Value{Lo: uint64(fr.value)}, Value{Lo: uint64(fr.mask)}, nil
			}
		}
		return v, mask, fmt.Errorf("invalid %s %q (want no, yes, first, later or not_later)", f.Name, text)
	case syntaxPort:
		n, err := portFromText(text, ports)
		return Value{Lo: uint64(n)}, mask, err
	}
	valueText, maskText, hasMask := text, "", false
	if f.Maskable {
		valueText, maskText, hasMask = strings.Cut(text, "/")
	}
	if v, err = f.numberFromText(f.Name, valueText); err != nil {
		return v, mask, err
	}
	if hasMask {
		if mask, err = f.numberFromText(f.Name+" mask", maskText); err != nil {
			return v, mask, err
		}
	}
	return v.And(mask), mask, nil
}

// numberFromText reads a number of the field's width.
func (f *Field) numberFromText(what, text string) (Value, error) {
	v, err := valueFromText(what, text)
	if err == nil && v.BitLen() > int(f.Bits) {
		err = fmt.Errorf("%s %s out of range", what, text)
	}
	return v, err
}

// valueFromText reads a decimal or 0x-prefixed hexadecimal number of up to
// 128 bits.
func valueFromText(what, text string) (Value, error) {
	if len(text) > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X') {
		digits := text[2:]
		if len(digits) > 32 {
			return Value{}, fmt.Errorf("%s %s out of range", what, text)
		}
		var v Value
		for _, c := range digits {
			d, err := strconv.ParseUint(string(c), 16, 8)
			if err != nil {
				return Value{}, fmt.Errorf("invalid %s %q", what, text)
			}
			v = v.Shl(4)
			v.Lo |= d
		}
		return v, nil
	}
	n, isNumber, fits := scanUint(text)
	switch {
	case !isNumber:
		return Value{}, fmt.Errorf("invalid %s %q", what, text)
	case !fits:
		return Value{}, fmt.Errorf("%s %s out of range", what, text)
	}
	return Value{Lo: n}, nil
}

// parseMatch reads a match on the field: NAME=VALUE[/MASK].
func (f *Field) parseMatch(value string, ports PortNames) (Match, error) {
	if f.parse != nil {
		return f.parse(f, value)
	}
	v, mask, err := f.parseValue(value, ports)
	var m Match
	if err == nil {
		f.set(&m.Key, v.And(mask))
		f.set(&m.Mask, mask)
	}
	return m, err
}
