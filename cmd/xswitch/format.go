package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/xswitch/xswitch/bpf"
	"github.com/xswitch/xswitch/control/api"
	vswitch "github.com/xswitch/xswitch/switch"
	"github.com/xswitch/xswitch/tunnel"
)

func printPortNames(w io.Writer, b api.BridgeStatus) {
	for _, n := range portNames(b) {
		fmt.Fprintln(w, n)
	}
}

// printShow prints the configuration as a tree, in the manner of
// ovs-vsctl show.
func printShow(w io.Writer, bridges []api.BridgeStatus) {
	for _, b := range bridges {
		fmt.Fprintf(w, "Bridge %s\n", b.Name)
		fmt.Fprintf(w, "    datapath_id: %s\n", b.DatapathID)
		for _, c := range b.Controllers {
			fmt.Fprintf(w, "    Controller %q\n", c.Target)
			if c.Connected { // as ovs-vsctl, which leaves out a false one
				fmt.Fprintf(w, "        is_connected: true\n")
			}
		}
		if b.FailMode != "" {
			fmt.Fprintf(w, "    fail_mode: %s\n", b.FailMode)
		}
		for _, p := range b.Ports {
			fmt.Fprintf(w, "    Port %s\n", p.Name)
			fmt.Fprintf(w, "        ofport: %d\n", p.OFPort)
			if vlan := vlanSummary(p.PortConfig); vlan != "" {
				fmt.Fprintf(w, "        vlan: %s\n", vlan)
			}
			if limit := stormLimit(p.PortConfig); limit > 0 {
				fmt.Fprintf(w, "        storm limit: %d frames/s\n", limit)
			}
			if mtu := shownMTU(p); mtu != 0 {
				fmt.Fprintf(w, "        mtu: %d\n", mtu)
			}
			if p.Info.Kind == "" { // not open
				if p.IsTunnel() {
					printTunnel(w, p, nil)
				}
				fmt.Fprintf(w, "        state: down (%s)\n", p.Error)
				continue
			}
			if t := p.Tunnel; t != nil {
				printTunnel(w, p, t)
			} else {
				kind := p.Info.Kind
				if p.Type != "" {
					kind += " on " + p.Type // "afxdp on tap"
				}
				fmt.Fprintf(w, "        type: %s (xdp=%s, bind=%s, queues=%d)\n",
					kind, p.Info.XDPMode, p.Info.BindMode, p.Info.Queues)
			}
			if p.Warning != "" {
				fmt.Fprintf(w, "        warning: %s\n", p.Warning)
			}
			if p.FastPath != "" {
				fmt.Fprintf(w, "        fastpath: %s\n", p.FastPath)
			}
			var details []string
			if p.Peer != "" {
				details = append(details, "peer "+p.Peer)
			}
			if p.Device != "" {
				details = append(details, "device "+p.Device)
			}
			if p.Address != "" {
				details = append(details, "address "+p.Address)
			}
			switch {
			case p.Netns != "":
				fmt.Fprintf(w, "        netns: %s (%s)\n", p.Netns, strings.Join(details, ", "))
			case p.Type == api.PortTypeInternal:
				fmt.Fprintf(w, "        netns: host (%s)\n", strings.Join(details, ", "))
			}
			if p.Owner != 0 {
				fmt.Fprintf(w, "        owner: %d\n", p.Owner)
			}
			if p.RSTP != nil {
				fmt.Fprintf(w, "        rstp: %s, %s\n", p.RSTP.Role, p.RSTP.State)
			}
			if p.Error != "" {
				fmt.Fprintf(w, "        state: down (%s)\n", p.Error)
			} else {
				fmt.Fprintf(w, "        state: up\n")
			}
		}
	}
}

