package test

import (
	"syscall"
	"testing"
	"time"

	"github.com/xswitch/xswitch/internal/testenv"
	"github.com/xswitch/xswitch/port/veth"
)

// TestOFPortsAreNotReused keeps two fixes. A port whose interface vanished
// gave its OpenFlow number to the next add-port; when the interface came
// back two ports shared it, and after a restart the wrong one won. And a
// deleted port's number went to the next port at once, so that a rule
// written for the old port (in_port=N,actions=drop) applied to the new one.
// Numbers are allocated as Open vSwitch does: a configured port keeps its
// number while down, a freed number is kept from other ports for an hour,
// and a port added again under its old name gets its old number back.
func TestOFPortsAreNotReused(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	n := newTestNet()
	br := n.name("br")
	d.x(t, "add-br", br)
	addNSPort(t, d, n, br, 1, false)
	foreign := foreignPort(t, n, 2)
	p2 := foreign.name
	d.x(t, "add-port", br, p2)
	want := map[string]int{n.name("p1"): 1, p2: 2}
	checkOFPorts(t, d, br, want)

	// p2's interface vanishes: p2 is down and keeps 2.
	if err := veth.Delete(p2); err != nil {
		t.Fatal(err)
	}
	waitPortState(t, d, br, p2, "down (interface vanished)", 5*time.Second)
	addNSPort(t, d, n, br, 3, false)
	want[n.name("p3")] = 3
	checkOFPorts(t, d, br, want)
	foreign.create(t)
	waitPortState(t, d, br, p2, "up", 5*time.Second)
	checkOFPorts(t, d, br, want)
	d.stop(t, syscall.SIGTERM)
	d.start(t)
	checkOFPorts(t, d, br, want)

	// A deleted port's number is not the next port's.
	d.x(t, "add-flow", br, "priority=100,in_port=3,actions=drop")
	d.x(t, "del-port", br, n.name("p3"))
	delete(want, n.name("p3"))
	addNSPort(t, d, n, br, 4, false)
	want[n.name("p4")] = 4
	checkOFPorts(t, d, br, want)

	// Across a restart too; and the old port, added again, gets its number
	// back.
	d.stop(t, syscall.SIGKILL)
	d.start(t)
	d.x(t, "add-port", br, n.name("p3"), "--netns", n.name("n3"), "--address", n.ipv4(3)+"/24")
	want[n.name("p3")] = 3
	addNSPort(t, d, n, br, 5, false)
	want[n.name("p5")] = 5
	checkOFPorts(t, d, br, want)
}

// checkOFPorts fails the test unless br's ports have exactly the numbers in
// want.
func checkOFPorts(t *testing.T, d *daemon, br string, want map[string]int) {
	t.Helper()
	got := ofports(t, d, br)
	if len(got) != len(want) {
		t.Fatalf("ports of %s: %v, want %v", br, got, want)
	}
	for name, ofport := range want {
		if got[name] != ofport {
			t.Fatalf("ports of %s: %v, want %v", br, got, want)
		}
	}
}
