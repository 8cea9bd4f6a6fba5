package vswitch

import (
	"encoding/binary"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/header"
)

// NORMAL: a learning switch, per VLAN (vlan.go). chooseNormal is the one
// place that decides what NORMAL does with a frame; three callers use it:
//
//   - translation, for the key as the pipeline left it: it learns the
//     source and resolves NORMAL into the decision (actNormalTo,
//     actNormalFlood, or actNormalDrop with the reason), relying on the
//     MAC-table entries it read (cache.go);
//   - execution, for a NORMAL translation could not resolve (a frame from
//     no port, or one whose decision relies on more MAC-table entries than
//     maxMACDeps), per frame;
//   - trace, through translation, learning nothing, each choice told to
//     its observer (trace.go).
//
// Where a resolved NORMAL sends a frame is read when it runs: the ports
// that forward, each in the form its VLAN configuration wants, and the
// input port's storm limit, which is a rate (floodsTo, normalOutput).

// normalDrop says why NORMAL sends a frame nowhere, if it does not.
type normalDrop uint8

const (
	normalSends normalDrop = iota
	normalDropVLAN
	normalDropReserved
	normalDropSplitHorizon
	// normalToInput: the destination is where the frame came from. Not
	// counted, as in OVS.
	normalToInput
)

// normalChoice is what NORMAL chose for one frame.
type normalChoice struct {
	inSlot uint16 // noSlot: a packet-out's frame, from no port
	vlan   uint16
	drop   normalDrop
	// unlearned says that, asked not to learn, NORMAL found the source
	// not learned on the input port.
	unlearned bool
	flood     bool
	to        uint16 // the destination's slot, unless it floods
	// src and dst are the MAC-table entries the choice relied on: the
	// source's (none from no port), and the destination's, or its absence
	// when it floods for want of one (none for a group address).
	src, dst       macDep
	hasSrc, hasDst bool
}

// chooseNormal decides what NORMAL does with a frame from inSlot with
// VID vid (0: untagged) and the given addresses: it learns the source on
// the input port with learn (nil: it only looks it up), then sends to
// the port the destination was learned on in the frame's VLAN, or floods
// the VLAN. A frame from no port comes as on a trunk of every VLAN, and
// its source is not learned, as OVS does for frames from the controller.
func (v *view) chooseNormal(inSlot, vid uint16, src, dst []byte, now int64, learn func(key uint64, slot uint16, now int64) macDep) normalChoice {
	c := normalChoice{inSlot: inSlot}
	fromPort := inSlot != noSlot
	cfg := &trunkOfAll
	if fromPort {
		cfg = &v.ports[inSlot].vlan
	}
	vlan, ok := cfg.ingress(vid)
	c.vlan = vlan
	switch {
	case !ok:
		c.drop = normalDropVLAN
		return c
	case !v.forwardBPDU && isReserved(dst):
		c.drop = normalDropReserved
		return c
	}
	if fromPort {
		key := macKey(src, vlan)
		if learn != nil {
			c.src, c.hasSrc = learn(key, inSlot, now), true
		} else if dep, learned := v.fdb.lookupDep(key, now); learned && dep.port == inSlot {
			dep.source = true
			c.src, c.hasSrc = dep, true
		} else {
			c.unlearned = true
		}
	}
	if isMulticast(dst) {
		c.flood = true
		return c
	}
	station := macKey(dst, vlan)
	dep, known := v.fdb.lookupDep(station, now)
	if !known {
		c.flood, c.dst, c.hasDst = true, v.fdb.dependAbsent(station), true
		return c
	}
	c.dst, c.hasDst, c.to = dep, true, dep.port
	switch {
	case v.splitHorizon(inSlot, dep.port):
		c.drop = normalDropSplitHorizon
	case dep.port == inSlot:
		c.drop = normalToInput
	}
	return c
}

// floodsTo reports whether NORMAL floods a frame of vlan from inSlot to
// out, a slot of the ports that forward: not back, not from a tunnel to a
// tunnel, and only where the VLAN is carried.
func (v *view) floodsTo(inSlot, out, vlan uint16) bool {
	return out != inSlot && !v.splitHorizon(inSlot, out) && v.ports[out].vlan.carries(vlan)
}

// splitHorizon reports whether NORMAL must not send a frame that arrived
// on inSlot out of out: both are tunnels.
func (pt *portTable) splitHorizon(inSlot, out uint16) bool {
	return inSlot != noSlot && pt.ports[inSlot].tunnel != nil && pt.ports[out].tunnel != nil
}

