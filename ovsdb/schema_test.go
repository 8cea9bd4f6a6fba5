package ovsdb

import (
	"reflect"
	"strings"
	"testing"

	"github.com/xswitch/xswitch/internal/testenv"
)

func TestReadVswitchSchema(t *testing.T) {
	testenv.RequireOVSDB(t)
	s, err := ReadSchema(testenv.VswitchSchema)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "Open_vSwitch" {
		t.Fatalf("name %q", s.Name)
	}
	port := s.Tables["Port"]
	tag := port.Columns["tag"].Type
	if !tag.IsOptional() || tag.Key.Type != "integer" {
		t.Errorf("Port.tag: %+v, want an optional integer", tag)
	}
	ifaces := port.Columns["interfaces"].Type
	if ifaces.Key.RefTable != "Interface" || ifaces.Key.RefType != "strong" || ifaces.Min != 1 || ifaces.Max != Unlimited {
		t.Errorf("Port.interfaces: %+v %+v", ifaces, ifaces.Key)
	}
	mode := port.Columns["vlan_mode"].Type.Key
	if !reflect.DeepEqual(mode.Enum, Set{"trunk", "access", "native-tagged", "native-untagged", "dot1q-tunnel"}) {
		t.Errorf("Port.vlan_mode's enum: %v", mode.Enum)
	}
	opts := s.Tables["Interface"].Columns["options"].Type
	if !opts.IsMap() || opts.Key.Type != "string" || opts.Value.Type != "string" {
		t.Errorf("Interface.options: %+v", opts)
	}
	if !s.Tables["Open_vSwitch"].IsRoot || s.Tables["Open_vSwitch"].MaxRows != 1 {
		t.Errorf("Open_vSwitch: %+v", s.Tables["Open_vSwitch"])
	}
	if s.Tables["Bridge"].Columns["_uuid"] == nil {
		t.Errorf("Bridge lacks its implicit _uuid column")
	}

	row, err := port.DecodeRow([]byte(`{"name":"p1","tag":10,"trunks":["set",[1,2]],
		"interfaces":["uuid","0a1b2c3d-0000-4000-8000-000000000001"],"vlan_mode":["set",[]],
		"other_config":["map",[["k","v"]]]}`))
	if err != nil {
		t.Fatal(err)
	}
	if tag, ok := row.OptInt("tag"); !ok || tag != 10 {
		t.Errorf("tag %d %v", tag, ok)
	}
	if !reflect.DeepEqual(row.Ints("trunks"), []int64{1, 2}) || row.String("name") != "p1" ||
		row.String("vlan_mode") != "" || row.StringMap("other_config")["k"] != "v" ||
		!reflect.DeepEqual(row.UUIDs("interfaces"), []UUID{"0a1b2c3d-0000-4000-8000-000000000001"}) {
		t.Errorf("row %v", row)
	}

	for _, tc := range []struct{ row, want string }{
		{`{"tag":"ten"}`, `Port.tag: "ten" where integer is wanted`},
		{`{"tag":["set",[1,2]]}`, "Port.tag: 2 elements where 0 to 1 are allowed"},
		{`{"vlan_mode":"sideways"}`, `"sideways" is not one of the allowed values`},
		{`{"other_config":["set",["x"]]}`, "a set where a map of string to string is wanted"},
		{`{"interfaces":["set",[]]}`, "0 elements where 1 to unlimited"},
		{`{"nosuch":1}`, "Port has no column nosuch"},
		{`[]`, "Port row"},
	} {
		if _, err := port.DecodeRow([]byte(tc.row)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.row, err, tc.want)
		}
	}
}

func TestParseSchemaErrors(t *testing.T) {
	for _, tc := range []struct{ schema, want string }{
		{`{`, "schema"},
		{`{"tables":{}}`, "no name"},
		{`{"name":"d","tables":{"T":{"columns":{"c":{"type":"float"}}}}}`, `T.c: unknown atomic type "float"`},
		{`{"name":"d","tables":{"T":{"columns":{"c":{"type":{"key":"string","min":2,"max":1}}}}}}`, "min 2 and max 1"},
		{`{"name":"d","tables":{"T":{"columns":{"c":{"type":{"key":"string","max":"lots"}}}}}}`, "neither an integer"},
		{`{"name":"d","tables":{"T":{"columns":{"c":{"type":{"key":{"type":"uuid","refTable":"U"}}}}}}}`, "refers to table U"},
		{`{"name":"d","tables":{"T":{"columns":{"c":{"type":{"key":{"type":"integer","enum":"a"}}}}}}}`, "enum"},
	} {
		if _, err := ParseSchema([]byte(tc.schema)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.schema, err, tc.want)
		}
	}
}

func TestApplyDiff(t *testing.T) {
	set := &Type{Key: &BaseType{Type: "integer"}, Max: Unlimited}
	optional := &Type{Key: &BaseType{Type: "integer"}, Max: 1}
	smap := &Type{Key: &BaseType{Type: "string"}, Value: &BaseType{Type: "string"}, Max: Unlimited}
	for _, tc := range []struct {
		typ             *Type
		old, diff, want any
	}{
		{set, Set{int64(1), int64(2)}, Set{int64(2), int64(3)}, Set{int64(1), int64(3)}},
		{optional, Set{int64(1)}, Set{}, Set{}},
		{optional, Set{int64(1)}, Set{int64(2)}, Set{int64(2)}},
		{optional, Set{}, Set{int64(2)}, Set{int64(2)}},
		{smap, Map{{"a", "1"}, {"b", "2"}}, Map{{"a", "1"}, {"b", "3"}, {"c", "4"}}, Map{{"b", "3"}, {"c", "4"}}},
	} {
		if got := applyDiff(tc.typ, tc.old, tc.diff); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%v with diff %v: %v, want %v", tc.old, tc.diff, got, tc.want)
		}
	}
}
