package conntrack

import (
	"encoding/binary"
	"testing"

	"github.com/xswitch/xswitch/header"
)

// checkInvariants checks the table's structure: every connection in the
// maps under both its tuples and found by each in its direction, the
// counts (total and per zone) those of the connections there, within the
// limits. Every zone's count is checked with allZones (65536 of them:
// slow for each step of a fuzzer), else those of zones with connections
// and of zones 0 and 1.
func checkInvariants(t *testing.T, tr *Tracker, now int64, allZones bool) {
	t.Helper()
	entries, conns := 0, 0
	zones := map[uint16]int32{}
	for i := range tr.shards {
		s := &tr.shards[i]
		s.mu.Lock()
		n := 0
		for pos, e := range s.idx.slots {
			if e == 0 {
				continue
			}
			n++
			entries++
			r := entryRef(e)
			c := tr.slab.conn(r.slot())
			k := c.key[b2u(r.reply())]
			if !c.live {
				t.Fatalf("index entry %#x names slot %d, free", e, r.slot())
			}
			if at, found, ok := s.idx.find(&tr.slab, &k, entryHash(e)); !ok || at != pos || found != r {
				t.Fatalf("entry %#x at %d for %+v found at %d as %v (%v)", e, pos, k, at, found, ok)
			}
			if ts, h := tr.place(&k); ts != s || h != entryHash(e) {
				t.Fatalf("%+v in the wrong shard or with the wrong hash", k)
			}
			if !r.reply() {
				conns++
				zones[k.Zone]++
				if c.key[1] == k {
					entries++ // one entry for both directions
				}
			}
		}
		if n != s.idx.n {
			t.Fatalf("index counts %d entries, holds %d", s.idx.n, n)
		}
		s.mu.Unlock()
	}
	if entries != 2*conns {
		t.Fatalf("%d map entries for %d connections", entries, conns)
	}
	if n := tr.Count(); n != conns || n > int(tr.MaxConns()) {
		t.Fatalf("count %d, %d connections, maxconns %d", n, conns, tr.MaxConns())
	}
	check := func(z uint16) {
		if got := tr.zoneCount[z].Load(); got != zones[z] {
			t.Fatalf("zone %d counts %d, holds %d", z, got, zones[z])
		}
	}
	if allZones {
		for z := range numZones {
			check(uint16(z))
		}
	} else {
		check(0)
		check(1)
		for z := range zones {
			check(z)
		}
	}
	_, limits := tr.ZoneLimits()
	for _, l := range limits {
		if l.Count > l.Limit {
			t.Fatalf("zone %d: %d connections over its limit %d", l.Zone, l.Count, l.Limit)
		}
	}
	for _, e := range tr.Dump(nil, now) {
		for dir, k := range []Tuple{e.Orig, e.Reply} {
			c, slot, reply := tr.lookup(&k, now)
			if c == nil {
				t.Fatalf("%+v not found by its %d tuple", e.Orig, dir)
			}
			c.mu.Unlock()
			if makeHandle(slot, c.gen) != e.Handle || reply != (dir == 1 && e.Orig != e.Reply) {
				t.Fatalf("%+v found by its %d tuple as %v reply=%v", e.Orig, dir, makeHandle(slot, c.gen), reply)
			}
		}
	}
}

// fuzzReader hands out the fuzzer's bytes, zeros once they run out.
type fuzzReader struct{ b []byte }

