package flow

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/xswitch/xswitch/internal/race"
)

// keyFieldSizes are the byte sizes of Key's fields, in order, as keyBytes
// lays them out.
var keyFieldSizes = []int{8, 4, 4, 2, 6, 6, 2, 2, 1, 1, 1, 1, 4, 4, 16, 16, 2, 2, 4, 2, 1, 1, 2, 2, 16, 16, 16, 1}

// keyLen is the length of keyBytes' layout.
const keyLen = 143

func keyBytes(k *Key) []byte {
	be := binary.BigEndian
	b := make([]byte, 0, keyLen)
	b = be.AppendUint64(b, k.TunID)
	b = append(b, k.TunSrc[:]...)
	b = append(b, k.TunDst[:]...)
	b = be.AppendUint16(b, k.InPort)
	b = append(b, k.DlDst[:]...)
	b = append(b, k.DlSrc[:]...)
	b = be.AppendUint16(b, k.DlType)
	b = be.AppendUint16(b, k.VLANTCI)
	b = append(b, k.NwProto, k.NwTOS, k.NwTTL, k.NwFrag)
	b = append(b, k.NwSrc[:]...)
	b = append(b, k.NwDst[:]...)
	b = append(b, k.IPv6Src[:]...)
	b = append(b, k.IPv6Dst[:]...)
	b = be.AppendUint16(b, k.TpSrc)
	b = be.AppendUint16(b, k.TpDst)
	b = be.AppendUint32(b, k.CT.Mark)
	b = be.AppendUint16(b, k.CT.Zone)
	b = append(b, k.CT.State, k.CT.NwProto)
	b = be.AppendUint16(b, k.CT.TpSrc)
	b = be.AppendUint16(b, k.CT.TpDst)
	b = append(b, k.CT.Label[:]...)
	b = append(b, k.CT.Src[:]...)
	b = append(b, k.CT.Dst[:]...)
	return append(b, k.Table)
}

func keyFromBytes(b []byte) Key {
	be := binary.BigEndian
	var k Key
	k.TunID = be.Uint64(b)
	copy(k.TunSrc[:], b[8:])
	copy(k.TunDst[:], b[12:])
	b = b[16:]
	k.InPort = be.Uint16(b[0:])
	copy(k.DlDst[:], b[2:])
	copy(k.DlSrc[:], b[8:])
	k.DlType = be.Uint16(b[14:])
	k.VLANTCI = be.Uint16(b[16:])
	k.NwProto, k.NwTOS, k.NwTTL, k.NwFrag = b[18], b[19], b[20], b[21]
	copy(k.NwSrc[:], b[22:])
	copy(k.NwDst[:], b[26:])
	copy(k.IPv6Src[:], b[30:])
	copy(k.IPv6Dst[:], b[46:])
	k.TpSrc = be.Uint16(b[62:])
	k.TpDst = be.Uint16(b[64:])
	b = b[66:]
	k.CT.Mark = be.Uint32(b)
	k.CT.Zone = be.Uint16(b[4:])
	k.CT.State, k.CT.NwProto = b[6], b[7]
	k.CT.TpSrc = be.Uint16(b[8:])
	k.CT.TpDst = be.Uint16(b[10:])
	copy(k.CT.Label[:], b[12:])
	copy(k.CT.Src[:], b[28:])
	copy(k.CT.Dst[:], b[44:])
	k.Table = b[60]
	return k
}

func TestKeyBytesRoundTrip(t *testing.T) {
	g := newRuleGen(9, 1)
	for range 100 {
		k := g.randomKey()
		if b := keyBytes(&k); len(b) != keyLen || keyFromBytes(b) != k {
			t.Fatalf("key %+v does not survive keyBytes", k)
		}
	}
}

// ruleGen makes random rules, keys and filters over a small pool of masks
// and of field values, so that rules overlap, tie and get hit.
type ruleGen struct {
	rnd    *rand.Rand
	masks  []Key
	nextID uint64
	rules  []Rule // every rule made so far, to draw duplicates and near keys from
}

