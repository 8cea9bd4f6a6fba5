package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"reflect"
	"syscall"
	"time"
	"unicode/utf8"
)

// DefaultSocket is where the daemon listens unless told otherwise.
const DefaultSocket = "/run/xswitch/xswitch.sock"

// dialTimeout bounds connecting: a daemon that is up accepts at once, or
// queues the connection in its listen backlog.
const dialTimeout = 5 * time.Second

// UnreachableError means no daemon answered on the socket: nothing was
// sent, so nothing changed.
type UnreachableError struct {
	Socket string
	Err    error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach the xswitch daemon at %s: it is not running, or not on that socket (start it with \"xswitch daemon\"): %v", e.Socket, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// OutcomeUnknownError means the request reached the daemon but its answer
// did not come back: the daemon may or may not have carried it out.
type OutcomeUnknownError struct {
	Socket string
	Err    error
}

func (e *OutcomeUnknownError) Error() string {
	return fmt.Sprintf("the request was sent to the xswitch daemon at %s but no answer came back (%v): it may or may not have been carried out; check with show or dump-flows", e.Socket, e.Err)
}

func (e *OutcomeUnknownError) Unwrap() error { return e.Err }

// Client talks to the daemon listening on Socket.
type Client struct {
	Socket string
	// Timeout bounds the whole exchange; 0 waits as long as the daemon
	// takes, as ovs-vsctl does without --timeout. A request waits its turn
	// behind the verbs before it, and a big table takes a while to answer.
	Timeout time.Duration
}

// Call sends req to the daemon listening on socket, waiting as long as it
// takes, and returns its answer.
func Call(socket string, req Request) (*Response, error) {
	return Client{Socket: socket}.Do(req, nil)
}

// Do sends req and, if body is not nil, streams body after it (req.Stream
// is set for it), and returns the daemon's answer. A request the daemon
// refused is an error carrying the daemon's message; an exchange that
// broke off after the request was sent is an *OutcomeUnknownError.
func (c Client) Do(req Request, body io.Reader) (*Response, error) {
	if err := checkUTF8(reflect.ValueOf(req)); err != nil {
		return nil, err
	}
	req.Stream = body != nil
	conn, err := net.DialTimeout("unix", c.Socket, dialTimeout)
	if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
		return nil, fmt.Errorf("%w (the socket %s is root's)", errPermission, c.Socket)
	}
	if err != nil {
		return nil, &UnreachableError{Socket: c.Socket, Err: err}
	}
	defer conn.Close()
	if c.Timeout > 0 {
		conn.SetDeadline(time.Now().Add(c.Timeout))
	}
	sendErr := send(conn, req, body)
	var resp Response
	if sendErr != nil {
		// The daemon answers a request it cannot take (too big, say)
		// before it has read all of it, and the rest fails to send: its
		// answer may be waiting.
		conn.SetReadDeadline(time.Now().Add(time.Second))
	}
	if err := json.NewDecoder(conn).Decode(&resp); err != nil {
		if sendErr != nil {
			err = sendErr
		} else if errors.Is(err, io.EOF) {
			err = errors.New("the daemon closed the connection")
		} else if errors.Is(err, os.ErrDeadlineExceeded) {
			err = fmt.Errorf("no answer within %v", c.Timeout)
		}
		return nil, &OutcomeUnknownError{Socket: c.Socket, Err: err}
	}
	if resp.Error != "" {
		return nil, errors.New(resp.Error)
	}
	return &resp, nil
}

// send writes req, then body, and shuts the sending side down so that the
// daemon sees where a stream ends.
func send(conn net.Conn, req Request, body io.Reader) error {
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return err
	}
	if body != nil {
		if _, err := io.Copy(conn, body); err != nil {
			return err
		}
	}
	return conn.(*net.UnixConn).CloseWrite()
}

// checkUTF8 refuses a request with a string that is not valid UTF-8, which
// JSON would silently turn into another string: an interface name of
// arbitrary bytes would reach the daemon as a different name.
func checkUTF8(v reflect.Value) error {
	switch v.Kind() {
	case reflect.String:
		if !utf8.ValidString(v.String()) {
			return fmt.Errorf("%q is not valid UTF-8", v.String())
		}
	case reflect.Pointer:
		if !v.IsNil() {
			return checkUTF8(v.Elem())
		}
	case reflect.Slice:
		for i := range v.Len() {
			if err := checkUTF8(v.Index(i)); err != nil {
				return err
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if err := checkUTF8(v.Field(i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// WaitReady waits until a daemon serves on socket, for at most timeout: a
// daemon answers only once it has restored its configuration, and until it
// listens, the socket may be missing or left by a dead daemon. Not ready in
// time is an *UnreachableError.
func WaitReady(socket string, timeout time.Duration) (*DaemonStatus, error) {
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		resp, err := Client{Socket: socket, Timeout: max(left, time.Millisecond)}.Do(Request{Verb: VerbStatus}, nil)
		if err == nil {
			return resp.Status, nil
		}
		var cause error
		if e, ok := errors.AsType[*UnreachableError](err); ok {
			cause = e.Err
		} else if e, ok := errors.AsType[*OutcomeUnknownError](err); ok {
			cause = e.Err
		} else {
			return nil, err
		}
		if left = time.Until(deadline); left <= 0 {
			return nil, &UnreachableError{Socket: socket, Err: fmt.Errorf("none ready within %v: %w", timeout, cause)}
		}
		time.Sleep(min(50*time.Millisecond, left))
	}
}
