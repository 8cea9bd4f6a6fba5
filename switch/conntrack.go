package vswitch

import (
	"encoding/binary"

	"github.com/xswitch/xswitch/conntrack"
	"github.com/xswitch/xswitch/datapath"
	"github.com/xswitch/xswitch/flow"
)

// Connection tracking: ct() and ct_clear, and the recirculation that
// ct(table=N) makes.
//
// Translation meets ct() with the key as the frame will be there, so it
// resolves the action whole: the zone (a register's bits, if the rule
// says so), the writes of exec() into a mark and a label with their
// masks, the NAT range. The decision gets an actConntrack naming the
// resolved ctStep. The frame's way after ct() depends on the connection's
// state, which is the tracker's, per frame: so ct(table=N) ends what one
// decision can say, as OVS's recirculation ends a datapath flow. The
// step keeps the pipeline's state at that point (the working key with its
// registers and metadata, the action set: OVS's frozen state), and a
// frame that runs it goes on in table N by a second decision, found in
// the forwarder's cache of recirculations by that state, the frame's
// headers as the tracker left them (NATed) and the connection's fields.
// The frame itself goes on with the actions after ct(), untracked, as in
// OVS: a ct(table=N) before other actions forks the frame.
//
// The tracker is the daemon's (Options.Conntrack), shared by its bridges
// and their threads, as OVS's datapath has one table; its clock is
// CLOCK_MONOTONIC, which an XDP program reads too.

// ctStep is one ct() of a decision, as translation resolved it.
type ctStep struct {
	action conntrack.Action
	// resume is where a ct(table=N) goes on; nil for a ct() without a
	// table.
	resume *recirculation
}

// recirculation is the pipeline's state where a ct(table=N) forks the
// frame: what the second decision starts from besides the frame's
// headers and the connection's fields. Each translation makes its own,
// never changed after, so that the cache of recirculations keys by its
// address: a decision translated again makes new ones, and the second
// decisions of the old ones age out of the cache.
type recirculation struct {
	// key is the working key at the fork, its table N and its CT fields
	// zero: the registers, the metadata and the input port go on.
	key flow.Key
	// arrival is the port NORMAL learns on, whatever resubmit made of the
	// key's.
	arrival uint16
	set     flow.ActionSet
}

// recircKey finds a recirculation's decision: the state it forked with,
// and what the tracker made of the frame.
type recircKey struct {
	from    *recirculation
	headers flow.Headers
	ct      flow.CTFields
}

// maxRecirculations bounds how often one frame goes back into the
// pipeline, as OVS's userspace datapath does (MAX_RECIRC_DEPTH): rules
// that recirculate for ever drop the frame as a loop.
const maxRecirculations = 6

// conntrack resolves ct() action a at this point of the translation.
func (tr *translator) conntrack(a flow.Action) {
	c := a.CT
	step := ctStep{action: conntrack.Action{Zone: ctZone(c, &tr.key), Commit: c.Commit, Force: c.Force}}
	if c.NAT != nil {
		step.action.NAT = trackerNAT(c.NAT)
	}
	tr.execWrites(c.Exec, &step.action)
	// The fork goes on with the tun_id the tables gave the key so far.
	tr.syncTunnelID()
	if c.Table != flow.CTNoTable {
		rec := &recirculation{key: tr.key, arrival: tr.arrival, set: tr.set}
		rec.key.Table, rec.key.CT = c.Table, flow.CTFields{}
		step.resume = rec
	}
	tr.d.cts = append(tr.d.cts, step)
	tr.emit(flow.Action{Type: actConntrack, Port: uint16(len(tr.d.cts) - 1)})
	a.ApplyToKey(&tr.key)
}

// ctZone is the zone c tracks a frame with key in: its number, or its
// field's bits.
func ctZone(c *flow.Conntrack, key *flow.Key) uint16 {
	if c.ZoneSrc == nil {
		return c.Zone
	}
	return uint16(c.ZoneSrc.Get(key).Shr(uint(c.ZoneOfs)).Lo)
}