func newRuleGen(seed uint64, nMasks int) *ruleGen {
	g := &ruleGen{rnd: rand.New(rand.NewPCG(seed, 1))}
	seen := map[Key]bool{}
	for len(g.masks) < nMasks {
		m := g.randomMask()
		if !seen[m] {
			seen[m] = true
			g.masks = append(g.masks, m)
		}
	}
	return g
}

func (g *ruleGen) pick(n int) int { return g.rnd.IntN(n) }

func prefix4(bits int) [4]byte {
	var p [4]byte
	binary.BigEndian.PutUint32(p[:], ^uint32(0)<<(32-bits))
	return p
}

func prefix16(bits int) [16]byte {
	var p [16]byte
	for i := range bits / 8 {
		p[i] = 0xff
	}
	return p
}

// randomMask matches each field with probability 1/4, fully or with a
// partial mask typical of the field.
func (g *ruleGen) randomMask() Key {
	var m Key
	m.Table = 0xff // a rule lives in one table
	some := func() bool { return g.pick(4) == 0 }
	if some() {
		m.TunID = []uint64{^uint64(0), 0xff00}[g.pick(2)]
	}
	if some() {
		m.TunSrc = prefix4(8 * (1 + g.pick(4)))
	}
	if some() {
		m.TunDst = prefix4(32)
	}
	if some() {
		m.InPort = 0xffff
	}
	if some() {
		m.DlDst = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		if g.pick(2) == 0 {
			m.DlDst = [6]byte{0x01} // the multicast bit
		}
	}
	if some() {
		m.DlSrc = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	}
	if some() {
		m.DlType = 0xffff
	}
	if some() {
		m.VLANTCI = []uint16{0xffff, 0x1fff, 0x1000}[g.pick(3)]
	}
	if some() {
		m.NwProto = 0xff
	}
	if some() {
		m.NwTOS = []uint8{0xff, 0xfc}[g.pick(2)]
	}
	if some() {
		m.NwTTL = 0xff
	}
	if some() {
		m.NwFrag = []uint8{FragAny, FragAny | FragLater}[g.pick(2)]
	}
	if some() {
		m.NwSrc = prefix4(8 * (1 + g.pick(4)))
	}
	if some() {
		m.NwDst = prefix4(8 * (1 + g.pick(4)))
	}
	if some() {
		m.IPv6Src = prefix16(64 * (1 + g.pick(2)))
	}
	if some() {
		m.IPv6Dst = prefix16(64 * (1 + g.pick(2)))
	}
	if some() {
		m.TpSrc = []uint16{0xffff, 0xff00}[g.pick(2)]
	}
	if some() {
		m.TpDst = []uint16{0xffff, 0xff00}[g.pick(2)]
	}
	if some() {
		m.CT.State = []uint8{0xff, CTTracked | CTEstablished, CTNew}[g.pick(3)]
	}
	if some() {
		m.CT.Zone = 0xffff
	}
	if some() {
		m.CT.Mark = []uint32{^uint32(0), 0xff}[g.pick(2)]
	}
	if some() {
		m.CT.Label = prefix16(64 * (1 + g.pick(2)))
	}
	if some() {
		m.CT.Src = prefix16(32 * (1 + g.pick(4)))
		m.CT.NwProto, m.CT.TpDst = 0xff, 0xffff
	}
	return m
}

var (
	macPool = [][6]byte{{0, 0, 0, 0, 0, 1}, {0, 0, 0, 0, 0, 2}, {2, 0, 0, 0, 0, 3}, {1, 0, 0x5e, 0, 0, 1}}
	v6Pool  = [][16]byte{{0xfd, 15: 1}, {0xfd, 15: 2}, {0xfd, 7: 1, 15: 1}, {0xfe, 0x80, 15: 1}}
)

