package test

import (
	"bytes"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/xswitch/xswitch/internal/netns"
	"github.com/xswitch/xswitch/internal/testenv"
)

const (
	tcpPayloadSize = 32 << 20
	tcpTimeout     = 60 * time.Second
)

// TestTCPTransfer sends 32 MiB over TCP from one namespace to another
// through the bridge and checks every byte arrived: segmentation, checksum
// offload on veth and the forwarding path all have to be right.
func TestTCPTransfer(t *testing.T) {
	testenv.RequireRoot(t)
	r := newRig(t, 2)
	d, br, sender, receiver := r.d, r.br, r.hosts[0], r.hosts[1]

	elapsed := transferTCP(t, sender.ns, receiver.ns, receiver.addr, receiver.addr, tcpPayloadSize)
	t.Logf("%d MiB in %v: %.0f Mbit/s", tcpPayloadSize>>20, elapsed.Round(time.Millisecond),
		float64(tcpPayloadSize)*8/elapsed.Seconds()/1e6)

	// The payload crossed the bridge: in on the sender's port, out on the
	// receiver's, each with at least the payload's bytes.
	numbers := ofports(t, d, br)
	counters := dumpPorts(t, d, br)
	in, out := counters[numbers[sender.name]], counters[numbers[receiver.name]]
	if in.rxBytes < tcpPayloadSize || out.txBytes < tcpPayloadSize {
		t.Errorf("port %s rx bytes=%d, port %s tx bytes=%d, want both at least %d",
			sender.name, in.rxBytes, receiver.name, out.txBytes, tcpPayloadSize)
	}
}

// transferTCP sends size random bytes over TCP from namespace fromNS to a
// listener on listenAddr in namespace toNS, dialling dialAddr (the same
// address, or one a rule rewrites into it), checks that every byte arrived
// and returns how long it took.
func transferTCP(t *testing.T, fromNS, toNS, listenAddr, dialAddr string, size int) time.Duration {
	t.Helper()
	payload := make([]byte, size)
	rng := rand.NewChaCha8([32]byte{byte(size), byte(size >> 8)})
	if _, err := rng.Read(payload); err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(payload)

	var listener net.Listener
	err := netns.Do(toNS, func() error {
		var err error
		listener, err = net.Listen("tcp4", net.JoinHostPort(listenAddr, "0"))
		return err
	})
	if err != nil {
		t.Fatalf("listen in %s: %v", toNS, err)
	}
	defer listener.Close()
	port := strconv.Itoa(listener.Addr().(*net.TCPAddr).Port)

	type arrival struct {
		n   int64
		sum [sha256.Size]byte
		err error
	}
	arrived := make(chan arrival, 1)
	go func() {
		conn, err := listener.Accept()
		if err != nil {
			arrived <- arrival{err: err}
			return
		}
		defer conn.Close()
		if err := conn.SetDeadline(time.Now().Add(tcpTimeout)); err != nil {
			arrived <- arrival{err: err}
			return
		}
		h := sha256.New()
		n, err := io.Copy(h, conn)
		var a arrival
		a.n, a.err = n, err
		h.Sum(a.sum[:0])
		arrived <- a
	}()

	var conn net.Conn
	err = netns.Do(fromNS, func() error {
		var err error
		conn, err = net.DialTimeout("tcp4", net.JoinHostPort(dialAddr, port), 10*time.Second)
		return err
	})
	if err != nil {
		t.Fatalf("dial %s:%s from %s: %v", dialAddr, port, fromNS, err)
	}
	defer conn.Close()
	start := time.Now()
	if err := conn.SetDeadline(start.Add(tcpTimeout)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(conn, bytes.NewReader(payload)); err != nil {
		t.Fatalf("send: %v", err)
	}
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatalf("close write: %v", err)
	}
	var got arrival
	select {
	case got = <-arrived:
	case <-time.After(tcpTimeout):
		t.Fatalf("receiver still waiting after %v", tcpTimeout)
	}
	elapsed := time.Since(start)
	if got.err != nil {
		t.Fatalf("receive: %v (after %d bytes)", got.err, got.n)
	}
	if got.n != int64(size) || got.sum != want {
		t.Fatalf("received %d bytes with sha256 %x, sent %d bytes with sha256 %x", got.n, got.sum, size, want)
	}
	return elapsed

}
