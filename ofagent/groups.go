package ofagent

import (
	"errors"
	"fmt"

	"github.com/xswitch/xswitch/control"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/openflow"
)

// Groups over OpenFlow 1.3: GROUP_MOD into the daemon's group table, and
// the GROUP, GROUP_DESC and GROUP_FEATURES multiparts out of it.

func groupError(code uint16, format string, args ...any) error {
	return &openflow.DecodeError{Type: openflow.ErrGroupModFailed, Code: code, Reason: fmt.Sprintf(format, args...)}
}

// groupMod applies a GROUP_MOD, or refuses it with its error.
func (c *conn) groupMod(raw []byte, m *openflow.GroupMod) {
	if c.isSlave() {
		c.sendError(raw, slaveError())
		return
	}
	mod, err := groupModFromOF(m)
	if err == nil {
		err = groupModError(c.ba.a.sw.ApplyGroupMod(c.ba.name, mod))
	}
	if err != nil {
		c.sendError(raw, err)
	}
}

// groupModFromOF translates m into the daemon's terms, refusing what Open
// vSwitch refuses (ofputil_check_group_mod) with its errors: an unknown
// type or command, an indirect group without exactly one bucket, buckets
// in a delete (as OpenFlow 1.3.5 asks), a weight outside a select group,
// a watch in an all or indirect group, and a fast failover bucket that
// watches nothing. The buckets' ids are their places, as Open vSwitch
// numbers OpenFlow 1.3's buckets, which have none on the wire.
func groupModFromOF(m *openflow.GroupMod) (control.GroupMod, error) {
	var mod control.GroupMod
	switch m.Command {
	case openflow.GroupCommandAdd:
		mod.Command = control.GroupAdd
	case openflow.GroupCommandModify:
		mod.Command = control.GroupModify
	case openflow.GroupCommandDelete:
		if len(m.Buckets) > 0 {
			return mod, groupError(openflow.GroupModFailedInvalidGroup, "a group delete has no buckets")
		}
		mod.Command = control.GroupDelete
	}
	var t flow.GroupType
	switch m.GroupType {
	case openflow.GroupTypeAll:
		t = flow.GroupAll
	case openflow.GroupTypeSelect:
		t = flow.GroupSelect
	case openflow.GroupTypeIndirect:
		if mod.Command != control.GroupDelete && len(m.Buckets) != 1 {
			return mod, groupError(openflow.GroupModFailedInvalidGroup, "an indirect group has one bucket, not %d", len(m.Buckets))
		}
		t = flow.GroupIndirect
	case openflow.GroupTypeFastFailover:
		t = flow.GroupFastFailover
	default:
		return mod, groupError(openflow.GroupModFailedBadType, "unknown group type %d", m.GroupType)
	}
	if mod.Command == 0 {
		return mod, groupError(openflow.GroupModFailedBadCommand, "unknown group command %d", m.Command)
	}
	mod.Group = flow.Group{ID: m.GroupID, Type: t}
	for i, ob := range m.Buckets {
		b, err := bucketFromOF(ob, t)
		if err != nil {
			return mod, fmt.Errorf("bucket %d: %w", i, err)
		}
		b.ID = uint32(i)
		mod.Group.Buckets = append(mod.Group.Buckets, b)
	}
	return mod, nil
}

// bucketFromOF translates a bucket of a group of type t.
func bucketFromOF(ob openflow.Bucket, t flow.GroupType) (flow.Bucket, error) {
	live := ob.WatchPort != openflow.PortAny || ob.WatchGroup != openflow.GroupAny
	switch {
	case ob.Weight != 0 && t != flow.GroupSelect:
		return flow.Bucket{}, groupError(openflow.GroupModFailedInvalidGroup, "only a select group's buckets have weights")
	case live && (t == flow.GroupAll || t == flow.GroupIndirect):
		return flow.Bucket{}, groupError(openflow.GroupModFailedWatchUnsupported, "a %s group's buckets watch nothing", t)
	case !live && t == flow.GroupFastFailover:
		return flow.Bucket{}, groupError(openflow.GroupModFailedInvalidGroup, "a fast failover bucket watches a port or a group")
	}
	b := flow.Bucket{Weight: ob.Weight, WatchPort: flow.PortAny, WatchGroup: ob.WatchGroup}
	if ob.WatchPort != openflow.PortAny {
		p, ok := portFromOF(ob.WatchPort)
		if !ok {
			return flow.Bucket{}, groupError(openflow.GroupModFailedBadWatch, "watch_port %#x is no port", ob.WatchPort)
		}
		b.WatchPort = uint32(p)
	}
	// A bucket's actions are read as any flow's that sends to the group
	// meets their prerequisites, as Open vSwitch and the group syntax
	// read them.
	d := actionDecoder{anyFrame: true}
	var err error
	if b.Actions, err = d.actions(ob.Actions); err != nil {
		return flow.Bucket{}, err
	}
	return b, nil
}

