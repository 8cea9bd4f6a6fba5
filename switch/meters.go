package vswitch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/datapath"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/header"
)

// Meters at work. The control plane publishes a bridge's meters as
// flow.MeterTable versions (SetMeters); each meter takes a slot of the
// memory the fast path's programs share (datapath.Meter), or without a
// fast path a slot of the bridge's own, and keeps it while it lives.
//
// A rule's meter instruction is translated to actMeter, naming the slot
// and the meter's id: the meter's configuration is read as each frame
// runs, so a meter modified needs no translation again, and a slot that
// has since gone to another meter (its own deleted, with its rules) is
// seen as not the meter's, and meters nothing. The fast path's entries
// carry the same as an OpMeter.
//
// A meter's budget is one whichever path carries its frames: each band
// keeps a theoretical arrival time (GCRA: a token bucket kept as the
// time it will be full again) in the slot's memory, on the kernel's
// CLOCK_MONOTONIC, which user space and the programs move on with atomic
// operations (bpf/lib/meter.h does in C what meter does here). A frame
// exceeds a band when its time lies more than the band's tolerance (its
// burst at its rate) ahead of now; the band that applies is the one of
// the highest rate the frame exceeds, as OpenFlow says. A frame that is
// not dropped takes its cost (its bits at kbps, or one packet at pktps)
// from every band it does not exceed. User space reads the clock once
// per batch, as the forwarders' clock plus its offset from
// CLOCK_MONOTONIC, with no system call; the programs once per frame.
//
// The counts are exact whichever path carried the frames: user space
// counts each frame with atomic adds, the programs per CPU, and MeterStats
// adds both up.

// noMeterSlot is the slot of a meter the bridge did not have when the
// decision was made: it meters nothing.
const noMeterSlot = flow.MaxMeters

// defaultMeterBurst is the burst a band takes at its rate when its
// meter's burst flag is not set: short enough that a meter holds its
// rate within 5% over any second from a standing start, long enough for
// the frames of a user-space batch.
const defaultMeterBurst = 50 * time.Millisecond

// ErrNoMeter is the error of a rule whose meter instruction names a meter
// the bridge does not have (over OpenFlow, OFPMMFC_INVALID_METER of type
// METER_MOD_FAILED, as OVS answers it): errors.Is finds it.
var ErrNoMeter = errors.New("no such meter")

// meterBank is a bridge's meters at work.
type meterBank struct {
	// slots are the meters' shared memory: the programs', or the bank's
	// own without a fast path (dp nil).
	slots []datapath.Meter
	dp    datapath.Datapath
	// monoEpoch is CLOCK_MONOTONIC at the forwarders' epoch, in ns: a
	// frame's time on the programs' clock is monoEpoch plus its now.
	monoEpoch int64
	// configs is what user space meters each slot's frames by, and counts
	// what it counted of them.
	configs []atomic.Pointer[meterConfig]
	counts  []meterCounts
	slotOf  atomic.Pointer[map[uint32]uint16] // the meters' slots, for translation

	mu      sync.Mutex // serialises SetMeters, and guards what follows
	table   *flow.MeterTable
	created []time.Time // by slot: when its meter was added
}

// meterConfig is one meter as user space runs it.
type meterConfig struct {
	id    uint32
	pktps bool
	bands []meterBand
}

type meterBand struct {
	rate      uint32
	tolerance uint64 // ns
	typ       flow.BandType
	precLevel uint8
}

// meterCounts are what user space counted of the frames of one slot's
// meter: the frames in, and those each band applied to.
type meterCounts struct {
	packets, bytes atomic.Uint64
	bands          [flow.MaxMeterBands]struct{ packets, bytes atomic.Uint64 }
}

func (c *meterCounts) reset() {
	c.packets.Store(0)
	c.bytes.Store(0)
	for i := range c.bands {
		c.bands[i].packets.Store(0)
		c.bands[i].bytes.Store(0)
	}
}

