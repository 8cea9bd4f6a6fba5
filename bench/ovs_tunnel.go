package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/xswitch/xswitch/internal/netns"
	"github.com/xswitch/xswitch/port/veth"
)

// The bridges of an OVSTunnelHost, named as in Open vSwitch's guide to
// userspace tunnelling
// (https://docs.openvswitch.org/en/latest/howto/userspace-tunneling/).
const (
	// OVSIntegrationBridge joins the host's inner port (OpenFlow port 1)
	// and its tunnel port (OpenFlow port 2), NORMAL.
	OVSIntegrationBridge = "br-int"
	// OVSUnderlayBridge holds the underlay interface (OpenFlow port 1);
	// its LOCAL port, the kernel's interface of the same name, has the
	// host's underlay address, from which OVS sends the tunnel's frames.
	OVSUnderlayBridge = "br-phy"
)

// OVSTunnelHostConfig is what StartOVSTunnelHost makes of a network
// namespace.
type OVSTunnelHostConfig struct {
	// Netns is the existing network namespace that plays the host:
	// ovs-vswitchd runs in it and finds Underlay and InnerPort there.
	Netns string
	// Underlay is the interface to the remote host (a veth end), which
	// becomes an afxdp port of OVSUnderlayBridge. UnderlayAddr (CIDR,
	// "172.31.0.1/24") is the host's address on it: it goes on
	// OVSUnderlayBridge's LOCAL port, and if Underlay has it, it moves
	// from there until Close.
	Underlay     string
	UnderlayAddr string
	// Type is the tunnel's kind, TunnelTypeVXLAN or TunnelTypeGeneve
	// ("vxlan", "geneve"; OVS's own in user space: no kernel module is
	// needed). Remote is the other end's underlay address (IPv4).
	Type   string
	Remote string
	// Key is the VNI (decimal, up to 2^24-1), or "flow" for the one the
	// flows set with set_tunnel, receiving every VNI; empty is VNI 0.
	Key string
	// DstPort is the UDP port the tunnel sends to and listens on; 0 is
	// OVS's default, 4789 for vxlan and 6081 for geneve.
	DstPort uint16
	// InnerPort is an existing interface in Netns (the switch end of a
	// veth into a "VM" namespace), which becomes an afxdp port of
	// OVSIntegrationBridge.
	InnerPort string
	// Dir holds OVS's database, sockets, pidfiles and logs
	// (ovs-vswitchd.log); it is created if missing and left with the
	// logs by Close. Empty: a temporary directory that Close removes.
	Dir string
	// Log, if not nil, takes a line about the XDP modes OVS opened the
	// ports in.
	Log io.Writer
}

// The tunnel types StartOVSTunnelHost makes.
const (
	TunnelTypeVXLAN  = "vxlan"
	TunnelTypeGeneve = "geneve"
)

// maxVNI is the largest VNI of VXLAN and Geneve, whose VNIs are 24 bits.
const maxVNI = 1<<24 - 1

// OVSTunnelHost is a private Open vSwitch, userspace datapath, in one
// network namespace with a tunnel to another host, as
// StartOVSTunnelHost made it. Its one PMD thread polls the afxdp ports
// on SwitchCPU, where all of ovs-vswitchd runs.
type OVSTunnelHost struct {
	cfg          OVSTunnelHostConfig
	underlayAddr netip.Prefix
	remote       netip.Addr
	ovs          *ovsInstance
	// addrMoved says that the address was taken off Underlay, where
	// Close puts it back.
	addrMoved bool
	// xdpModes are the XDP modes ovs-vswitchd opened InnerPort and
	// Underlay in: native, or generic where veth's driver refused.
	xdpModes map[string]string
}

