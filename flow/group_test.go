package flow

import (
	"slices"
	"strings"
	"testing"

	"github.com/xswitch/xswitch/internal/ofctltest"
)

// groupCases are groups as users write them: every type, every bucket
// field, selection methods, and what OVS refuses.
var groupCases = []string{
	"group_id=1,type=all,bucket=output:1,bucket=output:2",
	"group_id=1, type=all, bucket=output:1",
	"group_id=2,type=select,bucket=output:1,bucket=weight:20,output:2",
	"group_id=2,type=select,bucket=weight:0,output:1,bucket=weight:1,output:2",
	"group_id=2,type=select,selection_method=hash,fields(ip_src,nw_proto),bucket=output:1",
	"group_id=2,type=select,selection_method=hash,selection_method_param=7,fields(ip_src,nw_proto),bucket=output:1",
	"group_id=2,type=select,selection_method=hash,fields(eth_dst=ff:ff:ff:00:00:00,ip_src),bucket=output:1",
	"group_id=2,type=select,selection_method=dp_hash,bucket=output:1",
	"group_id=2,type=select,bucket=watch_port:2,output:1",
	"group_id=3,type=fast_failover,bucket=watch_port:1,output:1,bucket=watch_port:2,actions=output:2",
	"group_id=3,type=ff,bucket=watch_port:1,watch_group:3,output:1",
	"group_id=4,type=indirect,bucket=mod_dl_src:00:00:00:00:00:01,output:3",
	"group_id=4,type=indirect,bucket=mod_nw_src:1.2.3.4,dec_ttl,output:1",
	"group_id=5,type=all,bucket=bucket_id:5,output:1,bucket=output:2",
	"group_id=5,type=all,bucket=output:1,bucket=output:3,bucket=bucket_id:1,output:2",
	"group_id=5,type=all,bucket=bucket_id:3,output:1,bucket=output:3,bucket=output:4",
	"group_id=5,type=all,bucket=bucket_id:4294967040,output:1",
	"group_id=6,type=all",
	"group_id=6,type=all,bucket=drop",
	"group_id=6,type=all,bucket=actions=drop",
	"group_id=6,type=all,bucket=output:NORMAL",
	"group_id=6,type=all,bucket=push_vlan:0x8100,set_field:4196->vlan_vid,output:2",
	"group_id=6,type=all,bucket=set_field:80->tcp_src,output:1,bucket=set_field:53->udp_dst,mod_tp_src:7,output:2",
	"group_id=6,type=all,bucket=set_field:0x50/0xf0->tcp_dst,output:1",
	"group_id=4294967040,type=all",
	// A bucket's keys with '=' and in any case, as OVS's
	// ofputil_parse_key_value and strcasecmp read them.
	"group_id=2,type=select,bucket=weight=20,output:1,bucket=bucket_id=7,weight=5,actions=output:2",
	"group_id=3,type=ff,bucket=watch_port=1,watch_group=3,output:1",
	"group_id=2,type=select,bucket=WEIGHT:3,Bucket_Id:1,output:1,bucket=action=output:2",
	// Refused by both.
	"group_id=7,type=indirect,bucket=output:1,bucket=output:2",
	"type=all,bucket=output:1",
	"group_id=1",
	"group_id=1,type=foo",
	"group_id=0xfffffff0,type=all",
	"group_id=1,type=all,bucket=goto_table:1",
	"group_id=1,type=all,bucket=weight:3,output:1",
	"group_id=1,type=all,bucket=actions=output:1,weight:2",
	"group_id=1,type=select,fields(ip_src),bucket=output:1",
	"group_id=1,type=all,bucket=",
	"group_id=1,type=all,bucket=bucket_id:4294967041,output:1",
	"group_id=1,type=all,bucket=bucket_id:1,output:1,bucket=bucket_id:1,output:3",
}

// ParseGroup agrees with ovs-ofctl on every case: it refuses what OVS
// refuses, and reads what OVS takes as OVS reads it: the group parsed from
// the case is the one parsed from OVS's canonical print of it (OpenFlow
// 1.5's, which has every field of a group, bucket ids included), and
// FormatGroup's text parses back to it.
func TestGroupsAsOVSReadsThem(t *testing.T) {
	ofctltest.Require(t)
	for _, text := range groupCases {
		out, err := ofctltest.Run(t, "parse-group", "-O", "OpenFlow15", text)
		var canonical string
		for _, line := range strings.Split(string(out), "\n") {
			if s, ok := strings.CutPrefix(line, " ADD "); ok {
				canonical = s
			}
		}
		g, parseErr := ParseGroup(text, nil)
		if err != nil || canonical == "" {
			if parseErr == nil {
				t.Errorf("%q: OVS refuses it (%s), ParseGroup takes it as %q", text, strings.TrimSpace(string(out)), FormatGroup(g))
			}
			continue
		}
		if parseErr != nil {
			t.Errorf("%q: %v; OVS reads %q", text, parseErr, canonical)
			continue
		}
		ovs, err := ParseGroup(canonical, nil)
		if err != nil {
			t.Errorf("%q: OVS's canonical %q does not parse: %v", text, canonical, err)
			continue
		}
		if got, want := FormatGroup(g), FormatGroup(ovs); got != want {
			t.Errorf("%q:\n read as %s\n OVS's   %s (%s)", text, got, want, canonical)
		}
		again, err := ParseGroup(FormatGroup(g), nil)
		if err != nil || FormatGroup(again) != FormatGroup(g) {
			t.Errorf("%q: FormatGroup's %q does not parse back: %v", text, FormatGroup(g), err)
		}
	}
}

