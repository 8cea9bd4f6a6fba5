package vswitch

import (
	"errors"
	"fmt"

	"github.com/xswitch/xswitch/flow"
)

// Groups in translation. A group action runs, on the frame as it is, the
// buckets its type picks: every bucket (all), the one the flow's hash
// picks among the live ones (select), the only one (indirect), or the
// first live one (fast failover). What a bucket does to the frame stays
// in the bucket, as the OpenFlow specification has it: each runs on its
// own copy. In the decision, a bucket that changes the frame is
// bracketed by actCloneStart and actCloneEnd, which execution and the
// fast path's entry honour; one that changes nothing needs no bracket.
//
// A select bucket is chosen per flow, so the decision carries it; a
// choice made by liveness holds while the ports it read stay as they
// were (liveDeps), which the cache checks on every hit; a change of the
// groups is a new table version, which a decision that used a group does
// not survive.

// An actCloneStart's Value is the index of its actCloneEnd in the
// decision's actions, where execution goes on if the bracket's frame is
// dropped (dec_ttl), and its Port the copies the bracket may make, for
// which the outermost makes room.

// maxCloneNest bounds the brackets open at once: buckets of groups that
// chain to groups. A translation that would open more is cut as a loop.
const maxCloneNest = 8

// groupHit is a group a decision's frames reached (bucket -1), or the
// index of a bucket of it that they took.
type groupHit struct {
	group  *flow.GroupEntry
	bucket int
}

// liveDep is a port whose liveness a decision chose a bucket by, and
// what it was.
type liveDep struct {
	port uint16
	live bool
}

// ErrNoGroup is the error of actions that send to a group the bridge does
// not have (OpenFlow's OFPBAC_BAD_OUT_GROUP): errors.Is finds it.
var ErrNoGroup = errors.New("no such group")

// CheckGroups refuses actions that send to a group that bridge's groups
// do not have: rules and packet-outs that name one are refused before
// they reach a forwarder.
func CheckGroups(bridge string, groups *flow.GroupTable, actions []flow.Action) error {
	for _, a := range actions {
		if a.Type == flow.ActGroup {
			if _, ok := groups.Get(a.Group); !ok {
				return fmt.Errorf("group %d on bridge %s: %w", a.Group, bridge, ErrNoGroup)
			}
		}
	}
	return nil
}

// group runs what group id does to the frame. It returns false when the
// translation ends for good (a loop).
func (tr *translator) group(a flow.Action, fromSet bool, depth int) bool {
	g, ok := tr.table.Groups().Get(a.Group)
	if !ok {
		// Deleted, with the rules that sent to it, after a packet-out
		// named it: the frame goes nowhere by it.
		tr.observeGroup(a, fromSet, "there is no such group: nothing happens")
		return true
	}
	tr.d.groups = tr.table.Groups()
	tr.d.groupHits = append(tr.d.groupHits, groupHit{group: g, bucket: -1})
	if g.Type == flow.GroupAll {
		tr.observeGroup(a, fromSet, fmt.Sprintf("type all: each of its %d buckets on a copy of the frame", len(g.Buckets)))
		for i := range g.Buckets {
			if !tr.bucket(g, i, depth) {
				return false
			}
		}
		return true
	}
	i, how := tr.chooseBucket(g)
	tr.observeGroup(a, fromSet, how)
	if i < 0 {
		return true
	}
	return tr.bucket(g, i, depth)
}

// chooseBucket picks the bucket of a select, indirect or fast failover
// group that the frame takes, and says how.
func (tr *translator) chooseBucket(g *flow.GroupEntry) (int, string) {
	live := func(i int) bool { return tr.table.Groups().BucketLive(&g.Buckets[i], tr.portLive) }
	switch g.Type {
	case flow.GroupSelect:
		if i := g.SelectBucket(&tr.key, live); i >= 0 {
			return i, fmt.Sprintf("type select: bucket %d (of %d) by the flow's hash", g.Buckets[i].ID, len(g.Buckets))
		}
		return -1, "type select: no live bucket: the frame goes nowhere by it"
	case flow.GroupIndirect:
		if len(g.Buckets) == 0 {
			return -1, "type indirect, with no bucket: the frame goes nowhere by it"
		}
		return 0, "type indirect"
	}
	for i := range g.Buckets {
		if live(i) {
			return i, fmt.Sprintf("type fast failover: bucket %d, the first live one", g.Buckets[i].ID)
		}
	}
	return -1, "type fast failover: no live bucket: the frame goes nowhere by it"
}