// StartOVSTunnelHost runs ovsdb-server and ovs-vswitchd for cfg.Netns,
// with their files in cfg.Dir, and sets up user-space tunnelling as Open
// vSwitch's guide does: OVSIntegrationBridge with cfg.InnerPort and a
// tunnel port (TunnelPort) to cfg.Remote, OVSUnderlayBridge with
// cfg.Underlay, cfg.UnderlayAddr on OVSUnderlayBridge's LOCAL port, and a
// route to the underlay's prefix through it (ovs/route/add).
//
// Until OVS knows the remote's MAC address, what it would send into the
// tunnel is dropped (and OVS asks for the address with ARP): call
// ResolveRemote once the remote's underlay address answers, before
// counting on the first frames to cross.
//
// The error says which step failed, with ovs-vswitchd's last warnings.
// On failure StartOVSTunnelHost leaves nothing behind; on success, Close
// undoes it all.
func StartOVSTunnelHost(ctx context.Context, cfg OVSTunnelHostConfig) (_ *OVSTunnelHost, err error) {
	underlayAddr, remote, err := cfg.validate()
	if err != nil {
		return nil, fmt.Errorf("OVS tunnel host: %w", err)
	}
	if missing := ovsMissing(); missing != "" {
		return nil, fmt.Errorf("OVS tunnel host in namespace %s: %s", cfg.Netns, missing)
	}
	h := &OVSTunnelHost{
		cfg:          cfg,
		underlayAddr: underlayAddr,
		remote:       remote,
		ovs:          &ovsInstance{netns: cfg.Netns, dir: cfg.Dir},
		xdpModes:     map[string]string{},
	}
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("OVS tunnel host in namespace %s: %w", cfg.Netns, err), h.Close())
		}
	}()
	underlayMAC, err := h.underlayMAC()
	if err != nil {
		return nil, err
	}
	if err := h.ovs.start(ctx); err != nil {
		return nil, err
	}
	if err := h.ovs.addBridge(ctx, OVSIntegrationBridge); err != nil {
		return nil, err
	}
	// br-phy takes the underlay's MAC address, so that the remote's
	// neighbour entry for the underlay address stays right when the
	// address moves to br-phy.
	if err := h.ovs.addBridge(ctx, OVSUnderlayBridge, "other_config:hwaddr="+underlayMAC.String()); err != nil {
		return nil, err
	}
	for _, p := range []struct{ bridge, iface string }{{OVSIntegrationBridge, cfg.InnerPort}, {OVSUnderlayBridge, cfg.Underlay}} {
		mode, err := h.ovs.addPort(ctx, p.bridge, p.iface, 1)
		if err != nil {
			return nil, err
		}
		h.xdpModes[p.iface] = mode
		// In generic mode OVS's XDP program runs only once the kernel has
		// taken a frame in, which for frames that XDP sends into the
		// veth's peer (the generator's, xswitch's fast path's) needs GRO:
		// see enableGRO.
		if mode == xdpModeGeneric {
			if err := veth.EnableGRO(cfg.Netns, p.iface); err != nil {
				return nil, err
			}
		}
	}
	if _, err := h.ovs.vsctl(ctx, h.tunnelPortArgs()...); err != nil {
		return nil, err
	}
	if err := h.ovs.waitPort(ctx, h.TunnelPort()); err != nil {
		return nil, err
	}
	if err := h.ovs.waitPolled(ctx, cfg.InnerPort, cfg.Underlay); err != nil {
		return nil, err
	}
	if err := h.ovs.xdpModesInUse(ctx, h.xdpModes); err != nil {
		return nil, err
	}
	if err := h.moveAddress(); err != nil {
		return nil, err
	}
	// OVS reads the kernel's routes too, but the guide adds the route so
	// that it is there however soon the first frame comes.
	if err := h.addRoute(ctx); err != nil {
		return nil, err
	}
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, "Open vSwitch in namespace %s: %s tunnel %s to %s on %s, afxdp ports %s in %s XDP mode and %s (underlay of %s) in %s (copying: veth has no zero-copy), all of ovs-vswitchd and its PMD thread on CPU %d\n",
			cfg.Netns, cfg.Type, h.TunnelPort(), cfg.Remote, OVSIntegrationBridge, cfg.InnerPort, h.xdpModes[cfg.InnerPort],
			cfg.Underlay, OVSUnderlayBridge, h.xdpModes[cfg.Underlay], SwitchCPU)
	}
	return h, nil
}

