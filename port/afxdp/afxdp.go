// Package afxdp implements port.Port over AF_XDP sockets: an XDP program
// (package bpf) redirects every frame arriving on a bound rx queue into
// that queue's socket, and frames to send are copied into the first
// socket's tx ring.
//
// Each socket owns a UMEM of FrameCount frames: the first half receives
// (they circulate between the fill ring, the rx ring and the forwarder),
// the second half transmits (they circulate between a free list, the tx
// ring and the completion ring).
//
// Frames longer than a UMEM frame (jumbo frames) travel as chains of
// descriptors: the sockets bind with XDP_USE_SG where the kernel (6.6 and
// later) and, for zero-copy, the driver allow it (see rx.go and tx.go).
// Where they do not, the port carries what one UMEM frame holds, and the
// XDP program drops and counts what is longer.
//
// A port owns its sockets, their memory and its interface's XDP program
// (until the switch's fast path replaces it through port.XDPHost); it
// creates no interface and knows nothing of bridges or flows.
package afxdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/bpf"
	"github.com/xswitch/xswitch/header"
	"github.com/xswitch/xswitch/port"
	"github.com/xswitch/xswitch/port/veth"
)

// Mode says where the XDP program runs and how the sockets bind.
type Mode string

const (
	// ModeAuto attaches in driver (native) mode if the driver supports it,
	// else generic, and binds zero-copy if possible, else copy.
	ModeAuto Mode = "auto"
	// ModeZeroCopy requires a native attach and a zero-copy bind.
	ModeZeroCopy Mode = "zerocopy"
	// ModeCopy attaches natively and binds in copy mode.
	ModeCopy Mode = "copy"
	// ModeGeneric attaches in generic (SKB) mode and binds in copy mode:
	// it works on any interface, slowest.
	ModeGeneric Mode = "generic"
)

// ParseMode parses a mode as a user writes it; "" means ModeAuto.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "":
		return ModeAuto, nil
	case ModeAuto, ModeZeroCopy, ModeCopy, ModeGeneric:
		return m, nil
	}
	return "", fmt.Errorf("unknown AF_XDP mode %q (want auto, zerocopy, copy or generic)", s)
}

// Config describes an AF_XDP port. Zero fields take their defaults.
type Config struct {
	Interface string
	// Queues is how many rx queues, from queue 0, get a socket; 0 means
	// all of the interface's rx queues.
	Queues int
	Mode   Mode
	// FrameSize is the size of one UMEM frame: 2048 or 4096 (default).
	FrameSize int
	// FrameCount is the number of UMEM frames per socket (default 4096):
	// half receive, half transmit.
	FrameCount int
	// RingSize is the size of each of a socket's four rings (default 2048),
	// a power of two at least FrameCount/2, so the fill ring can hold every
	// receive frame.
	RingSize int
	// TxBudget is how many frames one copy-mode transmit kick sends
	// (XDP_MAX_TX_SKB_BUDGET, default 256, between 32 and RingSize). Kernels
	// without the option use 32.
	TxBudget int
	// MaxFrameSize is the longest frame the port carries, from the
	// Ethernet header on, without FCS (default DefaultMaxFrameSize). A
	// frame longer than what one UMEM frame receives (FrameSize - 256)
	// needs multi-buffer; where the kernel or driver refuses it, the port
	// carries one UMEM frame's worth, and Info says so.
	MaxFrameSize int
	// Underlay makes the port a tunnel underlay, which the host's own
	// traffic shares: its XDP program steers into the sockets only the
	// datagrams to a (local address, UDP port) that ListenTunnel names, and
	// passes the rest up the stack.
	Underlay bool
}

// DefaultMaxFrameSize carries an MTU of 9216, the largest jumbo MTU that
// switches commonly offer, with one VLAN tag.
const DefaultMaxFrameSize = 9216 + header.EthernetLen + header.VLANTagLen

