package vswitch

// The forwarding pipeline.
//
// A bridge has one forwarding goroutine per thread it is given (one per
// CPU of Options.CPUs), each locked to its OS thread. The bridge's receive
// queues are dealt out among them, and each owns its queues, its flow cache,
// its per-port transmit groups and its scratch arrays, all sized when a port
// is added, so that forwarding a frame allocates nothing and makes no system
// call of its own. The threads share the flow table (immutable versions),
// the counters (atomic), the MAC table (a lock per set, only when there are
// several threads) and the ports' transmit side, which each port serializes.
// System calls happen once per batch: one receive, one transmit (with its
// kick) per output port, one release.
//
// One iteration, for each receive queue in turn:
//
//	receive up to BatchSize frames
//	load the flow table's current version (once per batch)
//	for each frame:
//	    extract its key (flow.Extractor) and find the decision for its
//	    headers in the exact-match cache or, on a miss, work it out by
//	    running the key through the tables (decision.go); run the
//	    decision's actions (actions.go): rewrites change the frame in
//	    place; outputs, NORMAL (learn the source, look up the destination,
//	    else flood, all within the frame's VLAN) and FLOOD append the
//	    frame to each output port's group
//	add the frames under each decision to its rules' and tables'
//	counters, and the drops by reason, once for the batch
//	transmit each non-empty group with one call, count what the ring refused
//	release the batch back to its queue
//
// Frames are transmitted before their batch is released because the groups
// point into the receiving port's memory: transmission copies them out. For
// the same reason a rewrite that follows an output in one action list works
// on a private copy, so that the earlier output sends the frame as it was.
// Copies come from a pool sized for ordinary frames; when jumbo frames fill
// it, the groups are transmitted early and the pool starts over.
//
// When none of its queues had anything to do, a goroutine sleeps in poll(2)
// on their descriptors and on an eventfd that the control plane writes when
// it has a request; in busy-poll mode it goes round again instead.
// Control-plane requests (add or remove a port, read the MAC table) run on
// each forwarding goroutine between its batches, which is why a
// forwarder's own state needs no locks.

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

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/port"
)

const (
	ethHeaderLen = 14
	// idlePoll bounds a sleep, only so that a lost wakeup would cost a
	// second rather than a hang.
	idlePoll = time.Second
)

