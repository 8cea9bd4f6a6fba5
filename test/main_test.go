// Package test holds xswitch's integration tests: they build the real
// binary, run its daemon, wire network namespaces to its bridges with veth
// pairs, and check what a user would check (ping, TCP, counters, the MAC
// table, restarts, cleanup, error messages). They need root.
package test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xswitch/xswitch/internal/race"
)

// xswitchBin is the binary under test, built once by TestMain.
var xswitchBin string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "xswitch-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "create build dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)

	xswitchBin = filepath.Join(dir, "xswitch")
	if err := buildBinary(xswitchBin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// buildBinary builds cmd/xswitch with the race detector when the tests
// themselves run with it, so that `go test -race` also catches races in the
// daemon (harness.go fails a test whose daemon reported one).
func buildBinary(out string) error {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("locate module root with `go env GOMOD`: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	args := []string{"build", "-o", out}
	if race.Enabled {
		args = append(args, "-race")
	}
	args = append(args, "./cmd/xswitch")
	build := exec.Command("go", args...)
	build.Dir = root
	if output, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s in %s: %w\n%s", strings.Join(args, " "), root, err, output)
	}
	return nil
}
