package bench

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/xswitch/xswitch/internal/netns"
	"github.com/xswitch/xswitch/internal/testenv"
)

func TestSummarizeRates(t *testing.T) {
	s := samples{rates: []rate{{pps: 3, bytesPerSec: 300, genSoftirq: 0.5}, {pps: 1, bytesPerSec: 100, genSoftirq: 0.1}, {pps: 2, bytesPerSec: 200, genSoftirq: 0.3}, {pps: 10, bytesPerSec: 1000, genSoftirq: 0.9}}}
	r := summarize("x", UDP(64), s, 0)
	if r.Case != "x" || r.Workload != "udp64" {
		t.Errorf("summarize names %q/%q, want x/udp64", r.Case, r.Workload)
	}
	if r.MedianPPS != 2.5 || r.MinPPS != 1 || r.MaxPPS != 10 || r.Samples != 4 {
		t.Errorf("summarize = %+v, want median 2.5, min 1, max 10, 4 samples", r)
	}
	if r.GenSoftirqPct != 40 {
		t.Errorf("cpu0 softirq median %v%%, want 40%%", r.GenSoftirqPct)
	}
	if r.MedianGbps != 250*8/1e9 || r.MinGbps != 100*8/1e9 || r.MaxGbps != 1000*8/1e9 {
		t.Errorf("Gbit/s median %v min %v max %v, want %v %v %v", r.MedianGbps, r.MinGbps, r.MaxGbps, 250*8/1e9, 100*8/1e9, 1000*8/1e9)
	}
	tcp := summarize("x", TCP(), samples{rates: []rate{{bytesPerSec: 1e9}, {bytesPerSec: 2e9}, {bytesPerSec: 3e9}}}, 0)
	if tcp.MedianGbps != 16 || tcp.MinGbps != 8 || tcp.MaxGbps != 24 || tcp.MedianPPS != 0 {
		t.Errorf("summarize TCP = %+v, want 16 Gbit/s (8-24) and no frame rate", tcp)
	}
	if r := summarize("empty", UDP(64), samples{}, 0); r.Samples != 0 || r.MedianPPS != 0 {
		t.Errorf("summarize(nothing) = %+v", r)
	}
}

func TestSummarizePing(t *testing.T) {
	var s samples
	for i := 100; i >= 1; i-- { // 1..100 µs, out of order
		s.rtts = append(s.rtts, time.Duration(i)*time.Microsecond)
	}
	s.lost = 3
	r := summarize("x", Ping(), s, 0)
	if r.P50Micros != 50 || r.P99Micros != 99 || r.MinMicros != 1 || r.MaxMicros != 100 || r.Lost != 3 || r.Samples != 100 {
		t.Errorf("summarize ping = %+v, want p50 50, p99 99, 1-100, 3 lost, 100 samples", r)
	}
	if r.MedianGbps != 0 {
		t.Errorf("ping has a rate: %+v", r)
	}
}

func TestSummarizeCRR(t *testing.T) {
	s := samples{rates: []rate{{conns: 900, switchBusy: 0.2}, {conns: 1100, switchBusy: 0.4}, {conns: 1000, switchBusy: 0.3}}, lost: 2}
	r := summarize("x", TCPCRR(), s, 0)
	if r.MedianCPS != 1000 || r.MinCPS != 900 || r.MaxCPS != 1100 || r.Lost != 2 || r.Samples != 3 || r.SwitchBusyPct != 30 {
		t.Errorf("summarize tcpcrr = %+v, want 1000 connections/s (900-1100), 2 failed, 3 samples, CPU 1 30%% busy", r)
	}
	if r.MedianGbps != 0 || r.MedianPPS != 0 {
		t.Errorf("tcpcrr has a frame or bit rate: %+v", r)
	}
}