// execWrites works exec()'s writes out as the mark and label the commit
// sets, with their masks: each write runs on two copies of the key, one
// with the connection's fields all zeros and one all ones, so that a bit
// is written where the two agree, whatever the writes' kinds and sources.
func (tr *translator) execWrites(exec []flow.Action, out *conntrack.Action) {
	if len(exec) == 0 {
		return
	}
	zeros, ones := tr.key, tr.key
	zeros.CT.Mark, zeros.CT.Label = 0, [16]byte{}
	ones.CT.Mark = ^uint32(0)
	for i := range ones.CT.Label {
		ones.CT.Label[i] = 0xff
	}
	for _, w := range exec {
		w.ApplyToKey(&zeros)
		w.ApplyToKey(&ones)
	}
	if m := ^(zeros.CT.Mark ^ ones.CT.Mark); m != 0 {
		out.SetMark, out.Mark, out.MarkMask = true, zeros.CT.Mark, m
	}
	var mask [16]byte
	for i := range mask {
		mask[i] = ^(zeros.CT.Label[i] ^ ones.CT.Label[i])
	}
	if mask != [16]byte{} {
		out.SetLabel, out.Label, out.LabelMask = true, labelOf(&zeros.CT.Label), labelOf(&mask)
	}
}

func labelOf(b *[16]byte) conntrack.Label {
	return conntrack.Label{Hi: binary.BigEndian.Uint64(b[:8]), Lo: binary.BigEndian.Uint64(b[8:])}
}

// trackerNAT is a ct()'s nat as the tracker takes it.
func trackerNAT(n *flow.NAT) conntrack.NAT {
	out := conntrack.NAT{Kind: conntrack.NATExisting, MinPort: n.MinPort, MaxPort: n.MaxPort, Persistent: n.Persistent, Random: n.Random}
	switch {
	case n.Src:
		out.Kind = conntrack.SNAT
	case n.Dst:
		out.Kind = conntrack.DNAT
	}
	if n.Min.IsValid() {
		out.MinAddr = conntrack.AddrFrom(n.Min)
	}
	if n.Max.IsValid() {
		out.MaxAddr = conntrack.AddrFrom(n.Max)
	}
	return out
}

// translateRecirculation works out the decision of a frame that rec's
// ct(table=N) sent on, with key as the tracker left it: from table N,
// with the action set written before the fork.
func (tr *translator) translateRecirculation(t *flow.Table, rec *recirculation, key *flow.Key, d *decision, now int64) {
	tr.start(t, &key.Headers, d, now)
	tr.key, tr.arrival, tr.set = *key, rec.arrival, rec.set
	tr.end(tr.lookup(0))
}

// ctFrame is the executor's state for the frame's ct() actions: the
// packet as the tracker sees it, whose metadata goes from one ct() to the
// next as OVS keeps it in the packet (frameRun.tracked says it is the
// frame's), and the key its recirculation's decision is found by.
type ctFrame struct {
	tracker *conntrack.Tracker
	packet  conntrack.Packet
	// epoch is the tracker's clock at the forwarders' epoch: the
	// tracker's now is epoch plus theirs.
	epoch int64
	key   recircKey
}

