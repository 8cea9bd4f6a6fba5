package conntrack

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/xswitch/xswitch/header"
)

// The tracker against a slow, obvious model of it: a list of connections
// searched one by one, each protocol's rules written out plainly (TCP's
// without sequence windows: the tracker runs with sequence checking off),
// on random packets from a small set of hosts and ports (so that tuples
// meet), random commits, forces, zones, time steps past timeouts,
// sweeps and flushes, under small limits.

type modelConn struct {
	orig    Tuple
	tcp     [2]TCPState
	other   uint8
	expires int64
}

type model struct {
	conns    []*modelConn
	timeouts [numTimeouts]int64
	max      int
	zoneMax  map[uint16]int
}

func (m *model) find(k Tuple, now int64) (*modelConn, bool) {
	for _, c := range m.conns {
		if now >= c.expires {
			continue
		}
		if c.orig == k {
			return c, false
		}
		if c.orig.Reverse() == k {
			return c, true
		}
	}
	return nil, false
}

func (m *model) remove(c *modelConn) {
	m.conns = slices.DeleteFunc(m.conns, func(x *modelConn) bool { return x == c })
}

func (m *model) zoneCount(z uint16) int {
	n := 0
	for _, c := range m.conns {
		if c.orig.Zone == z {
			n++
		}
	}
	return n
}

func (m *model) execute(h *Header, a *Action, now int64) State {
	k := Tuple{Zone: a.Zone, IPv6: h.IPv6, Proto: h.Proto}
	k.Src.Addr, k.Dst.Addr = h.Src, h.Dst
	icmp := h.Proto == header.ProtoICMP
	switch {
	case icmp:
		// Only echo (8) and its reply (0) are generated.
		k.Src.Port, k.Dst.Port = h.ICMPID, h.ICMPID
		k.Src.ICMPType, k.Dst.ICMPType = h.ICMPType, 8-h.ICMPType
	case h.Proto == header.ProtoTCP || h.Proto == header.ProtoUDP:
		k.Src.Port, k.Dst.Port = h.SrcPort, h.DstPort
	}
	c, reply := m.find(k, now)
	if c != nil && a.Force && reply {
		m.remove(c)
		c = nil
	}
	if c != nil {
		st, reopen := m.step(c, h, reply, now)
		if !reopen {
			return st | StateTracked
		}
		m.remove(c)
	}
	// Could it start a connection?
	switch {
	case h.Proto == header.ProtoTCP:
		f := h.TCPFlags
		if tcpInvalidFlags(f) || f&(TCPSyn|TCPAck) == TCPSyn|TCPAck {
			return StateInvalid | StateTracked
		}
	case icmp && h.ICMPType != 8:
		return StateInvalid | StateTracked
	}
	if !a.Commit && !a.Force {
		return StateNew | StateTracked
	}
	if lim, ok := m.zoneMax[a.Zone]; ok && m.zoneCount(a.Zone) >= lim || len(m.conns) >= m.max {
		return StateNew | StateTracked
	}
	// Expired connections holding either tuple give way.
	m.conns = slices.DeleteFunc(m.conns, func(x *modelConn) bool {
		return now >= x.expires && (x.orig == k || x.orig == k.Reverse() || x.orig.Reverse() == k || x.orig.Reverse() == k.Reverse())
	})
	nc := &modelConn{orig: k}
	switch {
	case h.Proto == header.ProtoTCP:
		nc.tcp = [2]TCPState{TCPSynSent, TCPClosed}
		nc.expires = now + m.timeouts[tmTCPFirst]
	case icmp:
		nc.expires = now + m.timeouts[tmICMPFirst]
	default:
		nc.expires = now + m.timeouts[tmOtherFirst]
	}
	m.conns = append(m.conns, nc)
	return StateNew | StateTracked
}

