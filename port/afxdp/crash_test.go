package afxdp

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
)

// crashHelperEnv names the interface on which the re-executed test binary
// opens a port and then waits to be killed.
const crashHelperEnv = "XSWITCH_AFXDP_CRASH_HELPER_IFACE"

// TestKilledProcessLeavesNothing kills a process holding an open port: the
// XDP program is attached through a bpf_link and the sockets are plain
// file descriptors, so the kernel must remove both.
func TestKilledProcessLeavesNothing(t *testing.T) {
	if iface := os.Getenv(crashHelperEnv); iface != "" {
		if _, err := Open(Config{Interface: iface}); err != nil {
			os.Stdout.WriteString("error: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("ready\n")
		time.Sleep(time.Minute)
		os.Exit(1)
	}
	b := newTestbed(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledProcessLeavesNothing$")
	cmd.Env = append(os.Environ(), crashHelperEnv+"="+b.Host)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("helper did not open the port: %q, %v", line, err)
	}
	l, err := netlink.LinkByName(b.Host)
	if err != nil {
		t.Fatal(err)
	}
	if x := l.Attrs().Xdp; x == nil || !x.Attached {
		t.Fatal("no XDP program attached while the helper runs")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	assertNothingAttached(t, b.Host)
}
