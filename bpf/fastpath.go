package bpf

import (
	"encoding/binary"

	"github.com/xswitch/xswitch/flow"
)

// Headers converts a key the fast path's parser read into the
// flow.Headers the extractor reads from the same frame: the kernel keeps
// the frame's byte order, the key host order.
func (k *FastpathFpKey) Headers() flow.Headers {
	be := func(v uint16) uint16 {
		var b [2]byte
		binary.NativeEndian.PutUint16(b[:], v)
		return binary.BigEndian.Uint16(b[:])
	}
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