// step is a packet of c: its state bits, or reopen.
func (m *model) step(c *modelConn, h *Header, reply bool, now int64) (State, bool) {
	est := StateEstablished
	if reply {
		est |= StateReply
	}
	switch {
	case h.Proto == header.ProtoTCP:
		src, dst := &c.tcp[0], &c.tcp[1]
		if reply {
			src, dst = dst, src
		}
		f := h.TCPFlags
		if tcpInvalidFlags(f) {
			return StateInvalid, false
		}
		if f&(TCPSyn|TCPAck) == TCPSyn {
			if *src >= TCPFinWait2 && *dst >= TCPFinWait2 {
				return 0, true
			}
			if *src <= TCPSynSent {
				*src = TCPSynSent
				c.expires = now + m.timeouts[tmTCPFirst]
				return StateNew, false
			}
		}
		if *src < TCPSynSent {
			*src = TCPSynSent
		}
		if f&TCPFin != 0 && *src < TCPClosing {
			*src = TCPClosing
		}
		if f&TCPAck != 0 {
			if *dst == TCPSynSent {
				*dst = TCPEstablished
			} else if *dst == TCPClosing {
				*dst = TCPFinWait2
			}
		}
		if f&TCPRst != 0 {
			*src, *dst = TCPTimeWait, TCPTimeWait
		}
		lo, hi := min(*src, *dst), max(*src, *dst)
		var tm timeout
		switch {
		case lo >= TCPFinWait2:
			tm = tmTCPClosed
		case lo >= TCPClosing:
			tm = tmTCPFinWait
		case lo < TCPEstablished:
			tm = tmTCPOpening
		case hi >= TCPClosing:
			tm = tmTCPClosing
		default:
			tm = tmTCPEstablished
		}
		c.expires = now + m.timeouts[tm]
		return est, false
	case h.Proto == header.ProtoICMP:
		if reply {
			c.other = 1
		}
		if c.other == 0 {
			c.expires = now + m.timeouts[tmICMPFirst]
			return StateNew, false
		}
		c.expires = now + m.timeouts[tmICMPReply]
		return est, false
	}
	if reply {
		c.other = 2
	} else if c.other == 0 {
		c.other = 1
	}
	if c.other == 2 {
		c.expires = now + m.timeouts[tmOtherBidir]
		return est, false
	}
	c.expires = now + m.timeouts[tmOtherMultiple]
	return StateNew, false
}

// randomPacket is a packet between two of four hosts.
func randomPacket(r *rand.Rand) *Packet {
	hosts := []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"}
	a, b := hosts[r.IntN(len(hosts))], hosts[r.IntN(len(hosts))]
	port := func() uint16 { return uint16(1 + r.IntN(3)) }
	switch r.IntN(4) {
	case 0:
		flags := []uint8{TCPSyn, TCPSyn | TCPAck, TCPAck, TCPAck | TCPPsh, TCPFin | TCPAck, TCPRst, TCPRst | TCPAck, TCPSyn | TCPFin, TCPFin}
		return tcp(a, b, port(), port(), flags[r.IntN(len(flags))], r.Uint32(), r.Uint32(), uint16(r.Uint32()), uint32(r.IntN(100)))
	case 1:
		return udp(a, b, port(), port())
	case 2:
		return icmpMsg(a, b, uint8(8*r.IntN(2)), 0, port())
	}
	return other(a, b, 47)
}

func TestAgainstModel(t *testing.T) {
	for seed := range uint64(30) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 1))
			tr := New(Config{MaxConns: 12, Seed: seed + 1})
			tr.SetTCPSeqCheck(false)
			tr.SetZoneLimit(1, 4)
			m := &model{timeouts: tr.timeouts, max: 12, zoneMax: map[uint16]int{1: 4}}
			now := t0
			for step := range 3000 {
				switch r.IntN(40) {
				case 0:
					now += int64(30+r.IntN(31)) * sec
				case 1:
					tr.Sweep(now)
					m.conns = slices.DeleteFunc(m.conns, func(c *modelConn) bool { return now >= c.expires })
				case 2:
					zone := uint16(r.IntN(2))
					tr.Flush(&Filter{Zone: &zone}, now)
					m.conns = slices.DeleteFunc(m.conns, func(c *modelConn) bool { return c.orig.Zone == zone })
				}
				// Whole seconds at times, so that packets meet timeouts
				// exactly.
				if r.IntN(2) == 0 {
					now += int64(r.IntN(3)) * sec
				} else {
					now += int64(r.IntN(int(sec)))
				}
				p := randomPacket(r)
				a := &Action{Zone: uint16(r.IntN(2)), Commit: r.IntN(2) == 0, Force: r.IntN(10) == 0}
				want := m.execute(&p.Header, a, now)
				if got := run(tr, p, a, now); got.State != want {
					t.Fatalf("step %d: %+v %+v: ct_state %s, model %s", step, p.Header, *a, got.State, want)
				}
				if tr.Count() != len(m.conns) {
					t.Fatalf("step %d: %d connections, model %d", step, tr.Count(), len(m.conns))
				}
				if step%100 == 0 {
					compareTables(t, tr, m, now)
				}
			}
			compareTables(t, tr, m, now)
		})
	}
}

func compareTables(t *testing.T, tr *Tracker, m *model, now int64) {
	t.Helper()
	var want []string
	for _, c := range m.conns {
		if now < c.expires {
			want = append(want, fmt.Sprintf("%+v %v %d", c.orig, c.tcp, c.expires))
		}
	}
	var got []string
	for _, e := range tr.Dump(nil, now) {
		got = append(got, fmt.Sprintf("%+v %v %d", e.Orig, [2]TCPState{e.TCP[0].State, e.TCP[1].State}, e.Expires))
		if e.Reply != e.Orig.Reverse() {
			t.Errorf("reply tuple %+v of %+v", e.Reply, e.Orig)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("table:\n%s\nmodel:\n%s", got, want)
	}
}
