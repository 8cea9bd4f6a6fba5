// Package port defines the boundary between the switch and the devices it
// forwards between. The switch knows only these interfaces; AF_XDP sockets
// (port/afxdp) and in-memory test ports (port/porttest) sit behind them.
//
// Everything here is batch-first: one call moves many frames, so the cost of
// a system call, an atomic ring update or a kick is paid once per batch,
// never once per frame. No method on the frame path may allocate. The
// package holds interfaces only: no device, no program, no switch state.
package port

import "github.com/cilium/ebpf"

// Frame is one received frame. Data is a view into memory owned by the port
// that received it and stays valid only until the frame is handed back with
// RxQueue.Release; a frame that must outlive that is copied (Transmit copies).
type Frame struct {
	Data []byte
	// Handle identifies the frame's buffer to the port that produced it and
	// means nothing to anyone else.
	Handle uint64
}

// RxQueue is one receive queue of a port. A queue is owned by exactly one
// forwarding goroutine; its methods are not safe for concurrent use.
type RxQueue interface {
	// Receive fills frames with up to len(frames) received frames and
	// returns how many it filled. It never blocks.
	Receive(frames []Frame) int
	// Release gives received frames back to the queue so it can receive
	// into their buffers again. Every received frame is released exactly once.
	Release(frames []Frame)
	// Fd is a file descriptor that polls readable when frames are waiting
	// (or when the kernel needs a wakeup to deliver more). An idle forwarder
	// sleeps in poll(2) on it.
	Fd() int
}

// Port is a device attached to a bridge.
type Port interface {
	// Name is the interface name, unique on the host.
	Name() string
	// RxQueues are the port's receive queues, fixed for the port's life.
	RxQueues() []RxQueue
	// Transmit copies frames into the port's transmit ring and kicks the
	// device once. It returns how many frames were accepted; the caller
	// counts the rest as dropped. It never blocks waiting for ring space,
	// only for another forwarding goroutine's Transmit to the same port.
	Transmit(frames [][]byte) int
	// Info describes how the port was opened.
	Info() Info
	// Stats returns the port's own counters (the kernel's, for AF_XDP). It
	// may be called from any goroutine.
	Stats() Stats
	// Close releases everything the port holds. The port must no longer be
	// in use by a forwarder.
	Close() error
}

// Info describes how a port was opened: what a user sees in `xswitch show`.
type Info struct {
	Kind     string // "afxdp", "memory", ...
	XDPMode  string // "native" or "generic": where the XDP program is attached
	BindMode string // "zerocopy" or "copy": how the sockets were bound
	Queues   int
	// Ifindex is the interface the port opened, which one of the same name
	// created later is not. 0 for a port on no interface.
	Ifindex int
	// MultiBuffer says that a frame may span several buffers (AF_XDP's
	// XDP_USE_SG), so that MaxFrame can exceed one buffer.
	MultiBuffer bool
	// MaxFrame is the longest frame the port receives and sends, from the
	// Ethernet header on, without FCS; 0 for no limit. A longer frame is
	// dropped and counted in Stats.RxOversize.
	MaxFrame int
	// MTU is the interface's MTU when the port was opened; 0 if unknown.
	MTU int
}

// Stats are counters kept by the port itself rather than by the switch:
// for AF_XDP, the kernel's XDP_STATISTICS summed over the port's sockets.
// They explain loss the switch cannot see, such as frames the kernel
// dropped because the fill ring ran dry.
type Stats struct {
	RxDropped       uint64 `json:"rx_dropped"` // dropped by the kernel for reasons other than below
	RxInvalidDescs  uint64 `json:"rx_invalid_descs"`
	RxRingFull      uint64 `json:"rx_ring_full"`       // rx ring was full: the switch did not keep up
	RxFillRingEmpty uint64 `json:"rx_fill_ring_empty"` // no buffer to receive into
	TxInvalidDescs  uint64 `json:"tx_invalid_descs"`
	TxRingEmpty     uint64 `json:"tx_ring_empty"`
	// RxOversize counts frames longer than the port carries (Info.MaxFrame),
	// dropped on arrival. It is the port's own count, not the kernel's.
	RxOversize uint64 `json:"rx_oversize"`
	// TxRefused counts the frames the port's Transmit queued that the
	// interface then refused (a veth whose peer's MTU is smaller, say),
	// and TxRefusedBytes their bytes: drops, not transmits.
	TxRefused      uint64 `json:"tx_refused"`
	TxRefusedBytes uint64 `json:"tx_refused_bytes"`
}

// Plus returns the sum of s and o.
func (s Stats) Plus(o Stats) Stats {
	return Stats{
		RxDropped: s.RxDropped + o.RxDropped, RxInvalidDescs: s.RxInvalidDescs + o.RxInvalidDescs,
		RxRingFull: s.RxRingFull + o.RxRingFull, RxFillRingEmpty: s.RxFillRingEmpty + o.RxFillRingEmpty,
		TxInvalidDescs: s.TxInvalidDescs + o.TxInvalidDescs, TxRingEmpty: s.TxRingEmpty + o.TxRingEmpty,
		RxOversize: s.RxOversize + o.RxOversize,
		TxRefused:  s.TxRefused + o.TxRefused, TxRefusedBytes: s.TxRefusedBytes + o.TxRefusedBytes,
	}
}

