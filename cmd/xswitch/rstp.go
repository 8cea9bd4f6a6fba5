package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xswitch/xswitch/control/api"
)

func (c *cli) rstpShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "rstp-show [BRIDGE]",
		Short: "Print the spanning tree of every bridge that runs RSTP, as ovs-appctl rstp/show does",
		Long: `Print the spanning tree of every bridge that runs RSTP, or of the one
named, as ovs-appctl rstp/show does: the root's and the bridge's
identifiers and times, the root port and its cost, and each port's role,
state, path cost, priority and number, and, beyond OVS's columns, the
protocol it speaks (STP once an 802.1D bridge answered on it) and whether
it is an edge port.`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: c.completeBridge,
		RunE: func(cmd *cobra.Command, args []string) error {
			resp, err := c.call(api.Request{Verb: api.VerbRSTPShow, Bridge: strings.Join(args, "")})
			if err != nil {
				return err
			}
			trees := orEmpty(resp.RSTP)
			return c.emit(cmd.OutOrStdout(), rstpShowJSON{Bridges: trees}, func(w io.Writer) { printRSTP(w, trees) })
		},
	}
}

func (c *cli) setSTPCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "set-stp BRIDGE on|off",
		Short: "Turn RSTP on or off: xswitch set Bridge BRIDGE rstp_enable=true|false",
		Args:  cobra.ExactArgs(2),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 1 {
				return []string{"on", "off"}, cobra.ShellCompDirectiveNoFileComp
			}
			return c.completeBridge(cmd, args, toComplete)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			on := map[string]string{"on": "true", "off": "false"}[args[1]]
			if on == "" {
				return fmt.Errorf("set-stp %s %s: want on or off", args[0], args[1])
			}
			_, err := c.call(api.Request{Verb: api.VerbSet, Table: api.TableBridge, Record: args[0],
				Columns: []string{"rstp_enable=" + on}})
			return err
		},
	}
}

// rstpShowJSON is rstp-show's answer.
type rstpShowJSON struct {
	Bridges []api.RSTPStatus `json:"bridges"`
}

// printRSTP prints spanning trees in ovs-appctl rstp/show's shape, with
// two columns of its own after OVS's.
func printRSTP(w io.Writer, trees []api.RSTPStatus) {
	for _, t := range trees {
		fmt.Fprintf(w, "---- %s ----\n", t.Bridge)
		fmt.Fprintln(w, "Root ID:")
		printRSTPID(w, t.RootID)
		if t.IsRoot {
			fmt.Fprintln(w, "  This bridge is the root")
		} else {
			fmt.Fprintf(w, "  root-port       %s\n", t.RootPort)
			fmt.Fprintf(w, "  root-path-cost  %d\n", t.RootPathCost)
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Bridge ID:")
		printRSTPID(w, t.BridgeID)
		fmt.Fprintln(w)
		width := 10
		for _, p := range t.Ports {
			width = max(width, len(p.Name))
		}
		fmt.Fprintf(w, "  %-*s %-10s %-10s %-8s %-7s %-5s %s\n", width, "Interface", "Role", "State", "Cost", "Pri.Nbr", "Proto", "Edge")
		fmt.Fprintf(w, "  %s ---------- ---------- -------- ------- ----- ----\n", strings.Repeat("-", width))
		for _, p := range t.Ports {
			edge := "no"
			if p.Edge {
				edge = "yes"
			}
			fmt.Fprintf(w, "  %-*s %-10s %-10s %-8d %-7s %-5s %s\n", width, p.Name, capitalize(p.Role), capitalize(p.State),
				p.PathCost, fmt.Sprintf("%d.%d", p.Priority, p.Number), strings.ToUpper(p.Protocol), edge)
		}
		fmt.Fprintln(w)
	}
}

func printRSTPID(w io.Writer, id api.RSTPID) {
	fmt.Fprintf(w, "  stp-priority    %d\n", id.Priority)
	fmt.Fprintf(w, "  stp-system-id   %s\n", id.Address)
	fmt.Fprintf(w, "  stp-hello-time  %ds\n", id.HelloTime)
	fmt.Fprintf(w, "  stp-max-age     %ds\n", id.MaxAge)
	fmt.Fprintf(w, "  stp-fwd-delay   %ds\n", id.ForwardDelay)
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
