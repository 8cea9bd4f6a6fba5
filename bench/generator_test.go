package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/header"
	"github.com/xswitch/xswitch/internal/netns"
	"github.com/xswitch/xswitch/internal/testenv"
)

// genTestOptions are Options for measuring in a test, with names unique to
// it.
func genTestOptions(t *testing.T, mtu int) Options {
	tag := testenv.UniqueName(t)[2:8]
	return Options{Duration: 2 * time.Second, MTU: mtu, Progress: testWriter{t}, Tag: func() string { return tag }}
}

// TestSocketGeneratorsSendTheWorkload has each socket generator send into
// GenOnly's veth pair and checks, with a packet socket on the receiving
// end, that the frames are the workload's: the bench frame, over the
// flows' source ports without a UDP checksum when there are several.
func TestSocketGeneratorsSendTheWorkload(t *testing.T) {
	testenv.RequireRoot(t)
	for _, gen := range []Generator{GeneratorXSK, GeneratorPacket} {
		for _, tc := range []struct {
			w   Workload
			mtu int
		}{
			{UDPFlows(64, 3), 0},
			{UDP(MaxFrameSize(0)), 0},
			// Longer than a page: the xsk generator's frames are chains.
			{UDPFlows(9014, 2), 9000},
		} {
			t.Run(fmt.Sprintf("%s/%s", gen, tc.w.Name), func(t *testing.T) {
				err := withPath(context.Background(), genOnlyCase(), genTestOptions(t, tc.mtu), func(hosts Hosts) error {
					return checkGenerated(t, hosts, gen, tc.w)
				})
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

func checkGenerated(t *testing.T, hosts Hosts, gen Generator, w Workload) error {
	genMAC, err := peerMAC(hosts.GenNetns)
	if err != nil {
		return err
	}
	rcvMAC, err := peerMAC(hosts.RcvNetns)
	if err != nil {
		return err
	}
	frame, err := BuildFrame(FrameConfig{SrcMAC: genMAC, DstMAC: rcvMAC, SrcIP: genIP, DstIP: rcvIP, Size: w.Size})
	if err != nil {
		return err
	}
	capture, err := openCapture(hosts.RcvNetns)
	if err != nil {
		return err
	}
	defer unix.Close(capture)

	ctx, stop := context.WithCancel(context.Background())
	started := make(chan sender, 1)
	var wg sync.WaitGroup
	var genErr error
	wg.Go(func() { genErr = generate(ctx, gen, hosts.GenNetns, PeerName, frame, w.Flows, started) })
	var got [][]byte
	var sent uint64
	select {
	case s := <-started:
		got = captureBenchFrames(t, capture, 50)
		// The socket generators count a batch once the kernel is done
		// with it.
		for deadline := time.Now().Add(2 * time.Second); sent == 0 && err == nil && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			sent, err = s.sent()
		}
	case <-time.After(10 * time.Second):
		err = errors.New("the generator did not start within 10s")
	}
	stop()
	wg.Wait()
	if err := errors.Join(err, genErr); err != nil {
		return err
	}
	if sent == 0 {
		t.Errorf("the generator counts nothing sent")
	}
	if len(got) == 0 {
		t.Fatalf("no bench frame arrived")
	}
	ports := map[int]bool{}
	for _, f := range got {
		port := int(header.UDP(f[udpOffset:]).SrcPort())
		ports[port] = true
		want := frame
		if w.Flows > 1 {
			want = append([]byte(nil), frame...)
			setFlow(want, flowOf(f))
			if i := flowOf(f); i >= w.Flows {
				t.Errorf("flow %d is not one of the %d", i, w.Flows)
			}
		}
		if !bytes.Equal(f, want) {
			t.Fatalf("a frame of %d bytes arrived that is not the bench frame of %d with its flow's port:\n% x\nwant\n% x", len(f), len(want), f[:min(len(f), 64)], want[:64])
		}
	}
	if w.Flows > 1 && len(ports) < 2 {
		t.Errorf("%d frames arrived, all from source ports %v: want the %d flows in turn", len(got), ports, w.Flows)
	}
	return nil
}

// openCapture opens a packet socket on PeerName in namespace ns that
// receives every frame, with a receive timeout.
func openCapture(ns string) (fd int, err error) {
	err = netns.Do(ns, func() error {
		dev, err := net.InterfaceByName(PeerName)
		if err != nil {
			return err
		}
		proto := int(htons(unix.ETH_P_ALL))
		if fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto); err != nil {
			return fmt.Errorf("open a packet socket: %w", err)
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: dev.Index}); err != nil {
			unix.Close(fd)
			return fmt.Errorf("bind the packet socket to %s: %w", PeerName, err)
		}
		tv := unix.NsecToTimeval(int64(time.Second))
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			unix.Close(fd)
			return err
		}
		return nil
	})
	return fd, err
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// captureBenchFrames reads from capture up to n frames to the bench's UDP
// port, within 5 seconds, and skips the rest (the kernel's own IPv6
// chatter).
func captureBenchFrames(t *testing.T, capture, n int) [][]byte {
	var frames [][]byte
	buf := make([]byte, 1<<16)
	deadline := time.Now().Add(5 * time.Second)
	for len(frames) < n && time.Now().Before(deadline) {
		m, _, err := unix.Recvfrom(capture, buf, 0)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("capture: %v", err)
		}
		f := buf[:m]
		if m > udpChecksumOffset && header.Ethernet(f).Type() == header.EtherTypeIPv4 &&
			header.IPv4(f[header.EthernetLen:]).Protocol() == header.ProtoUDP && header.UDP(f[udpOffset:]).DstPort() == benchDstPort {
			frames = append(frames, append([]byte(nil), f...))
		}
	}
	return frames
}

func TestMeasureFailsWhenTheGeneratorDoes(t *testing.T) {
	testenv.RequireRoot(t)
	_, err := measure(context.Background(), genOnlyCase(), UDP(64), Generator("pktgen"), genTestOptions(t, 0))
	if err == nil || !strings.Contains(err.Error(), `no generator "pktgen"`) {
		t.Errorf("measure with a generator that cannot open: %v, want its error", err)
	}
}
