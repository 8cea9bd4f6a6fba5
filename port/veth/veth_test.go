package veth

import (
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"

	"github.com/xswitch/xswitch/internal/netns"
	"github.com/xswitch/xswitch/internal/testenv"
)

func newNamespace(t *testing.T) string {
	t.Helper()
	name := testenv.UniqueName(t)
	t.Cleanup(func() {
		if err := netns.Delete(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("cleanup: %v", err)
		}
	})
	if err := netns.Create(name); err != nil {
		t.Fatal(err)
	}
	return name
}

// cleanupLink removes the link named name in our namespace when the test
// ends, if it is there; registered before the step that may create it.
func cleanupLink(t *testing.T, name string) {
	t.Helper()
	t.Cleanup(func() {
		if l, err := netlink.LinkByName(name); err == nil && l.Attrs().Name == name {
			if err := netlink.LinkDel(l); err != nil {
				t.Errorf("cleanup %q: %v", name, err)
			}
		}
	})
}

func run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func inNamespace(t *testing.T, ns string, args ...string) string {
	t.Helper()
	return run(t, append([]string{"ip", "netns", "exec", ns}, args...)...)
}

func TestValidateWithoutNamespace(t *testing.T) {
	missing := "xtmissing" + "00"
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{Name: "abcdefghijklmnopq", Namespace: missing}, `interface name "abcdefghijklmnopq" is 17 bytes long, longer than 15`},
		{Config{Name: "", Namespace: missing}, "empty interface name"},
		{Config{Name: "a/b", Namespace: missing}, `invalid interface name "a/b"`},
		{Config{Name: "a b", Namespace: missing}, `invalid interface name "a b"`},
		{Config{Name: "..", Namespace: missing}, `invalid interface name ".."`},
		{Config{Name: "ok", Peer: "peer:1", Namespace: missing}, `peer: invalid interface name "peer:1"`},
		{Config{Name: "ok", Peer: "0123456789abcdef", Namespace: missing}, `peer: interface name "0123456789abcdef" is 16 bytes long, longer than 15`},
		{Config{Name: "ok"}, "no network namespace given for the peer"},
		{Config{Name: "ok", Namespace: missing, Address: "10.0.0.300/24"}, `invalid address "10.0.0.300/24"`},
		{Config{Name: "ok", Namespace: missing, Address: "10.0.0.1"}, `invalid address "10.0.0.1"`},
		{Config{Name: "ok", Namespace: missing, Address: "fd00::1/129"}, `invalid address "fd00::1/129"`},
		{Config{Name: "ok", Namespace: missing, MTU: 67}, "MTU 67 is outside 68..65535"},
		{Config{Name: "ok", Namespace: missing, MTU: -1}, "MTU -1 is outside 68..65535"},
		{Config{Name: "ok", Namespace: missing, MTU: 65536}, "MTU 65536 is outside 68..65535"},
		{Config{Name: "0123456789abcde", Namespace: missing, Address: "fd00::1/64", MTU: 9000}, `network namespace "` + missing + `" does not exist`},
		{Config{Name: "ok", PeerHere: true, Namespace: missing}, `the peer cannot both stay here and go into network namespace "` + missing + `"`},
		{Config{Name: "eth0", PeerHere: true}, `the switch end and the peer are both named "eth0"`},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%+v: got error %v, want one starting %q", tt.cfg, err, tt.want)
		}
	}
}

func TestAddressParsing(t *testing.T) {
	a, err := Config{Address: "10.1.2.3/24"}.address()
	if err != nil || a.IPNet.String() != "10.1.2.3/24" || a.Flags != 0 {
		t.Errorf("IPv4: got %v, %v", a, err)
	}
	a, err = Config{Address: "fd00::1/64"}.address()
	if err != nil || a.IPNet.String() != "fd00::1/64" || a.Flags == 0 {
		t.Errorf("IPv6: got %v (flags %#x), %v", a, a.Flags, err)
	}
	if a, err := (Config{}).address(); a != nil || err != nil {
		t.Errorf("no address: got %v, %v", a, err)
	}
}

