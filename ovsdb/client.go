package ovsdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
)

// Client is one JSON-RPC connection to an OVSDB server.
type Client struct {
	conn net.Conn

	writeMu sync.Mutex
	enc     *json.Encoder

	mu       sync.Mutex
	nextID   uint64
	pending  map[uint64]*call
	monitors map[string]func(method string, params json.RawMessage) // by monitor id
	onLock   func(name string, held bool)
	err      error
	done     chan struct{}
}

type call struct {
	reply chan reply
	// onResult, when set, runs in the reading goroutine before the next
	// message is read, so that a monitor's initial state is in place
	// before its first update.
	onResult func(json.RawMessage) error
}

type reply struct {
	result json.RawMessage
	err    error
}

// message is any JSON-RPC 1.0 message: a request or notification (Method
// set) or a reply.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// RPCError is an error reply of the server.
type RPCError struct {
	Method string
	Err    string
	Detail string
}

func (e *RPCError) Error() string {
	s := "ovsdb: " + e.Method + ": " + e.Err
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Dial connects to unix:PATH or tcp:IP:PORT.
func Dial(ctx context.Context, target string) (*Client, error) {
	network, addr, err := splitTarget(target)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("ovsdb: %w", err)
	}
	return NewClient(conn), nil
}

// CheckTarget says whether target is one Dial takes, without dialing.
func CheckTarget(target string) error {
	_, _, err := splitTarget(target)
	return err
}

func splitTarget(target string) (network, addr string, err error) {
	network, addr, ok := strings.Cut(target, ":")
	if !ok || (network != "unix" && network != "tcp") || addr == "" {
		return "", "", fmt.Errorf("ovsdb: %q is neither unix:PATH nor tcp:IP:PORT", target)
	}
	return network, addr, nil
}

// NewClient speaks JSON-RPC on conn, which it owns from now on.
func NewClient(conn net.Conn) *Client {
	c := &Client{conn: conn, enc: json.NewEncoder(conn), pending: map[uint64]*call{},
		monitors: map[string]func(string, json.RawMessage){}, done: make(chan struct{})}
	go c.read()
	return c
}

// Done is closed when the connection is gone; Err then says why.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err says why the connection is gone, or nil while it is up.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close ends the connection.
func (c *Client) Close() error {
	c.fail(errors.New("ovsdb: client closed"))
	<-c.done
	return nil
}

// OnLock sets what is told of a lock the server grants later (the
// "locked" notification, held true) or takes away ("stolen", held false).
// f runs on the goroutine reading the connection: it must not wait for
// the client.
func (c *Client) OnLock(f func(name string, held bool)) {
	c.mu.Lock()
	c.onLock = f
	c.mu.Unlock()
}

func (c *Client) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	c.conn.Close()
	for _, p := range pending {
		p.reply <- reply{err: err}
	}
}

func (c *Client) read() {
	defer close(c.done)
	dec := json.NewDecoder(c.conn)
	for {
		var m message
		if err := dec.Decode(&m); err != nil {
			c.fail(fmt.Errorf("ovsdb: connection: %w", err))
			return
		}
		if err := c.handle(&m); err != nil {
			c.fail(err)
			return
		}
	}
}

func (c *Client) handle(m *message) error {
	if m.Method == "" {
		return c.handleReply(m)
	}
	switch m.Method {
	case "echo":
		return c.send(message{ID: m.ID, Result: m.Params, Error: json.RawMessage("null")})
	case "update", "update2":
		var params []json.RawMessage
		if err := json.Unmarshal(m.Params, &params); err != nil || len(params) != 2 {
			return fmt.Errorf("ovsdb: %s notification with params %s", m.Method, m.Params)
		}
		c.mu.Lock()
		f := c.monitors[string(params[0])]
		c.mu.Unlock()
		if f != nil {
			f(m.Method, params[1])
		}
	case "locked", "stolen":
		var params []string
		if err := json.Unmarshal(m.Params, &params); err != nil || len(params) != 1 {
			return fmt.Errorf("ovsdb: %s notification with params %s", m.Method, m.Params)
		}
		c.mu.Lock()
		f := c.onLock
		c.mu.Unlock()
		if f != nil {
			f(params[0], m.Method == "locked")
		}
	default:
		if !isNull(m.ID) {
			return c.send(message{ID: m.ID, Result: json.RawMessage("null"),
				Error: json.RawMessage(`{"error":"unknown method"}`)})
		}
	}
	return nil
}

