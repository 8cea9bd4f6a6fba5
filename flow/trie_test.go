package flow

import (
	"maps"
	"math/rand/v2"
	"testing"
)

// The trie against a Go map, through random edits made by several
// builders, with a hash of a few bits so that keys share long prefixes and
// whole hashes (the leaves of several keys); every version kept stays as
// it was.
func TestTrieMatchesAMap(t *testing.T) {
	for _, hashBits := range []uint{3, 10, 64} {
		rnd := rand.New(rand.NewPCG(uint64(hashBits), 7))
		hash := func(k *Key) uint64 {
			if hashBits == 64 {
				return hashKey(k)
			}
			// A few bits vary, the rest are one value: with the
			// top bits varying, every key goes down the same path
			// nearly to the bottom; with the low ones, many keys
			// have each hash.
			v := uint64(k.Regs[0]) & (1<<hashBits - 1)
			if hashBits == 3 {
				return v<<61 | 0x123456789abcd
			}
			return v | 0xabcdef<<hashBits
		}
		keys := make([]Key, 300)
		for i := range keys {
			keys[i].Regs[0], keys[i].Regs[1] = rnd.Uint32(), uint32(i)
		}
		type version struct {
			trie bucketTrie
			want map[Key][]*Entry
		}
		var versions []version
		var trie bucketTrie
		want := map[Key][]*Entry{}
		for range 200 {
			tok := new(editToken) // a builder: edits until it publishes
			for range 1 + rnd.IntN(20) {
				k := &keys[rnd.IntN(len(keys))]
				var bucket []*Entry
				switch rnd.IntN(4) {
				case 0:
					delete(want, *k)
				case 1:
					bucket = []*Entry{} // a tombstone: held, empty
					want[*k] = bucket
				default:
					bucket = []*Entry{{seq: rnd.Uint64()}}
					want[*k] = bucket
				}
				trie.setHashed(hash(k), k, bucket, tok)
			}
			versions = append(versions, version{trie, maps.Clone(want)})
		}
		for i, v := range versions {
			got := map[Key][]*Entry{}
			for k, b := range v.trie.all() {
				if _, twice := got[k]; twice {
					t.Fatalf("hash bits %d, version %d: key %v yielded twice", hashBits, i, k.Regs[:2])
				}
				got[k] = b
			}
			if len(got) != len(v.want) || v.trie.n != len(v.want) {
				t.Fatalf("hash bits %d, version %d: %d keys, want %d", hashBits, i, len(got), len(v.want))
			}
			for k := range keys {
				b, ok := v.trie.getHashed(hash(&keys[k]), &keys[k])
				w, wok := v.want[keys[k]]
				if ok != wok || len(b) != len(w) || len(w) > 0 && b[0] != w[0] || len(got[keys[k]]) != len(w) {
					t.Fatalf("hash bits %d, version %d: key %d has %v (%v), want %v (%v)", hashBits, i, k, b, ok, w, wok)
				}
			}
		}
		if len(want) == 0 && trie.root != nil {
			t.Errorf("hash bits %d: an empty trie keeps a root", hashBits)
		}
	}
}
