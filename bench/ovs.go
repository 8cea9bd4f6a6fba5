package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/xswitch/xswitch/internal/netns"
)

// Open vSwitch's programs, all of which the ovs cases need.
var ovsPrograms = []string{"ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovs-ofctl", "ovs-appctl"}

// ovsSchema is where Debian's openvswitch-common puts the database schema.
const ovsSchema = "/usr/share/openvswitch/vswitch.ovsschema"

// ovsDatapathPort is the tap device that OVS's userspace datapath makes
// for itself. Its name is fixed, so only one userspace OVS can run in a
// network namespace: each ovs case runs ovs-vswitchd in a namespace of its
// own, which also keeps it from seeing any interface but the bench's.
const ovsDatapathPort = "ovs-netdev"

// How long OVS gets to do what is asked: ports need a few hundred
// milliseconds for their XDP program and sockets.
const (
	ovsReadyTimeout = 15 * time.Second
	ovsStopTimeout  = 5 * time.Second
)

// XDP modes of OVS's afxdp ports, as options:xdp-mode names them. veth
// has no zero-copy, so native mode copies frames between the veth and the
// UMEM.
const (
	xdpModeNative  = "native"
	xdpModeGeneric = "generic"
)

// OVS is Open vSwitch's userspace datapath between the two veths, as
// type=afxdp ports polled by one PMD thread, all of ovs-vswitchd on CPU 1,
// with rules (no flows: OVS's own priority=0,actions=NORMAL). The bench
// starts its own ovsdb-server and ovs-vswitchd in a private directory, the
// latter in a network namespace of its own where the veths' switch ends
// are, and never touches a system OVS or its files.
func OVS(name string, rules Rules) Case {
	c := Case{Name: name}
	if c.Skip = ovsMissing(); c.Skip != "" {
		return c
	}
	var running *ovsInstance
	c.Setup = func(ctx context.Context, hosts Hosts) (cleanup func(), err error) {
		running, cleanup, err = setupOVS(ctx, hosts, rules, false)
		return cleanup, err
	}
	c.Process = func() SwitchProcess {
		return SwitchProcess{PID: running.vswitchd.cmd.Process.Pid, Connections: running.connections}
	}
	return c
}

// ovsMissing says what of Open vSwitch is not installed and that the case
// is skipped for it, or nothing when all is.
func ovsMissing() string {
	for _, prog := range ovsPrograms {
		if _, err := exec.LookPath(prog); err != nil {
			return fmt.Sprintf("Open vSwitch is not installed (no %s): skipped", prog)
		}
	}
	if _, err := os.Stat(ovsSchema); err != nil {
		return fmt.Sprintf("Open vSwitch's schema %s is missing: skipped", ovsSchema)
	}
	return ""
}

// OVSController is OVS's userspace datapath as OVS is, driven by the
// bench's Controller in fail mode secure: every frame goes to the
// controller and back.
func OVSController(name string) Case {
	c := OVS(name, Rules{})
	if c.Skip == "" {
		if _, err := exec.LookPath(ControllerProgram); err != nil {
			c.Skip = fmt.Sprintf("os-ken is not installed (no %s): skipped", ControllerProgram)
			return c
		}
		c.Setup = func(ctx context.Context, hosts Hosts) (func(), error) {
			_, cleanup, err := setupOVS(ctx, hosts, Rules{}, true)
			return cleanup, err
		}
	}
	return c
}

// ovsInstance is one private Open vSwitch: its directory, its daemons,
// its bridges and their afxdp ports.
type ovsInstance struct {
	netns string // where ovs-vswitchd and its ports' interfaces are
	// dir holds OVS's database, sockets and logs. start makes a temporary
	// one when it is empty, which stop removes; a given one is left, with
	// the logs, to its owner.
	dir        string
	dirIsOwned bool
	env        []string
	bridges    []string // those addBridge made or tried to, which stop removes
	ports      []string // the afxdp ports addPort opened or tried to
	dbServer   *daemon
	vswitchd   *daemon
}