type forwarder struct {
	batchSize int
	// thread is this forwarder's index among its bridge's threads, which
	// number threads; rebuild deals the queues out by them.
	thread, threads int
	fdb             *macTable
	epoch           time.Time
	flows           *flow.Classifier
	extractor       *flow.Extractor
	decisions       *decisionCache
	key             flow.Key
	run             frameRun
	// counted are the decisions that frames of the current batch went by,
	// whose counts go to their rules and tables once per batch;
	// pipelineDrops are its frames dropped by reason, added to the
	// bridge's once per batch.
	counted       []*decision
	tableCounters *[flow.NumTables]tableCounters
	pipelineDrops pipelineDrops
	bridgeDrops   *dropCounters
	loopLogged    *atomic.Bool // per bridge: a loop is logged once
	log           *slog.Logger
	copies        copyPool
	// drops counts the current batch's frames that NORMAL dropped, by
	// reason; they are added to the input port's counters once per batch.
	drops rxDrops
	// forwardBPDU makes NORMAL forward frames to reserved group addresses
	// (reserved.go) instead of dropping them.
	forwardBPDU bool

	ports   []*bridgePort // by slot; nil for a free slot
	live    []uint16      // slots in use: where ALL sends
	flood   []uint16      // the live slots that forward: where FLOOD and NORMAL flood
	slotOf  []int32       // by OpenFlow port number: its slot, or -1
	queues  []rxQueue
	pollFds []unix.PollFd // [0] is the wakeup eventfd, then one per queue
	frames  []port.Frame
	groups  []txGroup // by slot
	// stormLimit is each port's storm limit in frames/s, by slot; storm
	// holds this thread's token bucket for it (storm.go).
	stormLimit []uint32
	storm      []tokenBucket
	// stp is each port's spanning tree state, by slot, and bpdus where
	// BPDUs go while the bridge runs a spanning tree (stp.go); nil, they
	// are frames like any other.
	stp   []stpState
	bpdus *bpduQueue
	// learnOnly is set for a batch whose input port is learning: NORMAL
	// learns from its frames, and nothing is sent.
	learnOnly bool
	pending   []uint16 // slots whose group holds frames

	// The fast path (fastpath.go), nil when there is none: the view the
	// current batch decides under, the entries it queued, and the slots of
	// the MAC-table entries it displaced that installed entries relied on
	// (displacedLost: more than it could note). The bridge's first thread
	// also sweeps, every fastPathSweep.
	fp            *fastPath
	fpView        *fpView
	fpPending     []fpPending
	displaced     []uint32
	displacedLost bool
	lastSweep     int64

	// pins is this thread's queue of packet-ins, pinBucket the controller's
	// rate limit for it, and pinQueued says that the batch queued some,
	// which pinReady tells the agent (packetin.go).
	pins      *packetInQueue
	pinBucket tokenBucket
	pinQueued bool
	pinReady  chan struct{}
	// The tunnels' demultiplexing (tunnel.go): the tunnel of a frame
	// decapsulated on an underlay, the remotes some tunnel has, and the
	// frames of an underlay's batch while they wait for their tunnel's turn.
	demux     map[demuxKey]uint16
	remotes   map[remoteKey]bool
	lastClaim lastClaim
	// A batch's decapsulated frames, their outer headers' meaning and
	// their tunnels; and one tunnel's of them, when there are several.
	tunFrames     []port.Frame
	tunMetas      []port.TunnelMeta
	tunSlots      []uint16
	tunBatch      []port.Frame
	tunBatchMetas []port.TunnelMeta

	// packetOutDecision is what the packet-out under way decided.
	packetOutDecision decision
	// failOpen forwards every frame as NORMAL, whatever the tables say
	// (Bridge.SetFailOpen).
	failOpen bool

	requests chan request
	wakeFd   int
	busyPoll bool
	stopped  bool
	clock    loopClock
	exited   chan struct{}
	scratch  [8]byte
}

type rxQueue struct {
	slot uint16
	q    port.RxQueue
}

// txGroup collects the frames of one batch bound for one port, and for a
// tunnel how each leaves by it.
type txGroup struct {
	frames [][]byte
	tunnel []port.TunnelTx
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
	pinReady     chan struct{}
}

// firstOf returns the place of the first of count threads, with the MAC
// table they share: locked per set when there is more than one.
func firstOf(count int, opts Options) threadPlace {
	fdb := newMACTable(opts.MACTableSize, opts.MACAging)
	if count > 1 {
		fdb.locks = make([]sync.Mutex, fdb.setMask+1)
	}
	return threadPlace{fdb: fdb, epoch: time.Now(), count: count,
		tables: new([flow.NumTables]tableCounters), drops: new(dropCounters), loopLogged: new(atomic.Bool),
		pinReady: make(chan struct{}, 1)}
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
		fdb:       place.fdb,
		epoch:     place.epoch,
		flows:     flows,
		extractor: flow.NewExtractor(),
		decisions: newDecisionCache(cmp.Or(opts.CacheSize, DefaultCacheSize)),
		log:       cmp.Or(opts.Logger, slog.Default()),

		tableCounters: place.tables,
		bridgeDrops:   place.drops,
		loopLogged:    place.loopLogged,
		copies:        newCopyPool(batchSize),
		frames:        make([]port.Frame, batchSize),
		requests:      make(chan request, 1),
		wakeFd:        wake,
		busyPoll:      opts.BusyPoll,
		exited:        make(chan struct{}),
		fp:            place.fp,
		pins:          newPacketInQueue(packetInSlots/place.count, packetInBytes/place.count),
		pinReady:      place.pinReady,
		demux:         map[demuxKey]uint16{},
		remotes:       map[remoteKey]bool{},
		tunFrames:     make([]port.Frame, 0, batchSize),
		tunMetas:      make([]port.TunnelMeta, 0, batchSize),
		tunSlots:      make([]uint16, 0, batchSize),
		tunBatch:      make([]port.Frame, 0, batchSize),
		tunBatchMetas: make([]port.TunnelMeta, 0, batchSize),
		// NORMAL learns a frame's source at most twice (in translation,
		// and run per frame), and a translation at most maxMACDeps/2 times.
		displaced: make([]uint32, 0, batchSize*(1+maxMACDeps/2)),
	}
	f.decisions.tr.f = f
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

