package main

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// ignoreHangups keeps SIGHUP, which ends a Go program by default, from
// stopping the daemon: a `kill -HUP` sent out of habit, or the hangup of
// the terminal it was started from, must not take the switch down. There
// is nothing to reload, since every change arrives through the CLI and is
// applied at once, so the signal is only logged. The returned function
// stops that.
func ignoreHangups(log *slog.Logger) (stop func()) {
	hangups := make(chan os.Signal, 1)
	signal.Notify(hangups, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-hangups:
				log.Info("SIGHUP ignored: nothing to reload; configuration changes go through the CLI")
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(hangups)
		close(done)
	}
}