// XDPHost is a port whose frames pass an XDP program that the bridge may
// replace with its fast path's (switch/fastpath_ports.go), which must end
// as the port's own program does: in the port's sockets.
type XDPHost interface {
	// XDPSockets says where the port's program puts frames: the sockets
	// that take them and their limits.
	XDPSockets() XDPSockets
	// SetXDPProgram attaches prog in place of the port's program without
	// a moment between the two, or the port's own again when prog is nil.
	SetXDPProgram(prog *ebpf.Program) error
	// RedirectTarget reports whether frames that XDP redirects into the
	// port's interface go out of it, and if not, why not, for `show`.
	RedirectTarget() (ok bool, why string)
}

// XDPSockets are a port's AF_XDP sockets as its XDP program sees them:
// its XSKMAP, its counter of frames too long for them, the longest frame
// they take, and how many rx queues, from queue 0, have one; and Program,
// which sends every frame to them, with the checks and counts of the
// port's own.
type XDPSockets struct {
	Map, Oversize *ebpf.Map
	MaxFrame      int
	Queues        int
	Program       *ebpf.Program
}

// Wrapper is a port that wraps another (one known by another name, say),
// whose other interfaces, such as XDPHost, are the wrapped port's.
type Wrapper interface {
	Unwrap() Port
}

// Underlying returns the port p wraps, through every Wrapper.
func Underlying(p Port) Port {
	for {
		w, ok := p.(Wrapper)
		if !ok {
			return p
		}
		p = w.Unwrap()
	}
}

// Tunnels: a tunnel port (VXLAN, Geneve) has no queues of its own. Its
// frames arrive encapsulated on its underlay, an AF_XDP port on the
// interface the kernel routes the remote endpoint by, which the bridge
// polls like any port and whose frames it hands, decapsulated, to the
// tunnel they belong to; and it sends through that underlay. Tunnels to
// several remotes share one underlay.

// TunnelMeta is what a received frame's outer headers said, for the flow
// key's tun_id, tun_src and tun_dst.
type TunnelMeta struct {
	ID       uint32  // the VNI
	Src, Dst [4]byte // the remote endpoint, and the local one it was sent to
	DstPort  uint16  // the UDP port it was sent to
}

// TunnelEndpoint is what a tunnel port receives: frames from Remote to
// Local (zero: any of the host's addresses) on UDP port DstPort with VNI
// Key, or with any VNI when KeyFlow is set.
type TunnelEndpoint struct {
	Remote, Local [4]byte
	DstPort       uint16
	Key           uint32
	KeyFlow       bool
}

// TunnelTx is how one frame leaves by a tunnel: with VNI ID when the
// tunnel's key is flow (set_field:V->tun_id), and from a UDP source port
// picked by Hash, the hash of its inner flow, so that the underlay's ECMP
// keeps a flow on one path.
type TunnelTx struct {
	ID, Hash uint32
}

// TunnelHeaderLen is how much a tunnel's encapsulation adds to a frame:
// outer Ethernet, IPv4, UDP and VXLAN (or optionless Geneve) headers.
const TunnelHeaderLen = 50

// TunnelHeader is a tunnel's outer headers with the lengths, IPv4 ID and
// checksum, UDP source port and VNI of every frame zero, and IPSum the
// one's-complement sum of the IPv4 header so, unfolded: each frame adds
// its own.
type TunnelHeader struct {
	Bytes [TunnelHeaderLen]byte
	IPSum uint32
}

// Tunnel is a tunnel port.
type Tunnel interface {
	Port
	// Underlay is the port the tunnel's frames arrive on and leave by.
	Underlay() Underlay
	// Endpoint says which of the underlay's frames are the tunnel's. It is
	// fixed for the port's life.
	Endpoint() TunnelEndpoint
	// Header returns the outer headers frames leave with now, for the
	// fast path to write in the kernel, and a version that changes
	// whenever they do (the next hop moved, say); ok is false while the
	// remote cannot be reached.
	Header() (h TunnelHeader, version uint64, ok bool)
	// TransmitTunneled encapsulates frames[i] as tx[i] says and sends
	// them through the underlay, as Transmit does. It counts in Stats what
	// it drops for the tunnel's own reasons: frames too long to
	// encapsulate within the underlay's MTU, and frames for a remote the
	// kernel has no route or neighbour entry for yet.
	TransmitTunneled(frames [][]byte, tx []TunnelTx) int
}

// Underlay is the port tunnels' frames arrive on.
type Underlay interface {
	Port
	// Decapsulate takes a received frame apart: the inner frame, a view
	// into frame, and what the outer headers said. It returns false for a
	// frame that is not a well-formed tunnel frame, which it counts.
	Decapsulate(frame []byte) (inner []byte, meta TunnelMeta, ok bool)
	// Unclaimed counts n well-formed frames that no tunnel took: from a
	// remote no tunnel has (unknownRemote), or of a VNI no tunnel to their
	// remote carries.
	Unclaimed(n uint64, unknownRemote bool)
}
