package conntrack

import (
	"sync"
	"sync/atomic"

	"github.com/xswitch/xswitch/header"
)

// conn is one tracked connection, in a slot of the tracker's slab. It
// holds no pointers, so that a table of millions costs the garbage
// collector nothing to scan.
//
// key, nat and the slot's place in the maps are set while the connection
// is created and do not change while it lives; everything else is
// guarded by mu, but expires, which the sweep reads without it as it
// runs through the slab (a free slot's is never, so the sweep passes it
// by).
type conn struct {
	mu  sync.Mutex
	gen uint32 // the slot's generation: Handle's check
	// nextFree links free slots (slot number + 1; 0 ends the list).
	nextFree uint32
	live     bool
	nat      natAction
	// other is UDP's and other protocols' state, or ICMP's.
	other     uint8
	seenReply bool
	tm        timeout
	// carrier is the store that carries the connection (CarrierID), 0
	// for none (carry.go).
	carrier uint8
	expires atomic.Int64
	mark    uint32
	label   Label
	// key is the original direction's tuple, then the reply direction's:
	// the original reversed, or translated by NAT.
	key [2]Tuple
	tcp [2]tcpPeer
}

// update is what a packet does to the connection it belongs to (OVS's
// ct_update_res).
type update uint8

const (
	updInvalid  update = iota // breaks the protocol's rules: +inv
	updValid                  // +est
	updReopen                 // ends the connection and starts a new one
	updValidNew               // still opening: +new
)

// States of UDP and other protocols (OVS's conntrack-other.c).
const (
	otherFirst    = iota // one packet seen
	otherMultiple        // several, one way
	otherBidir           // both ways
)

// States of ICMP exchanges (conntrack-icmp.c).
const (
	icmpFirst = iota // a request seen
	icmpReply        // answered
)

// arm sets the connection's timer for state tm from now.
func (c *conn) arm(t *Tracker, tm timeout, now int64) {
	c.tm = tm
	c.expires.Store(now + t.timeout(c.key[0].Zone, tm))
}

// start sets up a new connection's protocol state from its first packet
// (OVS's new_conn).
func (c *conn) start(t *Tracker, h *Header, now int64) {
	switch {
	case h.Proto == header.ProtoTCP:
		c.tcpStart(h)
		c.arm(t, tmTCPFirst, now)
	case isICMP(h.IPv6, h.Proto):
		c.other = icmpFirst
		c.arm(t, tmICMPFirst, now)
	default:
		c.other = otherFirst
		c.arm(t, tmOtherFirst, now)
	}
}

// step runs the connection's state machine on a packet of it (OVS's
// conn_update), going the reply direction if reply.
func (c *conn) step(t *Tracker, h *Header, reply bool, now int64) update {
	switch {
	case c.key[0].Proto == header.ProtoTCP:
		return c.tcpStep(t, h, reply, now)
	case isICMP(c.key[0].IPv6, c.key[0].Proto):
		if reply && c.other == icmpFirst {
			c.other = icmpReply
		}
		if c.other == icmpFirst {
			c.arm(t, tmICMPFirst, now)
			return updValidNew
		}
		c.arm(t, tmICMPReply, now)
		return updValid
	}
	switch {
	case reply:
		c.other = otherBidir
	case c.other == otherFirst:
		c.other = otherMultiple
	}
	switch c.other {
	case otherBidir:
		c.arm(t, tmOtherBidir, now)
		return updValid
	default:
		c.arm(t, tmOtherMultiple, now)
		return updValidNew
	}
}
