package flow

import (
	"math/rand/v2"
	"testing"
)

// TestHeaderRewritesMakeTheWrite: for every writable header field, over
// random keys and random writes of random bit ranges, the rewrites that
// AppendRewrites gives change a key exactly as the write changed it, and
// a frame without the field's header gets no rewrite.
func TestHeaderRewritesMakeTheWrite(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 6))
	randomKey := func() Key {
		var k Key
		fill := func(b []byte) {
			for i := range b {
				b[i] = byte(rnd.Uint32())
			}
		}
		fill(k.DlSrc[:])
		fill(k.DlDst[:])
		k.DlType = []uint16{EtherTypeIPv4, EtherTypeIPv6, EtherTypeARP}[rnd.IntN(3)]
		if rnd.IntN(2) == 0 {
			k.VLANTCI = VLANCFI | uint16(rnd.Uint32())&^VLANCFI
		}
		if k.DlType != EtherTypeARP {
			k.NwProto = []uint8{ProtoTCP, ProtoUDP, ProtoSCTP, ProtoICMP, ProtoICMPv6}[rnd.IntN(5)]
			k.NwTOS, k.NwTTL = uint8(rnd.Uint32()), uint8(rnd.Uint32())
			if rnd.IntN(4) == 0 {
				k.NwFrag = FragAny | FragLater
			}
			if k.NwFrag == 0 {
				k.TpSrc, k.TpDst = uint16(rnd.Uint32()), uint16(rnd.Uint32())
			}
			if k.HasICMP() {
				k.TpSrc, k.TpDst = uint16(rnd.Uint32()&0xff), uint16(rnd.Uint32()&0xff)
			}
			if k.DlType == EtherTypeIPv6 && k.NwProto == ProtoICMPv6 && rnd.IntN(2) == 0 {
				k.TpSrc, k.TpDst = uint16(135+rnd.IntN(2)), 0 // neighbour discovery
			}
		}
		switch {
		case k.DlType == EtherTypeIPv6:
			fill(k.IPv6Src[:])
			fill(k.IPv6Dst[:])
			k.IPv6Label = rnd.Uint32() & 0xfffff
		default:
			fill(k.NwSrc[:])
			fill(k.NwDst[:])
		}
		if k.DlType == EtherTypeARP || k.IsND() {
			fill(k.ArpSHA[:])
			fill(k.ArpTHA[:])
		}
		if k.IsND() {
			fill(k.NDTarget[:])
		}
		return k
	}
	tried := 0
	for _, f := range fields {
		if !f.Writable || f.Carried {
			continue
		}
		for range 200 {
			old := randomKey()
			ofs := uint(rnd.IntN(int(f.Bits)))
			nbits := 1 + uint(rnd.IntN(int(f.Bits-ofs)))
			mask := Ones(nbits).Shl(ofs)
			imm := Value{Hi: rnd.Uint64(), Lo: rnd.Uint64()}.And(mask)
			write := Action{Type: ActLoad, Field: f, Imm: imm, Mask: mask}
			updated := old
			write.ApplyToKey(&updated)
			rewrites, ok := f.AppendRewrites(nil, &old, &updated)
			if !ok {
				if len(rewrites) != 0 {
					t.Fatalf("%s on %+v: no header, yet rewrites %v", f.Name, old.Headers, rewrites)
				}
				continue
			}
			got := old
			for _, a := range rewrites {
				a.ApplyToKey(&got)
			}
			if got != updated {
				t.Fatalf("%s[%d..%d] := %#x on %+v: rewrites %s give\n%+v\nwant\n%+v",
					f.Name, ofs, ofs+nbits-1, imm, old.Headers, FormatActions(rewrites), got.Headers, updated.Headers)
			}
			tried++
		}
	}
	if tried < 1000 {
		t.Errorf("only %d writes had a header to rewrite", tried)
	}
}
