package sdnotify

import (
	"net"
	"path/filepath"
	"testing"
	"time"
)

func listen(t *testing.T, name string) *net.UnixConn {
	t.Helper()
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func receive(t *testing.T, c *net.UnixConn) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 256)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return string(buf[:n])
}

func TestNotifySendsTheState(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notify")
	c := listen(t, path)
	t.Setenv("NOTIFY_SOCKET", path)
	if err := Notify(Ready); err != nil {
		t.Fatal(err)
	}
	if got := receive(t, c); got != "READY=1" {
		t.Errorf("received %q, want READY=1", got)
	}
}

func TestNotifyToAnAbstractSocket(t *testing.T) {
	name := "xswitch-sdnotify-test-" + time.Now().Format("150405.000000000")
	c := listen(t, "@"+name)
	t.Setenv("NOTIFY_SOCKET", "@"+name)
	if err := Notify(Stopping); err != nil {
		t.Fatal(err)
	}
	if got := receive(t, c); got != "STOPPING=1" {
		t.Errorf("received %q, want STOPPING=1", got)
	}
}

func TestNotifyWithoutAManager(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	if err := Notify(Ready); err != nil {
		t.Errorf("Notify without $NOTIFY_SOCKET: %v, want nothing done", err)
	}
}
