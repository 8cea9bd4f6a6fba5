package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/header"
)

// Headers converts a key the fast path's parser read into the
// flow.Headers the extractor reads from the same frame: the kernel keeps
// the frame's byte order, the key host order; and fields that never meet
// in one frame share the key's bytes (KeyOf).
func (k *FastpathFpKey) Headers() flow.Headers {
	be := NetworkOrder
	h := flow.Headers{
		TunID:   uint64(k.TunId),
		TunSrc:  k.TunSrc,
		TunDst:  k.TunDst,
		InPort:  k.InPort,
		DlDst:   k.DlDst,
		DlSrc:   k.DlSrc,
		DlType:  be(k.DlType),
		VLANTCI: be(k.VlanTci),
		NwProto: k.NwProto,
		NwTOS:   k.NwTos,
		NwTTL:   k.NwTtl,
		NwFrag:  k.NwFrag,
		NwSrc:   k.NwSrc,
		NwDst:   k.NwDst,
		IPv6Src: k.Ipv6Src,
		IPv6Dst: k.Ipv6Dst,
		TpSrc:   be(k.TpSrc),
		TpDst:   be(k.TpDst),
	}
	switch h.DlType {
	case flow.EtherTypeIPv6:
		h.IPv6Label, h.NwSrc = binary.BigEndian.Uint32(h.NwSrc[:]), [4]byte{}
		// The parser leaves frames with extension headers to user space
		// but for the two that end the chain, which are the protocol.
		switch h.NwProto {
		case header.ProtoESP:
			h.IPv6ExtHdr = flow.ExtHdrESP
		case header.ProtoIPv6NoNext:
			h.IPv6ExtHdr = flow.ExtHdrNoNext
		}
	case flow.EtherTypeARP:
		h.ArpSHA, h.ArpTHA, h.IPv6Src = [6]byte(h.IPv6Src[:6]), [6]byte(h.IPv6Src[6:12]), [16]byte{}
	}
	return h
}

// KeyOf is the key the fast path's parser reads from a frame whose
// headers the extractor reads as h: the inverse of Headers. A frame's
// tun_id is a VNI, of 24 bits: the key keeps 32. The key has no room of
// its own for the flow label and ARP's hardware addresses, and keeps them
// where fields that their frames never have are: the label in nw_src,
// which only IPv4 and ARP have, the addresses in ipv6_src. A frame has
// one or the other, so its key keeps all of it; a mask, of flow.Headers
// too, puts both in, so that a masked key keeps every bit it asks for,
// and more of a frame that has the other field (none, that is). Neighbour
// discovery's target has no room: the parser leaves those frames to user
// space, and the switch puts no entry of theirs in the kernel.
func KeyOf(h *flow.Headers) FastpathFpKey {
	be := NetworkOrder
	k := FastpathFpKey{
		TunId: uint32(h.TunID), TunSrc: h.TunSrc, TunDst: h.TunDst,
		DlDst: h.DlDst, DlSrc: h.DlSrc, InPort: h.InPort,
		DlType: be(h.DlType), VlanTci: be(h.VLANTCI),
		NwProto: h.NwProto, NwTos: h.NwTOS, NwTtl: h.NwTTL, NwFrag: h.NwFrag,
		NwSrc: h.NwSrc, NwDst: h.NwDst, Ipv6Src: h.IPv6Src, Ipv6Dst: h.IPv6Dst,
		TpSrc: be(h.TpSrc), TpDst: be(h.TpDst),
	}
	var label [4]byte
	binary.BigEndian.PutUint32(label[:], h.IPv6Label)
	for i := range label {
		k.NwSrc[i] |= label[i]
	}
	for i := range h.ArpSHA {
		k.Ipv6Src[i] |= h.ArpSHA[i]
		k.Ipv6Src[len(h.ArpSHA)+i] |= h.ArpTHA[i]
	}
	return k
}

// And is k under mask m, as the program masks the key it parsed: byte by
// byte, so that a field kept where another is (KeyOf) is masked by the
// union of both fields' masks there.
func (k FastpathFpKey) And(m *FastpathFpKey) FastpathFpKey {
	kb := (*[unsafe.Sizeof(k)]byte)(unsafe.Pointer(&k))
	mb := (*[unsafe.Sizeof(k)]byte)(unsafe.Pointer(m))
	for i := range kb {
		kb[i] &= mb[i]
	}
	return k
}

