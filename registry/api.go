package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
)

// contentType is Confluent's media type, on every answer.
const contentType = "application/vnd.schemaregistry.v1+json"

// apiError is an answer of Confluent's: an HTTP status, an error code and
// a message.
type apiError struct {
	status, code int
	msg          string
}

func (e *apiError) Error() string { return e.msg }

func errf(status, code int, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, msg: fmt.Sprintf(format, args...)}
}

func errSubjectNotFound(s string) *apiError {
	return errf(404, 40401, "Subject '%s' not found.", s)
}
func errVersionNotFound(v int) *apiError   { return errf(404, 40402, "Version %d not found.", v) }
func errSchemaNotFound() *apiError         { return errf(404, 40403, "Schema not found") }
func errSchemaIDNotFound(id int) *apiError { return errf(404, 40403, "Schema %d not found", id) }
func errInvalid(err error) *apiError {
	return errf(422, 42201, "Invalid schema: %s", strings.TrimPrefix(err.Error(), errInvalidSchema.Error()+": "))
}
func errNotPermitted(format string, args ...any) *apiError {
	return errf(422, 42205, format, args...)
}

// handlerFunc answers one request with a value to encode, or an error.
type handlerFunc func(w http.ResponseWriter, req *http.Request) (any, error)

// rawBody is an answer written as it is (a schema's text).
type rawBody string

// noContent is an answer of 204 No Content.
type noContent struct{}

// route is one path's handlers by method.
type route map[string]handlerFunc

func (r *Registry) routes() *http.ServeMux {
	mux := http.NewServeMux()
	add := func(pattern string, rt route) {
		for method := range rt {
			r.declared = append(r.declared, method+" "+pattern)
		}
		mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			code := 0
			defer func() { r.observe(req.Method, pattern, code) }()
			method := req.Method
			h := rt[method]
			if h == nil && method == http.MethodHead {
				method, h = http.MethodGet, rt[http.MethodGet]
			}
			if h == nil {
				code = 405
				writeError(w, errf(405, 405, "HTTP 405 Method Not Allowed"))
				return
			}
			if err := r.authorize(req, method, pattern); err != nil {
				ae := r.apiErr(err)
				code = ae.code
				writeError(w, ae)
				return
			}
			defer func() {
				if p := recover(); p != nil {
					// A bug of ours or of a parser's: the request fails,
					// the broker goes on.
					r.log.Error("schema registry: handler panicked", "method", req.Method, "path", req.URL.Path, "panic", p)
					code = 50001
					writeError(w, errf(500, 50001, "Internal error"))
				}
			}()
			var written int64
			req = req.WithContext(context.WithValue(req.Context(), writtenKey{}, &written))
			v, err := h(w, req)
			if err != nil {
				ae := r.apiErr(err)
				code = ae.code
				writeError(w, ae)
				return
			}
			if _, ok := v.(forwarded); ok {
				return
			}
			if _, ok := v.(noContent); ok {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			if written > 0 {
				w.Header().Set(offsetHeader, strconv.FormatInt(written, 10))
			}
			writeValue(w, 200, v)
		}))
	}
	add("/{$}", route{"GET": func(http.ResponseWriter, *http.Request) (any, error) { return struct{}{}, nil }})
	add("/subjects", route{"GET": r.listSubjects})
	w := r.forwarding
	add("/subjects/{subject}", route{"POST": r.lookupSchema, "DELETE": w(r.deleteSubject)})
	add("/subjects/{subject}/versions", route{"GET": r.listVersions, "POST": w(r.register)})
	add("/subjects/{subject}/versions/{version}", route{"GET": r.getVersion, "DELETE": w(r.deleteVersion)})
	add("/subjects/{subject}/versions/{version}/schema", route{"GET": r.getVersionSchema})
	add("/subjects/{subject}/versions/{version}/referencedby", route{"GET": r.referencedBy})
	add("/schemas", route{"GET": r.listSchemas})
	add("/schemas/types", route{"GET": func(http.ResponseWriter, *http.Request) (any, error) { return supportedTypes, nil }})
	add("/schemas/ids/{id}", route{"GET": r.getSchemaByID})
	add("/schemas/ids/{id}/schema", route{"GET": r.getSchemaByIDText})
	add("/schemas/ids/{id}/versions", route{"GET": r.getIDVersions})
	add("/schemas/ids/{id}/subjects", route{"GET": r.getIDSubjects})
	add("/schemas/guids/{guid}", route{"GET": r.getSchemaByGUID})
	add("/schemas/guids/{guid}/ids", route{"GET": r.getGUIDIDs})
	add("/config", route{"GET": r.getConfig, "PUT": w(r.putConfig), "DELETE": w(r.deleteConfig)})
	add("/config/{subject}", route{"GET": r.getConfig, "PUT": w(r.putConfig), "DELETE": w(r.deleteConfig)})
	add("/mode", route{"GET": r.getMode, "PUT": w(r.putMode)})
	add("/mode/{subject}", route{"GET": r.getMode, "PUT": w(r.putMode), "DELETE": w(r.deleteMode)})
	add("/compatibility/subjects/{subject}/versions/{version}", route{"POST": r.checkCompatibility})
	add("/compatibility/subjects/{subject}/versions", route{"POST": r.checkCompatibility})
	add("/contexts", route{"GET": r.listContexts})
	add("/contexts/{context}", route{"DELETE": w(r.deleteContext)})
	// Associations (a topic's subjects, named by Confluent's "associated"
	// subject name strategy) are not kept: none is ever found, as
	// Confluent answers when there is none, and the serializers fall back
	// to their strategy.
	none := route{"GET": func(http.ResponseWriter, *http.Request) (any, error) { return []struct{}{}, nil }}
	add("/associations/subjects/{subject}", none)
	add("/associations/resources/{namespace}/{name}", none)
	add("/associations/resources/{id}", none)
	return mux
}

