package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/xswitch/xswitch/control/api"
	vswitch "github.com/xswitch/xswitch/switch"
	"github.com/xswitch/xswitch/tunnel"
)

// Output formats, chosen with --format.
const (
	formatText = "text"
	formatJSON = "json"
)

// checkFormat refuses a --format the verbs cannot print.
func checkFormat(format string) error {
	switch format {
	case formatText, formatJSON:
		return nil
	}
	return fmt.Errorf("unknown --format %q (want text or json)", format)
}

// emit prints a read verb's answer: v as indented JSON with --format json,
// else what text prints for people.
func (c *cli) emit(w io.Writer, v any, text func(io.Writer)) error {
	if c.format != formatJSON {
		text(w)
		return nil
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the answer as JSON: %w", err)
	}
	_, err = fmt.Fprintf(w, "%s\n", out)
	return err
}

// The JSON that --format json prints. These types are the scripting
// interface the README documents: they belong to the CLI rather than to
// the daemon's wire protocol so that the protocol can change without
// breaking scripts. Fields are added, never renamed or removed; lists are
// [] rather than null when empty.

// orEmpty is s, or an empty list for none. The daemon's answers leave
// empty lists out, so every list that --format json prints comes through
// here or is made by its constructor, as the README promises [] and never
// null.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// bridgeListJSON is list-br's answer.
type bridgeListJSON struct {
	Bridges []string `json:"bridges"`
}

// portListJSON is list-ports' answer.
type portListJSON struct {
	Bridge string   `json:"bridge"`
	Ports  []string `json:"ports"`
}

// showJSON is show's answer.
type showJSON struct {
	Bridges []showBridgeJSON `json:"bridges"`
}

type showBridgeJSON struct {
	Name       string `json:"name"`
	DatapathID string `json:"datapath_id"` // 16 hex digits
	// Controllers are the bridge's OpenFlow controller targets, with
	// whether a controller is connected on each; FailMode is as set,
	// absent when it is not (standalone).
	Controllers []showControllerJSON `json:"controllers"`
	FailMode    string               `json:"fail_mode,omitempty"`
	Ports       []showPortJSON       `json:"ports"`
}

type showControllerJSON struct {
	Target      string `json:"target"`
	IsConnected bool   `json:"is_connected"`
	Role        string `json:"role,omitempty"`
}

type showPortJSON struct {
	Name   string `json:"name"`
	OFPort uint16 `json:"ofport"`
	State  string `json:"state"`           // "up" or "down"
	Error  string `json:"error,omitempty"` // why a port is down
	Mode   string `json:"mode"`            // as configured: auto, zerocopy, copy, generic
	Type   string `json:"type,omitempty"`  // "afxdp"; empty for a port that is not open
	XDP    string `json:"xdp,omitempty"`   // "native" or "generic"
	Bind   string `json:"bind,omitempty"`  // "zerocopy" or "copy"
	Queues int    `json:"queues,omitempty"`
	// A veth pair that add-port --netns created.
	Netns   string `json:"netns,omitempty"`
	Peer    string `json:"peer,omitempty"`
	Address string `json:"address,omitempty"`
	// The device add-port --type created: PortType is "tap" or "internal"
	// ("type" being the AF_XDP kind, as it always was), Device an internal
	// port's switch end, Owner a tap's user.
	PortType string `json:"port_type,omitempty"`
	Device   string `json:"device,omitempty"`
	Owner    int    `json:"owner,omitempty"`
	// VLAN configuration; VLANMode is the mode in effect (access when only
	// a tag was given), empty for a port with none: a trunk of every VLAN.
	VLANMode string   `json:"vlan_mode,omitempty"`
	Tag      uint16   `json:"tag,omitempty"`
	Trunks   []uint16 `json:"trunks,omitempty"`
	// StormLimit is other_config:storm-limit, in frames/s; absent: none.
	StormLimit uint64 `json:"storm_limit,omitempty"`
	// RSTPRole and RSTPState are the port's in its bridge's spanning
	// tree; absent when the bridge runs none or the port takes no part.
	RSTPRole  string `json:"rstp_role,omitempty"`
	RSTPState string `json:"rstp_state,omitempty"`
	// MTU is the interface's MTU (for a port that is down, what --mtu
	// asked for); MaxFrame the longest frame the port carries; Warning
	// why it cannot carry every frame of that MTU.
	MTU      int    `json:"mtu,omitempty"`
	MaxFrame int    `json:"max_frame,omitempty"`
	Warning  string `json:"warning,omitempty"`
	// FastPath is "on", or "off (why)", for an open port.
	FastPath string `json:"fastpath,omitempty"`
	// A tunnel port (PortType vxlan or geneve): its options as given,
	// and Tunnel how it reaches its remote now, while it is open.
	RemoteIP string          `json:"remote_ip,omitempty"`
	LocalIP  string          `json:"local_ip,omitempty"`
	Key      string          `json:"key,omitempty"`
	DstPort  uint16          `json:"dst_port,omitempty"`
	Tunnel   *showTunnelJSON `json:"tunnel,omitempty"`
}

