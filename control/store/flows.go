package store

import (
	"errors"
	"fmt"
	"time"

	"github.com/xswitch/xswitch/flow"
)

// A bridge's rules in ovs-ofctl syntax, as the configuration, the
// journal and the verbs give them: ports named by their name on the
// bridge.

// DefaultFlows is what a new bridge holds, as in OVS: one rule that makes
// it a learning switch.
var DefaultFlows = []string{"priority=0 actions=NORMAL"}

// PortNumber resolves the name of one of the bridge's ports, for the flow
// parser: a *BridgeConfig is a flow.PortNames.
func (bc *BridgeConfig) PortNumber(name string) (uint16, bool) {
	for _, pc := range bc.Ports {
		if pc.Name == name {
			return pc.OFPort, true
		}
	}
	return 0, false
}

// ParseRules parses flows for the bridge, all or nothing.
func (bc *BridgeConfig) ParseRules(flows []string) ([]flow.Rule, error) {
	rules := make([]flow.Rule, 0, len(flows))
	err := bc.ParseEach(flows, nil, func(text string, ports flow.PortNames) error {
		r, err := flow.ParseRule(text, ports)
		rules = append(rules, r)
		return err
	})
	if err != nil {
		return nil, err
	}
	return rules, nil
}

// ParseEach runs parse on each of flows for the bridge until one fails.
// Errors name the rule when there are several: by its line, when lines
// gives the line numbers of a file's rules, else by its place in flows;
// and the bridge, when the rule names a port it does not have.
func (bc *BridgeConfig) ParseEach(flows []string, lines []int, parse func(text string, ports flow.PortNames) error) error {
	for i, text := range flows {
		if err := parse(text, bc); err != nil {
			err = bc.NameBridge(err)
			switch {
			case len(lines) == len(flows):
				return fmt.Errorf("line %d (%s): %w", lines[i], text, err)
			case len(flows) > 1:
				return fmt.Errorf("flow %d (%s): %w", i+1, text, err)
			}
			return err
		}
	}
	return nil
}

// NameBridge names the bridge in an unknown-port error of the flow
// parser, which cannot know it.
func (bc *BridgeConfig) NameBridge(err error) error {
	var noPort *flow.NoPortError
	if errors.As(err, &noPort) {
		return fmt.Errorf("no port %q on bridge %s", noPort.Name, bc.Name)
	}
	return err
}

// loadFlows builds a bridge's table from its saved rules. Rules saved
// without the time they were installed count from now.
func loadFlows(bc *BridgeConfig, now time.Time) (*flow.Table, error) {
	texts := bc.Flows
	if texts == nil { // saved before xswitch had flow tables
		texts = DefaultFlows
	}
	rules, err := bc.ParseRules(texts)
	if err != nil {
		return nil, fmt.Errorf("bridge %s: saved flows: %w", bc.Name, err)
	}
	restore := make([]flow.SavedRule, len(rules))
	next := 0
	for _, run := range bc.Installed {
		for range run.Count {
			restore[next].Installed = run.At
			next++
		}
	}
	for i, r := range rules {
		restore[i].Rule = r
		if restore[i].Installed.IsZero() {
			restore[i].Installed = now.UTC().Round(0) // as it will read back from a snapshot
		}
	}
	groups, err := bc.ParseGroups(bc.Groups)
	if err != nil {
		return nil, fmt.Errorf("bridge %s: saved groups: %w", bc.Name, err)
	}
	return flow.NewTable(nil, 1).Apply(flow.Edit{Restore: restore, Groups: groups, GroupsInstalled: now}, now)
}

// ParseGroups parses groups for the bridge, all or nothing.
func (bc *BridgeConfig) ParseGroups(texts []string) ([]flow.Group, error) {
	groups := make([]flow.Group, 0, len(texts))
	for _, text := range texts {
		g, err := flow.ParseGroup(text, bc)
		if err != nil {
			return nil, fmt.Errorf("group %q: %w", text, bc.NameBridge(err))
		}
		groups = append(groups, g)
	}
	return groups, nil
}

// MeterTable is the bridge's meters.
func (bc *BridgeConfig) MeterTable() (*flow.MeterTable, error) {
	mt := flow.NewMeterTable()
	for _, text := range bc.Meters {
		m, err := flow.ParseMeter(text)
		if err == nil {
			mt, err = mt.Add(m)
		}
		if err != nil {
			return nil, fmt.Errorf("meter %q: %w", text, err)
		}
	}
	return mt, nil
}

// FormatMeters writes a meter table as BridgeConfig.Meters holds it.
func FormatMeters(mt *flow.MeterTable) []string {
	var texts []string
	for _, m := range mt.Meters() {
		texts = append(texts, flow.FormatMeter(*m))
	}
	return texts
}

// formatGroups is how a snapshot saves a table's groups.
func formatGroups(t *flow.Table) []string {
	var texts []string
	for _, g := range t.Groups().Groups() {
		texts = append(texts, flow.FormatGroup(g.Group))
	}
	return texts
}

// formatFlows is how a snapshot saves a table: ovs-ofctl syntax, which
// parses back to the same rules, and when they were installed. Ephemeral
// rules are left out.
func formatFlows(t *flow.Table) (texts []string, installed []InstallTime) {
	texts = []string{}
	for _, e := range t.Entries() {
		if e.Ephemeral() {
			continue
		}
		texts = append(texts, flow.FormatRule(e.Rule))
		if n := len(installed); n > 0 && installed[n-1].At.Equal(e.Installed) {
			installed[n-1].Count++
		} else {
			installed = append(installed, InstallTime{At: e.Installed.UTC().Round(0), Count: 1})
		}
	}
	return texts, installed
}

// FormatRules and FormatEntries write rules for the journal.
func FormatRules(rules []flow.Rule) []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = flow.FormatRule(r)
	}
	return out
}

// FormatEntries writes the entries that are saved, the ephemeral ones
// left out, for the journal.
func FormatEntries(entries []*flow.Entry) []string {
	var out []string
	for _, e := range entries {
		if !e.Ephemeral() {
			out = append(out, flow.FormatRule(e.Rule))
		}
	}
	return out
}
