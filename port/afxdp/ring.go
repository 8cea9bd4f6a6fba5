package afxdp

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// ring is one of the four single-producer single-consumer rings an AF_XDP
// socket shares with the kernel. The producer and consumer cursors are free
// running uint32 counters (an entry's slot is cursor & mask), so they wrap
// at 2^32 and every distance between them is computed modulo 2^32.
//
// Each side keeps cached copies of both cursors, as libxdp does, so that a
// batch costs one atomic load of the other side's cursor (and only when the
// cached view runs out) plus one atomic store of its own.
type ring[T uint64 | unix.XDPDesc] struct {
	producer *atomic.Uint32
	consumer *atomic.Uint32
	flags    *atomic.Uint32
	entries  []T
	mask     uint32
	size     uint32

	// For a producer ring, cachedCons is the consumer cursor plus size: the
	// first index the producer may not reserve.
	cachedProd uint32
	cachedCons uint32
}

// ringView is the shared memory of a ring: its cursors, flags and entries.
// len(entries) must be a power of two.
type ringView[T uint64 | unix.XDPDesc] struct {
	producer *atomic.Uint32
	consumer *atomic.Uint32
	flags    *atomic.Uint32
	entries  []T
}

// producerRing is a ring this process fills and the kernel drains: the fill
// and tx rings.
type producerRing[T uint64 | unix.XDPDesc] struct{ ring[T] }

// consumerRing is a ring the kernel fills and this process drains: the rx
// and completion rings.
type consumerRing[T uint64 | unix.XDPDesc] struct{ ring[T] }

func newRing[T uint64 | unix.XDPDesc](v ringView[T]) ring[T] {
	size := uint32(len(v.entries))
	return ring[T]{
		producer:   v.producer,
		consumer:   v.consumer,
		flags:      v.flags,
		entries:    v.entries,
		mask:       size - 1,
		size:       size,
		cachedProd: v.producer.Load(),
		cachedCons: v.consumer.Load(),
	}
}

func newProducerRing[T uint64 | unix.XDPDesc](v ringView[T]) producerRing[T] {
	r := producerRing[T]{newRing(v)}
	r.cachedCons += r.size
	return r
}

func newConsumerRing[T uint64 | unix.XDPDesc](v ringView[T]) consumerRing[T] {
	return consumerRing[T]{newRing(v)}
}

// at returns the entry at free-running index i.
func (r *ring[T]) at(i uint32) *T { return &r.entries[i&r.mask] }

// needsWakeup reports whether the kernel asked for a syscall before it
// will make progress on this ring (XDP_USE_NEED_WAKEUP).
func (r *ring[T]) needsWakeup() bool {
	return r.flags.Load()&unix.XDP_RING_NEED_WAKEUP != 0
}

// free returns how many entries can be reserved, looking at the kernel's
// consumer cursor only when the cached view has fewer than want.
func (r *producerRing[T]) free(want uint32) uint32 {
	n := r.cachedCons - r.cachedProd
	if n >= want {
		return n
	}
	r.cachedCons = r.consumer.Load() + r.size
	return r.cachedCons - r.cachedProd
}

// reserve claims up to n entries and returns how many it claimed and the
// index of the first. Unlike libxdp's all-or-nothing reserve it hands out
// what is free, which is what a caller dropping the excess wants.
func (r *producerRing[T]) reserve(n uint32) (got, first uint32) {
	got = min(n, r.free(n))
	first = r.cachedProd
	r.cachedProd += got
	return got, first
}

// cancel gives back the last n reserved entries, not yet submitted.
func (r *producerRing[T]) cancel(n uint32) {
	r.cachedProd -= n
}

// submit publishes the next n reserved entries to the kernel.
func (r *producerRing[T]) submit(n uint32) {
	r.producer.Store(r.producer.Load() + n)
}

// pending reports how many submitted entries the kernel has not consumed.
func (r *producerRing[T]) pending() uint32 {
	return r.producer.Load() - r.consumer.Load()
}

// available returns how many entries (at most want) are ready, looking at
// the kernel's producer cursor only when the cached view is empty.
func (r *consumerRing[T]) available(want uint32) uint32 {
	n := r.cachedProd - r.cachedCons
	if n == 0 {
		r.cachedProd = r.producer.Load()
		n = r.cachedProd - r.cachedCons
	}
	return min(n, want)
}

// peek claims up to n ready entries and returns how many and the index of
// the first. They stay owned by this side until release.
func (r *consumerRing[T]) peek(n uint32) (got, first uint32) {
	got = r.available(n)
	first = r.cachedCons
	r.cachedCons += got
	return got, first
}

// unpeek gives back the last n peeked entries, not yet released, for a
// later peek to return again.
func (r *consumerRing[T]) unpeek(n uint32) {
	r.cachedCons -= n
}

// release hands the next n peeked entries back to the kernel.
func (r *consumerRing[T]) release(n uint32) {
	r.consumer.Store(r.consumer.Load() + n)
}