// newMeterBank makes a bridge's meters, none yet, in dp's memory (nil:
// its own), for forwarders whose clock starts at epoch.
func newMeterBank(dp datapath.Datapath, epoch time.Time) *meterBank {
	mb := &meterBank{dp: dp, table: flow.NewMeterTable(), monoEpoch: monoAt(epoch),
		configs: make([]atomic.Pointer[meterConfig], flow.MaxMeters), counts: make([]meterCounts, flow.MaxMeters),
		created: make([]time.Time, flow.MaxMeters)}
	if dp != nil {
		mb.slots = dp.MeterSlots()
	} else {
		mb.slots = make([]datapath.Meter, flow.MaxMeters)
	}
	mb.slotOf.Store(&map[uint32]uint16{})
	return mb
}

// monoAt is CLOCK_MONOTONIC, in ns, at t: Go's monotonic clock is
// CLOCK_MONOTONIC, but it tells only differences. The offset is read
// between two readings of the kernel's clock, off by half the time
// between them at most.
func monoAt(t time.Time) int64 {
	var before, after unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &before)
	since := time.Since(t)
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &after)
	return (before.Nano()+after.Nano())/2 - int64(since)
}

// slot returns the slot of meter id, noMeterSlot for none. A nil bank has
// no meters.
func (mb *meterBank) slot(id uint32) uint16 {
	if mb == nil {
		return noMeterSlot
	}
	if slot, ok := (*mb.slotOf.Load())[id]; ok {
		return slot
	}
	return noMeterSlot
}

// meter runs the frame of length bytes at now, on the forwarders' clock,
// through the meter in slot if it is meter id, and returns the band that
// applies, if one does: its type (0: none) and, for a remark, its levels.
// It allocates nothing and makes no system call.
func (mb *meterBank) meter(slot uint16, id uint32, length int, now int64) (flow.BandType, uint8) {
	if int(slot) >= len(mb.configs) {
		return 0, 0
	}
	cfg := mb.configs[slot].Load()
	if cfg == nil || cfg.id != id {
		return 0, 0
	}
	t := uint64(mb.monoEpoch + now)
	units := uint64(length) * nsecBitsPerKbps
	if cfg.pktps {
		units = uint64(time.Second)
	}
	shared := &mb.slots[slot]
	exceeded, applied := cfg.exceeded(shared, t)
	c := &mb.counts[slot]
	c.packets.Add(1)
	c.bytes.Add(uint64(length))
	var typ flow.BandType
	var levels uint8
	if applied >= 0 {
		b := &cfg.bands[applied]
		c.bands[applied].packets.Add(1)
		c.bands[applied].bytes.Add(uint64(length))
		if b.typ == flow.BandDrop {
			return flow.BandDrop, 0
		}
		typ, levels = b.typ, b.precLevel
	}
	for i := range cfg.bands {
		if exceeded&(1<<i) == 0 {
			takeBudget(&shared.Bands[i].Tat, t, units/uint64(cfg.bands[i].rate))
		}
	}
	return typ, levels
}

// exceeded returns the bands a frame at t, on CLOCK_MONOTONIC, exceeds in
// the meter's shared memory, and of them the one that applies (-1: none),
// the highest rate's.
func (cfg *meterConfig) exceeded(shared *datapath.Meter, t uint64) (exceeded uint32, applied int) {
	var rate uint32
	applied = -1
	for i := range cfg.bands {
		b := &cfg.bands[i]
		if atomic.LoadUint64(&shared.Bands[i].Tat) > t+b.tolerance {
			exceeded |= 1 << i
			if b.rate > rate {
				applied, rate = i, b.rate
			}
		}
	}
	return exceeded, applied
}

// peek is what the meter in slot, if it is meter id, would do with a
// frame at now (the forwarders' clock) without running it: the meter
// (nil: the slot is not the meter's), and the band that would apply (-1:
// none). Trace's look at a meter, which takes no budget and counts
// nothing.
func (mb *meterBank) peek(slot uint16, id uint32, now int64) (*meterConfig, int) {
	if mb == nil || int(slot) >= len(mb.configs) {
		return nil, -1
	}
	cfg := mb.configs[slot].Load()
	if cfg == nil || cfg.id != id {
		return nil, -1
	}
	_, applied := cfg.exceeded(&mb.slots[slot], uint64(mb.monoEpoch+now))
	return cfg, applied
}

