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

// linkLocalFrames are frames to IEEE 802.1D's reserved group addresses,
// one of each protocol a tester sees leak, and Cisco's CDP, from src.
func linkLocalFrames(src net.HardwareAddr) map[string][]byte {
	mac := func(s string) net.HardwareAddr {
		m, _ := net.ParseMAC(s)
		return m
	}
	llc := func(dsap, ssap byte, body ...byte) []byte { return append([]byte{dsap, ssap, 0x03}, body...) }
	stp := llc(0x42, 0x42, make([]byte, 35)...) // a configuration BPDU of zeros
	cdp := llc(0xaa, 0xaa, 0x00, 0x00, 0x0c, 0x20, 0x00)
	return map[string][]byte{
		"STP":   ethFrame(mac("01:80:c2:00:00:00"), src, uint16(len(stp)), stp),
		"PAUSE": ethFrame(mac("01:80:c2:00:00:01"), src, 0x8808, []byte{0x00, 0x01, 0x00, 0x00}),
		"LACP":  ethFrame(mac("01:80:c2:00:00:02"), src, 0x8809, []byte{0x01, 0x01}),
		"EAPOL": ethFrame(mac("01:80:c2:00:00:03"), src, 0x888e, []byte{0x02, 0x01, 0x00, 0x00}),
		"LLDP":  ethFrame(mac("01:80:c2:00:00:0e"), src, 0x88cc, []byte{0x02, 0x07, 0x04}),
		"CDP":   ethFrame(mac("01:00:0c:cc:cc:cc"), src, uint16(len(cdp)), cdp),
	}
}

// sendLinkLocal sends each link-local frame three times from from, then a
// broadcast that NORMAL always floods, and returns what reached to, by
// destination: the broadcast says the path worked.
func sendLinkLocal(t *testing.T, from, to rawPort) map[string]int {
	t.Helper()
	frames := linkLocalFrames(from.mac)
	bcast := net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	for range 3 {
		for _, f := range frames {
			from.send(t, f)
		}
	}
	from.send(t, ethFrame(bcast, from.mac, 0x88b5, []byte("the path works")))
	got := to.arrivals(t, from.mac, 5*time.Second, func(c map[string]int) bool { return c[bcast.String()] > 0 })
	if got[bcast.String()] == 0 {
		t.Fatalf("the broadcast sent after the link-local frames never arrived: the capture proves nothing (got %v)", got)
	}
	return got
}

