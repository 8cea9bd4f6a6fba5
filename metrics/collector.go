// Package metrics exposes the switch's counters to Prometheus.
//
// Nothing on the forwarding path knows about Prometheus: the forwarders
// and the connection tracker keep their counters in atomics as they
// always do, and each scrape reads one snapshot of them from the daemon
// (a Source: control.Daemon.Metrics and ConntrackMetrics), the switch's
// counters as values, and turns it into constant metrics. A
// scrape costs the datapath nothing but one request per bridge between
// two batches, for the MAC table's size. The package only reads: it
// changes nothing in the daemon or the switch.
package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xswitch/xswitch/conntrack"
	"github.com/xswitch/xswitch/control"
	vswitch "github.com/xswitch/xswitch/switch"
)

// Source is what the collector reads on every scrape; *control.Daemon is
// one.
type Source interface {
	Metrics() []control.BridgeMetrics
	ConntrackMetrics() control.ConntrackMetrics
}

const namespace = "xswitch"

var (
	portLabels   = []string{"bridge", "port"}
	bridgeLabels = []string{"bridge"}
)

func portDesc(name, help string, extraLabels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(namespace, "port", name), help,
		append(append([]string{}, portLabels...), extraLabels...), nil)
}

func bridgeDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(namespace, "bridge", name), help, bridgeLabels, nil)
}

// portCounter is one per-port counter and where it is in a PortStats.
type portCounter struct {
	desc  *prometheus.Desc
	value func(*vswitch.PortStats) uint64
}

var portCounters = []portCounter{
	{portDesc("rx_packets_total", "Frames the switch received on the port."),
		func(s *vswitch.PortStats) uint64 { return s.RxPackets }},
	{portDesc("rx_bytes_total", "Bytes of the frames the switch received on the port."),
		func(s *vswitch.PortStats) uint64 { return s.RxBytes }},
	{portDesc("rx_errors_total", "Received frames too malformed to classify, dropped."),
		func(s *vswitch.PortStats) uint64 { return s.RxErrors }},
	{portDesc("rx_vlan_dropped_total", "Received frames that NORMAL dropped because the port does not carry their VLAN."),
		func(s *vswitch.PortStats) uint64 { return s.RxVLANDropped }},
	{portDesc("rx_reserved_dropped_total", "Received frames that NORMAL dropped because they were sent to a reserved group address (STP, LACP, LLDP, ...) and the bridge does not forward BPDUs."),
		func(s *vswitch.PortStats) uint64 { return s.RxReservedDropped }},
	{portDesc("rx_storm_dropped_total", "Received frames that NORMAL did not flood because the port's storm limit was reached."),
		func(s *vswitch.PortStats) uint64 { return s.RxStormDropped }},
	{portDesc("rx_stp_dropped_total", "Received frames dropped because the spanning tree kept the port from forwarding (discarding or learning)."),
		func(s *vswitch.PortStats) uint64 { return s.RxSTPDropped }},
	{portDesc("tx_packets_total", "Frames the switch transmitted on the port."),
		func(s *vswitch.PortStats) uint64 { return s.TxPackets }},
	{portDesc("tx_bytes_total", "Bytes of the frames the switch transmitted on the port."),
		func(s *vswitch.PortStats) uint64 { return s.TxBytes }},
	{portDesc("tx_dropped_total", "Frames dropped on their way out: the port's transmit ring was full, or its interface refused them."),
		func(s *vswitch.PortStats) uint64 { return s.TxDropped }},
	{portDesc("xsk_rx_dropped_total", "Frames the kernel dropped on the port's AF_XDP sockets for other reasons than below (XDP_STATISTICS rx_dropped)."),
		func(s *vswitch.PortStats) uint64 { return s.Port.RxDropped }},
	{portDesc("xsk_rx_ring_full_total", "Frames the kernel dropped because an AF_XDP receive ring was full: the switch did not keep up."),
		func(s *vswitch.PortStats) uint64 { return s.Port.RxRingFull }},
	{portDesc("xsk_rx_fill_ring_empty_total", "Times the kernel found an AF_XDP fill ring empty: no buffer to receive into."),
		func(s *vswitch.PortStats) uint64 { return s.Port.RxFillRingEmpty }},
	{portDesc("xsk_rx_invalid_descs_total", "Invalid descriptors on the port's AF_XDP receive side."),
		func(s *vswitch.PortStats) uint64 { return s.Port.RxInvalidDescs }},
	{portDesc("xsk_tx_invalid_descs_total", "Invalid descriptors on the port's AF_XDP transmit rings."),
		func(s *vswitch.PortStats) uint64 { return s.Port.TxInvalidDescs }},
	{portDesc("xsk_tx_ring_empty_total", "Times the kernel found an AF_XDP transmit ring empty when asked to send."),
		func(s *vswitch.PortStats) uint64 { return s.Port.TxRingEmpty }},
	{portDesc("xsk_rx_oversize_total", "Frames longer than the port carries, dropped by its XDP program before they reached an AF_XDP socket."),
		func(s *vswitch.PortStats) uint64 { return s.Port.RxOversize }},
	{portDesc("xsk_tx_refused_total", "Frames the port's interface refused after its AF_XDP socket took them (also in tx_dropped_total)."),
		func(s *vswitch.PortStats) uint64 { return s.Port.TxRefused }},
}

