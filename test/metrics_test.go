package test

import (
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/xswitch/xswitch/internal/testenv"
)

// freeTCPAddr is a loopback address with a port nobody listened on a
// moment ago.
func freeTCPAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// scrape is one parsed scrape of a metrics endpoint.
type scrape map[string]*dto.MetricFamily

func scrapeMetrics(t testing.TB, addr string) scrape {
	t.Helper()
	// No keep-alive: an idle connection would count as one of the daemon's
	// file descriptors and goroutines when a test looks for leaks.
	client := http.Client{Timeout: commandTimeout, Transport: &http.Transport{DisableKeepAlives: true}}
	url := "http://" + addr + "/metrics"
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return families
}

// series returns the series of metric name whose labels include labels.
// There must be exactly one.
func (s scrape) series(t testing.TB, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	var found []*dto.Metric
	for _, m := range s[name].GetMetric() {
		has := map[string]string{}
		for _, lp := range m.GetLabel() {
			has[lp.GetName()] = lp.GetValue()
		}
		matches := true
		for k, v := range labels {
			matches = matches && has[k] == v
		}
		if matches {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d series of %s with labels %v; want 1 (family: %v)", len(found), name, labels, s[name])
	}
	return found[0]
}

// value is the value of a counter or gauge series.
func (s scrape) value(t testing.TB, name string, labels map[string]string) float64 {
	t.Helper()
	m := s.series(t, name, labels)
	if m.Counter != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

func TestMetricsEndpointCountsTraffic(t *testing.T) {
	testenv.RequireRoot(t)
	addr := freeTCPAddr(t)
	r := newRig(t, 2, "--metrics-addr", addr)
	br, sender, receiver := r.br, r.hosts[0], r.hosts[1]

	const echoes = 20
	before := scrapeMetrics(t, addr)
	sent, received, out := ping(t, sender.ns, receiver.addr, 56, echoes)
	if sent != echoes || received != echoes {
		t.Fatalf("ping: %d sent, %d received, want %d/%d:\n%s", sent, received, echoes, echoes, out)
	}
	after := scrapeMetrics(t, addr)

	onPort := func(p nsPort) map[string]string { return map[string]string{"bridge": br, "port": p.name} }
	rose := func(name string, p nsPort) float64 {
		return after.value(t, name, onPort(p)) - before.value(t, name, onPort(p))
	}
	// Requests go in at the sender's port and out at the receiver's;
	// replies the other way.
	for _, c := range []struct {
		metric string
		port   nsPort
	}{
		{"xswitch_port_rx_packets_total", sender},
		{"xswitch_port_tx_packets_total", receiver},
		{"xswitch_port_rx_packets_total", receiver},
		{"xswitch_port_tx_packets_total", sender},
	} {
		if got := rose(c.metric, c.port); got < echoes {
			t.Errorf("%s of port %s rose by %v over %d echoes; want at least %d", c.metric, c.port.name, got, echoes, echoes)
		}
	}
	// 98 bytes: an echo request of 56 bytes of payload in its frame.
	if got := rose("xswitch_port_rx_bytes_total", sender); got < 98*echoes {
		t.Errorf("xswitch_port_rx_bytes_total of port %s rose by %v; want at least %d", sender.name, got, 98*echoes)
	}

	onBridge := map[string]string{"bridge": br}
	classified := after.value(t, "xswitch_bridge_flow_cache_hits_total", onBridge) +
		after.value(t, "xswitch_bridge_flow_cache_misses_total", onBridge) -
		before.value(t, "xswitch_bridge_flow_cache_hits_total", onBridge) -
		before.value(t, "xswitch_bridge_flow_cache_misses_total", onBridge)
	// The frames the fast path carried in the kernel never met the cache.
	if !fastPathOff() {
		classified += after.value(t, "xswitch_bridge_fastpath_hits_total", onBridge) -
			before.value(t, "xswitch_bridge_fastpath_hits_total", onBridge)
	}
	if classified < 2*echoes {
		t.Errorf("flow cache hits plus misses, and fast path hits, rose by %v; want at least %d, one per frame", classified, 2*echoes)
	}
	if got := after.value(t, "xswitch_bridge_flows", onBridge); got != 1 {
		t.Errorf("xswitch_bridge_flows = %v; want 1, the default NORMAL rule", got)
	}
	if got := after.value(t, "xswitch_bridge_mac_entries", onBridge); got < 2 {
		t.Errorf("xswitch_bridge_mac_entries = %v; want at least the two namespaces' addresses", got)
	}
	busy := after.value(t, "xswitch_bridge_forwarder_busy_seconds_total", onBridge)
	idle := after.value(t, "xswitch_bridge_forwarder_idle_seconds_total", onBridge)
	if busy <= 0 || idle <= 0 {
		t.Errorf("forwarder busy %vs, idle %vs; want both positive", busy, idle)
	}

	for _, p := range []nsPort{sender, receiver} {
		if got := after.value(t, "xswitch_port_up", onPort(p)); got != 1 {
			t.Errorf("xswitch_port_up of %s = %v; want 1", p.name, got)
		}
		info := map[string]string{"bridge": br, "port": p.name, "kind": "afxdp", "xdp_mode": "native"}
		if got := after.value(t, "xswitch_port_info", info); got != 1 {
			t.Errorf("xswitch_port_info%v = %v; want 1", info, got)
		}
		for _, name := range []string{"xswitch_port_xsk_rx_ring_full_total", "xswitch_port_xsk_rx_fill_ring_empty_total"} {
			after.series(t, name, onPort(p))
		}
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if _, ok := after[name]; !ok {
			t.Errorf("scrape has no %s: the standard collectors are missing", name)
		}
	}
}

// A metrics address that cannot be bound stops the daemon at startup with
// a message that names it. It needs no privileges: no port is opened.
func TestMetricsAddressInUseIsAStartupError(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := t.TempDir()
	r := run(t, xswitchBin, "daemon", "--sock", filepath.Join(dir, "x.sock"), "--db", filepath.Join(dir, "conf.json"),
		"--metrics-addr", busy.Addr().String())
	if r.code == 0 || !strings.Contains(r.stderr, busy.Addr().String()) || !strings.Contains(r.stderr, "address already in use") {
		t.Errorf("daemon with --metrics-addr on a busy address: exit %d, stderr:\n%s\nwant a failure naming the address", r.code, r.stderr)
	}
}

// TestMetricsIdleConnectionFloodLeavesDescriptors keeps a fix: 20,000 idle
// keep-alive connections to the metrics endpoint took every descriptor the
// daemon had, and list-br then timed out. The endpoint holds a bounded
// number of connections, giving up idle ones for new ones.
func TestMetricsIdleConnectionFloodLeavesDescriptors(t *testing.T) {
	testenv.RequireRoot(t)
	addr := freeTCPAddr(t)
	d := startDaemonWith(t, "--metrics-addr", addr)
	br := newTestNet().name("br")
	d.x(t, "add-br", br)
	const limit, flood = 512, 3000
	lim := unix.Rlimit{Cur: limit, Max: limit}
	if err := unix.Prlimit(d.pid(), unix.RLIMIT_NOFILE, &lim, nil); err != nil {
		t.Fatalf("lower the daemon's descriptor limit: %v", err)
	}
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range flood {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			continue // refused or timed out: the endpoint holds no more
		}
		conns = append(conns, c)
		// One request, then idle on a keep-alive connection.
		c.Write([]byte("GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n"))
	}
	time.Sleep(500 * time.Millisecond) // let the daemon take them all in
	fds := daemonFDs(t, d)
	begin := time.Now()
	r := xswitch(t, d.sock, "list-br")
	took := time.Since(begin)
	t.Logf("%d idle keep-alive connections to the metrics endpoint: the daemon holds %d descriptors (limit %d); list-br answered in %v",
		len(conns), fds, limit, took.Round(time.Millisecond))
	if r.code != 0 || strings.TrimSpace(r.stdout) != br {
		t.Errorf("list-br during the flood: exit %d, %q, %s", r.code, r.stdout, r.stderr)
	}
	if fds > limit/2 {
		t.Errorf("the daemon holds %d descriptors with %d metrics connections open; want the endpoint bounded well below the limit of %d", fds, len(conns), limit)
	}
	scrape := scrapeMetrics(t, addr)
	if _, ok := scrape["xswitch_bridge_flows"]; !ok {
		t.Error("a scrape during the flood has no xswitch_bridge_flows")
	}
}
