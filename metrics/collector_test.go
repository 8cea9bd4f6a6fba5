package metrics

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/xswitch/xswitch/conntrack"
	"github.com/xswitch/xswitch/control"
	"github.com/xswitch/xswitch/port"
	vswitch "github.com/xswitch/xswitch/switch"
)

// fakeSource is a daemon with one bridge: one working port and one that
// could not be opened.
type fakeSource struct {
	bridges   []control.BridgeMetrics
	conntrack control.ConntrackMetrics
}

func (f *fakeSource) Metrics() []control.BridgeMetrics { return f.bridges }

func (f *fakeSource) ConntrackMetrics() control.ConntrackMetrics { return f.conntrack }

func newFakeSource() *fakeSource {
	up := control.PortMetrics{
		Name: "p1",
		Up:   true,
		Info: port.Info{Kind: "afxdp", XDPMode: "native", BindMode: "copy", Queues: 1},
		Stats: vswitch.PortStats{
			RxPackets: 10, RxBytes: 1000, RxErrors: 1, RxVLANDropped: 9, RxReservedDropped: 11, RxStormDropped: 12, RxSTPDropped: 13,
			TxPackets: 20, TxBytes: 2000, TxDropped: 2,
			PipelineDropped: drops(map[string]uint64{"table_miss": 3, "port_down": 2}),
			Port:            port.Stats{RxDropped: 3, RxInvalidDescs: 4, RxRingFull: 5, RxFillRingEmpty: 6, TxInvalidDescs: 7, TxRingEmpty: 8, RxOversize: 11, TxRefused: 12},
		},
	}
	down := control.PortMetrics{Name: "p2"}
	return &fakeSource{bridges: []control.BridgeMetrics{{
		Name: "br0", Ports: []control.PortMetrics{up, down},
		Flows: 3, CacheHits: 100, CacheMisses: 9,
		Drops:         drops(map[string]uint64{"table_miss": 4, "loop": 1}),
		Tables:        []vswitch.TableStats{{Table: 0, Active: 2, Lookups: 50, Matched: 46}, {Table: 3, Active: 1, Lookups: 7, Matched: 7}},
		MACEntries:    2,
		ForwarderBusy: 1500 * time.Millisecond,
		ForwarderIdle: 30 * time.Second,
	}}}
}

// drops are the counts of the pipeline's drops by reason.
func drops(byReason map[string]uint64) vswitch.DropCounts {
	var d vswitch.DropCounts
	for i, reason := range vswitch.DropReasons {
		d[i] = byReason[reason]
	}
	return d
}