// printTunnel prints what show says of a tunnel port beyond any port's:
// its options as OVS's show prints them, and how its remote is reached.
func printTunnel(w io.Writer, p api.PortStatus, t *api.TunnelStatus) {
	opts := []string{"remote_ip=" + p.RemoteIP}
	switch {
	case p.LocalIP != "":
		opts = append(opts, "local_ip="+p.LocalIP)
	case t != nil && t.Local != "":
		opts = append(opts, "local_ip="+t.Local) // the route's
	}
	key := p.Key
	if key == "" {
		key = "0"
	}
	opts = append(opts, "key="+key)
	if kind, err := tunnel.ParseKind(p.Type); err == nil {
		opts = append(opts, fmt.Sprintf("dst_port=%d", kind.Port(p.DstPort)))
	}
	fmt.Fprintf(w, "        type: %s (%s)\n", p.Type, strings.Join(opts, ", "))
	if t == nil { // down
		return
	}
	u := t.UnderlayInfo
	fmt.Fprintf(w, "        underlay: %s (xdp=%s, bind=%s, queues=%d)\n", t.Underlay, u.XDPMode, u.BindMode, u.Queues)
	nextHop := t.NextHop
	switch {
	case t.NextHopMAC != "":
		nextHop += " at " + t.NextHopMAC
	case nextHop != "":
		nextHop += ", not resolved yet"
	}
	fmt.Fprintf(w, "        route: from %s via %s\n", t.Local, nextHop)
	if t.Unreachable != "" {
		fmt.Fprintf(w, "        unreachable: %s (frames to it are dropped and counted)\n", t.Unreachable)
	}
}

// printDumpPorts prints port counters in ovs-ofctl dump-ports' shape, with
// the AF_XDP sockets' own statistics on a line of their own, NORMAL's
// drops by reason on another, and the pipeline's drops of the frames the
// port received on a last one.
func printDumpPorts(w io.Writer, ports []api.PortStatus) {
	fmt.Fprintf(w, "OFPST_PORT reply: %d ports\n", len(ports))
	for _, p := range ports {
		c, k := countersOf(p), p.Stats.Kernel
		fmt.Fprintf(w, "  port %2d: rx pkts=%d, bytes=%d, drop=%d, errs=%d, frame=0, over=0, crc=0\n",
			p.OFPort, c.RxPackets, c.RxBytes, c.RxDropped, c.RxErrors)
		fmt.Fprintf(w, "           tx pkts=%d, bytes=%d, drop=%d, errs=%d, coll=0\n",
			c.TxPackets, c.TxBytes, c.TxDropped, c.TxErrors)
		if p.Tunnel == nil { // a tunnel's sockets are its underlay's
			fmt.Fprintf(w, "           xsk rx_dropped=%d, rx_ring_full=%d, fill_ring_empty=%d, rx_invalid=%d, tx_invalid=%d, tx_ring_empty=%d, rx_oversize=%d, tx_refused=%d\n",
				k.RxDropped, k.RxRingFull, k.RxFillRingEmpty, k.RxInvalidDescs, k.TxInvalidDescs, k.TxRingEmpty, k.RxOversize, k.TxRefused)
		}
		d := dropsOf(p)
		fmt.Fprintf(w, "           drops vlan=%d, reserved=%d, storm=%d, stp=%d, split_horizon=%d\n", d.VLAN, d.Reserved, d.Storm, d.STP, d.SplitHorizon)
		_, reasons := dropReasons(vswitch.DropReasons[:], p.Stats.PipelineDropped)
		fmt.Fprintf(w, "           pipeline drops %s\n", reasons)
		if t := p.Tunnel; t != nil {
			u := t.UnderlayDrops
			fmt.Fprintf(w, "           tunnel tx_oversize=%d (longer than the underlay's MTU less %d), tx_no_route=%d\n",
				t.Drops.TxOversize, tunnelOverhead, t.Drops.TxNoRoute)
			fmt.Fprintf(w, "           underlay %s rx drops unknown_remote=%d, wrong_key=%d, bad_outer=%d, fragment=%d, bad_header=%d, critical_option=%d, short_inner=%d, not_tunnel=%d\n",
				t.Underlay, u.UnknownRemote, u.WrongKey, u.BadOuter, u.Fragment, u.BadHeader, u.CriticalOpt, u.ShortInner, u.NotTunnel)
		}
		if n := p.Stats.FastPathTxDropped; n > 0 {
			fmt.Fprintf(w, "           fastpath tx_dropped=%d (frames redirected in the kernel that the interface did not take: see show)\n", n)
		}
	}
}

// printFDB prints learned addresses in ovs-appctl fdb/show's shape.
func printFDB(w io.Writer, entries []api.FDBEntry) {
	fmt.Fprintln(w, " port  VLAN  MAC                Age")
	for _, e := range entries {
		fmt.Fprintf(w, "%5d  %4d  %s  %3d\n", e.Port, e.VLAN, e.MAC, e.AgeSec)
	}
}

