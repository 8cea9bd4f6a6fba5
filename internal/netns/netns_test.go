package netns

import (
	"errors"
	"io"
	"io/fs"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"

	"github.com/xswitch/xswitch/internal/testenv"
)

// newNamespace creates a namespace that is deleted when the test ends.
func newNamespace(t *testing.T) string {
	t.Helper()
	name := testenv.UniqueName(t)
	t.Cleanup(func() {
		if err := Delete(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("cleanup: %v", err)
		}
	})
	if err := Create(name); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestValidateName(t *testing.T) {
	for _, bad := range []string{"", ".", "..", "a/b", "../x", "a\x00b"} {
		if err := validateName(bad); err == nil {
			t.Errorf("validateName(%q) accepted", bad)
		}
		if Exists(bad) {
			t.Errorf("Exists(%q) = true", bad)
		}
	}
	if err := validateName("xt-ns.1"); err != nil {
		t.Errorf("validateName rejected a good name: %v", err)
	}
}

func TestCreateExistsDelete(t *testing.T) {
	testenv.RequireRoot(t)
	name := newNamespace(t)
	if !Exists(name) {
		t.Fatalf("Exists(%q) = false after Create", name)
	}
	out, err := exec.Command("ip", "netns", "list").CombinedOutput()
	if err != nil {
		t.Fatalf("ip netns list: %v: %s", err, out)
	}
	if !strings.Contains(string(out), name) {
		t.Errorf("ip netns list does not show %q:\n%s", name, out)
	}
	out, err = exec.Command("ip", "netns", "exec", name, "ip", "-o", "link", "show", "lo").CombinedOutput()
	if err != nil {
		t.Fatalf("ip netns exec: %v: %s", err, out)
	}
	if !strings.Contains(string(out), "UP") {
		t.Errorf("lo is not up in %q: %s", name, out)
	}

	err = Create(name)
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second Create: got %v, want an \"already exists\" error", err)
	}

	if err := Delete(name); err != nil {
		t.Fatal(err)
	}
	if Exists(name) {
		t.Errorf("Exists(%q) = true after Delete", name)
	}
	err = Delete(name)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("second Delete: got %v, want fs.ErrNotExist", err)
	}
	if want := `network namespace "` + name + `" does not exist`; err == nil || err.Error() != want {
		t.Errorf("second Delete: got %q, want %q", err, want)
	}
}

func TestDoMissingNamespace(t *testing.T) {
	testenv.RequireRoot(t)
	name := testenv.UniqueName(t)
	called := false
	err := Do(name, func() error { called = true; return nil })
	if !errors.Is(err, fs.ErrNotExist) || called {
		t.Errorf("Do in missing namespace: err %v, fn called %v", err, called)
	}
}

func TestDoReturnsFnError(t *testing.T) {
	testenv.RequireRoot(t)
	name := newNamespace(t)
	sentinel := errors.New("from fn")
	if err := Do(name, func() error { return sentinel }); err != sentinel {
		t.Errorf("Do returned %v, want fn's error", err)
	}
}

