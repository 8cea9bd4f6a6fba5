package vswitch

import (
	"time"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/header"
	"github.com/xswitch/xswitch/port"
)

// receiver is what a thread keeps of the batch it receives: the frame's
// key and the extractor that reads it, whether the input port only
// learns, and where the spanning tree's BPDUs go.
type receiver struct {
	extractor *flow.Extractor
	key       flow.Key
	// learnOnly is set for a batch whose input port is learning: NORMAL
	// learns from its frames, and nothing is sent.
	learnOnly bool
	// bpdus is where BPDUs go while the bridge runs a spanning tree
	// (stp.go); nil, they are frames like any other.
	bpdus *bpduQueue
}

// tunnelDemux is the tunnels' demultiplexing: the tunnel of a frame
// decapsulated on an underlay, the remotes some tunnel has, and the
// frames of an underlay's batch while they wait for their tunnel's turn.
type tunnelDemux struct {
	demux     map[demuxKey]uint16
	remotes   map[remoteKey]bool
	lastClaim lastClaim
	// A batch's decapsulated frames, their outer headers' meaning and
	// their tunnels; and one tunnel's of them, when there are several.
	tunFrames     []port.Frame
	tunMetas      []port.TunnelMeta
	tunSlots      []uint16
	tunBatch      []port.Frame
	tunBatchMetas []port.TunnelMeta
}

type rxQueue struct {
	slot uint16
	q    port.RxQueue
}

// forwardBatch receives one batch from q and forwards it. It reports whether
// there was anything to do.
func (f *forwarder) forwardBatch(rx rxQueue) bool {
	n := rx.q.Receive(f.frames)
	if n == 0 {
		return false
	}
	frames := f.frames[:n]
	if f.ports[rx.slot].underlay != nil {
		f.forwardUnderlay(rx.slot, frames)
	} else {
		f.forwardFrom(rx.slot, frames, nil)
	}
	rx.q.Release(frames)
	return true
}

// forwardFrom forwards frames that arrived on the port in slot; tunnel
// holds what the outer headers of each said when the port is a tunnel.
func (f *forwarder) forwardFrom(slot uint16, frames []port.Frame, tunnel []port.TunnelMeta) {
	wall := time.Now()
	now := int64(wall.Sub(f.epoch))
	var table *flow.Table
	if f.fp != nil {
		f.fpView = f.fp.view.Load() // its table: see fastpath.go
		table = f.fpView.table
	} else {
		table = f.flows.Load()
	}
	in := f.ports[slot]
	state := f.stp[slot]
	f.learnOnly = state == stpLearning
	var rxBytes, malformed uint64
	for i := range frames {
		data := frames[i].Data
		rxBytes += uint64(len(data))
		// Too short to switch, or a multicast source address (which no
		// real station has, and learning it would poison the MAC table):
		// count and drop.
		if len(data) < header.EthernetLen || isMulticast(data[6:12]) {
			malformed++
			continue
		}
		// The spanning tree takes its BPDUs whatever the port's state, and
		// a port that is not forwarding passes nothing else on.
		if f.bpdus != nil && isBPDU(data) {
			f.bpdus.push(in, data)
			continue
		}
		if state != stpForwarding {
			f.drops.count(dropSTP)
			if state == stpDiscarding {
				continue
			}
		}
		// Headers that lie about their lengths: count and drop.
		if !f.extractor.Extract(data, in.ofport, &f.key) {
			malformed++
			continue
		}
		if tunnel != nil {
			m := &tunnel[i]
			f.key.TunID, f.key.TunSrc, f.key.TunDst = uint64(m.ID), m.Src, m.Dst
		}
		f.forwardFrame(table, slot, data, now)
	}
	// The batch's end, in the order its frames move on: they leave, their
	// packet-ins go, their counts go up, and the fast path takes in the
	// decisions it was offered, after the transmit, so that the frames
	// that made the entries do not wait for their installation.
	f.transmitGroups()
	f.notifyPacketIns()
	f.countBatch(in, wall, uint64(len(frames)), rxBytes, malformed)
	if f.fp != nil {
		f.fastPathBatch(now)
	}
	f.copies.reset()
}

// forwardFrame forwards one frame by its decision under table; f.key
// holds its key and f.extractor its layout. The fast path is offered the
// decision before it runs (its entry is installed at the batch's end),
// and the batch's counts go up at the batch's end.
func (f *forwarder) forwardFrame(table *flow.Table, inSlot uint16, frame []byte, now int64) {
	d := f.decisionFor(table, now)
	f.count(d, len(frame))
	if f.fp != nil && !f.learnOnly && f.ports[inSlot].fastPathIn.Load() {
		f.offerFastPath(d, inSlot, now)
	}
	r := &f.run
	*r = frameRun{inSlot: inSlot, table: table, frame: frame, layout: f.extractor.Layout(), now: now, dropped: d.dropped,
		controllers: d.controllers, cts: d.cts, tunnel: port.TunnelTx{ID: uint32(f.key.TunID), Hash: d.flowHash}}
	f.execute(r, d.actions)
	f.connPending = pendingConn{}
	if !r.sent && !f.learnOnly {
		f.drops.count(r.dropped)
	}
	r.frame, r.controllers = nil, nil
}