// randomKey draws every field from a small pool, or now and then at random.
func (g *ruleGen) randomKey() Key {
	wild := func() bool { return g.pick(10) == 0 }
	var k Key
	if g.pick(3) == 0 { // from a tunnel
		k.TunID = []uint64{5, 0x1234, 0x1299}[g.pick(3)]
		k.TunSrc = [4]byte{192, 0, 2, byte(1 + g.pick(2))}
		k.TunDst = [4]byte{192, 0, 2, 9}
	}
	k.InPort = uint16(1 + g.pick(4))
	k.DlDst = macPool[g.pick(len(macPool))]
	k.DlSrc = macPool[g.pick(len(macPool))]
	k.DlType = []uint16{EtherTypeIPv4, EtherTypeARP, EtherTypeIPv6}[g.pick(3)]
	k.VLANTCI = []uint16{0, VLANCFI | 10, VLANCFI | 20}[g.pick(3)]
	k.NwProto = []uint8{ProtoICMP, ProtoTCP, ProtoUDP}[g.pick(3)]
	k.NwTOS = []uint8{0, 0x10, 0xb8, 0xb9}[g.pick(4)]
	k.NwTTL = []uint8{1, 64}[g.pick(2)]
	k.NwFrag = []uint8{0, FragAny, FragAny | FragLater}[g.pick(3)]
	k.NwSrc = [4]byte{10, byte(g.pick(2)), byte(g.pick(2)), byte(1 + g.pick(4))}
	k.NwDst = [4]byte{10, byte(g.pick(2)), byte(g.pick(2)), byte(1 + g.pick(4))}
	k.IPv6Src = v6Pool[g.pick(len(v6Pool))]
	k.IPv6Dst = v6Pool[g.pick(len(v6Pool))]
	k.TpSrc = []uint16{22, 80, 443, 0x1f90}[g.pick(4)]
	k.TpDst = []uint16{22, 80, 443, 0x1f90}[g.pick(4)]
	if g.pick(2) == 0 { // through ct(table=N)
		k.CT = CTFields{State: []uint8{CTTracked | CTNew, CTTracked | CTEstablished, CTTracked | CTInvalid}[g.pick(3)],
			Zone: uint16(g.pick(3)), Mark: uint32(g.pick(3)), NwProto: k.NwProto, TpSrc: k.TpSrc, TpDst: k.TpDst, Src: k.IPv6Src, Dst: k.IPv6Dst}
		k.CT.Label[15] = byte(g.pick(3))
	}
	k.Table = uint8(g.pick(3))
	if wild() {
		k.InPort = uint16(g.rnd.Uint32())
	}
	if wild() {
		binary.BigEndian.PutUint32(k.NwDst[:], g.rnd.Uint32())
	}
	if wild() {
		k.TpDst = uint16(g.rnd.Uint32())
	}
	return k
}

// nearKey returns a key that matches r: a random key with r's bits forced.
func nearKey(r *Rule, random Key) Key {
	k, key, mask := keyBytes(&random), keyBytes(&r.Match.Key), keyBytes(&r.Match.Mask)
	for i := range k {
		k[i] = k[i]&^mask[i] | key[i]
	}
	return keyFromBytes(k)
}

// lookupKey is near one of the rules made so far half the time.
func (g *ruleGen) lookupKey() Key {
	k := g.randomKey()
	if len(g.rules) > 0 && g.pick(2) == 0 {
		return nearKey(&g.rules[g.pick(len(g.rules))], k)
	}
	return k
}

var priorityPool = []uint16{0, 1, 10, 100, DefaultPriority, 65535}

