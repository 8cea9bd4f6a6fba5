package flow

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// The parts of the flow table that OpenFlow's FLOW_MOD needs: the rule
// flags, the options of a change, overlaps, reset_counts, the out_port
// filter, ephemeral entries and which timeout expired a rule.

func TestRuleFlagsParseAndFormat(t *testing.T) {
	tests := []struct {
		in    string
		flags RuleFlags
		rule  string // FormatRule
	}{
		{"send_flow_rem,actions=drop", FlagSendFlowRem, "send_flow_rem actions=drop"},
		{"no_byte_counts no_packet_counts send_flow_rem priority=5 ip actions=drop",
			FlagSendFlowRem | FlagNoPacketCounts | FlagNoByteCounts, "send_flow_rem no_packet_counts no_byte_counts priority=5,ip actions=drop"},
		{"idle_timeout=10,no_packet_counts,cookie=0x5,tcp,actions=output:1", FlagNoPacketCounts,
			"cookie=0x5, idle_timeout=10, no_packet_counts tcp actions=output:1"},
	}
	for _, tt := range tests {
		r, err := ParseRule(tt.in, testPorts)
		if err != nil {
			t.Errorf("ParseRule(%q): %v", tt.in, err)
			continue
		}
		if r.Flags != tt.flags {
			t.Errorf("ParseRule(%q).Flags = %#x, want %#x", tt.in, r.Flags, tt.flags)
		}
		if got := FormatRule(r); got != tt.rule {
			t.Errorf("FormatRule(%q) = %q, want %q", tt.in, got, tt.rule)
		}
		if err := ruleRoundTrips(r); err != nil {
			t.Error(err)
		}
	}
	// ovs-ofctl's dump-flows puts the flags after the timeouts and before
	// idle_age, followed by a space (lib/ofp-flow.c).
	r, _ := ParseRule("hard_timeout=20,send_flow_rem,priority=9,actions=drop", nil)
	line := FormatDumpLine(r, DumpStats{Duration: time.Second, IdleAge: time.Second, HardAge: time.Second})
	if want := "cookie=0x0, duration=1.000s, table=0, n_packets=0, n_bytes=0, hard_timeout=20, send_flow_rem idle_age=1, hard_age=1, priority=9 actions=drop"; line != want {
		t.Errorf("FormatDumpLine = %q, want %q", line, want)
	}

	errTests := []struct {
		in, want string
		filter   bool
	}{
		{"send_flow_rem=1,actions=drop", `field "send_flow_rem" takes no value`, false},
		{"send_flow_rem,send_flow_rem,actions=drop", `field "send_flow_rem" given twice`, false},
		{"check_overlap,actions=drop", "check_overlap asks something of add-flow or mod-flows, not of a rule", false},
		{"reset_counts,check_overlap,actions=drop", "check_overlap,reset_counts asks something of add-flow or mod-flows, not of a rule", false},
		{"out_port=1,actions=drop", `field "out_port" only selects flows (del-flows, dump-flows)`, false},
		{"send_flow_rem", `field "send_flow_rem" is not allowed in a match`, true},
		{"check_overlap", `field "check_overlap" is not allowed in a match`, true},
		{"out_port", `field "out_port" needs a value`, true},
		{"out_port=p9", `no port "p9"`, true},
		{"out_port=TABLE", "reserved port TABLE is not supported", true},
	}
	for _, tt := range errTests {
		var err error
		if tt.filter {
			_, err = ParseFilter(tt.in, testPorts)
		} else {
			_, err = ParseRule(tt.in, testPorts)
		}
		if err == nil || err.Error() != tt.want {
			t.Errorf("parsing %q: error %v, want %q", tt.in, err, tt.want)
		}
	}
}

