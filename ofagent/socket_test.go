package ofagent

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// loopbackPair is a connected pair of TCP sockets on loopback; the first
// is read through a rawSocket.
func loopbackPair(t *testing.T) (*rawSocket, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	dialed, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	peer := <-accepted
	if peer == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { dialed.Close(); peer.Close() })
	raw := rawSocketOf(dialed)
	if raw == nil {
		t.Fatal("a TCP connection has no raw socket")
	}
	return raw, peer
}

// A read, spinning after an answer or not, returns what comes before,
// during or after its spin, waits in the poller past the spin, keeps its
// deadline and sees the peer's close.
func TestRawSocketReads(t *testing.T) {
	for _, spin := range []bool{false, true} {
		raw, peer := loopbackPair(t)
		buf := make([]byte, 16)
		read := func(want string) {
			t.Helper()
			if spin {
				raw.answered()
			}
			n, err := raw.Read(buf)
			if err != nil || string(buf[:n]) != want {
				t.Fatalf("spin %v: read %q, %v; want %q", spin, buf[:n], err, want)
			}
		}

		peer.Write([]byte("ready"))
		time.Sleep(time.Millisecond)
		read("ready")

		for _, after := range []time.Duration{0, readSpin / 4, 10 * readSpin} {
			go func() {
				time.Sleep(after)
				peer.Write([]byte("late"))
			}()
			read("late")
		}

		raw.nc.SetReadDeadline(time.Now().Add(5 * time.Millisecond))
		if spin {
			raw.answered()
		}
		if _, err := raw.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("spin %v: a read past its deadline returned %v", spin, err)
		}
		raw.nc.SetReadDeadline(time.Time{})

		peer.Close()
		if spin {
			raw.answered()
		}
		if _, err := raw.Read(buf); err != io.EOF {
			t.Fatalf("spin %v: a read after the peer closed returned %v, want EOF", spin, err)
		}
	}
}

// A spin is spent by the read after the answer: the one after waits in
// the poller at once.
func TestRawSocketSpinsOnceAfterAnAnswer(t *testing.T) {
	raw, _ := loopbackPair(t)
	raw.answered()
	raw.nc.SetReadDeadline(time.Now().Add(time.Millisecond))
	raw.Read(make([]byte, 1))
	if raw.spin {
		t.Fatal("the read after an answer left its spin armed")
	}
}
