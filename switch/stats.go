package vswitch

import (
	"sync/atomic"
	"time"
)

// loopClock splits the forwarding goroutine's time into busy (receiving,
// forwarding, serving requests) and idle (asleep in poll). It reads the
// clock once per loop iteration, plus once after a sleep, which a system
// call precedes anyway: never once per frame. The totals are atomics so
// that a reader on another goroutine needs no lock.
type loopClock struct {
	busy, idle atomic.Int64 // nanoseconds
	mark       time.Time    // end of the last accounted span; forwarder only
}

func (c *loopClock) start() { c.mark = time.Now() }

// worked accounts the time since the last mark as busy.
func (c *loopClock) worked() {
	now := time.Now()
	c.busy.Add(int64(now.Sub(c.mark)))
	c.mark = now
}

// slept accounts the time since the last mark as idle.
func (c *loopClock) slept() {
	now := time.Now()
	c.idle.Add(int64(now.Sub(c.mark)))
	c.mark = now
}

// ForwarderTime reports how long the bridge's forwarding goroutines have
// spent working and asleep since the bridge was created, summed over them.
// The two keep counting until the bridge is closed, then read zero.
func (b *Bridge) ForwarderTime() (busy, idle time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, f := range b.fwds {
		busy += time.Duration(f.clock.busy.Load())
		idle += time.Duration(f.clock.idle.Load())
	}
	return busy, idle
}

// FDBSize is how many learned addresses the bridge's MAC table holds that
// have not aged out. It asks the forwarder, between two batches, so it
// costs the forwarder one scan of the table.
func (b *Bridge) FDBSize() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fwds == nil {
		return 0
	}
	f := b.fwds[0]
	var n int
	f.do(func() { n = f.fdb.liveEntries(f.now()) })
	return n
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