func TestCollectorReportsTheSnapshot(t *testing.T) {
	const want = `
# HELP xswitch_port_rx_packets_total Frames the switch received on the port.
# TYPE xswitch_port_rx_packets_total counter
xswitch_port_rx_packets_total{bridge="br0",port="p1"} 10
# HELP xswitch_port_rx_bytes_total Bytes of the frames the switch received on the port.
# TYPE xswitch_port_rx_bytes_total counter
xswitch_port_rx_bytes_total{bridge="br0",port="p1"} 1000
# HELP xswitch_port_rx_errors_total Received frames too malformed to classify, dropped.
# TYPE xswitch_port_rx_errors_total counter
xswitch_port_rx_errors_total{bridge="br0",port="p1"} 1
# HELP xswitch_port_rx_vlan_dropped_total Received frames that NORMAL dropped because the port does not carry their VLAN.
# TYPE xswitch_port_rx_vlan_dropped_total counter
xswitch_port_rx_vlan_dropped_total{bridge="br0",port="p1"} 9
# HELP xswitch_port_rx_reserved_dropped_total Received frames that NORMAL dropped because they were sent to a reserved group address (STP, LACP, LLDP, ...) and the bridge does not forward BPDUs.
# TYPE xswitch_port_rx_reserved_dropped_total counter
xswitch_port_rx_reserved_dropped_total{bridge="br0",port="p1"} 11
# HELP xswitch_port_rx_storm_dropped_total Received frames that NORMAL did not flood because the port's storm limit was reached.
# TYPE xswitch_port_rx_storm_dropped_total counter
xswitch_port_rx_storm_dropped_total{bridge="br0",port="p1"} 12
# HELP xswitch_port_rx_stp_dropped_total Received frames dropped because the spanning tree kept the port from forwarding (discarding or learning).
# TYPE xswitch_port_rx_stp_dropped_total counter
xswitch_port_rx_stp_dropped_total{bridge="br0",port="p1"} 13
# HELP xswitch_port_tx_packets_total Frames the switch transmitted on the port.
# TYPE xswitch_port_tx_packets_total counter
xswitch_port_tx_packets_total{bridge="br0",port="p1"} 20
# HELP xswitch_port_tx_dropped_total Frames dropped on their way out: the port's transmit ring was full, or its interface refused them.
# TYPE xswitch_port_tx_dropped_total counter
xswitch_port_tx_dropped_total{bridge="br0",port="p1"} 2
# HELP xswitch_port_xsk_rx_ring_full_total Frames the kernel dropped because an AF_XDP receive ring was full: the switch did not keep up.
# TYPE xswitch_port_xsk_rx_ring_full_total counter
xswitch_port_xsk_rx_ring_full_total{bridge="br0",port="p1"} 5
# HELP xswitch_port_xsk_tx_ring_empty_total Times the kernel found an AF_XDP transmit ring empty when asked to send.
# TYPE xswitch_port_xsk_tx_ring_empty_total counter
xswitch_port_xsk_tx_ring_empty_total{bridge="br0",port="p1"} 8
# HELP xswitch_port_xsk_rx_oversize_total Frames longer than the port carries, dropped by its XDP program before they reached an AF_XDP socket.
# TYPE xswitch_port_xsk_rx_oversize_total counter
xswitch_port_xsk_rx_oversize_total{bridge="br0",port="p1"} 11
# HELP xswitch_port_xsk_tx_refused_total Frames the port's interface refused after its AF_XDP socket took them (also in tx_dropped_total).
# TYPE xswitch_port_xsk_tx_refused_total counter
xswitch_port_xsk_tx_refused_total{bridge="br0",port="p1"} 12
# HELP xswitch_port_info How the port was opened; always 1.
# TYPE xswitch_port_info gauge
xswitch_port_info{bind_mode="copy",bridge="br0",kind="afxdp",port="p1",xdp_mode="native"} 1
# HELP xswitch_port_up 1 if the port is open and forwarding, 0 if it is configured but down: it could not be opened, or its interface is administratively down.
# TYPE xswitch_port_up gauge
xswitch_port_up{bridge="br0",port="p1"} 1
xswitch_port_up{bridge="br0",port="p2"} 0
# HELP xswitch_bridge_flows Rules in the bridge's flow table.
# TYPE xswitch_bridge_flows gauge
xswitch_bridge_flows{bridge="br0"} 3
# HELP xswitch_bridge_flow_cache_hits_total Frames forwarded by a decision from the exact-match cache.
# TYPE xswitch_bridge_flow_cache_hits_total counter
xswitch_bridge_flow_cache_hits_total{bridge="br0"} 100
# HELP xswitch_bridge_flow_cache_misses_total Frames the exact-match cache missed: their way through the tables was worked out afresh.
# TYPE xswitch_bridge_flow_cache_misses_total counter
xswitch_bridge_flow_cache_misses_total{bridge="br0"} 9
# HELP xswitch_bridge_mac_entries Learned MAC addresses that have not aged out.
# TYPE xswitch_bridge_mac_entries gauge
xswitch_bridge_mac_entries{bridge="br0"} 2
# HELP xswitch_bridge_forwarder_busy_seconds_total Time the bridge's forwarding thread spent receiving, forwarding and serving the control plane.
# TYPE xswitch_bridge_forwarder_busy_seconds_total counter
xswitch_bridge_forwarder_busy_seconds_total{bridge="br0"} 1.5
# HELP xswitch_bridge_forwarder_idle_seconds_total Time the bridge's forwarding thread spent asleep waiting for frames.
# TYPE xswitch_bridge_forwarder_idle_seconds_total counter
xswitch_bridge_forwarder_idle_seconds_total{bridge="br0"} 30
# HELP xswitch_pipeline_dropped_total Frames the pipeline sent nowhere, by reason: rule (the rules said so), table_miss, loop (the depth or resubmit limit), ttl (dec_ttl, dec_mpls_ttl), no_copy, port_down (outputs only to ports the bridge does not have up), meter (a drop band of a meter), mpls (a push_mpls or pop_mpls on a label stack deeper than the key holds); and packet-ins lost, the frame sent on otherwise: controller_queue (the queue to the agent was full), controller_rate (the controller's rate limit).
# TYPE xswitch_pipeline_dropped_total counter
xswitch_pipeline_dropped_total{bridge="br0",reason="controller_queue"} 0
xswitch_pipeline_dropped_total{bridge="br0",reason="controller_rate"} 0
xswitch_pipeline_dropped_total{bridge="br0",reason="loop"} 1
xswitch_pipeline_dropped_total{bridge="br0",reason="meter"} 0
xswitch_pipeline_dropped_total{bridge="br0",reason="mpls"} 0
xswitch_pipeline_dropped_total{bridge="br0",reason="no_copy"} 0
xswitch_pipeline_dropped_total{bridge="br0",reason="port_down"} 0
xswitch_pipeline_dropped_total{bridge="br0",reason="rule"} 0
xswitch_pipeline_dropped_total{bridge="br0",reason="table_miss"} 4
xswitch_pipeline_dropped_total{bridge="br0",reason="ttl"} 0
# HELP xswitch_port_rx_pipeline_dropped_total Frames received on the port that the pipeline sent nowhere, by reason (as xswitch_pipeline_dropped_total).
# TYPE xswitch_port_rx_pipeline_dropped_total counter
xswitch_port_rx_pipeline_dropped_total{bridge="br0",port="p1",reason="controller_queue"} 0
xswitch_port_rx_pipeline_dropped_total{bridge="br0",port="p1",reason="controller_rate"} 0
xswitch_port_rx_pipeline_dropped_total{bridge="br0",port="p1",reason="loop"} 0
xswitch_port_rx_pipeline_dropped_total{bridge="br0",port="p1",reason="meter"} 0
xswitch_port_rx_pipeline_dropped_total{bridge="br0",port="p1",reason="mpls"} 0
xswitch_port_rx_pipeline_dropped_total{bridge="br0",port="p1",reason="no_copy"} 0
xswitch_port_rx_pipeline_dropped_total{bridge="br0",port="p1",reason="port_down"} 2
xswitch_port_rx_pipeline_dropped_total{bridge="br0",port="p1",reason="rule"} 0
xswitch_port_rx_pipeline_dropped_total{bridge="br0",port="p1",reason="table_miss"} 3
xswitch_port_rx_pipeline_dropped_total{bridge="br0",port="p1",reason="ttl"} 0
# HELP xswitch_table_lookups_total Frames looked up in the table; shown for tables that hold rules or have seen lookups.
# TYPE xswitch_table_lookups_total counter
xswitch_table_lookups_total{bridge="br0",table="0"} 50
xswitch_table_lookups_total{bridge="br0",table="3"} 7
# HELP xswitch_table_matched_total Frames looked up in the table that met a rule.
# TYPE xswitch_table_matched_total counter
xswitch_table_matched_total{bridge="br0",table="0"} 46
xswitch_table_matched_total{bridge="br0",table="3"} 7
`
	c := NewCollector(newFakeSource())
	names := []string{
		"xswitch_port_rx_packets_total", "xswitch_port_rx_bytes_total", "xswitch_port_rx_errors_total",
		"xswitch_port_rx_vlan_dropped_total", "xswitch_port_rx_reserved_dropped_total", "xswitch_port_rx_storm_dropped_total", "xswitch_port_rx_stp_dropped_total",
		"xswitch_port_tx_packets_total", "xswitch_port_tx_dropped_total",
		"xswitch_port_xsk_rx_ring_full_total", "xswitch_port_xsk_tx_ring_empty_total", "xswitch_port_xsk_rx_oversize_total",
		"xswitch_port_xsk_tx_refused_total", "xswitch_port_info", "xswitch_port_up",
		"xswitch_bridge_flows", "xswitch_bridge_flow_cache_hits_total", "xswitch_bridge_flow_cache_misses_total",
		"xswitch_bridge_mac_entries", "xswitch_bridge_forwarder_busy_seconds_total", "xswitch_bridge_forwarder_idle_seconds_total",
		"xswitch_pipeline_dropped_total", "xswitch_port_rx_pipeline_dropped_total", "xswitch_table_lookups_total", "xswitch_table_matched_total",
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	// The down port has no counters and no info, only its up series: 18
	// counters, 10 drop reasons and info and up for p1, up for p2, 7 bridge
	// series, 10 drop reasons and 3 series for each of 2 tables; and the
	// connection tracker's 7 series and 4 refusal reasons.
	if want := 18 + 10 + 2 + 1 + 7 + 10 + 6 + 11; testutil.CollectAndCount(c) != want {
		t.Errorf("collected %d series; want %d", testutil.CollectAndCount(c), want)
	}
}

// A pedantic registry checks that Collect sends only what Describe
// announced, with consistent label sets.
func TestCollectorMatchesItsDescription(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(newFakeSource()))
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
}

