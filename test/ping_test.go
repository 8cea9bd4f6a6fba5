package test

import (
	"strings"
	"testing"
	"time"

	"github.com/xswitch/xswitch/internal/testenv"
)

// pingSizes are ICMP payload sizes: one frame, and IP fragmented into two
// and three frames on a 1500-byte MTU.
var pingSizes = []struct{ size, frames int }{{56, 1}, {1600, 2}, {3200, 3}}

func TestPingAllPairs(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	n := newTestNet()
	br := n.name("br")
	d.x(t, "add-br", br)
	var ports []nsPort
	for i := 1; i <= 3; i++ {
		ports = append(ports, addNSPort(t, d, n, br, i, false))
	}

	for _, from := range ports {
		for _, to := range ports {
			if from != to {
				waitPing(t, from.ns, to.addr, 5*time.Second)
			}
		}
	}
	for _, s := range pingSizes {
		for _, from := range ports {
			for _, to := range ports {
				if from != to {
					requirePing(t, from.ns, to.addr, s.size)
				}
			}
		}
	}
	if t.Failed() {
		return
	}

	// Each namespace sent 3 requests of every size to each of 2 peers and
	// answered as many: that many frames, at least, crossed its port each way.
	var framesPerSizeRound int
	for _, s := range pingSizes {
		framesPerSizeRound += s.frames
	}
	minFrames := uint64(2 * 3 * framesPerSizeRound * 2)
	numbers := ofports(t, d, br)
	counters := dumpPorts(t, d, br)
	if len(counters) != len(ports) {
		t.Errorf("dump-ports lists %d ports, want %d", len(counters), len(ports))
	}
	for _, p := range ports {
		ofport, ok := numbers[p.name]
		if !ok {
			t.Fatalf("xswitch show does not list port %s", p.name)
		}
		c, ok := counters[ofport]
		if !ok {
			t.Errorf("dump-ports has no port %d (%s)", ofport, p.name)
			continue
		}
		if c.rxPkts < minFrames || c.txPkts < minFrames {
			t.Errorf("port %d (%s): rx pkts=%d, tx pkts=%d, want at least %d each way", ofport, p.name, c.rxPkts, c.txPkts, minFrames)
		}
		// 42 bytes is the smallest frame here (an ARP request).
		if c.rxBytes < 42*c.rxPkts || c.txBytes < 42*c.txPkts {
			t.Errorf("port %d (%s): rx %d pkts in %d bytes, tx %d pkts in %d bytes: fewer than 42 bytes a frame",
				ofport, p.name, c.rxPkts, c.rxBytes, c.txPkts, c.txBytes)
		}
	}

	fdb := fdbShow(t, d, br)
	if len(fdb) != len(ports) {
		t.Errorf("fdb-show lists %d MACs, want %d: %+v", len(fdb), len(ports), fdb)
	}
	learned := map[string]fdbEntry{}
	for _, e := range fdb {
		learned[e.mac] = e
	}
	for _, p := range ports {
		mac := nsMAC(t, p.ns, "eth0")
		e, ok := learned[mac]
		switch {
		case !ok:
			t.Errorf("fdb-show lacks %s (eth0 of %s behind port %s): %+v", mac, p.ns, p.name, fdb)
		case e.port != numbers[p.name] || e.vlan != 0:
			t.Errorf("fdb-show has %s on port %d vlan %d, want port %d (%s) vlan 0", mac, e.port, e.vlan, numbers[p.name], p.name)
		}
	}
}

func TestIPv6Ping(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	n := newTestNet()
	br := n.name("br")
	d.x(t, "add-br", br)
	a := addNSPort(t, d, n, br, 1, true)
	b := addNSPort(t, d, n, br, 2, true)

	for _, p := range []nsPort{a, b} {
		addrs := mustRun(t, "ip", "netns", "exec", p.ns, "ip", "-6", "-o", "addr", "show", "dev", "eth0")
		if !strings.Contains(addrs, p.addr+"/64") {
			t.Fatalf("eth0 in %s lacks %s/64:\n%s", p.ns, p.addr, addrs)
		}
		waitNoTentative(t, p.ns, 5*time.Second)
	}
	waitPing(t, a.ns, b.addr, 5*time.Second)
	for _, size := range []int{56, 3200} {
		requirePing(t, a.ns, b.addr, size)
		requirePing(t, b.ns, a.addr, size)
	}
}

// waitNoTentative waits until duplicate address detection has finished on
// eth0 in ns: until then the kernel will not use the address.
func waitNoTentative(t testing.TB, ns string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		out := mustRun(t, "ip", "netns", "exec", ns, "ip", "-6", "-o", "addr", "show", "dev", "eth0", "tentative")
		if strings.TrimSpace(out) == "" {
			return
		}
		if strings.Contains(out, "dadfailed") {
			t.Fatalf("duplicate address detection failed on eth0 in %s:\n%s", ns, out)
		}
		if time.Now().After(deadline) {
			t.Fatalf("IPv6 address of eth0 in %s still tentative after %v:\n%s", ns, within, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
