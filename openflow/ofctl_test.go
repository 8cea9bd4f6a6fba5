package openflow

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Open vSwitch's ovs-ofctl as an oracle: its hidden parse-actions and
// parse-instructions commands decode hex and print what they read, and
// add-flow against a listener of the test's own shows the bytes it sends.

// ofctlPath is ovs-ofctl's path; the test is skipped without it.
func ofctlPath(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("ovs-ofctl")
	if err != nil {
		t.Skip("ovs-ofctl is not installed (Debian's openvswitch-common): no oracle to check the encoding against")
	}
	return path
}

// ofctlParse gives each of encodings, as hex, to `ovs-ofctl parse-actions
// OpenFlow13` (or parse-instructions, as cmd says), and returns what it
// printed for each: "actions=TEXT" or "bad ... actions: ERROR". If
// ovs-ofctl re-encodes what it read to other bytes, the test fails:
// canonical encodings come back unchanged.
func ofctlParse(t *testing.T, cmd string, encodings [][]byte) []string {
	t.Helper()
	var in strings.Builder
	for _, e := range encodings {
		fmt.Fprintf(&in, "%x\n", e)
	}
	c := exec.Command(ofctlPath(t), cmd, "OpenFlow13")
	c.Stdin = strings.NewReader(in.String())
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		t.Fatalf("ovs-ofctl %s: %v: %s", cmd, err, stderr.String())
	}
	// One block per input: the result, then a line per byte that differs
	// when ovs-ofctl encodes it back, then an empty line.
	blocks := strings.Split(strings.TrimSuffix(string(out), "\n\n"), "\n\n")
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

// ofctlAddFlow runs `ovs-ofctl -O OpenFlow13 add-flow` with flow against
// a switch the test plays, and returns the FLOW_MOD ovs-ofctl sent.
func ofctlAddFlow(t *testing.T, flow string) []byte {
	t.Helper()
	path := ofctlPath(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	deadline, _ := ctx.Deadline()
	if err := ln.(*net.TCPListener).SetDeadline(deadline); err != nil {
		t.Fatal(err)
	}

	// --no-names, or ovs-ofctl first asks for the TABLE_FEATURES, to learn
	// the tables' names.
	cmd := exec.CommandContext(ctx, path, "--no-names", "-O", "OpenFlow13", "add-flow", "tcp:"+ln.Addr().String(), flow)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	var flowMod []byte
	conn, err := ln.Accept()
	if err == nil {
		flowMod, err = playSwitch(conn, deadline)
		conn.Close()
	}
	if err != nil {
		cancel()
	}
	if werr := <-exited; err != nil || werr != nil {
		t.Fatalf("ovs-ofctl add-flow %q: %v; ovs-ofctl: %v: %s", flow, err, werr, stderr.String())
	}
	return flowMod
}

// playSwitch is the switch's side of what ovs-ofctl add-flow does: HELLO
// both ways, the FLOW_MOD, then a BARRIER_REQUEST, which it answers and
// returns the FLOW_MOD.
func playSwitch(conn net.Conn, deadline time.Time) ([]byte, error) {
	const (
		typeFlowMod        = 14
		typeBarrierRequest = 20
		typeBarrierReply   = 21
	)
	if err := conn.SetDeadline(deadline); err != nil {
		return nil, err
	}
	// HELLO, version 4, with a version bitmap element of version 4 alone.
	hello := []byte{4, 0, 0, 16, 0, 0, 0, 0, 0, 1, 0, 8, 0, 0, 0, 1 << 4}
	if _, err := conn.Write(hello); err != nil {
		return nil, err
	}
	var flowMod []byte
	for {
		var h [8]byte
		if _, err := io.ReadFull(conn, h[:]); err != nil {
			return nil, fmt.Errorf("reading a message header: %w", err)
		}
		n := int(binary.BigEndian.Uint16(h[2:]))
		if n < len(h) {
			return nil, fmt.Errorf("message type %d of length %d", h[1], n)
		}
		msg := append(h[:], make([]byte, n-len(h))...)
		if _, err := io.ReadFull(conn, msg[len(h):]); err != nil {
			return nil, fmt.Errorf("reading message type %d: %w", h[1], err)
		}
		switch msg[1] {
		case typeFlowMod:
			flowMod = msg
		case typeBarrierRequest:
			if flowMod == nil {
				return nil, errors.New("BARRIER_REQUEST before a FLOW_MOD")
			}
			_, err := conn.Write([]byte{4, typeBarrierReply, 0, 8, msg[4], msg[5], msg[6], msg[7]})
			return flowMod, err
		}
	}
}

// flowModInstructions slices the instructions out of a FLOW_MOD: after
// the header and fixed fields (48 bytes) comes the match, whose length is
// at offset 50 and which is padded to 8 bytes.
func flowModInstructions(fm []byte) ([]byte, error) {
	if len(fm) < 52 {
		return nil, fmt.Errorf("FLOW_MOD of %d bytes", len(fm))
	}
	off := 48 + pad8(int(binary.BigEndian.Uint16(fm[50:])))
	if off > len(fm) {
		return nil, fmt.Errorf("FLOW_MOD of %d bytes with a match to %d", len(fm), off)
	}
	return fm[off:], nil
}
