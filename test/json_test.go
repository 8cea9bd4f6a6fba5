package test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xswitch/xswitch/internal/testenv"
)

// The schema of --format json, as the README documents it. The test
// decodes into these types with unknown fields refused, so that a field
// renamed in the CLI fails here as it would fail a script.

type jsonShow struct {
	Bridges []struct {
		Name string `json:"name"`
		// OpenFlow (test/controller_test.go).
		DatapathID  string `json:"datapath_id"`
		Controllers []struct {
			Target      string `json:"target"`
			IsConnected bool   `json:"is_connected"`
			Role        string `json:"role"`
		} `json:"controllers"`
		FailMode string `json:"fail_mode"`
		Ports    []struct {
			Name    string `json:"name"`
			OFPort  int    `json:"ofport"`
			State   string `json:"state"`
			Error   string `json:"error"`
			Mode    string `json:"mode"`
			Type    string `json:"type"`
			XDP     string `json:"xdp"`
			Bind    string `json:"bind"`
			Queues  int    `json:"queues"`
			Netns   string `json:"netns"`
			Peer    string `json:"peer"`
			Address string `json:"address"`
			// VLANs (test/vlan_test.go).
			VLANMode string   `json:"vlan_mode"`
			Tag      uint16   `json:"tag"`
			Trunks   []uint16 `json:"trunks"`
			// Storm limit (test/storm_test.go).
			StormLimit uint64 `json:"storm_limit"`
			// RSTP (test/rstp_test.go).
			RSTPRole  string `json:"rstp_role"`
			RSTPState string `json:"rstp_state"`
			// MTUs (test/jumbo_test.go).
			MTU      int    `json:"mtu"`
			MaxFrame int    `json:"max_frame"`
			Warning  string `json:"warning"`
			// The fast path (test/fastpath_test.go).
			FastPath string `json:"fastpath"`
			// Tunnels (test/tunnel_test.go).
			PortType string          `json:"port_type"`
			RemoteIP string          `json:"remote_ip"`
			LocalIP  string          `json:"local_ip"`
			Key      string          `json:"key"`
			DstPort  uint16          `json:"dst_port"`
			Tunnel   *jsonShowTunnel `json:"tunnel"`
		} `json:"ports"`
	} `json:"bridges"`
}

type jsonShowTunnel struct {
	Underlay    string `json:"underlay"`
	XDP         string `json:"xdp"`
	Bind        string `json:"bind"`
	LocalIP     string `json:"local_ip"`
	NextHop     string `json:"next_hop"`
	NextHopMAC  string `json:"next_hop_mac"`
	Unreachable string `json:"unreachable"`
}

type jsonBridgeList struct {
	Bridges []string `json:"bridges"`
}

type jsonPortList struct {
	Bridge string   `json:"bridge"`
	Ports  []string `json:"ports"`
}

