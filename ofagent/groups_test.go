package ofagent

import (
	"encoding/binary"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/openflow"
)

// anyBucket is a bucket that watches nothing, with actions as.
func anyBucket(weight uint16, as ...openflow.Action) openflow.Bucket {
	return openflow.Bucket{Weight: weight, WatchPort: openflow.PortAny, WatchGroup: openflow.GroupAny, Actions: as}
}

func addGroup(id uint32, typ uint8, buckets ...openflow.Bucket) openflow.GroupMod {
	return openflow.GroupMod{Command: openflow.GroupCommandAdd, GroupType: typ, GroupID: id, Buckets: buckets}
}

var (
	outNormal = openflow.ActionOutput{Port: openflow.PortNormal}
	outFlood  = openflow.ActionOutput{Port: openflow.PortFlood}
	setDst    = openflow.ActionSetField{Field: openflow.OXM{Class: openflow.OXMClassOpenFlowBasic, Field: openflow.OXMEthDst,
		Value: []byte{2, 0, 0, 0, 0, 9}}}
	setIPSrc = openflow.ActionSetField{Field: openflow.OXM{Class: openflow.OXMClassOpenFlowBasic, Field: openflow.OXMIPv4Src,
		Value: []byte{10, 0, 0, 9}}}
)

// TestAgentGroups: groups over OpenFlow against the daemon (a bridge
// without ports): added, described and counted as they were sent, used by
// a flow and by flow stats' and flow deletes' out_group, refused with
// Open vSwitch's and the specification's errors without a change, and
// deleted with the flow that sends to them, which the controller is told
// of as OFPRR_GROUP_DELETE.
func TestAgentGroups(t *testing.T) {
	s := newTestSwitch(t)
	c := s.connect(t)
	c.reply(deleteAll)
	// A bucket's actions have no match: a set_field of ipv4_src needs
	// none, as in Open vSwitch.
	sel := addGroup(1, openflow.GroupTypeSelect, anyBucket(2, setDst, outNormal), anyBucket(1, setIPSrc, outFlood), anyBucket(0))
	all := addGroup(2, openflow.GroupTypeAll, anyBucket(0, openflow.ActionGroup{GroupID: 1}), anyBucket(0, outFlood))
	ff := addGroup(3, openflow.GroupTypeFastFailover,
		openflow.Bucket{WatchPort: openflow.PortAny, WatchGroup: 1, Actions: []openflow.Action{openflow.ActionGroup{GroupID: 1}}})
	for _, m := range []openflow.GroupMod{sel, all, ff} {
		if got := c.reply(m); len(got) != 0 {
			t.Fatalf("group %d: %#v", m.GroupID, got)
		}
	}
	want := []openflow.GroupDesc{
		{GroupType: sel.GroupType, GroupID: 1, Buckets: sel.Buckets},
		{GroupType: all.GroupType, GroupID: 2, Buckets: all.Buckets},
		{GroupType: ff.GroupType, GroupID: 3, Buckets: ff.Buckets},
	}
	descs := func() []openflow.GroupDesc {
		t.Helper()
		got := c.reply(openflow.MultipartRequest{MType: openflow.MultipartGroupDesc})
		return got[0].(openflow.MultipartReply).Body.([]openflow.GroupDesc)
	}
	if got := descs(); !reflect.DeepEqual(got, want) {
		t.Fatalf("group desc:\n%#v\nnot\n%#v", got, want)
	}

	toGroup := addFlow(10, [4]byte{10, 0, 0, 1}, 0)
	toGroup.Flags = openflow.FlowFlagSendFlowRem
	toGroup.Instructions = []openflow.Instruction{openflow.InstructionApplyActions{Actions: []openflow.Action{openflow.ActionGroup{GroupID: 2}}}}
	other := addFlow(10, [4]byte{10, 0, 0, 2}, openflow.PortFlood)
	for _, m := range []openflow.FlowMod{toGroup, other} {
		if got := c.reply(m); len(got) != 0 {
			t.Fatalf("a flow: %#v", got)
		}
	}
	stats := func(id uint32) []openflow.GroupStats {
		t.Helper()
		got := c.reply(openflow.MultipartRequest{MType: openflow.MultipartGroup, Body: openflow.GroupStatsRequest{GroupID: id}})
		return got[0].(openflow.MultipartReply).Body.([]openflow.GroupStats)
	}
	// Group 1 is forwarded to by groups 2 and 3, group 2 by the flow.
	gs := stats(openflow.GroupAll)
	if len(gs) != 3 || gs[0].GroupID != 1 || gs[0].RefCount != 2 || gs[1].RefCount != 1 || gs[2].RefCount != 0 ||
		len(gs[0].Buckets) != 3 || len(gs[1].Buckets) != 2 || gs[0].DurationSec > 60 {
		t.Errorf("group stats: %+v", gs)
	}
	if gs := stats(2); len(gs) != 1 || gs[0].GroupID != 2 {
		t.Errorf("group 2's stats: %+v", gs)
	}
	if gs := stats(99); len(gs) != 0 {
		t.Errorf("a missing group's stats: %+v", gs)
	}

	got := c.reply(openflow.MultipartRequest{MType: openflow.MultipartGroupFeatures})
	f := got[0].(openflow.MultipartReply).Body.(openflow.GroupFeatures)
	const wantActions = 1<<openflow.ActionTypeOutput | 1<<openflow.ActionTypeGroup | 1<<openflow.ActionTypeSetField
	if f.Types != 0xf || f.Capabilities != 0xf || f.MaxGroups != [4]uint32{openflow.GroupMax, openflow.GroupMax, openflow.GroupMax, openflow.GroupMax} ||
		f.Actions[openflow.GroupTypeSelect]&wantActions != wantActions {
		t.Errorf("group features: %+v", f)
	}
	if got := c.reply(openflow.FeaturesRequest{}); got[0].(openflow.FeaturesReply).Capabilities&openflow.CapGroupStats == 0 {
		t.Errorf("features do not say group stats: %+v", got[0])
	}

	flowStats := func(outGroup uint32) int {
		t.Helper()
		got := c.reply(openflow.MultipartRequest{MType: openflow.MultipartAggregate, Body: openflow.FlowStatsRequest{
			TableID: openflow.TableAll, OutPort: openflow.PortAny, OutGroup: outGroup}})
		return int(got[0].(openflow.MultipartReply).Body.(openflow.AggregateStats).FlowCount)
	}
	if n2, n1, nAny := flowStats(2), flowStats(1), flowStats(openflow.GroupAny); n2 != 1 || n1 != 0 || nAny != 2 {
		t.Errorf("flows by out_group: 2: %d, 1: %d, any: %d; want 1, 0, 2", n2, n1, nAny)
	}
	delByGroup := openflow.FlowMod{Command: openflow.FlowDelete, TableID: openflow.TableAll, BufferID: openflow.NoBuffer,
		OutPort: openflow.PortAny, OutGroup: 1}
	if got := c.reply(delByGroup); len(got) != 0 || len(s.flows(t)) != 2 {
		t.Errorf("a delete of the flows to group 1, which none sends to directly: %v; %d flows", got, len(s.flows(t)))
	}

	var watchBad openflow.Bucket = anyBucket(0, outNormal)
	watchBad.WatchPort = 0x10000
	noWatch := ff
	noWatch.Buckets = []openflow.Bucket{anyBucket(0, outNormal)}
	watched := all
	watched.GroupID, watched.Buckets = 7, []openflow.Bucket{{WatchPort: 1, WatchGroup: openflow.GroupAny}}
	weighted := all
	weighted.GroupID, weighted.Buckets = 7, []openflow.Bucket{anyBucket(3, outNormal)}
	loop := all
	loop.Command, loop.GroupID, loop.Buckets = openflow.GroupCommandModify, 1, []openflow.Bucket{anyBucket(0, openflow.ActionGroup{GroupID: 2})}
	for _, r := range []struct {
		what string
		m    openflow.GroupMod
		typ  openflow.ErrorType
		code uint16
	}{
		{"an id taken", sel, openflow.ErrGroupModFailed, openflow.GroupModFailedGroupExists},
		{"a reserved id", addGroup(openflow.GroupAll, openflow.GroupTypeAll), openflow.ErrGroupModFailed, openflow.GroupModFailedInvalidGroup},
		{"a modify of a missing group", openflow.GroupMod{Command: openflow.GroupCommandModify, GroupID: 9}, openflow.ErrGroupModFailed, openflow.GroupModFailedUnknownGroup},
		{"a chain to a missing group", addGroup(7, openflow.GroupTypeAll, anyBucket(0, openflow.ActionGroup{GroupID: 9})), openflow.ErrGroupModFailed, openflow.GroupModFailedUnknownGroup},
		{"a loop", loop, openflow.ErrGroupModFailed, openflow.GroupModFailedLoop},
		{"a delete of a chained group", openflow.GroupMod{Command: openflow.GroupCommandDelete, GroupID: 1}, openflow.ErrGroupModFailed, openflow.GroupModFailedChainedGroup},
		{"a bucket to a missing port", addGroup(7, openflow.GroupTypeAll, anyBucket(0, openflow.ActionOutput{Port: 5})), openflow.ErrBadAction, openflow.BadActionBadOutPort},
		{"a watch of a missing port", addGroup(7, openflow.GroupTypeFastFailover, openflow.Bucket{WatchPort: 5, WatchGroup: openflow.GroupAny}), openflow.ErrGroupModFailed, openflow.GroupModFailedBadWatch},
		{"a watch of a missing group", addGroup(7, openflow.GroupTypeFastFailover, openflow.Bucket{WatchPort: openflow.PortAny, WatchGroup: 9}), openflow.ErrGroupModFailed, openflow.GroupModFailedBadWatch},
		{"a watch of no port", addGroup(7, openflow.GroupTypeFastFailover, watchBad), openflow.ErrGroupModFailed, openflow.GroupModFailedBadWatch},
		{"an indirect group of two buckets", addGroup(7, openflow.GroupTypeIndirect, anyBucket(0), anyBucket(0)), openflow.ErrGroupModFailed, openflow.GroupModFailedInvalidGroup},
		{"an indirect group of none", addGroup(7, openflow.GroupTypeIndirect), openflow.ErrGroupModFailed, openflow.GroupModFailedInvalidGroup},
		{"an unknown type", addGroup(7, 4), openflow.ErrGroupModFailed, openflow.GroupModFailedBadType},
		{"an unknown command", openflow.GroupMod{Command: 3, GroupID: 7}, openflow.ErrGroupModFailed, openflow.GroupModFailedBadCommand},
		{"a delete with buckets", openflow.GroupMod{Command: openflow.GroupCommandDelete, GroupID: 3, Buckets: []openflow.Bucket{anyBucket(0)}}, openflow.ErrGroupModFailed, openflow.GroupModFailedInvalidGroup},
		{"a weight outside a select group", weighted, openflow.ErrGroupModFailed, openflow.GroupModFailedInvalidGroup},
		{"a watch in an all group", watched, openflow.ErrGroupModFailed, openflow.GroupModFailedWatchUnsupported},
		{"a fast failover bucket that watches nothing", noWatch, openflow.ErrGroupModFailed, openflow.GroupModFailedInvalidGroup},
		{"an action that does not decode", addGroup(7, openflow.GroupTypeAll, anyBucket(0, openflow.ActionPopPBB{})), openflow.ErrBadAction, openflow.BadActionBadType},
		{"a set_field of a field that cannot be written", addGroup(7, openflow.GroupTypeAll, anyBucket(0, openflow.ActionSetField{Field: openflow.OXM{
			Class: openflow.OXMClassOpenFlowBasic, Field: openflow.OXMInPhyPort, Value: []byte{0, 0, 0, 1}}})), openflow.ErrBadAction, openflow.BadActionBadSetType},
	} {
		c.wantError(r.what, r.m, r.typ, r.code)
	}
	// A bucket whose length lies is the codec's refusal.
	raw := openflow.Append(nil, 77, addGroup(7, openflow.GroupTypeAll, anyBucket(0, outNormal)))
	binary.BigEndian.PutUint16(raw[16:], 12)
	if _, err := c.nc.Write(raw); err != nil {
		t.Fatal(err)
	}
	if got := c.barrier(); len(got) != 1 || got[0].(openflow.Error).Code != openflow.GroupModFailedBadBucket {
		t.Errorf("a bucket shorter than its header: %#v", got)
	}
	if got := descs(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the refusals, group desc:\n%#v\nnot\n%#v", got, want)
	}

	// Deleting group 2 deletes the flow that sends to it, and tells the
	// controller why.
	c.send(openflow.GroupMod{Command: openflow.GroupCommandDelete, GroupID: 2})
	for {
		c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		raw, err := c.rd.Next()
		if err != nil {
			t.Fatalf("no flow removed after deleting the group a flow with send_flow_rem sends to: %v", err)
		}
		_, m, err := openflow.Decode(raw)
		if fr, ok := m.(openflow.FlowRemoved); err == nil && ok {
			if fr.Reason != openflow.RemovedGroupDelete || fr.Priority != 10 {
				t.Errorf("flow removed: %+v, want reason %d", fr, openflow.RemovedGroupDelete)
			}
			break
		}
	}
	if got := s.flows(t); len(got) != 1 {
		t.Errorf("after deleting group 2, flows %v", got)
	}
	if got := c.reply(openflow.GroupMod{Command: openflow.GroupCommandDelete, GroupID: openflow.GroupAll}); len(got) != 0 {
		t.Fatalf("delete every group: %#v", got)
	}
	if got := descs(); len(got) != 0 {
		t.Errorf("after deleting every group: %#v", got)
	}
}