const (
	defaultFrameSize  = 4096
	defaultFrameCount = 4096
	defaultRingSize   = 2048
	defaultTxBudget   = 256
	// minTxBudget is the kernel's TX_BATCH_SIZE, the budget when the
	// option is unavailable and the smallest it accepts.
	minTxBudget = 32

	// rxHeadroom is what the kernel leaves free at the start of every
	// receive buffer (XDP_PACKET_HEADROOM): a UMEM frame receives
	// FrameSize - rxHeadroom bytes.
	rxHeadroom = 256
	// growRoom is room past the longest frame for tags a rewrite pushes.
	growRoom = 64
	// maxTxDescs bounds the descriptors of one transmitted frame: copy
	// mode builds an skb of at most MAX_SKB_FRAGS fragments, 17 unless
	// the kernel is configured with more, and drops a longer chain.
	maxTxDescs      = 17
	minMaxFrameSize = 64
)

// withDefaults validates c and fills in its defaults.
func (c Config) withDefaults() (Config, error) {
	if c.Interface == "" {
		return c, errors.New("no interface given")
	}
	mode, err := ParseMode(string(c.Mode))
	if err != nil {
		return c, err
	}
	c.Mode = mode
	if c.Queues < 0 {
		return c, fmt.Errorf("queue count %d is negative", c.Queues)
	}
	if c.FrameSize == 0 {
		c.FrameSize = defaultFrameSize
	}
	if c.FrameSize != 2048 && c.FrameSize != 4096 {
		return c, fmt.Errorf("frame size %d is neither 2048 nor 4096", c.FrameSize)
	}
	if c.FrameCount == 0 {
		c.FrameCount = defaultFrameCount
	}
	if c.FrameCount < 2 || c.FrameCount%2 != 0 {
		return c, fmt.Errorf("frame count %d is not a positive even number", c.FrameCount)
	}
	if c.RingSize == 0 {
		c.RingSize = max(defaultRingSize, c.FrameCount/2)
	}
	if c.RingSize < 2 || c.RingSize&(c.RingSize-1) != 0 {
		return c, fmt.Errorf("ring size %d is not a power of two", c.RingSize)
	}
	if c.RingSize < c.FrameCount/2 {
		return c, fmt.Errorf("ring size %d is smaller than the %d receive frames (frame count %d / 2): the fill ring must hold them all",
			c.RingSize, c.FrameCount/2, c.FrameCount)
	}
	if c.TxBudget == 0 {
		c.TxBudget = min(defaultTxBudget, c.RingSize)
	}
	if c.TxBudget < minTxBudget || c.TxBudget > c.RingSize {
		return c, fmt.Errorf("tx budget %d is outside [%d, ring size %d]", c.TxBudget, minTxBudget, c.RingSize)
	}
	if c.MaxFrameSize == 0 {
		c.MaxFrameSize = DefaultMaxFrameSize
	}
	if limit := maxTxDescs*c.FrameSize - growRoom; c.MaxFrameSize < minMaxFrameSize || c.MaxFrameSize > limit {
		return c, fmt.Errorf("max frame size %d is outside [%d, %d]: a frame may take at most %d UMEM frames of %d bytes",
			c.MaxFrameSize, minMaxFrameSize, limit, maxTxDescs, c.FrameSize)
	}
	return c, nil
}

// Port is an open AF_XDP port. It implements port.Port.
type Port struct {
	name     string
	info     port.Info
	objs     bpf.XskObjects
	ownProg  *ebpf.Program // objs' program the port runs: all frames, or the tunnels'
	xdpLink  link.Link
	sockets  []*socket
	rxQueues []port.RxQueue

	// bindFlags is how the first socket bound, which the others follow.
	bindFlags uint16

	// Transmit state. txMu serializes the forwarding goroutines that send
	// through the port: uncontended, it costs one lock per batch.
	txMu       sync.Mutex
	frameSize  uint32
	maxTxFrame int      // the longest frame Transmit sends
	txFree     []uint64 // tx frame addresses not on the tx or completion ring
	// maxKicks bounds the sendto calls of one Transmit: enough to drain a
	// full tx ring at the kernel's smallest per-call budget.
	maxKicks int
	// txRefused and txRefusedBytes count the frames the interface
	// refused after the kernel took them from the tx ring (countRefused).
	txRefused, txRefusedBytes atomic.Uint64

	// mu guards the sockets against Close while Stats reads them.
	mu     sync.RWMutex
	closed bool
}

var _ port.Port = (*Port)(nil)

var removeMemlock = sync.OnceValue(rlimit.RemoveMemlock)

