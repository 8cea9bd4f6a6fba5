// Package bench measures how many frames per second a forwarding path
// carries from one network namespace to another: xswitch itself, the Linux
// bridge, and the kernel's XDP redirect, which is the machine's limit.
//
// A generator transmits one UDP frame again and again with BPF_PROG_RUN in
// live-frames mode out of a veth in the generator's namespace; an XDP
// program on the receiver's veth counts and drops what arrives. Only the
// path between the two veths differs from case to case.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/xswitch/xswitch/internal/netns"
)

// Hosts names what a case connects: two namespaces that exist when Setup
// is called, and the switch-side names for the veth pairs into them. Each
// pair's peer must be named PeerName inside its namespace.
type Hosts struct {
	GenNetns, RcvNetns string
	GenPort, RcvPort   string
}

// PeerName is the name of the veth end inside each namespace.
const PeerName = "eth0"

// Case is one forwarding path under test.
type Case struct {
	Name string
	// Skip, when not empty, says why the case cannot run here.
	Skip string
	// Setup builds the path between hosts' namespaces. The returned
	// cleanup removes everything Setup made; Setup itself cleans up when
	// it fails.
	Setup func(ctx context.Context, hosts Hosts) (cleanup func(), err error)
}

// Options configure Run.
type Options struct {
	Cases    []Case
	Duration time.Duration // per case and round; the first second is discarded
	Rounds   int
	Size     int           // of each frame, see BuildFrame
	Progress io.Writer     // one line per case and round
	Tag      func() string // unique short names; four hex digits or so
}

// Result is one case's throughput over all rounds, from the receiver's
// once-a-second samples.
type Result struct {
	Case       string  `json:"case"`
	Skipped    string  `json:"skipped,omitempty"`
	MedianPPS  float64 `json:"median_pps"`
	MinPPS     float64 `json:"min_pps"`
	MaxPPS     float64 `json:"max_pps"`
	MedianGbps float64 `json:"median_gbps"` // of frame bytes, without FCS, preamble and gap
	Samples    int     `json:"samples"`
}

// sample is one second's worth of receiver counts.
type sample struct {
	pps, bps float64
}

// Run measures every case for opts.Rounds rounds, alternating cases within
// a round so that drift in the machine affects them all alike.
func Run(ctx context.Context, opts Options) ([]Result, error) {
	if opts.Duration < 2*time.Second {
		return nil, fmt.Errorf("duration %v is too short: the first second is discarded, so at least 2s", opts.Duration)
	}
	if opts.Rounds < 1 {
		return nil, fmt.Errorf("rounds must be at least 1, not %d", opts.Rounds)
	}
	if opts.Size < MinFrameSize || opts.Size > MaxFrameSize {
		return nil, fmt.Errorf("frame size %d is outside %d..%d", opts.Size, MinFrameSize, MaxFrameSize)
	}
	samples := make([][]sample, len(opts.Cases))
	for round := 1; round <= opts.Rounds; round++ {
		for i, c := range opts.Cases {
			if c.Skip != "" {
				if round == 1 {
					fmt.Fprintf(opts.Progress, "%s: %s\n", c.Name, c.Skip)
				}
				continue
			}
			got, err := measure(ctx, c, opts)
			if err != nil {
				return nil, fmt.Errorf("case %s, round %d: %w", c.Name, round, err)
			}
			samples[i] = append(samples[i], got...)
			r := summarize(c.Name, got)
			fmt.Fprintf(opts.Progress, "round %d/%d %-14s %7.3f Mpps (%.3f-%.3f) %6.2f Gbit/s\n",
				round, opts.Rounds, c.Name, r.MedianPPS/1e6, r.MinPPS/1e6, r.MaxPPS/1e6, r.MedianGbps)
		}
	}
	results := make([]Result, len(opts.Cases))
	for i, c := range opts.Cases {
		if c.Skip != "" {
			results[i] = Result{Case: c.Name, Skipped: c.Skip}
			continue
		}
		results[i] = summarize(c.Name, samples[i])
	}
	return results, nil
}

