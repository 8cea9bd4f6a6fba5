package ovsdb

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xswitch/xswitch/internal/testenv"
)

// server is a real ovsdb-server holding a new Open_vSwitch database.
type server struct {
	sock string // unix:PATH
	tcp  string // tcp:127.0.0.1:PORT, when asked for
}

func startServer(t *testing.T) *server { return startServerWith(t, "") }

// startServerWith starts a server that also listens on tcp (tcp:IP:PORT)
// unless that is "".
func startServerWith(t *testing.T, tcp string) *server {
	t.Helper()
	testenv.RequireOVSDB(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "conf.db")
	if out, err := exec.Command("ovsdb-tool", "create", db, testenv.VswitchSchema).CombinedOutput(); err != nil {
		t.Fatalf("ovsdb-tool create: %v: %s", err, out)
	}
	sock := filepath.Join(dir, "db.sock")
	cmd := exec.Command("ovsdb-server", db, "--remote=punix:"+sock,
		"--unixctl="+filepath.Join(dir, "ctl"), "--no-chdir",
		"--log-file="+filepath.Join(dir, "ovsdb-server.log"), "--pidfile="+filepath.Join(dir, "pid"))
	if tcp != "" {
		ip, port, _ := strings.Cut(strings.TrimPrefix(tcp, "tcp:"), ":")
		cmd.Args = append(cmd.Args, "--remote=ptcp:"+port+":"+ip) // ptcp's port comes first
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("ovsdb-server: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ovsdb-server made no socket %s in 10s", sock)
		}
	}
	return &server{sock: "unix:" + sock, tcp: tcp}
}

