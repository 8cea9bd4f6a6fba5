package afxdp

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/port"
)

// A frame longer than what one UMEM frame receives arrives, on a socket
// bound with XDP_USE_SG, as a chain of descriptors, each but the last
// flagged XDP_PKT_CONTD. The switch wants one contiguous []byte per frame,
// so Receive copies a chain into one of the queue's reassembly buffers
// (a 9 KB copy is cheap next to the copy the kernel made already), and
// Release gives back both the buffer and every UMEM frame of the chain. A
// frame in one descriptor is handed out in place, as always.
//
// Receive consumes whole frames only. The kernel publishes a chain at
// once, but the end of a batch, or running out of reassembly buffers, can
// fall inside one: its descriptors then stay on the rx ring, where the
// next Receive finds them. A chain too long for the queue is dropped,
// every UMEM frame of it back to the fill ring, and counted as oversize.

const (
	// chainSlots is how many chained frames a queue holds at once. A batch
	// takes at most that many; the rest wait on the rx ring for the next.
	chainSlots = 64
	// maxRxChain bounds the descriptors of one received frame: an
	// xdp_buff has a head and at most MAX_SKB_FRAGS (17 unless the kernel
	// is configured otherwise) fragments. A chain that has not ended by
	// then is dropped.
	maxRxChain = 18
	// chainHandle marks a Frame.Handle that is a reassembly slot's index
	// rather than a UMEM address, which never reaches this bit.
	chainHandle = 1 << 63
)

// rxQueue is the receive side of one socket.
type rxQueue struct {
	s         *socket
	frameSize uint32
	// maxFrame is the longest frame Receive hands out.
	maxFrame int

	// slots are the reassembly buffers, none on a socket bound without
	// multi-buffer; freeSlots indexes those not holding a frame.
	slots     []chainSlot
	freeSlots []uint32
	// discarding is set while the rest of a dropped chain is still to come
	// off the rx ring.
	discarding bool
	// oversize counts the frames dropped here for their length. Stats reads
	// it from other goroutines.
	oversize atomic.Uint64
}

// chainSlot holds one chained frame from Receive until Release.
type chainSlot struct {
	buf    []byte   // maxFrame plus room for a rewrite to grow the frame
	chunks []uint64 // the UMEM frames the chain arrived in
}

var _ port.RxQueue = (*rxQueue)(nil)

func newRxQueue(s *socket, frameSize uint32, maxFrame int, multiBuffer bool) *rxQueue {
	q := &rxQueue{s: s, frameSize: frameSize, maxFrame: maxFrame}
	if !multiBuffer {
		return q
	}
	q.slots = make([]chainSlot, chainSlots)
	q.freeSlots = make([]uint32, 0, chainSlots)
	slotSize := maxFrame + growRoom
	backing := make([]byte, chainSlots*slotSize)
	for i := range q.slots {
		q.slots[i] = chainSlot{
			buf:    backing[i*slotSize : (i+1)*slotSize : (i+1)*slotSize],
			chunks: make([]uint64, 0, maxRxChain),
		}
		q.freeSlots = append(q.freeSlots, uint32(chainSlots-1-i))
	}
	return q
}

// Receive takes up to len(frames) frames off the rx ring. Each Data views
// its UMEM frame, or its reassembly buffer for a chain, with capacity to
// the buffer's end so that a rewrite may grow the frame in place.
func (q *rxQueue) Receive(frames []port.Frame) int {
	rx := &q.s.rx
	got, first := rx.peek(uint32(len(frames)) * maxRxChain)
	if got == 0 {
		// A zero-copy driver that found the fill ring empty stops and waits
		// for a syscall; Release has refilled it since, so wake it.
		if q.s.fill.needsWakeup() {
			q.s.kickRx()
		}
		return 0
	}
	umem := q.s.umem
	var used uint32 // descriptors consumed, from first
	if q.discarding {
		used = q.discard(first, got)
	}
	n := 0
	for n < len(frames) && used < got {
		d := rx.at(first + used)
		if d.Options&unix.XDP_PKT_CONTD == 0 {
			end := d.Addr + uint64(d.Len)
			frameEnd := d.Addr&^uint64(q.frameSize-1) + uint64(q.frameSize)
			frames[n] = port.Frame{Data: umem[d.Addr:end:frameEnd], Handle: d.Addr}
			n++
			used++
			continue
		}
		length, descs, whole := q.chainAt(first+used, got-used)
		if !whole && descs < maxRxChain {
			break // its end is past what this call peeked
		}
		if !whole || length > q.maxFrame || len(q.slots) == 0 {
			q.oversize.Add(1)
			used += q.discard(first+used, got-used)
			continue
		}
		if len(q.freeSlots) == 0 {
			break
		}
		q.reassemble(&frames[n], first+used, descs, length)
		n++
		used += descs
	}
	// The descriptors consumed are copied out, so their slots can go back
	// now; the frames themselves stay ours until Release puts them on the
	// fill ring. What was peeked beyond them is the next call's.
	rx.unpeek(got - used)
	rx.release(used)
	return n
}