// L2 is k's first fields, the key of flows_l2.
func (k *FastpathFpKey) L2() FastpathFpL2Key {
	return FastpathFpL2Key{DlDst: k.DlDst, DlSrc: k.DlSrc, InPort: k.InPort, DlType: k.DlType, VlanTci: k.VlanTci, TunId: k.TunId, Gen: k.Gen}
}

// Key is the fast path key with l's fields, zero elsewhere.
func (l *FastpathFpL2Key) Key() FastpathFpKey {
	return FastpathFpKey{DlDst: l.DlDst, DlSrc: l.DlSrc, InPort: l.InPort, DlType: l.DlType, VlanTci: l.VlanTci, TunId: l.TunId, Gen: l.Gen}
}

// KeyGen is what an entry's key holds of generation g: the program
// compares the low 32 bits.
func KeyGen(g uint64) uint32 { return uint32(g) }

// FPDrop is a fast path entry's Out for a flow that goes nowhere (FP_OUT_DROP).
const FPDrop = 0xffffffff

// NetworkOrder turns a 16-bit value the kernel keeps in the frame's byte
// order into the host's, and back: the same swap either way.
func NetworkOrder(v uint16) uint16 {
	var b [2]byte
	binary.NativeEndian.PutUint16(b[:], v)
	return binary.BigEndian.Uint16(b[:])
}

// FastpathShared are the maps every port of a bridge shares, and its
// fast path program: the
// decisions (flows, and flows_l2 for keys of the Ethernet header alone),
// the bridge's generation and key mask (state, two of them, and
// state_slot, which is current), where each slot sends (tx_ports), the
// tunnels' outer headers (tunnels) and what claims a frame for a tunnel
// (tunnels_in), the meters and what the programs counted of them (meters,
// meter_counts), the tracked connections they carry (ct_conns), and the
// frames the programs dropped (drops).
type FastpathShared struct {
	Flows, FlowsL2, State, StateSlot, TxPorts, Tunnels, TunnelsIn, Meters, MeterCounts, CtConns, Drops *ebpf.Map
	// FpPort, FpProgram and FpSockets are the hand-off between the ports'
	// programs and the bridge's (lib/entry.h).
	FpPort, FpProgram, FpSockets *ebpf.Map

	// prog is the bridge's fast path program, loaded with the first port
	// (program), whether it records keys.
	programMu sync.Mutex
	prog      *FastpathObjects
	recordKey bool

	// The state maps' memory (they are BPF_F_MMAPABLE), and which of
	// state's two slots is current: see SetState.
	stateMem, slotMem *ebpf.Memory
	slot              uint32
	// meters is the meters map's memory, mapped for Go pointers into it
	// (MeterSlots).
	meters []byte
	// connSync are ctsync.c's programs, on CtConns (TakeConn, MergeConn).
	connSync *CtsyncPrograms
}

// fastpathSpec is the fast path's object file, parsed once: each bridge
// loads the program, and makes its maps from it.
var fastpathSpec = sync.OnceValues(LoadFastpath)

// fastpathSpecCopy is a copy of fastpathSpec to be changed and loaded.
func fastpathSpecCopy() (*ebpf.CollectionSpec, error) {
	spec, err := fastpathSpec()
	if err != nil {
		return nil, err
	}
	return spec.Copy(), nil
}

// NewFastpathShared creates a bridge's shared maps, empty, at generation
// 0, with room for maxConns connections in ct_conns (0: the map's
// default, DefaultMaxConns).
func NewFastpathShared(maxConns uint32) (*FastpathShared, error) {
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, err
	}
	spec, err := fastpathSpecCopy()
	if err != nil {
		return nil, err
	}
	if maxConns != 0 {
		spec.Maps[FastpathMapCtConns].MaxEntries = maxConns
	}
	var s FastpathShared
	for name, m := range s.maps() {
		if *m, err = ebpf.NewMap(spec.Maps[name]); err != nil {
			s.Close()
			return nil, fmt.Errorf("create the fast path's %s map: %w", name, err)
		}
	}
	if s.stateMem, err = s.State.Memory(); err == nil {
		s.slotMem, err = s.StateSlot.Memory()
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("map the fast path's state: %w", err)
	}
	// Mapped by hand rather than as an ebpf.Memory, whose bytes take no
	// Go pointers: both sides update the meters' words with atomics.
	size := int(s.Meters.MaxEntries()) * int(unsafe.Sizeof(FastpathFpMeter{}))
	if s.meters, err = unix.Mmap(s.Meters.FD(), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err != nil {
		s.Close()
		return nil, fmt.Errorf("map the fast path's meters: %w", err)
	}
	if s.connSync, err = loadConnSync(s.CtConns); err != nil {
		s.Close()
		return nil, err
	}
	return &s, nil
}

