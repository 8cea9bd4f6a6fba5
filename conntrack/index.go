package conntrack

// index is one shard's map from tuples to the connections they belong to:
// open addressing with linear probing over 8-byte entries, each 32 bits
// of the tuple's hash and a ref. The tuple itself is not kept: an entry
// whose hash bits match is confirmed against the connection's own tuple,
// which a hit reads anyway. That is some 16 bytes per tuple where a Go
// map keyed by tuples takes about 100, and one hash per lookup instead of
// two (the tracker's, which also picked the shard, and the map's).
// Removal shifts the entries after a hole back (no tombstones), so probe
// lengths stay those of the load, at most 3/4.
//
// The shard's lock guards it. Every entry names a live connection, whose
// tuples do not change while it lives.
type index struct {
	slots []uint64
	n     int
}

const (
	entryPresent = 1 << 31 // in an entry's low word, so no entry is 0
	minIndex     = 8
)

func makeEntry(h uint32, r ref) uint64 { return uint64(h)<<32 | uint64(r) | entryPresent }
func entryHash(e uint64) uint32        { return uint32(e >> 32) }
func entryRef(e uint64) ref            { return ref(uint32(e) &^ entryPresent) }

// find returns the position and ref of k's entry (h is k's hash).
func (x *index) find(s *slab, k *Tuple, h uint32) (int, ref, bool) {
	if x.n == 0 {
		return 0, 0, false
	}
	mask := len(x.slots) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		e := x.slots[i]
		if e == 0 {
			return 0, 0, false
		}
		if entryHash(e) == h {
			r := entryRef(e)
			if s.conn(r.slot()).key[b2u(r.reply())] == *k {
				return i, r, true
			}
		}
	}
}

// add places an entry for a tuple of hash h that is not in the index.
func (x *index) add(h uint32, r ref) {
	if 4*(x.n+1) > 3*len(x.slots) {
		x.resize(max(minIndex, 2*len(x.slots)))
	}
	x.place(makeEntry(h, r))
	x.n++
}

func (x *index) place(e uint64) {
	mask := len(x.slots) - 1
	i := int(entryHash(e)) & mask
	for x.slots[i] != 0 {
		i = (i + 1) & mask
	}
	x.slots[i] = e
}

// removeAt empties position i, moving back each later entry of the run
// that may sit in the hole (one whose home is not cyclically in the hole's
// past), so that every entry stays reachable from its home.
func (x *index) removeAt(i int) {
	mask := len(x.slots) - 1
	for j := (i + 1) & mask; x.slots[j] != 0; j = (j + 1) & mask {
		home := int(entryHash(x.slots[j])) & mask
		if j > i && (home <= i || home > j) || j < i && home <= i && home > j {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = 0
	x.n--
	// Give back the room of a shard emptied by a flush.
	if len(x.slots) > 8*minIndex && 8*x.n < len(x.slots) {
		x.resize(len(x.slots) / 2)
	}
}

func (x *index) resize(size int) {
	old := x.slots
	x.slots = make([]uint64, size)
	for _, e := range old {
		if e != 0 {
			x.place(e)
		}
	}
}
