package test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xswitch/xswitch/internal/testenv"
)

// TestDeleteLeavesNothing checks that del-port and del-br undo everything
// add-port did: the veth pairs xswitch created, the XDP programs it
// attached, and its AF_XDP sockets; and that an interface xswitch did not
// create survives its del-port, with nothing of xswitch left on it.
func TestDeleteLeavesNothing(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	n := newTestNet()
	br := n.name("br")
	d.x(t, "add-br", br)
	if c := xskCount(t, d.pid()); c != 0 {
		t.Fatalf("daemon holds %d AF_XDP sockets with no ports, want 0", c)
	}

	a := addNSPort(t, d, n, br, 1, false)
	perPort := xskCount(t, d.pid())
	if perPort < 1 {
		t.Fatalf("daemon holds %d AF_XDP sockets after adding a port, want at least 1", perPort)
	}
	b := addNSPort(t, d, n, br, 2, false)

	// An interface of our own: a veth pair with its peer in a namespace.
	external := n.name("e3")
	externalNS := n.namespace(t, "n3")
	deleteLinkAtCleanup(t, external)
	mustRun(t, "ip", "link", "add", "dev", external, "type", "veth", "peer", "name", "eth0", "netns", externalNS)
	mustRun(t, "ip", "link", "set", "dev", external, "up")
	d.x(t, "add-port", br, external)

	if c := xskCount(t, d.pid()); c != 3*perPort {
		t.Errorf("daemon holds %d AF_XDP sockets for 3 ports, want %d", c, 3*perPort)
	}
	for _, name := range []string{a.name, b.name, external} {
		if !xdpAttached(t, name) {
			t.Errorf("no XDP program on %s after add-port:\n%s", name, mustRun(t, "ip", "-d", "link", "show", "dev", name))
		}
	}
	waitPing(t, a.ns, b.addr, 5*time.Second)
	if t.Failed() {
		return
	}

	d.x(t, "del-port", br, a.name)
	if linkExists(t, a.name) {
		t.Errorf("veth %s still exists after del-port", a.name)
	}
	if nsLinkExists(t, a.ns, "eth0") {
		t.Errorf("peer eth0 still exists in %s after del-port", a.ns)
	}
	if c := xskCount(t, d.pid()); c != 2*perPort {
		t.Errorf("daemon holds %d AF_XDP sockets after del-port of 1 of 3 ports, want %d", c, 2*perPort)
	}
	if ports := strings.Fields(d.x(t, "list-ports", br)); slices.Contains(ports, a.name) {
		t.Errorf("list-ports %s still lists %s after del-port: %v", br, a.name, ports)
	}

	d.x(t, "del-port", br, external)
	if !linkExists(t, external) {
		t.Fatalf("del-port deleted %s, an interface xswitch did not create", external)
	}
	if xdpAttached(t, external) {
		t.Errorf("XDP program still attached to %s after del-port:\n%s", external, mustRun(t, "ip", "-d", "link", "show", "dev", external))
	}
	if c := xskCount(t, d.pid()); c != perPort {
		t.Errorf("daemon holds %d AF_XDP sockets with 1 port left, want %d", c, perPort)
	}
	if lines := bpftoolNetMentions(t, a.name, external); len(lines) > 0 {
		t.Errorf("bpftool net still shows programs on deleted ports:\n%s", strings.Join(lines, "\n"))
	}
	if !xdpAttached(t, b.name) {
		t.Errorf("XDP program gone from %s, which is still a port", b.name)
	}

	d.x(t, "del-br", br)
	if linkExists(t, b.name) {
		t.Errorf("veth %s still exists after del-br", b.name)
	}
	if nsLinkExists(t, b.ns, "eth0") {
		t.Errorf("peer eth0 still exists in %s after del-br", b.ns)
	}
	if c := xskCount(t, d.pid()); c != 0 {
		t.Errorf("daemon holds %d AF_XDP sockets after del-br, want 0", c)
	}
	if lines := bpftoolNetMentions(t, n.tag); len(lines) > 0 {
		t.Errorf("bpftool net still shows programs on our links after del-br:\n%s", strings.Join(lines, "\n"))
	}
	if bridges := strings.Fields(d.x(t, "list-br")); slices.Contains(bridges, br) {
		t.Errorf("list-br still lists %s after del-br: %v", br, bridges)
	}
}
