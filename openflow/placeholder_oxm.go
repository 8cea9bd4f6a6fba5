package openflow

// PLACEHOLDER so that this branch compiles until the OXM codec (branch
// of-codec) is merged: drop this file then. Same API and behaviour as
// there: Header, OXMFromHeader, AppendOXM, DecodeOXM (whose Value and
// Mask alias b), pad8, appendPad8.

import "encoding/binary"

func (o OXM) Header() uint32 {
	n := len(o.Value) + len(o.Mask)
	if o.Class == OXMClassExperimenter {
		n += 4
	}
	h := uint32(o.Class)<<16 | uint32(o.Field&0x7f)<<9 | uint32(uint8(n))
	if o.Mask != nil {
		h |= 1 << 8
	}
	return h
}

func OXMFromHeader(h uint32) OXM {
	return OXM{Class: uint16(h >> 16), Field: uint8(h>>9) & 0x7f}
}

func AppendOXM(b []byte, o OXM) []byte {
	b = binary.BigEndian.AppendUint32(b, o.Header())
	if o.Class == OXMClassExperimenter {
		b = binary.BigEndian.AppendUint32(b, o.Experimenter)
	}
	b = append(b, o.Value...)
	return append(b, o.Mask...)
}

func DecodeOXM(b []byte) (o OXM, n int, err error) {
	if len(b) < 4 {
		return OXM{}, 0, errorf(ErrBadMatch, BadMatchBadLen, "OXM header: %d of 4 bytes", len(b))
	}
	h := binary.BigEndian.Uint32(b)
	o = OXMFromHeader(h)
	n = 4 + int(h&0xff)
	if n > len(b) {
		return OXM{}, 0, errorf(ErrBadMatch, BadMatchBadLen, "OXM %#08x: %d of %d bytes", h, len(b), n)
	}
	p := b[4:n:n]
	if o.Class == OXMClassExperimenter {
		if len(p) < 4 {
			return OXM{}, 0, errorf(ErrBadMatch, BadMatchBadLen, "experimenter OXM %#08x without its id", h)
		}
		o.Experimenter = binary.BigEndian.Uint32(p)
		p = p[4:]
	}
	if h&(1<<8) == 0 {
		o.Value = p
		return o, n, nil
	}
	if len(p)%2 != 0 {
		return OXM{}, 0, errorf(ErrBadMatch, BadMatchBadLen, "OXM %#08x has a mask and an odd length", h)
	}
	o.Value, o.Mask = p[:len(p)/2:len(p)/2], p[len(p)/2:]
	return o, n, nil
}

func pad8(n int) int { return (n + 7) &^ 7 }

func appendPad8(b []byte, n int) []byte {
	return append(b, make([]byte, pad8(n)-n)...)
}
