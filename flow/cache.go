package flow

import (
	"sync/atomic"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// DefaultCacheSize is the number of keys a Cache holds unless told
// otherwise: the size of OVS's per-thread exact-match cache (8192), about
// 2 MiB per forwarding goroutine here.
const DefaultCacheSize = 8192

// Cache is an exact-match cache in front of a Table, owned by one forwarding
// goroutine: it does not lock, and only its owner may call Lookup. Results
// are valid for one table version only, so the cache empties itself when it
// is handed a different table.
type Cache struct {
	lru   *simplelru.LRU[Key, *Entry]
	table *Table // the version the cached results come from

	// last is the most recently used key and its result. Frames arrive in
	// trains of one flow (a TCP window, a UDP burst), and comparing a key
	// costs a fraction of hashing it; the LRU order stays right because
	// last is already the LRU's most recent entry.
	last      Key
	lastEntry *Entry
	lastValid bool

	// Written only by the owner (a plain load and store, no locked add);
	// atomic so that other goroutines may read them.
	hits, misses atomic.Uint64
}

// NewCache returns a cache of size keys; size <= 0 means DefaultCacheSize.
func NewCache(size int) *Cache {
	if size <= 0 {
		size = DefaultCacheSize
	}
	lru, err := simplelru.NewLRU[Key, *Entry](size, nil)
	if err != nil {
		panic(err) // unreachable: size is positive
	}
	return &Cache{lru: lru}
}

// Lookup returns t.Lookup(k), from the cache when it can. A nil result (no
// rule matches: drop) is cached like any other. A hit allocates nothing; a
// miss allocates the LRU's entry for k.
func (c *Cache) Lookup(t *Table, k *Key) *Entry {
	if t != c.table {
		// Comparing the pointer rather than Version is exact even for
		// tables built independently with the same version number.
		c.lru.Purge()
		c.table = t
		c.lastValid = false
	}
	if c.lastValid && *k == c.last {
		c.hits.Store(c.hits.Load() + 1)
		return c.lastEntry
	}
	e, ok := c.lru.Get(*k)
	if ok {
		c.hits.Store(c.hits.Load() + 1)
	} else {
		c.misses.Store(c.misses.Load() + 1)
		e = t.Lookup(k)
		c.lru.Add(*k, e)
	}
	c.last, c.lastEntry, c.lastValid = *k, e, true
	return e
}

// Stats returns how many lookups the cache answered and how many it passed
// to the table. Safe to call from any goroutine.
func (c *Cache) Stats() (hits, misses uint64) {
	return c.hits.Load(), c.misses.Load()
}
