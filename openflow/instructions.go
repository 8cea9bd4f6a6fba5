package openflow

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
