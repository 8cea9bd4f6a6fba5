package ofagent

import (
	"bufio"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/internal/ofctltest"
	"github.com/xswitch/xswitch/openflow"
)

// corpusFile is flow's corpus of flows checked against ovs-ofctl.
const corpusFile = "../flow/testdata/ovs-corpus.txt"

// corpusRules returns the rules of the corpus that xswitch accepts, with
// their text.
func corpusRules(t testing.TB) (texts []string, rules []flow.Rule) {
	t.Helper()
	f, err := os.Open(corpusFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r, err := flow.ParseRule(line, nil)
		if err != nil {
			continue
		}
		texts, rules = append(texts, line), append(rules, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rules) < 400 {
		t.Fatalf("only %d rules of %s parse", len(rules), corpusFile)
	}
	return texts, rules
}

// roundTripKnownDifferent are the corpus flows whose OpenFlow form reads
// back as another rule of the same meaning, each with why.
var roundTripKnownDifferent = map[string]string{
	"actions=push_vlan:0x8100,mod_vlan_vid:10,output:1": "OVS sends mod_vlan_vid on an untagged frame as push_vlan and set_field, " +
		"which xswitch reads as mod_vlan_vid again; here the push_vlan is the rule's own, and the two do the same to every frame",
	"sctp,actions=mod_tp_dst:1234,output:1": "OpenFlow 1.3 carries mod_tp_dst of an SCTP port as set_field to sctp_dst, as OVS sends it, " +
		"which xswitch reads as that: the same write",
	"ip,actions=ct(commit,exec(load(0x1->NXM_NX_CT_LABEL[])))": corpusWholeLabel,
	"ip,actions=ct(commit,exec(load(0x1->ct_label[])))":        corpusWholeLabel,
	"ip,actions=ct(commit,exec(load(1->NXM_NX_CT_LABEL[])))":   corpusWholeLabel,
}

const corpusWholeLabel = "a load of all 128 bits of ct_label, more than NXAST_REG_LOAD carries, goes as NXAST_REG_LOAD2 of the whole field, " +
	"which reads back as the set_field it is: the same write"

// TestCorpusRoundTrip: every corpus rule xswitch accepts, taken to
// OpenFlow and back, is the same rule.
func TestCorpusRoundTrip(t *testing.T) {
	texts, rules := corpusRules(t)
	for i, r := range rules {
		want := flow.FormatRule(r)
		m, err := matchFromOF(throughWire(t, matchToOF(r.Match)), r.Table())
		if err != nil {
			t.Errorf("%s: matchFromOF(matchToOF): %v", texts[i], err)
			continue
		}
		if m != r.Match {
			t.Errorf("%s: the match reads back as %q", texts[i], flow.FormatMatch(m))
		}
		actions, err := instructionsFromOF(instructionsToOF(r.Actions, r.Match), m)
		if err != nil {
			t.Errorf("%s: instructionsFromOF(instructionsToOF): %v", texts[i], err)
			continue
		}
		back := r
		back.Match, back.Actions = m, actions
		if got := flow.FormatRule(back); got != want {
			if why, ok := roundTripKnownDifferent[texts[i]]; ok {
				t.Logf("known different (%s): %s", why, texts[i])
				continue
			}
			t.Errorf("%s:\n\tgoes to OpenFlow and back as %s\n\tnot as         %s", texts[i], got, want)
		}
	}
}

// throughWire encodes m's TLVs and decodes them back, with the codec.
func throughWire(t *testing.T, m openflow.Match) openflow.Match {
	t.Helper()
	var b []byte
	for _, o := range m.Fields {
		b = openflow.AppendOXM(b, o)
	}
	return oxmsOf(t, b)
}

// oxmsOf decodes the TLVs of b, with the codec.
func oxmsOf(t testing.TB, b []byte) openflow.Match {
	t.Helper()
	var m openflow.Match
	for len(b) > 0 {
		o, n, err := openflow.DecodeOXM(b)
		if err != nil {
			t.Fatal(err)
		}
		m.Fields = append(m.Fields, o)
		b = b[n:]
	}
	return m
}

// ruleOf parses a rule that the test gives.
func ruleOf(t *testing.T, text string) flow.Rule {
	t.Helper()
	r, err := flow.ParseRule(text, nil)
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	return r
}

// basic is an OpenFlow basic TLV.
func basic(num uint8, value ...byte) openflow.OXM {
	return openflow.OXM{Class: openflow.OXMClassOpenFlowBasic, Field: num, Value: value}
}

func masked(o openflow.OXM, mask ...byte) openflow.OXM {
	o.Mask = mask
	return o
}

var (
	ethIPv4 = basic(5, 0x08, 0x00)
	ethIPv6 = basic(5, 0x86, 0xdd)
	ipTCP   = basic(10, 6)
	ipUDP   = basic(10, 17)
)

func wantCode(t *testing.T, what string, err error, typ openflow.ErrorType, code uint16) {
	t.Helper()
	var de *openflow.DecodeError
	switch {
	case err == nil:
		t.Errorf("%s: no error, want type %d code %d", what, typ, code)
	case !errors.As(err, &de):
		t.Errorf("%s: %v, not a *openflow.DecodeError", what, err)
	case de.Type != typ || de.Code != code:
		t.Errorf("%s: %v, want type %d code %d", what, err, typ, code)
	}
}

func TestMatchErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fields []openflow.OXM
		code   uint16
	}{
		{"ipv6_exthdr without ipv6", []openflow.OXM{basic(39, 0, 1)}, openflow.BadMatchBadPrereq},
		{"ipv6_exthdr beyond 9 bits", []openflow.OXM{ethIPv6, basic(39, 2, 0)}, openflow.BadMatchBadValue},
		{"sctp_src under TCP", []openflow.OXM{ethIPv4, ipTCP, basic(17, 0, 1)}, openflow.BadMatchBadPrereq},
		{"nd_target of an echo request", []openflow.OXM{ethIPv6, basic(10, 58), basic(29, 128), basic(31, 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1)},
			openflow.BadMatchBadPrereq},
		{"nd_tll of a solicitation", []openflow.OXM{ethIPv6, basic(10, 58), basic(29, 135), basic(33, 2, 0, 0, 0, 0, 1)}, openflow.BadMatchBadPrereq},
		{"no such field (pbb_isid)", []openflow.OXM{basic(37, 0, 0, 1)}, openflow.BadMatchBadField},
		{"mpls_label without mpls", []openflow.OXM{basic(34, 0, 0, 0, 1)}, openflow.BadMatchBadPrereq},
		{"mpls_label beyond 20 bits", []openflow.OXM{basic(5, 0x88, 0x47), basic(34, 0, 0x10, 0, 0)}, openflow.BadMatchBadValue},
		{"a mask on mpls_tc", []openflow.OXM{basic(5, 0x88, 0x47), masked(basic(35, 1), 1)}, openflow.BadMatchBadMask},
		{"an experimenter field", []openflow.OXM{{Class: openflow.OXMClassExperimenter, Field: 1, Experimenter: 0x4f4e4600, Value: []byte{1}}}, openflow.BadMatchBadField},
		{"eth_type of 3 bytes", []openflow.OXM{basic(5, 8, 0, 0)}, openflow.BadMatchBadLen},
		{"in_port of 2 bytes", []openflow.OXM{basic(0, 0, 1)}, openflow.BadMatchBadLen},
		{"a mask on eth_type", []openflow.OXM{masked(ethIPv4, 0xff, 0xff)}, openflow.BadMatchBadMask},
		{"a mask on ip_proto", []openflow.OXM{ethIPv4, masked(ipTCP, 0xff)}, openflow.BadMatchBadMask},
		{"value bits outside the mask", []openflow.OXM{masked(basic(4, 2, 0, 0, 0, 0, 1), 0xff, 0xff, 0xff, 0, 0, 0)}, openflow.BadMatchBadWildcards},
		{"a VID without OFPVID_PRESENT", []openflow.OXM{basic(6, 0x00, 0x05)}, openflow.BadMatchBadValue},
		{"a VID beyond 13 bits", []openflow.OXM{basic(6, 0x20, 0x05)}, openflow.BadMatchBadValue},
		{"a PCP beyond 3 bits", []openflow.OXM{basic(6, 0x10, 0x05), basic(7, 8)}, openflow.BadMatchBadValue},
		{"ip_dscp beyond 6 bits", []openflow.OXM{ethIPv4, basic(8, 64)}, openflow.BadMatchBadValue},
		{"in_port NORMAL", []openflow.OXM{basic(0, 0xff, 0xff, 0xff, 0xfa)}, openflow.BadMatchBadValue},
		{"in_port beyond xswitch's numbers", []openflow.OXM{basic(0, 0, 1, 0, 0)}, openflow.BadMatchBadValue},
		{"NXM_OF_IN_PORT 0", []openflow.OXM{{Class: openflow.OXMClassNXM0, Field: 0, Value: []byte{0, 0}}}, openflow.BadMatchBadValue},
		{"NXM_OF_IN_PORT NORMAL", []openflow.OXM{{Class: openflow.OXMClassNXM0, Field: 0, Value: []byte{0xff, 0xfa}}}, openflow.BadMatchBadValue},
		{"eth_type twice", []openflow.OXM{ethIPv4, ethIPv4}, openflow.BadMatchDupField},
		{"reg0 and xreg0", []openflow.OXM{{Class: openflow.OXMClassNXM1, Field: 0, Value: []byte{0, 0, 0, 1}},
			{Class: openflow.OXMClassPacketRegs, Field: 0, Value: []byte{0, 0, 0, 0, 0, 0, 0, 1}}}, openflow.BadMatchDupField},
		{"tcp_dst without ip_proto", []openflow.OXM{ethIPv4, basic(14, 0, 80)}, openflow.BadMatchBadPrereq},
		{"tcp_dst with udp", []openflow.OXM{ethIPv4, ipUDP, basic(14, 0, 80)}, openflow.BadMatchBadPrereq},
		{"tcp_dst before its prerequisites, without eth_type", []openflow.OXM{basic(14, 0, 80), ipTCP}, openflow.BadMatchBadPrereq},
		{"ipv4_src under ARP", []openflow.OXM{basic(5, 0x08, 0x06), basic(11, 10, 0, 0, 1)}, openflow.BadMatchBadPrereq},
		{"ip_proto under ARP", []openflow.OXM{basic(5, 0x08, 0x06), ipTCP}, openflow.BadMatchBadPrereq},
		{"icmpv6_type under ICMPv4", []openflow.OXM{ethIPv4, basic(10, 1), basic(29, 3)}, openflow.BadMatchBadPrereq},
		{"ipv6_src under IPv4", []openflow.OXM{ethIPv4, basic(26, 0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1)}, openflow.BadMatchBadPrereq},
		{"vlan_pcp without a tag", []openflow.OXM{basic(7, 3)}, openflow.BadMatchBadPrereq},
		{"vlan_pcp of no tag", []openflow.OXM{basic(6, 0, 0), basic(7, 3)}, openflow.BadMatchBadPrereq},
	} {
		_, err := matchFromOF(openflow.Match{Fields: tc.fields}, 0)
		wantCode(t, tc.name, err, openflow.ErrBadMatch, tc.code)
	}
	// Their prerequisites given, in any order, the same fields are fine.
	for _, fields := range [][]openflow.OXM{
		{basic(14, 0, 80), ipTCP, ethIPv6},
		{basic(7, 3), basic(6, 0x10, 0x05)},
		{ethIPv6, basic(10, 58), basic(29, 3)},
	} {
		if _, err := matchFromOF(openflow.Match{Fields: fields}, 0); err != nil {
			t.Errorf("%v: %v", fields, err)
		}
	}
}

