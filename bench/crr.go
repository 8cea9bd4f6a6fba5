package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/internal/netns"
)

// The tcpcrr workload is netperf's TCP_CRR made small: a client in the
// generator's namespace connects to a server in the receiver's, sends a
// one-byte request, reads the one-byte response and the server's close,
// and closes, again and again, crrInFlight connections at a time. Each
// connection is new to the switch: its SYN, SYN-ACK and the segments
// after them, the FINs and their ACKs, about nine frames through it. The
// server closes first, so that TIME_WAIT is the server's and the
// client's ephemeral ports come free at once.
//
// Client and server run in the bench's process, each connection on an
// OS thread of its own pinned to the generator's CPU, with blocking
// system calls on plain sockets: the kernel wakes the thread that waits,
// on CPU 0, where the Go runtime's poller would wake it from any thread.

// crrPort is the server's TCP port.
const crrPort = 7

// crrInFlight is how many connections the client keeps going at once,
// and how many the server serves at once: one at a time would measure the
// round trips of the path, not how fast it sets connections up.
const crrInFlight = 4

// crrListenBacklog is the server's listen backlog: more than the client
// ever has in flight.
const crrListenBacklog = 128

// measureCRR runs tcpcrr from hosts' generator namespace to the
// receiver's for duration and returns, for each second after the first,
// the connections completed, the switch's CPU share, and the connections
// that failed in those seconds.
func measureCRR(ctx context.Context, hosts Hosts, duration time.Duration) (s samples, err error) {
	listener := &socketSlot{fd: -1}
	err = netns.Do(hosts.RcvNetns, func() error { return listenCRR(listener) })
	if err != nil {
		listener.release()
		return samples{}, fmt.Errorf("tcpcrr server in namespace %q: %w", hosts.RcvNetns, err)
	}
	var done, failed atomic.Uint64
	slots := []*socketSlot{listener}
	var wg sync.WaitGroup
	workerErrs := make(chan error, 2*crrInFlight)
	start := func(ns string, work func(*socketSlot) error) {
		slot := &socketSlot{fd: -1}
		slots = append(slots, slot)
		wg.Go(func() {
			if err := onGeneratorCPU(ns, func() error { return work(slot) }); err != nil {
				workerErrs <- err
			}
		})
	}
	defer func() {
		for _, slot := range slots {
			slot.stop()
		}
		wg.Wait()
		close(workerErrs)
		for e := range workerErrs {
			err = errors.Join(err, e)
		}
		listener.release()
	}()
	for range crrInFlight {
		start(hosts.RcvNetns, func(slot *socketSlot) error { return serveCRR(listener, slot) })
		start(hosts.GenNetns, func(slot *socketSlot) error { return runCRRClient(slot, &done, &failed) })
	}

	type counts struct {
		at           time.Time
		done, failed uint64
		sw           cpuTimes
	}
	read := func() (c counts, err error) {
		c.at, c.done, c.failed = time.Now(), done.Load(), failed.Load()
		_, c.sw, err = readCPUTimes()
		return c, err
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last, err := read()
	if err != nil {
		return samples{}, err
	}
	var firstFailed uint64
	for second := 0; second < int(duration/time.Second); second++ {
		select {
		case <-ctx.Done():
			return samples{}, ctx.Err()
		case err := <-workerErrs:
			return samples{}, err
		case <-tick.C:
			now, err := read()
			if err != nil {
				return samples{}, err
			}
			if second == 0 { // the first second includes ARP and the first connections' setup
				firstFailed = now.failed
			} else {
				s.rates = append(s.rates, rate{
					conns:      float64(now.done-last.done) / now.at.Sub(last.at).Seconds(),
					switchBusy: busyShare(last.sw, now.sw),
				})
			}
			last = now
		}
	}
	s.lost = int(last.failed - firstFailed)
	if last.done == 0 {
		return samples{}, fmt.Errorf("no TCP connection from namespace %q to %s:%d in %q completed (%d failed)",
			hosts.GenNetns, rcvIP, crrPort, hosts.RcvNetns, last.failed)
	}
	return s, nil
}

// listenCRR opens the server's listening socket in the calling thread's
// namespace, into slot.
func listenCRR(slot *socketSlot) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open a TCP socket: %w", err)
	}
	slot.hold(fd)
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return fmt.Errorf("set SO_REUSEADDR: %w", err)
	}
	if err := unix.Bind(fd, crrAddr()); err != nil {
		return fmt.Errorf("bind to %s:%d: %w", rcvIP, crrPort, err)
	}
	if err := unix.Listen(fd, crrListenBacklog); err != nil {
		return fmt.Errorf("listen on %s:%d: %w", rcvIP, crrPort, err)
	}
	return nil
}