func TestModOptions(t *testing.T) {
	r, opts, err := ParseAddition("check_overlap,send_flow_rem,priority=5,ip,actions=drop", nil)
	if err != nil || opts != (ModOptions{CheckOverlap: true}) || r.Flags != FlagSendFlowRem || r.Priority != 5 {
		t.Errorf("ParseAddition = %+v, %+v, %v; want check_overlap and a send_flow_rem rule", r, opts, err)
	}
	// reset_counts on an add is taken, as ovs-ofctl takes it.
	if _, opts, err := ParseAddition("reset_counts,actions=drop", nil); err != nil || !opts.ResetCounts {
		t.Errorf("ParseAddition(reset_counts) = %+v, %v", opts, err)
	}
	f, actions, opts, err := ParseModification("reset_counts,send_flow_rem,ip,actions=output:2", nil)
	if err != nil || opts != (ModOptions{ResetCounts: true}) || !slices.Equal(actions, output(2)) || f.Match != matchOf(isIPv4) {
		t.Errorf("ParseModification = %+v, %v, %+v, %v", f, actions, opts, err)
	}
}

func TestParseOutPortFilter(t *testing.T) {
	tests := []struct {
		in   string
		want uint16
	}{
		{"out_port=2", 2},
		{"out_port=p1", 1},
		{"out_port=LOCAL", LocalPort},
		{"out_port=65534", LocalPort},
		{"out_port=NORMAL", NormalPort},
		{"out_port=flood", FloodPort},
		{"out_port=ALL", AllPort},
		{"out_port=in_port", InPortPort},
		{"out_port=ANY", 0},
		{"out_port=none", 0},
	}
	for _, tt := range tests {
		f, err := ParseFilter("ip,"+tt.in, testPorts)
		if err != nil || f.OutPort != tt.want || f.Match != matchOf(isIPv4) {
			t.Errorf("ParseFilter(ip,%s) = %+v, %v; want OutPort %#x", tt.in, f, err, tt.want)
		}
	}
}

// overlapBits builds a key from the 10 bits of b spread over four fields,
// so that every key of that small universe can be tried.
func overlapBits(b uint16) Key {
	var k Key
	k.InPort = b & 3
	k.TpDst = b >> 2 & 7
	k.Regs[3] = uint32(b >> 5 & 7)
	k.NwTOS = uint8(b >> 8 & 3)
	return k
}

// TestOverlapsByBruteForce compares Overlaps with a search of every key
// of a small universe for one that both matches satisfy.
func TestOverlapsByBruteForce(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	randomMatch := func() Match {
		mask := uint16(rnd.IntN(1024))
		return Match{Key: overlapBits(uint16(rnd.IntN(1024)) & mask), Mask: overlapBits(mask)}
	}
	var overlapping int
	for range 3000 {
		a, b := randomMatch(), randomMatch()
		want := false
		for bits := range uint16(1024) {
			if k := overlapBits(bits); a.Matches(&k) && b.Matches(&k) {
				want = true
				break
			}
		}
		if got := a.Overlaps(&b); got != want {
			t.Fatalf("%+v Overlaps %+v = %v; a key matching both exists: %v", a, b, got, want)
		}
		if b.Overlaps(&a) != want {
			t.Fatalf("Overlaps is not symmetric for %+v and %+v", a, b)
		}
		if want {
			overlapping++
		}
	}
	if overlapping < 300 || overlapping > 2700 {
		t.Errorf("%d of 3000 random pairs overlap: the test says little", overlapping)
	}
}

// TestOverlapsOfRealisticMatches checks Overlaps on the classifier tests'
// rules, whose keys are too wide to search: when it says they overlap,
// the key of both matches' bits satisfies both; when not, no key near the
// one rule satisfies the other.
func TestOverlapsOfRealisticMatches(t *testing.T) {
	g := newRuleGen(11, 12)
	var overlapping int
	for range 3000 {
		a, b := g.rule().Match, g.rule().Match
		a.Key.Table, b.Key.Table = 0, 0
		if a.Overlaps(&b) {
			overlapping++
			both := keyBytes(&a.Key)
			for i, x := range keyBytes(&b.Key) {
				both[i] |= x
			}
			k := keyFromBytes(both)
			if !a.Matches(&k) || !b.Matches(&k) {
				t.Fatalf("%+v and %+v overlap, but the key of both's bits, %+v, does not match both", a, b, k)
			}
			continue
		}
		for range 50 {
			ra := Rule{Match: a}
			if k := nearKey(&ra, g.randomKey()); b.Matches(&k) {
				t.Fatalf("%+v and %+v do not overlap, but %+v matches both", a, b, k)
			}
		}
	}
	if overlapping < 100 || overlapping > 2900 {
		t.Errorf("%d of 3000 pairs overlap: the test says little", overlapping)
	}
}

