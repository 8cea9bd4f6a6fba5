package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xswitch/xswitch/control/api"
)

// The connection tracking verbs, as ovs-appctl's dpctl/* ones: each is
// also known by its dpctl/ name. The daemon has one connection table,
// which all its bridges share, as OVS has one per datapath; the bridge a
// verb may name (as OVS's name a datapath) must exist, and the verb still
// reads or changes that one table.

const conntrackShared = `The daemon has one connection table, which all its bridges share, as Open
vSwitch has one per datapath: BR, if given, must be a bridge of the daemon's,
and the verb still works on that one table.`

// conntrackVerb describes a conntrack verb's command: Use is its usage
// after the verb; More and Statistics, if not empty, are the help of its
// -m and -s; Print, if given, prints its answer.
type conntrackVerb struct {
	Verb, Use, Short, Long, Example string
	More, Statistics                string
	Print                           func(cmd *cobra.Command, ct *api.ConntrackStatus) error
}

func (c *cli) conntrackCommand(v conntrackVerb) *cobra.Command {
	long := v.Long
	if long == "" {
		long = v.Short + "."
	}
	var more, statistics bool
	cmd := &cobra.Command{
		Use:     v.Verb + " " + v.Use,
		Aliases: []string{"dpctl/" + v.Verb},
		Short:   v.Short,
		Long:    long + "\n\n" + conntrackShared,
		Example: v.Example,
		// A bridge name only first: the rest are the verb's arguments.
		ValidArgsFunction: c.completeBridge,
		RunE: func(cmd *cobra.Command, args []string) error {
			req := api.Request{Verb: v.Verb, More: more, Statistics: statistics}
			if namesBridge(v.Verb, args) {
				req.Bridge, args = args[0], args[1:]
			}
			req.Args = args
			resp, err := c.call(req)
			if err != nil || v.Print == nil {
				return err
			}
			ct := resp.Conntrack
			if ct == nil {
				ct = &api.ConntrackStatus{}
			}
			return v.Print(cmd, ct)
		},
	}
	if v.More != "" {
		cmd.Flags().BoolVarP(&more, "more", "m", false, v.More)
	}
	if v.Statistics != "" {
		cmd.Flags().BoolVarP(&statistics, "statistics", "s", false, v.Statistics)
	}
	return cmd
}

// namesBridge says whether a conntrack verb's first argument is a
// bridge, as OVS's dpctl tells a datapath from the arguments: none of
// them is empty or has a '=' but ct-set-maxconns' number, which comes
// alone, and ct-del-limits' "default".
func namesBridge(verb string, args []string) bool {
	switch {
	case len(args) == 0:
		return false
	case verb == api.VerbCTSetMaxConns:
		return len(args) == 2
	case verb == api.VerbCTDelLimits && args[0] == "default":
		return false
	}
	return args[0] != "" && !strings.Contains(args[0], "=")
}

// confirm prints a change's confirmation as OVS does, in text only: a
// change has no JSON answer.
func (c *cli) confirm(message string) func(*cobra.Command, *api.ConntrackStatus) error {
	return func(cmd *cobra.Command, _ *api.ConntrackStatus) error {
		if c.format == formatText {
			fmt.Fprintln(cmd.OutOrStdout(), message)
		}
		return nil
	}
}