func TestSummarizeConns(t *testing.T) {
	rounds := []connsRound{
		{before: 1, after: 1001, seen: 1000, rssBefore: 1 << 20, rssAfter: 1<<20 + 500e3, fill: time.Second},     // 500 bytes each
		{before: 1, after: 1001, seen: 1000, rssBefore: 1 << 20, rssAfter: 1<<20 + 300e3, fill: 2 * time.Second}, // 300
		{before: 1, after: 901, seen: 900, rssBefore: 2 << 20, rssAfter: 2<<20 + 360e3, fill: 3 * time.Second},   // 400
	}
	r := summarize("x", Conns(1000), samples{conns: rounds}, 0)
	if r.BytesPerConn != 400 || r.Connections != 901 || r.FlowsSeen != 900 || r.RSSBefore != 2<<20 || r.FillSeconds != 3 || r.Samples != 3 {
		t.Errorf("summarize conns = %+v, want the median round's: 400 bytes a connection, 901 connections, 900 flows seen, 2 MiB before, 3 s", r)
	}
	if got := (connsRound{before: 5, after: 5, rssAfter: 1e6}).bytesPerConn(); got != 0 {
		t.Errorf("a round that made no connection costs %v bytes each, want 0", got)
	}
	// Memory may shrink: the figure says so rather than wrap.
	if got := (connsRound{before: 0, after: 10, rssBefore: 2000, rssAfter: 1000}).bytesPerConn(); got != -100 {
		t.Errorf("a round whose memory shrank by 1000 bytes over 10 connections: %v bytes each, want -100", got)
	}
}

