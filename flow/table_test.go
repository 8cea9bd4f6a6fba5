package flow

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// on returns a Match built by set, which fills in the key and mask fields
// the match is about.
func on(set func(k, m *Key)) Match {
	var mt Match
	set(&mt.Key, &mt.Mask)
	return mt
}

func inPort(p uint16) Match {
	return on(func(k, m *Key) { k.InPort, m.InPort = p, 0xffff })
}

func inPortIPv4(p uint16) Match {
	return on(func(k, m *Key) {
		k.InPort, m.InPort = p, 0xffff
		k.DlType, m.DlType = EtherTypeIPv4, 0xffff
	})
}

func ipv4() Match {
	return on(func(k, m *Key) { k.DlType, m.DlType = EtherTypeIPv4, 0xffff })
}

func nwDst(a, b, c, d byte, prefix int) Match {
	return on(func(k, m *Key) {
		k.DlType, m.DlType = EtherTypeIPv4, 0xffff
		ones := uint32(0xffffffff) << (32 - prefix)
		m.NwDst = [4]byte{byte(ones >> 24), byte(ones >> 16), byte(ones >> 8), byte(ones)}
		k.NwDst = [4]byte{a & m.NwDst[0], b & m.NwDst[1], c & m.NwDst[2], d & m.NwDst[3]}
	})
}

func output(p uint16) []Action { return []Action{{Type: ActOutput, Port: p}} }

func rule(priority uint16, m Match, actions []Action) Rule {
	return Rule{Priority: priority, Match: m, Actions: actions}
}

func emptyTable() *Table { return NewTable(nil, 1) }

func TestAddReplacesIdenticalMatchAndPriority(t *testing.T) {
	v1 := emptyTable().Add(rule(100, inPort(1), output(2)), t0)
	v1.Entries()[0].Hit(3, 300, t0.Add(time.Second))

	v2 := v1.Add(rule(100, inPort(1), output(3)), t0.Add(2*time.Second))
	if v2.Len() != 1 {
		t.Fatalf("after replacing: %d entries, want 1", v2.Len())
	}
	e := v2.Entries()[0]
	if !slices.Equal(e.Actions, output(3)) {
		t.Errorf("replacement's actions = %v, want output:3", e.Actions)
	}
	if p, b, used := e.Stats(); p != 0 || b != 0 || !used.Equal(e.Installed) {
		t.Errorf("replacement's stats = %d packets, %d bytes, used %v; want zero, used = installed", p, b, used)
	}
	if old := v1.Entries()[0]; v1.Len() != 1 || !slices.Equal(old.Actions, output(2)) {
		t.Errorf("the old version changed: %d entries, actions %v", v1.Len(), old.Actions)
	}
	if p, _, _ := v1.Entries()[0].Stats(); p != 3 {
		t.Errorf("the old entry's packets = %d, want 3", p)
	}

	v3 := v2.Add(rule(200, inPort(1), output(4)), t0)
	if v3.Len() != 2 {
		t.Errorf("same match, other priority: %d entries, want 2", v3.Len())
	}
	if v1.Version() != 2 || v2.Version() != 3 || v3.Version() != 4 {
		t.Errorf("versions %d, %d, %d; want 2, 3, 4", v1.Version(), v2.Version(), v3.Version())
	}
}

func TestAddAllLastDuplicateWins(t *testing.T) {
	tab := emptyTable().AddAll([]Rule{
		rule(5, inPort(1), output(1)),
		rule(5, inPort(2), output(2)),
		rule(5, inPort(1), output(3)),
	}, t0)
	if tab.Len() != 2 {
		t.Fatalf("%d entries, want 2", tab.Len())
	}
	if e := tab.Lookup(&Key{Headers: Headers{InPort: 1}}); e == nil || !slices.Equal(e.Actions, output(3)) {
		t.Errorf("in_port=1 found %v, want the later output:3", e)
	}
	if tab.Version() != 2 {
		t.Errorf("one batch made version %d, want 2", tab.Version())
	}
}

func TestAddNormalisesKeyBitsOutsideMask(t *testing.T) {
	m := inPort(1)
	m.Key.TpDst = 80 // not in the mask
	tab := emptyTable().Add(rule(1, m, nil), t0)
	if tab.Lookup(&Key{Headers: Headers{InPort: 1, TpDst: 22}}) == nil {
		t.Error("a rule whose key had bits outside its mask never matches")
	}
}