// setupOVS builds an ovs case's path with rules (with the bench's
// Controller instead, if controller is set) and returns the running Open
// vSwitch and the cleanup that removes it all.
func setupOVS(ctx context.Context, hosts Hosts, rules Rules, controller bool) (_ *ovsInstance, _ func(), err error) {
	o := &ovsInstance{netns: hosts.GenPort + "-ovs"}
	bridge := hosts.GenPort + "o"
	var undo []func()
	cleanup := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	defer func() {
		if err != nil {
			cleanup()
		}
	}()
	if err := netns.Create(o.netns); err != nil {
		return nil, nil, err
	}
	// The veths go with their namespace.
	undo = append(undo, func() { netns.Delete(o.netns) })
	if err := netns.Do(o.netns, func() error { _, err := CreateVeths(hosts); return err }); err != nil {
		return nil, nil, err
	}
	undo = append(undo, func() {
		if err := o.stop(); err != nil {
			fmt.Fprintln(hosts.Log, err)
		}
	})
	if err := o.start(ctx); err != nil {
		return nil, nil, err
	}
	// OpenFlow 1.3 for the pipeline's goto_table, 1.0 as OVS's default.
	if err := o.addBridge(ctx, bridge, "protocols=OpenFlow10,OpenFlow13"); err != nil {
		return nil, nil, err
	}
	modes := map[string]string{}
	for i, port := range []string{hosts.GenPort, hosts.RcvPort} {
		mode, err := o.addPort(ctx, bridge, port, i+1)
		if err != nil {
			return nil, nil, err
		}
		modes[port] = mode
		// In native mode OVS's XDP program makes the generator's
		// frames arrive; in generic mode, GRO must.
		if port == hosts.GenPort && mode == xdpModeGeneric {
			if err := enableGRO(ctx, o.netns, port); err != nil {
				return nil, nil, err
			}
		}
	}
	if err := o.waitPolled(ctx, hosts.GenPort, hosts.RcvPort); err != nil {
		return nil, nil, err
	}
	if err := o.installRules(ctx, bridge, rules); err != nil {
		return nil, nil, err
	}
	if err := o.xdpModesInUse(ctx, modes); err != nil {
		return nil, nil, err
	}
	if controller {
		ctl, err := StartController(ctx, o.netns)
		if err != nil {
			return nil, nil, err
		}
		undo = append(undo, ctl.Stop)
		if err := o.useController(ctx, bridge, ctl); err != nil {
			return nil, nil, err
		}
	}
	fmt.Fprintf(hosts.Log, "Open vSwitch bridge %s in namespace %s: afxdp ports %s in %s XDP mode, %s in %s (copying: veth has no zero-copy), all of ovs-vswitchd and its PMD thread on CPU %d, %d flows\n",
		bridge, o.netns, hosts.GenPort, modes[hosts.GenPort], hosts.RcvPort, modes[hosts.RcvPort], SwitchCPU, max(len(rules.Flows), 1))
	return o, cleanup, nil
}

var xdpModeInUse = regexp.MustCompile(`port \d+: (\S+) \(afxdp:[^)]*xdp-mode-in-use=([a-z-]+)`)

// xdpModesInUse replaces the XDP mode asked for of each afxdp port in
// modes, by name, with the one ovs-vswitchd reports it got, where it
// reports one.
func (o *ovsInstance) xdpModesInUse(ctx context.Context, modes map[string]string) error {
	out, err := o.run(ctx, "ovs-appctl", "-t", o.path("ovs-vswitchd.ctl"), "dpctl/show")
	if err != nil {
		return err
	}
	for _, m := range xdpModeInUse.FindAllStringSubmatch(out, -1) {
		modes[m[1]] = m[2]
	}
	return nil
}