func (r *fuzzReader) byte() byte {
	if len(r.b) == 0 {
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *fuzzReader) u32() uint32 {
	return uint32(r.byte())<<24 | uint32(r.byte())<<16 | uint32(r.byte())<<8 | uint32(r.byte())
}

var fuzzHosts = [2][4]Addr{
	{ip("10.0.0.1"), ip("10.0.0.2"), ip("10.0.0.3"), ip("10.0.0.4")},
	{ip("fc00::1"), ip("fc00::2"), ip("fc00::3"), ip("fc00::4")},
}

// fuzzPacket reads a packet: a protocol, hosts and ports from small sets
// (so that tuples meet), TCP fields, ICMP types (errors quoting a packet
// between the hosts).
func fuzzPacket(r *fuzzReader) Header {
	b := r.byte()
	v6 := b&1 != 0
	hosts := &fuzzHosts[b2u(v6)]
	h := Header{IPv6: v6, Src: hosts[b>>1&3], Dst: hosts[b>>3&3], Fragment: b>>5&7 >= 6, LaterFragment: b>>5&7 == 7,
		FragmentID: uint32(b >> 7)}
	protos := [...]uint8{header.ProtoTCP, header.ProtoUDP, header.ProtoICMP, header.ProtoICMPv6, header.ProtoSCTP, 47, header.ProtoTCP, header.ProtoUDP}
	b = r.byte()
	h.Proto = protos[b&7]
	h.SrcPort, h.DstPort = uint16(b>>3&3), uint16(b>>5&3)
	switch h.Proto {
	case header.ProtoTCP:
		h.TCPFlags = r.byte()
		h.Seq, h.Ack = r.u32(), r.u32()
		h.Window = uint16(r.u32())
		h.Payload = uint32(r.byte()) * 16
		ws := r.byte()
		h.HasWScale, h.WScale = ws&0x80 != 0, ws&0x1f
	case header.ProtoICMP, header.ProtoICMPv6:
		types := [...]uint8{0, 8, 3, 11, 13, 14, 128, 129, 1, 2, 135, 5}
		b = r.byte()
		h.ICMPType, h.ICMPCode, h.ICMPID = types[b%12], b>>7, uint16(r.byte()&3)
		if icmpError(h.IPv6, h.ICMPType) {
			q := fuzzPacket(r)
			h.Inner = Quoted{Valid: !q.Fragment, Src: q.Src, Dst: q.Dst, Proto: q.Proto, SrcPort: q.SrcPort, DstPort: q.DstPort,
				ICMPType: q.ICMPType, ICMPCode: q.ICMPCode, ICMPID: q.ICMPID}
		}
	}
	return h
}

func fuzzAction(r *fuzzReader) *Action {
	b := r.byte()
	a := &Action{Zone: uint16(b & 1), Commit: b&2 != 0, Force: b&0x1c == 0x1c, SetMark: b&0x20 != 0, Mark: uint32(b), MarkMask: 0xff,
		SetLabel: b&0x40 != 0, Label: Label{Lo: uint64(b)}, LabelMask: Label{Lo: 0xf0}}
	n := r.byte()
	switch n & 3 {
	case 1:
		a.NAT.Kind = NATExisting
	case 2, 3:
		a.NAT.Kind = SNAT + NATKind(n&1)
		v6 := n&4 != 0
		a.NAT.MinAddr = fuzzHosts[b2u(v6)][n>>3&3]
		if n&0x20 != 0 {
			a.NAT.MaxAddr = fuzzHosts[b2u(v6)][3]
		}
		if n&0x40 != 0 {
			a.NAT.MinPort, a.NAT.MaxPort = 1, 3
		}
		a.NAT.Persistent, a.NAT.Random = n&0x80 != 0, b&0x80 != 0
		if a.NAT.Validate() != nil {
			a.NAT.MaxAddr = Addr{}
		}
	}
	return a
}

// FuzzTracker feeds arbitrary sequences of packets, actions, time steps,
// sweeps and flushes to a small tracker: it must never panic, and the
// table's invariants must hold after each step.
func FuzzTracker(f *testing.F) {
	f.Add([]byte{3, 0, 0x2b, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0x82, 3, 3, 0x41, 0x2b, 0x12})
	f.Add([]byte{3, 8, 0x3a, 0x43, 3, 0x0a, 0x21, 5, 0x12, 3, 2, 3, 0x4b, 0x02, 0x05})
	f.Add([]byte{3, 1, 0x69, 0, 0, 0xc6, 3, 0x02, 0x0a, 0, 0x01, 0x11, 0xff, 0, 1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		tr := New(Config{MaxConns: 16, Seed: 7})
		tr.SetZoneLimit(1, 5)
		r := &fuzzReader{b: data}
		now := t0
		var p Packet
		// A few hundred steps say all a sequence can say to a table of
		// 16; each step's check scans every shard, so longer inputs
		// would only slow the fuzzer down.
		for step := 0; len(r.b) > 0 && step < 300; step++ {
			switch op := r.byte(); op & 7 {
			case 0:
				now += int64(r.byte()) * sec
			case 1:
				tr.Sweep(now)
			case 2:
				zone := uint16(r.byte() & 1)
				tr.Flush(&Filter{Zone: &zone}, now)
			case 3, 4:
				// The same packet through another ct(), its metadata kept.
				tr.Execute(&p, fuzzAction(r), now)
			default:
				p = Packet{Header: fuzzPacket(r)}
				tr.Execute(&p, fuzzAction(r), now)
			}
			checkInvariants(t, tr, now, false)
		}
		checkInvariants(t, tr, now, true)
	})
}

// FuzzDecodeApplyNAT decodes arbitrary bytes as an IP packet, then
// writes changed addresses and ports into it: neither may panic, and a
// packet rewritten reads back as the header written, checksums holding.
func FuzzDecodeApplyNAT(f *testing.F) {
	var tb testing.T
	syn := tcp("10.1.1.1", "10.1.1.2", 40000, 80, TCPSyn, 7, 0, 29200, 0).Header
	syn.HasWScale, syn.WScale = true, 7
	f.Add(l3Bytes(&tb, &syn), byte(0xff), uint32(0x0a0a0a0a))
	f.Add(l3Bytes(&tb, &udp("fc00::1", "fc00::2", 1, 2).Header), byte(0x0f), uint32(7))
	f.Add(ipv6ICMPError("fc00::9", "fc00::1", 2, tcp("fc00::1", "fc00::2", 40000, 80, TCPSyn, 1, 0, 1000, 0)), byte(0x23), uint32(99))
	f.Add(ipv4ICMPError(&tb, "10.1.1.2", "10.1.1.1", 3, 3, &syn), byte(0x21), uint32(1))
	f.Add(l3Bytes(&tb, &icmpMsg("10.1.1.1", "10.1.1.2", 8, 0, 3).Header), byte(0x10), uint32(5))
	long := udp("fc00::1", "fc00::2", 1, 2).Header
	long.Payload = 100
	for _, frag := range fragmentL3(&tb, l3Bytes(&tb, &long), true, 7, 64) {
		f.Add(frag, byte(0x0f), uint32(8))
	}
	long = udp("10.1.1.1", "10.1.1.2", 1, 2).Header
	long.Payload = 100
	for _, frag := range fragmentL3(&tb, l3Bytes(&tb, &long), false, 7, 64) {
		f.Add(frag, byte(0x0f), uint32(9))
	}
	f.Fuzz(func(t *testing.T, b []byte, what byte, v uint32) {
		b = append([]byte(nil), b...) // the fuzzer's own input must stay as it is
		var h Header
		h.Decode(b, false)
		checked := h
		checked.Decode(b, true)
		if h.Malformed {
			return
		}
		rw := Rewrite(what) & (RewriteSrc | RewriteDst | RewriteSrcPort | RewriteDstPort | RewriteICMPID | RewriteInner)
		var a Addr
		binary.BigEndian.PutUint32(a[12:], v)
		if !h.IPv6 {
			a = AddrFrom4([4]byte(a[12:]))
		}
		port := uint16(v)
		if rw&RewriteSrc != 0 {
			h.Src = a
		}
		if rw&RewriteDst != 0 {
			h.Dst = a
		}
		if rw&RewriteSrcPort != 0 {
			h.SrcPort = port
		}
		if rw&RewriteDstPort != 0 {
			h.DstPort = port
		}
		if rw&RewriteICMPID != 0 {
			h.ICMPID = port
		}
		if rw&RewriteInner != 0 {
			h.Inner.Src, h.Inner.SrcPort, h.Inner.ICMPID = a, port+1, port+2
		}
		if !ApplyNAT(b, &h, rw) {
			return
		}
		// Checksums that held before still hold.
		var again Header
		again.Decode(b, !checked.Malformed)
		switch {
		case again.Malformed:
			t.Fatalf("rewrite broke the checksums: %+v", again)
		case again.Src != h.Src || again.Dst != h.Dst:
			t.Fatalf("addresses read back %v %v, wrote %v %v", again.Src, again.Dst, h.Src, h.Dst)
		case hasPorts(h.Proto) && !h.LaterFragment && (again.SrcPort != h.SrcPort || again.DstPort != h.DstPort):
			t.Fatalf("ports read back %d %d, wrote %d %d", again.SrcPort, again.DstPort, h.SrcPort, h.DstPort)
		case h.Inner.Valid && rw&RewriteInner != 0 && (again.Inner.Src != h.Inner.Src ||
			hasPorts(h.Inner.Proto) && again.Inner.SrcPort != h.Inner.SrcPort ||
			isICMP(h.IPv6, h.Inner.Proto) && again.Inner.ICMPID != h.Inner.ICMPID):
			t.Fatalf("quoted header read back %+v, wrote %+v", again.Inner, h.Inner)
		}
	})
}
