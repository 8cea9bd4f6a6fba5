package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/xswitch/xswitch/control"
	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/internal/sdnotify"
	"github.com/xswitch/xswitch/metrics"
	"github.com/xswitch/xswitch/ofagent"
	vswitch "github.com/xswitch/xswitch/switch"
)

// metricsShutdown bounds how long a stopping daemon waits for scrapes in
// progress.
const metricsShutdown = 5 * time.Second

func (c *cli) daemonCommand() *cobra.Command {
	opts := daemonOptions{}
	var background bool
	cmd := &cobra.Command{
		Use:   "daemon",
		Short: "Run the switch in the foreground",
		Long: `Run the switch in the foreground. It restores the bridges and ports saved in
--db, then serves clients on --sock until SIGTERM or SIGINT, when it closes
every port (detaching its XDP program) and exits. SIGHUP is logged and
ignored: there is nothing to reload.

With --ovsdb it takes its bridges and ports from the Open_vSwitch database
of an OVSDB server, as ovs-vswitchd does: ovs-vsctl configures them, and
the verbs that would change them refuse ("xswitch ovsdb-start" starts a
server). The rest, flows included, is as without it.

It is ready once it serves: it tells systemd so (sd_notify READY=1, for a
Type=notify unit), and with --detach it runs in the background and the
command returns then, as ovs-vswitchd --detach does. A script that starts
the daemon otherwise waits with "xswitch wait-ready".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkSizes(opts.control.Bridge); err != nil {
				return err
			}
			if background {
				return detach(withoutDetach(os.Args[1:]))
			}
			parent, err := parentWaiting()
			if err != nil {
				return err
			}
			opts.socket = c.socket
			err = startDaemon(cmd.Context(), opts, parent)
			parent.failed(err) // nothing once ready
			return err
		},
	}
	f := cmd.Flags()
	f.BoolVar(&background, "detach", false, "run in the background; return once the daemon serves, or with its start-up error")
	f.StringVar(&opts.pidFile, "pidfile", "", "write the daemon's pid to this file once it serves (removed when it stops)")
	f.StringVar(&opts.logFile, "log-file", "", "append the log to this file instead of standard error (with --detach the log is lost without it)")
	f.StringVar(&opts.control.DBPath, "db", control.DefaultDB, "where the configuration is kept")
	f.StringVar(&opts.control.OVSDB, "ovsdb", "", "follow the Open_vSwitch database of this OVSDB server (unix:PATH or tcp:IP:PORT) as ovs-vswitchd does: ovs-vsctl then configures the bridges and ports")
	f.IntVar(&opts.control.Bridge.CacheSize, "flow-cache-size", vswitch.DefaultCacheSize, "flows in each forwarding thread's exact-match cache of decisions")
	f.StringVar(&opts.logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&opts.logLevel, "log-level", "info", "least severe level logged: debug, info, warn or error")
	f.StringVar(&opts.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://ADDR"+metrics.Path+" (host:port); off when empty")
	f.IntVar(&opts.control.Bridge.MACTableSize, "mac-table-size", vswitch.DefaultMACTableSize, "learned addresses each bridge holds at most")
	f.Var((*cpuList)(&opts.control.Bridge.CPUs), "cpus", "one forwarding thread per bridge on each of these CPUs, as taskset -c lists them (1 or 0,2-3); one thread on any CPU when empty")
	opts.control.Bridge.FastPath = true
	f.Var((*fastPathFlag)(&opts.control.Bridge.FastPath), "fast-path", "carry the flows the XDP program can in the kernel (auto), or every frame in user space (off)")
	f.BoolVar(&opts.control.Bridge.BusyPoll, "busy-poll", false, "forwarding threads poll their rings when idle instead of sleeping: lowest latency, a whole CPU each")
	return cmd
}

// checkSizes refuses tuning flags that size nothing.
func checkSizes(o vswitch.Options) error {
	for _, f := range []struct {
		flag string
		n    int
	}{{"--flow-cache-size", o.CacheSize}, {"--mac-table-size", o.MACTableSize}} {
		if f.n < 1 {
			return fmt.Errorf("%s %d: must be at least 1", f.flag, f.n)
		}
	}
	return nil
}

// cpuList is a flag holding a CPU list in taskset -c syntax.
type cpuList []int

func (l *cpuList) String() string {
	parts := make([]string, len(*l))
	for i, cpu := range *l {
		parts[i] = strconv.Itoa(cpu)
	}
	return strings.Join(parts, ",")
}

// fastPathFlag is --fast-path: auto (the fast path where a port allows
// it) or off.
type fastPathFlag bool

func (f *fastPathFlag) String() string {
	if *f {
		return "auto"
	}
	return "off"
}

func (f *fastPathFlag) Set(s string) error {
	switch s {
	case "auto":
		*f = true
	case "off":
		*f = false
	default:
		return fmt.Errorf("%q is neither auto nor off", s)
	}
	return nil
}

func (f *fastPathFlag) Type() string { return "auto|off" }

func (l *cpuList) Set(s string) error {
	cpus, err := parseCPUList(s)
	if err != nil {
		return err
	}
	*l = cpus
	return nil
}

func (l *cpuList) Type() string { return "list" }

// parseCPUList parses a comma-separated list of CPU numbers and ranges,
// such as "0,2-3", into ascending CPU numbers without repeats.
func parseCPUList(s string) ([]int, error) {
	var cpus []int
	for item := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(item, "-")
		first, err := strconv.ParseUint(lo, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("CPU list %q: %q is not a CPU number or range", s, item)
		}
		last := first
		if isRange {
			if last, err = strconv.ParseUint(hi, 10, 16); err != nil || last < first {
				return nil, fmt.Errorf("CPU list %q: %q is not a CPU number or range", s, item)
			}
		}
		for cpu := first; cpu <= last; cpu++ {
			cpus = append(cpus, int(cpu))
		}
	}
	slices.Sort(cpus)
	return slices.Compact(cpus), nil
}

type daemonOptions struct {
	socket      string
	metricsAddr string // empty: no metrics endpoint
	pidFile     string // empty: none
	logFormat   string // text or json
	logLevel    string
	logFile     string // empty: standard error
	control     control.Options
	// ready is called once the daemon serves.
	ready func()
}

// startDaemon sets up the daemon's logging and readiness reports, and runs
// it; parent, if not nil, is the daemon --detach waiting for it.
func startDaemon(ctx context.Context, opts daemonOptions, parent *detachedParent) error {
	var logTo io.Writer = os.Stderr
	if opts.logFile != "" {
		f, err := os.OpenFile(opts.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
		if err != nil {
			return fmt.Errorf("--log-file: %w", err)
		}
		defer f.Close()
		logTo = f
	}
	log, err := newLogger(logTo, opts.logFormat, opts.logLevel)
	if err != nil {
		return err
	}
	opts.control.Log = log
	opts.control.Version = buildVersion().Version
	opts.ready = func() {
		if err := sdnotify.Notify(sdnotify.Ready); err != nil {
			log.Warn("telling systemd the daemon is ready", "err", err)
		}
		parent.ready()
	}
	return runDaemon(ctx, opts)
}

// runDaemon serves until ctx is done or a terminating signal arrives.
func runDaemon(ctx context.Context, opts daemonOptions) error {
	log, socket := opts.control.Log, opts.socket
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	defer ignoreHangups(log)()
	ln, err := api.Listen(socket)
	if err != nil {
		return err
	}
	defer os.Remove(socket)
	d, err := control.NewDaemon(opts.control)
	if err != nil {
		ln.Close()
		return err
	}
	var metricsServer *metrics.Server
	if opts.metricsAddr != "" {
		metricsServer, err = metrics.Start(metrics.Options{Addr: opts.metricsAddr, Source: d, Log: log})
		if err != nil {
			ln.Close()
			d.Close()
			return err
		}
		log.Info("serving metrics", "url", "http://"+metricsServer.Addr().String()+metrics.Path)
	}
	if opts.pidFile != "" {
		if err := os.WriteFile(opts.pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			ln.Close()
			d.Close()
			return fmt.Errorf("--pidfile: %w", err)
		}
		defer os.Remove(opts.pidFile)
	}
	// The controllers' connections end before the bridges do (below).
	agent := ofagent.New(d, ofagent.Options{Log: log, Version: buildVersion().Version})
	served := make(chan error, 1)
	go func() { served <- api.Serve(ln, d, log) }()
	log.Info("listening", "socket", socket, "pid", os.Getpid())
	opts.ready()
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err = <-served:
	}
	sdnotify.Notify(sdnotify.Stopping)
	ln.Close()
	// Scrapes read the bridges: they end before the bridges do.
	if metricsServer != nil {
		shutdownCtx, cancel := context.WithTimeout(context.Background(), metricsShutdown)
		if err := metricsServer.Shutdown(shutdownCtx); err != nil {
			log.Warn("metrics server: scrapes cut short", "err", err)
		}
		cancel()
	}
	agent.Close()
	if cerr := d.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("closing: %w", cerr)
	}
	return err
}

// newLogger makes the daemon's structured logger.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("unknown log level %q (want debug, info, warn or error)", level)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("unknown log format %q (want text or json)", format)
}