// validate checks cfg and returns its underlay address and the remote's.
func (cfg OVSTunnelHostConfig) validate() (underlay netip.Prefix, remote netip.Addr, err error) {
	for _, f := range []struct{ name, value string }{
		{"Netns", cfg.Netns}, {"Underlay", cfg.Underlay}, {"InnerPort", cfg.InnerPort},
	} {
		if f.value == "" {
			return netip.Prefix{}, netip.Addr{}, fmt.Errorf("no %s given", f.name)
		}
	}
	if cfg.Underlay == cfg.InnerPort {
		return netip.Prefix{}, netip.Addr{}, fmt.Errorf("the Underlay and the InnerPort are both %q", cfg.Underlay)
	}
	underlay, err = netip.ParsePrefix(cfg.UnderlayAddr)
	if err != nil || !underlay.Addr().Is4() {
		return netip.Prefix{}, netip.Addr{}, fmt.Errorf("the UnderlayAddr %q is not an IPv4 address with a prefix length, such as 172.31.0.1/24", cfg.UnderlayAddr)
	}
	if cfg.Type != TunnelTypeVXLAN && cfg.Type != TunnelTypeGeneve {
		return netip.Prefix{}, netip.Addr{}, fmt.Errorf("the tunnel Type %q is neither %s nor %s", cfg.Type, TunnelTypeVXLAN, TunnelTypeGeneve)
	}
	remote, err = netip.ParseAddr(cfg.Remote)
	if err != nil || !remote.Is4() {
		return netip.Prefix{}, netip.Addr{}, fmt.Errorf("the Remote %q is not an IPv4 address", cfg.Remote)
	}
	if remote == underlay.Addr() {
		return netip.Prefix{}, netip.Addr{}, fmt.Errorf("the Remote %s is the host's own UnderlayAddr", remote)
	}
	if cfg.Key != "" && cfg.Key != "flow" {
		if vni, err := strconv.ParseUint(cfg.Key, 10, 64); err != nil || vni > maxVNI {
			return netip.Prefix{}, netip.Addr{}, fmt.Errorf("the Key %q is neither a VNI (0 to %d) nor flow", cfg.Key, maxVNI)
		}
	}
	return underlay, remote, nil
}

// TunnelPort is the name of the tunnel's port on OVSIntegrationBridge:
// the tunnel's type and 0, "vxlan0" or "geneve0".
func (h *OVSTunnelHost) TunnelPort() string { return h.cfg.Type + "0" }

// tunnelPortArgs are ovs-vsctl's arguments that add the tunnel port, as
// OpenFlow port 2.
func (h *OVSTunnelHost) tunnelPortArgs() []string {
	port := h.TunnelPort()
	args := []string{"add-port", OVSIntegrationBridge, port, "--", "set", "interface", port,
		"type=" + h.cfg.Type, "options:remote_ip=" + h.cfg.Remote, "ofport_request=2"}
	if h.cfg.Key != "" {
		args = append(args, "options:key="+h.cfg.Key)
	}
	if h.cfg.DstPort != 0 {
		args = append(args, "options:dst_port="+strconv.Itoa(int(h.cfg.DstPort)))
	}
	return args
}

// underlayMAC returns the underlay interface's MAC address.
func (h *OVSTunnelHost) underlayMAC() (mac net.HardwareAddr, err error) {
	err = netns.Do(h.cfg.Netns, func() error {
		l, err := netlink.LinkByName(h.cfg.Underlay)
		if err != nil {
			return fmt.Errorf("underlay interface %q: %w", h.cfg.Underlay, err)
		}
		mac = l.Attrs().HardwareAddr
		return nil
	})
	return mac, err
}

