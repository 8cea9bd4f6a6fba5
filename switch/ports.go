package vswitch

import (
	"github.com/xswitch/xswitch/port"
	"golang.org/x/sys/unix"
)

// view is what a forwarding thread forwards by besides the flow table:
// its bridge's ports, the MAC table and the bridge's settings. The thread
// changes it between batches only (control requests), so what reads it
// during a batch (translation, execution) sees one state; translation
// reads it and nothing else of the thread.
type view struct {
	portTable
	fdb *macTable
	// forwardBPDU makes NORMAL forward frames to reserved group addresses
	// (reserved.go) instead of dropping them.
	forwardBPDU bool
	// failOpen forwards every frame as NORMAL, whatever the tables say
	// (Bridge.SetFailOpen).
	failOpen bool
	// liveness counts the changes of whether ports are live, as the
	// buckets of groups see them: their links and spanning tree states
	// (groups.go). A decision that read none made since holds.
	liveness uint64
}

// portTable is the bridge's ports by slot, as a thread has them.
type portTable struct {
	ports  []*bridgePort // by slot; nil for a free slot
	live   []uint16      // slots in use: where ALL sends
	flood  []uint16      // the live slots that forward: where FLOOD and NORMAL flood
	slotOf []int32       // by OpenFlow port number: its slot, or -1
	// stp is each port's spanning tree state, by slot (stp.go).
	stp []stpState
	// stormLimit is each port's storm limit in frames/s, by slot; storm
	// holds this thread's token bucket for it (storm.go).
	stormLimit []uint32
	storm      []tokenBucket
}

// portLive reports whether OpenFlow port ofport is live, as the buckets
// of groups that watch it see it: the bridge has it, its link is up, and
// the spanning tree lets it forward.
func (v *view) portLive(ofport uint16) bool {
	slot, ok := v.slot(ofport)
	return ok && v.forwards(slot) && !v.ports[slot].linkDown.Load()
}

// forwards reports whether the spanning tree lets slot's port forward.
func (pt *portTable) forwards(slot uint16) bool { return pt.stp[slot] == stpForwarding }

// addPort puts p in the first free slot and returns it. It runs on the
// forwarder. Every thread of a bridge has the same slots, so they all
// choose the same one, and the bridge records it in p once they have.
func (f *forwarder) addPort(p *bridgePort) uint16 {
	slot := len(f.ports)
	for i, q := range f.ports {
		if q == nil {
			slot = i
			break
		}
	}
	if slot == len(f.ports) {
		f.ports = append(f.ports, nil)
		f.groups = append(f.groups, txGroup{})
		f.stormLimit = append(f.stormLimit, 0)
		f.storm = append(f.storm, tokenBucket{})
		f.stp = append(f.stp, stpForwarding)
	}
	f.ports[slot] = p
	f.groups[slot] = txGroup{frames: make([][]byte, 0, f.batchSize)}
	if p.tunnel != nil {
		f.groups[slot].tunnel = make([]port.TunnelTx, 0, f.batchSize)
	}
	f.rebuild()
	return uint16(slot)
}

// removePort forgets p and every address learned on it. It runs on the
// forwarder; afterwards the forwarder holds no reference to p.
func (f *forwarder) removePort(p *bridgePort) {
	f.ports[p.slot] = nil
	f.groups[p.slot] = txGroup{}
	f.stormLimit[p.slot], f.storm[p.slot] = 0, tokenBucket{}
	f.stp[p.slot] = stpForwarding
	f.fdb.flushPort(p.slot)
	f.rebuild()
}

// rebuild derives the flood lists, queue list and poll set from f.ports.
// The bridge's queues, in slot and queue order, are dealt out among its
// threads in turn; every thread has the same ports, so they agree.
func (f *forwarder) rebuild() {
	// Decisions name ports by slot and resolve NORMAL by the ports' VLANs.
	f.forgetDecisions()
	n := 0
	f.live = f.live[:0]
	f.slotOf = f.slotOf[:0]
	f.queues = f.queues[:0]
	f.pollFds = append(f.pollFds[:0], unix.PollFd{Fd: int32(f.wakeFd), Events: unix.POLLIN})
	for slot, p := range f.ports {
		if p == nil {
			continue
		}
		if p.underlay == nil { // an underlay is no OpenFlow port
			f.live = append(f.live, uint16(slot))
			for int(p.ofport) >= len(f.slotOf) {
				f.slotOf = append(f.slotOf, -1)
			}
			f.slotOf[p.ofport] = int32(slot)
		}
		for _, q := range p.RxQueues() {
			if n%f.threads == f.thread {
				f.queues = append(f.queues, rxQueue{slot: uint16(slot), q: q})
				f.pollFds = append(f.pollFds, unix.PollFd{Fd: int32(q.Fd()), Events: unix.POLLIN})
			}
			n++
		}
	}
	f.rebuildFlood()
	f.rebuildDemux()
	f.shareStormLimits()
}

// rebuildFlood derives the ports that FLOOD and NORMAL flood to: the live
// ones that forward.
func (f *forwarder) rebuildFlood() {
	f.flood = f.flood[:0]
	for _, slot := range f.live {
		if f.forwards(slot) {
			f.flood = append(f.flood, slot)
		}
	}
}

// slot returns the slot of OpenFlow port ofport, if the bridge has it.
func (pt *portTable) slot(ofport uint16) (uint16, bool) {
	if int(ofport) >= len(pt.slotOf) || pt.slotOf[ofport] < 0 {
		return 0, false
	}
	return uint16(pt.slotOf[ofport]), true
}