// loadConnSync loads ctsync.c's programs on the connections map conns.
func loadConnSync(conns *ebpf.Map) (*CtsyncPrograms, error) {
	spec, err := LoadCtsync()
	if err != nil {
		return nil, err
	}
	spec.Maps[CtsyncMapCtConns].MaxEntries = conns.MaxEntries()
	var objs CtsyncObjects
	if err := spec.LoadAndAssign(&objs, &ebpf.CollectionOptions{MapReplacements: map[string]*ebpf.Map{CtsyncMapCtConns: conns}}); err != nil {
		return nil, fmt.Errorf("the verifier refused the programs that take connections back and merge into them: %w", err)
	}
	return &objs.CtsyncPrograms, nil
}

// linux/pkt_cls.h's TC_ACT_OK and TC_ACT_SHOT: ctsync.c's verdicts.
const (
	tcActOK   = 0
	tcActShot = 2
)

// TakeConn takes connection handle out of ct_conns into c, with all the
// programs made of it (ctsync.c says why a lookup and delete would not
// do); ebpf.ErrKeyNotExist if ct_conns does not hold it.
func (s *FastpathShared) TakeConn(handle uint64, c *FastpathFpConn) error {
	return runConnSync(s.connSync.CtTake, handle, c)
}

// MergeConn merges c, what user space's tracker made of a frame of the
// carried connection handle, into ct_conns' (ctsync.c's ct_merge);
// ebpf.ErrKeyNotExist if ct_conns does not hold it.
func (s *FastpathShared) MergeConn(handle uint64, c *FastpathFpConn) error {
	in := *c
	return runConnSync(s.connSync.CtMerge, handle, &in)
}

// connFrame is ctsync.c's conn_frame, the frame its programs run on.
type connFrame struct {
	handle uint64
	conn   FastpathFpConn
}

// runConnSync runs prog on a frame of handle and c, and reads c back.
func runConnSync(prog *ebpf.Program, handle uint64, c *FastpathFpConn) error {
	f := connFrame{handle: handle, conn: *c}
	frame := unsafe.Slice((*byte)(unsafe.Pointer(&f)), unsafe.Sizeof(f))
	verdict, err := prog.Run(&ebpf.RunOptions{Data: frame, DataOut: frame})
	switch {
	case err != nil:
		return fmt.Errorf("run %s: %w", prog, err)
	case verdict == tcActShot:
		return ebpf.ErrKeyNotExist
	case verdict != tcActOK:
		return fmt.Errorf("%s returned %d", prog, verdict)
	}
	*c = f.conn
	return nil
}

// MeterSlots are the meters map's slots, in its memory: what user space
// writes there, and the programs, each sees at once. The slice is valid
// until Close.
func (s *FastpathShared) MeterSlots() []FastpathFpMeter {
	return unsafe.Slice((*FastpathFpMeter)(unsafe.Pointer(unsafe.SliceData(s.meters))), s.Meters.MaxEntries())
}

// AddMeterCounts adds up what the programs counted of the meter in slot, on
// every CPU, into c.
func (s *FastpathShared) AddMeterCounts(slot uint32, c *FastpathFpMeterCounts) error {
	var perCPU []FastpathFpMeterCounts
	if err := s.MeterCounts.Lookup(slot, &perCPU); err != nil {
		return fmt.Errorf("read the fast path's counts of meter slot %d: %w", slot, err)
	}
	for i := range perCPU {
		c.Add(&perCPU[i])
	}
	return nil
}

// Add adds o's counts to c's.
func (c *FastpathFpMeterCounts) Add(o *FastpathFpMeterCounts) {
	c.Packets += o.Packets
	c.Bytes += o.Bytes
	for b := range c.BandPackets {
		c.BandPackets[b] += o.BandPackets[b]
		c.BandBytes[b] += o.BandBytes[b]
	}
}

// ResetMeterCounts zeroes what the programs counted of the meter in
// slot, on every CPU: a new meter takes the slot.
func (s *FastpathShared) ResetMeterCounts(slot uint32) error {
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		return err
	}
	if err := s.MeterCounts.Put(slot, make([]FastpathFpMeterCounts, ncpu)); err != nil {
		return fmt.Errorf("reset the fast path's counts of meter slot %d: %w", slot, err)
	}
	return nil
}

