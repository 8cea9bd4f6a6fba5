package metrics

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// maxConnections bounds the connections the endpoint holds at once. A few
// scrapers need a few; without a bound, 20,000 idle keep-alive connections
// took every descriptor the daemon had, and its control socket stopped
// answering.
const maxConnections = 64

// connLimiter admits at most max connections at a time. At the limit, a
// new connection takes the place of the one that has waited longest without
// a request in progress (a keep-alive connection between scrapes, or one
// that never sent a request); only when every connection is busy with a
// request is the new one refused. A flood of idle connections thus costs
// the daemon at most max descriptors, and a scraper still gets in.
type connLimiter struct {
	net.Listener
	max int

	mu      sync.Mutex
	waiting map[net.Conn]time.Time // admitted, no request in progress: since when
	busy    map[net.Conn]bool      // admitted, serving a request
}

func newConnLimiter(ln net.Listener, max int) *connLimiter {
	return &connLimiter{Listener: ln, max: max, waiting: map[net.Conn]time.Time{}, busy: map[net.Conn]bool{}}
}

// Accept returns the next connection admitted.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.admit(c) {
			return c, nil
		}
		c.Close()
	}
}

func (l *connLimiter) admit(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.waiting)+len(l.busy) >= l.max {
		var oldest net.Conn
		var since time.Time
		for w, t := range l.waiting {
			if oldest == nil || t.Before(since) {
				oldest, since = w, t
			}
		}
		if oldest == nil {
			return false
		}
		delete(l.waiting, oldest)
		oldest.Close()
	}
	l.waiting[c] = time.Now()
	return true
}

// connState follows the server's connections (http.Server.ConnState).
func (l *connLimiter) connState(c net.Conn, state http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch state {
	case http.StateActive:
		delete(l.waiting, c)
		l.busy[c] = true
	case http.StateIdle:
		delete(l.busy, c)
		l.waiting[c] = time.Now()
	case http.StateClosed, http.StateHijacked:
		delete(l.busy, c)
		delete(l.waiting, c)
	}
}
