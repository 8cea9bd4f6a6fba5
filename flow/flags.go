package flow

import (
	"fmt"
	"strings"
)

// flagNames are the names of a field's bits, bit i's at i, for a field
// that reads and prints as ovs-ofctl reads and prints tcp_flags and
// ct_state (its parse_flags and format_flags_masked):
//
//	+trk+est-new   the flags with + set, those with - clear, the others either way
//	est|trk        exactly those set; a number may stand for some (0x20|est), and a trailing | is allowed
//	0x21/0x23      a number and its mask, as OpenFlow carries the field
type flagNames []string

// syntax is the field's parse and print (Field.parse, Field.print).
func (names flagNames) syntax() (func(*Field, string) (Match, error), func(*Field, *Match) string) {
	parse := func(f *Field, text string) (Match, error) {
		var m Match
		v, mask, err := names.parse(f, text)
		if err == nil {
			f.set(&m.Key, v)
			f.set(&m.Mask, mask)
		}
		return m, err
	}
	print := func(f *Field, m *Match) string {
		mask := f.get(&m.Mask)
		if mask.IsZero() {
			return ""
		}
		return f.Name + "=" + names.text(f, f.get(&m.Key), mask)
	}
	return parse, print
}

func (names flagNames) parse(f *Field, text string) (v, mask Value, err error) {
	switch {
	case text != "" && (text[0] == '+' || text[0] == '-'):
		for rest := text; rest != ""; {
			set, name := rest[0] == '+', rest[1:]
			if i := strings.IndexAny(name, "+-"); i >= 0 {
				name, rest = name[:i], name[i:]
			} else {
				rest = ""
			}
			bit, err := names.bit(f, name)
			if err != nil {
				return v, mask, err
			}
			if !mask.And(bit).IsZero() {
				return v, mask, fmt.Errorf("%s: %q names %s twice", f.Name, text, name)
			}
			mask = mask.Or(bit)
			if set {
				v = v.Or(bit)
			}
		}
		return v, mask, nil
	case strings.Contains(text, "/"):
		return f.parseValue(text, nil)
	}
	for elem := range strings.SplitSeq(strings.TrimSuffix(text, "|"), "|") {
		var bit Value
		var err error
		if elem != "" && elem[0] >= '0' && elem[0] <= '9' {
			bit, err = f.numberFromText(f.Name, elem)
		} else {
			bit, err = names.bit(f, elem)
		}
		if err != nil {
			return v, mask, err
		}
		v = v.Or(bit)
	}
	return v, f.full(), nil
}

func (names flagNames) bit(f *Field, name string) (Value, error) {
	for i, n := range names {
		if n == name {
			return Value{Lo: 1 << i}, nil
		}
	}
	return Value{}, fmt.Errorf("%s: unknown flag %q (want %s)", f.Name, name, strings.Join(names, ", "))
}

// text prints v under mask: the flags set, "|"-separated, when the mask
// is whole (0 for none); each flag the mask holds, +set or -clear, when
// it holds some.
func (names flagNames) text(f *Field, v, mask Value) string {
	full := mask == f.full()
	if full && v.IsZero() {
		return "0"
	}
	var b strings.Builder
	for i, name := range names {
		bit := Value{Lo: 1 << i}
		switch {
		case full && v.And(bit).IsZero():
			continue
		case full:
			if b.Len() > 0 {
				b.WriteByte('|')
			}
		case mask.And(bit).IsZero():
			continue
		case !v.And(bit).IsZero():
			b.WriteByte('+')
		default:
			b.WriteByte('-')
		}
		b.WriteString(name)
	}
	return b.String()
}
