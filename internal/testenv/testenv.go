// Package testenv holds what the project's tests share about their
// environment: whether they may touch the kernel's networking, and which
// CPUs they may pin threads to.
package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// RequireRoot skips a test that needs root (namespaces, XDP, AF_XDP) when
// the process is not root, or fails it when XSWITCH_REQUIRE_PRIVILEGED=1
// says privileged tests must run, so that CI cannot go green by skipping.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("XSWITCH_REQUIRE_PRIVILEGED") == "1" {
		t.Fatal("this test needs root (network namespaces, XDP) and XSWITCH_REQUIRE_PRIVILEGED=1 forbids skipping it")
	}
	t.Skip("skipping: this test needs root (network namespaces, XDP); run as root, or set XSWITCH_REQUIRE_PRIVILEGED=1 to make this a failure")
}

// VswitchSchema is Open vSwitch's database schema, as openvswitch-common
// installs it.
const VswitchSchema = "/usr/share/openvswitch/vswitch.ovsschema"

// RequireOVSDB skips a test that needs Open vSwitch's database tools
// (ovsdb-server, ovsdb-tool, ovs-vsctl) and schema when they are not
// installed, or fails it when XSWITCH_REQUIRE_PRIVILEGED=1 says no test
// may skip (as in CI).
func RequireOVSDB(t testing.TB) {
	t.Helper()
	missing := ""
	for _, tool := range []string{"ovsdb-server", "ovsdb-tool", "ovs-vsctl"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = tool
		}
	}
	if _, err := os.Stat(VswitchSchema); err != nil {
		missing = VswitchSchema
	}
	if missing == "" {
		return
	}
	if os.Getenv("XSWITCH_REQUIRE_PRIVILEGED") == "1" {
		t.Fatalf("%s is not installed (test/deps installs openvswitch-common and openvswitch-switch) and XSWITCH_REQUIRE_PRIVILEGED=1 forbids skipping this test", missing)
	}
	t.Skipf("skipping: %s is not installed (test/deps installs it, with openvswitch-common and openvswitch-switch); set XSWITCH_REQUIRE_PRIVILEGED=1 to make this a failure", missing)
}

// UniqueName returns "xt" and 10 random hex digits: a name for a namespace
// or interface (12 characters, within IFNAMSIZ) that no other test run
// uses.
func UniqueName(t testing.TB) string {
	t.Helper()
	b := make([]byte, 5)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "xt" + hex.EncodeToString(b)
}

// AllowedCPUs lists, in order, the CPUs this process may run on.
func AllowedCPUs(t testing.TB) []int {
	t.Helper()
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		t.Fatal(err)
	}
	var cpus []int
	for i := range len(allowed) * 64 {
		if allowed.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus
}

// UnnamedNetns starts a process alone in a network namespace of its own
// with no name in /run/netns, as a container runtime's is, and returns
// its pid once it is in there, and end, which ends it (at the test's end
// at the latest).
func UnnamedNetns(t testing.TB) (pid string, end func()) {
	t.Helper()
	holder := exec.Command("unshare", "--net", "sleep", "600")
	if err := holder.Start(); err != nil {
		t.Fatalf("unshare --net: %v", err)
	}
	end = sync.OnceFunc(func() {
		holder.Process.Kill()
		holder.Wait()
	})
	t.Cleanup(end)
	pid = strconv.Itoa(holder.Process.Pid)
	// Until unshare has entered its namespace, the process is in ours.
	self, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if ns, err := os.Readlink("/proc/" + pid + "/ns/net"); err == nil && ns != self {
			return pid, end
		}
		if time.Now().After(deadline) {
			t.Fatal("unshare --net did not enter a namespace of its own")
		}
	}
}
