package ovsdb

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// UUID is a row's identity, written ["uuid","..."] on the wire.
type UUID string

// NamedUUID names, inside one transaction, the row an insert creates
// (its uuid-name), written ["named-uuid","..."].
type NamedUUID string

// An atom is one of int64, float64, bool, string, UUID or NamedUUID.

// Set is a datum that is a set of atoms. Every datum that is not a map is
// a set: a single atom on the wire is a set of one.
type Set []any

// Pair is one key-value of a Map.
type Pair struct{ Key, Value any }

// Map is a datum that maps atoms to atoms, in the order the wire gave them.
type Map []Pair

var (
	uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	namePattern = regexp.MustCompile(`^[_a-zA-Z][_a-zA-Z0-9]*$`)
)

// MarshalJSON writes a set of one as its atom, as RFC 7047 allows and
// ovsdb-server does.
func (s Set) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := encodeDatum(&b, s); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// MarshalJSON writes ["map",[[k,v],...]].
func (m Map) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := encodeDatum(&b, m); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// MarshalJSON writes ["uuid","..."].
func (u UUID) MarshalJSON() ([]byte, error) { return json.Marshal([]string{"uuid", string(u)}) }

// MarshalJSON writes ["named-uuid","..."].
func (n NamedUUID) MarshalJSON() ([]byte, error) {
	return json.Marshal([]string{"named-uuid", string(n)})
}

// EncodeDatum writes a datum (a Set, a Map or a single atom) as RFC 7047's
// JSON. A real is always written with a decimal point or an exponent so
// that DecodeDatum reads it back as a real.
func EncodeDatum(d any) ([]byte, error) {
	var b bytes.Buffer
	if err := encodeDatum(&b, d); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func encodeDatum(b *bytes.Buffer, d any) error {
	switch d := d.(type) {
	case Set:
		if len(d) == 1 {
			return encodeAtom(b, d[0])
		}
		b.WriteString(`["set",[`)
		for i, a := range d {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := encodeAtom(b, a); err != nil {
				return err
			}
		}
		b.WriteString(`]]`)
		return nil
	case Map:
		b.WriteString(`["map",[`)
		for i, p := range d {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('[')
			if err := encodeAtom(b, p.Key); err != nil {
				return err
			}
			b.WriteByte(',')
			if err := encodeAtom(b, p.Value); err != nil {
				return err
			}
			b.WriteByte(']')
		}
		b.WriteString(`]]`)
		return nil
	}
	return encodeAtom(b, d)
}

func encodeAtom(b *bytes.Buffer, a any) error {
	switch a := a.(type) {
	case int64:
		b.WriteString(strconv.FormatInt(a, 10))
	case int:
		b.WriteString(strconv.Itoa(a))
	case float64:
		if math.IsNaN(a) || math.IsInf(a, 0) {
			return fmt.Errorf("ovsdb: real %v has no JSON form", a)
		}
		s := strconv.FormatFloat(a, 'g', -1, 64)
		if !strings.ContainsAny(s, ".e") {
			s += ".0"
		}
		b.WriteString(s)
	case bool:
		b.WriteString(strconv.FormatBool(a))
	case string:
		j, err := json.Marshal(a)
		if err != nil {
			return err
		}
		b.Write(j)
	case UUID, NamedUUID:
		j, err := json.Marshal(a)
		if err != nil {
			return err
		}
		b.Write(j)
	default:
		return fmt.Errorf("ovsdb: %T is not an atom", a)
	}
	return nil
}

// DecodeDatum reads a datum without knowing its type: a Map for
// ["map",...], otherwise a Set (a single atom is a set of one). An integer
// is read as int64 and a number with a decimal point or an exponent as
// float64. Duplicate set elements or map keys are an error, as RFC 7047
// says.
func DecodeDatum(data []byte) (any, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("ovsdb: datum: %w", err)
	}
	if dec.More() {
		return nil, errors.New("ovsdb: datum: trailing data")
	}
	return datumFromJSON(v)
}

