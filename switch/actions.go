package vswitch

import (
	"fmt"
	"time"

	"github.com/xswitch/xswitch/flow"
)

// The pipeline: a frame starts in table 0; the rule it meets there runs
// its actions, which may send it on to a later table (goto_table) or look
// it up in any table and come back (resubmit), as OVS's do. The frame's
// key is the pipeline's working state: pipeline actions write its
// registers, metadata and input port, header rewrites change it as they
// change the frame, and each lookup reads it, through the exact-match
// cache, in the table it names.

const (
	// MaxPipelineDepth and MaxResubmits are OVS's limits on one frame's
	// way through the tables (MAX_DEPTH, MAX_RESUBMITS): a rule that
	// resubmits to itself, or two that resubmit to each other, are cut
	// there and the frame dropped, never a hang.
	MaxPipelineDepth = 64
	MaxResubmits     = 4096
)

// frameRun is one frame's way through the pipeline.
type frameRun struct {
	table  *flow.Table
	inSlot uint16 // where it arrived: NORMAL learns it there
	frame  []byte
	bytes  int // its length on arrival, for the rules' counters
	now    int64
	// shared is set once an output has queued frame: from then on the
	// bytes belong to that output and a rewrite needs a copy. copied says
	// that frame is such a copy, in the copy pool.
	shared, copied bool
	resubmits      int
	// dropped says why the frame went nowhere, if something other than
	// its rules' actions chose that; sent, whether anything queued it.
	dropped dropReason
	sent    bool
}

// forwardFrame runs one frame through the pipeline from table 0; f.key
// holds its key.
func (f *forwarder) forwardFrame(table *flow.Table, inSlot uint16, frame []byte, now int64) {
	r := &f.run
	*r = frameRun{table: table, inSlot: inSlot, frame: frame, bytes: len(frame), now: now}
	f.runTable(r, 0)
	if !r.sent && !f.learnOnly {
		f.pipelineDrops.count(r.dropped)
	}
	r.table, r.frame = nil, nil
}

// runTable looks the frame up in the table its key names and runs the rule
// it meets. A miss ends that table's part: the frame goes no further from
// there. It returns false when the frame is to be dropped at once.
func (f *forwarder) runTable(r *frameRun, depth int) bool {
	if depth > MaxPipelineDepth {
		return f.cutLoop(r, "depth")
	}
	rule := f.cache.Lookup(r.table, &f.key)
	f.tableTally.count(f.key.Table, rule != nil)
	if rule == nil {
		r.dropped = dropTableMiss
		return true
	}
	f.hits.add(rule, r.bytes)
	return f.runActions(r, rule.Actions, depth)
}

// runActions runs one rule's actions on the frame.
func (f *forwarder) runActions(r *frameRun, actions []flow.Action, depth int) bool {
	for i := range actions {
		a := &actions[i]
		switch a.Type {
		case flow.ActOutput:
			// OpenFlow never sends a frame back where it came from unless
			// told so with IN_PORT. Output, IN_PORT and FLOOD leave out the
			// ports that the spanning tree does not let forward; ALL does
			// not, as in OVS.
			if slot, ok := f.slot(a.Port); ok && a.Port != f.key.InPort && f.forwards(slot) {
				frame := r.frame
				if a.Value != 0 && len(frame) > int(a.Value) {
					frame = frame[:a.Value] // output(port=N,max_len=M)
				}
				f.enqueue(slot, frame)
				r.shared, r.sent = true, true
			}
		case flow.ActInPort:
			if slot, ok := f.slot(f.key.InPort); ok && f.forwards(slot) {
				f.enqueue(slot, r.frame)
				r.shared, r.sent = true, true
			}
		case flow.ActNormal:
			r.frame = f.makeRoom(r.frame, r.copied, maxNormalCopies)
			if f.normal(r.inSlot, r.frame, r.now) {
				r.sent = true
			}
			r.shared = true
		case flow.ActFlood:
			r.sent = f.floodTo(f.flood, f.key.InPort, r.frame) || r.sent
			r.shared = true
		case flow.ActAll:
			r.sent = f.floodTo(f.live, f.key.InPort, r.frame) || r.sent
			r.shared = true
		case flow.ActGotoTable:
			f.key.Table = a.Table
			return f.runTable(r, depth+1)
		case flow.ActResubmit:
			if !f.resubmit(r, a, depth) {
				return false
			}
		case flow.ActLoad, flow.ActSetField, flow.ActMove, flow.ActWriteMetadata:
			a.ApplyToKey(&f.key)
		default:
			if !f.rewriteFrame(r, a) {
				return false
			}
		}
	}
	return true
}

// resubmit looks the frame up in another table, or as if from another
// port, runs what it finds and comes back, as OVS's resubmit does: the
// registers keep what that table wrote, the table and input port are
// restored.
func (f *forwarder) resubmit(r *frameRun, a *flow.Action, depth int) bool {
	if r.resubmits++; r.resubmits > MaxResubmits {
		return f.cutLoop(r, "resubmits")
	}
	table, inPort := f.key.Table, f.key.InPort
	if a.Table != flow.ThisTable {
		f.key.Table = a.Table
	}
	if a.Port != 0 {
		f.key.InPort = a.Port
	}
	ok := f.runTable(r, depth+1)
	f.key.Table, f.key.InPort = table, inPort
	return ok
}

// cutLoop drops a frame that went too deep or resubmitted too often, and
// says so once per bridge: a loop in the tables repeats for every frame.
func (f *forwarder) cutLoop(r *frameRun, limit string) bool {
	r.dropped = dropLoop
	if f.loopLogged.CompareAndSwap(false, true) {
		what := fmt.Sprintf("deeper than %d tables", MaxPipelineDepth)
		if limit == "resubmits" {
			what = fmt.Sprintf("more than %d resubmits", MaxResubmits)
		}
		f.log.Warn("a frame's way through the tables was cut: the rules loop; such frames are dropped and counted as loop drops (logged once)",
			"limit", what, "table", f.key.Table, "in_port", f.key.InPort)
	}
	return false
}

// rewriteFrame applies a header rewrite to the frame, and to its key so
// that later tables see it. It returns false when the frame is dropped.
func (f *forwarder) rewriteFrame(r *frameRun, a *flow.Action) bool {
	if r.shared {
		if !f.ownCopy(r) {
			return false
		}
	}
	frame, keep := rewrite(a, r.frame)
	if !keep && !r.copied && (a.Type == flow.ActPushVLAN || a.Type == flow.ActSetVLANVID) {
		// No room before the next frame's bytes for the tag: a copy has it.
		if !f.ownCopy(r) {
			return false
		}
		frame, keep = rewrite(a, r.frame)
	}
	if !keep {
		r.dropped = dropTTL
		if a.Type != flow.ActDecTTL {
			r.dropped = dropNoCopy
		}
		return false
	}
	r.frame = frame
	a.ApplyToKey(&f.key)
	return true
}

// ownCopy gives the run a private copy of its frame, in the copy pool.
func (f *forwarder) ownCopy(r *frameRun) bool {
	frame := f.makeRoom(r.frame, r.copied, 1)
	if frame = f.copies.clone(frame); frame == nil {
		r.dropped = dropNoCopy // longer than any frame a port hands over
		return false
	}
	r.frame, r.shared, r.copied = frame, false, true
	return true
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
