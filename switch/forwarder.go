package vswitch

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/conntrack"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/port"
)

// idlePoll bounds a sleep, only so that a lost wakeup would cost a
// second rather than a hang.
const idlePoll = time.Second

// forwarder is one forwarding thread: the loop and what it owns. What
// each stage of a frame's way keeps lives with that stage, in the order a
// frame moves: the view of the bridge it forwards by (ports.go), the
// batch being received (receive.go), the decision cache (cache.go), the
// fast path's offers (fastpath_offer.go), the frame being executed
// (execute.go), the frames waiting to leave (transmit.go), the
// packet-ins (packetin.go) and the batch's counts (counters.go).
type forwarder struct {
	// thread is this forwarder's index among its bridge's threads, which
	// number threads; rebuild deals the queues out by them.
	thread, threads int
	batchSize       int
	epoch           time.Time // of the forwarders' clock (now)
	log             *slog.Logger
	queues          []rxQueue
	pollFds         []unix.PollFd // [0] is the wakeup eventfd, then one per queue
	frames          []port.Frame
	requests        chan request
	wakeFd          int
	busyPoll        bool
	stopped         bool
	clock           loopClock
	exited          chan struct{}
	scratch         [8]byte

	flows *flow.Classifier
	view
	receiver
	tunnelDemux
	decisions *decisionCache[flow.Headers]
	recircs   *decisionCache[recircKey] // conntrack.go
	executor
	transmitter
	batchCounts
	fastPathThread
	packetInThread
	// packetOutDecision is what the packet-out under way decided.
	packetOutDecision decision
}

type request struct {
	fn   func()
	done chan struct{}
}

// threadPlace is a forwarding thread's place among its bridge's threads,
// and what they share.
type threadPlace struct {
	fdb          *macTable
	epoch        time.Time // of the MAC table's timestamps
	index, count int
	tables       *[flow.NumTables]tableCounters
	drops        *dropCounters
	loopLogged   *atomic.Bool
	fp           *fastPath // nil: none
	meters       *meterBank
	tracker      *conntrack.Tracker
	pinReady     chan struct{}
}

// firstOf returns the place of the first of count threads, with the MAC
// table they share (locked per set when there is more than one), and
// meters in memory of their own, until a fast path's take their place.
func firstOf(count int, opts Options) threadPlace {
	fdb := newMACTable(opts.MACTableSize, opts.MACAging)
	if count > 1 {
		fdb.locks = make([]sync.Mutex, fdb.setMask+1)
	}
	epoch := time.Now()
	tracker := opts.Conntrack
	if tracker == nil {
		tracker = conntrack.New(conntrack.Config{})
	}
	return threadPlace{fdb: fdb, epoch: epoch, count: count, tracker: tracker,
		tables: new([flow.NumTables]tableCounters), drops: new(dropCounters), loopLogged: new(atomic.Bool),
		meters: newMeterBank(nil, epoch), pinReady: make(chan struct{}, 1)}
}

func newForwarder(opts Options, flows *flow.Classifier, place threadPlace) (*forwarder, error) {
	wake, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("creating the forwarder's wakeup eventfd: %w", err)
	}
	batchSize := opts.BatchSize
	f := &forwarder{
		batchSize: batchSize,
		thread:    place.index,
		threads:   place.count,
		epoch:     place.epoch,
		log:       cmp.Or(opts.Logger, slog.Default()),
		frames:    make([]port.Frame, batchSize),
		requests:  make(chan request, 1),
		wakeFd:    wake,
		busyPoll:  opts.BusyPoll,
		exited:    make(chan struct{}),
		flows:     flows,
		view:      view{fdb: place.fdb},
		receiver:  receiver{extractor: flow.NewExtractor()},
		tunnelDemux: tunnelDemux{
			demux:         map[demuxKey]uint16{},
			remotes:       map[remoteKey]bool{},
			tunFrames:     make([]port.Frame, 0, batchSize),
			tunMetas:      make([]port.TunnelMeta, 0, batchSize),
			tunSlots:      make([]uint16, 0, batchSize),
			tunBatch:      make([]port.Frame, 0, batchSize),
			tunBatchMetas: make([]port.TunnelMeta, 0, batchSize),
		},
		decisions: newDecisionCache(cmp.Or(opts.CacheSize, DefaultCacheSize), translateHeaders),
		recircs:   newDecisionCache(cmp.Or(opts.CacheSize, DefaultCacheSize), translateRecirc),
		executor: executor{copies: newCopyPool(batchSize), meters: place.meters,
			ct: ctFrame{tracker: place.tracker, epoch: conntrack.At(place.epoch)}},
		batchCounts: batchCounts{tableCounters: place.tables, bridgeDrops: place.drops, loopLogged: place.loopLogged},
		fastPathThread: fastPathThread{
			fp: place.fp,
			// NORMAL learns a frame's source at most twice (in
			// translation, and run per frame), and a translation at most
			// maxMACDeps/2 times.
			displaced: make([]uint32, 0, batchSize*(1+maxMACDeps/2)),
		},
		packetInThread: packetInThread{pins: newPacketInQueue(packetInSlots/place.count, packetInBytes/place.count), pinReady: place.pinReady},
	}
	f.decisions.tr.in = xlateIn{view: &f.view, learn: f.learn, meters: place.meters}
	f.recircs.tr.in = f.decisions.tr.in
	f.rebuild()
	return f, nil
}

