package vswitch

import (
	"slices"

	"github.com/xswitch/xswitch/conntrack"
	"github.com/xswitch/xswitch/datapath"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/header"
)

// Established connections in the fast path (and UDP's and other
// protocols' seen several times one way, whose frames the tracker calls
// +new until one comes back, as OVS's does). A decision with a ct() has
// no entry of its own: what its frames do depends on their connection's
// state, which the tracker judges per frame. Its entry is per connection
// instead (the rules' keys are exact when they use ct(), so one entry
// serves one direction of one connection): a frame of an established
// connection that reaches user space offers the entry of its connection
// (offerConnection), made of the program's connection operation (the
// connection's handle and the frame's direction), the NAT the tracker
// applied to it as constant rewrites, and the rest of the decision's
// actions, or, for ct(table=N), the recirculation's decision's. The
// tracker puts the connection in the bridge's ct_conns at once
// (Tracker.Carry), and the entry goes in at the batch's end. From then on
// the program judges the connection's frames as the tracker would, moving
// its TCP windows and its expiry on, and hands user space those it cannot
// judge (SYN, FIN, RST, out of window, past its time, a fragment). The
// tracker judges those, and any that came up for another reason (the
// entry was swept, a new generation), with what the program made of the
// connection: one that may change its state takes the connection back
// first, and it goes back as soon as the tracker judged the frame; any
// other leaves it carried (conntrack/carry.go).
//
// What stays in user space: new connections (but those seen one way),
// every frame that changes a connection's state, and a connection's
// first carryAfter frames each way; fragments; ICMP exchanges (whose
// echo identifier no key has); ct(force), a second ct(), and ct()
// after a rewrite; ct(table=N) with actions after it (a fork).

// connOffer is what a frame's first ct() made of it, for its
// connection's entry.
type connOffer struct {
	step   *ctStep // the ct() it went through
	handle conntrack.Handle
	// reply says the frame went the connection's reply way; oneWay, that
	// it is of a connection seen one way (+new), or else of an
	// established one.
	reply, oneWay bool
	// natted is the frame's headers after the ct()'s NAT.
	natted flow.Headers
	// next is the decision the frame went on with, for ct(table=N).
	next *decision
}

// carryAfter is how many of a connection's frames (one way) user space
// forwards before it has the kernel carry the rest: putting a connection
// in and taking it back cost system calls, which a short one (a request
// and its answer) does not pay back.
const carryAfter = 8

// pendingConn is a decision with ct() whose frame is under way, to be
// offered with its connection once the tracker judged it.
type pendingConn struct {
	d      *decision
	inSlot uint16
}

// offerConnection offers the entry of the connection that the frame's
// first ct() (step) found, if it is established and its frame is one
// the program would judge so; next is the recirculation's decision of a
// ct(table=N) that ends the actions. It runs after the tracker judged
// the frame, which the tracker's NAT rewrote as rw, and queues at most
// one entry per decision and batch.
func (f *forwarder) offerConnection(r *frameRun, step *ctStep, rw conntrack.Rewrite, next *decision) {
	pc := f.connPending
	f.connPending = pendingConn{}
	p := &f.ct.packet
	const (
		established = conntrack.StateTracked | conntrack.StateEstablished
		oneWay      = conntrack.StateTracked | conntrack.StateNew
		states      = established | oneWay | conntrack.StateInvalid | conntrack.StateRelated
		tcp         = header.ProtoTCP
	)
	state := p.CT.State & states
	switch {
	case pc.d == nil, p.CT.Conn == 0, p.Header.Fragment, p.Header.Proto == header.ProtoICMP, p.Header.Proto == header.ProtoICMPv6,
		state != established && (state != oneWay || p.Header.Proto == tcp),
		p.Header.Proto == tcp && (p.Header.TCPFlags&(conntrack.TCPSyn|conntrack.TCPFin|conntrack.TCPRst) != 0 ||
			p.Header.TCPFlags&conntrack.TCPAck == 0):
		// The program would hand this frame over: a fragment, an ICMP
		// exchange, a connection that is not established (but UDP's, or
		// another protocol's, committed and seen one way), a TCP segment
		// that may change its connection's state.
		return
	}
	d := pc.d
	o, gen := f.offerOf(d), f.fpView.generation
	conn := connOffer{step: step, handle: p.CT.Conn, reply: p.CT.State&conntrack.StateReply != 0, oneWay: state == oneWay, next: next}
	if o.conn != conn.handle || o.connOneWay != conn.oneWay {
		o.conn, o.connOneWay, o.state, o.frames = conn.handle, conn.oneWay, 0, 0
	}
	if o.state < 0 {
		return
	}
	if o.frames < carryAfter {
		o.frames++
		return
	}
	queued := o.generation == gen && o.at == r.now
	var e datapath.Entry
	if !queued {
		conn.natted = f.key.Headers
		natHeaders(&conn.natted, &p.Header, rw)
		var why string
		if e, why = f.fastPathEntry(d, &f.key.Headers, &conn); why != "" {
			o.state = -1
			return
		}
	}
	// The connection goes back into ct_conns now, not at the batch's
	// end: while it is out, the program hands every frame of it to user
	// space, and a batch-long gap under load hands over enough of them
	// that every batch takes the connection back again.
	if !f.ct.tracker.Carry(conn.handle, f.fp.carrier) || queued {
		return
	}
	o.state, o.generation, o.at = 1, gen, r.now
	f.queueEntry(e, pc.inSlot, r.now, d, next)
}

