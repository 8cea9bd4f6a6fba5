// Package tap makes the persistent tap devices through which a virtual
// machine joins a bridge: xswitch creates the device and attaches it as a
// port, and the VM monitor (QEMU's -netdev tap,ifname=NAME) opens it by
// name later, as often as the VM restarts, without needing CAP_NET_ADMIN
// when the device belongs to its user.
//
// A tap is attached like any other port, and --mode auto takes driver-mode
// XDP on it: tun runs the program on the frames the VM writes, TCP works,
// and over a user-space relay standing in for the VM it moved as many
// bits per second as generic mode (about 2-3.5 Gbit/s either way; the
// relay's two system calls per frame are the limit), so nothing argues
// for forcing generic.
package tap

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/internal/ifname"
)

// Config describes a tap device.
type Config struct {
	Name string
	// Owner is the user ID allowed to open the device without
	// CAP_NET_ADMIN, such as the one QEMU runs as. 0 sets no owner: root
	// needs none.
	Owner int
	// MTU is the device's MTU; 0 leaves the kernel's default, 1500.
	MTU int
}

// The kernel's bounds for an Ethernet MTU (ETH_MIN_MTU, ETH_MAX_MTU).
const (
	minMTU = 68
	maxMTU = 65535
)

// Validate checks the configuration without changing anything.
func (c Config) Validate() error {
	if err := ifname.Validate("interface", c.Name); err != nil {
		return err
	}
	if c.Owner < 0 || c.Owner > 0xfffffffe {
		return fmt.Errorf("owner %d is not a user ID", c.Owner)
	}
	if c.MTU != 0 && (c.MTU < minMTU || c.MTU > maxMTU) {
		return fmt.Errorf("MTU %d is outside %d..%d", c.MTU, minMTU, maxMTU)
	}
	return nil
}

// Create makes a persistent tap device, up, with its MTU and without IPv6
// (so the host stack sends nothing of its own into the switch through
// it). It has no
// packet-information header and no virtio-net header: the switch sees
// plain Ethernet frames, and a VM monitor opening it must not ask for
// vnet_hdr (QEMU's default for tap without vhost is fine). If any step
// fails, nothing is left behind.
func Create(cfg Config) (err error) {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if _, err := ifname.Link(netlink.LinkByName, cfg.Name); err == nil {
		return fmt.Errorf("interface %q already exists", cfg.Name)
	}
	if err := createPersistent(cfg); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			if delErr := Delete(cfg.Name); delErr != nil {
				err = errors.Join(err, fmt.Errorf("remove half-created tap: %w", delErr))
			}
		}
	}()
	link, err := ifname.Link(netlink.LinkByName, cfg.Name)
	if err != nil {
		return err
	}
	// Before the link comes up, so it never gets a link-local address.
	if err := ifname.DisableIPv6(cfg.Name); err != nil {
		return fmt.Errorf("tap %q: disable IPv6: %w", cfg.Name, err)
	}
	if cfg.MTU != 0 {
		if err := netlink.LinkSetMTU(link, cfg.MTU); err != nil {
			return fmt.Errorf("tap %q: set MTU %d: %w", cfg.Name, cfg.MTU, err)
		}
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return fmt.Errorf("tap %q: bring up: %w", cfg.Name, err)
	}
	return nil
}

// createPersistent creates the device through /dev/net/tun and marks it
// persistent, so that it outlives the descriptor closed here.
func createPersistent(cfg Config) error {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("create tap %q: open /dev/net/tun: %w", cfg.Name, err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(cfg.Name)
	if err != nil {
		return fmt.Errorf("create tap %q: %w", cfg.Name, err)
	}
	ifr.SetUint16(unix.IFF_TAP | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		if errors.Is(err, unix.EBUSY) || errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("interface %q already exists", cfg.Name)
		}
		return fmt.Errorf("create tap %q: TUNSETIFF: %w", cfg.Name, err)
	}
	// From here the device exists, and goes away with fd unless persistent.
	if cfg.Owner != 0 {
		if err := unix.IoctlSetInt(fd, unix.TUNSETOWNER, cfg.Owner); err != nil {
			return fmt.Errorf("tap %q: set owner %d: %w", cfg.Name, cfg.Owner, err)
		}
	}
	if err := unix.IoctlSetInt(fd, unix.TUNSETPERSIST, 1); err != nil {
		return fmt.Errorf("tap %q: make persistent: %w", cfg.Name, err)
	}
	return nil
}

// Delete removes the tap device name, also while a VM monitor holds it
// open (its descriptor then fails). It refuses to delete an interface that
// is not a tap. If there is no such interface, the error matches
// errors.Is(err, fs.ErrNotExist).
func Delete(name string) error {
	link, err := ifname.Link(netlink.LinkByName, name)
	if err != nil {
		return err
	}
	if !isTap(link) {
		return fmt.Errorf("interface %q is a %s, not a tap", name, link.Type())
	}
	if err := netlink.LinkDel(link); err != nil {
		return fmt.Errorf("delete tap %q: %w", name, err)
	}
	return nil
}

// Exists reports whether a tap device named name exists in the caller's
// namespace.
func Exists(name string) bool {
	link, err := ifname.Link(netlink.LinkByName, name)
	return err == nil && isTap(link)
}

func isTap(link netlink.Link) bool {
	t, ok := link.(*netlink.Tuntap)
	return ok && t.Mode == netlink.TUNTAP_MODE_TAP
}
