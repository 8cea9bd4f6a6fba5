// Package ovsdummy runs Open vSwitch as the oracle of what it does to
// frames: ovsdb-server and ovs-vswitchd of its own, in a test's temporary
// directory, with one bridge of OVS's dummy datapath, whose ports are
// no interfaces of the machine's: a test hands a port a frame
// (netdev-dummy/receive), and reads what each port sent from the pcap
// file the port writes. Nothing leaves the process.
package ovsdummy

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// timeout bounds each command: a daemon that does not answer fails the
// test instead of hanging it.
const timeout = 20 * time.Second

// Switch is a running Open vSwitch with bridge br0 of ports 1 to n.
type Switch struct {
	dir string
	env []string
}

// Start runs Open vSwitch with a bridge of ports ports, numbered from 1,
// and stops it when the test ends. Without Open vSwitch's daemons the
// test is skipped, or fails when XSWITCH_REQUIRE_PRIVILEGED=1 says the
// environment must have them.
func Start(t testing.TB, ports int) *Switch {
	t.Helper()
	for _, prog := range []string{"ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovs-ofctl", "ovs-appctl"} {
		if _, err := exec.LookPath(prog); err != nil {
			if os.Getenv("XSWITCH_REQUIRE_PRIVILEGED") == "1" {
				t.Fatalf("%s is not installed (test/deps installs openvswitch-switch) and XSWITCH_REQUIRE_PRIVILEGED=1 forbids skipping", prog)
			}
			t.Skipf("skipping: %s is not installed; run test/deps", prog)
		}
	}
	dir, err := os.MkdirTemp("", "ovsdummy")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s := &Switch{dir: dir, env: append(os.Environ(), "OVS_RUNDIR="+dir, "OVS_LOGDIR="+dir, "OVS_DBDIR="+dir)}
	schema := "/usr/share/openvswitch/vswitch.ovsschema"
	s.run(t, "ovsdb-tool", "create", s.path("conf.db"), schema)
	s.run(t, "ovsdb-server", s.path("conf.db"), "--remote=punix:"+s.path("db.sock"), "--unixctl="+s.path("ovsdb.ctl"),
		"--pidfile="+s.path("ovsdb.pid"), "--detach", "--log-file="+s.path("ovsdb.log"))
	t.Cleanup(func() { s.stop(t, "ovsdb.pid") })
	s.run(t, "ovs-vswitchd", "unix:"+s.path("db.sock"), "--enable-dummy=override", "--disable-system",
		"--unixctl="+s.path("vswitchd.ctl"), "--pidfile="+s.path("vswitchd.pid"), "--detach", "--log-file="+s.path("vswitchd.log"))
	t.Cleanup(func() { s.stop(t, "vswitchd.pid") })
	args := []string{"add-br", "br0", "--", "set", "bridge", "br0", "datapath-type=dummy"}
	for i := 1; i <= ports; i++ {
		args = append(args, "--", "add-port", "br0", fmt.Sprintf("p%d", i), "--", "set", "interface", fmt.Sprintf("p%d", i),
			"type=dummy", fmt.Sprintf("ofport_request=%d", i), "options:tx_pcap="+s.pcap(i))
	}
	s.vsctl(t, args...)
	s.run(t, "ovs-ofctl", "del-flows", s.bridge())
	return s
}

func (s *Switch) path(name string) string { return filepath.Join(s.dir, name) }
func (s *Switch) pcap(port int) string    { return s.path(fmt.Sprintf("p%d.pcap", port)) }
func (s *Switch) bridge() string          { return "unix:" + s.path("br0.mgmt") }

func (s *Switch) vsctl(t testing.TB, args ...string) {
	t.Helper()
	s.run(t, "ovs-vsctl", append([]string{"--db=unix:" + s.path("db.sock"), "--timeout=20"}, args...)...)
}

// run runs an Open vSwitch program in the switch's directory.
func (s *Switch) run(t testing.TB, prog string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Env = s.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", prog, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// stop ends the daemon whose pid file is pidFile, by its pid.
func (s *Switch) stop(t testing.TB, pidFile string) {
	b, err := os.ReadFile(s.path(pidFile))
	if err != nil {
		t.Errorf("stopping Open vSwitch: %v", err)
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Errorf("stopping Open vSwitch: pid file %q: %v", b, err)
		return
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Errorf("stopping Open vSwitch (pid %d): %v", pid, err)
		return
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil {
			return
		}
	}
	syscall.Kill(pid, syscall.SIGKILL)
}

// AddFlows installs flows, in ovs-ofctl's syntax, over OpenFlow 1.3.
func (s *Switch) AddFlows(t testing.TB, flows ...string) {
	t.Helper()
	file := s.path("flows")
	if err := os.WriteFile(file, []byte(strings.Join(flows, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.run(t, "ovs-ofctl", "-O", "OpenFlow13", "add-flows", s.bridge(), file)
}

// Receive hands frame to port as if it arrived there, and returns once
// the switch has processed it.
func (s *Switch) Receive(t testing.TB, port int, frame []byte) {
	t.Helper()
	s.run(t, "ovs-appctl", "-t", s.path("vswitchd.ctl"), "netdev-dummy/receive", fmt.Sprintf("p%d", port), hex.EncodeToString(frame))
}

// Sent returns the frames port sent, in order.
func (s *Switch) Sent(t testing.TB, port int) [][]byte {
	t.Helper()
	// The port writes as it sends: the frames of Receive are in by the
	// time a round trip through the daemon returns.
	s.run(t, "ovs-appctl", "-t", s.path("vswitchd.ctl"), "version")
	b, err := os.ReadFile(s.pcap(port))
	switch {
	case os.IsNotExist(err):
		return nil // nothing sent yet
	case err != nil:
		t.Fatal(err)
	}
	frames, err := readPcap(b)
	if err != nil {
		t.Fatalf("%s: %v", s.pcap(port), err)
	}
	return frames
}

// readPcap reads the frames of a pcap file, of either byte order.
func readPcap(b []byte) ([][]byte, error) {
	if len(b) < 24 {
		return nil, fmt.Errorf("%d bytes: no pcap header", len(b))
	}
	var order binary.ByteOrder = binary.LittleEndian
	switch {
	case bytes.Equal(b[:4], []byte{0xd4, 0xc3, 0xb2, 0xa1}):
	case bytes.Equal(b[:4], []byte{0xa1, 0xb2, 0xc3, 0xd4}):
		order = binary.BigEndian
	default:
		return nil, fmt.Errorf("magic %x: not a pcap file", b[:4])
	}
	var frames [][]byte
	for b = b[24:]; len(b) > 0; {
		if len(b) < 16 {
			return nil, fmt.Errorf("a record header cut short")
		}
		n := int(order.Uint32(b[8:]))
		if len(b) < 16+n {
			return nil, fmt.Errorf("a frame of %d bytes cut short", n)
		}
		frames = append(frames, bytes.Clone(b[16:16+n]))
		b = b[16+n:]
	}
	return frames, nil
}
