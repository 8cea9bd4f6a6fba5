package afxdp

import (
	"fmt"
	"net"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Repeater is an AF_XDP socket that transmits one frame again and again: a
// traffic generator's (xswitch bench). It binds in copy mode to queue 0 of
// an interface and only transmits: no XDP program is attached, nothing is
// received, and the interface sends what it is given as if the host had,
// so that it works where injecting frames with BPF_PROG_RUN in live-frames
// mode is refused.
//
// The frame is written into the UMEM once per copy when the repeater
// opens; sending a copy again costs a tx descriptor, and one sendto per
// batch of up to the tx ring's size (the tx budget is the ring's size, on
// kernels that let it be set). Before a copy goes, an edit may change its
// first UMEM frame in place (a UDP source port, to spread frames over
// flows). A frame longer than a UMEM frame goes out as a chain, which
// needs multi-buffer (XDP_USE_SG, Linux 6.6 and later).
type Repeater struct {
	s         *socket
	frameSize int
	descs     int      // the UMEM frames of one copy
	length    int      // of the frame
	free      []uint64 // first addresses of the copies not in the kernel's hands
	// maxKicks bounds the sendto calls of one Send: enough to drain a
	// full tx ring at the kernel's smallest per-call budget.
	maxKicks int
	sent     atomic.Uint64
}

// RepeaterConfig describes a Repeater.
type RepeaterConfig struct {
	// Interface is the interface to send out of, in the calling thread's
	// network namespace.
	Interface string
	// Frame is what to send, from the Ethernet header on.
	Frame []byte
	// Copies is how many copies of Frame the UMEM holds, which bounds the
	// frames the kernel holds at once: a power of two (default 2048, fewer
	// for frames longer than a UMEM frame, so that the UMEM stays within
	// 4096 UMEM frames, 16 MiB).
	Copies int
}

const repeaterUMEMFrames = 4096

// OpenRepeater opens a Repeater. On error nothing is left open.
func OpenRepeater(cfg RepeaterConfig) (r *Repeater, err error) {
	frameSize := defaultFrameSize
	descs := (len(cfg.Frame) + frameSize - 1) / frameSize
	if descs == 0 || descs > maxTxDescs {
		return nil, fmt.Errorf("AF_XDP repeater: a frame of %d bytes is outside 1..%d", len(cfg.Frame), maxTxDescs*frameSize)
	}
	if cfg.Copies == 0 {
		cfg.Copies = repeaterUMEMFrames / 2
		for cfg.Copies*descs > repeaterUMEMFrames {
			cfg.Copies /= 2
		}
	}
	if cfg.Copies < 1 || cfg.Copies&(cfg.Copies-1) != 0 {
		return nil, fmt.Errorf("AF_XDP repeater: %d copies is not a power of two", cfg.Copies)
	}
	dev, err := net.InterfaceByName(cfg.Interface)
	if err != nil {
		return nil, fmt.Errorf("AF_XDP repeater: interface %q: %w", cfg.Interface, err)
	}
	if err := removeMemlock(); err != nil {
		return nil, fmt.Errorf("remove the memlock limit: %w", err)
	}
	// Every descriptor of every copy fits the tx ring at once, so that a
	// Send is never short of ring entries while copies are free.
	ringSize := cfg.Copies * descs
	for ringSize&(ringSize-1) != 0 {
		ringSize += ringSize & -ringSize
	}
	s, err := newSocket(socketConfig{
		frameSize:  frameSize,
		frameCount: cfg.Copies * descs,
		ringSize:   ringSize,
		txBudget:   ringSize,
	})
	if err != nil {
		return nil, fmt.Errorf("AF_XDP repeater on %q: %w", cfg.Interface, err)
	}
	r = &Repeater{s: s, frameSize: frameSize, descs: descs, length: len(cfg.Frame),
		maxKicks: ringSize/minTxBudget + 1}
	defer func() {
		if err != nil {
			s.close()
			r, err = nil, fmt.Errorf("AF_XDP repeater on %q: %w", cfg.Interface, err)
		}
	}()
	flags := uint16(unix.XDP_COPY)
	if descs > 1 {
		flags |= unix.XDP_USE_SG
	}
	// The fill ring stays empty: there is no XDP program to redirect
	// frames to the socket, and the kernel needs the ring only to bind.
	if err := s.bind(dev.Index, 0, flags); err != nil {
		return nil, fmt.Errorf("bind to queue 0 in %s: %w", bindChoiceOf(flags), err)
	}
	for c := range cfg.Copies {
		first := uint64(c * descs * frameSize)
		copy(s.umem[first:first+uint64(descs*frameSize)], cfg.Frame)
		r.free = append(r.free, first)
	}
	return r, nil
}

// Send puts every free copy of the frame on the tx ring, calling edit on
// its first UMEM frame first (nil: sent as written), and kicks the kernel
// until it has taken them, for at most a bounded number of kicks. The
// kernel's refusals for now (a full device or socket buffer: EBUSY,
// ENOBUFS) leave the rest to the next Send; any other is returned.
func (r *Repeater) Send(edit func(head []byte)) error {
	s := r.s
	done, first := s.comp.peek(s.comp.size)
	sent := 0
	for i := range done {
		// A chain's addresses complete in order: the copy is free again
		// once its last one has.
		addr := *s.comp.at(first + i)
		if last := uint64((r.descs - 1) * r.frameSize); addr%uint64(r.descs*r.frameSize) == last {
			r.free = append(r.free, addr-last)
			sent++
		}
	}
	s.comp.release(done)
	r.sent.Add(uint64(sent))

	got, at := s.tx.reserve(uint32(len(r.free) * r.descs))
	for i := uint32(0); i < got; i += uint32(r.descs) {
		addr := r.free[len(r.free)-1]
		r.free = r.free[:len(r.free)-1]
		if edit != nil {
			edit(s.umem[addr : addr+uint64(min(r.length, r.frameSize))])
		}
		for d := range r.descs {
			desc := unix.XDPDesc{Addr: addr + uint64(d*r.frameSize), Len: uint32(min(r.frameSize, r.length-d*r.frameSize))}
			if d < r.descs-1 {
				desc.Options = unix.XDP_PKT_CONTD
			}
			*s.tx.at(at + i + uint32(d)) = desc
		}
	}
	s.tx.submit(got)
	for range r.maxKicks {
		if s.tx.pending() == 0 {
			return nil
		}
		switch errno := s.kickTx(); errno {
		case 0, unix.EAGAIN:
		case unix.EBUSY, unix.ENOBUFS:
			return nil
		default:
			return fmt.Errorf("transmit: %w", errno)
		}
	}
	return nil
}

// Sent is how many frames the kernel has finished with: sent out of the
// interface, or dropped by its driver. Other goroutines may call it.
func (r *Repeater) Sent() uint64 { return r.sent.Load() }

// Close closes the socket and frees the UMEM.
func (r *Repeater) Close() error {
	return r.s.close()
}
