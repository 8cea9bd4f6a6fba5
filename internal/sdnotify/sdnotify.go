// Package sdnotify tells systemd how a Type=notify service is doing, by
// the sd_notify(3) protocol: one datagram of "KEY=value" lines to the unix
// socket that $NOTIFY_SOCKET names. It is a few lines, so it is written
// here rather than taken from go-systemd.
package sdnotify

import (
	"net"
	"os"
)

// The states xswitch reports.
const (
	Ready    = "READY=1"
	Stopping = "STOPPING=1"
)

// Notify sends state to the service manager. It does nothing, and
// succeeds, when there is none ($NOTIFY_SOCKET unset): a daemon started
// by hand.
func Notify(state string) error {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return nil
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte(state))
	return err
}
