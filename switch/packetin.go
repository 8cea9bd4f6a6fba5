package vswitch

import (
	"slices"
	"sync/atomic"

	"github.com/xswitch/xswitch/flow"
)

// Packet-ins: the frames that the CONTROLLER action sends to the OpenFlow
// agent. The action copies the frame as it is when the action runs, cut
// to its max_len, into its forwarder's queue: a ring of packet-ins and a
// ring of bytes, both allocated with the bridge, which the forwarder alone
// writes and TakePacketIns alone reads (one producer, one consumer, so
// neither ever waits for the other). A full queue, or the controller's
// rate limit, drops the packet-in, never the forwarder's time: they are
// counted as the drops controller_queue and controller_rate (pmd-stats-show,
// dump-ports, the metrics), though the frame's other outputs still happen.
// The bridge's queues hold packetInSlots packet-ins and packetInBytes
// bytes of frames in all, shared out among its threads.

// packetInThread is a thread's part in packet-ins: its queue, the
// controller's rate limit for it, and whether the batch queued some,
// which pinReady tells the agent.
type packetInThread struct {
	pins      *packetInQueue
	pinBucket tokenBucket
	pinQueued bool
	pinReady  chan struct{}
}

const (
	packetInSlots = 1024
	packetInBytes = 2 << 20 // 1024 packet-ins of whole 1500-byte frames, and more
)

// PacketIn is a frame the CONTROLLER action sent, as the agent makes an
// OpenFlow packet-in of it.
type PacketIn struct {
	Reason uint8  // OFPR_* (flow.ReasonNoMatch, ...)
	Table  uint8  // the table of the rule that sent it
	Cookie uint64 // that rule's cookie; all ones for a packet-out's frame
	// Key is the frame's key when the action ran (in_port, metadata,
	// registers: the agent puts in_port and every non-zero one in the
	// packet-in's match).
	Key          flow.Key
	ControllerID uint16
	TotalLen     int    // the frame's length
	Data         []byte // its first max_len bytes, a copy valid until the next TakePacketIns
}

// packetInQueue is one forwarder's packet-ins on their way to the agent.
// Positions in both rings count up for ever; a frame's bytes never wrap
// round the byte ring's end, which skips what is left there instead.
type packetInQueue struct {
	// nslots and nbytes are what the rings hold. They are made at the
	// first push: a bridge that never sends to a controller (most) keeps
	// megabytes less, which its garbage collector would otherwise count
	// as live.
	nslots, nbytes int
	slots          []PacketIn // Data unset: spans says where its bytes are
	spans          []byteSpan
	data           []byte
	// head and tail are the packet-ins taken and written, dataHead the
	// bytes freed; dataTail, the bytes written, is the forwarder's own.
	head, tail atomic.Uint64
	dataHead   atomic.Uint64
	dataTail   uint64
}

type byteSpan struct{ start, end uint64 }

func newPacketInQueue(slots, bytes int) *packetInQueue {
	return &packetInQueue{nslots: slots, nbytes: bytes}
}

// push queues p with frame's first maxLen bytes and reports whether there
// was room. It runs on the forwarder and allocates nothing but the rings,
// at the first packet-in.
func (q *packetInQueue) push(p *PacketIn, frame []byte, maxLen int) bool {
	if q.slots == nil {
		// Before the tail moves: take reads the rings only after it sees
		// the tail past the head.
		q.slots, q.spans, q.data = make([]PacketIn, q.nslots), make([]byteSpan, q.nslots), make([]byte, q.nbytes)
	}
	t := q.tail.Load()
	if t-q.head.Load() == uint64(len(q.slots)) {
		return false
	}
	n := uint64(min(len(frame), maxLen))
	size := uint64(len(q.data))
	start := q.dataTail
	if off := start % size; off+n > size {
		start += size - off
	}
	if start+n-q.dataHead.Load() > size {
		return false
	}
	off := start % size
	copy(q.data[off:off+n], frame)
	i := t % uint64(len(q.slots))
	q.slots[i] = *p
	q.slots[i].TotalLen = len(frame)
	q.spans[i] = byteSpan{start, start + n}
	q.dataTail = start + n
	q.tail.Store(t + 1)
	return true
}