type jsonDumpPorts struct {
	Bridge string `json:"bridge"`
	Ports  []struct {
		Name      string `json:"name"`
		OFPort    int    `json:"ofport"`
		RxPackets uint64 `json:"rx_packets"`
		RxBytes   uint64 `json:"rx_bytes"`
		RxDropped uint64 `json:"rx_dropped"`
		RxErrors  uint64 `json:"rx_errors"`
		TxPackets uint64 `json:"tx_packets"`
		TxBytes   uint64 `json:"tx_bytes"`
		TxDropped uint64 `json:"tx_dropped"`
		TxErrors  uint64 `json:"tx_errors"`
		XSK       struct {
			RxDropped     uint64 `json:"rx_dropped"`
			RxRingFull    uint64 `json:"rx_ring_full"`
			FillRingEmpty uint64 `json:"fill_ring_empty"`
			RxInvalid     uint64 `json:"rx_invalid"`
			TxInvalid     uint64 `json:"tx_invalid"`
			TxRingEmpty   uint64 `json:"tx_ring_empty"`
			RxOversize    uint64 `json:"rx_oversize"`
			TxRefused     uint64 `json:"tx_refused"`
		} `json:"xsk"`
		// NORMAL's drops by reason (test/reserved_test.go).
		Drops struct {
			VLAN     uint64 `json:"vlan"`
			Reserved uint64 `json:"reserved"`
			Storm    uint64 `json:"storm"` // test/storm_test.go
			STP      uint64 `json:"stp"`   // test/rstp_test.go
			// test/tunnel_test.go
			SplitHorizon uint64 `json:"split_horizon"`
		} `json:"drops"`
		// The pipeline's drops of the frames received on the port, by
		// reason (test/pipeline_test.go).
		PipelineDrops map[string]uint64 `json:"pipeline_drops"`
		// Redirects the interface did not take (test/fastpath_test.go).
		FastPathTxDropped uint64 `json:"fastpath_tx_dropped"`
		// A tunnel's drops and its underlay's (test/tunnel_test.go).
		Tunnel *struct {
			Underlay      string `json:"underlay"`
			TxOversize    uint64 `json:"tx_oversize"`
			TxNoRoute     uint64 `json:"tx_no_route"`
			UnderlayDrops struct {
				NotTunnel     uint64 `json:"not_tunnel"`
				BadOuter      uint64 `json:"bad_outer"`
				Fragment      uint64 `json:"fragment"`
				BadHeader     uint64 `json:"bad_header"`
				CriticalOpt   uint64 `json:"critical_option"`
				ShortInner    uint64 `json:"short_inner"`
				UnknownRemote uint64 `json:"unknown_remote"`
				WrongKey      uint64 `json:"wrong_key"`
			} `json:"underlay_drops"`
		} `json:"tunnel"`
	} `json:"ports"`
}

type jsonFDB struct {
	Bridge  string `json:"bridge"`
	Entries []struct {
		Port int    `json:"port"`
		VLAN int    `json:"vlan"`
		MAC  string `json:"mac"`
		Age  int    `json:"age"`
	} `json:"entries"`
}

type jsonFlow struct {
	Cookie      string  `json:"cookie"`
	Duration    float64 `json:"duration"`
	Table       int     `json:"table"`
	Priority    int     `json:"priority"`
	Match       string  `json:"match"`
	Actions     string  `json:"actions"`
	Packets     uint64  `json:"n_packets"`
	Bytes       uint64  `json:"n_bytes"`
	IdleTimeout int     `json:"idle_timeout"`
	HardTimeout int     `json:"hard_timeout"`
	IdleAge     int     `json:"idle_age"`
	Text        string  `json:"text"`
}

type jsonFlows struct {
	Bridge string     `json:"bridge"`
	Flows  []jsonFlow `json:"flows"`
}

type jsonTrace struct {
	Bridge string    `json:"bridge"`
	Flow   string    `json:"flow"`
	Rule   *jsonFlow `json:"rule"`
	Steps  []struct {
		Action string    `json:"action"`
		Lookup bool      `json:"lookup"`
		Rule   *jsonFlow `json:"rule"`
		Table  int       `json:"table"`
		Depth  int       `json:"depth"`
		Notes  []string  `json:"notes"`
	} `json:"steps"`
	FinalFlow string `json:"final_flow"`
	Outputs   []int  `json:"outputs"`
	Dropped   string `json:"dropped"` // test/rstp_test.go
	FastPath  string `json:"fastpath"`
}

