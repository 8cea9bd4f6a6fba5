package test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xswitch/xswitch/internal/netns"
	"github.com/xswitch/xswitch/internal/testenv"
	"github.com/xswitch/xswitch/port/veth"
)

// waitPortState waits until `show` gives port the wanted state line prefix
// ("up", "down (interface vanished)").
func waitPortState(t *testing.T, d *daemon, br, port, want string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var state string
		for _, b := range parseShow(t, d.x(t, "show")) {
			for _, p := range b.ports {
				if b.name == br && p.name == port {
					state = p.attrs["state"]
				}
			}
		}
		if strings.HasPrefix(state, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("port %s state %q after %v, want %q\n%s", port, state, within, want, d.x(t, "show"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestPortWhoseInterfaceVanishesGoesDownAndComesBack(t *testing.T) {
	testenv.RequireRoot(t)
	r := newRig(t, 2)
	d, n, br, a, b := r.d, r.n, r.br, r.hosts[0], r.hosts[1]

	// A port on an interface xswitch did not create: when it is deleted
	// and created again, the port follows by itself.
	c := foreignPort(t, n, 3)
	cNS, cName := c.ns, c.name
	d.x(t, "add-port", br, cName)
	waitPing(t, cNS, a.addr, 5*time.Second)

	if err := veth.Delete(cName); err != nil {
		t.Fatal(err)
	}
	waitPortState(t, d, br, cName, "down (interface vanished)", 5*time.Second)
	requirePing(t, a.ns, b.addr, 56) // the others keep forwarding
	c.create(t)
	waitPortState(t, d, br, cName, "up", 5*time.Second)
	waitPing(t, cNS, a.addr, 5*time.Second)

	// A port whose namespace (and with it the veth pair) is deleted stays
	// down until it is added again.
	if err := netns.Delete(b.ns); err != nil {
		t.Fatal(err)
	}
	waitPortState(t, d, br, b.name, "down (interface vanished)", 5*time.Second)
	requirePing(t, a.ns, n.ipv4(3), 56)
	d.x(t, "del-port", br, b.name)
	if err := netns.Create(b.ns); err != nil {
		t.Fatal(err)
	}
	d.x(t, "add-port", br, b.name, "--netns", b.ns, "--address", b.addr+"/24")
	// The new peer has a new MAC address that a's neighbour cache does not
	// know yet.
	mustRun(t, "ip", "netns", "exec", a.ns, "ip", "neigh", "flush", "all")
	waitPing(t, a.ns, b.addr, 5*time.Second)

	log := d.log()
	if !strings.Contains(log, "port down") || !strings.Contains(log, "port up") {
		t.Errorf("the daemon log does not record the port going down and up:\n%s", log)
	}
}

func TestPortThatCannotOpenFailsOnce(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	n := newTestNet()
	br := n.name("br")
	d.x(t, "add-br", br)
	name := foreignPort(t, n, 1).name
	before := d.x(t, "show")
	stderr, code := d.xErr(t, "add-port", br, name, "--queues", "4")
	if code != 1 || !strings.Contains(stderr, "has 1 rx queue, 4 requested") {
		t.Fatalf("add-port with too many queues: exit %d, %q", code, stderr)
	}
	if after := d.x(t, "show"); after != before {
		t.Fatalf("a failed add-port changed the configuration:\n%s\nwant\n%s", after, before)
	}
	// Nothing keeps trying: the error appears in the log once and only once.
	time.Sleep(2 * time.Second)
	if got := strings.Count(d.log(), fmt.Sprintf("%q", name)); got > 1 {
		t.Fatalf("the daemon log mentions %s %d times after one failed add-port:\n%s", name, got, d.log())
	}
}

// TestPortKeepsItsCountersWhileDown keeps a fix: a port whose interface
// vanished reported zero counters, in dump-ports and to OpenFlow, and
// counted from zero once the interface was back, for the counters lived
// with the interface's socket. They are the port's: kept while it is down,
// and going on from there when it returns.
func TestPortKeepsItsCountersWhileDown(t *testing.T) {
	testenv.RequireRoot(t)
	requireTool(t, "ovs-ofctl")
	r := newRig(t, 1)
	d, n, br, a := r.d, r.n, r.br, r.hosts[0]
	c := foreignPort(t, n, 2)
	d.x(t, "add-port", br, c.name)
	target := listenForOfctl(t, d, br)
	ofport := ofports(t, d, br)[c.name]
	waitPing(t, a.ns, c.addr, 5*time.Second)
	requirePing(t, a.ns, c.addr, 56)
	before := dumpPorts(t, d, br)[ofport]
	if before.rxPkts < 3 || before.txPkts < 3 {
		t.Fatalf("port %s counted rx %d, tx %d after the pings; want at least 3 each", c.name, before.rxPkts, before.txPkts)
	}

	// counters reads the port's counters by dump-ports, its JSON and
	// OpenFlow, which must agree: each reading at least the one before, as
	// a flood may reach the port meanwhile.
	counters := func(when string) portCounters {
		t.Helper()
		text := dumpPorts(t, d, br)[ofport]
		var js jsonDumpPorts
		d.xJSON(t, &js, "dump-ports", br, c.name)
		of := ofctl(t, "dump-ports", target, fmt.Sprint(ofport))
		m := regexp.MustCompile(`rx pkts=(\d+), bytes=(\d+).*\n\s*tx pkts=(\d+), bytes=(\d+)`).FindStringSubmatch(of)
		if m == nil {
			t.Fatalf("%s: ovs-ofctl dump-ports %d:\n%s", when, ofport, of)
		}
		p := js.Ports[0]
		ofc := portCounters{rxPkts: atou(m[1]), rxBytes: atou(m[2]), txPkts: atou(m[3]), txBytes: atou(m[4])}
		if p.RxPackets < text.rxPkts || p.TxPackets < text.txPkts || ofc.rxPkts < p.RxPackets || ofc.txPkts < p.TxPackets ||
			ofc.rxBytes < text.rxBytes || ofc.txBytes < text.txBytes {
			t.Errorf("%s: dump-ports says rx %d tx %d, its JSON rx %d tx %d, OpenFlow %+v", when, text.rxPkts, text.txPkts, p.RxPackets, p.TxPackets, ofc)
		}
		return text
	}
	atLeast := func(when string, got, want portCounters) {
		t.Helper()
		if got.rxPkts < want.rxPkts || got.rxBytes < want.rxBytes || got.txPkts < want.txPkts || got.txBytes < want.txBytes {
			t.Errorf("%s: port %s counts rx %d pkts %d bytes, tx %d pkts %d bytes; it had counted rx %d pkts %d bytes, tx %d pkts %d bytes",
				when, c.name, got.rxPkts, got.rxBytes, got.txPkts, got.txBytes, want.rxPkts, want.rxBytes, want.txPkts, want.txBytes)
		}
	}

	mustRun(t, "ip", "link", "set", "dev", c.name, "down")
	waitPortState(t, d, br, c.name, "down (interface is administratively down", 5*time.Second)
	atLeast("administratively down", counters("administratively down"), before)
	mustRun(t, "ip", "link", "set", "dev", c.name, "up")
	waitPortState(t, d, br, c.name, "up", 5*time.Second)

	if err := veth.Delete(c.name); err != nil {
		t.Fatal(err)
	}
	waitPortState(t, d, br, c.name, "down (interface vanished)", 5*time.Second)
	gone := counters("vanished")
	atLeast("vanished", gone, before)

	c.create(t)
	waitPortState(t, d, br, c.name, "up", 5*time.Second)
	mustRun(t, "ip", "netns", "exec", a.ns, "ip", "neigh", "flush", "all")
	waitPing(t, a.ns, c.addr, 5*time.Second)
	requirePing(t, a.ns, c.addr, 56)
	back := counters("back")
	for _, had := range []portCounters{before, gone} {
		had.rxPkts, had.txPkts = had.rxPkts+3, had.txPkts+3 // the pings since
		atLeast("back", back, had)
	}
}