// start creates the database and runs ovsdb-server and ovs-vswitchd on it.
func (o *ovsInstance) start(ctx context.Context) error {
	if err := o.startDatabase(ctx); err != nil {
		return err
	}
	return o.startVswitchd(ctx)
}

// startDatabase creates the database and runs ovsdb-server on it.
func (o *ovsInstance) startDatabase(ctx context.Context) error {
	var err error
	if o.dir == "" {
		if o.dir, err = os.MkdirTemp("", "xswitch-bench-ovs-"); err != nil {
			return err
		}
		o.dirIsOwned = true
	} else if err := os.MkdirAll(o.dir, 0o700); err != nil {
		return err
	}
	// Everything OVS would look for under /etc, /var/run/openvswitch,
	// /var/log and /usr/share it looks for here instead.
	o.env = os.Environ()
	for _, v := range []string{"OVS_RUNDIR", "OVS_DBDIR", "OVS_LOGDIR", "OVS_SYSCONFDIR", "OVS_PKGDATADIR"} {
		o.env = append(o.env, v+"="+o.dir)
	}
	db := o.path("conf.db")
	if _, err := o.run(ctx, "ovsdb-tool", "create", db, ovsSchema); err != nil {
		return err
	}
	o.dbServer, err = o.startDaemon("ovsdb-server", db, "--remote=punix:"+o.path("db.sock"))
	if err != nil {
		return err
	}
	return o.waitDatabase(ctx)
}

// startVswitchd runs ovs-vswitchd on the database, all of it on
// SwitchCPU, in o.netns.
func (o *ovsInstance) startVswitchd(ctx context.Context) error {
	// Before ovs-vswitchd starts, so that its PMD thread starts where it
	// belongs.
	if _, err := o.vsctl(ctx, "--no-wait", "set", "Open_vSwitch", ".", fmt.Sprintf("other_config:pmd-cpu-mask=%#x", 1<<SwitchCPU)); err != nil {
		return err
	}
	// Started from a thread in o.netns, ovs-vswitchd runs there. It asks
	// the kernel for the openvswitch module's netlink family, which a
	// kernel with loadable modules may answer by loading the module;
	// netdev bridges do not use it. Its threads start on the CPUs of the
	// thread that starts it: all of them on SwitchCPU, not only the PMD
	// thread, as an outside harness runs a switch (taskset -c 1) and as
	// the bench runs xswitch's daemon.
	return netns.Do(o.netns, func() (err error) {
		var affinity, pinned unix.CPUSet
		if err := unix.SchedGetaffinity(0, &affinity); err != nil {
			return fmt.Errorf("read the thread's CPU affinity: %w", err)
		}
		pinned.Set(SwitchCPU)
		if err := unix.SchedSetaffinity(0, &pinned); err != nil {
			return fmt.Errorf("pin ovs-vswitchd to CPU %d: %w", SwitchCPU, err)
		}
		// The thread goes back to the runtime's pool afterwards.
		defer unix.SchedSetaffinity(0, &affinity)
		o.vswitchd, err = o.startDaemon("ovs-vswitchd", "unix:"+o.path("db.sock"))
		return err
	})
}

// addBridge adds a bridge of OVS's userspace datapath, with settings,
// further columns of its Bridge row (column=value). stop removes it, also
// when ovs-vsctl fails, which it may do after OVS has made it.
func (o *ovsInstance) addBridge(ctx context.Context, bridge string, settings ...string) error {
	o.bridges = append(o.bridges, bridge)
	args := append([]string{"add-br", bridge, "--", "set", "bridge", bridge, "datapath_type=netdev"}, settings...)
	_, err := o.vsctl(ctx, args...)
	return err
}

func (o *ovsInstance) path(name string) string { return filepath.Join(o.dir, name) }

