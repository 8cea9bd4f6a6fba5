package afxdp

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// socketConfig describes one AF_XDP socket and the UMEM it owns.
type socketConfig struct {
	frameSize  int
	frameCount int
	ringSize   int
	txBudget   int
}

// socket is one AF_XDP socket with its own UMEM: frames [0, frameCount/2)
// receive, the rest transmit.
type socket struct {
	fd    int
	umem  []byte
	mmaps [][]byte

	fill producerRing[uint64]
	comp consumerRing[uint64]
	rx   consumerRing[unix.XDPDesc]
	tx   producerRing[unix.XDPDesc]
}

// newSocket creates an unbound socket, registers its UMEM and maps its four
// rings. On error nothing is left open.
func newSocket(cfg socketConfig) (_ *socket, err error) {
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("create AF_XDP socket: %w", err)
	}
	s := &socket{fd: fd}
	defer func() {
		if err != nil {
			s.close()
		}
	}()

	// MAP_POPULATE faults the UMEM in now rather than on the first frames.
	s.umem, err = unix.Mmap(-1, 0, cfg.frameSize*cfg.frameCount,
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("mmap UMEM of %d bytes: %w", cfg.frameSize*cfg.frameCount, err)
	}
	reg := unix.XDPUmemReg{
		Addr: umemAddr(s.umem),
		Len:  uint64(len(s.umem)),
		Size: uint32(cfg.frameSize),
	}
	if err := setsockoptUmemReg(fd, &reg); err != nil {
		return nil, fmt.Errorf("register UMEM (XDP_UMEM_REG): %w", err)
	}
	for _, opt := range []struct {
		name string
		opt  int
	}{
		{"XDP_UMEM_FILL_RING", unix.XDP_UMEM_FILL_RING},
		{"XDP_UMEM_COMPLETION_RING", unix.XDP_UMEM_COMPLETION_RING},
		{"XDP_RX_RING", unix.XDP_RX_RING},
		{"XDP_TX_RING", unix.XDP_TX_RING},
	} {
		if err := unix.SetsockoptInt(fd, unix.SOL_XDP, opt.opt, cfg.ringSize); err != nil {
			return nil, fmt.Errorf("set %s size %d: %w", opt.name, cfg.ringSize, err)
		}
	}
	// The budget is how many frames one copy-mode sendto transmits; kernels
	// before 6.17 do not know the option and keep their fixed 32.
	err = unix.SetsockoptInt(fd, unix.SOL_XDP, unix.XDP_MAX_TX_SKB_BUDGET, cfg.txBudget)
	if err != nil && !errors.Is(err, unix.ENOPROTOOPT) && !errors.Is(err, unix.EINVAL) {
		return nil, fmt.Errorf("set XDP_MAX_TX_SKB_BUDGET %d: %w", cfg.txBudget, err)
	}

	off, err := getsockoptMmapOffsets(fd)
	if err != nil {
		return nil, fmt.Errorf("get XDP_MMAP_OFFSETS: %w", err)
	}
	size := uint32(cfg.ringSize)
	fill, err := s.mapRing(off.Fr, size, unix.XDP_UMEM_PGOFF_FILL_RING, sizeofEntry[uint64]())
	if err != nil {
		return nil, fmt.Errorf("map fill ring: %w", err)
	}
	comp, err := s.mapRing(off.Cr, size, unix.XDP_UMEM_PGOFF_COMPLETION_RING, sizeofEntry[uint64]())
	if err != nil {
		return nil, fmt.Errorf("map completion ring: %w", err)
	}
	rx, err := s.mapRing(off.Rx, size, unix.XDP_PGOFF_RX_RING, sizeofEntry[unix.XDPDesc]())
	if err != nil {
		return nil, fmt.Errorf("map rx ring: %w", err)
	}
	tx, err := s.mapRing(off.Tx, size, unix.XDP_PGOFF_TX_RING, sizeofEntry[unix.XDPDesc]())
	if err != nil {
		return nil, fmt.Errorf("map tx ring: %w", err)
	}
	s.fill = newProducerRing(mapRingView[uint64](fill, off.Fr, size))
	s.comp = newConsumerRing(mapRingView[uint64](comp, off.Cr, size))
	s.rx = newConsumerRing(mapRingView[unix.XDPDesc](rx, off.Rx, size))
	s.tx = newProducerRing(mapRingView[unix.XDPDesc](tx, off.Tx, size))
	return s, nil
}

// mapRing maps the ring the kernel keeps at page offset pgoff and records
// the mapping for close.
func (s *socket) mapRing(off unix.XDPRingOffset, size uint32, pgoff int64, entrySize uint64) ([]byte, error) {
	length := off.Desc + uint64(size)*entrySize
	mem, err := unix.Mmap(s.fd, pgoff, int(length), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, err
	}
	s.mmaps = append(s.mmaps, mem)
	return mem, nil
}

// bindTimeout bounds how long bind waits for a queue that a socket closed
// a moment ago still holds: the kernel releases it asynchronously.
const bindTimeout = time.Second

// bind attaches the socket to one queue of an interface.
func (s *socket) bind(ifindex, queue int, flags uint16) error {
	sa := &unix.SockaddrXDP{Flags: flags, Ifindex: uint32(ifindex), QueueID: uint32(queue)}
	deadline := time.Now().Add(bindTimeout)
	for {
		err := unix.Bind(s.fd, sa)
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// close releases the rings, the socket and the UMEM. The ring mappings
// hold the socket open, so they go first.
func (s *socket) close() error {
	var errs []error
	for _, mem := range s.mmaps {
		if err := unix.Munmap(mem); err != nil {
			errs = append(errs, fmt.Errorf("unmap ring: %w", err))
		}
	}
	s.mmaps = nil
	if s.fd >= 0 {
		if err := unix.Close(s.fd); err != nil {
			errs = append(errs, fmt.Errorf("close AF_XDP socket: %w", err))
		}
		s.fd = -1
	}
	if s.umem != nil {
		if err := unix.Munmap(s.umem); err != nil {
			errs = append(errs, fmt.Errorf("unmap UMEM: %w", err))
		}
		s.umem = nil
	}
	return errors.Join(errs...)
}

// statistics reads the kernel's counters for this socket.
func (s *socket) statistics() (unix.XDPStatistics, error) {
	return getsockoptStatistics(s.fd)
}

// kickRx wakes a driver that stopped refilling its rx queue from the fill
// ring (need_wakeup). It never blocks and its result does not matter: the
// next Receive will kick again if the kernel still asks for it.
func (s *socket) kickRx() {
	_, _, _ = unix.Syscall6(unix.SYS_RECVFROM, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
}

// kickTx asks the kernel to transmit what is on the tx ring and returns
// the errno of sendto (0 on success).
func (s *socket) kickTx() unix.Errno {
	_, _, errno := unix.Syscall6(unix.SYS_SENDTO, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	return errno
}
