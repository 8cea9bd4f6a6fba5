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

// The group verbs, as ovs-ofctl's: a group is written as add-group takes
// it, "group_id=1,type=select,bucket=output:1,bucket=output:2".

// groupChangeCommand is a verb that sends its GROUP argument as it is.
func (c *cli) groupChangeCommand(verb, use, short, long, example string) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short, Long: long, Example: example,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: c.completeBridge,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := c.call(api.Request{Verb: verb, Bridge: args[0], Groups: args[1:]})
			return err
		},
	}
}

func (c *cli) addGroupCommand() *cobra.Command {
	return c.groupChangeCommand(api.VerbAddGroups, "add-group BRIDGE GROUP", "Add a group (ovs-ofctl syntax)",
		`Add a group, in ovs-ofctl's syntax: group_id, type (all, select, indirect or
ff), and its buckets, each "bucket=" followed by its actions and, for select,
weight:N, for ff, watch_port:P and watch_group:G. A group id in use is refused.`,
		`  xswitch add-group br0 "group_id=1,type=select,bucket=weight:2,output:1,bucket=output:2"
  xswitch add-group br0 "group_id=2,type=ff,bucket=watch_port:1,output:1,bucket=watch_port:2,output:2"`)
}

func (c *cli) modGroupCommand() *cobra.Command {
	return c.groupChangeCommand(api.VerbModGroup, "mod-group BRIDGE GROUP", "Replace a group's type and buckets",
		`Replace the group of GROUP's group_id with GROUP: its counters start again.`, "")
}

func (c *cli) insertBucketsCommand() *cobra.Command {
	return c.groupChangeCommand(api.VerbInsertBuckets, "insert-buckets BRIDGE GROUP", "Add buckets to a group",
		`Add buckets to a group: "group_id=N,command_bucket_id=first|last|ID,bucket=...",
before the bucket of that id (last by default).`,
		`  xswitch insert-buckets br0 "group_id=1,command_bucket_id=last,bucket=output:3"`)
}

func (c *cli) removeBucketsCommand() *cobra.Command {
	return c.groupChangeCommand(api.VerbRemoveBuckets, "remove-buckets BRIDGE GROUP", "Remove buckets from a group",
		`Remove buckets from a group: "group_id=N,command_bucket_id=first|last|all|ID"
(all by default).`,
		`  xswitch remove-buckets br0 "group_id=1,command_bucket_id=2"`)
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
			var r io.Reader = cmd.InOrStdin()
			if name := args[1]; name != "-" {
				f, err := os.Open(name)
				if err != nil {
					return err
				}
				defer f.Close()
				r = f
			}
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
			_, err := c.call(api.Request{Verb: api.VerbAddGroups, Bridge: args[0], Groups: groups})
			return err
		},
	}
}

func (c *cli) delGroupsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "del-groups BRIDGE [group_id=N]",
		Short: "Delete a group, or every group, and the rules that send to it",
		Long: `Delete group N, or every group, and with it the rules that send to it, as
OpenFlow says. A group another group forwards to is refused: delete that one
first.`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: c.completeBridge,
		RunE: func(cmd *cobra.Command, args []string) error {
			req := api.Request{Verb: api.VerbDelGroups, Bridge: args[0]}
			if len(args) == 2 {
				req.Match = args[1]
			}
			_, err := c.call(req)
			return err
		},
	}
}

func (c *cli) dumpGroupsCommand(verb string) *cobra.Command {
	use, short := "dump-groups BRIDGE [GROUP]", "Print the groups (or group GROUP), as ovs-ofctl does"
	if verb == api.VerbDumpGroupStats {
		use, short = "dump-group-stats BRIDGE [GROUP]", "Print the groups' counters and their buckets', as ovs-ofctl does"
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
			return c.emit(cmd.OutOrStdout(), groupsJSON{Bridge: args[0], Groups: resp.Groups}, func(w io.Writer) {
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
		},
	}
}

// groupsJSON is dump-groups' and dump-group-stats' answer.
type groupsJSON struct {
	Bridge string            `json:"bridge"`
	Groups []api.GroupStatus `json:"groups"`
}
