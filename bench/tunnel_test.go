package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/xswitch/xswitch/internal/netns"
	"github.com/xswitch/xswitch/internal/testenv"
)

func TestUnderlayAddrs(t *testing.T) {
	a, b := underlayAddrs("xsb1a2bg")
	if a2, b2 := underlayAddrs("xsb1a2bg"); a2 != a || b2 != b {
		t.Errorf("underlayAddrs gave %s %s, then %s %s for the same port", a, b, a2, b2)
	}
	private := netip.MustParsePrefix("172.31.0.0/16")
	if !private.Contains(a.Addr()) || a.Bits() != 24 || b.Bits() != 24 || a.Masked() != b.Masked() || a.Addr() == b.Addr() {
		t.Errorf("underlayAddrs = %s, %s: want two addresses of one /24 in %s", a, b, private)
	}
	if a.Addr().As4()[3] != 1 || b.Addr().As4()[3] != 2 {
		t.Errorf("underlayAddrs = %s, %s: want .1 for host A and .2 for host B", a, b)
	}
	subnets := map[netip.Prefix]bool{}
	for i := range 64 {
		a, _ := underlayAddrs(fmt.Sprintf("xsb%04xg", i))
		subnets[a.Masked()] = true
	}
	if len(subnets) < 32 {
		t.Errorf("64 measurements' underlays share %d subnets: the port's name hardly changes them", len(subnets))
	}
}

func TestTunnelHostNames(t *testing.T) {
	a, b := tunnelHostNames(Hosts{GenPort: "xsb1a2bg", RcvPort: "xsb1a2br"})
	if a != "xsb1a2bg-ha" || b != "xsb1a2bg-hb" {
		t.Errorf("tunnelHostNames = %q, %q; want xsb1a2bg-ha, xsb1a2bg-hb", a, b)
	}
}

func TestOVSTunnelHostConfigValidate(t *testing.T) {
	good := OVSTunnelHostConfig{Netns: "h1", Underlay: "ul", UnderlayAddr: "172.31.0.1/24", Type: "vxlan",
		Remote: "172.31.0.2", Key: "42", InnerPort: "vm1"}
	underlay, remote, err := good.validate()
	if err != nil || underlay != netip.MustParsePrefix("172.31.0.1/24") || remote != netip.MustParseAddr("172.31.0.2") {
		t.Fatalf("validate(%+v) = %s, %s, %v", good, underlay, remote, err)
	}
	for _, ok := range []func(*OVSTunnelHostConfig){
		func(c *OVSTunnelHostConfig) { c.Type, c.Key = "geneve", "flow" },
		func(c *OVSTunnelHostConfig) { c.Key = "" },
		func(c *OVSTunnelHostConfig) { c.Key = "16777215" },
	} {
		c := good
		ok(&c)
		if _, _, err := c.validate(); err != nil {
			t.Errorf("validate(%+v): %v", c, err)
		}
	}
	for _, tc := range []struct {
		change  func(*OVSTunnelHostConfig)
		wantErr string
	}{
		{func(c *OVSTunnelHostConfig) { c.Netns = "" }, "no Netns"},
		{func(c *OVSTunnelHostConfig) { c.Underlay = "" }, "no Underlay"},
		{func(c *OVSTunnelHostConfig) { c.InnerPort = "" }, "no InnerPort"},
		{func(c *OVSTunnelHostConfig) { c.InnerPort = "ul" }, `both "ul"`},
		{func(c *OVSTunnelHostConfig) { c.UnderlayAddr = "172.31.0.1" }, "prefix length"},
		{func(c *OVSTunnelHostConfig) { c.UnderlayAddr = "fd00::1/64" }, "not an IPv4"},
		{func(c *OVSTunnelHostConfig) { c.Type = "gre" }, `"gre" is neither vxlan nor geneve`},
		{func(c *OVSTunnelHostConfig) { c.Remote = "" }, `Remote "" is not an IPv4`},
		{func(c *OVSTunnelHostConfig) { c.Remote = "172.31.0.1" }, "own UnderlayAddr"},
		{func(c *OVSTunnelHostConfig) { c.Key = "16777216" }, "neither a VNI"},
		{func(c *OVSTunnelHostConfig) { c.Key = "-1" }, "neither a VNI"},
	} {
		c := good
		tc.change(&c)
		if _, _, err := c.validate(); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("validate(%+v) = %v, want an error saying %q", c, err, tc.wantErr)
		}
	}
}

