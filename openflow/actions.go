package openflow

// ActionType is an action's type (ofp_action_type).
type ActionType uint16

// Action is one action of an action list. The concrete types are the
// Action* and NX* structs below.
type Action interface {
	ActionType() ActionType
}

// The OpenFlow 1.3 action types.
const (
	ActionTypeOutput       ActionType = 0
	ActionTypeCopyTTLOut   ActionType = 11
	ActionTypeCopyTTLIn    ActionType = 12
	ActionTypeSetMPLSTTL   ActionType = 15
	ActionTypeDecMPLSTTL   ActionType = 16
	ActionTypePushVLAN     ActionType = 17
	ActionTypePopVLAN      ActionType = 18
	ActionTypePushMPLS     ActionType = 19
	ActionTypePopMPLS      ActionType = 20
	ActionTypeSetQueue     ActionType = 21
	ActionTypeGroup        ActionType = 22
	ActionTypeSetNwTTL     ActionType = 23
	ActionTypeDecNwTTL     ActionType = 24
	ActionTypeSetField     ActionType = 25
	ActionTypePushPBB      ActionType = 26
	ActionTypePopPBB       ActionType = 27
	ActionTypeExperimenter ActionType = 0xffff
)

// NiciraExperimenter is the experimenter id of Nicira's (Open vSwitch's)
// extensions.
const NiciraExperimenter uint32 = 0x00002320

// The standard actions.
type (
	ActionOutput struct {
		Port   uint32
		MaxLen uint16 // the bytes sent to the controller (ControllerMaxLenNoBuffer: all)
	}
	ActionCopyTTLOut struct{}
	ActionCopyTTLIn  struct{}
	ActionSetMPLSTTL struct{ TTL uint8 }
	ActionDecMPLSTTL struct{}
	ActionPushVLAN   struct{ EtherType uint16 }
	ActionPopVLAN    struct{}
	ActionPushMPLS   struct{ EtherType uint16 }
	ActionPopMPLS    struct{ EtherType uint16 }
	ActionSetQueue   struct{ QueueID uint32 }
	ActionGroup      struct{ GroupID uint32 }
	ActionSetNwTTL   struct{ TTL uint8 }
	ActionDecNwTTL   struct{}
	ActionSetField   struct{ Field OXM }
	ActionPushPBB    struct{ EtherType uint16 }
	ActionPopPBB     struct{}
	// ActionExperimenter is an experimenter action this package does not
	// model, kept as its bytes after the experimenter id.
	ActionExperimenter struct {
		Experimenter uint32
		Data         []byte
	}
)

// Nicira's extension actions that ovs-ofctl sends for what xswitch does.
// An NXM or OXM field in them is named by its 32-bit header (class << 16
// | field << 9 | hasmask << 8 | length).
type (
	// NXResubmit is NXAST_RESUBMIT (Table TableAll) or NXAST_RESUBMIT_TABLE.
	NXResubmit struct {
		InPort uint16 // OpenFlow 1.0 numbering; 0xfff8 (OFPP_IN_PORT): the frame's own
		Table  uint8
	}
	// NXRegLoad is NXAST_REG_LOAD: Value into bits Ofs..Ofs+NBits-1 of Dst.
	NXRegLoad struct {
		Ofs, NBits uint8
		Dst        uint32
		Value      uint64
	}
	// NXRegLoad2 is NXAST_REG_LOAD2: a set_field that may carry a mask.
	NXRegLoad2 struct{ Field OXM }
	// NXRegMove is NXAST_REG_MOVE.
	NXRegMove struct {
		NBits, SrcOfs, DstOfs uint16
		Src, Dst              uint32
	}
	// NXController is NXAST_CONTROLLER.
	NXController struct {
		MaxLen       uint16
		ControllerID uint16
		Reason       uint8
	}
	// NXController2 is NXAST_CONTROLLER2, whose arguments are properties.
	NXController2 struct {
		MaxLen       uint16
		ControllerID uint16
		Reason       uint8
		UserData     []byte
		Pause        bool
	}
)

func (ActionOutput) ActionType() ActionType       { return ActionTypeOutput }
func (ActionCopyTTLOut) ActionType() ActionType   { return ActionTypeCopyTTLOut }
func (ActionCopyTTLIn) ActionType() ActionType    { return ActionTypeCopyTTLIn }
func (ActionSetMPLSTTL) ActionType() ActionType   { return ActionTypeSetMPLSTTL }
func (ActionDecMPLSTTL) ActionType() ActionType   { return ActionTypeDecMPLSTTL }
func (ActionPushVLAN) ActionType() ActionType     { return ActionTypePushVLAN }
func (ActionPopVLAN) ActionType() ActionType      { return ActionTypePopVLAN }
func (ActionPushMPLS) ActionType() ActionType     { return ActionTypePushMPLS }
func (ActionPopMPLS) ActionType() ActionType      { return ActionTypePopMPLS }
func (ActionSetQueue) ActionType() ActionType     { return ActionTypeSetQueue }
func (ActionGroup) ActionType() ActionType        { return ActionTypeGroup }
func (ActionSetNwTTL) ActionType() ActionType     { return ActionTypeSetNwTTL }
func (ActionDecNwTTL) ActionType() ActionType     { return ActionTypeDecNwTTL }
func (ActionSetField) ActionType() ActionType     { return ActionTypeSetField }
func (ActionPushPBB) ActionType() ActionType      { return ActionTypePushPBB }
func (ActionPopPBB) ActionType() ActionType       { return ActionTypePopPBB }
func (ActionExperimenter) ActionType() ActionType { return ActionTypeExperimenter }

// The Nicira actions are experimenter actions.
func (NXResubmit) ActionType() ActionType    { return ActionTypeExperimenter }
func (NXRegLoad) ActionType() ActionType     { return ActionTypeExperimenter }
func (NXRegLoad2) ActionType() ActionType    { return ActionTypeExperimenter }
func (NXRegMove) ActionType() ActionType     { return ActionTypeExperimenter }
func (NXController) ActionType() ActionType  { return ActionTypeExperimenter }
func (NXController2) ActionType() ActionType { return ActionTypeExperimenter }
