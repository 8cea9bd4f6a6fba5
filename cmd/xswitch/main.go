// Command xswitch is the xswitch switch: `xswitch daemon` runs it, every
// other verb talks to the running daemon, in the manner of ovs-vsctl and
// ovs-ofctl. It keeps no switch state of its own: every verb but daemon
// speaks package api to the running daemon and formats its answer.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/xswitch/xswitch/control/api"
)

// Exit codes.
const (
	exitUserError      = 1 // the request was refused or malformed
	exitUnreachable    = 2 // no daemon answered: nothing was sent
	exitOutcomeUnknown = 3 // the request was sent, its answer lost
)

func main() {
	root := newRootCommand()
	if err := root.Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "xswitch: %v\n", err)
		os.Exit(exitCode(err))
	}
}

func exitCode(err error) int {
	if _, ok := errors.AsType[*api.UnreachableError](err); ok {
		return exitUnreachable
	}
	if _, ok := errors.AsType[*api.OutcomeUnknownError](err); ok {
		return exitOutcomeUnknown
	}
	return exitUserError
}

// cli holds what every verb shares.
type cli struct {
	socket  string
	timeout time.Duration // 0: wait for the daemon as long as it takes
	format  string        // formatText or formatJSON, for the verbs that print
}

// call sends one request to the daemon.
func (c *cli) call(req api.Request) (*api.Response, error) {
	return c.callWithBody(req, nil)
}

// callWithBody sends one request with a stream of rules after it.
func (c *cli) callWithBody(req api.Request, body io.Reader) (*api.Response, error) {
	return api.Client{Socket: c.socket, Timeout: c.timeout}.Do(req, body)
}

func newRootCommand() *cobra.Command {
	c := &cli{}
	root := &cobra.Command{
		Use:   "xswitch",
		Short: "A software switch whose ports are AF_XDP sockets",
		Long: `xswitch is a software switch in the family of Open vSwitch whose ports are
AF_XDP sockets. "xswitch daemon" runs the switch; every other verb talks to
the running daemon over its unix socket.

The verbs that print (show, list-br, list-ports, dump-ports, fdb-show,
dump-flows, trace, pmd-stats-show, get, rstp-show, get-controller,
get-fail-mode, dump-conntrack, ct-stats-show, ct-get-maxconns, ct-get-nconns,
ct-get-limits, ct-get-tcp-seq-chk, top, version) print JSON with --format json.
Errors always go to standard error as text.

Exit codes:
  0  success
  1  the request was refused or malformed (the message says why; nothing changed)
  2  no daemon answered on the socket (nothing was sent)
  3  the request was sent but its answer was lost: it may or may not have
     been carried out`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return checkFormat(c.format)
		},
	}
	defaultSocket := api.DefaultSocket
	if s := os.Getenv("XSWITCH_SOCK"); s != "" {
		defaultSocket = s
	}
	root.PersistentFlags().StringVar(&c.socket, "sock", defaultSocket, "the daemon's unix socket (env XSWITCH_SOCK)")
	root.PersistentFlags().StringVar(&c.format, "format", formatText, "output of the verbs that print: text or json")
	root.PersistentFlags().DurationVar(&c.timeout, "timeout", 0, "give up on the daemon's answer after this long (exit 3); 0 waits as long as it takes")
	root.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{formatText, formatJSON}, cobra.ShellCompDirectiveNoFileComp))
	root.AddCommand(
		c.daemonCommand(), c.ovsdbStartCommand(),
		c.addBridgeCommand(), c.delBridgeCommand(), c.listBridgesCommand(),
		c.addPortCommand(), c.delPortCommand(), c.listPortsCommand(),
		c.showCommand(), c.dumpPortsCommand(), c.dumpTablesCommand(), c.dumpFastPathCommand(), c.fdbShowCommand(),
		c.addFlowCommand(), c.addFlowsCommand(), c.modFlowsCommand(), c.delFlowsCommand(),
		c.dumpFlowsCommand(), c.traceCommand(), c.pmdStatsCommand(),
		c.addGroupCommand(), c.addGroupsCommand(), c.modGroupCommand(), c.delGroupsCommand(),
		c.insertBucketsCommand(), c.removeBucketsCommand(),
		c.dumpGroupsCommand(api.VerbDumpGroups), c.dumpGroupsCommand(api.VerbDumpGroupStats),
		c.addMeterCommand(), c.modMeterCommand(), c.delMetersCommand(),
		c.dumpMetersCommand(api.VerbDumpMeters), c.dumpMetersCommand(api.VerbMeterStats),
		c.setCommand(), c.getCommand(), c.addCommand(), c.removeCommand(), c.clearCommand(), c.rstpShowCommand(), c.setSTPCommand(),
		c.setControllerCommand(), c.delControllerCommand(), c.getControllerCommand(),
		c.setFailModeCommand(), c.delFailModeCommand(), c.getFailModeCommand(),
		c.topCommand(), c.versionCommand(), c.waitReadyCommand(),
		c.demoCommand(), c.benchCommand(),
	)
	root.AddCommand(c.conntrackCommands()...)
	root.AddCommand(c.zoneTPCommands()...)
	return root
}