// matchReading is OXM fields and the match they read as; sentBack says
// matchToOF sends that match as those very fields.
type matchReading struct {
	fields   []openflow.OXM
	want     string
	sentBack bool
}

func checkMatchReadings(t *testing.T, readings []matchReading) {
	t.Helper()
	for _, r := range readings {
		m, err := matchFromOF(openflow.Match{Fields: r.fields}, 0)
		if err != nil {
			t.Errorf("%v: %v", r.fields, err)
			continue
		}
		m.Mask.Table = 0
		if got := flow.FormatMatch(m); got != r.want {
			t.Errorf("%v reads as %q, want %q", r.fields, got, r.want)
		}
		if back := matchToOF(m); r.sentBack && !reflect.DeepEqual(back.Fields, r.fields) {
			t.Errorf("%s goes back as %v, want %v", r.want, back.Fields, r.fields)
		}
	}
}

func TestMatchVLAN(t *testing.T) {
	checkMatchReadings(t, []matchReading{
		{fields: []openflow.OXM{basic(6, 0, 0)}, want: "vlan_tci=0x0000"},
		{fields: []openflow.OXM{basic(6, 0x10, 0x05)}, want: "dl_vlan=5"},
		{fields: []openflow.OXM{masked(basic(6, 0x10, 0), 0x10, 0)}, want: "vlan_tci=0x1000/0x1000"},
		{fields: []openflow.OXM{masked(basic(6, 0x10, 0), 0x10, 0), basic(7, 5)}, want: "dl_vlan_pcp=5"},
		{fields: []openflow.OXM{basic(6, 0x10, 0x07), basic(7, 5)}, want: "dl_vlan=7,dl_vlan_pcp=5"},
		{fields: []openflow.OXM{{Class: openflow.OXMClassNXM0, Field: 4, Value: []byte{0x20, 0}, Mask: []byte{0x20, 0}}}, want: "vlan_tci=0x2000/0x2000"},
	})
}

