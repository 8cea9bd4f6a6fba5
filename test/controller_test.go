package test

import (
	"reflect"
	"regexp"
	"syscall"
	"testing"

	"github.com/xswitch/xswitch/internal/testenv"
)

// TestControllersSurviveARestart: a bridge's controllers, fail mode and
// datapath id, set with the CLI, are what the daemon shows after it was
// killed and started again, and after a clean stop.
func TestControllersSurviveARestart(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	d.x(t, "add-br", "brc")
	d.x(t, "set-controller", "brc", "tcp:127.0.0.1", "ptcp:6653:[::1]")
	d.x(t, "set-fail-mode", "brc", "secure")
	var before jsonShow
	d.xJSON(t, &before, "show")
	b := before.Bridges[0]
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(b.DatapathID) || b.FailMode != "secure" || len(b.Controllers) != 2 ||
		b.Controllers[0].Target != "tcp:127.0.0.1:6653" || b.Controllers[1].Target != "ptcp:6653:[::1]" {
		t.Fatalf("show after set-controller and set-fail-mode: %+v", b)
	}
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		d.stop(t, sig)
		d.start(t)
		var after jsonShow
		d.xJSON(t, &after, "show")
		if !reflect.DeepEqual(after, before) {
			t.Errorf("show after %v and a restart:\n%+v\nbefore:\n%+v", sig, after, before)
		}
		if got, want := d.x(t, "get-controller", "brc"), "tcp:127.0.0.1:6653\nptcp:6653:[::1]\n"; got != want {
			t.Errorf("get-controller after %v and a restart: %q, want %q", sig, got, want)
		}
		if got := d.x(t, "get-fail-mode", "brc"); got != "secure\n" {
			t.Errorf("get-fail-mode after %v and a restart: %q, want secure", sig, got)
		}
	}
}
