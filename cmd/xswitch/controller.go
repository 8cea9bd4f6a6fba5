package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/xswitch/xswitch/control/api"
)

// The controller verbs, as ovs-vsctl spells them.

func (c *cli) setControllerCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "set-controller BRIDGE TARGET...",
		Short: "Set the bridge's OpenFlow controllers, replacing those it had, as ovs-vsctl set-controller does",
		Long: `Set the bridge's OpenFlow controllers, replacing those it had, as
ovs-vsctl set-controller does. A target is tcp:IP[:PORT], a controller to
connect to, or ptcp:[PORT][:IP], an address to accept controllers (and
ovs-ofctl) on; the port is 6653 unless given, a ptcp target listens on
every IPv4 address unless given one, and an IPv6 address goes in brackets.`,
		Example: `  xswitch set-controller br0 tcp:192.0.2.10
  xswitch set-controller br0 tcp:[2001:db8::10]:6653 ptcp:6653:127.0.0.1`,
		Args:              cobra.MinimumNArgs(2),
		ValidArgsFunction: c.completeBridge,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := c.call(api.Request{Verb: api.VerbSetController, Bridge: args[0], Targets: args[1:]})
			return err
		},
	}
}

func (c *cli) delControllerCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "del-controller BRIDGE",
		Short:             "Remove the bridge's OpenFlow controllers",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: c.completeBridge,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := c.call(api.Request{Verb: api.VerbDelController, Bridge: args[0]})
			return err
		},
	}
}

func (c *cli) getControllerCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "get-controller BRIDGE",
		Short:             "Print the bridge's OpenFlow controller targets, one a line",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: c.completeBridge,
		RunE: func(cmd *cobra.Command, args []string) error {
			bridges, err := c.show(args[0])
			if err != nil {
				return err
			}
			targets := controllerTargets(bridges[0])
			return c.emit(cmd.OutOrStdout(), controllersJSON{Bridge: args[0], Controllers: targets}, func(w io.Writer) {
				for _, t := range targets {
					fmt.Fprintln(w, t)
				}
			})
		},
	}
}

func (c *cli) setFailModeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "set-fail-mode BRIDGE standalone|secure",
		Short: "Set what the bridge does while no controller is connected",
		Long: `Set what the bridge does while no OpenFlow controller is connected, as
ovs-vsctl set-fail-mode does: standalone (the default) forwards as NORMAL
does, learning; secure never adds flows by itself and forwards on the flows
it has.`,
		Args: cobra.ExactArgs(2),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 1 {
				return []string{"standalone", "secure"}, cobra.ShellCompDirectiveNoFileComp
			}
			return c.completeBridge(cmd, args, toComplete)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := c.call(api.Request{Verb: api.VerbSetFailMode, Bridge: args[0], FailMode: args[1]})
			return err
		},
	}
}

func (c *cli) delFailModeCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "del-fail-mode BRIDGE",
		Short:             "Unset the bridge's fail mode: standalone, the default",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: c.completeBridge,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := c.call(api.Request{Verb: api.VerbDelFailMode, Bridge: args[0]})
			return err
		},
	}
}

func (c *cli) getFailModeCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "get-fail-mode BRIDGE",
		Short:             "Print the bridge's fail mode; nothing when it is not set (standalone)",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: c.completeBridge,
		RunE: func(cmd *cobra.Command, args []string) error {
			bridges, err := c.show(args[0])
			if err != nil {
				return err
			}
			mode := bridges[0].FailMode
			return c.emit(cmd.OutOrStdout(), failModeJSON{Bridge: args[0], FailMode: mode}, func(w io.Writer) {
				if mode != "" {
					fmt.Fprintln(w, mode)
				}
			})
		},
	}
}

// controllerTargets are a bridge's targets, in the order set.
func controllerTargets(b api.BridgeStatus) []string {
	out := make([]string, 0, len(b.Controllers))
	for _, c := range b.Controllers {
		out = append(out, c.Target)
	}
	return out
}

// controllersJSON is get-controller's answer.
type controllersJSON struct {
	Bridge      string   `json:"bridge"`
	Controllers []string `json:"controllers"`
}

// failModeJSON is get-fail-mode's answer; "" when it is not set.
type failModeJSON struct {
	Bridge   string `json:"bridge"`
	FailMode string `json:"fail_mode"`
}