// printPMDStats prints each bridge's forwarding statistics, after
// ovs-appctl dpif-netdev/pmd-stats-show.
func printPMDStats(w io.Writer, bridges []api.BridgeStatus) {
	for _, b := range bridges {
		fmt.Fprintf(w, "bridge %s:\n", b.Name)
		fmt.Fprintf(w, "  packets received: %d\n", packetsReceived(b))
		fmt.Fprintf(w, "  flows: %d\n", b.Flows)
		fmt.Fprintf(w, "  exact-match cache hits: %d\n", b.CacheHits)
		fmt.Fprintf(w, "  translations through the tables (cache misses): %d\n", b.CacheMisses)
		fmt.Fprintf(w, "  decisions translated again (a table or MAC-table entry they relied on changed): %d\n", b.CacheStale)
		printPipelineDrops(w, b.Drops)
		printForwarder(w, b.Forwarder)
		if fp := b.FastPath; fp != nil {
			fmt.Fprintf(w, "  fast path: %d frames carried in the kernel, %d entries (%d installed, %d refused, %d swept)\n",
				fp.Hits, fp.Entries, fp.Installs, fp.InstallFailures, fp.Evictions)
			// The kernel's own count: its rule drops are among the
			// pipeline's too.
			total, reasons := dropReasons(bpf.DropReasons[:], fp.Drops)
			fmt.Fprintf(w, "  fast path drops: %d (%s)\n", total, reasons)
		} else {
			fmt.Fprintln(w, "  fast path: off")
		}
	}
}

// printFastPath prints the fast path's entries after ovs-appctl
// dpctl/dump-flows: the match, then the counters, then the actions.
func printFastPath(w io.Writer, entries []api.FastPathEntry) {
	for _, e := range entries {
		stale := ""
		if e.Stale {
			stale = " (stale)"
		}
		fmt.Fprintf(w, "%s, packets:%d, bytes:%d, used:%.3fs%s, actions:%s\n", e.Flow, e.Packets, e.Bytes, e.UsedSec, stale, e.Actions)
	}
}

// printForwarder says where a bridge's forwarding threads run and, as OVS
// does for PMD threads, how much of their time went to forwarding.
func printForwarder(w io.Writer, f api.ForwarderStatus) {
	switch len(f.CPUs) {
	case 0:
		fmt.Fprint(w, "  forwarding thread: any CPU")
	case 1:
		fmt.Fprintf(w, "  forwarding thread: CPU %d", f.CPUs[0])
	default:
		fmt.Fprintf(w, "  forwarding threads: one on each of CPUs %s", (*cpuList)(&f.CPUs).String())
	}
	if f.BusyPoll {
		fmt.Fprintln(w, ", busy-polling when idle")
	} else {
		fmt.Fprintln(w, ", sleeping when idle")
	}
	total := f.BusySec + f.IdleSec
	if total == 0 {
		return
	}
	fmt.Fprintf(w, "  busy: %.1f s (%.1f%%), idle: %.1f s (%.1f%%)\n",
		f.BusySec, 100*f.BusySec/total, f.IdleSec, 100*f.IdleSec/total)
}

// printPipelineDrops says how many frames the pipeline sent nowhere, and
// why.
func printPipelineDrops(w io.Writer, drops map[string]uint64) {
	total, reasons := dropReasons(vswitch.DropReasons[:], drops)
	fmt.Fprintf(w, "  pipeline drops: %d (%s)\n", total, reasons)
}

// dropReasons lists drops by reason, in the order of reasons, and their
// total.
func dropReasons(reasons []string, drops map[string]uint64) (total uint64, list string) {
	parts := make([]string, 0, len(reasons))
	for _, reason := range reasons {
		parts = append(parts, fmt.Sprintf("%s=%d", reason, drops[reason]))
		total += drops[reason]
	}
	return total, strings.Join(parts, ", ")
}

// printTables prints each table's counters as ovs-ofctl dump-tables does;
// a run of tables with the same counters as the one before is "ditto".
func printTables(w io.Writer, tables []api.TableStatus) {
	for i := 0; i < len(tables); {
		t := tables[i]
		fmt.Fprintf(w, "  table %d:\n    active=%d, lookup=%d, matched=%d\n", t.Table, t.Active, t.Lookups, t.Matched)
		j := i + 1
		for j < len(tables) && tables[j].Active == t.Active && tables[j].Lookups == t.Lookups && tables[j].Matched == t.Matched {
			j++
		}
		switch {
		case j == i+2:
			fmt.Fprintf(w, "  table %d: ditto\n", tables[i+1].Table)
		case j > i+2:
			fmt.Fprintf(w, "  tables %d...%d: ditto\n", tables[i+1].Table, tables[j-1].Table)
		}
		i = j
	}
}
