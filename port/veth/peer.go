package veth

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"

	"github.com/xswitch/xswitch/internal/netns"
)

// netnsDir is where `ip netns` (and internal/netns) keep named namespaces.
const netnsDir = "/run/netns"

// PeerTakesRedirects reports whether frames that XDP redirects into the
// veth with index ifindex reach its peer, which they do only if the peer
// polls with NAPI: it has an XDP program of its own, or GRO on. When they
// do not, or it cannot tell (the peer is in a namespace without a name),
// why says so, in words for `xswitch show`.
func PeerTakesRedirects(ifindex int) (ok bool, why string) {
	link, err := netlink.LinkByIndex(ifindex)
	if err != nil {
		return false, fmt.Sprintf("interface %d: %v", ifindex, err)
	}
	attrs := link.Attrs()
	peer := attrs.ParentIndex
	if peer == 0 {
		return false, "its veth peer is unknown"
	}
	check := func(h *netlink.Handle) (bool, string) {
		pl, err := h.LinkByIndex(peer)
		if err != nil {
			return false, fmt.Sprintf("its veth peer: %v", err)
		}
		if x := pl.Attrs().Xdp; x != nil && x.Attached {
			return true, ""
		}
		on, err := groOn(pl.Attrs().Name)
		switch {
		case err != nil:
			return false, fmt.Sprintf("GRO of its veth peer %s: %v", pl.Attrs().Name, err)
		case !on:
			return false, fmt.Sprintf("its veth peer %s has GRO off (ethtool -K %s gro on)", pl.Attrs().Name, pl.Attrs().Name)
		}
		return true, ""
	}
	if attrs.NetNsID < 0 {
		h, err := netlink.NewHandle()
		if err != nil {
			return false, err.Error()
		}
		defer h.Close()
		return check(h)
	}
	name, found := namedNamespace(attrs.NetNsID)
	if !found {
		return false, "its veth peer is in a network namespace without a name in " + netnsDir
	}
	err = netns.Do(name, func() error {
		h, err := netlink.NewHandle()
		if err != nil {
			return err
		}
		defer h.Close()
		ok, why = check(h)
		return nil
	})
	if err != nil {
		return false, err.Error()
	}
	return ok, why
}

// namedNamespace finds the name under netnsDir of the namespace that this
// one knows as nsid.
func namedNamespace(nsid int) (string, bool) {
	entries, err := os.ReadDir(netnsDir)
	if err != nil {
		return "", false
	}
	for _, e := range entries {
		ns, err := vnetns.GetFromPath(filepath.Join(netnsDir, e.Name()))
		if err != nil {
			continue
		}
		id, err := netlink.GetNetNsIdByFd(int(ns))
		ns.Close()
		if err == nil && id == nsid {
			return e.Name(), true
		}
	}
	return "", false
}
