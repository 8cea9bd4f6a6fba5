package test

import (
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xswitch/xswitch/internal/testenv"
)

// TestBadInput feeds the daemon every kind of wrong request the CLI
// contract names and checks each is refused with exit 1, an error naming
// the problem, and no change to the configuration.
func TestBadInput(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	n := newTestNet()
	br, other := n.name("br"), n.name("br2")
	d.x(t, "add-br", br)
	d.x(t, "add-br", other)
	p1 := addNSPort(t, d, n, br, 1, false)
	spareNS := n.namespace(t, "n2")
	unknownBridge := n.name("nobr")
	newPort := n.name("p2")
	missingNS := n.name("nope")
	missingIface := n.name("nosuch")
	tooLong := n.name("0123456789") // 18 characters
	wideTooLong := n.name("ééé")    // 11 characters, 14 bytes
	template := n.name("p%d")       // the kernel would name it ...p0
	deleteLinkAtCleanup(t, newPort)
	deleteLinkAtCleanup(t, tooLong[:15])
	deleteLinkAtCleanup(t, n.name("p0"))

	cases := []struct {
		name   string
		args   []string
		phrase string
	}{
		{"add-port to unknown bridge", []string{"add-port", unknownBridge, newPort, "--netns", spareNS}, `no bridge "` + unknownBridge + `"`},
		{"del-br unknown bridge", []string{"del-br", unknownBridge}, `no bridge "` + unknownBridge + `"`},
		{"list-ports unknown bridge", []string{"list-ports", unknownBridge}, `no bridge "` + unknownBridge + `"`},
		{"del-port on unknown bridge", []string{"del-port", unknownBridge, p1.name}, `no bridge "` + unknownBridge + `"`},
		{"dump-ports unknown bridge", []string{"dump-ports", unknownBridge}, `no bridge "` + unknownBridge + `"`},
		{"fdb-show unknown bridge", []string{"fdb-show", unknownBridge}, `no bridge "` + unknownBridge + `"`},
		{"del-port unknown port", []string{"del-port", br, "p9"}, `no port "p9" on bridge ` + br},
		{"del-port of another bridge's port", []string{"del-port", other, p1.name}, `no port "` + p1.name + `" on bridge ` + other},
		{"dump-ports unknown port", []string{"dump-ports", br, "p9"}, `no port "p9" on bridge ` + br},
		{"missing interface", []string{"add-port", br, missingIface}, `interface "` + missingIface + `" does not exist`},
		{"interface on another bridge", []string{"add-port", other, p1.name}, `interface "` + p1.name + `" is already a port of bridge ` + br},
		{"interface already on this bridge", []string{"add-port", br, p1.name}, `interface "` + p1.name + `" is already a port of bridge ` + br},
		{"missing namespace", []string{"add-port", br, newPort, "--netns", missingNS}, `network namespace "` + missingNS + `" does not exist`},
		{"bridge name too long", []string{"add-br", tooLong}, "is 18 bytes long, longer than 15"},
		{"port name too long", []string{"add-port", br, tooLong, "--netns", spareNS}, "is 18 bytes long, longer than 15"},
		{"port name too long in bytes", []string{"add-port", br, wideTooLong + "é", "--netns", spareNS}, "is 16 bytes long, longer than 15"},
		{"port name a kernel template", []string{"add-port", br, template, "--netns", spareNS}, "which the kernel takes as a name template"},
		{"port name a pattern", []string{"add-port", br, n.name("p*"), "--netns", spareNS}, "pattern characters"},
		{"bridge name a pattern", []string{"add-br", n.name("[ab]")}, "pattern characters"},
		{"port name not UTF-8", []string{"add-port", br, n.name("p\xff"), "--netns", spareNS}, "not valid UTF-8"},
		{"bridge name not UTF-8", []string{"add-br", n.name("\xfe")}, "not valid UTF-8"},
		{"duplicate bridge", []string{"add-br", br}, `bridge "` + br + `" already exists`},
		{"bad address", []string{"add-port", br, newPort, "--netns", spareNS, "--address", "10.1.2.300/24"}, "10.1.2.300"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := d.x(t, "show")
			stderr, code := d.xErr(t, c.args...)
			if code != 1 {
				t.Errorf("exit code %d, want 1 (a user error)", code)
			}
			if !strings.HasPrefix(stderr, "xswitch: ") || !strings.Contains(stderr, c.phrase) {
				t.Errorf("stderr %q, want \"xswitch: ...\" containing %q", stderr, c.phrase)
			}
			if after := d.x(t, "show"); after != before {
				t.Errorf("show changed by a failed command; before:\n%s\nafter:\n%s", before, after)
			}
			// A refused add-port must not leave half a veth pair behind.
			for _, link := range []string{newPort, tooLong[:15], n.name("p0")} {
				if linkExists(t, link) {
					t.Errorf("link %s exists after the failed command", link)
				}
			}
			if nsLinkExists(t, spareNS, "eth0") {
				t.Errorf("eth0 exists in %s after the failed command", spareNS)
			}
		})
	}

	t.Run("daemon not running", func(t *testing.T) {
		dir := t.TempDir()
		missing := filepath.Join(dir, "none.sock")
		// A socket file nobody listens on, as a killed daemon leaves behind.
		stale := filepath.Join(dir, "stale.sock")
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		l.SetUnlinkOnClose(false)
		l.Close()
		for _, sock := range []string{missing, stale} {
			for _, args := range [][]string{{"list-br"}, {"add-br", br}} {
				r := xswitch(t, sock, args...)
				if r.code != 2 {
					t.Errorf("xswitch --sock %s %s: exit %d, want 2", sock, strings.Join(args, " "), r.code)
				}
				if !strings.HasPrefix(r.stderr, "xswitch: ") || !strings.Contains(r.stderr, sock) || !strings.Contains(r.stderr, "not running") {
					t.Errorf("xswitch --sock %s %s: stderr %q, want \"xswitch: ...\" naming the socket and saying the daemon is not running",
						sock, strings.Join(args, " "), r.stderr)
				}
			}
		}
	})
}
