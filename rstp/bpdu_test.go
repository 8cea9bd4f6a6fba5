package rstp

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rstFrame is an RST BPDU laid out by hand from 802.1D-2004 9.3.3: a
// designated port, learning and forwarding, proposing.
const rstFrame = `
	0180c2000000 001b21aabbcc 0027 424203
	0000 02 02 3e
	8000 001b213c4d5e  00004e20  9000 001b21aabbcc  8002
	0100 1400 0200 0f00  00
	00000000000000`

func TestDecodeHandMadeRSTBPDU(t *testing.T) {
	b, err := DecodeFrame(unhex(t, rstFrame))
	if err != nil {
		t.Fatal(err)
	}
	want := BPDU{
		Version: 2, Type: TypeRST, Flags: FlagForwarding | FlagLearning | roleDesignatedPort<<flagRoleShift | FlagProposal,
		Root:         NewBridgeID(32768, [6]byte{0x00, 0x1b, 0x21, 0x3c, 0x4d, 0x5e}),
		RootPathCost: 20000,
		Bridge:       NewBridgeID(36864, [6]byte{0x00, 0x1b, 0x21, 0xaa, 0xbb, 0xcc}),
		Port:         NewPortID(128, 2),
		MessageAge:   TimeOf(1), MaxAge: TimeOf(20), HelloTime: TimeOf(2), ForwardDelay: TimeOf(15),
	}
	if b != want {
		t.Fatalf("decoded %+v\nwant    %+v", b, want)
	}
	if b.Root.String() != "8000.001b213c4d5e" || b.Port.Number() != 2 || b.Port.Priority() != 128 || b.role() != roleDesignatedPort {
		t.Errorf("root %v, port %d priority %d, role %d", b.Root, b.Port.Number(), b.Port.Priority(), b.role())
	}
	// Encoding it gives the same bytes, padding included.
	src := [6]byte{0x00, 0x1b, 0x21, 0xaa, 0xbb, 0xcc}
	if got := want.AppendFrame(nil, src); !bytes.Equal(got, unhex(t, rstFrame)) {
		t.Errorf("encoded\n%x\nwant\n%x", got, unhex(t, rstFrame))
	}
}

// TestDecodeConfigAndTCNAsLinuxSendsThem: the Linux bridge's configuration
// BPDU (802.3 length 38, padded to 60 bytes, topology change flag set) and
// TCN, laid out by hand.
func TestDecodeConfigAndTCNAsLinuxSendsThem(t *testing.T) {
	config := unhex(t, `
		0180c2000000 3e4f5a6b7c8d 0026 424203
		0000 00 00 01
		1000 3e4f5a6b7c8d  00000000  1000 3e4f5a6b7c8d  8001
		0000 0600 0200 0400
		0000000000000000`)
	b, err := DecodeFrame(config)
	if err != nil {
		t.Fatal(err)
	}
	if b.Type != TypeConfig || b.Flags != FlagTopologyChange || b.Root.Priority() != 4096 || b.MaxAge.Seconds() != 6 ||
		b.ForwardDelay.Seconds() != 4 || b.role() != roleDesignatedPort {
		t.Errorf("decoded %+v", b)
	}
	tcn, err := DecodeFrame(unhex(t, `0180c2000000 3e4f5a6b7c8d 0007 424203 0000 00 80 0000000000000000000000000000000000000000000000000000000000000000000000`))
	if err != nil || tcn != (BPDU{Type: TypeTCN}) {
		t.Errorf("TCN decoded as %+v, %v", tcn, err)
	}
}

func TestDecodeRefusesWhat934Refuses(t *testing.T) {
	good := unhex(t, rstFrame)
	for name, mutate := range map[string]func([]byte) []byte{
		"an EtherType, not a length": func(f []byte) []byte { f[12], f[13] = 0x88, 0xcc; return f },
		"a length beyond the frame":  func(f []byte) []byte { f[13] = 0xff; return f },
		"another LLC SAP":            func(f []byte) []byte { f[14] = 0xaa; return f },
		"protocol identifier 1":      func(f []byte) []byte { f[18] = 1; return f },
		"an RST BPDU of version 0":   func(f []byte) []byte { f[19] = 0; return f },
		"an RST BPDU of 35 bytes":    func(f []byte) []byte { f[13] = 3 + 35; return f },
		"a configuration BPDU cut":   func(f []byte) []byte { f[13], f[20] = 3+34, 0; return f },
		"unknown type 0x01":          func(f []byte) []byte { f[20] = 0x01; return f },
		"config with age >= max age": func(f []byte) []byte { f[20], f[44], f[46] = 0, 0x14, 0x14; return f },
		"three bytes":                func(f []byte) []byte { return f[:3] },
		"an LLC header and 3 bytes":  func(f []byte) []byte { f[13] = 6; return f },
	} {
		f := mutate(append([]byte{}, good...))
		if b, err := DecodeFrame(f); !errors.Is(err, ErrNotBPDU) {
			t.Errorf("%s: decoded %+v, %v; want ErrNotBPDU", name, b, err)
		}
	}
	// Version 3 RST BPDUs are decoded as version 2 ones are (9.3.4).
	v3 := append([]byte{}, good...)
	v3[19] = 3
	if b, err := DecodeFrame(v3); err != nil || b.Type != TypeRST {
		t.Errorf("a version 3 RST BPDU: %+v, %v; want it decoded", b, err)
	}
	// An RST BPDU whose role is Unknown is a configuration BPDU (9.2.9).
	unknown := append([]byte{}, good...)
	unknown[21] &^= flagRoleMask
	if b, err := DecodeFrame(unknown); err != nil || b.Type != TypeConfig {
		t.Errorf("an RST BPDU of Unknown role: %+v, %v; want a configuration BPDU", b, err)
	}
}

func TestTimeRoundsToSeconds(t *testing.T) {
	for in, want := range map[Time]uint16{0: 0, 127: 0, 128: 1, 256: 1, 511: 2, 5120: 20} {
		if got := in.Seconds(); got != want {
			t.Errorf("Time(%d).Seconds() = %d; want %d", in, got, want)
		}
	}
}

// FuzzDecodeFrame: no frame makes the decoder panic, and whatever it
// accepts encodes back to a frame that decodes to the same BPDU.
func FuzzDecodeFrame(f *testing.F) {
	f.Add(unhex(f, rstFrame))
	bpdu := BPDU{Type: TypeConfig, Flags: FlagTopologyChangeAck, MaxAge: TimeOf(20)}
	f.Add(bpdu.AppendFrame(nil, [6]byte{2}))
	tcn := BPDU{Type: TypeTCN}
	f.Add(tcn.AppendFrame(nil, [6]byte{2}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, frame []byte) {
		b, err := DecodeFrame(frame)
		if err != nil {
			if !errors.Is(err, ErrNotBPDU) {
				t.Fatalf("error %v is not ErrNotBPDU", err)
			}
			return
		}
		again, err := DecodeFrame(b.AppendFrame(nil, [6]byte{2}))
		if err != nil || again != b {
			t.Fatalf("decoded %+v from %x; after encoding, %+v, %v", b, frame, again, err)
		}
	})
}
