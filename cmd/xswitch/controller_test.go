package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/xswitch/xswitch/control"
	"github.com/xswitch/xswitch/control/api"
)

// serve runs a daemon in-process on a socket of its own, for the verbs
// to talk to, and returns it with a function that runs the CLI against
// it.
func serve(t *testing.T) (*control.Daemon, func(args ...string) (string, error)) {
	t.Helper()
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d, err := control.NewDaemon(control.Options{DBPath: filepath.Join(dir, "conf.json"), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	sock := filepath.Join(dir, "xswitch.sock")
	ln, err := api.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		api.Serve(ln, d, log)
	}()
	t.Cleanup(func() {
		ln.Close()
		<-served
	})
	return d, func(args ...string) (string, error) {
		t.Helper()
		return execute(t, append([]string{"--sock", sock}, args...)...)
	}
}

// mustRun is x that fails the test on an error, returning the output.
func mustRun(t *testing.T, x func(args ...string) (string, error)) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		out, err := x(args...)
		if err != nil {
			t.Fatalf("xswitch %s: %v", strings.Join(args, " "), err)
		}
		return out
	}
}

func TestControllerVerbs(t *testing.T) {
	d, x := serve(t)
	must := mustRun(t, x)
	must("add-br", "br0")
	if out := must("get-controller", "br0"); out != "" {
		t.Errorf("get-controller of a new bridge printed %q, want nothing", out)
	}
	if out := must("get-fail-mode", "br0"); out != "" {
		t.Errorf("get-fail-mode of a new bridge printed %q, want nothing (unset: standalone)", out)
	}
	must("set-controller", "br0", "tcp:127.0.0.1", "ptcp:6653:[::1]")
	if out, want := must("get-controller", "br0"), "tcp:127.0.0.1:6653\nptcp:6653:[::1]\n"; out != want {
		t.Errorf("get-controller printed %q, want %q", out, want)
	}
	must("set-controller", "br0", "tcp:[::1]:6633")
	if out, want := must("get-controller", "br0"), "tcp:[::1]:6633\n"; out != want {
		t.Errorf("set-controller did not replace the targets: get-controller printed %q, want %q", out, want)
	}
	must("set-fail-mode", "br0", "secure")
	if out := must("get-fail-mode", "br0"); out != "secure\n" {
		t.Errorf("get-fail-mode printed %q, want secure", out)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"set-controller", "br0", "tcp:127.0.0.1", "tcp:localhost"}, `controller target "tcp:localhost": bad IP address "localhost"`},
		{[]string{"set-controller", "br0", "ssl:127.0.0.1"}, `controller target "ssl:127.0.0.1": connection method "ssl" is not supported`},
		{[]string{"set-controller", "br0", "tcp:127.0.0.1", "tcp:127.0.0.1:6653"}, "given twice"},
		{[]string{"set-controller", "br0"}, "requires at least 2 arg(s)"},
		{[]string{"set-controller", "br9", "tcp:127.0.0.1"}, `no bridge "br9"`},
		{[]string{"set-fail-mode", "br0", "open"}, `fail mode "open": want standalone or secure`},
		{[]string{"get-controller", "br9"}, `no bridge "br9"`},
	} {
		if _, err := x(c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("xswitch %s: %v, want an error saying %q", strings.Join(c.args, " "), err, c.want)
		}
	}
	if out := must("get-controller", "br0"); out != "tcp:[::1]:6633\n" {
		t.Errorf("refused set-controllers changed the targets to %q", out)
	}

	show := must("show")
	if !regexp.MustCompile(`(?m)^Bridge br0\n    datapath_id: [0-9a-f]{16}\n    Controller "tcp:\[::1\]:6633"\n    fail_mode: secure\n`).MatchString(show) {
		t.Errorf("show printed\n%s\nwant the datapath id, the controller and the fail mode under the bridge", show)
	}
	d.SetControllerStatus("br0", "tcp:[::1]:6633", control.ControllerConn{Connected: true, Role: "master"})
	if show := must("show"); !strings.Contains(show, "    Controller \"tcp:[::1]:6633\"\n        is_connected: true\n") {
		t.Errorf("show with the controller connected printed\n%s", show)
	}
	var shown showJSON
	if err := json.Unmarshal([]byte(must("show", "--format", "json")), &shown); err != nil {
		t.Fatal(err)
	}
	b := shown.Bridges[0]
	if len(b.DatapathID) != 16 || b.FailMode != "secure" || len(b.Controllers) != 1 ||
		b.Controllers[0] != (showControllerJSON{Target: "tcp:[::1]:6633", IsConnected: true, Role: "master"}) {
		t.Errorf("show --format json: %+v", b)
	}
	var controllers controllersJSON
	if err := json.Unmarshal([]byte(must("get-controller", "br0", "--format", "json")), &controllers); err != nil ||
		controllers.Bridge != "br0" || len(controllers.Controllers) != 1 || controllers.Controllers[0] != "tcp:[::1]:6633" {
		t.Errorf("get-controller --format json: %+v, %v", controllers, err)
	}

	must("del-controller", "br0")
	must("del-fail-mode", "br0")
	if out := must("get-controller", "br0") + must("get-fail-mode", "br0"); out != "" {
		t.Errorf("after del-controller and del-fail-mode get-controller and get-fail-mode printed %q, want nothing", out)
	}
	if out := must("get-controller", "br0", "--format", "json"); !strings.Contains(out, `"controllers": []`) {
		t.Errorf("get-controller --format json without controllers printed %s, want an empty list", out)
	}
	if show := must("show"); strings.Contains(show, "Controller") || strings.Contains(show, "fail_mode") {
		t.Errorf("show after del-controller and del-fail-mode printed\n%s", show)
	}
}
