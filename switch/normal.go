package vswitch

import "github.com/xswitch/xswitch/flow"

// normal resolves NORMAL for the key as it stands (see the top of the
// file), or leaves it NORMAL where it refuses the frame. Like NORMAL, it
// learns the source on the port the frame arrived on, before it looks
// the destination up.
func (tr *translator) normal() {
	v, k := tr.in.view, &tr.key
	inSlot, ok := v.slot(tr.arrival)
	var vid uint16
	if k.VLANTCI&flow.VLANCFI != 0 {
		vid = k.VLANTCI & vlanVIDMask
	}
	var vlan uint16
	if ok {
		vlan, ok = v.ports[inSlot].vlan.ingress(vid)
	}
	dst := k.DlDst[:]
	if !ok || !v.forwardBPDU && isReserved(dst) || len(tr.d.macDeps)+2 > maxMACDeps {
		tr.emit(flow.Action{Type: flow.ActNormal})
		return
	}
	srcDep := macDep{}
	if tr.in.learn == nil {
		dep, learned := v.fdb.lookupDep(macKey(k.DlSrc[:], vlan), tr.now)
		if !learned || dep.port != inSlot {
			tr.emit(flow.Action{Type: flow.ActNormal})
			return
		}
		dep.source = true
		srcDep = dep
	} else {
		srcDep = tr.in.learn(macKey(k.DlSrc[:], vlan), inSlot, tr.now)
	}
	tr.d.macDeps = append(tr.d.macDeps, srcDep)
	flood := flow.Action{Type: actNormalFlood, Port: inSlot, Value: vlan}
	if isMulticast(dst) {
		tr.emit(flood)
		return
	}
	station := macKey(dst, vlan)
	dstDep, known := v.fdb.lookupDep(station, tr.now)
	if !known {
		tr.d.macDeps = append(tr.d.macDeps, v.fdb.dependAbsent(station))
		tr.emit(flood)
		return
	}
	tr.d.macDeps = append(tr.d.macDeps, dstDep)
	switch {
	case v.splitHorizon(inSlot, dstDep.port):
		// NORMAL run per frame counts what split horizon drops.
		tr.emit(flow.Action{Type: flow.ActNormal})
	case dstDep.port != inSlot:
		tr.emit(flow.Action{Type: actNormalTo, Port: dstDep.port, Value: vlan})
	}
}

// normal is the NORMAL action: a learning switch, per VLAN (see vlan.go).
// It reports whether it sent the frame anywhere.
//
// A packet-out's frame may come from no port (inSlot noSlot): it comes as
// on a trunk of every VLAN, and its source is not learned, as OVS does
// for frames from the controller.
func (f *forwarder) normal(inSlot uint16, frame []byte, now int64) (sent bool) {
	tagged, vid := frameTag(frame)
	fromPort := inSlot != noSlot
	in := &trunkOfAll
	if fromPort {
		in = &f.ports[inSlot].vlan
	}
	vlan, ok := in.ingress(vid)
	if !ok {
		f.drops.vlan++
		return false
	}
	dst := frame[0:6]
	if !f.forwardBPDU && isReserved(dst) {
		f.drops.reserved++
		return false
	}
	fr := vlanFrame{arrived: frame, vlan: vlan, tagged: tagged, vid: vid}
	if fromPort {
		f.learn(macKey(frame[6:12], vlan), inSlot, now)
	}
	if f.learnOnly {
		return false
	}
	if !isMulticast(dst) {
		if out, ok := f.fdb.lookup(macKey(dst, vlan), now); ok {
			if f.splitHorizon(inSlot, out) {
				f.drops.splitHorizon++
				return false
			}
			if out != inSlot && f.forwards(out) {
				return f.normalOutput(out, &fr)
			}
			return false
		}
	}
	return f.normalFlood(inSlot, &fr, now)
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
		f.drops.storm++
		return false
	}
	for _, out := range f.flood {
		if out != inSlot && !f.splitHorizon(inSlot, out) && f.normalOutput(out, fr) {
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

// splitHorizon reports whether NORMAL must not send a frame that arrived
// on inSlot out of out: both are tunnels.
func (pt *portTable) splitHorizon(inSlot, out uint16) bool {
	return inSlot != noSlot && pt.ports[inSlot].tunnel != nil && pt.ports[out].tunnel != nil
}
