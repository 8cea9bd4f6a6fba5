package flow

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"time"
)

// GroupTable is a bridge's groups at one moment: immutable, so that
// forwarders read it without locks while a change makes the next one.
// A Table holds its group table (Table.Groups), so that a change of
// groups and of the rules that send to them is one version.
type GroupTable struct {
	groups map[uint32]*GroupEntry
}

// GroupEntry is an installed group with its counters, which forwarders
// add to once per batch and anyone reads.
type GroupEntry struct {
	Group
	Installed time.Time // when added or last modified (for duration)
	stats     *groupStats
}

type groupStats struct {
	packets, bytes atomic.Uint64
	buckets        []bucketStats // by the bucket's index in Buckets
}

type bucketStats struct{ packets, bytes atomic.Uint64 }

func newGroupEntry(g Group, now time.Time) *GroupEntry {
	return &GroupEntry{Group: g, Installed: now, stats: &groupStats{buckets: make([]bucketStats, len(g.Buckets))}}
}

// Hit counts packets frames of bytes bytes that reached the group.
func (e *GroupEntry) Hit(packets, bytes uint64) {
	e.stats.packets.Add(packets)
	e.stats.bytes.Add(bytes)
}

// HitBucket counts packets frames of bytes bytes that took the group's
// bucket of index bucket.
func (e *GroupEntry) HitBucket(bucket int, packets, bytes uint64) {
	e.stats.buckets[bucket].packets.Add(packets)
	e.stats.buckets[bucket].bytes.Add(bytes)
}

// GroupCounts are a group's counters, or a bucket's.
type GroupCounts struct{ Packets, Bytes uint64 }

// Stats returns the group's counters and its buckets', in bucket order.
func (e *GroupEntry) Stats() (group GroupCounts, buckets []GroupCounts) {
	buckets = make([]GroupCounts, len(e.stats.buckets))
	for i := range buckets {
		b := &e.stats.buckets[i]
		buckets[i] = GroupCounts{b.packets.Load(), b.bytes.Load()}
	}
	return GroupCounts{e.stats.packets.Load(), e.stats.bytes.Load()}, buckets
}

// emptyGroups is the group table of a Table that has none.
var emptyGroups = NewGroupTable()

// NewGroupTable returns an empty group table.
func NewGroupTable() *GroupTable { return &GroupTable{groups: map[uint32]*GroupEntry{}} }

// Len is how many groups there are.
func (t *GroupTable) Len() int { return len(t.groups) }

// Get returns group id, if there is one.
func (t *GroupTable) Get(id uint32) (*GroupEntry, bool) {
	g, ok := t.groups[id]
	return g, ok
}

