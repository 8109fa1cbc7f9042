package s3test

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// FaultMode is what a Fault proxy does with the requests it gets.
type FaultMode int

const (
	Pass     FaultMode = iota // forward to the store
	SlowDown                  // answer 503 SlowDown, as S3 throttling
	Internal                  // answer 500 InternalError
	Hang                      // hold the request until the mode changes, then answer 503
	// Throttle forwards the request, passing its body and the response's
	// at most SetRate's bytes per second each.
	Throttle
	// CutHalfway reads the first half of the request's body (by its
	// Content-Length), then drops the connection without an answer: an
	// upload that fails half way.
	CutHalfway
)

// Fault is an HTTP proxy in front of a Store that injects the failures of
// a remote object store: 503 SlowDown, 500, and requests that hang. Point
// the client at Endpoint; Set switches the mode for every request from
// then on (and releases hung ones), SetFor for the requests a predicate
// picks (the others pass). It can also throttle the bodies and cut an
// upload half way.
type Fault struct {
	Endpoint string
	bucket   string // the store's

	refused atomic.Int64 // requests answered with a fault
	rate    atomic.Int64 // Throttle's bytes per second

	mu      sync.Mutex
	mode    FaultMode                // guarded by mu
	match   func(*http.Request) bool // guarded by mu: the requests mode applies to; nil: all
	changed chan struct{}            // guarded by mu: closed and replaced at each Set
	held    map[*http.Request]bool   // guarded by mu: requests hanging
}

// SetRate sets the bytes per second Throttle passes of a request's
// body and of its response's (each); it applies to requests under way.
func (f *Fault) SetRate(bytesPerSecond int64) { f.rate.Store(max(bytesPerSecond, 1)) }

// Refused is how many requests the proxy answered with a fault (or cut).
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
	f := &Fault{Endpoint: "http://" + l.Addr().String(), bucket: s.Bucket, changed: make(chan struct{}), held: map[*http.Request]bool{}}
	f.SetRate(64 << 10)
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
		case Throttle:
			if r.Body != nil {
				r.Body = &slowBody{ReadCloser: r.Body, pace: f.pace(r)}
			}
			proxy.ServeHTTP(&slowWriter{ResponseWriter: w, pace: f.pace(r)}, r)
			return
		}
		f.refused.Add(1)
		switch mode {
		case CutHalfway:
			cut(w, r)
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

// cut reads the first half of r's body, then closes its connection.
func cut(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > 0 {
		_, _ = io.CopyN(io.Discard, r.Body, r.ContentLength/2)
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // the server drops the connection
	}
	conn.Close()
}

// pacer spreads the bytes of one body over time at a Fault's rate.
type pacer struct {
	f     *Fault
	ctx   context.Context
	start time.Time
	sent  time.Duration // the time the bytes passed so far take at the rate
}

func (f *Fault) pace(r *http.Request) *pacer {
	return &pacer{f: f, ctx: r.Context(), start: time.Now()}
}

// chunk is how many of n bytes to pass at once: a tenth of a second's.
func (p *pacer) chunk(n int) int { return max(1, min(n, int(p.f.rate.Load()/10))) }

// wait accounts n bytes passed and holds until the rate allows them, or
// the request ends.
func (p *pacer) wait(n int) {
	p.sent += time.Duration(n) * time.Second / time.Duration(p.f.rate.Load())
	t := time.NewTimer(time.Until(p.start.Add(p.sent)))
	defer t.Stop()
	select {
	case <-t.C:
	case <-p.ctx.Done():
	}
}

// slowBody is a request body read at a pacer's rate.
type slowBody struct {
	io.ReadCloser
	pace *pacer
}

func (b *slowBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p[:b.pace.chunk(len(p))])
	b.pace.wait(n)
	return n, err
}

// slowWriter is a response written at a pacer's rate.
type slowWriter struct {
	http.ResponseWriter
	pace *pacer
}

func (w *slowWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		n, err := w.ResponseWriter.Write(p[:w.pace.chunk(len(p))])
		written += n
		if err != nil {
			return written, err
		}
		w.pace.wait(n)
		p = p[n:]
	}
	return written, nil
}

func (w *slowWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
