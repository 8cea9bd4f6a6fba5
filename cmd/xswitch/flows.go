package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/flow"
)

func (c *cli) addFlowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "add-flow BRIDGE FLOW",
		Short: "Add a rule to a bridge's flow table (ovs-ofctl syntax)",
		Long: `Add a rule to a bridge's flow table, in ovs-ofctl's syntax. A rule with the
same match and priority as an existing one replaces it.`,
		Example: `  xswitch add-flow br0 "priority=100,ip,nw_dst=10.0.0.2,actions=output:2"
  xswitch add-flow br0 "tcp,tp_dst=22,actions=drop"`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: c.completeBridge,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := c.call(api.Request{Verb: api.VerbAddFlows, Bridge: args[0], Flows: args[1:]})
			return err
		},
	}
}

func (c *cli) addFlowsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "add-flows BRIDGE FILE|-",
		Short: "Add the rules in FILE (or standard input), one per line, all or none",
		Long: `Add the rules in FILE, or standard input for "-", one per line. Blank lines
and lines starting with # are skipped. Either every rule is added or, if one
is wrong, none is; the error names the line. FILE may be of any size: it is
streamed to the daemon, which saves the rules as one change.`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: c.completeBridgeThenFile,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := openInput(cmd, args[1])
			if err != nil {
				return err
			}
			defer r.Close()
			_, err = c.callWithBody(api.Request{Verb: api.VerbAddFlows, Bridge: args[0]}, r)
			return err
		},
	}
}

func (c *cli) modFlowsCommand() *cobra.Command {
	var strict bool
	cmd := &cobra.Command{
		Use:   "mod-flows BRIDGE FLOW",
		Short: "Replace the actions of the rules that FLOW's match selects",
		Long: `Replace the actions of every rule whose match is at least as specific as
FLOW's, or with --strict of the one rule with exactly FLOW's match and
priority. Counters and timeouts are kept.`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: c.completeBridge,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := c.call(api.Request{Verb: api.VerbModFlows, Bridge: args[0], Flows: args[1:], Strict: strict})
			return err
		},
	}
	cmd.Flags().BoolVar(&strict, "strict", false, "match priority and fields exactly")
	return cmd
}

func (c *cli) delFlowsCommand() *cobra.Command {
	var strict bool
	cmd := &cobra.Command{
		Use:               "del-flows BRIDGE [MATCH]",
		Short:             "Delete the rules MATCH selects (all of them without MATCH)",
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: c.completeBridge,
		RunE: func(cmd *cobra.Command, args []string) error {
			req := api.Request{Verb: api.VerbDelFlows, Bridge: args[0], Strict: strict}
			if len(args) == 2 {
				req.Match = args[1]
			}
			_, err := c.call(req)
			return err
		},
	}
	cmd.Flags().BoolVar(&strict, "strict", false, "match priority and fields exactly")
	return cmd
}

func (c *cli) dumpFlowsCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "dump-flows BRIDGE [MATCH]",
		Short:             "Print the rules (those MATCH selects) with their counters, as ovs-ofctl does",
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: c.completeBridge,
		RunE: func(cmd *cobra.Command, args []string) error {
			req := api.Request{Verb: api.VerbDumpFlows, Bridge: args[0]}
			if len(args) == 2 {
				req.Match = args[1]
			}
			resp, err := c.call(req)
			if err != nil {
				return err
			}
			return c.emit(cmd.OutOrStdout(), toFlowsJSON(args[0], resp.Flows), func(w io.Writer) {
				for _, f := range resp.Flows {
					fmt.Fprintf(w, " %s\n", f.Text)
				}
			})
		},
	}
}