// Open attaches the XDP program to cfg.Interface and binds one socket per
// rx queue. On error nothing is left attached or open.
func Open(cfg Config) (p *Port, err error) {
	cfg, err = cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("AF_XDP port %q: %w", cfg.Interface, err)
	}
	lnk, err := netlink.LinkByName(cfg.Interface)
	if err != nil {
		if _, ok := errors.AsType[netlink.LinkNotFoundError](err); ok {
			return nil, fmt.Errorf("interface %q does not exist", cfg.Interface)
		}
		return nil, fmt.Errorf("look up interface %q: %w", cfg.Interface, err)
	}
	if lnk.Attrs().EncapType == "loopback" {
		// Frames on lo have no Ethernet header worth switching, and
		// redirecting them would cut the host off from itself.
		return nil, fmt.Errorf("interface %q is a loopback device and cannot be a switch port", cfg.Interface)
	}
	ifindex := lnk.Attrs().Index
	// Netlink reports how many rx queues the device could have (veth says
	// one per CPU); sysfs lists those in use, which is what bind accepts.
	rxQueues := countSysfsRxQueues(cfg.Interface)
	if rxQueues == 0 {
		rxQueues = lnk.Attrs().NumRxQueues
	}
	if cfg.Queues == 0 {
		cfg.Queues = rxQueues
	}
	if cfg.Queues > rxQueues {
		return nil, fmt.Errorf("interface %q has %d rx %s, %d requested",
			cfg.Interface, rxQueues, plural(rxQueues, "queue", "queues"), cfg.Queues)
	}
	if cfg.Queues > bpf.MaxQueues {
		return nil, fmt.Errorf("interface %q: %d queues requested, at most %d supported",
			cfg.Interface, cfg.Queues, bpf.MaxQueues)
	}
	if err := removeMemlock(); err != nil {
		return nil, fmt.Errorf("remove the memlock limit for BPF maps: %w", err)
	}

	p = &Port{
		name:      cfg.Interface,
		info:      port.Info{Kind: "afxdp", Queues: cfg.Queues, Ifindex: ifindex},
		frameSize: uint32(cfg.FrameSize),
		txFree:    make([]uint64, 0, cfg.FrameCount/2),
		maxKicks:  cfg.RingSize/minTxBudget + 1,
	}
	defer func() {
		if err != nil {
			p.Close()
			p, err = nil, fmt.Errorf("AF_XDP port %q: %w", cfg.Interface, err)
		}
	}()
	if err := bpf.LoadXskObjects(&p.objs, nil); err != nil {
		return p, fmt.Errorf("load XDP program: %w", err)
	}
	p.ownProg = p.objs.XskRedirect
	if cfg.Underlay {
		p.ownProg = p.objs.XskTunnels
	}
	if err := p.attach(cfg.Mode, ifindex); err != nil {
		return p, err
	}
	p.info.MTU = lnk.Attrs().MTU
	for q := range cfg.Queues {
		if err := p.openSocket(cfg, ifindex, q); err != nil {
			return p, fmt.Errorf("queue %d: %w", q, err)
		}
	}
	if problem := MTUProblem(p.info); problem != "" && cfg.Mode != ModeAuto {
		return p, fmt.Errorf("interface %q: %s", cfg.Interface, problem)
	}
	return p, nil
}

// MTUProblem explains why a port cannot carry every frame of its
// interface's MTU, with an 802.1Q tag (a trunk's frames carry one), or
// returns "" when it can. Open refuses such a port in every mode but
// ModeAuto, which opens it and leaves it to the caller to warn.
func MTUProblem(info port.Info) string {
	need := info.MTU + header.EthernetLen + header.VLANTagLen
	if info.MTU == 0 || info.MaxFrame == 0 || need <= info.MaxFrame {
		return ""
	}
	why := "that is beyond what its buffers hold"
	if !info.MultiBuffer {
		why = "a frame must fit one buffer without AF_XDP multi-buffer (XDP_USE_SG), which needs Linux 6.6 or later and, for zero-copy, a driver that supports it"
	}
	return fmt.Sprintf("MTU %d needs frames of up to %d bytes, but the port carries at most %d (MTU %d): %s; longer frames are dropped and counted as rx_oversize",
		info.MTU, need, info.MaxFrame, info.MaxFrame-header.EthernetLen-header.VLANTagLen, why)
}