// TestDoSocketStaysInNamespace opens a listener inside a namespace and checks
// that it is that namespace's: reachable there on loopback, not from ours.
func TestDoSocketStaysInNamespace(t *testing.T) {
	testenv.RequireRoot(t)
	name := newNamespace(t)
	rootBefore, err := vnetns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer rootBefore.Close()

	var ln net.Listener
	var inside vnetns.NsHandle
	err = Do(name, func() error {
		var err error
		if inside, err = vnetns.Get(); err != nil {
			return err
		}
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer inside.Close()
	defer ln.Close()

	nsFromName, err := vnetns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	defer nsFromName.Close()
	if !inside.Equal(nsFromName) {
		t.Errorf("fn ran in %v, want namespace %q (%v)", inside, name, nsFromName)
	}

	// The listener must not be visible from the root namespace: ss there
	// must not list its port, while ss inside must.
	port := ln.Addr().(*net.TCPAddr).Port
	portField := ":" + strconv.Itoa(port)
	outside, err := exec.Command("ss", "-Htln").CombinedOutput()
	if err != nil {
		t.Fatalf("ss: %v: %s", err, outside)
	}
	insideOut, err := exec.Command("ip", "netns", "exec", name, "ss", "-Htln").CombinedOutput()
	if err != nil {
		t.Fatalf("ip netns exec ss: %v: %s", err, insideOut)
	}
	if !strings.Contains(string(insideOut), "127.0.0.1"+portField) {
		t.Errorf("listener not in namespace %q:\n%s", name, insideOut)
	}
	if strings.Contains(string(outside), "127.0.0.1"+portField) {
		t.Errorf("listener visible in the root namespace:\n%s", outside)
	}

	// Accepting and dialling inside the namespace over its own loopback.
	accepted := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, err = c.Write([]byte("hi"))
			c.Close()
		}
		accepted <- err
	}()
	var got []byte
	err = Do(name, func() error {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return err
		}
		defer c.Close()
		got, err = io.ReadAll(c)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-accepted; err != nil {
		t.Fatal(err)
	}
	if string(got) != "hi" {
		t.Errorf("read %q, want %q", got, "hi")
	}

	rootAfter, err := vnetns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer rootAfter.Close()
	if !rootAfter.Equal(rootBefore) {
		t.Error("the test goroutine's thread changed namespace")
	}
}

// TestDoAcrossVeth connects two namespaces with a veth pair and talks TCP
// between them, each end opened with Do.
func TestDoAcrossVeth(t *testing.T) {
	testenv.RequireRoot(t)
	nsA, nsB := newNamespace(t), newNamespace(t)
	const addrA, addrB = "10.77.0.1/24", "10.77.0.2/24"
	setupVeth(t, nsA, nsB, addrA, addrB)

	var ln net.Listener
	if err := Do(nsA, func() error {
		var err error
		ln, err = net.Listen("tcp", "10.77.0.1:0")
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

	msg := []byte("across the veth")
	var got []byte
	if err := Do(nsB, func() error {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := c.Write(msg); err != nil {
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
	if string(got) != string(msg) {
		t.Errorf("echo %q, want %q", got, msg)
	}
}

// setupVeth puts one end of a fresh veth pair in each namespace, addressed
// and up. The pair is created directly inside the namespaces, so it never
// exists in ours and goes away with either namespace.
func setupVeth(t *testing.T, nsA, nsB, addrA, addrB string) {
	t.Helper()
	hA, err := vnetns.GetFromName(nsA)
	if err != nil {
		t.Fatal(err)
	}
	defer hA.Close()
	hB, err := vnetns.GetFromName(nsB)
	if err != nil {
		t.Fatal(err)
	}
	defer hB.Close()
	nameA, nameB := testenv.UniqueName(t), testenv.UniqueName(t)
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: nameA, Namespace: netlink.NsFd(hA)},
		PeerName:      nameB,
		PeerNamespace: netlink.NsFd(hB),
	}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatalf("add veth: %v", err)
	}
	for _, end := range []struct {
		ns         vnetns.NsHandle
		link, addr string
	}{{hA, nameA, addrA}, {hB, nameB, addrB}} {
		h, err := netlink.NewHandleAt(end.ns)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		l, err := h.LinkByName(end.link)
		if err != nil {
			t.Fatal(err)
		}
		a, err := netlink.ParseAddr(end.addr)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.AddrAdd(l, a); err != nil {
			t.Fatal(err)
		}
		if err := h.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
	}
}

// DoByID finds a veth peer's namespace by the id the veth names it by:
// a named one, and one that only a process is in, as a container's.
func TestDoByIDFindsAPeersNamespace(t *testing.T) {
	testenv.RequireRoot(t)
	named := newNamespace(t)
	pid, _ := testenv.UnnamedNetns(t)
	for _, c := range []struct{ into, where string }{{named, named}, {pid, "pid " + pid}} {
		end := testenv.UniqueName(t) // 12 characters, and the peer's 13
		if out, err := exec.Command("ip", "link", "add", end, "type", "veth", "peer", "name", end+"p", "netns", c.into).CombinedOutput(); err != nil {
			t.Fatalf("ip link add: %v: %s", err, out)
		}
		t.Cleanup(func() { exec.Command("ip", "link", "del", end).Run() })
		link, err := netlink.LinkByName(end)
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		where, err := DoByID(link.Attrs().NetNsID, func() error {
			_, err := netlink.LinkByName(end + "p")
			found = err == nil
			return nil
		})
		if err != nil || where != c.where || !found {
			t.Errorf("DoByID of the namespace of %s's peer: in %q (found the peer: %v), %v; want it in %q", end, where, found, err, c.where)
		}
	}
	if _, err := DoByID(1<<30, func() error { return nil }); err == nil || !strings.Contains(err.Error(), "no process in it") {
		t.Errorf("DoByID of an id no namespace has: %v", err)
	}
}