// TestReservedFramesAreNotForwarded sends STP, PAUSE, LACP, EAPOL, LLDP and
// CDP frames from one namespace: NORMAL drops them and counts the drops, as
// OVS does, until other_config:forward-bpdu=true lets them through.
func TestReservedFramesAreNotForwarded(t *testing.T) {
	testenv.RequireRoot(t)
	r := newRig(t, 2)
	d, br, a, b := r.d, r.br, r.hosts[0], r.hosts[1]
	station := net.HardwareAddr{0x02, 0x00, 0x5e, 0x77, 0x00, 0x01}
	from, to := openRaw(t, a.ns, station), openRaw(t, b.ns, nil)
	frames := linkLocalFrames(station)

	got := sendLinkLocal(t, from, to)
	for proto, f := range frames {
		if n := got[net.HardwareAddr(f[:6]).String()]; n != 0 {
			t.Errorf("%d %s frames (to %s) crossed the bridge; want none", n, proto, net.HardwareAddr(f[:6]))
		}
	}
	in := ofports(t, d, br)[a.name]
	var dump jsonDumpPorts
	d.xJSON(t, &dump, "dump-ports", br, a.name)
	if want := uint64(3 * len(frames)); dump.Ports[0].Drops.Reserved != want || dump.Ports[0].RxDropped < want {
		t.Errorf("dump-ports: port %s drops %+v, rx_dropped %d; want %d reserved drops, counted in rx_dropped",
			a.name, dump.Ports[0].Drops, dump.Ports[0].RxDropped, want)
	}
	if text := d.x(t, "dump-ports", br, a.name); !strings.Contains(text, "reserved=18, storm=0") {
		t.Errorf("dump-ports text does not say reserved=18, storm=0:\n%s", text)
	}
	if out := d.x(t, "trace", br, fmt.Sprintf("in_port=%d,dl_dst=01:80:c2:00:00:0e", in)); !strings.Contains(out, "reserved group address: dropped") ||
		!strings.Contains(out, "Datapath actions: drop") {
		t.Errorf("trace of an LLDP frame does not say NORMAL drops it:\n%s", out)
	}

	if got := strings.TrimSpace(d.x(t, "get", "Bridge", br, "other_config")); got != "{}" {
		t.Errorf("get other_config of a new bridge = %q; want {}", got)
	}
	d.x(t, "set", "Bridge", br, "other_config:forward-bpdu=true")
	if got := strings.TrimSpace(d.x(t, "get", "Bridge", br, "other_config:forward-bpdu")); got != `"true"` {
		t.Errorf(`get other_config:forward-bpdu = %q; want "true", quoted as ovs-vsctl prints it`, got)
	}
	wantAll := func(when string) {
		t.Helper()
		got := sendLinkLocal(t, from, to)
		for proto, f := range frames {
			if n := got[net.HardwareAddr(f[:6]).String()]; n != 3 {
				t.Errorf("%s: %d of 3 %s frames crossed the bridge with forward-bpdu=true", when, n, proto)
			}
		}
	}
	wantAll("after set")
	if out := d.x(t, "trace", br, fmt.Sprintf("in_port=%d,dl_dst=01:80:c2:00:00:0e", in)); strings.Contains(out, "reserved") {
		t.Errorf("trace with forward-bpdu=true still drops LLDP:\n%s", out)
	}

	// Saved: a restarted daemon still forwards them.
	d.stop(t, syscall.SIGTERM)
	d.start(t)
	waitPing(t, a.ns, b.addr, 10*time.Second)
	if got := d.x(t, "get", "Bridge", br, "other_config"); got != "{forward-bpdu=\"true\"}\n" {
		t.Errorf("get other_config after a restart = %q; want {forward-bpdu=\"true\"}", got)
	}
	wantAll("after a restart")

	d.x(t, "remove", "Bridge", br, "other_config", "forward-bpdu")
	if got := sendLinkLocal(t, from, to); got["01:80:c2:00:00:0e"] != 0 {
		t.Errorf("after remove other_config forward-bpdu, %d LLDP frames crossed; want none", got["01:80:c2:00:00:0e"])
	}
}

// TestSetAndGetRefuseWhatTheyDoNotKnow: bad database commands change
// nothing and say what is wrong.
func TestSetAndGetRefuseWhatTheyDoNotKnow(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	br := newTestNet().name("br")
	d.x(t, "add-br", br)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"set", "Brige", br, "other_config:forward-bpdu=true"}, `unknown table "Brige"`},
		{[]string{"set", "Bridge", br + "x", "other_config:forward-bpdu=true"}, `no row "` + br + `x" in table Bridge`},
		{[]string{"set", "Bridge", br, "stp_enable=true"}, `Bridge does not contain a column whose name matches "stp_enable"`},
		{[]string{"set", "Bridge", br, "other_config:forward-bdpu=true"}, `no other_config key "forward-bdpu"`},
		{[]string{"set", "Bridge", br, "other_config:forward-bpdu=yes"}, `"yes" is not true or false`},
		{[]string{"set", "Bridge", br, "other_config:forward-bpdu"}, "COLUMN=VALUE"},
		{[]string{"set", "Bridge", br, "other_config=true"}, "whole other_config column"},
		{[]string{"get", "Bridge", br, "other_config:forward-bpdu"}, `no key "forward-bpdu" in Bridge record "` + br + `" column other_config`},
		// Nothing is applied when one setting of several is wrong.
		{[]string{"set", "Bridge", br, "other_config:forward-bpdu=true", "other_config:forward-bpdu=maybe"}, `"maybe" is not true or false`},
	} {
		stderr, code := d.xErr(t, c.args...)
		if code != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("xswitch %s: exit %d, %q; want exit 1 saying %q", strings.Join(c.args, " "), code, stderr, c.want)
		}
	}
	if got := d.x(t, "get", "Bridge", br, "other_config"); got != "{}\n" {
		t.Errorf("after refused sets, get other_config = %q; want {}", got)
	}
	var got struct {
		Table  string         `json:"table"`
		Record string         `json:"record"`
		Values map[string]any `json:"values"`
	}
	d.x(t, "set", "Bridge", br, "other_config:forward-bpdu=false")
	d.xJSON(t, &got, "get", "bridge", br, "other_config:forward-bpdu", "other_config")
	if got.Record != br || got.Values["other_config:forward-bpdu"] != "false" || len(got.Values) != 2 {
		t.Errorf("get --format json = %+v; want forward-bpdu \"false\" and other_config", got)
	}
}
