package flow

// ActionSet is OpenFlow 1.3's action set (section 5.10 of the spec): what
// write_actions writes, clear_actions clears, and the pipeline's end
// runs, at most one action of each kind, in the spec's order whatever the
// order they were written in. A later write of a kind replaces the
// earlier one. The zero value is empty and it allocates nothing.
type ActionSet struct {
	byKind [numSetKinds]Action
	has    [numSetKinds]bool
}

// The kinds of action an action set holds, in the order it runs them:
// copy TTL inwards, pop, push, copy TTL outwards, decrement TTL, set (one
// per field), output, as the spec and OVS (ACTION_SET_ORDER, which has no
// copies) order them.
type setKind uint8

const (
	setCopyTTLIn setKind = iota
	setPopVLAN
	setPopMPLS
	setPushMPLS
	setPushVLAN
	setCopyTTLOut
	setDecTTL
	setDecMPLSTTL
	setMPLSLabel
	setMPLSTC
	setMPLSTTL
	setDlSrc
	setDlDst
	setVLANVID
	setVLANPCP
	setNwSrc
	setNwDst
	setIPv6Src
	setIPv6Dst
	setNwTOS
	setNwECN
	setNwTTL
	setTpSrc
	setTpDst
	setOutput
	numSetKinds
)

// kindInSet returns the kind a's slot in an action set, or false for an
// action an action set cannot hold.
func kindInSet(a ActionType) (setKind, bool) {
	switch a {
	case ActStripVLAN:
		return setPopVLAN, true
	case ActPushVLAN:
		return setPushVLAN, true
	case ActDecTTL:
		return setDecTTL, true
	case ActPopMPLS:
		return setPopMPLS, true
	case ActPushMPLS:
		return setPushMPLS, true
	case ActDecMPLSTTL:
		return setDecMPLSTTL, true
	case ActCopyTTLIn:
		return setCopyTTLIn, true
	case ActCopyTTLOut:
		return setCopyTTLOut, true
	case ActSetMPLSLabel:
		return setMPLSLabel, true
	case ActSetMPLSTC:
		return setMPLSTC, true
	case ActSetMPLSTTL:
		return setMPLSTTL, true
	case ActSetDlSrc:
		return setDlSrc, true
	case ActSetDlDst:
		return setDlDst, true
	case ActSetVLANVID:
		return setVLANVID, true
	case ActSetVLANPCP:
		return setVLANPCP, true
	case ActSetNwSrc:
		return setNwSrc, true
	case ActSetNwDst:
		return setNwDst, true
	case ActSetIPv6Src:
		return setIPv6Src, true
	case ActSetIPv6Dst:
		return setIPv6Dst, true
	case ActSetNwTOS:
		return setNwTOS, true
	case ActSetNwECN:
		return setNwECN, true
	case ActSetNwTTL:
		return setNwTTL, true
	case ActSetTpSrc:
		return setTpSrc, true
	case ActSetTpDst:
		return setTpDst, true
	case ActOutput, ActNormal, ActFlood, ActAll, ActInPort, ActController:
		return setOutput, true
	}
	return 0, false
}

// Write adds actions, each in its kind's slot.
func (s *ActionSet) Write(actions []Action) {
	for _, a := range actions {
		if k, ok := kindInSet(a.Type); ok {
			s.byKind[k], s.has[k] = a, true
		}
	}
}

// Clear empties the set.
func (s *ActionSet) Clear() { *s = ActionSet{} }

// Each calls fn with the set's actions in the order they run.
func (s *ActionSet) Each(fn func(a Action)) {
	for k := range numSetKinds {
		if s.has[k] {
			fn(s.byKind[k])
		}
	}
}

// WrittenActions returns the actions of an ActWriteActions that starts
// actions[i:], and where the rule's list goes on after them.
func WrittenActions(actions []Action, i int) (written []Action, next int) {
	n := int(actions[i].NBits)
	return actions[i+1 : i+1+n], i + 1 + n
}
