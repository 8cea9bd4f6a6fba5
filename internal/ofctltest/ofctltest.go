// Package ofctltest holds what the tests of the OpenFlow codec and agent
// share about Open vSwitch's ovs-ofctl, their oracle: finding it, its
// hidden commands that decode hex and print what they read, and a switch
// on a TCP socket for it to talk to.
//
// It works on raw bytes and does not import package openflow: openflow's
// own tests use it, and the import would be a cycle.
package ofctltest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// timeout bounds a run of ovs-ofctl and a connection of it to a Switch,
// so that a switch that does not answer fails the test instead of
// hanging it.
const timeout = 20 * time.Second

// Require skips a test that needs ovs-ofctl when it is not installed, or
// fails it when XSWITCH_REQUIRE_PRIVILEGED=1 says the environment must
// have it, so that CI cannot go green by skipping.
func Require(t testing.TB) {
	t.Helper()
	path(t)
}

func path(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("ovs-ofctl")
	if err == nil {
		return p
	}
	if os.Getenv("XSWITCH_REQUIRE_PRIVILEGED") == "1" {
		t.Fatal("ovs-ofctl is not installed (test/deps installs it, with openvswitch-switch) and XSWITCH_REQUIRE_PRIVILEGED=1 forbids skipping")
	}
	t.Skip("skipping: ovs-ofctl is not installed; run test/deps (it installs openvswitch-switch), or set XSWITCH_REQUIRE_PRIVILEGED=1 to make this a failure")
	return ""
}

// Run runs ovs-ofctl with args and returns what it printed, standard
// output and error together.
func Run(t testing.TB, args ...string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return exec.CommandContext(ctx, path(t), args...).CombinedOutput()
}

// parse runs `ovs-ofctl cmd OpenFlow13` with lines on its standard input
// and returns its standard output; its standard error, where it warns
// about what it reads, goes only into the failure.
func parse(t testing.TB, cmd string, lines []string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c := exec.CommandContext(ctx, path(t), cmd, "OpenFlow13")
	c.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		t.Fatalf("ovs-ofctl %s: %v: %s", cmd, err, stderr.String())
	}
	return string(out)
}

// Parse gives each of encodings, as hex, to `ovs-ofctl cmd OpenFlow13`,
// cmd parse-actions or parse-instructions, and returns what it printed
// for each: "actions=TEXT" or "bad ... actions: ERROR". If ovs-ofctl
// re-encodes what it read to other bytes, the test fails: canonical
// encodings come back unchanged.
func Parse(t testing.TB, cmd string, encodings [][]byte) []string {
	t.Helper()
	var lines []string
	for _, e := range encodings {
		lines = append(lines, fmt.Sprintf("%x", e))
	}
	out := parse(t, cmd, lines)
	// One block per input: the result, then a line per byte that differs
	// when ovs-ofctl encodes it back, then an empty line.
	blocks := strings.Split(strings.TrimSuffix(out, "\n\n"), "\n\n")
	if len(blocks) != len(encodings) {
		t.Fatalf("ovs-ofctl %s: %d results for %d inputs:\n%s", cmd, len(blocks), len(encodings), out)
	}
	for i, blk := range blocks {
		lines := strings.Split(blk, "\n")
		blocks[i] = lines[0]
		if len(lines) > 1 {
			t.Errorf("ovs-ofctl re-encodes %x (%s) otherwise:\n%s", encodings[i], lines[0], strings.Join(lines[1:], "\n"))
		}
	}
	return blocks
}

// ParseOXM gives each of matches, in parse-oxm's text (TLVs as
// "80000004(00000001)", joined by ", "), to `ovs-ofctl parse-oxm
// OpenFlow13`, which reads it into a match of Open vSwitch's own, and
// returns what it prints for each: that match encoded again, in its
// canonical form, or the error reading it.
func ParseOXM(t testing.TB, matches []string) []string {
	t.Helper()
	out := parse(t, "parse-oxm", matches)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(matches) {
		t.Fatalf("ovs-ofctl parse-oxm printed %d lines for %d matches:\n%s", len(lines), len(matches), out)
	}
	return lines
}

// The few OpenFlow 1.3 numbers a Switch and AddFlow need. They are not
// package openflow's constants because openflow's tests import this
// package.
const (
	version            = 4
	typeHello          = 0
	typeFlowMod        = 14
	typeBarrierRequest = 20
	typeBarrierReply   = 21
	typeMeterMod       = 29
	headerLen          = 8
)

// A Handler answers a message ovs-ofctl sent to a Switch, header
// included, with the bytes to send back: one or more messages, or none.
// An error ends the connection and fails the test.
type Handler func(msg []byte) (reply []byte, err error)

