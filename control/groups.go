package control

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/control/store"
	"github.com/xswitch/xswitch/flow"
	vswitch "github.com/xswitch/xswitch/switch"
)

// The group table's API: what add-group, mod-group, del-groups,
// insert-buckets and remove-buckets do, and OpenFlow's GROUP_MOD. A bridge's
// groups live in its flow table's versions (flow.Table.Groups), so that a
// group and the rules that send to it change as one; they are saved as
// rules are, from the CLI and from controllers alike.

// GroupCommand says what a GroupMod does.
type GroupCommand int

const (
	GroupAdd           GroupCommand = iota + 1 // install Group, whose id is free
	GroupModify                                // replace the group of Group's id
	GroupDelete                                // remove group Group.ID (flow.GroupAllGroups: every group) and the rules that send to it
	GroupInsertBuckets                         // add Group's buckets to the group of its id, before bucket Bucket
	GroupRemoveBuckets                         // remove bucket Bucket from the group of Group's id
)

// GroupMod is one change of a bridge's groups.
type GroupMod struct {
	Command GroupCommand
	Group   flow.Group
	// Bucket is where GroupInsertBuckets inserts (flow.BucketFirst,
	// flow.BucketLast, or before the bucket of that id) and what
	// GroupRemoveBuckets removes (those, flow.BucketAll, or a bucket's id).
	Bucket uint32
}

// ErrBadOutPort is the error of a bucket that outputs to a port the
// bridge does not have (OpenFlow's OFPBAC_BAD_OUT_PORT): errors.Is finds
// it. A rule may name a port before it is added, as in OVS; a group is
// checked when it is made.
var ErrBadOutPort = errors.New("no such port")

// ErrUnknownBucket is the error of insert-buckets or remove-buckets naming
// a bucket the group does not have (OFPGMFC_UNKNOWN_BUCKET).
var ErrUnknownBucket = errors.New("no such bucket")

// ErrBucketExists is the error of insert-buckets adding a bucket whose id
// the group has (OFPGMFC_BUCKET_EXISTS).
var ErrBucketExists = errors.New("bucket exists")

// ApplyGroupMod makes m as one change of the bridge's table, saved before
// it is in use. Nothing is changed if it fails: a flow.GroupModError says
// why with OpenFlow's code.
func (d *Daemon) ApplyGroupMod(bridge string, m GroupMod) error {
	d.mu.Lock()
	defer d.unlock()
	return d.applyGroupMods(bridge, []GroupMod{m})
}

// applyGroupMods makes mods, in order, as one change: all or none.
func (d *Daemon) applyGroupMods(bridge string, mods []GroupMod) error {
	b, err := d.bridge(bridge)
	if err != nil {
		return err
	}
	bc := d.cfg.Bridge(bridge)
	now := time.Now()
	t := b.Flows()
	var edits []store.TableEdit
	var gone []RemovedFlow
	for _, m := range mods {
		groups := t.Groups()
		edit := store.TableEdit{Bridge: bridge}
		var next *flow.GroupTable
		var removedGroups []uint32
		switch m.Command {
		case GroupAdd, GroupModify, GroupInsertBuckets, GroupRemoveBuckets:
			g := m.Group
			if m.Command == GroupInsertBuckets || m.Command == GroupRemoveBuckets {
				old, ok := groups.Get(g.ID)
				if !ok {
					return &flow.GroupModError{Code: flow.GroupUnknown, Msg: fmt.Sprintf("group %d does not exist", g.ID)}
				}
				if g, err = editBuckets(old.Group, m); err != nil {
					return err
				}
			}
			if err := checkBuckets(bc, &g); err != nil {
				return err
			}
			if m.Command == GroupAdd {
				next, err = groups.Add(g, now)
			} else {
				next, err = groups.Modify(g, now)
			}
			if err != nil {
				return err
			}
			edit.Groups = []string{flow.FormatGroup(g)}
		case GroupDelete:
			if next, removedGroups, err = groups.Delete(m.Group.ID); err != nil {
				return err
			}
			if len(removedGroups) == 0 {
				continue
			}
			edit.RemoveGroups = []uint32{m.Group.ID}
		default:
			return fmt.Errorf("unknown group command %d", m.Command)
		}
		t = t.WithGroups(next)
		// The rules that send to a deleted group go with it, as OpenFlow
		// says.
		for _, id := range removedGroups {
			var removed []*flow.Entry
			t, removed = t.Delete(flow.Filter{OutGroup: id, ByOutGroup: true}, false)
			edit.Remove = append(edit.Remove, store.FormatEntries(removed)...)
			for _, e := range removed {
				gone = append(gone, RemovedFlow{Entry: e, Reason: RemovedGroupDelete, At: now})
			}
		}
		edits = append(edits, edit)
	}
	if len(edits) == 0 {
		return nil
	}
	if err := d.setFlows(b, t, edits, now); err != nil {
		return err
	}
	d.removed.add(b, gone)
	return nil
}

