package flow

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The syntax of the pipeline's actions, which act on what the pipeline
// carries with a frame (registers, metadata, the input port), on where it
// goes next, and on any field by its bits, as ovs-actions(7) writes them:
//
//	load:0x5->NXM_NX_REG0[0..15]   load:5->reg0[]   load:1->reg2[3]
//	set_field:0x5/0xff->reg0        move:reg0[0..15]->reg1[16..31]
//	write_metadata:0x1/0xff         resubmit(,2)  resubmit:3  resubmit(3,2)
//	goto_table:2                    move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[]
//
// A load or move into a header field changes the frame too: the pipeline
// works out the rewrites it makes (Field.AppendRewrites).

// subfield is a field's bits [ofs, ofs+nbits), as NAME[], NAME[N] or
// NAME[A..B] write them; a bare NAME is all of it.
type subfield struct {
	field       *Field
	ofs, nbits  uint
	wholeSyntax bool // written NAME or NAME[]
}

// parseSubfield reads a subfield of a load or move in a rule whose match
// is m, and names its bits as Open vSwitch does (inOVSTerms).
func parseSubfield(text string, m *Match) (subfield, error) {
	name, bitsText, hasBits := strings.Cut(text, "[")
	f, ok := fieldsByName[name]
	if !ok || f.Bits == 0 {
		return subfield{}, fmt.Errorf("unknown field %q", name)
	}
	sf := subfield{field: f, nbits: f.Bits, wholeSyntax: true}
	if !hasBits {
		return sf.inOVSTerms(m), nil
	}
	bitsText, closed := strings.CutSuffix(bitsText, "]")
	if !closed {
		return subfield{}, fmt.Errorf("%q: missing ]", text)
	}
	if bitsText == "" {
		return sf.inOVSTerms(m), nil
	}
	startText, endText, isRange := strings.Cut(bitsText, "..")
	if !isRange {
		endText = startText
	}
	start, err1 := strconv.ParseUint(startText, 10, 8)
	end, err2 := strconv.ParseUint(endText, 10, 8)
	switch {
	case err1 != nil || err2 != nil:
		return subfield{}, fmt.Errorf("%q: invalid bit range", text)
	case start > end:
		return subfield{}, fmt.Errorf("%q: the range runs backwards", text)
	case end >= uint64(f.Bits):
		return subfield{}, fmt.Errorf("%q: %s has only %d bits", text, name, f.Bits)
	}
	return subfield{field: f, ofs: uint(start), nbits: uint(end - start + 1)}.inOVSTerms(m), nil
}

// inOVSTerms gives sf's bits, in a rule whose match is m, by the field
// that Open vSwitch names them by in load and move, so that what xswitch
// prints reads back the same there. OVS takes tp_src and tp_dst for
// tcp_src and tcp_dst (they are the UDP ports of a UDP match to xswitch);
// it has dl_vlan and dl_vlan_pcp in matches alone, and its vlan_vid has
// the VID's 12 bits, where xswitch's has OpenFlow's 13, the "present"
// bit among them: those are the bits of vlan_tci.
func (sf subfield) inOVSTerms(m *Match) subfield {
	switch sf.field.Name {
	case "tp_src", "tp_dst":
		proto := "tcp"
		if isUDPMatch(m) {
			proto = "udp"
		}
		sf.field = fieldsByName[proto+sf.field.Name[2:]]
	case "dl_vlan":
		sf.field = fieldVLANTCI
	case "dl_vlan_pcp":
		sf.field, sf.ofs = fieldVLANTCI, sf.ofs+vlanPCPShift
	case "vlan_vid":
		if sf.ofs+sf.nbits > vidBits {
			sf.field = fieldVLANTCI
		}
	}
	return sf
}

// vidBits is the width of a VLAN tag's VID, below the bit that OpenFlow
// calls "present" (VLANCFI).
const vidBits = 12

func (sf subfield) mask() Value { return Ones(sf.nbits).Shl(sf.ofs) }

func (sf subfield) String() string {
	if sf.ofs == 0 && sf.nbits == sf.field.Bits {
		return sf.field.Name + "[]"
	}
	if sf.nbits == 1 {
		return fmt.Sprintf("%s[%d]", sf.field.Name, sf.ofs)
	}
	return fmt.Sprintf("%s[%d..%d]", sf.field.Name, sf.ofs, sf.ofs+sf.nbits-1)
}

// writable checks that a load, move or set_field may write sf's field.
func (sf subfield) writable(action string) error {
	if !sf.field.Writable {
		return fmt.Errorf("%s: field %s cannot be written", action, sf.field.Name)
	}
	return nil
}

