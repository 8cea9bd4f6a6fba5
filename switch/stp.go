package vswitch

// The spanning tree of a bridge, at work. The protocol is package rstp's:
// its state machines run here on a goroutine of their own, never on the
// forwarding path, fed by three sources: a ticker, once a second; the
// BPDUs the forwarders take off their batches; and the bridge's methods.
//
// A forwarder that sees a frame to the Bridge Group Address while the
// bridge runs a spanning tree copies it into a buffer from a fixed pool
// and queues it, without blocking or allocating; when the pool is empty
// the BPDU is dropped and counted, as a full receive ring would drop it.
// What the machines decide comes back through rstp.Env: a port's state is
// set on every forwarder between two batches (forwarder.do) before the
// machines go on, as the standard requires; a flush empties the port's
// entries of the MAC table; a BPDU is sent with the port's own Transmit.
// The forwarders read a port's state from their own table (forwarder.stp),
// so the per-frame path takes no lock for it.

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/xswitch/xswitch/rstp"
)

// stpState is what the spanning tree lets a port do. The zero value,
// forwarding, is every port's when the bridge runs no spanning tree, and
// that of a port that takes no part in it.
type stpState uint8

const (
	stpForwarding stpState = iota
	stpLearning
	stpDiscarding
)

func stpStateOf(s rstp.State) stpState {
	switch s {
	case rstp.Forwarding:
		return stpForwarding
	case rstp.Learning:
		return stpLearning
	}
	return stpDiscarding
}

// isBPDU reports whether frame is sent to the Bridge Group Address.
func isBPDU(frame []byte) bool { return [6]byte(frame[:6]) == rstp.GroupAddress }

// maxBPDUFrame is the most of a frame a queued BPDU keeps: an RST BPDU
// frame is 53 bytes, padded to 60.
const maxBPDUFrame = 128

// bpduQueueSize is how many BPDUs can wait for the machines: hellos from
// hundreds of ports every two seconds.
const bpduQueueSize = 256

type bpduFrame struct {
	port *bridgePort
	n    int
	data [maxBPDUFrame]byte
}

// bpduQueue carries BPDUs from the forwarders to the spanning tree: full
// holds the frames to handle, free the empty buffers; together they hold
// every buffer, so a send never blocks.
type bpduQueue struct {
	free, full chan *bpduFrame
	dropped    atomic.Uint64
}

func newBPDUQueue() *bpduQueue {
	q := &bpduQueue{free: make(chan *bpduFrame, bpduQueueSize), full: make(chan *bpduFrame, bpduQueueSize)}
	for range bpduQueueSize {
		q.free <- new(bpduFrame)
	}
	return q
}

// push queues a copy of frame, or counts it as dropped when no buffer is
// free. It runs on the forwarder and allocates nothing.
func (q *bpduQueue) push(p *bridgePort, frame []byte) {
	select {
	case b := <-q.free:
		b.port, b.n = p, copy(b.data[:], frame)
		q.full <- b
	default:
		q.dropped.Add(1)
	}
}

// spanningTree runs a bridge's rstp.Bridge on its own goroutine.
type spanningTree struct {
	fwds     []*forwarder // the bridge's, which outlive the tree
	queue    *bpduQueue
	requests chan request
	stop     chan struct{}
	exited   chan struct{}

	// Owned by the goroutine.
	sm      *rstp.Bridge
	address [6]byte // the bridge's, for ports that have none of their own
	ports   map[uint16]*bridgePort
	numbers map[*bridgePort]uint16
	frame   [1][]byte // what Transmit sends, its buffer reused
}

func startSpanningTree(fwds []*forwarder, cfg rstp.BridgeConfig) (*spanningTree, error) {
	t := &spanningTree{
		fwds: fwds, queue: newBPDUQueue(),
		requests: make(chan request), stop: make(chan struct{}), exited: make(chan struct{}),
		address: cfg.Address, ports: map[uint16]*bridgePort{}, numbers: map[*bridgePort]uint16{},
	}
	sm, err := rstp.New(cfg, (*stpEnv)(t))
	if err != nil {
		return nil, err
	}
	t.sm = sm
	go t.loop()
	return t, nil
}

func (t *spanningTree) loop() {
	defer close(t.exited)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
			t.sm.Tick()
		case b := <-t.queue.full:
			// A BPDU from a port that takes no part is sunk, as in OVS.
			if n, ok := t.numbers[b.port]; ok {
				t.sm.ReceiveFrame(n, b.data[:b.n])
			}
			b.port = nil
			t.queue.free <- b
		case r := <-t.requests:
			r.fn()
			close(r.done)
		}
	}
}

// do runs fn on the tree's goroutine and returns when it has run.
func (t *spanningTree) do(fn func()) {
	done := make(chan struct{})
	t.requests <- request{fn: fn, done: done}
	<-done
}

// close stops the goroutine; the ports keep the states they had.
func (t *spanningTree) close() {
	close(t.stop)
	<-t.exited
}

// addPort makes p take part, with the number of its OpenFlow port when
// that fits in an RSTP port number, else the lowest free one.
func (t *spanningTree) addPort(p *bridgePort, cfg rstp.PortConfig) error {
	var err error
	t.do(func() {
		n := p.ofport
		if _, taken := t.ports[n]; taken || n > rstp.MaxPortNumber {
			for n = 1; t.ports[n] != nil; n++ {
			}
		}
		if n > rstp.MaxPortNumber {
			err = fmt.Errorf("more than %d ports take part in the spanning tree", rstp.MaxPortNumber)
			return
		}
		t.ports[n], t.numbers[p] = p, n
		if err = t.sm.AddPort(n, cfg); err != nil {
			delete(t.ports, n)
			delete(t.numbers, p)
		}
	})
	return err
}

