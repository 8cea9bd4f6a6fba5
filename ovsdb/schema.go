package ovsdb

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
)

// Schema is a database schema (RFC 7047 section 3.2).
type Schema struct {
	Name    string
	Version string
	Tables  map[string]*Table
}

// Table is one table of a schema.
type Table struct {
	Name    string
	Columns map[string]*Column
	MaxRows int // 0: unlimited
	IsRoot  bool
	Indexes [][]string
}

// Column is one column of a table.
type Column struct {
	Name      string
	Type      *Type
	Ephemeral bool
	Mutable   bool
}

// Type is a column's type: a set of Min to Max keys, or, when Value is
// set, a map of them.
type Type struct {
	Key   *BaseType
	Value *BaseType // nil: a set
	Min   int
	Max   int // Unlimited for "unlimited"
}

// Default is the value of a column of type t that nothing set, as a
// decoded datum: the empty set or map, or for a column of exactly one
// atom 0, 0.0, false or "" (RFC 7047 section 5.1, "default").
func (t *Type) Default() any {
	switch {
	case t.IsMap():
		return Map{}
	case t.Min == 0:
		return Set{}
	}
	switch t.Key.Type {
	case "integer":
		return Set{int64(0)}
	case "real":
		return Set{0.0}
	case "boolean":
		return Set{false}
	case "string":
		return Set{""}
	}
	return Set{UUID("00000000-0000-0000-0000-000000000000")}
}

// Unlimited is Type.Max for a max of "unlimited".
const Unlimited = math.MaxInt

// BaseType is the type of a key or value: an atomic type and its
// constraints.
type BaseType struct {
	Type     string // integer, real, boolean, string or uuid
	Enum     Set    // nil: any value of Type
	RefTable string
	RefType  string // strong or weak, for a RefTable
}

// IsMap says whether the type is a map.
func (t *Type) IsMap() bool { return t.Value != nil }

// IsScalar says whether the type holds exactly one atom.
func (t *Type) IsScalar() bool { return t.Value == nil && t.Min == 1 && t.Max == 1 }

// IsOptional says whether the type holds zero or one atom.
func (t *Type) IsOptional() bool { return t.Value == nil && t.Min == 0 && t.Max == 1 }

