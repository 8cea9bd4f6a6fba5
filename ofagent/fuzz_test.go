package ofagent

import (
	"errors"
	"testing"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/openflow"
)

// FuzzFlowModFromOF: whatever a controller sends as a FLOW_MOD or a
// PACKET_OUT, the translation refuses with an OpenFlow error or accepts,
// never panics; and an accepted rule, sent back as OpenFlow, reads as the
// same rule.
func FuzzFlowModFromOF(f *testing.F) {
	_, rules := corpusRules(f)
	for i, r := range rules {
		fm := openflow.FlowMod{Command: openflow.FlowAdd, TableID: r.Table(), Priority: r.Priority, BufferID: openflow.NoBuffer,
			OutPort: openflow.PortAny, OutGroup: openflow.GroupAny, Match: matchToOF(r.Match), Instructions: instructionsToOF(r.Actions, r.Match)}
		f.Add(openflow.Append(nil, uint32(i), fm))
		if i%8 == 0 && plainActions(r.Actions) {
			po := openflow.PacketOut{BufferID: openflow.NoBuffer, InPort: openflow.PortController, Actions: actionsToOF(r.Actions, flow.Match{})}
			f.Add(openflow.Append(nil, uint32(i), po))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, m, err := openflow.Decode(b)
		if err != nil {
			return
		}
		switch m := m.(type) {
		case openflow.FlowMod:
			mod, err := flowModFromOF(b, &m)
			if err != nil {
				var de *openflow.DecodeError
				if !errors.As(err, &de) {
					t.Fatalf("refused with %T %v, not an OpenFlow error", err, err)
				}
				return
			}
			if mod == nil || m.Command != openflow.FlowAdd {
				return
			}
			r := mod.Rule
			back, err := matchFromOF(matchToOF(r.Match), r.Table())
			if err != nil || back != r.Match {
				t.Fatalf("the match of %s reads back as %+v, %v", flow.FormatRule(r), back, err)
			}
			actions, err := instructionsFromOF(instructionsToOF(r.Actions, r.Match), r.Match)
			if err != nil || flow.FormatRule(flow.Rule{Actions: actions}) != flow.FormatRule(flow.Rule{Actions: r.Actions}) {
				t.Fatalf("the actions of %s read back as %v, %v", flow.FormatRule(r), actions, err)
			}
		case openflow.PacketOut:
			if _, err := actionsFromOF(m.Actions, flow.Match{}); err != nil {
				var de *openflow.DecodeError
				if !errors.As(err, &de) {
					t.Fatalf("refused with %T %v, not an OpenFlow error", err, err)
				}
			}
		}
	})
}

// plainActions reports whether as has no instruction, so that it can be
// a packet-out's.
func plainActions(as []flow.Action) bool {
	for _, a := range as {
		switch a.Type {
		case flow.ActGotoTable, flow.ActWriteMetadata, flow.ActClearActions, flow.ActWriteActions:
			return false
		}
	}
	return true
}