// rule returns a new random rule with a unique cookie (an id above a random
// low byte that cookie filters can select on); every fifth has the match
// and priority of an earlier one, so that adding it replaces.
func (g *ruleGen) rule() Rule {
	g.nextID++
	r := Rule{
		Cookie:  g.nextID<<8 | uint64(g.pick(256)),
		Actions: g.actions(),
	}
	if len(g.rules) > 0 && g.pick(5) == 0 {
		old := g.rules[g.pick(len(g.rules))]
		r.Match, r.Priority = old.Match, old.Priority
	} else {
		mask := g.masks[g.pick(len(g.masks))]
		k := g.randomKey()
		r.Match = Match{Key: k.And(&mask), Mask: mask}
		r.Priority = priorityPool[g.pick(len(priorityPool))]
		if g.pick(4) == 0 {
			r.Priority = uint16(g.rnd.Uint32())
		}
	}
	if g.pick(4) == 0 {
		r.HardTimeout = uint16(1 + g.pick(30))
	}
	g.rules = append(g.rules, r)
	return r
}

// actions returns outputs to a few ports, reserved ones among them, now
// and then in write_actions, for out_port filters to select.
func (g *ruleGen) actions() []Action {
	var actions []Action
	for range g.pick(3) {
		switch g.pick(4) {
		case 0:
			actions = append(actions, Action{Type: []ActionType{ActNormal, ActFlood, ActAll, ActInPort}[g.pick(4)]})
		case 1:
			actions = append(actions, Action{Type: ActWriteActions, NBits: 1}, Action{Type: ActOutput, Port: uint16(1 + g.pick(4))})
		default:
			actions = append(actions, Action{Type: ActOutput, Port: []uint16{1, 2, 3, 4, LocalPort}[g.pick(5)]})
		}
	}
	return append(actions, output(uint16(g.pick(8)))...)
}

// outPorts are what filters' out_port names.
var outPorts = []uint16{0, 1, 2, 3, 4, LocalPort, NormalPort, FloodPort, AllPort, InPortPort, AnyPort}

// filter returns a filter around one of the rules made so far: strict on its
// match and priority, or non-strict on some of its match's fields.
func (g *ruleGen) filter(strict bool) Filter {
	var f Filter
	if g.pick(3) == 0 {
		f.CookieMask = []uint64{0xff, 0x0f, 0x80}[g.pick(3)]
		f.Cookie = uint64(g.pick(256))
	}
	if g.pick(3) == 0 {
		f.OutPort = outPorts[g.pick(len(outPorts))]
	}
	if len(g.rules) == 0 || !strict && g.pick(10) == 0 {
		return f
	}
	r := g.rules[g.pick(len(g.rules))]
	if strict {
		f.Match = r.Match
		f.Priority, f.HasPriority = r.Priority, true
		if r.Priority == DefaultPriority && g.pick(2) == 0 {
			f.Priority, f.HasPriority = 0, false
		}
		return f
	}
	keep := make([]byte, 0, keyLen)
	for _, size := range keyFieldSizes {
		b := byte(0)
		if g.pick(2) == 0 {
			b = 0xff
		}
		for range size {
			keep = append(keep, b)
		}
	}
	keepMask := keyFromBytes(keep)
	f.Match.Mask = r.Match.Mask.And(&keepMask)
	f.Match.Key = r.Match.Key.And(&f.Match.Mask)
	return f
}

// refRule is an installed rule in the reference table.
type refRule struct {
	Rule
	installed time.Time
}

// refTable is the obvious flow table: rules in installation order, every
// operation a linear scan.
type refTable struct{ rules []refRule }

func (r *refTable) clone() *refTable { return &refTable{rules: slices.Clone(r.rules)} }

func (r *refTable) lookup(k *Key) *refRule {
	var best *refRule
	for i := range r.rules {
		if c := &r.rules[i]; c.Match.Matches(k) && (best == nil || c.Priority > best.Priority) {
			best = c
		}
	}
	return best
}

func (r *refTable) add(rule Rule, now time.Time) {
	r.rules = slices.DeleteFunc(r.rules, func(o refRule) bool {
		return o.Match == rule.Match && o.Priority == rule.Priority
	})
	r.rules = append(r.rules, refRule{rule, now})
}