// nsecBitsPerKbps makes a frame's bytes its cost at a band's rate in
// kbps: bytes * 8 * 10^6 / kbps ns.
const nsecBitsPerKbps = 8_000_000

// takeBudget moves a band's tat on by cost, from now if it lies behind,
// as the programs do (bpf/lib/meter.h's take_budget): an add when it is
// ahead, which no one else's move can make wrong; a compare-and-swap,
// tried again if it lost to another's, when it is behind.
func takeBudget(tat *uint64, now, cost uint64) {
	old := atomic.LoadUint64(tat)
	for range 4 {
		if old >= now {
			break
		}
		if atomic.CompareAndSwapUint64(tat, old, now+cost) {
			return
		}
		old = atomic.LoadUint64(tat)
	}
	atomic.AddUint64(tat, cost)
}

// set makes mt the bank's meters: those gone leave their slots, those
// new take free ones, and those changed are written again in theirs, their
// bands' budgets full. A meter's counts and age go on through a change.
func (mb *meterBank) set(mt *flow.MeterTable) error {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	slotOf := *mb.slotOf.Load()
	next := make(map[uint32]uint16, mt.Len())
	for id, slot := range slotOf {
		if _, ok := mt.Get(id); ok {
			next[id] = slot
			continue
		}
		atomic.StoreUint32(&mb.slots[slot].Id, 0)
		mb.configs[slot].Store(nil)
	}
	used := make([]bool, flow.MaxMeters)
	for _, slot := range next {
		used[slot] = true
	}
	free := 0
	var errs []error
	for _, m := range mt.Meters() {
		slot, ok := next[m.ID]
		if !ok {
			for used[free] {
				free++
			}
			slot, used[free] = uint16(free), true
			next[m.ID] = slot
			mb.counts[slot].reset()
			if mb.dp != nil {
				errs = append(errs, mb.dp.ResetMeterCounts(uint32(slot)))
			}
			mb.created[slot] = time.Now()
		} else if old, _ := mb.table.Get(m.ID); sameMeter(old, m) {
			continue
		}
		mb.write(slot, m)
	}
	mb.table = mt
	mb.slotOf.Store(&next)
	return errors.Join(errs...)
}

func sameMeter(a, b *flow.Meter) bool {
	if a.ID != b.ID || a.Flags != b.Flags || len(a.Bands) != len(b.Bands) {
		return false
	}
	for i := range a.Bands {
		if a.Bands[i] != b.Bands[i] {
			return false
		}
	}
	return true
}

// write puts meter m in slot, for the programs and for user space: its
// id last, so that a program that sees the id sees a meter whole (but
// for a meter changed in place, of which a frame or two may see half).
func (mb *meterBank) write(slot uint16, m *flow.Meter) {
	cfg := &meterConfig{id: m.ID, pktps: m.Flags&flow.MeterFlagPktps != 0}
	shared := &mb.slots[slot]
	atomic.StoreUint32(&shared.Id, 0)
	for i, b := range m.Bands {
		band := meterBand{rate: b.Rate, typ: b.Type, precLevel: b.PrecLevel, tolerance: bandTolerance(m.Flags, b)}
		cfg.bands = append(cfg.bands, band)
		sb := &shared.Bands[i]
		sb.Rate, sb.Tolerance, sb.Type, sb.PrecLevel = band.rate, band.tolerance, uint8(band.typ), band.precLevel
		atomic.StoreUint64(&sb.Tat, 0)
	}
	shared.N_bands = uint8(len(m.Bands))
	if cfg.pktps {
		shared.Pktps = 1
	} else {
		shared.Pktps = 0
	}
	mb.configs[slot].Store(cfg)
	atomic.StoreUint32(&shared.Id, m.ID)
}

// bandTolerance is how far ahead of now a band's budget may be spent, in
// ns: its burst at its rate (kilobits at kbps and packets at pktps
// alike), or defaultMeterBurst.
func bandTolerance(flags flow.MeterFlags, b flow.MeterBand) uint64 {
	if flags&flow.MeterFlagBurst == 0 {
		return uint64(defaultMeterBurst)
	}
	return uint64(b.BurstSize) * uint64(time.Second) / uint64(b.Rate)
}