func TestResidentBytes(t *testing.T) {
	rss, err := residentBytes(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if rss < 1<<20 || rss > 1<<40 {
		t.Errorf("the test's resident memory is %d bytes", rss)
	}
	if _, err := residentBytes(1 << 30); err == nil {
		t.Error("residentBytes of a process that cannot exist: no error")
	}
}

// TestMeasureConns runs a conns round over a veth pair between two
// namespaces, the test itself standing in for the switch process: the
// receiver sees every flow, the one of the warm-up before.
func TestMeasureConns(t *testing.T) {
	testenv.RequireRoot(t)
	opts := Options{Tag: func() string { return testenv.UniqueName(t)[2:8] }, Progress: io.Discard}
	w := Conns(5000)
	var s samples
	err := withPath(context.Background(), genOnlyCase(), opts, func(hosts Hosts) (err error) {
		s, err = measureConns(context.Background(), hosts, w, GeneratorXSK, SwitchProcess{PID: os.Getpid()}, io.Discard)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.conns) != 1 {
		t.Fatalf("a conns round returned %+v", s)
	}
	r := s.conns[0]
	if r.before != 1 || r.after != w.Flows || r.seen != w.Flows || r.countedBySwitch || r.rssBefore == 0 || r.rssAfter == 0 {
		t.Errorf("conns round %+v: want 1 flow seen before, all %d after, counted by the receiver, and both memories", r, w.Flows)
	}
}

// TestMeasureCRR runs the tcpcrr client and server over a veth pair
// between two namespaces: connections complete, none fail, and the
// workers stop when the time is up.
func TestMeasureCRR(t *testing.T) {
	testenv.RequireRoot(t)
	opts := Options{Tag: func() string { return testenv.UniqueName(t)[2:8] }, Progress: io.Discard}
	var s samples
	err := withPath(context.Background(), genOnlyCase(), opts, func(hosts Hosts) (err error) {
		s, err = measureCRR(context.Background(), hosts, 3*time.Second)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.rates) != 2 || s.lost != 0 {
		t.Fatalf("tcpcrr over a veth: %+v, want 2 seconds and no failure", s)
	}
	for i, r := range s.rates {
		if r.conns < 100 {
			t.Errorf("second %d: %.0f connections/s: too few for a veth", i, r.conns)
		}
	}
}

func TestPercentile(t *testing.T) {
	for _, tc := range []struct {
		sorted []float64
		p      float64
		want   float64
	}{
		{[]float64{7}, 50, 7},
		{[]float64{7}, 99, 7},
		{[]float64{1, 2}, 50, 1},
		{[]float64{1, 2}, 99, 2},
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 50, 5},
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 99, 10},
		{[]float64{1, 2, 3}, 0, 1},
	} {
		if got := percentile(tc.sorted, tc.p); got != tc.want {
			t.Errorf("percentile(%v, %v) = %v, want %v", tc.sorted, tc.p, got, tc.want)
		}
	}
}

func TestParseWorkload(t *testing.T) {
	for name, want := range map[string]Workload{
		"udp64":        {Name: "udp64", Kind: KindUDP, Size: 64},
		"udp1500":      {Name: "udp1500", Kind: KindUDP, Size: 1500},
		"udp60":        {Name: "udp60", Kind: KindUDP, Size: 60},
		"udp64x1000":   {Name: "udp64x1000", Kind: KindUDP, Size: 64, Flows: 1000},
		"udp9014":      {Name: "udp9014", Kind: KindUDP, Size: 9014}, // Run checks it against the MTU
		"tcp":          {Name: "tcp", Kind: KindTCP},
		"ping":         {Name: "ping", Kind: KindPing},
		"tcpcrr":       {Name: "tcpcrr", Kind: KindCRR},
		"conns2":       {Name: "conns2", Kind: KindConns, Size: 64, Flows: 2},
		"conns3000000": {Name: "conns3000000", Kind: KindConns, Size: 64, Flows: MaxConnections},
		"addport":      {Name: "addport", Kind: KindAddPort},
		"ports":        {Name: "ports1000", Kind: KindPorts, Ports: 1000},
		"ports1":       {Name: "ports1", Kind: KindPorts, Ports: 1},
		"ports65000":   {Name: "ports65000", Kind: KindPorts, Ports: MaxPorts},
	} {
		got, err := ParseWorkload(name)
		if err != nil || got != want {
			t.Errorf("ParseWorkload(%q) = %+v, %v; want %+v", name, got, err, want)
		}
	}
	for _, name := range []string{"", "udp", "udp59", "udp65550", "udpx", "UDP64", "tcp2", "tcpcrr2", "TCP_CRR", "conns", "conns1", "conns3000001", "connsx", "conns-5", "icmp", "udp64x", "udp64x-1", "udp64x99999", "udp64x1000x2",
		"addport2", "ports0", "ports-1", "ports65001", "portsx"} {
		if w, err := ParseWorkload(name); err == nil {
			t.Errorf("ParseWorkload(%q) = %+v, want an error", name, w)
		}
	}
}

func TestRunRejectsOptions(t *testing.T) {
	good := Options{Duration: 2 * time.Second, Rounds: 1, Workloads: []Workload{UDP(64)}}
	for name, mutate := range map[string]func(*Options){
		"short duration":  func(o *Options) { o.Duration = time.Second },
		"no rounds":       func(o *Options) { o.Rounds = 0 },
		"no workloads":    func(o *Options) { o.Workloads = nil },
		"tiny frame":      func(o *Options) { o.Workloads = []Workload{UDP(MinFrameSize - 1)} },
		"jumbo frame":     func(o *Options) { o.Workloads = []Workload{UDP(1515)} },
		"beyond the MTU":  func(o *Options) { o.MTU, o.Workloads = 9000, []Workload{UDP(9015)} },
		"no generator":    func(o *Options) { o.Generator = "pktgen" },
		"zero workload":   func(o *Options) { o.Workloads = []Workload{{Name: "x"}} },
		"nameless":        func(o *Options) { o.Workloads = []Workload{{Kind: KindTCP}} },
		"one bad of many": func(o *Options) { o.Workloads = []Workload{TCP(), UDP(10)} },
		"tiny MTU":        func(o *Options) { o.MTU = 67 },
		"huge MTU":        func(o *Options) { o.MTU = 65536 },
	} {
		opts := good
		mutate(&opts)
		if _, err := Run(context.Background(), opts); err == nil {
			t.Errorf("%s: Run accepted %+v", name, opts)
		}
	}
}

func TestParsePing(t *testing.T) {
	out := `PING 10.253.0.2 (10.253.0.2) 56(84) bytes of data.
64 bytes from 10.253.0.2: icmp_seq=1 ttl=64 time=1.50 ms
64 bytes from 10.253.0.2: icmp_seq=2 ttl=64 time=0.100 ms
64 bytes from 10.253.0.2: icmp_seq=3 ttl=64 time=0.045 ms
64 bytes from 10.253.0.2: icmp_seq=3 ttl=64 time=0.050 ms (DUP!)
64 bytes from 10.253.0.2: icmp_seq=5 ttl=64 time=0.062 ms

--- 10.253.0.2 ping statistics ---
5 packets transmitted, 4 received, +1 duplicates, 20% packet loss, time 40ms
rtt min/avg/max/mdev = 0.045/0.426/1.500/0.621 ms
`
	s, err := parsePing([]byte(out), 5, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{100 * time.Microsecond, 45 * time.Microsecond, 62 * time.Microsecond}
	if len(s.rtts) != len(want) {
		t.Fatalf("parsePing round-trip times %v, want %v", s.rtts, want)
	}
	for i := range want {
		if s.rtts[i] != want[i] {
			t.Errorf("rtt %d = %v, want %v", i, s.rtts[i], want[i])
		}
	}
	if s.lost != 1 {
		t.Errorf("lost = %d, want 1 (icmp_seq 4)", s.lost)
	}

	_, err = parsePing([]byte("PING 10.253.0.2 (10.253.0.2) 56(84) bytes of data.\n"), 5, 1)
	if err == nil || !strings.Contains(err.Error(), "no reply") {
		t.Errorf("parsePing without replies: %v, want a no-reply error", err)
	}
}

func TestParseIperf(t *testing.T) {
	// Trimmed from iperf 3.12's client report with --get-server-output,
	// -t 2 -O 1.
	report := `{
	"start": {"version": "iperf 3.12"},
	"intervals": [],
	"end": {"sum_received": {"bits_per_second": 20160739159.5}},
	"server_output_json": {
		"start": {},
		"intervals": [
			{"streams": [], "sum": {"start": 0, "end": 1.000065, "seconds": 1.000065, "bytes": 2463496736, "bits_per_second": 19706693562.5, "omitted": true}},
			{"streams": [], "sum": {"start": 0.000042, "end": 1.000018, "seconds": 1.00006, "bytes": 2507978064, "bits_per_second": 20062621511.6, "omitted": false}},
			{"streams": [], "sum": {"start": 1.000018, "end": 1.999986, "seconds": 0.999968, "bytes": 2531807000, "bits_per_second": 20255104319.2, "omitted": false}},
			{"streams": [], "sum": {"start": 1.999986, "end": 2.001235, "seconds": 0.001249, "bytes": 3512040, "bits_per_second": 22495052681.9, "omitted": false}}
		],
		"end": {}
	}
}`
	s, err := parseIperf([]byte(report))
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{20062621511.6 / 8, 20255104319.2 / 8}
	if len(s.rates) != len(want) {
		t.Fatalf("parseIperf rates %+v, want bytes per second %v", s.rates, want)
	}
	for i := range want {
		if s.rates[i].bytesPerSec != want[i] {
			t.Errorf("second %d: %v bytes/s, want %v", i, s.rates[i].bytesPerSec, want[i])
		}
	}

	for name, tc := range map[string]struct{ report, wantErr string }{
		"client error":     {`{"start": {}, "intervals": [], "end": {}, "error": "unable to connect to server: Connection refused"}`, "Connection refused"},
		"server error":     {`{"server_output_json": {"error": "the client has unexpectedly closed the connection"}}`, "unexpectedly closed"},
		"no server output": {`{"start": {}, "intervals": [], "end": {}}`, "no server output"},
		"only omitted":     {`{"server_output_json": {"intervals": [{"sum": {"seconds": 1, "bits_per_second": 1, "omitted": true}}]}}`, "no whole second"},
		"not JSON":         {`iperf3: error - unable to start`, "JSON"},
	} {
		if _, err := parseIperf([]byte(tc.report)); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: parseIperf error %v, want one containing %q", name, err, tc.wantErr)
		}
	}
}

func TestNextCallFrames(t *testing.T) {
	for _, tc := range []struct {
		frames  uint32
		elapsed time.Duration
		want    uint32
	}{
		{1 << 20, time.Second, 2 << 20},            // twice as many for twice the time
		{1 << 20, 4 * time.Second, 1 << 19},        // half
		{1 << 20, time.Hour, minCallFrames},        // a crawl still sends something
		{1 << 26, time.Millisecond, maxCallFrames}, // bounded
		{1 << 20, 0, maxCallFrames},
	} {
		if got := nextCallFrames(tc.frames, tc.elapsed); got != tc.want {
			t.Errorf("nextCallFrames(%d, %v) = %d, want %d", tc.frames, tc.elapsed, got, tc.want)
		}
	}
}

func TestCreateVethsSetsTheMTU(t *testing.T) {
	testenv.RequireRoot(t)
	hosts := Hosts{
		GenNetns: testenv.UniqueName(t), RcvNetns: testenv.UniqueName(t),
		GenPort: testenv.UniqueName(t), RcvPort: testenv.UniqueName(t),
		MTU: 9000,
	}
	for _, ns := range []string{hosts.GenNetns, hosts.RcvNetns} {
		if err := netns.Create(ns); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { netns.Delete(ns) })
	}
	cleanup, err := CreateVeths(hosts)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	for _, p := range []struct{ port, ns string }{{hosts.GenPort, hosts.GenNetns}, {hosts.RcvPort, hosts.RcvNetns}} {
		l, err := netlink.LinkByName(p.port)
		if err != nil {
			t.Fatal(err)
		}
		var peerMTU int
		err = netns.Do(p.ns, func() error {
			peer, err := netlink.LinkByName(PeerName)
			if err == nil {
				peerMTU = peer.Attrs().MTU
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if l.Attrs().MTU != 9000 || peerMTU != 9000 {
			t.Errorf("%s: MTU %d, its peer in %s %d; want 9000 both", p.port, l.Attrs().MTU, p.ns, peerMTU)
		}
	}
}

func TestReadCPUTimes(t *testing.T) {
	gen0, sw0, err := readCPUTimes()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	gen1, sw1, err := readCPUTimes()
	if err != nil {
		t.Fatal(err)
	}
	if gen1.total < gen0.total || sw1.total < sw0.total {
		t.Fatalf("CPU times went back: %+v -> %+v, %+v -> %+v", gen0, gen1, sw0, sw1)
	}
	for _, v := range []float64{softirqShare(gen0, gen1), busyShare(sw0, sw1)} {
		if v < 0 || v > 1 {
			t.Errorf("a share of %v: not within 0..1", v)
		}
	}
	if got := softirqShare(cpuTimes{total: 100, softirq: 10}, cpuTimes{total: 200, softirq: 60}); got != 0.5 {
		t.Errorf("softirqShare = %v, want 0.5", got)
	}
	if got := busyShare(cpuTimes{total: 100, busy: 50}, cpuTimes{total: 200, busy: 75}); got != 0.25 {
		t.Errorf("busyShare = %v, want 0.25", got)
	}
}

func TestGenOnlyCost(t *testing.T) {
	// Both CPUs busy 900 ns and 1,000 ns per frame sent, and once stalled.
	genOnly := samples{rates: []rate{
		{pps: 1e6, sentPPS: 1e6, busyNs: 0.9e9},
		{pps: 1e6, sentPPS: 1e6, busyNs: 1.0e9},
		{pps: 0, sentPPS: 0, busyNs: 1.0e9},
	}}
	if got := genOnlyCost(genOnly); got != 950 {
		t.Errorf("genOnlyCost = %v ns, want 950: the median busy time per frame sent", got)
	}
	if got := genOnlyCost(samples{}); got != 0 {
		t.Errorf("genOnlyCost(nothing) = %v", got)
	}
}

func TestPathCost(t *testing.T) {
	// Both CPUs busy 1.5 s a second; the generator sent 1 Mpps at 1,000 ns
	// each, of which 0.5 Mpps arrived: 0.5 s of CPU for 0.5 M frames.
	r := rate{pps: 0.5e6, sentPPS: 1e6, busyNs: 1.5e9}
	if got := pathCost(r, 1000); got != 1000 {
		t.Errorf("pathCost = %v ns/frame, want 1000", got)
	}
	if got := pathCost(r, 0); got != 3000 {
		t.Errorf("pathCost without the generator's own = %v ns/frame, want 3000", got)
	}
}

func TestSummarizeUDPAgainstTheGenerator(t *testing.T) {
	w := UDP(64)
	bound := samples{rates: []rate{
		{pps: 0.98e6, sentPPS: 1e6, busyNs: 1.4e9},
		{pps: 1.0e6, sentPPS: 1e6, busyNs: 1.5e9},
		{pps: 0.99e6, sentPPS: 1e6, busyNs: 1.6e9},
	}}
	r := summarize("x", w, bound, 1000)
	if r.MedianSentPPS != 1e6 || r.CarriedShare != 0.99 || !r.GeneratorBound {
		t.Errorf("summarize = sent %v, carried %v, bound %v; want 1e6, 0.99, bound", r.MedianSentPPS, r.CarriedShare, r.GeneratorBound)
	}
	// (1.5e9 - 1000 × 1e6) / 1e6 is the median second's.
	if want := 500.0; r.CPUNsPerFrame != want {
		t.Errorf("CPU per frame %v ns, want %v", r.CPUNsPerFrame, want)
	}
	dropping := samples{rates: []rate{{pps: 0.5e6, sentPPS: 1e6, busyNs: 2e9}, {pps: 0, sentPPS: 1e6, busyNs: 2e9}}}
	r = summarize("x", w, dropping, 1000)
	if r.GeneratorBound || r.CarriedShare != 0.25 || r.CPUNsPerFrame != 2000 {
		t.Errorf("a path that drops: bound %v, carried %v, %v ns/frame; want not bound, 0.25, and 2000 from the one second that delivered",
			r.GeneratorBound, r.CarriedShare, r.CPUNsPerFrame)
	}
	g := summarize(GenOnly, w, bound, 0)
	if g.CPUNsPerFrame != 1500 {
		t.Errorf("gen-only's CPU per frame %v, want its own cost, 1500", g.CPUNsPerFrame)
	}
}

func TestRateRatio(t *testing.T) {
	fast, slow := Result{MedianPPS: 3e6}, Result{MedianPPS: 1e6}
	boundFast, boundSlow := fast, slow
	boundFast.GeneratorBound, boundSlow.GeneratorBound = true, true
	for _, tc := range []struct {
		c, base Result
		ratio   float64
		bound   RatioBound
	}{
		{fast, slow, 3, RatioExact},
		{boundFast, slow, 3, RatioAtLeast},
		{slow, boundFast, 1.0 / 3, RatioAtMost},
		{boundSlow, boundFast, 1.0 / 3, RatioOpen},
	} {
		if ratio, bound := RateRatio(tc.c, tc.base); ratio != tc.ratio || bound != tc.bound {
			t.Errorf("RateRatio(%+v, %+v) = %v, %v; want %v, %v", tc.c, tc.base, ratio, bound, tc.ratio, tc.bound)
		}
	}
}

func TestParseGenerator(t *testing.T) {
	for s, want := range map[string]Generator{"": GeneratorAuto, "auto": GeneratorAuto, "live": GeneratorLive, "xsk": GeneratorXSK, "packet": GeneratorPacket} {
		if got, err := ParseGenerator(s); err != nil || got != want {
			t.Errorf("ParseGenerator(%q) = %q, %v; want %q", s, got, err, want)
		}
	}
	for _, s := range []string{"pktgen", "XSK", "af_xdp"} {
		if _, err := ParseGenerator(s); err == nil {
			t.Errorf("ParseGenerator(%q) accepted it", s)
		}
	}
}

func TestParseProcStat(t *testing.T) {
	// A command with a space and a parenthesis of its own.
	line := "4242 (go (test) x) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 9 0 253185 3133440 360 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0"
	p, err := parseProcStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if want := (procStat{ppid: 17, ticks: 300, cpu: 1}); p != want {
		t.Errorf("parseProcStat = %+v, want %+v", p, want)
	}
	kthread := "15 (ksoftirqd/1) S 2 0 0 0 -1 69238848 0 0 0 0 0 386 0 0 20 0 1 0 7 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 1 0 0 0 0 0"
	if p, err := parseProcStat(kthread); err != nil || !p.kernelThread || p.ticks != 386 {
		t.Errorf("parseProcStat(ksoftirqd) = %+v, %v; want a kernel thread of 386 ticks", p, err)
	}
	for _, bad := range []string{"", "4242 go S 17", "4242 (go) S 17 4242"} {
		if _, err := parseProcStat(bad); err == nil {
			t.Errorf("parseProcStat(%q) accepted it", bad)
		}
	}
}

func TestOtherLoadCountsOnlyOthers(t *testing.T) {
	o := &otherLoad{ours: map[int]bool{1000: true, 1001: true}, last: map[int]uint64{}}
	o.count(map[int]procStat{
		1000: {ticks: 10, cpu: 0},                     // the bench
		1001: {ticks: 10, cpu: 1},                     // its switch
		2000: {ticks: 10, cpu: 0},                     // another user's
		2001: {ticks: 10, cpu: 1},                     // and another's
		2002: {ticks: 10, cpu: 5},                     // on another CPU
		15:   {ticks: 10, cpu: 0, kernelThread: true}, // ksoftirqd
	})
	if o.total != 0 {
		t.Fatalf("the first scan counted %d ticks: want every process counted from then on", o.total)
	}
	o.count(map[int]procStat{
		1000: {ticks: 90, cpu: 0},
		1001: {ticks: 90, cpu: 1},
		2000: {ticks: 15, cpu: 0},
		2001: {ticks: 30, cpu: 1},
		2002: {ticks: 99, cpu: 5},
		15:   {ticks: 99, cpu: 0, kernelThread: true},
		2003: {ticks: 7, cpu: 0}, // new: counted from its next scan
	})
	if o.total != 25 {
		t.Errorf("other users' ticks = %d, want 25: 5 and 20 of the two others on the bench's CPUs", o.total)
	}
	o.count(map[int]procStat{2000: {ticks: 3, cpu: 0}, 2003: {ticks: 8, cpu: 0}}) // 2000 is a new process under an old pid
	if o.total != 26 {
		t.Errorf("other users' ticks = %d, want 26: one more of the new one, none of a reused pid", o.total)
	}
}

func TestSummarizeAddPortAndPorts(t *testing.T) {
	ms := time.Millisecond
	r := summarize("x", AddPort(), samples{addPorts: []addPortTrial{{vsctl: 20 * ms, forwarding: 12 * ms}, {vsctl: 30 * ms, forwarding: 10 * ms}, {vsctl: 25 * ms, forwarding: 40 * ms}}}, 0)
	if r.AddPortMillis != 12 || r.MinAddPortMillis != 10 || r.MaxAddPortMillis != 40 || r.VsctlMillis != 25 || r.Samples != 3 {
		t.Errorf("addport: %+v", r)
	}
	r = summarize("x", Ports(100), samples{ports: []portsRound{{vsctl: 2 * time.Second, ofport: 3 * time.Second}, {vsctl: time.Second, ofport: time.Second}, {vsctl: 4 * time.Second, ofport: 5 * time.Second}}}, 0)
	if r.Ports != 100 || r.VsctlSeconds != 2 || r.OFPortSeconds != 3 || r.MinOFPortSeconds != 1 || r.MaxOFPortSeconds != 5 || r.Samples != 3 {
		t.Errorf("ports100: %+v", r)
	}
}

func TestSkipUnderOVSDBWorkloads(t *testing.T) {
	plain := Case{Name: "linux-bridge"}
	daemon := Case{Name: "ovs", Switchd: func(context.Context, OVSDBServer, io.Writer) (func(), error) { return func() {}, nil }}
	for _, w := range []Workload{AddPort(), Ports(10)} {
		if plain.skipUnder(w) == "" {
			t.Errorf("a case without Switchd runs under %s", w.Name)
		}
		if why := daemon.skipUnder(w); why != "" {
			t.Errorf("a case with Switchd is skipped under %s: %s", w.Name, why)
		}
	}
	if why := plain.skipUnder(Ping()); why != "" {
		t.Errorf("a case without Switchd is skipped under ping: %s", why)
	}
}

func TestNumberedPorts(t *testing.T) {
	table := strings.Join([]string{
		"xsb1p0,1,", "xsb1p1,2,", "xsb1p2,,", "xsb1o,65534,", "other,3,",
		`xsb1p3,-1,"could not open network device xsb1p3 (No such device), again"`, "xsb1p4,[],",
	}, "\n") + "\n"
	n, failed, err := numberedPorts(table, "xsb1p")
	if err != nil || n != 2 || failed != "interface xsb1p3: could not open network device xsb1p3 (No such device), again" {
		t.Errorf("numberedPorts = %d, %q, %v", n, failed, err)
	}
	if _, _, err := numberedPorts("a,b\n", "a"); err == nil {
		t.Error("numberedPorts accepted two columns")
	}
	if n, failed, err := numberedPorts("", "a"); n != 0 || failed != "" || err != nil {
		t.Errorf("numberedPorts of nothing = %d, %q, %v", n, failed, err)
	}
}
