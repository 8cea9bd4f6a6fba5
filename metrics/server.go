package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Path is where the server answers scrapes.
const Path = "/metrics"

const (
	// A scrape takes the daemon's verb lock and asks every forwarder a
	// question; a handful at a time is plenty for any set of scrapers and
	// keeps a scrape storm from queuing up behind the lock.
	maxScrapesInFlight = 4
	scrapeTimeout      = 10 * time.Second
	readHeaderTimeout  = 5 * time.Second
	writeTimeout       = scrapeTimeout + 5*time.Second
	idleTimeout        = time.Minute
)

// NewRegistry returns a registry holding src's metrics and the standard Go
// runtime and process collectors.
func NewRegistry(src Source) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		NewCollector(src),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

// Options configure a metrics server.
type Options struct {
	Addr   string // host:port to listen on; port 0 picks a free one
	Source Source
	Log    *slog.Logger // nil: slog.Default()
}

// Server serves Prometheus scrapes over HTTP.
type Server struct {
	http   *http.Server
	ln     net.Listener
	served chan struct{}
}

// Start listens on opts.Addr and serves scrapes at Path until Shutdown.
// It binds before it returns, so that an address in use is the caller's
// error rather than a log line.
func Start(opts Options) (*Server, error) {
	log := opts.Log
	if log == nil {
		log = slog.Default()
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("metrics endpoint: %w", err)
	}
	reg := NewRegistry(opts.Source)
	handler := promhttp.InstrumentMetricHandler(reg, promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:            slog.NewLogLogger(log.Handler(), slog.LevelError),
		Registry:            reg,
		MaxRequestsInFlight: maxScrapesInFlight,
		Timeout:             scrapeTimeout,
	}))
	mux := http.NewServeMux()
	mux.Handle(Path, handler)
	limited := newConnLimiter(ln, maxConnections)
	s := &Server{
		http: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: readHeaderTimeout,
			WriteTimeout:      writeTimeout,
			IdleTimeout:       idleTimeout,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
			ConnState:         limited.connState,
		},
		ln:     limited,
		served: make(chan struct{}),
	}
	go func() {
		defer close(s.served)
		if err := s.http.Serve(limited); !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Shutdown stops accepting scrapes and waits, until ctx is done, for those
// in progress to finish.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.http.Shutdown(ctx)
	if err != nil {
		s.http.Close()
	}
	<-s.served
	return err
}