// datumFromJSON reads a datum from a value decoded with UseNumber.
func datumFromJSON(v any) (any, error) {
	if arr, ok := v.([]any); ok && len(arr) == 2 {
		switch arr[0] {
		case "set":
			elems, ok := arr[1].([]any)
			if !ok {
				return nil, fmt.Errorf("ovsdb: [\"set\",...] holds %s, not an array", describe(arr[1]))
			}
			s := make(Set, 0, len(elems))
			seen := make(map[any]bool, len(elems))
			for _, e := range elems {
				a, err := atomFromJSON(e)
				if err != nil {
					return nil, err
				}
				if seen[a] {
					return nil, fmt.Errorf("ovsdb: set has %v twice", a)
				}
				seen[a] = true
				s = append(s, a)
			}
			return s, nil
		case "map":
			pairs, ok := arr[1].([]any)
			if !ok {
				return nil, fmt.Errorf("ovsdb: [\"map\",...] holds %s, not an array", describe(arr[1]))
			}
			m := make(Map, 0, len(pairs))
			seen := make(map[any]bool, len(pairs))
			for _, p := range pairs {
				kv, ok := p.([]any)
				if !ok || len(kv) != 2 {
					return nil, fmt.Errorf("ovsdb: map pair %s is not [key,value]", describe(p))
				}
				k, err := atomFromJSON(kv[0])
				if err != nil {
					return nil, err
				}
				val, err := atomFromJSON(kv[1])
				if err != nil {
					return nil, err
				}
				if seen[k] {
					return nil, fmt.Errorf("ovsdb: map has key %v twice", k)
				}
				seen[k] = true
				m = append(m, Pair{k, val})
			}
			return m, nil
		}
	}
	a, err := atomFromJSON(v)
	if err != nil {
		return nil, err
	}
	return Set{a}, nil
}

// atomFromJSON reads an atom from a value decoded with UseNumber.
func atomFromJSON(v any) (any, error) {
	switch v := v.(type) {
	case json.Number:
		s := string(v)
		if strings.ContainsAny(s, ".eE") {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, fmt.Errorf("ovsdb: real %s out of range", s)
			}
			return f, nil
		}
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("ovsdb: integer %s out of 64-bit range", s)
		}
		return i, nil
	case bool:
		return v, nil
	case string:
		return v, nil
	case []any:
		if len(v) == 2 {
			s, ok := v[1].(string)
			switch {
			case v[0] == "uuid" && ok:
				if !uuidPattern.MatchString(s) {
					return nil, fmt.Errorf("ovsdb: %q is not a UUID", s)
				}
				return UUID(strings.ToLower(s)), nil
			case v[0] == "named-uuid" && ok:
				if !namePattern.MatchString(s) {
					return nil, fmt.Errorf("ovsdb: %q is not a uuid-name", s)
				}
				return NamedUUID(s), nil
			}
		}
	}
	return nil, fmt.Errorf("ovsdb: %s is not an atom", describe(v))
}

// describe shows a bad JSON value in an error, cut short.
func describe(v any) string {
	j, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%T", v)
	}
	if len(j) > 60 {
		return string(j[:57]) + "..."
	}
	return string(j)
}

// Equal says whether two datums are the same: sets with the same atoms,
// or maps with the same pairs, in any order.
func Equal(a, b any) bool {
	ca, errA := canonical(a)
	cb, errB := canonical(b)
	return errA == nil && errB == nil && ca == cb
}

// canonical is a datum's encoding with its elements sorted.
func canonical(d any) (string, error) {
	var parts []string
	switch d := d.(type) {
	case Set:
		for _, a := range d {
			j, err := EncodeDatum(a)
			if err != nil {
				return "", err
			}
			parts = append(parts, string(j))
		}
	case Map:
		for _, p := range d {
			j, err := EncodeDatum(Map{p})
			if err != nil {
				return "", err
			}
			parts = append(parts, string(j))
		}
		parts = append(parts, "map") // an empty map is not an empty set
	default:
		j, err := EncodeDatum(d)
		return string(j), err
	}
	sort.Strings(parts)
	return strings.Join(parts, ","), nil
}
