package ofagent

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawSocket reads and writes a connection's socket with raw system calls,
// waiting for it in Go's poller as net.Conn does, deadlines included.
//
// A controller such as ovs-ofctl add-flows sends one flow mod and a
// barrier and waits for the reply before the next: a round trip per flow,
// each of which finds the daemon idle. A read or write through net.Conn
// enters the system call through the Go scheduler, which wakes its
// monitor thread (sysmon) whenever the daemon was idle; the monitor then
// polls every 20 µs until the daemon is idle again. Pinned to one CPU, as
// a switch is (taskset), those wake-ups took half of the daemon's context
// switches and doubled a flow mod's round trip. The socket is
// non-blocking, so its reads and writes never block in the kernel and
// need none of what the scheduler does around a system call.
type rawSocket struct {
	nc net.Conn // for the addresses in errors
	rc syscall.RawConn
}

// socketOf returns nc reading and writing through raw system calls, or nc
// itself if it has no file descriptor.
func socketOf(nc net.Conn) io.ReadWriter {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nc
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nc
	}
	return &rawSocket{nc: nc, rc: rc}
}

func (s *rawSocket) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n uintptr
	var errno syscall.Errno
	err := s.rc.Read(func(fd uintptr) bool {
		n, _, errno = unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		return errno != unix.EAGAIN
	})
	switch {
	case err != nil:
		return 0, err
	case errno == unix.EINTR:
		return 0, nil // bufio tries again
	case errno != 0:
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: s.nc.LocalAddr(), Addr: s.nc.RemoteAddr(), Err: os.NewSyscallError("read", errno)}
	case n == 0:
		return 0, io.EOF
	}
	return int(n), nil
}

func (s *rawSocket) Write(p []byte) (int, error) {
	written := 0
	for written < len(p) {
		var n uintptr
		var errno syscall.Errno
		err := s.rc.Write(func(fd uintptr) bool {
			rest := p[written:]
			n, _, errno = unix.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(&rest[0])), uintptr(len(rest)))
			return errno != unix.EAGAIN
		})
		switch {
		case err != nil:
			return written, err
		case errno == unix.EINTR:
			continue
		case errno != 0:
			return written, &net.OpError{Op: "write", Net: "tcp", Source: s.nc.LocalAddr(), Addr: s.nc.RemoteAddr(), Err: os.NewSyscallError("write", errno)}
		}
		written += int(n)
	}
	return written, nil
}
