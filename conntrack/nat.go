package conntrack

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/bits"
	"math/rand/v2"

	"github.com/xswitch/xswitch/header"
)

// NATKind is what a ct() action's nat asks for.
type NATKind uint8

const (
	// NoNAT: the action has no nat.
	NoNAT NATKind = iota
	// NATExisting is nat without arguments: translate the packet as its
	// connection already is, if it is. A new connection committed with
	// it is not translated (the kernel's null binding; OVS's userspace
	// tracker builds a broken reply tuple there).
	NATExisting
	// SNAT and DNAT translate the source or the destination of a new
	// connection committed with them, and its packets from then on.
	SNAT
	DNAT
)

// NAT is a ct() action's nat(src|dst=ADDR[-ADDR][:PORT[-PORT]],
// persistent, hash|random).
type NAT struct {
	Kind NATKind
	// MinAddr to MaxAddr is the range the new address comes from, in
	// the packet's family. A zero MaxAddr means MinAddr alone; a zero
	// MinAddr keeps the packet's own address, so that only ports are
	// translated (OVS's all-zero SNAT, which makes two clients' tuples
	// unique).
	MinAddr, MaxAddr Addr
	// MinPort to MaxPort is the range of the new port; a zero MinPort
	// means no range (SNAT then keeps the source port if it can, else
	// takes one of its class: below 512, below 1024, or ephemeral) and a
	// zero MaxPort means MinPort alone.
	MinPort, MaxPort uint16
	// Persistent gives a source address the same translated address for
	// all its connections (the hash that picks it covers the source
	// address only).
	Persistent bool
	// Random starts the port search at a random place instead of at the
	// connection's hash (OVS's default, "hash").
	Random bool
}

// Validate reports a range that runs backwards or a port range without a
// start.
func (n *NAT) Validate() error {
	if n.Kind != SNAT && n.Kind != DNAT {
		if n.MinAddr != (Addr{}) || n.MaxAddr != (Addr{}) || n.MinPort != 0 || n.MaxPort != 0 {
			return errors.New("conntrack: nat without src or dst has no range")
		}
		return nil
	}
	if !n.MaxAddr.IsZero() && bytes.Compare(n.MaxAddr[:], n.MinAddr[:]) < 0 {
		return errors.New("conntrack: nat address range runs backwards")
	}
	if n.MinPort == 0 && n.MaxPort != 0 {
		return errors.New("conntrack: nat port range without a first port")
	}
	if n.MaxPort != 0 && n.MaxPort < n.MinPort {
		return errors.New("conntrack: nat port range runs backwards")
	}
	return nil
}

// natAction is which end of a connection's original direction its NAT
// translates.
type natAction uint8

const (
	natSrc natAction = 1 + iota
	natDst
)

// reverse is the same translation seen from the other direction: a
// source translated going out is a destination coming back.
func (a natAction) reverse() natAction { return 3 - a }

// Port classes SNAT keeps a source port in when it has no range (OVS's
// set_sport_range, as Linux does).
const (
	minEphemeralPort = 1024
	maxEphemeralPort = 65535
	// maxPortAttempts is the most ports tried in a range before the
	// tries halve at random places (OVS's nat_get_unique_l4).
	maxPortAttempts = 128
	// maxAddrDelta bounds an IPv6 range's span, as OVS does: beyond 2^32
	// addresses the hash would not reach the rest anyway.
	maxAddrDelta = 0xfffffffe
)

