package vswitch

import (
	"github.com/xswitch/xswitch/conntrack"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/header"
	"github.com/xswitch/xswitch/port"
)

// executor is a thread's state for running decisions: the frame under
// way, and the copies of frames the batch made.
type executor struct {
	run    frameRun
	copies copyPool
	// saved is the frame as each clone bracket open in run found it.
	saved  [maxCloneNest]savedRun
	meters *meterBank // the bridge's
	ct     ctFrame
}

// frameRun is one frame's run of its decision.
type frameRun struct {
	inSlot uint16      // where it arrived: NORMAL learns it there
	table  *flow.Table // the version it is forwarded by
	frame  []byte
	layout flow.Layout // where frame's headers are, as extracted
	now    int64
	// shared is set once an output has queued frame: from then on the
	// bytes belong to that output and a rewrite needs a copy. copied says
	// that frame is such a copy, in the copy pool.
	shared, copied bool
	// dropped says why the frame went nowhere, if something other than
	// its rules' actions chose that; sent, whether anything queued it.
	dropped dropReason
	sent    bool
	// controllers are the decision's resolved CONTROLLER actions, and
	// cts its ct() actions.
	controllers []controllerSpec
	cts         []ctStep
	// tracked says the frame met a ct() (the executor's ct.packet is
	// its), and recircs how many recirculations it went through.
	tracked bool
	recircs uint8
	// tunnel is how the frame leaves by a tunnel port, as far as the
	// actions run so far say.
	tunnel port.TunnelTx
	// clones counts the clone brackets open (groups.go), whose frames
	// the executor saved.
	clones int
}

// savedRun is what a clone bracket restores, and the index of its end.
type savedRun struct {
	frame  []byte
	layout flow.Layout
	copied bool
	tunnel port.TunnelTx
	end    uint16
}

// execute runs a decision's actions on the frame.
func (f *forwarder) execute(r *frameRun, actions []flow.Action) {
	// The clone brackets of actions are those opened from here on: a
	// recirculation's actions run inside the fork of the ct() before
	// them, whose bracket is the caller's.
	base := r.clones
	for i := 0; i < len(actions); i++ {
		a := &actions[i]
		switch a.Type {
		case flow.ActOutput, flow.ActInPort:
			// Output and IN_PORT leave out the ports that the spanning
			// tree does not let forward, as FLOOD does; ALL does not, as
			// in OVS.
			slot, ok := f.slot(a.Port)
			if !ok {
				// A port that is down, or not in the bridge at all: the
				// frame goes nowhere for want of it, if for nothing else.
				if r.dropped == dropRule {
					r.dropped = dropPortDown
				}
				continue
			}
			if f.forwards(slot) {
				frame := r.frame
				if a.Value != 0 && len(frame) > int(a.Value) {
					frame = frame[:a.Value] // output(port=N,max_len=M)
				}
				f.enqueue(slot, frame)
				r.shared, r.sent = true, true
			}
		case flow.ActNormal:
			r.frame = f.makeRoom(r.frame, r.copied, maxNormalCopies)
			if f.normal(r.inSlot, r.frame, r.now) {
				r.sent = true
			}
			r.shared = true
		case actNormalDrop:
			f.normalDropped(normalDrop(a.Value))
		case actNormalTo, actNormalFlood:
			if f.learnOnly || a.Type == actNormalTo && !f.forwards(a.Port) {
				continue
			}
			r.frame = f.makeRoom(r.frame, r.copied, maxNormalCopies)
			r.sent = f.normalResolved(a, r.frame, r.now) || r.sent
			r.shared = true
		case flow.ActFlood:
			r.sent = f.floodTo(f.flood, a.Port, r.frame) || r.sent
			r.shared = true
		case flow.ActAll:
			r.sent = f.floodTo(f.live, a.Port, r.frame) || r.sent
			r.shared = true
		case actSetTunnelID:
			r.tunnel.ID = uint32(a.Imm.Lo)
		case actMeter:
			if !f.meterFrame(r, a) {
				return
			}
		case actConntrack:
			if !f.runConntrack(r, &r.cts[a.Port], i == len(actions)-1) {
				return
			}
		case flow.ActCTClear:
			f.ct.packet.CT, r.tracked = conntrack.CT{}, true
		case actToController:
			// Sent, as far as the pipeline's drops go, even if the
			// packet-in is lost: that is counted as such.
			if !f.learnOnly {
				f.toController(&r.controllers[a.Port], r.frame, r.now)
				r.sent = true
			}
		case actCloneStart:
			if r.clones == 0 {
				// The copies the bracket may make must not start the pool
				// over while it holds the frame to go on with (makeRoom).
				r.frame = f.makeRoom(r.frame, r.copied, int(a.Port))
			}
			f.openBracket(r, a.Value)
		case actCloneEnd:
			f.closeBracket(r, r.clones-1)
		default:
			if !f.rewriteFrame(r, a) {
				if r.clones == base {
					return
				}
				i = int(f.saved[r.clones-1].end) - 1 // the bracket's copy is dropped: on from its end
			}
		}
	}
}

