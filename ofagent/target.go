package ofagent

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/xswitch/xswitch/control"
)

// target is one of a bridge's controller targets: an address dialled
// (tcp:) or listened on (ptcp:), and its connections.
type target struct {
	ba *bridgeAgent
	ct control.ControllerTarget

	ctx    context.Context
	cancel context.CancelFunc
	done   sync.WaitGroup

	mu       sync.Mutex
	listener net.Listener
	conns    map[*conn]bool
	// rconn is what OVS's rconn keeps of an active target's connection
	// (state, last error, times), but whether it is connected and how.
	rconn control.ControllerConn
}

func newTarget(ba *bridgeAgent, ct control.ControllerTarget) *target {
	ctx, cancel := context.WithCancel(context.Background())
	return &target{ba: ba, ct: ct, ctx: ctx, cancel: cancel, conns: map[*conn]bool{}}
}

func (t *target) start() {
	t.done.Add(1)
	go func() {
		defer t.done.Done()
		if t.ct.Listen {
			t.listen()
		} else {
			t.dial()
		}
	}()
}

// stop closes the target's listener and connections and waits for its
// goroutines.
func (t *target) stop() {
	t.cancel()
	t.mu.Lock()
	if t.listener != nil {
		t.listener.Close()
	}
	for c := range t.conns {
		c.close(errTargetRemoved)
	}
	t.mu.Unlock()
	t.done.Wait()
	t.ba.a.sw.SetControllerStatus(t.ba.name, t.ct.String(), control.ControllerConn{})
}

var errTargetRemoved = errors.New("the controller target was removed")

// connected reports whether the target has a connection that finished
// its handshake.
func (t *target) connected() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for c := range t.conns {
		if c.ready() {
			return true
		}
	}
	return false
}

// dial keeps one connection to an active target, waiting between
// failed attempts from minBackoff, doubling up to maxBackoff; a
// connection that lasted resets the wait.
func (t *target) dial() {
	log := t.ba.log.With("target", t.ct.String())
	backoff := minBackoff
	for t.ctx.Err() == nil {
		t.mu.Lock()
		t.rconn.State = "CONNECTING"
		t.mu.Unlock()
		t.reportStatus()
		dialer := net.Dialer{Timeout: probeInterval}
		nc, err := dialer.DialContext(t.ctx, "tcp", t.ct.Address)
		if err != nil {
			if t.ctx.Err() != nil {
				return
			}
			log.Info("openflow: cannot reach the controller", "err", err, "retry_in", backoff)
			t.mu.Lock()
			t.ended(err)
			t.mu.Unlock()
			t.reportStatus()
		} else {
			began := time.Now()
			t.serve(nc)
			if time.Since(began) > maxBackoff {
				backoff = minBackoff
			}
		}
		select {
		case <-t.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// listen accepts connections on a passive target until it is stopped,
// serving each on its own goroutine.
func (t *target) listen() {
	log := t.ba.log.With("target", t.ct.String())
	var lc net.ListenConfig
	for t.ctx.Err() == nil {
		l, err := lc.Listen(t.ctx, "tcp", t.ct.Address)
		if err != nil {
			log.Error("openflow: cannot listen", "err", err, "retry_in", maxBackoff)
			select {
			case <-t.ctx.Done():
				return
			case <-time.After(maxBackoff):
				continue
			}
		}
		t.mu.Lock()
		if t.ctx.Err() != nil {
			t.mu.Unlock()
			l.Close()
			return
		}
		t.listener = l
		t.mu.Unlock()
		log.Info("openflow: listening", "address", l.Addr().String())
		for {
			nc, err := l.Accept()
			if err != nil {
				if t.ctx.Err() == nil {
					log.Error("openflow: accepting a connection", "err", err)
				}
				break
			}
			t.done.Add(1)
			go func() {
				defer t.done.Done()
				t.serve(nc)
			}()
		}
		l.Close()
	}
}

// serve runs one connection to its end.
func (t *target) serve(nc net.Conn) {
	c := newConn(t, nc)
	t.mu.Lock()
	if t.ctx.Err() != nil {
		t.mu.Unlock()
		nc.Close()
		return
	}
	t.conns[c] = true
	t.mu.Unlock()
	c.run()
	t.mu.Lock()
	delete(t.conns, c)
	if !t.ct.Listen {
		t.ended(c.closeErr)
	}
	t.mu.Unlock()
	t.ba.removeConn(c)
	t.ba.updateFailOpen()
	t.reportStatus()
}

// up records, of an active target, that its connection finished the
// handshake: OVS's rconn is connected then.
func (t *target) up() {
	if !t.ct.Listen {
		t.mu.Lock()
		t.rconn.ConnectedAt = time.Now()
		t.mu.Unlock()
	}
	t.reportStatus()
}

// ended records, of an active target, that its connection or attempt
// ended with err, as OVS's rconn does (disconnect): it waits to connect
// again. The caller holds t.mu.
func (t *target) ended(err error) {
	t.rconn.State, t.rconn.LastError, t.rconn.DisconnectedAt = "BACKOFF", rconnError(err), time.Now()
}

// rconnError is err as OVS's rconn says it in last_error: the C
// library's words for a system error, "End of file" for a connection the
// controller closed.
func rconnError(err error) string {
	var errno syscall.Errno
	switch {
	case err == nil:
		return ""
	case errors.Is(err, io.EOF):
		return "End of file"
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "Connection timed out"
	case errors.As(err, &errno):
		s := errno.Error() // Go's are the C library's, in lower case
		return strings.ToUpper(s[:1]) + s[1:]
	}
	return err.Error()
}

// reportStatus tells the daemon what is known of the target: whether it
// is connected, in which role, and for an active one what OVS's rconn
// would say of it.
func (t *target) reportStatus() {
	t.mu.Lock()
	st := t.rconn
	for c := range t.conns {
		if c.ready() {
			st.Connected, st.Role = true, c.roleName()
			if !t.ct.Listen {
				st.State = "ACTIVE"
				if c.idle.Load() {
					st.State = "IDLE"
				}
			}
			break
		}
	}
	t.mu.Unlock()
	t.ba.a.sw.SetControllerStatus(t.ba.name, t.ct.String(), st)
}
