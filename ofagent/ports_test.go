package ofagent

import (
	"testing"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/openflow"
)

func TestPortNumbersMapBothWays(t *testing.T) {
	for _, c := range []struct {
		x  uint16
		of uint32
	}{
		{1, 1}, {0xff00, 0xff00}, {flow.LocalPort, openflow.PortLocal}, {0xfff8, openflow.PortInPort}, {0xfff9, openflow.PortTable},
		{0xfffa, openflow.PortNormal}, {0xfffb, openflow.PortFlood}, {0xfffc, openflow.PortAll}, {0xfffd, openflow.PortController}, {0xffff, openflow.PortAny},
	} {
		if got := portToOF(c.x); got != c.of {
			t.Errorf("portToOF(%#x) = %#x, want %#x", c.x, got, c.of)
		}
		if got, ok := portFromOF(c.of); !ok || got != c.x {
			t.Errorf("portFromOF(%#x) = %#x, %v, want %#x", c.of, got, ok, c.x)
		}
	}
	for _, of := range []uint32{0xff01, 0x10000, 0xfffffeff} {
		if p, ok := portFromOF(of); ok {
			t.Errorf("portFromOF(%#x) = %#x: a port number xswitch's 16 bits cannot hold", of, p)
		}
	}
}

func TestVersionNegotiation(t *testing.T) {
	for _, c := range []struct {
		version uint8
		bitmap  []uint8
		want    bool
	}{
		{4, nil, true},
		{5, nil, true}, // the lower of the two: 1.3
		{6, []uint8{1, 4, 6}, true},
		{6, []uint8{1, 5, 6}, false},
		{1, nil, false},
		{3, nil, false},
		{4, []uint8{1}, false},
	} {
		if got := speaks13(c.version, c.bitmap); got != c.want {
			t.Errorf("speaks13(%d, %v) = %v, want %v", c.version, c.bitmap, got, c.want)
		}
	}
}

// TestRuleFlagsAreOpenFlowsBits: the agent takes a rule's flags from a
// flow mod and gives them to flow stats unchanged, which holds only while
// flow's bits are OpenFlow's.
func TestRuleFlagsAreOpenFlowsBits(t *testing.T) {
	for _, c := range []struct {
		rule flow.RuleFlags
		of   uint16
	}{
		{flow.FlagSendFlowRem, openflow.FlowFlagSendFlowRem},
		{flow.FlagNoPacketCounts, openflow.FlowFlagNoPktCounts},
		{flow.FlagNoByteCounts, openflow.FlowFlagNoBytCounts},
	} {
		if uint16(c.rule) != c.of {
			t.Errorf("flow's flag %#x is OpenFlow's %#x", c.rule, c.of)
		}
	}
	if ruleFlags&flow.RuleFlags(openflow.FlowFlagCheckOverlap|openflow.FlowFlagResetCounts) != 0 {
		t.Error("CHECK_OVERLAP or RESET_COUNTS would be kept as a rule's flag")
	}
}
