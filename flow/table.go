package flow

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync/atomic"
	"time"
)

// Entry is an installed rule with its counters. Rule is immutable once
// installed; counters are updated by forwarding goroutines once per rule per
// batch and read by anyone.
type Entry struct {
	Rule
	Installed time.Time // when added (for duration and hard_timeout)

	// stats is shared by every table version in which the entry survives
	// unchanged, and carried over when mod-flows changes only actions.
	stats *entryStats
	// seq orders entries by installation, for ties between equal
	// priorities and for dump order. mod-flows keeps it.
	seq uint64
	// ephemeral marks an entry that no configuration saves (AddEphemeral).
	ephemeral bool
}

// Ephemeral reports whether e was installed by AddEphemeral: a rule that
// the daemon never saves, as OpenFlow controllers' rules are not.
// mod-flows keeps the mark.
func (e *Entry) Ephemeral() bool { return e.ephemeral }

type entryStats struct {
	packets  atomic.Uint64
	bytes    atomic.Uint64
	lastUsed atomic.Int64 // Unix nanoseconds; 0 = never hit
}

// entrySeq numbers entries in creation order across all tables, so that
// entries from different versions keep their relative order.
var entrySeq atomic.Uint64

func newEntry(r Rule, now time.Time) *Entry {
	// A Key with bits outside its Mask would never match; normalise rather
	// than install a dead rule.
	r.Match.Mask.Table = math.MaxUint8 // a rule lives in one table
	r.Match.Key = r.Match.Key.And(&r.Match.Mask)
	return &Entry{Rule: r, Installed: now, stats: new(entryStats), seq: entrySeq.Add(1)}
}

// Hit counts packets and bytes against e and records now as its last use.
func (e *Entry) Hit(packets, bytes uint64, now time.Time) {
	e.stats.packets.Add(packets)
	e.stats.bytes.Add(bytes)
	e.stats.lastUsed.Store(now.UnixNano())
}

// Stats returns e's counters (those OFPT_FLOW_REMOVED and flow stats
// report, with Installed for the duration); lastUsed is Installed if e was
// never hit.
func (e *Entry) Stats() (packets, bytes uint64, lastUsed time.Time) {
	lastUsed = e.Installed
	if ns := e.stats.lastUsed.Load(); ns != 0 {
		lastUsed = time.Unix(0, ns)
	}
	return e.stats.packets.Load(), e.stats.bytes.Load(), lastUsed
}

// outranks reports whether e wins over o when both match: higher priority,
// then earlier installation.
func (e *Entry) outranks(o *Entry) bool {
	return e.Priority > o.Priority || e.Priority == o.Priority && e.seq < o.seq
}

func compareRank(a, b *Entry) int {
	if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
		return c
	}
	return cmp.Compare(a.seq, b.seq)
}

// Table is one immutable version of the flow table. Lookups never lock.
type Table struct {
	version   uint64
	subtables []*subtable // by the rank of their best entry, best first
	n         int
	// generations says, per pipeline table, which content it has: a
	// version that changes a table's rules gives it a new generation,
	// drawn from one counter for every Table, so two versions whose
	// generation for a table is the same have the same rules there.
	generations *[NumTables]uint64
	// changes are the entries this version added and removed, relative
	// to version changesFrom, when few enough to list (see Changes).
	changes *Changes
	// groups are the groups the rules may send to (nil: none).
	groups *GroupTable
}

// Groups returns the version's groups.
func (t *Table) Groups() *GroupTable {
	if t.groups == nil {
		return emptyGroups
	}
	return t.groups
}

// WithGroups returns the next version: t's rules with groups g.
func (t *Table) WithGroups(g *GroupTable) *Table {
	next := *t
	next.version, next.groups = t.version+1, g
	next.changes = &Changes{From: t.version} // no rule changed
	return &next
}

// Changes are the entries a version added to, and removed from, the
// version it was built from. Entries modified in place count as removed
// and added.
type Changes struct {
	From           uint64 // the version built from
	Added, Removed []*Entry
}

