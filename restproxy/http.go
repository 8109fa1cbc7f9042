package restproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The media types of v2 (Confluent's Versions).
const (
	mediaV2     = "application/vnd.kafka.v2+json"
	mediaJSON   = "application/json"
	mediaLegacy = "application/vnd.kafka+json"
)

// restError is an answer of Confluent's: an HTTP status, an error code
// and a message.
type restError struct {
	status, code int
	msg          string
}

func (e *restError) Error() string { return e.msg }

func errf(status, code int, format string, args ...any) *restError {
	return &restError{status: status, code: code, msg: fmt.Sprintf(format, args...)}
}

// Confluent's errors (kafka-rest's Errors and rest-utils' mappers).
var (
	errNotFound          = errf(404, 404, "HTTP 404 Not Found")
	errMethodNotAllowed  = errf(405, 405, "HTTP 405 Method Not Allowed")
	errNotAcceptable     = errf(406, 406, "HTTP 406 Not Acceptable")
	errUnsupportedMedia  = errf(415, 415, "HTTP 415 Unsupported Media Type")
	errTopicNotFound     = errf(404, 40401, "Topic not found.")
	errPartitionNotFound = errf(404, 40402, "Partition not found.")
	errInstanceNotFound  = errf(404, 40403, "Consumer instance not found.")
	errFormatMismatch    = errf(406, 40601, "The requested embedded data format does not match the deserializer for this consumer instance")
	errInstanceExists    = errf(409, 40902, "Consumer with specified consumer ID already exists in the specified consumer group.")
	errLoginRequired     = errf(401, 401, "Unauthorized")
)

func errIllegalState(format string, args ...any) *restError {
	return errf(409, 40903, "Illegal state: "+format, args...)
}

// errUnprocessable is a request body that parses but breaks the
// entity's constraints (Jackson's mapping errors: 422).
func errUnprocessable(format string, args ...any) *restError {
	return errf(422, 422, format, args...)
}

// kafkaErr maps an error of a Kafka call to Confluent's answer, as
// rest-utils' KafkaExceptionMapper does.
func kafkaErr(err error) *restError {
	var re *restError
	if errors.As(err, &re) {
		return re
	}
	msg := err.Error()
	var ke *kerr.Error
	if errors.As(err, &ke) {
		msg = ke.Description
	}
	switch {
	case errors.Is(err, errLogin):
		return errLoginRequired
	case errors.Is(err, kerr.SaslAuthenticationFailed), errors.Is(err, kerr.IllegalSaslState), errors.Is(err, kerr.UnsupportedSaslMechanism):
		return errf(401, 40101, "%s", msg)
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.GroupAuthorizationFailed),
		errors.Is(err, kerr.ClusterAuthorizationFailed), errors.Is(err, kerr.TransactionalIDAuthorizationFailed),
		errors.Is(err, kerr.DelegationTokenAuthorizationFailed):
		return errf(403, 40301, "%s", msg)
	case errors.Is(err, kerr.BrokerNotAvailable):
		return errf(503, 50302, "%s", msg)
	case errors.Is(err, kerr.MessageTooLarge): // RecordTooLargeException
		return errf(413, 413, "%s", msg)
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return errf(404, 40403, "%s", msg)
	case errors.Is(err, kerr.InvalidReplicationFactor), errors.Is(err, kerr.SecurityDisabled),
		errors.Is(err, kerr.UnsupportedVersion), errors.Is(err, kerr.InvalidPartitions),
		errors.Is(err, kerr.InvalidRequest), errors.Is(err, kerr.UnknownServerError),
		errors.Is(err, kerr.PolicyViolation), errors.Is(err, kerr.TopicAlreadyExists),
		errors.Is(err, kerr.InvalidConfig), errors.Is(err, kerr.InvalidTopicException):
		return errf(400, 40002, "%s", msg)
	case errors.Is(err, context.DeadlineExceeded), kerr.IsRetriable(err):
		return errf(500, 50003, "%s", msg)
	case ke != nil, errors.Is(err, kgo.ErrClientClosed), errors.Is(err, errClosed):
		return errf(500, 50002, "%s", msg)
	}
	return errf(500, 500, "Internal Server Error")
}

// recordErrCode is the error_code of a record that failed to produce, as
// kafka-rest's produce actions classify the producer's exception.
func recordErrCode(err error) int {
	return kafkaErr(err).code
}

// handlerFunc answers one request with a value to encode (nil: 204), or
// an error.
type handlerFunc func(w http.ResponseWriter, r *http.Request) (any, error)

// route is one path's handlers by method.
type route map[string]handlerFunc

// noContent answers 204 with no body.
type noContent struct{}

