// Package bench measures what a forwarding path carries from one network
// namespace to another: xswitch itself, the Linux bridge, Open vSwitch and
// the kernel's XDP redirect, which is the machine's limit.
//
// Each case is measured under several workloads (see Workload): UDP frames
// of a given size from a generator that transmits one frame again and again
// with BPF_PROG_RUN in live-frames mode, counted and dropped by an XDP
// program on the receiver's veth; TCP throughput with iperf3; and ping
// latency at idle. Only the path between the two veths differs from case to
// case.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
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
	// MTU is the MTU of both ends of both veth pairs; 0 leaves the
	// kernel's default, 1500.
	MTU int
	// Log takes a line about what Setup chose where it had a choice (OVS's
	// XDP mode) and about what cleanup could not undo.
	Log io.Writer
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
	// it fails. Run gives the PeerName ends their IPv4 addresses after
	// Setup, so Setup need not.
	Setup func(ctx context.Context, hosts Hosts) (cleanup func(), err error)
}

// Options configure Run.
type Options struct {
	Cases     []Case
	Workloads []Workload
	Duration  time.Duration // per case, workload and round; the first second is discarded
	Rounds    int
	MTU       int           // of every case's veths (Hosts.MTU); 0 for the kernel's 1500
	Progress  io.Writer     // one line per case, workload and round
	Tag       func() string // unique short names; four hex digits or so
}

// Result is one case's figures under one workload over all rounds. Rates
// are from once-a-second samples into the receiving namespace; which
// fields are set depends on the workload's kind.
type Result struct {
	Case     string `json:"case"`
	Workload string `json:"workload"`
	MTU      int    `json:"mtu,omitempty"` // Options.MTU
	Skipped  string `json:"skipped,omitempty"`
	// Error is why a round failed; the other rounds' figures stand.
	Error string `json:"error,omitempty"`

	// UDP: frames per second.
	MedianPPS float64 `json:"median_pps,omitempty"`
	MinPPS    float64 `json:"min_pps,omitempty"`
	MaxPPS    float64 `json:"max_pps,omitempty"`
	// UDP and TCP. UDP counts frame bytes, without FCS, preamble and gap;
	// TCP counts what iperf3 reads from the socket.
	MedianGbps float64 `json:"median_gbps,omitempty"`
	MinGbps    float64 `json:"min_gbps,omitempty"`
	MaxGbps    float64 `json:"max_gbps,omitempty"`

	// Ping: round-trip times in microseconds, and requests without reply.
	P50Micros float64 `json:"p50_us,omitempty"`
	P99Micros float64 `json:"p99_us,omitempty"`
	MinMicros float64 `json:"min_us,omitempty"`
	MaxMicros float64 `json:"max_us,omitempty"`
	Lost      int     `json:"lost,omitempty"`

	// UDP: the median share of the generator's CPU spent in softirq
	// (where frames that XDP forwards are forwarded, in the sender's
	// softirq) and of the switch's CPU spent busy, in percent.
	GenSoftirqPct float64 `json:"cpu0_softirq_pct,omitempty"`
	SwitchBusyPct float64 `json:"cpu1_busy_pct,omitempty"`

	// Samples counts seconds for rates and replies for ping.
	Samples int `json:"samples"`
}

// samples is what one measurement yields: per-second rates, or round-trip
// times.
type samples struct {
	rates []rate
	rtts  []time.Duration
	lost  int
}

// rate is one second's worth of traffic into the receiving namespace,
// and (UDP) the share of that second the generator's CPU spent in softirq,
// where a redirect in XDP runs, and the switch's CPU was busy.
type rate struct {
	pps, bytesPerSec float64
	genSoftirq       float64
	switchBusy       float64
}

func (s *samples) add(more samples) {
	s.rates = append(s.rates, more.rates...)
	s.rtts = append(s.rtts, more.rtts...)
	s.lost += more.lost
}