// stateFence orders SetState's stores: see there.
var stateFence atomic.Uint32

// SetState makes st the state the fast path reads, with plain
// stores into the maps' memory: no system call, since a controller's flow
// mods each make a new generation, one round trip apiece. It writes the
// slot that is not current whole, then names it current; the program
// reads only the low bit of state_slot, which one byte holds, so it sees
// the old slot or the new one, never half of either. Callers serialise.
func (s *FastpathShared) SetState(st *FastpathFpState) error {
	value := unsafe.Slice((*byte)(unsafe.Pointer(st)), unsafe.Sizeof(*st))
	stride := (int64(s.State.ValueSize()) + 7) &^ 7 // an array's elements are 8-byte aligned
	next := 1 - s.slot
	if _, err := s.stateMem.WriteAt(value, int64(next)*stride); err != nil {
		return fmt.Errorf("write the fast path's state: %w", err)
	}
	// A full barrier (an atomic read-modify-write): the state's stores
	// are visible before the store that names it, on every architecture.
	stateFence.Add(1)
	var slot [4]byte
	binary.NativeEndian.PutUint32(slot[:], next)
	if _, err := s.slotMem.WriteAt(slot[:], 0); err != nil {
		return fmt.Errorf("write the fast path's state slot: %w", err)
	}
	s.slot = next
	return nil
}

// DropReasons name the reasons the fast path's programs drop a frame
// (fp_drop_reason), as pmd-stats-show prints them: the entry's decision
// (the rules send the flow nowhere), an operation that no longer fit the
// frame, an output whose port left since the lookup, a tunnel frame
// whose popped headers could not be put back, and a drop band of the
// entry's meter.
var DropReasons = [FastpathFpDropReasonFP_DROP_REASONS]string{
	FastpathFpDropReasonFP_DROP_RULE:      "rule",
	FastpathFpDropReasonFP_DROP_OP_FAILED: "op_failed",
	FastpathFpDropReasonFP_DROP_PORT_GONE: "port_gone",
	FastpathFpDropReasonFP_DROP_RESTORE:   "restore_failed",
	FastpathFpDropReasonFP_DROP_METER:     "meter",
}

// DropCounts returns how many frames the fast path dropped, by
// reason (DropReasons), since the maps were made.
func (s *FastpathShared) DropCounts() map[string]uint64 {
	counts := make(map[string]uint64, len(DropReasons))
	for reason, name := range DropReasons {
		counts[name] = sum(s.Drops, uint32(reason))
	}
	return counts
}

// Close closes the maps; programs that use them keep their own references.
func (s *FastpathShared) Close() error {
	var errs []error
	if s.connSync != nil {
		errs = append(errs, s.connSync.Close())
	}
	if s.meters != nil {
		errs = append(errs, unix.Munmap(s.meters))
		s.meters = nil
	}
	if s.prog != nil {
		errs = append(errs, s.prog.Close())
	}
	for _, m := range s.maps() {
		if *m != nil {
			errs = append(errs, (*m).Close())
		}
	}
	return errors.Join(errs...)
}

// maps are the bridge's maps by their names in the fast path's object:
// what NewFastpathShared makes, the bridge's program is loaded with, and
// Close closes.
func (s *FastpathShared) maps() map[string]**ebpf.Map {
	return map[string]**ebpf.Map{FastpathMapFlows: &s.Flows, FastpathMapFlowsL2: &s.FlowsL2, FastpathMapState: &s.State,
		FastpathMapStateSlot: &s.StateSlot, FastpathMapTxPorts: &s.TxPorts, FastpathMapTunnels: &s.Tunnels,
		FastpathMapTunnelsIn: &s.TunnelsIn, FastpathMapMeters: &s.Meters, FastpathMapMeterCounts: &s.MeterCounts,
		FastpathMapCtConns: &s.CtConns, FastpathMapDrops: &s.Drops, FastpathMapFpPort: &s.FpPort,
		FastpathMapFpProgram: &s.FpProgram, FastpathMapFpSockets: &s.FpSockets}
}

