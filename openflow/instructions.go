package openflow

import "encoding/binary"

// InstructionType is an instruction's type (ofp_instruction_type).
type InstructionType uint16

// Instruction is one instruction of a flow. The concrete types are the
// Instruction* structs below.
type Instruction interface {
	InstructionType() InstructionType
}

// The OpenFlow 1.3 instruction types.
const (
	InstructionTypeGotoTable     InstructionType = 1
	InstructionTypeWriteMetadata InstructionType = 2
	InstructionTypeWriteActions  InstructionType = 3
	InstructionTypeApplyActions  InstructionType = 4
	InstructionTypeClearActions  InstructionType = 5
	InstructionTypeMeter         InstructionType = 6
	InstructionTypeExperimenter  InstructionType = 0xffff
)

type (
	InstructionGotoTable     struct{ TableID uint8 }
	InstructionWriteMetadata struct{ Metadata, Mask uint64 }
	InstructionWriteActions  struct{ Actions []Action }
	InstructionApplyActions  struct{ Actions []Action }
	InstructionClearActions  struct{}
	InstructionMeter         struct{ MeterID uint32 }
	InstructionExperimenter  struct {
		Experimenter uint32
		Data         []byte
	}
)

func (InstructionGotoTable) InstructionType() InstructionType { return InstructionTypeGotoTable }
func (InstructionWriteMetadata) InstructionType() InstructionType {
	return InstructionTypeWriteMetadata
}
func (InstructionWriteActions) InstructionType() InstructionType { return InstructionTypeWriteActions }
func (InstructionApplyActions) InstructionType() InstructionType { return InstructionTypeApplyActions }
func (InstructionClearActions) InstructionType() InstructionType { return InstructionTypeClearActions }
func (InstructionMeter) InstructionType() InstructionType        { return InstructionTypeMeter }
func (InstructionExperimenter) InstructionType() InstructionType { return InstructionTypeExperimenter }

// AppendInstructions appends the encoding of the instructions, in their
// order (Open vSwitch sends meter, apply-actions, clear-actions,
// write-actions, write-metadata, goto-table).
func AppendInstructions(b []byte, is []Instruction) []byte {
	for _, in := range is {
		b = appendInstruction(b, in)
	}
	return b
}

func appendInstruction(b []byte, in Instruction) []byte {
	b, start := beginTLV(b, uint16(in.InstructionType()))
	be := binary.BigEndian
	switch in := in.(type) {
	case InstructionGotoTable:
		b = append(b, in.TableID)
	case InstructionWriteMetadata:
		b = append(b, 0, 0, 0, 0)
		b = be.AppendUint64(b, in.Metadata)
		b = be.AppendUint64(b, in.Mask)
	case InstructionWriteActions:
		b = append(b, 0, 0, 0, 0)
		b = AppendActions(b, in.Actions)
	case InstructionApplyActions:
		b = append(b, 0, 0, 0, 0)
		b = AppendActions(b, in.Actions)
	case InstructionClearActions:
		// The header and its padding.
	case InstructionMeter:
		b = be.AppendUint32(b, in.MeterID)
	case InstructionExperimenter:
		b = be.AppendUint32(b, in.Experimenter)
		b = append(b, in.Data...)
	default:
		cannotEncode(in)
	}
	return endTLV(b, start)
}

// DecodeInstructions decodes a flow's instructions; b is exactly their
// bytes. Each type may come once, in any order (the specification fixes
// the order they run in). The decoded byte slices alias b.
func DecodeInstructions(b []byte) ([]Instruction, error) {
	var is []Instruction
	var seen uint8 // bit t: a standard instruction of type t came
	for len(b) > 0 {
		in, n, err := decodeInstruction(b)
		if err != nil {
			return nil, err
		}
		if t := in.InstructionType(); t != InstructionTypeExperimenter {
			if seen&(1<<t) != 0 {
				// OpenFlow 1.4's OFPBIC_DUP_INST; 1.3 has no code of its own.
				return nil, errorf(ErrBadInstruction, BadInstructionUnknownInst, "instruction type %d twice", t)
			}
			seen |= 1 << t
		}
		is = append(is, in)
		b = b[n:]
	}
	return is, nil
}

// instructionLen is the length of each fixed-size instruction, 0 for
// the others.
var instructionLen = [...]int{
	InstructionTypeGotoTable:     8,
	InstructionTypeWriteMetadata: 24,
	InstructionTypeClearActions:  8,
	InstructionTypeMeter:         8,
}

// decodeInstruction decodes the instruction at the start of b; n is its
// length.
func decodeInstruction(b []byte) (in Instruction, n int, err error) {
	if len(b) < 4 {
		return nil, 0, errorf(ErrBadInstruction, BadInstructionBadLen, "instruction header: %d of 4 bytes", len(b))
	}
	be := binary.BigEndian
	t := InstructionType(be.Uint16(b))
	n = int(be.Uint16(b[2:]))
	if n < 8 || n%8 != 0 || n > len(b) {
		return nil, 0, errorf(ErrBadInstruction, BadInstructionBadLen, "instruction type %d: length %d in %d bytes", t, n, len(b))
	}
	b = b[:n:n]
	if int(t) < len(instructionLen) && instructionLen[t] != 0 && n != instructionLen[t] {
		return nil, 0, errorf(ErrBadInstruction, BadInstructionBadLen, "instruction type %d: length %d, not %d", t, n, instructionLen[t])
	}
	switch t {
	case InstructionTypeGotoTable:
		in = InstructionGotoTable{TableID: b[4]}
	case InstructionTypeWriteMetadata:
		in = InstructionWriteMetadata{Metadata: be.Uint64(b[8:]), Mask: be.Uint64(b[16:])}
	case InstructionTypeWriteActions:
		var as []Action
		as, err = DecodeActions(b[8:])
		in = InstructionWriteActions{Actions: as}
	case InstructionTypeApplyActions:
		var as []Action
		as, err = DecodeActions(b[8:])
		in = InstructionApplyActions{Actions: as}
	case InstructionTypeClearActions:
		in = InstructionClearActions{}
	case InstructionTypeMeter:
		in = InstructionMeter{MeterID: be.Uint32(b[4:])}
	case InstructionTypeExperimenter:
		in = InstructionExperimenter{Experimenter: be.Uint32(b[4:]), Data: b[8:]}
	default:
		err = errorf(ErrBadInstruction, BadInstructionUnknownInst, "instruction type %d", t)
	}
	if err != nil {
		return nil, 0, err
	}
	return in, n, nil
}
