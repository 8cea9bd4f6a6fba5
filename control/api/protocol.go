// Package api is the protocol between xswitch's daemon and its clients
// over a unix socket: the requests and the answers, plain data in JSON;
// the client that sends them (Client); and the listener and server loop
// that take them to a Handler, which the daemon (package control) is.
//
// The protocol is one JSON request and one JSON response per connection;
// add-flows may stream its rules after the request instead (Stream).
// Responses carry structured data; formatting for people is the client's
// business, so that scripts can ask for the same data as JSON.
//
// The package imports nothing of the switch and keeps nothing of the
// daemon's: a client needs only it, and the daemon converts what its
// bridges, ports and tunnels report into these types.
package api

import (
	"encoding/json"
)

// Request is what a client sends.
type Request struct {
	Verb    string      `json:"verb"`
	Bridge  string      `json:"bridge,omitempty"`
	Port    string      `json:"port,omitempty"`
	AddPort *PortConfig `json:"add_port,omitempty"`
	// Flows are rules in ovs-ofctl syntax, for add-flow(s) and mod-flows;
	// Groups are groups, for add-group(s) and mod-group, or what
	// insert-buckets and remove-buckets take.
	Flows  []string `json:"flows,omitempty"`
	Groups []string `json:"groups,omitempty"`
	// Meters are meters, for add-meter and mod-meter.
	Meters []string `json:"meters,omitempty"`
	// Stream says that add-flows' rules follow the request on the
	// connection, from the line after it, one per line as in an add-flows
	// file, until the client shuts its side down: a file of any size, in
	// constant client memory.
	Stream bool `json:"stream,omitempty"`
	// FlowLines are the line numbers of streamed rules, for the daemon's
	// error messages.
	FlowLines []int `json:"-"`
	// Match selects rules for mod-flows, del-flows and dump-flows, and
	// describes the packet for trace; for del-groups, dump-groups and
	// dump-group-stats, it names a group ("group_id=N", or N); for
	// del-meters, dump-meters and meter-stats, a meter ("meter=N", or N).
	Match  string `json:"match,omitempty"`
	Strict bool   `json:"strict,omitempty"`
	// CTNext are the ct_states trace follows recirculations with, one
	// each in turn (its --ct-next).
	CTNext []string `json:"ct_next,omitempty"`
	// Table and Record name a row for set, get, add, remove and clear;
	// Columns are what they set ("column[:key]=value"), read
	// ("column[:key]") or clear, or what add and remove change (a column,
	// then its values, keys or key=value pairs).
	Table   string   `json:"table,omitempty"`
	Record  string   `json:"record,omitempty"`
	Columns []string `json:"columns,omitempty"`
	// Targets are set-controller's controller targets, FailMode
	// set-fail-mode's mode.
	Targets  []string `json:"targets,omitempty"`
	FailMode string   `json:"fail_mode,omitempty"`
	// Args are a conntrack verb's arguments after the bridge, as
	// ovs-appctl dpctl/* takes them: zone=N, flush-conntrack's tuples,
	// ct-set-maxconns' number, ct-set-limits' default=N and
	// zone=N,limit=N... Bridge, for these verbs, only checks that the
	// bridge exists: the table is the daemon's, which its bridges share.
	Args []string `json:"args,omitempty"`
	// More and Statistics are dump-conntrack's -m and -s; More is
	// ct-stats-show's -m too.
	More       bool `json:"more,omitempty"`
	Statistics bool `json:"statistics,omitempty"`
	// MayExist and IfExists are ovs-vsctl's --may-exist (add-zone-tp: a
	// zone that has a policy keeps it) and --if-exists (del-zone-tp: a
	// zone without one is no error).
	MayExist bool `json:"may_exist,omitempty"`
	IfExists bool `json:"if_exists,omitempty"`
}

