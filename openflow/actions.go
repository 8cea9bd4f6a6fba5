package openflow

import (
	"encoding/binary"
	"errors"
	"fmt"
)

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

// AppendActions appends the encoding of the action list as: each action
// padded to a multiple of 8 bytes, in the form Open vSwitch sends it, so
// that what ovs-ofctl encodes decodes and re-encodes to the same bytes. A
// list longer than a message can hold is the caller's bug.
func AppendActions(b []byte, as []Action) []byte {
	for _, a := range as {
		b = appendAction(b, a)
	}
	return b
}

func appendAction(b []byte, a Action) []byte {
	b, start := beginTLV(b, uint16(a.ActionType()))
	be := binary.BigEndian
	switch a := a.(type) {
	case ActionOutput:
		b = be.AppendUint32(b, a.Port)
		b = be.AppendUint16(b, a.MaxLen)
	case ActionCopyTTLOut, ActionCopyTTLIn, ActionDecMPLSTTL, ActionPopVLAN, ActionDecNwTTL, ActionPopPBB:
		// The header and its padding.
	case ActionSetMPLSTTL:
		b = append(b, a.TTL)
	case ActionPushVLAN:
		b = be.AppendUint16(b, a.EtherType)
	case ActionPushMPLS:
		b = be.AppendUint16(b, a.EtherType)
	case ActionPopMPLS:
		b = be.AppendUint16(b, a.EtherType)
	case ActionPushPBB:
		b = be.AppendUint16(b, a.EtherType)
	case ActionSetQueue:
		b = be.AppendUint32(b, a.QueueID)
	case ActionGroup:
		b = be.AppendUint32(b, a.GroupID)
	case ActionSetNwTTL:
		b = append(b, a.TTL)
	case ActionSetField:
		b = AppendOXM(b, a.Field)
	case ActionExperimenter:
		b = be.AppendUint32(b, a.Experimenter)
		b = append(b, a.Data...)
	default:
		b = appendNX(b, a)
	}
	return endTLV(b, start)
}

// beginTLV appends the type and a length for endTLV to fill in: the
// framing that actions and instructions share.
func beginTLV(b []byte, t uint16) (_ []byte, start int) {
	start = len(b)
	b = binary.BigEndian.AppendUint16(b, t)
	return append(b, 0, 0), start
}

// endTLV pads the structure begun at start to 8 bytes and writes its
// length, padding included.
func endTLV(b []byte, start int) []byte {
	b = appendPad8(b, len(b)-start)
	binary.BigEndian.PutUint16(b[start+2:], uint16(len(b)-start))
	return b
}

// DecodeActions decodes an action list; b is exactly the list's bytes.
// The decoded actions' byte slices alias b.
func DecodeActions(b []byte) ([]Action, error) {
	var as []Action
	for len(b) > 0 {
		a, n, err := decodeAction(b)
		if err != nil {
			return nil, err
		}
		as = append(as, a)
		b = b[n:]
	}
	return as, nil
}

// actionLen is the length of each fixed-size standard action, 0 for the
// others.
var actionLen = [...]int{
	ActionTypeOutput:     16,
	ActionTypeCopyTTLOut: 8,
	ActionTypeCopyTTLIn:  8,
	ActionTypeSetMPLSTTL: 8,
	ActionTypeDecMPLSTTL: 8,
	ActionTypePushVLAN:   8,
	ActionTypePopVLAN:    8,
	ActionTypePushMPLS:   8,
	ActionTypePopMPLS:    8,
	ActionTypeSetQueue:   8,
	ActionTypeGroup:      8,
	ActionTypeSetNwTTL:   8,
	ActionTypeDecNwTTL:   8,
	ActionTypePushPBB:    8,
	ActionTypePopPBB:     8,
}

