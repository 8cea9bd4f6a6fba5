package control

import (
	"errors"
	"fmt"
	"time"

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
	Filter  flow.Filter   // FlowModify, FlowDelete
	Actions []flow.Action // FlowModify
	Strict  bool          // FlowModify, FlowDelete: the match and priority exactly
}

// ApplyFlowMods makes mods, in order, as one change of the bridge's
// tables: one new table, which the forwarders see at once (never a state
// between two of the mods), and one record saved before it is installed. It returns how many rules each
// mod added, changed or removed. Nothing is changed if it fails.
func (d *Daemon) ApplyFlowMods(bridge string, mods []FlowMod) ([]int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
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
	now := time.Now()
	t := b.Flows()
	changed := make([]int, len(mods))
	var edits []tableEdit
	for i := 0; i < len(mods); i++ {
		m := mods[i]
		switch m.Command {
		case FlowAdd:
			// A run of adds is one AddAll: a file of rules builds each
			// subtable it touches once, not once per rule.
			run := []flow.Rule{m.Rule}
			for i+1 < len(mods) && mods[i+1].Command == FlowAdd {
				i++
				run = append(run, mods[i].Rule)
				changed[i] = 1
			}
			changed[i-len(run)+1] = 1
			t = t.AddAll(run, now)
			edits = append(edits, tableEdit{Bridge: bridge, Add: formatRules(run)})
		case FlowModify:
			var modified []*flow.Entry
			t, modified = t.Modify(m.Filter, m.Strict, m.Actions, now)
			changed[i] = len(modified)
			if len(modified) > 0 {
				edits = append(edits, tableEdit{Bridge: bridge, Modify: formatEntries(modified)})
			}
		case FlowDelete:
			var removed []*flow.Entry
			t, removed = t.Delete(m.Filter, m.Strict)
			changed[i] = len(removed)
			if len(removed) > 0 {
				edits = append(edits, tableEdit{Bridge: bridge, Remove: formatEntries(removed)})
			}
		default:
			return nil, fmt.Errorf("flow change %d: unknown command %d", i+1, m.Command)
		}
	}
	if len(edits) == 0 {
		return changed, nil
	}
	if t.Len() == 0 {
		// Saved as such, not as every rule it removed.
		edits = []tableEdit{{Bridge: bridge, Reset: true}}
	}
	if err := d.save(journalRecord{Time: now, Flows: edits}); err != nil {
		return nil, err
	}
	b.SetFlows(t)
	return changed, nil
}
