package openflow

import (
	"errors"
	"reflect"
	"testing"
)

// FuzzDecode: decoding never panics, refuses with a *DecodeError, and
// what decodes encodes to a message that decodes to the same value.
func FuzzDecode(f *testing.F) {
	for i, m := range testMessages {
		f.Add(Append(nil, uint32(i), m))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		xid, m, err := Decode(b)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("%T %v", err, err)
			}
			return
		}
		again := Append(nil, xid, m)
		xid2, m2, err := Decode(again)
		if err != nil || xid2 != xid || !reflect.DeepEqual(m, m2) {
			t.Fatalf("%x decodes to %#v,\nwhich encodes to %x, which decodes to %#v, %v", b, m, again, m2, err)
		}
	})
}

func BenchmarkDecodeFlowMod(b *testing.B) {
	msg := Append(nil, 1, FlowMod{Command: FlowAdd, Priority: 100, BufferID: NoBuffer, OutPort: PortAny, OutGroup: GroupAny, Match: testMatch})
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if _, _, err := Decode(msg); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendPacketIn(b *testing.B) {
	m := PacketIn{BufferID: NoBuffer, TotalLen: 1500, Reason: PacketInAction, Match: Match{Fields: testMatch.Fields[:1]}, Data: make([]byte, 128)}
	buf := Append(nil, 1, m)
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		buf = Append(buf[:0], 1, m)
	}
}
