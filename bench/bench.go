// Package bench measures what a forwarding path carries from one network
// namespace to another: xswitch itself, the Linux bridge, Open vSwitch and
// the kernel's XDP redirect, which is the machine's limit.
//
// Each case is measured under several workloads (see Workload): UDP frames
// of a given size from a generator (see Generator) that transmits one
// frame again and again, counted and dropped by an XDP program on the
// receiver's veth, with what the generator sent and the CPU time the path
// cost per frame; TCP throughput with iperf3; and ping latency at idle.
// The addport and portsN workloads time instead how soon a switch that
// follows an OVSDB server, as ovs-vswitchd does, makes what ovs-vsctl
// adds forward (ovsdbports.go). Only the path between the two veths differs from case to case. The
// package starts every switch it measures as its own process, as a user
// would, and cleans up every namespace and link it made; it reaches into
// none of them.
package bench

import (
	"cmp"
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
	// Process, for a case whose switch runs as a process of its own,
	// describes the switch of the path Setup built last, while that
	// path is up: the conns workload measures its memory. Without it
	// the case is skipped under conns.
	Process func() SwitchProcess
	// Switchd, for a case whose switch can be the switch daemon of an
	// OVSDB server, as ovs-vswitchd is, starts that daemon on db (in
	// db.Netns, all of it on SwitchCPU) and returns what stops it: the
	// addport and ports workloads configure it with ovs-vsctl. Without it
	// the case is skipped under those.
	Switchd func(ctx context.Context, db OVSDBServer, log io.Writer) (stop func(), err error)
}

// skipUnder says why c does not run under w, or nothing.
func (c Case) skipUnder(w Workload) string {
	switch {
	case c.Skip != "":
		return c.Skip
	case w.Kind == KindConns && c.Process == nil:
		return "no switch process whose memory to measure: skipped under " + w.Name
	case (w.Kind == KindAddPort || w.Kind == KindPorts) && c.Switchd == nil:
		return "no switch daemon that follows an OVSDB server: skipped under " + w.Name
	}
	return ""
}