// TestMatchIPv6ExtHdr reads OXM_OF_IPV6_EXTHDR, which ovs-ofctl has no
// encoding of to compare with (Open vSwitch lacks the field), by the
// spec's bytes: a conformance suite's ipv6_exthdr=68 (hop-by-hop and AH),
// and a masked match.
func TestMatchIPv6ExtHdr(t *testing.T) {
	checkMatchReadings(t, []matchReading{
		{fields: []openflow.OXM{ethIPv6, basic(39, 0, 68)}, want: "ipv6,ipv6_exthdr=auth|hop", sentBack: true},
		{fields: []openflow.OXM{ethIPv6, masked(basic(39, 0, 0x40), 0, 0x50)}, want: "ipv6,ipv6_exthdr=-frag+hop", sentBack: true},
	})
}

func TestMatchTable(t *testing.T) {
	m, err := matchFromOF(openflow.Match{}, 7)
	if err != nil || m.Key.Table != 7 || m.Mask.Table != 0xff {
		t.Errorf("table 7: %+v, %v", m, err)
	}
	if m, err = matchFromOF(openflow.Match{}, allTables); err != nil || m.Mask.Table != 0 {
		t.Errorf("OFPTT_ALL: %+v, %v", m, err)
	}
}

// TestActionsToOF checks the OpenFlow form of actions against what
// ovs-ofctl -O OpenFlow13 sends for them.
func TestActionsToOF(t *testing.T) {
	setField := func(o openflow.OXM) openflow.Action { return openflow.ActionSetField{Field: o} }
	for _, tc := range []struct {
		flow string
		want []openflow.Action
	}{
		{"actions=output:3,NORMAL,LOCAL,IN_PORT,FLOOD,ALL", []openflow.Action{openflow.ActionOutput{Port: 3},
			openflow.ActionOutput{Port: openflow.PortNormal}, openflow.ActionOutput{Port: openflow.PortLocal},
			openflow.ActionOutput{Port: openflow.PortInPort}, openflow.ActionOutput{Port: openflow.PortFlood}, openflow.ActionOutput{Port: openflow.PortAll}}},
		{"actions=mod_vlan_vid:5", []openflow.Action{openflow.ActionPushVLAN{EtherType: 0x8100}, setField(basic(6, 0x10, 0x05))}},
		{"dl_vlan=3,actions=mod_vlan_vid:5", []openflow.Action{setField(basic(6, 0x10, 0x05))}},
		{"dl_vlan=3,actions=strip_vlan", []openflow.Action{openflow.ActionPopVLAN{}}},
		{"actions=mod_dl_src:02:00:00:00:00:01", []openflow.Action{setField(basic(4, 2, 0, 0, 0, 0, 1))}},
		{"ip,actions=mod_nw_src:10.0.0.1,mod_nw_tos:8,dec_ttl,mod_nw_ttl:9", []openflow.Action{setField(basic(11, 10, 0, 0, 1)),
			setField(basic(8, 2)), openflow.ActionDecNwTTL{}, openflow.ActionSetNwTTL{TTL: 9}}},
		{"tcp,actions=mod_tp_src:80", []openflow.Action{setField(basic(13, 0, 80))}},
		{"udp,actions=mod_tp_dst:53", []openflow.Action{setField(basic(16, 0, 53))}},
		{"actions=load:0x5->NXM_NX_REG0[0..15],move:NXM_OF_IN_PORT[]->NXM_NX_REG1[0..15],resubmit(,2),resubmit:3",
			[]openflow.Action{openflow.NXRegLoad{Ofs: 0, NBits: 16, Dst: 0x00010004, Value: 5},
				openflow.NXRegMove{NBits: 16, SrcOfs: 0, DstOfs: 0, Src: 0x00000002, Dst: 0x00010204},
				openflow.NXResubmit{InPort: 0xfff8, Table: 2}, openflow.NXResubmit{InPort: 3, Table: 0xff}}},
		// A set_field of part of a field is loads, as ovs-ofctl sends it;
		// more than 64 bits, which NXAST_REG_LOAD cannot hold, a masked
		// NXAST_REG_LOAD2.
		{"actions=set_field:0x5/0xff->reg0", []openflow.Action{openflow.NXRegLoad{Ofs: 0, NBits: 8, Dst: 0x00010004, Value: 5}}},
		{"tcp,actions=set_field:0x10/0xf0->tcp_src", []openflow.Action{openflow.NXRegLoad{Ofs: 4, NBits: 4, Dst: 0x80001a02, Value: 1}}},
		{"actions=set_field:0x1201/0xefff->vlan_tci", []openflow.Action{openflow.NXRegLoad{Ofs: 0, NBits: 12, Dst: 0x00000802, Value: 0x201},
			openflow.NXRegLoad{Ofs: 13, NBits: 3, Dst: 0x00000802, Value: 0}}},
		{"ipv6,actions=set_field:2001:db8::/96->ipv6_src", []openflow.Action{openflow.NXRegLoad2{Field: openflow.OXM{Class: openflow.OXMClassOpenFlowBasic,
			Field: 26, Value: []byte{0x20, 0x01, 0x0d, 0xb8, 15: 0}, Mask: []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 15: 0}}}}},
		{"actions=set_field:2->in_port", []openflow.Action{setField(basic(0, 0, 0, 0, 2))}},
		// OpenFlow 1.3's TTL copies, which Open vSwitch refuses as
		// OFPBAC_BAD_TYPE: no peer to compare with but the spec.
		{"mpls,actions=copy_ttl_out,copy_ttl_in,output:2", []openflow.Action{openflow.ActionCopyTTLOut{}, openflow.ActionCopyTTLIn{},
			openflow.ActionOutput{Port: 2}}},
	} {
		r := ruleOf(t, tc.flow)
		got := actionsToOF(r.Actions, r.Match)
		if !equalActions(got, tc.want) {
			t.Errorf("%s:\n\tgot  %#v\n\twant %#v", tc.flow, got, tc.want)
		}
	}
	// And back: a conformance suite's copy_ttl_out on an MPLS match.
	mpls := ruleOf(t, "mpls,actions=drop").Match
	back, err := instructionsFromOF([]openflow.Instruction{openflow.InstructionApplyActions{Actions: []openflow.Action{
		openflow.ActionCopyTTLOut{}, openflow.ActionCopyTTLIn{}, openflow.ActionOutput{Port: 2}}}}, mpls)
	if got := flow.FormatActions(back); err != nil || got != "copy_ttl_out,copy_ttl_in,output:2" {
		t.Errorf("copy_ttl_out, copy_ttl_in, output:2 read as %q, %v", got, err)
	}
}

