// Package datapath is the in-kernel fast path's mechanism: the maps every
// port's XDP program of a bridge shares (bpf/fastpath.c), the encoding of
// their keys and entries under short Go names, the flow hash both sides
// compute alike, the tunnels' outer headers, and putting a port's program
// in place. It decides nothing: which decisions become entries, when they
// go, and whose counters their counts are, is the switch's policy
// (switch/fastpath.go), which reaches the kernel only through Datapath.
// Kernel is the real one; datapathtest.Fake keeps the same state in
// memory, for the policy's tests.
package datapath

import (
	"encoding/binary"
	"errors"

	"github.com/xswitch/xswitch/bpf"
	"github.com/xswitch/xswitch/conntrack"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/port"
)

// Key is an entry's key: the headers the program parses from a frame,
// under the bridge's key mask, and the generation the entry was made in.
// Key.L2 is its first fields, the key of the entries looked up by the
// Ethernet header alone.
type Key = bpf.FastpathFpKey

// Entry is what the program does with the frames of one key: up to
// len(Entry.Ops) operations, then a redirect to slot Out (or OutDrop),
// for frames no longer than MaxLen (0: any); and, per CPU in the map,
// what it carried.
type Entry = bpf.FastpathFpFlow

// Op is one operation of an entry.
type Op = bpf.FastpathFpOp

// The operations, Op.Type.
const (
	OpSetDlSrc   = uint8(bpf.FastpathFpOpTypeFP_OP_SET_DL_SRC)
	OpSetDlDst   = uint8(bpf.FastpathFpOpTypeFP_OP_SET_DL_DST)
	OpPopVLAN    = uint8(bpf.FastpathFpOpTypeFP_OP_POP_VLAN)
	OpPushVLAN   = uint8(bpf.FastpathFpOpTypeFP_OP_PUSH_VLAN)
	OpSetTCI     = uint8(bpf.FastpathFpOpTypeFP_OP_SET_TCI)
	OpSetL3      = uint8(bpf.FastpathFpOpTypeFP_OP_SET_L3)
	OpSetL4      = uint8(bpf.FastpathFpOpTypeFP_OP_SET_L4)
	OpTunnelPush = uint8(bpf.FastpathFpOpTypeFP_OP_TUNNEL_PUSH)
	OpMeter      = uint8(bpf.FastpathFpOpTypeFP_OP_METER)
	OpConntrack  = uint8(bpf.FastpathFpOpTypeFP_OP_CONNTRACK)
)

// ConntrackOp is the operation that judges an entry's frames as the
// tracker would, for connection h (which PutConn entered), going its
// reply direction if reply, else its original one, seen one way if
// oneWay (Conn.OrigOnly) or else established: a frame that leaves the
// connection in that state (+trk+est, +rpl; +trk+new one way) goes on
// through the entry's other operations, moving the connection's state on
// as the tracker would; any other goes to user space as it came
// (bpf/lib/conntrack.h says which).
// It must be the entry's first operation, and the entry's key must hold
// the connection's tuple: the program checks only its protocol.
func ConntrackOp(h conntrack.Handle, reply, oneWay bool) Op {
	return bpf.ConntrackOp(uint64(h), reply, oneWay)
}

// Conn is a tracked connection as the programs carry it
// (bpf/lib/structs.h's fp_conn): the tracker's state for it (ConnOf,
// KernelConnOf), and, by direction (Conn.Dir[0] the original, [1] the
// reply), when the programs last carried a frame of it (LastSeen, on the
// tracker's clock), and how many frames and bytes.
type Conn = bpf.FastpathFpConn

// ConnOf is the tracker's state k as the programs keep it, nothing carried
// yet.
func ConnOf(k conntrack.KernelConn) Conn {
	c := Conn{Proto: k.Proto, Expires: uint64(k.Expires), Timeout: uint64(k.Timeout)}
	if k.SeqCheck {
		c.SeqCheck = 1
	}
	if k.OrigOnly {
		c.OrigOnly = 1
	}
	for i, e := range k.TCP {
		d := &c.Dir[i]
		d.SeqLo, d.SeqHi, d.MaxWin, d.Wscale = e.SeqLo, e.SeqHi, e.MaxWin, e.WScale
	}
	return c
}