// Verbs.
const (
	VerbAddBridge  = "add-br"
	VerbDelBridge  = "del-br"
	VerbAddPort    = "add-port"
	VerbDelPort    = "del-port"
	VerbShow       = "show"
	VerbFDB        = "fdb-show"
	VerbAddFlows   = "add-flows"
	VerbModFlows   = "mod-flows"
	VerbDelFlows   = "del-flows"
	VerbDumpFlows  = "dump-flows"
	VerbTrace      = "trace"
	VerbSet        = "set"
	VerbGet        = "get"
	VerbAdd        = "add"
	VerbRemove     = "remove"
	VerbClear      = "clear"
	VerbRSTPShow   = "rstp-show"
	VerbDumpTables = "dump-tables"
	VerbDumpFast   = "dump-fastpath"
	// The group verbs, as ovs-ofctl's.
	VerbAddGroups      = "add-groups"
	VerbModGroup       = "mod-group"
	VerbDelGroups      = "del-groups"
	VerbInsertBuckets  = "insert-buckets"
	VerbRemoveBuckets  = "remove-buckets"
	VerbDumpGroups     = "dump-groups"
	VerbDumpGroupStats = "dump-group-stats"
	// The meter verbs, as ovs-ofctl's.
	VerbAddMeter   = "add-meter"
	VerbModMeter   = "mod-meter"
	VerbDelMeters  = "del-meters"
	VerbDumpMeters = "dump-meters"
	VerbMeterStats = "meter-stats"
	// The controller verbs; get-controller and get-fail-mode read show.
	VerbSetController = "set-controller"
	VerbDelController = "del-controller"
	VerbSetFailMode   = "set-fail-mode"
	VerbDelFailMode   = "del-fail-mode"
	// The connection tracking verbs, as ovs-appctl dpctl/*'s.
	VerbDumpConntrack      = "dump-conntrack"
	VerbFlushConntrack     = "flush-conntrack"
	VerbCTStatsShow        = "ct-stats-show"
	VerbCTSetMaxConns      = "ct-set-maxconns"
	VerbCTGetMaxConns      = "ct-get-maxconns"
	VerbCTGetNConns        = "ct-get-nconns"
	VerbCTSetLimits        = "ct-set-limits"
	VerbCTGetLimits        = "ct-get-limits"
	VerbCTDelLimits        = "ct-del-limits"
	VerbCTEnableTCPSeqChk  = "ct-enable-tcp-seq-chk"
	VerbCTDisableTCPSeqChk = "ct-disable-tcp-seq-chk"
	VerbCTGetTCPSeqChk     = "ct-get-tcp-seq-chk"
	// The zones' timeout policies, as ovs-vsctl's verbs: their Args are
	// the datapath (netdev or system, one and the same in xswitch),
	// zone=N and the policy's key=value pairs.
	VerbAddZoneTP  = "add-zone-tp"
	VerbDelZoneTP  = "del-zone-tp"
	VerbListZoneTP = "list-zone-tp"
	// VerbStatus asks only whether the daemon serves: it answers once the
	// configuration is restored.
	VerbStatus = "status"
)

// Response is what the daemon answers. Exactly one of Error and the
// payloads is meaningful.
type Response struct {
	Error   string         `json:"error,omitempty"`
	Bridges []BridgeStatus `json:"bridges,omitempty"`
	FDB     []FDBEntry     `json:"fdb,omitempty"`
	Flows   []FlowStatus   `json:"flows,omitempty"`
	Trace   *Trace         `json:"trace,omitempty"`
	// Changed counts the rules that mod-flows or del-flows touched.
	Changed int           `json:"changed,omitempty"`
	Status  *DaemonStatus `json:"status,omitempty"`
	// Values are what get read, one JSON value per column asked for.
	Values []json.RawMessage `json:"values,omitempty"`
	// RSTP are the spanning trees rstp-show reports.
	RSTP []RSTPStatus `json:"rstp,omitempty"`
	// Tables are dump-tables' counters, table 0 first.
	Tables []TableStatus `json:"tables,omitempty"`
	// FastPath are dump-fastpath's entries, the busiest first.
	FastPath []FastPathEntry `json:"fastpath,omitempty"`
	// Groups are dump-groups' and dump-group-stats' groups, by id.
	Groups []GroupStatus `json:"groups,omitempty"`
	// Meters are dump-meters' and meter-stats' meters, by id.
	Meters []MeterStatus `json:"meters,omitempty"`
	// Conntrack is what a conntrack verb read of the connection tracker.
	Conntrack *ConntrackStatus `json:"conntrack,omitempty"`
}

