package bench

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/xswitch/xswitch/internal/netns"
)

// hubApp is the os-ken application of the controller cases.
//
//go:embed hub.py
var hubApp []byte

// ControllerProgram is os-ken's launcher, which the controller cases need.
const ControllerProgram = "osken-manager"

// ControllerPort is the controller's TCP port on 127.0.0.1 in a namespace
// of the bench's own (an OVS case's); in the bench's own namespace it takes
// a free one.
const ControllerPort = 6653

// Controller is an OpenFlow 1.3 controller for the controller cases:
// os-ken running a hub that installs only a table-miss flow to itself and
// sends every frame it gets back out with a packet-out to FLOOD, so that
// every frame crosses it and the ping workload measures frame in ->
// packet-in -> controller -> packet-out -> frame out (twice per echo).
// It runs on the generator's CPU, as the clients do.
type Controller struct {
	Port int
	proc *daemon
	dir  string
}

// StartController starts the hub listening on 127.0.0.1 in namespace ns
// ("": the bench's own) and waits until it accepts connections.
func StartController(ctx context.Context, ns string) (_ *Controller, err error) {
	if _, err := exec.LookPath(ControllerProgram); err != nil {
		return nil, fmt.Errorf("os-ken is not installed (no %s): %w", ControllerProgram, err)
	}
	c := &Controller{Port: ControllerPort}
	if ns == "" {
		if c.Port, err = freePort(); err != nil {
			return nil, err
		}
	}
	if c.dir, err = os.MkdirTemp("", "xswitch-bench-controller-"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	app := filepath.Join(c.dir, "hub.py")
	if err := os.WriteFile(app, hubApp, 0o600); err != nil {
		return nil, err
	}
	args := []string{"taskset", "-c", strconv.Itoa(generatorCPU), ControllerProgram,
		"--ofp-listen-host", "127.0.0.1", "--ofp-tcp-listen-port", strconv.Itoa(c.Port), app}
	if ns != "" {
		args = append([]string{"ip", "netns", "exec", ns}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = nil, nil
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", ControllerProgram, err)
	}
	c.proc = &daemon{name: ControllerProgram, cmd: cmd, exited: make(chan struct{})}
	go func() {
		c.proc.err = cmd.Wait()
		close(c.proc.exited)
	}()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Port))
	deadline := time.Now().Add(ovsReadyTimeout)
	for {
		dial := func() error {
			conn, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				conn.Close()
			}
			return err
		}
		if ns != "" {
			err = netns.Do(ns, dial)
		} else {
			err = dial()
		}
		switch {
		case err == nil:
			return c, nil
		case c.proc.hasExited():
			return nil, fmt.Errorf("%s exited before it listened: %v", ControllerProgram, c.proc.err)
		case time.Now().After(deadline):
			return nil, fmt.Errorf("%s does not listen on %s after %v: %w", ControllerProgram, addr, ovsReadyTimeout, err)
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// Stop ends the controller and removes its files.
func (c *Controller) Stop() {
	if c.proc != nil && !c.proc.hasExited() {
		// The launcher's children (ip netns exec, taskset, python) are
		// in its process group.
		syscall.Kill(-c.proc.cmd.Process.Pid, syscall.SIGKILL)
		<-c.proc.exited
	}
	os.RemoveAll(c.dir)
}

// freePort is a TCP port on 127.0.0.1 that nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitFor polls ready until it says yes, the context ends or
// ovsReadyTimeout passes.
func waitFor(ctx context.Context, what string, ready func() (bool, error)) error {
	deadline := time.Now().Add(ovsReadyTimeout)
	for {
		ok, err := ready()
		switch {
		case ok:
			return nil
		case time.Now().After(deadline):
			if err == nil {
				err = errors.New("timed out")
			}
			return fmt.Errorf("%s within %v: %w", what, ovsReadyTimeout, err)
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}