// groupModError gives a refusal of the daemon's its OpenFlow error.
func groupModError(err error) error {
	var gme *flow.GroupModError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &gme):
		return groupError(uint16(gme.Code), "%s", gme.Msg)
	case errors.Is(err, control.ErrBadOutPort):
		return actionError(openflow.BadActionBadOutPort, "%v", err)
	}
	return groupError(openflow.GroupModFailedEPERM, "%v", err)
}

// bucketsToOF gives a group's buckets their OpenFlow form.
func bucketsToOF(g *flow.Group) []openflow.Bucket {
	out := make([]openflow.Bucket, 0, len(g.Buckets))
	for _, b := range g.Buckets {
		ob := openflow.Bucket{WatchPort: openflow.PortAny, WatchGroup: b.WatchGroup, Actions: actionsToOF(b.Actions, flow.Match{})}
		if g.Type == flow.GroupSelect {
			ob.Weight = b.Weight
		}
		if b.WatchPort != flow.PortAny {
			ob.WatchPort = portToOF(uint16(b.WatchPort))
		}
		out = append(out, ob)
	}
	return out
}

// groupTypesToOF are OpenFlow's numbers of xswitch's group types.
var groupTypesToOF = [...]uint8{
	flow.GroupAll: openflow.GroupTypeAll, flow.GroupSelect: openflow.GroupTypeSelect,
	flow.GroupIndirect: openflow.GroupTypeIndirect, flow.GroupFastFailover: openflow.GroupTypeFastFailover,
}

// groupDescs describes the bridge's groups, as GROUP_DESC asks.
func (ba *bridgeAgent) groupDescs() []openflow.GroupDesc {
	var out []openflow.GroupDesc
	for _, g := range ba.br.Flows().Groups().Groups() {
		out = append(out, openflow.GroupDesc{GroupType: groupTypesToOF[g.Type], GroupID: g.ID, Buckets: bucketsToOF(&g.Group)})
	}
	return out
}

// groupStats gives the counters of group id (openflow.GroupAll: of every
// group); none for a group the bridge does not have, as Open vSwitch
// answers.
func (ba *bridgeAgent) groupStats(id uint32) ([]openflow.GroupStats, error) {
	groups, err := ba.a.sw.Groups(ba.name, id)
	if err != nil {
		return nil, err
	}
	var out []openflow.GroupStats
	for _, g := range groups {
		s := openflow.GroupStats{GroupID: g.ID, RefCount: uint32(g.RefCount), PacketCount: g.Packets, ByteCount: g.Bytes}
		s.DurationSec, s.DurationNsec = durationToOF(g.DurationSec)
		for _, b := range g.Buckets {
			s.Buckets = append(s.Buckets, openflow.BucketCounter{PacketCount: b.Packets, ByteCount: b.Bytes})
		}
		out = append(out, s)
	}
	return out, nil
}

// groupFeatures is what GROUP_FEATURES says: every type, each with as
// many groups as OpenFlow can number; select groups weigh their buckets
// and skip those that are not live; groups chain, and the table refuses
// loops and deleting a group another forwards to; buckets hold the
// actions rules do.
func groupFeatures() openflow.GroupFeatures {
	f := openflow.GroupFeatures{
		Capabilities: openflow.GroupCapSelectWeight | openflow.GroupCapSelectLiveness |
			openflow.GroupCapChaining | openflow.GroupCapChainingChecks,
	}
	var actions uint32
	for _, t := range actionTypes {
		if t < 32 {
			actions |= 1 << t
		}
	}
	for _, t := range groupTypesToOF {
		f.Types |= 1 << t
		f.MaxGroups[t], f.Actions[t] = openflow.GroupMax, actions
	}
	return f
}