func (s *server) dial(t *testing.T) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, s.sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func (s *server) vsctl(t *testing.T, args ...string) {
	t.Helper()
	args = append([]string{"--db=" + s.sock, "--no-wait", "--timeout=10"}, args...)
	if out, err := exec.Command("ovs-vsctl", args...).CombinedOutput(); err != nil {
		t.Fatalf("ovs-vsctl %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestServerListDBsAndSchema(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	ctx := testContext(t)
	dbs, err := c.ListDBs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !contains(dbs, "Open_vSwitch") {
		t.Fatalf("list_dbs = %v, want Open_vSwitch among them", dbs)
	}
	schema, err := c.GetSchema(ctx, "Open_vSwitch")
	if err != nil {
		t.Fatal(err)
	}
	file, err := ReadSchema(testenv.VswitchSchema)
	if err != nil {
		t.Fatal(err)
	}
	if schema.Version != file.Version || len(schema.Tables) != len(file.Tables) {
		t.Fatalf("get_schema: version %s with %d tables; the file: %s with %d",
			schema.Version, len(schema.Tables), file.Version, len(file.Tables))
	}
	if err := c.Echo(ctx); err != nil {
		t.Fatal(err)
	}
	// Monitor falls back from monitor_cond to monitor on this error.
	var rpc *RPCError
	if err := c.Call(ctx, "monitor_cond_nosuch", nil, nil); !errors.As(err, &rpc) || rpc.Err != "unknown method" {
		t.Fatalf("an unknown method: %v, want an RPCError saying unknown method", err)
	}
	if _, err := c.GetSchema(ctx, "NoSuchDB"); err == nil || !strings.Contains(err.Error(), "unknown database") {
		t.Fatalf("get_schema of NoSuchDB: %v, want unknown database", err)
	}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// recorder keeps a replica's changes for a test to wait on.
type recorder struct {
	mu      sync.Mutex
	changes []Change
	more    chan struct{}
}

func newRecorder() *recorder { return &recorder{more: make(chan struct{}, 1)} }

func (r *recorder) record(ch []Change) {
	r.mu.Lock()
	r.changes = append(r.changes, ch...)
	r.mu.Unlock()
	select {
	case r.more <- struct{}{}:
	default:
	}
}

// waitFor waits until the replica satisfies ok.
func waitFor(t *testing.T, r *recorder, what string, ok func() bool) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for !ok() {
		select {
		case <-r.more:
		case <-timeout:
			t.Fatalf("no %s in 10s", what)
		}
	}
}

func byName(rows map[UUID]Row, name string) (UUID, Row) {
	for u, r := range rows {
		if r.String("name") == name {
			return u, r
		}
	}
	return "", nil
}

func TestServerTransactAndMonitor(t *testing.T) {
	for _, method := range []string{"monitor_cond", "monitor"} {
		t.Run(method, func(t *testing.T) { testTransactAndMonitor(t, method) })
	}
}

func testTransactAndMonitor(t *testing.T, method string) {
	s := startServer(t)
	c := s.dial(t)
	ctx := testContext(t)
	schema, err := c.GetSchema(ctx, "Open_vSwitch")
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	replica, err := c.monitor(ctx, "Open_vSwitch", schema, map[string][]string{
		"Open_vSwitch": {"bridges", "next_cfg"},
		"Bridge":       {"name", "ports", "fail_mode", "external_ids"},
		"Port":         {"name", "interfaces", "tag"},
		"Interface":    {"name", "type", "options"},
	}, rec.record, method)
	if err != nil {
		t.Fatal(err)
	}
	if replica.Cond != (method == "monitor_cond") {
		t.Errorf("%s: the replica says Cond %v", method, replica.Cond)
	}
	if n := len(replica.Rows("Open_vSwitch")); n != 0 {
		t.Fatalf("a new database has %d Open_vSwitch rows", n)
	}

	res, err := c.Transact(ctx, "Open_vSwitch",
		Insert("Open_vSwitch", map[string]any{"bridges": NamedUUID("brA")}, "ovs"),
		Insert("Bridge", map[string]any{"name": "brA", "fail_mode": "secure",
			"external_ids": Map{{"owner", "test"}}}, "brA"),
		Comment("ovsdb package test"))
	if err != nil {
		t.Fatal(err)
	}
	ovsUUID, brA := res[0].UUID, res[1].UUID
	if ovsUUID == "" || brA == "" {
		t.Fatalf("insert results %+v lack UUIDs", res)
	}
	waitFor(t, rec, "brA in the replica", func() bool {
		return len(replica.Row("Open_vSwitch", ovsUUID).UUIDs("bridges")) == 1 && replica.Row("Bridge", brA) != nil
	})
	if got := replica.Row("Bridge", brA); got.String("fail_mode") != "secure" || got.StringMap("external_ids")["owner"] != "test" {
		t.Fatalf("brA in the replica: %v", got)
	}

	// A second bridge, added to the set by a mutate.
	_, err = c.Transact(ctx, "Open_vSwitch",
		Insert("Bridge", map[string]any{"name": "brB"}, "brB"),
		Mutate("Open_vSwitch", []Mutation{Mut("bridges", "insert", Set{NamedUUID("brB")})},
			Cond("_uuid", "==", ovsUUID)))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, rec, "brB in Open_vSwitch.bridges", func() bool {
		return len(replica.Row("Open_vSwitch", ovsUUID).UUIDs("bridges")) == 2
	})

	// What the real ovs-vsctl does is seen as it does it.
	s.vsctl(t, "add-br", "br0")
	waitFor(t, rec, "br0 from ovs-vsctl", func() bool {
		u, _ := byName(replica.Rows("Bridge"), "br0")
		return u != "" && len(replica.Row("Open_vSwitch", ovsUUID).UUIDs("bridges")) == 3
	})
	s.vsctl(t, "add-port", "br0", "p1", "--", "set", "Interface", "p1", "type=internal",
		"options:peer=x", "--", "set", "Port", "p1", "tag=10")
	waitFor(t, rec, "p1 from ovs-vsctl", func() bool {
		_, br := byName(replica.Rows("Bridge"), "br0")
		_, port := byName(replica.Rows("Port"), "p1")
		_, iface := byName(replica.Rows("Interface"), "p1")
		tag, tagged := port.OptInt("tag")
		return len(br.UUIDs("ports")) == 2 && tagged && tag == 10 &&
			iface.String("type") == "internal" && iface.StringMap("options")["peer"] == "x" &&
			len(port.UUIDs("interfaces")) == 1
	})
	snap := replica.Snapshot()
	for table := range snap {
		if !reflect.DeepEqual(snap[table], replica.Rows(table)) {
			t.Errorf("Snapshot's %s differs from Rows'", table)
		}
	}
	if len(snap) != 4 || len(snap["Interface"]) != 2 {
		t.Errorf("Snapshot holds %d tables, %d interfaces; want the 4 monitored, and br0's and p1's interfaces", len(snap), len(snap["Interface"]))
	}
	s.vsctl(t, "set", "Port", "p1", "tag=20")
	waitFor(t, rec, "p1's tag changed", func() bool {
		_, port := byName(replica.Rows("Port"), "p1")
		tag, _ := port.OptInt("tag")
		return tag == 20
	})
	s.vsctl(t, "remove", "Port", "p1", "tag", "20", "--", "remove", "Interface", "p1", "options", "peer")
	waitFor(t, rec, "p1's tag and options removed", func() bool {
		_, port := byName(replica.Rows("Port"), "p1")
		_, iface := byName(replica.Rows("Interface"), "p1")
		_, tagged := port.OptInt("tag")
		return !tagged && len(iface.StringMap("options")) == 0
	})
	s.vsctl(t, "del-br", "br0")
	waitFor(t, rec, "br0 deleted", func() bool {
		u, _ := byName(replica.Rows("Bridge"), "br0")
		return u == "" && len(replica.Rows("Port")) == 0 && len(replica.Rows("Interface")) == 0
	})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var deleted bool
	for _, ch := range rec.changes {
		if ch.Table == "Bridge" && ch.New == nil && ch.Old.String("name") == "br0" {
			deleted = true
		}
	}
	if !deleted {
		t.Errorf("no change told of br0's deletion")
	}
}

func TestServerTransactErrors(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	ctx := testContext(t)

	_, err := c.Transact(ctx, "Open_vSwitch",
		Comment("first"),
		Wait("Bridge", []Condition{Cond("name", "==", "nosuch")}, []string{"name"}, "==",
			[]map[string]any{{"name": "nosuch"}}, 0))
	var oe *OpError
	if !errors.As(err, &oe) || oe.Index != 1 || oe.Op != "wait" || oe.Table != "Bridge" || oe.Err != "timed out" {
		t.Fatalf("a wait that times out: %v, want operation 1 (wait on Bridge): timed out", err)
	}

	// The schema allows one Open_vSwitch row: a second violates it, at commit.
	_, err = c.Transact(ctx, "Open_vSwitch",
		Insert("Open_vSwitch", map[string]any{}, ""),
		Insert("Open_vSwitch", map[string]any{}, ""))
	if !errors.As(err, &oe) || oe.Op != "commit" || oe.Err != "constraint violation" {
		t.Fatalf("two Open_vSwitch rows: %v, want a constraint violation at commit", err)
	}

	_, err = c.Transact(ctx, "Open_vSwitch", Update("NoSuchTable", map[string]any{"x": 1}))
	if !errors.As(err, &oe) || oe.Op != "update" || oe.Table != "NoSuchTable" {
		t.Fatalf("an update of NoSuchTable: %v, want its operation named", err)
	}
}

func TestServerCancel(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	ctx, cancel := context.WithCancel(testContext(t))
	errc := make(chan error, 1)
	go func() {
		// Waits for a bridge that never comes, until canceled.
		_, err := c.Transact(ctx, "Open_vSwitch", Wait("Bridge", nil, []string{"name"}, "==",
			[]map[string]any{{"name": "never"}}, -1))
		errc <- err
	}()
	time.Sleep(100 * time.Millisecond)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("a canceled transaction: %v", err)
	}
	// The connection stays usable after the server's "canceled" reply.
	if err := c.Echo(testContext(t)); err != nil {
		t.Fatal(err)
	}
}