var (
	portInfo = portDesc("info", "How the port was opened; always 1.",
		"kind", "xdp_mode", "bind_mode")
	portUp   = portDesc("up", "1 if the port is open and forwarding, 0 if it is configured but down: it could not be opened, or its interface is administratively down.")
	portRSTP = portDesc("rstp_info", "The port's role and state in its bridge's spanning tree; always 1, absent for a port that takes no part.",
		"role", "state")

	bridgeFlows       = bridgeDesc("flows", "Rules in the bridge's flow table.")
	bridgeCacheHits   = bridgeDesc("flow_cache_hits_total", "Frames forwarded by a decision from the exact-match cache.")
	bridgeCacheMisses = bridgeDesc("flow_cache_misses_total", "Frames the exact-match cache missed: their way through the tables was worked out afresh.")
	bridgeCacheStale  = bridgeDesc("flow_cache_stale_total", "Cached decisions translated again because a table they looked in, or a MAC-table entry they relied on, changed.")
	bridgeMACEntries  = bridgeDesc("mac_entries", "Learned MAC addresses that have not aged out.")
	bridgeBusy        = bridgeDesc("forwarder_busy_seconds_total", "Time the bridge's forwarding thread spent receiving, forwarding and serving the control plane.")
	bridgeIdle        = bridgeDesc("forwarder_idle_seconds_total", "Time the bridge's forwarding thread spent asleep waiting for frames.")

	bridgeDropped = prometheus.NewDesc(prometheus.BuildFQName(namespace, "pipeline", "dropped_total"),
		"Frames the pipeline sent nowhere, by reason: rule (the rules said so), table_miss, loop (the depth or resubmit limit), ttl (dec_ttl, dec_mpls_ttl), no_copy, port_down (outputs only to ports the bridge does not have up), meter (a drop band of a meter), mpls (a push_mpls or pop_mpls on a label stack deeper than the key holds); and packet-ins lost, the frame sent on otherwise: controller_queue (the queue to the agent was full), controller_rate (the controller's rate limit).",
		[]string{"bridge", "reason"}, nil)
	portPipelineDropped = portDesc("rx_pipeline_dropped_total",
		"Frames received on the port that the pipeline sent nowhere, by reason (as xswitch_pipeline_dropped_total).", "reason")
	tableLookups = prometheus.NewDesc(prometheus.BuildFQName(namespace, "table", "lookups_total"),
		"Frames looked up in the table; shown for tables that hold rules or have seen lookups.", []string{"bridge", "table"}, nil)
	tableMatched = prometheus.NewDesc(prometheus.BuildFQName(namespace, "table", "matched_total"),
		"Frames looked up in the table that met a rule.", []string{"bridge", "table"}, nil)
	tableActive = prometheus.NewDesc(prometheus.BuildFQName(namespace, "table", "active_rules"),
		"Rules in the table.", []string{"bridge", "table"}, nil)

	bridgeFastPathHits     = bridgeDesc("fastpath_hits_total", "Frames the in-kernel fast path carried without user space (as of its last sweep).")
	bridgeFastPathInstalls = bridgeDesc("fastpath_installs_total", "Entries installed in the in-kernel fast path.")
	bridgeFastPathRefused  = bridgeDesc("fastpath_install_failures_total", "Entries the kernel refused to install (the fast path's map was full).")
	bridgeFastPathSwept    = bridgeDesc("fastpath_evictions_total", "Fast path entries the sweeper deleted: stale, relying on a station that aged out, or idle.")
	bridgeFastPathEntries  = bridgeDesc("fastpath_entries", "Entries in the in-kernel fast path; absent when the daemon runs with --fast-path off.")
	portFastPath           = portDesc("fastpath_on", "1 if the in-kernel fast path carries frames from and to the port, 0 if not (xswitch show says why).")
	bridgeRSTPRoot         = bridgeDesc("rstp_root", "1 if the bridge is the root of its spanning tree, 0 if not; absent without RSTP.")
	bridgeRSTPChanges      = bridgeDesc("rstp_topology_changes_total", "Topology changes the bridge's spanning tree detected or was told of.")
	bridgeRSTPBPDUsDropped = bridgeDesc("rstp_bpdus_dropped_total", "BPDUs dropped because the spanning tree had not yet taken the ones before.")

	conntrackEntries  = conntrackDesc("entries", "Connections in the connection tracker's table, the one every bridge shares (ct-get-nconns), those past their time that the next sweep removes included.")
	conntrackMaxConns = conntrackDesc("maxconns", "The most connections the table holds (ct-set-maxconns).")
	conntrackCarried  = conntrackDesc("carried", "Established connections the bridges' XDP programs carry: their frames are judged and forwarded in the kernel until one needs the tracker.")
	conntrackCreated  = conntrackDesc("created_total", "Connections committed: its rate is new connections per second.")
	conntrackExpired  = conntrackDesc("expired_total", "Connections removed at the end of their timeout.")
	conntrackFlushed  = conntrackDesc("flushed_total", "Connections removed by flush-conntrack.")
	conntrackReplaced = conntrackDesc("replaced_total", "Connections ended by a packet that started a new one on their tuple: ct(force), or a SYN on a closed TCP connection.")
	conntrackRefused  = conntrackDesc("refused_total", "Commits refused, the packet going on as +new and uncommitted, by reason: full (the table holds maxconns), zone_limit (the zone holds its limit), nat_exhausted (no free address and port in the NAT range), clash (another connection holds the reply tuple).", "reason")
	conntrackZone     = conntrackDesc("zone_entries", "Connections in the zone; for the zones that hold connections or have a limit of their own.", "zone")
	conntrackZoneMax  = conntrackDesc("zone_limit", "The zone's limit of connections (its own, or the default), for the zones of xswitch_conntrack_zone_entries that have one; 0 admits none.", "zone")
)

func conntrackDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(namespace, "conntrack", name), help, labels, nil)
}

// Collector is a prometheus.Collector that reads a Source on each scrape.
type Collector struct {
	src Source
}

// NewCollector returns a collector of src's bridges and ports.
func NewCollector(src Source) *Collector { return &Collector{src: src} }

// Describe sends every metric's descriptor.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, pc := range portCounters {
		ch <- pc.desc
	}
	for _, d := range []*prometheus.Desc{
		portInfo, portUp, portRSTP, portFastPath,
		bridgeFastPathHits, bridgeFastPathInstalls, bridgeFastPathRefused, bridgeFastPathSwept, bridgeFastPathEntries,
		bridgeFlows, bridgeCacheHits, bridgeCacheMisses, bridgeCacheStale, bridgeMACEntries, bridgeBusy, bridgeIdle,
		bridgeRSTPRoot, bridgeRSTPChanges, bridgeRSTPBPDUsDropped,
		bridgeDropped, portPipelineDropped, tableLookups, tableMatched, tableActive,
		conntrackEntries, conntrackMaxConns, conntrackCarried, conntrackCreated, conntrackExpired, conntrackFlushed, conntrackReplaced,
		conntrackRefused, conntrackZone, conntrackZoneMax,
	} {
		ch <- d
	}
}

// Collect sends the current value of every metric.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, b := range c.src.Metrics() {
		collectBridge(ch, &b)
	}
	collectConntrack(ch, c.src.ConntrackMetrics())
}