// KernelConnOf is the tracker's state as the programs made it of c, for
// conntrack.Tracker.SyncFromKernel.
func KernelConnOf(c *Conn) conntrack.KernelConn {
	k := conntrack.KernelConn{Proto: c.Proto, SeqCheck: c.SeqCheck != 0, OrigOnly: c.OrigOnly != 0, Expires: int64(c.Expires), Timeout: int64(c.Timeout)}
	for i := range c.Dir {
		d := &c.Dir[i]
		k.TCP[i] = conntrack.KernelTCPEnd{SeqLo: d.SeqLo, SeqHi: d.SeqHi, MaxWin: d.MaxWin, WScale: d.Wscale}
	}
	return k
}

// ErrNoConn is the error of reading, taking or deleting a connection the
// programs do not hold.
var ErrNoConn = errors.New("the fast path holds no such connection")

// Meter is a meter's slot in the memory user space and the programs
// share (bpf/lib/structs.h's fp_meter): its configuration, which user
// space writes, and each band's theoretical arrival time, which both
// update with atomic operations. MeterBand is one of its bands, and
// MeterCounts what the programs counted of it.
type (
	Meter       = bpf.FastpathFpMeter
	MeterBand   = bpf.FastpathFpBand
	MeterCounts = bpf.FastpathFpMeterCounts
)

// The checksums an OpSetL3 or OpSetL4 updates, Op.Csums.
const (
	CsumL3  = uint8(bpf.FastpathFpCsumFP_CSUM_L3)
	CsumTCP = uint8(bpf.FastpathFpCsumFP_CSUM_TCP)
	CsumUDP = uint8(bpf.FastpathFpCsumFP_CSUM_UDP)
)

// OutDrop is the Out of an entry whose frames go nowhere.
const OutDrop = bpf.FPDrop

// NewKey is the key of the entry for frames with headers h, under mask
// (nil: exact), in generation gen: h's key under mask's, as the program
// masks the key it parses (fields that share the key's bytes are masked
// together there, bpf.KeyOf).
func NewKey(h *flow.Headers, mask *flow.Headers, gen uint64) Key {
	key := bpf.KeyOf(h)
	if mask != nil {
		m := bpf.KeyOf(mask)
		key = key.And(&m)
	}
	key.Gen = KeyGen(gen)
	return key
}

// KeyGen is what a key holds of generation g: the program compares the
// low 32 bits.
func KeyGen(g uint64) uint32 { return bpf.KeyGen(g) }

// NetworkOrder turns a 16-bit value into the frame's byte order, in which
// entries keep them, and back.
func NetworkOrder(v uint16) uint16 { return bpf.NetworkOrder(v) }

// FlowHash is the hash of the flow with headers h that picks the outer
// UDP source port of a tunnel it leaves by, as the program computes it
// from the same frame: a flow keeps its port, and its path through the
// underlay's ECMP, when the kernel takes it over.
func FlowHash(h *flow.Headers) uint32 {
	key := bpf.KeyOf(h)
	return bpf.FlowHash(&key)
}

// Counts are what an entry carried, summed over the CPUs, and of it what
// its meter dropped.
type Counts struct {
	Packets, Bytes        uint64
	Metered, MeteredBytes uint64
}

// TunnelKey claims the datagrams of one tunnel arriving on an underlay
// (its remote, UDP port, underlay slot and VNI), and TunnelIn says whose
// they are then.
type (
	TunnelKey = bpf.FastpathFpTunnelKey
	TunnelIn  = bpf.FastpathFpTunnelIn
)

// AnyVNI is a TunnelKey's VNI for a tunnel whose key is flow: it takes
// every VNI (FP_ANY_VNI, past the 24 bits of a real one).
const AnyVNI = 1 << 24

// TunnelKeyOf is the TunnelKey for a tunnel from remote (network order)
// to UDP port dstPort over underlay slot, with VNI vni (AnyVNI: any).
func TunnelKeyOf(remote [4]byte, dstPort, underlay uint16, vni uint32) TunnelKey {
	return TunnelKey{Remote: binary.NativeEndian.Uint32(remote[:]), Port: NetworkOrder(dstPort), Underlay: underlay, Vni: vni}
}

