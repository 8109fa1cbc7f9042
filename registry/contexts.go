package registry

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Contexts, as Confluent's registry has them: a subject qualified as
// ":.ctx:name" is in context ".ctx", any other in the default context
// "." (":.:name" is "name"). Each context has ids of its own: an id names
// a schema within one context, and a schema registered in two contexts
// may have two ids. Records in _schemas carry the qualified subject, as
// Confluent's do. GET /subjects lists every context's subjects (its
// default prefix is Confluent's wildcard ":*:"); a prefix ":*:p" lists
// the subjects named p... in every context; GET /schemas/ids/{id} looks
// in the context of its ?subject= (the default context without one).

const (
	defaultContext  = "."
	contextWildcard = ":*:"
	// globalContext holds the settings of every context without its own
	// (Confluent's ":.__GLOBAL:").
	globalContext = ":.__GLOBAL:"
)

// scopes are the keys of the configs and modes a subject's setting is
// looked up under, in order, as Confluent's registry looks: the subject's
// own; its context's (":.ctx:"), or for the default context the global
// one (""); then the __GLOBAL context's. A setting of the default
// context does not reach the subjects of another.
func scopes(subject string) []string {
	top := ""
	if ctx := contextOf(subject); ctx != defaultContext {
		top = ":" + ctx + ":"
	}
	return []string{subject, top, globalContext}
}

// contextURL rewrites a request under /contexts/{context}/ as Confluent's
// registry does (its ContextFilter) before routing it: the path segment
// after "subjects" (anywhere) or after a leading "config" or "mode" gets
// the context's prefix (":.ctx:") unless it names a context already; a
// bare /config or /mode becomes the context's own (/config/:.ctx:);
// /schemas/ids/... gets ?subject=:.ctx:, and /subjects and /schemas each
// subjectPrefix prefixed (":.ctx:" without one). The default context
// (".", ":.:") adds nothing. A context name with a colon is Confluent's
// 400.
func contextURL(u *url.URL) *apiError {
	path := strings.TrimRight(strings.TrimPrefix(u.EscapedPath(), "/"), "/")
	if !strings.HasPrefix(path, "contexts/") {
		return nil
	}
	ctx := defaultContext
	var prefix string // the context's subject prefix, once known
	var out []string
	first, ctxNext, subjectNext, configOrMode := true, false, false, false
	for _, seg := range strings.Split(path, "/") {
		switch {
		case ctxNext:
			c, err := url.PathUnescape(seg)
			if err != nil {
				return errf(400, 400, "Invalid context %q", seg)
			}
			ctx, ctxNext = c, false
			var bad *apiError
			if prefix, bad = contextPrefix(ctx); bad != nil {
				return bad
			}
			continue
		case first && seg == "contexts":
			ctxNext = true
			continue
		case subjectNext:
			if !namesContext(seg) {
				seg = prefix + seg
			}
			subjectNext = false
		default:
			root := first && (seg == "config" || seg == "mode")
			subjectNext = seg == "subjects" || root
			configOrMode = configOrMode || root
		}
		out = append(out, seg)
		if seg != "" {
			first = false
		}
	}
	switch {
	case configOrMode && subjectNext:
		if prefix != "" {
			out = append(out, prefix)
		}
	case ctxNext:
		out = append(out, "contexts")
	case len(out) == 0 && prefix != "":
		out = []string{"contexts", prefix}
	}
	raw := "/" + strings.Join(out, "/")
	p, err := url.PathUnescape(raw)
	if err != nil {
		return errf(400, 400, "Invalid path %q", raw)
	}
	u.Path, u.RawPath = p, raw
	q := u.Query()
	switch rest := strings.Join(out, "/"); {
	case strings.HasPrefix(rest, "schemas/ids"):
		if subject := q.Get("subject"); !namesContext(subject) {
			q.Set("subject", prefix+subject)
		}
	case rest == "schemas" || rest == "subjects":
		prefixes := q["subjectPrefix"]
		if len(prefixes) == 0 {
			prefixes = []string{""}
		}
		for i, p := range prefixes {
			if !namesContext(p) {
				prefixes[i] = prefix + p
			}
		}
		q["subjectPrefix"] = prefixes
	default:
		return nil
	}
	u.RawQuery = q.Encode()
	return nil
}

