// Package testenv holds what the project's tests share about their
// environment: whether they may touch the kernel's networking, and which
// CPUs they may pin threads to.
package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

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