// take moves up to len(dst) packet-ins into dst, their bytes copied into
// arena, and returns how many and how much of arena they use.
func (q *packetInQueue) take(dst []PacketIn, arena []byte) (n, used int) {
	h, t := q.head.Load(), q.tail.Load()
	if h == t {
		return 0, 0 // and the rings may not be made yet
	}
	size := uint64(len(q.data))
	for ; h < t && n < len(dst); h++ {
		i := h % uint64(len(q.slots))
		s := q.spans[i]
		length := int(s.end - s.start)
		if used+length > len(arena) {
			break
		}
		off := s.start % size
		dst[n] = q.slots[i]
		dst[n].Data = arena[used : used+length : used+length]
		copy(dst[n].Data, q.data[off:])
		used += length
		n++
		q.dataHead.Store(s.end)
	}
	q.head.Store(h)
	return n, used
}

func (q *packetInQueue) waiting() bool { return q.tail.Load() != q.head.Load() }

// PacketInReady is signalled (non-blocking, capacity 1) when packet-ins
// wait: after a batch, or a packet-out, that queued some, and by a
// TakePacketIns that left some.
func (b *Bridge) PacketInReady() <-chan struct{} { return b.pinReady }

// TakePacketIns moves up to len(dst) waiting packet-ins into dst and
// returns how many; their Data stays valid until the next call.
func (b *Bridge) TakePacketIns(dst []PacketIn) int {
	b.pinMu.Lock()
	defer b.pinMu.Unlock()
	if b.pinArena == nil {
		// Made with the first packet-in, as the rings are: before it,
		// there is nothing to take.
		if !slices.ContainsFunc(b.pins, (*packetInQueue).waiting) {
			return 0
		}
		size := 0
		for _, q := range b.pins {
			size += q.nbytes // what they can hold all at once
		}
		b.pinArena = make([]byte, size)
	}
	n, used := 0, 0
	for _, q := range b.pins {
		k, u := q.take(dst[n:], b.pinArena[used:])
		n, used = n+k, used+u
	}
	for _, q := range b.pins {
		if q.waiting() {
			signal(b.pinReady)
			break
		}
	}
	return n
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// controllerSpec is a CONTROLLER action as a decision resolved it: the
// packet-in it makes, but for the frame, and how much of the frame.
type controllerSpec struct {
	in     PacketIn
	maxLen int
}

// toController is the CONTROLLER action: a packet-in of frame, unless the
// rate limit or a full queue drops it.
func (f *forwarder) toController(c *controllerSpec, frame []byte, now int64) {
	switch {
	case !f.pinBucket.take(now):
		f.drops.count(dropControllerRate)
	case !f.pins.push(&c.in, frame, c.maxLen):
		f.drops.count(dropControllerQueue)
	default:
		f.pinQueued = true
	}
}

// notifyPacketIns signals the agent if the batch queued packet-ins.
func (f *forwarder) notifyPacketIns() {
	if f.pinQueued {
		f.pinQueued = false
		signal(f.pinReady)
	}
}

// The controller's rate limit. OVS has none unless controller_rate_limit
// is set, and then a burst of a quarter of the rate unless
// controller_burst_limit says otherwise; so has xswitch.

// SetControllerRateLimit caps the packet-ins the bridge makes at
// perSecond, in bursts of up to burst (0: perSecond/4, at least 1);
// perSecond 0 removes the cap. It takes effect from the next batch.
func (b *Bridge) SetControllerRateLimit(perSecond, burst uint32) {
	if burst == 0 {
		burst = max(perSecond/4, 1)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.onEachForwarder(func(f *forwarder) {
		// Each thread has its share, rounded up.
		n := uint64(f.threads)
		f.pinBucket.setLimit((uint64(perSecond)+n-1)/n, (uint64(burst)+n-1)/n, f.now())
	})
}