// chainAt measures the chain that starts at rx ring index first, within
// the avail descriptors peeked: its length in bytes, its descriptors, and
// whether its last descriptor was among them. It looks at no more than
// maxRxChain descriptors.
func (q *rxQueue) chainAt(first, avail uint32) (length int, descs uint32, whole bool) {
	for descs < min(avail, maxRxChain) {
		d := q.s.rx.at(first + descs)
		length += int(d.Len)
		descs++
		if d.Options&unix.XDP_PKT_CONTD == 0 {
			return length, descs, true
		}
	}
	return length, descs, false
}

// reassemble copies the chain of descs descriptors at rx ring index first,
// length bytes in all, into a free slot and makes frame of it.
func (q *rxQueue) reassemble(frame *port.Frame, first, descs uint32, length int) {
	slot := q.freeSlots[len(q.freeSlots)-1]
	q.freeSlots = q.freeSlots[:len(q.freeSlots)-1]
	s := &q.slots[slot]
	off := 0
	for i := range descs {
		d := q.s.rx.at(first + i)
		off += copy(s.buf[off:], q.s.umem[d.Addr:d.Addr+uint64(d.Len)])
		s.chunks = append(s.chunks, d.Addr&^uint64(q.frameSize-1))
	}
	*frame = port.Frame{Data: s.buf[:length], Handle: chainHandle | uint64(slot)}
}

// discard drops descriptors from rx ring index first up to and including
// the next one that ends a frame, within the avail peeked, and returns
// their UMEM frames to the fill ring. It returns how many it consumed and
// remembers, if the frame's end was not among them, to go on next time.
func (q *rxQueue) discard(first, avail uint32) uint32 {
	n := uint32(0)
	q.discarding = true
	for n < avail {
		d := q.s.rx.at(first + n)
		n++
		if d.Options&unix.XDP_PKT_CONTD == 0 {
			q.discarding = false
			break
		}
	}
	fill := &q.s.fill
	// The fill ring holds every receive frame, so this reservation cannot
	// come up short.
	got, to := fill.reserve(n)
	for i := range got {
		*fill.at(to + i) = q.s.rx.at(first+i).Addr &^ uint64(q.frameSize-1)
	}
	fill.submit(got)
	return n
}

// Release puts the frames' buffers back on the fill ring in one batch,
// every UMEM frame of a chain included, and frees their reassembly slots.
func (q *rxQueue) Release(frames []port.Frame) {
	want := uint32(len(frames))
	for _, f := range frames {
		if f.Handle&chainHandle != 0 {
			want += uint32(len(q.slots[f.Handle&^chainHandle].chunks)) - 1
		}
	}
	fill := &q.s.fill
	// The fill ring holds every receive frame, so the reservation cannot
	// come up short for frames that were received and not yet released.
	n, first := fill.reserve(want)
	i := uint32(0)
	for _, f := range frames {
		if f.Handle&chainHandle == 0 {
			if i < n {
				*fill.at(first + i) = f.Handle &^ uint64(q.frameSize-1)
				i++
			}
			continue
		}
		slot := uint32(f.Handle &^ chainHandle)
		s := &q.slots[slot]
		for _, c := range s.chunks {
			if i < n {
				*fill.at(first + i) = c
				i++
			}
		}
		s.chunks = s.chunks[:0]
		q.freeSlots = append(q.freeSlots, slot)
	}
	fill.submit(i)
}

// Fd is the socket, which polls readable when the rx ring has frames.
func (q *rxQueue) Fd() int { return q.s.fd }
