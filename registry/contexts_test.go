package registry

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/poll"
)

// TestContexts: a subject qualified ":.ctx:name" is in a context of its
// own, with ids of its own, as Confluent's registry keeps them.
func TestContexts(t *testing.T) {
	tr := newTestRegistry(t)
	tr.script(t, []step{
		{"POST", "/subjects/s/versions", body(`"string"`), 200, registered(1)},
		// Another context's first schema is its id 1 too.
		{"POST", "/subjects/:.ctx:s/versions", body(`"long"`), 200, registered(1)},
		// The same schema in a third context: its own id 1.
		{"POST", "/subjects/:.other:t/versions", body(`"string"`), 200, registered(1)},
		{"POST", "/subjects/:.ctx:u/versions", body(`"int"`), 200, registered(2)},
		{"POST", "/subjects/u/versions", body(`"int"`), 200, registered(2)},
		{"GET", "/contexts", "", 200, `[".",".ctx",".other"]`},
		{"GET", "/subjects", "", 200, `[":.ctx:s",":.ctx:u",":.other:t","s","u"]`},
		{"GET", "/subjects?subjectPrefix=:.ctx:", "", 200, `[":.ctx:s",":.ctx:u"]`},
		{"GET", "/subjects?subjectPrefix=:*:s", "", 200, `[":.ctx:s","s"]`},
		{"GET", "/subjects?subjectPrefix=s", "", 200, `["s"]`},
		{"GET", "/schemas/ids/1", "", 200, `{` + guidJSON(`"string"`) + `"schema":"\"string\""}`},
		{"GET", "/schemas/ids/1?subject=:.ctx:s", "", 200, `{` + guidJSON(`"long"`) + `"schema":"\"long\""}`},
		{"GET", "/schemas/ids/2/subjects?subject=:.ctx:u", "", 200, `[":.ctx:u"]`},
		// ":.:name" is the default context's name.
		{"GET", "/subjects/:.:s/versions/1", "", 200, `{"subject":"s","version":1,"id":1,` + guidJSON(`"string"`) + `"schema":"\"string\""}`},
		{"GET", "/subjects/:.ctx:s/versions/1", "", 200, `{"subject":":.ctx:s","version":1,"id":1,` + guidJSON(`"long"`) + `"schema":"\"long\""}`},
		// No association is kept: none is found, and the serializers
		// fall back to their subject name strategy.
		{"GET", "/associations/resources/lkc-1/orders?resourceType=topic&associationType=value", "", 200, `[]`},
		{"GET", "/associations/subjects/s", "", 200, `[]`},
	})
	// Stored as Confluent stores it: the subject qualified, and a
	// context's CONTEXT record once, before its first schema.
	written := tr.log.written()
	ctxRecord := `{"keytype":"CONTEXT","tenant":"default","context":".ctx","magic":0} {"tenant":"default","context":".ctx"}`
	at := func(prefix string) []int {
		var out []int
		for i, r := range written {
			if strings.HasPrefix(r, prefix) {
				out = append(out, i)
			}
		}
		return out
	}
	schema := at(`{"keytype":"SCHEMA","subject":":.ctx:s","version":1,"magic":1} {"subject":":.ctx:s","version":1,"id":1,`)
	ctxs := at(ctxRecord)
	if len(schema) != 1 || len(ctxs) != 1 || ctxs[0] != schema[0]-1 || len(at(`{"keytype":"CONTEXT","tenant":"default","context":".other"`)) != 1 {
		t.Errorf("want one CONTEXT record of .ctx just before the SCHEMA record of :.ctx:s, one of .other:\n%s", strings.Join(written, "\n"))
	}
	if n := len(at(`{"keytype":"CONTEXT","tenant":"default","context":"."`)); n != 0 {
		t.Errorf("%d CONTEXT records of the default context", n)
	}
	// A context of Confluent's CONTEXT record alone (its subjects deleted,
	// or written by Confluent's registry) is listed; its tombstone, or
	// another tenant's record, is not.
	tr.log.raw(`{"keytype":"CONTEXT","tenant":"default","context":".empty","magic":0}`, `{"tenant":"default","context":".empty"}`,
		`{"keytype":"CONTEXT","tenant":"lsrc-1","context":".cloud","magic":0}`, `{"tenant":"lsrc-1","context":".cloud"}`)
	poll.Eventually(t, 10*time.Second, func() error {
		if got := tr.listed(t, "/contexts"); got != `[".",".ctx",".empty",".other"]` {
			return fmt.Errorf("contexts %s", got)
		}
		return nil
	})
	tr.log.raw(`{"keytype":"CONTEXT","tenant":"default","context":".empty","magic":0}`, "")
	poll.Eventually(t, 10*time.Second, func() error {
		if got := tr.listed(t, "/contexts"); got != `[".",".ctx",".other"]` {
			return fmt.Errorf("contexts %s", got)
		}
		return nil
	})
}

