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

// FuzzGroupModFromOF: whatever a controller sends as a GROUP_MOD, the
// translation refuses with an OpenFlow error or accepts, never panics;
// and an accepted group's buckets, sent back as OpenFlow, read as the
// same group.
func FuzzGroupModFromOF(f *testing.F) {
	for i, text := range []string{
		"group_id=1,type=select,bucket=weight:2,mod_dl_dst:02:00:00:00:00:01,output:1,bucket=output:2",
		"group_id=2,type=ff,bucket=watch_port:3,output:3,bucket=watch_group:1,group:1",
		"group_id=3,type=all,bucket=strip_vlan,set_field:5->reg3,resubmit(,2),bucket=mod_vlan_vid:9,output:4",
		"group_id=4,type=indirect,bucket=dec_ttl,mod_nw_src:10.0.0.1,output:NORMAL",
	} {
		g, err := flow.ParseGroup(text, nil)
		if err != nil {
			f.Fatalf("%s: %v", text, err)
		}
		f.Add(openflow.Append(nil, uint32(i), openflow.GroupMod{Command: openflow.GroupCommandAdd,
			GroupType: groupTypesToOF[g.Type], GroupID: g.ID, Buckets: bucketsToOF(&g)}))
	}
	f.Add(openflow.Append(nil, 9, openflow.GroupMod{Command: openflow.GroupCommandDelete, GroupID: openflow.GroupAll}))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, m, err := openflow.Decode(b)
		if err != nil {
			return
		}
		gm, ok := m.(openflow.GroupMod)
		if !ok {
			return
		}
		mod, err := groupModFromOF(&gm)
		if err != nil {
			var de *openflow.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("refused with %T %v, not an OpenFlow error", err, err)
			}
			return
		}
		g := mod.Group
		again := openflow.GroupMod{Command: gm.Command, GroupType: groupTypesToOF[g.Type], GroupID: g.ID, Buckets: bucketsToOF(&g)}
		back, err := groupModFromOF(&again)
		if err != nil || flow.FormatGroup(back.Group) != flow.FormatGroup(g) {
			t.Fatalf("%s reads back as %s, %v", flow.FormatGroup(g), flow.FormatGroup(back.Group), err)
		}
	})
}
