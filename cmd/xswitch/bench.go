package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/xswitch/xswitch/bench"
	"github.com/xswitch/xswitch/control"
)

// benchOptions are bench's flags.
type benchOptions struct {
	duration time.Duration
	rounds   int
	size     int
	cases    []string
	json     bool
}

const defaultBenchCases = "xswitch,xswitch-rule,linux-bridge,xdp-redirect,ovs"

func (c *cli) benchCommand() *cobra.Command {
	var opts benchOptions
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure forwarding throughput: xswitch against the Linux bridge and XDP redirect",
		Long: `Measure how many frames per second cross from one network namespace to
another through each forwarding path, one UDP frame size at a time.

A generator transmits frames with BPF_PROG_RUN in live-frames mode out of a
veth in its namespace, pinned to CPU 0; an XDP program on the receiving veth
counts and drops them. The cases:

  xswitch        a private in-process xswitch daemon, NORMAL forwarding
  xswitch-rule   the same with one flow: in_port=1,actions=output:2
  linux-bridge   the kernel's bridge
  xdp-redirect   an XDP program redirecting from veth to veth: the machine's limit
  ovs            Open vSwitch (not driven yet: reported as skipped)

Each case builds its own namespaces and removes them afterwards, also on
failure or Ctrl-C. The receiver is sampled once a second and the first
second discarded; rounds alternate the cases. xswitch's forwarding
goroutine is not pinned and may share CPU 0 with the generator. Gbit/s
counts frame bytes only (no FCS, preamble or gap). Needs root.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBench(cmd.Context(), os.Stdout, opts)
		},
	}
	cmd.Flags().DurationVar(&opts.duration, "duration", 5*time.Second, "how long each case runs per round (at least 2s)")
	cmd.Flags().IntVar(&opts.rounds, "rounds", 3, "how many times each case runs")
	cmd.Flags().IntVar(&opts.size, "size", 64, fmt.Sprintf("Ethernet frame size in bytes without FCS, %d to %d", bench.MinFrameSize, bench.MaxFrameSize))
	cmd.Flags().StringSliceVar(&opts.cases, "cases", strings.Split(defaultBenchCases, ","), "the cases to run, in order")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the results as JSON")
	return cmd
}

func benchCases(names []string) ([]bench.Case, error) {
	var cases []bench.Case
	for _, name := range names {
		switch name {
		case "xswitch":
			cases = append(cases, xswitchBenchCase(name, nil))
		case "xswitch-rule":
			cases = append(cases, xswitchBenchCase(name, []string{"in_port=1,actions=output:2"}))
		case "linux-bridge":
			cases = append(cases, bench.LinuxBridge())
		case "xdp-redirect":
			cases = append(cases, bench.XDPRedirect())
		case "ovs":
			cases = append(cases, bench.OVS())
		default:
			return nil, fmt.Errorf("unknown bench case %q: want some of %s", name, defaultBenchCases)
		}
	}
	if len(cases) == 0 {
		return nil, errors.New("no bench cases given")
	}
	return cases, nil
}

// xswitchBenchCase bridges the two namespaces through a private daemon's
// bridge with the given flows.
func xswitchBenchCase(name string, flows []string) bench.Case {
	return bench.Case{Name: name, Setup: func(ctx context.Context, hosts bench.Hosts) (func(), error) {
		var undo undoStack
		if err := setupXswitchBench(&undo, hosts, flows); err != nil {
			undo.run()
			return nil, err
		}
		return undo.run, nil
	}}
}

func setupXswitchBench(undo *undoStack, hosts bench.Hosts, flows []string) error {
	dir, err := os.MkdirTemp("", "xswitch-bench-")
	if err != nil {
		return err
	}
	undo.push(func() { os.RemoveAll(dir) })
	client, closeDaemon, err := startPrivateDaemon(dir)
	if err != nil {
		return err
	}
	undo.push(closeDaemon)
	bridge := hosts.GenPort + "x"
	if _, err := client.call(control.Request{Verb: control.VerbAddBridge, Bridge: bridge}); err != nil {
		return err
	}
	undo.push(func() { client.call(control.Request{Verb: control.VerbDelBridge, Bridge: bridge}) })
	ports := []*control.PortConfig{
		{Name: hosts.GenPort, OFPort: 1, Netns: hosts.GenNetns, Peer: bench.PeerName},
		{Name: hosts.RcvPort, OFPort: 2, Netns: hosts.RcvNetns, Peer: bench.PeerName},
	}
	for _, pc := range ports {
		if _, err := client.call(control.Request{Verb: control.VerbAddPort, Bridge: bridge, AddPort: pc}); err != nil {
			return err
		}
	}
	if len(flows) > 0 {
		if _, err := client.call(control.Request{Verb: control.VerbAddFlows, Bridge: bridge, Flows: flows}); err != nil {
			return err
		}
	}
	return nil
}

func runBench(ctx context.Context, w io.Writer, opts benchOptions) error {
	if os.Geteuid() != 0 {
		return errors.New("bench needs root: it creates network namespaces and attaches XDP programs")
	}
	cases, err := benchCases(opts.cases)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	progress := w
	if opts.json {
		progress = os.Stderr
	}
	fmt.Fprintf(progress, "== %d-byte frames, %v per case, %d rounds; generator on CPU 0\n", opts.size, opts.duration, opts.rounds)
	results, err := bench.Run(ctx, bench.Options{
		Cases: cases, Duration: opts.duration, Rounds: opts.rounds, Size: opts.size,
		Progress: progress, Tag: randomTag,
	})
	if err != nil {
		return err
	}
	if opts.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(results)
	}
	printBenchTable(w, results)
	return nil
}

func printBenchTable(w io.Writer, results []bench.Result) {
	var baseline float64
	for _, r := range results {
		if r.Case == "linux-bridge" && r.Skipped == "" {
			baseline = r.MedianPPS
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tMpps\trange\tGbit/s\tvs linux-bridge\t")
	for _, r := range results {
		if r.Skipped != "" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t\n", r.Case)
			continue
		}
		ratio := "-"
		if baseline > 0 {
			ratio = fmt.Sprintf("%.2fx", r.MedianPPS/baseline)
		}
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f-%.3f\t%.2f\t%s\t\n", r.Case, r.MedianPPS/1e6, r.MinPPS/1e6, r.MaxPPS/1e6, r.MedianGbps, ratio)
	}
	tw.Flush()
}
