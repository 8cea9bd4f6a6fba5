package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/xswitch/xswitch/control/api"
)

// The meter verbs, as ovs-ofctl's: a meter is written as add-meter takes
// it, "meter=1 kbps burst stats bands=type=drop rate=1000 burst_size=100".

func (c *cli) meterChangeCommand(verb, use, short, long, example string) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short, Long: long, Example: example,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: c.completeBridge,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := c.call(api.Request{Verb: verb, Bridge: args[0], Meters: args[1:]})
			return err
		},
	}
}

func (c *cli) addMeterCommand() *cobra.Command {
	return c.meterChangeCommand(api.VerbAddMeter, "add-meter BRIDGE METER", "Add a meter (ovs-ofctl syntax)",
		`Add a meter, in ovs-ofctl's syntax: meter=N, kbps or pktps, burst and stats,
then bands=, each band "type=drop" or "type=dscp_remark prec_level=L" with its
rate and, with burst, its burst_size. A rule's meter:N sends its frames through
it, whichever path carries them: user space and the in-kernel fast path draw on
one budget.`,
		`  xswitch add-meter br0 "meter=1 kbps burst stats bands=type=drop rate=10000 burst_size=1000"
  xswitch add-flow br0 "priority=100,ip,actions=meter:1,NORMAL"`)
}

func (c *cli) modMeterCommand() *cobra.Command {
	return c.meterChangeCommand(api.VerbModMeter, "mod-meter BRIDGE METER", "Replace a meter's flags and bands",
		`Replace the meter of METER's id with METER: its counters go on.`, "")
}

func (c *cli) delMetersCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "del-meters BRIDGE [meter=N]",
		Short: "Delete a meter, or every meter, and the rules that use it",
		Long: `Delete meter N, or every meter, and with it the rules that use it, as
OpenFlow says.`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: c.completeBridge,
		RunE: func(cmd *cobra.Command, args []string) error {
			req := api.Request{Verb: api.VerbDelMeters, Bridge: args[0]}
			if len(args) == 2 {
				req.Match = args[1]
			}
			_, err := c.call(req)
			return err
		},
	}
}

func (c *cli) dumpMetersCommand(verb string) *cobra.Command {
	use, short := "dump-meters BRIDGE [meter=N]", "Print the meters (or meter N), as ovs-ofctl does"
	if verb == api.VerbMeterStats {
		use, short = "meter-stats BRIDGE [meter=N]", "Print the meters' counters and their bands', as ovs-ofctl does"
	}
	return &cobra.Command{
		Use:               use,
		Short:             short,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: c.completeBridge,
		RunE: func(cmd *cobra.Command, args []string) error {
			req := api.Request{Verb: verb, Bridge: args[0]}
			if len(args) == 2 {
				req.Match = args[1]
			}
			resp, err := c.call(req)
			if err != nil {
				return err
			}
			return c.emit(cmd.OutOrStdout(), metersJSON{Bridge: args[0], Meters: resp.Meters}, func(w io.Writer) {
				for _, m := range resp.Meters {
					text := m.Text
					if verb == api.VerbMeterStats {
						text = m.StatsText
					}
					fmt.Fprintln(w, text)
				}
			})
		},
	}
}

// metersJSON is dump-meters' and meter-stats' answer.
type metersJSON struct {
	Bridge string            `json:"bridge"`
	Meters []api.MeterStatus `json:"meters"`
}
