package veth

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/internal/ifname"
	"github.com/xswitch/xswitch/internal/netns"
)

// ethtoolSetTxCsum is ETHTOOL_STXCSUM from linux/ethtool.h; x/sys/unix
// does not define it.
const ethtoolSetTxCsum = 0x17

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
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket for ethtool: %w", err)
	}
	defer unix.Close(fd)

	value := ethtoolValue{cmd: ethtoolSetTxCsum, data: 0}
	req := ifreqData{data: unsafe.Pointer(&value)}
	copy(req.name[:], name)
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&req)))
	switch {
	case errno == 0:
		return nil
	case errors.Is(errno, unix.ENODEV):
		return ifname.NotExistError{Name: name}
	case errors.Is(errno, unix.EOPNOTSUPP):
		return fmt.Errorf("interface %q cannot turn TX checksum offload off: %w", name, errno)
	default:
		return fmt.Errorf("turn TX checksum offload off on %q: %w", name, errno)
	}
}
