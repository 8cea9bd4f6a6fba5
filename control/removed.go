package control

import (
	"sync"
	"time"

	"github.com/xswitch/xswitch/flow"
	vswitch "github.com/xswitch/xswitch/switch"
)

// RemovedReason is why a rule was removed, with the codes of OpenFlow's
// OFPT_FLOW_REMOVED (OFPRR_*).
type RemovedReason uint8

const (
	RemovedIdleTimeout RemovedReason = 0 // OFPRR_IDLE_TIMEOUT
	RemovedHardTimeout RemovedReason = 1 // OFPRR_HARD_TIMEOUT
	RemovedDelete      RemovedReason = 2 // OFPRR_DELETE
	RemovedGroupDelete RemovedReason = 3 // OFPRR_GROUP_DELETE: the group it sent to was deleted
)

// RemovedFlow is a rule that is no longer in its table. Entry's counters
// are final: they include what the fast path carried.
type RemovedFlow struct {
	Entry  *flow.Entry
	Reason RemovedReason
	At     time.Time // when it was removed: At.Sub(Entry.Installed) is its duration
}

// OnFlowsRemoved has fn called, without the daemon's lock held and in
// order, with the rules of a bridge that an idle or hard timeout or a
// delete (by any caller) removed and that have send_flow_rem
// (flow.FlagSendFlowRem). fn runs on the goroutine that removed them, or
// on one that was already telling: it may call the daemon, whose
// removals it is then told of once it returns, but should not block.
func (d *Daemon) OnFlowsRemoved(fn func(bridge string, removed []RemovedFlow)) {
	d.removed.mu.Lock()
	defer d.removed.mu.Unlock()
	d.removed.fns = append(d.removed.fns, fn)
}

// removals is what OnFlowsRemoved's functions are yet to be told. Changes
// queue under the daemon's lock, so the queue is in the order of the
// changes; it is told once the lock is released (Daemon.unlock), by one
// goroutine at a time, so that the functions see that order.
type removals struct {
	mu      sync.Mutex
	fns     []func(bridge string, removed []RemovedFlow)
	queue   []removedOnBridge
	telling bool // a goroutine is telling the queue
}

type removedOnBridge struct {
	bridge  string
	removed []RemovedFlow
}

// add queues the rules of gone, removed from b, that are to be told of.
// It runs under the daemon's lock, after b's new table is in use.
func (r *removals) add(b *vswitch.Bridge, gone []RemovedFlow) {
	var told []RemovedFlow
	for _, g := range gone {
		if g.Entry.Flags&flow.FlagSendFlowRem != 0 {
			told = append(told, g)
		}
	}
	r.mu.Lock()
	wanted := len(told) > 0 && len(r.fns) > 0
	r.mu.Unlock()
	if !wanted {
		return
	}
	// The fast path credits the entries it carried frames for since its
	// last sweep, those of rules no longer in the table included.
	b.SyncFastPath()
	r.mu.Lock()
	r.queue = append(r.queue, removedOnBridge{b.Name(), told})
	r.mu.Unlock()
}

// unlock releases the daemon's lock and tells what the changes made under
// it removed.
func (d *Daemon) unlock() {
	d.mu.Unlock()
	d.removed.tell()
}

// tell tells the functions what is queued, one goroutine at a time.
func (r *removals) tell() {
	r.mu.Lock()
	if r.telling {
		r.mu.Unlock()
		return // the teller takes ours in turn
	}
	r.telling = true
	for len(r.queue) > 0 {
		next, fns := r.queue[0], r.fns
		r.queue = r.queue[1:]
		r.mu.Unlock()
		for _, fn := range fns {
			fn(next.bridge, next.removed)
		}
		r.mu.Lock()
	}
	r.telling = false
	r.mu.Unlock()
}
