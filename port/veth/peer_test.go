package veth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/internal/testenv"
)

// vethInto makes a veth pair whose end name stays here and whose peer
// eth0, with GRO off as a veth has it, goes into the namespace into (a
// name, or a pid); it returns the index of name.
func vethInto(t *testing.T, name, into string) int {
	t.Helper()
	cleanupLink(t, name)
	run(t, "ip", "link", "add", name, "type", "veth", "peer", "name", "eth0", "netns", into)
	link, err := netlink.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return link.Attrs().Index
}

// EnablePeerGRO turns GRO on at a peer that has it off, once, and then the
// peer takes redirects; an interface that is not a veth it leaves alone.
func TestEnablePeerGRO(t *testing.T) {
	testenv.RequireRoot(t)
	ns := newNamespace(t)
	index := vethInto(t, testenv.UniqueName(t), ns)
	wantWhy := "its veth peer eth0 has GRO off (ip netns exec " + ns + " ethtool -K eth0 gro on; xswitch turns it on only when it attaches the port)"
	if ok, why := PeerTakesRedirects(index); ok || why != wantWhy {
		t.Errorf("PeerTakesRedirects with GRO off at the peer: %v, %q; want false, %q", ok, why, wantWhy)
	}
	if changed, peer, where, err := EnablePeerGRO(index); !changed || peer != "eth0" || where != ns || err != nil {
		t.Errorf("EnablePeerGRO = %v, %q, %q, %v; want it to turn GRO on at eth0 in %s", changed, peer, where, err, ns)
	}
	if features := inNamespace(t, ns, "ethtool", "-k", "eth0"); !strings.Contains(features, "generic-receive-offload: on") {
		t.Errorf("GRO at the peer after EnablePeerGRO:\n%s", features)
	}
	if ok, why := PeerTakesRedirects(index); !ok {
		t.Errorf("PeerTakesRedirects after EnablePeerGRO: %q", why)
	}
	if changed, _, _, err := EnablePeerGRO(index); changed || err != nil {
		t.Errorf("EnablePeerGRO of a peer with GRO on = %v, %v; want nothing done", changed, err)
	}
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	if changed, _, _, err := EnablePeerGRO(lo.Attrs().Index); changed || err != nil {
		t.Errorf("EnablePeerGRO of lo = %v, %v; want it left alone", changed, err)
	}
}

// A peer in a namespace that has no name and no process in it (a bind
// mount elsewhere keeps it) cannot be reached: show says so, and
// EnablePeerGRO fails saying so.
func TestPeerOutOfReachIsSaid(t *testing.T) {
	testenv.RequireRoot(t)
	pid, end := testenv.UnnamedNetns(t)
	pin := filepath.Join(t.TempDir(), "ns")
	if err := os.WriteFile(pin, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("/proc/"+pid+"/ns/net", pin, "none", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(pin, unix.MNT_DETACH) }) // the namespace goes, and the veth with it
	index := vethInto(t, testenv.UniqueName(t), pid)
	end()

	const want = "its veth peer cannot be reached: the network namespace with id "
	if ok, why := PeerTakesRedirects(index); ok || !strings.HasPrefix(why, want) || !strings.HasSuffix(why, "has no name in /run/netns and no process in it") {
		t.Errorf("PeerTakesRedirects of a peer out of reach: %v, %q; want false, saying why", ok, why)
	}
	if changed, _, _, err := EnablePeerGRO(index); changed || err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("EnablePeerGRO of a peer out of reach = %v, %v; want it to fail, saying why", changed, err)
	}
}