// Options configure Run.
type Options struct {
	Cases     []Case
	Workloads []Workload
	Duration  time.Duration // per case, workload and round; the first second is discarded
	Rounds    int
	MTU       int           // of every case's veths (Hosts.MTU); 0 for the kernel's 1500
	Generator Generator     // of the UDP workloads; "" is GeneratorAuto
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
	// TCP setup (tcpcrr): connections that failed.
	P50Micros float64 `json:"p50_us,omitempty"`
	P99Micros float64 `json:"p99_us,omitempty"`
	MinMicros float64 `json:"min_us,omitempty"`
	MaxMicros float64 `json:"max_us,omitempty"`
	Lost      int     `json:"lost,omitempty"`

	// TCP setup (tcpcrr): connections completed per second.
	MedianCPS float64 `json:"median_cps,omitempty"`
	MinCPS    float64 `json:"min_cps,omitempty"`
	MaxCPS    float64 `json:"max_cps,omitempty"`

	// UDP: the generator that sent the frames, the median of what it
	// sent per second, and the share of all it sent that the receiver
	// counted. GeneratorBound says the case carried at least
	// GeneratorBoundShare of it: the path might have carried more, had
	// the generator sent more.
	Generator      Generator `json:"generator,omitempty"`
	MedianSentPPS  float64   `json:"median_sent_pps,omitempty"`
	CarriedShare   float64   `json:"carried_share,omitempty"`
	GeneratorBound bool      `json:"generator_bound,omitempty"`
	// UDP: the median over the seconds of the CPU time the path cost per
	// frame delivered, in ns (see pathCost). For GenOnly, the generator's
	// own cost per frame sent, which the other cases' have subtracted.
	CPUNsPerFrame float64 `json:"cpu_ns_per_frame,omitempty"`

	// UDP: the median share of the generator's CPU spent in softirq
	// (where frames that XDP forwards are forwarded, in the sender's
	// softirq) and (UDP and tcpcrr) of the switch's CPU spent busy, in
	// percent.
	GenSoftirqPct float64 `json:"cpu0_softirq_pct,omitempty"`
	SwitchBusyPct float64 `json:"cpu1_busy_pct,omitempty"`

	// conns: the connections tracked after the round, as the switch
	// counts them if it can say (CountedBySwitch), else as the receiver
	// counts the flows it had a frame of, each of which passed
	// ct(commit) in the switch; the flows the receiver saw; the switch
	// process's resident memory before (after the warm-up's one flow)
	// and after; the difference over the connections made; and how long
	// it took until the receiver had seen every flow. Of the round with
	// the median bytes per connection.
	Connections     int     `json:"connections,omitempty"`
	CountedBySwitch bool    `json:"counted_by_switch,omitempty"`
	FlowsSeen       int     `json:"flows_seen,omitempty"`
	RSSBefore       uint64  `json:"rss_before_bytes,omitempty"`
	RSSAfter        uint64  `json:"rss_after_bytes,omitempty"`
	BytesPerConn    float64 `json:"bytes_per_connection,omitempty"`
	FillSeconds     float64 `json:"fill_seconds,omitempty"`

	// addport: over the ports added, the median time from the start of
	// ovs-vsctl add-port until the first datagram crossed the port, its
	// range, and the median time until ovs-vsctl returned.
	AddPortMillis    float64 `json:"addport_ms,omitempty"`
	MinAddPortMillis float64 `json:"min_addport_ms,omitempty"`
	MaxAddPortMillis float64 `json:"max_addport_ms,omitempty"`
	VsctlMillis      float64 `json:"vsctl_ms,omitempty"`

	// portsN: the ports added in one transaction, and the medians over
	// the rounds of the time until ovs-vsctl returned (the switch had
	// applied it: cur_cfg) and until every port had its OpenFlow port
	// number, with the range of the latter.
	Ports            int     `json:"ports,omitempty"`
	VsctlSeconds     float64 `json:"vsctl_s,omitempty"`
	OFPortSeconds    float64 `json:"ofport_s,omitempty"`
	MinOFPortSeconds float64 `json:"min_ofport_s,omitempty"`
	MaxOFPortSeconds float64 `json:"max_ofport_s,omitempty"`

	// Samples counts seconds for rates, replies for ping, rounds for
	// conns and portsN, and ports added for addport.
	Samples int `json:"samples"`
}

// samples is what one measurement yields: per-second rates, round-trip
// times, or a conns round.
type samples struct {
	rates []rate
	rtts  []time.Duration
	lost  int
	conns []connsRound
	// addport: one per port added; portsN: one per round.
	addPorts []addPortTrial
	ports    []portsRound
}

// rate is one second's worth of traffic into the receiving namespace,
// and (UDP) what the generator sent, the share of that second the
// generator's CPU spent in softirq, where a redirect in XDP runs, and the
// switch's CPU was busy, and the busy time in ns of both CPUs that was
// not other users' (see otherLoad); for tcpcrr, the connections
// completed and the switch's CPU share.
type rate struct {
	pps, bytesPerSec float64
	sentPPS          float64
	genSoftirq       float64
	switchBusy       float64
	busyNs           float64
	conns            float64
}

// GeneratorBoundShare is the share of the frames sent that a case must
// carry to be generator-bound.
const GeneratorBoundShare = 0.97

// pathCost is the CPU time one second of a case cost per frame the
// receiver counted, in ns: the busy time of both CPUs in that second less
// what the generator itself costs for the frames it sent, over the frames
// delivered,
//
//	(busy ns of CPU 0 and CPU 1 - own × frames sent) / frames delivered
//
// where own is the generator's cost per frame sent, measured by the
// GenOnly case (genOnlyCost). What remains is the path between the two
// veths: the switch's XDP programs and threads, and its second veth hop.
// The frames a path drops cost it too. A switch that busy-polls (OVS's
// PMD, xswitch --busy-poll) costs its CPU whole, busy or idle: that is
// reported as measured. Busy time is the CPUs' user, system, irq and
// softirq time, less what other users' processes took (otherLoad): on a
// shared machine their load would count otherwise; their softirq work
// still does.
func pathCost(r rate, own float64) float64 {
	return (r.busyNs - own*r.sentPPS) / r.pps
}

