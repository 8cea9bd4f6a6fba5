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

// flood sends broadcasts from r for about d, in bursts, and returns how
// many it sent and for how long.
func flood(t *testing.T, r rawPort, d time.Duration) (sent int, took time.Duration) {
	t.Helper()
	bcast := ethFrame(net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, r.mac, 0x88b5, []byte("storm"))
	start := time.Now()
	for time.Since(start) < d {
		for range 100 {
			r.send(t, bcast)
		}
		sent += 100
		time.Sleep(time.Millisecond)
	}
	return sent, time.Since(start)
}

// stormDrops reads port's rx packets and storm drops from dump-ports.
func stormDrops(t *testing.T, d *daemon, br, port string) (rx, storm uint64) {
	t.Helper()
	var dump jsonDumpPorts
	d.xJSON(t, &dump, "dump-ports", br, port)
	return dump.Ports[0].RxPackets, dump.Ports[0].Drops.Storm
}

// TestStormLimitCapsBroadcastFlood floods broadcasts from a namespace
// whose port is limited to 1,000 frames/s: the other namespaces receive
// no more than the limit allows, and the switch counts the rest.
func TestStormLimitCapsBroadcastFlood(t *testing.T) {
	testenv.RequireRoot(t)
	r := newRig(t, 3)
	d, br, a, b, c := r.d, r.br, r.hosts[0], r.hosts[1], r.hosts[2]
	const limit = 1000
	d.x(t, "set", "Port", a.name, fmt.Sprintf("other_config:storm-limit=%d", limit))
	if got := strings.TrimSpace(d.x(t, "get", "Port", a.name, "other_config:storm-limit")); got != `"1000"` {
		t.Errorf(`get storm-limit = %s; want "1000"`, got)
	}
	for _, sb := range parseShow(t, d.x(t, "show")) {
		for _, p := range sb.ports {
			if p.name == a.name && p.attrs["storm limit"] != "1000 frames/s" {
				t.Errorf("show: port %s storm limit %q; want 1000 frames/s", p.name, p.attrs["storm limit"])
			}
		}
	}

	station := net.HardwareAddr{0x02, 0x00, 0x5e, 0x57, 0x00, 0x01}
	from := openRaw(t, a.ns, station)
	rx0, storm0 := stormDrops(t, d, br, a.name)
	atB, atC := startCounting(t, b.ns, station), startCounting(t, c.ns, station)
	sent, took := flood(t, from, 2*time.Second)
	// b and c still reach each other: only a's flooding is limited.
	requirePing(t, b.ns, c.addr, 56)
	time.Sleep(500 * time.Millisecond) // the last frames in flight
	gotB, gotC := atB.count(t), atC.count(t)
	rx1, storm1 := stormDrops(t, d, br, a.name)

	// At most the burst (one second's worth) plus the rate over the
	// window, with half as much again for the window's edges; at least
	// half the burst, or the limit dropped everything.
	window := took + 500*time.Millisecond
	most := int(limit*window.Seconds()*1.5) + limit
	t.Logf("sent %d broadcasts in %v; %d and %d arrived; the switch received %d and dropped %d at the limit",
		sent, took, gotB, gotC, rx1-rx0, storm1-storm0)
	for name, got := range map[string]int{b.ns: gotB, c.ns: gotC} {
		if got > most || got < limit/2 {
			t.Errorf("%s received %d of %d flooded broadcasts in %v; want between %d and %d", name, got, sent, window, limit/2, most)
		}
	}
	passed := (rx1 - rx0) - (storm1 - storm0)
	if storm1 == storm0 || passed > uint64(most)+50 { // 50: the namespaces' own ARP and ND
		t.Errorf("port %s received %d frames and dropped %d at the storm limit: %d passed; want at most %d",
			a.name, rx1-rx0, storm1-storm0, passed, most)
	}

	// Saved, and lifted by remove.
	d.stop(t, syscall.SIGTERM)
	d.start(t)
	waitPing(t, b.ns, c.addr, 10*time.Second)
	if got := strings.TrimSpace(d.x(t, "get", "Port", a.name, "other_config")); got != `{storm-limit="1000"}` {
		t.Errorf("after a restart, get other_config = %s", got)
	}
	d.x(t, "remove", "Port", a.name, "other_config", "storm-limit")
	_, storm2 := stormDrops(t, d, br, a.name)
	bcast := ethFrame(net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, station, 0x88b5, []byte("no limit"))
	atB = startCounting(t, b.ns, station)
	for range 3 * limit {
		from.send(t, bcast)
	}
	time.Sleep(500 * time.Millisecond)
	if got := atB.count(t); got < 2*limit {
		t.Errorf("without a limit, %d of %d broadcasts sent at once arrived; want most of them", got, 3*limit)
	}
	if _, storm3 := stormDrops(t, d, br, a.name); storm3 != storm2 {
		t.Errorf("storm drops went from %d to %d without a limit", storm2, storm3)
	}
}

func TestStormLimitIsValidated(t *testing.T) {
	testenv.RequireRoot(t)
	r := newRig(t, 1)
	p := r.hosts[0].name
	for _, v := range []string{"-1", "fast", "1000000001", "1.5"} {
		stderr, _ := r.d.xErr(t, "set", "Port", p, "other_config:storm-limit="+v)
		if !strings.Contains(stderr, "not a number of frames per second") {
			t.Errorf("storm-limit=%s: %q; want it refused", v, stderr)
		}
	}
	if stderr, _ := r.d.xErr(t, "set", "Port", p+"x", "other_config:storm-limit=1"); !strings.Contains(stderr, `no row "`+p+`x" in table Port`) {
		t.Errorf("set on a missing port: %q", stderr)
	}
}
