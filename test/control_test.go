package test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/internal/testenv"
)

// nobody is the unprivileged user the socket tests run clients as.
const nobody = 65534

// runAsNobody runs the xswitch binary at bin as user nobody.
func runAsNobody(t *testing.T, bin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = clientEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("%s %s as nobody: %v", bin, strings.Join(args, " "), err)
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
}

// rawRequest sends payload on a fresh connection to the daemon, half-closes
// it, and returns the daemon's answer.
func rawRequest(t *testing.T, sock string, payload []byte) api.Response {
	t.Helper()
	c, err := net.DialTimeout("unix", sock, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(commandTimeout))
	// The daemon stops reading at its limit and answers: write on the side,
	// so that a write it refuses to read cannot block the answer.
	go func() {
		c.Write(payload)
		c.(*net.UnixConn).CloseWrite()
	}()
	var resp api.Response
	if err := json.NewDecoder(c).Decode(&resp); err != nil {
		t.Fatalf("no answer to a request of %d bytes: %v", len(payload), err)
	}
	return resp
}

// TestControlSocketOnlyForRoot checks the socket's owner and mode, and that
// the daemon itself refuses a non-root client when the mode would let one
// connect.
func TestControlSocketOnlyForRoot(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	br := newTestNet().name("br")
	d.x(t, "add-br", br)

	st, err := os.Stat(d.sock)
	if err != nil {
		t.Fatal(err)
	}
	owner := st.Sys().(*syscall.Stat_t).Uid
	t.Logf("socket %s: mode %v, owner uid %d", d.sock, st.Mode(), owner)
	if st.Mode()&os.ModeSocket == 0 || st.Mode().Perm() != 0o600 || owner != 0 {
		t.Errorf("socket %s: mode %v, owner uid %d; want a socket of mode 0600 owned by root", d.sock, st.Mode(), owner)
	}

	// Let nobody reach the socket file and run the binary: the test's own
	// directories are 0700.
	for dir := filepath.Dir(d.sock); strings.HasPrefix(dir, os.TempDir()+"/"); dir = filepath.Dir(dir) {
		if err := os.Chmod(dir, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	binDir := t.TempDir()
	if err := os.Chmod(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(binDir, "xswitch")
	data, err := os.ReadFile(xswitchBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}

	// Mode 0600: the kernel refuses the connection. The client says so,
	// not that no daemon runs.
	r := runAsNobody(t, bin, "--sock", d.sock, "list-br")
	t.Logf("nobody, socket 0600: exit %d: %s", r.code, strings.TrimSpace(r.stderr))
	if r.code != 1 || !strings.HasPrefix(r.stderr, "xswitch: permission denied: only root may control xswitch") ||
		strings.Contains(r.stderr, "not running") {
		t.Errorf("nobody on a 0600 socket: exit %d, %q; want exit 1 and permission denied", r.code, r.stderr)
	}

	// Mode 0666: the daemon's peer-credential check must refuse by itself.
	if err := os.Chmod(d.sock, 0o666); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"list-br"}, {"add-br", br + "n"}, {"del-br", br}} {
		r := runAsNobody(t, bin, append([]string{"--sock", d.sock}, args...)...)
		t.Logf("nobody, socket 0666, %s: exit %d: %s", args[0], r.code, strings.TrimSpace(r.stderr))
		if r.code != 1 || !strings.Contains(r.stderr, "permission denied: only root may control xswitch") {
			t.Errorf("nobody %s on a 0666 socket: exit %d, %q; want the daemon's refusal", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	if got := strings.TrimSpace(d.x(t, "list-br")); got != br {
		t.Errorf("after nobody's requests list-br says %q, want only %s", got, br)
	}
	if log := d.log(); !strings.Contains(log, "client refused") || !strings.Contains(log, "uid=65534") {
		t.Errorf("the daemon log does not record refusing uid 65534")
	}
}

// TestControlSilentClientsDoNotStallOthers opens connections that say
// nothing, or half a request, or trickle one, and checks that other
// clients are answered promptly meanwhile, and that the daemon closes the
// silent ones after its request timeout with a reason.
func TestControlSilentClientsDoNotStallOthers(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	br := newTestNet().name("br")
	d.x(t, "add-br", br)

	const idle = 50
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	opened := time.Now()
	for i := range idle {
		c, err := net.DialTimeout("unix", d.sock, time.Second)
		if err != nil {
			t.Fatalf("idle connection %d: %v", i, err)
		}
		conns = append(conns, c)
	}
	conns[0].Write([]byte(`{"verb":`)) // half a request
	trickle := conns[1]                // a request one byte at a time, never finished
	stopTrickle := make(chan struct{})
	defer close(stopTrickle)
	go func() {
		for _, b := range []byte(`{"verb":"list-br","bridge":"` + strings.Repeat("x", 200)) {
			select {
			case <-stopTrickle:
				return
			case <-time.After(200 * time.Millisecond):
			}
			if _, err := trickle.Write([]byte{b}); err != nil {
				return
			}
		}
	}()

	// Meanwhile, answers come at once.
	var slowest time.Duration
	for range 20 {
		begin := time.Now()
		resp, err := api.Call(d.sock, api.Request{Verb: api.VerbShow})
		elapsed := time.Since(begin)
		if err != nil || len(resp.Bridges) != 1 {
			t.Fatalf("show with %d silent connections open: %+v, %v", idle, resp, err)
		}
		slowest = max(slowest, elapsed)
	}
	begin := time.Now()
	d.x(t, "add-flow", br, "priority=7,arp,actions=NORMAL")
	cli := time.Since(begin)
	t.Logf("with %d silent connections open: slowest of 20 show requests %v; add-flow through the CLI %v", idle, slowest.Round(time.Microsecond), cli.Round(time.Millisecond))
	if slowest > time.Second {
		t.Errorf("a show request took %v with silent connections open, want under 1 s", slowest)
	}

	// The daemon closes each silent connection at its deadline, saying why.
	type closing struct {
		after time.Duration
		said  string
		err   error
	}
	closed := make(chan closing, idle)
	for _, c := range conns {
		go func() {
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			line, err := bufio.NewReader(c).ReadString('\n')
			if err == io.EOF && line == "" {
				err = nil
			}
			closed <- closing{time.Since(opened), strings.TrimSpace(line), err}
		}()
	}
	var first, last time.Duration
	var reasons []string
	for i := range idle {
		cl := <-closed
		if cl.err != nil {
			t.Fatalf("a silent connection was not closed by the daemon: %v (after %v)", cl.err, cl.after)
		}
		if i == 0 {
			first = cl.after
		}
		last = cl.after
		if i < 3 {
			reasons = append(reasons, cl.said)
		}
		if !strings.Contains(cl.said, "bad request") {
			t.Errorf("a silent connection was closed after %v with %q, want a bad-request error", cl.after, cl.said)
		}
	}
	t.Logf("the %d silent connections were closed between %v and %v after opening; first answers: %q",
		idle, first.Round(time.Millisecond), last.Round(time.Millisecond), reasons)
	if first < 9*time.Second || last > 13*time.Second {
		t.Errorf("silent connections closed %v to %v after opening, want about 10 s (the request timeout)", first, last)
	}
	if _, err := api.Call(d.sock, api.Request{Verb: api.VerbShow}); err != nil {
		t.Errorf("after the silent connections: %v", err)
	}
}

// TestControlBadRequests sends what no client should: garbage, JSON of the
// wrong shape, an unknown verb, and a request past the size limit. Each
// gets an error, and the daemon keeps serving.
func TestControlBadRequests(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	br := newTestNet().name("br")
	d.x(t, "add-br", br)

	huge := `{"verb":"add-flows","bridge":"` + br + `","flows":["` + strings.Repeat("a", 2<<20) + `"]}`
	for _, c := range []struct {
		name, payload, want string
	}{
		{"garbage", "\x00\xffnot json at all{{{", "bad request"},
		{"half a request", `{"verb":"add-br","bridge":`, "bad request"},
		{"an array", `[1,2,3]`, "bad request"},
		{"wrong field type", `{"verb":"add-br","bridge":42}`, "bad request"},
		{"unknown verb", `{"verb":"reboot-the-host"}`, `unknown verb "reboot-the-host"`},
		{"2 MiB request", huge, "larger than 1048576 bytes"},
	} {
		begin := time.Now()
		resp := rawRequest(t, d.sock, []byte(c.payload))
		t.Logf("%s (%d bytes): answered in %v: %q", c.name, len(c.payload), time.Since(begin).Round(time.Microsecond), resp.Error)
		if !strings.Contains(resp.Error, c.want) {
			t.Errorf("%s: answer %+v, want an error containing %q", c.name, resp, c.want)
		}
	}
	if got := strings.TrimSpace(d.x(t, "list-br")); got != br {
		t.Errorf("after the bad requests list-br says %q, want %s", got, br)
	}
	if total, _ := flowCount(t, d, br, ""); total != 1 {
		t.Errorf("after the bad requests %s has %d rules, want its 1", br, total)
	}
}

// TestControlConnectionFloodPastDescriptorLimit opens more silent
// connections than the daemon may hold descriptors: it must refuse the
// excess for a while, not exit, and serve again once they are gone.
func TestControlConnectionFloodPastDescriptorLimit(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	br := newTestNet().name("br")
	d.x(t, "add-br", br)
	const limit, flood = 64, 200
	lim := unix.Rlimit{Cur: limit, Max: limit}
	if err := unix.Prlimit(d.pid(), unix.RLIMIT_NOFILE, &lim, nil); err != nil {
		t.Fatalf("lower the daemon's descriptor limit: %v", err)
	}
	var conns []net.Conn
	for range flood {
		c, err := net.DialTimeout("unix", d.sock, time.Second)
		if err != nil {
			break // the listen backlog is full: the point is made
		}
		conns = append(conns, c)
	}
	// Long enough for the accept loop to meet its limit many times.
	time.Sleep(time.Second)
	for _, c := range conns {
		c.Close()
	}
	begin := time.Now()
	for {
		if !d.running() {
			t.Fatalf("the daemon exited under a flood of %d connections past its limit of %d descriptors:\n%s", len(conns), limit, d.log())
		}
		_, err := api.Call(d.sock, api.Request{Verb: api.VerbShow})
		if err == nil {
			break
		}
		if time.Since(begin) > 5*time.Second {
			t.Fatalf("the daemon does not answer 5 s after the flood ended: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	refusals := strings.Count(d.log(), "cannot accept a client")
	t.Logf("%d silent connections against a limit of %d descriptors: %d accept failures logged, answering again %v after they closed",
		len(conns), limit, refusals, time.Since(begin).Round(time.Millisecond))
	if !d.running() {
		t.Fatal("the daemon exited after the flood")
	}
}

// TestControlBigTableUnderConcurrentDumps keeps three fixes found with a
// table of 200,000 rules: add-flows of the 9.8 MB file failed ("not
// running … broken pipe") against a 1 MiB request limit; with 20 dump-flows
// running, an add-flow waited 11.7 s for its turn, was applied, and its
// client was told the daemon was not running, since one 10 s deadline
// covered the wait, the work and the answer; and answers that took longer
// than that to send were cut short. A client that gives up after sending
// its request (--timeout) says that the outcome is unknown, exit 3. Half
// the table and half the dumps make the same points in a race-detector
// build, which is ten times slower.
func TestControlBigTableUnderConcurrentDumps(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	br := newTestNet().name("br")
	d.x(t, "add-br", br)

	const rules = 100000
	file := "# generated\n\n" + manyRules(rules, 100)
	path := filepath.Join(t.TempDir(), "rules")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	d.x(t, "add-flows", br, path)
	t.Logf("add-flows of %d rules (%d bytes): %v", rules, len(file), time.Since(begin).Round(time.Millisecond))
	want := rules + 1 // and the default rule

	const dumps = 10
	type dumped struct {
		lines int
		code  int
		err   string
	}
	results := make(chan dumped, dumps)
	for range dumps {
		go func() {
			r := runLong(t, xswitchBin, "--sock", d.sock, "dump-flows", br)
			results <- dumped{lines: strings.Count(r.stdout, "\n"), code: r.code, err: r.stderr}
		}()
	}
	time.Sleep(200 * time.Millisecond) // let the dumps get going
	begin = time.Now()
	r := xswitch(t, d.sock, "add-flow", br, "priority=7,arp,actions=drop")
	t.Logf("add-flow with %d dump-flows of %d rules running: exit %d after %v %s", dumps, want, r.code, time.Since(begin).Round(time.Millisecond), r.stderr)
	if r.code != 0 {
		t.Errorf("add-flow with dumps running: exit %d: %s", r.code, r.stderr)
	}
	for range dumps {
		got := <-results
		if got.code != 0 || (got.lines != want && got.lines != want+1) {
			t.Errorf("a dump-flows with %d others running: exit %d, %d lines, want %d or %d: %s", dumps-1, got.code, got.lines, want, want+1, got.err)
		}
	}

	// An answer that does not come within --timeout: the request was
	// sent, and the client cannot say whether it took effect.
	r = xswitch(t, d.sock, "--timeout", "20ms", "mod-flows", br, "ip,actions=NORMAL")
	t.Logf("mod-flows of %d rules with --timeout 20ms: exit %d: %s", rules, r.code, strings.TrimSpace(r.stderr))
	if r.code != 3 || !strings.Contains(r.stderr, "may or may not have been carried out") || strings.Contains(r.stderr, "not running") {
		t.Errorf("mod-flows whose answer did not come in time: exit %d, %q; want exit 3 and an unknown outcome", r.code, r.stderr)
	}
	deadline := time.Now().Add(commandTimeout)
	for {
		if _, modified := flowCount(t, d, br, "actions=NORMAL"); modified == rules+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the mod-flows whose client gave up was not carried out")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// runLong is run for commands that take long under load. Its bound only
// catches a hang: ten dump-flows of 100,000 rules at once from a daemon
// built with -race took more than two minutes in CI on a loaded host.
func runLong(t testing.TB, name string, args ...string) result {
	ctx, cancel := context.WithTimeout(context.Background(), 20*commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = clientEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if exit, ok := errors.AsType[*exec.ExitError](err); ok {
		code = exit.ExitCode()
	} else if err != nil {
		code, stderr = -1, *bytes.NewBufferString(err.Error())
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// TestControlStreamedRulesNameTheirLine: an add-flows file with a bad rule
// is refused whole, and the error gives the file's line number.
func TestControlStreamedRulesNameTheirLine(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	br := newTestNet().name("br")
	d.x(t, "add-br", br)
	stderr, code := d.xErrInput(t, "# rules\n\npriority=5,arp,actions=drop\n\n  priority=6,ip,nw_dest=10.0.0.1,actions=drop\n", "add-flows", br, "-")
	if code != 1 || !strings.Contains(stderr, "line 5") || !strings.Contains(stderr, `unknown field "nw_dest"`) {
		t.Errorf("add-flows with a bad rule on line 5: exit %d, %q", code, stderr)
	}
	if total, _ := flowCount(t, d, br, ""); total != 1 {
		t.Errorf("a refused add-flows left %d rules, want the default one", total)
	}
	stderr, code = d.xErrInput(t, "# nothing\n\n", "add-flows", br, "-")
	if code != 1 || !strings.Contains(stderr, "no flows") {
		t.Errorf("add-flows of a file without rules: exit %d, %q", code, stderr)
	}
}

// TestControlProbeIsNotABadRequest keeps a fix: a second daemon, making
// sure that none answers on its socket, connected and closed, and the
// first logged it as a bad request (err=EOF).
func TestControlProbeIsNotABadRequest(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	r := run(t, xswitchBin, "daemon", "--sock", d.sock, "--db", filepath.Join(t.TempDir(), "other.json"))
	if r.code == 0 || !strings.Contains(r.stderr, "already listening on "+d.sock) {
		t.Fatalf("a second daemon on the socket: exit %d, %q", r.code, r.stderr)
	}
	d.x(t, "list-br")
	if log := d.log(); strings.Contains(log, "bad request") {
		t.Errorf("the first daemon logged the second's probe as a bad request:\n%s", log)
	}
}
