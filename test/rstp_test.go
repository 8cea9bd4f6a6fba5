package test

import (
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xswitch/xswitch/internal/testenv"
)

// jsonRSTPShow is rstp-show's JSON, as the README documents it.
type jsonRSTPShow struct {
	Bridges []struct {
		Bridge          string     `json:"bridge"`
		BridgeID        jsonRSTPID `json:"bridge_id"`
		RootID          jsonRSTPID `json:"root_id"`
		IsRoot          bool       `json:"is_root"`
		RootPort        string     `json:"root_port"`
		RootPathCost    uint32     `json:"root_path_cost"`
		TopologyChanges uint64     `json:"topology_changes"`
		BPDUsDropped    uint64     `json:"bpdus_dropped"`
		Unsettled       uint64     `json:"unsettled"`
		ForceVersion    int        `json:"force_protocol_version"`
		TransmitHold    int        `json:"transmit_hold_count"`
		Ports           []struct {
			Name             string `json:"name"`
			OFPort           int    `json:"ofport"`
			Number           int    `json:"port_number"`
			Priority         int    `json:"priority"`
			PathCost         uint32 `json:"path_cost"`
			Role             string `json:"role"`
			State            string `json:"state"`
			Edge             bool   `json:"edge"`
			Protocol         string `json:"protocol"`
			DesignatedBridge string `json:"designated_bridge"`
			DesignatedPort   string `json:"designated_port"`
			RxBPDUs          uint64 `json:"rx_bpdus"`
			TxBPDUs          uint64 `json:"tx_bpdus"`
			RxDropped        uint64 `json:"rx_dropped"`
		} `json:"ports"`
	} `json:"bridges"`
}

type jsonRSTPID struct {
	ID           string `json:"id"`
	Priority     int    `json:"priority"`
	Address      string `json:"address"`
	HelloTime    int    `json:"hello_time"`
	MaxAge       int    `json:"max_age"`
	ForwardDelay int    `json:"forward_delay"`
}

// rstpPorts reads rstp-show br as JSON: each port's role, state and
// protocol, "role state protocol", by name.
func rstpPorts(t testing.TB, d *daemon, br string) (map[string]string, jsonRSTPShow) {
	t.Helper()
	var show jsonRSTPShow
	d.xJSON(t, &show, "rstp-show", br)
	if len(show.Bridges) != 1 || show.Bridges[0].Bridge != br {
		t.Fatalf("rstp-show %s: %+v", br, show)
	}
	ports := map[string]string{}
	for _, p := range show.Bridges[0].Ports {
		ports[p.Name] = p.Role + " " + p.State + " " + p.Protocol
	}
	return ports, show
}

