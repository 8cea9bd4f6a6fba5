package conntrack

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// TestConcurrent runs forwarding threads through one tracker at once,
// on connections of their own and shared ones, committing, translating
// from one small range and tearing down, while others sweep, flush and
// dump; run under -race it checks the locking, and after it the table's
// invariants hold.
func TestConcurrent(t *testing.T) {
	tr := New(Config{MaxConns: 2000, Seed: 3})
	tr.SetZoneLimit(1, 300)
	var clock atomic.Int64
	clock.Store(t0)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	const threads, packets = 4, 3000
	var established atomic.Int64
	for w := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 9))
			for i := range packets {
				now := clock.Load()
				// Its own TCP session, whose reply must find it.
				client := fmt.Sprintf("10.%d.%d.%d", w, i/250%250, 1+i%250)
				p := tcp(client, "10.200.0.1", uint16(1024+i%30000), 80, TCPSyn, 1, 0, 1000, 0)
				run(tr, p, &Action{Commit: true}, now)
				back := tcp("10.200.0.1", client, 80, uint16(1024+i%30000), TCPSyn|TCPAck, 9, 2, 1000, 0)
				if md := run(tr, back, track, now); md.State == StateTracked|StateEstablished|StateReply {
					established.Add(1)
				}
				// Shared flows, some translated from a small range.
				q := randomPacket(r)
				a := &Action{Zone: uint16(r.IntN(2)), Commit: r.IntN(2) == 0, Force: r.IntN(20) == 0}
				if r.IntN(3) == 0 {
					a.NAT = snat("10.99.0.1", "10.99.0.2", 1, 50)
				}
				tr.Execute(q, a, now)
				tr.Execute(q, &Action{Zone: a.Zone, NAT: NAT{Kind: NATExisting}}, now)
			}
		}()
	}
	var side sync.WaitGroup
	side.Add(1)
	go func() {
		defer side.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			now := clock.Add(sec / 10)
			switch i % 3 {
			case 0:
				tr.Sweep(now)
			case 1:
				zone := uint16(1)
				tr.Flush(&Filter{Zone: &zone, Proto: 17}, now)
			default:
				stats := CountConns(tr.Dump(nil, now))
				stats.Format(true)
				tr.Stats()
			}
		}
	}()
	wg.Wait()
	close(stop)
	side.Wait()
	checkInvariants(t, tr, clock.Load(), true)
	// Every session's reply found its connection, unless the table was
	// full when it was committed (the shared flows fill it too).
	if s := tr.Stats(); established.Load()+int64(s.Refused[RefusedFull]) < threads*packets {
		t.Errorf("%d of %d replies established, %d commits refused", established.Load(), threads*packets, s.Refused[RefusedFull])
	}
}
