package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"

	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/internal/netns"
	"github.com/xswitch/xswitch/port/veth"
)

// The two-host demo (demo --hosts 2): two namespaces play two hosts
// joined by an underlay veth, each running an xswitch daemon of its own
// with a namespace behind it, and a VXLAN tunnel between their bridges.

// demoUnderlayMTU leaves the namespaces behind the hosts their 1500 bytes
// inside the tunnel.
const demoUnderlayMTU = 1550

// demoSite is one host of the two-host demo: its namespace, its underlay
// end and address, its daemon, and the namespace behind it.
type demoSite struct {
	host, underlay, underlayAddr string
	client                       *cli
	vm                           demoHost
}

func runTunnelDemo(ctx context.Context, w io.Writer) error {
	if os.Geteuid() != 0 {
		return errors.New("the demo needs root: it creates network namespaces and attaches XDP programs")
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the xswitch binary to run on each host: %w", err)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var undo undoStack
	defer func() {
		fmt.Fprintln(w, "\n== cleaning up")
		undo.run()
		fmt.Fprintln(w, "removed the bridges, the tunnels, the daemons, the veth pairs and the namespaces")
	}()
	tag := randomTag()
	dir, err := os.MkdirTemp("", "xswitch-demo-")
	if err != nil {
		return err
	}
	undo.push(func() { os.RemoveAll(dir) })

	sites := []*demoSite{
		{host: "xsdemo-" + tag + "-host1", underlay: "xsd" + tag + "u1", underlayAddr: "192.168.250.1",
			vm: demoHost{label: "a", netns: "xsdemo-" + tag + "-a", port: "vma", addr: "10.99.0.1"}},
		{host: "xsdemo-" + tag + "-host2", underlay: "xsd" + tag + "u2", underlayAddr: "192.168.250.2",
			vm: demoHost{label: "b", netns: "xsdemo-" + tag + "-b", port: "vmb", addr: "10.99.0.2"}},
	}
	fmt.Fprintln(w, "== two hosts, as network namespaces joined by an underlay veth")
	for _, s := range sites {
		for _, ns := range []string{s.host, s.vm.netns} {
			if err := netns.Create(ns); err != nil {
				return err
			}
			undo.push(func() { netns.Delete(ns) })
		}
	}
	if err := demoUnderlay(sites); err != nil {
		return err
	}
	for _, s := range sites {
		fmt.Fprintf(w, "   %s: %s %s/24, MTU %d\n", s.host, s.underlay, s.underlayAddr, demoUnderlayMTU)
	}

	bridge := "br-" + tag
	for i, s := range sites {
		other := sites[1-i]
		fmt.Fprintf(w, "== on %s: ip netns exec %s xswitch daemon\n", s.host, s.host)
		d, err := startDaemonProcess(exe, s.host, filepath.Join(dir, s.host), -1)
		if err != nil {
			return err
		}
		undo.push(func() {
			if err := d.stop(); err != nil {
				fmt.Fprintln(w, err)
			}
		})
		if err := d.run(ctx, "wait-ready", "--timeout", daemonProcessTimeout.String()); err != nil {
			return err
		}
		client := &cli{socket: d.sock}
		s.client = client
		steps := []struct {
			words string
			req   api.Request
		}{
			{"add-br " + bridge, api.Request{Verb: api.VerbAddBridge, Bridge: bridge}},
			{fmt.Sprintf("add-port %s %s --netns %s --address %s/24", bridge, s.vm.port, s.vm.netns, s.vm.addr),
				api.Request{Verb: api.VerbAddPort, Bridge: bridge,
					AddPort: &api.PortConfig{Name: s.vm.port, Netns: s.vm.netns, Address: s.vm.addr + "/24"}}},
			{fmt.Sprintf("add-port %s vx1 --type vxlan --remote-ip %s --key 42", bridge, other.underlayAddr),
				api.Request{Verb: api.VerbAddPort, Bridge: bridge,
					AddPort: &api.PortConfig{Name: "vx1", Type: api.PortTypeVXLAN, RemoteIP: other.underlayAddr, Key: "42"}}},
		}
		for _, step := range steps {
			fmt.Fprintf(w, "== on %s: xswitch %s\n", s.host, step.words)
			if _, err := client.call(step.req); err != nil {
				return err
			}
		}
	}
	a, b := sites[0], sites[1]
	fmt.Fprintln(w, "== ping across the tunnel")
	for _, pair := range [][2]*demoSite{{a, b}, {b, a}} {
		r, err := demoPingUntil(ctx, pair[0].vm, pair[1].vm, 10*time.Second)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "   %s -> %s: %s\n", pair[0].vm.netns, pair[1].vm.addr, r)
	}
	fmt.Fprintf(w, "== TCP: %d MiB from %s to %s, through the tunnel\n", demoTransferSize>>20, a.vm.netns, b.vm.netns)
	line, err := demoTransfer(ctx, a.vm, b.vm, demoTransferSize)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   %s\n", line)

	for _, s := range sites {
		bridges, err := s.client.show(bridge)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "== on %s: xswitch show\n", s.host)
		printShow(w, bridges)
		fmt.Fprintf(w, "== on %s: xswitch dump-ports %s\n", s.host, bridge)
		printDumpPorts(w, bridges[0].Ports)
		resp, err := s.client.call(api.Request{Verb: api.VerbFDB, Bridge: bridge})
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "== on %s: xswitch fdb-show %s (the other host's station on the tunnel, port 2)\n", s.host, bridge)
		printFDB(w, resp.FDB)
	}
	return nil
}

