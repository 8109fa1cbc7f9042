// Package httpapi is the broker's HTTP listener (samsa.http.listener):
// Prometheus metrics at /metrics, and the web console at / with the JSON
// API under /api/ that it calls. The console's API is a Kafka client of
// the broker itself (internal/admin, over franz-go's kadm), so it goes
// through the same handlers, and the same authorization, as any other
// client; its Schemas page reads the schema registry's REST API, passed
// in as a handler, with the console user's credentials. Of the project's packages it imports internal/admin only
// (api.go, login.go) and clientmetrics (the Clients page's data), as
// internal/archtest checks.
package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/samsa-io/samsa/clientmetrics"
)

// Config is what Start needs.
type Config struct {
	// Addr is host:port to listen on (port 0: any).
	Addr string
	// Gatherer is what /metrics exposes.
	Gatherer prometheus.Gatherer
	// Bootstrap is the Kafka address (host:port) the console's client
	// dials: the broker's own listener.
	Bootstrap string
	// SASLMechanism, when set, is the Bootstrap listener's SASL mechanism
	// (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512): the console then asks its
	// users to log in (HTTP Basic) and talks to Kafka as each of them
	// (login.go).
	SASLMechanism string
	// Clients, when set, lists the client instances that pushed their
	// metrics to this broker (KIP-714), for the console's Clients page.
	Clients func() []clientmetrics.ClientView
	// Registry, when set, is the schema registry's REST API, which the
	// console's Schemas page reads (GET only) under /api/registry/.
	Registry http.Handler
	// Pprof also serves net/http/pprof's profiles at /debug/pprof/
	// (samsa.http.pprof).
	Pprof  bool
	Logger *slog.Logger
}

// Server is a running HTTP listener.
type Server struct {
	cfg  Config
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
	api  *api
}

// Start listens on cfg.Addr and serves until Close.
func Start(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, ln: ln, done: make(chan struct{}), api: newAPI(cfg.Bootstrap, cfg.SASLMechanism, cfg.Logger)}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
	}))
	if cfg.Pprof {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	s.api.clients = cfg.Clients
	s.api.routes(mux)
	mux.Handle("GET /api/registry/", s.api.requireLogin(registryReads(cfg.Registry)))
	mux.Handle("GET /", s.api.requireLogin(consoleHandler()))
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			cfg.Logger.Warn("http listener stopped", "err", err)
		}
	}()
	return s, nil
}

// registryReads serves the registry's reads under /api/registry/, or a
// 404 when the broker serves no registry.
func registryReads(reg http.Handler) http.Handler {
	if reg == nil {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			writeError(w, http.StatusNotFound, errors.New("this broker serves no schema registry (samsa.schema.registry.listener)"))
		})
	}
	return http.StripPrefix("/api/registry", reg)
}

// Addr is the bound address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the listener, waits up to 5 s for requests in flight, and
// closes the console's Kafka client.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, s.srv.Close())
	}
	<-s.done
	s.api.close()
	return err
}
