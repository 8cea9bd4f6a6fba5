package vswitch

import (
	"time"

	"github.com/xswitch/xswitch/flow"
)

// execute runs a rule's actions on one frame that arrived on inSlot.
func (f *forwarder) execute(inSlot uint16, frame []byte, actions []flow.Action, now int64) {
	// shared is set once an output has queued frame: from then on the
	// bytes belong to that output and a rewrite needs a copy. copied says
	// that frame is such a copy, in the copy pool.
	shared, copied := false, false
	for i := range actions {
		a := &actions[i]
		switch a.Type {
		case flow.ActOutput:
			// OpenFlow never sends a frame back where it came from unless
			// told so with IN_PORT. Output, IN_PORT and FLOOD leave out the
			// ports that the spanning tree does not let forward; ALL does
			// not, as in OVS.
			if slot, ok := f.slot(a.Port); ok && slot != inSlot && f.forwards(slot) {
				f.enqueue(slot, frame)
				shared = true
			}
		case flow.ActInPort:
			if f.forwards(inSlot) {
				f.enqueue(inSlot, frame)
				shared = true
			}
		case flow.ActNormal:
			frame = f.makeRoom(frame, copied, maxNormalCopies)
			f.normal(inSlot, frame, now)
			shared = true
		case flow.ActFlood:
			f.floodTo(f.flood, inSlot, frame)
			shared = true
		case flow.ActAll:
			f.floodTo(f.live, inSlot, frame)
			shared = true
		default:
			if shared {
				frame = f.makeRoom(frame, copied, 1)
				if frame = f.copies.clone(frame); frame == nil {
					return // longer than any frame a port hands over: drop it
				}
				shared, copied = false, true
			}
			var keep bool
			if frame, keep = rewrite(a, frame); !keep {
				return
			}
		}
	}
}

// makeRoom sees to it that n copies of frame fit in the copy pool. When
// they do not, it transmits the groups queued so far, which copies their
// frames out, and starts the pool over: a batch of jumbo frames costs an
// extra transmit now and then, never a frame. A frame that is itself a
// copy moves to the pool's start first, and makeRoom returns where it is.
// Between frames, and before NORMAL makes its forms, no other copy is
// still to be used, so starting over is safe.
func (f *forwarder) makeRoom(frame []byte, copied bool, n int) []byte {
	if f.copies.fits(n, len(frame)) {
		return frame
	}
	f.transmitGroups()
	f.copies.reset()
	if copied {
		frame = f.copies.clone(frame)
	}
	return frame
}

// rewrite applies one header-changing action. It returns the frame, which
// a VLAN push or pop moves, and false when the frame must be dropped.
func rewrite(a *flow.Action, frame []byte) ([]byte, bool) {
	switch a.Type {
	case flow.ActSetDlSrc:
		setDlSrc(frame, a.MAC)
	case flow.ActSetDlDst:
		setDlDst(frame, a.MAC)
	case flow.ActSetNwSrc:
		setNwSrc(frame, a.IPv4)
	case flow.ActSetNwDst:
		setNwDst(frame, a.IPv4)
	case flow.ActSetTpSrc:
		setTpSrc(frame, a.Value)
	case flow.ActSetTpDst:
		setTpDst(frame, a.Value)
	case flow.ActDecTTL:
		return frame, decTTL(frame)
	case flow.ActStripVLAN:
		return stripVLAN(frame), true
	case flow.ActPushVLAN:
		return pushVLAN(frame, a.Value)
	case flow.ActSetVLANVID:
		return setVLANVID(frame, a.Value)
	}
	return frame, true
}

// slot returns the slot of OpenFlow port ofport, if the bridge has it.
func (f *forwarder) slot(ofport uint16) (uint16, bool) {
	if int(ofport) >= len(f.slotOf) || f.slotOf[ofport] < 0 {
		return 0, false
	}
	return uint16(f.slotOf[ofport]), true
}

// ruleHits gathers a batch's per-rule counts so that each rule's shared
// counters are updated once per batch, not once per frame. A batch rarely
// hits more than a few rules; past len(slots) distinct ones it flushes early.
type ruleHits struct {
	n     int
	slots [16]struct {
		rule           *flow.Entry
		packets, bytes uint64
	}
}

func (h *ruleHits) add(rule *flow.Entry, bytes int) {
	for i := range h.n {
		if s := &h.slots[i]; s.rule == rule {
			s.packets++
			s.bytes += uint64(bytes)
			return
		}
	}
	if h.n == len(h.slots) {
		h.flush(time.Now())
	}
	h.slots[h.n].rule, h.slots[h.n].packets, h.slots[h.n].bytes = rule, 1, uint64(bytes)
	h.n++
}

func (h *ruleHits) flush(now time.Time) {
	for i := range h.n {
		s := &h.slots[i]
		s.rule.Hit(s.packets, s.bytes, now)
		s.rule = nil
	}
	h.n = 0
}

// copyPool holds the copies of frames made within one batch, carved one
// after the other out of one buffer allocated once, each with room to grow
// by pushed tags. Sized by bytes rather than by copies, it holds NORMAL's
// two forms of every frame of a full batch of 4 KiB frames, as many
// copies of small frames as they take, and far fewer jumbo ones, for which
// makeRoom starts it over mid-batch: memory stays what a batch of ordinary
// frames needs, rather than a batch of the longest.
type copyPool struct {
	buf  []byte
	used int
}

const (
	// copyRoom is the room past each copy for tags a rewrite pushes.
	copyRoom = 64
	// maxCopyFrame is the longest frame a port hands the switch: the
	// largest MTU, its Ethernet header and two VLAN tags.
	maxCopyFrame = 65535 + ethHeaderLen + 2*vlanTagLen
	// maxNormalCopies is how many copies NORMAL makes of one frame: its
	// tagged and untagged forms (vlan.go).
	maxNormalCopies = 2
)

// newCopyPool sizes the pool for NORMAL's forms of batch frames of 4 KiB,
// and at least for a frame as long as any plus NORMAL's forms of it,
// which is the most makeRoom asks of an empty pool.
func newCopyPool(batch int) copyPool {
	size := max(maxNormalCopies*batch*(4096+copyRoom), (1+maxNormalCopies)*(maxCopyFrame+copyRoom))
	return copyPool{buf: make([]byte, size)}
}

// fits reports whether n more copies of a frame of length bytes fit.
func (p *copyPool) fits(n, length int) bool {
	return len(p.buf)-p.used >= n*(length+copyRoom)
}

// clone copies frame into the pool, or returns nil if it does not fit.
// frame may be an earlier copy, even one that overlaps where the new copy
// goes after reset.
func (p *copyPool) clone(frame []byte) []byte {
	end := p.used + len(frame) + copyRoom
	if end > len(p.buf) {
		return nil
	}
	c := p.buf[p.used:end:end]
	p.used = end
	return c[:copy(c, frame)]
}

func (p *copyPool) reset() { p.used = 0 }
