package ofagent

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/xswitch/xswitch/openflow"
)

const (
	// sendQueueLen bounds the messages waiting for a controller's socket.
	// Replies wait for room; packet-ins and other asynchronous messages
	// that find none are dropped and counted, so that a slow controller
	// costs its own messages, never the bridge's forwarding.
	sendQueueLen = 1024
	// maxMessageLen is the longest message OpenFlow's 16-bit length can
	// give; the reader refuses nothing shorter.
	maxMessageLen = 0xffff
)

// conn is one OpenFlow connection to a controller.
type conn struct {
	t   *target
	ba  *bridgeAgent
	nc  net.Conn
	raw *rawSocket // nil if nc has no file descriptor
	log *slog.Logger

	in *bufio.Reader
	rd *openflow.Reader
	// w is the socket's writer, under wmu: the reading goroutine writes
	// its replies there itself and flushes them before it waits for more
	// input, so that a request's answer costs no hand-over to another
	// goroutine; the asynchronous messages come through out, whose
	// goroutine writes and flushes each.
	wmu sync.Mutex
	w   *bufio.Writer
	out chan []byte

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
	isReady   atomic.Bool
	heard     atomic.Int64 // when the last message came, Unix nanoseconds
	idle      atomic.Bool  // an echo request waits for its answer (OVS's IDLE)

	xid atomic.Uint32

	// Written by the reading goroutine, read by the packet-in pump and
	// others under mu.
	mu          sync.Mutex
	role        uint32
	missSendLen uint16
	async       openflow.SetAsync

	dropped atomic.Uint64 // asynchronous messages the send queue had no room for

	// The flow mods read but not yet applied (handle.go).
	pending []pendingFlowMod
}

func newConn(t *target, nc net.Conn) *conn {
	raw := rawSocketOf(nc)
	var sock io.ReadWriter = nc
	if raw != nil {
		sock = raw
	}
	c := &conn{
		t: t, ba: t.ba, nc: nc, raw: raw,
		log:         t.ba.log.With("target", t.ct.String(), "peer", nc.RemoteAddr().String()),
		in:          bufio.NewReaderSize(sock, 1<<16),
		w:           bufio.NewWriterSize(sock, 1<<16),
		out:         make(chan []byte, sendQueueLen),
		closed:      make(chan struct{}),
		role:        openflow.RoleEqual,
		missSendLen: 128, // OFP_DEFAULT_MISS_SEND_LEN
		async:       defaultAsync(),
	}
	c.rd = openflow.NewReader(c.in, maxMessageLen)
	c.heard.Store(time.Now().UnixNano())
	return c
}

// defaultAsync is the asynchronous messages a connection gets before it
// asks for others (OpenFlow 1.3 §A.3.10's defaults; the first element of
// each mask is for a master or equal controller, the second for a slave):
// a master or equal controller gets every packet-in but those for an
// invalid TTL, every port status and every flow removal; a slave only
// port status.
func defaultAsync() openflow.SetAsync {
	ports := uint32(1<<openflow.PortAdd | 1<<openflow.PortDelete | 1<<openflow.PortModify)
	removed := uint32(1<<openflow.RemovedIdleTimeout | 1<<openflow.RemovedHardTimeout | 1<<openflow.RemovedDelete |
		1<<openflow.RemovedGroupDelete)
	return openflow.SetAsync{
		PacketInMask:    [2]uint32{1<<openflow.PacketInNoMatch | 1<<openflow.PacketInAction, 0},
		PortStatusMask:  [2]uint32{ports, ports},
		FlowRemovedMask: [2]uint32{removed, 0},
	}
}

func (c *conn) ready() bool { return c.isReady.Load() }

// close ends the connection, with why for the log; the first reason
// given is the one kept.
func (c *conn) close(why error) {
	c.closeOnce.Do(func() {
		c.closeErr = why
		close(c.closed)
		c.nc.Close()
	})
}

// run handshakes, then reads and handles messages until the connection
// ends, which it logs with its reason.
func (c *conn) run() {
	c.log.Info("openflow: connected")
	var writer sync.WaitGroup
	writer.Add(1)
	go func() {
		defer writer.Done()
		c.writeLoop()
	}()
	err := c.readLoop()
	c.flush() // what the last requests were answered (a HELLO_FAILED, say)
	c.close(err)
	writer.Wait()
	if c.dropped.Load() > 0 {
		c.log.Warn("openflow: asynchronous messages dropped for a full send queue", "count", c.dropped.Load())
	}
	reason := c.closeErr
	if errors.Is(reason, io.EOF) {
		reason = errors.New("the controller closed the connection")
	}
	c.log.Info("openflow: disconnected", "reason", reason)
}

// writeLoop writes the asynchronous messages queued in out until the
// connection ends.
func (c *conn) writeLoop() {
	for {
		select {
		case msg := <-c.out:
			c.write(msg, true)
		case <-c.closed:
			return
		}
	}
}

// write writes msg to the socket, flushing if asked, and ends the
// connection if the controller has not taken it within writeTimeout. It
// says whether it flushed anything.
func (c *conn) write(msg []byte, flush bool) bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	_, err := c.w.Write(msg)
	flushed := flush && c.w.Buffered() > 0
	if err == nil && flush {
		err = c.w.Flush()
	}
	if err != nil {
		c.close(fmt.Errorf("writing to the controller: %w", err))
	}
	return flushed
}

// flush sends what the reading goroutine wrote, and says whether there
// was any.
func (c *conn) flush() bool { return c.write(nil, true) }

