package vswitch

import (
	"time"

	"github.com/xswitch/xswitch/flow"
)

// execute runs a rule's actions on one frame that arrived on inSlot.
func (f *forwarder) execute(inSlot uint16, frame []byte, actions []flow.Action, now int64) {
	// shared is set once an output has queued frame: from then on the
	// bytes belong to that output and a rewrite needs a copy.
	shared := false
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
				if frame = f.copies.clone(frame); frame == nil {
					return // out of copies for this batch: drop the rest
				}
				shared = false
			}
			var keep bool
			if frame, keep = rewrite(a, frame); !keep {
				return
			}
		}
	}
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

// copyPool holds the buffers for frames that must be copied within one
// batch, allocated once.
type copyPool struct {
	bufs [][]byte
	used int
}

// maxFrameCopy fits any frame a UMEM frame holds plus VLAN tags pushed onto it.
const maxFrameCopy = 4096 + 64

func newCopyPool(n int) copyPool {
	backing := make([]byte, n*maxFrameCopy)
	p := copyPool{bufs: make([][]byte, n)}
	for i := range p.bufs {
		p.bufs[i] = backing[i*maxFrameCopy : i*maxFrameCopy : (i+1)*maxFrameCopy]
	}
	return p
}

// clone copies frame into a free buffer, or returns nil if there is none.
func (p *copyPool) clone(frame []byte) []byte {
	if p.used == len(p.bufs) || len(frame) > maxFrameCopy {
		return nil
	}
	buf := append(p.bufs[p.used][:0], frame...)
	p.used++
	return buf
}

func (p *copyPool) reset() { p.used = 0 }