// Run measures every case under every workload for opts.Rounds rounds. The
// rounds of a workload alternate the cases so that drift in the machine
// affects them all alike. Each measurement builds its path afresh in new
// namespaces. A failed measurement is reported in its Result and the rest
// go on; only cancellation stops Run early.
func Run(ctx context.Context, opts Options) ([]Result, error) {
	if opts.Duration < 2*time.Second {
		return nil, fmt.Errorf("duration %v is too short: the first second is discarded, so at least 2s", opts.Duration)
	}
	if opts.Rounds < 1 {
		return nil, fmt.Errorf("rounds must be at least 1, not %d", opts.Rounds)
	}
	if len(opts.Workloads) == 0 {
		return nil, errors.New("no workloads given")
	}
	if opts.MTU != 0 && (opts.MTU < minMTU || opts.MTU > maxMTU) {
		return nil, fmt.Errorf("MTU %d is outside %d..%d", opts.MTU, minMTU, maxMTU)
	}
	for _, w := range opts.Workloads {
		if err := w.validate(); err != nil {
			return nil, err
		}
	}
	for _, c := range opts.Cases {
		if c.Skip != "" {
			fmt.Fprintf(opts.Progress, "%s: %s\n", c.Name, c.Skip)
		}
	}
	var results []Result
	for _, w := range opts.Workloads {
		got := make([]samples, len(opts.Cases))
		failed := make([]error, len(opts.Cases))
		for round := 1; round <= opts.Rounds; round++ {
			for i, c := range opts.Cases {
				if c.Skip != "" {
					continue
				}
				s, err := measure(ctx, c, w, opts)
				if ctx.Err() != nil {
					return nil, fmt.Errorf("case %s, workload %s, round %d: %w", c.Name, w.Name, round, ctx.Err())
				}
				prefix := fmt.Sprintf("%-8s round %d/%d %-14s", w.Name, round, opts.Rounds, c.Name)
				if err != nil {
					failed[i] = fmt.Errorf("round %d: %w", round, err)
					fmt.Fprintf(opts.Progress, "%s failed: %v\n", prefix, err)
					continue
				}
				got[i].add(s)
				fmt.Fprintf(opts.Progress, "%s %s\n", prefix, summarize(c.Name, w, s).brief(w))
			}
		}
		for i, c := range opts.Cases {
			r := Result{Case: c.Name, Workload: w.Name, Skipped: c.Skip}
			if c.Skip == "" {
				r = summarize(c.Name, w, got[i])
			}
			r.MTU = opts.MTU
			if failed[i] != nil {
				r.Error = failed[i].Error()
			}
			results = append(results, r)
		}
	}
	return results, nil
}

func summarize(name string, w Workload, s samples) Result {
	r := Result{Case: name, Workload: w.Name}
	switch w.Kind {
	case KindUDP, KindTCP:
		r.Samples = len(s.rates)
		if len(s.rates) == 0 {
			return r
		}
		pps := make([]float64, len(s.rates))
		gbps := make([]float64, len(s.rates))
		for i, v := range s.rates {
			pps[i], gbps[i] = v.pps, v.bytesPerSec*8/1e9
		}
		if w.Kind == KindUDP {
			r.MedianPPS, r.MinPPS, r.MaxPPS = median(pps), slices.Min(pps), slices.Max(pps)
			soft, busy := make([]float64, len(s.rates)), make([]float64, len(s.rates))
			for i, v := range s.rates {
				soft[i], busy[i] = 100*v.genSoftirq, 100*v.switchBusy
			}
			r.GenSoftirqPct, r.SwitchBusyPct = median(soft), median(busy)
		}
		r.MedianGbps, r.MinGbps, r.MaxGbps = median(gbps), slices.Min(gbps), slices.Max(gbps)
	case KindPing:
		r.Samples, r.Lost = len(s.rtts), s.lost
		if len(s.rtts) == 0 {
			return r
		}
		us := make([]float64, len(s.rtts))
		for i, d := range s.rtts {
			us[i] = float64(d) / float64(time.Microsecond)
		}
		slices.Sort(us)
		r.P50Micros, r.P99Micros = percentile(us, 50), percentile(us, 99)
		r.MinMicros, r.MaxMicros = us[0], us[len(us)-1]
	}
	return r
}

