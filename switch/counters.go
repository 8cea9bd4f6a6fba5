package vswitch

import (
	"sync/atomic"
	"time"

	"github.com/xswitch/xswitch/flow"
)

// The counters a frame's way adds to: its rules', its tables' lookups and
// matches (dump-flows, dump-tables), its ports' (dump-ports), and the
// frames it was dropped on, by why (the bridge's pipeline drops in
// pmd-stats-show, the input port's in dump-ports). A forwarder counts them
// per batch and adds them up once per batch; the fast path's sweeper adds
// what the kernel carried the same way (credit).

// batchCounts are what a batch counts before it adds them up once: the
// decisions its frames went by, whose counts go to their rules and tables,
// and its frames dropped, by reason; and the bridge's counters they are
// added to.
type batchCounts struct {
	counted       []*decision
	drops         batchDrops
	tableCounters *[flow.NumTables]tableCounters
	bridgeDrops   *dropCounters
	loopLogged    *atomic.Bool // per bridge: a loop is logged once
}

// dropReason says why a frame went nowhere. The pipeline's reasons come
// first; the rest are the input port's own: NORMAL's refusals and the
// spanning tree's.
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
	dropMeter // a drop band of the meter it went through
	// A push_mpls onto a label stack as deep as the key holds, or a
	// pop_mpls from one deeper, which OVS drops (flow.Key's MPLS).
	dropMPLS
	dropVLAN         // NORMAL: in a VLAN the input port does not carry
	dropReserved     // NORMAL: to a reserved group address (reserved.go)
	dropStorm        // NORMAL: flooded beyond the port's storm limit (storm.go)
	dropSTP          // received on a port the spanning tree does not let forward
	dropSplitHorizon // NORMAL: from a tunnel to a station learned on another tunnel
	numDropReasons
)

// stopsActions reports whether the frame was dropped by an action that
// stops the actions after it: dec_ttl, dec_mpls_ttl, or an MPLS push or
// pop OVS drops.
func (r dropReason) stopsActions() bool { return r == dropTTL || r == dropMPLS }

// numPipelineDrops are the pipeline's reasons, the first ones.
const numPipelineDrops = dropVLAN

// DropReasons names the pipeline's reasons, as PipelineDrops and the
// metrics give them.
var DropReasons = [numPipelineDrops]string{"rule", "table_miss", "loop", "ttl", "no_copy", "port_down",
	"controller_queue", "controller_rate", "meter", "mpls"}

// DropCounts are frames dropped by the pipeline, by reason, in the order
// of DropReasons.
type DropCounts [numPipelineDrops]uint64

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

// batchDrops are one batch's dropped frames, by reason.
type batchDrops [numDropReasons]uint64

func (d *batchDrops) count(r dropReason) { d[r]++ }

// flush adds the batch's drops to the bridge's (the pipeline's reasons)
// and the input port's, if there is one (a packet-out's frame may come
// from none), and starts the next batch at zero.
func (d *batchDrops) flush(bridge, port *dropCounters) {
	for r, n := range d {
		if n == 0 {
			continue
		}
		if r < int(numPipelineDrops) {
			bridge[r].Add(n)
		}
		if port != nil {
			port[r].Add(n)
		}
		d[r] = 0
	}
}

// dropCounters are a bridge's, or a port's, dropped frames by reason.
type dropCounters [numDropReasons]atomic.Uint64

// pipeline reads the pipeline's reasons.
func (d *dropCounters) pipeline() DropCounts {
	var out DropCounts
	for i := range out {
		out[i] = d[i].Load()
	}
	return out
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
func (b *Bridge) PipelineDrops() DropCounts { return b.drops.pipeline() }

// credit adds packets frames of bytes bytes to the rules a decision met,
// as last used at when, to the lookups and matches of the tables it
// looked in, and to the groups and buckets its frames went through: the
// one way user space and the fast path count a decision's frames.
func credit(tables *[flow.NumTables]tableCounters, rules []*flow.Entry, lookups []tableLookup, groups []groupHit,
	packets, bytes uint64, when time.Time) {
	for _, e := range rules {
		e.Hit(packets, bytes, when)
	}
	for _, g := range groups {
		if g.bucket < 0 {
			g.group.Hit(packets, bytes)
		} else {
			g.group.HitBucket(g.bucket, packets, bytes)
		}
	}
	for _, l := range lookups {
		c := &tables[l.table]
		c.lookups.Add(packets)
		if l.matched {
			c.matched.Add(packets)
		}
	}
}

// countBatch adds up a batch of frames received on port in: its
// decisions' counts, its drops, and the port's rx counters.
func (f *forwarder) countBatch(in *bridgePort, wall time.Time, frames, bytes, malformed uint64) {
	f.flushCounts(wall)
	f.drops.flush(f.bridgeDrops, &in.counters.dropped)
	in.counters.rxPackets.Add(frames)
	in.counters.rxBytes.Add(bytes)
	if malformed > 0 {
		in.counters.rxErrors.Add(malformed)
	}
}

// count counts a frame of length bytes under d, until the batch's end.
func (f *forwarder) count(d *decision, length int) {
	if d.packets == 0 {
		f.counted = append(f.counted, d)
	}
	d.packets++
	d.bytes += uint64(length)
}

// flushCounts credits the frames counted under each decision since the
// last flush, as last used now.
func (f *forwarder) flushCounts(now time.Time) {
	for _, d := range f.counted {
		credit(f.tableCounters, d.rules, d.lookups, d.groupHits, d.packets, d.bytes, now)
		d.packets, d.bytes = 0, 0
	}
	clear(f.counted)
	f.counted = f.counted[:0]
}

// portCounters are written by the forwarder once per batch and read by
// anyone.
type portCounters struct {
	rxPackets, rxBytes, rxErrors  atomic.Uint64
	txPackets, txBytes, txDropped atomic.Uint64
	// dropped are the frames received on the port that went nowhere, by
	// reason.
	dropped dropCounters
	// fastPathTxDropped are the frames the fast path redirected to the
	// port that its interface did not take (also in txDropped, and in
	// txPackets, where their entries counted them), and
	// fastPathTxDroppedBytes their bytes, as estimated (countRedirectDrops).
	fastPathTxDropped, fastPathTxDroppedBytes atomic.Uint64
}