// ServeHTTP answers the REST API: bodies bounded, unknown paths Confluent's
// 404, every answer in Confluent's media type.
func (r *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Body != nil {
		req.Body = http.MaxBytesReader(w, req.Body, r.cfg.MaxBodyBytes)
	}
	if req = r.authenticate(w, req); req == nil {
		return
	}
	if err := negotiate(w, req); err != nil {
		r.observe(req.Method, "", err.code)
		writeError(w, err)
		return
	}
	if err := contextURL(req.URL); err != nil {
		r.observe(req.Method, "", err.code)
		writeError(w, err)
		return
	}
	if _, pattern := r.mux.Handler(req); pattern == "" {
		r.observe(req.Method, "", 404)
		writeError(w, errf(404, 404, "HTTP 404 Not Found"))
		return
	}
	r.mux.ServeHTTP(w, req)
}

func (r *Registry) observe(method, route string, code int) {
	if r.cfg.Observe != nil {
		r.cfg.Observe(method, route, code)
	}
}

// apiErr maps an error to Confluent's answer.
func (r *Registry) apiErr(err error) *apiError {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, errNotWriter):
		return errf(500, 50003, "Error while forwarding the request to the leader: %v", err)
	case errors.Is(err, errStoreTimeout):
		return errf(500, 50002, "%v", err)
	case errors.Is(err, errInvalidSchema):
		return errInvalid(err)
	}
	r.log.Debug("schema registry: store error", "err", err)
	return errf(500, 50001, "Error in the backend data store: %v", err)
}

// writeValue writes an answer in the media type negotiated (negotiate),
// else Confluent's own.
func writeValue(w http.ResponseWriter, status int, v any) {
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", contentType)
	}
	w.WriteHeader(status)
	if s, ok := v.(rawBody); ok {
		io.WriteString(w, string(s))
		return
	}
	w.Write(marshal(v))
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeValue(w, e.status, struct {
		Code int    `json:"error_code"`
		Msg  string `json:"message"`
	}{e.code, e.msg})
}