// contextPrefix is the subject prefix of a context named as in a
// /contexts/{context} path (".ctx", "ctx" or ":.ctx:"; "" for the default
// context), or Confluent's 400 for a name with a colon.
func contextPrefix(ctx string) (string, *apiError) {
	ctx = strings.TrimSuffix(strings.TrimPrefix(ctx, ":"), ":")
	if strings.Contains(ctx, ":") {
		return "", errf(400, 400, "Context name '%s' cannot contain a colon", ctx)
	}
	if !strings.HasPrefix(ctx, ".") {
		ctx = "." + ctx
	}
	if ctx == defaultContext {
		return "", nil
	}
	return ":" + ctx + ":", nil
}

// namesContext reports whether a path segment or query value (escaped or
// not) starts with a context (":.ctx:") or the wildcard (":*:").
func namesContext(s string) bool {
	if u, err := url.PathUnescape(s); err == nil {
		s = u
	}
	return strings.HasPrefix(s, ":.") || strings.HasPrefix(s, contextWildcard)
}

// ctxID is an id within its context.
type ctxID struct {
	ctx string
	id  int
}

// SplitSubject returns a subject's context and its name within it.
func SplitSubject(subject string) (ctx, name string) {
	rest, ok := strings.CutPrefix(subject, ":.")
	if !ok {
		return defaultContext, subject
	}
	c, n, found := strings.Cut(rest, ":")
	if !found {
		return "." + rest, ""
	}
	return "." + c, n
}

// contextOf is a subject's context.
func contextOf(subject string) string {
	ctx, _ := SplitSubject(subject)
	return ctx
}

// normalSubject is a subject as it is kept: qualified unless it is in the
// default context.
func normalSubject(subject string) string {
	ctx, name := SplitSubject(subject)
	if ctx == defaultContext {
		return name
	}
	return subject
}

// queryContext is the context of the request's ?subject=, or the default
// context.
func queryContext(req *http.Request) string {
	return contextOf(req.URL.Query().Get("subject"))
}

// subjectMatches reports whether a subject is listed under prefix, as
// Confluent's subjectPrefix lists: ":*:p" matches the names starting with
// p in every context, any other prefix the subjects starting with it.
func subjectMatches(subject, prefix string) bool {
	if p, ok := strings.CutPrefix(prefix, contextWildcard); ok {
		_, name := SplitSubject(subject)
		return strings.HasPrefix(name, p)
	}
	return strings.HasPrefix(subject, prefix)
}

// contexts lists the contexts of CONTEXT records and those that have
// subjects, the default one always, sorted; the caller holds s.mu.
func (s *State) contexts() []string {
	out := []string{defaultContext}
	for ctx := range s.ctxs {
		if !slices.Contains(out, ctx) {
			out = append(out, ctx)
		}
	}
	for subject := range s.subjects {
		if ctx := contextOf(subject); !slices.Contains(out, ctx) {
			out = append(out, ctx)
		}
	}
	slices.Sort(out)
	return out
}

func (r *Registry) listContexts(http.ResponseWriter, *http.Request) (any, error) {
	r.state.mu.RLock()
	defer r.state.mu.RUnlock()
	return r.state.contexts(), nil
}

// deleteContext (DELETE /contexts/{context}, Confluent 8.x) removes an
// empty context's CONTEXT record: one with subjects, soft-deleted ones
// too, is Confluent's 42211.
func (r *Registry) deleteContext(_ http.ResponseWriter, req *http.Request) (any, error) {
	raw := req.PathValue("context")
	ctx := contextOf(raw)
	if !strings.HasPrefix(raw, ":") {
		prefix, bad := contextPrefix(raw)
		if bad != nil {
			return nil, bad
		}
		ctx = contextOf(prefix)
	}
	err := r.write(req.Context(), func() ([]Record, error) {
		s := r.state
		s.mu.RLock()
		defer s.mu.RUnlock()
		for subject := range s.subjects {
			if contextOf(subject) == ctx {
				return nil, errf(422, 42211, "The specified context '%s' is not empty.", qualifiedContext(ctx))
			}
		}
		if ctx == defaultContext {
			return nil, nil
		}
		return []Record{contextTombstone(ctx)}, nil
	})
	if err != nil {
		return nil, err
	}
	return noContent{}, nil
}

// qualifiedContext is a context as a subject prefix names it (":.ctx:").
func qualifiedContext(ctx string) string {
	if ctx == defaultContext {
		return ""
	}
	return ":" + ctx + ":"
}
