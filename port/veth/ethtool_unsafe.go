package veth

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/internal/ifname"
	"github.com/xswitch/xswitch/internal/netns"
)

// ETHTOOL_STXCSUM, ETHTOOL_GGRO and ETHTOOL_SGRO from linux/ethtool.h;
// x/sys/unix does not define them.
const (
	ethtoolSetTxCsum = 0x17
	ethtoolGetGRO    = 0x2b
	ethtoolSetGRO    = 0x2c
)

// ethtoolValue is struct ethtool_value.
type ethtoolValue struct {
	cmd  uint32
	data uint32
}

// ifreqData is struct ifreq with its union used as ifr_data. The padding
// makes it at least as large as the kernel's struct ifreq (40 bytes on
// 64-bit), which the kernel copies whole. data is a real pointer so that
// the garbage collector keeps the request alive.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// DisableTxChecksum turns TX checksum offload off on interface name in
// network namespace ns ("" for the caller's), like `ethtool -K IF tx off`.
// The kernel also turns off what depends on it (TSO, GSO with checksums).
func DisableTxChecksum(ns, name string) error {
	if err := ifname.Validate("interface", name); err != nil {
		return err
	}
	if ns == "" {
		return txChecksumOff(name)
	}
	// SIOCETHTOOL finds the interface in the namespace of the socket it is given.
	if err := netns.Do(ns, func() error { return txChecksumOff(name) }); err != nil {
		return fmt.Errorf("in network namespace %q: %w", ns, err)
	}
	return nil
}

func txChecksumOff(name string) error {
	if _, err := ethtool(name, ethtoolSetTxCsum, 0); err != nil {
		return fmt.Errorf("turn TX checksum offload off: %w", err)
	}
	return nil
}

// EnableGRO turns GRO on for interface name in network namespace ns (""
// for the caller's), like `ethtool -K IF gro on`. A veth end with GRO on
// polls with NAPI, which is what lets frames that XDP redirects into its
// peer (the fast path's) arrive.
func EnableGRO(ns, name string) error {
	set := func() error {
		if _, err := ethtool(name, ethtoolSetGRO, 1); err != nil {
			return fmt.Errorf("turn GRO on: %w", err)
		}
		return nil
	}
	if ns == "" {
		return set()
	}
	if err := netns.Do(ns, set); err != nil {
		return fmt.Errorf("in network namespace %q: %w", ns, err)
	}
	return nil
}

// groOn reports whether interface name, in the caller's namespace, has GRO on.
func groOn(name string) (bool, error) {
	v, err := ethtool(name, ethtoolGetGRO, 0)
	return v != 0, err
}

// ethtool runs one ethtool_value command on interface name, in the
// namespace of the calling thread, and returns the value it gives back.
func ethtool(name string, cmd, data uint32) (uint32, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("socket for ethtool: %w", err)
	}
	defer unix.Close(fd)

	value := ethtoolValue{cmd: cmd, data: data}
	req := ifreqData{data: unsafe.Pointer(&value)}
	copy(req.name[:], name)
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&req)))
	switch {
	case errno == 0:
		return value.data, nil
	case errors.Is(errno, unix.ENODEV):
		return 0, ifname.NotExistError{Name: name}
	case errors.Is(errno, unix.EOPNOTSUPP):
		return 0, fmt.Errorf("interface %q does not support it: %w", name, errno)
	default:
		return 0, fmt.Errorf("interface %q: %w", name, errno)
	}
}
