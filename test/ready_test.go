package test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xswitch/xswitch/internal/testenv"
)

// slowToRestore gives d's bridge br a table of n rules and kills d with
// SIGKILL, so that the next daemon on d's database takes a while to restore
// and finds d's socket file left behind.
func slowToRestore(t *testing.T, d *daemon, br string, n int) {
	t.Helper()
	d.xInput(t, manyRules(n, 100), "add-flows", br, "-")
	d.stop(t, syscall.SIGKILL)
	if _, err := os.Stat(d.sock); err != nil {
		t.Fatalf("kill -9 left no socket file: %v", err)
	}
}

// TestWaitReadyWaitsForARestoringDaemon keeps a fix: after a kill -9 the
// old socket file stays, so a script that waited for it and then ran a
// verb got exit 2 from a daemon still restoring. wait-ready returns once
// the daemon serves, and not before.
func TestWaitReadyWaitsForARestoringDaemon(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	br := newTestNet().name("br")
	d.x(t, "add-br", br)
	slowToRestore(t, d, br, 100000)

	restarted := startBackground(t, xswitchBin, "daemon", "--sock", d.sock, "--db", d.db)
	begin := time.Now()
	r := xswitch(t, d.sock, "wait-ready")
	waited := time.Since(begin)
	list := xswitch(t, d.sock, "list-br")
	t.Logf("wait-ready: exit %d after %v; list-br then: exit %d", r.code, waited.Round(time.Millisecond), list.code)
	if r.code != 0 || list.code != 0 || strings.TrimSpace(list.stdout) != br {
		t.Errorf("wait-ready exit %d (%s), then list-br exit %d %q (%s); want both to succeed", r.code, r.stderr, list.code, list.stdout, list.stderr)
	}
	restarted.cmd.Process.Signal(syscall.SIGTERM)
	restarted.wait(t, daemonStop)

	r = xswitch(t, d.sock, "wait-ready", "--timeout", "500ms")
	if r.code != 2 || !strings.Contains(r.stderr, "none ready within 500ms") {
		t.Errorf("wait-ready with no daemon: exit %d, %q; want exit 2 after the timeout", r.code, r.stderr)
	}
}

// TestDetachReturnsOnceServing: daemon --detach returns when the daemon
// serves, as ovs-vswitchd --detach does, writes --pidfile, logs to
// --log-file, and reports a start-up failure with its reason.
func TestDetachReturnsOnceServing(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	br := newTestNet().name("br")
	d.x(t, "add-br", br)
	slowToRestore(t, d, br, 100000)

	dir := t.TempDir()
	pidFile, logFile := filepath.Join(dir, "xswitch.pid"), filepath.Join(dir, "xswitch.log")
	begin := time.Now()
	r := run(t, xswitchBin, "daemon", "--detach", "--sock", d.sock, "--db", d.db, "--pidfile", pidFile, "--log-file", logFile)
	took := time.Since(begin)
	pid := detachedPID(t, pidFile)
	list := xswitch(t, d.sock, "list-br")
	t.Logf("daemon --detach: exit %d after %v, pid %d; list-br then: exit %d", r.code, took.Round(time.Millisecond), pid, list.code)
	if r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Fatalf("daemon --detach: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if list.code != 0 || strings.TrimSpace(list.stdout) != br {
		t.Errorf("list-br right after daemon --detach returned: exit %d, %q, %s", list.code, list.stdout, list.stderr)
	}
	if log, _ := os.ReadFile(logFile); !strings.Contains(string(log), `msg=listening`) {
		t.Errorf("--log-file %s does not have the daemon's log:\n%s", logFile, log)
	}

	// A second one on the same database fails, and says why.
	second := run(t, xswitchBin, "daemon", "--detach", "--sock", filepath.Join(dir, "other.sock"), "--db", d.db)
	if want := fmt.Sprintf("in use by another xswitch daemon (pid %d)", pid); second.code != 1 || !strings.Contains(second.stderr, want) {
		t.Errorf("a second daemon --detach: exit %d, %q; want exit 1 and %q", second.code, second.stderr, want)
	}

	stopByPID(t, pid)
	if _, err := os.Stat(pidFile); err == nil {
		t.Errorf("the stopped daemon left its pid file")
	}
}

// detachedPID reads the pid of a detached daemon, and stops it when the
// test ends.
func detachedPID(t *testing.T, pidFile string) int {
	t.Helper()
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("--pidfile: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("--pidfile holds %q", data)
	}
	t.Cleanup(func() { stopByPID(t, pid) })
	return pid
}

// stopByPID sends SIGTERM to a daemon that is not the test's child and
// waits for it to exit.
func stopByPID(t *testing.T, pid int) {
	t.Helper()
	if syscall.Kill(pid, syscall.SIGTERM) != nil {
		return // gone already
	}
	deadline := time.Now().Add(daemonStop)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("daemon %d still running %v after SIGTERM; killed it", pid, daemonStop)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDaemonTellsSystemdWhenReady: with $NOTIFY_SOCKET set, as systemd sets
// it for a Type=notify unit, the daemon sends READY=1 once it serves, and
// STOPPING=1 when it stops.
func TestDaemonTellsSystemdWhenReady(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	br := newTestNet().name("br")
	d.x(t, "add-br", br)
	slowToRestore(t, d, br, 50000)

	notifyPath := filepath.Join(t.TempDir(), "notify")
	notify, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: notifyPath, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer notify.Close()
	cmd := exec.Command(xswitchBin, "daemon", "--sock", d.sock, "--db", d.db)
	cmd.Env = append(clientEnv(), "NOTIFY_SOCKET="+notifyPath)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
	})

	receive := func() string {
		notify.SetReadDeadline(time.Now().Add(commandTimeout))
		buf := make([]byte, 512)
		n, err := notify.Read(buf)
		if err != nil {
			t.Fatalf("no notification from the daemon: %v", err)
		}
		return string(buf[:n])
	}
	if got := receive(); got != "READY=1" {
		t.Fatalf("first notification %q, want READY=1", got)
	}
	if list := xswitch(t, d.sock, "list-br"); list.code != 0 {
		t.Errorf("list-br right after READY=1: exit %d, %s", list.code, list.stderr)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if got := receive(); got != "STOPPING=1" {
		t.Errorf("notification at SIGTERM %q, want STOPPING=1", got)
	}
	<-exited
}