func collectConntrack(ch chan<- prometheus.Metric, m control.ConntrackMetrics) {
	s := &m.Stats
	ch <- prometheus.MustNewConstMetric(conntrackEntries, prometheus.GaugeValue, float64(s.Entries))
	ch <- prometheus.MustNewConstMetric(conntrackMaxConns, prometheus.GaugeValue, float64(s.MaxConns))
	ch <- prometheus.MustNewConstMetric(conntrackCarried, prometheus.GaugeValue, float64(s.Carried))
	ch <- prometheus.MustNewConstMetric(conntrackCreated, prometheus.CounterValue, float64(s.Created))
	ch <- prometheus.MustNewConstMetric(conntrackExpired, prometheus.CounterValue, float64(s.Expired))
	ch <- prometheus.MustNewConstMetric(conntrackFlushed, prometheus.CounterValue, float64(s.Flushed))
	ch <- prometheus.MustNewConstMetric(conntrackReplaced, prometheus.CounterValue, float64(s.Replaced))
	for _, r := range conntrack.Refusals() {
		ch <- prometheus.MustNewConstMetric(conntrackRefused, prometheus.CounterValue, float64(s.Refused[r]), r.String())
	}
	for _, z := range m.Zones {
		zone := strconv.Itoa(int(z.Zone))
		ch <- prometheus.MustNewConstMetric(conntrackZone, prometheus.GaugeValue, float64(z.Count), zone)
		if z.Limited {
			ch <- prometheus.MustNewConstMetric(conntrackZoneMax, prometheus.GaugeValue, float64(z.Limit), zone)
		}
	}
}

func collectBridge(ch chan<- prometheus.Metric, b *control.BridgeMetrics) {
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, b.Name)
	}
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, b.Name)
	}
	gauge(bridgeFlows, float64(b.Flows))
	counter(bridgeCacheHits, float64(b.CacheHits))
	counter(bridgeCacheMisses, float64(b.CacheMisses))
	counter(bridgeCacheStale, float64(b.CacheStale))
	gauge(bridgeMACEntries, float64(b.MACEntries))
	counter(bridgeBusy, b.ForwarderBusy.Seconds())
	counter(bridgeIdle, b.ForwarderIdle.Seconds())
	for i, reason := range vswitch.DropReasons {
		ch <- prometheus.MustNewConstMetric(bridgeDropped, prometheus.CounterValue, float64(b.Drops[i]), b.Name, reason)
	}
	for _, t := range b.Tables {
		table := strconv.Itoa(int(t.Table))
		ch <- prometheus.MustNewConstMetric(tableLookups, prometheus.CounterValue, float64(t.Lookups), b.Name, table)
		ch <- prometheus.MustNewConstMetric(tableMatched, prometheus.CounterValue, float64(t.Matched), b.Name, table)
		ch <- prometheus.MustNewConstMetric(tableActive, prometheus.GaugeValue, float64(t.Active), b.Name, table)
	}
	if fp := b.FastPath; fp != nil {
		counter(bridgeFastPathHits, float64(fp.Hits))
		counter(bridgeFastPathInstalls, float64(fp.Installs))
		counter(bridgeFastPathRefused, float64(fp.InstallFailures))
		counter(bridgeFastPathSwept, float64(fp.Evictions))
		gauge(bridgeFastPathEntries, float64(fp.Entries))
	}
	if t := b.RSTP; t != nil {
		root := 0.0
		if t.IsRoot {
			root = 1
		}
		gauge(bridgeRSTPRoot, root)
		counter(bridgeRSTPChanges, float64(t.TopologyChanges))
		counter(bridgeRSTPBPDUsDropped, float64(t.BPDUsDropped))
	}

	for i := range b.Ports {
		p := &b.Ports[i]
		up := 0.0
		if p.Up {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(portUp, prometheus.GaugeValue, up, b.Name, p.Name)
		if p.Info.Kind == "" {
			// A port that could not be opened has no counters: only its
			// being down is worth a series.
			continue
		}
		ch <- prometheus.MustNewConstMetric(portInfo, prometheus.GaugeValue, 1,
			b.Name, p.Name, p.Info.Kind, p.Info.XDPMode, p.Info.BindMode)
		for _, pc := range portCounters {
			ch <- prometheus.MustNewConstMetric(pc.desc, prometheus.CounterValue,
				float64(pc.value(&p.Stats)), b.Name, p.Name)
		}
		for i, reason := range vswitch.DropReasons {
			ch <- prometheus.MustNewConstMetric(portPipelineDropped, prometheus.CounterValue,
				float64(p.Stats.PipelineDropped[i]), b.Name, p.Name, reason)
		}
		if p.FastPath != "" {
			on := 0.0
			if p.FastPath == "on" {
				on = 1
			}
			ch <- prometheus.MustNewConstMetric(portFastPath, prometheus.GaugeValue, on, b.Name, p.Name)
		}
		if p.RSTPRole != "" {
			ch <- prometheus.MustNewConstMetric(portRSTP, prometheus.GaugeValue, 1, b.Name, p.Name, p.RSTPRole, p.RSTPState)
		}
	}
}