func TestOVSTunnelPortArgs(t *testing.T) {
	h := &OVSTunnelHost{cfg: OVSTunnelHostConfig{Type: "geneve", Remote: "172.31.0.2", Key: "flow", DstPort: 6082}}
	want := "add-port br-int geneve0 -- set interface geneve0 type=geneve options:remote_ip=172.31.0.2 ofport_request=2 options:key=flow options:dst_port=6082"
	if got := strings.Join(h.tunnelPortArgs(), " "); got != want {
		t.Errorf("tunnelPortArgs =\n  %s\nwant\n  %s", got, want)
	}
	h.cfg.Key, h.cfg.DstPort = "", 0
	if got := strings.Join(h.tunnelPortArgs(), " "); strings.Contains(got, "key") || strings.Contains(got, "dst_port") {
		t.Errorf("tunnelPortArgs without key or port = %s, want OVS's defaults", got)
	}
}

// tunnelTestHosts makes the generator's and the receiver's namespaces of a
// tunnel case, as measure would, with OVS's private directories in the
// test's own.
func tunnelTestHosts(t *testing.T) Hosts {
	t.Helper()
	testenv.RequireRoot(t)
	t.Setenv("TMPDIR", t.TempDir())
	tag := testenv.UniqueName(t)[2:8]
	hosts := Hosts{
		GenNetns: "xsbench-" + tag + "-gen", RcvNetns: "xsbench-" + tag + "-rcv",
		GenPort: "xsb" + tag + "g", RcvPort: "xsb" + tag + "r",
		Log: testWriter{t},
	}
	for _, ns := range []string{hosts.GenNetns, hosts.RcvNetns} {
		if err := netns.Create(ns); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { netns.Delete(ns) })
	}
	return hosts
}

// testWriter is Hosts.Log into the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// setUpTunnelCase runs c's Setup on hosts and addresses the two ends as
// Run does.
func setUpTunnelCase(t *testing.T, c Case, hosts Hosts) (cleanup func()) {
	t.Helper()
	if c.Skip != "" {
		t.Skip(c.Skip)
	}
	cleanup, err := c.Setup(context.Background(), hosts)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []struct {
		ns string
		ip net.IP
	}{{hosts.GenNetns, genIP}, {hosts.RcvNetns, rcvIP}} {
		if err := addAddress(h.ns, h.ip); err != nil {
			cleanup()
			t.Fatal(err)
		}
	}
	return cleanup
}

// pingAcross pings the receiver from the generator's namespace.
func pingAcross(t *testing.T, hosts Hosts) {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", hosts.GenNetns, "ping", "-n", "-c", "3", "-i", "0.2", "-W", "1", rcvIP.String()).CombinedOutput()
	if err != nil {
		t.Fatalf("ping %s across the tunnel: %v\n%s", rcvIP, err, out)
	}
}

// assertTunnelHostsGone checks that the hosts' namespaces, and with them
// everything in them, are gone.
func assertTunnelHostsGone(t *testing.T, hosts Hosts) {
	t.Helper()
	a, b := tunnelHostNames(hosts)
	for _, ns := range []string{a, b} {
		if netns.Exists(ns) {
			t.Errorf("namespace %q is left behind", ns)
		}
	}
}

