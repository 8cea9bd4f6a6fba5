package conntrack

import (
	"math"
	"sync"
	"sync/atomic"
	"unsafe"
)

// The table: connections live in slots of a slab of fixed-size chunks,
// which never move once made, and are found through per-shard indexes
// from each of their two tuples to their slot. A tuple's shard is picked
// by the top bits of its hash, its place in the shard's index by the low
// ones; a connection's two tuples are usually in different shards.
//
// Locks, always taken in this order: the shards a change touches (in
// shard order, each once), then a connection's mu. A lookup holds its
// shard only until it holds the connection, so forwarding threads on
// different connections meet only when their tuples share a shard. Slots
// are taken and given back under the slab's own lock, innermost, only
// when connections are made and removed.

const (
	shardBits = 10
	numShards = 1 << shardBits
	chunkBits = 12
	chunkSize = 1 << chunkBits
	// maxChunks bounds the slab: 64M connections, whatever maxconns says.
	maxChunks = 1 << 14
	maxSlots  = maxChunks * chunkSize
)

type shard struct {
	mu  sync.Mutex
	idx index
	// Keep each shard's lock on a cache line of its own.
	_ [64 - 40]byte
}

// ref is what an index entry names: the slot of the connection a tuple
// is of, and whether the tuple is its reply direction.
type ref uint32

func makeRef(slot uint32, reply bool) ref { return ref(slot<<1 | uint32(b2u(reply))) }
func (r ref) slot() uint32                { return uint32(r >> 1) }
func (r ref) reply() bool                 { return r&1 != 0 }

type chunk [chunkSize]conn

const chunkBytes = unsafe.Sizeof(chunk{})

type slab struct {
	mu       sync.Mutex
	freeHead uint32 // a free slot + 1; 0 when none
	used     uint32 // slots below this have been handed out at least once
	// chunks is an object of its own, which the tracker's cleanup frees
	// the chunks of (chunk.go).
	chunks *chunkTable
}

type chunkTable [maxChunks]atomic.Pointer[chunk]

// never is the expiry of a free slot.
const never = math.MaxInt64

// highWater is the number of slots handed out so far: those a scan reads.
func (s *slab) highWater() uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used
}

func (s *slab) conn(slot uint32) *conn {
	return &s.chunks[slot>>chunkBits].Load()[slot&(chunkSize-1)]
}

// take hands out a free slot, making a chunk when all are used, or
// reports that the slab is full.
func (s *slab) take() (uint32, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.freeHead != 0 {
		slot := s.freeHead - 1
		s.freeHead = s.conn(slot).nextFree
		return slot, true
	}
	if s.used == maxSlots {
		return 0, false
	}
	slot := s.used
	if slot&(chunkSize-1) == 0 {
		c, ok := newChunk()
		if !ok {
			return 0, false // no memory for more: full
		}
		for i := range c {
			c[i].gen = 1
			c[i].expires.Store(never)
		}
		s.chunks[slot>>chunkBits].Store(c)
	}
	s.used++
	return slot, true
}

// give returns a slot whose connection is gone (or was never made).
func (s *slab) give(slot uint32) {
	s.conn(slot).expires.Store(never)
	s.mu.Lock()
	s.conn(slot).nextFree = s.freeHead
	s.freeHead = slot + 1
	s.mu.Unlock()
}

// place is where tuple k goes: its shard and its hash in the shard.
func (t *Tracker) place(k *Tuple) (*shard, uint32) {
	i, h := t.hashOf(k)
	return &t.shards[i], h
}

func (t *Tracker) hashOf(k *Tuple) (shard int, h uint32) {
	x := k.hash(t.seed)
	return int(x >> (64 - shardBits)), uint32(x)
}

// lockPair locks the shards of two tuples, in shard order, and returns
// them and the tuples' hashes; they may be one shard.
func (t *Tracker) lockPair(a, b *Tuple) (sa, sb *shard, ha, hb uint32) {
	ia, ha := t.hashOf(a)
	ib, hb := t.hashOf(b)
	sa, sb = &t.shards[ia], &t.shards[ib]
	switch {
	case ia == ib:
		sa.mu.Lock()
	case ia < ib:
		sa.mu.Lock()
		sb.mu.Lock()
	default:
		sb.mu.Lock()
		sa.mu.Lock()
	}
	return sa, sb, ha, hb
}

func unlockPair(sa, sb *shard) {
	sa.mu.Unlock()
	if sb != sa {
		sb.mu.Unlock()
	}
}

// lookup finds the live, unexpired connection with tuple k and returns it
// locked, with whether k is its reply direction; a carried one as its
// store has it. A connection past its time is gone as far as packets go,
// before the sweep removes it, as in OVS.
func (t *Tracker) lookup(k *Tuple, now int64) (c *conn, slot uint32, reply bool) {
	s, h := t.place(k)
	s.mu.Lock()
	_, r, ok := s.idx.find(&t.slab, k, h)
	if !ok {
		s.mu.Unlock()
		return nil, 0, false
	}
	c = t.slab.conn(r.slot())
	c.mu.Lock()
	s.mu.Unlock()
	if c.carrier != 0 {
		t.refresh(c, makeHandle(r.slot(), c.gen))
	}
	if now >= c.expires.Load() {
		c.mu.Unlock()
		return nil, 0, false
	}
	return c, r.slot(), r.reply()
}

// byHandle returns h's connection locked, if it still lives.
func (t *Tracker) byHandle(h Handle) *conn {
	slot := h.slot()
	if h == 0 || slot >= maxSlots || t.slab.chunks[slot>>chunkBits].Load() == nil {
		return nil
	}
	c := t.slab.conn(slot)
	c.mu.Lock()
	if !c.live || c.gen != h.gen() {
		c.mu.Unlock()
		return nil
	}
	return c
}

