package control

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/control/store"
	"github.com/xswitch/xswitch/flow"
)

// TestFlowModsAreOneChange: a burst of typed edits is published as one
// table and saved as one journal line, made in order, and comes back
// after a restart; a burst that fails changes nothing.
func TestFlowModsAreOneChange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conf.json")
	d := quietDaemon(t, path)
	defer func() { d.Close() }()
	d.Handle(api.Request{Verb: api.VerbAddBridge, Bridge: "br0"})
	rule := func(text string) flow.Rule {
		r, err := flow.ParseRule(text, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	filter := func(text string) flow.Filter {
		f, err := flow.ParseFilter(text, nil)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	before := d.bridges["br0"].Flows().Version()
	journal, _ := os.ReadFile(store.JournalPath(path))
	changed, err := d.ApplyFlowMods("br0", []FlowMod{
		{Command: FlowAdd, Rule: rule("table=1,priority=5,arp,actions=drop")},
		{Command: FlowAdd, Rule: rule("table=2,priority=5,arp,actions=drop")},
		{Command: FlowAdd, Rule: rule("priority=9,ip,actions=goto_table:1")},
		{Command: FlowModify, Filter: filter("arp"), Actions: rule("actions=NORMAL").Actions},
		{Command: FlowDelete, Filter: filter("table=2")},
		{Command: FlowDelete, Filter: filter("table=9")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{1, 1, 1, 2, 1, 0}; !slices.Equal(changed, want) {
		t.Errorf("changed %v, want %v", changed, want)
	}
	if v := d.bridges["br0"].Flows().Version(); v <= before {
		t.Errorf("the burst left table version %d from %d", v, before)
	}
	grown, _ := os.ReadFile(store.JournalPath(path))
	if added := grown[len(journal):]; !bytes.HasPrefix(grown, journal) || bytes.Count(added, []byte("\n")) != 1 {
		t.Errorf("the burst appended %q to the journal, want one line", added)
	}
	want := dumpTexts(t, d)

	if _, err := d.ApplyFlowMods("br0", []FlowMod{{Command: FlowAdd, Rule: rule("actions=drop")}, {Command: 99}}); err == nil {
		t.Error("a burst with an unknown command was applied")
	}
	if got := dumpTexts(t, d); got != want {
		t.Errorf("a failed burst changed the tables:\n%s\nwant\n%s", got, want)
	}
	crash(d)
	d = quietDaemon(t, path)
	if got := dumpTexts(t, d); got != want {
		t.Errorf("after a restart:\n%s\nwant\n%s", got, want)
	}
}

func dumpTexts(t *testing.T, d *Daemon) string {
	t.Helper()
	var out []byte
	for _, e := range d.bridges["br0"].Flows().Entries() {
		out = append(out, flow.FormatRule(e.Rule)...)
		out = append(out, '\n')
	}
	return string(out)
}

// TestLocalNeedsTheBridgesOwnPort: LOCAL is the port named like the
// bridge, which gets OpenFlow's number 65534; a rule naming LOCAL on a
// bridge without one is refused with a message that says how to add it.
func TestLocalNeedsTheBridgesOwnPort(t *testing.T) {
	d := quietDaemon(t, filepath.Join(t.TempDir(), "conf.json"))
	defer d.Close()
	d.Handle(api.Request{Verb: api.VerbAddBridge, Bridge: "br0"})
	resp := d.Handle(api.Request{Verb: api.VerbAddFlows, Bridge: "br0", Flows: []string{"in_port=1,actions=LOCAL"}})
	if want := "reserved port LOCAL is bridge br0's own port, and it has none: add it with add-port br0 br0 --type internal"; resp.Error != want {
		t.Errorf("LOCAL without the bridge's port: %q, want %q", resp.Error, want)
	}
	resp = d.Handle(api.Request{Verb: api.VerbModFlows, Bridge: "br0", Flows: []string{"actions=output:LOCAL"}})
	if resp.Error == "" {
		t.Error("mod-flows to LOCAL without the bridge's port was accepted")
	}
	bc := d.cfg.Bridge("br0")
	if n, err := allocOFPort(bc, "br0", 0, time.Now()); err != nil || n != flow.LocalPort {
		t.Errorf("the port named like the bridge gets ofport %d, %v; want LOCAL (%d)", n, err, flow.LocalPort)
	}
	if _, err := allocOFPort(bc, "br0", 7, time.Now()); err == nil {
		t.Error("the port named like the bridge took ofport 7")
	}
	if err := validatePort(api.PortConfig{Name: "p1", OFPort: flow.LocalPort, Mode: "auto"}, "br0"); err == nil {
		t.Error("a saved port other than the bridge's own with ofport LOCAL passed validation")
	}
}

// A rule that sends to a group the bridge does not have is refused, by
// add-flows and mod-flows alike, and the table is left as it was.
func TestRulesToMissingGroupsAreRefused(t *testing.T) {
	d := quietDaemon(t, filepath.Join(t.TempDir(), "conf.json"))
	defer d.Close()
	d.Handle(api.Request{Verb: api.VerbAddBridge, Bridge: "br0"})
	before := dumpTexts(t, d)
	resp := d.Handle(api.Request{Verb: api.VerbAddFlows, Bridge: "br0", Flows: []string{"priority=5,actions=group:7"}})
	if want := "flow change 1: group 7 on bridge br0: no such group"; resp.Error != want {
		t.Errorf("add-flows to a missing group: %q, want %q", resp.Error, want)
	}
	resp = d.Handle(api.Request{Verb: api.VerbModFlows, Bridge: "br0", Flows: []string{"actions=output:1,group:7"}})
	if resp.Error == "" {
		t.Error("mod-flows to a missing group was accepted")
	}
	if after := dumpTexts(t, d); after != before {
		t.Errorf("the refused changes changed the table: %q, was %q", after, before)
	}
}

// BenchmarkApplyFlowModsOneAdd is what a controller's flow mod costs the
// daemon when each comes alone (ovs-ofctl add-flows follows every one with
// a barrier): one ephemeral rule added to a table that grows by one each
// time.
func BenchmarkApplyFlowModsOneAdd(b *testing.B) {
	d := newTestDaemon(b, filepath.Join(b.TempDir(), "conf.json"))
	if resp := d.Handle(api.Request{Verb: api.VerbAddBridge, Bridge: "br0"}); resp.Error != "" {
		b.Fatal(resp.Error)
	}
	var rules []flow.Rule
	for i := range 1 << 17 {
		r, err := flow.ParseRule(fmt.Sprintf("priority=100,ip,nw_dst=10.%d.%d.%d,actions=output:1", i>>16, i>>8&255, i&255), nil)
		if err != nil {
			b.Fatal(err)
		}
		rules = append(rules, r)
	}
	i := 0
	for b.Loop() {
		if _, err := d.ApplyFlowMods("br0", []FlowMod{{Command: FlowAdd, Rule: rules[i%len(rules)], Ephemeral: true}}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