// openBracket saves the frame as it is, for what follows the bracket
// (whose end is at index end of the actions), and marks it shared: what
// the bracket rewrites, it rewrites in a copy.
func (f *forwarder) openBracket(r *frameRun, end uint16) {
	f.saved[r.clones] = savedRun{frame: r.frame, layout: r.layout, copied: r.copied, tunnel: r.tunnel, end: end}
	r.clones++
	r.shared = true
}

// closeBracket gives the frame back as bracket at found it, and closes
// it and any opened within it.
func (f *forwarder) closeBracket(r *frameRun, at int) {
	r.clones = at
	c := &f.saved[at]
	r.frame, r.layout, r.copied, r.tunnel, r.shared = c.frame, c.layout, c.copied, c.tunnel, true
}

// logLoop says, once per bridge, that a translation was cut at the
// pipeline's limits: a loop in the tables repeats for every flow.
func (f *forwarder) logLoop(limit string) {
	if f.loopLogged.CompareAndSwap(false, true) {
		f.log.Warn("a frame's way through the tables was cut: the rules loop; such frames are dropped and counted as loop drops (logged once)",
			"limit", limit, "in_port", f.key.InPort)
	}
}

// rewriteFrame applies a header rewrite to the frame. It returns false
// when the frame is dropped.
func (f *forwarder) rewriteFrame(r *frameRun, a *flow.Action) bool {
	if r.shared {
		if !f.ownCopy(r) {
			return false
		}
	}
	frame, keep := rewrite(a, r.frame, &r.layout)
	if !keep && !r.copied && (a.Type == flow.ActPushVLAN || a.Type == flow.ActSetVLANVID || a.Type == flow.ActSetVLANPCP ||
		a.Type == flow.ActPushMPLS) {
		// No room before the next frame's bytes for the tag or the
		// label: a copy has it.
		if !f.ownCopy(r) {
			return false
		}
		frame, keep = rewrite(a, r.frame, &r.layout)
	}
	if !keep {
		r.dropped = dropTTL
		if a.Type != flow.ActDecTTL {
			r.dropped = dropNoCopy
		}
		return false
	}
	r.frame = frame
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
	if f.copies.fits(n, len(frame)) || f.run.clones > 0 {
		// Inside a clone bracket the frames it restores may be copies:
		// the pool never starts over there, and a copy that does not fit
		// is not made (the bracket reserved room for its copies).
		return frame
	}
	f.transmitGroups()
	f.copies.reset()
	if copied {
		frame = f.copies.clone(frame)
	}
	return frame
}