type jsonPMDStats struct {
	Bridges []struct {
		Name            string            `json:"name"`
		PacketsReceived uint64            `json:"packets_received"`
		Flows           int               `json:"flows"`
		CacheHits       uint64            `json:"cache_hits"`
		CacheMisses     uint64            `json:"cache_misses"`
		CacheStale      uint64            `json:"cache_stale"`
		PipelineDrops   map[string]uint64 `json:"pipeline_drops"`
		Forwarder       struct {
			CPUs     []int   `json:"cpus"`
			BusyPoll bool    `json:"busy_poll"`
			BusySec  float64 `json:"busy_seconds"`
			IdleSec  float64 `json:"idle_seconds"`
		} `json:"forwarder"`
		FastPath *struct {
			Hits            uint64            `json:"hits"`
			Installs        uint64            `json:"installs"`
			InstallFailures uint64            `json:"install_failures"`
			Evictions       uint64            `json:"evictions"`
			Entries         int               `json:"entries"`
			Drops           map[string]uint64 `json:"drops"`
		} `json:"fastpath"`
	} `json:"bridges"`
}

// jsonFastPath is dump-fastpath's JSON.
type jsonFastPath struct {
	Bridge  string `json:"bridge"`
	Entries []struct {
		Flow    string  `json:"flow"`
		Actions string  `json:"actions"`
		Packets uint64  `json:"packets"`
		Bytes   uint64  `json:"bytes"`
		Used    float64 `json:"used"`
		Stale   bool    `json:"stale"`
	} `json:"entries"`
}

type jsonTop struct {
	Time     time.Time `json:"time"`
	Interval float64   `json:"interval"`
	Ports    []struct {
		Bridge    string  `json:"bridge"`
		Name      string  `json:"name"`
		OFPort    int     `json:"ofport"`
		RxPackets float64 `json:"rx_packets_per_sec"`
		RxBits    float64 `json:"rx_bits_per_sec"`
		TxPackets float64 `json:"tx_packets_per_sec"`
		TxBits    float64 `json:"tx_bits_per_sec"`
		RxDropped float64 `json:"rx_dropped_per_sec"`
		TxDropped float64 `json:"tx_dropped_per_sec"`
		Errors    float64 `json:"errors_per_sec"`
	} `json:"ports"`
}

// decodeStrict decodes one JSON document, refusing fields v does not
// name and anything after the document.
func decodeStrict(t testing.TB, what, data string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, data)
	}
	if dec.More() {
		t.Fatalf("%s: more than one JSON document:\n%s", what, data)
	}
}

// xJSON runs a read verb with --format json and decodes its output.
func (d *daemon) xJSON(t testing.TB, v any, args ...string) string {
	t.Helper()
	out := d.x(t, append(args, "--format", "json")...)
	decodeStrict(t, "xswitch "+strings.Join(args, " ")+" --format json", out, v)
	return out
}

// pingedBridge is a bridge with two namespace ports that have pinged each
// other, so that counters, flows and the MAC table hold something.
type pingedBridge struct {
	d    *daemon
	br   string
	a, b nsPort
}

func newPingedBridge(t *testing.T) pingedBridge {
	t.Helper()
	r := newRig(t, 2)
	d, br, a, b := r.d, r.br, r.hosts[0], r.hosts[1]
	requirePing(t, a.ns, b.addr, 56)
	return pingedBridge{d: d, br: br, a: a, b: b}
}