// genOnlyCost is the generator's own cost per frame sent, from the
// seconds of the GenOnly case, where the generator's veth leads straight
// into the receiver's, which drops in XDP, with nothing in between: the
// median of the busy ns of both CPUs per frame sent.
func genOnlyCost(genOnly samples) float64 {
	var perFrame []float64
	for _, r := range genOnly.rates {
		if r.sentPPS > 0 {
			perFrame = append(perFrame, r.busyNs/r.sentPPS)
		}
	}
	if len(perFrame) == 0 {
		return 0
	}
	return median(perFrame)
}

func (s *samples) add(more samples) {
	s.rates = append(s.rates, more.rates...)
	s.rtts = append(s.rtts, more.rtts...)
	s.lost += more.lost
	s.conns = append(s.conns, more.conns...)
	s.addPorts = append(s.addPorts, more.addPorts...)
	s.ports = append(s.ports, more.ports...)
}

// Run measures every case under every workload for opts.Rounds rounds. The
// rounds of a workload alternate the cases so that drift in the machine
// affects them all alike; a UDP workload's rounds start with GenOnly, the
// generator's own cost, which the cases' CPU figures subtract. Under
// conns, the cases without a switch process are skipped. Each
// measurement builds its path afresh in new namespaces. A failed
// measurement is reported in its Result and the rest go on; only
// cancellation stops Run early.
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
	gen, err := ParseGenerator(string(opts.Generator))
	if err != nil {
		return nil, err
	}
	opts.Generator = gen
	for _, w := range opts.Workloads {
		if err := w.validate(opts.MTU); err != nil {
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
		cases, gen := opts.Cases, Generator("")
		var chooseErr error
		if w.Kind == KindUDP {
			cases = append([]Case{genOnlyCase()}, cases...)
		}
		if w.Kind == KindUDP || w.Kind == KindConns {
			gen, chooseErr = chooseGenerator(ctx, w, opts)
			if ctx.Err() != nil {
				return nil, fmt.Errorf("workload %s: %w", w.Name, ctx.Err())
			}
		}
		for _, c := range cases {
			if skip := c.skipUnder(w); skip != c.Skip {
				fmt.Fprintf(opts.Progress, "%s: %s\n", c.Name, skip)
			}
		}
		got := make([]samples, len(cases))
		failed := make([]error, len(cases))
		for round := 1; round <= opts.Rounds && chooseErr == nil; round++ {
			for i, c := range cases {
				if c.skipUnder(w) != "" {
					continue
				}
				s, err := measure(ctx, c, w, gen, opts)
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
				fmt.Fprintf(opts.Progress, "%s %s\n", prefix, summarize(c.Name, w, s, ownCost(w, c, got[0])).brief(w))
			}
		}
		for i, c := range cases {
			r := Result{Case: c.Name, Workload: w.Name, Skipped: c.skipUnder(w)}
			if r.Skipped == "" {
				r = summarize(c.Name, w, got[i], ownCost(w, c, got[0]))
				r.Generator = gen
			}
			r.MTU = opts.MTU
			if chooseErr != nil {
				failed[i] = chooseErr
			}
			if failed[i] != nil {
				r.Error = failed[i].Error()
			}
			results = append(results, r)
		}
	}
	return results, nil
}

// ownCost is the generator's cost per frame that c's CPU figures under w
// subtract, from genOnly's samples: none for GenOnly itself, whose figure
// is that cost, and none but under UDP.
func ownCost(w Workload, c Case, genOnly samples) float64 {
	if w.Kind != KindUDP || c.Name == GenOnly {
		return 0
	}
	return genOnlyCost(genOnly)
}

