package vswitch

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xswitch/xswitch/conntrack"
	"github.com/xswitch/xswitch/datapath"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/port"
	"github.com/xswitch/xswitch/rstp"
)

// DefaultBatchSize is how many frames the forwarder takes from a queue at
// once. Measured on veth: 256 forwards clearly faster than 64.
const DefaultBatchSize = 256

// MaxOFPort is the highest OpenFlow port number a port can have (OFPP_MAX).
const MaxOFPort = 0xff00

// DefaultCacheSize is the number of flows a forwarder's decision cache
// holds unless told otherwise: the size of OVS's per-thread exact-match
// cache (8192).
const DefaultCacheSize = 8192

// Options configure a bridge. Zero values mean the defaults.
type Options struct {
	BatchSize    int
	MACTableSize int
	MACAging     time.Duration
	CacheSize    int // flows in each forwarder's exact-match cache of decisions
	// CPUs are where the bridge's forwarding threads run: one thread
	// pinned to each, the bridge's receive queues dealt out among them.
	// Empty means one thread on any CPU. A CPU that nothing else uses makes
	// a dedicated forwarding core.
	CPUs []int
	// BusyPoll keeps the forwarding thread polling its rings when idle
	// instead of sleeping in poll(2): lower latency for a core of its own.
	BusyPoll bool
	// Logger is where the forwarder says what it must say once (a loop in
	// the tables); nil is slog.Default().
	Logger *slog.Logger
	// FastPath carries the decisions it can in the ports' XDP programs
	// (fastpath.go).
	FastPath bool
	// Conntrack is the connection tracker that ct() actions use: the
	// daemon's, which all its bridges share as OVS's datapath has one
	// table. nil: the bridge makes its own.
	Conntrack *conntrack.Tracker
}