func TestLookupPriorities(t *testing.T) {
	tab := emptyTable().AddAll([]Rule{
		rule(0, Match{}, []Action{{Type: ActNormal}}),
		rule(100, inPort(1), output(2)),
		rule(200, inPortIPv4(1), output(3)),
		rule(300, nwDst(10, 0, 0, 0, 8), output(4)),
	}, t0)
	tests := []struct {
		name string
		key  Key
		want uint16
	}{
		{"nothing specific", Key{Headers: Headers{InPort: 7}}, 0},
		{"in_port", Key{Headers: Headers{InPort: 1, DlType: EtherTypeARP}}, 100},
		{"in_port and ip", Key{Headers: Headers{InPort: 1, DlType: EtherTypeIPv4}}, 200},
		{"nw_dst beats all", Key{Headers: Headers{InPort: 1, DlType: EtherTypeIPv4, NwDst: [4]byte{10, 1, 2, 3}}}, 300},
		{"nw_dst outside", Key{Headers: Headers{InPort: 2, DlType: EtherTypeIPv4, NwDst: [4]byte{11, 1, 2, 3}}}, 0},
	}
	for _, tt := range tests {
		e := tab.Lookup(&tt.key)
		if e == nil || e.Priority != tt.want {
			t.Errorf("%s: found %v, want priority %d", tt.name, e, tt.want)
		}
	}
	if e := emptyTable().Lookup(&Key{}); e != nil {
		t.Errorf("empty table found %v", e)
	}
}

func TestLookupTieEarliestInstalledWins(t *testing.T) {
	first := rule(10, ipv4(), output(1))
	second := rule(10, inPort(1), output(2))
	key := Key{Headers: Headers{InPort: 1, DlType: EtherTypeIPv4}}

	tab := emptyTable().Add(first, t0).Add(second, t0)
	if e := tab.Lookup(&key); e.Actions[0].Port != 1 {
		t.Fatalf("found output:%d, want the earlier rule's output:1", e.Actions[0].Port)
	}
	tab, _ = tab.Modify(Filter{Match: ipv4(), Priority: 10, HasPriority: true}, true, output(3), nil, false)
	if e := tab.Lookup(&key); e.Actions[0].Port != 3 {
		t.Errorf("after mod-flows found output:%d, want the modified earlier rule's output:3", e.Actions[0].Port)
	}
	tab = tab.Add(first, t0) // re-adding makes it the later one
	if e := tab.Lookup(&key); e.Actions[0].Port != 2 {
		t.Errorf("after re-adding the first rule found output:%d, want output:2", e.Actions[0].Port)
	}
}

// flowsTable has rules of several shapes, cookies and priorities for the
// selection tests.
func flowsTable() *Table {
	rs := []Rule{
		rule(0, Match{}, []Action{{Type: ActNormal}}),
		rule(DefaultPriority, inPort(1), output(2)),
		rule(100, inPort(1), output(2)),
		rule(DefaultPriority, inPortIPv4(1), output(3)),
		rule(DefaultPriority, inPort(2), output(1)),
		rule(DefaultPriority, nwDst(10, 1, 0, 0, 16), output(4)),
		rule(DefaultPriority, nwDst(10, 0, 0, 0, 8), output(5)),
		rule(DefaultPriority, nwDst(0, 0, 0, 0, 4), output(6)),
		rule(DefaultPriority, nwDst(11, 0, 0, 0, 8), output(7)),
	}
	for i := range rs {
		rs[i].Cookie = uint64(0x10*(i%3+1) + i)
	}
	return emptyTable().AddAll(rs, t0)
}

// outputs returns the ports of the entries whose first action is an
// output, in order.
func outputs(es []*Entry) []uint16 {
	var ports []uint16
	for _, e := range es {
		if len(e.Actions) > 0 && e.Actions[0].Type == ActOutput {
			ports = append(ports, e.Actions[0].Port)
		}
	}
	return ports
}

