package vswitch

import (
	"fmt"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/header"
)

// Translation: the pipeline worked out once per flow.
//
// What the tables do to a frame depends only on its headers and input
// port (its flow.Headers) and on the table version: registers and
// metadata start at zero, every lookup, rewrite and register write is a
// function of the key, and NORMAL, the one action that reads other state
// (the MAC table), changes nothing the tables see. So the way through the
// tables is worked out once per Headers (translate), and what it yields,
// a decision, is kept in an exact-match cache: the rules met, for their
// counters; the tables visited, for theirs; and a flat list of what to do
// to the frame, with goto_table, resubmit and the register actions gone
// and each output's "not back out of the input port" already settled. A
// frame whose headers hit runs that list and touches no classifier,
// whatever the number of tables.

const (
	// MaxPipelineDepth and MaxResubmits are OVS's limits on one frame's
	// way through the tables (MAX_DEPTH, MAX_RESUBMITS): a rule that
	// resubmits to itself, or two that resubmit to each other, are cut
	// there and the frame dropped, never a hang.
	MaxPipelineDepth = 64
	MaxResubmits     = 4096
)

// decision is what the pipeline decided for one flow key.
type decision struct {
	table   *flow.Table   // the version it holds for, as far as it knows
	rules   []*flow.Entry // met, in order, for their counters
	lookups []tableLookup // in order, for the tables' counters and generations
	// actions run on the frame, in order: ActOutput, ActInPort (Port is
	// where it goes), ActFlood and ActAll (Port is the input port they
	// leave out), ActNormal, and the header rewrites.
	actions []flow.Action
	// dropped says why the frame goes nowhere when the pipeline rather
	// than its rules chose that: a table miss or a loop.
	dropped dropReason
	// macDeps are the MAC-table entries the decision's resolved NORMALs
	// rely on.
	macDeps []macDep
	// controllers are its CONTROLLER actions, each an actToController.
	controllers []controllerSpec
	// groups is the group table it read, if it sent to a group: a change
	// of groups makes it stale. groupHits are the groups and buckets its
	// frames went through, for their counters; liveDeps the ports whose
	// liveness chose buckets, as they were at liveness (the view's).
	groups    *flow.GroupTable
	groupHits []groupHit
	liveDeps  []liveDep
	liveness  uint64
	// flowHash is the hash of the flow's headers that picks the outer
	// UDP source port when the frame leaves by a tunnel.
	flowHash uint32
	// cts are its ct() actions, each an actConntrack (conntrack.go).
	cts []ctStep

	// The current batch's frames and bytes under this decision, added to
	// its rules' and tables' counters once per batch (flushCounts).
	packets, bytes uint64
	// offer is the decision's state towards the fast path, made at its
	// first offer (nil without a fast path).
	offer *fpOffer
	// running counts the runs of the decision under way, of a
	// recirculation's decision, which the frame's next recirculations
	// must neither translate again nor take for another key
	// (conntrack.go).
	running uint8
}

// The actions that appear only in decisions, numbered down from the top
// of flow.ActionType's range, which flow's own never reach.
const (
	// actNormalTo and actNormalFlood are NORMAL resolved: send to slot
	// Port, or flood from slot Port, in VLAN Value, in the form each port
	// wants.
	actNormalTo flow.ActionType = 255 - iota
	actNormalFlood
	// actToController is a CONTROLLER action: it sends the packet-in of
	// the decision's controllers[Port].
	actToController
	// actSetTunnelID is the tun_id a frame leaves by a tunnel whose key
	// is flow with from then on (Imm.Lo), emitted before an output when
	// the tables changed it.
	actSetTunnelID
	// actNormalDrop is NORMAL resolved to send the frame nowhere, counted
	// by the reason in Value (a normalDrop).
	actNormalDrop
	// actMeter is a meter instruction: the frame goes through the meter
	// in slot Port, if it is still meter Meter (meters.go).
	actMeter
	// actCloneStart and actCloneEnd bracket what runs on a copy of the
	// frame (groups.go).
	actCloneStart
	actCloneEnd
	// actConntrack is a ct() action: the frame goes through the
	// connection tracker as the decision's cts[Port] says.
	actConntrack
)

// maxMACDeps bounds the entries one decision relies on: past it, NORMAL
// stays NORMAL.
const maxMACDeps = 4

type tableLookup struct {
	table      uint8
	matched    bool
	generation uint64 // of the table's rules when the lookup was made
}