// waitDatabase waits until ovsdb-server answers and initializes the
// database.
func (o *ovsInstance) waitDatabase(ctx context.Context) error {
	deadline := time.Now().Add(ovsReadyTimeout)
	for {
		_, err := o.vsctl(ctx, "--no-wait", "init")
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || o.dbServer.hasExited() {
			return fmt.Errorf("ovsdb-server does not answer on %s: %w%s", o.path("db.sock"), err, o.logTail("ovsdb-server"))
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// addPort adds iface to bridge as an afxdp port with OpenFlow port number
// ofport, in native XDP mode or, if OVS cannot open it so, generic. It
// returns the mode.
func (o *ovsInstance) addPort(ctx context.Context, bridge, iface string, ofport int) (string, error) {
	o.ports = append(o.ports, iface)
	nativeErr := o.tryPort(ctx, bridge, iface, ofport, xdpModeNative)
	if nativeErr == nil {
		return xdpModeNative, nil
	}
	if _, err := o.vsctl(ctx, "--if-exists", "del-port", bridge, iface); err != nil {
		return "", errors.Join(nativeErr, err)
	}
	if err := o.tryPort(ctx, bridge, iface, ofport, xdpModeGeneric); err != nil {
		return "", fmt.Errorf("in %s XDP mode: %w; in %s XDP mode: %w", xdpModeNative, nativeErr, xdpModeGeneric, err)
	}
	return xdpModeGeneric, nil
}

func (o *ovsInstance) tryPort(ctx context.Context, bridge, iface string, ofport int, mode string) error {
	if _, err := o.vsctl(ctx, "add-port", bridge, iface, "--", "set", "interface", iface,
		"type=afxdp", "options:xdp-mode="+mode, "options:n_rxq=1", fmt.Sprintf("ofport_request=%d", ofport)); err != nil {
		return err
	}
	return o.waitPort(ctx, iface)
}

// waitPort waits until OVS has opened iface: no error and an OpenFlow
// port number.
func (o *ovsInstance) waitPort(ctx context.Context, iface string) error {
	deadline := time.Now().Add(ovsReadyTimeout)
	for {
		out, err := o.vsctl(ctx, "get", "interface", iface, "error", "ofport")
		if err != nil {
			return err
		}
		errText, ofportText, _ := strings.Cut(out, "\n")
		if errText != "[]" {
			return fmt.Errorf("ovs-vswitchd cannot open interface %q: %s%s", iface, errText, o.logTail("ovs-vswitchd"))
		}
		if n, err := strconv.Atoi(ofportText); err == nil && n > 0 {
			return nil
		}
		if time.Now().After(deadline) || o.vswitchd.hasExited() {
			return fmt.Errorf("ovs-vswitchd did not open interface %q in %v (ofport %s)%s", iface, ovsReadyTimeout, ofportText, o.logTail("ovs-vswitchd"))
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// waitPolled waits until the PMD thread polls a queue of every port.
func (o *ovsInstance) waitPolled(ctx context.Context, ports ...string) error {
	deadline := time.Now().Add(ovsReadyTimeout)
	for {
		out, err := o.run(ctx, "ovs-appctl", "-t", o.path("ovs-vswitchd.ctl"), "dpif-netdev/pmd-rxq-show")
		if err != nil {
			return err
		}
		missing := ""
		for _, port := range ports {
			if !strings.Contains(out, "port: "+port+" ") {
				missing = port
			}
		}
		if missing == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no PMD thread polls interface %q after %v:\n%s%s", missing, ovsReadyTimeout, out, o.logTail("ovs-vswitchd"))
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

var flowCount = regexp.MustCompile(`flow_count=(\d+)`)

// installRules replaces bridge's flows with rules' flows, if there are
// any, after adding its groups and meters, and checks that the bridge holds as many
// flows as it should.
func (o *ovsInstance) installRules(ctx context.Context, bridge string, rules Rules) error {
	mgmt := "unix:" + o.path(bridge+".mgmt")
	if len(rules.Groups) > 0 {
		file := o.path("groups")
		if err := os.WriteFile(file, []byte(strings.Join(rules.Groups, "\n")+"\n"), 0o600); err != nil {
			return err
		}
		if _, err := o.run(ctx, "ovs-ofctl", "-O", "OpenFlow13", "add-groups", mgmt, file); err != nil {
			return err
		}
	}
	for _, m := range rules.Meters {
		if _, err := o.run(ctx, "ovs-ofctl", "-O", "OpenFlow13", "add-meter", mgmt, m); err != nil {
			return err
		}
	}
	want := 1 // OVS's own NORMAL flow
	if flows := rules.Flows; len(flows) > 0 {
		file := o.path("flows")
		if err := os.WriteFile(file, []byte(strings.Join(flows, "\n")+"\n"), 0o600); err != nil {
			return err
		}
		if _, err := o.run(ctx, "ovs-ofctl", "-O", "OpenFlow13", "del-flows", mgmt); err != nil {
			return err
		}
		if _, err := o.run(ctx, "ovs-ofctl", "-O", "OpenFlow13", "add-flows", mgmt, file); err != nil {
			return err
		}
		want = len(flows)
	}
	out, err := o.run(ctx, "ovs-ofctl", "-O", "OpenFlow13", "dump-aggregate", mgmt)
	if err != nil {
		return err
	}
	m := flowCount.FindStringSubmatch(out)
	if m == nil {
		return fmt.Errorf("ovs-ofctl dump-aggregate %s printed no flow_count: %s", bridge, out)
	}
	if got, _ := strconv.Atoi(m[1]); got != want {
		return fmt.Errorf("bridge %s holds %d flows, want %d", bridge, got, want)
	}
	return nil
}

// useController points bridge at ctl in fail mode secure, and waits until
// ctl has installed its table-miss flow.
func (o *ovsInstance) useController(ctx context.Context, bridge string, ctl *Controller) error {
	if _, err := o.vsctl(ctx, "set-fail-mode", bridge, "secure", "--", "set-controller", bridge,
		fmt.Sprintf("tcp:127.0.0.1:%d", ctl.Port)); err != nil {
		return err
	}
	mgmt := "unix:" + o.path(bridge+".mgmt")
	return waitFor(ctx, "the controller's table-miss flow in OVS", func() (bool, error) {
		out, err := o.run(ctx, "ovs-ofctl", "-O", "OpenFlow13", "dump-flows", mgmt)
		return strings.Contains(out, "CONTROLLER") && !strings.Contains(out, "NORMAL"), err
	})
}

// stop removes the bridges, stops both daemons and removes the directory
// it made, doing what it can after failures: it runs when start failed
// halfway. It returns what it could not undo cleanly.
func (o *ovsInstance) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), ovsStopTimeout)
	defer cancel()
	var errs []error
	if o.vswitchd != nil && !o.vswitchd.hasExited() {
		// Removing the bridges makes ovs-vswitchd take its XDP programs
		// off the ports' interfaces and delete its taps.
		for _, bridge := range o.bridges {
			if _, err := o.vsctl(ctx, "--if-exists", "del-br", bridge); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, d := range []*daemon{o.vswitchd, o.dbServer} {
		if d != nil {
			if err := d.stop(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	// The workloads of a switch daemon on the database run xswitch
	// instead, whose devices go with the namespace.
	netns.Do(o.netns, func() error {
		if o.vswitchd == nil {
			return nil
		}
		// A killed ovs-vswitchd leaves its taps behind.
		for _, tap := range append(slices.Clone(o.bridges), ovsDatapathPort) {
			if l, err := netlink.LinkByName(tap); err == nil {
				errs = append(errs, fmt.Errorf("ovs-vswitchd left tap %q behind; deleting it", tap))
				netlink.LinkDel(l)
			}
		}
		for _, port := range o.ports {
			if l, err := netlink.LinkByName(port); err == nil && l.Attrs().Xdp != nil && l.Attrs().Xdp.Attached {
				errs = append(errs, fmt.Errorf("ovs-vswitchd left an XDP program on %q", port))
			}
		}
		return nil
	})
	if o.dirIsOwned {
		os.RemoveAll(o.dir)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stopping Open vSwitch in namespace %s: %w", o.netns, err)
	}
	return nil
}

// connections asks ovs-vswitchd how many connections its userspace
// tracker holds.
func (o *ovsInstance) connections(ctx context.Context) (int, error) {
	out, err := o.run(ctx, "ovs-appctl", "-t", o.path("ovs-vswitchd.ctl"), "dpctl/ct-get-nconns")
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		return 0, fmt.Errorf("ovs-appctl dpctl/ct-get-nconns printed %q, not a number", out)
	}
	return n, nil
}

// vsctl runs ovs-vsctl on the private database.
func (o *ovsInstance) vsctl(ctx context.Context, args ...string) (string, error) {
	return o.vsctlWithin(ctx, ovsReadyTimeout, args...)
}

// vsctlWithin runs ovs-vsctl on the private database, waiting at most
// timeout for the server and for the switch daemon to apply the change.
func (o *ovsInstance) vsctlWithin(ctx context.Context, timeout time.Duration, args ...string) (string, error) {
	return o.run(ctx, "ovs-vsctl", append([]string{"--db=unix:" + o.path("db.sock"), fmt.Sprintf("--timeout=%.0f", timeout.Seconds())}, args...)...)
}

// run runs an OVS program in the private environment and returns its
// standard output without the final newline.
func (o *ovsInstance) run(ctx context.Context, prog string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Env = o.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", prog, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSuffix(stdout.String(), "\n"), nil
}

// startDaemon runs prog in the foreground of a process of its own, with
// its pidfile, control socket and log in the private directory.
func (o *ovsInstance) startDaemon(prog string, args ...string) (*daemon, error) {
	args = append(args,
		"--pidfile="+o.path(prog+".pid"),
		"--unixctl="+o.path(prog+".ctl"),
		"--log-file="+o.path(prog+".log"),
		"-vconsole:off")
	cmd := exec.Command(prog, args...)
	cmd.Env = o.env
	// In a process group of its own, Ctrl-C in the terminal reaches only
	// the bench, which then takes the bridge down before stopping OVS.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", prog, err)
	}
	d := &daemon{name: prog, cmd: cmd, exited: make(chan struct{})}
	go func() {
		d.err = cmd.Wait()
		close(d.exited)
	}()
	return d, nil
}

// logTail returns the last warnings and errors of prog's log, for error
// messages.
func (o *ovsInstance) logTail(prog string) string {
	log, err := os.ReadFile(o.path(prog + ".log"))
	if err != nil {
		return ""
	}
	var lines []string
	for line := range strings.SplitSeq(string(log), "\n") {
		if strings.Contains(line, "|WARN|") || strings.Contains(line, "|ERR|") || strings.Contains(line, "|EMER|") {
			lines = append(lines, line)
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return "\n" + prog + " log:\n" + strings.Join(lines[max(0, len(lines)-10):], "\n")
}

// daemon is an OVS program the bench started and must end.
type daemon struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // of Wait, once exited is closed
}

func (d *daemon) hasExited() bool {
	select {
	case <-d.exited:
		return true
	default:
		return false
	}
}

// stop ends the process: SIGTERM, then SIGKILL if it has not exited after
// ovsStopTimeout.
func (d *daemon) stop() error {
	if d.hasExited() {
		return fmt.Errorf("%s (pid %d) had exited: %v", d.name, d.cmd.Process.Pid, d.err)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
		return nil
	case <-time.After(ovsStopTimeout):
	}
	d.cmd.Process.Kill()
	<-d.exited
	return fmt.Errorf("%s (pid %d) ignored SIGTERM for %v and was killed", d.name, d.cmd.Process.Pid, ovsStopTimeout)
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