// FastpathConfig is one port's way into its bridge's fast path.
type FastpathConfig struct {
	InPort      uint16 // the port's OpenFlow port number
	Slot        uint16 // the port's slot in the bridge (tx_ports, fp_sockets, tunnels_in's underlay)
	MaxFrameLen uint32 // the longest frame its sockets take
	// SocketQueues is how many of the port's rx queues, from queue 0,
	// have a socket: the frames of the others are the host's.
	SocketQueues int
	// RecordKey has the fast path store each key parsed, and what an
	// entry did, in its parsed map (tests). It is the bridge's program's:
	// every port of one Shared must say the same.
	RecordKey bool
	// Shared are the bridge's maps and program; nil makes the port's own
	// (the tests').
	Shared *FastpathShared
	// Sockets and Oversize are the port's XSKMAP and oversize counter,
	// and SocketProgram its program that sends every frame to its
	// sockets (xsk.c's xsk_redirect), which takes what the fast path
	// leaves to user space. Nil maps are made anew; without a program,
	// what the fast path leaves to user space is the host's (the tests').
	Sockets, Oversize *ebpf.Map
	SocketProgram     *ebpf.Program
	// TunnelListen is set for a tunnel underlay: its port's (address,
	// UDP port) pairs, whose datagrams are the bridge's; the rest pass.
	TunnelListen *ebpf.Map
}

// FastpathPort is one port's way into its bridge's fast path: the small
// program the port runs (Fastpath, entry.c), which tail-calls the
// bridge's one program (fastpath.c), and the bridge's maps.
type FastpathPort struct {
	Fastpath *ebpf.Program
	Parsed   *ebpf.Map // what the bridge's program recorded (RecordKey)
	Oversize *ebpf.Map // the port's
	*FastpathShared

	entry     EntryObjects
	slot      uint32
	ownShared bool
	inSockets bool // SocketProgram is in fp_sockets
}

// entrySpec is entry.c's object file, parsed once.
var entrySpec = sync.OnceValues(LoadEntry)

// LoadFastpathProgram loads one port's entry program into its bridge's
// fast path, and the bridge's program if it is the first; it puts the
// port's SocketProgram in fp_sockets.
func LoadFastpathProgram(cfg FastpathConfig) (_ *FastpathPort, err error) {
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, err
	}
	p := &FastpathPort{FastpathShared: cfg.Shared, slot: uint32(cfg.Slot)}
	if p.FastpathShared == nil {
		if p.FastpathShared, err = NewFastpathShared(0); err != nil {
			return nil, err
		}
		p.ownShared = true
	}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	prog, err := p.FastpathShared.program(cfg.RecordKey)
	if err != nil {
		return nil, err
	}
	p.Parsed = prog.Parsed
	spec, err := entrySpec()
	if err != nil {
		return nil, err
	}
	spec = spec.Copy()
	var underlay uint8
	if cfg.TunnelListen != nil {
		underlay = 1
	}
	for name, value := range map[string]any{EntryVarInPort: cfg.InPort, EntryVarSlot: cfg.Slot, EntryVarMaxFrameLen: cfg.MaxFrameLen,
		EntryVarSocketQueues: uint32(cfg.SocketQueues), EntryVarUnderlay: underlay} {
		if err := spec.Variables[name].Set(value); err != nil {
			return nil, fmt.Errorf("set %s: %w", name, err)
		}
	}
	replace := map[string]*ebpf.Map{EntryMapFpPort: p.FpPort, EntryMapFpProgram: p.FpProgram, EntryMapFpSockets: p.FpSockets}
	for name, m := range map[string]*ebpf.Map{EntryMapXsksMap: cfg.Sockets, EntryMapOversize: cfg.Oversize, EntryMapTunnelListen: cfg.TunnelListen} {
		if m != nil {
			replace[name] = m
		}
	}
	if err := spec.LoadAndAssign(&p.entry, &ebpf.CollectionOptions{MapReplacements: replace}); err != nil {
		return nil, fmt.Errorf("the verifier refused the port's way into the fast path: %w", err)
	}
	p.Fastpath, p.Oversize = p.entry.FastpathEntry, p.entry.Oversize
	if cfg.SocketProgram != nil {
		if err := p.FpSockets.Put(p.slot, cfg.SocketProgram); err != nil {
			return nil, fmt.Errorf("enter the port's own program in fp_sockets: %w", err)
		}
		p.inSockets = true
	}
	return p, nil
}

// Close takes the port's program out of fp_sockets and closes what the
// port loaded; the bridge's maps and program stay, unless they were the
// port's own.
func (p *FastpathPort) Close() error {
	var errs []error
	if p.inSockets {
		errs = append(errs, p.FpSockets.Delete(p.slot))
	}
	errs = append(errs, p.entry.Close())
	if p.ownShared {
		errs = append(errs, p.FastpathShared.Close())
	}
	return errors.Join(errs...)
}