func (c *cli) conntrackCommands() []*cobra.Command {
	tcpSeqChk := `Turn TCP sequence checking on (the default) or off, as ovs-appctl
dpctl/ct-enable-tcp-seq-chk and ct-disable-tcp-seq-chk do. Off, every
segment of a connection passes as in its window, resets included. Saved
with the configuration.`
	verbs := []conntrackVerb{{
		Verb: api.VerbDumpConntrack, Use: "[BR] [zone=N] [-m] [-s]",
		Short: "Print the tracked connections (of zone N), as ovs-appctl dpctl/dump-conntrack does",
		Long: `Print the tracked connections, or those of zone N, one a line as ovs-appctl
dpctl/dump-conntrack does: the protocol, the original and reply tuples (the
reply one translated under NAT), the zone, mark and labels when set, and a
TCP connection's state. -m adds the id, the status bits and each TCP end's
state, window scale and flags; -s the seconds left before the connection
times out.`,
		Example: `  xswitch dump-conntrack
  xswitch dpctl/dump-conntrack zone=5 -m`,
		More:       "print each connection's id, status bits and TCP details",
		Statistics: "print the seconds each connection has left",
		Print: func(cmd *cobra.Command, ct *api.ConntrackStatus) error {
			return c.emit(cmd.OutOrStdout(), conntrackJSON{Entries: orEmpty(ct.Entries)}, func(w io.Writer) {
				for _, e := range ct.Entries {
					fmt.Fprintln(w, e.Text)
				}
			})
		},
	}, {
		Verb: api.VerbFlushConntrack, Use: "[BR] [zone=N] [mark=V[/M]] [labels=V[/M]] [ORIG-TUPLE [REPLY-TUPLE]]",
		Short: "Delete tracked connections: all, or those of a zone, mark, labels or tuple",
		Long: `Delete tracked connections, as ovs-appctl dpctl/flush-conntrack does: all of
them, or those of zone N, of mark V (with mask M), of labels V (with mask M),
or of a tuple, "ct_nw_src=IP,ct_nw_dst=IP,ct_nw_proto=P,ct_tp_src=PORT,ct_tp_dst=PORT"
(ct_ipv6_src and ct_ipv6_dst for IPv6; icmp_id, icmp_type and icmp_code for
ICMP), of the original direction and, after it, of the reply one (give ''
for the original to name only the reply one). A whole original tuple deletes
the connection it names in either direction, in zone N or 0.`,
		Example: `  xswitch flush-conntrack zone=5
  xswitch flush-conntrack 'ct_nw_src=10.0.0.1,ct_nw_dst=10.0.0.2,ct_nw_proto=6,ct_tp_src=40000,ct_tp_dst=80'`,
	}, {
		Verb: api.VerbCTStatsShow, Use: "[BR] [zone=N] [-m]",
		Short: "Count the tracked connections (of zone N) by protocol, as ovs-appctl dpctl/ct-stats-show does",
		More:  "count the TCP connections by state too",
		Print: func(cmd *cobra.Command, ct *api.ConntrackStatus) error {
			s := ct.Stats
			if s == nil {
				s = &api.ConntrackStats{}
			}
			out := ctStatsJSON{Total: s.Total, Protocols: orEmptyMap(s.Protocols), TCPStates: orEmptyMap(s.TCPStates)}
			return c.emit(cmd.OutOrStdout(), out, func(w io.Writer) { io.WriteString(w, s.Text) })
		},
	}, {
		Verb: api.VerbCTSetMaxConns, Use: "[BR] N",
		Short: "Set the most connections the table holds",
		Long: `Set the most connections the table holds (3000000 unless set), as ovs-appctl
dpctl/ct-set-maxconns does. Lowering it below the connections held removes
none: new ones are refused until enough end. Saved with the configuration.`,
		Print: c.confirm("setting maxconns successful"),
	}, {
		Verb: api.VerbCTGetMaxConns, Use: "[BR]",
		Short: "Print the most connections the table holds",
		Print: func(cmd *cobra.Command, ct *api.ConntrackStatus) error {
			return c.emit(cmd.OutOrStdout(), ctMaxConnsJSON{MaxConns: ct.MaxConns},
				func(w io.Writer) { fmt.Fprintln(w, ct.MaxConns) })
		},
	}, {
		Verb: api.VerbCTGetNConns, Use: "[BR]",
		Short: "Print how many connections the table holds",
		Long: `Print how many connections the table holds, as ovs-appctl dpctl/ct-get-nconns
does: those past their time that the sweep (once a second) has not yet removed
included.`,
		Print: func(cmd *cobra.Command, ct *api.ConntrackStatus) error {
			return c.emit(cmd.OutOrStdout(), ctNConnsJSON{NConns: ct.NConns},
				func(w io.Writer) { fmt.Fprintln(w, ct.NConns) })
		},
	}, {
		Verb: api.VerbCTSetLimits, Use: "[BR] [default=N] [zone=N,limit=N]...",
		Short: "Set the default limit of connections per zone, or zones' own limits",
		Long: `Set the limit of connections of the zones without one of their own
(default=N; 0: none), or zones' own limits (zone=N,limit=N; a limit of 0
admits no connection), as ovs-appctl dpctl/ct-set-limits does. A commit in a
zone at its limit is refused, the packet going on as +new. Saved with the
configuration.`,
		Example: `  xswitch ct-set-limits default=10000 zone=5,limit=100`,
	}, {
		Verb: api.VerbCTGetLimits, Use: "[BR] [zone=N[,N]...]",
		Short: "Print the default zone limit, and zones' limits and connections",
		Long: `Print the default limit and, for the zones given (all those with a limit of
their own if none are), each zone's limit and connections, as ovs-appctl
dpctl/ct-get-limits does. limit=0 is no limit when the zone has none of its
own and no default is set.`,
		Print: func(cmd *cobra.Command, ct *api.ConntrackStatus) error {
			l := ct.Limits
			if l == nil {
				l = &api.ConntrackLimits{}
			}
			return c.emit(cmd.OutOrStdout(), ctLimitsJSON{Default: l.Default, Zones: orEmpty(l.Zones)},
				func(w io.Writer) { fmt.Fprintln(w, l.Text) })
		},
	}, {
		Verb: api.VerbCTDelLimits, Use: "[BR] [default] [zone=N[,N]...]",
		Short: "Remove the default zone limit, or zones' own limits",
		Long: `Remove the default limit (default), or zones' own limits (zone=N[,N]...), which
then have the default, as ovs-appctl dpctl/ct-del-limits does.`,
	}, {
		Verb: api.VerbCTEnableTCPSeqChk, Use: "[BR]",
		Short: "Turn TCP sequence checking on", Long: tcpSeqChk,
		Print: c.confirm("enabling TCP sequence checking successful"),
	}, {
		Verb: api.VerbCTDisableTCPSeqChk, Use: "[BR]",
		Short: "Turn TCP sequence checking off", Long: tcpSeqChk,
		Print: c.confirm("disabling TCP sequence checking successful"),
	}, {
		Verb: api.VerbCTGetTCPSeqChk, Use: "[BR]",
		Short: "Print whether TCP sequence checking is on",
		Print: func(cmd *cobra.Command, ct *api.ConntrackStatus) error {
			state := "disabled"
			if ct.TCPSeqCheck {
				state = "enabled"
			}
			return c.emit(cmd.OutOrStdout(), ctTCPSeqChkJSON{Enabled: ct.TCPSeqCheck},
				func(w io.Writer) { fmt.Fprintln(w, "TCP sequence checking: "+state) })
		},
	}}
	out := make([]*cobra.Command, len(verbs))
	for i, v := range verbs {
		out[i] = c.conntrackCommand(v)
	}
	return out
}