// A bucket's set_field to a TCP or UDP port is that field's, as OVS prints
// it back, not mod_tp_src, which writes any protocol's port: no match says
// what a bucket's frame is.
func TestBucketSetFieldKeepsItsField(t *testing.T) {
	for text, want := range map[string]string{
		"group_id=1,type=all,bucket=set_field:80->tcp_src,output:1":        "group_id=1,type=all,bucket=actions=set_field:80->tcp_src,output:1",
		"group_id=1,type=all,bucket=set_field:53->udp_dst,output:1":        "group_id=1,type=all,bucket=actions=set_field:53->udp_dst,output:1",
		"group_id=1,type=all,bucket=mod_tp_src:80,output:1":                "group_id=1,type=all,bucket=actions=mod_tp_src:80,output:1",
		"group_id=1,type=all,bucket=set_field:0x50/0xf0->tcp_dst,output:1": "group_id=1,type=all,bucket=actions=load:0x5->tcp_dst[4..7],output:1",
	} {
		g, err := ParseGroup(text, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := FormatGroup(g); got != want {
			t.Errorf("%s\n prints as %s\n want      %s", text, got, want)
		}
	}
}

// A select group's buckets weigh 1 unless they say otherwise; a fast
// failover bucket watches what it names and nothing else.
func TestGroupDefaults(t *testing.T) {
	g, err := ParseGroup("group_id=1,type=select,bucket=output:1,bucket=weight:3,output:2", nil)
	if err != nil {
		t.Fatal(err)
	}
	if g.Buckets[0].Weight != 1 || g.Buckets[1].Weight != 3 {
		t.Errorf("weights %d, %d; want 1, 3", g.Buckets[0].Weight, g.Buckets[1].Weight)
	}
	ff, err := ParseGroup("group_id=2,type=ff,bucket=watch_port:4,output:4", nil)
	if err != nil {
		t.Fatal(err)
	}
	if b := ff.Buckets[0]; b.WatchPort != 4 || b.WatchGroup != GroupAny || b.Weight != 0 {
		t.Errorf("fast failover bucket %+v; want watch_port 4, no watched group, no weight", b)
	}
}

// Buckets without an id take the lowest ids no bucket names, in order; a
// select group keeps its method, its basis and its fields with their masks.
func TestGroupIDsAndSelection(t *testing.T) {
	g, err := ParseGroup("group_id=5,type=all,bucket=output:1,bucket=output:3,bucket=bucket_id:1,output:2", nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint32
	for _, b := range g.Buckets {
		ids = append(ids, b.ID)
	}
	if !slices.Equal(ids, []uint32{0, 2, 1}) {
		t.Errorf("bucket ids %v; want [0 2 1]", ids)
	}
	s, err := ParseGroup("group_id=2,type=select,selection_method=hash,selection_method_param=7,fields(eth_dst=ff:ff:ff:00:00:00,ip_src),bucket=output:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Selection != "hash" || s.Param != 7 || len(s.Fields) != 2 {
		t.Fatalf("selection %q, param %d, %d fields; want hash, 7, 2", s.Selection, s.Param, len(s.Fields))
	}
	if f := s.Fields[0]; f.Field.Name != "dl_dst" || f.Mask != (Value{Lo: 0xffffff000000}) {
		t.Errorf("first hash field %s under %x; want dl_dst under ff:ff:ff:00:00:00", f.Field.Name, f.Mask)
	}
	if f := s.Fields[1]; f.Field.Name != "nw_src" || f.Mask != f.Field.full() {
		t.Errorf("second hash field %s under %x; want nw_src, all of it", f.Field.Name, f.Mask)
	}
}

// FuzzParseGroup checks that ParseGroup never panics and that every group
// it accepts survives FormatGroup unchanged.
func FuzzParseGroup(f *testing.F) {
	for _, s := range groupCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g, err := ParseGroup(s, testPorts)
		if err != nil {
			return
		}
		text := FormatGroup(g)
		again, err := ParseGroup(text, testPorts)
		if err != nil {
			t.Fatalf("ParseGroup(%q) = %q, which does not parse: %v", s, text, err)
		}
		if FormatGroup(again) != text {
			t.Fatalf("ParseGroup(%q) = %q, which parses to %q", s, text, FormatGroup(again))
		}
	})
}
