package afxdp

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/xswitch/xswitch/port"
)

// TestJumboEchoRoundTrip sends 8000-byte pings into a namespace at MTU
// 9000 and receives the replies: out as a chain of two tx descriptors,
// back as a chain of three rx descriptors put together, many times over,
// without losing a buffer on the way.
func TestJumboEchoRoundTrip(t *testing.T) {
	b := newJumboTestbed(t, 9000)
	p := b.open(t, Config{})
	want := port.Info{Kind: "afxdp", XDPMode: "native", BindMode: "copy", Queues: 1, Ifindex: b.hostIndex(t),
		MultiBuffer: true, MaxFrame: 9234, MTU: 9000}
	if got := p.Info(); got != want {
		t.Fatalf("Info = %+v, want %+v", got, want)
	}
	if problem := MTUProblem(p.Info()); problem != "" {
		t.Errorf("MTUProblem at MTU 9000 = %q, want none", problem)
	}
	const payload = 8000
	for seq := range uint16(200) {
		req := b.echoRequestPattern(t, 0x1b, seq, payload)
		if n := p.Transmit([][]byte{req}); n != 1 {
			t.Fatalf("seq %d: Transmit accepted %d of 1 (stats %+v)", seq, n, p.Stats())
		}
		if !receiveUntil(t, p, 5*time.Second, b.isEchoReplyWithPayload(0x1b, seq, req[42:])) {
			t.Fatalf("seq %d: no 8000-byte echo reply came back intact (stats %+v)", seq, p.Stats())
		}
	}
	p.Transmit(nil)
	if got, want := len(p.txFree), cap(p.txFree); got != want {
		t.Errorf("free tx frames after completion = %d, want %d", got, want)
	}
	q := p.rxQueues[0].(*rxQueue)
	if len(q.freeSlots) != chainSlots {
		t.Errorf("%d reassembly slots free, want %d", len(q.freeSlots), chainSlots)
	}
	if st := p.Stats(); st != (port.Stats{TxRingEmpty: st.TxRingEmpty}) {
		t.Errorf("stats after the round trips: %+v, want no drops or errors", st)
	}
}

// TestOversizeFramesAreCounted sends frames longer than the port carries:
// on a socket bound without multi-buffer, longer than one UMEM frame; on
// one bound with it, longer than MaxFrameSize. The XDP program drops and
// counts them in RxOversize, where before they vanished into the kernel's
// rx_dropped; Open in an insisting mode refuses such an MTU outright.
func TestOversizeFramesAreCounted(t *testing.T) {
	for _, tc := range []struct {
		name        string
		mtu         int
		maxFrame    int
		multiBuffer bool
		why         string
	}{
		{"single-buffer", 9000, 3840, false, "without AF_XDP multi-buffer"},
		{"multi-buffer", 16000, 0, true, "beyond what its buffers hold"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newJumboTestbed(t, tc.mtu)
			_, err := Open(Config{Interface: b.Host, Mode: ModeCopy, MaxFrameSize: tc.maxFrame})
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("MTU %d needs", tc.mtu)) || !strings.Contains(err.Error(), tc.why) {
				t.Fatalf("Open in copy mode at MTU %d: error %v, want one naming the MTU and %q", tc.mtu, err, tc.why)
			}
			assertNothingAttached(t, b.Host)

			p := b.open(t, Config{MaxFrameSize: tc.maxFrame})
			if info := p.Info(); info.MultiBuffer != tc.multiBuffer || MTUProblem(info) == "" {
				t.Fatalf("auto mode: Info %+v, MTUProblem %q; want multi-buffer %v and a problem", info, MTUProblem(info), tc.multiBuffer)
			}
			size := p.Info().MaxFrame // an ICMP payload of this much is a longer frame
			ping := exec.Command("ip", "netns", "exec", b.NS, "ping", "-c", "3", "-i", "0.2", "-W", "1", "-s", fmt.Sprint(size), b.HostIP.String())
			out, _ := ping.CombinedOutput() // nobody answers: the frames are dropped
			deadline := time.Now().Add(5 * time.Second)
			for p.Stats().RxOversize < 3 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			st := p.Stats()
			if st.RxOversize < 3 || st.RxDropped != 0 {
				t.Fatalf("after 3 pings of %d bytes: %+v, want rx_oversize >= 3 and no rx_dropped\nping: %s", size, st, out)
			}
			if receiveUntil(t, p, 200*time.Millisecond, func(f []byte) bool { return len(f) > size }) {
				t.Error("a frame longer than MaxFrame reached Receive")
			}
		})
	}
}

// echoRequestPattern is echoRequest with a payload of counting bytes, so
// that a reply put together in the wrong order shows.
func (b *testbed) echoRequestPattern(t testing.TB, id, seq uint16, payload int) []byte {
	t.Helper()
	data := make([]byte, payload)
	for i := range data {
		data[i] = byte(i*7 + int(seq))
	}
	buf := gopacket.NewSerializeBuffer()
	err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		&layers.Ethernet{SrcMAC: b.HostMAC, DstMAC: b.PeerMAC, EthernetType: layers.EthernetTypeIPv4},
		&layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolICMPv4, SrcIP: b.HostIP, DstIP: b.PeerIP},
		&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(layers.ICMPv4TypeEchoRequest, 0), Id: id, Seq: seq},
		gopacket.Payload(data),
	)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// isEchoReplyWithPayload is isEchoReply that also wants the payload back
// byte for byte.
func (b *testbed) isEchoReplyWithPayload(id, seq uint16, payload []byte) func([]byte) bool {
	isReply := b.isEchoReply(id, seq)
	return func(f []byte) bool {
		return isReply(f) && len(f) == 42+len(payload) && bytes.Equal(f[42:], payload)
	}
}