// natOps adds to an entry the rewrites that take a frame with key k to
// natted, the headers the tracker's NAT gave it, and moves k there; false
// if the program cannot make one (the closures say why).
func natOps(k *flow.Key, natted *flow.Headers, setAddr func(dst bool, addr [4]byte) bool,
	setAddr6 func(dst bool, addr [16]byte) bool, setPort func(dst bool, port uint16) bool) bool {
	for _, dst := range []bool{false, true} {
		from, to, from6, to6 := k.NwSrc, natted.NwSrc, k.IPv6Src, natted.IPv6Src
		if dst {
			from, to, from6, to6 = k.NwDst, natted.NwDst, k.IPv6Dst, natted.IPv6Dst
		}
		if from != to && !setAddr(dst, to) || from6 != to6 && !setAddr6(dst, to6) {
			return false
		}
	}
	k.NwSrc, k.NwDst, k.IPv6Src, k.IPv6Dst = natted.NwSrc, natted.NwDst, natted.IPv6Src, natted.IPv6Dst
	for _, dst := range []bool{false, true} {
		from, to := k.TpSrc, natted.TpSrc
		if dst {
			from, to = k.TpDst, natted.TpDst
		}
		if from != to && !setPort(dst, to) {
			return false
		}
	}
	k.TpSrc, k.TpDst = natted.TpSrc, natted.TpDst
	return true
}

// queueEntry queues entry e of a flow from inSlot whose frames the
// decisions ds make (nil ones left out), for installation at the batch's
// end.
func (f *forwarder) queueEntry(e datapath.Entry, inSlot uint16, now int64, ds ...*decision) {
	key := f.entryKey(&f.key.Headers)
	meta := &fpInstalled{key: key, in: f.ports[inSlot], entry: e, mask: f.fpView.mask, l2: isL2Mask(f.fpView.mask), active: now}
	for _, d := range ds {
		if d == nil {
			continue
		}
		meta.rules = append(slices.Clip(meta.rules), d.rules...)
		meta.lookups = append(slices.Clip(meta.lookups), d.lookups...)
		meta.groups = append(slices.Clip(meta.groups), d.groupHits...)
		meta.macDeps = append(slices.Clip(meta.macDeps), d.macDeps...)
	}
	if e.Out != datapath.OutDrop {
		meta.out, meta.via = f.ports[e.Out], f.ports[e.Out]
	}
	for _, op := range e.Ops {
		switch op.Type {
		case datapath.OpPushVLAN:
			meta.lenDelta += header.VLANTagLen
		case datapath.OpPopVLAN:
			meta.lenDelta -= header.VLANTagLen
		case datapath.OpTunnelPush:
			// Counted as the tunnel's, which the frame leaves by through
			// its underlay.
			meta.out = f.ports[datapath.TunnelSlot(op.Tunnel)]
		}
	}
	f.fpPending = append(f.fpPending, fpPending{key: key, flow: e, meta: meta})
}

// connStore is a bridge's ct_conns as the tracker's store of the
// connections the fast path carries.
type connStore struct{ dp datapath.Datapath }

func (s connStore) PutConn(h conntrack.Handle, k *conntrack.KernelConn) error {
	c := datapath.ConnOf(*k)
	return s.dp.PutConn(h, &c)
}

func (s connStore) PeekConn(h conntrack.Handle) (conntrack.KernelConn, bool) {
	return s.read(s.dp.Conn(h))
}

func (s connStore) TakeConn(h conntrack.Handle) (conntrack.KernelConn, bool) {
	return s.read(s.dp.TakeConn(h))
}

func (s connStore) MergeConn(h conntrack.Handle, k *conntrack.KernelConn) bool {
	c := datapath.ConnOf(*k)
	return s.dp.MergeConn(h, &c) == nil
}

func (s connStore) read(c datapath.Conn, err error) (conntrack.KernelConn, bool) {
	if err != nil {
		return conntrack.KernelConn{}, false
	}
	return datapath.KernelConnOf(&c), true
}

// DeleteConn deletes h's connection; one the map would not give up (it
// has no such failure but a missing one) the program carries no longer
// than its expiry.
func (s connStore) DeleteConn(h conntrack.Handle) { _ = s.dp.DeleteConn(h) }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
