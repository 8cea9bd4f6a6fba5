package veth

import (
	"errors"
	"fmt"
	"strings"

	"github.com/vishvananda/netlink"

	"github.com/xswitch/xswitch/internal/netns"
)

// A veth delivers frames that XDP redirects into it (the fast path's) to
// its peer only if the peer polls with NAPI: when it has an XDP program of
// its own, or GRO on. A veth pair that xswitch creates has GRO on at its
// peer (Create); one made by hand or by a container runtime has it off,
// and EnablePeerGRO turns it on. Of the two ways, GRO costs the peer's
// traffic least: an XDP program, even one that passes every frame, makes
// the kernel copy each frame that the stack sends through the pair into a
// page of its own before the program sees it, takes the pair's GSO away
// unless the program handles frames in several buffers, caps its MTU at
// what fits in a page, and takes the peer's one XDP slot. GRO merges TCP
// segments that arrive at the peer into fewer, larger packets for its
// stack, which every NIC's driver does by default.

// errNotVeth says that an interface has no veth peer to look at.
var errNotVeth = errors.New("not a veth")

// PeerTakesRedirects reports whether frames that XDP redirects into the
// veth with index ifindex reach its peer. When they do not, or it cannot
// tell (the peer is in a namespace it cannot find), why says so, in words
// for `xswitch show`.
func PeerTakesRedirects(ifindex int) (ok bool, why string) {
	var name string
	where, err := onPeer(ifindex, func(peer netlink.Link) (err error) {
		name = peer.Attrs().Name
		ok, err = pollsWithNAPI(peer)
		return err
	})
	switch {
	case err != nil:
		return false, err.Error()
	case !ok:
		return false, fmt.Sprintf("its veth peer %s has GRO off (%s; xswitch turns it on only when it attaches the port)",
			name, commandIn(where, "ethtool -K "+name+" gro on"))
	}
	return true, ""
}

// commandIn is the command line that runs cmd in the network namespace
// where (see EnablePeerGRO).
func commandIn(where, cmd string) string {
	pid, isPID := strings.CutPrefix(where, "pid ")
	switch {
	case where == "":
		return cmd
	case isPID:
		return "nsenter -t " + pid + " -n " + cmd
	}
	return "ip netns exec " + where + " " + cmd
}

// EnablePeerGRO turns GRO on at the peer of the veth with index ifindex,
// unless the peer polls with NAPI already, so that frames XDP redirects
// into the veth reach it. It says whether it changed the peer, its name
// and where it is: the name of its network namespace, "pid N" for one
// without a name, "" for the caller's. An interface that is not a veth is
// left alone, without an error.
func EnablePeerGRO(ifindex int) (changed bool, peer, where string, err error) {
	where, err = onPeer(ifindex, func(p netlink.Link) error {
		peer = p.Attrs().Name
		polls, err := pollsWithNAPI(p)
		if err != nil || polls {
			return err
		}
		if _, err := ethtool(peer, ethtoolSetGRO, 1); err != nil {
			return fmt.Errorf("turn GRO on at veth peer %s: %w", peer, err)
		}
		changed = true
		return nil
	})
	if errors.Is(err, errNotVeth) {
		return false, "", "", nil
	}
	return changed, peer, where, err
}

// onPeer runs fn with the link of the peer of the veth with index
// ifindex, on a thread in the peer's network namespace, so that ethtool
// requests reach it. It returns where that namespace is (see
// EnablePeerGRO).
func onPeer(ifindex int, fn func(peer netlink.Link) error) (where string, err error) {
	link, err := netlink.LinkByIndex(ifindex)
	if err != nil {
		return "", fmt.Errorf("interface %d: %w", ifindex, err)
	}
	if link.Type() != "veth" {
		return "", errNotVeth
	}
	attrs := link.Attrs()
	peer := attrs.ParentIndex
	if peer == 0 {
		return "", errors.New("its veth peer is unknown")
	}
	inPeerNamespace := func() error {
		h, err := netlink.NewHandle()
		if err != nil {
			return err
		}
		defer h.Close()
		pl, err := h.LinkByIndex(peer)
		if err != nil {
			return fmt.Errorf("its veth peer: %w", err)
		}
		return fn(pl)
	}
	if attrs.NetNsID < 0 { // the peer is in this namespace
		return "", inPeerNamespace()
	}
	where, err = netns.DoByID(attrs.NetNsID, inPeerNamespace)
	if err != nil && where == "" {
		return "", fmt.Errorf("its veth peer cannot be reached: %w", err)
	}
	return where, err
}

// pollsWithNAPI reports whether the veth end peer polls with NAPI. It runs
// in peer's namespace.
func pollsWithNAPI(peer netlink.Link) (bool, error) {
	if x := peer.Attrs().Xdp; x != nil && x.Attached {
		return true, nil
	}
	on, err := groOn(peer.Attrs().Name)
	if err != nil {
		return false, fmt.Errorf("GRO of its veth peer %s: %w", peer.Attrs().Name, err)
	}
	return on, nil
}