// loadAction parses load's "VALUE->DST[a..b]" in a rule whose match is m.
func loadAction(arg string, m *Match) (Action, *Prerequisite, error) {
	valueText, dstText, ok := cutLast(arg, "->")
	if !ok {
		return Action{}, nil, fmt.Errorf("load %q: want VALUE->FIELD[BITS]", arg)
	}
	dst, err := parseSubfield(dstText, m)
	if err != nil {
		return Action{}, nil, fmt.Errorf("load: %w", err)
	}
	if err := dst.writable("load"); err != nil {
		return Action{}, nil, err
	}
	v, err := valueFromText("load value", valueText)
	if err != nil {
		return Action{}, nil, err
	}
	if v.BitLen() > int(dst.nbits) {
		return Action{}, nil, fmt.Errorf("load: value %s does not fit in %d bits", valueText, dst.nbits)
	}
	return LoadAction(dst.field, dst.ofs, dst.nbits, v)
}

// LoadAction is load of v into bits [ofs, ofs+nbits) of field f, and what
// it needs of the match.
func LoadAction(f *Field, ofs, nbits uint, v Value) (Action, *Prerequisite, error) {
	dst := subfield{field: f, ofs: ofs, nbits: nbits}
	if err := dst.check("load"); err != nil {
		return Action{}, nil, err
	}
	if v.BitLen() > int(nbits) {
		return Action{}, nil, fmt.Errorf("load: value %#x does not fit in %d bits", v.Lo, nbits)
	}
	if _, ok := maskedHeaders[f.Name]; ok && nbits < f.Bits {
		// The field's mod_ action, changing the load's bits alone: what
		// set_field of them is too, so that the two are one action.
		a, needs := maskedHeaderSet(f, v.Shl(ofs), dst.mask())
		return a, needs, nil
	}
	return Action{Type: ActLoad, Field: f, Imm: v.Shl(ofs), Mask: dst.mask(),
		Ofs: uint8(ofs), NBits: uint8(nbits)}, f.actionNeeds(), nil
}

// check checks that a load or move may write sf, bits that its field has.
func (sf subfield) check(action string) error {
	if sf.nbits == 0 || sf.ofs+sf.nbits > sf.field.Bits {
		return fmt.Errorf("%s: %s has no bits %d..%d", action, sf.field.Name, sf.ofs, sf.ofs+sf.nbits-1)
	}
	return sf.writable(action)
}

// moveAction parses move's "SRC[a..b]->DST[c..d]" in a rule whose match
// is m; both sides have the same width.
func moveAction(arg string, m *Match) (Action, *Prerequisite, error) {
	srcText, dstText, ok := cutLast(arg, "->")
	if !ok {
		return Action{}, nil, fmt.Errorf("move %q: want SRC[BITS]->DST[BITS]", arg)
	}
	src, err := parseSubfield(srcText, m)
	if err != nil {
		return Action{}, nil, fmt.Errorf("move: %w", err)
	}
	dst, err := parseSubfield(dstText, m)
	if err != nil {
		return Action{}, nil, fmt.Errorf("move: %w", err)
	}
	if err := dst.writable("move"); err != nil {
		return Action{}, nil, err
	}
	if src.nbits != dst.nbits {
		return Action{}, nil, fmt.Errorf("move: the source has %d bits and the destination %d", src.nbits, dst.nbits)
	}
	return MoveAction(src.field, src.ofs, dst.field, dst.ofs, dst.nbits)
}

// MoveAction is move of bits [srcOfs, srcOfs+nbits) of field src to
// [dstOfs, dstOfs+nbits) of dst, and what it needs of the match.
func MoveAction(src *Field, srcOfs uint, dst *Field, dstOfs, nbits uint) (Action, *Prerequisite, error) {
	if nbits == 0 || srcOfs+nbits > src.Bits {
		return Action{}, nil, fmt.Errorf("move: %s has no bits %d..%d", src.Name, srcOfs, srcOfs+nbits-1)
	}
	if err := (subfield{field: dst, ofs: dstOfs, nbits: nbits}).check("move"); err != nil {
		return Action{}, nil, err
	}
	return Action{Type: ActMove, Src: src, SrcOfs: uint8(srcOfs), Field: dst, Ofs: uint8(dstOfs),
		NBits: uint8(nbits)}, allNeeded(src.actionNeeds(), dst.actionNeeds()), nil
}