// conntrackJSON is dump-conntrack's answer.
type conntrackJSON struct {
	Entries []api.ConntrackEntry `json:"entries"`
}

// ctStatsJSON is ct-stats-show's answer: the connections in all, by
// protocol as ct-stats-show names them, and TCP connections by state.
type ctStatsJSON struct {
	Total     int            `json:"total"`
	Protocols map[string]int `json:"protocols"`
	TCPStates map[string]int `json:"tcp_states"`
}

// ctLimitsJSON is ct-get-limits' answer.
type ctLimitsJSON struct {
	Default uint32                   `json:"default_limit"`
	Zones   []api.ConntrackZoneLimit `json:"zones"`
}

type ctMaxConnsJSON struct {
	MaxConns uint32 `json:"maxconns"`
}

type ctNConnsJSON struct {
	NConns uint32 `json:"nconns"`
}

type ctTCPSeqChkJSON struct {
	Enabled bool `json:"tcp_seq_chk"`
}

// orEmptyMap is m, or an empty map for none, as orEmpty is for lists.
func orEmptyMap[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	return m
}

// The zones' timeout policies, as ovs-vsctl's add-zone-tp, del-zone-tp
// and list-zone-tp: DATAPATH is netdev or system, xswitch's one datapath
// either way.

const zoneTPShared = `DATAPATH is netdev or system: xswitch has one datapath, and one connection
table, whichever is named. The keys are those of Open vSwitch's userspace
datapath: tcp_syn_sent, tcp_syn_recv, tcp_established, tcp_fin_wait,
tcp_time_wait, tcp_close, udp_first, udp_single, udp_multiple, icmp_first,
icmp_reply, in seconds; a key left out keeps OVS's default. A connection of
the zone takes a changed policy from its next packet. Saved with the
configuration; under --ovsdb the database holds the policies, and
ovs-vsctl changes them.`