// ConntrackStatus is what the conntrack verbs read of the daemon's
// connection tracker, each verb its part.
type ConntrackStatus struct {
	// Entries are dump-conntrack's connections, by zone and original
	// tuple.
	Entries []ConntrackEntry `json:"entries,omitempty"`
	// Stats are ct-stats-show's counts.
	Stats *ConntrackStats `json:"stats,omitempty"`
	// Limits are ct-get-limits' limits.
	Limits *ConntrackLimits `json:"limits,omitempty"`
	// MaxConns, NConns and TCPSeqCheck are ct-get-maxconns',
	// ct-get-nconns' and ct-get-tcp-seq-chk's answers.
	MaxConns    uint32 `json:"maxconns,omitempty"`
	NConns      uint32 `json:"nconns,omitempty"`
	TCPSeqCheck bool   `json:"tcp_seq_chk,omitempty"`
	// ZoneTimeouts are list-zone-tp's policies, by zone.
	ZoneTimeouts []ZoneTimeouts `json:"zone_timeouts,omitempty"`
}

// ZoneTimeouts is one zone's connection tracking timeout policy
// (add-zone-tp): seconds by OVS's attribute names (udp_first, ...).
type ZoneTimeouts struct {
	Zone     uint16            `json:"zone"`
	Timeouts map[string]uint32 `json:"timeouts"`
}

// ConntrackEntry is one connection as dump-conntrack shows it: its line
// (Text, with what -m and -s asked for), and its fields.
type ConntrackEntry struct {
	Text    string         `json:"text"`
	Zone    uint16         `json:"zone"`
	IPProto uint8          `json:"ip_proto"`
	Orig    ConntrackTuple `json:"orig"`
	// Reply is the tuple of the reply direction, translated if NAT
	// applies.
	Reply ConntrackTuple `json:"reply"`
	// Timeout is the whole seconds the connection has left.
	Timeout uint32 `json:"timeout"`
	Mark    uint32 `json:"mark"`
	// Labels is the 128-bit label in hex, "" for none.
	Labels string `json:"labels,omitempty"`
	// TCP is a TCP connection's state: the one dump-conntrack shows,
	// and each end's (-m).
	TCP *ConntrackTCP `json:"tcp,omitempty"`
}

// ConntrackTuple is one direction of a connection. An ICMP tuple has
// ICMP, and ports 0.
type ConntrackTuple struct {
	Src     string         `json:"src"`
	Dst     string         `json:"dst"`
	SrcPort uint16         `json:"sport"`
	DstPort uint16         `json:"dport"`
	ICMP    *ConntrackICMP `json:"icmp,omitempty"`
}

// ConntrackICMP are an ICMP tuple's identifier, type and code.
type ConntrackICMP struct {
	ID   uint16 `json:"id"`
	Type uint8  `json:"type"`
	Code uint8  `json:"code"`
}

// ConntrackTCP is a TCP connection's state, as the kernel names states.
type ConntrackTCP struct {
	State      string `json:"state"`
	StateOrig  string `json:"state_orig"`
	StateReply string `json:"state_reply"`
}

// ConntrackStats are ct-stats-show's counts: as it prints them (Text),
// and the connections in all, by protocol (named as ct-stats-show
// names them: TCP, UDP, ICMP, ...) and TCP connections by state.
type ConntrackStats struct {
	Text      string         `json:"text"`
	Total     int            `json:"total"`
	Protocols map[string]int `json:"protocols,omitempty"`
	TCPStates map[string]int `json:"tcp_states,omitempty"`
}

// ConntrackLimits are ct-get-limits' answer: as it prints them (Text),
// the default limit (0: none), and the zones asked for, or all those with
// a limit of their own.
type ConntrackLimits struct {
	Text    string               `json:"text"`
	Default uint32               `json:"default"`
	Zones   []ConntrackZoneLimit `json:"zones,omitempty"`
}

// ConntrackZoneLimit is a zone's limit (0: unlimited, when it has none of
// its own and no default is set) and its connections.
type ConntrackZoneLimit struct {
	Zone  uint16 `json:"zone"`
	Limit uint32 `json:"limit"`
	Count uint32 `json:"count"`
}

