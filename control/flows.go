package control

import (
	"errors"
	"fmt"
	"time"

	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/control/store"
	"github.com/xswitch/xswitch/flow"
	vswitch "github.com/xswitch/xswitch/switch"
)

// checkLocal refuses a new rule that names the reserved port LOCAL (in
// its match or actions) on a bridge that has no port of its own: the
// port named like the bridge, as in OVS.
func checkLocal(bc *store.BridgeConfig, m flow.Match, actions []flow.Action) error {
	uses := m.Mask.InPort != 0 && m.Key.InPort == flow.LocalPort
	for _, a := range actions {
		switch a.Type {
		case flow.ActOutput, flow.ActResubmit:
			uses = uses || a.Port == flow.LocalPort
		}
	}
	if !uses {
		return nil
	}
	for _, pc := range bc.Ports {
		if pc.OFPort == flow.LocalPort {
			return nil
		}
	}
	return fmt.Errorf("reserved port LOCAL is bridge %s's own port, and it has none: add it with add-port %s %s --type internal",
		bc.Name, bc.Name, bc.Name)
}

// parseFilter parses a match for bridge bc.
func parseFilter(bc *store.BridgeConfig, text string) (flow.Filter, error) {
	f, err := flow.ParseFilter(text, bc)
	return f, bc.NameBridge(err)
}

// setFlows saves edits, the change that made t from bridge's table, then
// installs t, so that a table is never in use that a restart would not
// bring back. A change that leaves the table without rules is saved as
// such (with the group changes it made), not as every rule it removed;
// one of ephemeral rules alone has no edits and saves nothing, since what
// is saved, the table's other rules, stays.
func (d *Daemon) setFlows(b *vswitch.Bridge, t *flow.Table, edits []store.TableEdit, now time.Time) error {
	if len(edits) > 0 {
		if t.Len() == 0 {
			reset := store.TableEdit{Bridge: b.Name(), Reset: true}
			for _, e := range edits {
				reset.RemoveGroups = append(reset.RemoveGroups, e.RemoveGroups...)
				reset.Groups = append(reset.Groups, e.Groups...)
			}
			edits = []store.TableEdit{reset}
		}
		if err := d.save(store.Record{Time: now, Flows: edits}); err != nil {
			return err
		}
	}
	b.SetFlows(t)
	return nil
}

func (d *Daemon) addFlows(bridge string, flows []string, lines []int) error {
	if _, err := d.bridge(bridge); err != nil {
		return err
	}
	if len(flows) == 0 {
		return errors.New("no flows given")
	}
	bc := d.cfg.Bridge(bridge)
	mods := make([]FlowMod, 0, len(flows))
	err := bc.ParseEach(flows, lines, func(text string, ports flow.PortNames) error {
		r, opts, err := flow.ParseAddition(text, ports)
		mods = append(mods, FlowMod{Command: FlowAdd, Rule: r, CheckOverlap: opts.CheckOverlap})
		return err
	})
	if err != nil {
		return err
	}
	for _, m := range mods {
		if err := checkLocal(bc, m.Rule.Match, m.Rule.Actions); err != nil {
			return err
		}
	}
	if _, err := d.applyFlowMods(bridge, mods); err != nil {
		return err
	}
	d.log.Info("flows added", "bridge", bridge, "count", len(mods))
	return nil
}

func (d *Daemon) modFlows(bridge string, flows []string, strict bool) (int, error) {
	if _, err := d.bridge(bridge); err != nil {
		return 0, err
	}
	if len(flows) != 1 {
		return 0, errors.New("mod-flows takes one flow")
	}
	bc := d.cfg.Bridge(bridge)
	filter, actions, opts, err := flow.ParseModification(flows[0], bc)
	if err != nil {
		return 0, bc.NameBridge(err)
	}
	if err := checkLocal(bc, flow.Match{}, actions); err != nil {
		return 0, err
	}
	mod := FlowMod{Command: FlowModify, Filter: filter, Actions: actions, Strict: strict, ResetCounts: opts.ResetCounts}
	changed, err := d.applyFlowMods(bridge, []FlowMod{mod})
	if err != nil || changed[0] == 0 {
		return 0, err
	}
	d.log.Info("flows modified", "bridge", bridge, "count", changed[0])
	return changed[0], nil
}

func (d *Daemon) delFlows(bridge, match string, strict bool) (int, error) {
	if _, err := d.bridge(bridge); err != nil {
		return 0, err
	}
	filter, err := parseFilter(d.cfg.Bridge(bridge), match)
	if err != nil {
		return 0, err
	}
	changed, err := d.applyFlowMods(bridge, []FlowMod{{Command: FlowDelete, Filter: filter, Strict: strict}})
	if err != nil || changed[0] == 0 {
		return 0, err
	}
	d.log.Info("flows deleted", "bridge", bridge, "count", changed[0])
	return changed[0], nil
}

// dumpFlows takes the verb lock only to find the table: the
// configuration and the table it finds are immutable versions.
func (d *Daemon) dumpFlows(bridge, match string) ([]api.FlowStatus, error) {
	d.mu.Lock()
	b, err := d.bridge(bridge)
	bc := d.cfg.Bridge(bridge)
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	b.SyncFastPath()
	table := b.Flows()
	filter, err := parseFilter(bc, match)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	out := []api.FlowStatus{}
	for _, e := range table.Select(filter, false) {
		out = append(out, flowStatus(e, now))
	}
	return out, nil
}

func flowStatus(e *flow.Entry, now time.Time) api.FlowStatus {
	packets, bytes, lastUsed := e.Stats()
	stats := flow.DumpStats{
		Duration: now.Sub(e.Installed),
		Packets:  packets,
		Bytes:    bytes,
		IdleAge:  now.Sub(lastUsed),
		HardAge:  now.Sub(e.Installed),
	}
	return api.FlowStatus{
		Text:        flow.FormatDumpLine(e.Rule, stats),
		Cookie:      e.Cookie,
		DurationSec: stats.Duration.Seconds(),
		Priority:    e.Priority,
		Match:       flow.FormatMatch(e.Match),
		Actions:     flow.FormatActions(e.Actions),
		Packets:     packets,
		Bytes:       bytes,
		IdleTimeout: e.IdleTimeout,
		HardTimeout: e.HardTimeout,
		IdleAgeSec:  int(stats.IdleAge.Seconds()),
	}
}

// expireFlows removes rules whose idle or hard timeout has passed.
func (d *Daemon) expireFlows(now time.Time) {
	d.mu.Lock()
	defer d.unlock()
	for name, b := range d.bridges {
		t, expired := b.Flows().Expire(now)
		if len(expired) == 0 {
			continue
		}
		var edits []store.TableEdit
		if texts := store.FormatEntries(expired); len(texts) > 0 {
			edits = []store.TableEdit{{Bridge: name, Remove: texts}}
		}
		if err := d.setFlows(b, t, edits, now); err != nil {
			d.log.Error("expiring flows", "bridge", name, "err", err)
			continue
		}
		gone := make([]RemovedFlow, len(expired))
		for i, e := range expired {
			d.log.Info("flow expired", "bridge", name, "flow", flow.FormatRule(e.Rule))
			reason := RemovedIdleTimeout
			if e.TimedOut(now) == flow.HardTimedOut {
				reason = RemovedHardTimeout
			}
			gone[i] = RemovedFlow{Entry: e, Reason: reason, At: now}
		}
		d.removed.add(b, gone)
	}
	d.compactIfDue()
}