// portLive reports whether OpenFlow port ofport is live, as a bucket
// that watches it sees it: the bridge has it, its link is up, and the
// spanning tree lets it forward. The decision records what it read.
func (tr *translator) portLive(ofport uint16) bool {
	live := tr.in.view != nil && tr.in.view.portLive(ofport)
	tr.d.liveDeps = append(tr.d.liveDeps, liveDep{port: ofport, live: live})
	return live
}

// bucket runs bucket i of g on a copy of the frame. It returns false when
// the translation ends for good (a loop).
func (tr *translator) bucket(g *flow.GroupEntry, i int, depth int) bool {
	tr.d.groupHits = append(tr.d.groupHits, groupHit{group: g, bucket: i})
	if tr.clones == maxCloneNest {
		return tr.cutLoop(fmt.Sprintf("groups chained more than %d deep", maxCloneNest))
	}
	saved, savedTunnel, start := tr.key, tr.tunnelID, len(tr.d.actions)
	tr.d.actions = append(tr.d.actions, flow.Action{Type: actCloneStart})
	tr.clones++
	tr.inResubmit++ // for trace, a level deeper; its misses end nothing
	kept := tr.actions(g.Buckets[i].Actions, depth+1)
	tr.inResubmit--
	tr.clones--
	if tr.cut != "" {
		return false
	}
	if kept && tr.key == saved && tr.tunnelID == savedTunnel {
		// Nothing the bucket did changed the frame: no copy needed.
		tr.d.actions = append(tr.d.actions[:start], tr.d.actions[start+1:]...)
	} else {
		tr.d.actions[start].Value = uint16(len(tr.d.actions))
		tr.d.actions[start].Port = copiesMade(tr.d.actions[start+1:])
		tr.d.actions = append(tr.d.actions, flow.Action{Type: actCloneEnd})
	}
	tr.key, tr.tunnelID = saved, savedTunnel
	return true
}

// copiesMade bounds the copies of the frame that running actions makes:
// one per rewrite (the frame is shared), NORMAL's forms, and the frame
// itself.
func copiesMade(actions []flow.Action) uint16 {
	n := 1
	for _, a := range actions {
		switch a.Type {
		case flow.ActOutput, flow.ActInPort, flow.ActFlood, flow.ActAll, actToController, actSetTunnelID,
			actNormalDrop, actCloneStart, actCloneEnd:
		case flow.ActNormal, actNormalTo, actNormalFlood:
			n += maxNormalCopies
		default:
			n++
		}
	}
	return uint16(n)
}

// observeGroup tells trace which buckets of group action a's group the
// frame takes, and how.
func (tr *translator) observeGroup(a flow.Action, fromSet bool, how string) {
	if tr.in.obs != nil {
		tr.in.obs.group(a, &tr.key, tr.inResubmit, fromSet, how)
	}
}

// SetPortLink says whether port name's link is up, as the groups that
// watch the port see it. A change sends exactly the decisions that chose
// a bucket by the port's liveness back to translation, on their next
// frame, and starts the fast path's entries over.
func (b *Bridge) SetPortLink(name string, up bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.port(name)
	if p == nil {
		return fmt.Errorf("bridge %s has no port %q", b.name, name)
	}
	if p.linkDown.Swap(!up) == !up {
		return nil
	}
	// The threads first, so that no entry is made in the new generation
	// from a choice they have not checked again.
	b.onEachForwarder(func(f *forwarder) { f.liveness++ })
	if b.fp != nil {
		b.fp.entriesChanged()
	}
	return nil
}