// TestAgentGroupModFromSlave: a slave may not change the groups.
func TestAgentGroupModFromSlave(t *testing.T) {
	s := newTestSwitch(t)
	c := s.connect(t)
	c.reply(openflow.RoleRequest{Role: openflow.RoleSlave, GenerationID: 1})
	c.wantError("a group mod from a slave", addGroup(1, openflow.GroupTypeAll), openflow.ErrBadRequest, openflow.BadRequestIsSlave)
}

// TestBucketsRoundTrip: a group's buckets, sent back as OpenFlow, read
// as the same buckets. (Not a bucket's mod_tp_src or mod_tp_dst, which
// write whichever port the frame has: OpenFlow 1.3 has no such action,
// and they go out as set_field to UDP's, and come back so.)
func TestBucketsRoundTrip(t *testing.T) {
	for _, text := range []string{
		"group_id=1,type=select,bucket=weight:5,mod_dl_dst:02:00:00:00:00:01,output:1,bucket=weight:0,mod_nw_src:10.0.0.1,set_field:99->tcp_dst,output:2",
		"group_id=2,type=ff,bucket=watch_port:3,output:3,bucket=watch_group:1,group:1,bucket=watch_port:LOCAL,mod_vlan_vid:7,LOCAL",
		"group_id=3,type=all,bucket=strip_vlan,set_field:5->reg3,resubmit(,2),bucket=actions=drop",
		"group_id=4,type=indirect,bucket=dec_ttl,output:NORMAL",
		"group_id=5,type=all,bucket=set_field:80->tcp_src,set_field:53->udp_dst,output:1",
	} {
		g, err := flow.ParseGroup(text, nil)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		m := openflow.GroupMod{Command: openflow.GroupCommandAdd, GroupType: groupTypesToOF[g.Type], GroupID: g.ID, Buckets: bucketsToOF(&g)}
		_, back, err := openflow.Decode(openflow.Append(nil, 1, m))
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		bm := back.(openflow.GroupMod)
		mod, err := groupModFromOF(&bm)
		if err != nil || flow.FormatGroup(mod.Group) != flow.FormatGroup(g) {
			t.Errorf("%s reads back as %s, %v", text, flow.FormatGroup(mod.Group), err)
		}
	}
	// A bucket's set_field to a port goes out as that port's field: OXM
	// tcp_src is 13, udp_dst 16, where the match does not say which.
	g, err := flow.ParseGroup("group_id=5,type=all,bucket=set_field:80->tcp_src,set_field:53->udp_dst,output:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	var fields []uint8
	for _, a := range bucketsToOF(&g)[0].Actions {
		if sf, ok := a.(openflow.ActionSetField); ok {
			fields = append(fields, sf.Field.Field)
		}
	}
	if !slices.Equal(fields, []uint8{13, 16}) {
		t.Errorf("a bucket's set_field to tcp_src and udp_dst goes out as OXM fields %v, want [13 16]", fields)
	}
}