// maxListedChanges bounds what a version keeps of its changes: a bigger
// edit (a file of flows) is not listed, and whoever follows changes looks
// at the whole table instead, once.
const maxListedChanges = 64

// Changes returns what t changed of the version it was built from, or nil
// when it does not list them (a big edit, or a table made from nothing).
// A reader that followed that version can follow t at the cost of its
// changes rather than of its size.
func (t *Table) Changes() *Changes { return t.changes }

// lastGeneration is the generation last handed out, to any Table.
var lastGeneration atomic.Uint64

// Generation returns the generation of pipeline table id's rules in this
// version (see Table): what a cached translation that looked there
// compares to know whether the table changed since.
func (t *Table) Generation(id uint8) uint64 {
	if t.generations == nil || int(id) >= NumTables {
		return 0
	}
	return t.generations[id]
}

// NewTable builds a table from entries. Entries taken from another Table
// keep their counters and installation order; others (built by hand, with
// no counters) are copied and installed now, in slice order, after every
// existing entry. Of entries with identical Match and Priority, the last
// in the slice stays.
func NewTable(entries []*Entry, version uint64) *Table {
	b := newBuilder(&Table{})
	for _, e := range entries {
		if e.stats == nil {
			e = newEntry(e.Rule, e.Installed)
		}
		b.insert(e)
	}
	return b.build(version)
}

// Any reports whether fn holds for one of the table's entries, in no
// particular order.
func (t *Table) Any(fn func(*Entry) bool) bool {
	for _, st := range t.subtables {
		for _, bucket := range st.buckets() {
			if slices.ContainsFunc(bucket, fn) {
				return true
			}
		}
	}
	return false
}

// Masks returns the masks of the table's rules, each once.
func (t *Table) Masks() []Key {
	masks := make([]Key, len(t.subtables))
	for i, st := range t.subtables {
		masks[i] = st.mask
	}
	return masks
}

// Version returns the table's version number.
func (t *Table) Version() uint64 { return t.version }

// Len returns the number of entries.
func (t *Table) Len() int { return t.n }

// Entries returns all entries by priority, highest first, then in
// installation order (the order of dump-flows).
func (t *Table) Entries() []*Entry {
	all := make([]*Entry, 0, t.n)
	for _, st := range t.subtables {
		for _, bucket := range st.buckets() {
			all = append(all, bucket...)
		}
	}
	slices.SortFunc(all, compareRank)
	return all
}

// Add installs r as OpenFlow's add does: an entry with the same Match and
// Priority is replaced, and the replacement starts with zero counters.
func (t *Table) Add(r Rule, now time.Time) *Table {
	return t.AddAll([]Rule{r}, now)
}

// AddAll installs rs in order, as one new version (t itself if rs is
// empty). The table keeps each rule's Actions slice: do not change it
// afterwards.
func (t *Table) AddAll(rs []Rule, now time.Time) *Table {
	return t.addAll(rs, now, false)
}

// AddEphemeral is AddAll for rules that are not to be saved: their
// entries are Ephemeral.
func (t *Table) AddEphemeral(rs []Rule, now time.Time) *Table {
	return t.addAll(rs, now, true)
}

func (t *Table) addAll(rs []Rule, now time.Time, ephemeral bool) *Table {
	if len(rs) == 0 {
		return t
	}
	b := newBuilder(t)
	for _, r := range rs {
		e := newEntry(r, now)
		e.ephemeral = ephemeral
		b.insert(e)
	}
	return b.build(t.version + 1)
}

// Find returns the entry with r's Match (in r's table) and Priority, the
// one that adding r would replace, or nil.
func (t *Table) Find(r *Rule) *Entry {
	mask := r.Match.Mask
	mask.Table = math.MaxUint8
	key := r.Match.Key.And(&mask)
	for _, st := range t.subtables {
		if st.mask == mask {
			return st.find(&key, r.Priority)
		}
	}
	return nil
}

