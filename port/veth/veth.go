// Package veth plumbs veth pairs that connect a network namespace to the
// switch: one end (the switch end) stays in the caller's namespace, where
// an AF_XDP port opens it; the other (the peer) lives in a named namespace
// and behaves like that namespace's NIC.
//
// A pair is created whole or not at all: if any step fails, what was made
// is removed before Create returns.
package veth

import (
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/internal/ifname"
	"github.com/xswitch/xswitch/internal/netns"
)

const (
	// DefaultPeer is the peer's name when Config.Peer is empty.
	DefaultPeer = "eth0"
	// DefaultMTU is the MTU of both ends when Config.MTU is 0.
	DefaultMTU = 1500

	// The kernel's bounds for an Ethernet MTU (ETH_MIN_MTU, ETH_MAX_MTU).
	minMTU = 68
	maxMTU = 65535
)

// Config describes a veth pair.
type Config struct {
	Name      string // the switch end, in the caller's namespace
	Namespace string // an existing named network namespace that receives the peer
	// PeerHere keeps the peer in the caller's namespace (Namespace must be
	// empty): the host's own interface on the bridge, like an OVS internal
	// port.
	PeerHere bool
	// PeerDown leaves the peer administratively down, for its owner to
	// bring up, as OVS leaves a new internal port.
	PeerDown bool
	Peer     string // the peer's name inside Namespace; DefaultPeer if empty
	Address  string // optional CIDR for the peer: "10.0.0.1/24" or "fd00::1/64"
	MTU      int    // of both ends; DefaultMTU if 0
}

func (c Config) peer() string {
	if c.Peer == "" {
		return DefaultPeer
	}
	return c.Peer
}

func (c Config) mtu() int {
	if c.MTU == 0 {
		return DefaultMTU
	}
	return c.MTU
}

// Validate checks the configuration without changing anything, including
// that the namespace exists.
func (c Config) Validate() error {
	if err := ifname.Validate("interface", c.Name); err != nil {
		return err
	}
	if err := ifname.Validate("interface", c.peer()); err != nil {
		return fmt.Errorf("peer: %w", err)
	}
	switch {
	case c.PeerHere && c.Namespace != "":
		return fmt.Errorf("the peer cannot both stay here and go into network namespace %q", c.Namespace)
	case c.PeerHere && c.peer() == c.Name:
		return fmt.Errorf("the switch end and the peer are both named %q", c.Name)
	case !c.PeerHere && c.Namespace == "":
		return errors.New("no network namespace given for the peer")
	}
	if _, err := c.address(); err != nil {
		return err
	}
	if c.MTU != 0 && (c.MTU < minMTU || c.MTU > maxMTU) {
		return fmt.Errorf("MTU %d is outside %d..%d", c.MTU, minMTU, maxMTU)
	}
	if !c.PeerHere && !netns.Exists(c.Namespace) {
		return fmt.Errorf("network namespace %q does not exist", c.Namespace)
	}
	return nil
}

// address parses Address; nil means none was given.
func (c Config) address() (*netlink.Addr, error) {
	if c.Address == "" {
		return nil, nil
	}
	ip, ipNet, err := net.ParseCIDR(c.Address)
	if err != nil {
		return nil, fmt.Errorf("invalid address %q: want an address with a prefix length, like 10.0.0.1/24 or fd00::1/64", c.Address)
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: ip, Mask: ipNet.Mask}}
	if ip.To4() == nil {
		// A configured address is meant to be usable at once; duplicate
		// address detection would hold it tentative for a second or more.
		addr.Flags = unix.IFA_F_NODAD
	}
	return addr, nil
}