func (c *Client) handleReply(m *message) error {
	id, err := strconv.ParseUint(string(m.ID), 10, 64)
	if err != nil {
		return fmt.Errorf("ovsdb: reply with id %s, which no request has", m.ID)
	}
	c.mu.Lock()
	p := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if p == nil {
		return fmt.Errorf("ovsdb: reply with id %d, which no request has", id)
	}
	var r reply
	if !isNull(m.Error) {
		r.err = decodeError(m.Error)
	} else {
		r.result = m.Result
		if p.onResult != nil {
			r.err = p.onResult(m.Result)
		}
	}
	p.reply <- r
	return nil
}

func isNull(j json.RawMessage) bool { return len(j) == 0 || string(j) == "null" }

// decodeError reads a JSON-RPC error: an OVSDB error object or anything
// else, shown as it is.
func decodeError(j json.RawMessage) *RPCError {
	var e struct {
		Error   string `json:"error"`
		Details string `json:"details"`
	}
	if json.Unmarshal(j, &e) == nil && e.Error != "" {
		return &RPCError{Err: e.Error, Detail: e.Details}
	}
	var s string
	if json.Unmarshal(j, &s) == nil {
		return &RPCError{Err: s}
	}
	return &RPCError{Err: string(j)}
}

func (c *Client) send(m message) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if err := c.enc.Encode(m); err != nil {
		return fmt.Errorf("ovsdb: send %s: %w", m.Method, err)
	}
	return nil
}

// Call sends a request and waits for its reply, whose result it decodes
// into result (unless nil). When ctx ends first, it sends the server a
// cancel for the request.
func (c *Client) Call(ctx context.Context, method string, params []any, result any) error {
	return c.call(ctx, method, params, result, nil)
}

func (c *Client) call(ctx context.Context, method string, params []any, result any, onResult func(json.RawMessage) error) error {
	if params == nil {
		params = []any{}
	}
	p := &call{reply: make(chan reply, 1), onResult: onResult}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = p
	c.mu.Unlock()
	rawParams, err := json.Marshal(params)
	if err != nil {
		c.forget(id)
		return fmt.Errorf("ovsdb: %s: %w", method, err)
	}
	rawID := json.RawMessage(strconv.FormatUint(id, 10))
	if err := c.send(message{ID: rawID, Method: method, Params: rawParams}); err != nil {
		c.fail(err)
		return err
	}
	select {
	case r := <-p.reply:
		return finish(method, r, result)
	case <-ctx.Done():
		// The reply (a "canceled" error) still comes, and frees the id.
		_ = c.send(message{ID: json.RawMessage("null"), Method: "cancel", Params: json.RawMessage("[" + string(rawID) + "]")})
		return fmt.Errorf("ovsdb: %s: %w", method, ctx.Err())
	}
}

func (c *Client) forget(id uint64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

func finish(method string, r reply, result any) error {
	if r.err != nil {
		var rpc *RPCError
		if errors.As(r.err, &rpc) && rpc.Method == "" {
			rpc.Method = method
		}
		return r.err
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(r.result, result); err != nil {
		return fmt.Errorf("ovsdb: %s reply: %w", method, err)
	}
	return nil
}

// Echo asks the server to echo, which tells that it is alive.
func (c *Client) Echo(ctx context.Context) error {
	return c.Call(ctx, "echo", []any{"ovsdb"}, nil)
}

// ListDBs gives the names of the server's databases.
func (c *Client) ListDBs(ctx context.Context) ([]string, error) {
	var dbs []string
	err := c.Call(ctx, "list_dbs", nil, &dbs)
	return dbs, err
}

// GetSchema gives a database's schema.
func (c *Client) GetSchema(ctx context.Context, db string) (*Schema, error) {
	var raw json.RawMessage
	if err := c.Call(ctx, "get_schema", []any{db}, &raw); err != nil {
		return nil, err
	}
	return ParseSchema(raw)
}

// Lock asks for the lock name; it says whether the server granted it now.
// When not, the server grants it later with a "locked" notification (see
// OnLock).
func (c *Client) Lock(ctx context.Context, name string) (bool, error) {
	var r struct {
		Locked bool `json:"locked"`
	}
	err := c.Call(ctx, "lock", []any{name}, &r)
	return r.Locked, err
}

// Steal takes the lock name from its holder, which the server tells with
// a "stolen" notification.
func (c *Client) Steal(ctx context.Context, name string) error {
	return c.Call(ctx, "steal", []any{name}, nil)
}

// Unlock gives the lock name back, or stops waiting for it.
func (c *Client) Unlock(ctx context.Context, name string) error {
	return c.Call(ctx, "unlock", []any{name}, nil)
}
