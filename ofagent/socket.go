package ofagent

import (
	"io"
	"net"
	"os"
	"runtime"
	"syscall"
	"time"
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
//
// After an answer, the next read that finds nothing keeps trying for
// readSpin before it waits in the poller: see there.
type rawSocket struct {
	nc   net.Conn // for the addresses in errors
	rc   syscall.RawConn
	spin bool // the next read spins; only the reading goroutine reads
}

// rawSocketOf returns nc reading and writing through raw system calls, or
// nil if it has no file descriptor.
func rawSocketOf(nc net.Conn) *rawSocket {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return &rawSocket{nc: nc, rc: rc}
}

// answered says the reading goroutine has just sent a reply, so that its
// next read spins: the controller may well be waiting for it to send the
// next request.
func (s *rawSocket) answered() {
	if s != nil {
		s.spin = true
	}
}

// readSpin is how long a read after an answer that finds nothing keeps
// trying before it waits in the poller. A controller in a round trip
// (ovs-ofctl add-flows: a flow mod and a barrier, then the barrier's
// reply awaited) sends its next request some tens of microseconds after
// the answer. A daemon that parked at once has let its
// CPU halt by then, and on a virtual machine waking a halted CPU costs a
// hypervisor exit on both sides: the sender's write spends 15-20 µs in it
// and the reader runs 20-35 µs later, together more than the daemon's own
// work on a flow mod. Spinning for a little longer than that gap finds the
// request already there, and costs readSpin of CPU once when the controller
// has gone quiet instead. Reads after what needs no answer (a packet-out,
// the flow mod before its barrier) do not spin: spinning then only took
// the CPU from the forwarders the controller's packets wait for.
const readSpin = 100 * time.Microsecond

func (s *rawSocket) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n uintptr
	var errno syscall.Errno
	var spinUntil time.Time
	spin := s.spin
	s.spin = false
	err := s.rc.Read(func(fd uintptr) bool {
		for {
			n, _, errno = unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			if errno != unix.EAGAIN {
				return true
			}
			if !spin {
				return false
			}
			now := time.Now()
			if spinUntil.IsZero() {
				spinUntil = now.Add(readSpin)
			}
			if !now.Before(spinUntil) {
				return false
			}
			runtime.Gosched() // whatever else is runnable goes first
		}
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