func (r *refTable) selected(f Filter, strict bool) []bool {
	sel := make([]bool, len(r.rules))
	priority := f.Priority
	if !f.HasPriority {
		priority = DefaultPriority
	}
	for i, o := range r.rules {
		cookieOK := o.Cookie&f.CookieMask == f.Cookie&f.CookieMask && refOutputsTo(o.Actions, f.OutPort)
		if strict {
			sel[i] = cookieOK && o.Match == f.Match && o.Priority == priority
		} else {
			sel[i] = cookieOK && o.Match.Mask.And(&f.Match.Mask) == f.Match.Mask && o.Match.Key.And(&f.Match.Mask) == f.Match.Key
		}
	}
	return sel
}

// refOutputsTo is the obvious out_port check: 0 and OFPP_ANY select
// every rule, a port the rules with an action that sends there.
func refOutputsTo(actions []Action, port uint16) bool {
	if port == 0 || port == AnyPort {
		return true
	}
	for _, a := range actions {
		switch {
		case a.Type == ActOutput && a.Port == port,
			a.Type == ActNormal && port == 0xfffa,
			a.Type == ActFlood && port == 0xfffb,
			a.Type == ActAll && port == 0xfffc,
			a.Type == ActInPort && port == 0xfff8:
			return true
		}
	}
	return false
}

func (r *refTable) delete(f Filter, strict bool) int {
	sel := r.selected(f, strict)
	var kept []refRule
	for i, o := range r.rules {
		if !sel[i] {
			kept = append(kept, o)
		}
	}
	r.rules = kept
	return len(sel) - len(kept)
}

func (r *refTable) modify(f Filter, strict bool, actions []Action) int {
	n := 0
	for i, s := range r.selected(f, strict) {
		if s {
			r.rules[i].Actions = actions
			n++
		}
	}
	return n
}

func (r *refTable) expire(now time.Time) int {
	before := len(r.rules)
	r.rules = slices.DeleteFunc(r.rules, func(o refRule) bool {
		return o.HardTimeout != 0 && now.Sub(o.installed) >= time.Duration(o.HardTimeout)*time.Second
	})
	return before - len(r.rules)
}

// dump returns the cookies in dump-flows order.
func (r *refTable) dump() []uint64 {
	sorted := slices.Clone(r.rules)
	slices.SortStableFunc(sorted, func(a, b refRule) int { return int(b.Priority) - int(a.Priority) })
	var cookies []uint64
	for _, o := range sorted {
		cookies = append(cookies, o.Cookie)
	}
	return cookies
}

func cookies(es []*Entry) []uint64 {
	var cs []uint64
	for _, e := range es {
		cs = append(cs, e.Cookie)
	}
	return cs
}

// checkAgainst compares tab with ref: size, dump order, and the lookup of
// nKeys keys.
func checkAgainst(t *testing.T, what string, g *ruleGen, tab *Table, ref *refTable, nKeys int) {
	t.Helper()
	checkStructure(t, what, tab)
	if tab.Len() != len(ref.rules) {
		t.Fatalf("%s: %d entries, reference has %d", what, tab.Len(), len(ref.rules))
	}
	if got, want := cookies(tab.Entries()), ref.dump(); !slices.Equal(got, want) {
		t.Fatalf("%s: dump order\n got %x\nwant %x", what, got, want)
	}
	for range nKeys {
		k := g.lookupKey()
		got, want := tab.Lookup(&k), ref.lookup(&k)
		switch {
		case got == nil && want == nil:
		case got == nil || want == nil:
			t.Fatalf("%s: key %+v: found %v, reference found %v", what, k, got, want)
		case got.Cookie != want.Cookie || !slices.Equal(got.Actions, want.Actions):
			t.Fatalf("%s: key %+v: found %x (priority %d, %v), reference found %x (priority %d, %v)",
				what, k, got.Cookie, got.Priority, got.Actions, want.Cookie, want.Priority, want.Actions)
		}
	}
}

