package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xswitch/xswitch/internal/testenv"
)

// TestRestartKeepsConfig stops the daemon, gracefully or not, and checks
// that a new daemon on the same database restores the same bridges and
// ports, and forwards again; also when a veth pair it created vanished
// while it was down, which it must recreate.
func TestRestartKeepsConfig(t *testing.T) {
	for _, stop := range []struct {
		name        string
		sig         syscall.Signal
		deleteVeths bool
	}{
		{"SIGTERM", syscall.SIGTERM, false},
		{"SIGKILL", syscall.SIGKILL, false},
		{"SIGTERM_veth_deleted", syscall.SIGTERM, true},
	} {
		sig := stop.sig
		t.Run(stop.name, func(t *testing.T) {
			testenv.RequireRoot(t)
			r := newRig(t, 2)
			d, br, a, b := r.d, r.br, r.hosts[0], r.hosts[1]
			requirePing(t, a.ns, b.addr, 56)

			before := map[string]string{
				"list-br":    d.x(t, "list-br"),
				"list-ports": d.x(t, "list-ports", br),
				"show":       d.x(t, "show"),
			}

			code := d.stop(t, sig)
			if sig == syscall.SIGTERM {
				if code != 0 {
					t.Errorf("daemon exited with %d after SIGTERM, want 0", code)
				}
				for _, p := range []nsPort{a, b} {
					if !linkExists(t, p.name) {
						t.Errorf("port %s's veth is gone after SIGTERM; the daemon must keep it for its restart", p.name)
					} else if xdpAttached(t, p.name) {
						t.Errorf("XDP program still attached to %s after SIGTERM", p.name)
					}
				}
			}

			if stop.deleteVeths {
				mustRun(t, "ip", "link", "del", "dev", a.name)
				if nsLinkExists(t, a.ns, "eth0") {
					t.Fatalf("eth0 in %s survived deleting its veth peer %s", a.ns, a.name)
				}
			}

			d.start(t)
			after := map[string]string{
				"list-br":    d.x(t, "list-br"),
				"list-ports": d.x(t, "list-ports", br),
				"show":       d.x(t, "show"),
			}
			for _, verb := range []string{"list-br", "list-ports", "show"} {
				if after[verb] != before[verb] {
					t.Errorf("xswitch %s before the restart:\n%s\nafter:\n%s", verb, before[verb], after[verb])
				}
			}
			waitPing(t, a.ns, b.addr, 5*time.Second)
			requirePing(t, a.ns, b.addr, 56)
			requirePing(t, b.ns, a.addr, 1600)
		})
	}
}

// TestSecondDaemonOnOneDatabaseIsRefused keeps a fix: a second daemon on
// another socket but the same --db started, overwrote the first's saves
// and deleted its live veths.
func TestSecondDaemonOnOneDatabaseIsRefused(t *testing.T) {
	testenv.RequireRoot(t)
	r := newRig(t, 2)
	d, a, b := r.d, r.hosts[0], r.hosts[1]
	before := d.x(t, "show")
	other := filepath.Join(t.TempDir(), "other.sock")
	second := run(t, xswitchBin, "daemon", "--sock", other, "--db", d.db)
	want := fmt.Sprintf("configuration %s is in use by another xswitch daemon (pid %d)", d.db, d.pid())
	if second.code == 0 || !strings.Contains(second.stderr, want) {
		t.Fatalf("a second daemon on %s: exit %d, %q; want a refusal saying %q", d.db, second.code, second.stderr, want)
	}
	if _, err := os.Stat(other); err == nil {
		t.Errorf("the refused daemon left its socket %s", other)
	}
	requirePing(t, a.ns, b.addr, 56)
	d.x(t, "add-flow", r.br, "priority=5,arp,actions=NORMAL")
	if after := d.x(t, "show"); after != before {
		t.Errorf("show changed after a refused second daemon:\n%s\nwas\n%s", after, before)
	}
	d.stop(t, syscall.SIGKILL)
	d.start(t) // the lock goes with the process, however it ends
	if got := d.x(t, "dump-flows", r.br); !strings.Contains(got, "priority=5,arp actions=NORMAL") {
		t.Errorf("after the restart the first daemon's change is gone:\n%s", got)
	}
}

// TestHardTimeoutRunsOnAcrossRestart keeps a fix: a restart reset every
// rule's installation time, so that a daemon restarting now and then never
// expired a rule's hard_timeout.
func TestHardTimeoutRunsOnAcrossRestart(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	br := newTestNet().name("br")
	d.x(t, "add-br", br)
	installed := time.Now()
	d.x(t, "add-flow", br, "hard_timeout=6,priority=5,arp,actions=drop")
	time.Sleep(3 * time.Second)
	d.stop(t, syscall.SIGKILL)
	d.start(t)
	// Expiry is checked once a second: by 7.5 s after installation the
	// rule must be gone, where counting from the restart would keep it
	// until 9 s or later.
	time.Sleep(time.Until(installed.Add(7500 * time.Millisecond)))
	if total, marked := flowCount(t, d, br, "hard_timeout=6"); marked != 0 {
		t.Errorf("7.5 s after installing a rule with hard_timeout=6, and a restart at 3 s, it is still there (%d rules)", total)
	}
}