// translator works out decisions by what in gives it. Its key is the
// working key of the translation under way.
type translator struct {
	in      xlateIn
	now     int64
	table   *flow.Table
	key     flow.Key
	arrival uint16 // the input port NORMAL learns on, whatever resubmit makes of the key's
	// tunnelID is the tun_id the decision's outputs have so far: the
	// frame's own, until an actSetTunnelID says otherwise.
	tunnelID  uint64
	d         *decision
	rule      *flow.Entry // the one met last, whose CONTROLLER actions say it sent the frame
	resubmits int
	cut       string // why the translation was cut, if it was: logged once
	// set is the action set (write_actions), which runs when the
	// pipeline ends, unless it ends in a table miss; inResubmit counts
	// the resubmits under way, whose misses end nothing.
	set        flow.ActionSet
	inResubmit int
	missed     bool
	// clones counts the buckets under way (groups.go).
	clones int
}

// xlateIn is what a translation reads, and may do, besides the key and
// the table: a forwarding thread's view of the bridge (nil: none, and
// NORMAL is left unresolved), and its modes.
type xlateIn struct {
	view *view
	// learn learns a source as NORMAL does (forwarder.learn); nil
	// translates without learning, resolving NORMAL only for a source
	// learned on the input port already (fastPathVerdict).
	learn func(key uint64, slot uint16, now int64) macDep
	// obs, when set, is told every step (trace.go); learn is then nil.
	obs observer
	// meters are the bridge's, whose slots meter instructions name (nil:
	// none).
	meters *meterBank
}

// observer sees a translation as it happens: trace runs the forwarders'
// own translation with one, so that it cannot tell another story. key is
// the working key at that point; nest counts the resubmits and the group
// buckets under way.
type observer interface {
	// lookup reports a lookup in the table key names and the rule it
	// met, nil for a miss.
	lookup(key *flow.Key, e *flow.Entry, nest int)
	// step reports an action of the rule met last, or of the action set
	// as the pipeline ends (fromSet): goto_table, resubmit and the
	// instructions before they act, with write_actions' actions in
	// written; the others after they changed the key, dropped saying
	// whether the frame goes no further (dec_ttl); normal is NORMAL's
	// choice, for a NORMAL.
	step(a flow.Action, written []flow.Action, key *flow.Key, nest int, fromSet, dropped bool, normal *normalChoice)
	// group reports a group action, and how the frame takes its
	// buckets, before they run.
	group(a flow.Action, key *flow.Key, nest int, fromSet bool, how string)
	// cut reports that the translation was cut at one of the pipeline's
	// limits: the rules loop.
	cut(limit string)
}

// translate runs headers through the tables of t and fills d. A bridge
// that fails open (SetFailOpen) looks in no table: NORMAL it is.
func (tr *translator) translate(t *flow.Table, headers *flow.Headers, d *decision, now int64) {
	tr.start(t, headers, d, now)
	if v := tr.in.view; v != nil && v.failOpen {
		tr.normal()
		tr.end(false)
		return
	}
	tr.end(tr.lookup(0))
}

// translateActions works actions out for a frame with headers as a rule's
// in table 0 of t would be, and fills d (PacketOut).
func (tr *translator) translateActions(t *flow.Table, headers *flow.Headers, actions []flow.Action, d *decision, now int64) {
	tr.start(t, headers, d, now)
	tr.end(tr.actions(actions, 0))
}

func (tr *translator) start(t *flow.Table, headers *flow.Headers, d *decision, now int64) {
	*tr = translator{in: tr.in, now: now, table: t, key: flow.Key{Headers: *headers}, arrival: headers.InPort, d: d,
		tunnelID: headers.TunID}
	d.table = t
	d.rules, d.lookups, d.actions, d.dropped = d.rules[:0], d.lookups[:0], d.actions[:0], dropRule
	d.macDeps, d.controllers = d.macDeps[:0], d.controllers[:0]
	d.groups, d.groupHits, d.liveDeps = nil, d.groupHits[:0], d.liveDeps[:0]
	clear(d.cts) // their recirculations go with them
	d.cts = d.cts[:0]
	if v := tr.in.view; v != nil {
		d.liveness = v.liveness
	}
	if d.offer != nil {
		*d.offer = fpOffer{}
	}
}

// end runs the action set, if the pipeline came to its end (more), and
// ends the translation.
func (tr *translator) end(more bool) {
	if more && !tr.missed {
		tr.set.Each(func(a flow.Action) {
			if !tr.d.dropped.stopsActions() {
				tr.action(a, true, 0)
			}
		})
	}
	tr.table, tr.d, tr.rule = nil, nil, nil
}

