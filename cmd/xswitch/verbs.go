package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/xswitch/xswitch/control/api"
	vswitch "github.com/xswitch/xswitch/switch"
)

func (c *cli) addBridgeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "add-br BRIDGE",
		Short: "Create a bridge",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := c.call(api.Request{Verb: api.VerbAddBridge, Bridge: args[0]})
			return err
		},
	}
}

func (c *cli) delBridgeCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "del-br BRIDGE",
		Short:             "Delete a bridge and all its ports",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: c.completeBridge,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := c.call(api.Request{Verb: api.VerbDelBridge, Bridge: args[0]})
			return err
		},
	}
}

func (c *cli) listBridgesCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list-br",
		Short: "List the bridges, one per line",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			bridges, err := c.show("")
			if err != nil {
				return err
			}
			names := make([]string, 0, len(bridges))
			for _, b := range bridges {
				names = append(names, b.Name)
			}
			return c.emit(cmd.OutOrStdout(), bridgeListJSON{Bridges: names}, func(w io.Writer) {
				for _, n := range names {
					fmt.Fprintln(w, n)
				}
			})
		},
	}
}

func (c *cli) addPortCommand() *cobra.Command {
	var pc api.PortConfig
	var ofport uint16
	var trunks []uint
	cmd := &cobra.Command{
		Use:   "add-port BRIDGE IFACE",
		Short: "Add an interface to a bridge as an AF_XDP port, or a tunnel port",
		Long: `Add an interface to a bridge as an AF_XDP port, or a tunnel port.

Without --netns, IFACE must exist (a physical, veth or tap interface).
With --netns NS, add-port creates a veth pair: IFACE stays with the switch,
its peer (--peer, default eth0) moves into the existing namespace NS, is
brought up and given --address, and gets TX checksum offload turned off.
del-port deletes such a pair again.

--type tap creates a persistent tap device IFACE for a VM monitor to open
by name (QEMU: -netdev tap,ifname=IFACE,script=no,downscript=no); --owner
lets that user open it without CAP_NET_ADMIN. --type internal creates
IFACE as the host's own interface on the bridge (in --netns if given),
up and given --address. del-port deletes either device again.

--tag, --trunks and --vlan-mode configure the port's VLANs for the NORMAL
action, as Open vSwitch's tag, trunks and vlan_mode columns do.

--mtu sets the MTU of the interfaces add-port creates (both ends of a veth
pair, a tap, an internal port), as Open vSwitch's mtu_request does; an
existing interface keeps its own. A port whose interface's MTU is more
than it carries is refused with --mode zerocopy, copy or generic, and
added with a warning in auto mode.

--type vxlan or geneve makes NAME a tunnel port to another host (Open
vSwitch's or the kernel's vxlan device) at --remote-ip: its frames travel
encapsulated over the interface the kernel routes the remote by (the
underlay), from --local-ip (default: the route's source address), with
VNI --key (default 0; "flow": the VNI the flows set with set_field:V->tun_id
or set_tunnel:V, and any VNI is received), to UDP port --dst-port (default
4789 for vxlan, 6081 for geneve). The tunnel's MTU is the underlay's less
50 bytes: give the interfaces behind it that MTU, or the underlay 50 more
than theirs.`,
		Example: `  xswitch add-port br0 eth1
  xswitch add-port br0 vm1 --netns ns1 --address 10.0.0.1/24
  xswitch add-port br0 vm2 --netns ns2 --address 10.0.0.2/24 --tag 10
  xswitch add-port br0 vm4 --netns ns4 --address 10.0.0.4/24 --mtu 9000
  xswitch add-port br0 eth2 --trunks 10,20
  xswitch add-port br0 vm3 --type tap --owner 1000
  xswitch add-port br0 br0host --type internal --address 10.0.0.254/24
  xswitch add-port br0 vx1 --type vxlan --remote-ip 192.168.1.2 --key 42
  xswitch add-port br0 gn1 --type geneve --remote-ip 192.168.1.3 --key flow`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: c.completeBridgeThenInterface,
		RunE: func(cmd *cobra.Command, args []string) error {
			pc.Name = args[1]
			pc.OFPort = ofport
			for _, v := range trunks {
				if v > vswitch.MaxVLAN {
					return fmt.Errorf("trunk VLAN %d out of range 0-%d", v, vswitch.MaxVLAN)
				}
				pc.Trunks = append(pc.Trunks, uint16(v))
			}
			_, err := c.call(api.Request{Verb: api.VerbAddPort, Bridge: args[0], AddPort: &pc})
			return err
		},
	}
	f := cmd.Flags()
	f.Uint16Var(&ofport, "ofport", 0, "OpenFlow port number (default: the lowest free one)")
	f.StringVar(&pc.Mode, "mode", "auto", "AF_XDP mode: auto, zerocopy, copy or generic")
	f.IntVar(&pc.Queues, "queues", 0, "number of rx queues to serve (default: all of the interface's)")
	f.StringVar(&pc.Netns, "netns", "", "create a veth pair whose peer goes into this existing network namespace")
	f.StringVar(&pc.Peer, "peer", "", "name of the veth peer inside --netns (default eth0)")
	f.StringVar(&pc.Address, "address", "", "address of the veth peer or internal port, as CIDR (10.0.0.1/24, fd00::1/64)")
	f.StringVar(&pc.Type, "type", "", "create the interface: tap (for a VM) or internal (the host's own port)")
	f.IntVar(&pc.Owner, "owner", 0, "user ID that may open a --type tap device without CAP_NET_ADMIN")
	f.Uint16Var(&pc.Tag, "tag", 0, "VLAN of an access port, or native VLAN of a native-tagged/native-untagged port")
	f.UintSliceVar(&trunks, "trunks", nil, "VLANs a trunk or native port carries, as 10,20 (default: all)")
	f.StringVar(&pc.VLANMode, "vlan-mode", "", "access, trunk, native-tagged or native-untagged (default: access with --tag, else trunk)")
	f.IntVar(&pc.MTU, "mtu", 0, "MTU of the interfaces add-port creates: both ends of a veth pair, a tap, an internal port (default 1500)")
	f.StringVar(&pc.RemoteIP, "remote-ip", "", "a vxlan or geneve port's remote endpoint")
	f.StringVar(&pc.LocalIP, "local-ip", "", "a vxlan or geneve port's local endpoint (default: the route's source address)")
	f.StringVar(&pc.Key, "key", "", "a vxlan or geneve port's VNI, or flow: the one tun_id says (default 0)")
	f.Uint16Var(&pc.DstPort, "dst-port", 0, "a vxlan or geneve port's UDP port (default 4789 for vxlan, 6081 for geneve)")
	return cmd
}

