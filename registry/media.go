package registry

import (
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Media types, as Confluent's resources declare them (Versions): every
// answer is in the one of those it produces that the request's Accept
// ranks highest (its q first, then Confluent's own preference, the
// order of produced); an Accept that takes none of them is Jersey's 406.
// A body in a type it does not consume is Jersey's 415; a body without a
// Content-Type is application/octet-stream, which it consumes.
var (
	produced = []string{contentType, "application/vnd.schemaregistry+json", "application/json"}
	consumed = []string{contentType, "application/vnd.schemaregistry+json", "application/json", "application/octet-stream"}
)

// negotiate sets the answer's Content-Type from the request's Accept, or
// returns Confluent's 406 or 415.
func negotiate(w http.ResponseWriter, req *http.Request) *apiError {
	if ct := req.Header.Get("Content-Type"); ct != "" && req.ContentLength != 0 {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || !slices.Contains(consumed, mt) {
			return errf(415, 415, "HTTP 415 Unsupported Media Type")
		}
	}
	best, bestQ := "", 0.0
	for _, t := range produced {
		if q := acceptQ(req.Header.Values("Accept"), t); q > bestQ {
			best, bestQ = t, q
		}
	}
	if best == "" {
		return errf(406, 406, "HTTP 406 Not Acceptable")
	}
	w.Header().Set("Content-Type", best)
	return nil
}

// acceptQ is the quality the Accept header values give media type t:
// that of the most specific range that matches it (1 without a header).
func acceptQ(accept []string, t string) float64 {
	if len(accept) == 0 {
		return 1
	}
	typ, _, _ := strings.Cut(t, "/")
	q, specific := 0.0, -1
	for _, v := range accept {
		for _, r := range strings.Split(v, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(r))
			if err != nil {
				continue
			}
			s := -1
			switch {
			case mt == t:
				s = 2
			case mt == typ+"/*":
				s = 1
			case mt == "*/*":
				s = 0
			}
			if s <= specific {
				continue
			}
			rq := 1.0
			if p, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(p, 64); err == nil {
					rq = f
				}
			}
			q, specific = rq, s
		}
	}
	return q
}