// stats are meter id's counters, both paths', if the bank has the meter.
func (mb *meterBank) stats(id uint32) (flow.MeterStats, bool, error) {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	m, ok := mb.table.Get(id)
	if !ok {
		return flow.MeterStats{}, false, nil
	}
	slot := (*mb.slotOf.Load())[id]
	var kernel datapath.MeterCounts
	var err error
	if mb.dp != nil {
		err = mb.dp.AddMeterCounts(uint32(slot), &kernel)
	}
	c := &mb.counts[slot]
	s := flow.MeterStats{ID: id, PacketIn: c.packets.Load() + kernel.Packets, ByteIn: c.bytes.Load() + kernel.Bytes,
		Duration: time.Since(mb.created[slot]), Bands: make([]flow.BandStats, len(m.Bands))}
	for i := range s.Bands {
		s.Bands[i] = flow.BandStats{Packets: c.bands[i].packets.Load() + kernel.BandPackets[i],
			Bytes: c.bands[i].bytes.Load() + kernel.BandBytes[i]}
	}
	return s, true, err
}

// SetMeters makes mt the bridge's meters. A meter modified is metered by
// its new bands from the next frame on; one deleted meters nothing more,
// and the rules that use it must go (OpenFlow deletes them with it): the
// control plane deletes them first, or in the same breath. Its error
// says only that the fast path's counts of a new meter could not be
// zeroed.
func (b *Bridge) SetMeters(mt *flow.MeterTable) error {
	if err := b.meters.set(mt); err != nil {
		return fmt.Errorf("bridge %s: meters: %w", b.name, err)
	}
	return nil
}

// Meters returns the bridge's meters.
func (b *Bridge) Meters() *flow.MeterTable {
	b.meters.mu.Lock()
	defer b.meters.mu.Unlock()
	return b.meters.table
}

// MeterStats returns meter id's counters, whichever path carried its
// frames, but for FlowCount, which the control plane knows; ok is false
// if the bridge has no such meter.
func (b *Bridge) MeterStats(id uint32) (s flow.MeterStats, ok bool, err error) {
	return b.meters.stats(id)
}

// CheckMeters refuses actions whose meter instruction names a meter the
// bridge does not have (ErrNoMeter), as a flow mod must be.
func (b *Bridge) CheckMeters(actions []flow.Action) error {
	if id, ok := flow.MeterOf(actions); ok && b.meters.slot(id) == noMeterSlot {
		return fmt.Errorf("meter %d on bridge %s: %w", id, b.name, ErrNoMeter)
	}
	return nil
}

// meterFrame runs the frame through the meter of a decision's actMeter,
// and reports whether it goes on: a drop band drops it, a remark band
// raises its DSCP's drop precedence (on a copy if an output took the
// frame before).
func (f *forwarder) meterFrame(r *frameRun, a *flow.Action) bool {
	band, levels := f.meters.meter(a.Port, a.Meter, len(r.frame), r.now)
	switch band {
	case flow.BandDrop:
		r.dropped = dropMeter
		return false
	case flow.BandDSCPRemark:
		if r.shared && !f.ownCopy(r) {
			return false
		}
		remarkDSCP(r.frame, &r.layout, levels)
	}
	return true
}

// remarkDSCP raises the drop precedence of the DSCP of the frame's IP
// header by levels, as the programs do (bpf/lib/meter.h's
// raise_drop_precedence): up to the highest of RFC 2597's three, the
// DSCP's bits 2 and 1, the class and ECN kept.
func remarkDSCP(frame []byte, l *flow.Layout, levels uint8) {
	var tos uint8
	switch l.IPVersion {
	case 4:
		tos = frame[l.L3+header.IPv4TOSOffset]
	case 6:
		tos = uint8(binary.BigEndian.Uint16(frame[l.L3:]) >> header.IPv6TrafficClassShift)
	default:
		return
	}
	dp := min(3, int(tos>>3&3)+int(levels))
	setTOS(frame, l, dropPrecedenceMask, uint8(dp)<<3)
}

// dropPrecedenceMask is the DSCP's drop precedence in the TOS byte.
const dropPrecedenceMask = 0x18