// natInsert chooses locked new connection c's translated reply tuple and
// places c in the table under it (OVS's nat_get_unique_tuple): one
// address from the range, picked by a hash of the connection (of its
// source address only if Persistent), then the first free port from an
// offset in the range (for DNAT, destination ports first, then source
// ports). replyTaken means the range is exhausted.
func (t *Tracker) natInsert(c *conn, slot uint32, n *NAT, now int64) insertResult {
	fwd := &c.key[0]
	rev := fwd.Reverse()
	snat := n.Kind == SNAT
	c.nat = natDst
	if snat {
		c.nat = natSrc
	}

	basis := t.seed
	if n.Persistent {
		basis = 0
	}
	h := natHash(fwd, basis, n)
	var off uint32
	switch {
	case n.Random:
		off = rand.Uint32()
	case n.Persistent:
		off = uint32(natHash(fwd, t.seed, n))
	default:
		off = uint32(h)
	}

	addr := n.MinAddr
	switch {
	case !addr.IsZero():
		maxAddr := n.MaxAddr
		if maxAddr.IsZero() {
			maxAddr = n.MinAddr
		}
		addr = addrInRange(n.MinAddr, maxAddr, uint32(h), fwd.IPv6)
	case snat:
		addr = fwd.Src.Addr
	default:
		addr = fwd.Dst.Addr
	}
	if snat {
		rev.Dst.Addr = addr
	} else {
		rev.Src.Addr = addr
	}
	c.key[1] = rev

	icmp := fwd.Proto == header.ProtoICMP && !fwd.IPv6
	if !hasPorts(fwd.Proto) && !icmp {
		return t.insert(c, slot, now)
	}

	minPort, maxPort := n.MinPort, n.MaxPort
	if maxPort == 0 {
		maxPort = minPort
	}
	portRange := minPort != 0
	sCur, sMin, sMax := fwd.Src.Port, uint16(0), uint16(0)
	if snat && portRange {
		sMin, sMax = minPort, maxPort
		sCur = sMin + uint16(off%(uint32(sMax-sMin)+1))
	} else {
		sMin, sMax = portClass(sCur)
	}
	dCur := fwd.Dst.Port
	if !snat && portRange {
		dCur = minPort + uint16(off%(uint32(maxPort-minPort)+1))
	}
	c.key[1].Src.Port, c.key[1].Dst.Port = dCur, sCur

	if !snat && portRange {
		if res, done := t.natPorts(c, slot, now, &c.key[1].Src.Port, nil, dCur, minPort, maxPort); done {
			return res
		}
	}
	// The source port, here the reply's destination; an ICMP
	// identifier is both ends' "port".
	var peer *uint16
	if icmp {
		peer = &c.key[1].Src.Port
	}
	if res, done := t.natPorts(c, slot, now, &c.key[1].Dst.Port, peer, sCur, sMin, sMax); done {
		return res
	}
	return replyTaken
}

// portClass is the range SNAT without a port range keeps port p in.
func portClass(p uint16) (uint16, uint16) {
	switch {
	case p < 512:
		return 1, 511
	case p < 1024:
		return 600, 1023
	}
	return minEphemeralPort, maxEphemeralPort
}

// natPorts tries ports for *port (and *peer, if any) from cur over
// [lo, hi], wrapping, until c inserts: at most 128, then half as many
// from a random place, and so on down to 16 (OVS's nat_get_unique_l4),
// which bounds a commit's cost when the range is nearly full. done is
// false when no port was free; *port is then cur again.
func (t *Tracker) natPorts(c *conn, slot uint32, now int64, port, peer *uint16, cur, lo, hi uint16) (insertResult, bool) {
	span := uint32(hi) - uint32(lo) + 1
	attempts := min(span, maxPortAttempts)
	first := cur
	for {
		tries := span
		if cur < lo || cur > hi {
			// The packet's own port first, though outside the range.
			tries++
		}
		for i := uint32(0); i < tries && i < attempts; i++ {
			*port = cur
			if peer != nil {
				*peer = cur
			}
			if res := t.insert(c, slot, now); res != replyTaken {
				return res, true
			}
			if cur < lo || cur >= hi {
				cur = lo
			} else {
				cur++
			}
		}
		if attempts >= span || attempts < 16 {
			break
		}
		attempts /= 2
		cur = lo + uint16(rand.Uint32()%span)
	}
	*port = first
	if peer != nil {
		*peer = first
	}
	return replyTaken, false
}

// natHash hashes a connection for its NAT choices: its whole tuple mixed
// with basis, or its source address alone when basis is 0 (persistent),
// and the range.
func natHash(k *Tuple, basis uint64, n *NAT) uint64 {
	le := binary.LittleEndian
	var h uint64
	if basis == 0 {
		h = mix(le.Uint64(k.Src.Addr[:8]), le.Uint64(k.Src.Addr[8:]))
	} else {
		h = k.hash(basis)
	}
	h = mix(h^le.Uint64(n.MinAddr[:8]), le.Uint64(n.MinAddr[8:]))
	h = mix(h^le.Uint64(n.MaxAddr[:8]), le.Uint64(n.MaxAddr[8:]))
	return mix(h^(uint64(n.MinPort)|uint64(n.MaxPort)<<16), uint64(k.Zone)|uint64(k.Proto)<<16|uint64(b2u(k.IPv6))<<24)
}