// moveAddress puts the underlay address on OVSUnderlayBridge's LOCAL
// port, up, taking it off the underlay interface if it is there: the
// host's stack, OVS's tunnels among it, sends to the underlay through
// the bridge, and what arrives for the address reaches the stack
// through it.
func (h *OVSTunnelHost) moveAddress() error {
	return netns.Do(h.cfg.Netns, func() error {
		addr := &netlink.Addr{IPNet: prefixIPNet(h.underlayAddr)}
		underlay, err := netlink.LinkByName(h.cfg.Underlay)
		if err != nil {
			return fmt.Errorf("underlay interface %q: %w", h.cfg.Underlay, err)
		}
		have, err := netlink.AddrList(underlay, netlink.FAMILY_V4)
		if err != nil {
			return fmt.Errorf("addresses of %q: %w", h.cfg.Underlay, err)
		}
		for _, a := range have {
			if a.IPNet.String() == addr.IPNet.String() {
				if err := netlink.AddrDel(underlay, addr); err != nil {
					return fmt.Errorf("take %s off %q: %w", h.underlayAddr, h.cfg.Underlay, err)
				}
				h.addrMoved = true
			}
		}
		local, err := netlink.LinkByName(OVSUnderlayBridge)
		if err != nil {
			return fmt.Errorf("OVS's LOCAL port %q of %s: %w", OVSUnderlayBridge, OVSUnderlayBridge, err)
		}
		if err := netlink.AddrAdd(local, addr); err != nil {
			return fmt.Errorf("add %s to %q: %w", h.underlayAddr, OVSUnderlayBridge, err)
		}
		if err := netlink.LinkSetUp(local); err != nil {
			return fmt.Errorf("set %q up: %w", OVSUnderlayBridge, err)
		}
		return nil
	})
}