// FastPathEntry is one entry of the in-kernel fast path: the exact flow
// it holds for, in flow syntax, what the XDP program does to its frames
// (as OVS's datapath actions), what it carried, and how long ago it last
// carried a frame. Stale entries are misses, left for the sweeper.
type FastPathEntry struct {
	Flow    string  `json:"flow"`
	Actions string  `json:"actions"`
	Packets uint64  `json:"packets"`
	Bytes   uint64  `json:"bytes"`
	UsedSec float64 `json:"used"`
	Stale   bool    `json:"stale,omitempty"`
}

// FastPathStatus are a bridge's fast path counters (pmd-stats-show).
type FastPathStatus struct {
	Hits            uint64 `json:"hits"`
	Installs        uint64 `json:"installs"`
	InstallFailures uint64 `json:"install_failures"`
	Evictions       uint64 `json:"evictions"`
	Entries         int    `json:"entries"`
	// Drops are the frames the XDP programs dropped, by reason
	// (bpf.DropReasons): the kernel's own count, apart from the
	// pipeline's drops, to which the rule drops are also credited.
	Drops map[string]uint64 `json:"drops"`
}

// GroupStatus is one group as dump-groups and dump-group-stats show it:
// its text as add-group takes it, and its counters, which include what
// the fast path carried.
type GroupStatus struct {
	ID          uint32         `json:"group_id"`
	Text        string         `json:"group"`
	DurationSec float64        `json:"duration"`
	RefCount    int            `json:"ref_count"`
	Packets     uint64         `json:"packet_count"`
	Bytes       uint64         `json:"byte_count"`
	Buckets     []BucketCounts `json:"buckets"`
}

// MeterStatus is one meter as dump-meters and meter-stats show it: as
// each prints it (Text, StatsText), and its counters, which include what
// the fast path carried.
type MeterStatus struct {
	ID          uint32       `json:"meter_id"`
	Text        string       `json:"meter"`
	StatsText   string       `json:"stats,omitempty"`
	FlowCount   uint32       `json:"flow_count"`
	Packets     uint64       `json:"packet_in_count"`
	Bytes       uint64       `json:"byte_in_count"`
	DurationSec float64      `json:"duration"`
	Bands       []BandCounts `json:"bands"`
}

// BandCounts are the frames and bytes one band of a meter applied to, in
// the meter's band order.
type BandCounts struct {
	Packets uint64 `json:"packet_count"`
	Bytes   uint64 `json:"byte_count"`
}

// BucketCounts are one bucket's counters, in the group's bucket order.
type BucketCounts struct {
	Packets uint64 `json:"packet_count"`
	Bytes   uint64 `json:"byte_count"`
}

// TableStatus is one table as dump-tables shows it: its rules, the frames
// looked up in it and those that met a rule (lookups less matched missed).
type TableStatus struct {
	Table   uint8  `json:"table"`
	Active  int    `json:"active"`
	Lookups uint64 `json:"lookup"`
	Matched uint64 `json:"matched"`
}

// DaemonStatus is the daemon's answer to status.
type DaemonStatus struct {
	PID int    `json:"pid"`
	DB  string `json:"db"`
}

// BridgeStatus is a bridge as `show`, `list-ports` and `dump-ports` see it.
type BridgeStatus struct {
	Name        string       `json:"name"`
	Ports       []PortStatus `json:"ports"`
	Flows       int          `json:"flows"`
	CacheHits   uint64       `json:"cache_hits"`
	CacheMisses uint64       `json:"cache_misses"`
	// CacheStale counts cached decisions translated again because a
	// table they looked in, or a MAC-table entry they relied on, changed
	// (part of CacheHits).
	CacheStale uint64 `json:"cache_stale"`
	// Drops are the frames the pipeline sent nowhere, by reason (rule,
	// table_miss, loop, ttl, no_copy, port_down) and the packet-ins lost
	// (controller_queue, controller_rate), also per input port in
	// PortStats; NORMAL's own drops are per port only.
	Drops map[string]uint64 `json:"pipeline_drops"`
	// Forwarder is the bridge's forwarding threads.
	Forwarder ForwarderStatus `json:"forwarder"`
	// FastPath is the in-kernel fast path; nil when the daemon runs
	// with --fast-path off.
	FastPath *FastPathStatus `json:"fastpath,omitempty"`
	// DatapathID is the bridge's OpenFlow datapath id, 16 hex digits.
	DatapathID string `json:"datapath_id"`
	// Controllers are the bridge's controller targets, in the order set,
	// with what the OpenFlow agent last said of each; FailMode is as set,
	// "" when it is not (standalone).
	Controllers []ControllerStatus `json:"controllers,omitempty"`
	FailMode    string             `json:"fail_mode,omitempty"`
}

