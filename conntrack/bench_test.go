package conntrack

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/xswitch/xswitch/header"
	"github.com/xswitch/xswitch/internal/race"
)

// established sets up an established TCP connection from client, its
// source translated if nat, and returns a segment of it each way.
func established(t testing.TB, tr *Tracker, client Addr, nat bool) (out, back Packet) {
	a := &Action{Commit: true}
	if nat {
		a.NAT = snat("10.9.9.9", "", 0, 0)
	}
	src := client.IP(false).String()
	syn := tcp(src, "10.1.1.2", 40000, 80, TCPSyn, 1000, 0, 65535, 0)
	tr.Execute(syn, a, t0)
	to, port := syn.Src.IP(false).String(), syn.SrcPort // as translated
	tr.Execute(tcp("10.1.1.2", to, 80, port, TCPSyn|TCPAck, 5000, 1001, 65535, 0), &Action{NAT: NAT{Kind: NATExisting}}, t0)
	ack := tcp(src, "10.1.1.2", 40000, 80, TCPAck, 1001, 5001, 65535, 0)
	if md := run(tr, ack, a, t0); md.State&StateEstablished == 0 {
		t.Fatalf("not established: %s", md.State)
	}
	return *ack, *tcp("10.1.1.2", to, 80, port, TCPAck, 5001, 1001, 65535, 0)
}

// TestHitPathAllocatesNothing: a packet of an established connection
// (each way, translated or not, and through a second ct() of the zone),
// decoding it and writing a translation into it allocate nothing.
func TestHitPathAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates")
	}
	tr := newTracker(t)
	out, back := established(t, tr, ip("10.1.1.1"), false)
	nout, nback := established(t, tr, ip("10.1.1.3"), true)
	udpOut := udp("10.1.1.1", "10.1.1.2", 1, 2)
	run(tr, udpOut, commit, t0)
	run(tr, udp("10.1.1.2", "10.1.1.1", 2, 1), track, t0)
	natExisting := &Action{NAT: NAT{Kind: NATExisting}}
	pristine := l3Bytes(t, &nout.Header)
	frame := append([]byte{}, pristine...)
	var p Packet
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"tcp out", func() { p = out; tr.Execute(&p, commit, t0+sec) }},
		{"tcp back", func() { p = back; tr.Execute(&p, track, t0+sec) }},
		{"tcp twice in a zone", func() { p = out; tr.Execute(&p, track, t0+sec); tr.Execute(&p, commit, t0+sec) }},
		{"udp", func() { p = *udpOut; tr.Execute(&p, track, t0+sec) }},
		{"snat out", func() { p = nout; tr.Execute(&p, natExisting, t0+sec) }},
		{"snat back", func() { p = nback; tr.Execute(&p, natExisting, t0+sec) }},
		{"decode, snat, write into the frame", func() {
			copy(frame, pristine)
			p = Packet{}
			p.Decode(frame, true)
			ApplyNAT(frame, &p.Header, tr.Execute(&p, natExisting, t0+sec))
		}},
	} {
		if n := testing.AllocsPerRun(1000, c.f); n != 0 {
			t.Errorf("%s: %v allocations", c.name, n)
		}
	}
	if p.CT.State&StateSrcNAT == 0 || p.Src != ip("10.9.9.9") {
		t.Errorf("the frame's packet was not translated: %+v", p)
	}
}

