package main

import (
	"net"

	"github.com/spf13/cobra"
)

// Shell completion of arguments asks the running daemon for its bridges
// and ports. Without a daemon it offers nothing rather than file names,
// which are never right for these arguments.

// completeBridge offers the daemon's bridges for the first argument.
func (c *cli) completeBridge(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return c.bridgeNames(), cobra.ShellCompDirectiveNoFileComp
}

// completeBridgeThenPort offers a bridge, then that bridge's ports.
func (c *cli) completeBridgeThenPort(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) != 1 {
		return c.completeBridge(cmd, args, toComplete)
	}
	bridges, err := c.show(args[0])
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return portNames(bridges[0]), cobra.ShellCompDirectiveNoFileComp
}

// completeBridgeThenInterface offers a bridge, then the host's interfaces
// (add-port's IFACE must exist unless --netns creates it).
func (c *cli) completeBridgeThenInterface(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) != 1 {
		return c.completeBridge(cmd, args, toComplete)
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names := make([]string, 0, len(ifaces))
	for _, ifc := range ifaces {
		names = append(names, ifc.Name)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// completeBridgeThenFile offers a bridge, then the shell's file names.
func (c *cli) completeBridgeThenFile(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) != 1 {
		return c.completeBridge(cmd, args, toComplete)
	}
	return nil, cobra.ShellCompDirectiveDefault
}

func (c *cli) bridgeNames() []string {
	bridges, err := c.show("")
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(bridges))
	for _, b := range bridges {
		names = append(names, b.Name)
	}
	return names
}