// ForwarderStatus is where a bridge's forwarding threads run and how they
// have spent their time since the bridge was created, summed over them.
type ForwarderStatus struct {
	CPUs     []int   `json:"cpus,omitempty"` // one thread on each; none: one thread on any CPU
	BusyPoll bool    `json:"busy_poll"`
	BusySec  float64 `json:"busy_seconds"`
	IdleSec  float64 `json:"idle_seconds"`
}

// FlowStatus is one rule as dump-flows shows it.
type FlowStatus struct {
	Text        string  `json:"text"` // the line ovs-ofctl dump-flows would print
	Cookie      uint64  `json:"cookie"`
	DurationSec float64 `json:"duration"`
	Priority    uint16  `json:"priority"`
	Match       string  `json:"match"`
	Actions     string  `json:"actions"`
	Packets     uint64  `json:"n_packets"`
	Bytes       uint64  `json:"n_bytes"`
	IdleTimeout uint16  `json:"idle_timeout"`
	HardTimeout uint16  `json:"hard_timeout"`
	IdleAgeSec  int     `json:"idle_age"`
}

// Trace is what `trace` found for a packet: the rule it meets and what
// each of its actions does.
type Trace struct {
	Flow      string      `json:"flow"`       // the packet, in flow syntax
	Rule      *FlowStatus `json:"rule"`       // what it met in table 0; nil: nothing, it is dropped
	Steps     []TraceStep `json:"steps"`      // each lookup and action, in order
	FinalFlow string      `json:"final_flow"` // the packet after rewrites
	Outputs   []uint16    `json:"outputs"`    // ports the packet leaves by, 65533 the controller; empty: dropped
	// Malformed says why the datapath drops the packet before any rule
	// sees it; empty for a packet the flow table classifies.
	Malformed string `json:"malformed,omitempty"`
	// Dropped says why the packet went nowhere when the flow table is not
	// the reason: the spanning tree took it, or its input port does not
	// forward.
	Dropped string `json:"dropped,omitempty"`
	// FastPath says whether the in-kernel fast path would carry the
	// packet's flow ("yes"), or why not ("no (why)").
	FastPath string `json:"fastpath"`
}

// TraceStep is one step of the packet's way through the tables, in
// order: a lookup in a table (Lookup set; Rule is what it met, nil for a
// miss) or one action of the rule met last at that depth. Depth counts
// the resubmits that led there.
type TraceStep struct {
	Action string      `json:"action,omitempty"`
	Lookup bool        `json:"lookup,omitempty"`
	Rule   *FlowStatus `json:"rule,omitempty"`
	Table  uint8       `json:"table"`
	Depth  int         `json:"depth"`
	Notes  []string    `json:"notes,omitempty"`
}

// PortStatus is a port's configuration, how it was opened and its counters.
type PortStatus struct {
	PortConfig
	OFPort uint16 `json:"ofport"`
	// Error says why the port is down; empty for a working port. A port
	// that is down and open (its interface is administratively down) has
	// Info too.
	Error string    `json:"error,omitempty"`
	Info  PortInfo  `json:"info"`
	Stats PortStats `json:"stats"`
	// RSTP is the port's part in its bridge's spanning tree; nil when the
	// bridge runs none or the port takes no part.
	RSTP *RSTPPort `json:"rstp,omitempty"`
	// Warning says what a working port cannot do that its interface asks
	// for: carry the frames of its MTU.
	Warning string `json:"warning,omitempty"`
	// FastPath is "on" when the in-kernel fast path carries frames from
	// and to the port, else "off (why)".
	FastPath string `json:"fastpath,omitempty"`
	// Tunnel is an open tunnel port's way to its remote and drops.
	Tunnel *TunnelStatus `json:"tunnel,omitempty"`
}