// waitRSTP polls rstp-show until every port named in want has the role,
// state and protocol given, for at most within.
func waitRSTP(t testing.TB, d *daemon, br string, within time.Duration, want map[string]string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got, _ := rstpPorts(t, d, br)
		ok := true
		for name, w := range want {
			ok = ok && got[name] == w
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("rstp-show %s after %v: %v; want %v\n%s", br, within, got, want, d.x(t, "rstp-show", br))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// vethPair creates a veth pair in this namespace, both ends up, deleted
// when the test ends.
func vethPair(t testing.TB, a, b string) {
	t.Helper()
	deleteLinkAtCleanup(t, a)
	mustRun(t, "ip", "link", "add", a, "type", "veth", "peer", "name", b)
	mustRun(t, "ip", "link", "set", a, "up")
	mustRun(t, "ip", "link", "set", b, "up")
}

// copiesOf sends count broadcasts from the made-up station src through r
// and counts how many arrive at the namespace `to` within a second of the
// last: a storm multiplies them, a tree delivers each once.
func copiesOf(t *testing.T, r rawPort, to string, count int) int {
	t.Helper()
	c := startCounting(t, to, r.mac)
	bcast := ethFrame(net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, r.mac, 0x88b5, []byte("how many copies"))
	for range count {
		r.send(t, bcast)
	}
	time.Sleep(time.Second)
	return c.count(t)
}

// TestRSTPBreaksALoopThroughTwoPorts puts both ends of a veth pair on one
// bridge: a loop. Without RSTP a single broadcast circles for ever and
// every port receives it again and again; with rstp_enable=true one end
// becomes a backup port and discards, and a broadcast from a namespace is
// delivered once. Then the loop is removed, and RSTP turned off.
func TestRSTPBreaksALoopThroughTwoPorts(t *testing.T) {
	testenv.RequireRoot(t)
	r := newRig(t, 2)
	d, br, h1, h2 := r.d, r.br, r.hosts[0], r.hosts[1]
	va, vb := r.n.name("va"), r.n.name("vb")
	vethPair(t, va, vb)
	d.x(t, "add-port", br, va)
	d.x(t, "add-port", br, vb)

	// A made-up station in h1 that nothing answers, so that the only
	// copies are the ones the switch makes.
	station := openRaw(t, h1.ns, net.HardwareAddr{0x02, 0x00, 0x5e, 0x10, 0x0b, 0x01})
	storm := copiesOf(t, station, h2.ns, 1)
	t.Logf("without RSTP, one broadcast reached %s %d times in a second", h2.ns, storm)
	if storm < 100 {
		t.Fatalf("without RSTP, one broadcast reached %s %d times; a loop should multiply it (the test proves nothing)", h2.ns, storm)
	}

	d.x(t, "set", "Bridge", br, "rstp_enable=true")
	if got := strings.TrimSpace(d.x(t, "get", "Bridge", br, "rstp_enable")); got != "true" {
		t.Errorf("get rstp_enable = %q; want true", got)
	}
	// The two ends of the veth: the one with the lower port number is
	// designated, the other hears it and is its backup. The namespaces'
	// ports hear no BPDU and become edge ports after 3 s.
	loop := map[string]string{
		va: "designated forwarding rstp", vb: "backup discarding rstp",
		h1.name: "designated forwarding rstp", h2.name: "designated forwarding rstp",
	}
	waitRSTP(t, d, br, 10*time.Second, loop)
	time.Sleep(500 * time.Millisecond) // whatever the storm left in flight
	for _, n := range []int{1, 100} {
		if got := copiesOf(t, station, h2.ns, n); got != n {
			t.Errorf("with RSTP, %d broadcasts reached %s %d times; want each once", n, h2.ns, got)
		}
	}
	waitPing(t, h1.ns, h2.addr, 5*time.Second)
	requirePing(t, h1.ns, h2.addr, 56)
	checkShownRSTP(t, d, br, loop)
	var dump jsonDumpPorts
	d.xJSON(t, &dump, "dump-ports", br, vb)
	if dump.Ports[0].Drops.STP == 0 {
		t.Errorf("the backup port %s counts no stp drops: %+v", vb, dump.Ports[0].Drops)
	}
	if out := d.x(t, "rstp-show", br); !strings.Contains(out, "This bridge is the root") ||
		!strings.Contains(out, "Backup     Discarding") || !strings.Contains(out, "Interface") {
		t.Errorf("rstp-show text lacks the root line or the backup port:\n%s", out)
	}
	ofport := ofports(t, d, br)
	if out := d.x(t, "trace", br, fmt.Sprintf("in_port=%d,dl_dst=ff:ff:ff:ff:ff:ff", ofport[vb])); !strings.Contains(out, "is discarding (RSTP)") {
		t.Errorf("trace from the backup port does not say it discards:\n%s", out)
	}
	if out := d.x(t, "trace", br, fmt.Sprintf("in_port=%d,dl_dst=ff:ff:ff:ff:ff:ff", ofport[h1.name])); strings.Contains(out, fmt.Sprint(ofport[vb])+",") ||
		!strings.Contains(out, "Datapath actions: ") {
		t.Errorf("trace of a broadcast from %s floods to the backup port:\n%s", h1.name, out)
	}

	// A restart comes back with RSTP on, the ports discarding until the
	// machines decide: no storm, even for a moment.
	d.stop(t, syscall.SIGTERM)
	d.start(t)
	waitRSTP(t, d, br, 10*time.Second, loop)
	if got := copiesOf(t, station, h2.ns, 10); got != 10 {
		t.Errorf("after a restart, 10 broadcasts reached %s %d times; want each once", h2.ns, got)
	}

	// No loop any more: the other end forwards on.
	d.x(t, "del-port", br, vb)
	waitRSTP(t, d, br, 5*time.Second, map[string]string{va: "designated forwarding rstp"})
	// And without RSTP, every port forwards, and rstp-show has nothing.
	d.x(t, "set-stp", br, "off")
	if stderr, _ := d.xErr(t, "rstp-show", br); !strings.Contains(stderr, "does not run RSTP") {
		t.Errorf("rstp-show of a bridge without RSTP: %q", stderr)
	}
	requirePing(t, h1.ns, h2.addr, 56)
	if got := copiesOf(t, station, h2.ns, 10); got != 10 {
		t.Errorf("without RSTP and without the loop, 10 broadcasts reached %s %d times", h2.ns, got)
	}
}

// checkShownRSTP wants show's rstp line and show --format json's
// rstp_role and rstp_state to agree with want ("role state protocol").
func checkShownRSTP(t *testing.T, d *daemon, br string, want map[string]string) {
	t.Helper()
	for _, b := range parseShow(t, d.x(t, "show")) {
		for _, p := range b.ports {
			if w, ok := want[p.name]; ok && b.name == br {
				fields := strings.Fields(w)
				if got := p.attrs["rstp"]; got != fields[0]+", "+fields[1] {
					t.Errorf("show: port %s rstp %q; want %s, %s", p.name, got, fields[0], fields[1])
				}
			}
		}
	}
	var shown jsonShow
	d.xJSON(t, &shown, "show")
	for _, b := range shown.Bridges {
		for _, p := range b.Ports {
			if w, ok := want[p.Name]; ok && b.Name == br {
				if got := p.RSTPRole + " " + p.RSTPState; !strings.HasPrefix(w, got+" ") {
					t.Errorf("show --format json: port %s is %q; want %q", p.Name, got, w)
				}
			}
		}
	}
}

// TestRSTPValidatesItsSettings: bad RSTP settings are refused by name and
// change nothing.
func TestRSTPValidatesItsSettings(t *testing.T) {
	testenv.RequireRoot(t)
	r := newRig(t, 1)
	d, br, p := r.d, r.br, r.hosts[0].name
	for _, c := range []struct{ args, want string }{
		{"set Bridge " + br + " rstp_enable=yes", `"yes" is not true or false`},
		{"set Bridge " + br + " other_config:rstp-priority=1000", `"1000" is not a multiple of 4096 from 0 to 61440`},
		{"set Bridge " + br + " other_config:rstp-max-age=41", `"41" is not a whole number from 6 to 40`},
		{"set Bridge " + br + " other_config:rstp-forward-delay=4", `max age 20 s is more than 2 × (forward delay 4 s − 1)`},
		{"set Bridge " + br + " other_config:rstp-address=01:00:00:00:00:01", "not a unicast MAC address"},
		{"set Bridge " + br + " other_config:rstp-force-protocol-version=1", `"1" is not one of 0, 2`},
		{"set Bridge " + br + " other_config:rstp-ageing-time=300", `no other_config key "rstp-ageing-time"`},
		{"set Port " + p + " other_config:rstp-port-priority=100", `"100" is not a multiple of 16 from 0 to 240`},
		{"set Port " + p + " other_config:rstp-path-cost=0", `"0" is not a whole number from 1 to 200000000`},
		{"set Port " + p + " other_config:rstp-port-admin-edge=1", `"1" is not true or false`},
		{"set-stp " + br + " maybe", "want on or off"},
	} {
		stderr, code := d.xErr(t, strings.Fields(c.args)...)
		if code != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("xswitch %s: exit %d, %q; want exit 1 saying %q", c.args, code, stderr, c.want)
		}
	}
	if got := d.x(t, "get", "Bridge", br, "rstp_enable", "other_config"); got != "false\n{}\n" {
		t.Errorf("after refused sets: %q", got)
	}
	// Short timers that keep 17.14's rule are taken.
	d.x(t, "set", "Bridge", br, "other_config:rstp-max-age=6", "other_config:rstp-forward-delay=4", "rstp_enable=true")
	_, show := rstpPorts(t, d, br)
	if id := show.Bridges[0].BridgeID; id.MaxAge != 6 || id.ForwardDelay != 4 || id.HelloTime != 2 || id.Priority != 32768 {
		t.Errorf("rstp-show bridge id %+v; want max age 6, forward delay 4, hello 2, priority 32768", id)
	}
}

// TestRSTPWithALinuxBridgeRunningSTP joins xswitch and a Linux bridge with
// 802.1D STP (stp_state 1) by two links, a loop, with short timers on both
// sides. xswitch's ports hear configuration BPDUs and fall back to STP;
// with the Linux bridge the root, xswitch blocks one of its ports, and
// when xswitch becomes the root the Linux bridge blocks one of its own:
// each understood the other. Either way a broadcast from a host on
// xswitch reaches a host on the Linux bridge once, and pings pass.
func TestRSTPWithALinuxBridgeRunningSTP(t *testing.T) {
	testenv.RequireRoot(t)
	r := newRig(t, 1)
	d, br, host := r.d, r.br, r.hosts[0]
	d.x(t, "set", "Bridge", br, "rstp_enable=true", "other_config:rstp-max-age=6", "other_config:rstp-forward-delay=4")
	waitRSTP(t, d, br, 10*time.Second, map[string]string{host.name: "designated forwarding rstp"})

	// The Linux bridge, in a namespace of its own, root with priority 4096,
	// with an address, and a witness host on it.
	k := r.n.namespace(t, "k")
	nsRun(t, k, "ip", "link", "add", "kbr", "type", "bridge", "stp_state", "1",
		"forward_delay", "400", "hello_time", "200", "max_age", "600", "priority", "4096")
	kAddr := r.n.ipv4(9)
	nsRun(t, k, "ip", "addr", "add", kAddr+"/24", "dev", "kbr")
	nsRun(t, k, "ip", "link", "set", "kbr", "up")
	w := r.n.namespace(t, "w")
	nsRun(t, k, "ip", "link", "add", "kw", "type", "veth", "peer", "name", "eth0", "netns", w)
	nsRun(t, k, "ip", "link", "set", "kw", "master", "kbr", "up")
	nsRun(t, w, "ip", "link", "set", "eth0", "up")
	x1, x2 := r.n.name("x1"), r.n.name("x2")
	for i, x := range []string{x1, x2} {
		deleteLinkAtCleanup(t, x)
		peer := fmt.Sprintf("k%d", i+1)
		d.x(t, "add-port", br, x, "--netns", k, "--peer", peer)
		nsRun(t, k, "ip", "link", "set", peer, "master", "kbr")
	}

	// xswitch's ports migrate to STP; its better port to the root is its
	// root port, the other an alternate, discarding.
	waitRSTP(t, d, br, 30*time.Second, map[string]string{
		x1: "root forwarding stp", x2: "alternate discarding stp", host.name: "designated forwarding rstp",
	})
	kernelRoot := strings.TrimSpace(nsOut(t, k, "cat", "/sys/class/net/kbr/bridge/root_id"))
	_, show := rstpPorts(t, d, br)
	if root := show.Bridges[0].RootID.ID; root != kernelRoot || show.Bridges[0].RootPort != x1 {
		t.Errorf("xswitch's root is %s through %s; the Linux bridge says the root is %s", root, show.Bridges[0].RootPort, kernelRoot)
	}
	waitKernelPorts(t, k, 30*time.Second, map[string]string{"k1": "forwarding", "k2": "forwarding"})
	checkOnce(t, host, w, k, kAddr)

	// xswitch becomes the root: the Linux bridge must block one of its
	// two ports, which it can only do if it understood xswitch's BPDUs.
	d.x(t, "set", "Bridge", br, "other_config:rstp-priority=0")
	waitRSTP(t, d, br, 30*time.Second, map[string]string{x1: "designated forwarding stp", x2: "designated forwarding stp"})
	waitKernelPorts(t, k, 30*time.Second, map[string]string{"k1": "forwarding", "k2": "blocking"})
	_, show = rstpPorts(t, d, br)
	if kernelRoot := strings.TrimSpace(nsOut(t, k, "cat", "/sys/class/net/kbr/bridge/root_id")); !show.Bridges[0].IsRoot ||
		kernelRoot != show.Bridges[0].BridgeID.ID {
		t.Errorf("the Linux bridge takes %s for the root; xswitch is %s (root: %v)", kernelRoot, show.Bridges[0].BridgeID.ID, show.Bridges[0].IsRoot)
	}
	if out := d.x(t, "rstp-show", br); !strings.Contains(out, "STP") {
		t.Errorf("rstp-show does not show the ports speaking STP:\n%s", out)
	}
	checkOnce(t, host, w, k, kAddr)
}

// checkOnce wants host to reach the Linux bridge's address, and a
// broadcast of a made-up station behind host to reach the witness once.
func checkOnce(t *testing.T, host nsPort, witness, k, kAddr string) {
	t.Helper()
	waitPing(t, host.ns, kAddr, 10*time.Second)
	station := openRaw(t, host.ns, net.HardwareAddr{0x02, 0x00, 0x5e, 0x57, 0x90, 0x01})
	if got := copiesOf(t, station, witness, 20); got != 20 {
		t.Errorf("20 broadcasts reached the Linux bridge's host %d times; want each once", got)
	}
}

// nsOut runs a command inside namespace ns and returns its output.
func nsOut(t testing.TB, ns string, args ...string) string {
	t.Helper()
	return mustRun(t, "ip", append([]string{"netns", "exec", ns}, args...)...)
}

// kernelPortStates are the Linux bridge's port states by
// /sys/class/net/PORT/brport/state.
var kernelPortStates = []string{"disabled", "listening", "learning", "forwarding", "blocking"}

// waitKernelPorts polls the Linux bridge's ports in namespace k until
// they are in the states given.
func waitKernelPorts(t testing.TB, k string, within time.Duration, want map[string]string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := map[string]string{}
		ok := true
		for port, w := range want {
			var n int
			fmt.Sscan(nsOut(t, k, "cat", "/sys/class/net/"+port+"/brport/state"), &n)
			if n >= 0 && n < len(kernelPortStates) {
				got[port] = kernelPortStates[n]
			}
			ok = ok && got[port] == w
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Linux bridge's ports after %v: %v; want %v", within, got, want)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// TestRSTPPortSettings: a port's rstp-* keys take effect at once, before
// and while the bridge runs RSTP, and an excluded port always forwards.
func TestRSTPPortSettings(t *testing.T) {
	testenv.RequireRoot(t)
	r := newRig(t, 3)
	d, br, h1, h2, h3 := r.d, r.br, r.hosts[0], r.hosts[1], r.hosts[2]
	d.x(t, "set", "Port", h1.name, "other_config:rstp-port-admin-edge=true",
		"other_config:rstp-path-cost=12345", "other_config:rstp-port-priority=64")
	d.x(t, "set", "Port", h2.name, "other_config:rstp-enable=false")
	d.x(t, "set-stp", br, "on")
	// An admin edge port forwards at once; the excluded one never stopped.
	got, show := rstpPorts(t, d, br)
	if got[h1.name] != "designated forwarding rstp" {
		t.Errorf("the admin edge port is %q right after RSTP started; want designated forwarding", got[h1.name])
	}
	if _, in := got[h2.name]; in {
		t.Errorf("the port with rstp-enable=false takes part: %v", got)
	}
	requirePing(t, h1.ns, h2.addr, 56)
	for _, p := range show.Bridges[0].Ports {
		switch p.Name {
		case h1.name:
			if p.PathCost != 12345 || p.Priority != 64 || !p.Edge {
				t.Errorf("port %s: cost %d, priority %d, edge %v; want 12345, 64, true", p.Name, p.PathCost, p.Priority, p.Edge)
			}
		case h3.name:
			// A veth says it runs at 10 Gbit/s: 802.1D's cost for that.
			if p.PathCost != 2000 || p.Priority != 128 || p.Number != ofports(t, d, br)[h3.name] {
				t.Errorf("port %s: cost %d, priority %d, number %d; want 2000, 128 and its ofport", p.Name, p.PathCost, p.Priority, p.Number)
			}
		}
	}
	checkShownRSTP(t, d, br, map[string]string{h1.name: "designated forwarding rstp"})
	for _, b := range parseShow(t, d.x(t, "show")) {
		for _, p := range b.ports {
			if _, ok := p.attrs["rstp"]; ok && p.name == h2.name {
				t.Errorf("show gives the excluded port %s an rstp line", p.name)
			}
		}
	}
	// Taking part again, it starts discarding and is an edge port 3 s on.
	d.x(t, "remove", "Port", h2.name, "other_config", "rstp-enable")
	if got, _ := rstpPorts(t, d, br); got[h2.name] != "designated discarding rstp" {
		t.Errorf("a port that joins is %q; want designated discarding until it is found an edge", got[h2.name])
	}
	waitRSTP(t, d, br, 10*time.Second, map[string]string{h2.name: "designated forwarding rstp"})
	requirePing(t, h3.ns, h2.addr, 56)
}