func TestSelect(t *testing.T) {
	tab := flowsTable()
	tests := []struct {
		name   string
		filter Filter
		strict bool
		want   []uint16 // output ports, in dump order
	}{
		{"everything", Filter{}, false, []uint16{2, 3, 1, 4, 5, 6, 7, 2}},
		{"in_port=1 includes more specific", Filter{Match: inPort(1)}, false, []uint16{2, 3, 2}},
		{"nw_dst=10/8 includes /16 not /4", Filter{Match: nwDst(10, 0, 0, 0, 8)}, false, []uint16{4, 5}},
		{"strict default priority", Filter{Match: inPort(1)}, true, []uint16{2}},
		{"strict priority 100", Filter{Match: inPort(1), Priority: 100, HasPriority: true}, true, []uint16{2}},
		{"strict wrong priority", Filter{Match: inPort(1), Priority: 99, HasPriority: true}, true, nil},
		{"strict needs the same mask", Filter{Match: nwDst(10, 0, 0, 0, 8)}, true, []uint16{5}},
		{"strict catch-all", Filter{HasPriority: true}, true, nil}, // NORMAL is not an output
		{"cookie mask", Filter{Cookie: 0x20, CookieMask: 0xf0}, false, []uint16{2, 1, 6}},
		{"cookie mask and match", Filter{Match: inPort(1), Cookie: 0x20, CookieMask: 0xf0}, false, []uint16{2}},
	}
	for _, tt := range tests {
		if got := outputs(tab.Select(tt.filter, tt.strict)); !slices.Equal(got, tt.want) {
			t.Errorf("%s: selected outputs %v, want %v", tt.name, got, tt.want)
		}
	}
	if got := tab.Select(Filter{HasPriority: true}, true); len(got) != 1 || got[0].Priority != 0 {
		t.Errorf("strict empty match, priority 0: selected %v, want the catch-all", got)
	}
}

func TestEntriesOrder(t *testing.T) {
	es := flowsTable().Entries()
	if !slices.IsSortedFunc(es, compareRank) {
		t.Error("Entries is not by priority, then installation")
	}
	if got := outputs(es); !slices.Equal(got, []uint16{2, 3, 1, 4, 5, 6, 7, 2}) {
		t.Errorf("Entries outputs %v", got)
	}
}

// TestModifyGivesNewInstructions: a modification replaces the
// instructions of the entries' wire form, with the ones it came with or
// none, and keeps their match's.
func TestModifyGivesNewInstructions(t *testing.T) {
	r := rule(DefaultPriority, inPort(1), output(2))
	r.Wire = WireForm{Match: []byte{1, 2}, Instructions: []byte{3, 4}}
	v1 := emptyTable().Add(r, t0)
	v2, _ := v1.Modify(Filter{Match: inPort(1)}, false, output(9), []byte{5, 6}, false)
	if w := v2.Entries()[0].Wire; !slices.Equal(w.Match, []byte{1, 2}) || !slices.Equal(w.Instructions, []byte{5, 6}) {
		t.Errorf("after a modification with instructions %x, the wire form is %x", []byte{5, 6}, w)
	}
	v3, _ := v2.Modify(Filter{Match: inPort(1)}, false, output(3), nil, false)
	if w := v3.Entries()[0].Wire; !slices.Equal(w.Match, []byte{1, 2}) || w.Instructions != nil {
		t.Errorf("after a modification without instructions, the wire form is %x", w)
	}
}

func TestModifyKeepsCountersAndTimeouts(t *testing.T) {
	r := rule(DefaultPriority, inPort(1), output(2))
	r.IdleTimeout, r.HardTimeout, r.Cookie = 10, 20, 0xabc
	v1 := emptyTable().Add(r, t0).Add(rule(DefaultPriority, inPort(2), output(1)), t0)
	old := v1.Select(Filter{Match: inPort(1)}, true)[0]
	old.Hit(4, 400, t0.Add(time.Second))

	v2, modified := v1.Modify(Filter{Match: inPort(1)}, false, output(9), nil, false)
	if len(modified) != 1 || !slices.Equal(modified[0].Actions, output(9)) {
		t.Fatalf("modified %v, want the one entry with its new actions", modified)
	}
	e := v2.Lookup(&Key{Headers: Headers{InPort: 1}})
	if !slices.Equal(e.Actions, output(9)) {
		t.Errorf("actions %v, want output:9", e.Actions)
	}
	if p, b, used := e.Stats(); p != 4 || b != 400 || !used.Equal(t0.Add(time.Second)) {
		t.Errorf("stats after mod-flows = %d, %d, %v; want 4, 400, t0+1s", p, b, used)
	}
	if e.IdleTimeout != 10 || e.HardTimeout != 20 || e.Cookie != 0xabc || !e.Installed.Equal(t0) {
		t.Errorf("mod-flows changed timeouts, cookie or installation time: %+v", e)
	}
	e.Hit(1, 1, t0.Add(6*time.Second))
	if p, _, _ := old.Stats(); p != 5 {
		t.Errorf("the old version's entry has %d packets, want 5 (shared counters)", p)
	}
	if !slices.Equal(v1.Lookup(&Key{Headers: Headers{InPort: 1}}).Actions, output(2)) {
		t.Error("mod-flows changed the old version")
	}
	if v2.Lookup(&Key{Headers: Headers{InPort: 2}}) != v1.Lookup(&Key{Headers: Headers{InPort: 2}}) {
		t.Error("an untouched entry is not shared between versions")
	}
}