func equalActions(a, b []openflow.Action) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !equalAction(a[i], b[i]) {
			return false
		}
	}
	return true
}

func equalAction(a, b openflow.Action) bool {
	switch a := a.(type) {
	case openflow.ActionSetField:
		b, ok := b.(openflow.ActionSetField)
		return ok && equalOXM(a.Field, b.Field)
	case openflow.NXRegLoad2:
		b, ok := b.(openflow.NXRegLoad2)
		return ok && equalOXM(a.Field, b.Field)
	}
	return a == b
}

func equalOXM(a, b openflow.OXM) bool {
	return a.Class == b.Class && a.Field == b.Field && string(a.Value) == string(b.Value) &&
		(a.Mask == nil) == (b.Mask == nil) && string(a.Mask) == string(b.Mask)
}

func TestActionErrors(t *testing.T) {
	tcp := ruleOf(t, "tcp,actions=drop").Match
	none := ruleOf(t, "actions=drop").Match
	apply := func(as ...openflow.Action) []openflow.Instruction {
		return []openflow.Instruction{openflow.InstructionApplyActions{Actions: as}}
	}
	for _, tc := range []struct {
		name string
		is   []openflow.Instruction
		m    flow.Match
		typ  openflow.ErrorType
		code uint16
	}{
		{"copy_ttl_out without mpls", apply(openflow.ActionCopyTTLOut{}), none, openflow.ErrBadAction, openflow.BadActionMatchInconsistent},
		{"copy_ttl_in without mpls", apply(openflow.ActionCopyTTLIn{}), tcp, openflow.ErrBadAction, openflow.BadActionMatchInconsistent},
		{"push_mpls of IPv4", apply(openflow.ActionPushMPLS{EtherType: 0x0800}), none, openflow.ErrBadAction, openflow.BadActionBadArgument},
		{"pop_mpls without mpls", apply(openflow.ActionPopMPLS{EtherType: 0x0800}), tcp, openflow.ErrBadAction, openflow.BadActionMatchInconsistent},
		{"set_mpls_ttl without mpls", apply(openflow.ActionSetMPLSTTL{TTL: 5}), none, openflow.ErrBadAction, openflow.BadActionMatchInconsistent},
		{"dec_mpls_ttl without mpls", apply(openflow.ActionDecMPLSTTL{}), none, openflow.ErrBadAction, openflow.BadActionMatchInconsistent},
		{"set_field of mpls_label without mpls", apply(openflow.ActionSetField{Field: basic(34, 0, 0, 0, 5)}), none,
			openflow.ErrBadAction, openflow.BadActionMatchInconsistent},
		{"set_field of mpls_bos", apply(openflow.ActionSetField{Field: basic(36, 1)}), ruleOf(t, "mpls,actions=drop").Match,
			openflow.ErrBadAction, openflow.BadActionBadSetType},
		{"set_field of ip_dscp after push_mpls", apply(openflow.ActionPushMPLS{EtherType: 0x8847}, openflow.ActionSetField{Field: basic(8, 1)}),
			tcp, openflow.ErrBadAction, openflow.BadActionMatchInconsistent},
		{"set_queue", apply(openflow.ActionSetQueue{QueueID: 1}), none, openflow.ErrBadAction, openflow.BadActionBadType},
		{"a reserved group", apply(openflow.ActionGroup{GroupID: openflow.GroupAny}), none, openflow.ErrBadAction, openflow.BadActionBadOutGroup},
		{"another experimenter's action", apply(openflow.ActionExperimenter{Experimenter: 0x00002321, Data: []byte{0, 1, 0, 0, 0, 0}}), none,
			openflow.ErrBadAction, openflow.BadActionBadExperimenter},
		{"a Nicira action xswitch lacks (NXAST_LEARN)", apply(openflow.ActionExperimenter{Experimenter: openflow.NiciraExperimenter,
			Data: []byte{0, 16, 0, 0, 0, 0}}), none, openflow.ErrBadAction, openflow.BadActionBadExpType},
		{"output to port 0", apply(openflow.ActionOutput{Port: 0}), none, openflow.ErrBadAction, openflow.BadActionBadOutPort},
		{"output to 0x10000", apply(openflow.ActionOutput{Port: 0x10000}), none, openflow.ErrBadAction, openflow.BadActionBadOutPort},
		{"output to OFPP_MAX", apply(openflow.ActionOutput{Port: openflow.PortMax}), none, openflow.ErrBadAction, openflow.BadActionBadOutPort},
		{"output to ANY", apply(openflow.ActionOutput{Port: openflow.PortAny}), none, openflow.ErrBadAction, openflow.BadActionBadOutPort},
		{"set_field of ip_proto", apply(openflow.ActionSetField{Field: basic(10, 6)}), tcp, openflow.ErrBadAction, openflow.BadActionBadSetType},
		{"set_field of arp_spa without arp", apply(openflow.ActionSetField{Field: basic(22, 1, 2, 3, 4)}), none,
			openflow.ErrBadAction, openflow.BadActionMatchInconsistent},
		{"set_field of icmp_type under icmp6", apply(openflow.ActionSetField{Field: basic(19, 3)}), ruleOf(t, "icmp6,actions=drop").Match,
			openflow.ErrBadAction, openflow.BadActionMatchInconsistent},
		{"set_field of nd_sll under an advertisement", apply(openflow.ActionSetField{Field: basic(32, 2, 0, 0, 0, 0, 1)}),
			ruleOf(t, "icmp6,icmp_type=136,actions=drop").Match, openflow.ErrBadAction, openflow.BadActionMatchInconsistent},
		{"set_field of no field (ipv6_exthdr)", apply(openflow.ActionSetField{Field: basic(39, 0, 1)}), none, openflow.ErrBadAction, openflow.BadActionBadSetType},
		{"set_field of tcp_dst without tcp", apply(openflow.ActionSetField{Field: basic(14, 0, 80)}), none,
			openflow.ErrBadAction, openflow.BadActionMatchInconsistent},
		{"set_field of udp_dst under tcp", apply(openflow.ActionSetField{Field: basic(16, 0, 53)}), tcp,
			openflow.ErrBadAction, openflow.BadActionMatchInconsistent},
		{"set_field of vlan_vid without a tag", apply(openflow.ActionSetField{Field: basic(6, 0x10, 5)}), none,
			openflow.ErrBadAction, openflow.BadActionMatchInconsistent},
		{"dec_ttl without ip", apply(openflow.ActionDecNwTTL{}), none, openflow.ErrBadAction, openflow.BadActionMatchInconsistent},
		{"load into tcp_dst without tcp", apply(openflow.NXRegLoad{NBits: 16, Dst: 0x80001c02, Value: 80}), none,
			openflow.ErrBadAction, openflow.BadActionMatchInconsistent},
		{"goto_table back", []openflow.Instruction{openflow.InstructionGotoTable{TableID: 0}}, none,
			openflow.ErrBadInstruction, openflow.BadInstructionBadTableID},
		{"meter 0", []openflow.Instruction{openflow.InstructionMeter{MeterID: 0}}, none,
			openflow.ErrMeterModFailed, uint16(flow.MeterInvalid)},
		{"meter all", []openflow.Instruction{openflow.InstructionMeter{MeterID: flow.MeterAll}}, none,
			openflow.ErrMeterModFailed, uint16(flow.MeterInvalid)},
		{"experimenter instruction", []openflow.Instruction{openflow.InstructionExperimenter{Experimenter: 1}}, none,
			openflow.ErrBadInstruction, openflow.BadInstructionUnsupInst},
	} {
		_, err := instructionsFromOF(tc.is, tc.m)
		wantCode(t, tc.name, err, tc.typ, tc.code)
	}
	// push_mpls makes the frame MPLS for the actions after it, in
	// write_actions too; pop_mpls makes it what it says.
	if _, err := instructionsFromOF([]openflow.Instruction{
		apply(openflow.ActionPushMPLS{EtherType: 0x8848}, openflow.ActionSetField{Field: basic(34, 0, 0, 0, 5)})[0],
		openflow.InstructionWriteActions{Actions: []openflow.Action{openflow.ActionDecMPLSTTL{}}},
	}, tcp); err != nil {
		t.Errorf("push_mpls and the MPLS actions after it: %v", err)
	}
	if _, err := actionsFromOF([]openflow.Action{openflow.ActionPopMPLS{EtherType: 0x0800}, openflow.ActionDecNwTTL{}},
		ruleOf(t, "mpls,actions=drop").Match); err != nil {
		t.Errorf("pop_mpls to IPv4 and dec_ttl: %v", err)
	}
	// push_vlan gives set_field of vlan_vid its tag.
	as, err := actionsFromOF([]openflow.Action{openflow.ActionPushVLAN{EtherType: 0x88a8},
		openflow.ActionSetField{Field: basic(6, 0x10, 5)}}, none)
	if err != nil || len(as) != 2 {
		t.Errorf("push_vlan:0x88a8 and set_field of vlan_vid: %v, %v", as, err)
	}
}

