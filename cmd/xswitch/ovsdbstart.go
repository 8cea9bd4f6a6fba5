package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// The files of ovsdb-start in its directory.
const (
	ovsdbFile    = "conf.db"
	ovsdbSocket  = "db.sock"
	ovsdbPidFile = "ovsdb-server.pid"
	ovsdbLogFile = "ovsdb-server.log"
	ovsdbCtl     = "ovsdb-server.ctl"
)

func (c *cli) ovsdbStartCommand() *cobra.Command {
	var dir, schema string
	cmd := &cobra.Command{
		Use:   "ovsdb-start",
		Short: "Start an OVSDB server with an Open_vSwitch database for xswitch daemon --ovsdb",
		Long: `Start ovsdb-server (from openvswitch-common) in the background on the database
DIR/conf.db, which it first creates from Open vSwitch's schema when it is
missing, and print its socket, unix:DIR/db.sock: then

  xswitch daemon --ovsdb unix:DIR/db.sock
  ovs-vsctl --db=unix:DIR/db.sock add-br br0

A server already running for DIR (its pid in DIR/ovsdb-server.pid) is left
as it is. Its log is DIR/ovsdb-server.log; "ovs-appctl -t DIR/ovsdb-server.ctl
exit" stops it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			sock, err := startOVSDB(dir, schema)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), sock)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "/var/lib/xswitch/ovsdb", "the directory of the database, its socket, pid file and log")
	cmd.Flags().StringVar(&schema, "schema", "/usr/share/openvswitch/vswitch.ovsschema", "the Open_vSwitch schema the database is created from")
	return cmd
}

// startOVSDB starts the server for dir unless it runs, and returns its
// socket as --ovsdb takes it.
func startOVSDB(dir, schema string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	sock := "unix:" + filepath.Join(dir, ovsdbSocket)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	if serverRunning(filepath.Join(dir, ovsdbPidFile)) {
		return sock, nil
	}
	db := filepath.Join(dir, ovsdbFile)
	if _, err := os.Stat(db); errors.Is(err, fs.ErrNotExist) {
		if err := runTool("ovsdb-tool", "create", db, schema); err != nil {
			return "", err
		}
	}
	if err := runTool("ovsdb-server", db, "--remote=punix:"+filepath.Join(dir, ovsdbSocket),
		"--pidfile="+filepath.Join(dir, ovsdbPidFile), "--log-file="+filepath.Join(dir, ovsdbLogFile),
		"--unixctl="+filepath.Join(dir, ovsdbCtl), "--no-chdir", "--detach"); err != nil {
		return "", err
	}
	// The Open_vSwitch row, which ovs-vswitchd's start-up script makes too.
	if err := runTool("ovs-vsctl", "--db="+sock, "--no-wait", "init"); err != nil {
		return "", err
	}
	return sock, nil
}

// serverRunning says whether the pid file names a live process.
func serverRunning(pidFile string) bool {
	data, err := os.ReadFile(pidFile)
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	return err == nil && pid > 0 && syscall.Kill(pid, 0) == nil
}

func runTool(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
