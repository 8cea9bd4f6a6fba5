package flow

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchMasks returns n distinct masks, each with one wide field (so that
// many random rules with the mask stay distinct) and a few narrow ones.
func benchMasks(rnd *rand.Rand, n int) []Key {
	anchors := []func(m *Key){
		func(m *Key) { m.NwDst = prefix4(32) },
		func(m *Key) { m.NwSrc = prefix4(32) },
		func(m *Key) { m.DlDst = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff} },
		func(m *Key) { m.IPv6Dst = prefix16(128) },
		func(m *Key) { m.NwSrc, m.NwDst = prefix4(24), prefix4(24) },
	}
	narrow := []func(m *Key){
		func(m *Key) { m.InPort = 0xffff },
		func(m *Key) { m.DlType = 0xffff },
		func(m *Key) { m.NwProto = 0xff },
		func(m *Key) { m.TpDst = 0xffff },
		func(m *Key) { m.TpSrc = 0xffff },
		func(m *Key) { m.VLANTCI = 0x1fff },
		func(m *Key) { m.NwTOS = 0xfc },
	}
	seen := map[Key]bool{}
	var masks []Key
	for len(masks) < n {
		var m Key
		anchors[rnd.IntN(len(anchors))](&m)
		for _, set := range narrow {
			if rnd.IntN(3) == 0 {
				set(&m)
			}
		}
		if !seen[m] {
			seen[m] = true
			masks = append(masks, m)
		}
	}
	return masks
}

func randomFullKey(rnd *rand.Rand) Key {
	b := make([]byte, keyLen)
	for i := range b {
		b[i] = byte(rnd.Uint32())
	}
	k := keyFromBytes(b)
	k.Table = 0 // where the benchmark's rules are
	return k
}

// benchTable returns a table of n random rules over nMasks masks, with
// priorities 1-1000, and 4096 keys, nine in ten of them matching a rule.
func benchTable(n, nMasks int) (*Table, []Rule, []Key) {
	rnd := rand.New(rand.NewPCG(uint64(n), uint64(nMasks)))
	masks := benchMasks(rnd, nMasks)
	rules := make([]Rule, n)
	for i := range rules {
		mask := masks[i%len(masks)]
		k := randomFullKey(rnd)
		rules[i] = Rule{
			Priority: uint16(1 + rnd.IntN(1000)),
			Match:    Match{Key: k.And(&mask), Mask: mask},
			Actions:  output(uint16(i)),
		}
	}
	keys := make([]Key, 4096)
	for i := range keys {
		keys[i] = randomFullKey(rnd)
		if rnd.IntN(10) != 0 {
			keys[i] = nearKey(&rules[rnd.IntN(n)], keys[i])
		}
	}
	return emptyTable().AddAll(rules, t0), rules, keys
}

func BenchmarkLookup(b *testing.B) {
	for _, n := range []int{10, 1000, 100000} {
		for _, nMasks := range []int{1, 10, 50} {
			b.Run(fmt.Sprintf("rules=%d/masks=%d", n, nMasks), func(b *testing.B) {
				tab, _, keys := benchTable(n, nMasks)
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					tab.Lookup(&keys[i%len(keys)])
					i++
				}
			})
		}
	}
}

func BenchmarkAddAll(b *testing.B) {
	_, rules, _ := benchTable(100000, 10)
	b.ReportAllocs()
	for b.Loop() {
		emptyTable().AddAll(rules, t0)
	}
}

// BenchmarkAddOne builds one version by a single Add on a table of 10,000
// rules: the cost of copying the touched subtable.
func BenchmarkAddOne(b *testing.B) {
	for _, nMasks := range []int{1, 10} {
		b.Run(fmt.Sprintf("rules=10000/masks=%d", nMasks), func(b *testing.B) {
			base, rules, _ := benchTable(10000, nMasks)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				r := rules[i%len(rules)]
				r.Priority++ // a new entry, not a replacement
				base.Add(r, t0)
				i++
			}
		})
	}
}

// BenchmarkAddOneToBigTable adds one new rule per op to a subtable of n
// rules, each op to the version the previous one made (as a controller's
// flow mods do), so that the cost includes every fold of edits into the
// subtable's base. Every n ops the table starts over from n rules.
func BenchmarkAddOneToBigTable(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			base, rules, _ := benchTable(n, 1)
			rnd := rand.New(rand.NewPCG(1, 2))
			extra := make([]Rule, n) // the same mask, other keys
			for i := range extra {
				k := randomFullKey(rnd)
				extra[i] = rules[i]
				extra[i].Match.Key = k.And(&extra[i].Match.Mask)
			}
			b.ReportAllocs()
			tab, i := base, 0
			for b.Loop() {
				if i%n == 0 {
					tab = base
				}
				tab = tab.Add(extra[i%n], t0)
				i++
			}
		})
	}
}
