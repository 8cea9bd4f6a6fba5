package test

import (
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
