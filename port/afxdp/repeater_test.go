package afxdp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/internal/netns"
)

// repeaterEtherType marks the test's frames (IEEE's for local experiments).
const repeaterEtherType = 0x88b5

// TestRepeaterSendsItsFrameAgainAndAgain opens a Repeater on the host end
// of a veth pair and checks at the peer that what arrives is its frame
// with each copy's edit, a sequence number, and that it goes on sending
// many times the copies it holds: every copy comes back from the kernel.
func TestRepeaterSendsItsFrameAgainAndAgain(t *testing.T) {
	for _, tc := range []struct {
		name string
		mtu  int
		size int
	}{
		{"64 bytes", 0, 64},
		{"1514 bytes", 0, 1514},
		// Three UMEM frames each, a chain, with multi-buffer.
		{"9014 bytes", 9000, 9014},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := buildTestbed(t, 1, tc.mtu)
			frame := make([]byte, tc.size)
			copy(frame[0:6], b.PeerMAC)
			copy(frame[6:12], b.HostMAC)
			binary.BigEndian.PutUint16(frame[12:], repeaterEtherType)
			for i := 18; i < len(frame); i++ {
				frame[i] = byte(i)
			}
			const copies = 64
			r, err := OpenRepeater(RepeaterConfig{Interface: b.Host, Frame: frame, Copies: copies})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := r.Close(); err != nil {
					t.Error(err)
				}
			})
			capture := openTestCapture(t, b)

			seq := uint32(0)
			edit := func(head []byte) {
				seq++
				binary.BigEndian.PutUint32(head[14:], seq)
			}
			deadline := time.Now().Add(5 * time.Second)
			for r.Sent() < 10*copies && time.Now().Before(deadline) {
				if err := r.Send(edit); err != nil {
					t.Fatalf("Send: %v", err)
				}
			}
			if r.Sent() < 10*copies {
				t.Fatalf("the repeater sent %d frames in 5s, want at least %d: its %d copies do not come back", r.Sent(), 10*copies, copies)
			}

			got := captureFrames(t, capture, 20)
			if len(got) == 0 {
				t.Fatal("no frame of the repeater's arrived")
			}
			var last uint32
			for _, f := range got {
				n := binary.BigEndian.Uint32(f[14:])
				want := append([]byte(nil), frame...)
				binary.BigEndian.PutUint32(want[14:], n)
				if !bytes.Equal(f, want) {
					t.Fatalf("a frame of %d bytes arrived that is not the repeater's of %d with its sequence number", len(f), len(want))
				}
				if n <= last {
					t.Errorf("sequence number %d after %d: each copy goes with its own edit, in order", n, last)
				}
				last = n
			}
		})
	}
}

func TestRepeaterRejectsFrames(t *testing.T) {
	for _, cfg := range []RepeaterConfig{
		{Interface: "lo", Frame: nil},
		{Interface: "lo", Frame: make([]byte, maxTxDescs*defaultFrameSize+1)},
		{Interface: "lo", Frame: make([]byte, 64), Copies: 3},
		{Interface: "no-such-if0", Frame: make([]byte, 64)},
	} {
		if r, err := OpenRepeater(cfg); err == nil {
			r.Close()
			t.Errorf("OpenRepeater(%d-byte frame, %d copies, %q) accepted it", len(cfg.Frame), cfg.Copies, cfg.Interface)
		}
	}
}

// openTestCapture opens a packet socket on the testbed's peer that
// receives the test's frames, with a receive timeout.
func openTestCapture(t *testing.T, b *testbed) int {
	t.Helper()
	proto := uint16(repeaterEtherType&0xff)<<8 | repeaterEtherType>>8 // in network order
	var fd int
	err := netns.Do(b.NS, func() error {
		dev, err := net.InterfaceByName(b.Peer)
		if err != nil {
			return err
		}
		if fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(proto)); err != nil {
			return err
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: dev.Index}); err != nil {
			unix.Close(fd)
			return err
		}
		tv := unix.NsecToTimeval(int64(time.Second))
		return unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	})
	if err != nil {
		t.Fatalf("capture on %s: %v", b.Peer, err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// captureFrames reads up to n frames from capture, those it holds
// already: it stops when a read waits in vain.
func captureFrames(t *testing.T, capture, n int) [][]byte {
	t.Helper()
	var frames [][]byte
	buf := make([]byte, 1<<16)
	for len(frames) < n {
		m, _, err := unix.Recvfrom(capture, buf, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.EAGAIN) {
			break
		}
		if err != nil {
			t.Fatalf("capture: %v", err)
		}
		frames = append(frames, append([]byte(nil), buf[:m]...))
	}
	return frames
}