func TestController(t *testing.T) {
	m := ruleOf(t, "actions=drop").Match
	for _, tc := range []struct {
		of   openflow.Action
		want flow.Action
	}{
		{openflow.ActionOutput{Port: openflow.PortController, MaxLen: 0xffff}, flow.Action{Type: flow.ActController, Value: 0xffff, Table: ofprAction}},
		{openflow.NXController{MaxLen: 128, ControllerID: 3, Reason: 0}, flow.Action{Type: flow.ActController, Value: 128, Port: 3}},
	} {
		as, err := actionsFromOF([]openflow.Action{tc.of}, m)
		if err != nil || len(as) != 1 || as[0] != tc.want {
			t.Errorf("%#v: %v, %v; want %v", tc.of, as, err, tc.want)
			continue
		}
		if back := actionsToOF(as, m); !equalActions(back, []openflow.Action{tc.of}) {
			t.Errorf("%v goes back as %#v, not %#v", as[0], back, tc.of)
		}
	}
}

// BenchmarkFlowModFromOF is the translation of a typical FLOW_MOD's match
// and instructions.
func BenchmarkFlowModFromOF(b *testing.B) {
	r, err := flow.ParseRule("priority=100,tcp,in_port=1,dl_dst=02:00:00:00:00:02,nw_src=10.0.0.0/8,nw_dst=10.1.2.3,tp_dst=80,"+
		"actions=mod_dl_src:02:00:00:00:00:01,dec_ttl,output:2", nil)
	if err != nil {
		b.Fatal(err)
	}
	om, is := matchToOF(r.Match), instructionsToOF(r.Actions, r.Match)
	b.ReportAllocs()
	for b.Loop() {
		m, err := matchFromOF(om, 0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := instructionsFromOF(is, m); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCTActionErrorsOracle: what Open vSwitch refuses of NXAST_CT and
// NXAST_NAT as it decodes them, xswitch refuses with the same code; and
// what it refuses as it checks them against the match (check_CT,
// check_NAT: OFPBAC_MATCH_INCONSISTENT), xswitch does.
func TestCTActionErrorsOracle(t *testing.T) {
	ofctltest.Require(t)
	ip := ruleOf(t, "ip,actions=drop").Match
	mark := openflow.ActionSetField{Field: openflow.OXM{Class: openflow.OXMClassNXM1, Field: 107, Value: []byte{0, 0, 0, 1}}}
	ct := func(flags uint16, as ...openflow.Action) openflow.NXConntrack {
		return openflow.NXConntrack{Flags: flags, RecircTable: openflow.NXCTNoTable, Actions: as}
	}
	v4 := netip.MustParseAddr
	names := map[uint16]string{openflow.BadActionBadLen: "OFPBAC_BAD_LEN", openflow.BadActionBadArgument: "OFPBAC_BAD_ARGUMENT",
		openflow.BadActionBadSetType: "OFPBAC_BAD_SET_TYPE", openflow.BadActionBadSetLen: "OFPBAC_BAD_SET_LEN",
		openflow.BadActionBadSetArgument: "OFPBAC_BAD_SET_ARGUMENT", openflow.BadActionMatchInconsistent: "OFPBAC_MATCH_INCONSISTENT"}
	cases := []struct {
		name string
		as   []openflow.Action
	}{
		{"exec without commit", []openflow.Action{ct(0, mark)}},
		{"nat(src) without commit", []openflow.Action{ct(0, openflow.NXNAT{Flags: openflow.NXNATSrc})}},
		{"force without commit", []openflow.Action{ct(openflow.NXCTForce)}},
		{"a zone of 8 bits", []openflow.Action{openflow.NXConntrack{ZoneSrc: 0x00010004, ZoneNBits: 8, RecircTable: openflow.NXCTNoTable}}},
		{"a zone of 32 bits", []openflow.Action{openflow.NXConntrack{ZoneSrc: 0x00010004, ZoneNBits: 32, RecircTable: openflow.NXCTNoTable}}},
		{"output in ct", []openflow.Action{ct(openflow.NXCTCommit, openflow.ActionOutput{Port: 1})}},
		{"ct_clear in ct", []openflow.Action{ct(openflow.NXCTCommit, openflow.NXCTClear{})}},
		{"set_field of reg0 in ct", []openflow.Action{ct(openflow.NXCTCommit,
			openflow.ActionSetField{Field: openflow.OXM{Class: openflow.OXMClassNXM1, Field: 0, Value: []byte{0, 0, 0, 1}}})}},
		{"move to reg0 in ct", []openflow.Action{ct(openflow.NXCTCommit, openflow.NXRegMove{NBits: 32, Src: 0x0001d604, Dst: 0x00010004})}},
		{"set_field of ct_mark outside ct", []openflow.Action{mark}},
		{"load of ct_label outside ct", []openflow.Action{openflow.NXRegLoad{NBits: 8, Dst: 0x0001d810, Value: 1}}},
		{"move to ct_mark outside ct", []openflow.Action{openflow.NXRegMove{NBits: 32, Src: 0x00010004, Dst: 0x0001d604}}},
		{"nat outside ct", []openflow.Action{openflow.NXNAT{Flags: openflow.NXNATSrc}}},
		{"nat of src and dst", []openflow.Action{ct(openflow.NXCTCommit, openflow.NXNAT{Flags: openflow.NXNATSrc | openflow.NXNATDst})}},
		{"nat with hash and random", []openflow.Action{ct(openflow.NXCTCommit,
			openflow.NXNAT{Flags: openflow.NXNATSrc | openflow.NXNATProtoHash | openflow.NXNATProtoRand})}},
		{"nat range backwards", []openflow.Action{ct(openflow.NXCTCommit,
			openflow.NXNAT{Flags: openflow.NXNATSrc, Min: v4("10.0.0.2"), Max: v4("10.0.0.1")})}},
		{"nat ports backwards", []openflow.Action{ct(openflow.NXCTCommit,
			openflow.NXNAT{Flags: openflow.NXNATSrc, Min: v4("10.0.0.1"), ProtoMin: 9, ProtoMax: 8})}},
		{"nat port without an address", []openflow.Action{ct(openflow.NXCTCommit, openflow.NXNAT{Flags: openflow.NXNATSrc, ProtoMin: 9})}},
		{"nat max without min", []openflow.Action{ct(openflow.NXCTCommit, openflow.NXNAT{Flags: openflow.NXNATSrc, Max: v4("10.0.0.1")})}},
		{"nat to 0.0.0.0", []openflow.Action{ct(openflow.NXCTCommit, openflow.NXNAT{Flags: openflow.NXNATSrc, Min: v4("0.0.0.0")})}},
	}
	var encodings [][]byte
	for _, c := range cases {
		encodings = append(encodings, openflow.AppendActions(nil, c.as))
	}
	theirs := ofctltest.Parse(t, "parse-actions", encodings)
	for i, c := range cases {
		as, err := openflow.DecodeActions(encodings[i])
		if err == nil {
			_, err = actionsFromOF(as, ip)
		}
		var de *openflow.DecodeError
		ours := fmt.Sprint(err)
		if errors.As(err, &de) && de.Type == openflow.ErrBadAction {
			ours = names[de.Code]
		}
		if want := strings.TrimPrefix(theirs[i], "bad OpenFlow13 actions: "); ours != want || want == theirs[i] {
			t.Errorf("%s: xswitch answers %s (%v), ovs-ofctl %s", c.name, ours, err, theirs[i])
		}
	}

	for _, tc := range []struct {
		name string
		m    string
		a    openflow.Action
	}{
		{"ct of ARP", "arp", ct(0)},
		{"ct(commit) of invalid connections", "ip,ct_state=+trk+inv", ct(openflow.NXCTCommit)},
		{"alg=ftp over UDP", "udp", openflow.NXConntrack{Flags: openflow.NXCTCommit, RecircTable: openflow.NXCTNoTable, Alg: 21}},
		{"alg=tftp over TCP", "tcp", openflow.NXConntrack{Flags: openflow.NXCTCommit, RecircTable: openflow.NXCTNoTable, Alg: 69}},
		{"an IPv4 nat range for IPv6", "ipv6", ct(openflow.NXCTCommit, openflow.NXNAT{Flags: openflow.NXNATSrc, Min: v4("10.0.0.1")})},
		{"zone from tcp_src without tcp", "ip", openflow.NXConntrack{ZoneSrc: 0x80001a02, ZoneNBits: 16, RecircTable: openflow.NXCTNoTable}},
	} {
		_, err := actionsFromOF([]openflow.Action{tc.a}, ruleOf(t, tc.m+",actions=drop").Match)
		wantCode(t, tc.name, err, openflow.ErrBadAction, openflow.BadActionMatchInconsistent)
	}
	// What Open vSwitch takes but xswitch refuses, that means nothing
	// more: flags it does not define, two nats, flags of a nat without
	// src or dst (which it does not print), a zone beyond its field.
	for _, tc := range []struct {
		name string
		a    openflow.Action
		code uint16
	}{
		{"unknown ct flags", ct(openflow.NXCTCommit | 4), openflow.BadActionBadArgument},
		{"two nats", ct(openflow.NXCTCommit, openflow.NXNAT{}, openflow.NXNAT{}), openflow.BadActionBadArgument},
		{"nat(persistent)", ct(openflow.NXCTCommit, openflow.NXNAT{Flags: openflow.NXNATPersistent}), openflow.BadActionBadArgument},
		{"unknown nat flags", ct(openflow.NXCTCommit, openflow.NXNAT{Flags: openflow.NXNATSrc | 0x20}), openflow.BadActionBadArgument},
		{"a zone past reg0's bits", openflow.NXConntrack{ZoneSrc: 0x00010004, ZoneOfs: 17, ZoneNBits: 16, RecircTable: openflow.NXCTNoTable},
			openflow.BadActionBadArgument},
		{"a zone from a field xswitch lacks", openflow.NXConntrack{ZoneSrc: 0x00012004, ZoneNBits: 16, RecircTable: openflow.NXCTNoTable},
			openflow.BadActionBadArgument},
	} {
		_, err := actionsFromOF([]openflow.Action{tc.a}, ip)
		wantCode(t, tc.name, err, openflow.ErrBadAction, tc.code)
	}
}

// TestNATRangeOfOneFromOF: a range that OpenFlow gives as its start and
// an end equal to it prints as its start, as ovs-ofctl prints it, and
// goes back to OpenFlow as it came.
func TestNATRangeOfOneFromOF(t *testing.T) {
	ip := ruleOf(t, "ip,actions=drop").Match
	a := openflow.NXConntrack{Flags: openflow.NXCTCommit, RecircTable: openflow.NXCTNoTable, Actions: []openflow.Action{
		openflow.NXNAT{Flags: openflow.NXNATSrc, Min: netip.MustParseAddr("10.0.0.1"), Max: netip.MustParseAddr("10.0.0.1"), ProtoMin: 80, ProtoMax: 80}}}
	as, err := actionsFromOF([]openflow.Action{a}, ip)
	if err != nil || flow.FormatActions(as) != "ct(commit,nat(src=10.0.0.1:80))" {
		t.Fatalf("reads as %s, %v; want ct(commit,nat(src=10.0.0.1:80))", flow.FormatActions(as), err)
	}
	if back := actionsToOF(as, ip); !reflect.DeepEqual(back, []openflow.Action{a}) {
		t.Errorf("goes back as %#v, not as it came, %#v", back, a)
	}
}