// showTunnelJSON is how an open tunnel port reaches its remote: the
// underlay interface and how its AF_XDP port was opened, the address it
// sends from, the next hop and its MAC address (empty: not resolved yet),
// and why it cannot reach the remote now, if it cannot.
type showTunnelJSON struct {
	Underlay    string `json:"underlay"`
	XDP         string `json:"xdp"`
	Bind        string `json:"bind"`
	LocalIP     string `json:"local_ip"`
	NextHop     string `json:"next_hop"`
	NextHopMAC  string `json:"next_hop_mac,omitempty"`
	Unreachable string `json:"unreachable,omitempty"`
}

func toShowJSON(bridges []api.BridgeStatus) showJSON {
	out := showJSON{Bridges: make([]showBridgeJSON, 0, len(bridges))}
	for _, b := range bridges {
		jb := showBridgeJSON{Name: b.Name, DatapathID: b.DatapathID, FailMode: b.FailMode,
			Controllers: make([]showControllerJSON, 0, len(b.Controllers)), Ports: make([]showPortJSON, 0, len(b.Ports))}
		for _, c := range b.Controllers {
			jb.Controllers = append(jb.Controllers, showControllerJSON{Target: c.Target, IsConnected: c.Connected, Role: c.Role})
		}
		for _, p := range b.Ports {
			jp := showPortJSON{
				Name: p.Name, OFPort: p.OFPort, State: "up", Error: p.Error, Mode: p.Mode,
				Netns: p.Netns, Peer: p.Peer, Address: p.Address,
				PortType: p.Type, Device: p.Device, Owner: p.Owner,
				VLANMode: effectiveVLANMode(p.PortConfig), Tag: p.Tag, Trunks: p.Trunks,
				StormLimit: stormLimit(p.PortConfig),
				RemoteIP:   p.RemoteIP, LocalIP: p.LocalIP, Key: p.Key, DstPort: p.DstPort,
			}
			if t := p.Tunnel; t != nil {
				jp.Tunnel = &showTunnelJSON{Underlay: t.Underlay, XDP: t.UnderlayInfo.XDPMode, Bind: t.UnderlayInfo.BindMode,
					LocalIP: t.Local, NextHop: t.NextHop, NextHopMAC: t.NextHopMAC, Unreachable: t.Unreachable}
			}
			if p.RSTP != nil {
				jp.RSTPRole, jp.RSTPState = p.RSTP.Role, p.RSTP.State
			}
			if jp.Mode == "" {
				jp.Mode = "auto"
			}
			if p.Error != "" {
				jp.State = "down"
			}
			if p.Info.Kind != "" { // open, if perhaps down
				jp.Type, jp.XDP, jp.Bind, jp.Queues = p.Info.Kind, p.Info.XDPMode, p.Info.BindMode, p.Info.Queues
			}
			jp.MTU, jp.MaxFrame, jp.Warning, jp.FastPath = shownMTU(p), p.Info.MaxFrame, p.Warning, p.FastPath
			jb.Ports = append(jb.Ports, jp)
		}
		out.Bridges = append(out.Bridges, jb)
	}
	return out
}

// shownMTU is the MTU show reports: the interface's, or while the port is
// down what --mtu asked for.
func shownMTU(p api.PortStatus) int {
	if p.Info.MTU != 0 {
		return p.Info.MTU
	}
	return p.MTU
}

// portCounters are a port's counters as dump-ports and top count them.
// Frames the kernel could not hand to the switch are rx drops, as they
// would be on a NIC, and so are the frames NORMAL dropped (rxDrops says
// why); frames too malformed to classify are rx errors, and so are frames
// longer than the port carries, as a NIC counts them (rx_length_errors).
type portCounters struct {
	RxPackets uint64 `json:"rx_packets"`
	RxBytes   uint64 `json:"rx_bytes"`
	RxDropped uint64 `json:"rx_dropped"`
	RxErrors  uint64 `json:"rx_errors"`
	TxPackets uint64 `json:"tx_packets"`
	TxBytes   uint64 `json:"tx_bytes"`
	TxDropped uint64 `json:"tx_dropped"`
	TxErrors  uint64 `json:"tx_errors"`
}

