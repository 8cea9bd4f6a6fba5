package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xswitch/xswitch/internal/testenv"
	"github.com/xswitch/xswitch/port/veth"
)

// TestLinkEventBurstDoesNotBlindTheDaemon keeps a fix: 2,000 down/up
// toggles of an unrelated veth in a fraction of a second overflowed the
// daemon's netlink socket (ENOBUFS), netlink ended the subscription, and
// from then on a deleted port's interface showed "state: up" forever. The
// daemon is kept busy with a big add-flows meanwhile, so that it cannot
// keep up and the kernel must drop events; it then subscribes again and
// resyncs with the links the kernel has.
func TestLinkEventBurstDoesNotBlindTheDaemon(t *testing.T) {
	testenv.RequireRoot(t)
	r := newRig(t, 2)
	d, n, br, a, b := r.d, r.n, r.br, r.hosts[0], r.hosts[1]

	noise := n.name("nz")
	deleteLinkAtCleanup(t, noise)
	mustRun(t, "ip", "link", "add", noise, "type", "veth", "peer", "name", noise+"b")
	var batch strings.Builder
	for range 2000 {
		fmt.Fprintf(&batch, "link set dev %s down\nlink set dev %s up\n", noise, noise)
	}
	batchFile := filepath.Join(t.TempDir(), "burst")
	if err := os.WriteFile(batchFile, []byte(batch.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	adding := startBackgroundInput(t, manyRules(100000, 100), xswitchBin, "--sock", d.sock, "add-flows", br, "-")
	begin := time.Now()
	mustRun(t, "ip", "-batch", batchFile)
	t.Logf("4,000 link changes in %v", time.Since(begin).Round(time.Millisecond))
	// Meanwhile b's interface is replaced by another of its name: the
	// port must follow it, not stay on the one that is gone.
	if err := veth.Delete(b.name); err != nil {
		t.Fatal(err)
	}
	b.create(t)
	mustRun(t, "ip", "-batch", batchFile)
	adding.wait(t, commandTimeout)

	waitPortState(t, d, br, b.name, "up", 5*time.Second)
	mustRun(t, "ip", "netns", "exec", a.ns, "ip", "neigh", "flush", "all")
	waitPing(t, a.ns, b.addr, 5*time.Second)
	if err := veth.Delete(b.name); err != nil {
		t.Fatal(err)
	}
	waitPortState(t, d, br, b.name, "down (interface vanished)", 5*time.Second)
	log := d.log()
	if !strings.Contains(log, "link events were lost") || !strings.Contains(log, "ports resynced") {
		t.Errorf("the burst did not overflow the daemon's link events, or it did not resync: the test proves nothing\n%s", log)
	}
}

// TestAdminDownInterfaceShowsDown keeps a fix: a port added on an
// interface that was administratively down showed "state: up".
func TestAdminDownInterfaceShowsDown(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	n := newTestNet()
	br := n.name("br")
	d.x(t, "add-br", br)
	name := foreignPort(t, n, 1).name
	mustRun(t, "ip", "link", "set", "dev", name, "down")
	d.x(t, "add-port", br, name)
	const adminDown = "down (interface is administratively down"
	waitPortState(t, d, br, name, adminDown, 5*time.Second)
	var show jsonShow
	d.xJSON(t, &show, "show")
	if p := show.Bridges[0].Ports[0]; p.State != "down" || !strings.Contains(p.Error, "administratively down") || p.Type != "afxdp" {
		t.Errorf("show --format json for an open port on an interface that is down: %+v", p)
	}
	mustRun(t, "ip", "link", "set", "dev", name, "up")
	waitPortState(t, d, br, name, "up", 5*time.Second)
	mustRun(t, "ip", "link", "set", "dev", name, "down")
	waitPortState(t, d, br, name, adminDown, 5*time.Second)
}