// checkStructure verifies what lookups rely on but cannot reveal (a
// subtable's best-entry rank that is too high only makes lookups slower):
// exact ranks, sorted subtables and buckets, counts.
func checkStructure(t *testing.T, what string, tab *Table) {
	t.Helper()
	total := 0
	for i, st := range tab.subtables {
		var top *Entry
		n := 0
		for key, bucket := range st.buckets() {
			if len(bucket) == 0 || !slices.IsSortedFunc(bucket, compareRank) {
				t.Fatalf("%s: subtable %d: bucket %x empty or unsorted", what, i, cookies(bucket))
			}
			for _, e := range bucket {
				if e.Match.Mask != st.mask || e.Match.Key != key {
					t.Fatalf("%s: subtable %d: entry %x is in the wrong place", what, i, e.Cookie)
				}
			}
			if top == nil || bucket[0].outranks(top) {
				top = bucket[0]
			}
			n += len(bucket)
		}
		if n == 0 || n != st.n {
			t.Fatalf("%s: subtable %d holds %d entries, counts %d", what, i, n, st.n)
		}
		if top.Priority != st.maxPriority || top.seq != st.topSeq {
			t.Fatalf("%s: subtable %d: best entry (%d, %d), recorded (%d, %d)", what, i, top.Priority, top.seq, st.maxPriority, st.topSeq)
		}
		if i > 0 && outranksTop(top, tab.subtables[i-1]) {
			t.Fatalf("%s: subtable %d is out of order", what, i)
		}
		total += n
	}
	if total != tab.Len() {
		t.Fatalf("%s: subtables hold %d entries, Len is %d", what, total, tab.Len())
	}
}

func TestClassifierMatchesLinearScan(t *testing.T) {
	sizes := []struct{ rules, masks int }{{10, 1}, {10, 5}, {100, 3}, {100, 20}, {1000, 5}, {1000, 40}}
	for i, size := range sizes {
		t.Run(fmt.Sprintf("rules=%d/masks=%d", size.rules, size.masks), func(t *testing.T) {
			g := newRuleGen(uint64(i), size.masks)
			var rs []Rule
			for range size.rules {
				rs = append(rs, g.rule())
			}
			ref := &refTable{}
			for _, r := range rs {
				ref.add(r, t0)
			}
			tab := emptyTable().AddAll(rs, t0)
			checkAgainst(t, "after AddAll", g, tab, ref, 2000)

			one := emptyTable()
			for _, r := range rs {
				one = one.Add(r, t0)
			}
			checkAgainst(t, "after single Adds", g, one, ref, 500)
		})
	}
}