func countersOf(p api.PortStatus) portCounters {
	s, k := p.Stats, p.Stats.Kernel
	return portCounters{
		RxPackets: s.RxPackets,
		RxBytes:   s.RxBytes,
		// The kernel counts a frame lost to an empty fill ring in both
		// rx_dropped and fill_ring_empty: count it once.
		RxDropped: k.RxDropped + k.RxRingFull + dropsOf(p).total(),
		RxErrors:  s.RxErrors + k.RxInvalidDescs + k.RxOversize,
		TxPackets: s.TxPackets,
		TxBytes:   s.TxBytes,
		TxDropped: s.TxDropped,
		TxErrors:  k.TxInvalidDescs,
	}
}

// dumpPortsJSON is dump-ports' answer.
type dumpPortsJSON struct {
	Bridge string         `json:"bridge"`
	Ports  []portDumpJSON `json:"ports"`
}

type portDumpJSON struct {
	Name   string `json:"name"`
	OFPort uint16 `json:"ofport"`
	portCounters
	XSK   xskJSON   `json:"xsk"`
	Drops dropsJSON `json:"drops"`
	// PipelineDrops are the frames received on the port that the
	// pipeline sent nowhere, by reason; they are not in rx_dropped.
	PipelineDrops map[string]uint64 `json:"pipeline_drops"`
	// FastPathTxDropped are the frames the fast path redirected to the
	// port that its interface did not take; they are in tx_dropped.
	FastPathTxDropped uint64 `json:"fastpath_tx_dropped,omitempty"`
	// Tunnel are a tunnel port's own drops and its underlay's.
	Tunnel *tunnelDropsJSON `json:"tunnel,omitempty"`
}

// tunnelDropsJSON are what a tunnel port dropped on its own account (in
// tx_dropped) and what its underlay dropped of the frames it received for
// its tunnels, which reached no port.
type tunnelDropsJSON struct {
	Underlay      string            `json:"underlay"`
	TxOversize    uint64            `json:"tx_oversize"`
	TxNoRoute     uint64            `json:"tx_no_route"`
	UnderlayDrops api.UnderlayDrops `json:"underlay_drops"`
}

// dropsJSON are the frames NORMAL dropped, by reason, named as on
// dump-ports' drops line; all of them count in rx_dropped.
type dropsJSON struct {
	VLAN     uint64 `json:"vlan"`     // in a VLAN the port does not carry
	Reserved uint64 `json:"reserved"` // to a reserved group address, without forward-bpdu
	Storm    uint64 `json:"storm"`    // flooded beyond the port's storm limit
	STP      uint64 `json:"stp"`      // arrived while the spanning tree kept the port from forwarding
	// SplitHorizon: from a tunnel, to a station learned on another tunnel
	SplitHorizon uint64 `json:"split_horizon"`
}

func dropsOf(p api.PortStatus) dropsJSON {
	s := p.Stats
	return dropsJSON{VLAN: s.RxVLANDropped, Reserved: s.RxReservedDropped, Storm: s.RxStormDropped, STP: s.RxSTPDropped,
		SplitHorizon: s.RxSplitHorizonDropped}
}

func (d dropsJSON) total() uint64 { return d.VLAN + d.Reserved + d.Storm + d.STP + d.SplitHorizon }

// tunnelOverhead is what encapsulation adds to a frame, less the outer
// Ethernet header: what the underlay's MTU must have beyond the tunnel's.
const tunnelOverhead = tunnel.Overhead - 14

// pipelineDropsOf gives every reason, zero for a port that is down.
func pipelineDropsOf(p api.PortStatus) map[string]uint64 {
	if p.Stats.PipelineDropped == nil {
		return vswitch.DropCounts{}.ByReason()
	}
	return p.Stats.PipelineDropped
}

