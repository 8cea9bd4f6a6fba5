package conntrack

import (
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"strconv"
	"strings"
)

// ParseFlushArgs parses flush-conntrack's arguments after the datapath,
// as OVS's ofp_ct_match_parse does: [zone=N] [mark=V[/M]]
// [labels=V[/M]] [ORIG-TUPLE [REPLY-TUPLE]], each tuple a comma-separated
// list of ct_nw_src, ct_nw_dst (or ct_ipv6_src, ct_ipv6_dst),
// ct_nw_proto, ct_tp_src, ct_tp_dst, icmp_type, icmp_code and icmp_id,
// and an empty ORIG-TUPLE to give only the reply one.
func ParseFlushArgs(args []string) (Filter, error) {
	var f Filter
	if len(args) > 0 && strings.HasPrefix(args[0], "zone=") {
		z, err := strconv.ParseUint(args[0][len("zone="):], 0, 16)
		if err != nil {
			return f, errors.New("failed to parse zone")
		}
		zone := uint16(z)
		f.Zone = &zone
		args = args[1:]
	}
	if len(args) > 0 && strings.HasPrefix(args[0], "mark=") {
		v, m, err := parseMasked(args[0][len("mark="):], 32)
		if err != nil {
			return f, errors.New("failed to parse mark")
		}
		f.Mark, f.MarkMask = uint32(v.Lo), uint32(m.Lo)
		args = args[1:]
	}
	if len(args) > 0 && strings.HasPrefix(args[0], "labels=") {
		v, m, err := parseMasked(args[0][len("labels="):], 128)
		if err != nil {
			return f, errors.New("failed to parse labels")
		}
		f.Labels, f.LabelsMask = v, m
		args = args[1:]
	}
	for i, tm := range []*TupleMatch{&f.Orig, &f.Reply} {
		if len(args) == 0 {
			break
		}
		if args[0] != "" {
			if err := parseTupleMatch(args[0], tm, &f); err != nil {
				return f, fmt.Errorf("%s tuple: %w", [2]string{"original", "reply"}[i], err)
			}
		}
		args = args[1:]
	}
	if len(args) > 0 {
		return f, errors.New("invalid arguments")
	}
	return f, nil
}

func parseTupleMatch(s string, m *TupleMatch, f *Filter) error {
	for kv := range strings.SplitSeq(s, ",") {
		key, value, _ := strings.Cut(kv, "=")
		if value == "" {
			return fmt.Errorf("field %s missing value", key)
		}
		switch key {
		case "ct_nw_src", "ct_nw_dst", "ct_ipv6_src", "ct_ipv6_dst":
			family := uint8(4)
			if strings.HasPrefix(key, "ct_ipv6") {
				family = 6
			}
			if f.Family != 0 && f.Family != family {
				return fmt.Errorf("the L3 protocol does not match %s", value)
			}
			a, err := netip.ParseAddr(value)
			if err != nil || a.Is4() != (family == 4) {
				return fmt.Errorf("failed to parse field %s", key)
			}
			field := &m.Src
			if strings.HasSuffix(key, "dst") {
				field = &m.Dst
			}
			if !field.IsZero() {
				return fmt.Errorf("%s is set multiple times", key)
			}
			f.Family, *field = family, AddrFrom(a)
		case "ct_nw_proto":
			v, err := strconv.ParseUint(value, 0, 8)
			if err != nil {
				return fmt.Errorf("failed to parse field %s", key)
			}
			f.Proto = uint8(v)
		case "ct_tp_src", "ct_tp_dst":
			v, err := strconv.ParseUint(value, 0, 16)
			if err != nil {
				return fmt.Errorf("failed to parse field %s", key)
			}
			if key == "ct_tp_src" {
				m.SrcPort = uint16(v)
			} else {
				m.DstPort = uint16(v)
			}
		case "icmp_type", "icmp_code", "icmp_id":
			if !isICMP(false, f.Proto) && !isICMP(true, f.Proto) {
				return errors.New("invalid L4 fields")
			}
			bits := 8
			if key == "icmp_id" {
				bits = 16
			}
			v, err := strconv.ParseUint(value, 0, bits)
			if err != nil {
				return fmt.Errorf("failed to parse field %s", key)
			}
			m.ICMP = true
			switch key {
			case "icmp_type":
				m.ICMPType = uint8(v)
			case "icmp_code":
				m.ICMPCode = uint8(v)
			default:
				m.ICMPID = uint16(v)
			}
		default:
			return fmt.Errorf("invalid conntrack tuple field: %s", key)
		}
	}
	if f.Proto == 0 && (m.SrcPort != 0 || m.DstPort != 0) {
		return errors.New("port is set without protocol")
	}
	return nil
}

// parseMasked parses V[/M], each decimal or 0x-hex, of at most bits
// bits; a missing mask is all ones.
func parseMasked(s string, bits uint) (v, m Label, err error) {
	vs, ms, hasMask := strings.Cut(s, "/")
	if v, err = parseWide(vs, bits); err != nil {
		return v, m, err
	}
	if !hasMask {
		ones := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), bits), big.NewInt(1))
		return v, labelOf(ones), nil
	}
	m, err = parseWide(ms, bits)
	return v, m, err
}

func parseWide(s string, bits uint) (Label, error) {
	n, ok := new(big.Int).SetString(s, 0)
	if !ok || n.Sign() < 0 || uint(n.BitLen()) > bits {
		return Label{}, fmt.Errorf("bad value %q", s)
	}
	return labelOf(n), nil
}

func labelOf(n *big.Int) Label {
	lo := new(big.Int).And(n, new(big.Int).SetUint64(^uint64(0)))
	return Label{Hi: new(big.Int).Rsh(n, 64).Uint64(), Lo: lo.Uint64()}
}
