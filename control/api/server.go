package api

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

const (
	// maxRequestSize bounds the JSON request a client can make the daemon
	// read. Rules in bulk do not count: they follow the request as a stream
	// (Request.Stream).
	maxRequestSize = 1 << 20
	// maxFlowLine bounds one line of a stream of rules.
	maxFlowLine = 1 << 20
	// requestTimeout bounds how long a client may take to send its request,
	// so that one that connects and says nothing, or trickles, cannot pile
	// up. While a stream of rules arrives, and while the answer leaves, it
	// bounds the time without progress instead, so that big transfers are
	// never cut short. Waiting for other verbs and doing the work are the
	// daemon's business, never the client's, and have no deadline.
	requestTimeout = 10 * time.Second
	// writeChunk is how much of an answer is written per deadline.
	writeChunk = 64 << 10
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

// Handler answers requests; the daemon is one. Handle is called for each
// request on the connection's own goroutine, and so concurrently.
type Handler interface {
	Handle(Request) Response
}

// Serve answers clients on ln with h until ln is closed, logging to log
// what goes wrong with a client.
func Serve(ln net.Listener, h Handler, log *slog.Logger) error {
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
			log.Warn("cannot accept a client, retrying", "err", err, "in", backoff)
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
			serveConn(c, h, log)
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

func serveConn(c net.Conn, h Handler, log *slog.Logger) {
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(requestTimeout))
	if uid, err := peerUID(c); err != nil || (uid != 0 && uid != uint32(os.Geteuid())) {
		log.Warn("client refused", "uid", uid, "err", err)
		// Read the request first: closing before the client has written it
		// fails the client's write, and it could not tell this refusal
		// from a lost answer.
		decodeRequest(c)
		writeResponse(c, Response{Error: errPermission.Error()})
		return
	}
	req, err := readRequest(c)
	if errors.Is(err, io.EOF) {
		// Connected and closed without a word: a second daemon making sure
		// none listens here, or a client that gave up.
		log.Debug("client closed without a request")
		return
	}
	if err != nil {
		log.Warn("bad request", "err", err)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = fmt.Errorf("no complete request within %v", requestTimeout)
		}
		writeResponse(c, Response{Error: fmt.Sprintf("bad request: %v", err)})
		return
	}
	c.SetReadDeadline(time.Time{})
	resp := h.Handle(req)
	if resp.Error != "" {
		log.Info("request failed", "verb", req.Verb, "bridge", req.Bridge, "err", resp.Error)
	}
	if err := writeResponse(c, resp); err != nil {
		// The verb took effect (or failed) all the same; the client says
		// its outcome is unknown.
		log.Warn("the answer did not reach the client", "verb", req.Verb, "bridge", req.Bridge, "err", err)
	}
}

// errPermission is the daemon's answer to a client that is not root.
var errPermission = errors.New("permission denied: only root may control xswitch")

// readRequest reads one request from c and, when it says a stream of rules
// follows, the rules.
func readRequest(c net.Conn) (Request, error) {
	req, ahead, err := decodeRequest(c)
	if err != nil || !req.Stream {
		return req, err
	}
	if req.Verb != VerbAddFlows {
		return Request{}, fmt.Errorf("%s takes no stream of rules", req.Verb)
	}
	if len(req.Flows) > 0 {
		return Request{}, errors.New("rules both in the request and in a stream")
	}
	c.SetReadDeadline(time.Time{})
	stream := bufio.NewReader(io.MultiReader(ahead, &progressReader{c}))
	// The stream starts on the line after the request.
	if b, err := stream.ReadByte(); err == nil && b != '\n' {
		stream.UnreadByte()
	}
	req.Flows, req.FlowLines, err = readFlowLines(stream)
	return req, err
}

// decodeRequest reads one request from r, reading at most maxRequestSize
// bytes of it. ahead is what it read of r beyond the request. A
// connection closed before a request began is io.EOF.
func decodeRequest(r io.Reader) (req Request, ahead io.Reader, err error) {
	limited := &io.LimitedReader{R: r, N: maxRequestSize}
	dec := json.NewDecoder(limited)
	err = dec.Decode(&req)
	if err != nil && limited.N == 0 {
		// The decoder saw the limit as an early end of input; say which.
		return Request{}, nil, fmt.Errorf("request larger than %d bytes", maxRequestSize)
	}
	if err != nil {
		return Request{}, nil, err
	}
	return req, dec.Buffered(), nil
}

// readFlowLines reads rules one per line, as add-flows files hold them:
// blank lines and lines starting with # are skipped. lines are the line
// numbers of the rules, for error messages.
func readFlowLines(r io.Reader) (flows []string, lines []int, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxFlowLine)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !utf8.ValidString(line) {
			return nil, nil, fmt.Errorf("line %d is not valid UTF-8", n)
		}
		flows = append(flows, line)
		lines = append(lines, n)
	}
	switch err := sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return nil, nil, fmt.Errorf("line %d is longer than %d bytes", n+1, maxFlowLine)
	case err != nil:
		return nil, nil, fmt.Errorf("reading the rules after line %d: %w", n, err)
	}
	return flows, lines, nil
}

// progressReader reads from a connection that must keep making progress:
// each read may wait requestTimeout, however long the whole takes.
type progressReader struct{ c net.Conn }

func (r *progressReader) Read(p []byte) (int, error) {
	r.c.SetReadDeadline(time.Now().Add(requestTimeout))
	return r.c.Read(p)
}

// writeResponse writes resp in chunks, each within requestTimeout, so that
// a client reading a big answer at any steady pace gets all of it and one
// that stops reading is given up on.
func writeResponse(c net.Conn, resp Response) error {
	data, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	defer c.SetWriteDeadline(time.Time{})
	for chunk := range slices.Chunk(data, writeChunk) {
		c.SetWriteDeadline(time.Now().Add(requestTimeout))
		if _, err := c.Write(chunk); err != nil {
			return err
		}
	}
	return nil
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
