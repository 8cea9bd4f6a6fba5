// Package afxdp implements port.Port over AF_XDP sockets: an XDP program
// (package bpf) redirects every frame arriving on a bound rx queue into
// that queue's socket, and frames to send are copied into the first
// socket's tx ring.
//
// Each socket owns a UMEM of FrameCount frames: the first half receives
// (they circulate between the fill ring, the rx ring and the forwarder),
// the second half transmits (they circulate between a free list, the tx
// ring and the completion ring).
package afxdp

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/bpf"
	"github.com/xswitch/xswitch/port"
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
}

const (
	defaultFrameSize  = 4096
	defaultFrameCount = 4096
	defaultRingSize   = 2048
	defaultTxBudget   = 256
	// minTxBudget is the kernel's TX_BATCH_SIZE, the budget when the
	// option is unavailable and the smallest it accepts.
	minTxBudget = 32
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
	return c, nil
}

// Port is an open AF_XDP port. It implements port.Port.
type Port struct {
	name     string
	info     port.Info
	objs     bpf.XskObjects
	xdpLink  link.Link
	sockets  []*socket
	rxQueues []port.RxQueue

	// Transmit state. txMu serializes the forwarding goroutines that send
	// through the port: uncontended, it costs one lock per batch.
	txMu      sync.Mutex
	frameSize uint32
	txFree    []uint64 // tx frame addresses not on the tx or completion ring
	// maxKicks bounds the sendto calls of one Transmit: enough to drain a
	// full tx ring at the kernel's smallest per-call budget.
	maxKicks int

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
	if err := p.attach(cfg.Mode, ifindex); err != nil {
		return p, err
	}
	for q := range cfg.Queues {
		if err := p.openSocket(cfg, ifindex, q); err != nil {
			return p, fmt.Errorf("queue %d: %w", q, err)
		}
	}
	return p, nil
}

// attach installs the XDP program as a bpf_link, so that it disappears
// with the process even if the process dies without closing the port.
func (p *Port) attach(mode Mode, ifindex int) error {
	opts := link.XDPOptions{Program: p.objs.XskRedirect, Interface: ifindex}
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

	if err := p.bind(s, cfg.Mode, ifindex, q); err != nil {
		return err
	}
	if err := p.objs.XsksMap.Put(uint32(q), uint32(s.fd)); err != nil {
		return fmt.Errorf("enter socket in XSKMAP: %w", err)
	}
	p.rxQueues = append(p.rxQueues, &rxQueue{s: s, frameSize: p.frameSize})
	return nil
}

func (p *Port) bind(s *socket, mode Mode, ifindex, q int) error {
	const flags = unix.XDP_USE_NEED_WAKEUP
	tryZeroCopy := mode == ModeZeroCopy ||
		mode == ModeAuto && p.info.XDPMode == "native" && p.info.BindMode != "copy"
	if tryZeroCopy {
		err := s.bind(ifindex, q, flags|unix.XDP_ZEROCOPY)
		if err == nil {
			p.info.BindMode = "zerocopy"
			return nil
		}
		if mode == ModeZeroCopy || p.info.BindMode == "zerocopy" {
			return fmt.Errorf("bind in zero-copy mode: %w", err)
		}
	}
	if err := s.bind(ifindex, q, flags|unix.XDP_COPY); err != nil {
		return fmt.Errorf("bind in copy mode: %w", err)
	}
	p.info.BindMode = "copy"
	return nil
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
