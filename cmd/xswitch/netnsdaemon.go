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

// netnsDaemonTimeout bounds how long a daemon in a host's namespace takes
// to serve, and to stop once asked to.
const netnsDaemonTimeout = 15 * time.Second

// netnsDaemon is an `xswitch daemon` process in a host's namespace, as a
// host of its own runs it (the bench's tunnel cases, demo --hosts 2),
// and the CLI that talks to it.
type netnsDaemon struct {
	exe, netns, sock, logPath string
	cmd                       *exec.Cmd
	exited                    chan struct{}
	waitErr                   error // once exited is closed
}

// startNetnsDaemon runs `ip netns exec NETNS [taskset -c CPU] xswitch
// daemon` (cpu < 0: no taskset) with its socket, configuration and log in
// dir. ip and taskset exec what follows, so the process is the daemon's.
func startNetnsDaemon(exe, ns, dir string, cpu int) (*netnsDaemon, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	d := &netnsDaemon{exe: exe, netns: ns, sock: filepath.Join(dir, "xswitch.sock"), logPath: filepath.Join(dir, "daemon.log"),
		exited: make(chan struct{})}
	logFile, err := os.Create(d.logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the daemon has its own copy
	args := []string{"netns", "exec", ns}
	if cpu >= 0 {
		args = append(args, "taskset", "-c", strconv.Itoa(cpu))
	}
	d.cmd = exec.Command("ip", append(args, exe, "daemon", "--sock", d.sock, "--db", filepath.Join(dir, "conf.json"))...)
	d.cmd.Stdout, d.cmd.Stderr = logFile, logFile
	// The daemon must not outlive its starter holding the host's ports.
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start xswitch daemon in namespace %s: %w", ns, err)
	}
	go func() {
		d.waitErr = d.cmd.Wait()
		close(d.exited)
	}()
	return d, nil
}

// run runs `xswitch --sock SOCK args...` and says, if it fails, what it
// and the daemon said.
func (d *netnsDaemon) run(ctx context.Context, args ...string) error {
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
	return fmt.Errorf("xswitch %s, against the daemon in namespace %s: %w: %s\nthe daemon, %s, logged:\n%s",
		strings.Join(args, " "), d.netns, err, bytes.TrimSpace(out), state, bytes.TrimSpace(log))
}

// stop ends the daemon with SIGTERM, on which it closes its ports, or
// SIGKILL if it has not exited within netnsDaemonTimeout.
func (d *netnsDaemon) stop() error {
	select {
	case <-d.exited:
		return fmt.Errorf("xswitch daemon in namespace %s (pid %d) had exited: %v", d.netns, d.cmd.Process.Pid, d.waitErr)
	default:
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
		return nil
	case <-time.After(netnsDaemonTimeout):
	}
	d.cmd.Process.Kill()
	<-d.exited
	return fmt.Errorf("xswitch daemon in namespace %s (pid %d) ignored SIGTERM for %v and was killed", d.netns, d.cmd.Process.Pid, netnsDaemonTimeout)
}