func (p *Proxy) routes() *http.ServeMux {
	mux := http.NewServeMux()
	add := func(pattern string, rt route) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			h := rt[r.Method]
			if h == nil && r.Method == http.MethodHead {
				h = rt[http.MethodGet]
			}
			if h == nil {
				writeError(w, errMethodNotAllowed)
				return
			}
			defer func() {
				if v := recover(); v != nil {
					p.log.Error("REST proxy: handler panicked", "method", r.Method, "path", r.URL.Path, "panic", v)
					writeError(w, errf(500, 500, "Internal Server Error"))
				}
			}()
			r.Body = http.MaxBytesReader(w, r.Body, p.cfg.MaxBodyBytes)
			v, err := h(w, r)
			if err != nil {
				re := kafkaErr(err)
				if re.status == 401 {
					p.forget(r)
					if p.cfg.SASLMechanism != "" {
						w.Header().Set("WWW-Authenticate", `Basic realm="samsa REST proxy", charset="UTF-8"`)
					}
				}
				if re.status >= 500 {
					p.log.Debug("REST proxy: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
				}
				writeError(w, re)
				return
			}
			if _, ok := v.(handled); ok {
				return
			}
			if _, ok := v.(noContent); ok {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			writeJSON(w, http.StatusOK, v)
		})
	}
	p.v2Routes(add)
	p.v3Routes(add)
	p.v3AdminRoutes(add)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { writeError(w, errNotFound) })
	return mux
}

// writeJSON writes v with status, as the media type already chosen, or
// v2's.
func writeJSON(w http.ResponseWriter, status int, v any) {
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", mediaV2)
	}
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

func writeError(w http.ResponseWriter, e *restError) {
	writeJSON(w, e.status, struct {
		Code int    `json:"error_code"`
		Msg  string `json:"message"`
	}{e.code, e.msg})
}

// accepts reports whether the request's Accept header takes one of the
// media types offered, and sets the answer's Content-Type to the first
// it takes; a missing Accept takes the first.
func accepts(w http.ResponseWriter, r *http.Request, offered ...string) bool {
	accept := r.Header.Values("Accept")
	if strings.TrimSpace(strings.Join(accept, "")) == "" {
		w.Header().Set("Content-Type", offered[0])
		return true
	}
	best, bestQ := "", 0.0
	for _, h := range accept {
		for _, part := range strings.Split(h, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			q := 1.0
			if s, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(s, 64); err == nil {
					q = f
				}
			}
			if q <= 0 {
				continue
			}
			for _, o := range offered {
				if mediaMatch(mt, o) && q > bestQ {
					best, bestQ = o, q
					break
				}
			}
		}
	}
	if best == "" {
		return false
	}
	w.Header().Set("Content-Type", best)
	return true
}

// mediaMatch reports whether the Accept range rng takes media type mt.
func mediaMatch(rng, mt string) bool {
	if rng == "*/*" || rng == mt {
		return true
	}
	if typ, ok := strings.CutSuffix(rng, "/*"); ok {
		return strings.HasPrefix(mt, typ+"/")
	}
	return false
}

// metadataTypes are the answer types of the requests without embedded
// records.
var metadataTypes = []string{mediaV2, mediaJSON, mediaLegacy}

// requestFormat is the embedded format named by a request's Content-Type
// (application/vnd.kafka.FORMAT.v2+json), "" for v2's own types (no
// embedded format) and ok false for a type v2 does not take.
func requestFormat(r *http.Request) (format string, ok bool) {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return "", true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return "", false
	}
	switch mt {
	case mediaV2, mediaJSON, mediaLegacy, "application/octet-stream":
		return "", true
	}
	rest, ok := strings.CutPrefix(mt, "application/vnd.kafka.")
	if !ok {
		return "", false
	}
	format, ok = strings.CutSuffix(rest, ".v2+json")
	if !ok || !knownFormat(format) {
		return "", false
	}
	return format, true
}

// decodeBody decodes the request's JSON body into v; an empty body
// leaves v as it is when optional (present false).
func decodeBody(r *http.Request, v any, optional bool) (present bool, err error) {
	if _, ok := requestFormat(r); !ok {
		return false, errUnsupportedMedia
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return false, errf(413, 413, "Request body larger than %d bytes", mbe.Limit)
		}
		return false, errf(400, 400, "reading the request body: %v", err)
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		if optional {
			return false, nil
		}
		return false, errUnprocessable("Request body is empty. Data is required.")
	}
	if err := json.Unmarshal(data, v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return true, errf(400, 400, "Unexpected character in JSON at offset %d: %v", se.Offset, err)
		}
		return true, errUnprocessable("%v", err)
	}
	return true, nil
}

// pathInt is an int path value; a non-number is no route (Jersey's 404).
func pathInt(r *http.Request, name string) (int32, error) {
	n, err := strconv.ParseInt(r.PathValue(name), 10, 32)
	if err != nil {
		return 0, errNotFound
	}
	return int32(n), nil
}
