package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xswitch/xswitch/control/api"
)

// The database verbs, as ovs-vsctl spells them: set, get, add, remove and
// clear.

func (c *cli) setCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "set TABLE RECORD COLUMN[:KEY]=VALUE...",
		Short: "Set columns of a bridge's or port's record, as ovs-vsctl set does",
		Long: `Set columns of a bridge's or port's record, as ovs-vsctl set does. The
table is Bridge or Port, the record a bridge's or port's name. Every change
is checked before any is made, saved, and applied at once.

Bridge columns: rstp_enable (true|false); other_config: datapath-id (16
hex digits), forward-bpdu (true|false), rstp-priority (0-61440, steps of
4096), rstp-address (MAC), rstp-max-age (6-40 s), rstp-forward-delay
(4-30 s), rstp-transmit-hold-count (1-10), rstp-force-protocol-version
(0: STP, 2), controller-rate-limit (packet-ins/s to the controller, at
least 100; none by default) and controller-burst-limit (at least 25; a
quarter of the rate by default), OVS's Controller columns
controller_rate_limit and controller_burst_limit.
Port columns: tag (a VLAN, 1-4095), trunks (VLANs, 0-4095: 10,20 or
[10,20], ranges as 100-199, [] for all), vlan_mode (access, trunk,
native-tagged, native-untagged), as add-port's --tag, --trunks and
--vlan-mode: the port moves at once; [] empties a column. other_config:
rstp-enable (true|false), rstp-port-priority (0-240, steps of 16),
rstp-path-cost (1-200000000), rstp-port-admin-edge (true|false),
rstp-port-auto-edge (true|false), storm-limit (frames/s that NORMAL floods
from the port; 0: no limit).`,
		Example: `  xswitch set Bridge br0 rstp_enable=true other_config:rstp-priority=4096
  xswitch set Bridge br0 other_config:forward-bpdu=true
  xswitch set Port p1 tag=20
  xswitch set Port p2 trunks=10,20,30 tag=[]
  xswitch set Port p3 vlan_mode=native-untagged tag=10 trunks=[20,30]
  xswitch set Port p1 other_config:rstp-port-admin-edge=true
  xswitch set Port p1 other_config:storm-limit=1000`,
		Args:              cobra.MinimumNArgs(3),
		ValidArgsFunction: c.completeTableThenRecord,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := c.call(api.Request{Verb: api.VerbSet, Table: args[0], Record: args[1], Columns: args[2:]})
			return err
		},
	}
}

func (c *cli) addCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "add TABLE RECORD COLUMN [KEY=]VALUE...",
		Short: "Add values to a column (trunks), or keys to other_config, as ovs-vsctl add does",
		Long: `Add values to a column that holds several (trunks), or one to a column
that holds none yet (tag, vlan_mode), or KEY=VALUE pairs to other_config
where KEY is not there yet, as ovs-vsctl add does.`,
		Example: `  xswitch add Port p2 trunks 30 40
  xswitch add Port p1 other_config storm-limit=1000`,
		Args:              cobra.MinimumNArgs(4),
		ValidArgsFunction: c.completeTableThenRecord,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := c.call(api.Request{Verb: api.VerbAdd, Table: args[0], Record: args[1], Columns: args[2:]})
			return err
		},
	}
}

func (c *cli) removeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "remove TABLE RECORD COLUMN VALUE|KEY|KEY=VALUE...",
		Short: "Remove values from a column, or keys from other_config, as ovs-vsctl remove does",
		Long: `Remove values from a column (trunks, tag, vlan_mode), or keys from
other_config (KEY=VALUE: only where KEY has that value), as ovs-vsctl
remove does. A removed key's setting is back to its default; what is not
there is no error.`,
		Example: `  xswitch remove Bridge br0 other_config forward-bpdu
  xswitch remove Port p2 trunks 10`,
		Args:              cobra.MinimumNArgs(4),
		ValidArgsFunction: c.completeTableThenRecord,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := c.call(api.Request{Verb: api.VerbRemove, Table: args[0], Record: args[1], Columns: args[2:]})
			return err
		},
	}
}

