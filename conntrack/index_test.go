package conntrack

import (
	"math/rand/v2"
	"testing"
)

// TestIndexAgainstMap drives one index and a Go map with the same random
// additions and removals, hashes drawn from a few values so that runs
// collide, wrap around the end and shift back, and checks that the index
// finds exactly what the map holds, through growing and shrinking.
func TestIndexAgainstMap(t *testing.T) {
	for _, hashes := range []uint32{3, 40, 1 << 30} {
		r := rand.New(rand.NewPCG(uint64(hashes), 5))
		s := slab{chunks: new(chunkTable)}
		var x index
		want := map[Tuple]ref{}
		hashOf := map[Tuple]uint32{}
		var tuples []Tuple
		for i := range 3000 {
			slot, _ := s.take()
			k := Tuple{Proto: 17, Zone: uint16(i)}
			k.Src.Port = uint16(i >> 16)
			s.conn(slot).key[0] = k
			tuples = append(tuples, k)
			hashOf[k] = r.Uint32N(hashes) * 7919
		}
		for step := range 20000 {
			k := tuples[r.IntN(len(tuples))]
			h := hashOf[k]
			pos, got, ok := x.find(&s, &k, h)
			if w, present := want[k]; ok != present || ok && got != w {
				t.Fatalf("hashes %d, step %d: find %+v: %v %v, map %v %v", hashes, step, k, got, ok, w, present)
			}
			// Grow mostly in the first half, shrink in the second.
			if !ok && (step < 10000) == (r.IntN(4) != 0) {
				slot := uint32(k.Zone)
				x.add(h, makeRef(slot, false))
				want[k] = makeRef(slot, false)
			} else if ok {
				x.removeAt(pos)
				delete(want, k)
			}
			if x.n != len(want) || 4*x.n > 3*len(x.slots) {
				t.Fatalf("step %d: %d entries (map %d) in %d slots", step, x.n, len(want), len(x.slots))
			}
		}
		for k, w := range want {
			if _, got, ok := x.find(&s, &k, hashOf[k]); !ok || got != w {
				t.Fatalf("hashes %d: %+v lost", hashes, k)
			}
		}
	}
}
