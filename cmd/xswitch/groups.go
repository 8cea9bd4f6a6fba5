package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xswitch/xswitch/control/api"
)

// The group and meter verbs, as ovs-ofctl's: a group is written as
// add-group takes it, "group_id=1,type=select,bucket=output:1,bucket=output:2",
// a meter as add-meter does, "meter=1 kbps burst stats bands=type=drop
// rate=1000 burst_size=100".

// textCommand is a verb of a bridge and one text (a group, a meter), which
// request puts in its place.
func (c *cli) textCommand(use, short, long, example string, request func(bridge, text string) api.Request) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short, Long: long, Example: example,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: c.completeBridge,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := c.call(request(args[0], args[1]))
			return err
		},
	}
}

// selectCommand is a verb of a bridge and, optionally, what it selects
// (Match): a group, a meter. print, if given, prints the answer.
func (c *cli) selectCommand(verb, use, short, long string, print func(cmd *cobra.Command, bridge string, resp *api.Response) error) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short, Long: long,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: c.completeBridge,
		RunE: func(cmd *cobra.Command, args []string) error {
			req := api.Request{Verb: verb, Bridge: args[0]}
			if len(args) == 2 {
				req.Match = args[1]
			}
			resp, err := c.call(req)
			if err != nil || print == nil {
				return err
			}
			return print(cmd, args[0], resp)
		},
	}
}

func groupRequest(verb string) func(bridge, text string) api.Request {
	return func(bridge, text string) api.Request {
		return api.Request{Verb: verb, Bridge: bridge, Groups: []string{text}}
	}
}

func (c *cli) addGroupCommand() *cobra.Command {
	return c.textCommand("add-group BRIDGE GROUP", "Add a group (ovs-ofctl syntax)",
		`Add a group, in ovs-ofctl's syntax: group_id, type (all, select, indirect or
ff), and its buckets, each "bucket=" followed by its actions and, for select,
weight:N, for ff, watch_port:P and watch_group:G. A group id in use is refused.`,
		`  xswitch add-group br0 "group_id=1,type=select,bucket=weight:2,output:1,bucket=output:2"
  xswitch add-group br0 "group_id=2,type=ff,bucket=watch_port:1,output:1,bucket=watch_port:2,output:2"`,
		groupRequest(api.VerbAddGroups))
}

func (c *cli) modGroupCommand() *cobra.Command {
	return c.textCommand("mod-group BRIDGE GROUP", "Replace a group's type and buckets",
		`Replace the group of GROUP's group_id with GROUP: its counters start again.`, "", groupRequest(api.VerbModGroup))
}

func (c *cli) insertBucketsCommand() *cobra.Command {
	return c.textCommand("insert-buckets BRIDGE GROUP", "Add buckets to a group",
		`Add buckets to a group: "group_id=N,command_bucket_id=first|last|ID,bucket=...",
before the bucket of that id (last by default).`,
		`  xswitch insert-buckets br0 "group_id=1,command_bucket_id=last,bucket=output:3"`, groupRequest(api.VerbInsertBuckets))
}

func (c *cli) removeBucketsCommand() *cobra.Command {
	return c.textCommand("remove-buckets BRIDGE GROUP", "Remove buckets from a group",
		`Remove buckets from a group: "group_id=N,command_bucket_id=first|last|all|ID"
(all by default).`,
		`  xswitch remove-buckets br0 "group_id=1,command_bucket_id=2"`, groupRequest(api.VerbRemoveBuckets))
}

func (c *cli) addGroupsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "add-groups BRIDGE FILE|-",
		Short: "Add the groups in FILE (or standard input), one per line, all or none",
		Long: `Add the groups in FILE, or standard input for "-", one per line. Blank lines
and lines starting with # are skipped. Either every group is added or none is.`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: c.completeBridgeThenFile,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := openInput(cmd, args[1])
			if err != nil {
				return err
			}
			defer r.Close()
			var groups []string
			scanner := bufio.NewScanner(r)
			scanner.Buffer(nil, 1<<20)
			for scanner.Scan() {
				if line := strings.TrimSpace(scanner.Text()); line != "" && !strings.HasPrefix(line, "#") {
					groups = append(groups, line)
				}
			}
			if err := scanner.Err(); err != nil {
				return err
			}
			_, err = c.call(api.Request{Verb: api.VerbAddGroups, Bridge: args[0], Groups: groups})
			return err
		},
	}
}

// openInput opens file name, or the command's standard input for "-".
func openInput(cmd *cobra.Command, name string) (io.ReadCloser, error) {
	if name == "-" {
		return io.NopCloser(cmd.InOrStdin()), nil
	}
	return os.Open(name)
}

