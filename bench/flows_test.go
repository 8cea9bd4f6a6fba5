package bench

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xswitch/xswitch/flow"
)

const manyFlows = 1000

func parseFlows(t *testing.T, texts []string) []flow.Rule {
	t.Helper()
	rules := make([]flow.Rule, len(texts))
	for i, text := range texts {
		r, err := flow.ParseRule(text, nil)
		if err != nil {
			t.Fatalf("flow %d %q: %v", i, text, err)
		}
		rules[i] = r
	}
	return rules
}

// benchKey is the key of the bench frame as it arrives on the generator's
// port, from a veth's random source MAC.
func benchKey(t *testing.T, srcMAC, dstMAC net.HardwareAddr) flow.Key {
	t.Helper()
	frame, err := BuildFrame(FrameConfig{SrcMAC: srcMAC, DstMAC: dstMAC, SrcIP: genIP, DstIP: rcvIP, Size: 64})
	if err != nil {
		t.Fatal(err)
	}
	var k flow.Key
	if !flow.NewExtractor().Extract(frame, genOFPort, &k) {
		t.Fatal("the bench frame does not extract")
	}
	return k
}

func TestManyFlowsShape(t *testing.T) {
	texts := ManyFlows(manyFlows)
	if len(texts) != manyFlows {
		t.Fatalf("ManyFlows(%d) returned %d flows", manyFlows, len(texts))
	}
	rules := parseFlows(t, texts)
	table := flow.NewClassifier().Load().AddAll(rules, time.Now())
	if table.Len() != manyFlows {
		t.Errorf("the table holds %d rules, want %d: some flows replace others", table.Len(), manyFlows)
	}
	masks := map[flow.Key]bool{}
	masksAboveForward := map[flow.Key]bool{}
	for _, r := range rules {
		masks[r.Match.Mask] = true
		if r.Priority > forwardPriority {
			masksAboveForward[r.Match.Mask] = true
		}
	}
	t.Logf("%d masks, %d of them above the forwarding rule", len(masks), len(masksAboveForward))
	if len(masks) < 10 {
		t.Errorf("%d distinct masks, want at least 10", len(masks))
	}
	// Every one of them must be probed before the forwarding rule wins.
	if len(masksAboveForward) < 10 {
		t.Errorf("%d distinct masks above the forwarding rule's priority, want at least 10", len(masksAboveForward))
	}
	if texts[len(texts)-2] != forwardFlow || texts[len(texts)-1] != defaultFlow {
		t.Errorf("the last two flows are %q, want the forwarding rule and the default", texts[len(texts)-2:])
	}
}

func TestManyFlowsForwardOnlyTheBenchFrame(t *testing.T) {
	rules := parseFlows(t, ManyFlows(manyFlows))
	table := flow.NewClassifier().Load().AddAll(rules, time.Now())
	forward, deflt := rules[len(rules)-2], rules[len(rules)-1]
	// Veths' random addresses: locally administered, unicast.
	for _, macs := range [][2]net.HardwareAddr{
		{{0x02, 0, 0, 0, 0, 1}, {0x02, 0, 0, 0, 0, 2}},
		{{0xfe, 0x1b, 0x21, 0, 0, 0}, {0x06, 0x1b, 0x21, 0, 0, 1}},
		{{0xa6, 0x58, 0x80, 0xef, 0xa3, 0xb6}, {0x22, 0xe6, 0xf1, 0x38, 0x49, 0xe7}},
	} {
		k := benchKey(t, macs[0], macs[1])
		e := table.Lookup(&k)
		if e == nil || e.Priority != forward.Priority || e.Match != forward.Match {
			t.Errorf("from %v: the bench frame hits %+v, want %q", macs[0], e, forwardFlow)
		}
		for i, r := range rules[:len(rules)-2] {
			if r.Match.Matches(&k) {
				t.Errorf("from %v: the bench frame matches flow %d, %q", macs[0], i, flow.FormatRule(r))
			}
		}
		// The receiver's frames back to the generator take NORMAL.
		reverse := benchKey(t, macs[1], macs[0])
		reverse.InPort = rcvOFPort
		reverse.NwSrc, reverse.NwDst = reverse.NwDst, reverse.NwSrc
		if e := table.Lookup(&reverse); e == nil || e.Match != deflt.Match {
			t.Errorf("from %v: the reverse frame hits %+v, want %q", macs[1], e, defaultFlow)
		}
	}
}

func TestManyFlowsFew(t *testing.T) {
	for _, n := range []int{0, 1, 2} {
		if got := ManyFlows(n); len(got) != 2 || got[0] != forwardFlow || got[1] != defaultFlow {
			t.Errorf("ManyFlows(%d) = %q, want the forwarding rule and the default", n, got)
		}
	}
	if got := ManyFlows(3); len(got) != 3 {
		t.Errorf("ManyFlows(3) returned %d flows", len(got))
	}
}