func TestModifyAndDeleteStrictness(t *testing.T) {
	tab := flowsTable()
	tests := []struct {
		name   string
		filter Filter
		strict bool
		want   int
	}{
		{"non-strict in_port=1", Filter{Match: inPort(1)}, false, 3},
		{"strict in_port=1", Filter{Match: inPort(1)}, true, 1},
		{"non-strict all", Filter{}, false, 9},
		{"cookie 0x30/0xf0", Filter{Cookie: 0x30, CookieMask: 0xf0}, false, 3},
		{"none", Filter{Match: inPort(9)}, false, 0},
	}
	for _, tt := range tests {
		modified, changed := tab.Modify(tt.filter, tt.strict, output(99), nil, false)
		if n := len(changed); n != tt.want {
			t.Errorf("%s: modified %d, want %d", tt.name, len(changed), tt.want)
		}
		to99 := 0
		for _, e := range modified.Entries() {
			if slices.Equal(e.Actions, output(99)) {
				to99++
			}
		}
		if to99 != tt.want {
			t.Errorf("%s: %d entries output to 99, want %d", tt.name, to99, tt.want)
		}
		deleted, removed := tab.Delete(tt.filter, tt.strict)
		if n := len(removed); n != tt.want || deleted.Len() != tab.Len()-tt.want {
			t.Errorf("%s: deleted %d leaving %d, want %d leaving %d", tt.name, len(removed), deleted.Len(), tt.want, tab.Len()-tt.want)
		}
		if len(deleted.Select(tt.filter, tt.strict)) != 0 {
			t.Errorf("%s: entries still selected after deleting them", tt.name)
		}
		if tt.want == 0 && (modified != tab || deleted != tab) {
			t.Errorf("%s: selecting nothing made a new version", tt.name)
		}
	}
	if tab.Len() != 9 {
		t.Errorf("edits changed the base version: %d entries", tab.Len())
	}
}

func TestExpire(t *testing.T) {
	idle := rule(1, inPort(1), output(1))
	idle.IdleTimeout = 10
	hard := rule(1, inPort(2), output(2))
	hard.HardTimeout = 5
	both := rule(1, inPort(3), output(3))
	both.IdleTimeout, both.HardTimeout = 2, 30
	forever := rule(1, inPort(4), output(4))
	tab := emptyTable().AddAll([]Rule{idle, hard, both, forever}, t0)
	entry := func(tab *Table, port uint16) *Entry { return tab.Lookup(&Key{Headers: Headers{InPort: port}}) }

	if same, expired := tab.Expire(t0.Add(time.Second)); same != tab || expired != nil {
		t.Fatalf("at t0+1s expired %v", outputs(expired))
	}
	entry(tab, 1).Hit(1, 60, t0.Add(3*time.Second))
	steps := []struct {
		at   time.Duration
		want []uint16 // outputs of the entries expiring then
		left int
	}{
		{2 * time.Second, []uint16{3}, 3}, // idle 2s, never hit: counts from installation
		{4 * time.Second, nil, 3},
		{5 * time.Second, []uint16{2}, 2},  // hard 5s
		{12 * time.Second, nil, 2},         // idle 10s, hit at t0+3s
		{13 * time.Second, []uint16{1}, 1}, // ... expires at t0+13s
		{time.Hour, nil, 1},
	}
	for _, s := range steps {
		next, expired := tab.Expire(t0.Add(s.at))
		if got := outputs(expired); !slices.Equal(got, s.want) || next.Len() != s.left {
			t.Errorf("at t0+%v: expired %v leaving %d, want %v leaving %d", s.at, got, next.Len(), s.want, s.left)
		}
		if len(s.want) == 0 && next != tab {
			t.Errorf("at t0+%v: nothing expired but a new version was made", s.at)
		}
		tab = next
	}
	if entry(tab, 4) == nil {
		t.Error("the rule without timeouts is gone")
	}
}

