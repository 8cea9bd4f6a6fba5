package bench

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/netip"
	"os/exec"
	"time"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"

	"github.com/xswitch/xswitch/internal/netns"
	"github.com/xswitch/xswitch/port/veth"
)

// The tunnel cases put the path between the generator and the receiver
// across two hosts, namespaces joined by an underlay veth pair: the
// generator's veth ends on host A, the receiver's on host B, and on each
// host a switch (the kernel's bridge and vxlan device, Open vSwitch or
// xswitch) joins its veth to a VXLAN tunnel to the other host.

// TunnelVNI is the VNI of the tunnel cases' VXLAN tunnels.
const TunnelVNI = 42

// VXLANPort is IANA's UDP port for VXLAN, where every tunnel case's
// tunnels send.
const VXLANPort = 4789

// underlayOverhead is how much larger the underlay's MTU is than the
// inner one: VXLAN takes 50 bytes (Ethernet, IPv4, UDP and its own 8),
// Geneve as many plus its options, so 100 keeps the inner MTU whole for
// both, with the 1600 under 1500.
const underlayOverhead = 100

// The underlay's veth ends. Each is alone in its host's namespace, so the
// names need not be unique beyond it.
const (
	underlayA = "underlay-a"
	underlayB = "underlay-b"
)

// underlayResolveTimeout bounds how long a tunnel case waits for each
// host to reach the other over the underlay: OVS and xswitch learn the
// other's MAC address only once ARP crosses them.
const underlayResolveTimeout = 10 * time.Second

// TunnelHost is one of the two hosts of a tunnel case, as a TunnelSwitch
// gets it.
type TunnelHost struct {
	Netns string // the host's network namespace
	// Underlay is the host's end of the underlay veth pair, in Netns,
	// which has UnderlayAddr (address and prefix) when the switch is set
	// up; the underlay's MTU leaves MTU to the frames inside the tunnel.
	Underlay     string
	UnderlayAddr netip.Prefix
	// Port is the switch end of the veth pair into the generator's
	// namespace (host A) or the receiver's (host B), in Netns; MTU is its
	// MTU and that of its peer.
	Port string
	MTU  int
}

// A TunnelSwitch makes host forward between host.Port and a VXLAN tunnel
// (VNI TunnelVNI, UDP port VXLANPort) to remote.UnderlayAddr over
// host.Underlay, writing a line to log where it had a choice. The
// remote's underlay address answers pings from the start, whatever is set
// up there yet. Its cleanup removes what it made; when it fails, it
// cleans up itself.
type TunnelSwitch func(ctx context.Context, host, remote TunnelHost, log io.Writer) (cleanup func(), err error)

// TunnelCase is a case whose generator's frames cross from host A, where
// a forwards them into a VXLAN tunnel, to host B, where b forwards them
// out of it to the receiver.
func TunnelCase(name string, a, b TunnelSwitch) Case {
	return Case{Name: name, Setup: func(ctx context.Context, hosts Hosts) (_ func(), err error) {
		var undo []func()
		cleanup := func() {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
		}
		defer func() {
			if err != nil {
				cleanup()
			}
		}()
		hostA, hostB, removeHosts, err := makeTunnelHosts(hosts)
		if err != nil {
			return nil, err
		}
		undo = append(undo, removeHosts)
		// The generator's frames are sent into its veth with XDP and
		// arrive at host A's end only if that end polls with NAPI: with
		// an XDP program (xswitch's, OVS's in native mode) or with GRO on
		// (the kernel's bridge, OVS in generic mode). See enableGRO.
		if err := veth.EnableGRO(hostA.Netns, hostA.Port); err != nil {
			return nil, err
		}
		for _, s := range []struct {
			setup        TunnelSwitch
			host, remote TunnelHost
		}{{a, hostA, hostB}, {b, hostB, hostA}} {
			stop, err := s.setup(ctx, s.host, s.remote, hosts.Log)
			if err != nil {
				return nil, fmt.Errorf("host %s: %w", s.host.Netns, err)
			}
			undo = append(undo, stop)
		}
		if err := resolveUnderlay(ctx, hostA, hostB); err != nil {
			return nil, err
		}
		return cleanup, nil
	}}
}

// tunnelHostNames are the namespaces of a measurement's two hosts, named
// after its generator's port, which is unique to it.
func tunnelHostNames(hosts Hosts) (a, b string) {
	return hosts.GenPort + "-ha", hosts.GenPort + "-hb"
}