// start runs the forwarding loop on its own goroutine, whose thread it
// pins to cpus unless that is empty. If pinning fails, nothing runs.
func (f *forwarder) start(cpus []int) error {
	pinned := make(chan error, 1)
	go func() {
		defer close(f.exited)
		runtime.LockOSThread()
		// A thread whose affinity was changed must not go back to the
		// pool, so it stays locked and exits with the goroutine.
		if err := pinThread(cpus); err != nil {
			pinned <- err
			unix.Close(f.wakeFd)
			return
		}
		pinned <- nil
		f.loop()
	}()
	return <-pinned
}

// pinThread restricts the calling thread to cpus, if any are given.
func pinThread(cpus []int) error {
	if len(cpus) == 0 {
		return nil
	}
	var set unix.CPUSet
	for _, cpu := range cpus {
		if cpu < 0 || cpu >= len(set)*64 {
			return fmt.Errorf("CPU %d does not exist", cpu)
		}
		set.Set(cpu)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pinning the forwarding thread to CPUs %v: %w", cpus, err)
	}
	return nil
}

func (f *forwarder) loop() {
	f.clock.start()
	for !f.stopped {
		busy := false
		for i := range f.queues {
			if f.forwardBatch(f.queues[i]) {
				busy = true
			}
		}
		if f.serveRequests() {
			busy = true
		}
		if f.fp != nil {
			f.fastPathChores()
		}
		if busy || f.stopped {
			f.clock.worked()
			continue
		}
		if !f.busyPoll {
			f.sleep()
		}
		f.clock.slept()
	}
}

// do runs fn on the forwarding goroutine between two batches and returns
// when it has run. Calls may come from several goroutines at once (the
// bridge's methods, under Bridge.mu, and its spanning tree's); none may
// come after stop.
func (f *forwarder) do(fn func()) {
	done := make(chan struct{})
	f.requests <- request{fn: fn, done: done}
	one := [8]byte{1}
	unix.Write(f.wakeFd, one[:])
	<-done
}

// stop ends the loop and waits for its goroutine to exit.
func (f *forwarder) stop() {
	f.do(func() { f.stopped = true })
	<-f.exited
	unix.Close(f.wakeFd)
}

// serveRequests runs the waiting requests and reports whether there were any.
func (f *forwarder) serveRequests() (served bool) {
	for {
		select {
		case r := <-f.requests:
			r.fn()
			close(r.done)
			served = true
		default:
			return served
		}
	}
}

func (f *forwarder) sleep() {
	timeout := idlePoll
	if f.fp != nil && f.thread == 0 {
		timeout = fastPathSweep // the sweeper's turn comes round
	}
	_, err := unix.Poll(f.pollFds, int(timeout/time.Millisecond))
	if err != nil && !errors.Is(err, unix.EINTR) {
		// Poll on descriptors we own fails only if one was closed under
		// us, which the request protocol rules out; back off rather than
		// spin if it happens anyway.
		time.Sleep(time.Millisecond)
		return
	}
	if f.pollFds[0].Revents&unix.POLLIN != 0 {
		unix.Read(f.wakeFd, f.scratch[:])
	}
}

// now is the forwarder's monotonic clock, read once per batch.
func (f *forwarder) now() int64 { return int64(time.Since(f.epoch)) }

// loopClock splits the forwarding goroutine's time into busy (receiving,
// forwarding, serving requests) and idle (asleep in poll). It reads the
// clock once per loop iteration, plus once after a sleep, which a system
// call precedes anyway: never once per frame. The totals are atomics so
// that a reader on another goroutine needs no lock.
type loopClock struct {
	busy, idle atomic.Int64 // nanoseconds
	mark       time.Time    // end of the last accounted span; forwarder only
}

func (c *loopClock) start() { c.mark = time.Now() }

// worked accounts the time since the last mark as busy.
func (c *loopClock) worked() {
	now := time.Now()
	c.busy.Add(int64(now.Sub(c.mark)))
	c.mark = now
}

// slept accounts the time since the last mark as idle.
func (c *loopClock) slept() {
	now := time.Now()
	c.idle.Add(int64(now.Sub(c.mark)))
	c.mark = now
}
