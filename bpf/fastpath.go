package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
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

// FastpathShared are the maps every port of a bridge shares: the
// decisions (flows, and flows_l2 for keys of the Ethernet header alone),
// the bridge's generation and key mask (state, two of them, and
// state_slot, which is current), where each slot sends (tx_ports), the
// tunnels' outer headers (tunnels) and what claims a frame for a tunnel
// (tunnels_in), the meters and what the programs counted of them (meters,
// meter_counts), the tracked connections they carry (ct_conns), and the
// frames the programs dropped (drops).
type FastpathShared struct {
	Flows, FlowsL2, State, StateSlot, TxPorts, Tunnels, TunnelsIn, Meters, MeterCounts, CtConns, Drops *ebpf.Map

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

// fastpathSpec is the fast path's object file, parsed once: each port
// loads a copy of the program, and parsing took some 4.5 ms of every
// port's add-port.
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
	for _, m := range []struct {
		name string
		to   **ebpf.Map
	}{{FastpathMapFlows, &s.Flows}, {FastpathMapFlowsL2, &s.FlowsL2}, {FastpathMapState, &s.State}, {FastpathMapStateSlot, &s.StateSlot},
		{FastpathMapTxPorts, &s.TxPorts}, {FastpathMapTunnels, &s.Tunnels}, {FastpathMapTunnelsIn, &s.TunnelsIn},
		{FastpathMapMeters, &s.Meters}, {FastpathMapMeterCounts, &s.MeterCounts}, {FastpathMapCtConns, &s.CtConns},
		{FastpathMapDrops, &s.Drops}} {
		if *m.to, err = ebpf.NewMap(spec.Maps[m.name]); err != nil {
			s.Close()
			return nil, fmt.Errorf("create the fast path's %s map: %w", m.name, err)
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

// SetState makes st the state every port's program reads, with plain
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

// DropCounts returns how many frames every port's program dropped, by
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
	for _, m := range []*ebpf.Map{s.Flows, s.FlowsL2, s.State, s.StateSlot, s.TxPorts, s.Tunnels, s.TunnelsIn, s.Meters, s.MeterCounts, s.CtConns, s.Drops} {
		if m != nil {
			errs = append(errs, m.Close())
		}
	}
	return errors.Join(errs...)
}

// FastpathConfig is what one port's copy of the fast path's program is
// loaded with. Nil maps are created anew (the tests' own).
type FastpathConfig struct {
	InPort      uint16 // the port's OpenFlow port number
	MaxFrameLen uint32 // the longest frame its sockets take
	// SocketQueues is how many of the port's rx queues, from queue 0,
	// have a socket: the frames of the others are the host's.
	SocketQueues int
	RecordKey    bool // store each key parsed, and what an entry did, in the parsed map (tests)
	Shared       *FastpathShared
	// Sockets and Oversize are the port's XSKMAP and oversize counter,
	// which a miss goes to and counts in, as with the port's own program.
	Sockets, Oversize *ebpf.Map
	// TunnelListen is set for a tunnel underlay: its port's (address,
	// UDP port) pairs, whose datagrams are the bridge's; the rest pass.
	// UnderlaySlot is then the underlay's slot, which tunnels_in's keys
	// name.
	TunnelListen *ebpf.Map
	UnderlaySlot uint16
}

// LoadFastpathProgram loads one port's copy of the fast path's program.
func LoadFastpathProgram(cfg FastpathConfig) (*FastpathObjects, error) {
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, err
	}
	spec, err := fastpathSpecCopy()
	if err != nil {
		return nil, err
	}
	var record, underlay uint8
	if cfg.RecordKey {
		record = 1
	}
	if cfg.TunnelListen != nil {
		underlay = 1
	}
	for name, value := range map[string]any{FastpathVarInPort: cfg.InPort, FastpathVarRecordKey: record,
		FastpathVarMaxFrameLen: cfg.MaxFrameLen, FastpathVarSocketQueues: uint32(cfg.SocketQueues),
		FastpathVarUnderlay: underlay, FastpathVarUnderlaySlot: cfg.UnderlaySlot} {
		if err := spec.Variables[name].Set(value); err != nil {
			return nil, fmt.Errorf("set %s: %w", name, err)
		}
	}
	replace := map[string]*ebpf.Map{}
	if cfg.Shared != nil {
		for name, m := range map[string]*ebpf.Map{FastpathMapFlows: cfg.Shared.Flows, FastpathMapFlowsL2: cfg.Shared.FlowsL2,
			FastpathMapState: cfg.Shared.State, FastpathMapStateSlot: cfg.Shared.StateSlot, FastpathMapTxPorts: cfg.Shared.TxPorts,
			FastpathMapTunnels: cfg.Shared.Tunnels, FastpathMapTunnelsIn: cfg.Shared.TunnelsIn, FastpathMapMeters: cfg.Shared.Meters,
			FastpathMapMeterCounts: cfg.Shared.MeterCounts, FastpathMapCtConns: cfg.Shared.CtConns, FastpathMapDrops: cfg.Shared.Drops} {
			if m != nil {
				replace[name] = m
			}
		}
	}
	if cfg.TunnelListen != nil {
		replace[FastpathMapTunnelListen] = cfg.TunnelListen
	}
	if cfg.Sockets != nil {
		replace[FastpathMapXsksMap] = cfg.Sockets
	}
	if cfg.Oversize != nil {
		replace[FastpathMapOversize] = cfg.Oversize
	}
	var objs FastpathObjects
	if err := spec.LoadAndAssign(&objs, &ebpf.CollectionOptions{MapReplacements: replace}); err != nil {
		return nil, fmt.Errorf("the verifier refused the fast path program: %w", err)
	}
	return &objs, nil
}

// DefaultMaxConns is how many connections ct_conns holds unless
// NewFastpathShared is told otherwise (FP_MAX_CONNS).
const DefaultMaxConns = 262144

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
