package bpf

import (
	"encoding/binary"
	"fmt"

	"github.com/cilium/ebpf/rlimit"

	"github.com/xswitch/xswitch/flow"
)

// Headers converts a key the fast path's parser read into the
// flow.Headers the extractor reads from the same frame: the kernel keeps
// the frame's byte order, the key host order.
func (k *FastpathFpKey) Headers() flow.Headers {
	be := NetworkOrder
	return flow.Headers{
		InPort:  k.InPort,
		DlDst:   k.DlDst,
		DlSrc:   k.DlSrc,
		DlType:  be(k.DlType),
		VLANTCI: be(k.VlanTci),
		NwProto: k.NwProto,
		NwTOS:   k.NwTos,
		NwTTL:   k.NwTtl,
		NwFrag:  k.NwFrag,
		NwSrc:   k.NwSrc,
		NwDst:   k.NwDst,
		IPv6Src: k.Ipv6Src,
		IPv6Dst: k.Ipv6Dst,
		TpSrc:   be(k.TpSrc),
		TpDst:   be(k.TpDst),
	}
}

// KeyOf is the key the fast path's parser reads from a frame whose
// headers the extractor reads as h: the inverse of Headers.
func KeyOf(h *flow.Headers) FastpathFpKey {
	be := NetworkOrder
	return FastpathFpKey{
		DlDst: h.DlDst, DlSrc: h.DlSrc, InPort: h.InPort,
		DlType: be(h.DlType), VlanTci: be(h.VLANTCI),
		NwProto: h.NwProto, NwTos: h.NwTOS, NwTtl: h.NwTTL, NwFrag: h.NwFrag,
		NwSrc: h.NwSrc, NwDst: h.NwDst, Ipv6Src: h.IPv6Src, Ipv6Dst: h.IPv6Dst,
		TpSrc: be(h.TpSrc), TpDst: be(h.TpDst),
	}
}

// FPDrop is a fast path entry's Out for a flow that goes nowhere.
const FPDrop = 0xffffffff

// NetworkOrder turns a 16-bit value the kernel keeps in the frame's byte
// order into the host's, and back: the same swap either way.
func NetworkOrder(v uint16) uint16 {
	var b [2]byte
	binary.NativeEndian.PutUint16(b[:], v)
	return binary.BigEndian.Uint16(b[:])
}

// LoadFastpathProgram loads the fast path's program for frames that
// arrive on OpenFlow port inPort; with recordKey, it also stores each key
// it parses in its parsed map, for tests.
func LoadFastpathProgram(inPort uint16, recordKey bool) (*FastpathObjects, error) {
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, err
	}
	spec, err := LoadFastpath()
	if err != nil {
		return nil, err
	}
	var record uint8
	if recordKey {
		record = 1
	}
	for name, value := range map[string]any{FastpathVarInPort: inPort, FastpathVarRecordKey: record} {
		if err := spec.Variables[name].Set(value); err != nil {
			return nil, fmt.Errorf("set %s: %w", name, err)
		}
	}
	var objs FastpathObjects
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		return nil, fmt.Errorf("the verifier refused the fast path program: %w", err)
	}
	return &objs, nil
}
