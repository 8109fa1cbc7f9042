package registry

import (
	"strings"
	"testing"
)

// TestContexts: a subject qualified ":.ctx:name" is in a context of its
// own, with ids of its own, as Confluent's registry keeps them.
func TestContexts(t *testing.T) {
	tr := newTestRegistry(t)
	tr.script(t, []step{
		{"POST", "/subjects/s/versions", body(`"string"`), 200, `{"id":1}`},
		// Another context's first schema is its id 1 too.
		{"POST", "/subjects/:.ctx:s/versions", body(`"long"`), 200, `{"id":1}`},
		// The same schema in a third context: its own id 1.
		{"POST", "/subjects/:.other:t/versions", body(`"string"`), 200, `{"id":1}`},
		{"POST", "/subjects/:.ctx:u/versions", body(`"int"`), 200, `{"id":2}`},
		{"POST", "/subjects/u/versions", body(`"int"`), 200, `{"id":2}`},
		{"GET", "/contexts", "", 200, `[".",".ctx",".other"]`},
		{"GET", "/subjects", "", 200, `[":.ctx:s",":.ctx:u",":.other:t","s","u"]`},
		{"GET", "/subjects?subjectPrefix=:.ctx:", "", 200, `[":.ctx:s",":.ctx:u"]`},
		{"GET", "/subjects?subjectPrefix=:*:s", "", 200, `[":.ctx:s","s"]`},
		{"GET", "/subjects?subjectPrefix=s", "", 200, `["s"]`},
		{"GET", "/schemas/ids/1", "", 200, `{"schema":"\"string\""}`},
		{"GET", "/schemas/ids/1?subject=:.ctx:s", "", 200, `{"schema":"\"long\""}`},
		{"GET", "/schemas/ids/2/subjects?subject=:.ctx:u", "", 200, `[":.ctx:u"]`},
		// ":.:name" is the default context's name.
		{"GET", "/subjects/:.:s/versions/1", "", 200, `{"subject":"s","version":1,"id":1,"schema":"\"string\""}`},
		{"GET", "/subjects/:.ctx:s/versions/1", "", 200, `{"subject":":.ctx:s","version":1,"id":1,"schema":"\"long\""}`},
		// No association is kept: none is found, and the serializers
		// fall back to their subject name strategy.
		{"GET", "/associations/resources/lkc-1/orders?resourceType=topic&associationType=value", "", 200, `[]`},
		{"GET", "/associations/subjects/s", "", 200, `[]`},
	})
	// Stored as Confluent stores it: the subject qualified.
	found := false
	for _, r := range tr.log.written() {
		if strings.HasPrefix(r, `{"keytype":"SCHEMA","subject":":.ctx:s","version":1,"magic":1} {"subject":":.ctx:s","version":1,"id":1,`) {
			found = true
		}
	}
	if !found {
		t.Error("no SCHEMA record of :.ctx:s")
	}
}
