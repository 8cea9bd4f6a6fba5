package flow

// Flow classifier.
//
// What it does
// ============
//
// A Table holds installed rules, each a masked match plus a priority. Given
// the Key of a frame, Lookup returns the highest-priority rule whose match
// the key satisfies. It runs for every table a flow visits, once per miss
// of the forwarders' exact-match cache of decisions, so it must be fast,
// must not lock, and must not allocate.
//
// Tuple-space search
// ==================
//
// If every rule matched the same fields (say, in_port and dl_dst), one hash
// table keyed by those fields would answer a lookup in one probe: mask the
// frame's key with the common mask and look it up. Real tables mix a few
// shapes of rule, so the classifier keeps one such hash table per distinct
// mask, a "subtable". A lookup masks the key with each subtable's mask in
// turn, probes that subtable, and keeps the best rule found. The cost grows
// with the number of distinct masks, not with the number of rules: a
// thousand per-host rules that all match nw_dst/32 cost one probe.
//
// Key is a packed struct of fixed-size arrays, so a masked Key is itself the
// Go map key: no hash function of our own and nothing allocated per probe.
//
// Rules that differ only in priority share a masked key, so a subtable maps
// each masked key to a short slice ("bucket") of entries sorted best first;
// a probe only ever needs the bucket's head.
//
// Priority order, and skipping subtables
// ======================================
//
// Entries are ranked by priority, highest first; among equal priorities
// the entry installed earlier wins. OpenFlow leaves overlapping rules of
// equal priority undefined; we pin it down so that results do not depend on
// how subtables happen to be laid out, and so that a linear scan of the rules
// (the test's reference) gives the same answer.
//
// Each subtable remembers the rank of its best entry (its highest priority
// and, at that priority, its earliest installation), and subtables are
// visited in order of that rank. Once the best match found so far outranks
// the next subtable's best entry, no later subtable can beat it either, and
// the lookup stops. A table whose high-priority rules are few and specific
// (ACLs above a priority-0 NORMAL rule) therefore answers most lookups
// after one or two probes.
//
// Versions instead of locks
// =========================
//
// A Table is immutable. Every edit (add, modify, delete, expire) builds a
// new Table with the next version number; the Classifier publishes it with
// one atomic pointer store, and each forwarding goroutine loads the pointer
// once per batch, so a batch sees one consistent version and readers never
// wait for writers. A new version shares every subtable the edit did not
// touch, and buckets are never changed in place once published.
//
// Copying a touched subtable would make one add O(size of its subtable),
// and controllers add rules one at a time (each flow mod a version), so
// 100,000 of them would take O(n^2). A subtable instead keeps its map of
// buckets, the base, immutable and shared between versions, plus an
// overlay of the buckets edited since, an overlay bucket replacing the
// base's for its key and an empty one saying the key is gone. The overlay
// is a persistent hash trie (trie.go): a new version copies the nodes on
// the path to each key it edits, O(log n), and shares the rest. Once the
// overlay outgrows foldThreshold, the edit folds it into a fresh copy of
// the base: O(n) every n/32 edits, so a few entries' copy per edit. A
// lookup probes the base map alone when there is no overlay (a table
// built at once, as add-flows and a restart build it), and the overlay,
// which is small and shallow, first when there is. Removing or replacing
// a subtable's best entry still rescans the subtable for the next best;
// other edits leave the recorded best as it is.
//
// Entries that survive an edit unchanged are the same *Entry in both
// versions, so their counters continue; mod-flows makes a new Entry that
// shares the old one's counters.
//
// Not done (OVS does these to reduce datapath-flow un-wildcarding and probes,
// which matter less here because there is no megaflow layer): staged lookup,
// prefix tries, metadata partitioning.

import (
	"iter"
	"math"
	"sync/atomic"
)

// Classifier holds the current version of a table; forwarding goroutines
// Load it once per batch. Publishing is a single atomic store, so writers
// must serialise among themselves (read-modify-publish is not atomic).
type Classifier struct {
	cur atomic.Pointer[Table]
}

// NewClassifier returns a classifier whose current table is empty, version 1.
func NewClassifier() *Classifier {
	c := &Classifier{}
	c.cur.Store(NewTable(nil, 1))
	return c
}

// Load returns the current table.
func (c *Classifier) Load() *Table { return c.cur.Load() }

// Publish makes t the current table.
func (c *Classifier) Publish(t *Table) { c.cur.Store(t) }

// subtable holds every entry with one mask.
type subtable struct {
	mask Key
	// Buckets by the entries' Match.Key, each sorted by rank: read them
	// through bucket and buckets, which merge overlay over base.
	base    map[Key][]*Entry
	overlay bucketTrie
	n       int

	// The rank of the subtable's best entry, which bounds what a probe
	// here can find.
	maxPriority uint16
	topSeq      uint64
}

// Lookup returns the highest-priority entry whose match k satisfies (the
// earliest installed among equals), or nil if none does.
func (t *Table) Lookup(k *Key) *Entry {
	var best *Entry
	var masked Key
	for _, st := range t.subtables {
		if best != nil && outranksTop(best, st) {
			break
		}
		maskKey(&masked, k, &st.mask)
		if bucket := st.bucket(&masked); len(bucket) != 0 {
			if e := bucket[0]; best == nil || e.outranks(best) {
				best = e
			}
		}
	}
	return best
}

// bucket returns the entries with key, under st's mask; none if empty.
func (st *subtable) bucket(key *Key) []*Entry {
	if st.overlay.root != nil {
		if bucket, ok := st.overlay.get(key); ok {
			return bucket
		}
	}
	return st.base[*key]
}

// buckets yields every key of st and its bucket, none empty, in no
// particular order.
func (st *subtable) buckets() iter.Seq2[Key, []*Entry] {
	return func(yield func(Key, []*Entry) bool) {
		for key, bucket := range st.base {
			if st.overlay.root != nil {
				if _, edited := st.overlay.get(&key); edited {
					continue
				}
			}
			if !yield(key, bucket) {
				return
			}
		}
		for key, bucket := range st.overlay.all() {
			if len(bucket) != 0 && !yield(key, bucket) {
				return
			}
		}
	}
}

// foldThreshold is how many keys an overlay over a base of n keys may hold
// before an edit folds it in: a fold copies the base, and a bigger overlay
// makes lookups go deeper into it; below 64 keys copying the base is
// cheap anyway.
func foldThreshold(n int) int { return max(64, n/32) }

// outranksTop reports whether e ranks before every entry of st.
func outranksTop(e *Entry, st *subtable) bool {
	return e.Priority > st.maxPriority || e.Priority == st.maxPriority && e.seq < st.topSeq
}

func (st *subtable) resetTop() { st.maxPriority, st.topSeq = 0, math.MaxUint64 }

// offerTop makes e the subtable's best entry if it outranks the current one.
func (st *subtable) offerTop(e *Entry) {
	if outranksTop(e, st) {
		st.maxPriority, st.topSeq = e.Priority, e.seq
	}
}

// covers reports whether mask a has every bit of mask b.
func covers(a, b *Key) bool {
	var both Key
	maskKey(&both, a, b)
	return both == *b
}