func TestOverlapping(t *testing.T) {
	tab := emptyTable().AddAll([]Rule{
		rule(10, nwDst(10, 0, 0, 0, 8), output(1)),
		rule(20, nwDst(10, 1, 0, 0, 16), output(2)),
		{Priority: 10, Match: on(func(k, m *Key) { k.Table, m.Table = 1, 0xff; k.InPort, m.InPort = 1, 0xffff }), Actions: output(3)},
	}, t0)
	tests := []struct {
		r    Rule
		want uint16 // the output of the overlapping rule; 0: none
	}{
		{rule(10, nwDst(10, 2, 0, 0, 16), nil), 1}, // inside 10/8
		{rule(10, nwDst(11, 0, 0, 0, 8), nil), 0},  // beside it
		{rule(20, nwDst(10, 0, 0, 0, 8), nil), 2},  // around 10.1/16
		{rule(10, nwDst(10, 0, 0, 0, 8), nil), 1},  // the rule it would replace
		{rule(30, nwDst(10, 0, 0, 0, 8), nil), 0},  // no rule of its priority
		{rule(10, inPort(1), nil), 1},              // every IPv4 frame from port 1 to 10/8
		{rule(10, on(func(k, m *Key) {}), nil), 1}, // everything
		{rule(10, on(func(k, m *Key) { k.DlType, m.DlType = EtherTypeARP, 0xffff }), nil), 0},
		{Rule{Priority: 10, Match: on(func(k, m *Key) { k.Table, m.Table = 1, 0xff })}, 3}, // the other table's
		{Rule{Priority: 10, Match: on(func(k, m *Key) { k.Table, m.Table = 2, 0xff })}, 0},
	}
	for _, tt := range tests {
		got := uint16(0)
		if o := tab.Overlapping(&tt.r); o != nil {
			got = o.Actions[0].Port
		}
		if got != tt.want {
			t.Errorf("Overlapping(%s) is the rule to output:%d, want output:%d", FormatRule(tt.r), got, tt.want)
		}
	}
}

func TestModifyResetCounts(t *testing.T) {
	r := rule(DefaultPriority, inPort(1), output(2))
	r.IdleTimeout = 10
	v1 := emptyTable().Add(r, t0).Add(rule(DefaultPriority, inPort(2), output(1)), t0)
	old := v1.Find(&r)
	old.Hit(4, 400, t0.Add(time.Second))
	other := v1.Lookup(&Key{Headers: Headers{InPort: 2}})
	other.Hit(1, 100, t0.Add(time.Second))

	v2, modified := v1.Modify(Filter{Match: inPort(1)}, false, output(9), nil, true)
	if len(modified) != 1 || !slices.Equal(modified[0].Actions, output(9)) {
		t.Fatalf("modified %v, want the one entry with its new actions", modified)
	}
	e := v2.Find(&r)
	if p, b, used := e.Stats(); p != 0 || b != 0 || !used.Equal(t0.Add(time.Second)) {
		t.Errorf("stats after reset_counts = %d, %d, %v; want 0, 0 and the last use kept", p, b, used)
	}
	if !e.Installed.Equal(t0) || e.IdleTimeout != 10 {
		t.Errorf("reset_counts changed the installation time or the timeouts: %+v", e)
	}
	if p, _, _ := old.Stats(); p != 4 {
		t.Errorf("the old version's entry has %d packets, want its own 4", p)
	}
	if p, _, _ := v2.Lookup(&Key{Headers: Headers{InPort: 2}}).Stats(); p != 1 {
		t.Errorf("an entry reset_counts did not select has %d packets, want 1", p)
	}
	e.Hit(2, 20, t0.Add(2*time.Second))
	if p, _, _ := old.Stats(); p != 4 {
		t.Errorf("hits after reset_counts went to the old counters too")
	}
}