// Overlapping returns an entry of r's table and priority that some packet
// would match as well as r (OpenFlow's overlap, which an add with
// OFPFF_CHECK_OVERLAP refuses), or nil. The entry that r would replace,
// with the same match, overlaps it too.
func (t *Table) Overlapping(r *Rule) *Entry {
	m := r.Match
	m.Mask.Table = math.MaxUint8
	m.Key = m.Key.And(&m.Mask)
	for _, st := range t.subtables {
		for key, bucket := range st.buckets() {
			o := Match{Key: key, Mask: st.mask}
			if !m.Overlaps(&o) {
				continue
			}
			for _, e := range bucket {
				if e.Priority == r.Priority {
					return e
				}
			}
		}
	}
	return nil
}

// Edit is a change to a table's entries as a saved configuration keeps
// it: entries that go, entries that take new actions (both found by their
// Match and Priority, which are unique in a table) and rules restored as
// they were saved.
type Edit struct {
	Remove  []Rule
	Modify  []Rule
	Restore []SavedRule
	// RemoveGroups are removed first (GroupAllGroups: every group), then
	// Groups put in, added or in the place of those of their ids, as
	// installed at GroupsInstalled.
	RemoveGroups    []uint32
	Groups          []Group
	GroupsInstalled time.Time
}

// SavedRule is a rule as a configuration keeps it.
type SavedRule struct {
	Rule
	Installed time.Time
}

// Apply makes e's change as one new version (t itself if e is empty).
// Restored rules keep the time they were first installed, so that their
// hard_timeout and duration run on across a restart, but count as idle
// only from now, since their hits before it are not known. A rule to
// remove or modify that t does not hold is an error: the change was not
// made against this table.
func (t *Table) Apply(e Edit, now time.Time) (*Table, error) {
	if len(e.Remove)+len(e.Modify)+len(e.Restore)+len(e.RemoveGroups)+len(e.Groups) == 0 {
		return t, nil
	}
	b := newBuilder(t)
	if len(e.RemoveGroups)+len(e.Groups) > 0 {
		groups := t.Groups()
		var err error
		for _, id := range e.RemoveGroups {
			if groups, _, err = groups.Delete(id); err != nil {
				return nil, err
			}
		}
		if groups, err = groups.Restore(e.Groups, e.GroupsInstalled); err != nil {
			return nil, err
		}
		b.groups = groups
	}
	for _, r := range e.Remove {
		old := b.find(&r)
		if old == nil {
			return nil, fmt.Errorf("no rule to remove: %s", FormatRule(r))
		}
		b.remove(old)
	}
	for _, r := range e.Modify {
		old := b.find(&r)
		if old == nil {
			return nil, fmt.Errorf("no rule to modify: %s", FormatRule(r))
		}
		modified := *old
		modified.Actions, modified.Wire.Instructions = r.Actions, r.Wire.Instructions
		b.replace(old, &modified)
	}
	for _, s := range e.Restore {
		entry := newEntry(s.Rule, s.Installed)
		entry.stats.lastUsed.Store(now.UnixNano())
		b.insert(entry)
	}
	return b.build(t.version + 1), nil
}

// Modify gives the selected entries (see Select) new actions, and
// instructions as their Wire form's (nil: none to give back), keeping
// their timeouts, flags and installation time (hard_timeout counts from
// it), and their counters unless resetCounts (OpenFlow's
// OFPFF_RESET_COUNTS) says to start them from zero. It returns the new
// version and the entries as modified; with none, t itself.
func (t *Table) Modify(f Filter, strict bool, actions []Action, instructions []byte, resetCounts bool) (*Table, []*Entry) {
	selected := t.Select(f, strict)
	if len(selected) == 0 {
		return t, nil
	}
	actions = slices.Clone(actions)
	b := newBuilder(t)
	for i, old := range selected {
		modified := *old
		modified.Actions, modified.Wire.Instructions = actions, instructions
		if resetCounts {
			// Packets and bytes, not the last use: the idle timeout
			// runs on.
			modified.stats = new(entryStats)
			modified.stats.lastUsed.Store(old.stats.lastUsed.Load())
		}
		b.replace(old, &modified)
		selected[i] = &modified
	}
	return b.build(t.version + 1), selected
}

