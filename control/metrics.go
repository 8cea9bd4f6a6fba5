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
		if st, ok := d.rstpStatus(bs.Name); ok {
			m.RSTP = &st
		}
		out = append(out, m)
	}
	return out
}