func (c *cli) clearCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "clear TABLE RECORD COLUMN...",
		Short:             "Empty columns (tag, trunks, vlan_mode, other_config), as ovs-vsctl clear does",
		Example:           `  xswitch clear Port p1 tag`,
		Args:              cobra.MinimumNArgs(3),
		ValidArgsFunction: c.completeTableThenRecord,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := c.call(api.Request{Verb: api.VerbClear, Table: args[0], Record: args[1], Columns: args[2:]})
			return err
		},
	}
}

func (c *cli) getCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "get TABLE RECORD COLUMN[:KEY]...",
		Short: "Print columns of a record, one a line, as ovs-vsctl get does",
		Example: `  xswitch get Bridge br0 rstp_enable
  xswitch get Bridge br0 other_config:forward-bpdu
  xswitch get Bridge br0 other_config
  xswitch get Port p1 tag trunks vlan_mode`,
		Args:              cobra.MinimumNArgs(3),
		ValidArgsFunction: c.completeTableThenRecord,
		RunE: func(cmd *cobra.Command, args []string) error {
			resp, err := c.call(api.Request{Verb: api.VerbGet, Table: args[0], Record: args[1], Columns: args[2:]})
			if err != nil {
				return err
			}
			if len(resp.Values) != len(args)-2 {
				return fmt.Errorf("the daemon answered %d values for %d columns", len(resp.Values), len(args)-2)
			}
			out := getJSON{Table: args[0], Record: args[1], Values: map[string]json.RawMessage{}}
			for i, v := range resp.Values {
				out.Values[args[2+i]] = v
			}
			return c.emit(cmd.OutOrStdout(), out, func(w io.Writer) {
				for _, v := range resp.Values {
					fmt.Fprintln(w, formatDatum(v))
				}
			})
		},
	}
}

// getJSON is get's answer: each column as asked for, with its value.
type getJSON struct {
	Table  string                     `json:"table"`
	Record string                     `json:"record"`
	Values map[string]json.RawMessage `json:"values"`
}

// formatDatum writes a value as ovs-vsctl does: true, 20, "32768",
// [10, 20], [], {forward-bpdu="true"}.
func formatDatum(raw json.RawMessage) string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	return formatValue(v)
}

func formatValue(v any) string {
	switch v := v.(type) {
	case string:
		return formatAtom(v)
	case []any:
		parts := make([]string, 0, len(v))
		for _, e := range v {
			parts = append(parts, formatValue(e))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(v)) {
			parts = append(parts, formatAtom(k)+"="+formatValue(v[k]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	default:
		return fmt.Sprint(v)
	}
}

// formatAtom quotes a string unless OVSDB would print it bare: one that
// starts with a letter or underscore, holds only letters, digits and
// "_-.", and could not be read back as a boolean.
func formatAtom(s string) string {
	bare := s != "" && s != "true" && s != "false"
	for i, r := range s {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_'
		if !letter && (i == 0 || !(r >= '0' && r <= '9' || r == '-' || r == '.')) {
			bare = false
		}
	}
	if bare {
		return s
	}
	return strconv.Quote(s)
}

// stormLimit is a port's other_config:storm-limit, 0 when it has none;
// the daemon checked it.
func stormLimit(pc api.PortConfig) uint64 {
	n, _ := strconv.ParseUint(pc.OtherConfig["storm-limit"], 10, 32)
	return n
}

// completeTableThenRecord offers a table, then its records.
func (c *cli) completeTableThenRecord(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	switch len(args) {
	case 0:
		return []string{api.TableBridge, api.TablePort}, cobra.ShellCompDirectiveNoFileComp
	case 1:
		switch {
		case strings.EqualFold(args[0], api.TableBridge):
			return c.bridgeNames(), cobra.ShellCompDirectiveNoFileComp
		case strings.EqualFold(args[0], api.TablePort):
			bridges, err := c.show("")
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []string
			for _, b := range bridges {
				names = append(names, portNames(b)...)
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		}
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}