// lookup looks the key up in the table it names and follows the rule it
// meets. It returns false when the frame's way ends here for good.
func (tr *translator) lookup(depth int) bool {
	if depth > MaxPipelineDepth {
		return tr.cutLoop(fmt.Sprintf("deeper than %d tables", MaxPipelineDepth))
	}
	e := tr.table.Lookup(&tr.key)
	tr.d.lookups = append(tr.d.lookups, tableLookup{table: tr.key.Table, matched: e != nil,
		generation: tr.table.Generation(tr.key.Table)})
	if tr.in.obs != nil {
		tr.in.obs.lookup(&tr.key, e, tr.inResubmit)
	}
	if e == nil {
		tr.d.dropped = dropTableMiss
		if tr.inResubmit == 0 {
			tr.missed = true
		}
		return true
	}
	tr.d.rules = append(tr.d.rules, e)
	tr.rule = e
	return tr.actions(e.Actions, depth)
}

func (tr *translator) actions(actions []flow.Action, depth int) bool {
	for i := 0; i < len(actions); i++ {
		a := actions[i]
		var written []flow.Action
		switch a.Type {
		case flow.ActGotoTable, flow.ActResubmit, flow.ActClearActions:
		case flow.ActWriteActions:
			written, i = flow.WrittenActions(actions, i)
			i--
		default:
			if !tr.action(a, false, depth) {
				return false
			}
			continue
		}
		if tr.in.obs != nil {
			tr.in.obs.step(a, written, &tr.key, tr.inResubmit, false, false, nil)
		}
		switch a.Type {
		case flow.ActGotoTable:
			tr.key.Table = a.Table
			return tr.lookup(depth + 1)
		case flow.ActResubmit:
			if !tr.resubmit(a.Table, a.Port, depth) {
				return false
			}
		case flow.ActClearActions:
			tr.set.Clear()
		case flow.ActWriteActions:
			tr.set.Write(written)
		}
	}
	return true
}

// resubmit looks the key up in table (flow.ThisTable: the same) as from
// inPort (0: its own) and follows what it meets, then goes on where it
// was. It returns false when the frame's way ends there for good.
func (tr *translator) resubmit(table uint8, inPort uint16, depth int) bool {
	if tr.resubmits++; tr.resubmits > MaxResubmits {
		return tr.cutLoop(fmt.Sprintf("more than %d resubmits", MaxResubmits))
	}
	was, wasIn, rule := tr.key.Table, tr.key.InPort, tr.rule
	if table != flow.ThisTable {
		tr.key.Table = table
	}
	if inPort != 0 {
		tr.key.InPort = inPort
	}
	tr.inResubmit++
	more := tr.lookup(depth + 1)
	tr.inResubmit--
	tr.key.Table, tr.key.InPort, tr.rule = was, wasIn, rule
	return more
}

// action adds one action that acts on the frame, or on the key alone, to
// the decision; fromSet says it comes from the action set. It returns
// false when the frame is dropped.
func (tr *translator) action(a flow.Action, fromSet bool, depth int) bool {
	keep := true
	var normal *normalChoice
	switch a.Type {
	case flow.ActOutput:
		if a.Port == flow.TablePort {
			// Through the tables again from table 0, as OVS runs
			// output:TABLE.
			if tr.in.obs != nil {
				tr.in.obs.step(a, nil, &tr.key, tr.inResubmit, fromSet, false, nil)
			}
			return tr.resubmit(0, 0, depth)
		}
		// OpenFlow never sends a frame back where it came from unless
		// told so with IN_PORT.
		if a.Port != tr.key.InPort {
			tr.emit(a)
		}
	case flow.ActController:
		tr.toController(a)
	case flow.ActGroup:
		return tr.group(a, fromSet, depth)
	case flow.ActInPort, flow.ActFlood, flow.ActAll:
		a.Port = tr.key.InPort
		tr.emit(a)
	case flow.ActNormal:
		c := tr.normal()
		normal = &c
	case flow.ActMeter:
		tr.emit(flow.Action{Type: actMeter, Port: tr.in.meters.slot(a.Meter), Meter: a.Meter})
	case flow.ActCT:
		tr.conntrack(a)
	case flow.ActCTClear:
		tr.emit(a)
		a.ApplyToKey(&tr.key)
	case flow.ActLoad, flow.ActSetField, flow.ActMove, flow.ActWriteMetadata:
		if a.Field.Carried {
			a.ApplyToKey(&tr.key)
		} else {
			tr.writeHeader(a)
		}
	case flow.ActPushMPLS, flow.ActPopMPLS, flow.ActSetMPLSLabel, flow.ActSetMPLSTC, flow.ActSetMPLSTTL, flow.ActDecMPLSTTL,
		flow.ActCopyTTLOut, flow.ActCopyTTLIn:
		keep = tr.mpls(a)
	default:
		// A header rewrite: the frame gets it, and later tables see it.
		tr.emit(a)
		keep = a.ApplyToKey(&tr.key)
	}
	if tr.in.obs != nil {
		tr.in.obs.step(a, nil, &tr.key, tr.inResubmit, fromSet, !keep, normal)
	}
	if !keep {
		// dec_ttl and dec_mpls_ttl drop the frame (and count it) when
		// they run; so does a push or pop of MPLS that OVS drops.
		tr.d.dropped = dropTTL
		if a.Type == flow.ActPushMPLS || a.Type == flow.ActPopMPLS {
			tr.d.dropped = dropMPLS
		}
		return false
	}
	return true
}