// editBuckets returns g with m's buckets inserted or removed.
func editBuckets(g flow.Group, m GroupMod) (flow.Group, error) {
	buckets := slices.Clone(g.Buckets)
	at := func(id uint32) (int, error) {
		switch id {
		case flow.BucketFirst:
			return 0, nil
		case flow.BucketLast:
			return len(buckets), nil
		}
		i := slices.IndexFunc(buckets, func(b flow.Bucket) bool { return b.ID == id })
		if i < 0 {
			return 0, fmt.Errorf("group %d has no bucket %d: %w", g.ID, id, ErrUnknownBucket)
		}
		return i, nil
	}
	if m.Command == GroupRemoveBuckets {
		switch m.Bucket {
		case flow.BucketAll:
			buckets = nil
		case flow.BucketLast:
			if len(buckets) > 0 {
				buckets = buckets[:len(buckets)-1]
			}
		default:
			i, err := at(m.Bucket)
			if err != nil {
				return g, err
			}
			if i < len(buckets) {
				buckets = slices.Delete(buckets, i, i+1)
			}
		}
		g.Buckets = buckets
		return g, nil
	}
	for _, nb := range m.Group.Buckets {
		if slices.ContainsFunc(buckets, func(b flow.Bucket) bool { return b.ID == nb.ID }) {
			return g, fmt.Errorf("group %d has a bucket %d: %w", g.ID, nb.ID, ErrBucketExists)
		}
	}
	i, err := at(m.Bucket)
	if err != nil {
		return g, err
	}
	g.Buckets = slices.Insert(buckets, i, m.Group.Buckets...)
	return g, nil
}

// checkBuckets refuses a group whose buckets output to, or watch, a port
// that bridge bc does not have, or name LOCAL on a bridge without it.
func checkBuckets(bc *store.BridgeConfig, g *flow.Group) error {
	has := func(p uint16) bool {
		return slices.ContainsFunc(bc.Ports, func(pc api.PortConfig) bool { return pc.OFPort == p })
	}
	for _, b := range g.Buckets {
		if err := checkLocal(bc, flow.Match{}, b.Actions); err != nil {
			return err
		}
		for _, a := range b.Actions {
			if a.Type == flow.ActOutput && a.Port < flow.MaxPort && !has(a.Port) {
				return fmt.Errorf("group %d: bucket %d outputs to port %d: %w on bridge %s", g.ID, b.ID, a.Port, ErrBadOutPort, bc.Name)
			}
		}
		if b.WatchPort != flow.PortAny && uint16(b.WatchPort) < flow.MaxPort && !has(uint16(b.WatchPort)) {
			return &flow.GroupModError{Code: flow.GroupBadWatch,
				Msg: fmt.Sprintf("group %d: bucket %d watches port %d, which bridge %s does not have", g.ID, b.ID, b.WatchPort, bc.Name)}
		}
	}
	return nil
}

// checkGroups refuses actions that send to a group bridge b does not have.
func checkGroups(b *vswitch.Bridge, actions []flow.Action) error {
	return vswitch.CheckGroups(b.Name(), b.Flows().Groups(), actions)
}

