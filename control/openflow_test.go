package control

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/control/store"
	"github.com/xswitch/xswitch/flow"
)

// What OpenFlow's FLOW_MOD needs of the daemon: check_overlap,
// reset_counts, out_port, ephemeral rules and FLOW_REMOVED's
// notifications.

func mustRule(t *testing.T, text string) flow.Rule {
	t.Helper()
	r, err := flow.ParseRule(text, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustFilter(t *testing.T, text string) flow.Filter {
	t.Helper()
	f, err := flow.ParseFilter(text, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestCheckOverlap(t *testing.T) {
	d := quietDaemon(t, filepath.Join(t.TempDir(), "conf.json"))
	defer d.Close()
	d.Handle(api.Request{Verb: api.VerbAddBridge, Bridge: "br0"})
	if resp := d.Handle(api.Request{Verb: api.VerbAddFlows, Bridge: "br0", Flows: []string{"priority=5,ip,nw_dst=10.0.0.0/8,actions=drop"}}); resp.Error != "" {
		t.Fatal(resp.Error)
	}
	resp := d.Handle(api.Request{Verb: api.VerbAddFlows, Bridge: "br0", Flows: []string{"check_overlap,priority=5,tcp,nw_dst=10.1.0.0/16,actions=drop"}})
	if want := "a rule of the same priority in its table overlaps it"; !strings.Contains(resp.Error, want) {
		t.Errorf("add-flow check_overlap of an overlapping rule: error %q, want one saying %q", resp.Error, want)
	}
	for _, ok := range []string{
		"check_overlap,priority=6,tcp,nw_dst=10.1.0.0/16,actions=drop",       // another priority
		"check_overlap,priority=5,ip,nw_dst=11.0.0.0/8,actions=drop",         // disjoint
		"check_overlap,table=1,priority=5,ip,nw_dst=10.0.0.0/8,actions=drop", // another table
		"priority=5,ip,nw_dst=10.1.0.0/16,actions=drop",                      // no check
	} {
		if resp := d.Handle(api.Request{Verb: api.VerbAddFlows, Bridge: "br0", Flows: []string{ok}}); resp.Error != "" {
			t.Errorf("add-flow %s: %s", ok, resp.Error)
		}
	}
	// A burst checks each rule against those before it in the burst too,
	// and fails whole.
	before := dumpTexts(t, d)
	_, err := d.ApplyFlowMods("br0", []FlowMod{
		{Command: FlowAdd, Rule: mustRule(t, "priority=9,arp,actions=drop")},
		{Command: FlowAdd, Rule: mustRule(t, "priority=9,arp,arp_op=1,actions=drop"), CheckOverlap: true},
	})
	if !errors.Is(err, ErrOverlap) {
		t.Errorf("a burst whose second rule overlaps its first: error %v, want ErrOverlap", err)
	}
	if got := dumpTexts(t, d); got != before {
		t.Errorf("a refused burst changed the tables:\n%s", got)
	}
	_, err = d.ApplyFlowMods("br0", []FlowMod{{Command: FlowAdd, Rule: mustRule(t, "priority=5,ip,nw_dst=10.0.0.0/8,actions=drop"), CheckOverlap: true, Ephemeral: true}})
	if !errors.Is(err, ErrOverlap) {
		t.Errorf("the same rule again with CheckOverlap: error %v, want ErrOverlap", err)
	}
}

func TestResetCounts(t *testing.T) {
	d := quietDaemon(t, filepath.Join(t.TempDir(), "conf.json"))
	defer d.Close()
	d.Handle(api.Request{Verb: api.VerbAddBridge, Bridge: "br0"})
	d.Handle(api.Request{Verb: api.VerbAddFlows, Bridge: "br0", Flows: []string{"priority=5,arp,actions=drop", "priority=5,ip,actions=drop"}})
	hit := func() {
		for _, e := range d.bridges["br0"].Flows().Entries() {
			e.Hit(3, 300, time.Now())
		}
	}
	packets := func(filter string) uint64 {
		flows, err := d.dumpFlows("br0", filter)
		if err != nil || len(flows) != 1 {
			t.Fatalf("dump-flows %s: %v, %v", filter, flows, err)
		}
		return flows[0].Packets
	}
	hit()
	d.Handle(api.Request{Verb: api.VerbModFlows, Bridge: "br0", Flows: []string{"arp,actions=NORMAL"}})
	if p := packets("arp"); p != 3 {
		t.Errorf("mod-flows without reset_counts: %d packets, want 3", p)
	}
	if resp := d.Handle(api.Request{Verb: api.VerbModFlows, Bridge: "br0", Flows: []string{"reset_counts,arp,actions=drop"}}); resp.Error != "" || resp.Changed != 1 {
		t.Fatalf("mod-flows reset_counts: %+v", resp)
	}
	if p, other := packets("arp"), packets("ip"); p != 0 || other != 3 {
		t.Errorf("after mod-flows reset_counts arp: arp %d packets, ip %d; want 0 and 3", p, other)
	}
	hit()
	if _, err := d.ApplyFlowMods("br0", []FlowMod{{Command: FlowModify, Filter: mustFilter(t, "ip"), Actions: nil, ResetCounts: true}}); err != nil {
		t.Fatal(err)
	}
	if p, other := packets("ip"), packets("arp"); p != 0 || other != 3 {
		t.Errorf("after a FlowModify with ResetCounts of ip: ip %d packets, arp %d; want 0 and 3", p, other)
	}
}

func TestOutPortFilter(t *testing.T) {
	d := quietDaemon(t, filepath.Join(t.TempDir(), "conf.json"))
	defer d.Close()
	d.Handle(api.Request{Verb: api.VerbAddBridge, Bridge: "br0"}) // priority=0 actions=NORMAL
	d.Handle(api.Request{Verb: api.VerbAddFlows, Bridge: "br0", Flows: []string{
		"priority=5,arp,actions=output:2",
		"priority=5,ip,actions=write_actions(output:2)",
		"priority=5,ipv6,actions=output:3",
	}})
	count := func(filter string) int {
		flows, err := d.dumpFlows("br0", filter)
		if err != nil {
			t.Fatalf("dump-flows %s: %v", filter, err)
		}
		return len(flows)
	}
	for filter, want := range map[string]int{"out_port=2": 2, "out_port=3": 1, "out_port=NORMAL": 1, "out_port=ANY": 4, "out_port=4": 0, "ip,out_port=2": 1} {
		if got := count(filter); got != want {
			t.Errorf("dump-flows %s: %d flows, want %d", filter, got, want)
		}
	}
	// A modification ignores out_port, as OpenFlow says.
	f := mustFilter(t, "priority=5,ipv6,out_port=2")
	if changed, err := d.ApplyFlowMods("br0", []FlowMod{{Command: FlowModify, Filter: f, Strict: true, Actions: mustRule(t, "actions=output:4").Actions}}); err != nil || changed[0] != 1 {
		t.Errorf("FlowModify with out_port: changed %v, %v; want the ipv6 rule", changed, err)
	}
	if resp := d.Handle(api.Request{Verb: api.VerbDelFlows, Bridge: "br0", Match: "out_port=2"}); resp.Error != "" || resp.Changed != 2 {
		t.Errorf("del-flows out_port=2: %+v, want 2 removed", resp)
	}
	if got := count(""); got != 2 {
		t.Errorf("after del-flows out_port=2: %d flows, want 2", got)
	}
}

// agentMod is a random edit as a controller makes them, from a small
// space, so that its rules replace, overlap and select the CLI's.
func agentMod(rnd *rand.Rand, t *testing.T) FlowMod {
	matches := []string{"", "ip", "tcp,tp_dst=22", "arp", "in_port=1", fmt.Sprintf("ip,nw_dst=10.0.0.%d", rnd.IntN(4))}
	match := matches[rnd.IntN(len(matches))]
	switch rnd.IntN(4) {
	case 0, 1:
		text := fmt.Sprintf("priority=%d", []int{0, 10, 100, 32768}[rnd.IntN(4)])
		if match != "" {
			text += "," + match
		}
		return FlowMod{Command: FlowAdd, Ephemeral: true, Rule: mustRule(t, text+",actions="+[]string{"drop", "NORMAL", "output:3"}[rnd.IntN(3)])}
	case 2:
		return FlowMod{Command: FlowModify, Filter: mustFilter(t, match), Actions: mustRule(t, "actions=output:4").Actions, ResetCounts: rnd.IntN(2) == 0}
	}
	return FlowMod{Command: FlowDelete, Filter: mustFilter(t, match), Strict: rnd.IntN(2) == 0}
}

// TestEphemeralRulesAreNotSaved runs the CLI's random verbs and a
// controller's random edits together, and checks after each that the
// configuration on disk, as a restart loads it, is the daemon's rules but
// the controller's; now and then the daemon restarts, with those alone.
func TestEphemeralRulesAreNotSaved(t *testing.T) {
	defer func(old int64) { store.MinCompaction = old }(store.MinCompaction)
	store.MinCompaction = 4 << 10
	path := filepath.Join(t.TempDir(), "conf.json")
	d := quietDaemon(t, path)
	defer func() { d.Close() }()
	d.Handle(api.Request{Verb: api.VerbAddBridge, Bridge: "br0"})
	rnd := rand.New(rand.NewPCG(5, 6))
	ephemeral := 0
	for step := range 600 {
		var what string
		if rnd.IntN(2) == 0 {
			req := randomVerb(rnd)
			if req.Verb == api.VerbDelBridge {
				continue
			}
			d.Handle(req)
			what = fmt.Sprintf("%+v", req)
		} else {
			m := agentMod(rnd, t)
			if _, err := d.ApplyFlowMods("br0", []FlowMod{m}); err != nil {
				t.Fatalf("step %d: %+v: %v", step, m, err)
			}
			what = fmt.Sprintf("agent %+v", m)
		}
		for _, e := range d.bridges["br0"].Flows().Entries() {
			if e.Ephemeral() {
				ephemeral++
			}
		}
		// running leaves out the ephemeral rules, as the configuration
		// must.
		var restarted bool
		if d, restarted = checkSaved(t, d, path, step, what); restarted {
			for _, e := range d.bridges["br0"].Flows().Entries() {
				if e.Ephemeral() {
					t.Fatalf("step %d: an ephemeral rule is back after a restart: %s", step, flow.FormatRule(e.Rule))
				}
			}
		}
	}
	if ephemeral < 600 {
		t.Errorf("only %d ephemeral rules seen over the run: the test says little", ephemeral)
	}
}

// TestEphemeralRulesAfterARestart: what a controller installs is gone
// after a restart, what the CLI installs stays, and a CLI rule that a
// controller replaced is gone too.
func TestEphemeralRulesAfterARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conf.json")
	d := quietDaemon(t, path)
	defer func() { d.Close() }()
	d.Handle(api.Request{Verb: api.VerbAddBridge, Bridge: "br0"})
	d.Handle(api.Request{Verb: api.VerbAddFlows, Bridge: "br0", Flows: []string{"priority=7,arp,actions=drop", "priority=8,ip,actions=drop"}})
	journal, _ := os.ReadFile(store.JournalPath(path))
	if _, err := d.ApplyFlowMods("br0", []FlowMod{
		{Command: FlowAdd, Ephemeral: true, Rule: mustRule(t, "priority=9,tcp,actions=drop")},
		{Command: FlowModify, Filter: mustFilter(t, "tcp"), Actions: mustRule(t, "actions=NORMAL").Actions},
	}); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(store.JournalPath(path)); len(after) != len(journal) {
		t.Errorf("adding and modifying a controller's rule wrote %q to the journal", after[len(journal):])
	}
	if _, err := d.ApplyFlowMods("br0", []FlowMod{{Command: FlowAdd, Ephemeral: true, Rule: mustRule(t, "priority=8,ip,actions=NORMAL")}}); err != nil {
		t.Fatal(err)
	}
	if got, want := dumpTexts(t, d), "priority=9,tcp actions=NORMAL\npriority=8,ip actions=NORMAL\npriority=7,arp actions=drop\npriority=0 actions=NORMAL\n"; got != want {
		t.Errorf("running:\n%s\nwant\n%s", got, want)
	}
	// The journal, then the snapshot of a clean stop.
	crash(d)
	d = quietDaemon(t, path)
	if got, want := dumpTexts(t, d), "priority=7,arp actions=drop\npriority=0 actions=NORMAL\n"; got != want {
		t.Errorf("after a crash:\n%s\nwant only the CLI's rules that are still there:\n%s", got, want)
	}
	if _, err := d.ApplyFlowMods("br0", []FlowMod{{Command: FlowAdd, Ephemeral: true, Rule: mustRule(t, "priority=7,arp,actions=NORMAL")}}); err != nil {
		t.Fatal(err)
	}
	d.Close()
	d = quietDaemon(t, path)
	if got, want := dumpTexts(t, d), "priority=0 actions=NORMAL\n"; got != want {
		t.Errorf("after a clean stop:\n%s\nwant\n%s", got, want)
	}
}

// removedLog gathers what OnFlowsRemoved tells.
type removedLog struct {
	mu  sync.Mutex
	got []string
}

func (l *removedLog) add(bridge string, removed []RemovedFlow) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range removed {
		packets, _, _ := r.Entry.Stats()
		l.got = append(l.got, fmt.Sprintf("%s %d %s n_packets=%d", bridge, r.Reason, flow.FormatMatch(r.Entry.Match), packets))
	}
}

func (l *removedLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	got := l.got
	l.got = nil
	return got
}

func TestFlowsRemovedNotifications(t *testing.T) {
	// Closed at the end, not deferred: a deadlocked daemon would hang the
	// failure that says so.
	d := quietDaemon(t, filepath.Join(t.TempDir(), "conf.json"))
	d.Handle(api.Request{Verb: api.VerbAddBridge, Bridge: "br0"})
	var log removedLog
	d.OnFlowsRemoved(log.add)
	d.Handle(api.Request{Verb: api.VerbAddFlows, Bridge: "br0", Flows: []string{
		"send_flow_rem,idle_timeout=100,hard_timeout=200,priority=5,arp,actions=drop",
		"send_flow_rem,hard_timeout=50,priority=5,ip,actions=drop",
		"hard_timeout=50,priority=5,ipv6,actions=drop", // not to be told
		"send_flow_rem,priority=5,tcp,actions=drop",
		"send_flow_rem,priority=6,udp,actions=drop",
	}})
	for _, e := range d.bridges["br0"].Flows().Entries() {
		e.Hit(2, 200, time.Now())
	}
	now := time.Now()
	d.expireFlows(now.Add(60 * time.Second))
	if got, want := log.take(), []string{"br0 1 ip n_packets=2"}; !slices.Equal(got, want) {
		t.Errorf("after the hard timeout: told %q, want %q", got, want)
	}
	d.expireFlows(now.Add(150 * time.Second))
	if got, want := log.take(), []string{"br0 0 arp n_packets=2"}; !slices.Equal(got, want) {
		t.Errorf("after the idle timeout: told %q, want %q", got, want)
	}
	d.Handle(api.Request{Verb: api.VerbDelFlows, Bridge: "br0", Match: "tcp"})
	if got, want := log.take(), []string{"br0 2 tcp n_packets=2"}; !slices.Equal(got, want) {
		t.Errorf("after del-flows: told %q, want %q", got, want)
	}

	// fn may call the daemon: what it removes is told next, in order.
	d.ApplyFlowMods("br0", []FlowMod{{Command: FlowAdd, Ephemeral: true, Rule: mustRule(t, "send_flow_rem,priority=7,arp,actions=drop")}})
	var once sync.Once
	arp := mustFilter(t, "arp")
	d.OnFlowsRemoved(func(bridge string, removed []RemovedFlow) {
		once.Do(func() {
			if _, err := d.dumpFlows(bridge, ""); err != nil {
				t.Error(err)
			}
			if _, err := d.ApplyFlowMods(bridge, []FlowMod{{Command: FlowDelete, Filter: arp}}); err != nil {
				t.Error(err)
			}
		})
	})
	done := make(chan struct{})
	udp := mustFilter(t, "udp")
	go func() {
		defer close(done)
		d.ApplyFlowMods("br0", []FlowMod{{Command: FlowDelete, Filter: udp, Strict: true}}) // strict: priority 32768, none
		d.ApplyFlowMods("br0", []FlowMod{{Command: FlowDelete, Filter: udp}})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a function that OnFlowsRemoved calls, calling the daemon, deadlocked it")
	}
	if got, want := log.take(), []string{"br0 2 udp n_packets=2", "br0 2 arp n_packets=0"}; !slices.Equal(got, want) {
		t.Errorf("a delete, and one that its notification made: told %q, want %q", got, want)
	}
	d.Close()
}

// PortStats, which the agent's PORT_STATS reads, and Metrics give every
// configured port in OpenFlow port order, the ports that are down
// included, with the counters show gives.
func TestPortStatsAndMetricsListEveryConfiguredPort(t *testing.T) {
	db := filepath.Join(t.TempDir(), "conf.json")
	conf := `{"bridges":[{"name":"br0","ports":[{"name":"xsnone-b","ofport":3},{"name":"xsnone-a","ofport":1}],"flows":[]}]}`
	if err := os.WriteFile(db, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	d := newTestDaemon(t, db)
	shown := mustHandle(t, d, api.Request{Verb: api.VerbShow, Bridge: "br0"}).Bridges[0].Ports
	stats, err := d.PortStats("br0")
	if err != nil {
		t.Fatal(err)
	}
	metrics := d.Metrics()[0].Ports
	if len(shown) != 2 || len(stats) != 2 || len(metrics) != 2 {
		t.Fatalf("show lists %d ports, PortStats %d, Metrics %d; want the 2 configured", len(shown), len(stats), len(metrics))
	}
	for i, want := range []struct {
		name   string
		ofport uint16
	}{{"xsnone-a", 1}, {"xsnone-b", 3}} {
		s, m, p := stats[i], metrics[i], shown[i]
		if s.Name != want.name || s.OFPort != want.ofport || m.Name != want.name || p.Name != want.name {
			t.Errorf("port %d: PortStats %s (%d), Metrics %s, show %s; want %s (%d)", i, s.Name, s.OFPort, m.Name, p.Name, want.name, want.ofport)
		}
		if p.Error == "" || m.Up {
			t.Errorf("port %s: show's error %q, Metrics' up %v; want it down", want.name, p.Error, m.Up)
		}
		if portStats(s.Stats).RxPackets != p.Stats.RxPackets || s.Stats != m.Stats {
			t.Errorf("port %s: counters differ between PortStats, Metrics and show", want.name)
		}
	}
	if _, err := d.PortStats("nobr"); err == nil || !strings.Contains(err.Error(), `no bridge "nobr"`) {
		t.Errorf("PortStats of a bridge that does not exist: %v", err)
	}
}