func TestCollectorMetricNamesFollowConventions(t *testing.T) {
	problems, err := testutil.GatherAndLint(NewRegistry(newFakeSource()))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// A daemon without bridges still has its connection tracker, empty.
func TestCollectorWithoutBridges(t *testing.T) {
	if n := testutil.CollectAndCount(NewCollector(&fakeSource{})); n != 11 {
		t.Errorf("a daemon without bridges gave %d series; want the connection tracker's 11", n)
	}
}

func TestMetricsServerServesScrapesAndRefusesABusyAddress(t *testing.T) {
	s, err := Start(Options{Addr: "127.0.0.1:0", Source: newFakeSource()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) })

	if _, err := Start(Options{Addr: s.Addr().String(), Source: newFakeSource()}); err == nil ||
		!strings.Contains(err.Error(), s.Addr().String()) {
		t.Errorf("Start on the address in use = %v; want an error naming %s", err, s.Addr())
	}

	resp, err := http.Get("http://" + s.Addr().String() + Path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", Path, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"xswitch_port_rx_packets_total", "go_goroutines", "process_cpu_seconds_total"} {
		if _, ok := families[name]; !ok {
			t.Errorf("scrape has no %s", name)
		}
	}
	if got := families["xswitch_port_rx_packets_total"].GetMetric()[0].GetCounter().GetValue(); got != 10 {
		t.Errorf("xswitch_port_rx_packets_total = %v; want 10", got)
	}

	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get("http://" + s.Addr().String() + Path); err == nil {
		t.Error("the server still answers after Shutdown")
	}
}

