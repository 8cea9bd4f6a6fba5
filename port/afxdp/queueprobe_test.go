package afxdp

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// queueBusy reports whether an AF_XDP socket holds queue q of the
// interface, by trying to bind another one there: the kernel allows one
// per queue and answers EBUSY. (This kernel has no xsk sock_diag, so
// `ss --xdp` cannot list them.)
func queueBusy(t testing.TB, ifindex, q int) bool {
	t.Helper()
	s, err := newSocket(socketConfig{frameSize: 2048, frameCount: 4, ringSize: 32, txBudget: 32})
	if err != nil {
		t.Fatalf("probe socket: %v", err)
	}
	defer s.close()
	err = unix.Bind(s.fd, &unix.SockaddrXDP{Flags: unix.XDP_COPY, Ifindex: uint32(ifindex), QueueID: uint32(q)})
	if errors.Is(err, unix.EBUSY) {
		return true
	}
	if err != nil {
		t.Fatalf("probe bind to queue %d of ifindex %d: %v", q, ifindex, err)
	}
	return false
}