// attach installs the XDP program as a bpf_link, so that it disappears
// with the process even if the process dies without closing the port.
func (p *Port) attach(mode Mode, ifindex int) error {
	opts := link.XDPOptions{Program: p.ownProg, Interface: ifindex}
	var nativeErr error
	if mode != ModeGeneric {
		opts.Flags = link.XDPDriverMode
		l, err := link.AttachXDP(opts)
		if err == nil {
			p.xdpLink, p.info.XDPMode = l, "native"
			return nil
		}
		if mode != ModeAuto {
			return fmt.Errorf("attach XDP program in native mode: %w", err)
		}
		nativeErr = err
	}
	opts.Flags = link.XDPGenericMode
	l, err := link.AttachXDP(opts)
	if err != nil {
		if nativeErr != nil {
			return fmt.Errorf("attach XDP program in generic mode: %w (native mode failed too: %v)", err, nativeErr)
		}
		return fmt.Errorf("attach XDP program in generic mode: %w", err)
	}
	p.xdpLink, p.info.XDPMode = l, "generic"
	return nil
}

// openSocket creates and binds the socket of queue q, hands it its rx
// frames and enters it in the XSKMAP. The first socket settles the bind
// mode in ModeAuto; the others follow it.
func (p *Port) openSocket(cfg Config, ifindex, q int) error {
	s, err := newSocket(socketConfig{
		frameSize:  cfg.FrameSize,
		frameCount: cfg.FrameCount,
		ringSize:   cfg.RingSize,
		txBudget:   cfg.TxBudget,
	})
	if err != nil {
		return err
	}
	p.sockets = append(p.sockets, s)

	rxFrames := uint32(cfg.FrameCount / 2)
	got, first := s.fill.reserve(rxFrames)
	for i := range got {
		*s.fill.at(first + i) = uint64(i) * uint64(cfg.FrameSize)
	}
	s.fill.submit(got)
	if q == 0 {
		for i := rxFrames; i < uint32(cfg.FrameCount); i++ {
			p.txFree = append(p.txFree, uint64(i)*uint64(cfg.FrameSize))
		}
	}

	if q == 0 {
		if err := p.bindFirst(s, cfg, ifindex); err != nil {
			return err
		}
	} else if err := s.bind(ifindex, q, p.bindFlags); err != nil {
		return fmt.Errorf("bind as queue 0 did (%s): %w", bindChoiceOf(p.bindFlags), err)
	}
	if err := p.objs.XsksMap.Put(uint32(q), uint32(s.fd)); err != nil {
		return fmt.Errorf("enter socket in XSKMAP: %w", err)
	}
	p.rxQueues = append(p.rxQueues, newRxQueue(s, p.frameSize, p.info.MaxFrame, p.info.MultiBuffer))
	return nil
}

// bindChoice is one way to bind a socket.
type bindChoice struct{ zeroCopy, multiBuffer bool }

func bindChoiceOf(flags uint16) bindChoice {
	return bindChoice{zeroCopy: flags&unix.XDP_ZEROCOPY != 0, multiBuffer: flags&unix.XDP_USE_SG != 0}
}

func (c bindChoice) flags() uint16 {
	flags := uint16(unix.XDP_USE_NEED_WAKEUP | unix.XDP_COPY)
	if c.zeroCopy {
		flags = unix.XDP_USE_NEED_WAKEUP | unix.XDP_ZEROCOPY
	}
	if c.multiBuffer {
		flags |= unix.XDP_USE_SG
	}
	return flags
}

func (c bindChoice) String() string {
	s := "copy mode"
	if c.zeroCopy {
		s = "zero-copy mode"
	}
	if c.multiBuffer {
		s += " with multi-buffer"
	}
	return s
}