// runConntrack runs step on the frame: through the tracker, NAT written
// into it, and for ct(table=N) on into the recirculation's decision, on
// a copy if more actions follow (last is false). It returns false when
// the frame is dropped.
func (f *forwarder) runConntrack(r *frameRun, step *ctStep, last bool) bool {
	p := &f.ct.packet
	if !r.tracked {
		p.CT, r.tracked = conntrack.CT{}, true
	}
	if r.layout.IPVersion == 0 {
		// Not IP (the rule's match says it is, unless a rewrite changed
		// that): the tracker calls it invalid, as OVS does.
		p.Header = conntrack.Header{Malformed: true}
	} else {
		// The frames come from AF_XDP, which says nothing of their
		// checksums' state: a peer may hand over partial ones.
		p.Header.Decode(r.frame[r.layout.L3:], false)
	}
	rw := f.ct.tracker.Execute(p, &step.action, f.ct.epoch+r.now)
	if rw != 0 {
		if r.shared && !f.ownCopy(r) {
			return false
		}
		conntrack.ApplyNAT(r.frame[r.layout.L3:], &p.Header, rw)
	}
	if step.resume == nil {
		if f.connPending.d != nil {
			f.offerConnection(r, step, rw, nil)
		}
		return true
	}
	if r.recircs == maxRecirculations {
		r.dropped = dropLoop // the copy goes no further; the frame goes on
		return true
	}
	k := &f.ct.key // not on the stack, from which the cache's lookup would move it
	*k = recircKey{from: step.resume, headers: step.resume.key.Headers, ct: ctFieldsOf(&p.CT)}
	natHeaders(&k.headers, &p.Header, rw)
	d := decide(f, f.recircs, r.table, k, r.now)
	f.count(d, len(r.frame))
	if f.connPending.d != nil {
		if last {
			f.offerConnection(r, step, rw, d)
		}
		f.connPending = pendingConn{} // a fork: the program runs none
	}
	controllers, cts, recircs := r.controllers, r.cts, r.recircs
	at := r.clones
	if !last {
		// The frame goes on after ct() as the tracker left it: the
		// recirculation runs in a clone bracket, and the copy pool keeps
		// the frame meanwhile (makeRoom).
		r.frame = f.makeRoom(r.frame, r.copied, maxNormalCopies*2)
		f.openBracket(r, 0)
	}
	r.recircs++
	r.controllers, r.cts = d.controllers, d.cts
	if r.dropped == dropRule {
		r.dropped = d.dropped
	}
	d.running++
	f.execute(r, d.actions)
	d.running--
	if last {
		return false // the recirculation ran the frame's actions to their end
	}
	f.closeBracket(r, at)
	r.controllers, r.cts, r.recircs = controllers, cts, recircs
	return true
}

// ctFieldsOf is what the tracker said of the frame, in the key's fields.
func ctFieldsOf(ct *conntrack.CT) flow.CTFields {
	out := flow.CTFields{State: uint8(ct.State), Zone: ct.Zone, Mark: ct.Mark, NwProto: ct.Orig.Proto,
		TpSrc: ct.Orig.SrcPort, TpDst: ct.Orig.DstPort, Src: ct.Orig.Src, Dst: ct.Orig.Dst}
	binary.BigEndian.PutUint64(out.Label[:8], ct.Label.Hi)
	binary.BigEndian.PutUint64(out.Label[8:], ct.Label.Lo)
	return out
}

// natHeaders gives h the addresses and ports the tracker translated the
// packet to (rw): an ICMP identifier and an error's quoted packet are in
// no key field.
func natHeaders(h *flow.Headers, p *conntrack.Header, rw conntrack.Rewrite) {
	switch {
	case rw&(conntrack.RewriteSrc|conntrack.RewriteDst) == 0:
	case p.IPv6:
		h.IPv6Src, h.IPv6Dst = p.Src, p.Dst
	default:
		h.NwSrc, h.NwDst = p.Src.As4(), p.Dst.As4()
	}
	if rw&conntrack.RewriteSrcPort != 0 {
		h.TpSrc = p.SrcPort
	}
	if rw&conntrack.RewriteDstPort != 0 {
		h.TpDst = p.DstPort
	}
}

// translateRecirc is how the cache of recirculations works a decision
// out for its key.
func translateRecirc(tr *translator, t *flow.Table, k *recircKey, d *decision, now int64) {
	key := k.from.key
	key.Headers, key.CT = k.headers, k.ct
	tr.translateRecirculation(t, k.from, &key, d, now)
	d.flowHash = datapath.FlowHash(&k.headers)
}