func (c *cli) traceCommand() *cobra.Command {
	var ctNext []string
	cmd := &cobra.Command{
		Use:   "trace BRIDGE PACKET",
		Short: "Show the rule a packet meets and what its actions do",
		Long: `Show the rule a packet meets and what its actions do, NORMAL's learned or
flooded decision included. PACKET is described in flow syntax; fields not
given are zero. Nothing is sent and nothing is learned.

A ct(table=N) sends a copy on to table N with its connection's state,
which the tracker gives frame by frame: the trace follows each such
recirculation with the next --ct-next state (flags such as trk,est, as
ovs-appctl ofproto/trace takes them), or trk,new when none is left.`,
		Example: `  xswitch trace br0 "in_port=1,tcp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_dst=80"
  xswitch trace br0 "in_port=2,udp,nw_src=10.0.0.2,nw_dst=10.0.0.1" --ct-next trk,est`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: c.completeBridge,
		RunE: func(cmd *cobra.Command, args []string) error {
			resp, err := c.call(api.Request{Verb: api.VerbTrace, Bridge: args[0], Match: args[1], CTNext: ctNext})
			if err != nil {
				return err
			}
			return c.emit(cmd.OutOrStdout(), toTraceJSON(args[0], resp.Trace),
				func(w io.Writer) { printTrace(w, args[0], resp.Trace) })
		},
	}
	cmd.Flags().StringArrayVar(&ctNext, "ct-next", nil, "the ct_state of the next recirculation (repeat for the ones after)")
	return cmd
}

// printTrace prints a trace in the shape of ovs-appctl ofproto/trace.
func printTrace(w io.Writer, bridge string, tr *api.Trace) {
	fmt.Fprintf(w, "Flow: %s\n\n", tr.Flow)
	title := fmt.Sprintf("bridge(%q)", bridge)
	fmt.Fprintf(w, "%s\n%s\n", title, strings.Repeat("-", len(title)))
	switch {
	case tr.Malformed != "":
		fmt.Fprintf(w, " Dropped before the flow table: %s\n", tr.Malformed)
	case tr.Rule == nil && tr.Dropped != "":
		fmt.Fprintf(w, " Dropped before the flow table: %s\n", tr.Dropped)
	default:
		printTraceSteps(w, tr.Steps)
		if tr.Dropped != "" {
			fmt.Fprintf(w, "    -> %s\n", tr.Dropped)
		}
	}
	final := tr.FinalFlow
	if final == tr.Flow {
		final = "unchanged"
	}
	fmt.Fprintf(w, "\nFinal flow: %s\n", final)
	actions := "drop"
	if len(tr.Outputs) > 0 {
		ports := make([]string, len(tr.Outputs))
		for i, p := range tr.Outputs {
			ports[i] = fmt.Sprint(p)
			if p == flow.ControllerPort {
				ports[i] = "controller"
			}
		}
		actions = strings.Join(ports, ",")
	}
	fmt.Fprintf(w, "Datapath actions: %s\n", actions)
	if tr.FastPath != "" {
		fmt.Fprintf(w, "Carried in the kernel (fast path): %s\n", tr.FastPath)
	}
}

// printTraceSteps prints each table the packet visits, the rule it meets
// there and that rule's actions, indented by resubmit depth, as
// ovs-appctl ofproto/trace does.
func printTraceSteps(w io.Writer, steps []api.TraceStep) {
	for i, s := range steps {
		indent := strings.Repeat("    ", s.Depth)
		if !s.Lookup {
			fmt.Fprintf(w, "%s    %s\n", indent, s.Action)
			for _, n := range s.Notes {
				fmt.Fprintf(w, "%s     -> %s\n", indent, n)
			}
			continue
		}
		if s.Rule == nil {
			fmt.Fprintf(w, "%s%2d. No match.\n%s    drop\n", indent, s.Table, indent)
		} else {
			match := s.Rule.Match
			if match == "" {
				match = "(any)"
			}
			fmt.Fprintf(w, "%s%2d. %s, priority %d, cookie %#x\n", indent, s.Table, match, s.Rule.Priority, s.Rule.Cookie)
			if i+1 == len(steps) || steps[i+1].Lookup || steps[i+1].Depth != s.Depth {
				fmt.Fprintf(w, "%s    drop\n", indent)
			}
		}
		for _, n := range s.Notes {
			fmt.Fprintf(w, "%s     -> %s\n", indent, n)
		}
	}
}
