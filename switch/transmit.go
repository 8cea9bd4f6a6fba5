package vswitch

import "github.com/xswitch/xswitch/port"

// transmitter holds what a batch sends until its end: a group of frames
// for each port, and the slots whose group holds some.
type transmitter struct {
	groups  []txGroup // by slot
	pending []uint16
}

// txGroup collects the frames of one batch bound for one port, and for a
// tunnel how each leaves by it.
type txGroup struct {
	frames [][]byte
	tunnel []port.TunnelTx
}

// floodTo sends frame to every port of slots but inPort, the frame's
// input port as the pipeline sees it, and reports whether there was one.
func (f *forwarder) floodTo(slots []uint16, inPort uint16, frame []byte) (sent bool) {
	for _, out := range slots {
		if f.ports[out].ofport != inPort {
			f.enqueue(out, frame)
			sent = true
		}
	}
	return sent
}

func (f *forwarder) enqueue(slot uint16, frame []byte) {
	if f.learnOnly {
		return // the input port is learning: it passes nothing on
	}
	g := &f.groups[slot]
	if len(g.frames) == cap(g.frames) {
		// Rules may send a frame to one port more than once
		// (output:2,output:2): rather than grow the group, send what it
		// holds now.
		f.transmitGroups()
	}
	if len(g.frames) == 0 {
		f.pending = append(f.pending, slot)
	}
	g.frames = append(g.frames, frame)
	if g.tunnel != nil {
		g.tunnel = append(g.tunnel, f.run.tunnel)
	}
}

func (f *forwarder) transmitGroups() {
	for _, slot := range f.pending {
		g := &f.groups[slot]
		out := f.ports[slot]
		var sent int
		if out.tunnel != nil {
			sent = out.tunnel.TransmitTunneled(g.frames, g.tunnel)
			g.tunnel = g.tunnel[:0]
		} else {
			sent = out.Transmit(g.frames)
		}
		var bytes uint64
		for _, fr := range g.frames[:sent] {
			bytes += uint64(len(fr))
		}
		out.counters.txPackets.Add(uint64(sent))
		out.counters.txBytes.Add(bytes)
		if dropped := len(g.frames) - sent; dropped > 0 {
			out.counters.txDropped.Add(uint64(dropped))
		}
		clear(g.frames)
		g.frames = g.frames[:0]
	}
	f.pending = f.pending[:0]
}