func TestJSONOutput(t *testing.T) {
	testenv.RequireRoot(t)
	pb := newPingedBridge(t)
	d, br, a, b := pb.d, pb.br, pb.a, pb.b
	empty := br + "e"
	d.x(t, "add-br", empty)

	var show jsonShow
	d.xJSON(t, &show, "show")
	if len(show.Bridges) != 2 {
		t.Fatalf("show: %d bridges, want 2: %+v", len(show.Bridges), show)
	}
	ofport := map[string]int{}
	for _, sb := range show.Bridges {
		if sb.Name != br {
			continue
		}
		if len(sb.Ports) != 2 {
			t.Fatalf("show: bridge %s has %d ports, want 2: %+v", br, len(sb.Ports), sb.Ports)
		}
		for _, p := range sb.Ports {
			ofport[p.Name] = p.OFPort
			want := map[string]nsPort{a.name: a, b.name: b}[p.Name]
			if p.State != "up" || p.Type != "afxdp" || p.XDP == "" || p.Bind == "" || p.Queues < 1 ||
				p.Mode != "auto" || p.Netns != want.ns || p.Peer != "eth0" || !strings.HasPrefix(p.Address, want.addr+"/") {
				t.Errorf("show: port %+v, want an up afxdp port in %s at %s", p, want.ns, want.addr)
			}
			if wantFP := map[bool]string{false: "on", true: "off (the daemon runs with --fast-path off)"}[fastPathOff()]; p.FastPath != wantFP {
				t.Errorf("show: port %s has fastpath %q, want %q", p.Name, p.FastPath, wantFP)
			}
		}
	}
	if ofport[a.name] == 0 || ofport[b.name] == 0 || ofport[a.name] == ofport[b.name] {
		t.Fatalf("show: OpenFlow ports %v for %s and %s", ofport, a.name, b.name)
	}

	var bridges jsonBridgeList
	d.xJSON(t, &bridges, "list-br")
	if want := []string{br, empty}; !slices.Equal(bridges.Bridges, want) {
		t.Errorf("list-br: %q, want %q", bridges.Bridges, want)
	}

	var ports jsonPortList
	d.xJSON(t, &ports, "list-ports", br)
	if want := []string{a.name, b.name}; ports.Bridge != br || !slices.Equal(ports.Ports, want) {
		t.Errorf("list-ports: %+v, want bridge %s with %q", ports, br, want)
	}
	// Empty lists are [] rather than null, so that `jq '.ports | length'`
	// works: every verb's list, on a bridge with no ports, no rules, no
	// controllers and nothing learned or carried.
	d.x(t, "del-flows", empty)
	d.x(t, "set", "Bridge", empty, "rstp_enable=true")
	for _, verb := range [][]string{
		{"list-ports", empty}, {"dump-ports", empty}, {"fdb-show", empty}, {"dump-flows", empty},
		{"dump-fastpath", empty}, {"get-controller", empty}, {"rstp-show", empty}, {"top", empty, "--count", "1"},
	} {
		out := d.x(t, append(verb, "--format", "json")...)
		if strings.Contains(out, "null") || !strings.Contains(out, "[]") {
			t.Errorf("%s on an empty bridge: want an empty list [], got:\n%s", strings.Join(verb, " "), out)
		}
	}

	var dump jsonDumpPorts
	d.xJSON(t, &dump, "dump-ports", br)
	if dump.Bridge != br || len(dump.Ports) != 2 {
		t.Fatalf("dump-ports: %+v, want 2 ports of %s", dump, br)
	}
	for _, p := range dump.Ports {
		// 3 echo requests and 3 replies at least, of at least 42 bytes each.
		if p.RxPackets < 3 || p.TxPackets < 3 || p.RxBytes < 42*p.RxPackets || p.TxBytes < 42*p.TxPackets {
			t.Errorf("dump-ports: port %s: rx %d pkts %d bytes, tx %d pkts %d bytes", p.Name, p.RxPackets, p.RxBytes, p.TxPackets, p.TxBytes)
		}
		if p.OFPort != ofport[p.Name] {
			t.Errorf("dump-ports: port %s is ofport %d, show says %d", p.Name, p.OFPort, ofport[p.Name])
		}
	}
	var one jsonDumpPorts
	d.xJSON(t, &one, "dump-ports", br, b.name)
	if len(one.Ports) != 1 || one.Ports[0].Name != b.name {
		t.Errorf("dump-ports %s %s: %+v, want that port alone", br, b.name, one)
	}

	var fdb jsonFDB
	d.xJSON(t, &fdb, "fdb-show", br)
	wantFDB := map[string]int{nsMAC(t, a.ns, "eth0"): ofport[a.name], nsMAC(t, b.ns, "eth0"): ofport[b.name]}
	if fdb.Bridge != br || len(fdb.Entries) != 2 {
		t.Errorf("fdb-show: %+v, want 2 entries of %s", fdb, br)
	}
	for _, e := range fdb.Entries {
		if wantFDB[e.MAC] != e.Port || e.VLAN != 0 {
			t.Errorf("fdb-show: %s on port %d VLAN %d, want port %d VLAN 0", e.MAC, e.Port, e.VLAN, wantFDB[e.MAC])
		}
	}

	var flows jsonFlows
	d.xJSON(t, &flows, "dump-flows", br)
	if flows.Bridge != br || len(flows.Flows) != 1 {
		t.Fatalf("dump-flows: %+v, want the one default rule", flows)
	}
	if f := flows.Flows[0]; f.Actions != "NORMAL" || f.Priority != 0 || f.Match != "" || f.Cookie != "0x0" ||
		f.Packets < 6 || f.Bytes < 42*f.Packets || !strings.Contains(f.Text, "actions=NORMAL") {
		t.Errorf("dump-flows: %+v, want priority=0,actions=NORMAL having matched the pings", f)
	}

	packet := fmt.Sprintf("in_port=%d,dl_src=%s,dl_dst=%s", ofport[a.name], nsMAC(t, a.ns, "eth0"), nsMAC(t, b.ns, "eth0"))
	var tr jsonTrace
	d.xJSON(t, &tr, "trace", br, packet)
	if tr.Bridge != br || tr.Rule == nil || tr.Rule.Actions != "NORMAL" || len(tr.Steps) != 2 ||
		!tr.Steps[0].Lookup || tr.Steps[0].Rule == nil || tr.Steps[0].Rule.Actions != "NORMAL" ||
		tr.Steps[1].Action != "NORMAL" || !slices.Equal(tr.Outputs, []int{ofport[b.name]}) {
		t.Errorf("trace %s: %+v, want NORMAL sending to the learned port %d", packet, tr, ofport[b.name])
	}

	var pmd jsonPMDStats
	d.xJSON(t, &pmd, "pmd-stats-show", br)
	if len(pmd.Bridges) != 1 || pmd.Bridges[0].Name != br || pmd.Bridges[0].PacketsReceived < 6 || pmd.Bridges[0].Flows != 1 ||
		pmd.Bridges[0].Forwarder.BusySec <= 0 || pmd.Bridges[0].Forwarder.BusyPoll {
		t.Errorf("pmd-stats-show: %+v, want bridge %s with 1 flow, the pings received, and a forwarder that has worked and sleeps when idle", pmd, br)
	}
	if fp := pmd.Bridges[0].FastPath; (fp != nil) == fastPathOff() || fp != nil && fp.Installs == 0 {
		t.Errorf("pmd-stats-show: fast path %+v, want one with entries installed unless the fast path is off", fp)
	}

	// Errors stay text on stderr, with nothing on stdout, and exit 1;
	// no daemon exits 2.
	r := xswitch(t, d.sock, "dump-ports", br+"x", "--format", "json")
	if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, br+"x") {
		t.Errorf("dump-ports of a missing bridge: exit %d, stdout %q, stderr %q; want exit 1 naming it on stderr", r.code, r.stdout, r.stderr)
	}
	r = xswitch(t, d.sock, "show", "--format", "yaml")
	if r.code != 1 || !strings.Contains(r.stderr, `unknown --format "yaml"`) {
		t.Errorf("show --format yaml: exit %d, stderr %q; want exit 1, unknown format", r.code, r.stderr)
	}
	r = xswitch(t, d.sock+".none", "show", "--format", "json")
	if r.code != 2 || r.stdout != "" {
		t.Errorf("show without a daemon: exit %d, stdout %q; want exit 2 and nothing on stdout", r.code, r.stdout)
	}
}

