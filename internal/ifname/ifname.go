// Package ifname holds what everything that creates or names a network
// interface shares: the kernel's rules for the name, and keeping the host
// stack quiet on an interface that belongs to the switch.
package ifname

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// MaxLen is the longest interface name the kernel accepts (IFNAMSIZ-1).
const MaxLen = unix.IFNAMSIZ - 1

// Validate applies the kernel's rules for interface names (dev_valid_name)
// to name, so that a bad one fails with a clear message rather than as
// EINVAL from netlink or an ioctl. what says what the name is for in the
// message: "interface", "bridge", "port".
func Validate(what, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty %s name", what)
	case len(name) > MaxLen:
		return fmt.Errorf("%s name %q is longer than %d characters", what, name, MaxLen)
	case name == "." || name == ".." || strings.ContainsAny(name, "/: \t\n\v\f\r\x00"):
		return fmt.Errorf("invalid %s name %q: it may not be \".\" or \"..\" or contain '/', ':', NUL or white space", what, name)
	}
	return nil
}

// DisableIPv6 turns IPv6 off on the interface name in the caller's
// namespace, so that the host stack sends nothing of its own (router
// solicitations, duplicate address detection) into the switch through it.
func DisableIPv6(name string) error {
	err := os.WriteFile("/proc/sys/net/ipv6/conf/"+name+"/disable_ipv6", []byte("1"), 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil // a kernel without IPv6: nothing to turn off
	}
	return err
}