// forwardBatch receives one batch from q and forwards it. It reports whether
// there was anything to do.
func (f *forwarder) forwardBatch(rx rxQueue) bool {
	n := rx.q.Receive(f.frames)
	if n == 0 {
		return false
	}
	frames := f.frames[:n]
	if f.ports[rx.slot].underlay != nil {
		f.forwardUnderlay(rx.slot, frames)
	} else {
		f.forwardFrom(rx.slot, frames, nil)
	}
	rx.q.Release(frames)
	return true
}

// forwardFrom forwards frames that arrived on the port in slot; tunnel
// holds what the outer headers of each said when the port is a tunnel.
func (f *forwarder) forwardFrom(slot uint16, frames []port.Frame, tunnel []port.TunnelMeta) {
	wall := time.Now()
	now := int64(wall.Sub(f.epoch))
	var table *flow.Table
	if f.fp != nil {
		f.fpView = f.fp.view.Load() // its table: see fastpath.go
		table = f.fpView.table
	} else {
		table = f.flows.Load()
	}
	in := f.ports[slot]
	state := f.stp[slot]
	f.learnOnly = state == stpLearning
	var rxBytes, malformed uint64
	for i := range frames {
		data := frames[i].Data
		rxBytes += uint64(len(data))
		// Too short to switch, or a multicast source address (which no
		// real station has, and learning it would poison the MAC table):
		// count and drop.
		if len(data) < ethHeaderLen || isMulticast(data[6:12]) {
			malformed++
			continue
		}
		// The spanning tree takes its BPDUs whatever the port's state, and
		// a port that is not forwarding passes nothing else on.
		if f.bpdus != nil && isBPDU(data) {
			f.bpdus.push(in, data)
			continue
		}
		if state != stpForwarding {
			f.drops.stp++
			if state == stpDiscarding {
				continue
			}
		}
		// Headers that lie about their lengths: count and drop.
		if !f.extractor.Extract(data, in.ofport, &f.key) {
			malformed++
			continue
		}
		if tunnel != nil {
			m := &tunnel[i]
			f.key.TunID, f.key.TunSrc, f.key.TunDst = uint64(m.ID), m.Src, m.Dst
		}
		f.forwardFrame(table, slot, data, now)
	}
	f.flushCounts(wall)
	f.pipelineDrops.flush(f.bridgeDrops, &in.counters.pipelineDropped)
	in.counters.rxPackets.Add(uint64(len(frames)))
	in.counters.rxBytes.Add(rxBytes)
	if malformed > 0 {
		in.counters.rxErrors.Add(malformed)
	}
	f.drops.flush(&in.counters)
	f.transmitGroups()
	f.notifyPacketIns()
	if f.fp != nil {
		// After the transmit, so that the frames that made the entries
		// do not wait for their installation.
		f.retireDisplaced(now)
		f.installPending(now)
	}
	f.copies.reset()
}