// Groups lists the groups by id.
func (t *GroupTable) Groups() []*GroupEntry {
	out := slices.Collect(maps.Values(t.groups))
	slices.SortFunc(out, func(a, b *GroupEntry) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// GroupModCode is why a change of the group table was refused, as
// OpenFlow's OFPGMFC_* codes say it.
type GroupModCode uint16

// The codes of OpenFlow 1.3.5's ofp_group_mod_failed_code this table uses.
const (
	GroupExists   GroupModCode = 0  // OFPGMFC_GROUP_EXISTS
	GroupInvalid  GroupModCode = 1  // OFPGMFC_INVALID_GROUP: a reserved group id
	GroupLoop     GroupModCode = 7  // OFPGMFC_LOOP
	GroupUnknown  GroupModCode = 8  // OFPGMFC_UNKNOWN_GROUP
	GroupChained  GroupModCode = 9  // OFPGMFC_CHAINED_GROUP: another group forwards to it
	GroupBadWatch GroupModCode = 13 // OFPGMFC_BAD_WATCH
)

// GroupModError is a refused change of the group table: its code and
// what it says to a person.
type GroupModError struct {
	Code GroupModCode
	Msg  string
}

func (e *GroupModError) Error() string { return e.Msg }

func groupModError(code GroupModCode, format string, args ...any) error {
	return &GroupModError{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Add returns the table with g added, or why not: its id is taken or
// reserved, or its buckets chain to a group that is not there or back to
// g.
func (t *GroupTable) Add(g Group, now time.Time) (*GroupTable, error) {
	if _, ok := t.groups[g.ID]; ok {
		return nil, groupModError(GroupExists, "group %d exists", g.ID)
	}
	return t.with(g, now)
}

// Modify returns the table with g in place of the group of its id, which
// must be there. Its counters start again from zero, as its buckets may
// be others.
func (t *GroupTable) Modify(g Group, now time.Time) (*GroupTable, error) {
	if _, ok := t.groups[g.ID]; !ok {
		return nil, groupModError(GroupUnknown, "group %d does not exist", g.ID)
	}
	return t.with(g, now)
}

// Restore returns the table with groups put in, added or in the place of
// those of their ids, as installed at installed: what a saved
// configuration holds, in any order, which must be whole (no chain or
// watch to a group that is neither here nor among them) and free of loops.
func (t *GroupTable) Restore(groups []Group, installed time.Time) (*GroupTable, error) {
	next := &GroupTable{groups: maps.Clone(t.groups)}
	for _, g := range groups {
		next.groups[g.ID] = newGroupEntry(g, installed)
	}
	for _, g := range groups {
		if err := next.check(&g); err != nil {
			return nil, err
		}
	}
	return next, nil
}

// Delete returns the table without group id (GroupAllGroups: without
// any), and the ids it removed; a group that is not there is no error, as in
// OpenFlow. A group that another group forwards to is refused.
func (t *GroupTable) Delete(id uint32) (*GroupTable, []uint32, error) {
	next := NewGroupTable()
	if id == GroupAllGroups {
		return next, slices.Sorted(maps.Keys(t.groups)), nil
	}
	if _, ok := t.groups[id]; !ok {
		return t, nil, nil
	}
	for _, g := range t.groups {
		if g.ID != id && slices.Contains(g.Chained(), id) {
			return nil, nil, groupModError(GroupChained, "group %d forwards to group %d: delete it first", g.ID, id)
		}
	}
	for gid, g := range t.groups {
		if gid != id {
			next.groups[gid] = g
		}
	}
	return next, []uint32{id}, nil
}

// with returns the table with g in the place of its id, after checking
// what it chains to and watches.
func (t *GroupTable) with(g Group, now time.Time) (*GroupTable, error) {
	if g.ID > GroupMax {
		return nil, groupModError(GroupInvalid, "group id %d is reserved", g.ID)
	}
	next := &GroupTable{groups: maps.Clone(t.groups)}
	next.groups[g.ID] = newGroupEntry(g, now)
	if err := next.check(&g); err != nil {
		return nil, err
	}
	return next, nil
}

// check checks what group g, which t holds, chains to and watches.
func (t *GroupTable) check(g *Group) error {
	for _, b := range g.Buckets {
		if b.WatchGroup != GroupAny {
			if _, ok := t.groups[b.WatchGroup]; !ok {
				return groupModError(GroupBadWatch, "group %d watches group %d, which does not exist", g.ID, b.WatchGroup)
			}
		}
	}
	for _, c := range g.Chained() {
		if _, ok := t.groups[c]; !ok {
			return groupModError(GroupUnknown, "group %d forwards to group %d, which does not exist", g.ID, c)
		}
	}
	if t.reaches(g.ID, g.ID, map[uint32]bool{}) {
		return groupModError(GroupLoop, "group %d forwards, through its buckets, back to itself", g.ID)
	}
	return nil
}

// reaches reports whether group from forwards, directly or through
// other groups, to group to.
func (t *GroupTable) reaches(from, to uint32, seen map[uint32]bool) bool {
	g, ok := t.groups[from]
	if !ok || seen[from] {
		return false
	}
	seen[from] = true
	for _, c := range g.Chained() {
		if c == to || t.reaches(c, to, seen) {
			return true
		}
	}
	return false
}

// Chained lists the groups g's buckets forward to.
func (g *Group) Chained() []uint32 {
	var out []uint32
	for _, b := range g.Buckets {
		for _, a := range b.Actions {
			if a.Type == ActGroup && !slices.Contains(out, a.Group) {
				out = append(out, a.Group)
			}
		}
	}
	return out
}
