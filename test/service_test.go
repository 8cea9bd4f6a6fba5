package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xswitch/xswitch/control"
	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/internal/testenv"
)

const unitPath = "../contrib/systemd/xswitch.service"

// TestSystemdUnit checks that the unit runs the daemon on its default
// paths and restarts it, and has systemd-analyze verify it when the host
// has systemd.
func TestSystemdUnit(t *testing.T) {
	unit, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	// The daemon's defaults must lie in the directories systemd creates.
	for _, want := range []string{
		"ExecStart=/usr/local/bin/xswitch daemon\n",
		"Restart=on-failure\n",
		"RuntimeDirectory=" + filepath.Base(filepath.Dir(api.DefaultSocket)) + "\n",
		"StateDirectory=" + filepath.Base(filepath.Dir(control.DefaultDB)) + "\n",
	} {
		if !strings.Contains(string(unit), want) {
			t.Errorf("%s lacks the line %q", unitPath, strings.TrimSpace(want))
		}
	}
	if filepath.Dir(filepath.Dir(api.DefaultSocket)) != "/run" || filepath.Dir(filepath.Dir(control.DefaultDB)) != "/var/lib" {
		t.Errorf("default socket %s or database %s is not under /run or /var/lib, where RuntimeDirectory and StateDirectory are",
			api.DefaultSocket, control.DefaultDB)
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("skipping systemd-analyze verify: systemd-analyze is not installed (Debian package systemd)")
	}
	// verify insists that ExecStart's binary exists: point it at the one
	// under test, in a copy of the unit.
	copied := filepath.Join(t.TempDir(), "xswitch.service")
	text := strings.Replace(string(unit), "ExecStart=/usr/local/bin/xswitch ", "ExecStart="+xswitchBin+" ", 1)
	if err := os.WriteFile(copied, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, analyze, "verify", copied)
	// verify exits 0 on unknown keys and unparsable values, only warning
	// about them: any word about the unit is a failure.
	if r.code != 0 || strings.Contains(r.stdout+r.stderr, "xswitch.service") {
		t.Errorf("systemd-analyze verify %s: exit %d\n%s%s", unitPath, r.code, r.stdout, r.stderr)
	}
}

// TestSIGHUPKeepsDaemonServing checks that SIGHUP, fatal to a Go program
// by default, is logged and ignored.
func TestSIGHUPKeepsDaemonServing(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	n := newTestNet()
	br := n.name("br")
	d.x(t, "add-br", br)

	// Twice, the second after the first was handled: the kernel merges a
	// signal sent while the same one is pending.
	for i := 1; i <= 2; i++ {
		if err := syscall.Kill(d.pid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for strings.Count(d.log(), "SIGHUP ignored") < i {
			if !d.running() {
				t.Fatalf("daemon exited on SIGHUP %d:\n%s", i, d.log())
			}
			if time.Now().After(deadline) {
				t.Fatalf("daemon did not log SIGHUP %d as ignored within 5s:\n%s", i, d.log())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if got := strings.TrimSpace(d.x(t, "list-br")); got != br {
		t.Errorf("list-br after SIGHUP: %q, want %s", got, br)
	}
	if code := d.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("daemon exited with %d on SIGTERM after SIGHUP, want 0", code)
	}
}
