package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/xswitch/xswitch/bench"
	"github.com/xswitch/xswitch/control/api"
)

// benchOptions are bench's flags.
type benchOptions struct {
	duration  time.Duration
	rounds    int
	workloads []string
	cases     []string
	mtu       int
	generator string
	json      bool
}

const defaultBenchWorkloads = "udp64,udp1500,tcp,ping"

const defaultBenchCases = "xswitch,xswitch-busy,xswitch-flows,linux-bridge,ovs,ovs-flows,xdp-redirect"

// moreBenchCases are the cases bench runs only when asked to.
const moreBenchCases = "xswitch-pipeline,ovs-pipeline,xswitch-select,ovs-select,xswitch-meter,ovs-meter,xswitch-ct,xswitch-ct-nofastpath,ovs-ct,bridge-nft,xswitch-userspace,xswitch-controller,ovs-controller," +
	"xswitch-vxlan,xswitch-xswitch-vxlan,kernel-vxlan,ovs-vxlan"

// benchFlows is how many flows the -flows cases install.
const benchFlows = 1000

func (c *cli) benchCommand() *cobra.Command {
	var opts benchOptions
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure forwarding: xswitch against the Linux bridge, Open vSwitch and XDP redirect",
		Long: `Measure what crosses from one network namespace to another through each
forwarding path, under each of the workloads of --workloads in one run:

  udpN           N-byte UDP frames (without FCS; N from 60 to the MTU + 14,
                 1514 by default) from a generator out of the generator's
                 veth, counted and dropped by an XDP program on the
                 receiver's: frames/s and Gbit/s of frame bytes (no FCS,
                 preamble or gap), what the generator sent, and the CPU the
                 path cost per frame
  udpNxF         the same frames over F UDP flows (source ports from 20000),
                 one after the other: no two frames in a row of one flow
  tcp            one iperf3 stream (iperf3 -J -O 1): Gbit/s the receiver reads
  ping           an ICMP echo request every 10 ms at idle: p50 and p99
                 round-trip time in µs
  tcpcrr         TCP connection setup, as netperf's TCP_CRR: a client in the
                 generator's namespace connects to a server in the
                 receiver's, sends a 1-byte request, reads the 1-byte
                 response and the server's close, and closes, 4 connections
                 at a time, both ends in the bench's process on CPU 0:
                 connections per second, those that failed, CPU 1's share
                 busy
  connsN         memory per tracked connection, N from 2 to 3,000,000 (the
                 trackers' default limit): the generator sends 64-byte
                 frames of one flow for 2 s, then of each of N UDP flows in
                 turn (source ports from 20000, then the next destination
                 port) again and again, until the receiver has had a frame
                 of every flow, each of which passed the switch's
                 ct(commit), or for 3 minutes at most: the switch
                 process's resident memory (VmRSS) after, less before,
                 over the connections made. Connections as the switch
                 counts them (ct-get-nconns), else as the receiver
                 counts the flows; how long until the
                 receiver had seen them all. Only the cases whose switch
                 is a process of its own (xswitch, ovs); --duration does
                 not apply
  addport        the switch as the daemon of an OVSDB server, as
                 ovs-vswitchd is: a private ovsdb-server (Open vSwitch's,
                 the same for both cases), the switch daemon on it in a
                 namespace of its own, a bridge (datapath_type=netdev) with
                 the receiver's veth; then, 5 times, a veth into the
                 generator's namespace added with a plain "ovs-vsctl
                 add-port BRIDGE PORT" (which waits for cur_cfg) while the
                 generator sends a UDP datagram to the receiver every 1 ms
                 (to its MAC address from the first, no ARP): the median
                 time from the start of ovs-vsctl to the first datagram
                 through the port, and to ovs-vsctl's return. Only the
                 cases xswitch (xswitch daemon --ovsdb) and ovs
                 (ovs-vswitchd; a system port of the userspace datapath,
                 not afxdp); --duration does not apply
  portsN         as addport, N ports (1 to 65,000; "ports" is ports1000)
                 of type internal added in one ovs-vsctl transaction: the
                 time until ovs-vsctl returns (the switch applied it) and
                 until every one has its OpenFlow port number
                 (Interface:ofport), and that over N. Internal ports are
                 what both switches make themselves: OVS a tap, xswitch a
                 veth pair with a socket on its hidden end

The generators (--generator), each on CPU 0:

  live           an XDP program run with BPF_PROG_RUN in live-frames mode,
                 whose XDP_TX hands frames to the veth without an skb: far
                 faster than any switch here; some kernels refuse it (EPERM),
                 and it takes frames of up to a page only
  xsk            an AF_XDP socket on the veth, transmit only, copy mode: the
                 kernel builds an skb per frame, one sendto per 2,048 frames
  packet         an AF_PACKET socket's TPACKET_V2 tx ring past the qdisc
                 (PACKET_QDISC_BYPASS): an skb per frame too, one sendto per
                 ring of 2,048; slower than xsk on the development machine
  auto           live where the kernel allows it, else xsk (the default)

A socket generator sends from CPU 0 and the kernel forwards what XDP or the
kernel's bridge forward in its send, on CPU 0 too: such a path carries all
that is sent, and the generator's speed, not the path's, sets its rate. A
case that carried at least 97% of what the generator sent is generator-
bound: its ratios print as "≥" (it might carry more), those against a
generator-bound baseline as "≤", and as "(…)" when both were: then the CPU
figure compares them. Every UDP workload's rounds start with gen-only, the
generator's veth straight into the receiver's, which drops in XDP, nothing
in between: its rate is what the generator reaches alone, and its CPU per
frame sent is the generator's own cost. A case's CPU per frame (ns/frame)
is, for each second,

  (busy ns of CPU 0 and CPU 1 - own ns/frame x frames sent) / frames delivered

where own is gen-only's busy ns of both CPUs per frame sent; the median
over the seconds. What remains is what the path between the two veths
costs: its XDP programs and threads, and its second veth hop, with the
frames it drops charged to those it delivered. Busy is user, system, irq
and softirq time from /proc/stat (steal excluded), less the time of the
processes on the two CPUs that are neither the bench nor started by it
(other users of a shared machine; their softirq work still counts). A
switch that busy-polls (OVS's PMD, xswitch --busy-poll) costs its whole
CPU: reported as measured. Compare the medians of several rounds.

xswitch and OVS run all of themselves on CPU 1 (taskset -c 1); iperf3's
client and server and ping run on CPU 0. The cases:

  xswitch        xswitch daemon with its default flags, as a process of its
                 own under taskset -c 1, NORMAL forwarding, with its in-kernel
                 fast path (the default): the flows the XDP program carries
                 run in the sender's softirq, on CPU 0
  xswitch-busy   the same with daemon --busy-poll: no sleep when idle, as
                 OVS's PMD thread
  xswitch-flows  the same with 1,000 flows over 15 masks (bench.ManyFlows): the
                 bench traffic's rule ranks below rules of 13 other masks
  linux-bridge   the kernel's bridge
  ovs            Open vSwitch's userspace datapath: type=afxdp ports, one PMD
                 thread, NORMAL; a private ovsdb-server and ovs-vswitchd, all
                 of it on CPU 1 (skipped when Open vSwitch is not installed)
  ovs-flows      the same with the 1,000 flows of xswitch-flows
  xswitch-pipeline, ovs-pipeline (only when asked for)
                 a pipeline of three tables (bench.PipelineFlows): classify by
                 input port into reg0, an ACL, NORMAL, joined by goto_table
  xswitch-select, ovs-select (only when asked for)
                 the bench frames through a select group of four buckets,
                 each to the receiver (bench.SelectGroupRules)
  xswitch-meter, ovs-meter (only when asked for)
                 the bench frames through a meter far above their rate
                 (bench.MeterRules)
  xswitch-ct, xswitch-ct-nofastpath, ovs-ct, bridge-nft (only when asked for)
                 a stateful firewall (bench.StatefulFirewallRules): IP from
                 the generator's side committed on its way out,
                 ct(commit),output:2; IP from the receiver's side through
                 ct(table=1), back only +trk+est or +trk+rel; ARP switched;
                 the rest dropped. xswitch-ct-nofastpath runs the daemon with
                 --fast-path off. bridge-nft is the kernel's bridge with an
                 nftables ruleset (ct state established,related accept; new
                 connections from the generator's address accepted; policy
                 drop) in the inet family through br_netfilter, as the
                 bridge family has no conntrack without nf_conntrack_bridge,
                 in a namespace of its own; needs nft. Every frame of udpN
                 goes out from the committing side through ct(commit) on a
                 connection the tracker holds (+new until a reply, in all
                 three trackers; xswitch's XDP programs carry such a
                 connection once user space has seen 8 of its frames);
                 tcp's segments back take the +est rule
  xswitch-userspace (only when asked for)
                 xswitch with daemon --fast-path off: every frame through the
                 forwarding thread
  xswitch-controller, ovs-controller (only when asked for)
                 the switch in fail mode secure, driven by an os-ken hub
                 (on CPU 0) whose only flow sends every frame to it and
                 which sends each back out with a packet-out: with the
                 ping workload, the round trip through the controller
                 (twice per echo); needs python3-os-ken
  xdp-redirect   an XDP program redirecting from veth to veth: the machine's limit
  kernel-vxlan, ovs-vxlan, xswitch-vxlan, xswitch-xswitch-vxlan (only when asked for)
                 across a VXLAN tunnel (VNI 42, port 4789) between two hosts:
                 namespaces joined by an underlay veth pair (172.31.X.1 and .2,
                 MTU 100 above the veths', GRO on and TX checksum offload off
                 on both ends, as a NIC would be), the generator's veth into
                 host A, the receiver's into host B. On each host:
      kernel-vxlan           a Linux bridge with a vxlan device
      ovs-vxlan              Open vSwitch's userspace tunnelling: br-int with
                             the veth and a vxlan port, br-phy with the
                             underlay and its address, afxdp ports; each
                             ovs-vswitchd, PMD thread and all, on CPU 1
      xswitch-vxlan          xswitch on host A (ip netns exec, taskset -c 1,
                             xswitch daemon with its default flags; add-port
                             --type vxlan), the kernel's (as kernel-vxlan) on B
      xswitch-xswitch-vxlan  xswitch on both hosts, both daemons on CPU 1

Each measurement builds its case in fresh namespaces, with 10.253.0.1/24 on
the generator's side and 10.253.0.2/24 on the receiver's, and removes them
afterwards, also on failure or Ctrl-C. Rates are sampled once a second and
the first second is discarded, as are the pings of the first second; the
rounds of each workload alternate the cases. One table per workload gives
medians, ranges over all samples and rounds, and the ratio of each median
to those of linux-bridge, ovs, bridge-nft, ovs-ct, kernel-vxlan and ovs-vxlan,
of those the run has (for ping of p50, so above 1 is slower; for connsN of the
bytes per connection, so above 1 is more memory; for addport and portsN of
the time to forwarding and to every ofport, so above 1 is slower); UDP
tables give the CPU per frame against xdp-redirect's too, and say which
generator ran and what it reached alone.
A failed measurement is reported and the others go on; bench
then exits with an error. Needs root and iperf3.

--mtu N gives both ends of every case's veth pairs the MTU N (xswitch's
through add-port --mtu), to measure jumbo frames: tcp then sends segments
as long as the MTU allows, and udpN takes N up to N = MTU + 14 (the live
generator only up to a page; xsk sends longer frames as chains of
descriptors, which needs Linux 6.6).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBench(cmd.Context(), os.Stdout, opts)
		},
	}
	cmd.Flags().DurationVar(&opts.duration, "duration", 5*time.Second, "how long each case runs per workload and round (at least 2s)")
	cmd.Flags().IntVar(&opts.rounds, "rounds", 3, "how many times each case runs per workload")
	cmd.Flags().StringSliceVar(&opts.workloads, "workloads", strings.Split(defaultBenchWorkloads, ","), "the workloads to run, in order: udpN (N-byte frames), tcp, ping, tcpcrr, connsN (N connections), addport, portsN (N ports)")
	cmd.Flags().StringSliceVar(&opts.cases, "cases", strings.Split(defaultBenchCases, ","), "the cases to run, in order")
	cmd.Flags().IntVar(&opts.mtu, "mtu", 0, "MTU of both ends of every case's veth pairs, as add-port --mtu (default 1500)")
	cmd.Flags().StringVar(&opts.generator, "generator", string(bench.GeneratorAuto), "how the udpN workloads' frames are sent: live, xsk, packet or auto")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the results as JSON")
	return cmd
}

func benchCases(names []string) ([]bench.Case, error) {
	var cases []bench.Case
	for _, name := range names {
		switch name {
		case "xswitch":
			c := xswitchBenchCase(name, xswitchBench{})
			c.Switchd = xswitchSwitchd
			cases = append(cases, c)
		case "xswitch-busy":
			cases = append(cases, xswitchBenchCase(name, xswitchBench{busyPoll: true}))
		case "xswitch-flows":
			cases = append(cases, xswitchBenchCase(name, xswitchBench{rules: bench.Rules{Flows: bench.ManyFlows(benchFlows)}}))
		case "linux-bridge":
			cases = append(cases, bench.LinuxBridge())
		case "xdp-redirect":
			cases = append(cases, bench.XDPRedirect())
		case "ovs":
			c := bench.OVS(name, bench.Rules{})
			c.Switchd = bench.OVSSwitchd
			cases = append(cases, c)
		case "ovs-flows":
			cases = append(cases, bench.OVS(name, bench.Rules{Flows: bench.ManyFlows(benchFlows)}))
		case "xswitch-pipeline":
			cases = append(cases, xswitchBenchCase(name, xswitchBench{rules: bench.Rules{Flows: bench.PipelineFlows()}}))
		case "ovs-pipeline":
			cases = append(cases, bench.OVS(name, bench.Rules{Flows: bench.PipelineFlows()}))
		case "xswitch-select":
			cases = append(cases, xswitchBenchCase(name, xswitchBench{rules: bench.SelectGroupRules()}))
		case "ovs-select":
			cases = append(cases, bench.OVS(name, bench.SelectGroupRules()))
		case "xswitch-meter":
			cases = append(cases, xswitchBenchCase(name, xswitchBench{rules: bench.MeterRules()}))
		case "ovs-meter":
			cases = append(cases, bench.OVS(name, bench.MeterRules()))
		case "xswitch-ct":
			cases = append(cases, xswitchBenchCase(name, xswitchBench{rules: bench.StatefulFirewallRules()}))
		case "xswitch-ct-nofastpath":
			cases = append(cases, xswitchBenchCase(name, xswitchBench{rules: bench.StatefulFirewallRules(), userspace: true}))
		case "ovs-ct":
			cases = append(cases, bench.OVS(name, bench.StatefulFirewallRules()))
		case "bridge-nft":
			cases = append(cases, bench.BridgeNFT())
		case "xswitch-userspace":
			cases = append(cases, xswitchBenchCase(name, xswitchBench{userspace: true}))
		case "xswitch-controller":
			cases = append(cases, xswitchBenchCase(name, xswitchBench{controller: true}))
		case "ovs-controller":
			cases = append(cases, bench.OVSController(name))
		case "xswitch-vxlan":
			cases = append(cases, bench.TunnelCase(name, xswitchTunnel, bench.KernelVXLAN))
		case "xswitch-xswitch-vxlan":
			cases = append(cases, bench.TunnelCase(name, xswitchTunnel, xswitchTunnel))
		case "kernel-vxlan":
			cases = append(cases, bench.KernelVXLANCase())
		case "ovs-vxlan":
			cases = append(cases, bench.OVSVXLANCase())
		default:
			return nil, fmt.Errorf("unknown bench case %q: want some of %s,%s", name, defaultBenchCases, moreBenchCases)
		}
	}
	if len(cases) == 0 {
		return nil, errors.New("no bench cases given")
	}
	return cases, nil
}

// xswitchBench is how a case runs xswitch: `xswitch daemon` as a
// process of its own, all of it on bench.SwitchCPU (taskset -c), with its
// default flags and only those the case is about, as a host runs it and
// as an outside harness measures it.
type xswitchBench struct {
	rules     bench.Rules // installed after the ports; no flows: NORMAL
	busyPoll  bool        // --busy-poll
	userspace bool        // --fast-path off
	// controller points the bridge at a bench.Controller in fail mode
	// secure, which sends every frame through itself.
	controller bool
}

// daemonFlags are the flags the case gives xswitch daemon.
func (xb xswitchBench) daemonFlags() []string {
	var flags []string
	if xb.busyPoll {
		flags = append(flags, "--busy-poll")
	}
	if xb.userspace {
		flags = append(flags, "--fast-path", "off")
	}
	return flags
}

// xswitchBenchCase bridges the two namespaces through a daemon's bridge.
// The conns workload measures the daemon's memory over the connections
// it says it tracks (ct-get-nconns).
func xswitchBenchCase(name string, xb xswitchBench) bench.Case {
	var running *daemonProcess
	return bench.Case{Name: name, Setup: func(ctx context.Context, hosts bench.Hosts) (func(), error) {
		var undo undoStack
		d, err := setupXswitchBench(ctx, &undo, hosts, xb)
		if err != nil {
			undo.run()
			return nil, err
		}
		running = d
		return undo.run, nil
	}, Process: func() bench.SwitchProcess {
		return bench.SwitchProcess{PID: running.cmd.Process.Pid, Connections: func(context.Context) (int, error) {
			resp, err := (&cli{socket: running.sock}).call(api.Request{Verb: api.VerbCTGetNConns})
			if err != nil || resp.Conntrack == nil {
				return 0, err
			}
			return int(resp.Conntrack.NConns), nil
		}}
	}}
}

// startBenchDaemon starts `xswitch daemon` (this binary) with flags
// beyond its defaults, in namespace ns ("" for the bench's own), all of it
// on bench.SwitchCPU, with a directory of its own; it pushes onto undo
// what stops it (saying on log what stopping reported) and removes the
// directory.
func startBenchDaemon(undo *undoStack, ns string, log io.Writer, flags ...string) (*daemonProcess, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the xswitch binary to run: %w", err)
	}
	dir, err := os.MkdirTemp("", "xswitch-bench-")
	if err != nil {
		return nil, err
	}
	undo.push(func() { os.RemoveAll(dir) })
	d, err := startDaemonProcess(exe, ns, dir, bench.SwitchCPU, flags...)
	if err != nil {
		return nil, err
	}
	undo.push(func() {
		if err := d.stop(); err != nil {
			fmt.Fprintln(log, err)
		}
	})
	return d, nil
}

// setupXswitchBench starts a daemon and builds the case's bridge in it,
// pushing onto undo what takes it down again.
func setupXswitchBench(ctx context.Context, undo *undoStack, hosts bench.Hosts, xb xswitchBench) (*daemonProcess, error) {
	d, err := startBenchDaemon(undo, "", hosts.Log, xb.daemonFlags()...)
	if err != nil {
		return nil, err
	}
	if err := d.run(ctx, "wait-ready", "--timeout", daemonProcessTimeout.String()); err != nil {
		return nil, err
	}
	client := &cli{socket: d.sock}
	bridge := hosts.GenPort + "x"
	if _, err := client.call(api.Request{Verb: api.VerbAddBridge, Bridge: bridge}); err != nil {
		return nil, err
	}
	undo.push(func() { client.call(api.Request{Verb: api.VerbDelBridge, Bridge: bridge}) })
	ports := []*api.PortConfig{
		{Name: hosts.GenPort, OFPort: 1, Netns: hosts.GenNetns, Peer: bench.PeerName, MTU: hosts.MTU},
		{Name: hosts.RcvPort, OFPort: 2, Netns: hosts.RcvNetns, Peer: bench.PeerName, MTU: hosts.MTU},
	}
	for _, pc := range ports {
		if _, err := client.call(api.Request{Verb: api.VerbAddPort, Bridge: bridge, AddPort: pc}); err != nil {
			return nil, err
		}
	}
	if xb.controller {
		return d, useBenchController(ctx, undo, client, bridge)
	}
	if len(xb.rules.Groups) > 0 {
		if _, err := client.call(api.Request{Verb: api.VerbAddGroups, Bridge: bridge, Groups: xb.rules.Groups}); err != nil {
			return nil, err
		}
	}
	for _, m := range xb.rules.Meters {
		if _, err := client.call(api.Request{Verb: api.VerbAddMeter, Bridge: bridge, Meters: []string{m}}); err != nil {
			return nil, err
		}
	}
	if len(xb.rules.Flows) == 0 {
		return d, nil
	}
	// The flows replace the new bridge's NORMAL rule, as the OVS cases'
	// replace OVS's.
	if _, err := client.call(api.Request{Verb: api.VerbDelFlows, Bridge: bridge}); err != nil {
		return nil, err
	}
	if _, err := client.call(api.Request{Verb: api.VerbAddFlows, Bridge: bridge, Flows: xb.rules.Flows}); err != nil {
		return nil, err
	}
	resp, err := client.call(api.Request{Verb: api.VerbShow, Bridge: bridge})
	if err != nil {
		return nil, err
	}
	if len(resp.Bridges) != 1 {
		return nil, fmt.Errorf("show %s answered %d bridges", bridge, len(resp.Bridges))
	}
	if n := resp.Bridges[0].Flows; n != len(xb.rules.Flows) {
		return nil, fmt.Errorf("bridge %s holds %d flows after adding %d", bridge, n, len(xb.rules.Flows))
	}
	return d, nil
}

// xswitchSwitchd is bench.Case.Switchd of the xswitch case: `xswitch
// daemon --ovsdb` with its default flags, in the database's namespace,
// all of it on bench.SwitchCPU.
func xswitchSwitchd(ctx context.Context, db bench.OVSDBServer, log io.Writer) (_ func(), err error) {
	var undo undoStack
	defer func() {
		if err != nil {
			undo.run()
		}
	}()
	d, err := startBenchDaemon(&undo, db.Netns, log, "--ovsdb", db.Socket)
	if err != nil {
		return nil, err
	}
	if err := d.run(ctx, "wait-ready", "--timeout", daemonProcessTimeout.String()); err != nil {
		return nil, err
	}
	return undo.run, nil
}

// useBenchController points bridge at a bench.Controller in fail mode
// secure, and waits until the controller has installed its table-miss
// flow in place of NORMAL.
func useBenchController(ctx context.Context, undo *undoStack, client *cli, bridge string) error {
	ctl, err := bench.StartController(ctx, "")
	if err != nil {
		return err
	}
	undo.push(ctl.Stop)
	if _, err := client.call(api.Request{Verb: api.VerbSetFailMode, Bridge: bridge, FailMode: "secure"}); err != nil {
		return err
	}
	target := fmt.Sprintf("tcp:127.0.0.1:%d", ctl.Port)
	if _, err := client.call(api.Request{Verb: api.VerbSetController, Bridge: bridge, Targets: []string{target}}); err != nil {
		return err
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := client.call(api.Request{Verb: api.VerbDumpFlows, Bridge: bridge})
		if err != nil {
			return err
		}
		if len(resp.Flows) == 1 && strings.Contains(resp.Flows[0].Actions, "CONTROLLER") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the controller at %s did not install its table-miss flow on %s within 15s", target, bridge)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// xswitchTunnel is xswitch as a bench.TunnelSwitch: `xswitch daemon` in
// the host's namespace with its default flags, as a host runs it, all of
// it on bench.SwitchCPU, configured with the CLI as an operator would: a
// bridge with the host's veth and a VXLAN port to the remote, over the
// underlay the daemon finds by the routes of its namespace.
func xswitchTunnel(ctx context.Context, host, remote bench.TunnelHost, log io.Writer) (_ func(), err error) {
	var undo undoStack
	defer func() {
		if err != nil {
			undo.run()
		}
	}()
	d, err := startBenchDaemon(&undo, host.Netns, log)
	if err != nil {
		return nil, err
	}
	const bridge, tunnel = "br-int", "vxlan0"
	for _, args := range [][]string{
		{"wait-ready", "--timeout", daemonProcessTimeout.String()},
		{"add-br", bridge},
		{"add-port", bridge, host.Port},
		{"add-port", bridge, tunnel, "--type", "vxlan", "--remote-ip", remote.UnderlayAddr.Addr().String(),
			"--key", strconv.Itoa(bench.TunnelVNI), "--dst-port", strconv.Itoa(bench.VXLANPort)},
	} {
		if err := d.run(ctx, args...); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(log, "xswitch daemon in %s, all of it on CPU %d: bridge %s of %s and %s (VNI %d to %s)\n",
		host.Netns, bench.SwitchCPU, bridge, host.Port, tunnel, bench.TunnelVNI, remote.UnderlayAddr.Addr())
	return undo.run, nil
}

func runBench(ctx context.Context, w io.Writer, opts benchOptions) error {
	if os.Geteuid() != 0 {
		return errors.New("bench needs root: it creates network namespaces and attaches XDP programs")
	}
	cases, err := benchCases(opts.cases)
	if err != nil {
		return err
	}
	workloads, err := benchWorkloads(opts.workloads)
	if err != nil {
		return err
	}
	generator, err := bench.ParseGenerator(opts.generator)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	progress := w
	if opts.json {
		progress = os.Stderr
	}
	mtu := "MTU 1500"
	if opts.mtu != 0 {
		mtu = fmt.Sprintf("MTU %d", opts.mtu)
	}
	fmt.Fprintf(progress, "== workloads %s; %v per case, workload and round, %d rounds; %s; generator %s on CPU 0, switches on CPU 1\n",
		strings.Join(opts.workloads, ","), opts.duration, opts.rounds, mtu, generator)
	results, err := bench.Run(ctx, bench.Options{
		Cases: cases, Workloads: workloads, Duration: opts.duration, Rounds: opts.rounds,
		MTU: opts.mtu, Generator: generator, Progress: progress, Tag: randomTag,
	})
	if err != nil {
		return err
	}
	if opts.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(results); err != nil {
			return err
		}
	} else {
		printBenchTables(w, workloads, results)
	}
	var failed []string
	for _, r := range results {
		if r.Error != "" {
			failed = append(failed, fmt.Sprintf("%s under %s: %s", r.Case, r.Workload, r.Error))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d measurements failed:\n  %s", len(failed), strings.Join(failed, "\n  "))
	}
	return nil
}

func benchWorkloads(names []string) ([]bench.Workload, error) {
	var workloads []bench.Workload
	for _, name := range names {
		w, err := bench.ParseWorkload(name)
		if err != nil {
			return nil, err
		}
		workloads = append(workloads, w)
	}
	if len(workloads) == 0 {
		return nil, errors.New("no bench workloads given")
	}
	return workloads, nil
}

// benchBaselines are the cases every other is compared with, in the
// tables' column order: the Linux bridge and OVS between two namespaces,
// the same as stateful firewalls, then the kernel's and OVS's pairs
// across a tunnel. A table compares with those it has a row for.
var benchBaselines = []string{"linux-bridge", "ovs", "bridge-nft", "ovs-ct", "kernel-vxlan", "ovs-vxlan"}

// cpuBaseline is the case whose CPU per frame a UDP table compares every
// case's with: the kernel's own redirect between the two veths.
const cpuBaseline = "xdp-redirect"

// printBenchTables prints one table per workload.
func printBenchTables(w io.Writer, workloads []bench.Workload, results []bench.Result) {
	for i, wl := range workloads {
		if i > 0 {
			fmt.Fprintln(w)
		}
		var rows []bench.Result
		for _, r := range results {
			if r.Workload == wl.Name {
				rows = append(rows, r)
			}
		}
		fmt.Fprintf(w, "== %s%s\n", wl.Name, generatorNote(rows))
		printBenchTable(w, wl.Kind, rows)
	}
}

// generatorNote says, for a UDP table's heading, which generator sent
// and what it reached alone.
func generatorNote(rows []bench.Result) string {
	i := slices.IndexFunc(rows, func(r bench.Result) bool { return r.Case == bench.GenOnly })
	if i < 0 || rows[i].Generator == "" {
		return ""
	}
	g := rows[i]
	if g.Samples == 0 {
		return fmt.Sprintf(": generator %s, which sent nothing", g.Generator)
	}
	return fmt.Sprintf(": generator %s, %.3f Mpps alone (%s), %.0f ns/frame of its own", g.Generator, g.MedianSentPPS/1e6, bench.GenOnly, g.CPUNsPerFrame)
}

// printBenchTable prints the results of one workload of the given kind.
func printBenchTable(w io.Writer, kind bench.WorkloadKind, rows []bench.Result) {
	// ratio is how r compares with base in the figure each table
	// compares, as a table cell.
	ratio := func(r, base bench.Result) string {
		switch kind {
		case bench.KindUDP:
			x, bound := bench.RateRatio(r, base)
			format := [...]string{bench.RatioExact: "%.2fx", bench.RatioAtLeast: "≥%.2fx", bench.RatioAtMost: "≤%.2fx", bench.RatioOpen: "(%.2fx)"}[bound]
			return fmt.Sprintf(format, x)
		case bench.KindTCP:
			return fmt.Sprintf("%.2fx", r.MedianGbps/base.MedianGbps)
		case bench.KindCRR:
			return fmt.Sprintf("%.2fx", r.MedianCPS/base.MedianCPS)
		case bench.KindConns:
			return fmt.Sprintf("%.2fx", r.BytesPerConn/base.BytesPerConn)
		case bench.KindAddPort:
			return fmt.Sprintf("%.2fx", r.AddPortMillis/base.AddPortMillis)
		case bench.KindPorts:
			return fmt.Sprintf("%.2fx", r.OFPortSeconds/base.OFPortSeconds)
		default:
			return fmt.Sprintf("%.2fx", r.P50Micros/base.P50Micros)
		}
	}
	compared := func(r bench.Result) bool { return r.Samples > 0 && r.Case != bench.GenOnly }
	var baselines []bench.Result
	var versus string // the baselines' headers
	for _, name := range benchBaselines {
		i := slices.IndexFunc(rows, func(r bench.Result) bool { return r.Case == name })
		if i < 0 {
			continue
		}
		baselines = append(baselines, rows[i])
		versus += "\tvs " + name
	}
	var header string
	switch kind {
	case bench.KindUDP:
		header = "case\tMpps\trange\tGbit/s\tof sent\tns/frame"
	case bench.KindTCP:
		header = "case\tGbit/s\trange"
	case bench.KindCRR:
		header = "case\tconn/s\trange\tfailed\tcpu1 busy"
	case bench.KindConns:
		header = "case\tconnections\tcounted by\tRSS before MiB\tRSS after MiB\tbytes/conn\tfill s"
	case bench.KindAddPort:
		header = "case\tforwarding ms\trange ms\tovs-vsctl ms\tports"
	case bench.KindPorts:
		header = "case\tports\tovs-vsctl s\tall ofport s\trange s\tms/port"
	default:
		header = "case\tp50 µs\tp99 µs\trange µs\tlost"
	}
	// For UDP, what the CPU per frame is next to the kernel's redirect's,
	// and where the CPUs went: the generator's softirq is where XDP
	// forwards (the fast path, the kernel's bridge and redirect), the
	// switch's CPU is where user space does.
	cpus := ""
	var cpuBase bench.Result
	if kind == bench.KindUDP {
		if i := slices.IndexFunc(rows, func(r bench.Result) bool { return r.Case == cpuBaseline }); i >= 0 {
			cpuBase = rows[i]
			cpus = "\tcpu vs " + cpuBaseline
		}
		cpus += "\tcpu0 softirq\tcpu1 busy"
	}
	bounds := map[bench.RatioBound]bool{}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s%s%s\t\n", header, versus, cpus)
	for _, r := range rows {
		var figures []string
		switch {
		case r.Samples == 0:
			n := strings.Count(header, "\t")
			figures = slices.Repeat([]string{"-"}, n)
		case kind == bench.KindUDP:
			figures = []string{fmt.Sprintf("%.3f", r.MedianPPS/1e6), fmt.Sprintf("%.3f-%.3f", r.MinPPS/1e6, r.MaxPPS/1e6), fmt.Sprintf("%.2f", r.MedianGbps),
				fmt.Sprintf("%.1f%%", 100*r.CarriedShare), fmt.Sprintf("%.0f", r.CPUNsPerFrame)}
		case kind == bench.KindTCP:
			figures = []string{fmt.Sprintf("%.2f", r.MedianGbps), fmt.Sprintf("%.2f-%.2f", r.MinGbps, r.MaxGbps)}
		case kind == bench.KindCRR:
			figures = []string{fmt.Sprintf("%.0f", r.MedianCPS), fmt.Sprintf("%.0f-%.0f", r.MinCPS, r.MaxCPS), fmt.Sprint(r.Lost), fmt.Sprintf("%.0f%%", r.SwitchBusyPct)}
		case kind == bench.KindConns:
			by := "receiver"
			if r.CountedBySwitch {
				by = "switch"
			}
			figures = []string{fmt.Sprint(r.Connections), by, fmt.Sprintf("%.1f", float64(r.RSSBefore)/(1<<20)), fmt.Sprintf("%.1f", float64(r.RSSAfter)/(1<<20)),
				fmt.Sprintf("%.0f", r.BytesPerConn), fmt.Sprintf("%.1f", r.FillSeconds)}
		case kind == bench.KindAddPort:
			figures = []string{fmt.Sprintf("%.1f", r.AddPortMillis), fmt.Sprintf("%.1f-%.1f", r.MinAddPortMillis, r.MaxAddPortMillis),
				fmt.Sprintf("%.1f", r.VsctlMillis), fmt.Sprint(r.Samples)}
		case kind == bench.KindPorts:
			figures = []string{fmt.Sprint(r.Ports), fmt.Sprintf("%.2f", r.VsctlSeconds), fmt.Sprintf("%.2f", r.OFPortSeconds),
				fmt.Sprintf("%.2f-%.2f", r.MinOFPortSeconds, r.MaxOFPortSeconds), fmt.Sprintf("%.2f", 1000*r.OFPortSeconds/float64(r.Ports))}
		default:
			figures = []string{fmt.Sprintf("%.0f", r.P50Micros), fmt.Sprintf("%.0f", r.P99Micros), fmt.Sprintf("%.0f-%.0f", r.MinMicros, r.MaxMicros), fmt.Sprint(r.Lost)}
		}
		for _, base := range baselines {
			cell := "-"
			if compared(r) && compared(base) {
				cell = ratio(r, base)
				if kind == bench.KindUDP {
					_, bound := bench.RateRatio(r, base)
					bounds[bound] = true
				}
			}
			figures = append(figures, cell)
		}
		if kind == bench.KindUDP {
			if cpuBase.Case != "" {
				cell := "-"
				if compared(r) && compared(cpuBase) && cpuBase.CPUNsPerFrame > 0 {
					cell = fmt.Sprintf("%.2fx", r.CPUNsPerFrame/cpuBase.CPUNsPerFrame)
				}
				figures = append(figures, cell)
			}
			if r.Samples == 0 {
				figures = append(figures, "-", "-")
			} else {
				figures = append(figures, fmt.Sprintf("%.0f%%", r.GenSoftirqPct), fmt.Sprintf("%.0f%%", r.SwitchBusyPct))
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t\n", r.Case, strings.Join(figures, "\t"))
	}
	tw.Flush()
	for _, note := range []struct {
		bound bench.RatioBound
		text  string
	}{
		{bench.RatioAtLeast, fmt.Sprintf("≥: the case carried all the generator sent (of sent ≥ %.0f%%): it may carry more", 100*bench.GeneratorBoundShare)},
		{bench.RatioAtMost, "≤: the baseline carried all the generator sent: it may carry more"},
		{bench.RatioOpen, "(…): both carried all the generator sent: ns/frame compares them"},
	} {
		if bounds[note.bound] {
			fmt.Fprintln(w, note.text)
		}
	}
}
