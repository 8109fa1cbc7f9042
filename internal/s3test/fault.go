package s3test

import (
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
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
// then on (and releases hung ones).
type Fault struct {
	Endpoint string

	refused atomic.Int64 // requests answered with a fault

	mu      sync.Mutex
	mode    FaultMode     // guarded by mu
	changed chan struct{} // guarded by mu: closed and replaced at each Set
}

// Refused is how many requests the proxy answered with a fault.
func (f *Fault) Refused() int64 { return f.refused.Load() }

// Faulty starts a Fault proxy in front of s, passing requests through;
// the test's cleanup stops it.
func (s *Store) Faulty(tb testing.TB) *Fault {
	tb.Helper()
	target, err := url.Parse(s.Endpoint)
	if err != nil {
		tb.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	f := &Fault{Endpoint: "http://" + l.Addr().String(), changed: make(chan struct{})}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		mode, changed := f.mode, f.changed
		f.mu.Unlock()
		switch mode {
		case Pass:
			proxy.ServeHTTP(w, r)
			return
		}
		f.refused.Add(1)
		switch mode {
		case Hang:
			select {
			case <-changed:
			case <-r.Context().Done():
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

// Set switches the proxy to mode.
func (f *Fault) Set(mode FaultMode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mode = mode
	close(f.changed)
	f.changed = make(chan struct{})
}

// s3Error answers an S3 error document.
func s3Error(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>` + code + `</Code><Message>` + msg + `</Message></Error>`))
}