func TestOutputsTo(t *testing.T) {
	actions := func(text string) []Action {
		r, err := ParseRule("ip,actions="+text, testPorts)
		if err != nil {
			t.Fatal(err)
		}
		return r.Actions
	}
	tests := []struct {
		actions string
		port    uint16
		want    bool
	}{
		{"output:2", 2, true},
		{"output:2", 3, false},
		{"p1,output:3", 3, true},
		{"LOCAL", LocalPort, true},
		{"NORMAL", NormalPort, true},
		{"NORMAL", FloodPort, false},
		{"FLOOD", FloodPort, true},
		{"ALL", AllPort, true},
		{"IN_PORT", InPortPort, true},
		{"drop", 2, false},
		{"resubmit:2", 2, false}, // as OVS: a resubmit outputs nowhere itself
		{"mod_nw_dst:10.0.0.1,write_actions(output:4)", 4, true},
		{"clear_actions,write_actions(NORMAL),goto_table:1", NormalPort, true},
	}
	for _, tt := range tests {
		r := Rule{Actions: actions(tt.actions)}
		if got := r.OutputsTo(tt.port); got != tt.want {
			t.Errorf("actions=%s OutputsTo(%#x) = %v, want %v", tt.actions, tt.port, got, tt.want)
		}
	}
}

func TestEphemeralEntries(t *testing.T) {
	saved := rule(5, inPort(1), output(2))
	controller := rule(5, inPort(2), output(1))
	tab := emptyTable().Add(saved, t0).AddEphemeral([]Rule{controller}, t0)
	if tab.Find(&saved).Ephemeral() || !tab.Find(&controller).Ephemeral() {
		t.Fatal("AddEphemeral's entry is not the one marked ephemeral")
	}
	tab, _ = tab.Modify(Filter{}, false, output(3), nil, true)
	if tab.Find(&saved).Ephemeral() || !tab.Find(&controller).Ephemeral() {
		t.Error("mod-flows changed which entry is ephemeral")
	}
	if tab.Add(controller, t0).Find(&controller).Ephemeral() {
		t.Error("Add of a rule that replaces an ephemeral one made it ephemeral")
	}
	if tab.Find(&Rule{Priority: 6, Match: inPort(1)}) != nil {
		t.Error("Find found a rule of another priority")
	}
}

func TestTimedOut(t *testing.T) {
	r := rule(1, inPort(1), nil)
	r.IdleTimeout, r.HardTimeout = 5, 8
	e := emptyTable().Add(r, t0).Entries()[0]
	for _, tt := range []struct {
		after time.Duration
		want  Timeout
	}{{4 * time.Second, NotTimedOut}, {5 * time.Second, IdleTimedOut}, {8 * time.Second, HardTimedOut}} {
		if got := e.TimedOut(t0.Add(tt.after)); got != tt.want {
			t.Errorf("after %v: TimedOut = %d, want %d", tt.after, got, tt.want)
		}
	}
	e.Hit(1, 1, t0.Add(4*time.Second))
	if got := e.TimedOut(t0.Add(6 * time.Second)); got != NotTimedOut {
		t.Errorf("hit at 4s, at 6s: TimedOut = %d, want none", got)
	}
}

// ruleOnlyWords are the words of a rule that a match may not hold.
func ruleOnlyWords(text string) bool {
	return strings.Contains(text, "_timeout=") || strings.Contains(text, "send_flow_rem") || strings.Contains(text, "_counts")
}
