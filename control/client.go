package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"
)

// DefaultSocket is where the daemon listens unless told otherwise.
const DefaultSocket = "/run/xswitch/xswitch.sock"

// DefaultDB is where the daemon keeps its configuration unless told
// otherwise.
const DefaultDB = "/var/lib/xswitch/conf.json"

// UnreachableError means no daemon answered on the socket.
type UnreachableError struct {
	Socket string
	Err    error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach the xswitch daemon at %s: it is not running, or not on that socket (start it with \"xswitch daemon\"): %v", e.Socket, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Call sends req to the daemon listening on socket and returns its answer.
// A request the daemon refused is an error carrying the daemon's message.
func Call(socket string, req Request) (*Response, error) {
	c, err := net.DialTimeout("unix", socket, 5*time.Second)
	if err != nil {
		return nil, &UnreachableError{Socket: socket, Err: err}
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * requestTimeout))
	if err := json.NewEncoder(c).Encode(req); err != nil {
		return nil, &UnreachableError{Socket: socket, Err: err}
	}
	var resp Response
	if err := json.NewDecoder(c).Decode(&resp); err != nil {
		return nil, &UnreachableError{Socket: socket, Err: fmt.Errorf("reading the answer: %w", err)}
	}
	if resp.Error != "" {
		return nil, errors.New(resp.Error)
	}
	return &resp, nil
}