func crrAddr() *unix.SockaddrInet4 {
	return &unix.SockaddrInet4{Port: crrPort, Addr: [4]byte(rcvIP.To4())}
}

// serveCRR accepts connections on listener and serves each: the request
// read, the response written, the connection closed. It returns when the
// listener is stopped.
func serveCRR(listener, slot *socketSlot) error {
	var buf [1]byte
	for {
		fd, _, err := unix.Accept4(listener.fd, unix.SOCK_CLOEXEC)
		switch {
		case listener.isStopped():
			if err == nil {
				unix.Close(fd)
			}
			return nil
		case err == unix.EINTR || err == unix.ECONNABORTED:
			continue
		case err != nil:
			return fmt.Errorf("tcpcrr server: accept: %w", err)
		}
		if !slot.hold(fd) {
			return nil
		}
		if n, err := readRetrying(fd, buf[:]); n == 1 && err == nil {
			unix.Write(fd, buf[:])
		}
		slot.release()
	}
}

// runCRRClient makes one connection after another until slot is stopped,
// counting those that completed in done and the others in failed.
func runCRRClient(slot *socketSlot, done, failed *atomic.Uint64) error {
	to := crrAddr()
	for {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("tcpcrr client: open a TCP socket: %w", err)
		}
		if !slot.hold(fd) {
			return nil
		}
		ok := crrTransaction(fd, to)
		slot.release()
		switch {
		case slot.isStopped(): // cut short, neither done nor failed
			return nil
		case ok:
			done.Add(1)
		default:
			failed.Add(1)
		}
	}
}

// crrTransaction is one connection of the client on socket fd: connect,
// request, response, and the server's close.
func crrTransaction(fd int, to unix.Sockaddr) bool {
	var buf [1]byte
	if err := unix.Connect(fd, to); err != nil {
		return false
	}
	if n, err := unix.Write(fd, buf[:]); n != 1 || err != nil {
		return false
	}
	if n, err := readRetrying(fd, buf[:]); n != 1 || err != nil {
		return false
	}
	n, err := readRetrying(fd, buf[:])
	return n == 0 && err == nil
}

// readRetrying reads from fd, again when a signal interrupted the read.
func readRetrying(fd int, p []byte) (int, error) {
	for {
		n, err := unix.Read(fd, p)
		if err != unix.EINTR {
			return n, err
		}
	}
}

// socketSlot holds the socket a worker is using, so that stop can wake the
// worker out of a blocking call on it, which shutdown(2) does and close(2)
// does not, without touching a descriptor the worker has closed and the
// process may have reused.
type socketSlot struct {
	mu      sync.Mutex
	fd      int // -1: none
	stopped bool
}

// hold makes fd the slot's socket; after stop it closes fd and returns
// false.
func (s *socketSlot) hold(fd int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		unix.Close(fd)
		return false
	}
	s.fd = fd
	return true
}

// release closes the slot's socket.
func (s *socketSlot) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fd >= 0 {
		unix.Close(s.fd)
		s.fd = -1
	}
}

// stop shuts the slot's socket down, and any held after it.
func (s *socketSlot) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	if s.fd >= 0 {
		unix.Shutdown(s.fd, unix.SHUT_RDWR)
	}
}

func (s *socketSlot) isStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}