// program returns the bridge's fast path program, which it loads the first
// time, and enters in fp_program.
func (s *FastpathShared) program(recordKey bool) (*FastpathObjects, error) {
	s.programMu.Lock()
	defer s.programMu.Unlock()
	if s.prog != nil {
		if s.recordKey != recordKey {
			return nil, errors.New("the bridge's fast path program records keys for one port and not for another")
		}
		return s.prog, nil
	}
	spec, err := fastpathSpecCopy()
	if err != nil {
		return nil, err
	}
	var record uint8
	if recordKey {
		record = 1
	}
	if err := spec.Variables[FastpathVarRecordKey].Set(record); err != nil {
		return nil, fmt.Errorf("set %s: %w", FastpathVarRecordKey, err)
	}
	replace := map[string]*ebpf.Map{}
	for name, m := range s.maps() {
		replace[name] = *m
	}
	objs := new(FastpathObjects)
	if err := spec.LoadAndAssign(objs, &ebpf.CollectionOptions{MapReplacements: replace}); err != nil {
		return nil, fmt.Errorf("the verifier refused the fast path program: %w", err)
	}
	if err := s.FpProgram.Put(uint32(0), objs.Fastpath); err != nil {
		objs.Close()
		return nil, fmt.Errorf("enter the fast path program in fp_program: %w", err)
	}
	s.prog, s.recordKey = objs, recordKey
	return objs, nil
}

// DefaultMaxConns is how many connections ct_conns holds unless
// NewFastpathShared is told otherwise (FP_MAX_CONNS).
const DefaultMaxConns = 262144

// CoarseClockLag bounds how far the clock the fast path times carried
// connections by (bpf_ktime_get_coarse_ns, lib/conntrack.h) lags
// CLOCK_MONOTONIC, the tracker's: a tick, 10 ms at the lowest HZ a
// kernel may have.
const CoarseClockLag = 10 * time.Millisecond

// ConntrackOp is the operation that judges an entry's frames as the
// tracker would, for the connection of the tracker's handle in ct_conns,
// going its reply direction if reply, or its original one, and seen one
// way if oneWay, or else established (FP_OP_CONNTRACK; lib/conntrack.h
// says what it does). It must be the entry's first.
func ConntrackOp(handle uint64, reply, oneWay bool) FastpathFpOp {
	op := FastpathFpOp{Type: uint8(FastpathFpOpTypeFP_OP_CONNTRACK), Delta: uint32(handle), Tunnel: uint32(handle >> 32)}
	if reply {
		op.Len |= 1
	}
	if oneWay {
		op.Len |= 2
	}
	return op
}

// FlowHash is the hash of a frame's flow, by the key the fast path's
// parser reads from it, that picks the outer UDP source port of the
// tunnel it leaves by: user space and the program (lib/hash.h's
// flow_hash) compute it alike, so that a flow keeps its port, and its
// path through the underlay's ECMP, when the kernel takes it over. It is
// MurmurHash3's 32-bit mix over the key's addresses, ports, protocol,
// EtherType and MACs, each 4 bytes a word as the program loads them
// (little-endian: the program is bpfel).
func FlowHash(k *FastpathFpKey) uint32 {
	le := binary.LittleEndian
	var w [15]uint32
	w[0], w[1] = le.Uint32(k.NwSrc[:]), le.Uint32(k.NwDst[:])
	for i := range 4 {
		w[2+i], w[6+i] = le.Uint32(k.Ipv6Src[4*i:]), le.Uint32(k.Ipv6Dst[4*i:])
	}
	w[10] = uint32(k.TpSrc) | uint32(k.TpDst)<<16
	w[11] = uint32(k.NwProto) | uint32(k.DlType)<<16
	w[12] = le.Uint32(k.DlSrc[:])
	w[13] = uint32(le.Uint16(k.DlSrc[4:])) | uint32(le.Uint16(k.DlDst[:]))<<16
	w[14] = le.Uint32(k.DlDst[2:])
	h := uint32(0x9747b28c)
	for _, v := range w {
		v *= 0xcc9e2d51
		v = v<<15 | v>>17
		v *= 0x1b873593
		h ^= v
		h = h<<13 | h>>19
		h = h*5 + 0xe6546b64
	}
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}