func TestCreate(t *testing.T) {
	testenv.RequireRoot(t)
	ns := newNamespace(t)
	// lo down, to see that Create brings it up even in a namespace made by
	// someone else.
	inNamespace(t, ns, "ip", "link", "set", "lo", "down")
	name := testenv.UniqueName(t)
	cleanupLink(t, name)
	cfg := Config{Name: name, Namespace: ns, Address: "10.88.0.1/24", MTU: 1400}
	if err := Create(cfg); err != nil {
		t.Fatal(err)
	}
	if !Exists(name) {
		t.Fatalf("Exists(%q) = false after Create", name)
	}

	peer := inNamespace(t, ns, "ip", "-o", "link", "show", "dev", "eth0")
	for _, want := range []string{"eth0@", "mtu 1400", "state UP", "LOWER_UP"} {
		if !strings.Contains(peer, want) {
			t.Errorf("peer in %q lacks %q: %s", ns, want, peer)
		}
	}
	if addrs := inNamespace(t, ns, "ip", "-o", "-4", "addr", "show", "dev", "eth0"); !strings.Contains(addrs, "inet 10.88.0.1/24") {
		t.Errorf("peer lacks its address: %s", addrs)
	}
	if lo := inNamespace(t, ns, "ip", "-o", "link", "show", "dev", "lo"); !strings.Contains(lo, "UP") {
		t.Errorf("lo not up in %q: %s", ns, lo)
	}
	features := inNamespace(t, ns, "ethtool", "-k", "eth0")
	if !strings.Contains(features, "tx-checksumming: off") {
		t.Errorf("TX checksum offload still on:\n%s", features)
	}

	link, err := netlink.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	if link.Attrs().Flags&net.FlagUp == 0 {
		t.Error("switch end is not up")
	}
	if link.Attrs().MTU != 1400 {
		t.Errorf("switch end MTU %d, want 1400", link.Attrs().MTU)
	}
	disabled, err := os.ReadFile("/proc/sys/net/ipv6/conf/" + name + "/disable_ipv6")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(disabled)) != "1" {
		t.Errorf("IPv6 not disabled on the switch end: %q", disabled)
	}
	if addrs, err := netlink.AddrList(link, netlink.FAMILY_ALL); err != nil || len(addrs) != 0 {
		t.Errorf("switch end has addresses %v (%v), want none", addrs, err)
	}

	err = Create(cfg)
	if want := `interface "` + name + `" already exists`; err == nil || err.Error() != want {
		t.Errorf("second Create: got %v, want %q", err, want)
	}
	if !Exists(name) {
		t.Error("a failed second Create removed the first pair")
	}

	if err := Delete(name); err != nil {
		t.Fatal(err)
	}
	if Exists(name) {
		t.Error("switch end still exists after Delete")
	}
	if links := inNamespace(t, ns, "ip", "-o", "link", "show"); strings.Contains(links, "eth0") {
		t.Errorf("peer still in %q after Delete: %s", ns, links)
	}
}

// TestCreateInternalPair makes an internal port's pair: both ends here, the
// peer up under its own name. No address, to leave the host's routes alone.
func TestCreateInternalPair(t *testing.T) {
	testenv.RequireRoot(t)
	name, peer := testenv.UniqueName(t), testenv.UniqueName(t)
	cleanupLink(t, name)
	if err := Create(Config{Name: name, PeerHere: true, Peer: peer}); err != nil {
		t.Fatal(err)
	}
	out := run(t, "ip", "-o", "link", "show", "dev", peer)
	for _, want := range []string{peer + "@" + name, "state UP"} {
		if !strings.Contains(out, want) {
			t.Errorf("peer lacks %q: %s", want, out)
		}
	}
	if err := Create(Config{Name: testenv.UniqueName(t), PeerHere: true, Peer: peer}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second pair with the same peer: got %v, want \"already exists\"", err)
	}
	if err := Delete(name); err != nil {
		t.Fatal(err)
	}
	assertNoLink(t, peer)
}