// send writes a reply or request from the reading goroutine; it leaves
// the socket when the goroutine next waits for input (flush).
func (c *conn) send(xid uint32, m openflow.Message) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := c.w.Write(openflow.Append(c.w.AvailableBuffer(), xid, m)); err != nil {
		c.close(fmt.Errorf("writing to the controller: %w", err))
	}
}

// sendAsync queues an asynchronous message if there is room, and counts
// it as dropped if there is none.
func (c *conn) sendAsync(m openflow.Message) {
	msg := openflow.Append(nil, c.nextXid(), m)
	select {
	case c.out <- msg:
	default:
		c.dropped.Add(1)
	}
}

func (c *conn) nextXid() uint32 { return c.xid.Add(1) }

// sendError answers the message raw with an OFPT_ERROR.
func (c *conn) sendError(raw []byte, err error) {
	var de *openflow.DecodeError
	if !errors.As(err, &de) {
		de = &openflow.DecodeError{Type: openflow.ErrBadRequest, Code: openflow.BadRequestEPERM, Reason: err.Error()}
	}
	h, _ := openflow.ParseHeader(raw)
	c.log.Debug("openflow: refused a message", "type", h.Type, "xid", h.Xid, "err", de)
	c.send(h.Xid, de.Refusal(raw))
}

// readLoop is the connection's life: the hello exchange, then messages
// until an error.
func (c *conn) readLoop() error {
	c.send(c.nextXid(), openflow.Hello{Versions: []uint8{openflow.Version}})
	c.flush()
	if err := c.handshake(); err != nil {
		return err
	}
	c.nc.SetReadDeadline(time.Time{})
	c.isReady.Store(true)
	c.ba.addConn(c)
	c.ba.updateFailOpen()
	c.t.up()
	go c.probe()
	for {
		raw, err := c.next()
		if err != nil {
			return err
		}
		c.heard.Store(time.Now().UnixNano())
		if err := c.handle(raw); err != nil {
			return err
		}
	}
}

// probe sends an echo request after probeInterval without a message from
// the controller, and ends the connection when the next probeInterval
// brings none either.
func (c *conn) probe() {
	tick := time.NewTicker(probeInterval / 5)
	defer tick.Stop()
	var probed time.Time
	for {
		select {
		case <-c.closed:
			return
		case now := <-tick.C:
			heard := time.Unix(0, c.heard.Load())
			switch {
			case now.Sub(heard) < probeInterval:
				if !probed.IsZero() {
					probed = time.Time{}
					c.idle.Store(false)
					c.t.reportStatus()
				}
			case probed.IsZero():
				probed = now
				c.sendAsync(openflow.EchoRequest{})
				c.idle.Store(true)
				c.t.reportStatus()
			case now.Sub(probed) >= probeInterval:
				c.close(fmt.Errorf("no answer to an echo request in %v: %w", probeInterval, syscall.ETIMEDOUT))
				return
			}
		}
	}
}

// next reads one message, first applying the flow mods already read when
// no more input is waiting: a stream of flow mods is applied in batches
// as large as what has arrived, a lone one at once.
func (c *conn) next() ([]byte, error) {
	if c.rd.Buffered()+c.in.Buffered() < openflow.HeaderLen {
		c.applyFlowMods()
		if c.flush() {
			c.raw.answered()
		}
	}
	raw, err := c.rd.Next()
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading a message: %w", err)
	}
	return raw, err
}

// handshake waits for the controller's hello and agrees on OpenFlow 1.3,
// or answers HELLO_FAILED with why.
func (c *conn) handshake() error {
	c.nc.SetReadDeadline(time.Now().Add(2 * probeInterval))
	// The header first: what is not a hello is refused at once, not
	// after waiting for as many bytes as its length says (garbage's may
	// say 20,000).
	first, err := c.in.Peek(openflow.HeaderLen)
	if err != nil {
		return fmt.Errorf("waiting for the controller's hello: %w", err)
	}
	if h, _ := openflow.ParseHeader(first); h.Type != openflow.TypeHello {
		c.send(h.Xid, openflow.Error{ErrType: openflow.ErrHelloFailed, Code: openflow.HelloFailedIncompatible,
			Data: []byte("the first message must be a hello")})
		return fmt.Errorf("the first message is not a hello (it begins % x)", first)
	}
	raw, err := c.rd.Next()
	if err != nil {
		return fmt.Errorf("waiting for the controller's hello: %w", err)
	}
	xid, m, err := openflow.Decode(raw)
	hello, ok := m.(openflow.Hello)
	if err != nil || !ok {
		c.send(xid, openflow.Error{ErrType: openflow.ErrHelloFailed, Code: openflow.HelloFailedIncompatible,
			Data: []byte("the hello does not decode")})
		return fmt.Errorf("the hello does not decode: %v", err)
	}
	h, _ := openflow.ParseHeader(raw)
	if !speaks13(h.Version, hello.Versions) {
		c.send(xid, openflow.Error{ErrType: openflow.ErrHelloFailed, Code: openflow.HelloFailedIncompatible,
			Data: []byte("xswitch speaks OpenFlow 1.3 (version 0x04) only")})
		return fmt.Errorf("the controller does not speak OpenFlow 1.3 (its hello: version %#x, versions %v)", h.Version, hello.Versions)
	}
	return nil
}

// speaks13 applies OpenFlow's version negotiation (§6.3.1): with a
// version bitmap, both sides must have 1.3 in theirs; without one, the
// lower of the two header versions is used, which must be 1.3.
func speaks13(version uint8, bitmap []uint8) bool {
	if len(bitmap) > 0 {
		for _, v := range bitmap {
			if v == openflow.Version {
				return true
			}
		}
		return false
	}
	return version >= openflow.Version
}
