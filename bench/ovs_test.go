package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/xswitch/xswitch/internal/netns"
	"github.com/xswitch/xswitch/internal/testenv"
)

// ovsHosts makes the namespaces of a bench case for the ovs case, and
// points the private directory of OVS into the test's own.
func ovsHosts(t *testing.T) (Hosts, *bytes.Buffer) {
	t.Helper()
	testenv.RequireRoot(t)
	if c := OVS("ovs", Rules{}); c.Skip != "" {
		t.Skip(c.Skip)
	}
	t.Setenv("TMPDIR", t.TempDir())
	var log bytes.Buffer
	hosts := Hosts{
		GenNetns: testenv.UniqueName(t), RcvNetns: testenv.UniqueName(t),
		GenPort: testenv.UniqueName(t), RcvPort: testenv.UniqueName(t),
		Log: &log,
	}
	for _, ns := range []string{hosts.GenNetns, hosts.RcvNetns} {
		if err := netns.Create(ns); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { netns.Delete(ns) })
	}
	return hosts, &log
}

// assertOVSGone checks that nothing the case made is left.
func assertOVSGone(t *testing.T, hosts Hosts) {
	t.Helper()
	if ns := hosts.GenPort + "-ovs"; netns.Exists(ns) {
		t.Errorf("namespace %q is left behind", ns)
	}
	for _, name := range []string{hosts.GenPort, hosts.RcvPort, hosts.GenPort + "o"} {
		if _, err := netlink.LinkByName(name); err == nil {
			t.Errorf("interface %q is left behind", name)
		}
	}
	// The daemons' command lines name their files in the test's TMPDIR.
	cmdlines, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range cmdlines {
		if cmdline, err := os.ReadFile(f); err == nil && bytes.Contains(cmdline, []byte(os.TempDir())) {
			t.Errorf("process %s is left running: %s", filepath.Base(filepath.Dir(f)), bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		}
	}
	if left, _ := os.ReadDir(os.TempDir()); len(left) != 0 {
		t.Errorf("%s is left behind", filepath.Join(os.TempDir(), left[0].Name()))
	}
}

func TestOVSSetupAndCleanup(t *testing.T) {
	hosts, log := ovsHosts(t)
	flows := ManyFlows(100)
	_, cleanup, err := setupOVS(context.Background(), hosts, Rules{Flows: flows}, false)
	if err != nil {
		t.Fatal(err)
	}
	pidfiles, err := filepath.Glob(filepath.Join(os.TempDir(), "*", "*.pid"))
	if err != nil || len(pidfiles) != 2 {
		t.Errorf("OVS pidfiles %q (%v), want ovsdb-server's and ovs-vswitchd's", pidfiles, err)
	}
	err = netns.Do(hosts.GenPort+"-ovs", func() error {
		for _, name := range []string{hosts.GenPort, hosts.RcvPort} {
			l, err := netlink.LinkByName(name)
			if err != nil {
				return err
			}
			if l.Attrs().Xdp == nil || !l.Attrs().Xdp.Attached {
				t.Errorf("no XDP program on %q", name)
			}
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	if !strings.Contains(log.String(), "in native XDP mode") || !strings.Contains(log.String(), "100 flows") {
		t.Errorf("setup said %q, want native XDP mode and 100 flows", log.String())
	}
	cleanup()
	assertOVSGone(t, hosts)
}

func TestOVSSetupFailureLeavesNothing(t *testing.T) {
	hosts, _ := ovsHosts(t)
	_, _, err := setupOVS(context.Background(), hosts, Rules{Flows: []string{"priority=1,no_such_field=1,actions=drop"}}, false)
	if err == nil || !strings.Contains(err.Error(), "no_such_field") {
		t.Fatalf("setup with a bad flow: err = %v, want ovs-ofctl's complaint about no_such_field", err)
	}
	assertOVSGone(t, hosts)
}
