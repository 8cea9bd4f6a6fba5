package vswitch

import (
	"testing"
	"time"
)

func mac(last byte) []byte { return []byte{0x02, 0, 0, 0, 0, last} }

func TestMACTableLearnAndLookup(t *testing.T) {
	tbl := newMACTable(64, time.Minute)
	k := macKey(mac(1), 0)
	if _, ok := tbl.lookup(k, 0); ok {
		t.Fatal("empty table found an address")
	}
	tbl.learn(k, 3, 0)
	if p, ok := tbl.lookup(k, 1); !ok || p != 3 {
		t.Fatalf("lookup = %d, %v; want 3, true", p, ok)
	}
	tbl.learn(k, 5, 2) // the station moved
	if p, _ := tbl.lookup(k, 3); p != 5 {
		t.Fatalf("after a move lookup = %d; want 5", p)
	}
}

func TestMACTableVLANsAreSeparate(t *testing.T) {
	tbl := newMACTable(64, time.Minute)
	tbl.learn(macKey(mac(1), 10), 1, 0)
	if _, ok := tbl.lookup(macKey(mac(1), 20), 0); ok {
		t.Fatal("an address learned in VLAN 10 was found in VLAN 20")
	}
	tbl.learn(macKey(mac(1), 20), 2, 0)
	if p, _ := tbl.lookup(macKey(mac(1), 10), 0); p != 1 {
		t.Fatalf("VLAN 10 entry now points at %d; want 1", p)
	}
}

func TestMACTableAging(t *testing.T) {
	aging := 300 * time.Second
	tbl := newMACTable(64, aging)
	k := macKey(mac(1), 0)
	tbl.learn(k, 1, 0)
	if _, ok := tbl.lookup(k, int64(aging)-1); !ok {
		t.Fatal("entry expired before its aging time")
	}
	if _, ok := tbl.lookup(k, int64(aging)); ok {
		t.Fatal("entry still valid at its aging time")
	}
	if got := tbl.snapshot(int64(aging), func(s uint16) uint16 { return s }); len(got) != 0 {
		t.Fatalf("snapshot lists expired entries: %v", got)
	}
	tbl.learn(k, 1, int64(aging)) // seen again: valid again
	if _, ok := tbl.lookup(k, int64(aging)+1); !ok {
		t.Fatal("relearned entry not found")
	}
}

func TestMACTableEvictsLeastRecentlySeenWhenFull(t *testing.T) {
	tbl := newMACTable(macWays, time.Hour) // one set
	for i := range macWays {
		tbl.learn(macKey(mac(byte(i)), 0), uint16(i), int64(i+1))
	}
	tbl.learn(macKey(mac(0), 0), 0, 100) // refresh the oldest
	tbl.learn(macKey(mac(200), 0), 9, 101)
	if _, ok := tbl.lookup(macKey(mac(1), 0), 102); ok {
		t.Fatal("the least recently seen entry survived an eviction")
	}
	for _, keep := range []byte{0, 2, 200} {
		if _, ok := tbl.lookup(macKey(mac(keep), 0), 102); !ok {
			t.Fatalf("entry %d was evicted", keep)
		}
	}
	if tbl.evictions.Load() != 1 {
		t.Fatalf("evictions = %d; want 1", tbl.evictions.Load())
	}
}

func TestMACTableFlushPort(t *testing.T) {
	tbl := newMACTable(64, time.Hour)
	tbl.learn(macKey(mac(1), 0), 1, 0)
	tbl.learn(macKey(mac(2), 0), 2, 0)
	tbl.flushPort(1)
	if _, ok := tbl.lookup(macKey(mac(1), 0), 0); ok {
		t.Fatal("flushed entry still found")
	}
	if _, ok := tbl.lookup(macKey(mac(2), 0), 0); !ok {
		t.Fatal("flush removed another port's entry")
	}
}

func TestMACTableSnapshot(t *testing.T) {
	tbl := newMACTable(64, time.Hour)
	tbl.learn(macKey([]byte{0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff}, 7), 2, 0)
	tbl.learn(macKey(mac(1), 0), 1, int64(time.Second))
	got := tbl.snapshot(int64(3*time.Second), func(s uint16) uint16 { return s + 10 })
	if len(got) != 2 {
		t.Fatalf("snapshot has %d entries; want 2", len(got))
	}
	if got[0].Port != 11 || got[0].MAC != [6]byte{2, 0, 0, 0, 0, 1} || got[0].Age != 2*time.Second {
		t.Errorf("first entry = %+v", got[0])
	}
	if got[1].Port != 12 || got[1].VLAN != 7 || got[1].MAC != [6]byte{0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff} {
		t.Errorf("second entry = %+v", got[1])
	}
}

func TestMACTableSizeRoundsUp(t *testing.T) {
	tbl := newMACTable(1000, time.Hour)
	if len(tbl.slots) < 1000 || len(tbl.slots)%macWays != 0 {
		t.Fatalf("table of 1000 has %d slots", len(tbl.slots))
	}
}

func TestMACTableFloodEvictsTheFloodersOwnEntries(t *testing.T) {
	tbl := newMACTable(macWays, time.Hour) // one set: every address competes
	const steady, flooder = 1, 2
	tbl.learn(macKey(mac(1), 0), steady, 1)
	tbl.learn(macKey(mac(2), 0), steady, 2)
	for i := range 10000 {
		src := []byte{0x02, 0xff, byte(i >> 16), byte(i >> 8), byte(i), 0}
		tbl.learn(macKey(src, 0), flooder, int64(100+i))
	}
	for _, m := range []byte{1, 2} {
		if p, ok := tbl.lookup(macKey(mac(m), 0), 20000); !ok || p != steady {
			t.Fatalf("steady station %d was evicted by a MAC flood from another port", m)
		}
	}
}