// normal is the NORMAL action: a learning switch, per VLAN (see vlan.go).
// It reports whether it sent the frame anywhere.
//
// A packet-out's frame may come from no port (inSlot noSlot): it comes as
// on a trunk of every VLAN, and its source is not learned, as OVS does
// for frames from the controller.
func (f *forwarder) normal(inSlot uint16, frame []byte, now int64) (sent bool) {
	tagged, vid := frameTag(frame)
	fromPort := inSlot != noSlot
	in := &trunkOfAll
	if fromPort {
		in = &f.ports[inSlot].vlan
	}
	vlan, ok := in.ingress(vid)
	if !ok {
		f.drops.vlan++
		return false
	}
	dst := frame[0:6]
	if !f.forwardBPDU && isReserved(dst) {
		f.drops.reserved++
		return false
	}
	fr := vlanFrame{arrived: frame, vlan: vlan, tagged: tagged, vid: vid}
	if fromPort {
		f.learn(macKey(frame[6:12], vlan), inSlot, now)
	}
	if f.learnOnly {
		return false
	}
	if !isMulticast(dst) {
		if out, ok := f.fdb.lookup(macKey(dst, vlan), now); ok {
			if f.splitHorizon(inSlot, out) {
				f.drops.splitHorizon++
				return false
			}
			if out != inSlot && f.forwards(out) {
				return f.normalOutput(out, &fr)
			}
			return false
		}
	}
	return f.normalFlood(inSlot, &fr, now)
}

// learn is NORMAL's learning of key on slot: it notes a MAC-table entry
// it displaced for the fast path.
func (f *forwarder) learn(key uint64, slot uint16, now int64) macDep {
	dep, displaced := f.fdb.learn(key, slot, now)
	if displaced && f.fp != nil {
		f.noteDisplaced(dep.slot)
	}
	return dep
}

// normalFlood floods fr, which arrived on inSlot, to the ports that carry
// its VLAN, within the input port's storm limit, and reports whether it
// sent it anywhere.
func (f *forwarder) normalFlood(inSlot uint16, fr *vlanFrame, now int64) (sent bool) {
	if inSlot != noSlot && !f.storm[inSlot].take(now) {
		f.drops.storm++
		return false
	}
	for _, out := range f.flood {
		if out != inSlot && !f.splitHorizon(inSlot, out) && f.normalOutput(out, fr) {
			sent = true
		}
	}
	return sent
}

// normalOutput sends fr out of slot in the form that port wants, if the
// port carries fr's VLAN, and reports whether it did.
func (f *forwarder) normalOutput(slot uint16, fr *vlanFrame) bool {
	out := &f.ports[slot].vlan
	if !out.carries(fr.vlan) {
		return false
	}
	frame := f.formFor(fr, out)
	if frame == nil {
		return false
	}
	f.enqueue(slot, frame)
	return true
}

// floodTo sends frame to every port of slots but inPort, the frame's
// input port as the pipeline sees it, and reports whether there was one.
func (f *forwarder) floodTo(slots []uint16, inPort uint16, frame []byte) (sent bool) {
	for _, out := range slots {
		if f.ports[out].ofport != inPort {
			f.enqueue(out, frame)
			sent = true
		}
	}
	return sent
}

// forwards reports whether the spanning tree lets slot's port forward.
func (f *forwarder) forwards(slot uint16) bool { return f.stp[slot] == stpForwarding }

func (f *forwarder) enqueue(slot uint16, frame []byte) {
	if f.learnOnly {
		return // the input port is learning: it passes nothing on
	}
	g := &f.groups[slot]
	if len(g.frames) == cap(g.frames) {
		// Rules may send a frame to one port more than once
		// (output:2,output:2): rather than grow the group, send what it
		// holds now.
		f.transmitGroups()
	}
	if len(g.frames) == 0 {
		f.pending = append(f.pending, slot)
	}
	g.frames = append(g.frames, frame)
	if g.tunnel != nil {
		g.tunnel = append(g.tunnel, f.run.tunnel)
	}
}

