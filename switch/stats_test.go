package vswitch

import (
	"reflect"
	"testing"
	"time"

	"github.com/xswitch/xswitch/port/porttest"
)

func TestMetricsMACEntriesAndForwarderTime(t *testing.T) {
	b := newTestBridge(t)
	p1, p2 := porttest.New("p1"), porttest.New("p2")
	for _, p := range []*porttest.Port{p1, p2} {
		if _, err := b.AddPort(p, PortOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := b.FDBSize(); n != 0 {
		t.Fatalf("FDBSize of a new bridge = %d; want 0", n)
	}
	p1.Inject(frame(broadcast, mac(1), "from 1"))
	waitTransmitted(t, p2, 1)
	p2.Inject(frame(mac(1), mac(2), "from 2"))
	waitTransmitted(t, p1, 1)
	if n := b.FDBSize(); n != 2 {
		t.Fatalf("FDBSize after two stations spoke = %d; want 2 (FDB: %+v)", n, b.FDB())
	}

	// Both totals are published at the end of a loop iteration, and idle
	// only once a sleep is over; asking the forwarder something keeps it
	// iterating and wakes it.
	busy, idle := waitForwarderTime(t, b, 0, 0)
	waitForwarderTime(t, b, busy, idle)

	b.Close()
	if busy, idle := b.ForwarderTime(); busy != 0 || idle != 0 || b.FDBSize() != 0 {
		t.Fatalf("a closed bridge reports busy %v, idle %v, %d MAC entries; want zeros", busy, idle, b.FDBSize())
	}
}

// waitForwarderTime waits until b's forwarder has been busy for longer than
// busy and idle for longer than idle, and returns its new totals.
func waitForwarderTime(t *testing.T, b *Bridge, busy, idle time.Duration) (time.Duration, time.Duration) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b.FDBSize()
		nowBusy, nowIdle := b.ForwarderTime()
		if nowBusy > busy && nowIdle > idle {
			return nowBusy, nowIdle
		}
		if time.Now().After(deadline) {
			t.Fatalf("ForwarderTime stuck at busy %v, idle %v; want more than busy %v, idle %v", nowBusy, nowIdle, busy, idle)
		}
		time.Sleep(time.Millisecond)
	}
}

// PortStats.Plus adds every counter: one it left out would start again
// from zero when a port's interface vanishes and comes back, as the
// control plane carries a port's counters over its openings.
func TestPortStatsPlusAddsEveryCounter(t *testing.T) {
	// numbered sets the i-th counter of a PortStats to i*k.
	numbered := func(k uint64) PortStats {
		var s PortStats
		i := uint64(0)
		var fill func(v reflect.Value)
		fill = func(v reflect.Value) {
			switch v.Kind() {
			case reflect.Uint64:
				i++
				v.SetUint(i * k)
			case reflect.Struct:
				for f := range v.NumField() {
					fill(v.Field(f))
				}
			case reflect.Array:
				for e := range v.Len() {
					fill(v.Index(e))
				}
			default:
				t.Fatalf("PortStats holds a %v: this test knows only counters", v.Type())
			}
		}
		fill(reflect.ValueOf(&s).Elem())
		return s
	}
	if got, want := numbered(1).Plus(numbered(1)), numbered(2); got != want {
		t.Errorf("Plus of a PortStats with itself = %+v; want every counter doubled: %+v", got, want)
	}
}