func TestTopShowsPortRates(t *testing.T) {
	testenv.RequireRoot(t)
	pb := newPingedBridge(t)
	d, br := pb.d, pb.br
	// Traffic while top watches: 100 echo requests over about 2 seconds.
	pinger := startBackground(t, "ip", "netns", "exec", pb.a.ns, "ping", "-n", "-q", "-c", "100", "-i", "0.02", pb.b.addr)

	out := d.x(t, "top", br, "--count", "2", "--interval", "200ms")
	if strings.Contains(out, "\x1b[") {
		t.Errorf("top into a pipe redraws the screen with escape codes:\n%q", out)
	}
	blocks := strings.Split(strings.TrimSpace(out), "\n\n")
	if len(blocks) != 2 {
		t.Fatalf("top --count 2: %d blocks, want 2:\n%s", len(blocks), out)
	}
	for _, block := range blocks {
		lines := strings.Split(block, "\n")
		if len(lines) != 4 || !strings.HasPrefix(lines[1], "BRIDGE") {
			t.Fatalf("top: want a time line, a header and a line per port:\n%s", block)
		}
		seen := map[string]bool{}
		for _, line := range lines[2:] {
			fields := strings.Fields(line)
			if len(fields) != 10 || fields[0] != br {
				t.Fatalf("top: line %q: want bridge, port, ofport and 7 rates", line)
			}
			for _, f := range fields[2:] {
				var v float64
				if _, err := fmt.Sscan(f, &v); err != nil || v < 0 {
					t.Errorf("top: line %q: %q is not a rate", line, f)
				}
			}
			seen[fields[1]] = true
		}
		if !seen[pb.a.name] || !seen[pb.b.name] {
			t.Errorf("top: ports %v, want %s and %s:\n%s", seen, pb.a.name, pb.b.name, block)
		}
	}

	out = d.x(t, "top", br, "--count", "2", "--interval", "200ms", "--format", "json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("top --format json --count 2: %d lines, want one object per refresh:\n%s", len(lines), out)
	}
	var busiest float64
	for _, line := range lines {
		var refresh jsonTop
		decodeStrict(t, "top --format json", line, &refresh)
		if len(refresh.Ports) != 2 || refresh.Interval < 0.1 {
			t.Errorf("top --format json: %+v, want 2 ports over about 0.2s", refresh)
		}
		for _, p := range refresh.Ports {
			busiest = max(busiest, p.RxPackets)
		}
	}
	if busiest == 0 {
		t.Errorf("top --format json: no port received anything while ping ran:\n%s", out)
	}
	pinger.wait(t, 10*time.Second)

	if _, code := d.xErr(t, "top", br+"x", "--count", "1", "--interval", "100ms"); code != 1 {
		t.Errorf("top of a missing bridge: exit %d, want 1", code)
	}
	if _, code := d.xErr(t, "top", "--interval", "0s"); code != 1 {
		t.Errorf("top --interval 0s: exit %d, want 1", code)
	}
}

// TestCompletionAsksDaemon checks that shell completion offers the
// daemon's bridges, then a bridge's ports, through cobra's __complete
// entry point, which the generated scripts call.
func TestCompletionAsksDaemon(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	n := newTestNet()
	br := n.name("br")
	d.x(t, "add-br", br)
	p := addNSPort(t, d, n, br, 1, false)

	candidates := func(args ...string) []string {
		out := d.x(t, append([]string{"__complete"}, args...)...)
		// The last line is cobra's directive, ":4" and the like.
		lines := strings.Split(strings.TrimSpace(out), "\n")
		return lines[:len(lines)-1]
	}
	if got := candidates("dump-ports", ""); !slices.Contains(got, br) {
		t.Errorf("completing dump-ports' bridge: %q, want %s among them", got, br)
	}
	if got := candidates("dump-ports", br, ""); !slices.Equal(got, []string{p.name}) {
		t.Errorf("completing dump-ports %s PORT: %q, want [%s]", br, got, p.name)
	}
	if got := candidates("show", "--format", ""); !slices.Equal(got, []string{"text", "json"}) {
		t.Errorf("completing --format: %q, want [text json]", got)
	}
}
