package metrics

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// serveLimited serves handler on loopback behind a connLimiter of max.
func serveLimited(t *testing.T, max int, handler http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	limited := newConnLimiter(ln, max)
	srv := &http.Server{Handler: handler, ConnState: limited.connState}
	go srv.Serve(limited)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// get sends one keep-alive request on c and reads the answer's status.
func get(t *testing.T, c net.Conn) string {
	t.Helper()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return err.Error()
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err.Error()
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.Status
}

// closedByServer reports whether the server has closed c.
func closedByServer(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err := c.Read(make([]byte, 1))
	return err == io.EOF || (err != nil && !strings.Contains(err.Error(), "timeout"))
}

func TestConnLimiterEvictsTheLongestIdle(t *testing.T) {
	addr := serveLimited(t, 4, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	var conns []net.Conn
	for range 4 {
		c := dial(t, addr)
		if status := get(t, c); status != "200 OK" {
			t.Fatalf("a scrape within the limit: %s", status)
		}
		conns = append(conns, c)
		time.Sleep(10 * time.Millisecond) // an order of idleness
	}
	newcomer := dial(t, addr)
	if status := get(t, newcomer); status != "200 OK" {
		t.Fatalf("a scrape past the limit of idle connections: %s, want it admitted", status)
	}
	if !closedByServer(conns[0]) {
		t.Error("the longest-idle connection is still open after a newcomer past the limit")
	}
	for i, c := range conns[1:] {
		if status := get(t, c); status != "200 OK" {
			t.Errorf("idle connection %d, not the longest idle, lost: %s", i+1, status)
		}
	}
}

func TestConnLimiterRefusesWhenAllAreBusy(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{}, 4)
	addr := serveLimited(t, 4, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-release
	}))
	for range 4 {
		c := dial(t, addr)
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		<-started
	}
	if refused := dial(t, addr); !closedByServer(refused) {
		t.Error("a fifth connection with four requests in progress was not refused")
	}
}
