package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/xswitch/xswitch/control"
	"github.com/xswitch/xswitch/flow"
	vswitch "github.com/xswitch/xswitch/switch"
)

func (c *cli) daemonCommand() *cobra.Command {
	opts := control.Options{}
	var logFormat, logLevel string
	cmd := &cobra.Command{
		Use:   "daemon",
		Short: "Run the switch in the foreground",
		Long: `Run the switch in the foreground. It restores the bridges and ports saved in
--db, then serves clients on --sock until SIGTERM or SIGINT, when it closes
every port (detaching its XDP program) and exits.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			log, err := newLogger(os.Stderr, logFormat, logLevel)
			if err != nil {
				return err
			}
			opts.Log = log
			return runDaemon(cmd.Context(), c.socket, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.DBPath, "db", control.DefaultDB, "where the configuration is kept")
	f.IntVar(&opts.Bridge.CacheSize, "flow-cache-size", flow.DefaultCacheSize, "entries in each bridge's exact-match flow cache")
	f.StringVar(&logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&logLevel, "log-level", "info", "least severe level logged: debug, info, warn or error")
	f.IntVar(&opts.Bridge.MACTableSize, "mac-table-size", vswitch.DefaultMACTableSize, "learned addresses each bridge holds at most")
	return cmd
}

// runDaemon serves until ctx is done or a terminating signal arrives.
func runDaemon(ctx context.Context, socket string, opts control.Options) error {
	log := opts.Log
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ln, err := control.Listen(socket)
	if err != nil {
		return err
	}
	defer os.Remove(socket)
	d, err := control.NewDaemon(opts)
	if err != nil {
		ln.Close()
		return err
	}
	served := make(chan error, 1)
	go func() { served <- d.Serve(ln) }()
	log.Info("listening", "socket", socket, "pid", os.Getpid())
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err = <-served:
	}
	ln.Close()
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
