package bench

import (
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
	ofctl, err := exec.LookPath("ovs-ofctl")
	if err != nil {
		t.Skip("ovs-ofctl is not installed: skipped")
	}
	file := filepath.Join(t.TempDir(), "flows")
	if err := os.WriteFile(file, []byte(strings.Join(ManyFlows(manyFlows), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(ofctl, "-O", "OpenFlow13", "parse-flows", file).CombinedOutput()
	if err != nil {
		t.Fatalf("ovs-ofctl parse-flows: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "WARN") {
		t.Errorf("ovs-ofctl parse-flows warns:\n%s", out)
	}
}