// Switch is a switch for ovs-ofctl to talk to over TCP. It records every
// message it is sent, on all connections (ovs-ofctl opens one per
// transaction), and has a Handler answer each.
type Switch struct {
	ln       net.Listener
	wg       sync.WaitGroup
	mu       sync.Mutex
	received [][]byte
	stop     func()
}

// NewSwitch listens on a port of the loopback for ovs-ofctl until the test
// ends or Received is called.
func NewSwitch(t testing.TB, handle Handler) *Switch {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Switch{ln: ln}
	// The test may end before ovs-ofctl is done; its errors must not be
	// reported after that.
	s.stop = sync.OnceFunc(func() {
		ln.Close()
		s.wg.Wait()
	})
	t.Cleanup(s.stop)
	s.wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return // closed by stop
			}
			s.wg.Go(func() {
				defer conn.Close()
				if err := s.serve(conn, handle); err != nil {
					t.Errorf("switch for ovs-ofctl: %v", err)
				}
			})
		}
	})
	return s
}

// Target is the switch's address as ovs-ofctl takes it.
func (s *Switch) Target() string {
	return "tcp:" + s.ln.Addr().String()
}

// Received stops the switch, once ovs-ofctl is done with it, and returns
// every message it was sent, in order.
func (s *Switch) Received() [][]byte {
	s.stop()
	return s.received
}

func (s *Switch) serve(conn net.Conn, handle Handler) error {
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	for {
		var h [headerLen]byte
		if _, err := io.ReadFull(conn, h[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil // ovs-ofctl is done with this connection
			}
			return fmt.Errorf("reading a message header: %w", err)
		}
		n := int(binary.BigEndian.Uint16(h[2:]))
		if n < headerLen {
			return fmt.Errorf("message type %d of length %d", h[1], n)
		}
		msg := append(h[:], make([]byte, n-headerLen)...)
		if _, err := io.ReadFull(conn, msg[headerLen:]); err != nil {
			return fmt.Errorf("reading message type %d: %w", h[1], err)
		}
		s.mu.Lock()
		s.received = append(s.received, msg)
		s.mu.Unlock()
		reply, err := handle(msg)
		if err != nil {
			return err
		}
		if _, err := conn.Write(reply); err != nil {
			return err
		}
	}
}

// AddFlow runs `ovs-ofctl -O OpenFlow13 add-flow` with flow against a
// Switch, and returns the FLOW_MOD ovs-ofctl sent for it.
func AddFlow(t testing.TB, flow string) []byte {
	t.Helper()
	msg, out, err := modify(t, "add-flow", typeFlowMod, flow)
	if err != nil {
		t.Fatalf("ovs-ofctl add-flow %q: %v: %s", flow, err, out)
	}
	return msg
}

// AddMeter runs `ovs-ofctl -O OpenFlow13 add-meter` with meter against a
// Switch, and returns the METER_MOD ovs-ofctl sent for it, or, if it
// refused the meter, what it said.
func AddMeter(t testing.TB, meter string) (msg, refusal []byte) {
	t.Helper()
	msg, out, err := modify(t, "add-meter", typeMeterMod, meter)
	if err != nil {
		return nil, out
	}
	return msg, nil
}

// modify runs an ovs-ofctl command that sends one message of type typ
// with arg to a Switch, and returns that message, or ovs-ofctl's output
// and error when it sent nothing.
func modify(t testing.TB, cmd string, typ byte, arg string) (msg, out []byte, err error) {
	t.Helper()
	s := NewSwitch(t, func(msg []byte) ([]byte, error) {
		switch msg[1] {
		case typeHello:
			return []byte{version, typeHello, 0, headerLen, 0, 0, 0, 0}, nil
		case typ:
			return nil, nil
		case typeBarrierRequest:
			// The reply, of the request's xid, ends ovs-ofctl's run.
			return append([]byte{version, typeBarrierReply, 0, headerLen}, msg[4:8]...), nil
		}
		return nil, fmt.Errorf("%s sent message type %d", cmd, msg[1])
	})
	// --no-names, or ovs-ofctl first asks for the TABLE_FEATURES and
	// PORT_DESC, to learn the tables' and ports' names.
	out, err = Run(t, "--no-names", "-O", "OpenFlow13", cmd, s.Target(), arg)
	got := s.Received()
	if err != nil {
		if len(got) > 0 {
			t.Fatalf("ovs-ofctl %s %q failed (%v: %s) after it sent %d messages", cmd, arg, err, out, len(got))
		}
		return nil, out, err
	}
	var types []byte
	for _, m := range got {
		types = append(types, m[1])
	}
	if want := []byte{typeHello, typ, typeBarrierRequest}; !slices.Equal(types, want) {
		t.Fatalf("ovs-ofctl %s %q sent messages of types %v, not %v", cmd, arg, types, want)
	}
	return got[1], out, nil
}
