package control

// What the verbs that only read report: show, dump-tables and fdb-show,
// and the ports as the daemon knows them, which the OpenFlow agent and
// the metrics endpoint read too.

import (
	"slices"
	"strings"

	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/control/store"
	"github.com/xswitch/xswitch/port"
	"github.com/xswitch/xswitch/port/afxdp"
	vswitch "github.com/xswitch/xswitch/switch"
)

// show describes every bridge, or only the named one.
func (d *Daemon) show(only string) ([]api.BridgeStatus, error) {
	if only != "" {
		if _, err := d.bridge(only); err != nil {
			return nil, err
		}
	}
	out := []api.BridgeStatus{}
	for _, bc := range d.cfg.Bridges {
		if only != "" && bc.Name != only {
			continue
		}
		b := d.bridges[bc.Name]
		b.SyncFastPath() // so that the counters include what the kernel carried
		bs := api.BridgeStatus{Name: bc.Name, Ports: []api.PortStatus{}, Flows: b.Flows().Len()}
		if st, ok := b.FastPathStats(); ok {
			bs.FastPath = &api.FastPathStatus{Hits: st.Hits, Installs: st.Installs, InstallFailures: st.InstallFailures,
				Evictions: st.Evictions, Entries: st.Entries, Drops: st.Drops}
		}
		settings, _ := controllerSettingsOf(&bc) // validated
		bs.DatapathID, bs.Controllers, bs.FailMode = formatDatapathID(settings.DatapathID), d.controllers.statusOf(&bc), bc.FailMode
		bs.CacheHits, bs.CacheMisses, bs.CacheStale = b.CacheStats()
		bs.Drops = b.PipelineDrops().ByReason()
		busy, idle := b.ForwarderTime()
		bs.Forwarder = api.ForwarderStatus{
			CPUs: d.bridgeOpts.CPUs, BusyPoll: d.bridgeOpts.BusyPoll,
			BusySec: busy.Seconds(), IdleSec: idle.Seconds(),
		}
		st, _ := d.rstpStatus(bc.Name)
		stp := portStates(st)
		for _, cp := range d.configuredPorts(b, &bc) {
			ps := api.PortStatus{PortConfig: cp.PortConfig, OFPort: cp.OFPort, Stats: portStats(cp.counts)}
			if cp.open {
				ps.Info, ps.FastPath, ps.Tunnel = portInfo(cp.status.Info), cp.status.FastPath, d.tunnelStatus(cp.Name)
				if ps.Tunnel == nil {
					ps.Warning = afxdp.MTUProblem(cp.status.Info)
				}
				if p, ok := stp[cp.Name]; ok {
					ps.RSTP = &p
				}
			}
			if cp.down != nil {
				ps.Error = cp.down.Error()
			}
			bs.Ports = append(bs.Ports, ps)
		}
		out = append(out, bs)
	}
	slices.SortFunc(out, func(a, b api.BridgeStatus) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// configuredPort is one of a bridge's configured ports with what the
// daemon knows of it now.
type configuredPort struct {
	api.PortConfig
	open   bool               // the bridge has it
	status vswitch.PortStatus // what the bridge says of it, when open
	// down says why the port carries nothing: it is not open, or its
	// interface is administratively down; nil when it forwards.
	down error
	// counts are what the port counted, while it is open and before its
	// interface (or underlay) last went away.
	counts vswitch.PortStats
}

// configuredPorts are bc's ports, the ports of the bridge b, in OpenFlow
// port order.
func (d *Daemon) configuredPorts(b *vswitch.Bridge, bc *store.BridgeConfig) []configuredPort {
	live := map[string]vswitch.PortStatus{}
	for _, ps := range b.Ports() {
		live[ps.Name] = ps
	}
	out := make([]configuredPort, 0, len(bc.Ports))
	for _, pc := range bc.Ports {
		cp := configuredPort{PortConfig: pc, counts: d.carried[pc.Name]}
		cp.status, cp.open = live[pc.Name]
		switch {
		case !cp.open:
			cp.down = d.down[pc.Name]
		case d.opened[pc.Name].AdminDown:
			cp.down = errAdminDown
		}
		if cp.open {
			cp.counts = cp.counts.Plus(cp.status.Stats)
		}
		out = append(out, cp)
	}
	slices.SortFunc(out, func(a, b configuredPort) int { return int(a.OFPort) - int(b.OFPort) })
	return out
}

// portStats are a port's counters as the protocol gives them.
func portStats(s vswitch.PortStats) api.PortStats {
	return api.PortStats{
		RxPackets: s.RxPackets, RxBytes: s.RxBytes, RxErrors: s.RxErrors,
		TxPackets: s.TxPackets, TxBytes: s.TxBytes, TxDropped: s.TxDropped,
		RxVLANDropped: s.RxVLANDropped, RxReservedDropped: s.RxReservedDropped,
		RxStormDropped: s.RxStormDropped, RxSTPDropped: s.RxSTPDropped,
		RxSplitHorizonDropped: s.RxSplitHorizonDropped,
		PipelineDropped:       s.PipelineDropped.ByReason(),
		Kernel:                kernelStats(s.Port),
		FastPathTxDropped:     s.FastPathTxDropped,
	}
}

// kernelStats are a port's own counters as the protocol gives them.
func kernelStats(s port.Stats) api.KernelStats {
	return api.KernelStats{
		RxDropped: s.RxDropped, RxInvalidDescs: s.RxInvalidDescs, RxRingFull: s.RxRingFull, RxFillRingEmpty: s.RxFillRingEmpty,
		TxInvalidDescs: s.TxInvalidDescs, TxRingEmpty: s.TxRingEmpty, RxOversize: s.RxOversize,
		TxRefused: s.TxRefused, TxRefusedBytes: s.TxRefusedBytes,
	}
}

// portInfo is how a port was opened, as the protocol gives it.
func portInfo(i port.Info) api.PortInfo {
	return api.PortInfo{
		Kind: i.Kind, XDPMode: i.XDPMode, BindMode: i.BindMode, Queues: i.Queues, Ifindex: i.Ifindex,
		MultiBuffer: i.MultiBuffer, MaxFrame: i.MaxFrame, MTU: i.MTU,
	}
}

func (d *Daemon) dumpTables(bridge string) ([]api.TableStatus, error) {
	b, err := d.bridge(bridge)
	if err != nil {
		return nil, err
	}
	b.SyncFastPath()
	var out []api.TableStatus
	for _, t := range b.TableStats() {
		out = append(out, api.TableStatus{Table: t.Table, Active: t.Active, Lookups: t.Lookups, Matched: t.Matched})
	}
	return out, nil
}

func (d *Daemon) fdb(bridge string) ([]api.FDBEntry, error) {
	b, err := d.bridge(bridge)
	if err != nil {
		return nil, err
	}
	out := []api.FDBEntry{}
	for _, e := range b.FDB() {
		out = append(out, api.FDBEntry{
			Port:   e.Port,
			VLAN:   e.VLAN,
			MAC:    formatMAC(e.MAC),
			AgeSec: int(e.Age.Seconds()),
		})
	}
	return out, nil
}
