package conntrack

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/xswitch/xswitch/header"
)

// A fast path carries an established connection (KernelState) from the
// moment the tracker puts it in the fast path's store (Carry) until the
// tracker takes it back. A packet of a carried connection that reaches
// the tracker (the fast path handed it over, or it missed the fast
// path's flows) is judged with what the fast path made of the connection
// (read from the store first). One that may change its state (TCP's
// SYN, FIN, RST, a segment without ACK; the first packet back of one
// seen one way) takes the connection back first: the fast path carries
// none of its packets while the tracker judges them. Any other, a packet
// the fast path would have judged too, leaves the connection carried:
// the tracker judges it with what it read, and merges the result into
// the store, where the fast path may have moved the connection on
// meanwhile (both only move a carried connection forward). Taking the
// connection back for those would hand the fast path's next packets to
// the tracker too, each of which would take it back again: at a high
// rate, it would never be carried again. The tracker reads the store
// before it expires a connection the fast path carries (whose packets
// re-armed its timer there), before it dumps one, and deletes the
// connection there with the connection. A connection is carried by one
// store at a time.

// Carrier is a fast path's store of the connections it carries: in
// xswitch, a bridge's ct_conns map, which its XDP programs read and move
// on. Its methods make system calls; the tracker calls them only when a
// connection changes hands, not per packet.
type Carrier interface {
	// PutConn stores connection h as k, replacing what was stored.
	PutConn(h Handle, k *KernelConn) error
	// PeekConn reads what the store holds of h; TakeConn reads it and
	// deletes it at once; both report false when it holds nothing.
	PeekConn(h Handle) (KernelConn, bool)
	TakeConn(h Handle) (KernelConn, bool)
	// MergeConn merges k into what the store holds of h (KernelConn's
	// Merge), in one step with the fast path's changes; false if it
	// holds nothing of h.
	MergeConn(h Handle, k *KernelConn) bool
	DeleteConn(h Handle)
}

// CarrierID names a carrier the tracker was given (AddCarrier).
type CarrierID uint8

// maxCarriers is how many stores one tracker serves: one per bridge.
const maxCarriers = 255

// carriers are a tracker's stores; the slot of a removed one is nil.
type carriers struct {
	mu   sync.Mutex // serializes changes to list
	list atomic.Pointer[[]Carrier]
	// count is how many connections are carried.
	count atomic.Int64
}

// AddCarrier makes c a store the tracker may put connections in.
func (t *Tracker) AddCarrier(c Carrier) (CarrierID, error) {
	t.carriers.mu.Lock()
	defer t.carriers.mu.Unlock()
	var list []Carrier
	if p := t.carriers.list.Load(); p != nil {
		list = *p
	}
	i := 0
	for i < len(list) && list[i] != nil {
		i++
	}
	if i == maxCarriers {
		return 0, errors.New("conntrack: a tracker serves at most 255 fast paths")
	}
	next := append(make([]Carrier, 0, len(list)+1), list...)
	if i == len(next) {
		next = append(next, nil)
	}
	next[i] = c
	t.carriers.list.Store(&next)
	return CarrierID(i + 1), nil
}

// RemoveCarrier takes back every connection id carries, and forgets it.
// Call it while the store still works.
func (t *Tracker) RemoveCarrier(id CarrierID) {
	t.takeBackAll(func(c *conn) bool { return c.carrier == uint8(id) })
	t.carriers.mu.Lock()
	defer t.carriers.mu.Unlock()
	next := append([]Carrier(nil), *t.carriers.list.Load()...)
	next[id-1] = nil
	t.carriers.list.Store(&next)
}

func (t *Tracker) carrier(id uint8) Carrier {
	if p := t.carriers.list.Load(); p != nil && id != 0 && int(id) <= len(*p) {
		return (*p)[id-1]
	}
	return nil
}

// Carry puts h's connection in store id, if it is established as
// KernelState says and its state goes in; it reports whether store id
// carries the connection now. A connection id carries already is left
// alone (no system call); one another store carries moves.
func (t *Tracker) Carry(h Handle, id CarrierID) bool {
	c := t.byHandle(h)
	if c == nil {
		return false
	}
	defer c.mu.Unlock()
	if c.carrier == uint8(id) {
		return true
	}
	if c.carrier != 0 {
		t.takeBack(c, h)
	}
	k, ok := t.kernelState(c)
	cr := t.carrier(uint8(id))
	if !ok || cr == nil || cr.PutConn(h, &k) != nil {
		return false
	}
	c.carrier = uint8(id)
	t.carriers.count.Add(1)
	return true
}

// Carried is how many connections fast paths carry.
func (t *Tracker) Carried() int { return int(t.carriers.count.Load()) }

// takeBack takes locked connection c (handle h) back from its store,
// with what the store made of it. A store that lost it (or was removed)
// leaves the tracker's state as it was.
func (t *Tracker) takeBack(c *conn, h Handle) {
	if cr := t.carrier(c.carrier); cr != nil {
		if k, ok := cr.TakeConn(h); ok {
			c.syncFromKernel(&k)
		}
	}
	c.carrier = 0
	t.carriers.count.Add(-1)
}

// refresh reads what the store of locked connection c (handle h) made of
// it, leaving it carried.
func (t *Tracker) refresh(c *conn, h Handle) {
	if cr := t.carrier(c.carrier); cr != nil {
		if k, ok := cr.PeekConn(h); ok {
			c.syncFromKernel(&k)
		}
	}
}

// judgeCarried prepares carried, locked connection c (handle h) for the
// tracker to judge packet p going the reply way if reply: it takes c back
// if p may change its state, and reports whether c stays carried, its
// judgement then to be merged (mergeCarried).
func (t *Tracker) judgeCarried(c *conn, h Handle, p *Header, reply bool) bool {
	_, origOnly, _ := c.carriedTimer()
	if p.Proto == header.ProtoTCP && (p.TCPFlags&(TCPSyn|TCPFin|TCPRst) != 0 || p.TCPFlags&TCPAck == 0) || reply && origOnly {
		t.takeBack(c, h)
		return false
	}
	return true
}

// mergeCarried merges into its store what the tracker made of a packet
// of carried, locked connection c (handle h), which judgeCarried left
// carried; one the store lost, or that left the states a store carries,
// is carried no longer.
func (t *Tracker) mergeCarried(c *conn, h Handle) {
	if k, ok := t.kernelState(c); ok {
		if cr := t.carrier(c.carrier); cr != nil && cr.MergeConn(h, &k) {
			return
		}
	}
	t.takeBack(c, h)
}

// forgetCarried deletes connection h, which the tracker removed, from
// store id.
func (t *Tracker) forgetCarried(id uint8, h Handle) {
	if cr := t.carrier(id); cr != nil {
		cr.DeleteConn(h)
	}
	t.carriers.count.Add(-1)
}

// takeBackAll takes back the carried connections which is selects.
func (t *Tracker) takeBackAll(is func(c *conn) bool) {
	if t.Carried() == 0 {
		return
	}
	t.scan(nil, func(slot uint32, c *conn) bool {
		if c.carrier != 0 && is(c) {
			t.takeBack(c, makeHandle(slot, c.gen))
		}
		return false
	}, nil, false, 0)
}
