package vswitch

import (
	"sync/atomic"

	"github.com/xswitch/xswitch/flow"
)

// The pipeline's counters: lookups and matches per table (dump-tables),
// and the frames it dropped, by why (pmd-stats-show). A forwarder counts
// them per batch and adds them to its bridge's once per batch.

// dropReason says why the pipeline sent a frame nowhere.
type dropReason uint8

const (
	dropRule      dropReason = iota // the rules it met said so (drop, or outputs to nowhere)
	dropTableMiss                   // the last table it was looked up in had no rule for it
	dropLoop                        // cut at the pipeline's depth or resubmit limit
	dropTTL                         // dec_ttl of a TTL that would reach 0
	dropNoCopy                      // a rewrite needed a copy and none could be made
	numDropReasons
)

// DropReasons names the reasons, as PipelineDrops and the metrics give them.
var DropReasons = [numDropReasons]string{"rule", "table_miss", "loop", "ttl", "no_copy"}

// pipelineDrops is one batch's dropped frames by reason.
type pipelineDrops [numDropReasons]uint64

func (d *pipelineDrops) count(r dropReason) { d[r]++ }

// bridgeDrops is a bridge's dropped frames by reason.
type bridgeDrops [numDropReasons]atomic.Uint64

func (d *pipelineDrops) flush(to *bridgeDrops) {
	for r, n := range d {
		if n > 0 {
			to[r].Add(n)
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

// PipelineDrops returns how many frames the pipeline dropped, by reason,
// in the order of DropReasons.
func (b *Bridge) PipelineDrops() [numDropReasons]uint64 {
	var out [numDropReasons]uint64
	for i := range out {
		out[i] = b.drops[i].Load()
	}
	return out
}