// bindFirst binds the first socket in the first of the mode's ways that
// the kernel accepts, and settles from it how the others bind, what the
// port carries and what the XDP program lets through.
func (p *Port) bindFirst(s *socket, cfg Config, ifindex int) error {
	oneBuffer := cfg.FrameSize - rxHeadroom
	choices := bindChoices(cfg.Mode, p.info.XDPMode == "native", cfg.MaxFrameSize > oneBuffer,
		p.info.MTU+header.EthernetLen+header.VLANTagLen <= oneBuffer)
	var refused []string
	for _, c := range choices {
		err := s.bind(ifindex, 0, c.flags())
		if err != nil {
			refused = append(refused, fmt.Sprintf("%s: %v", c, err))
			continue
		}
		p.bindFlags = c.flags()
		p.info.BindMode = "copy"
		if c.zeroCopy {
			p.info.BindMode = "zerocopy"
		}
		p.info.MultiBuffer = c.multiBuffer
		p.info.MaxFrame = min(cfg.MaxFrameSize, oneBuffer)
		p.maxTxFrame = cfg.FrameSize
		if c.multiBuffer {
			p.info.MaxFrame = cfg.MaxFrameSize
			p.maxTxFrame = p.txDescs(cfg.MaxFrameSize+growRoom) * cfg.FrameSize
		}
		// Before the socket enters the XSKMAP, so that no frame reaches it
		// under another limit.
		if err := p.objs.MaxFrameLen.Set(uint32(p.info.MaxFrame)); err != nil {
			return fmt.Errorf("set the XDP program's frame length limit: %w", err)
		}
		return nil
	}
	return fmt.Errorf("bind refused in every way %s allows: %s", cfg.Mode, strings.Join(refused, "; "))
}

// bindChoices lists the ways mode may bind, best first: carrying the
// interface's MTU (which takes multi-buffer unless a frame fits one UMEM
// frame) before zero-copy, zero-copy before copy. Zero-copy needs a
// native attach; multi-buffer is asked for only when the port carries
// frames longer than one UMEM frame.
func bindChoices(mode Mode, native, multiBuffer, mtuFitsOneBuffer bool) []bindChoice {
	var choices []bindChoice
	for _, zeroCopy := range []bool{true, false} {
		switch {
		case zeroCopy && mode != ModeZeroCopy && (mode != ModeAuto || !native):
			continue
		case !zeroCopy && mode == ModeZeroCopy:
			continue
		}
		if multiBuffer {
			choices = append(choices, bindChoice{zeroCopy: zeroCopy, multiBuffer: true})
		}
		choices = append(choices, bindChoice{zeroCopy: zeroCopy})
	}
	carries := func(c bindChoice) bool { return c.multiBuffer || !multiBuffer || mtuFitsOneBuffer }
	slices.SortStableFunc(choices, func(a, b bindChoice) int {
		switch {
		case carries(a) && !carries(b):
			return -1
		case carries(b) && !carries(a):
			return 1
		}
		return 0
	})
	return choices
}

// countSysfsRxQueues counts /sys/class/net/NAME/queues/rx-*: the device's
// real_num_rx_queues, or 0 if sysfs does not show the interface.
func countSysfsRxQueues(name string) int {
	matches, _ := filepath.Glob(filepath.Join("/sys/class/net", name, "queues", "rx-*"))
	return len(matches)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Name is the interface name.
func (p *Port) Name() string { return p.name }

// RxQueues are the port's queues, one per socket, in queue order.
func (p *Port) RxQueues() []port.RxQueue { return p.rxQueues }

// XDPSockets describes the port's sockets to a program that replaces its
// own.
func (p *Port) XDPSockets() port.XDPSockets {
	return port.XDPSockets{Map: p.objs.XsksMap, Oversize: p.objs.Oversize, MaxFrame: p.info.MaxFrame, Queues: len(p.sockets), Program: p.objs.XskRedirect}
}

// ListenTunnel has an underlay port's XDP program steer the IPv4/UDP
// datagrams to addr and port into the sockets, telling a program that
// reads the tunnel's header (the fast path's) that their encapsulation is
// kind.
func (p *Port) ListenTunnel(addr netip.Addr, port uint16, kind uint32) error {
	key, err := tunnelListenKey(addr, port)
	if err != nil {
		return err
	}
	if err := p.objs.TunnelListen.Put(&key, kind); err != nil {
		return fmt.Errorf("listen for tunnels on %s: %w", netip.AddrPortFrom(addr, port), err)
	}
	return nil
}

// UnlistenTunnel undoes ListenTunnel: the datagrams to addr and port go up
// the stack again.
func (p *Port) UnlistenTunnel(addr netip.Addr, port uint16) error {
	key, err := tunnelListenKey(addr, port)
	if err != nil {
		return err
	}
	if err := p.objs.TunnelListen.Delete(&key); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("stop listening for tunnels on %s: %w", netip.AddrPortFrom(addr, port), err)
	}
	return nil
}