// Create makes the veth pair described by cfg: the peer inside the
// namespace, renamed, addressed, up, with TX checksum offload off (a frame
// forwarded by AF_XDP carries whatever checksum the sender left, and with
// offload on that is a partial one), with GRO on (so that the fast path
// can redirect frames to it: see EnableGRO), and the namespace's lo up; the switch
// end up and without IPv6, so the host stack sends nothing of its own
// (router solicitations, DAD) into the switch. If any step fails, nothing
// is left behind.
func Create(cfg Config) (err error) {
	if err := cfg.Validate(); err != nil {
		return err
	}
	addr, err := cfg.address()
	if err != nil {
		return err
	}
	peer := cfg.peer()
	if _, err := ifname.Link(netlink.LinkByName, cfg.Name); err == nil {
		return fmt.Errorf("interface %q already exists", cfg.Name)
	}

	pair := &netlink.Veth{
		LinkAttrs: netlink.LinkAttrs{Name: cfg.Name, MTU: cfg.mtu()},
		PeerName:  peer,
	}
	var inNS *netlink.Handle
	where := "" // for messages: where the peer lives
	if cfg.PeerHere {
		if inNS, err = netlink.NewHandle(); err != nil {
			return fmt.Errorf("netlink: %w", err)
		}
	} else {
		ns, err := vnetns.GetFromName(cfg.Namespace)
		if err != nil {
			return fmt.Errorf("open network namespace %q: %w", cfg.Namespace, err)
		}
		defer ns.Close()
		if inNS, err = netlink.NewHandleAt(ns); err != nil {
			return fmt.Errorf("netlink in network namespace %q: %w", cfg.Namespace, err)
		}
		where = fmt.Sprintf(" in network namespace %q", cfg.Namespace)
		// The kernel creates the peer directly inside the namespace, under
		// its final name: it never exists in our namespace, where its name
		// could clash with one of ours.
		pair.PeerNamespace = netlink.NsFd(ns)
	}
	defer inNS.Close()
	if _, err := ifname.Link(inNS.LinkByName, peer); err == nil {
		return fmt.Errorf("interface %q already exists%s", peer, where)
	}

	if err := netlink.LinkAdd(pair); err != nil {
		if errors.Is(err, unix.EEXIST) {
			// Lost a race with whoever created the name after the check.
			return fmt.Errorf("interface %q (or %q%s) already exists", cfg.Name, peer, where)
		}
		return fmt.Errorf("create veth %q: %w", cfg.Name, err)
	}
	defer func() {
		if err != nil {
			if delErr := Delete(cfg.Name); delErr != nil {
				err = errors.Join(err, fmt.Errorf("remove half-created veth: %w", delErr))
			}
		}
	}()

	// The caller's namespace has its loopback up already, and it is not
	// ours to touch.
	if err := setUpPeer(inNS, peer, addr, !cfg.PeerDown, !cfg.PeerHere); err != nil {
		return fmt.Errorf("set up %q%s: %w", peer, where, err)
	}
	if err := DisableTxChecksum(cfg.Namespace, peer); err != nil {
		return err
	}
	if err := EnableGRO(cfg.Namespace, peer); err != nil {
		return err
	}
	if err := setUpSwitchEnd(cfg.Name); err != nil {
		return fmt.Errorf("set up %q: %w", cfg.Name, err)
	}
	return nil
}

func setUpPeer(h *netlink.Handle, peer string, addr *netlink.Addr, up, loUp bool) error {
	link, err := ifname.Link(h.LinkByName, peer)
	if err != nil {
		return err
	}
	if addr != nil {
		if err := h.AddrAdd(link, addr); err != nil {
			return fmt.Errorf("add address %s: %w", addr.IPNet, err)
		}
	}
	if !up {
		return nil
	}
	if err := h.LinkSetUp(link); err != nil {
		return fmt.Errorf("bring up: %w", err)
	}
	if !loUp {
		return nil
	}
	lo, err := ifname.Link(h.LinkByName, "lo")
	if err != nil {
		return err
	}
	if err := h.LinkSetUp(lo); err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	return nil
}

func setUpSwitchEnd(name string) error {
	link, err := ifname.Link(netlink.LinkByName, name)
	if err != nil {
		return err
	}
	// Done before the link comes up, so it never gets a link-local address.
	if err := ifname.DisableIPv6(name); err != nil {
		return fmt.Errorf("disable IPv6: %w", err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return fmt.Errorf("bring up: %w", err)
	}
	return nil
}

// Delete removes the veth pair whose switch end is name; the peer goes with
// it. It refuses to delete an interface that is not a veth. If there is no
// such interface, the error matches errors.Is(err, fs.ErrNotExist).
func Delete(name string) error {
	link, err := ifname.Link(netlink.LinkByName, name)
	if err != nil {
		return err
	}
	if link.Type() != "veth" {
		return fmt.Errorf("interface %q is a %s, not a veth", name, link.Type())
	}
	if err := netlink.LinkDel(link); err != nil {
		return fmt.Errorf("delete veth %q: %w", name, err)
	}
	return nil
}

// Exists reports whether a veth named name exists in the caller's namespace.
func Exists(name string) bool {
	link, err := ifname.Link(netlink.LinkByName, name)
	return err == nil && link.Type() == "veth"
}