func (o Options) withDefaults() Options {
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.MACTableSize <= 0 {
		o.MACTableSize = DefaultMACTableSize
	}
	if o.MACAging <= 0 {
		o.MACAging = DefaultMACAging
	}
	if o.CacheSize <= 0 {
		o.CacheSize = DefaultCacheSize
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Bridge is a set of ports that forwarding goroutines switch between
// according to a flow table. Its methods are safe for concurrent use.
type Bridge struct {
	name  string
	flows *flow.Classifier

	mu    sync.Mutex // serializes changes; the forwarders never take it
	ports []*bridgePort
	// underlays are the hidden ports the tunnels' frames arrive on
	// (tunnel.go).
	underlays []*bridgePort
	fwds      []*forwarder  // one per thread; none once closed
	stp       *spanningTree // nil: no spanning tree (stp.go)

	// What the threads count together (counters.go).
	tables *[flow.NumTables]tableCounters
	drops  *dropCounters

	fp        *fastPath // nil: no fast path
	meters    *meterBank
	watchDone chan struct{}
	stopWatch chan struct{}

	// The forwarders' packet-in queues, and what TakePacketIns copies
	// their frames into (packetin.go).
	pins     []*packetInQueue
	pinReady chan struct{}
	pinMu    sync.Mutex
	pinArena []byte
}

type bridgePort struct {
	port.Port
	ofport   uint16
	vlan     portVLAN
	slot     uint16 // index in the forwarders' tables
	counters portCounters
	address  [6]byte          // the source of the BPDUs it sends; zero: made up
	rstp     *rstp.PortConfig // its part in the spanning tree; nil: none (Bridge.mu)

	// fastPath takes the fast path's program off the port, nil when it
	// runs its own (fastPathOff says why), under Bridge.mu; fastPathIn
	// says the same to the forwarders. takesRedirects says that the fast
	// path may send to it, and redirectsOff why not (fastpath_ports.go).
	// linkDown says that the port's link is down (SetPortLink): it is not
	// live for the groups that watch it.
	linkDown atomic.Bool

	fastPath       func()
	fastPathOff    string
	fastPathIn     atomic.Bool
	takesRedirects atomic.Bool
	redirectsOff   string

	// tunnel is the port as a tunnel, nil for any other; underlaySlot is
	// where its underlay is. underlay is set instead on the hidden port of
	// an underlay (tunnel.go).
	tunnel       port.Tunnel
	underlaySlot uint16
	underlay     port.Underlay
}

// New starts a bridge with no ports and the given flow table (nil: an
// empty one, which drops everything).
func New(name string, flows *flow.Table, opts Options) (*Bridge, error) {
	opts = opts.withDefaults()
	cls := flow.NewClassifier()
	if flows != nil {
		cls.Publish(flows)
	}
	place := firstOf(max(1, len(opts.CPUs)), opts)
	b := &Bridge{name: name, flows: cls, tables: place.tables, drops: place.drops, pinReady: place.pinReady}
	if opts.FastPath {
		dp, err := datapath.NewKernel()
		if err != nil {
			return nil, fmt.Errorf("bridge %s: fast path: %w", name, err)
		}
		fp, err := newFastPath(dp, &place)
		if err != nil {
			return nil, fmt.Errorf("bridge %s: fast path: %w", name, err)
		}
		fp.publish(cls, flows)
		b.fp, place.fp = fp, fp
		place.meters = newMeterBank(dp, place.epoch)
	}
	b.meters = place.meters
	for i := range place.count {
		place.index = i
		f, err := newForwarder(opts, cls, place)
		if err == nil {
			var cpus []int
			if len(opts.CPUs) > 0 {
				cpus = opts.CPUs[i : i+1]
			}
			err = f.start(cpus)
		}
		if err != nil {
			b.stopForwarders()
			if b.fp != nil {
				b.fp.close()
			}
			return nil, fmt.Errorf("bridge %s: %w", name, err)
		}
		b.fwds = append(b.fwds, f)
		b.pins = append(b.pins, f.pins)
	}
	if b.fp != nil {
		b.stopWatch, b.watchDone = make(chan struct{}), make(chan struct{})
		go b.watchRedirects()
	}
	return b, nil
}

// onEachForwarder runs fn on every forwarding thread between two of its
// batches, one thread after the other.
func (b *Bridge) onEachForwarder(fn func(f *forwarder)) {
	for _, f := range b.fwds {
		f.do(func() { fn(f) })
	}
}

// whileForwardersHeld holds every forwarding thread between two of its
// batches at once, runs change, then has each thread run after(f) before
// it goes on. A change to what every thread reads as it forwards (a
// port's VLAN configuration) is so never seen half made, nor by a thread
// that still holds decisions made before it.
func (b *Bridge) whileForwardersHeld(change func(), after func(f *forwarder)) {
	held, release := make(chan struct{}), make(chan struct{})
	var resumed sync.WaitGroup
	for _, f := range b.fwds {
		resumed.Go(func() {
			f.do(func() {
				held <- struct{}{}
				<-release
				after(f)
			})
		})
	}
	for range b.fwds {
		<-held
	}
	change()
	close(release)
	resumed.Wait()
}

// stopForwarders stops the spanning tree, which uses the forwarding
// threads, then every thread; the bridge is closed.
func (b *Bridge) stopForwarders() {
	if b.stp != nil {
		b.stp.close()
		b.stp = nil
	}
	for _, f := range b.fwds {
		f.stop()
	}
	b.fwds = nil
}

// Flows returns the current version of the flow table.
func (b *Bridge) Flows() *flow.Table { return b.flows.Load() }

// SetFlows makes t the flow table. Forwarding uses it from the next batch
// on, and drops what it had cached from the previous version.
func (b *Bridge) SetFlows(t *flow.Table) {
	if b.fp == nil {
		b.flows.Publish(t)
		return
	}
	b.fp.publish(b.flows, t)
}

// CacheStats reports the exact-match cache of decisions: frames that
// found their decision (hits), translations for want of one (misses), and
// decisions found but translated again because a MAC-table entry they
// relied on changed (stale, also counted in hits).
func (b *Bridge) CacheStats() (hits, misses, stale uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, f := range b.fwds {
		hits += f.decisions.hits.value()
		misses += f.decisions.misses.value()
		stale += f.decisions.stale.value()
	}
	return hits, misses, stale
}

// Name returns the bridge's name.
func (b *Bridge) Name() string { return b.name }

// PortOptions configure a port of a bridge. The zero value is the lowest
// free OpenFlow port number and a trunk of every VLAN.
type PortOptions struct {
	OFPort uint16 // 0: the lowest free number
	VLAN   VLANConfig
	// StormLimit caps the frames per second that NORMAL floods from the
	// port (storm.go); 0 is no limit.
	StormLimit uint32
	// RSTP configures the port's part in the bridge's spanning tree, when
	// the bridge runs one (SetRSTP); nil takes no part: the port always
	// forwards, and the BPDUs it receives are dropped.
	RSTP *rstp.PortConfig
	// Address is the port's own MAC address, the source of the BPDUs it
	// sends; zero makes one up from the bridge's.
	Address [6]byte
}

// AddPort adds p to the bridge and returns the OpenFlow port number it got.
// The bridge owns p from then on, unless AddPort fails.
func (b *Bridge) AddPort(p port.Port, opts PortOptions) (uint16, error) {
	if err := opts.VLAN.Validate(); err != nil {
		return 0, fmt.Errorf("port %q: %w", p.Name(), err)
	}
	ofport := opts.OFPort
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fwds == nil {
		return 0, fmt.Errorf("bridge %s is closed", b.name)
	}
	for _, q := range b.ports {
		if q.Name() == p.Name() {
			return 0, fmt.Errorf("port %q is already on bridge %s", p.Name(), b.name)
		}
		if ofport != 0 && q.ofport == ofport {
			return 0, fmt.Errorf("ofport %d is already used by port %q on bridge %s", ofport, q.Name(), b.name)
		}
	}
	if ofport > MaxOFPort && ofport != flow.LocalPort {
		return 0, fmt.Errorf("ofport %d out of range 1-%d", ofport, MaxOFPort)
	}
	if ofport == 0 {
		ofport = b.lowestFreeOFPort()
	}
	if opts.RSTP != nil {
		if err := opts.RSTP.Validate(); err != nil {
			return 0, fmt.Errorf("port %q: %w", p.Name(), err)
		}
	}
	bp := &bridgePort{Port: p, ofport: ofport, vlan: compileVLAN(opts.VLAN), address: opts.Address, rstp: opts.RSTP}
	if t, ok := p.(port.Tunnel); ok {
		if opts.RSTP != nil {
			return 0, fmt.Errorf("port %q: a tunnel takes no part in the spanning tree", p.Name())
		}
		us, err := b.addTunnel(t)
		if err != nil {
			return 0, err
		}
		bp.tunnel, bp.underlaySlot = t, us
	}
	var slot uint16
	b.onEachForwarder(func(f *forwarder) {
		slot = f.addPort(bp)
		f.setStormLimit(slot, opts.StormLimit)
		if b.stp != nil && bp.rstp != nil {
			f.setSTPState(slot, stpDiscarding) // until the spanning tree says otherwise
		}
	})
	bp.slot = slot
	b.attachFastPath(bp)
	if b.stp != nil && bp.rstp != nil {
		if err := b.stp.addPort(bp, *bp.rstp); err != nil {
			b.onEachForwarder(func(f *forwarder) { f.removePort(bp) })
			return 0, fmt.Errorf("port %q: %w", p.Name(), err)
		}
	}
	b.ports = append(b.ports, bp)
	slices.SortFunc(b.ports, func(x, y *bridgePort) int { return int(x.ofport) - int(y.ofport) })
	return ofport, nil
}

// port returns the named port, or nil.
func (b *Bridge) port(name string) *bridgePort {
	for _, q := range b.ports {
		if q.Name() == name {
			return q
		}
	}
	return nil
}

func (b *Bridge) lowestFreeOFPort() uint16 {
	n := uint16(1)
	for _, q := range b.ports { // sorted by ofport
		if q.ofport == n {
			n++
		}
	}
	return n
}

// RemovePort takes the named port off the bridge and closes it.
func (b *Bridge) RemovePort(name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := slices.IndexFunc(b.ports, func(q *bridgePort) bool { return q.Name() == name })
	if i < 0 {
		return fmt.Errorf("no port %q on bridge %s", name, b.name)
	}
	bp := b.ports[i]
	if b.stp != nil {
		b.stp.removePort(bp)
	}
	b.onEachForwarder(func(f *forwarder) { f.removePort(bp) })
	if bp.tunnel != nil {
		b.removeTunnel(bp)
	}
	if b.fp != nil {
		b.fp.detach(bp)
	}
	b.ports = slices.Delete(b.ports, i, i+1)
	return bp.Close()
}

// PortStatus is what the bridge knows about one port.
type PortStatus struct {
	Name   string
	OFPort uint16
	Info   port.Info
	Stats  PortStats
	// FastPath is "on" when the fast path carries frames from and to the
	// port, else "off (why)".
	FastPath string
}

// PortStats are a port's counters: the switch's own and the port's.
// RxErrors counts frames too malformed to classify; NORMAL's drops are
// counted by reason: RxVLANDropped because the port does not carry their
// VLAN, RxReservedDropped because they were sent to a reserved group
// address, RxStormDropped because flooding them would exceed the port's
// storm limit, RxSplitHorizonDropped because they came from a tunnel for a
// station learned on another tunnel; RxSTPDropped counts those that
// arrived while the spanning tree kept the port from forwarding. PipelineDropped counts the frames
// received on the port that the pipeline sent nowhere, by reason.
type PortStats struct {
	RxPackets, RxBytes, RxErrors  uint64
	RxVLANDropped                 uint64
	RxReservedDropped             uint64
	RxStormDropped                uint64
	RxSTPDropped                  uint64
	RxSplitHorizonDropped         uint64
	TxPackets, TxBytes, TxDropped uint64
	PipelineDropped               DropCounts
	Port                          port.Stats
	// FastPathTxDropped are the frames the fast path redirected to the
	// port that its interface did not take (a veth peer without NAPI, a
	// full ring), also in TxDropped.
	FastPathTxDropped uint64
}

// Plus returns the sum of s and o: what a port counted over two openings
// of its interface, say.
func (s PortStats) Plus(o PortStats) PortStats {
	return PortStats{
		RxPackets:             s.RxPackets + o.RxPackets,
		RxBytes:               s.RxBytes + o.RxBytes,
		RxErrors:              s.RxErrors + o.RxErrors,
		RxVLANDropped:         s.RxVLANDropped + o.RxVLANDropped,
		RxReservedDropped:     s.RxReservedDropped + o.RxReservedDropped,
		RxStormDropped:        s.RxStormDropped + o.RxStormDropped,
		RxSTPDropped:          s.RxSTPDropped + o.RxSTPDropped,
		RxSplitHorizonDropped: s.RxSplitHorizonDropped + o.RxSplitHorizonDropped,
		TxPackets:             s.TxPackets + o.TxPackets,
		TxBytes:               s.TxBytes + o.TxBytes,
		TxDropped:             s.TxDropped + o.TxDropped,
		PipelineDropped:       s.PipelineDropped.Plus(o.PipelineDropped),
		Port:                  s.Port.Plus(o.Port),
		FastPathTxDropped:     s.FastPathTxDropped + o.FastPathTxDropped,
	}
}

// Ports lists the bridge's ports in OpenFlow port order.
func (b *Bridge) Ports() []PortStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]PortStatus, 0, len(b.ports))
	for _, q := range b.ports {
		c := &q.counters
		ps := q.Stats()
		// A frame is counted as sent when it is queued, or redirected;
		// those the interface refused afterwards are drops.
		refused := c.fastPathTxDropped.Load() + ps.TxRefused
		refusedBytes := c.fastPathTxDroppedBytes.Load() + ps.TxRefusedBytes
		out = append(out, PortStatus{
			Name:   q.Name(),
			OFPort: q.ofport,
			Info:   q.Info(),
			Stats: PortStats{
				RxPackets: c.rxPackets.Load(), RxBytes: c.rxBytes.Load(), RxErrors: c.rxErrors.Load(),
				TxPackets: minus(c.txPackets.Load(), refused), TxBytes: minus(c.txBytes.Load(), refusedBytes),
				TxDropped:     c.txDropped.Load() + ps.TxRefused,
				RxVLANDropped: c.dropped[dropVLAN].Load(), RxReservedDropped: c.dropped[dropReserved].Load(),
				RxStormDropped: c.dropped[dropStorm].Load(), RxSTPDropped: c.dropped[dropSTP].Load(),
				RxSplitHorizonDropped: c.dropped[dropSplitHorizon].Load(),
				PipelineDropped:       c.dropped.pipeline(),
				Port:                  ps,
				FastPathTxDropped:     c.fastPathTxDropped.Load(),
			},
			FastPath: q.fastPathStatus(),
		})
	}
	return out
}

