package test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xswitch/xswitch/internal/race"
)

const (
	// commandTimeout bounds every client verb and helper command: a hung
	// daemon must fail a test, not stall the whole run until go test's
	// global timeout.
	commandTimeout = 30 * time.Second
	daemonReady    = 10 * time.Second
	daemonStop     = 10 * time.Second
)

// result is what a finished command left behind.
type result struct {
	stdout, stderr string
	code           int
}

// run runs a command to completion within commandTimeout. A command that
// cannot start or times out fails the test; a non-zero exit does not.
func run(t testing.TB, name string, args ...string) result {
	t.Helper()
	return runInput(t, "", name, args...)
}

// runInput is run with input on the command's standard input.
func runInput(t testing.TB, input, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = clientEnv()
	cmd.Stdin = strings.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %s: timed out after %v\nstdout:\n%s\nstderr:\n%s",
			name, strings.Join(args, " "), commandTimeout, &stdout, &stderr)
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return result{stdout: stdout.String(), stderr: stderr.String()}
	case errors.As(err, &exit):
		return result{stdout: stdout.String(), stderr: stderr.String(), code: exit.ExitCode()}
	default:
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
		return result{}
	}
}

// mustRun runs a helper command (ip, ping, ...) that must succeed and
// returns its stdout.
func mustRun(t testing.TB, name string, args ...string) string {
	t.Helper()
	r := run(t, name, args...)
	if r.code != 0 {
		t.Fatalf("%s %s: exit %d\n%s%s", name, strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// clientEnv keeps a socket path from the caller's environment from
// steering a client away from the daemon under test. When the binary has
// the race detector, it also skips the detector's default one-second sleep
// at exit, which every client verb would otherwise pay.
func clientEnv() []string {
	var env []string
	goraceSet := false
	for _, kv := range os.Environ() {
		goraceSet = goraceSet || strings.HasPrefix(kv, "GORACE=")
		if !strings.HasPrefix(kv, "XSWITCH_SOCK=") {
			env = append(env, kv)
		}
	}
	if race.Enabled && !goraceSet {
		env = append(env, "GORACE=atexit_sleep_ms=0")
	}
	return env
}

// xswitch runs one client verb against the daemon at sock.
func xswitch(t testing.TB, sock string, args ...string) result {
	t.Helper()
	return run(t, xswitchBin, append([]string{"--sock", sock}, args...)...)
}

// background is a command running while the test does something else.
type background struct {
	cmd    *exec.Cmd
	output bytes.Buffer
	done   chan struct{} // closed once the command has been waited for
}

// startBackground starts a command whose output the test reads when it
// ends; cleanup kills it if the test did not wait for it.
func startBackground(t testing.TB, name string, args ...string) *background {
	t.Helper()
	return startBackgroundInput(t, "", name, args...)
}

// startBackgroundInput is startBackground with input on the command's
// standard input.
func startBackgroundInput(t testing.TB, input, name string, args ...string) *background {
	t.Helper()
	b := &background{cmd: exec.Command(name, args...), done: make(chan struct{})}
	b.cmd.Stdin = strings.NewReader(input)
	b.cmd.Stdout, b.cmd.Stderr = &b.output, &b.output
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	go func() {
		b.cmd.Wait()
		close(b.done)
	}()
	t.Cleanup(func() {
		select {
		case <-b.done:
		default:
			b.cmd.Process.Kill()
			<-b.done
		}
	})
	return b
}

// wait waits at most timeout for the command to end and returns its
// output; a command still running then fails the test.
func (b *background) wait(t testing.TB, timeout time.Duration) string {
	t.Helper()
	select {
	case <-b.done:
		return b.output.String()
	case <-time.After(timeout):
		t.Fatalf("%s still running after %v", b.cmd, timeout)
		return ""
	}
}

// daemon is one `xswitch daemon` subprocess with its socket, database and
// log. It can be stopped and started again on the same database.
type daemon struct {
	sock, db, logPath string
	extraArgs         []string // daemon flags beyond --sock and --db, on every start
	// netns is the network namespace the daemon runs in, as a host of
	// its own would; "" for the test's.
	netns string
	cmd   *exec.Cmd
	// exited is closed once the process has been waited for; waitErr is
	// valid after that.
	exited  chan struct{}
	waitErr error
	starts  int
}

// startDaemon starts a daemon in a fresh directory and waits until it
// answers. Cleanup stops it and, when the test failed, logs the daemon's
// own output and what it held at the end.
func startDaemon(t *testing.T) *daemon {
	t.Helper()
	return startDaemonWith(t)
}

// fastPathOff says that the suite runs with the daemon's fast path off
// (XSWITCH_TEST_FAST_PATH=off): test/run runs it both ways.
func fastPathOff() bool { return os.Getenv("XSWITCH_TEST_FAST_PATH") == "off" }

// startDaemonWith is startDaemon with extra daemon flags.
func startDaemonWith(t *testing.T, extraArgs ...string) *daemon {
	t.Helper()
	return startDaemonIn(t, "", extraArgs...)
}

// startDaemonIn is startDaemonWith in network namespace ns, which must
// outlive the daemon: create it before.
func startDaemonIn(t *testing.T, ns string, extraArgs ...string) *daemon {
	t.Helper()
	dir := t.TempDir()
	if fastPathOff() {
		extraArgs = append([]string{"--fast-path", "off"}, extraArgs...)
	}
	d := &daemon{
		sock:      filepath.Join(dir, "x.sock"),
		db:        filepath.Join(dir, "conf.json"),
		logPath:   filepath.Join(dir, "daemon.log"),
		extraArgs: extraArgs,
		netns:     ns,
	}
	t.Cleanup(func() {
		if t.Failed() && d.running() {
			d.logState(t)
		}
		if d.running() {
			d.stop(t, syscall.SIGTERM)
		}
		d.checkLog(t)
	})
	d.start(t)
	return d
}

// start runs the daemon (again) and waits until `list-br` succeeds.
func (d *daemon) start(t testing.TB) {
	t.Helper()
	if d.running() {
		t.Fatal("daemon already running")
	}
	logFile, err := os.OpenFile(d.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	d.starts++
	fmt.Fprintf(logFile, "=== start %d\n", d.starts)
	args := append([]string{xswitchBin, "daemon", "--sock", d.sock, "--db", d.db}, d.extraArgs...)
	if d.netns != "" {
		// ip execs the daemon: the process, its pid and its parent death
		// signal stay the same.
		args = append([]string{"ip", "netns", "exec", d.netns}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = clientEnv()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// If the test binary dies (a -timeout panic), the daemon must not
	// outlive it holding ports and namespaces.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("start daemon: %v", err)
	}
	logFile.Close() // the child has its own copy
	d.cmd = cmd
	d.exited = make(chan struct{})
	go func() {
		d.waitErr = cmd.Wait()
		close(d.exited)
	}()

	deadline := time.Now().Add(daemonReady)
	for {
		select {
		case <-d.exited:
			t.Fatalf("daemon exited during startup: %v\n%s", d.waitErr, d.log())
		default:
		}
		r := xswitch(t, d.sock, "list-br")
		if r.code == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon not answering `list-br` after %v (last: exit %d, %s)\ndaemon log:\n%s",
				daemonReady, r.code, r.stderr, d.log())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (d *daemon) running() bool {
	if d.exited == nil {
		return false
	}
	select {
	case <-d.exited:
		return false
	default:
		return true
	}
}

// stop sends sig and waits for the daemon to exit, escalating to SIGKILL
// after daemonStop. It returns the exit code, or -1 if a signal killed it.
// A daemon that ignored sig fails the test.
func (d *daemon) stop(t testing.TB, sig syscall.Signal) int {
	t.Helper()
	if !d.running() {
		t.Fatal("daemon not running")
	}
	if err := d.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal daemon (pid %d): %v", d.cmd.Process.Pid, err)
	}
	select {
	case <-d.exited:
	case <-time.After(daemonStop):
		_ = d.cmd.Process.Kill()
		<-d.exited
		t.Errorf("daemon still running %v after %v; killed it\n%s", daemonStop, sig, d.log())
	}
	return d.cmd.ProcessState.ExitCode()
}

func (d *daemon) pid() int { return d.cmd.Process.Pid }

func (d *daemon) log() string {
	b, err := os.ReadFile(d.logPath)
	if err != nil {
		return fmt.Sprintf("(no daemon log: %v)", err)
	}
	return string(b)
}

// checkLog fails the test if the race-enabled daemon reported a data race
// or the daemon panicked, and shows the log when the test failed anyway.
func (d *daemon) checkLog(t *testing.T) {
	log := d.log()
	if strings.Contains(log, "WARNING: DATA RACE") || strings.Contains(log, "panic:") {
		t.Errorf("daemon reported a data race or panic")
	}
	if t.Failed() {
		t.Logf("daemon log (%s):\n%s", d.logPath, log)
	}
}

// logState records what the daemon held when a test failed.
func (d *daemon) logState(t *testing.T) {
	show := xswitch(t, d.sock, "show")
	t.Logf("xswitch show at failure:\n%s%s", show.stdout, show.stderr)
	for _, br := range strings.Fields(xswitch(t, d.sock, "list-br").stdout) {
		for _, verb := range []string{"dump-ports", "fdb-show"} {
			r := xswitch(t, d.sock, verb, br)
			t.Logf("xswitch %s %s at failure:\n%s%s", verb, br, r.stdout, r.stderr)
		}
	}
}

// xInput runs a client verb with input on its standard input; it must
// succeed.
func (d *daemon) xInput(t testing.TB, input string, args ...string) string {
	t.Helper()
	r := runInput(t, input, xswitchBin, append([]string{"--sock", d.sock}, args...)...)
	if r.code != 0 {
		t.Fatalf("xswitch %s: exit %d: %s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

// xErrInput runs a client verb with input on its standard input that must
// fail, and returns its stderr and exit code.
func (d *daemon) xErrInput(t testing.TB, input string, args ...string) (string, int) {
	t.Helper()
	r := runInput(t, input, xswitchBin, append([]string{"--sock", d.sock}, args...)...)
	if r.code == 0 {
		t.Fatalf("xswitch %s: succeeded, want an error (stdout: %q)", strings.Join(args, " "), r.stdout)
	}
	return r.stderr, r.code
}

// x runs a client verb that must succeed and returns its stdout.
func (d *daemon) x(t testing.TB, args ...string) string {
	t.Helper()
	r := xswitch(t, d.sock, args...)
	if r.code != 0 {
		t.Fatalf("xswitch %s: exit %d: %s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

// xErr runs a client verb that must fail and returns its stderr and exit
// code.
func (d *daemon) xErr(t testing.TB, args ...string) (string, int) {
	t.Helper()
	r := xswitch(t, d.sock, args...)
	if r.code == 0 {
		t.Fatalf("xswitch %s: succeeded, want an error (stdout: %q)", strings.Join(args, " "), r.stdout)
	}
	return r.stderr, r.code
}
