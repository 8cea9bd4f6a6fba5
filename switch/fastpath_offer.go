package vswitch

import (
	"github.com/xswitch/xswitch/conntrack"
	"github.com/xswitch/xswitch/datapath"
	"github.com/xswitch/xswitch/flow"
)

// A frame's decision offered to the fast path: what its entry is, and
// whether to queue it for the batch's end.

// fpOffer is a decision's state towards the fast path.
type fpOffer struct {
	state      int8 // 0: not worked out; 1: the kernel can carry it; -1: it cannot
	entry      datapath.Entry
	generation uint64 // queued under it,
	at         int64  // at that time
	// epoch is fastPath.offerEpoch when the state was worked out.
	epoch uint64
	// conn is the connection the state is of, for a decision with ct(),
	// seen one way or established (fastpath_conntrack.go).
	conn       conntrack.Handle
	connOneWay bool
	// frames counts conn's frames that reached user space so, up to
	// carryAfter.
	frames uint8
}

// entryKey is the key of the fast path's entry for a flow with headers h
// in the batch's view: h under its mask, in its generation.
func (f *forwarder) entryKey(h *flow.Headers) datapath.Key {
	return datapath.NewKey(h, f.fpView.mask, f.fpView.generation)
}

// offerOf is d's state towards the fast path, worked out again after a
// change of what entries are (offerEpoch).
func (f *forwarder) offerOf(d *decision) *fpOffer {
	if d.offer == nil {
		d.offer = new(fpOffer)
	}
	o := d.offer
	if epoch := f.fp.offerEpoch.Load(); o.epoch != epoch {
		o.state, o.epoch = 0, epoch
	}
	return o
}

// offerFastPath queues d's entry for installation if the kernel can carry
// it and it was not queued lately in the batch's generation. It runs for
// frames that reached user space, before d's actions run on them.
func (f *forwarder) offerFastPath(d *decision, inSlot uint16, now int64) {
	if len(d.cts) > 0 {
		// Its entry is its frame's connection's, once the tracker
		// judged it (offerConnection).
		f.connPending = pendingConn{d: d, inSlot: inSlot}
		return
	}
	o, gen := f.offerOf(d), f.fpView.generation
	if o.state < 0 || o.generation == gen && now-o.at < int64(reofferAfter) {
		return
	}
	if o.state == 0 {
		o.state = -1
		if e, why := f.fastPathEntry(d, &f.key.Headers, nil); why == "" {
			o.state, o.entry = 1, e
		}
		if o.state < 0 {
			return
		}
	}
	o.generation, o.at = gen, now
	f.queueEntry(o.entry, inSlot, now, d)
}
