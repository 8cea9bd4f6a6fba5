// Package ifname holds what everything that creates or names a network
// interface shares: the kernel's rules for the name, and keeping the host
// stack quiet on an interface that belongs to the switch.
package ifname

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// MaxLen is the longest interface name the kernel accepts (IFNAMSIZ-1).
const MaxLen = unix.IFNAMSIZ - 1

// Validate applies the kernel's rules for interface names (dev_valid_name)
// to name, and xswitch's own, so that a bad one fails with a clear message
// rather than as EINVAL from netlink or an ioctl, or worse. what says what
// the name is for in the message: "interface", "bridge", "port".
func Validate(what, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty %s name", what)
	case len(name) > MaxLen:
		// The kernel counts bytes: "é" takes two.
		return fmt.Errorf("%s name %q is %d bytes long, longer than %d", what, name, len(name), MaxLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("%s name %q is not valid UTF-8", what, name)
	case name == "." || name == ".." || strings.ContainsAny(name, "/: \t\n\v\f\r\x00"):
		return fmt.Errorf("invalid %s name %q: it may not be \".\" or \"..\" or contain '/', ':', NUL or white space", what, name)
	case strings.Contains(name, "%"):
		// The kernel takes "x%d" as a template and names the device x0,
		// x1...: the interface would not be called what was asked for.
		return fmt.Errorf("invalid %s name %q: it may not contain '%%', which the kernel takes as a name template", what, name)
	case strings.ContainsAny(name, "*?[]\\"):
		// Interfaces are found in sysfs by path, where these are patterns.
		return fmt.Errorf("invalid %s name %q: it may not contain the pattern characters '*', '?', '[', ']' or '\\'", what, name)
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

// NotExistError names a missing interface. It matches fs.ErrNotExist, so
// callers can tell "already gone" from a failure with errors.Is.
type NotExistError struct{ Name string }

func (e NotExistError) Error() string { return fmt.Sprintf("interface %q does not exist", e.Name) }

func (e NotExistError) Is(target error) bool { return target == fs.ErrNotExist }

// Link looks a link up by its real name with lookup (netlink.LinkByName,
// or a Handle's in another namespace). netlink's lookup also matches
// alternative names, which would let "x" find, and a delete remove, an
// interface whose real name is something else.
func Link(lookup func(string) (netlink.Link, error), name string) (netlink.Link, error) {
	link, err := lookup(name)
	var notFound netlink.LinkNotFoundError
	if errors.As(err, &notFound) || errors.Is(err, unix.ENODEV) || (err == nil && link.Attrs().Name != name) {
		return nil, NotExistError{name}
	}
	if err != nil {
		return nil, fmt.Errorf("look up interface %q: %w", name, err)
	}
	return link, nil
}