func (c *cli) delGroupsCommand() *cobra.Command {
	return c.selectCommand(api.VerbDelGroups, "del-groups BRIDGE [group_id=N]",
		"Delete a group, or every group, and the rules that send to it",
		`Delete group N, or every group, and with it the rules that send to it, as
OpenFlow says. A group another group forwards to is refused: delete that one
first.`, nil)
}

func (c *cli) dumpGroupsCommand(verb string) *cobra.Command {
	use, short := "dump-groups BRIDGE [GROUP]", "Print the groups (or group GROUP), as ovs-ofctl does"
	if verb == api.VerbDumpGroupStats {
		use, short = "dump-group-stats BRIDGE [GROUP]", "Print the groups' counters and their buckets', as ovs-ofctl does"
	}
	return c.selectCommand(verb, use, short, "", func(cmd *cobra.Command, bridge string, resp *api.Response) error {
		return c.emit(cmd.OutOrStdout(), groupsJSON{Bridge: bridge, Groups: resp.Groups}, func(w io.Writer) {
			for _, g := range resp.Groups {
				if verb == api.VerbDumpGroups {
					fmt.Fprintf(w, " %s\n", g.Text)
					continue
				}
				fmt.Fprintf(w, " group_id=%d,duration=%.3fs,ref_count=%d,packet_count=%d,byte_count=%d",
					g.ID, g.DurationSec, g.RefCount, g.Packets, g.Bytes)
				for i, b := range g.Buckets {
					fmt.Fprintf(w, ",bucket%d:packet_count=%d,byte_count=%d", i, b.Packets, b.Bytes)
				}
				fmt.Fprintln(w)
			}
		})
	})
}

// groupsJSON is dump-groups' and dump-group-stats' answer.
type groupsJSON struct {
	Bridge string            `json:"bridge"`
	Groups []api.GroupStatus `json:"groups"`
}

func meterRequest(verb string) func(bridge, text string) api.Request {
	return func(bridge, text string) api.Request {
		return api.Request{Verb: verb, Bridge: bridge, Meters: []string{text}}
	}
}

func (c *cli) addMeterCommand() *cobra.Command {
	return c.textCommand("add-meter BRIDGE METER", "Add a meter (ovs-ofctl syntax)",
		`Add a meter, in ovs-ofctl's syntax: meter=N, kbps or pktps, burst and stats,
then bands=, each band "type=drop" or "type=dscp_remark prec_level=L" with its
rate and, with burst, its burst_size. A rule's meter:N sends its frames through
it, whichever path carries them: user space and the in-kernel fast path draw on
one budget.`,
		`  xswitch add-meter br0 "meter=1 kbps burst stats bands=type=drop rate=10000 burst_size=1000"
  xswitch add-flow br0 "priority=100,ip,actions=meter:1,NORMAL"`, meterRequest(api.VerbAddMeter))
}

func (c *cli) modMeterCommand() *cobra.Command {
	return c.textCommand("mod-meter BRIDGE METER", "Replace a meter's flags and bands",
		`Replace the meter of METER's id with METER: its counters go on.`, "", meterRequest(api.VerbModMeter))
}

func (c *cli) delMetersCommand() *cobra.Command {
	return c.selectCommand(api.VerbDelMeters, "del-meters BRIDGE [meter=N]",
		"Delete a meter, or every meter, and the rules that use it",
		`Delete meter N, or every meter, and with it the rules that use it, as
OpenFlow says.`, nil)
}

func (c *cli) dumpMetersCommand(verb string) *cobra.Command {
	use, short := "dump-meters BRIDGE [meter=N]", "Print the meters (or meter N), as ovs-ofctl does"
	if verb == api.VerbMeterStats {
		use, short = "meter-stats BRIDGE [meter=N]", "Print the meters' counters and their bands', as ovs-ofctl does"
	}
	return c.selectCommand(verb, use, short, "", func(cmd *cobra.Command, bridge string, resp *api.Response) error {
		return c.emit(cmd.OutOrStdout(), metersJSON{Bridge: bridge, Meters: resp.Meters}, func(w io.Writer) {
			for _, m := range resp.Meters {
				text := m.Text
				if verb == api.VerbMeterStats {
					text = m.StatsText
				}
				fmt.Fprintln(w, text)
			}
		})
	})
}

// metersJSON is dump-meters' and meter-stats' answer.
type metersJSON struct {
	Bridge string            `json:"bridge"`
	Meters []api.MeterStatus `json:"meters"`
}
