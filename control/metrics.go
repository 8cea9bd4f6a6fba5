package control

import "time"

// BridgeMetrics is a bridge as the metrics endpoint sees it: what `show`
// reports, plus figures that cost the forwarder a request to gather and so
// are left out of every `show`.
type BridgeMetrics struct {
	BridgeStatus
	MACEntries    int
	ForwarderBusy time.Duration
	ForwarderIdle time.Duration
	RSTP          *RSTPStatus // nil: the bridge runs no spanning tree
	// Tables are the tables that hold rules or have seen lookups.
	Tables []TableStatus
}

// Metrics describes every bridge for a scrape. It reads counters that the
// forwarders publish atomically and asks each forwarder once, between two
// batches, for its MAC table's size; it never stops forwarding. It runs
// under the verb lock, so a scrape sees no half-applied verb.
func (d *Daemon) Metrics() []BridgeMetrics {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.bridges) < len(d.cfg.Bridges) { // closed: the bridges are gone
		return nil
	}
	statuses, _ := d.show("") // fails only for a bridge name, and none is given
	out := make([]BridgeMetrics, 0, len(statuses))
	for _, bs := range statuses {
		b := d.bridges[bs.Name]
		m := BridgeMetrics{BridgeStatus: bs, MACEntries: b.FDBSize()}
		m.ForwarderBusy, m.ForwarderIdle = b.ForwarderTime()
		tables, _ := d.dumpTables(bs.Name) // the bridge exists: show named it
		for _, t := range tables {
			if t.Active > 0 || t.Lookups > 0 {
				m.Tables = append(m.Tables, t)
			}
		}
		if st, ok := d.rstpStatus(bs.Name); ok {
			m.RSTP = &st
		}
		out = append(out, m)
	}
	return out
}