// Delete removes the selected entries (see Select). It returns the new
// version and the entries it removed; with none, t itself.
func (t *Table) Delete(f Filter, strict bool) (*Table, []*Entry) {
	selected := t.Select(f, strict)
	if len(selected) == 0 {
		return t, nil
	}
	return t.Without(selected), selected
}

// Select returns the entries f selects, in Entries order, as ovs-ofctl's
// flow commands do. Both modes require (cookie & f.CookieMask) ==
// (f.Cookie & f.CookieMask), that the entry outputs to f.OutPort if
// it names a port, and that it sends to f.OutGroup if it names a group. Non-strict, an entry is selected when f.Match
// is at least as general as the entry's match (f's mask is a subset of the
// entry's, and the entry's key agrees with f's on f's mask), whatever its
// priority. Strict, the entry's Match must equal f.Match (in any table
// if f names none) and its priority f.Priority (DefaultPriority if
// !f.HasPriority).
func (t *Table) Select(f Filter, strict bool) []*Entry {
	var selected []*Entry
	anyPort := f.OutPort == 0 || f.OutPort == AnyPort
	wanted := func(e *Entry) bool {
		return e.Cookie&f.CookieMask == f.Cookie&f.CookieMask && (anyPort || e.OutputsTo(f.OutPort)) &&
			(!f.ByOutGroup || e.SendsToGroup(f.OutGroup))
	}
	if strict {
		priority := f.Priority
		if !f.HasPriority {
			priority = DefaultPriority
		}
		// A strict filter that names no table means the same match in
		// every table: probe each table's copy of it.
		want := f.Match
		first, last := want.Key.Table, want.Key.Table
		if want.Mask.Table == 0 {
			want.Mask.Table, first, last = math.MaxUint8, 0, NumTables-1
		}
		for _, st := range t.subtables {
			if st.mask != want.Mask {
				continue
			}
			for table := int(first); table <= int(last); table++ {
				want.Key.Table = uint8(table)
				for _, e := range st.bucket(&want.Key) {
					if e.Priority == priority && wanted(e) {
						selected = append(selected, e)
					}
				}
			}
		}
		slices.SortFunc(selected, compareRank)
		return selected
	}
	var masked Key
	for _, st := range t.subtables {
		if !covers(&st.mask, &f.Match.Mask) {
			continue
		}
		if st.mask == f.Match.Mask {
			for _, e := range st.bucket(&f.Match.Key) {
				if wanted(e) {
					selected = append(selected, e)
				}
			}
			continue
		}
		for key, bucket := range st.buckets() {
			if maskKey(&masked, &key, &f.Match.Mask); masked != f.Match.Key {
				continue
			}
			for _, e := range bucket {
				if wanted(e) {
					selected = append(selected, e)
				}
			}
		}
	}
	slices.SortFunc(selected, compareRank)
	return selected
}

// Expire removes the entries whose hard_timeout has passed since they were
// installed or whose idle_timeout has passed since they were last hit (or
// installed, if never hit). A timeout expires once the full number of
// seconds has elapsed. It returns the new version and the removed entries
// in Entries order; if none expired, t itself and nil.
func (t *Table) Expire(now time.Time) (*Table, []*Entry) {
	var expired []*Entry
	for _, st := range t.subtables {
		for _, bucket := range st.buckets() {
			for _, e := range bucket {
				if e.expired(now) {
					expired = append(expired, e)
				}
			}
		}
	}
	if len(expired) == 0 {
		return t, nil
	}
	slices.SortFunc(expired, compareRank)
	return t.Without(expired), expired
}

func (e *Entry) expired(now time.Time) bool { return e.TimedOut(now) != NotTimedOut }

// Timeout says which of a rule's timeouts has passed.
type Timeout uint8

const (
	NotTimedOut Timeout = iota
	IdleTimedOut
	HardTimedOut
)