// demoUnderlay joins the sites' hosts with a veth pair and addresses it.
// GRO on both ends lets the fast path redirect tunnel frames into it, as
// a NIC always would; checksum offload off, as on the ports' veths.
func demoUnderlay(sites []*demoSite) error {
	a, b := sites[0], sites[1]
	nsA, err := vnetns.GetFromName(a.host)
	if err != nil {
		return err
	}
	defer nsA.Close()
	nsB, err := vnetns.GetFromName(b.host)
	if err != nil {
		return err
	}
	defer nsB.Close()
	pair := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: a.underlay, MTU: demoUnderlayMTU, Namespace: netlink.NsFd(nsA)},
		PeerName: b.underlay, PeerMTU: demoUnderlayMTU, PeerNamespace: netlink.NsFd(nsB)}
	if err := netlink.LinkAdd(pair); err != nil {
		return fmt.Errorf("create the underlay veth %s/%s: %w", a.underlay, b.underlay, err)
	}
	for _, s := range sites {
		err := netns.Do(s.host, func() error {
			l, err := netlink.LinkByName(s.underlay)
			if err != nil {
				return err
			}
			addr := &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP(s.underlayAddr), Mask: net.CIDRMask(24, 32)}}
			if err := netlink.AddrAdd(l, addr); err != nil {
				return err
			}
			return netlink.LinkSetUp(l)
		})
		if err == nil {
			err = veth.EnableGRO(s.host, s.underlay)
		}
		if err == nil {
			err = veth.DisableTxChecksum(s.host, s.underlay)
		}
		if err != nil {
			return fmt.Errorf("set up %s in %s: %w", s.underlay, s.host, err)
		}
	}
	return nil
}

// demoPingUntil pings until the first replies come (ARP across the
// tunnel resolves on the way), for at most within.
func demoPingUntil(ctx context.Context, from, to demoHost, within time.Duration) (pingResult, error) {
	deadline := time.Now().Add(within)
	for {
		r, err := demoPing(ctx, from, to)
		if err != nil || r.received == r.sent {
			return r, err
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("ping from %s to %s across the tunnel: %s", from.netns, to.addr, r)
		}
	}
}