// TestManyFlowsOVSSyntax checks the flows with Open vSwitch's own parser,
// which needs no running switch.
func TestManyFlowsOVSSyntax(t *testing.T) {
	for name, flows := range map[string][]string{"ManyFlows": ManyFlows(manyFlows), "PipelineFlows": PipelineFlows()} {
		checkOVSSyntax(t, name, flows)
	}
}

func checkOVSSyntax(t *testing.T, name string, flows []string) {
	t.Helper()
	ofctl, err := exec.LookPath("ovs-ofctl")
	if err != nil {
		t.Skip("ovs-ofctl is not installed: skipped")
	}
	file := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(file, []byte(strings.Join(flows, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(ofctl, "-O", "OpenFlow13", "parse-flows", file).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: ovs-ofctl parse-flows: %v\n%s", name, err, out)
	}
	if strings.Contains(string(out), "WARN") {
		t.Errorf("%s: ovs-ofctl parse-flows warns:\n%s", name, out)
	}
}

// TestPipelineFlowsCarryTheBenchFrame runs the bench frame and its reply
// through the pipeline's tables: each meets the rule that leads on to
// NORMAL, in every table.
func TestPipelineFlowsCarryTheBenchFrame(t *testing.T) {
	var rules []flow.Rule
	for _, text := range PipelineFlows() {
		r, err := flow.ParseRule(text, nil)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		rules = append(rules, r)
	}
	table := flow.NewTable(nil, 1).AddAll(rules, time.Now())
	for _, in := range []uint16{genOFPort, rcvOFPort} {
		k := flow.Key{Headers: flow.Headers{InPort: in, DlType: flow.EtherTypeIPv4, NwProto: flow.ProtoUDP, TpDst: benchDstPort}}
		for k.Table = 0; ; {
			e := table.Lookup(&k)
			if e == nil {
				t.Fatalf("from port %d: no rule in table %d", in, k.Table)
			}
			last := e.Actions[len(e.Actions)-1]
			if last.Type == flow.ActNormal {
				break
			}
			if last.Type != flow.ActGotoTable {
				t.Fatalf("from port %d: table %d's rule %s neither goes on nor switches", in, k.Table, flow.FormatRule(e.Rule))
			}
			for _, a := range e.Actions {
				a.ApplyToKey(&k)
			}
			k.Table = last.Table
		}
		if k.Table != 2 || k.Regs[0] != uint32(in) {
			t.Errorf("from port %d: NORMAL in table %d with reg0=%d, want table 2 and reg0=%d", in, k.Table, k.Regs[0], in)
		}
	}
}

// TestStatefulFirewallRules runs the bench frame and its replies through
// the firewall's tables as the tracker would mark them: out from the
// generator's side through ct(commit) to the receiver; back only as
// +est or +rel, after ct(table=1); a new connection from the receiver's
// side, and IPv6, dropped.
func TestStatefulFirewallRules(t *testing.T) {
	flows := StatefulFirewallRules().Flows
	checkOVSSyntax(t, "StatefulFirewallRules", flows)
	table := flow.NewTable(nil, 2).AddAll(parseFlows(t, flows), time.Now())
	outcome := func(k flow.Key) string {
		e := table.Lookup(&k)
		if e == nil {
			return "no rule"
		}
		return flow.FormatActions(e.Actions)
	}
	ip := func(in uint16) flow.Key {
		return flow.Key{Headers: flow.Headers{InPort: in, DlType: flow.EtherTypeIPv4, NwProto: flow.ProtoUDP, TpDst: benchDstPort}}
	}
	tracked := func(in uint16, state uint8) flow.Key {
		k := ip(in)
		k.Table, k.CT.State = 1, flow.CTTracked|state
		return k
	}
	for name, tc := range map[string]struct {
		key  flow.Key
		want string
	}{
		"out":              {ip(genOFPort), fmt.Sprintf("ct(commit),output:%d", rcvOFPort)},
		"back":             {ip(rcvOFPort), "ct(table=1)"},
		"back +est":        {tracked(rcvOFPort, flow.CTEstablished|flow.CTReply), fmt.Sprintf("output:%d", genOFPort)},
		"back +rel":        {tracked(rcvOFPort, flow.CTRelated|flow.CTReply), fmt.Sprintf("output:%d", genOFPort)},
		"back +new":        {tracked(rcvOFPort, flow.CTNew), "drop"},
		"back +inv":        {tracked(rcvOFPort, flow.CTInvalid), "drop"},
		"arp":              {flow.Key{Headers: flow.Headers{InPort: rcvOFPort, DlType: flow.EtherTypeARP}}, "NORMAL"},
		"ipv6":             {flow.Key{Headers: flow.Headers{InPort: genOFPort, DlType: flow.EtherTypeIPv6}}, "drop"},
		"the announcement": {flow.Key{Headers: flow.Headers{InPort: rcvOFPort, DlType: announceEtherType}}, "drop"},
	} {
		if got := outcome(tc.key); got != tc.want {
			t.Errorf("%s: actions %q, want %q", name, got, tc.want)
		}
	}
}