// TimedOut says which of e's timeouts has passed at now; the hard one
// when both have, as in OVS.
func (e *Entry) TimedOut(now time.Time) Timeout {
	if e.HardTimeout != 0 && now.Sub(e.Installed) >= time.Duration(e.HardTimeout)*time.Second {
		return HardTimedOut
	}
	if e.IdleTimeout != 0 {
		_, _, lastUsed := e.Stats()
		if now.Sub(lastUsed) >= time.Duration(e.IdleTimeout)*time.Second {
			return IdleTimedOut
		}
	}
	return NotTimedOut
}

// Without returns the next version without entries, which t holds.
func (t *Table) Without(entries []*Entry) *Table {
	b := newBuilder(t)
	for _, e := range entries {
		b.remove(e)
	}
	return b.build(t.version + 1)
}

// builder makes the next version of a table. It copies a subtable the
// first time an edit touches it, and in its overlay the trie nodes on the
// path to each key it edits (the first time: after that they are its
// own), so the base version, which lookups may still be using, never
// changes.
type builder struct {
	subtables []*subtable
	byMask    map[Key]int             // index into subtables
	owned     map[*subtable]ownership // subtables absent are shared with other versions
	stale     map[*subtable]bool      // owned subtables whose best entry may have been removed
	tok       *editToken              // the overlays' trie nodes this builder made
	n         int
	base      *[NumTables]uint64 // the base version's generations
	touched   [NumTables]bool    // pipeline tables whose rules the edit changes
	// The edit's entries added and removed, while listing (see Changes),
	// and the version it starts from.
	changes Changes
	listing bool
	from    uint64
	groups  *GroupTable // the next version's
}

// ownership says what of a subtable a builder made and may change.
type ownership uint8

const (
	// ownOverlay: the base is shared with other versions.
	ownOverlay ownership = iota + 1
	// ownAll: the base too (a new subtable or a fold), so edits go
	// straight to it and the overlay is empty.
	ownAll
)

func newBuilder(t *Table) *builder {
	b := &builder{
		subtables: slices.Clone(t.subtables),
		byMask:    make(map[Key]int, len(t.subtables)),
		owned:     make(map[*subtable]ownership),
		stale:     make(map[*subtable]bool),
		tok:       new(editToken),
		n:         t.n,
		base:      t.generations,
		from:      t.version,
		listing:   t.generations != nil,
		groups:    t.groups,
	}
	for i, st := range t.subtables {
		b.byMask[st.mask] = i
	}
	return b
}

// writable returns an owned subtable for mask, creating an empty one if
// there is none and create is set; nil otherwise.
func (b *builder) writable(mask *Key, create bool) *subtable {
	i, ok := b.byMask[*mask]
	if !ok {
		if !create {
			return nil
		}
		st := &subtable{mask: *mask, base: make(map[Key][]*Entry)}
		st.resetTop()
		b.byMask[*mask] = len(b.subtables)
		b.subtables = append(b.subtables, st)
		b.owned[st] = ownAll
		return st
	}
	st := b.subtables[i]
	if b.owned[st] == 0 {
		clone := *st // sharing the overlay's nodes, which set copies as it goes
		st = &clone
		b.subtables[i] = st
		b.owned[st] = ownOverlay
	}
	return st
}

// set makes bucket, which this builder made, st's bucket for key; an
// empty one removes the key.
func (b *builder) set(st *subtable, key *Key, bucket []*Entry) {
	if b.owned[st] == ownAll {
		if len(bucket) == 0 {
			delete(st.base, *key)
		} else {
			st.base[*key] = bucket
		}
		return
	}
	switch _, inBase := st.base[*key]; {
	case len(bucket) != 0:
		st.overlay.set(key, bucket, b.tok)
	case inBase:
		st.overlay.set(key, []*Entry{}, b.tok) // gone from the base
	default:
		st.overlay.set(key, nil, b.tok)
	}
	if st.overlay.n > foldThreshold(len(st.base)) {
		base := maps.Clone(st.base)
		for key, bucket := range st.overlay.all() {
			if len(bucket) == 0 {
				delete(base, key)
			} else {
				base[key] = bucket
			}
		}
		st.base, st.overlay = base, bucketTrie{}
		b.owned[st] = ownAll
	}
}