// minus is a - b, or 0: a refusal may be counted a moment before the
// transmit it takes back.
func minus(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}

// LookupMAC returns the port on which mac was learned in vlan, as NORMAL
// would find it now.
func (b *Bridge) LookupMAC(mac [6]byte, vlan uint16) (ofport uint16, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fwds == nil {
		return 0, false
	}
	f := b.fwds[0]
	f.do(func() {
		var slot uint16
		if slot, ok = f.fdb.lookup(macKey(mac[:], vlan), f.now()); ok {
			ofport = f.ports[slot].ofport
		}
	})
	return ofport, ok
}

// FDB lists the learned MAC addresses.
func (b *Bridge) FDB() []FDBEntry {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []FDBEntry
	if b.fwds == nil {
		return nil
	}
	f := b.fwds[0]
	f.do(func() {
		out = f.fdb.snapshot(f.now(), func(slot uint16) uint16 { return f.ports[slot].ofport })
	})
	return out
}

// Close stops forwarding and closes every port.
func (b *Bridge) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fwds == nil {
		return nil
	}
	if b.fp != nil {
		close(b.stopWatch)
		<-b.watchDone
	}
	b.stopForwarders()
	var errs []error
	// The underlays before their tunnels, which close them.
	for _, q := range append(b.underlays, b.ports...) {
		if b.fp != nil {
			b.fp.detach(q)
		}
		if q.underlay != nil {
			continue
		}
		if err := q.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing port %s: %w", q.Name(), err))
		}
	}
	b.ports, b.underlays = nil, nil
	if b.fp != nil {
		errs = append(errs, b.fp.close())
	}
	return errors.Join(errs...)
}

// ForwarderTime reports how long the bridge's forwarding goroutines have
// spent working and asleep since the bridge was created, summed over them.
// The two keep counting until the bridge is closed, then read zero.
func (b *Bridge) ForwarderTime() (busy, idle time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, f := range b.fwds {
		busy += time.Duration(f.clock.busy.Load())
		idle += time.Duration(f.clock.idle.Load())
	}
	return busy, idle
}

// FDBSize is how many learned addresses the bridge's MAC table holds that
// have not aged out. It asks the forwarder, between two batches, so it
// costs the forwarder one scan of the table.
func (b *Bridge) FDBSize() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fwds == nil {
		return 0
	}
	f := b.fwds[0]
	var n int
	f.do(func() { n = f.fdb.liveEntries(f.now()) })
	return n
}