// summarize sums up a case's samples under w, its CPU figures less own
// per frame sent (see pathCost); GenOnly's CPU figure is own itself (see
// genOnlyCost).
func summarize(name string, w Workload, s samples, own float64) Result {
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
			soft, busy, sent, cost := make([]float64, len(s.rates)), make([]float64, len(s.rates)), make([]float64, len(s.rates)), []float64{}
			var carried, sentAll float64
			for i, v := range s.rates {
				soft[i], busy[i], sent[i] = 100*v.genSoftirq, 100*v.switchBusy, v.sentPPS
				carried, sentAll = carried+v.pps, sentAll+v.sentPPS
				if v.pps > 0 {
					cost = append(cost, pathCost(v, own))
				}
			}
			r.GenSoftirqPct, r.SwitchBusyPct = median(soft), median(busy)
			r.MedianSentPPS = median(sent)
			if sentAll > 0 {
				r.CarriedShare = carried / sentAll
				r.GeneratorBound = r.CarriedShare >= GeneratorBoundShare
			}
			switch {
			case name == GenOnly:
				r.CPUNsPerFrame = genOnlyCost(s)
			case len(cost) > 0:
				r.CPUNsPerFrame = median(cost)
			}
		}
		r.MedianGbps, r.MinGbps, r.MaxGbps = median(gbps), slices.Min(gbps), slices.Max(gbps)
	case KindCRR:
		r.Samples, r.Lost = len(s.rates), s.lost
		if len(s.rates) == 0 {
			return r
		}
		cps, busy := make([]float64, len(s.rates)), make([]float64, len(s.rates))
		for i, v := range s.rates {
			cps[i], busy[i] = v.conns, 100*v.switchBusy
		}
		r.MedianCPS, r.MinCPS, r.MaxCPS = median(cps), slices.Min(cps), slices.Max(cps)
		r.SwitchBusyPct = median(busy)
	case KindConns:
		r.Samples = len(s.conns)
		if len(s.conns) == 0 {
			return r
		}
		rounds := slices.SortedFunc(slices.Values(s.conns), func(a, b connsRound) int { return cmp.Compare(a.bytesPerConn(), b.bytesPerConn()) })
		m := rounds[(len(rounds)-1)/2]
		r.Connections, r.CountedBySwitch, r.FlowsSeen = m.after, m.countedBySwitch, m.seen
		r.RSSBefore, r.RSSAfter, r.BytesPerConn, r.FillSeconds = m.rssBefore, m.rssAfter, m.bytesPerConn(), m.fill.Seconds()
	case KindAddPort:
		r.Samples = len(s.addPorts)
		if len(s.addPorts) == 0 {
			return r
		}
		fwd, vsctl := make([]float64, len(s.addPorts)), make([]float64, len(s.addPorts))
		for i, t := range s.addPorts {
			fwd[i], vsctl[i] = millis(t.forwarding), millis(t.vsctl)
		}
		r.AddPortMillis, r.MinAddPortMillis, r.MaxAddPortMillis = median(fwd), slices.Min(fwd), slices.Max(fwd)
		r.VsctlMillis = median(vsctl)
	case KindPorts:
		r.Samples, r.Ports = len(s.ports), w.Ports
		if len(s.ports) == 0 {
			return r
		}
		vsctl, ofport := make([]float64, len(s.ports)), make([]float64, len(s.ports))
		for i, p := range s.ports {
			vsctl[i], ofport[i] = p.vsctl.Seconds(), p.ofport.Seconds()
		}
		r.VsctlSeconds, r.OFPortSeconds = median(vsctl), median(ofport)
		r.MinOFPortSeconds, r.MaxOFPortSeconds = slices.Min(ofport), slices.Max(ofport)
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
		return fmt.Sprintf("%7.3f Mpps (%.3f-%.3f) %6.2f Gbit/s, %.0f%% of %.3f Mpps sent, %.0f ns/frame",
			r.MedianPPS/1e6, r.MinPPS/1e6, r.MaxPPS/1e6, r.MedianGbps, 100*r.CarriedShare, r.MedianSentPPS/1e6, r.CPUNsPerFrame)
	case KindTCP:
		return fmt.Sprintf("%6.2f Gbit/s (%.2f-%.2f)", r.MedianGbps, r.MinGbps, r.MaxGbps)
	case KindCRR:
		return fmt.Sprintf("%8.0f connections/s (%.0f-%.0f), %d failed, CPU 1 %.0f%% busy", r.MedianCPS, r.MinCPS, r.MaxCPS, r.Lost, r.SwitchBusyPct)
	case KindConns:
		by := "the receiver"
		if r.CountedBySwitch {
			by = "the switch"
		}
		return fmt.Sprintf("%d connections (as %s counts them; the receiver saw %d flows in %.1f s), RSS %.1f -> %.1f MiB: %.0f bytes/connection",
			r.Connections, by, r.FlowsSeen, r.FillSeconds, float64(r.RSSBefore)/(1<<20), float64(r.RSSAfter)/(1<<20), r.BytesPerConn)
	case KindAddPort:
		return fmt.Sprintf("forwarding %.1f ms after ovs-vsctl add-port began (%.1f-%.1f), which returned after %.1f ms; %d ports",
			r.AddPortMillis, r.MinAddPortMillis, r.MaxAddPortMillis, r.VsctlMillis, r.Samples)
	case KindPorts:
		return fmt.Sprintf("%d ports: ovs-vsctl returned after %.2f s, all had an OpenFlow port number after %.2f s (%.2f ms/port)",
			r.Ports, r.VsctlSeconds, r.OFPortSeconds, 1000*r.OFPortSeconds/float64(r.Ports))
	default:
		return fmt.Sprintf("p50 %.0f µs, p99 %.0f µs (%.0f-%.0f), %d replies, %d lost", r.P50Micros, r.P99Micros, r.MinMicros, r.MaxMicros, r.Samples, r.Lost)
	}
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

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
// opts.Duration (UDP: with gen) and returns what it saw after the first
// second, or (conns, with gen) what its switch's memory grew by, and
// removes everything again; under addport and portsN it times the
// configuration of c's switch daemon instead (measureOVSDB).
func measure(ctx context.Context, c Case, w Workload, gen Generator, opts Options) (s samples, err error) {
	if w.Kind == KindAddPort || w.Kind == KindPorts {
		return measureOVSDB(ctx, c, w, opts)
	}
	err = withPath(ctx, c, opts, func(hosts Hosts) (err error) {
		switch w.Kind {
		case KindUDP:
			s, err = measureUDP(ctx, hosts, w, gen, opts.Duration)
		case KindTCP:
			s, err = measureTCP(ctx, hosts, opts.Duration)
		case KindCRR:
			s, err = measureCRR(ctx, hosts, opts.Duration)
		case KindConns:
			s, err = measureConns(ctx, hosts, w, gen, c.Process(), opts.Progress)
		default:
			s, err = measurePing(ctx, hosts, opts.Duration)
		}
		return err
	})
	return s, err
}

