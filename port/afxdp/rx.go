package afxdp

import "github.com/xswitch/xswitch/port"

// rxQueue is the receive side of one socket.
type rxQueue struct {
	s         *socket
	frameSize uint32
}

var _ port.RxQueue = (*rxQueue)(nil)

// Receive takes up to len(frames) descriptors off the rx ring. Each Data
// views its UMEM frame, with capacity up to the frame's end so that a
// rewrite may grow the frame in place.
func (q *rxQueue) Receive(frames []port.Frame) int {
	rx := &q.s.rx
	n, first := rx.peek(uint32(len(frames)))
	if n == 0 {
		// A zero-copy driver that found the fill ring empty stops and waits
		// for a syscall; Release has refilled it since, so wake it.
		if q.s.fill.needsWakeup() {
			q.s.kickRx()
		}
		return 0
	}
	umem := q.s.umem
	for i := range n {
		d := rx.at(first + i)
		end := d.Addr + uint64(d.Len)
		frameEnd := d.Addr&^uint64(q.frameSize-1) + uint64(q.frameSize)
		frames[i] = port.Frame{Data: umem[d.Addr:end:frameEnd], Handle: d.Addr}
	}
	// The descriptors are copied out, so their slots can go back now; the
	// frames themselves stay ours until Release puts them on the fill ring.
	rx.release(n)
	return int(n)
}

// Release puts the frames' buffers back on the fill ring in one batch.
func (q *rxQueue) Release(frames []port.Frame) {
	fill := &q.s.fill
	// The fill ring holds every receive frame, so the reservation cannot
	// come up short for frames that were received and not yet released.
	n, first := fill.reserve(uint32(len(frames)))
	for i := range n {
		*fill.at(first + i) = frames[i].Handle &^ uint64(q.frameSize-1)
	}
	fill.submit(n)
}

// Fd is the socket, which polls readable when the rx ring has frames.
func (q *rxQueue) Fd() int { return q.s.fd }