// ReadSchema reads a .ovsschema file such as
// /usr/share/openvswitch/vswitch.ovsschema.
func ReadSchema(path string) (*Schema, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := ParseSchema(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// ParseSchema parses a schema's JSON, as in a .ovsschema file or
// get_schema's reply.
func ParseSchema(data []byte) (*Schema, error) {
	var raw struct {
		Name    string `json:"name"`
		Version string `json:"version"`
		Tables  map[string]struct {
			Columns map[string]struct {
				Type      json.RawMessage `json:"type"`
				Ephemeral bool            `json:"ephemeral"`
				Mutable   *bool           `json:"mutable"`
			} `json:"columns"`
			MaxRows int        `json:"maxRows"`
			IsRoot  bool       `json:"isRoot"`
			Indexes [][]string `json:"indexes"`
		} `json:"tables"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("ovsdb: schema: %w", err)
	}
	if raw.Name == "" {
		return nil, fmt.Errorf("ovsdb: schema has no name")
	}
	s := &Schema{Name: raw.Name, Version: raw.Version, Tables: make(map[string]*Table, len(raw.Tables))}
	for tname, rt := range raw.Tables {
		t := &Table{Name: tname, Columns: make(map[string]*Column, len(rt.Columns)+2),
			MaxRows: rt.MaxRows, IsRoot: rt.IsRoot, Indexes: rt.Indexes}
		for cname, rc := range rt.Columns {
			typ, err := parseType(rc.Type)
			if err != nil {
				return nil, fmt.Errorf("ovsdb: schema: column %s.%s: %w", tname, cname, err)
			}
			t.Columns[cname] = &Column{Name: cname, Type: typ, Ephemeral: rc.Ephemeral,
				Mutable: rc.Mutable == nil || *rc.Mutable}
		}
		for _, implicit := range []string{"_uuid", "_version"} {
			t.Columns[implicit] = &Column{Name: implicit, Type: &Type{Key: &BaseType{Type: "uuid"}, Min: 1, Max: 1}}
		}
		s.Tables[tname] = t
	}
	for _, t := range s.Tables {
		for _, c := range t.Columns {
			for _, b := range []*BaseType{c.Type.Key, c.Type.Value} {
				if b != nil && b.RefTable != "" && s.Tables[b.RefTable] == nil {
					return nil, fmt.Errorf("ovsdb: schema: column %s.%s refers to table %s, which it lacks", t.Name, c.Name, b.RefTable)
				}
			}
		}
	}
	return s, nil
}

func parseType(data json.RawMessage) (*Type, error) {
	var atomic string
	if json.Unmarshal(data, &atomic) == nil {
		b, err := parseBaseType(data)
		if err != nil {
			return nil, err
		}
		return &Type{Key: b, Min: 1, Max: 1}, nil
	}
	var raw struct {
		Key   json.RawMessage `json:"key"`
		Value json.RawMessage `json:"value"`
		Min   *int            `json:"min"`
		Max   json.RawMessage `json:"max"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("type: %w", err)
	}
	if raw.Key == nil {
		return nil, fmt.Errorf("type has no key")
	}
	t := &Type{Min: 1, Max: 1}
	var err error
	if t.Key, err = parseBaseType(raw.Key); err != nil {
		return nil, err
	}
	if raw.Value != nil {
		if t.Value, err = parseBaseType(raw.Value); err != nil {
			return nil, err
		}
	}
	if raw.Min != nil {
		t.Min = *raw.Min
	}
	if raw.Max != nil {
		if string(raw.Max) == `"unlimited"` {
			t.Max = Unlimited
		} else if err := json.Unmarshal(raw.Max, &t.Max); err != nil {
			return nil, fmt.Errorf("max %s is neither an integer nor \"unlimited\"", raw.Max)
		}
	}
	if t.Min < 0 || t.Min > 1 || t.Max < 1 || t.Min > t.Max {
		return nil, fmt.Errorf("min %d and max %d are not allowed", t.Min, t.Max)
	}
	return t, nil
}

var atomicTypes = map[string]bool{"integer": true, "real": true, "boolean": true, "string": true, "uuid": true}

func parseBaseType(data json.RawMessage) (*BaseType, error) {
	var atomic string
	if json.Unmarshal(data, &atomic) == nil {
		if !atomicTypes[atomic] {
			return nil, fmt.Errorf("unknown atomic type %q", atomic)
		}
		return &BaseType{Type: atomic}, nil
	}
	var raw struct {
		Type     string          `json:"type"`
		Enum     json.RawMessage `json:"enum"`
		RefTable string          `json:"refTable"`
		RefType  string          `json:"refType"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("base type: %w", err)
	}
	if !atomicTypes[raw.Type] {
		return nil, fmt.Errorf("unknown atomic type %q", raw.Type)
	}
	b := &BaseType{Type: raw.Type, RefTable: raw.RefTable, RefType: raw.RefType}
	if b.RefTable != "" && b.RefType == "" {
		b.RefType = "strong"
	}
	if raw.Enum != nil {
		enumType := &Type{Key: &BaseType{Type: raw.Type}, Min: 0, Max: Unlimited}
		d, err := enumType.Decode(raw.Enum)
		if err != nil {
			return nil, fmt.Errorf("enum: %w", err)
		}
		b.Enum = d.(Set)
	}
	return b, nil
}

// Decode reads a datum of type t: a Set or a Map whose atoms have the Go
// types of t's base types (int64, float64, bool, string, UUID). It checks
// the atoms' types, enums and the number of elements.
func (t *Type) Decode(data []byte) (any, error) { return t.decode(data, true) }

func (t *Type) decode(data []byte, counted bool) (any, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	d, err := datumFromJSON(v)
	if err != nil {
		return nil, err
	}
	return t.check(d, counted)
}

// check converts d's atoms to t's base types; counted says whether to check
// d's number of elements too, which an update2 difference can exceed.
func (t *Type) check(d any, counted bool) (any, error) {
	var n int
	switch d := d.(type) {
	case Set:
		if t.IsMap() {
			if len(d) == 0 { // ["set",[]] is how some write an empty map
				return Map{}, nil
			}
			return nil, fmt.Errorf("a set where a map of %s to %s is wanted", t.Key.Type, t.Value.Type)
		}
		for i, a := range d {
			if d[i], _ = t.Key.convert(a); d[i] == nil {
				return nil, fmt.Errorf("%s where %s is wanted", describeAtom(a), t.Key.Type)
			}
			if !t.Key.allows(d[i]) {
				return nil, fmt.Errorf("%s is not one of the allowed values", describeAtom(a))
			}
		}
		n = len(d)
	case Map:
		if !t.IsMap() {
			return nil, fmt.Errorf("a map where a set of %s is wanted", t.Key.Type)
		}
		for i, p := range d {
			k, _ := t.Key.convert(p.Key)
			v, _ := t.Value.convert(p.Value)
			if k == nil || v == nil {
				return nil, fmt.Errorf("map pair [%s,%s] where [%s,%s] is wanted",
					describeAtom(p.Key), describeAtom(p.Value), t.Key.Type, t.Value.Type)
			}
			if !t.Key.allows(k) || !t.Value.allows(v) {
				return nil, fmt.Errorf("map pair [%s,%s] is not one of the allowed values", describeAtom(k), describeAtom(v))
			}
			d[i] = Pair{k, v}
		}
		n = len(d)
	}
	if counted && (n < t.Min || n > t.Max) {
		return nil, fmt.Errorf("%d elements where %d to %s are allowed", n, t.Min, maxString(t.Max))
	}
	return d, nil
}

// convert gives a as an atom of b's type, or nil: an integer is also a
// real.
func (b *BaseType) convert(a any) (any, bool) {
	switch b.Type {
	case "integer":
		if i, ok := a.(int64); ok {
			return i, true
		}
	case "real":
		switch a := a.(type) {
		case float64:
			return a, true
		case int64:
			return float64(a), true
		}
	case "boolean":
		if v, ok := a.(bool); ok {
			return v, true
		}
	case "string":
		if v, ok := a.(string); ok {
			return v, true
		}
	case "uuid":
		switch a.(type) {
		case UUID, NamedUUID:
			return a, true
		}
	}
	return nil, false
}

func (b *BaseType) allows(a any) bool {
	if b.Enum == nil {
		return true
	}
	for _, e := range b.Enum {
		if e == a {
			return true
		}
	}
	return false
}

func describeAtom(a any) string {
	j, err := EncodeDatum(a)
	if err != nil {
		return fmt.Sprint(a)
	}
	return string(j)
}

func maxString(max int) string {
	if max == Unlimited {
		return "unlimited"
	}
	return fmt.Sprint(max)
}

// Row is a row's columns, each a Set or a Map decoded by the column's
// type. A row of a monitor holds only the columns monitored.
type Row map[string]any

// DecodeRow reads a row's JSON object of the table t.
func (t *Table) DecodeRow(data []byte) (Row, error) { return t.decodeRow(data, true) }

// decodeDiff reads the differences of a row-update2's modify.
func (t *Table) decodeDiff(data []byte) (Row, error) { return t.decodeRow(data, false) }

func (t *Table) decodeRow(data []byte, counted bool) (Row, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("ovsdb: %s row: %w", t.Name, err)
	}
	r := make(Row, len(raw))
	for name, v := range raw {
		c := t.Columns[name]
		if c == nil {
			return nil, fmt.Errorf("ovsdb: %s has no column %s", t.Name, name)
		}
		d, err := c.Type.decode(v, counted)
		if err != nil {
			return nil, fmt.Errorf("ovsdb: %s.%s: %w", t.Name, name, err)
		}
		r[name] = d
	}
	return r, nil
}

// set gives the column's set, empty when absent or a map.
func (r Row) set(col string) Set {
	s, _ := r[col].(Set)
	return s
}

// first gives the first (an optional column's only) element of the
// column's set as a T, and whether there is one of that type.
func first[T any](r Row, col string) (T, bool) {
	if s := r.set(col); len(s) > 0 {
		v, ok := s[0].(T)
		return v, ok
	}
	var zero T
	return zero, false
}

// elements gives the column's elements of type T, in the order the
// server gave them.
func elements[T any](r Row, col string) []T {
	var out []T
	for _, a := range r.set(col) {
		if v, ok := a.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// String gives a string column's value, "" when it is empty.
func (r Row) String(col string) string {
	v, _ := first[string](r, col)
	return v
}

// Strings gives a set of strings, sorted.
func (r Row) Strings(col string) []string {
	out := elements[string](r, col)
	sort.Strings(out)
	return out
}

// OptInt gives an optional integer column's value and whether it has one.
func (r Row) OptInt(col string) (int64, bool) { return first[int64](r, col) }

// Ints gives a set of integers, in the order the server gave them.
func (r Row) Ints(col string) []int64 { return elements[int64](r, col) }

// OptBool gives an optional boolean column's value and whether it has one.
func (r Row) OptBool(col string) (bool, bool) { return first[bool](r, col) }

// UUIDs gives a set of references.
func (r Row) UUIDs(col string) []UUID { return elements[UUID](r, col) }

// OptUUID gives an optional reference and whether there is one.
func (r Row) OptUUID(col string) (UUID, bool) { return first[UUID](r, col) }

// Pairs gives a map column's pairs, in the order the server gave them.
func (r Row) Pairs(col string) Map {
	m, _ := r[col].(Map)
	return m
}

// StringMap gives a map of strings to strings, such as other_config.
func (r Row) StringMap(col string) map[string]string {
	m := r.Pairs(col)
	out := make(map[string]string, len(m))
	for _, p := range m {
		k, _ := p.Key.(string)
		v, _ := p.Value.(string)
		out[k] = v
	}
	return out
}
