package registry

import (
	"net/http"
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
)

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

// contexts lists the contexts that have subjects, the default one
// always, sorted; the caller holds s.mu.
func (s *State) contexts() []string {
	out := []string{defaultContext}
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
