package bench

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	benchbpf "github.com/xswitch/xswitch/bench/bpf"
	"github.com/xswitch/xswitch/internal/netns"
	"github.com/xswitch/xswitch/port/afxdp"
)

// Generator is how the UDP workloads' frames are sent out of the
// generator's veth.
type Generator string

const (
	// GeneratorAuto is GeneratorLive where the kernel allows live frames,
	// else the faster of the socket generators (fallbackGenerator).
	GeneratorAuto Generator = "auto"
	// GeneratorLive runs an XDP program with BPF_PROG_RUN in live-frames
	// mode, whose XDP_TX hands each frame to the veth's XDP transmit
	// without an skb: far faster than any switch here. Some kernels
	// refuse it (EPERM).
	GeneratorLive Generator = "live"
	// GeneratorXSK transmits from an AF_XDP socket in copy mode, TX only
	// (afxdp.Repeater): the kernel builds an skb per frame.
	GeneratorXSK Generator = "xsk"
	// GeneratorPacket transmits from an AF_PACKET socket's TPACKET_V2 tx
	// ring past the qdisc (PACKET_QDISC_BYPASS): an skb per frame too.
	GeneratorPacket Generator = "packet"
)

// fallbackGenerator is what GeneratorAuto takes where the kernel refuses
// live frames: the faster of the socket generators on the development
// machine, into GenOnly alone 0.83 Mpps of 64-byte frames and 0.85 of
// 1514-byte ones from GeneratorXSK, 0.56 and 0.47 from GeneratorPacket. A
// fixed choice, so that runs compare.
const fallbackGenerator = GeneratorXSK

// ParseGenerator reads a generator's name; "" is GeneratorAuto.
func ParseGenerator(s string) (Generator, error) {
	switch g := Generator(s); g {
	case "":
		return GeneratorAuto, nil
	case GeneratorAuto, GeneratorLive, GeneratorXSK, GeneratorPacket:
		return g, nil
	}
	return "", fmt.Errorf("unknown generator %q: want live, xsk, packet or auto", s)
}

// generatorCPU is where the generator's thread runs, so that it competes
// with the path under test for one CPU the same way in every case.
const generatorCPU = 0

// SwitchCPU is where a switch that has forwarding threads of its own
// (xswitch's forwarder, OVS's PMD) runs them: away from the generator.
const SwitchCPU = 1

// sender is a generator open on its interface.
type sender interface {
	// run sends until ctx is done.
	run(ctx context.Context) error
	// sent counts the frames sent so far; any goroutine may call it, until
	// close.
	sent() (uint64, error)
	close() error
}

// generate sends frame out of iface inside namespace ns with kind's
// generator as fast as it can, spread over flows UDP flows (see setFlow),
// from a thread pinned to generatorCPU, until ctx is done. Once it sends,
// it hands the sender to started, whose sent the caller may read until
// generate returns.
func generate(ctx context.Context, kind Generator, ns, iface string, frame []byte, flows int, started chan<- sender) error {
	return onGeneratorCPU(ns, func() error {
		s, err := openSender(kind, iface, frame, flows)
		if err != nil {
			return err
		}
		defer s.close()
		started <- s
		return s.run(ctx)
	})
}

// onGeneratorCPU runs fn on a thread of its own inside namespace ns,
// pinned to generatorCPU: whatever fn's system calls cost the kernel is
// the traffic's side of the measurement, away from the switch's CPU.
func onGeneratorCPU(ns string, fn func() error) error {
	return netns.Do(ns, func() error {
		var affinity unix.CPUSet
		if err := unix.SchedGetaffinity(0, &affinity); err != nil {
			return fmt.Errorf("read the thread's CPU affinity: %w", err)
		}
		var pinned unix.CPUSet
		pinned.Set(generatorCPU)
		if err := unix.SchedSetaffinity(0, &pinned); err != nil {
			return fmt.Errorf("pin the thread to CPU %d: %w", generatorCPU, err)
		}
		// The thread goes back to the runtime's pool afterwards.
		defer unix.SchedSetaffinity(0, &affinity)
		return fn()
	})
}

// openSender opens kind's generator on iface of the calling thread's
// namespace.
func openSender(kind Generator, iface string, frame []byte, flows int) (sender, error) {
	switch kind {
	case GeneratorLive:
		return openLive(iface, frame, flows)
	case GeneratorXSK:
		r, err := afxdp.OpenRepeater(afxdp.RepeaterConfig{Interface: iface, Frame: flowTemplate(frame, flows)})
		if err != nil {
			return nil, err
		}
		return &xskSender{r: r, edit: flowEditor(flows)}, nil
	case GeneratorPacket:
		p, err := openPacketRing(iface, flowTemplate(frame, flows))
		if err != nil {
			return nil, err
		}
		return &packetSender{p: p, edit: flowEditor(flows)}, nil
	}
	return nil, fmt.Errorf("no generator %q", kind)
}

// flowTemplate is frame as the socket generators write it into their
// buffers: for many flows without its UDP checksum, as setFlow leaves it.
func flowTemplate(frame []byte, flows int) []byte {
	if flows <= 1 {
		return frame
	}
	f := append([]byte(nil), frame...)
	setFlow(f, 0)
	return f
}