// PortInfo describes how a port was opened (the switch's port.Info). Its
// fields are named in JSON as they are in Go.
type PortInfo struct {
	Kind     string // "afxdp", or for a tunnel its kind
	XDPMode  string // "native" or "generic": where the XDP program is attached
	BindMode string // "zerocopy" or "copy": how the sockets were bound
	Queues   int
	Ifindex  int // the interface the port opened; 0 for none
	// MultiBuffer says that a frame may span several buffers, so that
	// MaxFrame can exceed one.
	MultiBuffer bool
	MaxFrame    int // the longest frame the port carries, without FCS; 0: no limit
	MTU         int // the interface's MTU when the port was opened; 0 if unknown
}

// PortStats are a port's counters. Rx and Tx are the switch's view; the
// Kernel ones are the AF_XDP sockets' own (XDP_STATISTICS).
type PortStats struct {
	RxPackets uint64      `json:"rx_packets"`
	RxBytes   uint64      `json:"rx_bytes"`
	RxErrors  uint64      `json:"rx_errors"`
	TxPackets uint64      `json:"tx_packets"`
	TxBytes   uint64      `json:"tx_bytes"`
	TxDropped uint64      `json:"tx_dropped"`
	Kernel    KernelStats `json:"kernel"`
	// RxVLANDropped counts frames that NORMAL dropped because the port
	// does not carry their VLAN, RxReservedDropped those it dropped because
	// they were sent to a reserved group address.
	RxVLANDropped     uint64 `json:"rx_vlan_dropped"`
	RxReservedDropped uint64 `json:"rx_reserved_dropped"`
	// RxStormDropped counts frames NORMAL did not flood because of the
	// port's storm limit, RxSTPDropped frames that arrived while the
	// spanning tree kept the port from forwarding.
	RxStormDropped uint64 `json:"rx_storm_dropped"`
	RxSTPDropped   uint64 `json:"rx_stp_dropped"`
	// RxSplitHorizonDropped counts frames from a tunnel that NORMAL did
	// not send to a station learned on another tunnel.
	RxSplitHorizonDropped uint64 `json:"rx_split_horizon_dropped,omitempty"`
	// PipelineDropped counts the frames received on the port that the
	// pipeline sent nowhere, by reason (as BridgeStatus.Drops).
	PipelineDropped map[string]uint64 `json:"pipeline_dropped"`
	// FastPathTxDropped counts the frames the in-kernel fast path
	// redirected to the port that its interface did not take (a veth
	// peer without NAPI, a full ring); they are in TxDropped too.
	FastPathTxDropped uint64 `json:"fastpath_tx_dropped,omitempty"`
}

// KernelStats are a port's own counters (the switch's port.Stats): for
// AF_XDP, the kernel's XDP_STATISTICS summed over the port's sockets.
type KernelStats struct {
	RxDropped       uint64 `json:"rx_dropped"` // dropped by the kernel for reasons other than below
	RxInvalidDescs  uint64 `json:"rx_invalid_descs"`
	RxRingFull      uint64 `json:"rx_ring_full"`       // rx ring was full: the switch did not keep up
	RxFillRingEmpty uint64 `json:"rx_fill_ring_empty"` // no buffer to receive into
	TxInvalidDescs  uint64 `json:"tx_invalid_descs"`
	TxRingEmpty     uint64 `json:"tx_ring_empty"`
	// RxOversize counts frames longer than the port carries, dropped on
	// arrival: the port's own count, not the kernel's.
	RxOversize uint64 `json:"rx_oversize"`
	// TxRefused counts the frames the interface refused after the socket
	// took them, TxRefusedBytes their bytes: drops, not transmits.
	TxRefused      uint64 `json:"tx_refused"`
	TxRefusedBytes uint64 `json:"tx_refused_bytes"`
}

// FDBEntry is one learned MAC address.
type FDBEntry struct {
	Port   uint16 `json:"port"`
	VLAN   uint16 `json:"vlan"`
	MAC    string `json:"mac"`
	AgeSec int    `json:"age"`
}