// rewrite applies one header-changing action to the frame whose headers
// are where l says, and moves l with them. It returns the frame, which a
// push or pop makes longer or shorter, and false when the frame must be
// dropped.
func rewrite(a *flow.Action, frame []byte, l *flow.Layout) ([]byte, bool) {
	switch a.Type {
	case flow.ActStripVLAN, flow.ActPushVLAN, flow.ActSetVLANVID, flow.ActSetVLANPCP:
		out, keep := rewriteVLAN(a, frame)
		l.Shift(len(out) - len(frame)) // a tag pushed or popped
		return out, keep
	case flow.ActPushMPLS:
		return pushMPLS(frame, l, a.Value, uint32(a.Imm.Lo))
	case flow.ActPopMPLS:
		return popMPLS(frame, l, a.Value), true
	case flow.ActSetMPLSLabel:
		setMPLS(frame, l, header.MPLSLabelMask, uint32(a.Imm.Lo)<<header.MPLSLabelShift)
	case flow.ActSetMPLSTC:
		setMPLS(frame, l, header.MPLSTCMask, uint32(a.Value)<<header.MPLSTCShift)
	case flow.ActSetMPLSTTL:
		setMPLS(frame, l, header.MPLSTTLMask, uint32(a.Value))
	case flow.ActCopyTTLIn:
		copyTTLIn(frame, l)
	case flow.ActSetDlSrc:
		if mac, ok := maskedMAC(a, frame, 6); ok {
			setDlSrc(frame, mac)
		}
	case flow.ActSetDlDst:
		if mac, ok := maskedMAC(a, frame, 0); ok {
			setDlDst(frame, mac)
		}
	case flow.ActSetNwSrc:
		if ip, ok := maskedIPv4(a, frame, l, header.IPv4SrcOffset); ok {
			setNwSrc(frame, l, ip)
		}
	case flow.ActSetNwDst:
		if ip, ok := maskedIPv4(a, frame, l, header.IPv4DstOffset); ok {
			setNwDst(frame, l, ip)
		}
	case flow.ActSetTpSrc:
		if port, ok := maskedPort(a, frame, l, header.SrcPortOffset); ok {
			setTpSrc(frame, l, port)
		}
	case flow.ActSetTpDst:
		if port, ok := maskedPort(a, frame, l, header.DstPortOffset); ok {
			setTpDst(frame, l, port)
		}
	case flow.ActSetIPv6Src:
		setIPv6Src(frame, l, a.Imm)
	case flow.ActSetIPv6Dst:
		setIPv6Dst(frame, l, a.Imm)
	case flow.ActDecTTL:
		return frame, decTTL(frame, l)
	case flow.ActSetNwTOS:
		setTOS(frame, l, header.DSCPMask, uint8(a.Value))
	case flow.ActSetNwECN:
		setTOS(frame, l, header.ECNMask, uint8(a.Value))
	case flow.ActSetNwTTL:
		setTTL(frame, l, uint8(a.Value))
	case flow.ActSetField:
		setField(frame, l, a.Field, a.Imm)
	}
	return frame, true
}

// rewriteVLAN applies a VLAN action to the frame.
func rewriteVLAN(a *flow.Action, frame []byte) ([]byte, bool) {
	switch a.Type {
	case flow.ActStripVLAN:
		return stripVLAN(frame), true
	case flow.ActPushVLAN:
		return pushVLAN(frame, a.Value)
	case flow.ActSetVLANVID:
		return setVLANVID(frame, a.Value)
	}
	return setVLANPCP(frame, uint8(a.Value))
}

// maskedMAC, maskedIPv4 and maskedPort are what an address or port set
// writes: its value, or for set_field with a mask, the frame's field with
// the mask's bits from it (ok false when the frame has no such field).
func maskedMAC(a *flow.Action, frame []byte, off int) ([6]byte, bool) {
	if a.Mask.IsZero() {
		return a.MAC, true
	}
	mac, ok := currentMAC(frame, off)
	a.SetAddress(mac[:])
	return mac, ok
}

func maskedIPv4(a *flow.Action, frame []byte, l *flow.Layout, off int) ([4]byte, bool) {
	if a.Mask.IsZero() {
		return a.IPv4, true
	}
	ip, ok := currentIPv4Addr(frame, l, off)
	a.SetAddress(ip[:])
	return ip, ok
}

func maskedPort(a *flow.Action, frame []byte, l *flow.Layout, off int) (uint16, bool) {
	if a.Mask.IsZero() {
		return a.Value, true
	}
	port, ok := currentL4Port(frame, l, off)
	return a.MaskedPort(port), ok
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
	maxCopyFrame = 65535 + header.EthernetLen + 2*header.VLANTagLen
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