// demuxKey finds the tunnel a decapsulated frame belongs to: its
// underlay's slot, its remote, the UDP port it came to and its VNI, or
// anyVNI for a tunnel whose key is flow.
type demuxKey struct {
	underlay uint16
	dstPort  uint16
	remote   [4]byte
	vni      uint32
}

// anyVNI is the VNI of a demuxKey of a tunnel that receives them all: no
// VNI is this large.
const anyVNI = 1 << 24

// remoteKey says that some tunnel over an underlay has a remote.
type remoteKey struct {
	underlay uint16
	remote   [4]byte
}

// rebuildDemux derives from the ports the tables that find a
// decapsulated frame's tunnel. It runs on the forwarder.
func (f *forwarder) rebuildDemux() {
	clear(f.demux)
	clear(f.remotes)
	f.lastClaim = lastClaim{}
	for slot, p := range f.ports {
		if p == nil || p.tunnel == nil {
			continue
		}
		ep := p.tunnel.Endpoint()
		k := demuxKey{underlay: p.underlaySlot, dstPort: ep.DstPort, remote: ep.Remote, vni: ep.Key}
		if ep.KeyFlow {
			k.vni = anyVNI
		}
		f.demux[k] = uint16(slot)
		f.remotes[remoteKey{underlay: p.underlaySlot, remote: ep.Remote}] = true
	}
}

// lastClaim is the last frame's tunnel: frames come in trains of one
// tunnel and VNI, and comparing keys costs less than a map lookup.
type lastClaim struct {
	key   demuxKey
	local [4]byte // the frame's destination
	slot  uint16
	valid bool
}

// claim finds the tunnel a frame decapsulated on underlay uslot belongs
// to: the one with its VNI, else one that takes any.
func (f *forwarder) claim(uslot uint16, m *port.TunnelMeta) (slot uint16, ok bool) {
	k := demuxKey{underlay: uslot, dstPort: m.DstPort, remote: m.Src, vni: m.ID}
	if c := &f.lastClaim; c.valid && c.key == k && c.local == m.Dst {
		return c.slot, true
	}
	if slot, ok = f.demux[k]; !ok {
		k.vni = anyVNI
		slot, ok = f.demux[k]
		k.vni = m.ID
	}
	if !ok {
		return 0, false
	}
	if local := f.ports[slot].tunnel.Endpoint().Local; local != [4]byte{} && local != m.Dst {
		return 0, false
	}
	f.lastClaim = lastClaim{key: k, local: m.Dst, slot: slot, valid: true}
	return slot, true
}

// forwardUnderlay forwards a batch received on underlay uslot: each
// frame decapsulated and claimed, then each tunnel's frames as a batch
// from it, in the order they came.
func (f *forwarder) forwardUnderlay(uslot uint16, frames []port.Frame) {
	u := f.ports[uslot].underlay
	inner, metas, slots := f.tunFrames[:0], f.tunMetas[:0], f.tunSlots[:0]
	var unknownRemote, wrongKey uint64
	mixed := false
	for i := range frames {
		data, meta, ok := u.Decapsulate(frames[i].Data)
		if !ok {
			continue
		}
		slot, ok := f.claim(uslot, &meta)
		if !ok {
			if f.remotes[remoteKey{underlay: uslot, remote: meta.Src}] {
				wrongKey++
			} else {
				unknownRemote++
			}
			continue
		}
		mixed = mixed || len(slots) > 0 && slots[0] != slot
		inner = append(inner, port.Frame{Data: data, Handle: frames[i].Handle})
		metas, slots = append(metas, meta), append(slots, slot)
	}
	if unknownRemote > 0 {
		u.Unclaimed(unknownRemote, true)
	}
	if wrongKey > 0 {
		u.Unclaimed(wrongKey, false)
	}
	if !mixed {
		if len(inner) > 0 {
			f.forwardFrom(slots[0], inner, metas)
		}
		return
	}
	// Several tunnels' frames: each tunnel's, in order, in the order of
	// their first frames.
	for first := range slots {
		slot := slots[first]
		if slot == noSlot {
			continue
		}
		batch, batchMetas := f.tunBatch[:0], f.tunBatchMetas[:0]
		for i := first; i < len(slots); i++ {
			if slots[i] == slot {
				batch, batchMetas = append(batch, inner[i]), append(batchMetas, metas[i])
				slots[i] = noSlot
			}
		}
		f.forwardFrom(slot, batch, batchMetas)
	}
}