func TestServerLock(t *testing.T) {
	s := startServer(t)
	first, second := s.dial(t), s.dial(t)
	ctx := testContext(t)
	locked := make(chan string, 2)
	second.OnLock(func(name string, held bool) {
		if held {
			locked <- name
		}
	})

	if got, err := first.Lock(ctx, "xswitch"); err != nil || !got {
		t.Fatalf("first lock: %v, %v", got, err)
	}
	if got, err := second.Lock(ctx, "xswitch"); err != nil || got {
		t.Fatalf("second lock while the first holds it: granted %v, %v", got, err)
	}
	select {
	case <-locked:
		t.Fatal("locked notification while the first still holds the lock")
	case <-time.After(200 * time.Millisecond):
	}
	if err := first.Unlock(ctx, "xswitch"); err != nil {
		t.Fatal(err)
	}
	select {
	case name := <-locked:
		if name != "xswitch" {
			t.Fatalf("locked %q", name)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no locked notification after the first unlocked")
	}

	// A holder that disconnects gives the lock up too.
	third := s.dial(t)
	thirdLocked := make(chan string, 1)
	third.OnLock(func(name string, held bool) {
		if held {
			thirdLocked <- name
		}
	})
	if got, err := third.Lock(ctx, "xswitch"); err != nil || got {
		t.Fatalf("third lock while the second holds it: granted %v, %v", got, err)
	}
	second.Close()
	select {
	case <-second.Done():
	default:
		t.Fatal("Done is not closed after Close")
	}
	select {
	case <-thirdLocked:
	case <-time.After(10 * time.Second):
		t.Fatal("no locked notification after the holder disconnected")
	}
}

func TestServerSteal(t *testing.T) {
	s := startServer(t)
	holder, thief := s.dial(t), s.dial(t)
	ctx := testContext(t)
	stolen := make(chan string, 1)
	holder.OnLock(func(name string, held bool) {
		if !held {
			stolen <- name
		}
	})
	if got, err := holder.Lock(ctx, "xswitch"); err != nil || !got {
		t.Fatalf("lock: %v, %v", got, err)
	}
	if err := thief.Steal(ctx, "xswitch"); err != nil {
		t.Fatal(err)
	}
	select {
	case name := <-stolen:
		if name != "xswitch" {
			t.Fatalf("stolen %q", name)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no stolen notification after a steal")
	}
}

func TestServerGone(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	if err := c.Echo(testContext(t)); err != nil {
		t.Fatal(err)
	}
	// The test's cleanup kills the server; here, a Client over a closed
	// connection tells the caller through Done and Err.
	c.conn.Close()
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed when the connection dropped")
	}
	if c.Err() == nil {
		t.Fatal("Err is nil after the connection dropped")
	}
	if _, err := c.ListDBs(testContext(t)); err == nil {
		t.Fatal("a call on a dropped connection succeeded")
	}
}

// TestServerEchoOverTCP stays idle on a tcp: connection longer than
// ovsdb-server's inactivity probe (5 s, then 5 s more for the reply, on
// tcp but not unix remotes): the server drops a client that does not
// answer its echo, so a call that works afterwards shows the client did.
func TestServerEchoOverTCP(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s := startServerWith(t, "tcp:"+addr)
	var c *Client
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err = Dial(testContext(t), s.tcp); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { c.Close() })
	select {
	case <-c.Done():
		t.Fatalf("the server dropped an idle client: %v", c.Err())
	case <-time.After(12 * time.Second):
	}
	if _, err := c.ListDBs(testContext(t)); err != nil {
		t.Fatal(err)
	}
}
