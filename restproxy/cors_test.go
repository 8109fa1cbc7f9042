package restproxy_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/samsa-io/samsa/restproxy"
)

// TestCORSAsJetty: the CORS answers are Jetty's CrossOriginFilter's as
// rest-utils configures it: a preflight of an allowed origin, method and
// headers answered 200 with the allowed lists and the origin echoed
// (credentials allowed, max age 1800), one of a disallowed origin, method
// or header answered without them; other requests of an allowed origin
// get the origin and credentials headers, others none; no
// access.control.allow.origin, no CORS at all.
func TestCORSAsJetty(t *testing.T) {
	t.Parallel()
	const page = "http://app.example.com:3000"
	preflight := func(origin, method, headers string) *http.Request {
		r := httptest.NewRequest(http.MethodOptions, "/topics/t", nil)
		r.Header.Set("Origin", origin)
		r.Header.Set("Access-Control-Request-Method", method)
		if headers != "" {
			r.Header.Set("Access-Control-Request-Headers", headers)
		}
		return r
	}
	get := func(origin string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/nowhere", nil)
		r.Header.Set("Origin", origin)
		return r
	}
	allowed := map[string]string{
		"Access-Control-Allow-Origin": page, "Access-Control-Allow-Credentials": "true", "Vary": "Origin",
		"Access-Control-Max-Age": "1800", "Access-Control-Allow-Methods": "GET,POST,DELETE",
		"Access-Control-Allow-Headers": "Content-Type,Accept,Authorization",
	}
	simple := map[string]string{"Access-Control-Allow-Origin": page, "Access-Control-Allow-Credentials": "true", "Vary": "Origin"}
	custom := restproxy.CORS{AllowOrigin: "http://other.org, " + page, AllowMethods: "GET,POST,DELETE", AllowHeaders: "Content-Type,Accept,Authorization"}
	for _, c := range []struct {
		name   string
		cors   restproxy.CORS
		req    *http.Request
		status int
		want   map[string]string // the CORS headers, all of them
	}{
		{"preflight", custom, preflight(page, "POST", "content-type,authorization"), 200, allowed},
		{"preflight of another origin", custom, preflight("http://evil.example.com", "POST", "content-type"), 405, nil},
		{"preflight of another method", custom, preflight(page, "PUT", ""), 200, nil},
		{"preflight of another header", custom, preflight(page, "POST", "content-type,x-secret"), 200, nil},
		{"request", custom, get(page), 404, simple},
		{"request of another origin", custom, get("http://evil.example.com"), 404, nil},
		{"no CORS", restproxy.CORS{}, preflight(page, "GET", ""), 405, nil},
		{"defaults", restproxy.CORS{AllowOrigin: "http://*.example.com:3000"}, preflight(page, "HEAD", "Accept,X-Requested-With"), 200,
			map[string]string{"Access-Control-Allow-Origin": page, "Access-Control-Allow-Credentials": "true", "Vary": "Origin", "Access-Control-Max-Age": "1800",
				"Access-Control-Allow-Methods": "GET,POST,HEAD", "Access-Control-Allow-Headers": "X-Requested-With,Content-Type,Accept,Origin"}},
		{"a pattern is not a prefix", restproxy.CORS{AllowOrigin: "http://*.example.com"}, get(page), 404, nil},
		{"any origin, any header", restproxy.CORS{AllowOrigin: "*", AllowHeaders: "*"}, preflight(page, "GET", "X-Anything"), 200,
			map[string]string{"Access-Control-Allow-Origin": page, "Access-Control-Allow-Credentials": "true", "Access-Control-Max-Age": "1800",
				"Access-Control-Allow-Methods": "GET,POST,HEAD", "Access-Control-Allow-Headers": "X-Anything"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := restproxy.New(restproxy.Config{CORS: c.cors})
			defer p.Close()
			w := httptest.NewRecorder()
			p.Handler().ServeHTTP(w, c.req)
			if w.Code != c.status {
				t.Errorf("status %d, want %d", w.Code, c.status)
			}
			for _, h := range []string{"Access-Control-Allow-Origin", "Access-Control-Allow-Credentials", "Vary", "Access-Control-Max-Age", "Access-Control-Allow-Methods", "Access-Control-Allow-Headers"} {
				if got := w.Header().Get(h); got != c.want[h] {
					t.Errorf("%s: %q, want %q", h, got, c.want[h])
				}
			}
		})
	}
}
