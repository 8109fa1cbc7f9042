package registry

import (
	"context"
	"net"
	"net/http"
)

// Authentication and authorization, as Confluent's Schema Registry
// answers them: a request without valid HTTP basic credentials (when
// Config.Authenticate is set) gets 401 {"error_code":401,"message":
// "Unauthorized"} and a WWW-Authenticate challenge; a request whose
// principal may not make its operation (when Config.Authorize is set)
// gets 403 with 40301, "User is denied operation Write on Subject: s".
//
// Each route declares what it needs (accessOf), in the operations of
// Confluent's security plugin: SUBJECT_READ, SUBJECT_WRITE, SUBJECT_DELETE,
// SUBJECT_COMPATIBILITY_READ and _WRITE on the path's subject, their
// GLOBAL_ forms on the registry as a whole; lists (GET /subjects,
// /schemas, an id's subjects) answer only the subjects the principal may
// read, and a schema by id or GUID is answered when it may read one of the
// subjects the id is registered under (Confluent's SCHEMA_READ). A route
// without a declaration is refused (TestEveryRouteDeclaresAccess).

// Op is an operation a request makes, as Config.Authorize is asked
// about it.
type Op int

// The operations, named as Confluent's RBAC names them.
const (
	OpRead        Op = iota // read a subject's schemas, look a schema up
	OpWrite                 // register a schema, check one's compatibility
	OpDelete                // delete versions or the subject
	OpReadConfig            // read the compatibility level or the mode
	OpWriteConfig           // set or delete the compatibility level or the mode
)

func (o Op) String() string {
	return [...]string{"Read", "Write", "Delete", "ReadCompatibility", "AlterCompatibility"}[o]
}

// access is what a route needs.
type access struct {
	op      Op
	subject bool // op on the path's subject; else on the registry as a whole
	open    bool // any authenticated principal
	listed  bool // the handler answers only what the principal may read
}

var (
	subjectRead    = access{op: OpRead, subject: true}
	subjectWrite   = access{op: OpWrite, subject: true}
	subjectDelete  = access{op: OpDelete, subject: true}
	subjectConfig  = access{op: OpReadConfig, subject: true}
	subjectAlter   = access{op: OpWriteConfig, subject: true}
	globalConfig   = access{op: OpReadConfig}
	globalAlter    = access{op: OpWriteConfig}
	openToAll      = access{open: true}
	readableListed = access{op: OpRead, listed: true}
)

// accessOf declares, per "METHOD pattern", what a request needs.
var accessOf = map[string]access{
	"GET /{$}":                                                openToAll,
	"GET /subjects":                                           readableListed,
	"POST /subjects/{subject}":                                subjectRead,
	"DELETE /subjects/{subject}":                              subjectDelete,
	"GET /subjects/{subject}/versions":                        subjectRead,
	"POST /subjects/{subject}/versions":                       subjectWrite,
	"GET /subjects/{subject}/versions/{version}":              subjectRead,
	"DELETE /subjects/{subject}/versions/{version}":           subjectDelete,
	"GET /subjects/{subject}/versions/{version}/schema":       subjectRead,
	"GET /subjects/{subject}/versions/{version}/referencedby": subjectRead,
	"GET /schemas":                                            readableListed,
	"GET /schemas/types":                                      openToAll,
	"GET /schemas/ids/{id}":                                   readableListed,
	"GET /schemas/ids/{id}/schema":                            readableListed,
	"GET /schemas/ids/{id}/versions":                          readableListed,
	"GET /schemas/ids/{id}/subjects":                          readableListed,
	"GET /schemas/guids/{guid}":                               readableListed,
	"GET /schemas/guids/{guid}/ids":                           readableListed,
	"GET /config":                                             globalConfig,
	"PUT /config":                                             globalAlter,
	"DELETE /config":                                          globalAlter,
	"GET /config/{subject}":                                   subjectConfig,
	"PUT /config/{subject}":                                   subjectAlter,
	"DELETE /config/{subject}":                                subjectAlter,
	"GET /mode":                                               globalConfig,
	"PUT /mode":                                               globalAlter,
	"GET /mode/{subject}":                                     subjectConfig,
	"PUT /mode/{subject}":                                     subjectAlter,
	"DELETE /mode/{subject}":                                  subjectAlter,
	"POST /compatibility/subjects/{subject}/versions/{version}": subjectWrite,
	"POST /compatibility/subjects/{subject}/versions":           subjectWrite,
	"GET /contexts":                                  openToAll,
	"DELETE /contexts/{context}":                     globalAlter,
	"GET /associations/subjects/{subject}":           subjectRead,
	"GET /associations/resources/{namespace}/{name}": readableListed,
	"GET /associations/resources/{id}":               readableListed,
}

// principalKey is the context key of a request's authenticated
// principal.
type principalKey struct{}

// authenticate checks a request's basic credentials when the registry
// authenticates, and returns the request with its principal; nil after
// answering 401 (or 500 when the credentials could not be checked).
func (r *Registry) authenticate(w http.ResponseWriter, req *http.Request) *http.Request {
	if r.cfg.Authenticate == nil {
		return req
	}
	user, password, ok := req.BasicAuth()
	principal := ""
	var err error
	if ok {
		principal, ok, err = r.cfg.Authenticate(req.Context(), user, password)
	}
	switch {
	case err != nil:
		r.log.Warn("schema registry: checking credentials failed", "user", user, "err", err)
		r.observe(req.Method, "", 50001)
		writeError(w, errf(500, 50001, "Error checking credentials"))
		return nil
	case !ok:
		r.observe(req.Method, "", 401)
		w.Header().Set("WWW-Authenticate", `Basic realm="SchemaRegistry"`)
		writeError(w, errf(401, 401, "Unauthorized"))
		return nil
	}
	return req.WithContext(context.WithValue(req.Context(), principalKey{}, principal))
}

// authorize checks what the route (method and pattern) needs.
func (r *Registry) authorize(req *http.Request, method, pattern string) error {
	a, ok := accessOf[method+" "+pattern]
	switch {
	case !ok:
		return errf(403, 40301, "User is denied operation %s %s", method, pattern)
	case a.open, a.listed:
		return nil
	case a.subject:
		subject, err := pathSubject(req)
		if err != nil {
			return err
		}
		if !r.allowed(req, a.op, subject) {
			return errf(403, 40301, "User is denied operation %s on Subject: %s", a.op, subject)
		}
	case !r.allowed(req, a.op, ""):
		return errf(403, 40301, "User is denied operation Global%s on the schema registry", a.op)
	}
	return nil
}

// allowed reports whether the request's principal may make op on
// subject ("": on the registry as a whole).
func (r *Registry) allowed(req *http.Request, op Op, subject string) bool {
	if r.cfg.Authorize == nil {
		return true
	}
	principal, _ := req.Context().Value(principalKey{}).(string)
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		host = req.RemoteAddr
	}
	return r.cfg.Authorize(principal, host, op, subject)
}

// readable returns whether the request's principal may read a subject.
func (r *Registry) readable(req *http.Request) func(subject string) bool {
	return func(subject string) bool { return r.allowed(req, OpRead, subject) }
}
