package ovsdb

import (
	"reflect"
	"strings"
	"testing"

	"github.com/xswitch/xswitch/internal/testenv"
)

func TestDecodeDatum(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want any
	}{
		{`1`, Set{int64(1)}},
		{`-9223372036854775808`, Set{int64(-9223372036854775808)}},
		{`1.5`, Set{1.5}},
		{`1e3`, Set{1000.0}},
		{`true`, Set{true}},
		{`"br0"`, Set{"br0"}},
		{`["uuid","0A1B2C3D-0000-4000-8000-000000000001"]`, Set{UUID("0a1b2c3d-0000-4000-8000-000000000001")}},
		{`["named-uuid","row_1"]`, Set{NamedUUID("row_1")}},
		{`["set",[]]`, Set{}},
		{`["set",[1,2]]`, Set{int64(1), int64(2)}},
		{`["map",[]]`, Map{}},
		{`["map",[["a","b"],["c",3]]]`, Map{{"a", "b"}, {"c", int64(3)}}},
		{`["set",["set"]]`, Set{"set"}},
	} {
		got, err := DecodeDatum([]byte(tc.in))
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %#v, want %#v", tc.in, got, tc.want)
		}
	}
}

func TestDecodeDatumErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{``, "EOF"},
		{`{}`, "is not an atom"},
		{`null`, "null is not an atom"},
		{`[1,2,3]`, "is not an atom"},
		{`["set",1]`, "not an array"},
		{`["set",[1,1]]`, "twice"},
		{`["set",[[1]]]`, "is not an atom"},
		{`["map",[["a"]]]`, "is not [key,value]"},
		{`["map",[["a",1],["a",2]]]`, "key a twice"},
		{`["map",{}]`, "not an array"},
		{`["uuid","x"]`, `"x" is not a UUID`},
		{`["named-uuid","1x"]`, "is not a uuid-name"},
		{`99999999999999999999`, "out of 64-bit range"},
		{`1e999`, "out of range"},
		{`1 2`, "trailing data"},
	} {
		_, err := DecodeDatum([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one saying %q", tc.in, err, tc.want)
		}
	}
}

func TestEncodeDatum(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
	}{
		{Set{"br0"}, `"br0"`}, // a set of one is written as its atom
		{Set{}, `["set",[]]`},
		{Set{int64(1), 2}, `["set",[1,2]]`},
		{1.0, `1.0`},
		{1e300, `1e+300`},
		{Map{{"k", "v"}}, `["map",[["k","v"]]]`},
		{UUID("0a1b2c3d-0000-4000-8000-000000000001"), `["uuid","0a1b2c3d-0000-4000-8000-000000000001"]`},
		{Set{NamedUUID("n")}, `["named-uuid","n"]`},
		{Set{true, false}, `["set",[true,false]]`},
	} {
		got, err := EncodeDatum(tc.in)
		if err != nil {
			t.Errorf("%#v: %v", tc.in, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("%#v: %s, want %s", tc.in, got, tc.want)
		}
	}
	for _, bad := range []any{struct{}{}, Set{[]int{1}}} {
		if _, err := EncodeDatum(bad); err == nil {
			t.Errorf("%#v encoded", bad)
		}
	}
}

func TestEqual(t *testing.T) {
	for _, tc := range []struct {
		a, b any
		same bool
	}{
		{Set{int64(1), int64(2)}, Set{int64(2), int64(1)}, true},
		{Set{"up"}, "up", true},
		{Set{int64(1)}, int64(1), true},
		{Set{int64(1)}, Set{1.0}, false},
		{Set{}, Map{}, false},
		{Map{{"a", "1"}, {"b", "2"}}, Map{{"b", "2"}, {"a", "1"}}, true},
		{Map{{"a", "1"}}, Map{{"a", "2"}}, false},
		{Set{"a"}, Set{"a", "b"}, false},
	} {
		if got := Equal(tc.a, tc.b); got != tc.same {
			t.Errorf("Equal(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}

func TestTypeDefault(t *testing.T) {
	testenv.RequireOVSDB(t)
	s, err := ReadSchema(testenv.VswitchSchema)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		table, column string
		want          any
	}{
		{"Open_vSwitch", "cur_cfg", Set{int64(0)}},
		{"Interface", "error", Set{}},
		{"Interface", "options", Map{}},
		{"Bridge", "datapath_version", Set{""}},
		{"Interface", "type", Set{""}},
	} {
		if got := s.Tables[tc.table].Columns[tc.column].Type.Default(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s.%s's default %#v, want %#v", tc.table, tc.column, got, tc.want)
		}
	}
}
