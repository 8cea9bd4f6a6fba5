// Package porttest provides an in-memory port.Port, so that the switch's
// pipeline can be tested and benchmarked without a kernel.
package porttest

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/port"
)

// Port is an in-memory port. Frames given to Inject are received in order;
// transmitted frames are counted and, when capturing, copied for inspection.
// A port made by NewLoop instead receives the same frames forever, which is
// what a benchmark wants.
type Port struct {
	name string
	wake int // eventfd: readable while frames are waiting

	mu       sync.Mutex
	pending  [][]byte
	loop     [][]byte
	captured [][]byte
	capture  bool
	txLimit  int

	received, released, transmitted, transmitCalls atomic.Uint64
}

// New returns a port that receives what Inject queues and keeps a copy of
// every transmitted frame (see Transmitted).
func New(name string) *Port {
	p := newPort(name)
	p.capture = true
	return p
}

// NewLoop returns a port whose every Receive returns frames (up to the
// caller's batch), and which counts but does not keep transmitted frames.
func NewLoop(name string, frames [][]byte) *Port {
	p := newPort(name)
	p.loop = frames
	return p
}

func newPort(name string) *Port {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		panic("porttest: eventfd: " + err.Error())
	}
	return &Port{name: name, wake: fd}
}

// Inject queues frames to be received.
func (p *Port) Inject(frames ...[]byte) {
	p.mu.Lock()
	p.pending = append(p.pending, frames...)
	p.mu.Unlock()
	var one = [8]byte{1}
	unix.Write(p.wake, one[:])
}

// LimitTransmit makes Transmit accept at most n frames per call, as a full
// transmit ring would; 0 removes the limit.
func (p *Port) LimitTransmit(n int) {
	p.mu.Lock()
	p.txLimit = n
	p.mu.Unlock()
}

// Transmitted returns and forgets the frames transmitted so far.
func (p *Port) Transmitted() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.captured
	p.captured = nil
	return out
}

// Counts are what a port has done so far.
type Counts struct {
	Received, Released, Transmitted uint64
	TransmitCalls                   uint64 // one per batch per port, if batching works
}

// Counts reports what the port has done so far.
func (p *Port) Counts() Counts {
	return Counts{
		Received:      p.received.Load(),
		Released:      p.released.Load(),
		Transmitted:   p.transmitted.Load(),
		TransmitCalls: p.transmitCalls.Load(),
	}
}

func (p *Port) Name() string             { return p.name }
func (p *Port) RxQueues() []port.RxQueue { return []port.RxQueue{(*queue)(p)} }
func (p *Port) Info() port.Info          { return port.Info{Kind: "memory", Queues: 1} }
func (p *Port) Stats() port.Stats        { return port.Stats{} }
func (p *Port) Close() error             { return unix.Close(p.wake) }

func (p *Port) Transmit(frames [][]byte) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(frames)
	if p.txLimit > 0 && n > p.txLimit {
		n = p.txLimit
	}
	if p.capture {
		for _, f := range frames[:n] {
			p.captured = append(p.captured, append([]byte(nil), f...))
		}
	}
	p.transmitted.Add(uint64(n))
	p.transmitCalls.Add(1)
	return n
}

// queue is the port's single receive queue.
type queue Port

func (q *queue) Fd() int { return q.wake }

func (q *queue) Receive(frames []port.Frame) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	src := q.loop
	if src == nil {
		src = q.pending
	}
	n := min(len(frames), len(src))
	for i := range n {
		frames[i] = port.Frame{Data: src[i], Handle: uint64(i)}
	}
	if q.loop == nil {
		q.pending = q.pending[n:]
		if len(q.pending) == 0 {
			var buf [8]byte
			unix.Read(q.wake, buf[:])
		}
	}
	q.received.Add(uint64(n))
	return n
}

func (q *queue) Release(frames []port.Frame) {
	q.released.Add(uint64(len(frames)))
}