func TestClassifierMatchesLinearScanAcrossEdits(t *testing.T) {
	sizes := []struct{ rules, masks int }{{10, 3}, {200, 8}, {1000, 30}}
	for i, size := range sizes {
		t.Run(fmt.Sprintf("rules=%d/masks=%d", size.rules, size.masks), func(t *testing.T) {
			g := newRuleGen(uint64(100+i), size.masks)
			now := t0
			ref := &refTable{}
			var rs []Rule
			for range size.rules {
				r := g.rule()
				rs = append(rs, r)
				ref.add(r, now)
			}
			tab := emptyTable().AddAll(rs, now)

			type snapshot struct {
				tab *Table
				ref *refTable
			}
			var old []snapshot
			for step := range 200 {
				now = now.Add(time.Second)
				var what string
				var got, want int
				prev := tab
				switch op := g.pick(10); {
				case op < 3:
					r := g.rule()
					what = "add"
					tab = tab.Add(r, now)
					ref.add(r, now)
				case op < 4:
					what = "add-all"
					var batch []Rule
					for range 1 + g.pick(5) {
						batch = append(batch, g.rule())
					}
					tab = tab.AddAll(batch, now)
					for _, r := range batch {
						ref.add(r, now)
					}
				case op < 6:
					strict := g.pick(2) == 0
					f := g.filter(strict)
					what = fmt.Sprintf("delete strict=%v %+v", strict, f)
					var deleted []*Entry
					tab, deleted = tab.Delete(f, strict)
					got, want = len(deleted), ref.delete(f, strict)
				case op < 9:
					strict := g.pick(2) == 0
					f := g.filter(strict)
					actions := output(uint16(100 + step))
					what = fmt.Sprintf("modify strict=%v %+v", strict, f)
					var modified []*Entry
					tab, modified = tab.Modify(f, strict, actions, nil, false)
					got, want = len(modified), ref.modify(f, strict, actions)
				default:
					what = "expire"
					var expired []*Entry
					tab, expired = tab.Expire(now)
					got, want = len(expired), ref.expire(now)
				}
				what = fmt.Sprintf("step %d, %s", step, what)
				if got != want {
					t.Fatalf("%s: changed %d entries, reference %d", what, got, want)
				}
				if (tab == prev) != (tab.Version() == prev.Version()) {
					t.Fatalf("%s: version %d after %d, same table %v", what, tab.Version(), prev.Version(), tab == prev)
				}
				checkAgainst(t, what, g, tab, ref, 50)
				if step%25 == 0 {
					old = append(old, snapshot{tab, ref.clone()})
				}
			}
			for i, s := range old {
				checkAgainst(t, fmt.Sprintf("old version %d", i), g, s.tab, s.ref, 500)
			}
		})
	}
}

// refSelect returns the cookies of the rules f selects, in dump order.
func (r *refTable) refSelect(f Filter, strict bool) []uint64 {
	sel := &refTable{}
	for i, s := range r.selected(f, strict) {
		if s {
			sel.rules = append(sel.rules, r.rules[i])
		}
	}
	return sel.dump()
}

// TestSingleRuleEditsAcrossFolds makes each version by one add, modify or
// delete, as a controller's flow mods do, on subtables big enough for their
// overlays to be folded in again and again, and checks every version, and
// at the end older ones (which share their bases and most of their
// overlays' nodes with the newer), against a linear scan.
func TestSingleRuleEditsAcrossFolds(t *testing.T) {
	g := newRuleGen(200, 3)
	ref := &refTable{}
	var rs []Rule
	for range 600 {
		r := g.rule()
		rs = append(rs, r)
		ref.add(r, t0)
	}
	tab := emptyTable().AddAll(rs, t0)
	type snapshot struct {
		tab *Table
		ref *refTable
	}
	old := []snapshot{{tab, ref.clone()}}
	overlays := map[Key]int{} // each mask's overlay size in the previous version
	folds := 0
	steps := 3000
	if race.Enabled {
		steps = 600
	}
	for step := range steps {
		var what string
		switch op := g.pick(10); {
		case op < 5:
			r := g.rule()
			what = "add"
			tab = tab.Add(r, t0)
			ref.add(r, t0)
		case op < 7:
			f := g.filter(true)
			actions := output(uint16(100 + step))
			what = fmt.Sprintf("modify %+v", f)
			var modified []*Entry
			tab, modified = tab.Modify(f, true, actions, nil, false)
			if got, want := len(modified), ref.modify(f, true, actions); got != want {
				t.Fatalf("step %d, %s: modified %d entries, reference %d", step, what, got, want)
			}
		default:
			f := g.filter(true)
			what = fmt.Sprintf("delete %+v", f)
			var deleted []*Entry
			tab, deleted = tab.Delete(f, true)
			if got, want := len(deleted), ref.delete(f, true); got != want {
				t.Fatalf("step %d, %s: deleted %d entries, reference %d", step, what, got, want)
			}
		}
		what = fmt.Sprintf("step %d, %s", step, what)
		checkAgainst(t, what, g, tab, ref, 20)
		for range 2 {
			strict := g.pick(2) == 0
			f := g.filter(strict)
			if got, want := cookies(tab.Select(f, strict)), ref.refSelect(f, strict); !slices.Equal(got, want) {
				t.Fatalf("%s: select strict=%v %+v\n got %x\nwant %x", what, strict, f, got, want)
			}
		}
		for _, st := range tab.subtables {
			// One edit grows or shrinks an overlay by at most one
			// key, unless it folds it in.
			if st.overlay.n < overlays[st.mask]-1 {
				folds++
			}
			overlays[st.mask] = st.overlay.n
		}
		if step%300 == 0 {
			old = append(old, snapshot{tab, ref.clone()})
		}
	}
	if folds < steps/300 {
		t.Fatalf("%d folds: the test does not exercise them", folds)
	}
	for i, s := range old {
		what := fmt.Sprintf("old version %d", i)
		checkAgainst(t, what, g, s.tab, s.ref, 500)
		for range 50 {
			strict := g.pick(2) == 0
			f := g.filter(strict)
			if got, want := cookies(s.tab.Select(f, strict)), s.ref.refSelect(f, strict); !slices.Equal(got, want) {
				t.Fatalf("%s: select strict=%v %+v\n got %x\nwant %x", what, strict, f, got, want)
			}
		}
	}
}

