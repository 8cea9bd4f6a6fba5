// Command xswitch is the xswitch switch: `xswitch daemon` runs it, every
// other verb talks to the running daemon, in the manner of ovs-vsctl and
// ovs-ofctl.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/xswitch/xswitch/control"
)

// Exit codes.
const (
	exitUserError   = 1 // the request was refused or malformed
	exitUnreachable = 2 // no daemon answered
)

func main() {
	root := newRootCommand()
	if err := root.Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "xswitch: %v\n", err)
		var unreachable *control.UnreachableError
		if errors.As(err, &unreachable) {
			os.Exit(exitUnreachable)
		}
		os.Exit(exitUserError)
	}
}

// cli holds what every verb shares.
type cli struct {
	socket string
	format string // formatText or formatJSON, for the verbs that print
}

// call sends one request to the daemon.
func (c *cli) call(req control.Request) (*control.Response, error) {
	return control.Call(c.socket, req)
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
dump-flows, trace, pmd-stats-show, top, version) print JSON with --format json.
Errors always go to standard error as text.

Exit codes:
  0  success
  1  the request was refused or malformed (the message says why; nothing changed)
  2  no daemon answered on the socket`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return checkFormat(c.format)
		},
	}
	defaultSocket := control.DefaultSocket
	if s := os.Getenv("XSWITCH_SOCK"); s != "" {
		defaultSocket = s
	}
	root.PersistentFlags().StringVar(&c.socket, "sock", defaultSocket, "the daemon's unix socket (env XSWITCH_SOCK)")
	root.PersistentFlags().StringVar(&c.format, "format", formatText, "output of the verbs that print: text or json")
	root.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{formatText, formatJSON}, cobra.ShellCompDirectiveNoFileComp))
	root.AddCommand(
		c.daemonCommand(),
		c.addBridgeCommand(), c.delBridgeCommand(), c.listBridgesCommand(),
		c.addPortCommand(), c.delPortCommand(), c.listPortsCommand(),
		c.showCommand(), c.dumpPortsCommand(), c.fdbShowCommand(),
		c.addFlowCommand(), c.addFlowsCommand(), c.modFlowsCommand(), c.delFlowsCommand(),
		c.dumpFlowsCommand(), c.traceCommand(), c.pmdStatsCommand(),
		c.topCommand(), c.versionCommand(),
		c.demoCommand(), c.benchCommand(),
	)
	return root
}