// listed is the body of a GET of path.
func (tr *testRegistry) listed(t *testing.T, path string) string {
	t.Helper()
	_, body := tr.do(t, "GET", path, "")
	return body
}

// contextURL rewrites /contexts/{context}/... as Confluent's ContextFilter
// does (the cases of its ContextFilterTest, less those of the DEK
// registry and associations, which this registry does not serve).
func TestContextURL(t *testing.T) {
	for _, tt := range []struct{ in, path, query string }{
		{"/contexts", "/contexts", ""},
		{"/contexts/", "/contexts/", ""},
		{"/contexts/.foo/", "/contexts/:.foo:", ""},
		{"/contexts/.test-ctx/subjects/test-subject/versions", "/subjects/:.test-ctx:test-subject/versions", ""},
		{"/contexts/:.:/subjects/test-subject/versions", "/subjects/test-subject/versions", ""},
		{"/contexts/:.:/subjects", "/subjects", "subjectPrefix="},
		{"/contexts/test-ctx/subjects/test-subject/versions", "/subjects/:.test-ctx:test-subject/versions", ""},
		{"/contexts/.test-ctx/subjects/test-subject/", "/subjects/:.test-ctx:test-subject", ""},
		{"/contexts/.test-ctx/schemas/ids/1/", "/schemas/ids/1", "subject=%3A.test-ctx%3A"},
		{"/contexts/.test-ctx/schemas/ids/1?subject=s", "/schemas/ids/1", "subject=%3A.test-ctx%3As"},
		{"/contexts/:.:/schemas/?subjectPrefix=:*:", "/schemas", "subjectPrefix=%3A%2A%3A"},
		{"/contexts/.test-ctx/subjects?subjectPrefix=a&subjectPrefix=:.x:b", "/subjects", "subjectPrefix=%3A.test-ctx%3Aa&subjectPrefix=%3A.x%3Ab"},
		{"/contexts/.test-ctx/subjects/:.test-ctx:test-subject/versions", "/subjects/:.test-ctx:test-subject/versions", ""},
		{"/contexts/.test-ctx/subjects/%3A.test-ctx%3Atest-subject/versions", "/subjects/%3A.test-ctx%3Atest-subject/versions", ""},
		{"/contexts/.test-ctx/subjects/slash%2Fin%2Fmiddle/", "/subjects/:.test-ctx:slash%2Fin%2Fmiddle", ""},
		{"/contexts/.test-ctx/config/test-subject", "/config/:.test-ctx:test-subject", ""},
		{"/contexts/.test-ctx/config", "/config/:.test-ctx:", ""},
		{"/contexts/.test-ctx/mode/test-subject", "/mode/:.test-ctx:test-subject", ""},
		{"/contexts/.test-ctx/mode", "/mode/:.test-ctx:", ""},
		{"/contexts/:.:/mode", "/mode", ""},
		{"/contexts/.ctx/subjects/subjects/versions", "/subjects/:.ctx:subjects/versions", ""},
		{"/contexts/.ctx/subjects/contexts/versions", "/subjects/:.ctx:contexts/versions", ""},
		{"/contexts/.ctx/compatibility/subjects/s/versions/latest", "/compatibility/subjects/:.ctx:s/versions/latest", ""},
		{"/subjects/foo/versions", "/subjects/foo/versions", ""},
		{"/other/config/test", "/other/config/test", ""},
	} {
		u, err := url.ParseRequestURI(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		if err := contextURL(u); err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		if u.EscapedPath() != tt.path || (tt.query != "" && u.RawQuery != tt.query) {
			t.Errorf("%s: %s?%s, want %s?%s", tt.in, u.EscapedPath(), u.RawQuery, tt.path, tt.query)
		}
	}
	u, _ := url.ParseRequestURI("/contexts/foo:bar/subjects")
	if err := contextURL(u); err == nil || err.status != 400 || err.msg != "Context name 'foo:bar' cannot contain a colon" {
		t.Errorf("/contexts/foo:bar/subjects: %v, want a 400", err)
	}
}

// The /contexts/{context}/... forms reach the context's subjects, ids and
// settings; a context's own config (set through /contexts/.ctx/config)
// rules its subjects, and the default context's does not, as in
// Confluent's registry.
func TestContextURLs(t *testing.T) {
	tr := newTestRegistry(t)
	tr.script(t, []step{
		{"POST", "/subjects/s/versions", body(recV1), 200, registered(1)},
		{"POST", "/contexts/.ctx/subjects/s/versions", body(`"long"`), 200, registered(1)},
		{"POST", "/contexts/ctx/subjects/t/versions", body(recV1), 200, registered(2)},
		{"GET", "/contexts/.ctx/subjects", "", 200, `[":.ctx:s",":.ctx:t"]`},
		{"GET", "/contexts/:.:/subjects?subjectPrefix=s", "", 200, `["s"]`},
		{"GET", "/contexts/.ctx/subjects/s/versions", "", 200, `[1]`},
		{"GET", "/contexts/.ctx/subjects/s/versions/latest", "", 200, `{"subject":":.ctx:s","version":1,"id":1,` + guidJSON(`"long"`) + `"schema":"\"long\""}`},
		{"GET", "/contexts/.ctx/schemas/ids/1", "", 200, `{` + guidJSON(`"long"`) + `"schema":"\"long\""}`},
		{"GET", "/contexts/.ctx/schemas/ids/1/versions", "", 200, `[{"subject":":.ctx:s","version":1}]`},
		{"GET", "/contexts/.ctx/schemas?subjectPrefix=t", "", 200, `~"subject":":.ctx:t","version":1,"id":2`},
		{"POST", "/contexts/.ctx/subjects/t", body(recV1), 200, `~"subject":":.ctx:t","version":1,"id":2`},
		{"POST", "/contexts/.ctx/compatibility/subjects/t/versions/latest", body(recBad), 200, `{"is_compatible":false}`},
		// The context's own config, for its subjects.
		{"GET", "/contexts/.ctx/config", "", 404, `{"error_code":40408,"message":"Subject ':.ctx:' does not have subject-level compatibility configured"}`},
		{"PUT", "/contexts/.ctx/config", `{"compatibility":"NONE"}`, 200, `{"compatibility":"NONE"}`},
		{"GET", "/config/:.ctx:", "", 200, `{"compatibilityLevel":"NONE"}`},
		{"GET", "/contexts/.ctx/config/t?defaultToGlobal=true", "", 200, `{"compatibilityLevel":"NONE"}`},
		{"POST", "/contexts/.ctx/compatibility/subjects/t/versions/latest", body(recBad), 200, `{"is_compatible":true}`},
		{"POST", "/subjects/s/versions", body(recBad), 409, `~"error_code":409`},
		{"POST", "/contexts/.ctx/subjects/t/versions", body(recBad), 200, registered(3)},
		// The default context's config does not reach another context
		// (there the registry's default level rules).
		{"PUT", "/contexts/:.:/config", `{"compatibility":"NONE"}`, 200, `{"compatibility":"NONE"}`},
		{"GET", "/config", "", 200, `{"compatibilityLevel":"NONE"}`},
		{"POST", "/subjects/s/versions", body(recBad), 200, registered(2)},
		{"POST", "/contexts/.other/subjects/o/versions", body(recV1), 200, registered(1)},
		{"POST", "/contexts/.other/subjects/o/versions", body(recBad), 409, `~"error_code":409`},
		{"PUT", "/contexts/.ctx/mode", `{"mode":"READONLY"}`, 200, `{"mode":"READONLY"}`},
		{"POST", "/contexts/.ctx/subjects/t/versions", body(recV2), 422, `~"error_code":42205`},
		{"GET", "/contexts/.other/mode/x?defaultToGlobal=true", "", 200, `{"mode":"READWRITE"}`},
		{"GET", "/contexts/a:b/subjects", "", 400, `{"error_code":400,"message":"Context name 'a:b' cannot contain a colon"}`},
		// A context is deleted once empty, soft-deleted subjects and all.
		{"GET", "/contexts", "", 200, `[".",".ctx",".other"]`},
		{"DELETE", "/contexts/.other", "", 422, `{"error_code":42211,"message":"The specified context ':.other:' is not empty."}`},
		{"DELETE", "/contexts/.other/subjects/o", "", 200, `[1]`},
		{"DELETE", "/contexts/:.other:", "", 422, `{"error_code":42211,"message":"The specified context ':.other:' is not empty."}`},
		{"DELETE", "/contexts/.other/subjects/o?permanent=true", "", 200, `[1]`},
		{"DELETE", "/contexts/other", "", 204, ``},
		{"GET", "/contexts", "", 200, `[".",".ctx"]`},
	})
	if w := tr.log.written(); w[len(w)-1] != `{"keytype":"CONTEXT","tenant":"default","context":".other","magic":0} ` {
		t.Errorf("last record %s, want the CONTEXT tombstone of .other", w[len(w)-1])
	}
}
