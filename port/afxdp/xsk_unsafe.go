package afxdp

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// All of the package's unsafe code: turning mmap'd ring memory into typed
// views, and the socket options x/sys/unix has no typed wrappers for.

// mapRingView interprets mem, a ring mmap'd from an AF_XDP socket, using
// the kernel's offsets for that ring. T is the ring's entry type: a UMEM
// address (fill, completion) or a descriptor (rx, tx).
func mapRingView[T uint64 | unix.XDPDesc](mem []byte, off unix.XDPRingOffset, size uint32) ringView[T] {
	base := unsafe.Pointer(unsafe.SliceData(mem))
	return ringView[T]{
		producer: (*atomic.Uint32)(unsafe.Add(base, off.Producer)),
		consumer: (*atomic.Uint32)(unsafe.Add(base, off.Consumer)),
		flags:    (*atomic.Uint32)(unsafe.Add(base, off.Flags)),
		entries:  unsafe.Slice((*T)(unsafe.Add(base, off.Desc)), size),
	}
}

func sizeofEntry[T uint64 | unix.XDPDesc]() uint64 {
	var e T
	return uint64(unsafe.Sizeof(e))
}

func getsockoptMmapOffsets(fd int) (unix.XDPMmapOffsets, error) {
	var off unix.XDPMmapOffsets
	err := getsockopt(fd, unix.XDP_MMAP_OFFSETS, unsafe.Pointer(&off), unsafe.Sizeof(off))
	return off, err
}

func getsockoptStatistics(fd int) (unix.XDPStatistics, error) {
	var st unix.XDPStatistics
	err := getsockopt(fd, unix.XDP_STATISTICS, unsafe.Pointer(&st), unsafe.Sizeof(st))
	return st, err
}

func setsockoptUmemReg(fd int, reg *unix.XDPUmemReg) error {
	_, _, errno := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, unix.XDP_UMEM_REG,
		uintptr(unsafe.Pointer(reg)), unsafe.Sizeof(*reg), 0)
	if errno != 0 {
		return errno
	}
	return nil
}

func getsockopt(fd, opt int, val unsafe.Pointer, size uintptr) error {
	vallen := uint32(size)
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt),
		uintptr(val), uintptr(unsafe.Pointer(&vallen)), 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// umemAddr is the address of mem for XDP_UMEM_REG.
func umemAddr(mem []byte) uint64 {
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(mem))))
}