func TestKernelVXLANCarriesEveryWorkload(t *testing.T) {
	testenv.RequireRoot(t)
	for _, w := range []Workload{UDP(64), TCP(), Ping()} {
		tag := testenv.UniqueName(t)[2:8]
		opts := Options{Duration: 2 * time.Second, Progress: testWriter{t}, Tag: func() string { return tag }, Generator: GeneratorAuto}
		var gen Generator
		if w.Kind == KindUDP {
			var err error
			if gen, err = chooseGenerator(context.Background(), w, opts); err != nil {
				t.Fatal(err)
			}
		}
		s, err := measure(context.Background(), KernelVXLANCase(), w, gen, opts)
		if err != nil {
			t.Fatalf("%s: %v", w.Name, err)
		}
		r := summarize("kernel-vxlan", w, s, 0)
		if r.Samples == 0 || (w.Kind != KindPing && r.MedianGbps == 0) || (w.Kind == KindPing && r.P50Micros == 0) {
			t.Errorf("%s across kernel-vxlan: %+v, want traffic", w.Name, r)
		}
		// The counts telescope over the seconds: the receiver cannot have
		// counted more than was sent but for the moment between the reads
		// and the batch a socket generator counts once the kernel is done
		// with it.
		if w.Kind == KindUDP && (r.MedianSentPPS == 0 || r.CarriedShare <= 0 || r.CarriedShare > 1.02 || r.CPUNsPerFrame <= 0) {
			t.Errorf("%s across kernel-vxlan with generator %s: %.0f pps sent, %.0f delivered (%.3f of what was sent), %.0f ns/frame; want frames sent, at most all of them delivered, and a cost",
				w.Name, gen, r.MedianSentPPS, r.MedianPPS, r.CarriedShare, r.CPUNsPerFrame)
		}
		assertTunnelHostsGone(t, Hosts{GenPort: "xsb" + tag + "g"})
	}
}