// insertResult says how placing a new connection's tuples went.
type insertResult uint8

const (
	inserted insertResult = iota
	// origTaken: a live connection already has the new one's original
	// tuple (another thread committed the same packet's connection).
	origTaken
	// replyTaken: a live connection has the reply tuple: NAT tries
	// another; without NAT the commit fails, as the kernel's does on a
	// clash.
	replyTaken
)

// insert places locked, unpublished connection c (in slot) under both
// its tuples. A connection past its time that holds either is removed
// first: it no longer counts, as in OVS's lookups.
func (t *Tracker) insert(c *conn, slot uint32, now int64) insertResult {
	k0, k1 := &c.key[0], &c.key[1]
	for {
		sa, sb, ha, hb := t.lockPair(k0, k1)
		res, stale, staleGen, found := t.holder(sa, k0, ha, now, origTaken)
		if !found && *k1 != *k0 {
			res, stale, staleGen, found = t.holder(sb, k1, hb, now, replyTaken)
		}
		if !found {
			sa.idx.add(ha, makeRef(slot, false))
			if *k1 != *k0 {
				sb.idx.add(hb, makeRef(slot, true))
			}
			c.live = true
		}
		unlockPair(sa, sb)
		if !found {
			return inserted
		}
		if staleGen == 0 {
			return res
		}
		t.removeExpired(stale, staleGen, now)
	}
}

// holder looks k (hash h) up in locked shard s: found says some
// connection holds it; a live one makes the insertion fail with taken,
// one past its time is returned (slot and generation) to be removed
// first.
func (t *Tracker) holder(s *shard, k *Tuple, h uint32, now int64, taken insertResult) (res insertResult, slot, gen uint32, found bool) {
	_, r, ok := s.idx.find(&t.slab, k, h)
	if !ok {
		return inserted, 0, 0, false
	}
	if oc := t.slab.conn(r.slot()); now >= oc.expires.Load() {
		return inserted, r.slot(), oc.gen, true
	}
	return taken, 0, 0, true
}

// remove takes the connection in slot out of the table if it is still
// generation gen, counting it in why, and reports whether it did.
func (t *Tracker) remove(slot, gen uint32, why *atomic.Uint64) bool {
	return t.drop(slot, gen, why, false, 0)
}

// removeExpired is remove for a connection found past its time at now:
// it stays if a packet has re-armed its timer since.
func (t *Tracker) removeExpired(slot, gen uint32, now int64) bool {
	return t.drop(slot, gen, &t.stats.expired, true, now)
}

func (t *Tracker) drop(slot, gen uint32, why *atomic.Uint64, onlyExpired bool, now int64) bool {
	c := t.slab.conn(slot)
	c.mu.Lock()
	if !c.live || c.gen != gen {
		c.mu.Unlock()
		return false
	}
	if onlyExpired && c.carrier != 0 {
		// Its packets may have re-armed its timer in the fast path.
		t.refresh(c, makeHandle(slot, gen))
	}
	k0, k1 := c.key[0], c.key[1]
	c.mu.Unlock()

	sa, sb, ha, hb := t.lockPair(&k0, &k1)
	c.mu.Lock()
	if !c.live || c.gen != gen || onlyExpired && now < c.expires.Load() {
		c.mu.Unlock()
		unlockPair(sa, sb)
		return false
	}
	// Each tuple's entry is found again after the other's removal, which
	// may have moved it.
	if i, _, ok := sa.idx.find(&t.slab, &k0, ha); ok {
		sa.idx.removeAt(i)
	}
	if i, _, ok := sb.idx.find(&t.slab, &k1, hb); ok && k1 != k0 {
		sb.idx.removeAt(i)
	}
	c.live = false
	carrier := c.carrier
	c.carrier = 0
	c.gen++
	if c.gen == 0 {
		c.gen = 1
	}
	c.mu.Unlock()
	unlockPair(sa, sb)

	if carrier != 0 {
		t.forgetCarried(carrier, makeHandle(slot, gen))
	}
	t.release(k0.Zone)
	t.slab.give(slot)
	why.Add(1)
	return true
}

// scan calls f with every live connection, locked, reading the slab in
// order a chunk at a time (sequential reads, which the memory system
// streams), and after each chunk removes those f chose (counting them in
// why; with onlyExpired, only if still past now). Free slots, whose
// expiry is never, are passed over without taking their lock, and so are
// the connections skip (if not nil) passes over. One scan runs at a
// time.
func (t *Tracker) scan(skip func(c *conn) bool, f func(slot uint32, c *conn) (remove bool), why *atomic.Uint64, onlyExpired bool, now int64) int {
	t.sweepMu.Lock()
	defer t.sweepMu.Unlock()
	n := 0
	for base := uint32(0); base < t.slab.highWater(); base += chunkSize {
		ch := t.slab.chunks[base>>chunkBits].Load()
		t.victims = t.victims[:0]
		for i := range ch {
			c := &ch[i]
			if c.expires.Load() == never || skip != nil && skip(c) {
				continue
			}
			c.mu.Lock()
			if c.live && f(base+uint32(i), c) {
				t.victims = append(t.victims, victim{base + uint32(i), c.gen})
			}
			c.mu.Unlock()
		}
		for _, v := range t.victims {
			if t.drop(v.slot, v.gen, why, onlyExpired, now) {
				n++
			}
		}
	}
	return n
}

type victim struct{ slot, gen uint32 }