// maskKey and Widen work field by field; they must be the bytewise AND
// and OR of every field, keyBytes' layout being the independent account
// of what the fields are.
func TestMaskKeyAndWidenAreBytewise(t *testing.T) {
	g := newRuleGen(7, 1)
	bytewise := func(a, b *Key, op func(x, y byte) byte) Key {
		x, y := keyBytes(a), keyBytes(b)
		for i := range x {
			x[i] = op(x[i], y[i])
		}
		return keyFromBytes(x)
	}
	for range 1000 {
		k, m := g.randomKey(), g.randomMask()
		var got Key
		maskKey(&got, &k, &m)
		if want := bytewise(&k, &m, func(x, y byte) byte { return x & y }); got != want {
			t.Fatalf("maskKey(%+v, %+v) = %+v, want %+v", k, m, got, want)
		}
		m2 := g.randomMask()
		widened := m
		widened.Widen(&m2.Headers)
		want := bytewise(&m, &m2, func(x, y byte) byte { return x | y })
		want.Table, want.Metadata, want.Regs, want.CT = m.Table, m.Metadata, m.Regs, m.CT // Widen is of Headers
		if widened != want {
			t.Fatalf("Widen(%+v, %+v) = %+v, want %+v", m, m2, widened, want)
		}
		widenedCT := m.CT
		widenedCT.Widen(&m2.CT)
		if want := bytewise(&m, &m2, func(x, y byte) byte { return x | y }); widenedCT != want.CT {
			t.Fatalf("CTFields.Widen(%+v, %+v) = %+v, want %+v", m.CT, m2.CT, widenedCT, want.CT)
		}
	}
}

func TestLookupAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector changes allocation counts")
	}
	g := newRuleGen(3, 20)
	var rs []Rule
	for range 1000 {
		rs = append(rs, g.rule())
	}
	tab := emptyTable().AddAll(rs, t0)
	keys := make([]Key, 64)
	for i := range keys {
		keys[i] = g.lookupKey()
	}
	i := 0
	if n := testing.AllocsPerRun(1000, func() {
		tab.Lookup(&keys[i%len(keys)])
		i++
	}); n != 0 {
		t.Errorf("Lookup allocates %v times", n)
	}
	e := tab.Entries()[0]
	if n := testing.AllocsPerRun(1000, func() { e.Hit(1, 64, t0) }); n != 0 {
		t.Errorf("Hit allocates %v times", n)
	}
}