// normal resolves NORMAL for the key as it stands into the decision. A
// frame from no port, or one whose decision relies on as many MAC-table
// entries as it may, stays NORMAL, run per frame; so does one whose
// source is not learned when translation may not learn (fastPathVerdict),
// unless trace is watching, which shows what NORMAL would do.
func (tr *translator) normal() normalChoice {
	v, k := tr.in.view, &tr.key
	inSlot, ok := v.slot(tr.arrival)
	if !ok || len(tr.d.macDeps)+2 > maxMACDeps {
		tr.emit(flow.Action{Type: flow.ActNormal})
		return normalChoice{inSlot: noSlot, drop: normalSends}
	}
	var vid uint16
	if k.VLANTCI&flow.VLANCFI != 0 {
		vid = k.VLANTCI & header.VLANVIDMask
	}
	c := v.chooseNormal(inSlot, vid, k.DlSrc[:], k.DlDst[:], tr.now, tr.in.learn)
	if c.unlearned && tr.in.obs == nil {
		tr.emit(flow.Action{Type: flow.ActNormal})
		return c
	}
	if c.hasSrc {
		tr.d.macDeps = append(tr.d.macDeps, c.src)
	}
	if c.hasDst {
		tr.d.macDeps = append(tr.d.macDeps, c.dst)
	}
	switch {
	case c.drop == normalToInput:
	case c.drop != normalSends:
		tr.emit(flow.Action{Type: actNormalDrop, Value: uint16(c.drop)})
	case c.flood:
		tr.emit(flow.Action{Type: actNormalFlood, Port: inSlot, Value: c.vlan})
	default:
		tr.emit(flow.Action{Type: actNormalTo, Port: c.to, Value: c.vlan})
	}
	return c
}

// normal runs NORMAL on a frame translation left it to, learning, and
// reports whether it sent the frame anywhere.
func (f *forwarder) normal(inSlot uint16, frame []byte, now int64) (sent bool) {
	tagged, vid := frameTag(frame)
	var learn func(uint64, uint16, int64) macDep
	if inSlot != noSlot {
		learn = f.learn
	}
	c := f.chooseNormal(inSlot, vid, frame[6:12], frame[0:6], now, learn)
	switch {
	case c.drop == normalToInput:
		return false
	case c.drop != normalSends:
		f.normalDropped(c.drop)
		return false
	case f.learnOnly:
		return false
	}
	fr := vlanFrame{arrived: frame, vlan: c.vlan, tagged: tagged, vid: vid}
	if c.flood {
		return f.normalFlood(inSlot, &fr, now)
	}
	return f.forwards(c.to) && f.normalOutput(c.to, &fr)
}

// normalResolved sends frame as a decision resolved NORMAL for it
// (actNormalTo, actNormalFlood): learning was done, and is kept fresh by
// the hit's check.
func (f *forwarder) normalResolved(a *flow.Action, frame []byte, now int64) (sent bool) {
	tagged, vid := frameTag(frame)
	fr := vlanFrame{arrived: frame, vlan: a.Value, tagged: tagged, vid: vid}
	if a.Type == actNormalTo {
		return f.normalOutput(a.Port, &fr)
	}
	return f.normalFlood(a.Port, &fr, now)
}

// frameTag returns whether frame has an outer 802.1Q or 802.1ad tag, and
// its VID: the VLAN it arrived in, before the port's configuration says
// what that makes it.
func frameTag(frame []byte) (tagged bool, vid uint16) {
	if len(frame) < header.EthernetLen+header.VLANTagLen || !header.IsTPID(binary.BigEndian.Uint16(frame[12:])) {
		return false, 0
	}
	return true, binary.BigEndian.Uint16(frame[14:]) & header.VLANVIDMask
}

// normalDropped counts a frame NORMAL dropped, on its input port. A
// learning port sends nothing, and so drops nothing for split horizon.
func (f *forwarder) normalDropped(why normalDrop) {
	switch why {
	case normalDropVLAN:
		f.drops.count(dropVLAN)
	case normalDropReserved:
		f.drops.count(dropReserved)
	case normalDropSplitHorizon:
		if !f.learnOnly {
			f.drops.count(dropSplitHorizon)
		}
	}
}

// learn is NORMAL's learning of key on slot: it notes a MAC-table entry
// it displaced for the fast path.
func (f *forwarder) learn(key uint64, slot uint16, now int64) macDep {
	dep, displaced := f.fdb.learn(key, slot, now)
	if displaced && f.fp != nil {
		f.noteDisplaced(dep.slot)
	}
	return dep
}

// normalFlood floods fr, which arrived on inSlot, to the ports that carry
// its VLAN, within the input port's storm limit, and reports whether it
// sent it anywhere.
func (f *forwarder) normalFlood(inSlot uint16, fr *vlanFrame, now int64) (sent bool) {
	if inSlot != noSlot && !f.storm[inSlot].take(now) {
		f.drops.count(dropStorm)
		return false
	}
	for _, out := range f.flood {
		if f.floodsTo(inSlot, out, fr.vlan) && f.normalOutput(out, fr) {
			sent = true
		}
	}
	return sent
}

// normalOutput sends fr out of slot in the form that port wants, if the
// port carries fr's VLAN, and reports whether it did.
func (f *forwarder) normalOutput(slot uint16, fr *vlanFrame) bool {
	out := &f.ports[slot].vlan
	if !out.carries(fr.vlan) {
		return false
	}
	frame := f.formFor(fr, out)
	if frame == nil {
		return false
	}
	f.enqueue(slot, frame)
	return true
}

func isMulticast(mac []byte) bool { return mac[0]&1 != 0 }
