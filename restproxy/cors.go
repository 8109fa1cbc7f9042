package restproxy

// Cross-origin requests, as Confluent's proxy answers them: rest-utils
// puts Jetty's CrossOriginFilter in front of the API when
// access.control.allow.origin is set, with access.control.allow.methods
// and access.control.allow.headers when those are, and answers preflight
// requests itself (chainPreflight false), before authentication. A
// request from an origin the list does not name gets no CORS headers,
// and the browser keeps the answer from the page.

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
)

// CORS is the cross-origin configuration (Confluent's property names).
type CORS struct {
	// AllowOrigin is access.control.allow.origin: origins, comma
	// separated, "*" any, "*" inside an origin any characters; "" turns
	// CORS off.
	AllowOrigin string
	// AllowMethods is access.control.allow.methods; "" is Jetty's
	// default, GET,POST,HEAD.
	AllowMethods string
	// AllowHeaders is access.control.allow.headers; "" is Jetty's
	// default, X-Requested-With,Content-Type,Accept,Origin.
	AllowHeaders string
}

// Jetty's CrossOriginFilter defaults.
const (
	corsDefaultMethods = "GET,POST,HEAD"
	corsDefaultHeaders = "X-Requested-With,Content-Type,Accept,Origin"
	corsMaxAge         = "1800"
)

// corsFilter is a CORS configuration, parsed.
type corsFilter struct {
	anyOrigin  bool
	origins    []string
	patterns   []*regexp.Regexp
	methods    []string
	headers    []string // lower case
	anyHeader  bool
	allowMeths string // the Access-Control-Allow-Methods answer
	allowHdrs  string // the Access-Control-Allow-Headers answer
}

// commaList splits a comma-separated list, trimmed, without empties.
func commaList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// newCORSFilter is nil when c turns CORS off.
func newCORSFilter(c CORS) *corsFilter {
	if strings.TrimSpace(c.AllowOrigin) == "" {
		return nil
	}
	f := &corsFilter{}
	for _, o := range commaList(c.AllowOrigin) {
		switch {
		case o == "*":
			f.anyOrigin = true
		case strings.Contains(o, "*"):
			parts := strings.Split(o, "*")
			for i := range parts {
				parts[i] = regexp.QuoteMeta(parts[i])
			}
			f.patterns = append(f.patterns, regexp.MustCompile("^"+strings.Join(parts, ".*")+"$"))
		default:
			f.origins = append(f.origins, o)
		}
	}
	methods, headers := c.AllowMethods, c.AllowHeaders
	if strings.TrimSpace(methods) == "" {
		methods = corsDefaultMethods
	}
	if strings.TrimSpace(headers) == "" {
		headers = corsDefaultHeaders
	}
	f.methods = commaList(methods)
	f.allowMeths = strings.Join(f.methods, ",")
	hs := commaList(headers)
	f.allowHdrs = strings.Join(hs, ",")
	for _, h := range hs {
		f.anyHeader = f.anyHeader || h == "*"
		f.headers = append(f.headers, strings.ToLower(h))
	}
	return f
}

func (f *corsFilter) originAllowed(origin string) bool {
	if f.anyOrigin || slices.Contains(f.origins, origin) {
		return true
	}
	return slices.ContainsFunc(f.patterns, func(re *regexp.Regexp) bool { return re.MatchString(origin) })
}

// headersAllowed reports whether every header a preflight names is
// allowed.
func (f *corsFilter) headersAllowed(requested string) bool {
	if f.anyHeader {
		return true
	}
	for _, h := range commaList(requested) {
		if !slices.Contains(f.headers, strings.ToLower(h)) {
			return false
		}
	}
	return true
}

// wrap answers preflight requests of allowed origins and adds the CORS
// headers to the answers to their other requests.
func (f *corsFilter) wrap(next http.Handler) http.Handler {
	if f == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" || !f.originAllowed(origin) {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		reqMethod := r.Header.Get("Access-Control-Request-Method")
		if r.Method != http.MethodOptions || reqMethod == "" {
			f.allow(h, origin)
			next.ServeHTTP(w, r)
			return
		}
		// A preflight: answered here, allowing or not.
		if slices.Contains(f.methods, reqMethod) && f.headersAllowed(r.Header.Get("Access-Control-Request-Headers")) {
			f.allow(h, origin)
			h.Set("Access-Control-Max-Age", corsMaxAge)
			h.Set("Access-Control-Allow-Methods", f.allowMeths)
			allowHdrs := f.allowHdrs
			if f.anyHeader {
				allowHdrs = r.Header.Get("Access-Control-Request-Headers")
			}
			h.Set("Access-Control-Allow-Headers", allowHdrs)
		}
		w.WriteHeader(http.StatusOK)
	})
}

// allow sets the headers that let origin read an answer.
func (f *corsFilter) allow(h http.Header, origin string) {
	h.Set("Access-Control-Allow-Origin", origin)
	if !f.anyOrigin {
		h.Add("Vary", "Origin")
	}
	h.Set("Access-Control-Allow-Credentials", "true")
}