// underlayAddrs are the addresses of host A's and host B's underlay
// ends: 172.31.X.1/24 and .2/24, X from the measurement's generator
// port, so that the underlays of two measurements (a capture, a leftover
// of a killed run) are told apart.
func underlayAddrs(genPort string) (a, b netip.Prefix) {
	h := fnv.New32a()
	h.Write([]byte(genPort))
	x := byte(h.Sum32())
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{172, 31, x, 1}), 24),
		netip.PrefixFrom(netip.AddrFrom4([4]byte{172, 31, x, 2}), 24)
}

// makeTunnelHosts makes the two hosts of hosts' measurement, joined by
// the underlay, with the generator's veth pair from host A and the
// receiver's from host B. Deleting the hosts' namespaces, which the
// returned cleanup does, deletes every veth in them.
func makeTunnelHosts(hosts Hosts) (a, b TunnelHost, cleanup func(), err error) {
	innerMTU := hosts.MTU
	if innerMTU == 0 {
		innerMTU = veth.DefaultMTU
	}
	nsA, nsB := tunnelHostNames(hosts)
	addrA, addrB := underlayAddrs(hosts.GenPort)
	a = TunnelHost{Netns: nsA, Underlay: underlayA, UnderlayAddr: addrA, Port: hosts.GenPort, MTU: innerMTU}
	b = TunnelHost{Netns: nsB, Underlay: underlayB, UnderlayAddr: addrB, Port: hosts.RcvPort, MTU: innerMTU}

	var made []string
	cleanup = func() {
		for _, ns := range made {
			netns.Delete(ns)
		}
	}
	defer func() {
		if err != nil {
			cleanup()
		}
	}()
	for _, ns := range []string{nsA, nsB} {
		if err := netns.Create(ns); err != nil {
			return a, b, nil, err
		}
		made = append(made, ns)
	}
	if err := joinUnderlay(a, b, innerMTU+underlayOverhead); err != nil {
		return a, b, nil, err
	}
	for _, p := range []struct {
		host  TunnelHost
		netns string
	}{{a, hosts.GenNetns}, {b, hosts.RcvNetns}} {
		err := netns.Do(p.host.Netns, func() error {
			return veth.Create(veth.Config{Name: p.host.Port, Namespace: p.netns, Peer: PeerName, MTU: hosts.MTU})
		})
		if err != nil {
			return a, b, nil, fmt.Errorf("host %s: %w", p.host.Netns, err)
		}
	}
	return a, b, cleanup, nil
}

// joinUnderlay makes the underlay veth pair between a and b, with MTU
// mtu, addresses and up.
func joinUnderlay(a, b TunnelHost, mtu int) error {
	nsA, err := vnetns.GetFromName(a.Netns)
	if err != nil {
		return fmt.Errorf("open network namespace %q: %w", a.Netns, err)
	}
	defer nsA.Close()
	nsB, err := vnetns.GetFromName(b.Netns)
	if err != nil {
		return fmt.Errorf("open network namespace %q: %w", b.Netns, err)
	}
	defer nsB.Close()
	// The kernel makes each end in its namespace under its final name.
	pair := &netlink.Veth{
		LinkAttrs: netlink.LinkAttrs{Name: a.Underlay, MTU: mtu, Namespace: netlink.NsFd(nsA)},
		PeerName:  b.Underlay, PeerMTU: uint32(mtu), PeerNamespace: netlink.NsFd(nsB),
	}
	if err := netlink.LinkAdd(pair); err != nil {
		return fmt.Errorf("create the underlay veth pair %s (in %s) and %s (in %s): %w", a.Underlay, a.Netns, b.Underlay, b.Netns, err)
	}
	for _, h := range []TunnelHost{a, b} {
		err := netns.Do(h.Netns, func() error {
			l, err := netlink.LinkByName(h.Underlay)
			if err != nil {
				return err
			}
			addr := &netlink.Addr{IPNet: prefixIPNet(h.UnderlayAddr)}
			if err := netlink.AddrAdd(l, addr); err != nil {
				return fmt.Errorf("add address %s: %w", h.UnderlayAddr, err)
			}
			return netlink.LinkSetUp(l)
		})
		if err != nil {
			return fmt.Errorf("underlay %s in %s: %w", h.Underlay, h.Netns, err)
		}
		// The underlay stands for a NIC, alike in every case. A NIC
		// polls with NAPI, without which the frames xswitch's fast path
		// redirects into the other end would not arrive (see enableGRO);
		// and it fills in the checksums the kernel leaves to it, which a
		// veth does not, so the kernel must (as on the generator's and
		// receiver's veths): the switch in user space on the other end
		// would forward them unfilled.
		if err := veth.EnableGRO(h.Netns, h.Underlay); err != nil {
			return err
		}
		if err := veth.DisableTxChecksum(h.Netns, h.Underlay); err != nil {
			return err
		}
	}
	return nil
}

func prefixIPNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// resolveUnderlay pings each host's underlay address from the other
// until both answer. A switch in user space drops what it would send into
// a tunnel while it does not know the remote's MAC address, and xswitch
// takes it from the kernel's neighbour table, which the pings fill in:
// without them the first frames across, among them announce's only one,
// would be lost.
func resolveUnderlay(ctx context.Context, a, b TunnelHost) error {
	if err := pingUntilAnswered(ctx, a.Netns, b.UnderlayAddr.Addr()); err != nil {
		return err
	}
	return pingUntilAnswered(ctx, b.Netns, a.UnderlayAddr.Addr())
}

// pingUntilAnswered pings addr from namespace ns until it answers, for at
// most underlayResolveTimeout.
func pingUntilAnswered(ctx context.Context, ns string, addr netip.Addr) error {
	deadline := time.Now().Add(underlayResolveTimeout)
	for {
		out, err := exec.CommandContext(ctx, "ip", "netns", "exec", ns,
			"ping", "-n", "-c", "1", "-W", "1", addr.String()).CombinedOutput()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not answer pings from namespace %s within %v: %w: %s",
				addr, ns, underlayResolveTimeout, err, out)
		}
	}
}

// KernelVXLANCase is the kernel's pair: on each host a Linux bridge
// joining the host's veth to a vxlan device.
func KernelVXLANCase() Case {
	return TunnelCase("kernel-vxlan", KernelVXLAN, KernelVXLAN)
}

// KernelVXLAN is a TunnelSwitch of the kernel's: a vxlan device to the
// remote over the underlay, and a Linux bridge between it and the host's
// veth, as `ip link add vxlan0 type vxlan id 42 local A remote B dstport
// 4789 dev UNDERLAY` and `ip link add br0 type bridge` make them.
func KernelVXLAN(ctx context.Context, host, remote TunnelHost, log io.Writer) (func(), error) {
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "br0"}}
	vx := &netlink.Vxlan{
		LinkAttrs: netlink.LinkAttrs{Name: "vxlan0"},
		VxlanId:   TunnelVNI,
		SrcAddr:   host.UnderlayAddr.Addr().AsSlice(),
		Group:     remote.UnderlayAddr.Addr().AsSlice(),
		Port:      VXLANPort,
		Learning:  true,
	}
	cleanup := func() {
		netns.Do(host.Netns, func() error {
			for _, name := range []string{br.Name, vx.Name} {
				if l, err := netlink.LinkByName(name); err == nil {
					netlink.LinkDel(l)
				}
			}
			return nil
		})
	}
	err := netns.Do(host.Netns, func() error {
		underlay, err := netlink.LinkByName(host.Underlay)
		if err != nil {
			return fmt.Errorf("underlay %q: %w", host.Underlay, err)
		}
		vx.VtepDevIndex = underlay.Attrs().Index
		if err := netlink.LinkAdd(vx); err != nil {
			return fmt.Errorf("create vxlan device %s: %w", vx.Name, err)
		}
		if err := netlink.LinkAdd(br); err != nil {
			return fmt.Errorf("create bridge %q: %w", br.Name, err)
		}
		for _, name := range []string{vx.Name, host.Port} {
			l, err := netlink.LinkByName(name)
			if err != nil {
				return fmt.Errorf("interface %q: %w", name, err)
			}
			if err := netlink.LinkSetMaster(l, br); err != nil {
				return fmt.Errorf("add %q to bridge %q: %w", name, br.Name, err)
			}
			if err := netlink.LinkSetUp(l); err != nil {
				return fmt.Errorf("set %q up: %w", name, err)
			}
		}
		return linkUp(br.Name)
	})
	if err != nil {
		cleanup()
		return nil, err
	}
	return cleanup, nil
}