// TestCollectorReportsRSTP: a bridge that runs RSTP has its root gauge and
// counters, and each port that takes part its role and state.
func TestCollectorReportsRSTP(t *testing.T) {
	src := newFakeSource()
	b := &src.bridges[0]
	b.RSTP = &control.RSTPMetrics{IsRoot: false, TopologyChanges: 4, BPDUsDropped: 1}
	b.Ports[0].RSTPRole, b.Ports[0].RSTPState = "alternate", "discarding"
	const want = `
# HELP xswitch_port_rstp_info The port's role and state in its bridge's spanning tree; always 1, absent for a port that takes no part.
# TYPE xswitch_port_rstp_info gauge
xswitch_port_rstp_info{bridge="br0",port="p1",role="alternate",state="discarding"} 1
# HELP xswitch_bridge_rstp_root 1 if the bridge is the root of its spanning tree, 0 if not; absent without RSTP.
# TYPE xswitch_bridge_rstp_root gauge
xswitch_bridge_rstp_root{bridge="br0"} 0
# HELP xswitch_bridge_rstp_topology_changes_total Topology changes the bridge's spanning tree detected or was told of.
# TYPE xswitch_bridge_rstp_topology_changes_total counter
xswitch_bridge_rstp_topology_changes_total{bridge="br0"} 4
# HELP xswitch_bridge_rstp_bpdus_dropped_total BPDUs dropped because the spanning tree had not yet taken the ones before.
# TYPE xswitch_bridge_rstp_bpdus_dropped_total counter
xswitch_bridge_rstp_bpdus_dropped_total{bridge="br0"} 1
`
	names := []string{"xswitch_port_rstp_info", "xswitch_bridge_rstp_root", "xswitch_bridge_rstp_topology_changes_total", "xswitch_bridge_rstp_bpdus_dropped_total"}
	if err := testutil.CollectAndCompare(NewCollector(src), strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
}

// TestCollectorReportsTheFastPath: a bridge with the fast path has its
// counters and entries, and each port whether the fast path carries it.
func TestCollectorReportsTheFastPath(t *testing.T) {
	src := newFakeSource()
	b := &src.bridges[0]
	b.FastPath = &vswitch.FastPathStats{Hits: 5000, Installs: 4, InstallFailures: 1, Evictions: 2, Entries: 3}
	b.Ports[0].FastPath = "off (frames to it stay in user space: its veth peer eth0 has GRO off)"
	const want = `
# HELP xswitch_bridge_fastpath_hits_total Frames the in-kernel fast path carried without user space (as of its last sweep).
# TYPE xswitch_bridge_fastpath_hits_total counter
xswitch_bridge_fastpath_hits_total{bridge="br0"} 5000
# HELP xswitch_bridge_fastpath_installs_total Entries installed in the in-kernel fast path.
# TYPE xswitch_bridge_fastpath_installs_total counter
xswitch_bridge_fastpath_installs_total{bridge="br0"} 4
# HELP xswitch_bridge_fastpath_install_failures_total Entries the kernel refused to install (the fast path's map was full).
# TYPE xswitch_bridge_fastpath_install_failures_total counter
xswitch_bridge_fastpath_install_failures_total{bridge="br0"} 1
# HELP xswitch_bridge_fastpath_evictions_total Fast path entries the sweeper deleted: stale, relying on a station that aged out, or idle.
# TYPE xswitch_bridge_fastpath_evictions_total counter
xswitch_bridge_fastpath_evictions_total{bridge="br0"} 2
# HELP xswitch_bridge_fastpath_entries Entries in the in-kernel fast path; absent when the daemon runs with --fast-path off.
# TYPE xswitch_bridge_fastpath_entries gauge
xswitch_bridge_fastpath_entries{bridge="br0"} 3
# HELP xswitch_port_fastpath_on 1 if the in-kernel fast path carries frames from and to the port, 0 if not (xswitch show says why).
# TYPE xswitch_port_fastpath_on gauge
xswitch_port_fastpath_on{bridge="br0",port="p1"} 0
`
	names := []string{"xswitch_bridge_fastpath_hits_total", "xswitch_bridge_fastpath_installs_total", "xswitch_bridge_fastpath_install_failures_total",
		"xswitch_bridge_fastpath_evictions_total", "xswitch_bridge_fastpath_entries", "xswitch_port_fastpath_on"}
	if err := testutil.CollectAndCompare(NewCollector(src), strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
}

// TestCollectorReportsTheConntrack: the connection tracker's counts, its
// refusals by reason, and each zone's connections, with its limit when
// one applies.
func TestCollectorReportsTheConntrack(t *testing.T) {
	src := newFakeSource()
	src.conntrack.Stats = conntrack.Stats{Entries: 7, MaxConns: 1000, Carried: 6, Created: 40, Expired: 30, Flushed: 2, Replaced: 1}
	src.conntrack.Stats.Refused[conntrack.RefusedZoneLimit] = 5
	src.conntrack.Stats.Refused[conntrack.RefusedNATExhausted] = 3
	src.conntrack.Zones = []control.ZoneMetrics{{Zone: 0, Count: 4}, {Zone: 7, Count: 3, Limit: 3, Limited: true}, {Zone: 9, Limit: 0, Limited: true}}
	const want = `
# HELP xswitch_conntrack_entries Connections in the connection tracker's table, the one every bridge shares (ct-get-nconns), those past their time that the next sweep removes included.
# TYPE xswitch_conntrack_entries gauge
xswitch_conntrack_entries 7
# HELP xswitch_conntrack_maxconns The most connections the table holds (ct-set-maxconns).
# TYPE xswitch_conntrack_maxconns gauge
xswitch_conntrack_maxconns 1000
# HELP xswitch_conntrack_carried Established connections the bridges' XDP programs carry: their frames are judged and forwarded in the kernel until one needs the tracker.
# TYPE xswitch_conntrack_carried gauge
xswitch_conntrack_carried 6
# HELP xswitch_conntrack_created_total Connections committed: its rate is new connections per second.
# TYPE xswitch_conntrack_created_total counter
xswitch_conntrack_created_total 40
# HELP xswitch_conntrack_expired_total Connections removed at the end of their timeout.
# TYPE xswitch_conntrack_expired_total counter
xswitch_conntrack_expired_total 30
# HELP xswitch_conntrack_flushed_total Connections removed by flush-conntrack.
# TYPE xswitch_conntrack_flushed_total counter
xswitch_conntrack_flushed_total 2
# HELP xswitch_conntrack_replaced_total Connections ended by a packet that started a new one on their tuple: ct(force), or a SYN on a closed TCP connection.
# TYPE xswitch_conntrack_replaced_total counter
xswitch_conntrack_replaced_total 1
# HELP xswitch_conntrack_refused_total Commits refused, the packet going on as +new and uncommitted, by reason: full (the table holds maxconns), zone_limit (the zone holds its limit), nat_exhausted (no free address and port in the NAT range), clash (another connection holds the reply tuple).
# TYPE xswitch_conntrack_refused_total counter
xswitch_conntrack_refused_total{reason="clash"} 0
xswitch_conntrack_refused_total{reason="full"} 0
xswitch_conntrack_refused_total{reason="nat_exhausted"} 3
xswitch_conntrack_refused_total{reason="zone_limit"} 5
# HELP xswitch_conntrack_zone_entries Connections in the zone; for the zones that hold connections or have a limit of their own.
# TYPE xswitch_conntrack_zone_entries gauge
xswitch_conntrack_zone_entries{zone="0"} 4
xswitch_conntrack_zone_entries{zone="7"} 3
xswitch_conntrack_zone_entries{zone="9"} 0
# HELP xswitch_conntrack_zone_limit The zone's limit of connections (its own, or the default), for the zones of xswitch_conntrack_zone_entries that have one; 0 admits none.
# TYPE xswitch_conntrack_zone_limit gauge
xswitch_conntrack_zone_limit{zone="7"} 3
xswitch_conntrack_zone_limit{zone="9"} 0
`
	names := []string{"xswitch_conntrack_entries", "xswitch_conntrack_maxconns", "xswitch_conntrack_carried", "xswitch_conntrack_created_total",
		"xswitch_conntrack_expired_total", "xswitch_conntrack_flushed_total", "xswitch_conntrack_replaced_total",
		"xswitch_conntrack_refused_total", "xswitch_conntrack_zone_entries", "xswitch_conntrack_zone_limit"}
	if err := testutil.CollectAndCompare(NewCollector(src), strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
}