// mpls works an MPLS action out on the key, and gives the frame what it
// changed: push_mpls the entry the key worked out, dec_mpls_ttl and
// copy_ttl_out the top entry's TTL they leave. An action that changes
// nothing, on a frame it does not fit, adds nothing. keep is false when
// the action drops the frame.
func (tr *translator) mpls(a flow.Action) (keep bool) {
	before := tr.key
	if !a.ApplyToKey(&tr.key) {
		return false
	}
	if tr.key == before {
		return true
	}
	switch a.Type {
	case flow.ActPushMPLS:
		a.Imm = flow.Value{Lo: uint64(tr.key.MPLS)}
	case flow.ActDecMPLSTTL, flow.ActCopyTTLOut:
		a = flow.Action{Type: flow.ActSetMPLSTTL, Value: uint16(tr.key.MPLS & header.MPLSTTLMask)}
	}
	tr.emit(a)
	return true
}

// emit adds a to the decision, after the tun_id its outputs leave with,
// if the tables changed it since the last output.
func (tr *translator) emit(a flow.Action) {
	switch a.Type {
	case flow.ActOutput, flow.ActInPort, flow.ActFlood, flow.ActAll, flow.ActNormal, actNormalTo, actNormalFlood:
		tr.syncTunnelID()
	}
	tr.d.actions = append(tr.d.actions, a)
}

// syncTunnelID gives the frame the tun_id the key has, if the tables
// changed it since the frame last got one.
func (tr *translator) syncTunnelID() {
	if tr.key.TunID != tr.tunnelID {
		tr.tunnelID = tr.key.TunID
		tr.d.actions = append(tr.d.actions, flow.Action{Type: actSetTunnelID, Imm: flow.Value{Lo: tr.tunnelID}})
	}
}

// toController resolves a CONTROLLER action: the packet-in says which
// rule sent the frame, and the key as it is now. The table-miss rule
// (priority 0, matching everything) sends its frames as no_match unless it
// says otherwise, as OVS does for OpenFlow 1.3. A packet-out's actions
// belong to no rule: their cookie is all ones.
func (tr *translator) toController(a flow.Action) {
	in := PacketIn{Reason: a.Table, Table: tr.key.Table, Cookie: ^uint64(0), Key: tr.key, ControllerID: a.Port}
	if e := tr.rule; e != nil {
		in.Cookie = e.Cookie
		if in.Reason == flow.ReasonAction && isTableMiss(e) {
			in.Reason = flow.ReasonNoMatch
		}
	}
	tr.d.controllers = append(tr.d.controllers, controllerSpec{in: in, maxLen: int(a.Value)})
	tr.emit(flow.Action{Type: actToController, Port: uint16(len(tr.d.controllers) - 1)})
}

// isTableMiss reports whether e is its table's table-miss rule.
func isTableMiss(e *flow.Entry) bool {
	mask := e.Match.Mask
	mask.Table = 0
	return e.Priority == 0 && mask == flow.Key{}
}

// writeHeader works a load, move or set_field of a header field out as
// the rewrites that give the frame what the key then says: the key is
// the frame's exactly, so a move's source bits are known here. A frame
// without the field's header keeps its key, as it keeps its bytes.
func (tr *translator) writeHeader(a flow.Action) {
	if needs := a.Field.Needs; needs != nil && !needs.HoldsFor(&tr.key) {
		// The frame lacks the field (a bucket's set_field to tcp_src on
		// a UDP frame): the write does nothing, as in OVS.
		return
	}
	before := tr.key
	a.ApplyToKey(&tr.key)
	var ok bool
	if tr.d.actions, ok = a.Field.AppendRewrites(tr.d.actions, &before, &tr.key); !ok {
		tr.key = before
	}
}

func (tr *translator) cutLoop(limit string) bool {
	tr.d.dropped = dropLoop
	tr.cut = limit
	if tr.in.obs != nil {
		tr.in.obs.cut(limit)
	}
	return false
}