func BenchmarkEstablished(b *testing.B) {
	tr := New(Config{Seed: 1})
	out, back := established(b, tr, ip("10.1.1.1"), false)
	nout, nback := established(b, tr, ip("10.1.1.3"), true)
	u := udp("10.1.1.1", "10.1.1.2", 1, 2)
	run(tr, u, commit, t0)
	run(tr, udp("10.1.1.2", "10.1.1.1", 2, 1), track, t0)
	natExisting := &Action{NAT: NAT{Kind: NATExisting}}
	for _, c := range []struct {
		name    string
		packets [2]Packet
		a       *Action
	}{
		{"tcp", [2]Packet{out, back}, commit},
		{"udp", [2]Packet{*u, *u}, track},
		{"tcp-snat", [2]Packet{nout, nback}, natExisting},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var p Packet
			for i := 0; b.Loop(); i++ {
				p = c.packets[i&1]
				tr.Execute(&p, c.a, t0+sec)
			}
		})
	}
	// Each thread its own connection: how the shards and connection
	// locks let threads run side by side.
	b.Run("tcp-parallel", func(b *testing.B) {
		var threads atomic.Uint32
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			n := threads.Add(1)
			out, back := established(b, tr, AddrFrom4([4]byte{10, 50, byte(n >> 8), byte(n)}), false)
			var p Packet
			for i := 0; pb.Next(); i++ {
				if i&1 == 0 {
					p = out
				} else {
					p = back
				}
				tr.Execute(&p, commit, t0+sec)
			}
		})
	})
}

// BenchmarkCommit is new connections committed one after another, each
// a new tuple; the table is flushed (outside the timing) every 64k.
func BenchmarkCommit(b *testing.B) {
	for _, c := range []struct {
		name string
		a    *Action
		tcp  bool
	}{
		{"udp", commit, false},
		{"tcp-syn", commit, true},
		{"udp-snat", &Action{Commit: true, NAT: snat("10.9.0.1", "10.9.0.254", 0, 0)}, false},
	} {
		b.Run(c.name, func(b *testing.B) {
			tr := New(Config{Seed: 1})
			var p Packet
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if i&0xffff == 0 && i != 0 {
					b.StopTimer()
					tr.Flush(nil, t0)
					b.StartTimer()
				}
				p = Packet{Header: Header{Src: AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), Dst: ip("10.200.0.1"),
					Proto: header.ProtoUDP, SrcPort: uint16(1024 + i&0x3ff), DstPort: 53}}
				if c.tcp {
					p.Proto, p.TCPFlags, p.Window = header.ProtoTCP, TCPSyn, 65535
				}
				tr.Execute(&p, c.a, t0)
				if p.CT.Conn == 0 {
					b.Fatalf("commit %d refused", i)
				}
			}
		})
	}
}

// BenchmarkSweep is one sweep of a table of 100k connections: when none
// has expired (the cost of looking), and when all have (removing them).
func BenchmarkSweep(b *testing.B) {
	const n = 100000
	fill := func(tr *Tracker) {
		for i := range n {
			p := udp(fmt.Sprintf("10.%d.%d.%d", i>>16, i>>8&0xff, i&0xff), "10.200.0.1", 1000, 53)
			run(tr, p, commit, t0)
		}
	}
	b.Run("none-expired", func(b *testing.B) {
		tr := New(Config{Seed: 1})
		fill(tr)
		b.ReportAllocs()
		for b.Loop() {
			if tr.Sweep(t0+sec) != 0 {
				b.Fatal("swept")
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/conn")
	})
	b.Run("all-expired", func(b *testing.B) {
		tr := New(Config{Seed: 1})
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			fill(tr)
			b.StartTimer()
			if got := tr.Sweep(t0 + 3600*sec); got != n {
				b.Fatalf("swept %d", got)
			}
		}
	})
}

// BenchmarkMemoryPerConnection commits a million UDP connections and
// reports the memory they take, per connection: the slab's slots (off
// the heap, but in a -race build) and the two index entries each, on the
// heap (run it with -benchtime 1x).
func BenchmarkMemoryPerConnection(b *testing.B) {
	const n = 1 << 20
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		tr := New(Config{Seed: 1})
		var p Packet
		for i := range n {
			p = Packet{Header: Header{Src: AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), Dst: ip("10.200.0.1"),
				Proto: header.ProtoUDP, SrcPort: 1024, DstPort: 53}}
			tr.Execute(&p, commit, t0)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if tr.Count() != n {
			b.Fatalf("%d connections", tr.Count())
		}
		used := after.HeapAlloc - before.HeapAlloc
		if chunksOffHeap {
			used += uint64((n + chunkSize - 1) / chunkSize * chunkBytes)
		}
		b.ReportMetric(float64(used)/n, "B/conn")
		runtime.KeepAlive(tr)
	}
}