// groupStatus is group g as dump-groups and dump-group-stats report it,
// refs being how many rules and groups send to it.
func groupStatus(g *flow.GroupEntry, refs int, now time.Time) api.GroupStatus {
	counts, buckets := g.Stats()
	s := api.GroupStatus{ID: g.ID, Text: flow.FormatGroup(g.Group), DurationSec: now.Sub(g.Installed).Seconds(),
		RefCount: refs, Packets: counts.Packets, Bytes: counts.Bytes, Buckets: make([]api.BucketCounts, len(buckets))}
	for i, c := range buckets {
		s.Buckets[i] = api.BucketCounts{Packets: c.Packets, Bytes: c.Bytes}
	}
	return s
}

// groupRefs counts, by group id, the rules and the other groups of t that
// send to each group (OpenFlow's ref_count), in one pass over each.
func groupRefs(t *flow.Table) map[uint32]int {
	refs := map[uint32]int{}
	var sent []uint32
	for _, e := range t.Entries() {
		sent = sent[:0]
		for _, a := range e.Actions {
			if a.Type == flow.ActGroup && !slices.Contains(sent, a.Group) {
				sent = append(sent, a.Group)
				refs[a.Group]++
			}
		}
	}
	for _, g := range t.Groups().Groups() {
		for _, id := range g.Chained() {
			if id != g.ID {
				refs[id]++
			}
		}
	}
	return refs
}

// Groups returns bridge's groups (id, flow.GroupAllGroups: all of them)
// with their counters, which include what the fast path carried.
func (d *Daemon) Groups(bridge string, id uint32) ([]api.GroupStatus, error) {
	d.mu.Lock()
	b, err := d.bridge(bridge)
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	b.SyncFastPath()
	t, now := b.Flows(), time.Now()
	refs := groupRefs(t)
	out := []api.GroupStatus{}
	for _, g := range t.Groups().Groups() {
		if id == flow.GroupAllGroups || g.ID == id {
			out = append(out, groupStatus(g, refs[g.ID], now))
		}
	}
	return out, nil
}

// groupVerb runs add-groups, mod-group, del-groups, insert-buckets and
// remove-buckets under the verb lock; add-groups adds all of its groups
// or none.
func (d *Daemon) groupVerb(req api.Request) error {
	if _, err := d.bridge(req.Bridge); err != nil {
		return err
	}
	bc := d.cfg.Bridge(req.Bridge)
	var mods []GroupMod
	switch req.Verb {
	case api.VerbDelGroups:
		id, err := groupSelector(req.Match)
		if err != nil {
			return err
		}
		mods = []GroupMod{{Command: GroupDelete, Group: flow.Group{ID: id}}}
	case api.VerbInsertBuckets, api.VerbRemoveBuckets:
		if len(req.Groups) != 1 {
			return fmt.Errorf("%s takes one group's buckets", req.Verb)
		}
		insert := req.Verb == api.VerbInsertBuckets
		groups := d.bridges[req.Bridge].Flows().Groups()
		find := func(id uint32) (*flow.Group, bool) {
			g, ok := groups.Get(id)
			if !ok {
				return nil, false
			}
			return &g.Group, true
		}
		id, where, buckets, err := flow.ParseBucketCommand(req.Groups[0], insert, find, bc)
		if err != nil {
			return bc.NameBridge(err)
		}
		m := GroupMod{Command: GroupRemoveBuckets, Group: flow.Group{ID: id, Buckets: buckets}, Bucket: where}
		if insert {
			m.Command = GroupInsertBuckets
		}
		mods = []GroupMod{m}
	default:
		if len(req.Groups) == 0 {
			return errors.New("no groups given")
		}
		command := GroupAdd
		if req.Verb == api.VerbModGroup {
			command = GroupModify
		}
		for _, text := range req.Groups {
			g, err := flow.ParseGroup(text, bc)
			if err != nil {
				return fmt.Errorf("group %q: %w", text, bc.NameBridge(err))
			}
			mods = append(mods, GroupMod{Command: command, Group: g})
		}
	}
	if err := d.applyGroupMods(req.Bridge, mods); err != nil {
		return err
	}
	d.log.Info("groups changed", "bridge", req.Bridge, "verb", req.Verb, "count", len(mods))
	return nil
}

// groupSelector reads the group that del-groups and dump-groups name:
// "group_id=N", N, or nothing for every group.
func groupSelector(text string) (uint32, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return flow.GroupAllGroups, nil
	}
	return flow.ParseGroupID(strings.TrimPrefix(text, "group_id="))
}
