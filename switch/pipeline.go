package vswitch

import (
	"sync/atomic"

	"github.com/xswitch/xswitch/flow"
)

// The pipeline's counters: lookups and matches per table (dump-tables),
// and the frames it dropped, by why, per bridge (pmd-stats-show) and per
// input port (dump-ports). A forwarder counts them per batch and adds
// them to its bridge's and the batch's input port's once per batch.

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
