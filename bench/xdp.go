package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	benchbpf "github.com/xswitch/xswitch/bench/bpf"
	"github.com/xswitch/xswitch/internal/netns"
)

// xdpMD is the kernel's struct xdp_md, the context BPF_PROG_RUN gives an
// XDP program.
type xdpMD struct {
	Data, DataEnd, DataMeta uint32
	IngressIfindex          uint32
	RxQueueIndex            uint32
	EgressIfindex           uint32
}

// How many frames BPF_PROG_RUN transmits per call. Each call sets up and
// tears down a page pool, waiting for an RCU grace period (tens of
// milliseconds in a VM), during which nothing is sent: with 65,536 frames
// a call that wait dominated, and every switch measured a fraction of its
// rate (xswitch 0.22 Mpps, the Linux bridge 1.1). A fixed 4 Mi frames
// still left a path that lets the generator run at 15 Mpps (dropping most
// frames at its input, as a saturated xswitch or OVS does) silent 10% of
// the time, against 1.5% for the Linux bridge, which slows the generator
// down to its own rate. So each call is sized to last callDuration at the
// rate the previous call reached: the wait costs every case alike, and a
// cancelled run stops within about that long.
const (
	firstCallFrames = 1 << 20
	minCallFrames   = 1 << 16
	maxCallFrames   = 1 << 27
	callDuration    = 2 * time.Second
)

// nextCallFrames sizes the next call to last callDuration at the rate at
// which the last one sent frames frames in elapsed.
func nextCallFrames(frames uint32, elapsed time.Duration) uint32 {
	if elapsed <= 0 {
		return maxCallFrames
	}
	next := float64(frames) * callDuration.Seconds() / elapsed.Seconds()
	return uint32(min(max(next, minCallFrames), maxCallFrames))
}

// generatorCPU is where the generator's thread runs, so that it competes
// with the path under test for one CPU the same way in every case.
const generatorCPU = 0

// SwitchCPU is where a switch that has forwarding threads of its own
// (xswitch's forwarder, OVS's PMD) runs them: away from the generator.
const SwitchCPU = 1

// generate transmits frame out of iface inside namespace ns as fast as the
// kernel can, until ctx is done, spread over flows UDP flows (xdp_gen). In live-frames mode the program's XDP_TX
// sends each frame out of the context's ingress device, which the kernel
// looks up in the namespace of the calling thread.
func generate(ctx context.Context, ns, iface string, frame []byte, flows int) error {
	spec, err := benchbpf.LoadBench()
	if err != nil {
		return fmt.Errorf("load the generator program: %w", err)
	}
	if err := spec.Variables[benchbpf.BenchVarGenFlows].Set(uint32(max(flows, 1))); err != nil {
		return err
	}
	if err := spec.Variables[benchbpf.BenchVarGenFirstPort].Set(uint16(FirstFlowPort)); err != nil {
		return err
	}
	var objs benchbpf.BenchObjects
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		return fmt.Errorf("load the generator program: %w", err)
	}
	defer objs.Close()
	prog := objs.XdpGen
	return netns.Do(ns, func() error {
		var affinity unix.CPUSet
		if err := unix.SchedGetaffinity(0, &affinity); err != nil {
			return fmt.Errorf("read the generator thread's CPU affinity: %w", err)
		}
		var pinned unix.CPUSet
		pinned.Set(generatorCPU)
		if err := unix.SchedSetaffinity(0, &pinned); err != nil {
			return fmt.Errorf("pin the generator to CPU %d: %w", generatorCPU, err)
		}
		// The thread goes back to the runtime's pool afterwards.
		defer unix.SchedSetaffinity(0, &affinity)

		dev, err := net.InterfaceByName(iface)
		if err != nil {
			return fmt.Errorf("generator interface %q in namespace %q: %w", iface, ns, err)
		}
		md := xdpMD{DataEnd: uint32(len(frame)), IngressIfindex: uint32(dev.Index)}
		opts := &ebpf.RunOptions{
			Data:      frame,
			Context:   md,
			Repeat:    firstCallFrames,
			BatchSize: 256,
			Flags:     unix.BPF_F_TEST_XDP_LIVE_FRAMES,
		}
		for ctx.Err() == nil {
			start := time.Now()
			if _, err := prog.Run(opts); err != nil {
				return fmt.Errorf("transmit out of %q in namespace %q with BPF_PROG_RUN: %w", iface, ns, err)
			}
			opts.Repeat = nextCallFrames(opts.Repeat, time.Since(start))
		}
		return nil
	})
}

// counter counts the frames arriving on one interface and drops them.
type counter struct {
	objs benchbpf.BenchObjects
	link link.Link
}

// attachCounter puts xdp_count on iface inside namespace ns.
func attachCounter(ns, iface string) (*counter, error) {
	c := &counter{}
	if err := benchbpf.LoadBenchObjects(&c.objs, nil); err != nil {
		return nil, fmt.Errorf("load the counter program: %w", err)
	}
	err := netns.Do(ns, func() (err error) {
		c.link, err = attachXDP(iface, c.objs.XdpCount)
		return err
	})
	if err != nil {
		c.objs.Close()
		return nil, fmt.Errorf("namespace %q: %w", ns, err)
	}
	return c, nil
}

// read sums the per-CPU counters.
func (c *counter) read() (packets, bytes uint64, err error) {
	var perCPU []benchbpf.BenchCounters
	if err := c.objs.RxCounters.Lookup(uint32(0), &perCPU); err != nil {
		return 0, 0, fmt.Errorf("read the receiver's counters: %w", err)
	}
	for _, v := range perCPU {
		packets += v.Packets
		bytes += v.Bytes
	}
	return packets, bytes, nil
}

func (c *counter) close() error {
	return errors.Join(c.link.Close(), c.objs.Close())
}

// redirector is xdp_redirect_to attached to one interface.
type redirector struct {
	prog *ebpf.Program
	link link.Link
}

// attachRedirect makes every frame arriving on from leave through to, by
// XDP_REDIRECT in the kernel. Both are interfaces of this namespace.
func attachRedirect(from, to string) (*redirector, error) {
	dst, err := net.InterfaceByName(to)
	if err != nil {
		return nil, fmt.Errorf("redirect target %q: %w", to, err)
	}
	spec, err := benchbpf.LoadBench()
	if err != nil {
		return nil, fmt.Errorf("load the redirect program: %w", err)
	}
	if err := spec.Variables[benchbpf.BenchVarRedirectIfindex].Set(uint32(dst.Index)); err != nil {
		return nil, fmt.Errorf("set the redirect target: %w", err)
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		return nil, fmt.Errorf("load the redirect program: %w", err)
	}
	// Only the program stays; the collection's other objects go.
	r := &redirector{prog: coll.DetachProgram(benchbpf.BenchProgXdpRedirectTo)}
	coll.Close()
	if r.link, err = attachXDP(from, r.prog); err != nil {
		r.prog.Close()
		return nil, err
	}
	return r, nil
}

func (r *redirector) close() error {
	return errors.Join(r.link.Close(), r.prog.Close())
}

// attachXDP attaches prog to iface of the calling thread's namespace in
// native mode: veth runs XDP in its driver, and only there do frames that
// other XDP programs redirect arrive.
func attachXDP(iface string, prog *ebpf.Program) (link.Link, error) {
	dev, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, fmt.Errorf("interface %q: %w", iface, err)
	}
	l, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: dev.Index, Flags: link.XDPDriverMode})
	if err != nil {
		return nil, fmt.Errorf("attach XDP program %s to %q: %w", prog, iface, err)
	}
	return l, nil
}
