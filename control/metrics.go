package control

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/xswitch/xswitch/conntrack"
	"github.com/xswitch/xswitch/port"
	vswitch "github.com/xswitch/xswitch/switch"
)

// BridgeMetrics is a bridge as the metrics endpoint sees it: its
// counters as the switch keeps them, and figures that cost the forwarder
// a request to gather and so are left out of every show.
type BridgeMetrics struct {
	Name                               string
	Flows                              int
	CacheHits, CacheMisses, CacheStale uint64
	MACEntries                         int
	ForwarderBusy, ForwarderIdle       time.Duration
	Drops                              vswitch.DropCounts
	// Tables are the tables that hold rules or have seen lookups.
	Tables   []vswitch.TableStats
	FastPath *vswitch.FastPathStats // nil: the bridge has no fast path
	RSTP     *RSTPMetrics           // nil: the bridge runs no spanning tree
	Ports    []PortMetrics          // in OpenFlow port order
}

// RSTPMetrics are the figures of a bridge's spanning tree.
type RSTPMetrics struct {
	IsRoot          bool
	TopologyChanges uint64
	BPDUsDropped    uint64 // the queue to the machines was full
}

// PortMetrics is one configured port.
type PortMetrics struct {
	Name string
	// Up says the port forwards: it is open, and its interface is up.
	Up bool
	// Info is how the port was opened; its Kind is empty for a port that
	// never was.
	Info  port.Info
	Stats vswitch.PortStats
	// FastPath is "on" when the in-kernel fast path carries the port's
	// frames, else "off (why)"; empty when the port is not open.
	FastPath string
	// RSTPRole and RSTPState are the port's part in the spanning tree;
	// empty when it takes none.
	RSTPRole, RSTPState string
}

// Metrics describes every bridge for a scrape, in the order of their
// names. It reads counters that the forwarders publish atomically and
// asks each forwarder once, between two batches, for its MAC table's
// size; it never stops forwarding. It runs under the verb lock, so a
// scrape sees no half-applied verb.
func (d *Daemon) Metrics() []BridgeMetrics {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.bridges) < len(d.cfg.Bridges) { // closed: the bridges are gone
		return nil
	}
	out := make([]BridgeMetrics, 0, len(d.cfg.Bridges))
	for i := range d.cfg.Bridges {
		bc := &d.cfg.Bridges[i]
		b := d.bridges[bc.Name]
		b.SyncFastPath() // so that the counters include what the kernel carried
		m := BridgeMetrics{Name: bc.Name, Flows: b.Flows().Len(), MACEntries: b.FDBSize(), Drops: b.PipelineDrops()}
		m.CacheHits, m.CacheMisses, m.CacheStale = b.CacheStats()
		m.ForwarderBusy, m.ForwarderIdle = b.ForwarderTime()
		if fp, ok := b.FastPathStats(); ok {
			m.FastPath = &fp
		}
		for _, t := range b.TableStats() {
			if t.Active > 0 || t.Lookups > 0 {
				m.Tables = append(m.Tables, t)
			}
		}
		st, ok := d.rstpStatus(bc.Name)
		if ok {
			m.RSTP = &RSTPMetrics{IsRoot: st.IsRoot, TopologyChanges: st.TopologyChanges, BPDUsDropped: st.BPDUsDropped}
		}
		stp := portStates(st)
		for _, cp := range d.configuredPorts(b, bc) {
			p := PortMetrics{Name: cp.Name, Up: cp.down == nil, Stats: cp.counts}
			if cp.open {
				p.Info, p.FastPath = cp.status.Info, cp.status.FastPath
				if r, ok := stp[cp.Name]; ok {
					p.RSTPRole, p.RSTPState = r.Role, r.State
				}
			}
			m.Ports = append(m.Ports, p)
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b BridgeMetrics) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// ConntrackMetrics are the figures of the connection tracker, the one
// table every bridge shares.
type ConntrackMetrics struct {
	Stats conntrack.Stats
	// Zones are the zones that hold connections or have a limit of their
	// own, by zone.
	Zones []ZoneMetrics
}

// ZoneMetrics are one zone's connections, and its limit if one applies
// (its own, or the default).
type ZoneMetrics struct {
	Zone    uint16
	Count   uint32
	Limit   uint32
	Limited bool
}

// ConntrackMetrics reads the tracker's figures for a scrape. It takes no
// lock of the daemon's: the tracker's counts are atomics.
func (d *Daemon) ConntrackMetrics() ConntrackMetrics {
	t := d.conntrack
	m := ConntrackMetrics{Stats: t.Stats()}
	def, own := t.ZoneLimits()
	zones := map[uint16]ZoneMetrics{}
	for _, z := range m.Stats.Zones {
		zones[z.Zone] = ZoneMetrics{Zone: z.Zone, Count: z.Count, Limit: def, Limited: def != 0}
	}
	for _, l := range own {
		zones[l.Zone] = ZoneMetrics{Zone: l.Zone, Count: l.Count, Limit: l.Limit, Limited: true}
	}
	for _, z := range slices.Sorted(maps.Keys(zones)) {
		m.Zones = append(m.Zones, zones[z])
	}
	return m
}
