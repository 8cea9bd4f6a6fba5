package flow

import (
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/xswitch/xswitch/internal/race"
)

func TestCacheMatchesClassifierAcrossVersions(t *testing.T) {
	g := newRuleGen(42, 10)
	var rs []Rule
	for range 300 {
		rs = append(rs, g.rule())
	}
	tab := emptyTable().AddAll(rs, t0)
	versions := []*Table{tab}
	keys := make([]Key, 400) // more keys than the cache holds: evictions
	for i := range keys {
		keys[i] = g.lookupKey()
	}

	cache := NewCache(256)
	lookups := 0
	for step := range 100 {
		switch g.pick(4) {
		case 0:
			tab = tab.Add(g.rule(), t0)
		case 1:
			tab, _ = tab.Delete(g.filter(false), false)
		case 2:
			tab, _ = tab.Modify(g.filter(g.pick(2) == 0), false, output(uint16(step)), t0)
		default:
			tab = versions[g.pick(len(versions))] // back to an older version
		}
		versions = append(versions, tab)
		for range 500 {
			k := &keys[g.pick(len(keys))]
			for range 1 + g.pick(3) { // trains of one key, as frames of one flow come
				if got, want := cache.Lookup(tab, k), tab.Lookup(k); got != want {
					t.Fatalf("step %d, version %d, key %+v: cache found %v, classifier %v", step, tab.Version(), k, got, want)
				}
				lookups++
			}
		}
	}
	hits, misses := cache.Stats()
	if hits+misses != uint64(lookups) || hits == 0 || misses == 0 {
		t.Errorf("stats: %d hits + %d misses for %d lookups", hits, misses, lookups)
	}
}

func TestCacheRemembersNoMatch(t *testing.T) {
	tab := emptyTable().Add(rule(1, inPort(1), output(2)), t0)
	cache := NewCache(0)
	miss := Key{Headers: Headers{InPort: 9}}
	for range 3 {
		if e := cache.Lookup(tab, &miss); e != nil {
			t.Fatalf("found %v for a key no rule matches", e)
		}
	}
	if hits, misses := cache.Stats(); hits != 2 || misses != 1 {
		t.Errorf("%d hits, %d misses; want the nil result cached: 2, 1", hits, misses)
	}
	next := tab.Add(rule(1, inPort(9), output(3)), t0)
	if e := cache.Lookup(next, &miss); e == nil {
		t.Error("a cached no-match outlived the table version")
	}
}

func TestCacheHitAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector changes allocation counts")
	}
	tab := emptyTable().Add(rule(1, inPort(1), output(2)), t0)
	cache := NewCache(16)
	k := Key{Headers: Headers{InPort: 1}}
	cache.Lookup(tab, &k)
	if n := testing.AllocsPerRun(1000, func() { cache.Lookup(tab, &k) }); n != 0 {
		t.Errorf("a cache hit allocates %v times", n)
	}
}

// TestLRUPurgeAllocatesNothing pins down what Cache relies on when the table
// changes: simplelru's Purge empties the map and list in place.
func TestLRUPurgeAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector changes allocation counts")
	}
	lru, err := simplelru.NewLRU[Key, *Entry](DefaultCacheSize, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The runtime's own goroutines allocate now and then, and MemStats
	// counts them too: a Purge that allocates does so every time, so the
	// fewest of a few tries is the Purge's own count.
	fewest := uint64(math.MaxUint64)
	for range 3 {
		for i := range DefaultCacheSize {
			lru.Add(Key{Headers: Headers{InPort: uint16(i)}}, nil)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		lru.Purge()
		runtime.ReadMemStats(&after)
		fewest = min(fewest, after.Mallocs-before.Mallocs)
	}
	if fewest != 0 || lru.Len() != 0 {
		t.Errorf("Purge of a full LRU: %d allocations, %d keys left", fewest, lru.Len())
	}
}

func TestCacheStatsAreSafeToReadConcurrently(t *testing.T) {
	tab := emptyTable().Add(rule(1, inPort(1), output(2)), t0)
	cache := NewCache(16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		k := Key{Headers: Headers{InPort: 1}}
		for range 10000 {
			cache.Lookup(tab, &k)
		}
	}()
	deadline := time.After(10 * time.Second)
	for {
		cache.Stats()
		select {
		case <-done:
			if hits, misses := cache.Stats(); hits+misses != 10000 {
				t.Errorf("%d hits + %d misses, want 10000", hits, misses)
			}
			return
		case <-deadline:
			t.Fatal("lookups did not finish")
		default:
		}
	}
}