func TestCreateIPv6AddressUsableAtOnce(t *testing.T) {
	testenv.RequireRoot(t)
	ns := newNamespace(t)
	name := testenv.UniqueName(t)
	cleanupLink(t, name)
	if err := Create(Config{Name: name, Namespace: ns, Peer: "xp0", Address: "fd00:88::1/64"}); err != nil {
		t.Fatal(err)
	}
	addrs := inNamespace(t, ns, "ip", "-o", "-6", "addr", "show", "dev", "xp0")
	if !strings.Contains(addrs, "inet6 fd00:88::1/64") {
		t.Errorf("peer lacks its address: %s", addrs)
	}
	if strings.Contains(addrs, "fd00:88::1/64 scope global tentative") {
		t.Errorf("address still tentative: %s", addrs)
	}
}

// TestTrafficAcrossPair moves the switch end of a fresh pair into a second
// namespace (so test traffic stays between namespaces the test owns) and
// runs ping and TCP across it.
func TestTrafficAcrossPair(t *testing.T) {
	testenv.RequireRoot(t)
	nsA, nsB := newNamespace(t), newNamespace(t)
	name := testenv.UniqueName(t)
	cleanupLink(t, name)
	if err := Create(Config{Name: name, Namespace: nsA, Address: "10.89.0.1/24"}); err != nil {
		t.Fatal(err)
	}
	hB, err := vnetns.GetFromName(nsB)
	if err != nil {
		t.Fatal(err)
	}
	defer hB.Close()
	link, err := netlink.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetNsFd(link, int(hB)); err != nil {
		t.Fatal(err)
	}
	inNamespace(t, nsB, "ip", "addr", "add", "10.89.0.2/24", "dev", name)
	inNamespace(t, nsB, "ip", "link", "set", name, "up")

	inNamespace(t, nsA, "ping", "-c", "1", "-W", "2", "10.89.0.2")

	var ln net.Listener
	if err := netns.Do(nsB, func() error {
		var err error
		ln, err = net.Listen("tcp", "10.89.0.2:0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c)
	}()
	msg := strings.Repeat("checksummed ", 1000)
	var got []byte
	if err := netns.Do(nsA, func() error {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := io.WriteString(c, msg); err != nil {
			return err
		}
		if err := c.(*net.TCPConn).CloseWrite(); err != nil {
			return err
		}
		got, err = io.ReadAll(c)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if string(got) != msg {
		t.Errorf("echoed %d bytes, want %d", len(got), len(msg))
	}
}

func TestCreateFailuresLeaveNothing(t *testing.T) {
	testenv.RequireRoot(t)
	ns := newNamespace(t)

	t.Run("missing namespace", func(t *testing.T) {
		name, missing := testenv.UniqueName(t), testenv.UniqueName(t)
		cleanupLink(t, name)
		err := Create(Config{Name: name, Namespace: missing})
		if want := `network namespace "` + missing + `" does not exist`; err == nil || err.Error() != want {
			t.Errorf("got %v, want %q", err, want)
		}
		assertNoLink(t, name)
	})

	t.Run("invalid address", func(t *testing.T) {
		name := testenv.UniqueName(t)
		cleanupLink(t, name)
		err := Create(Config{Name: name, Namespace: ns, Address: "10.0.0.300/24"})
		if err == nil || !strings.HasPrefix(err.Error(), `invalid address "10.0.0.300/24"`) {
			t.Errorf("got %v", err)
		}
		assertNoLink(t, name)
		assertNoPeer(t, ns, DefaultPeer)
	})

	t.Run("peer name taken in namespace", func(t *testing.T) {
		first, second := testenv.UniqueName(t), testenv.UniqueName(t)
		cleanupLink(t, first)
		cleanupLink(t, second)
		if err := Create(Config{Name: first, Namespace: ns, Peer: "taken"}); err != nil {
			t.Fatal(err)
		}
		err := Create(Config{Name: second, Namespace: ns, Peer: "taken"})
		if want := `interface "taken" already exists in network namespace "` + ns + `"`; err == nil || err.Error() != want {
			t.Errorf("got %v, want %q", err, want)
		}
		assertNoLink(t, second)
		if !Exists(first) {
			t.Error("the failed Create removed the first pair")
		}
	})

	// A failure after the pair exists (the peer refuses an IPv6 address
	// because IPv6 is disabled in its namespace) must remove the pair.
	t.Run("failure after the pair exists", func(t *testing.T) {
		noV6 := newNamespace(t)
		inNamespace(t, noV6, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1")
		name := testenv.UniqueName(t)
		cleanupLink(t, name)
		err := Create(Config{Name: name, Namespace: noV6, Address: "fd00:89::1/64"})
		if err == nil || !strings.Contains(err.Error(), "add address fd00:89::1/64") {
			t.Errorf("got %v, want an error adding the address", err)
		}
		assertNoLink(t, name)
		assertNoPeer(t, noV6, DefaultPeer)
	})
}

func assertNoLink(t *testing.T, name string) {
	t.Helper()
	if l, err := netlink.LinkByName(name); err == nil && l.Attrs().Name == name {
		t.Errorf("interface %q left behind", name)
	}
}

func assertNoPeer(t *testing.T, ns, peer string) {
	t.Helper()
	if links := inNamespace(t, ns, "ip", "-o", "link", "show"); strings.Contains(links, " "+peer+"@") {
		t.Errorf("peer %q left behind in %q: %s", peer, ns, links)
	}
}

func TestDelete(t *testing.T) {
	testenv.RequireRoot(t)
	missing := testenv.UniqueName(t)
	err := Delete(missing)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Delete of a missing interface: got %v, want fs.ErrNotExist", err)
	}
	if want := `interface "` + missing + `" does not exist`; err == nil || err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}

	// lo of a namespace of ours stands for an interface that is not a veth.
	ns := newNamespace(t)
	if err := netns.Do(ns, func() error {
		if Exists("lo") {
			t.Error(`Exists("lo") = true`)
		}
		err := Delete("lo")
		if want := `interface "lo" is a device, not a veth`; err == nil || err.Error() != want {
			t.Errorf("Delete(lo): got %v, want %q", err, want)
		}
		_, err = netlink.LinkByName("lo")
		return err
	}); err != nil {
		t.Errorf("lo after Delete: %v", err)
	}
}

func TestDisableTxChecksumErrors(t *testing.T) {
	testenv.RequireRoot(t)
	ns := newNamespace(t)
	err := DisableTxChecksum(ns, "nosuchif")
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), `interface "nosuchif" does not exist`) {
		t.Errorf("got %v", err)
	}
	missing := testenv.UniqueName(t)
	err = DisableTxChecksum(missing, "eth0")
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), `network namespace "`+missing+`" does not exist`) {
		t.Errorf("got %v", err)
	}
}

// TestDisableTxChecksumCurrentNamespace covers ns == "" on the switch end
// of a pair, which Create leaves with offload on.
func TestDisableTxChecksumCurrentNamespace(t *testing.T) {
	testenv.RequireRoot(t)
	ns := newNamespace(t)
	name := testenv.UniqueName(t)
	cleanupLink(t, name)
	if err := Create(Config{Name: name, Namespace: ns}); err != nil {
		t.Fatal(err)
	}
	if features := run(t, "ethtool", "-k", name); !strings.Contains(features, "tx-checksumming: on") {
		t.Fatalf("TX checksum offload already off on the switch end:\n%s", features)
	}
	if err := DisableTxChecksum("", name); err != nil {
		t.Fatal(err)
	}
	if features := run(t, "ethtool", "-k", name); !strings.Contains(features, "tx-checksumming: off") {
		t.Errorf("TX checksum offload still on:\n%s", features)
	}
}