// writeMetadataAction parses write_metadata's "VALUE[/MASK]".
func writeMetadataAction(arg string) (Action, error) {
	v, mask, err := fieldMetadata.parseValue(arg, nil)
	if err != nil {
		return Action{}, fmt.Errorf("write_metadata: %w", err)
	}
	return WriteMetadataAction(v.Lo, mask.Lo), nil
}

// fieldMetadata is the field write_metadata writes (set by init).
var fieldMetadata *Field

// WriteMetadataAction is the instruction write_metadata: metadata's bits
// under mask become v's.
func WriteMetadataAction(v, mask uint64) Action {
	return Action{Type: ActWriteMetadata, Field: fieldMetadata, Imm: Value{Lo: v & mask}, Mask: Value{Lo: mask}}
}

// resubmitAction parses resubmit's "PORT" (resubmit:2) or "[PORT],[TABLE]"
// (resubmit(,2), resubmit(2,3)).
func resubmitAction(arg string, ports PortNames) (Action, error) {
	portText, tableText, hasTable := strings.Cut(arg, ",")
	a := Action{Type: ActResubmit, Table: ThisTable}
	if portText == "" && tableText == "" {
		return Action{}, errors.New("resubmit needs a port or a table: resubmit:PORT or resubmit(,TABLE)")
	}
	if strings.EqualFold(portText, "in_port") {
		// OVS's way of saying "no port", which then needs a table.
		if tableText == "" {
			return Action{}, errors.New(`resubmit to IN_PORT needs a table: resubmit(,TABLE)`)
		}
		portText = ""
	}
	if portText != "" {
		port, err := portFromText(portText, ports)
		if err != nil {
			return Action{}, fmt.Errorf("resubmit: %w", err)
		}
		a.Port = port
	}
	if hasTable && tableText != "" {
		if strings.Contains(tableText, ",") {
			return Action{}, fmt.Errorf("resubmit(%s): only a port and a table are supported (no ct)", arg)
		}
		t, err := tableFromText("resubmit table", tableText, NumTables-1)
		if err != nil {
			return Action{}, err
		}
		a.Table = uint8(t)
	}
	return a, nil
}

// gotoTableAction parses goto_table's table for a rule in table from:
// OpenFlow only goes forward.
func gotoTableAction(arg string, from uint8) (Action, error) {
	t, err := tableFromText("goto_table", arg, NumTables-1)
	if err != nil {
		return Action{}, err
	}
	return GotoTableAction(uint8(t), from)
}

// GotoTableAction is the instruction goto_table:table of a rule in table
// from: OpenFlow only goes forward.
func GotoTableAction(table, from uint8) (Action, error) {
	if table <= from || table >= NumTables {
		return Action{}, fmt.Errorf("goto_table:%d in table %d: a rule may only go to a later table (resubmit can go back)", table, from)
	}
	return Action{Type: ActGotoTable, Table: table}, nil
}

// loadText prints a load of v into dst.
func loadText(dst subfield, v Value) string {
	return fmt.Sprintf("load:%s->%s", hexText(v), dst)
}

// pipelineActionText prints the pipeline's actions; ok is false for any
// other action.
func pipelineActionText(a Action) (text string, ok bool) {
	switch a.Type {
	case ActLoad:
		return loadText(subfield{field: a.Field, ofs: uint(a.Ofs), nbits: uint(a.NBits)}, a.Imm.Shr(uint(a.Ofs))), true
	case ActSetField:
		return "set_field:" + a.Field.formatValue(a.Imm, a.Mask) + "->" + a.Field.Name, true
	case ActMove:
		src := subfield{field: a.Src, ofs: uint(a.SrcOfs), nbits: uint(a.NBits)}
		dst := subfield{field: a.Field, ofs: uint(a.Ofs), nbits: uint(a.NBits)}
		return fmt.Sprintf("move:%s->%s", src, dst), true
	case ActWriteMetadata:
		if a.Mask.Lo == math.MaxUint64 {
			return fmt.Sprintf("write_metadata:%#x", a.Imm.Lo), true
		}
		return fmt.Sprintf("write_metadata:%#x/%#x", a.Imm.Lo, a.Mask.Lo), true
	case ActResubmit:
		port := ""
		if a.Port != 0 {
			port = portText(a.Port)
		}
		if a.Table == ThisTable {
			return "resubmit:" + port, true
		}
		return fmt.Sprintf("resubmit(%s,%d)", port, a.Table), true
	case ActGotoTable:
		return fmt.Sprintf("goto_table:%d", a.Table), true
	case ActClearActions:
		return "clear_actions", true
	}
	return "", false
}