// xskJSON are the AF_XDP sockets' own statistics, named as on dump-ports'
// xsk line.
type xskJSON struct {
	RxDropped     uint64 `json:"rx_dropped"`
	RxRingFull    uint64 `json:"rx_ring_full"`
	FillRingEmpty uint64 `json:"fill_ring_empty"`
	RxInvalid     uint64 `json:"rx_invalid"`
	TxInvalid     uint64 `json:"tx_invalid"`
	TxRingEmpty   uint64 `json:"tx_ring_empty"`
	// RxOversize counts frames longer than the port carries, which the XDP
	// program dropped: not the kernel's count, but where one looks for it.
	RxOversize uint64 `json:"rx_oversize"`
	// TxRefused counts the frames the interface refused after the socket
	// took them (also in tx_dropped).
	TxRefused uint64 `json:"tx_refused"`
}

func toDumpPortsJSON(bridge string, ports []api.PortStatus) dumpPortsJSON {
	out := dumpPortsJSON{Bridge: bridge, Ports: make([]portDumpJSON, 0, len(ports))}
	for _, p := range ports {
		k := p.Stats.Kernel
		out.Ports = append(out.Ports, portDumpJSON{
			Name: p.Name, OFPort: p.OFPort, portCounters: countersOf(p),
			XSK: xskJSON{
				RxDropped: k.RxDropped, RxRingFull: k.RxRingFull, FillRingEmpty: k.RxFillRingEmpty,
				RxInvalid: k.RxInvalidDescs, TxInvalid: k.TxInvalidDescs, TxRingEmpty: k.TxRingEmpty,
				RxOversize: k.RxOversize, TxRefused: k.TxRefused,
			},
			Drops:             dropsOf(p),
			PipelineDrops:     pipelineDropsOf(p),
			FastPathTxDropped: p.Stats.FastPathTxDropped,
			Tunnel:            tunnelDropsOf(p),
		})
	}
	return out
}

func tunnelDropsOf(p api.PortStatus) *tunnelDropsJSON {
	t := p.Tunnel
	if t == nil {
		return nil
	}
	return &tunnelDropsJSON{Underlay: t.Underlay, TxOversize: t.Drops.TxOversize, TxNoRoute: t.Drops.TxNoRoute, UnderlayDrops: t.UnderlayDrops}
}

// fdbJSON is fdb-show's answer.
type fdbJSON struct {
	Bridge  string         `json:"bridge"`
	Entries []fdbEntryJSON `json:"entries"`
}

type fdbEntryJSON struct {
	Port   uint16 `json:"port"`
	VLAN   uint16 `json:"vlan"`
	MAC    string `json:"mac"`
	AgeSec int    `json:"age"`
}

func toFDBJSON(bridge string, entries []api.FDBEntry) fdbJSON {
	out := fdbJSON{Bridge: bridge, Entries: make([]fdbEntryJSON, 0, len(entries))}
	for _, e := range entries {
		out.Entries = append(out.Entries, fdbEntryJSON(e))
	}
	return out
}

// flowsJSON is dump-flows' answer.
type flowsJSON struct {
	Bridge string     `json:"bridge"`
	Flows  []flowJSON `json:"flows"`
}

// flowJSON is one rule. The cookie is a hex string, as ovs-ofctl writes
// it, because JSON readers that hold numbers as doubles would round a
// 64-bit cookie.
type flowJSON struct {
	Cookie      string  `json:"cookie"`
	DurationSec float64 `json:"duration"`
	Table       int     `json:"table"`
	Priority    uint16  `json:"priority"`
	Match       string  `json:"match"`
	Actions     string  `json:"actions"`
	Packets     uint64  `json:"n_packets"`
	Bytes       uint64  `json:"n_bytes"`
	IdleTimeout uint16  `json:"idle_timeout"`
	HardTimeout uint16  `json:"hard_timeout"`
	IdleAgeSec  int     `json:"idle_age"`
	Text        string  `json:"text"` // the dump-flows line, which add-flow accepts back
}

func toFlowJSON(f api.FlowStatus) flowJSON {
	return flowJSON{
		Cookie: fmt.Sprintf("%#x", f.Cookie), DurationSec: f.DurationSec, Priority: f.Priority,
		Match: f.Match, Actions: f.Actions, Packets: f.Packets, Bytes: f.Bytes,
		IdleTimeout: f.IdleTimeout, HardTimeout: f.HardTimeout, IdleAgeSec: f.IdleAgeSec, Text: f.Text,
	}
}

func toFlowsJSON(bridge string, flows []api.FlowStatus) flowsJSON {
	out := flowsJSON{Bridge: bridge, Flows: make([]flowJSON, 0, len(flows))}
	for _, f := range flows {
		out.Flows = append(out.Flows, toFlowJSON(f))
	}
	return out
}

