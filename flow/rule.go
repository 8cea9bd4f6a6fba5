// Package flow is xswitch's OpenFlow-style flow table: the Key extracted
// from a frame, rules (a masked match, a priority, actions), their text
// syntax (the one ovs-ofctl speaks), the classifier that finds the
// highest-priority rule matching a key, and the exact-match cache in front
// of it.
//
// Rules are plain data (a spec); the classifier holds an immutable,
// versioned snapshot of installed rules that forwarding goroutines read
// without locks.
package flow

// Match is a masked key: a frame matches when its key, masked, equals Key.
// Key holds no bits outside Mask.
type Match struct {
	Key  Key
	Mask Key
}

// Matches reports whether k satisfies m.
func (m *Match) Matches(k *Key) bool { return k.And(&m.Mask) == m.Key }

// Rule is one flow table entry as a user writes it.
type Rule struct {
	Priority    uint16 // higher wins; DefaultPriority when not given
	Cookie      uint64
	IdleTimeout uint16 // seconds without a hit before the rule expires; 0 = never
	HardTimeout uint16 // seconds after installation before it expires; 0 = never
	Match       Match
	Actions     []Action // empty: drop
}

// DefaultPriority is OpenFlow's default (OFP_DEFAULT_PRIORITY).
const DefaultPriority = 32768

// ActionType says what an Action does.
type ActionType uint8

const (
	ActOutput     ActionType = iota + 1 // to Port
	ActNormal                           // the learning switch
	ActFlood                            // every port but the input one
	ActAll                              // every port but the input one (no port is excluded from flooding yet)
	ActInPort                           // back out of the input port
	ActSetDlSrc                         // MAC
	ActSetDlDst                         // MAC
	ActSetVLANVID                       // Value (VID); pushes a tag if there is none, as OVS's mod_vlan_vid
	ActStripVLAN                        // pop the outermost tag
	ActPushVLAN                         // Value (the tag's EtherType, 0x8100 or 0x88a8)
	ActSetNwSrc                         // IPv4
	ActSetNwDst                         // IPv4
	ActSetTpSrc                         // Value (port)
	ActSetTpDst                         // Value (port)
	ActDecTTL                           // drop when the TTL (hop limit) reaches 0
)

// Action is one action of a rule. Which fields mean something depends on
// Type; the others are zero, so that Actions compare with ==.
type Action struct {
	Type  ActionType
	Port  uint16  // ActOutput
	Value uint16  // ActSetVLANVID, ActPushVLAN, ActSetTpSrc, ActSetTpDst
	MAC   [6]byte // ActSetDlSrc, ActSetDlDst
	IPv4  [4]byte // ActSetNwSrc, ActSetNwDst
}