// ovsAppctlAll finds the OVS instances in TMPDIR, the test's own, and
// returns what each one's ovs-appctl prints for args.
func ovsAppctlAll(t *testing.T, args ...string) []string {
	t.Helper()
	ctls, err := filepath.Glob(filepath.Join(os.TempDir(), "*", "ovs-vswitchd.ctl"))
	if err != nil || len(ctls) != 2 {
		t.Fatalf("ovs-vswitchd control sockets %q (%v), want one per host", ctls, err)
	}
	var outs []string
	for _, ctl := range ctls {
		out, err := exec.Command("ovs-appctl", append([]string{"-t", ctl}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ovs-appctl -t %s %s: %v\n%s", ctl, strings.Join(args, " "), err, out)
		}
		outs = append(outs, string(out))
	}
	return outs
}

func TestOVSVXLANTunnels(t *testing.T) {
	hosts := tunnelTestHosts(t)
	cleanup := setUpTunnelCase(t, OVSVXLANCase(), hosts)
	// Before any frame crosses, both know where to send the tunnel's.
	a, b := underlayAddrs(hosts.GenPort)
	for _, neighbours := range ovsAppctlAll(t, "tnl/neigh/show") {
		if !strings.Contains(neighbours, a.Addr().String()+" ") && !strings.Contains(neighbours, b.Addr().String()+" ") {
			t.Errorf("an OVS host has not learnt the other's MAC address after Setup:\n%s", neighbours)
		}
	}
	pingAcross(t, hosts)
	// Echo requests and replies both ways: each host pushes and pops.
	for _, flows := range ovsAppctlAll(t, "dpctl/dump-flows") {
		if !strings.Contains(flows, "tnl_push(tnl_port(") || !strings.Contains(flows, "vxlan(flags=0x8000000,vni=0x2a)") || !strings.Contains(flows, "tnl_pop(") {
			t.Errorf("an OVS host's datapath flows lack a VXLAN tnl_push with VNI 42 or a tnl_pop:\n%s", flows)
		}
	}
	cleanup()
	assertTunnelHostsGone(t, hosts)
	assertOVSGone(t, hosts)
}

// TestOVSGeneveTunnelHost puts StartOVSTunnelHost, with Geneve, on both
// hosts of a tunnel case's topology, as the namespace tests do.
func TestOVSGeneveTunnelHost(t *testing.T) {
	hosts := tunnelTestHosts(t)
	var started []*OVSTunnelHost
	geneve := func(ctx context.Context, host, remote TunnelHost, log io.Writer) (func(), error) {
		h, err := StartOVSTunnelHost(ctx, OVSTunnelHostConfig{
			Netns: host.Netns, Underlay: host.Underlay, UnderlayAddr: host.UnderlayAddr.String(),
			Type: TunnelTypeGeneve, Remote: remote.UnderlayAddr.Addr().String(), Key: "5000",
			InnerPort: host.Port, Dir: t.TempDir(), Log: log,
		})
		if err != nil {
			return nil, err
		}
		started = append(started, h)
		return func() {
			if err := h.Close(); err != nil {
				t.Error(err)
			}
			if !underlayHasAddress(t, host) {
				t.Errorf("Close did not put %s back on %s in %s", host.UnderlayAddr, host.Underlay, host.Netns)
			}
		}, nil
	}
	cleanup := setUpTunnelCase(t, TunnelCase("ovs-geneve", geneve, geneve), hosts)
	defer cleanup()
	ctx := context.Background()
	for _, h := range started {
		if err := h.ResolveRemote(ctx); err != nil {
			t.Error(err)
		}
		if neighbours, err := h.Appctl(ctx, "tnl/neigh/show"); err != nil || !strings.Contains(neighbours, h.remote.String()+" ") {
			t.Errorf("after ResolveRemote, tnl/neigh/show = %q, %v; want %s in it", neighbours, err, h.remote)
		}
		if modes := h.XDPModes(); len(modes) != 2 {
			t.Errorf("XDPModes = %v, want the inner port's and the underlay's", modes)
		}
		if out, err := h.Vsctl(ctx, "get", "interface", h.TunnelPort(), "type"); err != nil || out != "geneve" {
			t.Errorf("ovs-vsctl get interface %s type = %q, %v; want geneve", h.TunnelPort(), out, err)
		}
		if out, err := h.Ofctl(ctx, "dump-flows", OVSIntegrationBridge); err != nil || !strings.Contains(out, "NORMAL") {
			t.Errorf("ovs-ofctl dump-flows %s = %q, %v; want OVS's NORMAL flow", OVSIntegrationBridge, out, err)
		}
	}
	pingAcross(t, hosts)
	for _, h := range started {
		flows, err := h.Appctl(ctx, "dpctl/dump-flows")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(flows, "tnl_push(tnl_port(") || !strings.Contains(flows, "geneve(vni=0x1388)") || !strings.Contains(flows, "tnl_pop(") {
			t.Errorf("host in %s: datapath flows lack a Geneve tnl_push with VNI 5000 or a tnl_pop:\n%s", h.cfg.Netns, flows)
		}
	}
}

// underlayHasAddress reports whether host's underlay has its address.
func underlayHasAddress(t *testing.T, host TunnelHost) bool {
	t.Helper()
	var found bool
	err := netns.Do(host.Netns, func() error {
		l, err := netlink.LinkByName(host.Underlay)
		if err != nil {
			return err
		}
		addrs, err := netlink.AddrList(l, netlink.FAMILY_V4)
		found = slices.ContainsFunc(addrs, func(a netlink.Addr) bool { return a.IPNet.String() == prefixIPNet(host.UnderlayAddr).String() })
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

func TestStartOVSTunnelHostFailureLeavesNothing(t *testing.T) {
	hosts := tunnelTestHosts(t)
	if missing := ovsMissing(); missing != "" {
		t.Skip(missing)
	}
	a, b, cleanup, err := makeTunnelHosts(hosts)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	_, err = StartOVSTunnelHost(context.Background(), OVSTunnelHostConfig{
		Netns: a.Netns, Underlay: a.Underlay, UnderlayAddr: a.UnderlayAddr.String(), Type: TunnelTypeVXLAN,
		Remote: b.UnderlayAddr.Addr().String(), InnerPort: "no-such-port",
	})
	if err == nil || !strings.Contains(err.Error(), "no-such-port") {
		t.Fatalf("StartOVSTunnelHost with a missing inner port: err = %v, want one naming it", err)
	}
	if !underlayHasAddress(t, a) {
		t.Errorf("the failed start left %s without its address", a.Underlay)
	}
	cleanup()
	assertTunnelHostsGone(t, hosts)
	assertOVSGone(t, hosts)
}
