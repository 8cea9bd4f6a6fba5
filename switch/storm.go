package vswitch

// Storm limits. A port's storm limit caps the frames per second that NORMAL
// floods from it: broadcast, multicast and unicast to an unknown address.
// Those are the frames a loop or a broken station multiplies over the whole
// bridge; frames to learned addresses go to one port and are not limited.
// Each forwarding thread keeps a token bucket per port on its own clock
// (the one it reads once per batch), so a frame costs a few integer
// operations, no lock and no allocation. A port whose queues several
// threads serve has its limit shared among them by their share of its
// queues. Excess frames are dropped and counted as the port's storm drops.

import (
	"fmt"
	"time"
)

// tokenBucket admits frames at a rate: each costs cost nanoseconds of
// credit, which accrues with time up to depth, a burst's worth of frames
// (for storm limits one second's, so that a port limited to N frames/s
// may send a burst of N). Its zero value admits everything.
type tokenBucket struct {
	cost   int64 // 0: no limit
	depth  int64
	credit int64
	last   int64 // when credit was last brought up to date
}

// setRate makes b admit perSecond frames a second (0: all) in bursts of
// as many, starting full at now.
func (b *tokenBucket) setRate(perSecond uint64, now int64) { b.setLimit(perSecond, perSecond, now) }

// setLimit makes b admit perSecond frames a second (0: all) in bursts of
// up to burst, starting full at now. It keeps b's state when the limit is
// the same.
func (b *tokenBucket) setLimit(perSecond, burst uint64, now int64) {
	perSecond = min(perSecond, uint64(time.Second))
	burst = min(burst, uint64(time.Second))
	var cost int64
	if perSecond > 0 {
		// Rounded up: the bucket never admits more than perSecond.
		cost = (int64(time.Second) + int64(perSecond) - 1) / int64(perSecond)
	}
	depth := cost * int64(burst)
	if cost == b.cost && depth == b.depth {
		return
	}
	*b = tokenBucket{cost: cost, depth: depth, credit: depth, last: now}
}

// take reports whether a frame may pass at time now, and charges it.
func (b *tokenBucket) take(now int64) bool {
	if b.cost == 0 {
		return true
	}
	b.credit = min(b.credit+now-b.last, b.depth)
	b.last = now
	if b.credit < b.cost {
		return false
	}
	b.credit -= b.cost
	return true
}

// SetStormLimit caps the frames per second that NORMAL floods from the
// named port; 0 removes the cap. It takes effect from the next batch.
func (b *Bridge) SetStormLimit(name string, perSecond uint32) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	bp := b.port(name)
	if bp == nil {
		return fmt.Errorf("no port %q on bridge %s", name, b.name)
	}
	b.onEachForwarder(func(f *forwarder) { f.setStormLimit(bp.slot, perSecond) })
	return nil
}

// setStormLimit sets the storm limit of the port in slot. It runs on the
// forwarder.
func (f *forwarder) setStormLimit(slot uint16, perSecond uint32) {
	f.stormLimit[slot] = perSecond
	f.shareStormLimits()
}

// shareStormLimits gives each port's bucket this thread's share of the
// port's limit: the limit times the fraction of the port's queues that
// this thread serves, rounded up.
func (f *forwarder) shareStormLimits() {
	now := f.now()
	for slot, p := range f.ports {
		if p == nil {
			continue
		}
		// A tunnel's frames come on its underlay's queues.
		from := p
		if p.tunnel != nil {
			from = f.ports[p.underlaySlot]
		}
		mine := 0
		for _, q := range f.queues {
			if f.ports[q.slot] == from {
				mine++
			}
		}
		all := uint64(len(from.RxQueues()))
		var rate uint64
		if limit := uint64(f.stormLimit[slot]); limit > 0 && mine > 0 {
			rate = (limit*uint64(mine) + all - 1) / all
		}
		f.storm[slot].setRate(rate, now)
	}
}
