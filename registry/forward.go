package registry

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// forwardedHeader marks a request one registry forwarded to another, which
// answers it itself or fails: a request is forwarded once at most.
const forwardedHeader = "X-Samsa-Registry-Forwarded"

// offsetHeader carries, on the writer's answer to a write, the offset
// after its records; the forwarding registry waits until it has applied
// them, so that its client reads its own write there too.
const offsetHeader = "X-Samsa-Registry-Offset"

// writtenKey is the context key of a request's *int64 that write sets to
// the offset after its records.
type writtenKey struct{}

// forwarded is what a handler returns once it wrote the answer the writer
// gave.
type forwarded struct{}

// forwarding wraps a handler that writes: where this broker is not the
// writer, the request goes, as it came, to the registry that is (as
// Confluent's followers forward to their leader), and its answer back.
func (r *Registry) forwarding(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, req *http.Request) (any, error) {
		if _, err := r.rt.Get(0); err == nil || r.cfg.Leader == nil || req.Header.Get(forwardedHeader) != "" {
			return h(w, req)
		}
		return r.forward(w, req)
	}
}

func (r *Registry) forward(w http.ResponseWriter, req *http.Request) (any, error) {
	leader, err := r.cfg.Leader(req.Context())
	if err != nil {
		return nil, errf(500, 50004, "Leader not known: %v", err)
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, bodyError(err)
	}
	out, err := http.NewRequestWithContext(req.Context(), req.Method, leader+req.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, errf(500, 50003, "Error while forwarding the request to the leader: %v", err)
	}
	for _, h := range []string{"Content-Type", "Accept", "Authorization"} {
		if v := req.Header.Get(h); v != "" {
			out.Header.Set(h, v)
		}
	}
	out.Header.Set(forwardedHeader, "1")
	resp, err := r.cfg.Client.Do(out)
	if err != nil {
		return nil, errf(500, 50003, "Error while forwarding the request to the leader: %v", err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, r.cfg.MaxBodyBytes))
	if err != nil {
		return nil, errf(500, 50003, "Error while forwarding the request to the leader: %v", err)
	}
	if off, err := strconv.ParseInt(resp.Header.Get(offsetHeader), 10, 64); err == nil {
		ctx, cancel := context.WithTimeout(req.Context(), r.cfg.WriteTimeout)
		err = r.waitApplied(ctx, off)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("%w: reading the leader's write back: %v", errStoreTimeout, err)
		}
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(answer)
	return forwarded{}, nil
}
