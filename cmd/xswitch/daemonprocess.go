package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// daemonProcessTimeout bounds how long a daemon process takes to serve,
// and to stop once asked to.
const daemonProcessTimeout = 15 * time.Second

// daemonProcess is an `xswitch daemon` process of its own, as a host runs
// it (the bench's cases, demo --hosts 2), and the CLI that talks to it.
type daemonProcess struct {
	exe, netns, sock, logPath string
	cmd                       *exec.Cmd
	exited                    chan struct{}
	waitErr                   error // once exited is closed
}

// startDaemonProcess runs `[ip netns exec NS] [taskset -c CPU] xswitch
// daemon FLAGS...` (ns "": in this namespace; cpu < 0: no taskset) with
// its socket, configuration and log in dir, and flags after the default
// ones. ip and taskset exec what follows, so the process is the daemon's.
func startDaemonProcess(exe, ns, dir string, cpu int, flags ...string) (*daemonProcess, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	d := &daemonProcess{exe: exe, netns: ns, sock: filepath.Join(dir, "xswitch.sock"), logPath: filepath.Join(dir, "daemon.log"),
		exited: make(chan struct{})}
	logFile, err := os.Create(d.logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the daemon has its own copy
	argv := append([]string{exe, "daemon", "--sock", d.sock, "--db", filepath.Join(dir, "conf.json")}, flags...)
	if cpu >= 0 {
		argv = append([]string{"taskset", "-c", strconv.Itoa(cpu)}, argv...)
	}
	if ns != "" {
		argv = append([]string{"ip", "netns", "exec", ns}, argv...)
	}
	d.cmd = exec.Command(argv[0], argv[1:]...)
	d.cmd.Stdout, d.cmd.Stderr = logFile, logFile
	// The daemon must not outlive its starter holding the host's ports.
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", d, err)
	}
	go func() {
		d.waitErr = d.cmd.Wait()
		close(d.exited)
	}()
	return d, nil
}

// run runs `xswitch --sock SOCK args...` and says, if it fails, what it
// and the daemon said.
func (d *daemonProcess) run(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, d.exe, append([]string{"--sock", d.sock}, args...)...).CombinedOutput()
	if err == nil {
		return nil
	}
	state := "running"
	select {
	case <-d.exited:
		state = fmt.Sprintf("exited (%v)", d.waitErr)
	default:
	}
	log, _ := os.ReadFile(d.logPath)
	return fmt.Errorf("xswitch %s, against the %s: %w: %s\nthe daemon, %s, logged:\n%s",
		strings.Join(args, " "), d, err, bytes.TrimSpace(out), state, bytes.TrimSpace(log))
}

// stop ends the daemon with SIGTERM, on which it closes its ports, or
// SIGKILL if it has not exited within daemonProcessTimeout.
func (d *daemonProcess) stop() error {
	select {
	case <-d.exited:
		return fmt.Errorf("%s (pid %d) had exited: %v", d, d.cmd.Process.Pid, d.waitErr)
	default:
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
		return nil
	case <-time.After(daemonProcessTimeout):
	}
	d.cmd.Process.Kill()
	<-d.exited
	return fmt.Errorf("%s (pid %d) ignored SIGTERM for %v and was killed", d, d.cmd.Process.Pid, daemonProcessTimeout)
}

// String names the daemon in messages.
func (d *daemonProcess) String() string {
	if d.netns == "" {
		return "xswitch daemon"
	}
	return "xswitch daemon in namespace " + d.netns
}
