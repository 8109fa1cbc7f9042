package s3test

import (
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// FaultMode is what a Fault proxy does with the requests it gets.
type FaultMode int

const (
	Pass     FaultMode = iota // forward to the store
	SlowDown                  // answer 503 SlowDown, as S3 throttling
	Internal                  // answer 500 InternalError
	Hang                      // hold the request until the mode changes, then answer 503
)

// Fault is an HTTP proxy in front of a Store that injects the failures of
// a remote object store: 503 SlowDown, 500, and requests that hang. Point
// the client at Endpoint; Set switches the mode for every request from
// then on (and releases hung ones), SetFor for the requests a predicate
// picks (the others pass).
type Fault struct {
	Endpoint string

	refused atomic.Int64 // requests answered with a fault

	mu      sync.Mutex
	mode    FaultMode                // guarded by mu
	match   func(*http.Request) bool // guarded by mu: the requests mode applies to; nil: all
	changed chan struct{}            // guarded by mu: closed and replaced at each Set
	held    map[*http.Request]bool   // guarded by mu: requests hanging
}

// Refused is how many requests the proxy answered with a fault.
func (f *Fault) Refused() int64 { return f.refused.Load() }

// Held lists the requests hanging, as "METHOD /path", sorted.
func (f *Fault) Held() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for r := range f.held {
		out = append(out, r.Method+" "+r.URL.Path)
	}
	slices.Sort(out)
	return out
}

// hold keeps r hanging until the mode changes or its client gives up,
// and reports whether the mode changed.
func (f *Fault) hold(r *http.Request, changed chan struct{}) bool {
	f.mu.Lock()
	f.held[r] = true
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.held, r)
		f.mu.Unlock()
	}()
	select {
	case <-changed:
		return true
	case <-r.Context().Done():
		return false
	}
}

// Faulty starts a Fault proxy in front of s on a free loopback port,
// passing requests through; the test's cleanup stops it.
func (s *Store) Faulty(tb testing.TB) *Fault { return s.FaultyAt(tb, "127.0.0.1:0") }

// FaultyAt is Faulty listening on addr.
func (s *Store) FaultyAt(tb testing.TB, addr string) *Fault {
	tb.Helper()
	target, err := url.Parse(s.Endpoint)
	if err != nil {
		tb.Fatal(err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	f := &Fault{Endpoint: "http://" + l.Addr().String(), changed: make(chan struct{}), held: map[*http.Request]bool{}}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		if r.Context().Err() == nil { // a client giving up is not news
			log.Printf("s3test: fault proxy: %v", err)
		}
		w.WriteHeader(http.StatusBadGateway)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		mode, changed := f.mode, f.changed
		if f.match != nil && !f.match(r) {
			mode = Pass
		}
		f.mu.Unlock()
		switch mode {
		case Pass:
			proxy.ServeHTTP(w, r)
			return
		}
		f.refused.Add(1)
		switch mode {
		case Hang:
			if !f.hold(r, changed) {
				return
			}
			fallthrough
		case SlowDown:
			s3Error(w, http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
		case Internal:
			s3Error(w, http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again.")
		}
	})}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(l)
	}()
	tb.Cleanup(func() {
		f.Set(Pass) // release hung requests
		srv.Close()
		<-served
	})
	return f
}

// Set switches the proxy to mode, for every request.
func (f *Fault) Set(mode FaultMode) { f.SetFor(mode, nil) }

// SetFor switches the proxy to mode for the requests match picks (nil:
// all); the others pass.
func (f *Fault) SetFor(mode FaultMode, match func(*http.Request) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mode, f.match = mode, match
	close(f.changed)
	f.changed = make(chan struct{})
}

// s3Error answers an S3 error document.
func s3Error(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>` + code + `</Code><Message>` + msg + `</Message></Error>`))
}