// removePort makes p take no part; from then on the tree never touches it.
func (t *spanningTree) removePort(p *bridgePort) {
	t.do(func() {
		if n, ok := t.numbers[p]; ok {
			t.sm.RemovePort(n)
			delete(t.ports, n)
			delete(t.numbers, p)
		}
	})
}

// stpEnv is the tree as rstp.Env: it runs on the tree's goroutine, from
// within the machines.
type stpEnv spanningTree

func (e *stpEnv) Transmit(n uint16, bpdu rstp.BPDU) {
	p := e.ports[n]
	src := p.address
	if src == ([6]byte{}) {
		// A locally administered address of the bridge's, one per port.
		src = e.address
		src[0] |= 0x02
		src[4], src[5] = byte(n>>8), byte(n)
	}
	e.frame[0] = bpdu.AppendFrame(e.frame[0][:0], src)
	if p.Transmit(e.frame[:]) == 1 {
		p.counters.txPackets.Add(1)
		p.counters.txBytes.Add(uint64(len(e.frame[0])))
	} else {
		p.counters.txDropped.Add(1)
	}
}

func (e *stpEnv) SetState(n uint16, s rstp.State) {
	slot, state := e.ports[n].slot, stpStateOf(s)
	for _, f := range e.fwds {
		f.do(func() { f.setSTPState(slot, state) })
	}
}

func (e *stpEnv) Flush(n uint16) {
	slot, f := e.ports[n].slot, e.fwds[0] // the threads share one MAC table
	f.do(func() { f.flushMACs(slot) })
}

// flushMACs forgets the addresses learned on slot's port, which the fast
// path's entries may rely on. It runs on the forwarder.
func (f *forwarder) flushMACs(slot uint16) {
	f.fdb.flushPort(slot)
	if f.fp != nil {
		f.fp.bump()
	}
}

// setSTPState sets the state of slot's port. It runs on the forwarder.
func (f *forwarder) setSTPState(slot uint16, s stpState) {
	f.stp[slot] = s
	f.stpChanged()
}

// stpChanged follows a change of the ports' spanning tree states: floods
// reach the ports that forward, and the fast path's entries send only to
// those, and come back for those that forward again. It runs on the
// forwarder.
func (f *forwarder) stpChanged() {
	f.liveness++
	f.rebuildFlood()
	if f.fp != nil {
		f.fp.entriesChanged()
	}
}

// SetRSTP runs the Rapid Spanning Tree Protocol on the bridge as cfg
// configures it, or stops it (nil): then every port forwards, and BPDUs
// are frames like any other. Ports that take part (PortOptions.RSTP)
// discard from the moment it starts until the protocol lets them forward.
func (b *Bridge) SetRSTP(cfg *rstp.BridgeConfig) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fwds == nil {
		return fmt.Errorf("bridge %s is closed", b.name)
	}
	switch {
	case cfg == nil && b.stp == nil:
		return nil
	case cfg == nil:
		b.stp.close()
		b.stp = nil
		b.onEachForwarder(func(f *forwarder) {
			f.bpdus = nil
			clear(f.stp)
			f.stpChanged()
		})
		return nil
	case b.stp != nil:
		var err error
		b.stp.do(func() { err = b.stp.sm.SetConfig(*cfg) })
		return err
	}
	t, err := startSpanningTree(b.fwds, *cfg)
	if err != nil {
		return err
	}
	b.onEachForwarder(func(f *forwarder) {
		f.bpdus = t.queue
		for _, p := range b.ports {
			if p.rstp != nil {
				f.stp[p.slot] = stpDiscarding
			}
		}
		f.stpChanged()
	})
	b.stp = t
	var errs []error
	for _, p := range b.ports {
		if p.rstp != nil {
			errs = append(errs, t.addPort(p, *p.rstp))
		}
	}
	return errors.Join(errs...)
}

// SetPortRSTP changes the named port's part in the spanning tree: cfg
// configures it, nil takes it out, and it then forwards.
func (b *Bridge) SetPortRSTP(name string, cfg *rstp.PortConfig) error {
	if cfg != nil {
		if err := cfg.Validate(); err != nil {
			return err
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.port(name)
	if p == nil {
		return fmt.Errorf("no port %q on bridge %s", name, b.name)
	}
	old := p.rstp
	p.rstp = cfg
	if b.stp == nil {
		return nil
	}
	switch {
	case old == nil && cfg != nil:
		return b.stp.addPort(p, *cfg)
	case old != nil && cfg == nil:
		b.stp.removePort(p)
		b.onEachForwarder(func(f *forwarder) { f.setSTPState(p.slot, stpForwarding) })
	case cfg != nil:
		var err error
		b.stp.do(func() { err = b.stp.sm.SetPortConfig(b.stp.numbers[p], *cfg) })
		return err
	}
	return nil
}

// RSTPStatus is a bridge's spanning tree as rstp-show prints it.
type RSTPStatus struct {
	rstp.Status
	// Names are the ports of Status.Ports, by RSTP port number.
	Names map[uint16]string
	// QueueDropped counts the BPDUs dropped because the machines had not
	// taken the ones before.
	QueueDropped uint64
}

// RSTPStatus reports the bridge's spanning tree, and false when it runs
// none.
func (b *Bridge) RSTPStatus() (RSTPStatus, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stp == nil {
		return RSTPStatus{}, false
	}
	var s RSTPStatus
	b.stp.do(func() {
		s.Status = b.stp.sm.Status()
		s.Names = map[uint16]string{}
		for n, p := range b.stp.ports {
			s.Names[n] = p.Name()
		}
	})
	s.QueueDropped = b.stp.queue.dropped.Load()
	return s, true
}