// brief is r in a progress line.
func (r Result) brief(w Workload) string {
	switch w.Kind {
	case KindUDP:
		return fmt.Sprintf("%7.3f Mpps (%.3f-%.3f) %6.2f Gbit/s", r.MedianPPS/1e6, r.MinPPS/1e6, r.MaxPPS/1e6, r.MedianGbps)
	case KindTCP:
		return fmt.Sprintf("%6.2f Gbit/s (%.2f-%.2f)", r.MedianGbps, r.MinGbps, r.MaxGbps)
	default:
		return fmt.Sprintf("p50 %.0f µs, p99 %.0f µs (%.0f-%.0f), %d replies, %d lost", r.P50Micros, r.P99Micros, r.MinMicros, r.MaxMicros, r.Samples, r.Lost)
	}
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

// percentile is the nearest-rank p-th percentile of sorted, which must not
// be empty: the smallest value that at least p percent of them do not
// exceed.
func percentile(sorted []float64, p float64) float64 {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[max(rank, 1)-1]
}

// Addresses of the generator's and the receiver's ends, which TCP and ping
// use and which make the UDP frame a well-formed datagram.
var (
	genIP = net.IPv4(10, 253, 0, 1)
	rcvIP = net.IPv4(10, 253, 0, 2)
)

const hostPrefixLen = 24

// The kernel's bounds for an Ethernet MTU (ETH_MIN_MTU, ETH_MAX_MTU).
const (
	minMTU = 68
	maxMTU = 65535
)

// measure builds c's path in fresh namespaces, runs w over it for
// opts.Duration and returns what it saw after the first second, and
// removes everything again.
func measure(ctx context.Context, c Case, w Workload, opts Options) (s samples, err error) {
	tag := opts.Tag()
	hosts := Hosts{
		GenNetns: "xsbench-" + tag + "-gen", RcvNetns: "xsbench-" + tag + "-rcv",
		GenPort: "xsb" + tag + "g", RcvPort: "xsb" + tag + "r",
		MTU: opts.MTU, Log: opts.Progress,
	}
	var undo []func() error
	defer func() {
		for i := len(undo) - 1; i >= 0; i-- {
			err = errors.Join(err, undo[i]())
		}
	}()
	for _, ns := range []string{hosts.GenNetns, hosts.RcvNetns} {
		if err := netns.Create(ns); err != nil {
			return samples{}, err
		}
		undo = append(undo, func() error { return netns.Delete(ns) })
	}
	cleanup, err := c.Setup(ctx, hosts)
	if err != nil {
		return samples{}, err
	}
	undo = append(undo, func() error { cleanup(); return nil })
	for _, h := range []struct {
		ns string
		ip net.IP
	}{{hosts.GenNetns, genIP}, {hosts.RcvNetns, rcvIP}} {
		if err := addAddress(h.ns, h.ip); err != nil {
			return samples{}, err
		}
	}
	switch w.Kind {
	case KindUDP:
		return measureUDP(ctx, hosts, w, opts.Duration)
	case KindTCP:
		return measureTCP(ctx, hosts, opts.Duration)
	default:
		return measurePing(ctx, hosts, opts.Duration)
	}
}

// addAddress gives the PeerName end in namespace ns the address ip.
func addAddress(ns string, ip net.IP) error {
	return netns.Do(ns, func() error {
		l, err := netlink.LinkByName(PeerName)
		if err != nil {
			return fmt.Errorf("interface %q in namespace %q: %w", PeerName, ns, err)
		}
		addr := &netlink.Addr{IPNet: &net.IPNet{IP: ip, Mask: net.CIDRMask(hostPrefixLen, 32)}}
		if err := netlink.AddrAdd(l, addr); err != nil {
			return fmt.Errorf("add address %s to %q in namespace %q: %w", addr.IPNet, PeerName, ns, err)
		}
		return nil
	})
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