func (c *cli) zoneTPCommands() []*cobra.Command {
	var mayExist, ifExists bool
	add := &cobra.Command{
		Use:   "add-zone-tp DATAPATH zone=N [KEY=SECONDS]...",
		Short: "Give a conntrack zone a timeout policy of its own",
		Long: `Give connection tracking zone N a timeout policy of its own, as ovs-vsctl
add-zone-tp does: how long its connections live without a packet, by state.
A zone that has one already is an error, unless --may-exist, which leaves it
as it is.

` + zoneTPShared,
		Example: `  xswitch add-zone-tp netdev zone=5 udp_first=1 udp_single=1 icmp_first=1 icmp_reply=1`,
		Args:    cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := c.call(api.Request{Verb: api.VerbAddZoneTP, Args: args, MayExist: mayExist})
			return err
		},
	}
	add.Flags().BoolVar(&mayExist, "may-exist", false, "leave a zone that has a policy as it is, without an error")
	del := &cobra.Command{
		Use:   "del-zone-tp DATAPATH zone=N",
		Short: "Take a conntrack zone's timeout policy away",
		Long: `Take connection tracking zone N's timeout policy away, as ovs-vsctl
del-zone-tp does: its connections live as long as OVS's defaults say. A zone
without one is an error, unless --if-exists.

` + zoneTPShared,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := c.call(api.Request{Verb: api.VerbDelZoneTP, Args: args, IfExists: ifExists})
			return err
		},
	}
	del.Flags().BoolVar(&ifExists, "if-exists", false, "a zone without a policy is no error")
	list := &cobra.Command{
		Use:   "list-zone-tp DATAPATH",
		Short: "Print the conntrack zones' timeout policies",
		Long: `Print the connection tracking zones' timeout policies, one zone a line, as
ovs-vsctl list-zone-tp does.

` + zoneTPShared,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			resp, err := c.call(api.Request{Verb: api.VerbListZoneTP, Args: args})
			if err != nil {
				return err
			}
			var zones []api.ZoneTimeouts
			if resp.Conntrack != nil {
				zones = resp.Conntrack.ZoneTimeouts
			}
			return c.emit(cmd.OutOrStdout(), zoneTPJSON{Zones: orEmpty(zones)}, func(w io.Writer) {
				for _, z := range zones {
					var policies []string
					for _, key := range slices.Sorted(maps.Keys(z.Timeouts)) {
						policies = append(policies, fmt.Sprintf("%s=%d", key, z.Timeouts[key]))
					}
					fmt.Fprintf(w, "Zone:%d, Timeout Policies: %s\n", z.Zone, strings.Join(policies, " "))
				}
			})
		},
	}
	return []*cobra.Command{add, del, list}
}

// zoneTPJSON is list-zone-tp's answer.
type zoneTPJSON struct {
	Zones []api.ZoneTimeouts `json:"zones"`
}