// ResolveRemote pings the remote from the host's namespace until it
// answers, for at most underlayResolveTimeout, and tells OVS the remote's
// MAC address as the kernel found it (tnl/neigh/set): after that the
// first frames into the tunnel cross. The remote's underlay address must
// answer, whatever switch is behind it yet.
//
// OVS would learn the address itself from the ARP replies to its host
// that cross OVSUnderlayBridge, but only from replies: a host that saw
// the remote's request first answers pings without asking, and OVS then
// never learns it.
func (h *OVSTunnelHost) ResolveRemote(ctx context.Context) error {
	if err := pingUntilAnswered(ctx, h.cfg.Netns, h.remote); err != nil {
		return err
	}
	var mac net.HardwareAddr
	err := netns.Do(h.cfg.Netns, func() error {
		neighbours, err := netlink.NeighList(0, netlink.FAMILY_V4)
		if err != nil {
			return fmt.Errorf("neighbour table: %w", err)
		}
		for _, n := range neighbours {
			if n.IP.Equal(h.remote.AsSlice()) && len(n.HardwareAddr) > 0 {
				mac = n.HardwareAddr
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("OVS tunnel host in namespace %s: %w", h.cfg.Netns, err)
	}
	if mac == nil {
		return fmt.Errorf("OVS tunnel host in namespace %s: %s answers pings but the kernel's neighbour table has no MAC address for it", h.cfg.Netns, h.remote)
	}
	_, err = h.Appctl(ctx, "tnl/neigh/set", OVSUnderlayBridge, h.remote.String(), mac.String())
	return err
}

// XDPModes are the XDP modes OVS opened the afxdp ports in, by interface:
// native, or generic where veth's driver refused.
func (h *OVSTunnelHost) XDPModes() map[string]string { return h.xdpModes }

// Dir is where OVS keeps its files; ovs-vswitchd.log is among them.
func (h *OVSTunnelHost) Dir() string { return h.ovs.dir }

// Vsctl runs ovs-vsctl with args on the host's database, and returns its
// output without the last newline.
func (h *OVSTunnelHost) Vsctl(ctx context.Context, args ...string) (string, error) {
	return h.ovs.vsctl(ctx, args...)
}

// Appctl runs ovs-appctl with args against the host's ovs-vswitchd, such
// as "dpctl/dump-flows" (tnl_push and tnl_pop show tunnelling at work) or
// "tnl/neigh/show".
func (h *OVSTunnelHost) Appctl(ctx context.Context, args ...string) (string, error) {
	return h.ovs.run(ctx, "ovs-appctl", append([]string{"-t", h.ovs.path("ovs-vswitchd.ctl")}, args...)...)
}

// addRoute adds the route to the underlay's prefix through
// OVSUnderlayBridge (ovs/route/add). OVS takes the route's source address
// from what it knows of the bridge's addresses, which it learns from the
// kernel a moment after moveAddress: until then it refuses the route
// ("Error while inserting route"), and addRoute tries again.
func (h *OVSTunnelHost) addRoute(ctx context.Context) error {
	deadline := time.Now().Add(ovsReadyTimeout)
	for {
		_, err := h.Appctl(ctx, "ovs/route/add", h.underlayAddr.Masked().String(), OVSUnderlayBridge)
		if err == nil || time.Now().After(deadline) || !strings.Contains(err.Error(), "Error while inserting route") {
			return err
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// Ofctl runs ovs-ofctl with args, in which a bridge's name (such as
// OVSIntegrationBridge) stands for the host's bridge of that name.
func (h *OVSTunnelHost) Ofctl(ctx context.Context, args ...string) (string, error) {
	return h.ovs.run(ctx, "ovs-ofctl", args...)
}

// Close removes the bridges, stops OVS, puts the underlay address back on
// the underlay if it was there, and removes Dir if StartOVSTunnelHost
// made it. It returns what it could not undo.
func (h *OVSTunnelHost) Close() error {
	err := h.ovs.stop()
	if h.addrMoved {
		// The address went with br-phy's LOCAL port.
		restore := netns.Do(h.cfg.Netns, func() error {
			l, err := netlink.LinkByName(h.cfg.Underlay)
			if err != nil {
				return err
			}
			return netlink.AddrAdd(l, &netlink.Addr{IPNet: prefixIPNet(h.underlayAddr)})
		})
		if restore != nil {
			err = errors.Join(err, fmt.Errorf("put %s back on %q in namespace %s: %w", h.underlayAddr, h.cfg.Underlay, h.cfg.Netns, restore))
		}
		h.addrMoved = false
	}
	return err
}

// OVSVXLANCase is Open vSwitch's pair: on each host, the userspace
// datapath tunnelling as its guide has it (see StartOVSTunnelHost).
func OVSVXLANCase() Case {
	c := TunnelCase("ovs-vxlan", OVSVXLAN, OVSVXLAN)
	c.Skip = ovsMissing()
	return c
}

// OVSVXLAN is a TunnelSwitch of Open vSwitch's: an OVSTunnelHost with a
// VXLAN tunnel, which knows the remote's MAC address from the start: the
// remote's underlay end answers from the time the hosts are made, and
// keeps its MAC address when OVS's br-phy takes over its address.
func OVSVXLAN(ctx context.Context, host, remote TunnelHost, log io.Writer) (func(), error) {
	h, err := StartOVSTunnelHost(ctx, OVSTunnelHostConfig{
		Netns: host.Netns, Underlay: host.Underlay, UnderlayAddr: host.UnderlayAddr.String(),
		Type: TunnelTypeVXLAN, Remote: remote.UnderlayAddr.Addr().String(), Key: strconv.Itoa(TunnelVNI),
		InnerPort: host.Port, Log: log,
	})
	if err != nil {
		return nil, err
	}
	if err := h.ResolveRemote(ctx); err != nil {
		return nil, errors.Join(err, h.Close())
	}
	return func() {
		if err := h.Close(); err != nil {
			fmt.Fprintln(log, err)
		}
	}, nil
}