// withPath builds c's path in fresh namespaces, with the generator's and
// the receiver's addresses, runs fn on it, and removes everything again.
func withPath(ctx context.Context, c Case, opts Options, fn func(Hosts) error) (err error) {
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
			return err
		}
		undo = append(undo, func() error { return netns.Delete(ns) })
	}
	cleanup, err := c.Setup(ctx, hosts)
	if err != nil {
		return err
	}
	undo = append(undo, func() error { cleanup(); return nil })
	for _, h := range []struct {
		ns string
		ip net.IP
	}{{hosts.GenNetns, genIP}, {hosts.RcvNetns, rcvIP}} {
		if err := addAddress(h.ns, h.ip); err != nil {
			return err
		}
	}
	return fn(hosts)
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

// RatioBound says how far a ratio of two UDP rates holds, given what the
// generator left open.
type RatioBound int

const (
	// RatioExact: neither case carried all the generator sent.
	RatioExact RatioBound = iota
	// RatioAtLeast: the case was generator-bound and might have carried
	// more, the baseline was not.
	RatioAtLeast
	// RatioAtMost: the baseline was generator-bound, the case was not.
	RatioAtMost
	// RatioOpen: both were generator-bound, so the ratio compares what
	// the generator sent through each, not what they could carry: the
	// CPU each cost per frame compares them.
	RatioOpen
)

// RateRatio is case c's UDP rate over baseline base's, and how far it
// holds.
func RateRatio(c, base Result) (float64, RatioBound) {
	ratio := c.MedianPPS / base.MedianPPS
	switch {
	case c.GeneratorBound && base.GeneratorBound:
		return ratio, RatioOpen
	case c.GeneratorBound:
		return ratio, RatioAtLeast
	case base.GeneratorBound:
		return ratio, RatioAtMost
	}
	return ratio, RatioExact
}