func tunnelListenKey(addr netip.Addr, port uint16) (bpf.XskTunnelListenKey, error) {
	if !addr.Is4() {
		return bpf.XskTunnelListenKey{}, fmt.Errorf("tunnel address %v: only IPv4 underlays are supported", addr)
	}
	a := addr.As4()
	var key bpf.XskTunnelListenKey
	key.Addr = binary.NativeEndian.Uint32(a[:]) // the frame's byte order, as the program reads it
	key.Port = bpf.NetworkOrder(port)
	return key, nil
}

// TunnelListen is the map of the (address, port) pairs ListenTunnel
// added, for a program that replaces the port's own.
func (p *Port) TunnelListen() *ebpf.Map { return p.objs.TunnelListen }

// SetXDPProgram replaces the port's XDP program by prog, atomically
// (bpf_link update), or puts the port's own back for nil.
func (p *Port) SetXDPProgram(prog *ebpf.Program) error {
	if prog == nil {
		prog = p.ownProg
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("port is closed")
	}
	if err := p.xdpLink.Update(prog); err != nil {
		return fmt.Errorf("replace the XDP program of %q: %w", p.name, err)
	}
	return nil
}

// RedirectTarget reports whether frames that XDP redirects into the
// port's interface go out of it: a veth's reach its peer only if the
// peer polls with NAPI; a tap queues them for its reader. Other drivers
// would have to advertise it in their xdp-features, which is not read yet.
func (p *Port) RedirectTarget() (ok bool, why string) {
	l, err := netlink.LinkByIndex(p.info.Ifindex)
	if err != nil {
		return false, err.Error()
	}
	switch l.Type() {
	case "veth":
		return veth.PeerTakesRedirects(p.info.Ifindex)
	case "tuntap":
		return true, ""
	}
	return false, fmt.Sprintf("a %s interface: its XDP redirect support is not checked", l.Type())
}

var _ port.XDPHost = (*Port)(nil)

// Info says where the XDP program runs and how the sockets are bound.
func (p *Port) Info() port.Info { return p.info }

// Stats sums the kernel's XDP_STATISTICS over the port's sockets. A socket
// whose counters cannot be read contributes nothing.
func (p *Port) Stats() port.Stats {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var sum port.Stats
	if p.closed {
		return sum
	}
	for _, s := range p.sockets {
		st, err := s.statistics()
		if err != nil {
			continue
		}
		sum.RxDropped += st.Rx_dropped
		sum.RxInvalidDescs += st.Rx_invalid_descs
		sum.RxRingFull += st.Rx_ring_full
		sum.RxFillRingEmpty += st.Rx_fill_ring_empty_descs
		sum.TxInvalidDescs += st.Tx_invalid_descs
		sum.TxRingEmpty += st.Tx_ring_empty_descs
	}
	var perCPU []uint64
	if err := p.objs.Oversize.Lookup(uint32(0), &perCPU); err == nil {
		for _, n := range perCPU {
			sum.RxOversize += n
		}
	}
	for _, q := range p.rxQueues {
		sum.RxOversize += q.(*rxQueue).oversize.Load()
	}
	sum.TxRefused, sum.TxRefusedBytes = p.txRefused.Load(), p.txRefusedBytes.Load()
	return sum
}

// Close detaches the XDP program and releases the sockets and their
// memory. Closing twice is harmless.
func (p *Port) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	var errs []error
	if p.xdpLink != nil {
		if err := p.xdpLink.Close(); err != nil {
			errs = append(errs, fmt.Errorf("detach XDP program: %w", err))
		}
	}
	if err := p.objs.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close XDP program and map: %w", err))
	}
	for _, s := range p.sockets {
		errs = append(errs, s.close())
	}
	p.sockets, p.rxQueues = nil, nil
	return errors.Join(errs...)
}