func summarize(name string, samples []sample) Result {
	r := Result{Case: name, Samples: len(samples)}
	if len(samples) == 0 {
		return r
	}
	pps := make([]float64, len(samples))
	bps := make([]float64, len(samples))
	for i, s := range samples {
		pps[i], bps[i] = s.pps, s.bps
	}
	r.MedianPPS, r.MinPPS, r.MaxPPS = median(pps), slices.Min(pps), slices.Max(pps)
	r.MedianGbps = median(bps) * 8 / 1e9
	return r
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Addresses of the generator and the receiver; nothing routes them, they
// only make the frame a well-formed datagram.
var (
	genIP = net.IPv4(10, 253, 0, 1)
	rcvIP = net.IPv4(10, 253, 0, 2)
)

// measure builds c's path in fresh namespaces, runs the generator for
// opts.Duration and returns the receiver's per-second samples after the
// first, and removes everything again.
func measure(ctx context.Context, c Case, opts Options) (samples []sample, err error) {
	tag := opts.Tag()
	hosts := Hosts{
		GenNetns: "xsbench-" + tag + "-gen", RcvNetns: "xsbench-" + tag + "-rcv",
		GenPort: "xsb" + tag + "g", RcvPort: "xsb" + tag + "r",
	}
	var undo []func() error
	defer func() {
		for i := len(undo) - 1; i >= 0; i-- {
			err = errors.Join(err, undo[i]())
		}
	}()
	for _, ns := range []string{hosts.GenNetns, hosts.RcvNetns} {
		if err := netns.Create(ns); err != nil {
			return nil, err
		}
		undo = append(undo, func() error { return netns.Delete(ns) })
	}
	cleanup, err := c.Setup(ctx, hosts)
	if err != nil {
		return nil, err
	}
	undo = append(undo, func() error { cleanup(); return nil })

	genMAC, err := peerMAC(hosts.GenNetns)
	if err != nil {
		return nil, err
	}
	rcvMAC, err := peerMAC(hosts.RcvNetns)
	if err != nil {
		return nil, err
	}
	frame, err := BuildFrame(FrameConfig{SrcMAC: genMAC, DstMAC: rcvMAC, SrcIP: genIP, DstIP: rcvIP, Size: opts.Size})
	if err != nil {
		return nil, err
	}
	// A learning switch then knows where the receiver is and forwards
	// rather than floods.
	if err := announce(hosts.RcvNetns, rcvMAC, genMAC); err != nil {
		return nil, err
	}
	cnt, err := attachCounter(hosts.RcvNetns, PeerName)
	if err != nil {
		return nil, err
	}
	undo = append(undo, cnt.close)

	genCtx, stopGen := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var genErr error
	wg.Go(func() {
		defer stopGen()
		genErr = generate(genCtx, hosts.GenNetns, PeerName, frame)
	})
	defer func() {
		stopGen()
		wg.Wait()
		err = errors.Join(err, genErr)
	}()

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastPackets, lastBytes, err := cnt.read()
	if err != nil {
		return nil, err
	}
	last := time.Now()
	for second := 0; second < int(opts.Duration/time.Second); second++ {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-genCtx.Done():
			return nil, errors.New("the generator stopped early")
		case now := <-tick.C:
			packets, bytes, err := cnt.read()
			if err != nil {
				return nil, err
			}
			elapsed := now.Sub(last).Seconds()
			if second > 0 { // the first second includes the ramp-up
				samples = append(samples, sample{
					pps: float64(packets-lastPackets) / elapsed,
					bps: float64(bytes-lastBytes) / elapsed,
				})
			}
			lastPackets, lastBytes, last = packets, bytes, now
		}
	}
	return samples, nil
}

// peerMAC returns the MAC address of the veth end inside namespace ns.
func peerMAC(ns string) (mac net.HardwareAddr, err error) {
	err = netns.Do(ns, func() error {
		dev, err := net.InterfaceByName(PeerName)
		if err != nil {
			return fmt.Errorf("interface %q in namespace %q: %w", PeerName, ns, err)
		}
		mac = dev.HardwareAddr
		return nil
	})
	return mac, err
}

// linkUp sets the named link of this namespace up.
func linkUp(name string) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return fmt.Errorf("interface %q: %w", name, err)
	}
	if err := netlink.LinkSetUp(l); err != nil {
		return fmt.Errorf("set %q up: %w", name, err)
	}
	return nil
}