// isTop reports whether e is st's recorded best entry.
func (st *subtable) isTop(e *Entry) bool {
	return e.Priority == st.maxPriority && e.seq == st.topSeq
}

// insert adds e, replacing an entry with the same Match and Priority.
func (b *builder) insert(e *Entry) {
	b.touched[e.Table()] = true
	st := b.writable(&e.Match.Mask, true)
	old := st.bucket(&e.Match.Key)
	bucket := make([]*Entry, 0, len(old)+1)
	for _, o := range old {
		if o.Priority != e.Priority {
			bucket = append(bucket, o)
		} else if st.isTop(o) {
			// Some other entry of o's priority, installed after
			// o and before e, may be the best now.
			b.stale[st] = true
		}
	}
	if len(bucket) == len(old) {
		st.n++
		b.n++
	}
	i, _ := slices.BinarySearchFunc(bucket, e, compareRank)
	b.set(st, &e.Match.Key, slices.Insert(bucket, i, e))
	st.offerTop(e)
	b.list(&b.changes.Added, e)
	for _, o := range old {
		if o.Priority == e.Priority {
			b.list(&b.changes.Removed, o)
		}
	}
}

// list notes e among the changes, until they are too many to list.
func (b *builder) list(to *[]*Entry, e *Entry) {
	if !b.listing {
		return
	}
	if len(b.changes.Added)+len(b.changes.Removed) >= maxListedChanges {
		b.listing = false
		return
	}
	*to = append(*to, e)
}

// remove deletes e, which must be in the table.
func (b *builder) remove(e *Entry) {
	b.touched[e.Table()] = true
	st := b.writable(&e.Match.Mask, false)
	bucket := slices.DeleteFunc(slices.Clone(st.bucket(&e.Match.Key)), func(o *Entry) bool { return o == e })
	b.set(st, &e.Match.Key, bucket)
	st.n--
	b.n--
	if st.isTop(e) {
		b.stale[st] = true
	}
	b.list(&b.changes.Removed, e)
}

// find returns the entry with r's Match and Priority, or nil.
func (b *builder) find(r *Rule) *Entry {
	mask := r.Match.Mask
	mask.Table = math.MaxUint8
	i, ok := b.byMask[mask]
	if !ok {
		return nil
	}
	key := r.Match.Key.And(&mask)
	return b.subtables[i].find(&key, r.Priority)
}

// find returns the entry with key, under st's mask, and priority, or nil.
func (st *subtable) find(key *Key, priority uint16) *Entry {
	for _, e := range st.bucket(key) {
		if e.Priority == priority {
			return e
		}
	}
	return nil
}

// replace puts updated in old's place; both have the same Match, Priority
// and seq, so no order changes.
func (b *builder) replace(old, updated *Entry) {
	b.touched[old.Table()] = true
	st := b.writable(&old.Match.Mask, false)
	bucket := slices.Clone(st.bucket(&old.Match.Key))
	bucket[slices.Index(bucket, old)] = updated
	b.set(st, &old.Match.Key, bucket)
	b.list(&b.changes.Removed, old)
	b.list(&b.changes.Added, updated)
}

func (b *builder) build(version uint64) *Table {
	t := &Table{version: version, n: b.n, subtables: make([]*subtable, 0, len(b.subtables)),
		generations: new([NumTables]uint64), groups: b.groups}
	if b.base != nil {
		*t.generations = *b.base
	}
	if b.listing {
		b.changes.From = b.from
		t.changes = &b.changes
	}
	for id, touched := range b.touched {
		if touched {
			t.generations[id] = lastGeneration.Add(1)
		}
	}
	for _, st := range b.subtables {
		if st.n == 0 {
			continue
		}
		if b.stale[st] {
			st.resetTop()
			for _, bucket := range st.buckets() {
				st.offerTop(bucket[0])
			}
		}
		t.subtables = append(t.subtables, st)
	}
	slices.SortFunc(t.subtables, func(a, b *subtable) int {
		if c := cmp.Compare(b.maxPriority, a.maxPriority); c != 0 {
			return c
		}
		return cmp.Compare(a.topSeq, b.topSeq)
	})
	return t
}