func TestNewTable(t *testing.T) {
	src := flowsTable()
	src.Entries()[0].Hit(2, 2, t0)
	copied := NewTable(src.Entries(), 7)
	if copied.Version() != 7 || !slices.Equal(copied.Entries(), src.Entries()) {
		t.Error("a table rebuilt from another's entries differs")
	}
	hand := []*Entry{
		{Rule: rule(5, inPort(1), output(1)), Installed: t0},
		{Rule: rule(5, ipv4(), output(2)), Installed: t0},
	}
	tab := NewTable(hand, 1)
	if e := tab.Lookup(&Key{Headers: Headers{InPort: 1, DlType: EtherTypeIPv4}}); e.Actions[0].Port != 1 {
		t.Errorf("hand-built entries: found output:%d, want the first one's", e.Actions[0].Port)
	}
	tab.Lookup(&Key{Headers: Headers{InPort: 1}}).Hit(1, 1, t0) // counters exist
	if hand[0].stats != nil {
		t.Error("NewTable changed a hand-built entry")
	}
}

func TestClassifierPublish(t *testing.T) {
	c := NewClassifier()
	if c.Load().Len() != 0 || c.Load().Version() != 1 {
		t.Fatalf("new classifier: %d entries, version %d", c.Load().Len(), c.Load().Version())
	}
	next := c.Load().Add(rule(0, Match{}, []Action{{Type: ActNormal}}), t0)
	c.Publish(next)
	if c.Load() != next {
		t.Error("Load does not return the published table")
	}
}

// TestTablesKeepTheirRulesApart: one match in two tables is two rules; a
// lookup sees only its table's; a filter without a table selects in all
// of them, strictly or not, and one with a table only there.
func TestTablesKeepTheirRulesApart(t *testing.T) {
	inTable := func(table uint8, r Rule) Rule {
		r.Match.Key.Table, r.Match.Mask.Table = table, 0xff
		return r
	}
	tbl := emptyTable().AddAll([]Rule{
		inTable(0, rule(10, inPort(1), output(2))),
		inTable(3, rule(10, inPort(1), output(3))),
		inTable(3, rule(5, inPort(2), output(4))),
	}, t0)
	if tbl.Len() != 3 {
		t.Fatalf("%d rules, want 3", tbl.Len())
	}
	for _, tt := range []struct {
		table uint8
		in    uint16
		want  []Action // nil: no match
	}{{0, 1, output(2)}, {3, 1, output(3)}, {3, 2, output(4)}, {0, 2, nil}, {1, 1, nil}} {
		k := Key{Headers: Headers{InPort: tt.in}, Table: tt.table}
		e := tbl.Lookup(&k)
		if (e == nil) != (tt.want == nil) || e != nil && !slices.Equal(e.Actions, tt.want) {
			t.Errorf("table %d, in_port %d: got %+v, want %v", tt.table, tt.in, e, tt.want)
		}
	}
	anyTable := Filter{Match: inPort(1), Priority: 10, HasPriority: true}
	for _, strict := range []bool{false, true} {
		if got := len(tbl.Select(anyTable, strict)); got != 2 {
			t.Errorf("strict=%v without a table selects %d rules, want 2", strict, got)
		}
		oneTable := anyTable
		oneTable.Match.Key.Table, oneTable.Match.Mask.Table = 3, 0xff
		if got := tbl.Select(oneTable, strict); len(got) != 1 || got[0].Table() != 3 {
			t.Errorf("strict=%v in table 3 selects %v, want table 3's rule", strict, got)
		}
	}
	if rest, gone := tbl.Delete(Filter{}, false); len(gone) != 3 || rest.Len() != 0 {
		t.Errorf("deleting everything removed %d, left %d", len(gone), rest.Len())
	}
}