// TunnelInOf says that a tunnel's datagrams, to local, are port inPort's.
func TunnelInOf(inPort uint16, local [4]byte) TunnelIn {
	return TunnelIn{InPort: inPort, Local: binary.NativeEndian.Uint32(local[:])}
}

// A tunnel port has two places for its outer headers, so that new ones
// (a new next hop) are written beside those the installed entries still
// push: TunnelPlace is where half of port slot's are, the value of an
// OpTunnelPush's Tunnel, and TunnelSlot whose a place is.
func TunnelPlace(slot uint16, half uint32) uint32 { return 2*uint32(slot) + half }
func TunnelSlot(place uint32) uint16              { return uint16(place / 2) }

// Datapath is the kernel's side of a bridge's fast path. Install,
// Remove, Delete, Walk and the tunnels' calls are serialised by the
// caller; Publish by the caller too, but apart from them.
type Datapath interface {
	// Publish has the programs look keys up in generation gen, under
	// mask (nil: exact keys); l2 says that mask is the Ethernet header's
	// fields alone, whose entries are in the l2 table.
	Publish(gen uint64, mask *flow.Headers, l2 bool) error
	// Install enters entries under keys in the l2 table or the other,
	// replacing what they held, with one system call. It returns how
	// many, from the first, went in.
	Install(l2 bool, keys []Key, entries []Entry) (int, error)
	// Remove deletes key's entry and returns what it carried.
	Remove(l2 bool, key Key) (Counts, error)
	// Delete deletes the entries of keys, skipping those not there.
	Delete(l2 bool, keys []Key)
	// Walk calls fn with every entry, of both tables, and what it
	// carried. fn may not call the Datapath.
	Walk(fn func(key Key, l2 bool, carried Counts)) error
	// Drops are the frames the programs dropped, by bpf.DropReasons.
	Drops() map[string]uint64

	// AttachPort replaces port slot's XDP program, on host, with the
	// fast path's, which reads the port as OpenFlow port ofport, and
	// enters its interface (ifindex) as where slot's redirects go. An
	// underlay's program takes the tunnels' datagrams apart too.
	// detach undoes it.
	AttachPort(slot, ofport uint16, ifindex int, host port.XDPHost, underlay bool) (detach func(), err error)
	// RedirectDrops is how many frames redirected to slot, whose
	// interface is ifindex, the interface did not take; 0 if the kernel
	// does not say.
	RedirectDrops(slot uint16, ifindex int) uint64

	// SetTunnelIn and DeleteTunnelIn claim a tunnel's datagrams for its
	// port, and stop.
	SetTunnelIn(key TunnelKey, in TunnelIn) error
	DeleteTunnelIn(key TunnelKey)
	// SetTunnelHeaders writes the outer headers (and their IPv4 header's
	// checksum, without its length) at place (TunnelPlace).
	SetTunnelHeaders(place uint32, h port.TunnelHeader) error

	// MeterSlots are the meters' slots (flow.MaxMeters of them), in the
	// memory the programs read; valid until Close.
	MeterSlots() []Meter
	// AddMeterCounts adds what the programs counted of the meter in slot
	// to c; ResetMeterCounts zeroes it, for a new meter in the slot.
	AddMeterCounts(slot uint32, c *MeterCounts) error
	ResetMeterCounts(slot uint32) error

	// PutConn enters connection h as c for the programs to carry
	// (ConntrackOp), replacing what they held of it. Conn reads what
	// they hold of it, and TakeConn reads it and deletes it at once, so
	// that they carry it no further (the state the tracker takes back,
	// SyncFromKernel); MergeConn merges into it what the tracker made of
	// a frame the programs handed over while they carried it on
	// (conntrack.KernelConn's Merge); DeleteConn deletes it. Each reads
	// or writes the connection in one step with the programs, under the
	// lock they take for each frame. Conn, TakeConn, MergeConn and
	// DeleteConn fail with ErrNoConn when the programs do not hold h.
	PutConn(h conntrack.Handle, c *Conn) error
	Conn(h conntrack.Handle) (Conn, error)
	TakeConn(h conntrack.Handle) (Conn, error)
	MergeConn(h conntrack.Handle, c *Conn) error
	DeleteConn(h conntrack.Handle) error

	Close() error
}