func (c *cli) delPortCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "del-port BRIDGE IFACE",
		Short:             "Remove a port from a bridge (and delete its veth pair if add-port made it)",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: c.completeBridgeThenPort,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := c.call(api.Request{Verb: api.VerbDelPort, Bridge: args[0], Port: args[1]})
			return err
		},
	}
}

func (c *cli) listPortsCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "list-ports BRIDGE",
		Short:             "List a bridge's ports, one per line",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: c.completeBridge,
		RunE: func(cmd *cobra.Command, args []string) error {
			bridges, err := c.show(args[0])
			if err != nil {
				return err
			}
			b := bridges[0]
			return c.emit(cmd.OutOrStdout(), portListJSON{Bridge: b.Name, Ports: portNames(b)},
				func(w io.Writer) { printPortNames(w, b) })
		},
	}
}

func (c *cli) showCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show",
		Short: "Show every bridge and port with how it is attached",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			bridges, err := c.show("")
			if err != nil {
				return err
			}
			return c.emit(cmd.OutOrStdout(), toShowJSON(bridges), func(w io.Writer) { printShow(w, bridges) })
		},
	}
}

func (c *cli) pmdStatsCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "pmd-stats-show [BRIDGE]",
		Short:             "Print forwarding statistics: flows, exact-match cache hits and misses",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: c.completeBridge,
		RunE: func(cmd *cobra.Command, args []string) error {
			bridges, err := c.show(strings.Join(args, ""))
			if err != nil {
				return err
			}
			return c.emit(cmd.OutOrStdout(), toPMDStatsJSON(bridges), func(w io.Writer) { printPMDStats(w, bridges) })
		},
	}
}