// decodeAction decodes the action at the start of b; n is its length.
func decodeAction(b []byte) (a Action, n int, err error) {
	if len(b) < 4 {
		return nil, 0, errorf(ErrBadAction, BadActionBadLen, "action header: %d of 4 bytes", len(b))
	}
	be := binary.BigEndian
	t := ActionType(be.Uint16(b))
	n = int(be.Uint16(b[2:]))
	if n < 8 || n%8 != 0 || n > len(b) {
		return nil, 0, errorf(ErrBadAction, BadActionBadLen, "action type %d: length %d in %d bytes", t, n, len(b))
	}
	b = b[:n:n]
	if int(t) < len(actionLen) && actionLen[t] != 0 && n != actionLen[t] {
		return nil, 0, errorf(ErrBadAction, BadActionBadLen, "action type %d: length %d, not %d", t, n, actionLen[t])
	}
	switch t {
	case ActionTypeOutput:
		a = ActionOutput{Port: be.Uint32(b[4:]), MaxLen: be.Uint16(b[8:])}
	case ActionTypeCopyTTLOut:
		a = ActionCopyTTLOut{}
	case ActionTypeCopyTTLIn:
		a = ActionCopyTTLIn{}
	case ActionTypeSetMPLSTTL:
		a = ActionSetMPLSTTL{TTL: b[4]}
	case ActionTypeDecMPLSTTL:
		a = ActionDecMPLSTTL{}
	case ActionTypePushVLAN:
		a = ActionPushVLAN{EtherType: be.Uint16(b[4:])}
	case ActionTypePopVLAN:
		a = ActionPopVLAN{}
	case ActionTypePushMPLS:
		a = ActionPushMPLS{EtherType: be.Uint16(b[4:])}
	case ActionTypePopMPLS:
		a = ActionPopMPLS{EtherType: be.Uint16(b[4:])}
	case ActionTypeSetQueue:
		a = ActionSetQueue{QueueID: be.Uint32(b[4:])}
	case ActionTypeGroup:
		a = ActionGroup{GroupID: be.Uint32(b[4:])}
	case ActionTypeSetNwTTL:
		a = ActionSetNwTTL{TTL: b[4]}
	case ActionTypeDecNwTTL:
		a = ActionDecNwTTL{}
	case ActionTypeSetField:
		var f OXM
		f, err = decodeSetField(b, 4, false)
		a = ActionSetField{Field: f}
	case ActionTypePushPBB:
		a = ActionPushPBB{EtherType: be.Uint16(b[4:])}
	case ActionTypePopPBB:
		a = ActionPopPBB{}
	case ActionTypeExperimenter:
		if exp := be.Uint32(b[4:]); exp == NiciraExperimenter {
			a, err = decodeNX(b)
		} else {
			a = ActionExperimenter{Experimenter: exp, Data: b[8:]}
		}
	default:
		err = errorf(ErrBadAction, BadActionBadType, "action type %d", t)
	}
	if err != nil {
		return nil, 0, err
	}
	return a, n, nil
}

// decodeSetField decodes the field that a set-field action b (OFPAT_SET_FIELD
// or NXAST_REG_LOAD2) carries at offset off, followed by zeros to 8 bytes.
// Whether the field exists, fits its width and may be written is the
// switch's to say.
func decodeSetField(b []byte, off int, masked bool) (OXM, error) {
	f, n, err := DecodeOXM(b[off:])
	if err != nil {
		code, reason := uint16(BadActionBadSetType), err.Error()
		if de := (*DecodeError)(nil); errors.As(err, &de) {
			reason = de.Reason
			if de.Type == ErrBadMatch && de.Code == BadMatchBadLen {
				code = BadActionBadSetLen
			}
		}
		return OXM{}, errorf(ErrBadAction, code, "set-field: %s", reason)
	}
	if f.Mask != nil && !masked {
		return OXM{}, errorf(ErrBadAction, BadActionBadSetArgument, "set-field of %#08x has a mask", f.Header())
	}
	if pad8(off+n) != len(b) {
		return OXM{}, errorf(ErrBadAction, BadActionBadSetLen, "set-field of %d bytes for a %d-byte field", len(b), n)
	}
	if !allZero(b[off+n:]) {
		return OXM{}, errorf(ErrBadAction, BadActionBadSetArgument, "set-field of %#08x: padding not zero", f.Header())
	}
	return f, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// cannotEncode is the panic of an Append function given an Action or an
// Instruction of a type it does not know: the caller's bug.
func cannotEncode(v any) {
	panic(fmt.Sprintf("openflow: cannot encode a %T", v))
}
