package registry

import (
	"context"
	"strings"
	"testing"
)

// TestEveryRouteDeclaresAccess: no route is served without a declaration
// of what it needs, and no declaration names a route that is not served.
func TestEveryRouteDeclaresAccess(t *testing.T) {
	r := New(Config{Log: newMemLog()})
	declared := map[string]bool{}
	for _, d := range r.declared {
		declared[d] = true
		if _, ok := accessOf[d]; !ok {
			t.Errorf("route %s declares no access", d)
		}
	}
	for d := range accessOf {
		if !declared[d] {
			t.Errorf("access declared for %s, which is not a route", d)
		}
	}
}

// TestBasicAuthAndACLs: without credentials, or with wrong ones, 401 as
// Confluent answers it; an operation the principal may not make, 403
// with 40301; lists answer only what the principal may read.
func TestBasicAuthAndACLs(t *testing.T) {
	users := map[string]string{"alice": "alice-secret", "admin": "admin-secret"}
	cfg := Config{
		Authenticate: func(_ context.Context, user, password string) (string, bool, error) {
			return "User:" + user, users[user] != "" && users[user] == password, nil
		},
		// alice reads and writes subjects starting with "a-", and reads
		// nothing else; admin does everything.
		Authorize: func(principal, _ string, op Op, subject string) bool {
			if principal == "User:admin" {
				return true
			}
			return principal == "User:alice" && strings.HasPrefix(subject, "a-") && (op == OpRead || op == OpWrite)
		},
	}
	tr := startTestRegistryWith(t, newMemLog(), true, cfg)
	tr.script(t, []step{
		{"GET", "/subjects", "", 401, `{"error_code":401,"message":"Unauthorized"}`},
	})
	tr.user, tr.password = "alice", "wrong"
	tr.script(t, []step{
		{"GET", "/subjects", "", 401, `{"error_code":401,"message":"Unauthorized"}`},
	})
	tr.user, tr.password = "admin", "admin-secret"
	tr.script(t, []step{
		{"POST", "/subjects/a-value/versions", body(`"string"`), 200, registered(1)},
		{"POST", "/subjects/b-value/versions", body(`"long"`), 200, registered(2)},
		{"GET", "/subjects", "", 200, `["a-value","b-value"]`},
	})
	tr.user, tr.password = "alice", "alice-secret"
	tr.script(t, []step{
		{"GET", "/subjects", "", 200, `["a-value"]`},
		{"GET", "/schemas/types", "", 200, `["JSON","PROTOBUF","AVRO"]`},
		{"POST", "/subjects/a-value/versions", body(`"string"`), 200, registered(1)},
		{"GET", "/subjects/a-value/versions", "", 200, `[1]`},
		{"GET", "/subjects/b-value/versions", "", 403, `{"error_code":40301,"message":"User is denied operation Read on Subject: b-value"}`},
		{"POST", "/subjects/b-value/versions", body(`"long"`), 403, `{"error_code":40301,"message":"User is denied operation Write on Subject: b-value"}`},
		{"DELETE", "/subjects/a-value", "", 403, `{"error_code":40301,"message":"User is denied operation Delete on Subject: a-value"}`},
		{"PUT", "/config", `{"compatibility":"NONE"}`, 403, `{"error_code":40301,"message":"User is denied operation GlobalAlterCompatibility on the schema registry"}`},
		{"GET", "/config/a-value", "", 403, `~40301`},
		{"GET", "/schemas/ids/1", "", 200, `{` + guidJSON(`"string"`) + `"schema":"\"string\""}`},
		{"GET", "/schemas/ids/2", "", 403, `{"error_code":40301,"message":"User is denied operation Read on Schema: 2"}`},
		{"GET", "/schemas/guids/" + guidText(`"long"`), "", 403, `{"error_code":40301,"message":"User is denied operation Read on Schema: ` + guidText(`"long"`) + `"}`},
		{"GET", "/schemas/guids/" + guidText(`"long"`) + "/ids", "", 200, `[]`},
		{"GET", "/schemas/guids/" + guidText(`"string"`) + "/ids", "", 200, `[{"context":".","id":1}]`},
		{"GET", "/schemas", "", 200, `[{"subject":"a-value","version":1,"id":1,` + guidJSON(`"string"`) + `"schema":"\"string\""}]`},
	})
}