// RSTPStatus is a bridge's spanning tree, as rstp-show reports it.
type RSTPStatus struct {
	Bridge          string     `json:"bridge"`
	BridgeID        RSTPID     `json:"bridge_id"`
	RootID          RSTPID     `json:"root_id"` // with the times this bridge takes from the root
	IsRoot          bool       `json:"is_root"`
	RootPort        string     `json:"root_port,omitempty"`
	RootPathCost    uint32     `json:"root_path_cost"`
	TopologyChanges uint64     `json:"topology_changes"`
	BPDUsDropped    uint64     `json:"bpdus_dropped"` // the queue to the machines was full
	Ports           []RSTPPort `json:"ports"`
	Unsettled       uint64     `json:"unsettled,omitempty"`
	ForceVersion    uint8      `json:"force_protocol_version"`
	TransmitHold    uint16     `json:"transmit_hold_count"`
}

// RSTPID is a bridge identifier and the times that go with it.
type RSTPID struct {
	ID           string `json:"id"` // 8000.0a1b2c3d4e5f
	Priority     uint16 `json:"priority"`
	Address      string `json:"address"`
	HelloTime    uint16 `json:"hello_time"`
	MaxAge       uint16 `json:"max_age"`
	ForwardDelay uint16 `json:"forward_delay"`
}

// RSTPPort is one port's part in the spanning tree.
type RSTPPort struct {
	Name     string `json:"name"`
	OFPort   uint16 `json:"ofport"`
	Number   uint16 `json:"port_number"`
	Priority uint8  `json:"priority"`
	PathCost uint32 `json:"path_cost"`
	Role     string `json:"role"`
	State    string `json:"state"`
	Edge     bool   `json:"edge"`
	// Protocol is "rstp", or "stp" once the port heard an 802.1D bridge
	// and fell back to its BPDUs.
	Protocol         string `json:"protocol"`
	DesignatedBridge string `json:"designated_bridge"`
	DesignatedPort   string `json:"designated_port"` // priority.number, as 128.2
	RxBPDUs          uint64 `json:"rx_bpdus"`
	TxBPDUs          uint64 `json:"tx_bpdus"`
	RxDropped        uint64 `json:"rx_dropped"` // BPDUs not taken: invalid, or the port's own
}

// ControllerStatus is one of a bridge's targets with what the OpenFlow
// agent last said of it.
type ControllerStatus struct {
	Target    string `json:"target"`
	Connected bool   `json:"is_connected"`
	Role      string `json:"role,omitempty"` // the controller's role, as the agent names it
}

// TunnelStatus is what show says of a tunnel port: how its remote is
// reached now, and what it and its underlay dropped.
type TunnelStatus struct {
	Underlay string `json:"underlay"` // the interface its frames leave by
	// UnderlayInfo is how the underlay's AF_XDP port was opened.
	UnderlayInfo PortInfo `json:"underlay_info"`
	Local        string   `json:"local_ip"` // the address it sends from
	NextHop      string   `json:"next_hop"`
	NextHopMAC   string   `json:"next_hop_mac,omitempty"` // empty: not resolved yet
	// Unreachable says why frames to it are dropped now, if they are.
	Unreachable   string        `json:"unreachable,omitempty"`
	Drops         TunnelDrops   `json:"drops"`
	UnderlayDrops UnderlayDrops `json:"underlay_drops"`
}

// TunnelDrops are what a tunnel port dropped on its own account: frames
// too long to encapsulate within its underlay's MTU, and frames sent
// while its remote was unreachable.
type TunnelDrops struct {
	TxOversize uint64 `json:"tx_oversize"`
	TxNoRoute  uint64 `json:"tx_no_route"`
}

// UnderlayDrops are the frames an underlay received for its tunnels and
// dropped, by why: none of them reaches a bridge.
type UnderlayDrops struct {
	NotTunnel     uint64 `json:"not_tunnel"` // for an (address, port) no longer listened on
	BadOuter      uint64 `json:"bad_outer"`
	Fragment      uint64 `json:"fragment"`
	BadHeader     uint64 `json:"bad_header"`
	CriticalOpt   uint64 `json:"critical_option"`
	ShortInner    uint64 `json:"short_inner"`
	UnknownRemote uint64 `json:"unknown_remote"`
	WrongKey      uint64 `json:"wrong_key"`
}
