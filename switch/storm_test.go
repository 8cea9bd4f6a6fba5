package vswitch

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/internal/race"
	"github.com/xswitch/xswitch/port"
	"github.com/xswitch/xswitch/port/porttest"
)

// TestTokenBucketNeverExceedsItsRate checks the bucket against the
// definition of what it promises, on random arrival times: over any span
// of time it admits at most one burst plus the rate times the span, and
// frames spaced wider than the rate are all admitted.
func TestTokenBucketNeverExceedsItsRate(t *testing.T) {
	for _, rate := range []uint64{1, 7, 1000, 250000} {
		// Arrivals at about 4 times the rate, then at about 2/3 of it.
		for _, spread := range []int64{int64(time.Second) / 2, 3 * int64(time.Second)} {
			var b tokenBucket
			b.setRate(rate, 0)
			burst := float64(rate) // one second's worth
			var admitted []int64
			now := int64(0)
			for range 200000 {
				now += rand.Int64N(spread/int64(rate)) + 1
				if b.take(now) {
					admitted = append(admitted, now)
				}
			}
			// Frames i..j, admitted over span seconds, number at most
			// burst + rate*span: with g(k) = k - rate*t(k), that is
			// g(j) - g(i) <= burst - 1 for every i < j.
			minG := 0.0
			for k, at := range admitted {
				g := float64(k) - float64(rate)*float64(at)/float64(time.Second)
				if k == 0 || g < minG {
					minG = g
				}
				if g-minG > burst-1+1e-6 {
					t.Fatalf("rate %d: admitted %.1f frames more than the rate allows by frame %d; the burst is %.0f", rate, g-minG, k, burst)
				}
			}
			if len(admitted) == 0 {
				t.Fatalf("rate %d: nothing admitted", rate)
			}
		}
		var slow tokenBucket
		slow.setRate(rate, 0)
		for i := range int64(1000) {
			if !slow.take(i * (int64(time.Second)/int64(rate) + 1)) {
				t.Fatalf("rate %d: frame %d, spaced just wider than the rate, was refused", rate, i)
			}
		}
	}
}

func TestTokenBucketZeroRateAdmitsAll(t *testing.T) {
	var b tokenBucket
	b.setRate(0, 0)
	for i := range 1000 {
		if !b.take(int64(i)) {
			t.Fatal("an unlimited bucket refused a frame")
		}
	}
}

// TestStormLimitCapsWhatNormalFloods sends a batch of broadcasts from a
// port limited to 5 frames/s: its burst of 5 floods, the rest are storm
// drops. Unicast to a learned station is not limited, nor is another
// port's flooding.
func TestStormLimitCapsWhatNormalFloods(t *testing.T) {
	ports := newPorts(3)
	f := testForwarder(t, 64, ports...)
	f.setStormLimit(0, 5)
	send(f, ports, 1, frame(broadcast, mac(2), "learn 2"))
	clearTransmitted(ports)

	// Broadcast, multicast and unknown unicast all count.
	var bursts [][]byte
	for i := range 20 {
		dst := [][]byte{broadcast, {0x01, 0x00, 0x5e, 0, 0, 1}, mac(9)}[i%3]
		bursts = append(bursts, frame(dst, mac(1), fmt.Sprint("storm ", i)))
	}
	send(f, ports, 0, bursts...)
	wantFrames(t, ports[1], bursts[:5]...)
	wantFrames(t, ports[2], bursts[:5]...)
	if got := f.ports[0].counters.dropped[dropStorm].Load(); got != 15 {
		t.Errorf("storm drops = %d; want 15", got)
	}

	var unicast [][]byte
	for i := range 20 {
		unicast = append(unicast, frame(mac(2), mac(1), fmt.Sprint("to 2 ", i)))
	}
	send(f, ports, 0, unicast...)
	wantFrames(t, ports[1], unicast...)
	send(f, ports, 1, bursts...) // port 2 has no limit
	wantFrames(t, ports[2], bursts...)

	f.setStormLimit(0, 0)
	send(f, ports, 0, bursts...)
	wantFrames(t, ports[2], bursts...)
	if got := f.ports[0].counters.dropped[dropStorm].Load(); got != 15 {
		t.Errorf("storm drops = %d after the limit was lifted; want still 15", got)
	}
}

func TestStormLimitedForwardingAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector changes allocation counts")
	}
	frames := make([][]byte, DefaultBatchSize)
	for i := range frames {
		frames[i] = frame(broadcast, mac(1), fmt.Sprint(i))
	}
	f, _ := loopForwarder(t, frames, portVLAN{})
	f.addPort(&bridgePort{Port: porttest.NewLoop("out", nil), ofport: 2})
	f.setStormLimit(0, 1000)
	if allocs := testing.AllocsPerRun(100, func() { f.forwardBatch(f.queues[0]) }); allocs != 0 {
		t.Fatalf("forwarding a storm-limited batch allocates %.1f times; want 0", allocs)
	}
	if f.ports[0].counters.dropped[dropStorm].Load() == 0 {
		t.Fatal("the limit dropped nothing: the test proves nothing")
	}
}

// TestBridgeSetStormLimit goes through the bridge's own API, between the
// forwarder's batches.
func TestBridgeSetStormLimit(t *testing.T) {
	b := newTestBridge(t)
	ports := newPorts(2)
	for i, p := range ports {
		if _, err := b.AddPort(p, PortOptions{OFPort: uint16(i + 1), StormLimit: 3}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.SetStormLimit("nope", 1); err == nil {
		t.Error("SetStormLimit of a missing port succeeded")
	}
	var frames [][]byte
	for i := range 10 {
		frames = append(frames, frame(broadcast, mac(1), fmt.Sprint(i)))
	}
	ports[0].Inject(frames...)
	waitTransmitted(t, ports[1], 3)
	deadline := time.Now().Add(5 * time.Second)
	for b.Ports()[0].Stats.RxStormDropped != 7 {
		if time.Now().After(deadline) {
			t.Fatalf("storm drops = %d; want 7", b.Ports()[0].Stats.RxStormDropped)
		}
		time.Sleep(time.Millisecond)
	}
	if err := b.SetStormLimit(ports[0].Name(), 0); err != nil {
		t.Fatal(err)
	}
	ports[0].Inject(frames...)
	waitTransmitted(t, ports[1], 13)
}

// twoQueues is a port with two receive queues, as a NIC with RSS has.
type twoQueues struct{ *porttest.Port }

func (p twoQueues) RxQueues() []port.RxQueue {
	q := p.Port.RxQueues()[0]
	return []port.RxQueue{q, q}
}

// TestStormLimitIsSharedAmongThreads: two threads that each serve one of
// a port's two queues each limit it to half its limit, and a thread that
// serves both queues of a port to all of it.
func TestStormLimitIsSharedAmongThreads(t *testing.T) {
	opts := Options{}.withDefaults()
	place := firstOf(2, opts)
	p := twoQueues{porttest.New("nic")}
	t.Cleanup(func() { p.Close() })
	other := porttest.New("other")
	t.Cleanup(func() { other.Close() })
	for i := range 2 {
		place.index = i
		f, err := newForwarder(opts, flow.NewClassifier(), place)
		if err != nil {
			t.Fatal(err)
		}
		f.addPort(&bridgePort{Port: p, ofport: 1})
		f.addPort(&bridgePort{Port: other, ofport: 2})
		f.setStormLimit(0, 1001)
		f.setStormLimit(1, 10)
		if got, want := f.storm[0].depth/f.storm[0].cost, int64(501); got != want {
			t.Errorf("thread %d: its half of a limit of 1001 admits %d a second; want %d", i, got, want)
		}
		// The other port's one queue is thread 0's: the whole limit there.
		if got, want := f.storm[1].cost, map[int]int64{0: int64(time.Second) / 10, 1: 0}[i]; got != want {
			t.Errorf("thread %d: the one-queue port's frame cost is %d; want %d", i, got, want)
		}
	}
}