// decodeBody reads a JSON body into v, a pointer to a struct, as
// Confluent's Jackson reads it: an empty body leaves v as it is; a number
// or a boolean where a string goes is its text, and a string of digits
// where a number goes is that number (Jackson's scalar coercion); any
// other mismatch is a JsonMappingException, 400.
func decodeBody(req *http.Request, v any) error {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return bodyError(err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	err = json.NewDecoder(bytes.NewReader(coerceScalars(body, v))).Decode(v)
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &typeErr):
		return errf(400, 400, "Cannot deserialize value of field %q: %v", typeErr.Field, err)
	}
	return bodyError(err)
}

// coerceScalars returns body, a JSON object, with each top-level field of
// v (a pointer to a struct) that is a string or an int given as a scalar
// of the other kind converted as Jackson coerces it; any other body as it
// is.
func coerceScalars(body []byte, v any) []byte {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return body
	}
	t := reflect.TypeOf(v).Elem()
	changed := false
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		raw, ok := fields[name]
		if !ok || len(raw) == 0 {
			continue
		}
		kind := f.Type.Kind()
		if kind == reflect.Pointer {
			kind = f.Type.Elem().Kind()
		}
		switch c := raw[0]; {
		case kind == reflect.String && (c == '-' || c == 't' || c == 'f' || ('0' <= c && c <= '9')):
			fields[name], changed = marshal(string(raw)), true
		case kind == reflect.Int && c == '"':
			var s string
			if json.Unmarshal(raw, &s) == nil {
				if _, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32); err == nil {
					fields[name], changed = json.RawMessage(strings.TrimSpace(s)), true
				}
			}
		}
	}
	if !changed {
		return body
	}
	return marshal(fields)
}

// bodyError is the answer to a body that could not be read or parsed.
func bodyError(err error) *apiError {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return errf(413, 413, "Request body is larger than %d bytes", tooLarge.Limit)
	}
	return errf(400, 400, "Malformed JSON: %v", err)
}

// queryBool reads a boolean query parameter in any case (normalize=False).
func queryBool(req *http.Request, name string) bool {
	return strings.EqualFold(strings.TrimSpace(req.URL.Query().Get(name)), "true")
}

// latestVersion is how "latest" (and -1) is kept once parsed.
const latestVersion = -1

// parseVersion reads a version path segment: 1 to 2^31-1, "latest" or -1.
func parseVersion(s string) (int, error) {
	if strings.EqualFold(strings.TrimSpace(s), "latest") {
		return latestVersion, nil
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || (n < 1 && n != latestVersion) {
		return 0, errf(422, 42202, "The specified version '%s' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\"", s)
	}
	return int(n), nil
}

// pathSubject returns the subject of the path, checked as Confluent
// checks it.
func pathSubject(req *http.Request) (string, error) {
	s := req.PathValue("subject")
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", errf(422, 42208, "The specified subject '%s' is not a valid.", s)
	}
	return normalSubject(s), nil
}

// pathID reads the id of /schemas/ids/{id}.
func pathID(req *http.Request) (int, error) {
	n, err := strconv.ParseInt(req.PathValue("id"), 10, 32)
	if err != nil {
		return 0, errf(404, 40403, "Schema %s not found", req.PathValue("id"))
	}
	return int(n), nil
}

// rawJSON drops a JSON null.
func rawJSON(m json.RawMessage) json.RawMessage {
	if len(m) == 0 || string(m) == "null" {
		return nil
	}
	return m
}

// queryInt reads an integer query parameter, or def.
func queryInt(req *http.Request, name string, def int) int {
	n, err := strconv.Atoi(req.URL.Query().Get(name))
	if err != nil {
		return def
	}
	return n
}