// traceJSON is trace's answer.
type traceJSON struct {
	Bridge    string          `json:"bridge"`
	Flow      string          `json:"flow"`
	Rule      *flowJSON       `json:"rule"` // null: no rule matched, the packet is dropped
	Steps     []traceStepJSON `json:"steps"`
	FinalFlow string          `json:"final_flow"`
	Outputs   []uint16        `json:"outputs"` // 65533: the controller; empty: dropped
	// Malformed says why the datapath drops the packet before any rule.
	Malformed string `json:"malformed,omitempty"`
	// Dropped says why it went nowhere when RSTP, not the table, is why.
	Dropped string `json:"dropped,omitempty"`
	// FastPath is "yes" when the in-kernel fast path would carry the
	// flow, else "no (why)".
	FastPath string `json:"fastpath"`
}

// traceStepJSON is a lookup in a table (lookup true, rule what it met:
// null for a miss) or an action of the rule met last at that depth.
type traceStepJSON struct {
	Action string    `json:"action,omitempty"`
	Lookup bool      `json:"lookup,omitempty"`
	Rule   *flowJSON `json:"rule,omitempty"`
	Table  uint8     `json:"table"`
	Depth  int       `json:"depth"` // resubmits deep
	Notes  []string  `json:"notes"`
}

func toTraceJSON(bridge string, tr *api.Trace) traceJSON {
	out := traceJSON{
		Bridge: bridge, Flow: tr.Flow, FinalFlow: tr.FinalFlow, Malformed: tr.Malformed, Dropped: tr.Dropped, FastPath: tr.FastPath,
		Steps:   make([]traceStepJSON, 0, len(tr.Steps)),
		Outputs: append([]uint16{}, tr.Outputs...),
	}
	if tr.Rule != nil {
		rule := toFlowJSON(*tr.Rule)
		out.Rule = &rule
	}
	for _, s := range tr.Steps {
		step := traceStepJSON{Action: s.Action, Lookup: s.Lookup, Table: s.Table, Depth: s.Depth, Notes: append([]string{}, s.Notes...)}
		if s.Rule != nil {
			rule := toFlowJSON(*s.Rule)
			step.Rule = &rule
		}
		out.Steps = append(out.Steps, step)
	}
	return out
}

// pmdStatsJSON is pmd-stats-show's answer.
type pmdStatsJSON struct {
	Bridges []pmdBridgeJSON `json:"bridges"`
}

type pmdBridgeJSON struct {
	Name            string `json:"name"`
	PacketsReceived uint64 `json:"packets_received"`
	Flows           int    `json:"flows"`
	CacheHits       uint64 `json:"cache_hits"`
	CacheMisses     uint64 `json:"cache_misses"`
	CacheStale      uint64 `json:"cache_stale"`
	// PipelineDrops are the frames the pipeline sent nowhere, by reason.
	PipelineDrops map[string]uint64 `json:"pipeline_drops"`

	Forwarder api.ForwarderStatus `json:"forwarder"`
	FastPath  *api.FastPathStatus `json:"fastpath,omitempty"`
}

func toPMDStatsJSON(bridges []api.BridgeStatus) pmdStatsJSON {
	out := pmdStatsJSON{Bridges: make([]pmdBridgeJSON, 0, len(bridges))}
	for _, b := range bridges {
		out.Bridges = append(out.Bridges, pmdBridgeJSON{
			Name: b.Name, PacketsReceived: packetsReceived(b), Flows: b.Flows,
			CacheHits: b.CacheHits, CacheMisses: b.CacheMisses, CacheStale: b.CacheStale, PipelineDrops: b.Drops, Forwarder: b.Forwarder, FastPath: b.FastPath,
		})
	}
	return out
}

func packetsReceived(b api.BridgeStatus) uint64 {
	var rx uint64
	for _, p := range b.Ports {
		rx += p.Stats.RxPackets
	}
	return rx
}

// portNames are a bridge's port names, sorted.
func portNames(b api.BridgeStatus) []string {
	names := make([]string, 0, len(b.Ports))
	for _, p := range b.Ports {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}

// fastPathJSON is dump-fastpath's answer.
type fastPathJSON struct {
	Bridge  string              `json:"bridge"`
	Entries []api.FastPathEntry `json:"entries"`
}

// tablesJSON is dump-tables' answer: every table, 0 to 254.
type tablesJSON struct {
	Bridge string            `json:"bridge"`
	Tables []api.TableStatus `json:"tables"`
}