func (f *forwarder) transmitGroups() {
	for _, slot := range f.pending {
		g := &f.groups[slot]
		out := f.ports[slot]
		var sent int
		if out.tunnel != nil {
			sent = out.tunnel.TransmitTunneled(g.frames, g.tunnel)
			g.tunnel = g.tunnel[:0]
		} else {
			sent = out.Transmit(g.frames)
		}
		var bytes uint64
		for _, fr := range g.frames[:sent] {
			bytes += uint64(len(fr))
		}
		out.counters.txPackets.Add(uint64(sent))
		out.counters.txBytes.Add(bytes)
		if dropped := len(g.frames) - sent; dropped > 0 {
			out.counters.txDropped.Add(uint64(dropped))
		}
		clear(g.frames)
		g.frames = g.frames[:0]
	}
	f.pending = f.pending[:0]
}

// addPort puts p in the first free slot and returns it. It runs on the
// forwarder. Every thread of a bridge has the same slots, so they all
// choose the same one, and the bridge records it in p once they have.
func (f *forwarder) addPort(p *bridgePort) uint16 {
	slot := len(f.ports)
	for i, q := range f.ports {
		if q == nil {
			slot = i
			break
		}
	}
	if slot == len(f.ports) {
		f.ports = append(f.ports, nil)
		f.groups = append(f.groups, txGroup{})
		f.stormLimit = append(f.stormLimit, 0)
		f.storm = append(f.storm, tokenBucket{})
		f.stp = append(f.stp, stpForwarding)
	}
	f.ports[slot] = p
	f.groups[slot] = txGroup{frames: make([][]byte, 0, f.batchSize)}
	if p.tunnel != nil {
		f.groups[slot].tunnel = make([]port.TunnelTx, 0, f.batchSize)
	}
	f.rebuild()
	return uint16(slot)
}

// removePort forgets p and every address learned on it. It runs on the
// forwarder; afterwards the forwarder holds no reference to p.
func (f *forwarder) removePort(p *bridgePort) {
	f.ports[p.slot] = nil
	f.groups[p.slot] = txGroup{}
	f.stormLimit[p.slot], f.storm[p.slot] = 0, tokenBucket{}
	f.stp[p.slot] = stpForwarding
	f.fdb.flushPort(p.slot)
	f.rebuild()
}

// rebuild derives the flood lists, queue list and poll set from f.ports.
// The bridge's queues, in slot and queue order, are dealt out among its
// threads in turn; every thread has the same ports, so they agree.
func (f *forwarder) rebuild() {
	// Decisions name ports by slot and resolve NORMAL by the ports' VLANs.
	f.forgetDecisions()
	n := 0
	f.live = f.live[:0]
	f.slotOf = f.slotOf[:0]
	f.queues = f.queues[:0]
	f.pollFds = append(f.pollFds[:0], unix.PollFd{Fd: int32(f.wakeFd), Events: unix.POLLIN})
	for slot, p := range f.ports {
		if p == nil {
			continue
		}
		if p.underlay == nil { // an underlay is no OpenFlow port
			f.live = append(f.live, uint16(slot))
			for int(p.ofport) >= len(f.slotOf) {
				f.slotOf = append(f.slotOf, -1)
			}
			f.slotOf[p.ofport] = int32(slot)
		}
		for _, q := range p.RxQueues() {
			if n%f.threads == f.thread {
				f.queues = append(f.queues, rxQueue{slot: uint16(slot), q: q})
				f.pollFds = append(f.pollFds, unix.PollFd{Fd: int32(q.Fd()), Events: unix.POLLIN})
			}
			n++
		}
	}
	f.rebuildFlood()
	f.rebuildDemux()
	f.shareStormLimits()
}

// rebuildFlood derives the ports that FLOOD and NORMAL flood to: the live
// ones that forward.
func (f *forwarder) rebuildFlood() {
	f.flood = f.flood[:0]
	for _, slot := range f.live {
		if f.forwards(slot) {
			f.flood = append(f.flood, slot)
		}
	}
}

func isMulticast(mac []byte) bool { return mac[0]&1 != 0 }
