package vswitch

import (
	"sync/atomic"
	"time"

	"github.com/xswitch/xswitch/flow"
)

// The pipeline's counters: lookups and matches per table (dump-tables),
// and the frames it dropped, by why, per bridge (pmd-stats-show) and per
// input port (dump-ports). A forwarder counts them per batch and adds
// them to its bridge's and the batch's input port's once per batch.

// batchCounts are what a batch counts before it adds them up once: the
// decisions its frames went by, whose counts go to their rules and tables,
// its frames dropped by reason, by the pipeline and by NORMAL; and the
// bridge's counters they are added to.
type batchCounts struct {
	counted       []*decision
	pipelineDrops pipelineDrops
	// drops are the frames NORMAL dropped, by reason, added to the
	// input port's counters.
	drops         rxDrops
	tableCounters *[flow.NumTables]tableCounters
	bridgeDrops   *dropCounters
	loopLogged    *atomic.Bool // per bridge: a loop is logged once
}

// dropReason says why the pipeline sent a frame nowhere.
type dropReason uint8

const (
	dropRule      dropReason = iota // the rules it met said so (drop, or outputs to nowhere)
	dropTableMiss                   // the last table it was looked up in had no rule for it
	dropLoop                        // cut at the pipeline's depth or resubmit limit
	dropTTL                         // dec_ttl of a TTL that would reach 0
	dropNoCopy                      // a rewrite needed a copy and none could be made
	dropPortDown                    // its outputs named ports the bridge does not have up
	// A packet-in lost to a full queue or to the controller's rate limit
	// (packetin.go): the frame's other outputs happen.
	dropControllerQueue
	dropControllerRate
	numDropReasons
)

// DropReasons names the reasons, as PipelineDrops and the metrics give them.
var DropReasons = [numDropReasons]string{"rule", "table_miss", "loop", "ttl", "no_copy", "port_down",
	"controller_queue", "controller_rate"}

// DropCounts are frames dropped by the pipeline, by reason, in the order
// of DropReasons.
type DropCounts [numDropReasons]uint64

// ByReason returns the counts by the names of DropReasons.
func (d DropCounts) ByReason() map[string]uint64 {
	out := make(map[string]uint64, len(d))
	for i, n := range d {
		out[DropReasons[i]] = n
	}
	return out
}

// Plus returns the sum of d and o.
func (d DropCounts) Plus(o DropCounts) DropCounts {
	for i := range d {
		d[i] += o[i]
	}
	return d
}

// pipelineDrops is one batch's dropped frames by reason.
type pipelineDrops [numDropReasons]uint64

func (d *pipelineDrops) count(r dropReason) { d[r]++ }

// dropCounters are a bridge's, or a port's, dropped frames by reason.
type dropCounters [numDropReasons]atomic.Uint64

func (d *dropCounters) load() DropCounts {
	var out DropCounts
	for i := range out {
		out[i] = d[i].Load()
	}
	return out
}

// flush adds the batch's drops to the bridge's and the input port's, if
// there is one (a packet-out's frame may come from none).
func (d *pipelineDrops) flush(bridge, port *dropCounters) {
	for r, n := range d {
		if n > 0 {
			bridge[r].Add(n)
			if port != nil {
				port[r].Add(n)
			}
			d[r] = 0
		}
	}
}

// tableCounters are one table's lookups and the ones that met a rule.
type tableCounters struct {
	lookups, matched atomic.Uint64
}

// TableStats are one table's counters.
type TableStats struct {
	Table            uint8
	Active           int // rules in it
	Lookups, Matched uint64
}

// TableStats returns every table's counters, table 0 first.
func (b *Bridge) TableStats() []TableStats {
	var active [flow.NumTables]int
	for _, e := range b.Flows().Entries() {
		active[e.Table()]++
	}
	stats := make([]TableStats, flow.NumTables)
	for i := range stats {
		stats[i] = TableStats{Table: uint8(i), Active: active[i],
			Lookups: b.tables[i].lookups.Load(), Matched: b.tables[i].matched.Load()}
	}
	return stats
}

// PipelineDrops returns how many frames the pipeline dropped, by reason.
func (b *Bridge) PipelineDrops() DropCounts { return b.drops.load() }

// flushCounts adds the frames counted under each decision since the last
// flush to its rules' counters (last used now) and its tables'.
func (f *forwarder) flushCounts(now time.Time) {
	for _, d := range f.counted {
		for _, e := range d.rules {
			e.Hit(d.packets, d.bytes, now)
		}
		for _, l := range d.lookups {
			c := &f.tableCounters[l.table]
			c.lookups.Add(d.packets)
			if l.matched {
				c.matched.Add(d.packets)
			}
		}
		d.packets, d.bytes = 0, 0
	}
	clear(f.counted)
	f.counted = f.counted[:0]
}

// portCounters are written by the forwarder once per batch and read by
// anyone.
type portCounters struct {
	rxPackets, rxBytes, rxErrors  atomic.Uint64
	rxVLANDropped                 atomic.Uint64
	rxReservedDropped             atomic.Uint64
	rxStormDropped                atomic.Uint64
	rxSTPDropped                  atomic.Uint64
	rxSplitHorizonDropped         atomic.Uint64
	txPackets, txBytes, txDropped atomic.Uint64
	pipelineDropped               dropCounters // of the frames received on it
	// fastPathTxDropped are the frames the fast path redirected to the
	// port that its interface did not take (also in txDropped, and in
	// txPackets, where their entries counted them), and
	// fastPathTxDroppedBytes their bytes, as estimated (countRedirectDrops).
	fastPathTxDropped, fastPathTxDroppedBytes atomic.Uint64
}

// rxDrops are one batch's frames that NORMAL dropped, by reason.
type rxDrops struct {
	vlan     uint64 // in a VLAN the input port does not carry
	reserved uint64 // to a reserved group address (reserved.go)
	storm    uint64 // flooded beyond the port's storm limit (storm.go)
	stp      uint64 // received on a port the spanning tree does not let forward
	// splitHorizon: from a tunnel to a station learned on another tunnel
	// (tunnel.go)
	splitHorizon uint64
}

// flush adds the batch's drops to the input port's counters and starts
// the next batch at zero.
func (d *rxDrops) flush(c *portCounters) {
	if d.vlan > 0 {
		c.rxVLANDropped.Add(d.vlan)
	}
	if d.reserved > 0 {
		c.rxReservedDropped.Add(d.reserved)
	}
	if d.storm > 0 {
		c.rxStormDropped.Add(d.storm)
	}
	if d.stp > 0 {
		c.rxSTPDropped.Add(d.stp)
	}
	if d.splitHorizon > 0 {
		c.rxSplitHorizonDropped.Add(d.splitHorizon)
	}
	*d = rxDrops{}
}
