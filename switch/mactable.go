package vswitch

import (
	"math/bits"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMACAging is how long a learned address is trusted without being
// seen again, as in OVS (mac-aging-time) and the Linux bridge.
const DefaultMACAging = 300 * time.Second

// DefaultMACTableSize is the number of addresses a bridge can hold.
const DefaultMACTableSize = 8192

// macWays is the associativity of the table: an address can live in any of
// the macWays slots of its set, and a full set evicts its least recently
// seen entry. Bounded sets make learning O(1) with no allocation, and an
// address flood can only evict entries that share a set with it.
const macWays = 8

// macTable is the forwarding database: which port a (VLAN, MAC) was last
// seen on. A bridge with one forwarding goroutine owns it there, and other
// goroutines read it only through the forwarder (see Bridge.FDB). A bridge
// with several shares one table between them, with a lock per set: a
// frame's learning and lookup each lock one set, so threads contend only
// when their stations hash to the same set at the same moment.
type macTable struct {
	slots   []macEntry   // len = sets*macWays
	locks   []sync.Mutex // one per set when shared (see firstOf), else nil
	setMask uint64
	seed    uint64 // random, so that nobody can aim addresses at one set
	aging   int64  // nanoseconds

	evictions atomic.Uint64
}

type macEntry struct {
	key  uint64 // MAC in the low 48 bits, VLAN in the next 12, bit 63 set when in use
	port uint16 // port slot
	seen int64  // monotonic nanoseconds
}

const macInUse = 1 << 63

func newMACTable(size int, aging time.Duration) *macTable {
	if size < macWays {
		size = macWays
	}
	sets := uint64(1) << bits.Len(uint(size-1)/macWays) // round up to a power of two
	return &macTable{
		slots:   make([]macEntry, sets*macWays),
		setMask: sets - 1,
		seed:    rand.Uint64() | 1,
		aging:   int64(aging),
	}
}

// macKey packs a MAC address and a VLAN ID into one word.
func macKey(mac []byte, vlan uint16) uint64 {
	_ = mac[5]
	return macInUse | uint64(vlan&0xfff)<<48 |
		uint64(mac[0])<<40 | uint64(mac[1])<<32 | uint64(mac[2])<<24 |
		uint64(mac[3])<<16 | uint64(mac[4])<<8 | uint64(mac[5])
}

// setOf returns the index of key's set.
func (t *macTable) setOf(key uint64) uint64 {
	h := (key ^ t.seed) * 0x9e3779b97f4a7c15
	return (h >> 32) & t.setMask
}

func (t *macTable) set(i uint64) []macEntry {
	return t.slots[i*macWays : (i+1)*macWays : (i+1)*macWays]
}

func (t *macTable) fresh(e *macEntry, now int64) bool {
	return e.key&macInUse != 0 && now-e.seen < t.aging
}

// learn records that key was seen on port at time now.
//
// When its set is full, the entry to give up is the least recently seen
// one of the port that is learning, if the set holds any of its entries,
// else the least recently seen of all. So a port that floods the table with
// made-up source addresses evicts its own addresses, not the stations that
// other ports serve: the same protection OVS gives by evicting from the port
// with the most entries, decided within one set so that learning stays O(1).
//
// It returns the dependency on the entry it wrote, for a decision that
// relies on the source it learned (cache.go), and whether it displaced
// what the slot held: the same station on another port, or another
// station, evicted or aged out; a decision that relied on that no longer
// holds.
func (t *macTable) learn(key uint64, port uint16, now int64) (dep macDep, displaced bool) {
	i := t.setOf(key)
	if t.locks != nil {
		t.locks[i].Lock()
		defer t.locks[i].Unlock()
	}
	j, displaced := t.learnIn(t.set(i), key, port, now)
	return macDep{slot: uint32(i*macWays) + uint32(j), key: key, port: port, source: true}, displaced
}

// learnIn writes the entry into set and returns where, and whether it
// displaced what was there.
func (t *macTable) learnIn(set []macEntry, key uint64, port uint16, now int64) (int, bool) {
	victim, ownVictim := 0, -1
	for i := range set {
		e := &set[i]
		if e.key == key {
			moved := e.port != port
			e.port, e.seen = port, now
			return i, moved
		}
		if !t.fresh(e, now) {
			displaced := e.key != 0
			set[i] = macEntry{key: key, port: port, seen: now}
			return i, displaced
		}
		if e.seen < set[victim].seen {
			victim = i
		}
		if e.port == port && (ownVictim < 0 || e.seen < set[ownVictim].seen) {
			ownVictim = i
		}
	}
	if ownVictim >= 0 {
		victim = ownVictim
	}
	t.evictions.Add(1)
	set[victim] = macEntry{key: key, port: port, seen: now}
	return victim, true
}

// macDep is one MAC-table entry a decision relies on (cache.go): the
// slot it is in, and what the decision found there. A write that changes
// the entry, or puts another in its slot, or its aging, makes the check
// fail, so a decision never outlives what it read. An absent dependency
// is on key having no live entry (a flood to an unknown destination): its
// slot is the first of key's set, and learning key anywhere makes its
// check fail.
type macDep struct {
	slot   uint32
	key    uint64
	port   uint16
	source bool // the frame's own source: a hit refreshes it, as learning would
	absent bool
}

// lookupDep is lookup for a decision: the dependency on key's live entry,
// whose port is where key was last seen, if there is one.
func (t *macTable) lookupDep(key uint64, now int64) (macDep, bool) {
	i := t.setOf(key)
	if t.locks != nil {
		t.locks[i].Lock()
		defer t.locks[i].Unlock()
	}
	set := t.set(i)
	for j := range set {
		if e := &set[j]; e.key == key && t.fresh(e, now) {
			return macDep{slot: uint32(i*macWays) + uint32(j), key: key, port: e.port}, true
		}
	}
	return macDep{}, false
}

// dependAbsent returns the dependency on key having no live entry, which
// it has not now.
func (t *macTable) dependAbsent(key uint64) macDep {
	return macDep{slot: uint32(t.setOf(key) * macWays), key: key, absent: true}
}

// holds reports whether the entry d relies on is still there as it was,
// and fresh, or for an absent dependency still not there; for the frame's
// source, it refreshes the entry, as learning would. It allocates nothing.
func (t *macTable) holds(d *macDep, now int64) bool { return t.check(d, now, d.source) }

// unchanged is holds without the refresh: for the fast path's sweeper,
// which has no frame in hand.
func (t *macTable) unchanged(d *macDep, now int64) bool { return t.check(d, now, false) }

// refresh marks the entry d relies on as seen at seen, if it is still
// there as it was: the fast path carried frames from that source.
func (t *macTable) refresh(d *macDep, seen int64) {
	if t.locks != nil {
		set := uint64(d.slot) / macWays
		t.locks[set].Lock()
		defer t.locks[set].Unlock()
	}
	if e := &t.slots[d.slot]; e.key == d.key && e.port == d.port && seen > e.seen {
		e.seen = seen
	}
}

func (t *macTable) check(d *macDep, now int64, refresh bool) bool {
	if t.locks != nil {
		set := uint64(d.slot) / macWays
		t.locks[set].Lock()
		defer t.locks[set].Unlock()
	}
	if d.absent {
		set := t.slots[d.slot : d.slot+macWays]
		for i := range set {
			if set[i].key == d.key && t.fresh(&set[i], now) {
				return false
			}
		}
		return true
	}
	e := &t.slots[d.slot]
	if e.key != d.key || e.port != d.port || !t.fresh(e, now) {
		return false
	}
	if refresh {
		e.seen = now
	}
	return true
}

// lookup returns the port key was last seen on, if that was recent enough.
func (t *macTable) lookup(key uint64, now int64) (port uint16, ok bool) {
	i := t.setOf(key)
	if t.locks == nil {
		return t.lookupIn(t.set(i), key, now)
	}
	return t.lookupLocked(i, key, now)
}

func (t *macTable) lookupLocked(i, key uint64, now int64) (port uint16, ok bool) {
	t.locks[i].Lock()
	defer t.locks[i].Unlock()
	return t.lookupIn(t.set(i), key, now)
}

func (t *macTable) lookupIn(set []macEntry, key uint64, now int64) (port uint16, ok bool) {
	for i := range set {
		if e := &set[i]; e.key == key {
			return e.port, now-e.seen < t.aging
		}
	}
	return 0, false
}

// eachSet calls fn on every set in turn, locked if the table is shared.
func (t *macTable) eachSet(fn func(set []macEntry)) {
	for i := range t.setMask + 1 {
		if t.locks != nil {
			t.locks[i].Lock()
		}
		fn(t.set(i))
		if t.locks != nil {
			t.locks[i].Unlock()
		}
	}
}

// flushPort forgets every address learned on port, as when it leaves the
// bridge. The caller starts a new generation of the fast path, whose
// entries may rely on them.
func (t *macTable) flushPort(port uint16) {
	t.eachSet(func(set []macEntry) {
		for i := range set {
			if set[i].port == port && set[i].key != 0 {
				set[i] = macEntry{}
			}
		}
	})
}

// FDBEntry is one learned address, as `xswitch fdb-show` prints it.
type FDBEntry struct {
	Port uint16 // OpenFlow port number
	VLAN uint16
	MAC  [6]byte
	Age  time.Duration
}

// snapshot lists the live entries sorted by port, VLAN and MAC, so that
// output is stable. It allocates: it belongs to the control path.
func (t *macTable) snapshot(now int64, ofport func(slot uint16) uint16) []FDBEntry {
	var out []FDBEntry
	t.eachSet(func(set []macEntry) {
		for i := range set {
			e := &set[i]
			if !t.fresh(e, now) {
				continue
			}
			var mac [6]byte
			for b := range 6 {
				mac[b] = byte(e.key >> (40 - 8*b))
			}
			out = append(out, FDBEntry{
				Port: ofport(e.port),
				VLAN: uint16(e.key>>48) & 0xfff,
				MAC:  mac,
				Age:  time.Duration(now - e.seen),
			})
		}
	})
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Port != b.Port {
			return a.Port < b.Port
		}
		if a.VLAN != b.VLAN {
			return a.VLAN < b.VLAN
		}
		return string(a.MAC[:]) < string(b.MAC[:])
	})
	return out
}

// liveEntries counts the entries that have not aged out.
func (t *macTable) liveEntries(now int64) int {
	n := 0
	t.eachSet(func(set []macEntry) {
		for i := range set {
			if t.fresh(&set[i], now) {
				n++
			}
		}
	})
	return n
}
