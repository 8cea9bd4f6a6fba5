package bench

import (
	"bytes"
	"net"
	"runtime"
	"slices"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	benchbpf "github.com/xswitch/xswitch/bench/bpf"
	"github.com/xswitch/xswitch/internal/testenv"
)

// TestXDPProgramsFollowSetFlow runs xdp_gen and xdp_count with plain
// BPF_PROG_RUN: the generator makes its frames as setFlow does, past the
// source ports' range too, and the counter marks each flow it is given
// once, none past its count and no frame of another kind.
func TestXDPProgramsFollowSetFlow(t *testing.T) {
	testenv.RequireRoot(t)
	frame, err := BuildFrame(FrameConfig{
		SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2},
		SrcIP: genIP, DstIP: rcvIP, Size: 64,
	})
	if err != nil {
		t.Fatal(err)
	}
	template := flowTemplate(frame, 2)
	flow := func(i int) []byte {
		f := slices.Clone(template)
		setFlow(f, i)
		return f
	}

	var gen benchbpf.BenchObjects
	if err := loadBench(&gen, 2*MaxFlows, 0); err != nil {
		t.Fatal(err)
	}
	defer gen.Close()
	// xdp_gen's next flow is per CPU: every run on one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var affinity, one unix.CPUSet
	if err := unix.SchedGetaffinity(0, &affinity); err != nil {
		t.Fatal(err)
	}
	one.Set(testenv.AllowedCPUs(t)[0])
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		t.Fatal(err)
	}
	defer unix.SchedSetaffinity(0, &affinity)
	// The runs of one call write into one buffer: what is left is the
	// last flow's. Each call starts from the first flow.
	const xdpTX = 3 // the kernel's XDP_TX
	for _, runs := range []int{1, 2, MaxFlows + 6} {
		out := make([]byte, len(template))
		ret, err := gen.XdpGen.Run(&ebpf.RunOptions{Data: template, DataOut: out, Repeat: uint32(runs)})
		if err != nil {
			t.Fatal(err)
		}
		if want := flow(runs - 1); ret != xdpTX || !bytes.Equal(out, want) {
			t.Errorf("xdp_gen's frame after %d runs (%d):\n% x\nwant flow %d's, as setFlow makes it:\n% x", runs, ret, out, runs-1, want)
		}
		if err := gen.GenStates.Put(uint32(0), make([]benchbpf.BenchGenState, mustPossibleCPUs(t))); err != nil {
			t.Fatal(err)
		}
	}

	c, err := loadCounter(100)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	notIP := flow(7)
	notIP[12], notIP[13] = 0x08, 0x06
	for _, f := range [][]byte{flow(0), flow(63), flow(64), flow(99), flow(100), flow(5), flow(5), flow(2 * MaxFlows), notIP} {
		if _, err := c.objs.XdpCount.Run(&ebpf.RunOptions{Data: f}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := c.flowsSeen(); err != nil || n != 5 {
		t.Errorf("the counter saw %d flows (%v), want 5: 0, 5, 63, 64 and 99", n, err)
	}
}

func mustPossibleCPUs(t *testing.T) int {
	t.Helper()
	n, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	return n
}