func (c *cli) dumpPortsCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "dump-ports BRIDGE [PORT]",
		Short:             "Print port counters, as ovs-ofctl dump-ports does",
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: c.completeBridgeThenPort,
		RunE: func(cmd *cobra.Command, args []string) error {
			bridges, err := c.show(args[0])
			if err != nil {
				return err
			}
			ports := bridges[0].Ports
			if len(args) == 2 {
				p, err := findPort(bridges[0], args[1])
				if err != nil {
					return err
				}
				ports = []api.PortStatus{p}
			}
			return c.emit(cmd.OutOrStdout(), toDumpPortsJSON(bridges[0].Name, ports),
				func(w io.Writer) { printDumpPorts(w, ports) })
		},
	}
}

func (c *cli) dumpTablesCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "dump-tables BRIDGE",
		Short:             "Print each table's rules, lookups and matches, as ovs-ofctl dump-tables does",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: c.completeBridge,
		RunE: func(cmd *cobra.Command, args []string) error {
			resp, err := c.call(api.Request{Verb: api.VerbDumpTables, Bridge: args[0]})
			if err != nil {
				return err
			}
			return c.emit(cmd.OutOrStdout(), tablesJSON{Bridge: args[0], Tables: orEmpty(resp.Tables)},
				func(w io.Writer) { printTables(w, resp.Tables) })
		},
	}
}

func (c *cli) dumpFastPathCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "dump-fastpath BRIDGE",
		Short: "Print the flows the XDP fast path carries in the kernel, as ovs-appctl dpctl/dump-flows does",
		Long: `Print the entries of the in-kernel fast path: for each flow the XDP
program carries without user space, its exact match, what the program does
to its frames, the frames and bytes it carried and when it last did.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: c.completeBridge,
		RunE: func(cmd *cobra.Command, args []string) error {
			resp, err := c.call(api.Request{Verb: api.VerbDumpFast, Bridge: args[0]})
			if err != nil {
				return err
			}
			return c.emit(cmd.OutOrStdout(), fastPathJSON{Bridge: args[0], Entries: orEmpty(resp.FastPath)},
				func(w io.Writer) { printFastPath(w, resp.FastPath) })
		},
	}
}

func (c *cli) fdbShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "fdb-show BRIDGE",
		Short:             "Print the learned MAC addresses, as ovs-appctl fdb/show does",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: c.completeBridge,
		RunE: func(cmd *cobra.Command, args []string) error {
			resp, err := c.call(api.Request{Verb: api.VerbFDB, Bridge: args[0]})
			if err != nil {
				return err
			}
			return c.emit(cmd.OutOrStdout(), toFDBJSON(args[0], resp.FDB), func(w io.Writer) { printFDB(w, resp.FDB) })
		},
	}
}

// show asks for the status of every bridge, or of one.
func (c *cli) show(bridge string) ([]api.BridgeStatus, error) {
	resp, err := c.call(api.Request{Verb: api.VerbShow, Bridge: bridge})
	if err != nil {
		return nil, err
	}
	return resp.Bridges, nil
}

// findPort finds a port by name or OpenFlow number, as ovs-ofctl accepts.
func findPort(b api.BridgeStatus, nameOrNumber string) (api.PortStatus, error) {
	n, numErr := strconv.ParseUint(nameOrNumber, 10, 16)
	for _, p := range b.Ports {
		if p.Name == nameOrNumber || (numErr == nil && uint64(p.OFPort) == n) {
			return p, nil
		}
	}
	return api.PortStatus{}, fmt.Errorf("no port %q on bridge %s", nameOrNumber, b.Name)
}

// defaultReadyTimeout is how long wait-ready waits without --timeout.
const defaultReadyTimeout = 30 * time.Second

func (c *cli) waitReadyCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "wait-ready",
		Short: "Wait until the daemon serves (up to --timeout, 30 s unless given)",
		Long: `Wait until a daemon serves on --sock: it answers once it has restored its
configuration. Until it listens, the socket may be missing, or left behind by
a daemon that was killed; wait-ready waits through both. It exits 0 once the
daemon answers, 2 if none does within --timeout (30 s unless given), so that
a script can start the daemon and go on as soon as it serves:

  xswitch daemon & xswitch wait-ready && xswitch add-br br0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			timeout := c.timeout
			if !cmd.Flags().Changed("timeout") {
				timeout = defaultReadyTimeout
			}
			_, err := api.WaitReady(c.socket, timeout)
			return err
		},
	}
}
