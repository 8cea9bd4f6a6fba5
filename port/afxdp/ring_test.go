package afxdp

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// plainView builds a ring's shared memory out of ordinary Go memory, with
// both cursors starting at start.
func plainView[T uint64 | unix.XDPDesc](size int, start uint32) ringView[T] {
	v := ringView[T]{
		producer: new(atomic.Uint32),
		consumer: new(atomic.Uint32),
		flags:    new(atomic.Uint32),
		entries:  make([]T, size),
	}
	v.producer.Store(start)
	v.consumer.Store(start)
	return v
}

func TestProducerRingFullAndPartialReserve(t *testing.T) {
	const start = 100
	v := plainView[uint64](8, start)
	r := newProducerRing(v)

	if got, first := r.reserve(5); got != 5 || first != start {
		t.Fatalf("reserve(5) = %d at %d, want 5 at %d", got, first, start)
	}
	if got, first := r.reserve(5); got != 3 || first != start+5 {
		t.Fatalf("reserve(5) on 3 free = %d at %d, want 3 at %d", got, first, start+5)
	}
	if got, _ := r.reserve(1); got != 0 {
		t.Fatalf("reserve on a full ring = %d, want 0", got)
	}
	r.submit(8)
	if p := v.producer.Load(); p != start+8 {
		t.Fatalf("producer after submit(8) = %d, want %d", p, start+8)
	}
	if p := r.pending(); p != 8 {
		t.Fatalf("pending = %d, want 8", p)
	}

	// The consumer frees 4 slots; the producer sees them only by reloading
	// its cached consumer cursor, which it must do since its cache is empty.
	v.consumer.Add(4)
	if got, first := r.reserve(10); got != 4 || first != start+8 {
		t.Fatalf("reserve(10) after 4 consumed = %d at %d, want 4 at %d", got, first, start+8)
	}
}

func TestProducerRingSubmitPublishesOnlyWhatWasSubmitted(t *testing.T) {
	v := plainView[uint64](8, 0)
	r := newProducerRing(v)
	r.reserve(6)
	r.submit(2)
	if p := v.producer.Load(); p != 2 {
		t.Fatalf("producer after reserving 6 and submitting 2 = %d, want 2", p)
	}
	r.submit(4)
	if p := v.producer.Load(); p != 6 {
		t.Fatalf("producer after submitting 4 more = %d, want 6", p)
	}
}

func TestConsumerRingEmptyPartialAndCachedRefresh(t *testing.T) {
	const start = 7
	v := plainView[unix.XDPDesc](8, start)
	r := newConsumerRing(v)

	if got, _ := r.peek(4); got != 0 {
		t.Fatalf("peek on an empty ring = %d, want 0", got)
	}
	v.producer.Add(3)
	if got, first := r.peek(2); got != 2 || first != start {
		t.Fatalf("peek(2) = %d at %d, want 2 at %d", got, first, start)
	}
	// More arrives, but one cached entry is still unread: peek returns from
	// the cache without touching the shared cursor, as libxdp does.
	v.producer.Add(4)
	if got, first := r.peek(5); got != 1 || first != start+2 {
		t.Fatalf("peek(5) with 1 cached = %d at %d, want 1 at %d", got, first, start+2)
	}
	// The cache is now empty, so the next peek refreshes it.
	if got, first := r.peek(5); got != 4 || first != start+3 {
		t.Fatalf("peek(5) after refresh = %d at %d, want 4 at %d", got, first, start+3)
	}
	r.release(7)
	if c := v.consumer.Load(); c != start+7 {
		t.Fatalf("consumer after release(7) = %d, want %d", c, start+7)
	}
}

func TestRingWrapsAround2To32(t *testing.T) {
	const start = ^uint32(0) - 2 // three slots before the cursors wrap
	v := plainView[uint64](4, start)
	prod := newProducerRing(v)
	cons := newConsumerRing(v)

	for i := range uint64(3) {
		got, first := prod.reserve(4)
		if got != 4 {
			t.Fatalf("round %d: reserve(4) = %d, want 4", i, got)
		}
		for j := range got {
			*prod.at(first + j) = i*10 + uint64(j)
		}
		prod.submit(got)

		got, first = cons.peek(4)
		if got != 4 {
			t.Fatalf("round %d: peek(4) = %d, want 4", i, got)
		}
		for j := range got {
			if e := *cons.at(first + j); e != i*10+uint64(j) {
				t.Fatalf("round %d: entry %d = %d, want %d", i, j, e, i*10+uint64(j))
			}
		}
		cons.release(got)
	}
	const wrapped = 9 // start + 12 modulo 2^32
	if p := v.producer.Load(); p != wrapped {
		t.Fatalf("producer = %d, want %d (wrapped)", p, wrapped)
	}
}

// TestRingPairKeepsOrder drives a producer and a consumer over the same
// memory with random batch sizes, starting just before the cursors wrap,
// and checks against a slice used as a plain FIFO.
func TestRingPairKeepsOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	v := plainView[unix.XDPDesc](16, ^uint32(0)-40)
	prod := newProducerRing(v)
	cons := newConsumerRing(v)

	var fifo []uint64
	var next uint64
	for range 5000 {
		if rng.IntN(2) == 0 {
			want := uint32(rng.IntN(20))
			got, first := prod.reserve(want)
			if wantGot := min(want, 16-uint32(len(fifo))); got != wantGot {
				t.Fatalf("reserve(%d) with %d queued = %d, want %d", want, len(fifo), got, wantGot)
			}
			for j := range got {
				*prod.at(first + j) = unix.XDPDesc{Addr: next}
				fifo = append(fifo, next)
				next++
			}
			prod.submit(got)
			continue
		}
		want := uint32(rng.IntN(20))
		got, first := cons.peek(want)
		if got > want || got > uint32(len(fifo)) {
			t.Fatalf("peek(%d) with %d queued = %d", want, len(fifo), got)
		}
		for j := range got {
			if a := cons.at(first + j).Addr; a != fifo[j] {
				t.Fatalf("entry %d = %d, want %d", j, a, fifo[j])
			}
		}
		fifo = fifo[got:]
		cons.release(got)
	}
}

func TestRingNeedsWakeup(t *testing.T) {
	v := plainView[uint64](4, 0)
	r := newProducerRing(v)
	if r.needsWakeup() {
		t.Fatal("needsWakeup with flags 0")
	}
	v.flags.Store(unix.XDP_RING_NEED_WAKEUP)
	if !r.needsWakeup() {
		t.Fatal("needsWakeup false with XDP_RING_NEED_WAKEUP set")
	}
}

func TestProducerRingCancel(t *testing.T) {
	v := plainView[uint64](8, 0)
	r := newProducerRing(v)
	r.reserve(5)
	r.cancel(3)
	r.submit(2)
	// The cancelled slots are reserved again, right after the submitted ones.
	if got, first := r.reserve(8); got != 6 || first != 2 {
		t.Fatalf("reserve(8) after cancel = %d at %d, want 6 at 2", got, first)
	}
}
