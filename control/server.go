package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// maxRequestSize bounds what one client can make the daemon read.
	maxRequestSize = 1 << 20
	// requestTimeout bounds how long one client can hold a connection, so
	// that a client that connects and says nothing cannot pile up.
	requestTimeout = 10 * time.Second
)

// Listen opens the daemon's unix socket at path, readable and writable by
// its owner only. A socket file left by a dead daemon is replaced; one that
// a live daemon answers on is an error.
func Listen(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("another xswitch daemon is already listening on %s", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	// The umask makes the socket 0600 from its first moment, not after a
	// chmod that a client could race.
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	return ln, err
}

// Serve answers clients on ln until ln is closed.
func (d *Daemon) Serve(ln net.Listener) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		if acceptCanRecover(err) {
			// Out of descriptors or memory, as under a flood of clients:
			// that passes as connections close or time out, so wait rather
			// than stop serving.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			d.log.Warn("cannot accept a client, retrying", "err", err, "in", backoff)
			time.Sleep(backoff)
			continue
		}
		if err != nil {
			return err
		}
		backoff = 0
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.serveConn(c)
		}()
	}
}

// acceptCanRecover reports whether Accept failed for want of a resource
// that comes back by itself.
func acceptCanRecover(err error) bool {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

func (d *Daemon) serveConn(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(requestTimeout))
	log := d.log
	if uid, err := peerUID(c); err != nil || (uid != 0 && uid != uint32(os.Geteuid())) {
		d.log.Warn("client refused", "uid", uid, "err", err)
		// Read the request first: closing before the client has written it
		// fails the client's write, and it would report an unreachable
		// daemon instead of this refusal.
		decodeRequest(c)
		writeResponse(c, Response{Error: "permission denied: only root may control xswitch"})
		return
	}
	req, err := decodeRequest(c)
	if err != nil {
		log.Warn("bad request", "err", err)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// The deadline covers the answer too: give the reason a moment
			// to reach a client that was merely slow.
			err = fmt.Errorf("no complete request within %v", requestTimeout)
			c.SetWriteDeadline(time.Now().Add(time.Second))
		}
		writeResponse(c, Response{Error: fmt.Sprintf("bad request: %v", err)})
		return
	}
	resp := d.Handle(req)
	if resp.Error != "" {
		log.Info("request failed", "verb", req.Verb, "bridge", req.Bridge, "err", resp.Error)
	}
	writeResponse(c, resp)
}

// decodeRequest reads one request from r, reading at most maxRequestSize
// bytes of it.
func decodeRequest(r io.Reader) (Request, error) {
	limited := &io.LimitedReader{R: r, N: maxRequestSize}
	var req Request
	err := json.NewDecoder(limited).Decode(&req)
	if err != nil && limited.N == 0 {
		// The decoder saw the limit as an early end of input; say which.
		return Request{}, fmt.Errorf("request larger than %d bytes", maxRequestSize)
	}
	return req, err
}

func writeResponse(c net.Conn, resp Response) {
	json.NewEncoder(c).Encode(resp)
}

func peerUID(c net.Conn) (uint32, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0, errors.New("not a unix socket")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var credErr error
	err = raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if err != nil {
		return 0, err
	}
	if credErr != nil {
		return 0, credErr
	}
	return cred.Uid, nil
}