// addrInRange is the address h picks in [lo, hi].
func addrInRange(lo, hi Addr, h uint32, ipv6 bool) Addr {
	be := binary.BigEndian
	var out Addr
	if !ipv6 {
		a, b := be.Uint32(lo[:4]), be.Uint32(hi[:4])
		off := h
		if span := b - a + 1; span != 0 {
			off = h % span
		}
		be.PutUint32(out[:4], a+off)
		return out
	}
	loHi, loLo := be.Uint64(lo[:8]), be.Uint64(lo[8:])
	hiHi, hiLo := be.Uint64(hi[:8]), be.Uint64(hi[8:])
	delta := uint64(maxAddrDelta)
	if loHi == hiHi && loLo <= hiLo || loHi+1 == hiHi && loLo > hiLo {
		delta = min(hiLo-loLo, maxAddrDelta)
	}
	sum, carry := bits.Add64(loLo, uint64(h%uint32(delta+1)), 0)
	be.PutUint64(out[:8], loHi+carry)
	be.PutUint64(out[8:], sum)
	return out
}

// handleNAT applies locked connection c's translation to a packet of it,
// unless an earlier ct() of this zone translated it already (OVS's
// handle_nat).
func (t *Tracker) handleNAT(c *conn, p *Packet, zone uint16, reply, related bool) Rewrite {
	md := &p.CT
	if c.nat == 0 || md.State&(StateSrcNAT|StateDstNAT) != 0 && zone == md.Zone {
		return 0
	}
	md.State &^= StateSrcNAT | StateDstNAT
	return t.natPacket(c, p, reply, related)
}

// natPacket translates a packet of locked connection c (OVS's nat_packet):
// its addresses and ports become those of c's tuple for the other
// direction, reversed; an ICMP error's quoted packet, which went the other
// way, is translated as that direction's packets are, so that the error
// names the packet its receiver sent.
func (t *Tracker) natPacket(c *conn, p *Packet, reply, related bool) Rewrite {
	h := &p.Header
	key, act := &c.key[1], c.nat
	if reply {
		key, act = &c.key[0], act.reverse()
	}
	var rw Rewrite
	if act == natSrc {
		p.CT.State |= StateSrcNAT
		rw |= setAddr(&h.Src, key.Dst.Addr, RewriteSrc)
	} else {
		p.CT.State |= StateDstNAT
		rw |= setAddr(&h.Dst, key.Src.Addr, RewriteDst)
	}
	icmpQueryConn := key.Proto == header.ProtoICMP && !key.IPv6
	if related {
		q, before := &h.Inner, h.Inner
		rk := key.Reverse()
		switch {
		case hasPorts(key.Proto):
			q.SrcPort, q.DstPort = rk.Dst.Port, rk.Src.Port
		case icmpQueryConn:
			q.ICMPID = rk.Src.Port
		}
		if act.reverse() == natSrc {
			q.Src = rk.Dst.Addr
		} else {
			q.Dst = rk.Src.Addr
		}
		if *q != before {
			rw |= RewriteInner
		}
		return rw
	}
	switch {
	case hasPorts(key.Proto):
		rw |= setPort(&h.SrcPort, key.Dst.Port, RewriteSrcPort) | setPort(&h.DstPort, key.Src.Port, RewriteDstPort)
	case icmpQueryConn:
		if _, query := icmpQuery(false, h.ICMPType); query {
			rw |= setPort(&h.ICMPID, key.Src.Port, RewriteICMPID)
		}
	}
	return rw
}

func setAddr(field *Addr, v Addr, bit Rewrite) Rewrite {
	if *field == v {
		return 0
	}
	*field = v
	return bit
}

func setPort(field *uint16, v uint16, bit Rewrite) Rewrite {
	if *field == v {
		return 0
	}
	*field = v
	return bit
}