// flowEditor returns the edit that makes each frame one of the next of
// flows flows in turn (setFlow), as xdp_gen does, or nil for one flow.
func flowEditor(flows int) func([]byte) {
	if flows <= 1 {
		return nil
	}
	next := 0
	return func(frame []byte) {
		setFlow(frame, next)
		if next++; next == flows {
			next = 0
		}
	}
}

type xskSender struct {
	r    *afxdp.Repeater
	edit func([]byte)
}

func (x *xskSender) run(ctx context.Context) error {
	for ctx.Err() == nil {
		if err := x.r.Send(x.edit); err != nil {
			return err
		}
	}
	return nil
}

func (x *xskSender) sent() (uint64, error) { return x.r.Sent(), nil }
func (x *xskSender) close() error          { return x.r.Close() }

type packetSender struct {
	p    *packetRing
	edit func([]byte)
}

func (p *packetSender) run(ctx context.Context) error {
	for ctx.Err() == nil {
		if err := p.p.send(p.edit); err != nil {
			return err
		}
	}
	return nil
}

func (p *packetSender) sent() (uint64, error) { return p.p.sent.Load(), nil }
func (p *packetSender) close() error          { return p.p.close() }

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

// liveSender is xdp_gen run with BPF_PROG_RUN in live-frames mode: its
// XDP_TX sends each frame out of the context's ingress device, which the
// kernel looks up in the namespace of the calling thread.
type liveSender struct {
	objs benchbpf.BenchObjects
	opts *ebpf.RunOptions
}

func openLive(iface string, frame []byte, flows int) (_ *liveSender, err error) {
	l := &liveSender{}
	if err := loadBench(&l.objs, flows, 0); err != nil {
		return nil, fmt.Errorf("load the generator program: %w", err)
	}
	defer func() {
		if err != nil {
			l.objs.Close()
		}
	}()
	dev, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, fmt.Errorf("generator interface %q: %w", iface, err)
	}
	l.opts = &ebpf.RunOptions{
		Data:      frame,
		Context:   xdpMD{DataEnd: uint32(len(frame)), IngressIfindex: uint32(dev.Index)},
		Repeat:    1,
		BatchSize: 256,
		Flags:     unix.BPF_F_TEST_XDP_LIVE_FRAMES,
	}
	// One frame first, so that a kernel that refuses live frames says so
	// before anything is measured.
	if _, err := l.objs.XdpGen.Run(l.opts); err != nil {
		return nil, fmt.Errorf("transmit out of %q with BPF_PROG_RUN in live-frames mode: %w", iface, err)
	}
	l.opts.Repeat = firstCallFrames
	return l, nil
}

func (l *liveSender) run(ctx context.Context) error {
	for ctx.Err() == nil {
		start := time.Now()
		if _, err := l.objs.XdpGen.Run(l.opts); err != nil {
			return fmt.Errorf("transmit with BPF_PROG_RUN: %w", err)
		}
		l.opts.Repeat = nextCallFrames(l.opts.Repeat, time.Since(start))
	}
	return nil
}

// sent counts xdp_gen's runs: each transmits a frame, or has the veth
// drop it when the peer's queue is full, as a saturated switch does.
func (l *liveSender) sent() (uint64, error) {
	var perCPU []benchbpf.BenchGenState
	if err := l.objs.GenStates.Lookup(uint32(0), &perCPU); err != nil {
		return 0, fmt.Errorf("read the generator's count: %w", err)
	}
	var n uint64
	for _, st := range perCPU {
		n += st.Sent
	}
	return n, nil
}

func (l *liveSender) close() error { return l.objs.Close() }

// chooseGenerator settles the generator of UDP workload w: opts.Generator,
// or for GeneratorAuto GeneratorLive where the kernel runs it, else
// fallbackGenerator. It says what auto chose, and why, in opts.Progress.
func chooseGenerator(ctx context.Context, w Workload, opts Options) (Generator, error) {
	if opts.Generator != GeneratorAuto {
		return opts.Generator, nil
	}
	err := withPath(ctx, genOnlyCase(), opts, func(hosts Hosts) error {
		frame, err := BuildFrame(FrameConfig{SrcMAC: make(net.HardwareAddr, 6), DstMAC: make(net.HardwareAddr, 6), SrcIP: genIP, DstIP: rcvIP, Size: w.Size})
		if err != nil {
			return err
		}
		return netns.Do(hosts.GenNetns, func() error {
			l, err := openLive(PeerName, frame, w.Flows)
			if err != nil {
				return err
			}
			return l.close()
		})
	})
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if err != nil {
		fmt.Fprintf(opts.Progress, "%-8s generator auto: %s (live frames do not work here: %v)\n", w.Name, fallbackGenerator, err)
		return fallbackGenerator, nil
	}
	fmt.Fprintf(opts.Progress, "%-8s generator auto: %s\n", w.Name, GeneratorLive)
	return GeneratorLive, nil
}