// TestGenerationsTellWhichTablesChanged: over random edits of four
// pipeline tables, a table whose generation is the same in two versions
// has the same rules in both, and an edit leaves the generations of the
// tables it does not touch as they were.
func TestGenerationsTellWhichTablesChanged(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	const tables = 4
	rulesOf := func(tb *Table, id uint8) string {
		var b strings.Builder
		for _, e := range tb.Entries() {
			if e.Table() == id {
				b.WriteString(FormatRule(e.Rule) + "\n")
			}
		}
		return b.String()
	}
	versions := []*Table{NewTable(nil, 1)}
	for range 300 {
		tb := versions[len(versions)-1]
		id := uint8(rnd.IntN(tables))
		var next *Table
		switch all := tb.Entries(); {
		case rnd.IntN(3) > 0 || len(all) == 0:
			r, err := ParseRule(fmt.Sprintf("table=%d,priority=%d,tcp,tp_dst=%d,actions=output:%d",
				id, rnd.IntN(3), rnd.IntN(8), 1+rnd.IntN(3)), nil)
			if err != nil {
				t.Fatal(err)
			}
			next = tb.Add(r, t0)
		default:
			victim := all[rnd.IntN(len(all))]
			id = victim.Table()
			f := Filter{Match: victim.Match, Priority: victim.Priority, HasPriority: true}
			if rnd.IntN(2) == 0 {
				next, _ = tb.Delete(f, true)
			} else {
				next, _ = tb.Modify(f, true, []Action{{Type: ActOutput, Port: uint16(1 + rnd.IntN(3))}}, nil, false)
			}
		}
		for other := range uint8(tables) {
			if other != id && next.Generation(other) != tb.Generation(other) {
				t.Fatalf("an edit of table %d changed table %d's generation", id, other)
			}
		}
		versions = append(versions, next)
	}
	for i, a := range versions {
		for _, b := range versions[i+1:] {
			for id := range uint8(tables) {
				if a.Generation(id) == b.Generation(id) && rulesOf(a, id) != rulesOf(b, id) {
					t.Fatalf("table %d: same generation %d, different rules:\n%s\n%s", id, a.Generation(id), rulesOf(a, id), rulesOf(b, id))
				}
			}
		}
	}
}

// TestChangesListWhatAVersionChanged: a small edit lists the entries it
// added and removed, from the version it was built from; a modification
// is a removal and an addition; an edit too big to list lists nothing.
func TestChangesListWhatAVersionChanged(t *testing.T) {
	now := time.Now()
	r1, r2 := mustRule(t, "priority=5,ip,actions=output:1"), mustRule(t, "priority=5,ip,actions=output:2")
	t0 := NewTable(nil, 0)
	t1 := t0.Add(r1, now)
	if ch := t1.Changes(); ch == nil || ch.From != t0.Version() || len(ch.Added) != 1 || len(ch.Removed) != 0 {
		t.Fatalf("an add: %+v", ch)
	}
	old := t1.Entries()[0]
	t2 := t1.Add(r2, now) // the same match and priority: a replacement
	if ch := t2.Changes(); ch == nil || ch.From != t1.Version() || len(ch.Added) != 1 || len(ch.Removed) != 1 || ch.Removed[0] != old {
		t.Fatalf("a replacement: %+v", ch)
	}
	t3, modified := t2.Modify(Filter{}, false, r1.Actions, nil, false)
	if ch := t3.Changes(); ch == nil || len(ch.Added) != 1 || ch.Added[0] != modified[0] || len(ch.Removed) != 1 {
		t.Fatalf("a modification: %+v", ch)
	}
	t4, removed := t3.Delete(Filter{}, false)
	if ch := t4.Changes(); ch == nil || len(ch.Added) != 0 || len(ch.Removed) != 1 || ch.Removed[0] != removed[0] {
		t.Fatalf("a delete: %+v", ch)
	}
	var many []Rule
	for i := range maxListedChanges + 1 {
		many = append(many, mustRule(t, fmt.Sprintf("priority=%d,ip,actions=drop", i+1)))
	}
	if ch := t4.AddAll(many, now).Changes(); ch != nil {
		t.Fatalf("%d adds listed as changes", len(many))
	}
}

func mustRule(t *testing.T, text string) Rule {
	t.Helper()
	r, err := ParseRule(text, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
