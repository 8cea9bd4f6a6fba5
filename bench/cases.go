package bench

import (
	"context"
	"fmt"
	"net"
	"os/exec"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/header"
	"github.com/xswitch/xswitch/internal/netns"
	"github.com/xswitch/xswitch/port/veth"
)

// LinuxBridge is the kernel's bridge between the two veths.
func LinuxBridge() Case {
	return Case{Name: "linux-bridge", Setup: setupLinuxBridge}
}

// XDPRedirect forwards with an XDP program on the generator's switch-side
// veth that redirects every frame to the receiver's: the fastest a frame
// can cross from one veth to another on this machine.
func XDPRedirect() Case {
	return Case{Name: "xdp-redirect", Setup: setupXDPRedirect}
}

// GenOnly is the case that measures the generator alone, under each UDP
// workload: the generator's veth straight into the receiver's, whose XDP
// counter drops every frame, with nothing in between. Run measures it
// first in every round of a UDP workload; what it costs per frame is the
// generator's own cost, which the other cases' CPU figures subtract.
const GenOnly = "gen-only"

func genOnlyCase() Case {
	return Case{Name: GenOnly, Setup: setupGenOnly}
}

// setupGenOnly makes one veth pair from the generator's namespace into the
// receiver's, both ends PeerName.
func setupGenOnly(ctx context.Context, hosts Hosts) (func(), error) {
	gen, err := vnetns.GetFromName(hosts.GenNetns)
	if err != nil {
		return nil, fmt.Errorf("open network namespace %q: %w", hosts.GenNetns, err)
	}
	defer gen.Close()
	rcv, err := vnetns.GetFromName(hosts.RcvNetns)
	if err != nil {
		return nil, fmt.Errorf("open network namespace %q: %w", hosts.RcvNetns, err)
	}
	defer rcv.Close()
	mtu := hosts.MTU
	if mtu == 0 {
		mtu = veth.DefaultMTU
	}
	// The kernel makes each end in its namespace under its final name,
	// and deletes the pair with either namespace.
	pair := &netlink.Veth{
		LinkAttrs: netlink.LinkAttrs{Name: PeerName, MTU: mtu, Namespace: netlink.NsFd(gen)},
		PeerName:  PeerName, PeerMTU: uint32(mtu), PeerNamespace: netlink.NsFd(rcv),
	}
	if err := netlink.LinkAdd(pair); err != nil {
		return nil, fmt.Errorf("create a veth pair from %s into %s: %w", hosts.GenNetns, hosts.RcvNetns, err)
	}
	for _, ns := range []string{hosts.GenNetns, hosts.RcvNetns} {
		if err := netns.Do(ns, func() error { return linkUp(PeerName) }); err != nil {
			return nil, fmt.Errorf("namespace %s: %w", ns, err)
		}
	}
	return func() {}, nil
}

// CreateVeths makes the two veth pairs of hosts, with their switch ends in
// this namespace and hosts.MTU on both ends, and returns a cleanup that
// deletes them.
func CreateVeths(hosts Hosts) (cleanup func(), err error) {
	var made []string
	cleanup = func() {
		for _, name := range made {
			veth.Delete(name)
		}
	}
	for _, p := range []struct{ name, ns string }{{hosts.GenPort, hosts.GenNetns}, {hosts.RcvPort, hosts.RcvNetns}} {
		if err := veth.Create(veth.Config{Name: p.name, Namespace: p.ns, Peer: PeerName, MTU: hosts.MTU}); err != nil {
			cleanup()
			return nil, err
		}
		made = append(made, p.name)
	}
	return cleanup, nil
}

func setupLinuxBridge(ctx context.Context, hosts Hosts) (func(), error) {
	removeVeths, err := CreateVeths(hosts)
	if err != nil {
		return nil, err
	}
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: hosts.GenPort + "b"}}
	cleanup := func() {
		netlink.LinkDel(br)
		removeVeths()
	}
	if err := setupBridge(ctx, br, hosts); err != nil {
		cleanup()
		return nil, err
	}
	return cleanup, nil
}

func setupBridge(ctx context.Context, br *netlink.Bridge, hosts Hosts) error {
	if err := netlink.LinkAdd(br); err != nil {
		return fmt.Errorf("create bridge %q: %w", br.Name, err)
	}
	for _, name := range []string{hosts.GenPort, hosts.RcvPort} {
		l, err := netlink.LinkByName(name)
		if err != nil {
			return fmt.Errorf("interface %q: %w", name, err)
		}
		if err := netlink.LinkSetMaster(l, br); err != nil {
			return fmt.Errorf("add %q to bridge %q: %w", name, br.Name, err)
		}
	}
	if err := linkUp(br.Name); err != nil {
		return err
	}
	return enableGRO(ctx, "", hosts.GenPort)
}

// enableGRO turns GRO on for iface in namespace ns ("": this one). A frame
// sent into a veth with XDP (the generator's, or a redirect's) arrives at
// the peer only if the peer polls with NAPI, which it does with an XDP
// program or with GRO on.
func enableGRO(ctx context.Context, ns, iface string) error {
	args := []string{"ethtool", "-K", iface, "gro", "on"}
	if ns != "" {
		args = append([]string{"ip", "netns", "exec", ns}, args...)
	}
	if out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput(); err != nil {
		return fmt.Errorf("turn GRO on for %q in namespace %q: %w: %s", iface, ns, err, out)
	}
	return nil
}

func setupXDPRedirect(ctx context.Context, hosts Hosts) (func(), error) {
	removeVeths, err := CreateVeths(hosts)
	if err != nil {
		return nil, err
	}
	var redirects []*redirector
	cleanup := func() {
		for _, r := range redirects {
			r.close()
		}
		removeVeths()
	}
	// Both ways, so that TCP and ping get their answers back.
	for _, dir := range []struct{ from, to string }{{hosts.GenPort, hosts.RcvPort}, {hosts.RcvPort, hosts.GenPort}} {
		r, err := attachRedirect(dir.from, dir.to)
		if err != nil {
			cleanup()
			return nil, err
		}
		redirects = append(redirects, r)
	}
	// The UDP receiver's counter is an XDP program; TCP and ping have none.
	for _, ns := range []string{hosts.GenNetns, hosts.RcvNetns} {
		if err := enableGRO(ctx, ns, PeerName); err != nil {
			cleanup()
			return nil, err
		}
	}
	return cleanup, nil
}

// announceEtherType is the IEEE's EtherType for local experiments.
const announceEtherType = 0x88b5

// announce sends one frame from the receiver so that learning switches
// know its address before the generator starts.
func announce(ns string, from, to net.HardwareAddr) error {
	frame := make([]byte, MinFrameSize)
	eth := header.Ethernet(frame)
	eth.SetDst([header.MACLen]byte(to))
	eth.SetSrc([header.MACLen]byte(from))
	eth.SetType(announceEtherType)
	return netns.Do(ns, func() error {
		dev, err := net.InterfaceByName(PeerName)
		if err != nil {
			return fmt.Errorf("interface %q in namespace %q: %w", PeerName, ns, err)
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
		if err != nil {
			return fmt.Errorf("open a packet socket in namespace %q: %w", ns, err)
		}
		defer unix.Close(fd)
		if err := unix.Sendto(fd, frame, 0, &unix.SockaddrLinklayer{Ifindex: dev.Index, Halen: 6}); err != nil {
			return fmt.Errorf("send from %q in namespace %q: %w", PeerName, ns, err)
		}
		return nil
	})
}
