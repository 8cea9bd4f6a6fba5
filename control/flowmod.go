package control

import (
	"errors"
	"fmt"
	"time"

	"github.com/xswitch/xswitch/control/store"
	"github.com/xswitch/xswitch/flow"
)

// The typed flow API: what add-flow, add-flows, mod-flows and del-flows
// do, with rules as values rather than text, for callers inside the
// daemon (the JSON verbs, an OpenFlow agent).

// FlowCommand says what a FlowMod does.
type FlowCommand int

const (
	FlowAdd    FlowCommand = iota + 1 // install Rule, replacing one with its match and priority
	FlowModify                        // give the rules Filter selects Actions, keeping their counters
	FlowDelete                        // remove the rules Filter selects
)

// FlowMod is one edit of a bridge's tables.
type FlowMod struct {
	Command FlowCommand
	Rule    flow.Rule     // FlowAdd
	Filter  flow.Filter   // FlowModify, FlowDelete; OpenFlow's out_port (Filter.OutPort) selects for FlowDelete only
	Actions []flow.Action // FlowModify
	// Instructions (FlowModify) are Actions as an OpenFlow controller
	// sent them, which the rules keep (flow.WireForm); nil from the flow
	// syntax.
	Instructions []byte
	Strict       bool // FlowModify, FlowDelete: the match and priority exactly
	// CheckOverlap (FlowAdd) refuses Rule with ErrOverlap if a rule of its
	// priority in its table overlaps it (flow.Table.Overlapping), the one
	// it would replace included: OpenFlow's OFPFF_CHECK_OVERLAP.
	CheckOverlap bool
	// ResetCounts (FlowModify) starts the modified rules' packet and byte
	// counters from zero: OpenFlow's OFPFF_RESET_COUNTS.
	ResetCounts bool
	// Ephemeral (FlowAdd) installs a rule that is never saved, as a
	// controller's rules are not in OVS: it is in no journal record and no
	// snapshot, and a restart does not bring it back. Editing or removing
	// it later saves nothing for it; a saved rule it replaces is saved as
	// removed.
	Ephemeral bool
}

// ErrOverlap is the error of a FlowAdd with CheckOverlap whose rule
// overlaps another (OpenFlow's OFPFMFC_OVERLAP): errors.Is finds it.
var ErrOverlap = errors.New("a rule of the same priority in its table overlaps it")

// ApplyFlowMods makes mods, in order, as one change of the bridge's
// tables: one new table, which the forwarders see at once (never a state
// between two of the mods), and one record saved before it is installed. It returns how many rules each
// mod added, changed or removed. Nothing is changed if it fails.
func (d *Daemon) ApplyFlowMods(bridge string, mods []FlowMod) ([]int, error) {
	d.mu.Lock()
	defer d.unlock()
	return d.applyFlowMods(bridge, mods)
}

func (d *Daemon) applyFlowMods(bridge string, mods []FlowMod) ([]int, error) {
	b, err := d.bridge(bridge)
	if err != nil {
		return nil, err
	}
	if len(mods) == 0 {
		return nil, errors.New("no flow changes given")
	}
	for i, m := range mods {
		if err := errors.Join(checkGroups(b, m.Rule.Actions), checkGroups(b, m.Actions),
			b.CheckMeters(m.Rule.Actions), b.CheckMeters(m.Actions)); err != nil {
			return nil, fmt.Errorf("flow change %d: %w", i+1, err)
		}
	}
	now := time.Now()
	t := b.Flows()
	changed := make([]int, len(mods))
	var edits []store.TableEdit
	var deleted []*flow.Entry
	for i := 0; i < len(mods); i++ {
		m := mods[i]
		switch m.Command {
		case FlowAdd:
			if m.CheckOverlap {
				if o := t.Overlapping(&m.Rule); o != nil {
					return nil, fmt.Errorf("flow change %d (%s): %w (%s)", i+1, flow.FormatRule(m.Rule), ErrOverlap, flow.FormatRule(o.Rule))
				}
			}
			// A run of adds is one AddAll: a file of rules builds each
			// subtable it touches once, not once per rule. A run is of
			// saved or of ephemeral rules, and only its first checks for
			// overlaps, so that the check sees every rule before it.
			run := []flow.Rule{m.Rule}
			changed[i] = 1
			for i+1 < len(mods) && mods[i+1].Command == FlowAdd && mods[i+1].Ephemeral == m.Ephemeral && !mods[i+1].CheckOverlap {
				i++
				run = append(run, mods[i].Rule)
				changed[i] = 1
			}
			if !m.Ephemeral {
				t = t.AddAll(run, now)
				edits = append(edits, store.TableEdit{Bridge: bridge, Add: store.FormatRules(run)})
				break
			}
			// Nothing of the run is saved but that the saved rules it
			// replaces are gone.
			var replaced []*flow.Entry
			seen := map[*flow.Entry]bool{}
			for _, r := range run {
				if old := t.Find(&r); old != nil && !seen[old] {
					seen[old] = true
					replaced = append(replaced, old)
				}
			}
			t = t.AddEphemeral(run, now)
			if texts := store.FormatEntries(replaced); len(texts) > 0 {
				edits = append(edits, store.TableEdit{Bridge: bridge, Remove: texts})
			}
		case FlowModify:
			f := m.Filter
			f.OutPort = 0 // OpenFlow ignores out_port in a modification
			var modified []*flow.Entry
			t, modified = t.Modify(f, m.Strict, m.Actions, m.Instructions, m.ResetCounts)
			changed[i] = len(modified)
			if texts := store.FormatEntries(modified); len(texts) > 0 {
				edits = append(edits, store.TableEdit{Bridge: bridge, Modify: texts})
			}
		case FlowDelete:
			var removed []*flow.Entry
			t, removed = t.Delete(m.Filter, m.Strict)
			changed[i] = len(removed)
			deleted = append(deleted, removed...)
			if texts := store.FormatEntries(removed); len(texts) > 0 {
				edits = append(edits, store.TableEdit{Bridge: bridge, Remove: texts})
			}
		default:
			return nil, fmt.Errorf("flow change %d: unknown command %d", i+1, m.Command)
		}
	}
	if t == b.Flows() {
		return changed, nil
	}
	if err := d.setFlows(b, t, edits, now); err != nil {
		return nil, err
	}
	gone := make([]RemovedFlow, len(deleted))
	for i, e := range deleted {
		gone[i] = RemovedFlow{Entry: e, Reason: RemovedDelete, At: now}
	}
	d.removed.add(b, gone)
	return changed, nil
}
