package registry

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// do sends a request to the registry and returns its status, error code
// (0 when it answered no error) and body.
func (tr *testRegistry) do(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctxT(t), method, tr.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	if tr.user != "" {
		req.SetBasicAuth(tr.user, tr.password)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != contentType && resp.StatusCode != http.StatusNoContent {
		t.Errorf("%s %s: content type %q", method, path, ct)
	}
	return resp.StatusCode, string(b)
}

// step is one request of a scripted exchange and the answer it must get.
type step struct {
	method, path, body string
	status             int
	want               string // the body, or a part of it with a leading '~'
}

func (tr *testRegistry) script(t *testing.T, steps []step) {
	t.Helper()
	for _, s := range steps {
		status, body := tr.do(t, s.method, s.path, s.body)
		ok := body == s.want
		if strings.HasPrefix(s.want, "~") {
			ok = strings.Contains(body, s.want[1:])
		}
		if status != s.status || !ok {
			t.Fatalf("%s %s %s: %d %s\nwant %d %s", s.method, s.path, s.body, status, body, s.status, s.want)
		}
	}
}

const (
	recV1  = `{"type":"record","name":"User","namespace":"samsa.test","fields":[{"name":"name","type":"string"},{"name":"age","type":"int"}]}`
	recV2  = `{"type":"record","name":"User","namespace":"samsa.test","fields":[{"name":"name","type":"string"},{"name":"age","type":"int"},{"name":"email","type":"string","default":""}]}`
	recBad = `{"type":"record","name":"User","namespace":"samsa.test","fields":[{"name":"name","type":"string"},{"name":"age","type":"string"}]}`
)

// guidText is the GUID of a schema of text with refs (and no metadata
// or rules).
func guidText(text string, refs ...Reference) string {
	return guidOf(&schemaValue{Schema: text, References: refs}).String()
}

// guidJSON is the "guid" field (and its comma) of the answers about a
// schema of text with refs.
func guidJSON(text string, refs ...Reference) string {
	return `"guid":"` + guidText(text, refs...) + `",`
}

// registered is how a registration's answer with id starts.
func registered(id int) string { return fmt.Sprintf(`~{"id":%d,"version":`, id) }

// body is a register or lookup body for schema (Avro, no references).
func body(schema string) string {
	return `{"schema":` + string(marshal(schema)) + `}`
}

func TestCompatibilityEndpoint(t *testing.T) {
	tr := newTestRegistry(t)
	tr.script(t, []step{
		{"POST", "/subjects/u/versions", body(recV1), 200, registered(1)},
		{"POST", "/compatibility/subjects/u/versions/latest", body(recV2), 200, `{"is_compatible":true}`},
		{"POST", "/compatibility/subjects/u/versions/latest?normalize=False&verbose=False", body(recBad), 200, `{"is_compatible":false}`},
		{"POST", "/compatibility/subjects/u/versions/1?verbose=TRUE", body(recV2), 200, `{"is_compatible":true,"messages":[]}`},
		{"POST", "/compatibility/subjects/u/versions/latest?verbose=true", body(recBad), 200,
			`{"is_compatible":false,"messages":["{errorType:'TYPE_MISMATCH', description:'The type (path '/fields/1/type') of a field in the new schema does not match with the old schema', additionalInfo:'reader type: STRING not compatible with writer type: INT'}",` +
				`"{oldSchemaVersion: 1}","{oldSchema: '` + strings.ReplaceAll(recV1, `"`, `\"`) + `'}","{validateFields: 'false', compatibility: 'BACKWARD'}"]}`},
		{"POST", "/compatibility/subjects/u/versions", body(recBad), 200, `{"is_compatible":false}`},
		{"POST", "/compatibility/subjects/u/versions/2", body(recV2), 404, `{"error_code":40402,"message":"Version 2 not found."}`},
		{"POST", "/compatibility/subjects/nope/versions/latest", body(recV2), 404, `{"error_code":40401,"message":"Subject 'nope' not found."}`},
		{"POST", "/subjects/u/versions", body(recBad), 409, `~{"error_code":409,"message":"Schema being registered is incompatible with an earlier schema for subject \"u\", details: [`},
	})
}

func TestRegisterLookupAndRead(t *testing.T) {
	tr := newTestRegistry(t)
	spaced := strings.ReplaceAll(recV1, ",", ", ")
	// recV1 with its keys in another order, as avsc writes a schema
	reordered := `{"name":"User","namespace":"samsa.test","fields":[{"type":"string","name":"name"},{"name":"age","type":"int"}],"type":"record"}`
	tr.script(t, []step{
		{"GET", "/subjects", "", 200, `[]`},
		{"GET", "/schemas/types", "", 200, `["JSON","PROTOBUF","AVRO"]`},
		{"POST", "/subjects/u/versions", body(recV1), 200, registered(1)},
		// The same schema again, spaced differently: the same id, no new version.
		{"POST", "/subjects/u/versions", body(spaced), 200, registered(1)},
		{"POST", "/subjects/u/versions", body(recV2), 200, registered(2)},
		// Another subject shares the id of an identical schema.
		{"POST", "/subjects/w/versions?normalize=TRUE", body(recV1), 200, registered(1)},
		{"GET", "/subjects", "", 200, `["u","w"]`},
		{"GET", "/subjects?subjectPrefix=w", "", 200, `["w"]`},
		{"GET", "/subjects/u/versions", "", 200, `[1,2]`},
		{"GET", "/subjects/u/versions/latest", "", 200, `{"subject":"u","version":2,"id":2,` + guidJSON(recV2) + `"schema":` + string(marshal(recV2)) + `}`},
		{"GET", "/subjects/u/versions/1/schema", "", 200, recV1},
		{"POST", "/subjects/u", body(spaced), 200, `{"subject":"u","version":1,"id":1,` + guidJSON(recV1) + `"schema":` + string(marshal(recV1)) + `}`},
		{"POST", "/subjects/u", body(recBad), 404, `{"error_code":40403,"message":"Schema not found"}`},
		{"POST", "/subjects/nope", body(recV1), 404, `{"error_code":40401,"message":"Subject 'nope' not found."}`},
		{"GET", "/schemas/ids/2", "", 200, `{` + guidJSON(recV2) + `"schema":` + string(marshal(recV2)) + `}`},
		{"GET", "/schemas/ids/1/schema", "", 200, recV1},
		{"GET", "/schemas/ids/1/versions", "", 200, `[{"subject":"u","version":1},{"subject":"w","version":1}]`},
		{"GET", "/schemas/ids/1/subjects", "", 200, `["u","w"]`},
		{"GET", "/schemas/ids/3", "", 404, `{"error_code":40403,"message":"Schema 3 not found"}`},
		{"GET", "/schemas?latestOnly=true", "", 200, `~{"subject":"u","version":2,"id":2`},
		{"GET", "/schemas?subjectPrefix=w", "", 200, `[{"subject":"w","version":1,"id":1,` + guidJSON(recV1) + `"schema":` + string(marshal(recV1)) + `}]`},
		{"GET", "/subjects/u/versions/3", "", 404, `{"error_code":40402,"message":"Version 3 not found."}`},
		{"GET", "/subjects/u/versions/zero", "", 422, `~{"error_code":42202,"message":"The specified version 'zero' is not a valid version id.`},
		{"GET", "/subjects/u/versions/0", "", 422, `~{"error_code":42202`},
		// Key order never tells Avro schemas apart (Confluent compares
		// Avro's rendering), whichever order was stored first.
		{"POST", "/subjects/u/versions", body(reordered), 200, registered(1)},
		{"POST", "/subjects/r/versions", body(reordered), 200, registered(1)},
		{"POST", "/subjects/r/versions", body(recV1), 200, registered(1)},
		{"POST", "/subjects/r", body(recV1), 200, `{"subject":"r","version":1,"id":1,` + guidJSON(reordered) + `"schema":` + string(marshal(reordered)) + `}`},
		{"GET", "/subjects/r/versions", "", 200, `[1]`},
	})
}

func TestReferences(t *testing.T) {
	tr := newTestRegistry(t)
	address := `{"type":"record","name":"Address","namespace":"samsa","fields":[{"name":"city","type":"string"}]}`
	person := `{"type":"record","name":"Person","namespace":"samsa","fields":[{"name":"home","type":"samsa.Address"}]}`
	withRef := `{"schema":` + string(marshal(person)) + `,"references":[{"name":"samsa.Address","subject":"address","version":1}]}`
	tr.script(t, []step{
		{"POST", "/subjects/address/versions", body(address), 200, registered(1)},
		{"POST", "/subjects/person/versions", body(person), 422, `~{"error_code":42201`},
		{"POST", "/subjects/person/versions", withRef, 200, registered(2)},
		{"POST", "/subjects/person", withRef, 200, `~"references":[{"name":"samsa.Address","subject":"address","version":1}]`},
		{"GET", "/schemas/ids/2", "", 200, `{` + guidJSON(person, Reference{"samsa.Address", "address", 1}) + `"references":[{"name":"samsa.Address","subject":"address","version":1}],"schema":` + string(marshal(person)) + `}`},
		{"GET", "/subjects/address/versions/1/referencedby", "", 200, `[2]`},
		{"POST", "/subjects/other/versions", `{"schema":` + string(marshal(person)) + `,"references":[{"name":"samsa.Address","subject":"address","version":7}]}`, 422, `~{"error_code":42201`},
		{"DELETE", "/subjects/address/versions/1", "", 422, `{"error_code":42206,"message":"One or more references exist to the schema {magic=1,keytype=SCHEMA,subject=address,version=1}."}`},
		{"DELETE", "/subjects/address", "", 422, `~{"error_code":42206`},
	})
}

func TestDeletes(t *testing.T) {
	tr := newTestRegistry(t)
	tr.script(t, []step{
		{"POST", "/subjects/u/versions", body(recV1), 200, registered(1)},
		{"POST", "/subjects/u/versions", body(recV2), 200, registered(2)},
		{"DELETE", "/subjects/u/versions/1?permanent=true", "", 404, `{"error_code":40407,"message":"Subject 'u' Version 1 was not deleted first before being permanently deleted"}`},
		{"DELETE", "/subjects/u/versions/1", "", 200, `1`},
		{"DELETE", "/subjects/u/versions/1", "", 404, `{"error_code":40402,"message":"Version 1 not found."}`},
		{"GET", "/subjects/u/versions", "", 200, `[2]`},
		{"GET", "/subjects/u/versions?deleted=True", "", 200, `[1,2]`},
		{"GET", "/subjects/u/versions/1", "", 404, `~{"error_code":40402`},
		{"GET", "/subjects/u/versions/1?deleted=true", "", 200, `~"version":1`},
		{"DELETE", "/subjects/u/versions/1?permanent=true", "", 200, `1`},
		{"GET", "/subjects/u/versions?deleted=true", "", 200, `[2]`},
		{"DELETE", "/subjects/u?permanent=true", "", 404, `{"error_code":40405,"message":"Subject 'u' was not deleted first before being permanently deleted"}`},
		{"DELETE", "/subjects/u", "", 200, `[2]`},
		{"DELETE", "/subjects/u", "", 404, `{"error_code":40404,"message":"Subject 'u' was soft deleted.Set permanent=true to delete permanently"}`},
		{"GET", "/subjects", "", 200, `[]`},
		{"GET", "/subjects?deleted=true", "", 200, `["u"]`},
		{"GET", "/subjects?deletedOnly=true", "", 200, `["u"]`},
		// A soft-deleted schema registered again gets its id back and a new version.
		{"POST", "/subjects/u/versions", body(recV2), 200, registered(2)},
		{"GET", "/subjects/u/versions", "", 200, `[3]`},
		{"DELETE", "/subjects/u", "", 200, `[3]`},
		{"DELETE", "/subjects/u?permanent=true", "", 200, `[2,3]`},
		{"GET", "/subjects?deleted=true", "", 200, `[]`},
		{"DELETE", "/subjects/u", "", 404, `{"error_code":40401,"message":"Subject 'u' not found."}`},
		{"GET", "/schemas/ids/2", "", 404, `~{"error_code":40403`},
	})
}

func TestConfigAndMode(t *testing.T) {
	tr := newTestRegistry(t)
	tr.script(t, []step{
		{"GET", "/config", "", 200, `{"compatibilityLevel":"BACKWARD"}`},
		{"PUT", "/config", `{"compatibility":"full_transitive"}`, 200, `{"compatibility":"FULL_TRANSITIVE"}`},
		{"GET", "/config", "", 200, `{"compatibilityLevel":"FULL_TRANSITIVE"}`},
		{"PUT", "/config", `{"compatibility":"SIDEWAYS"}`, 422, `{"error_code":42203,"message":"Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive"}`},
		{"GET", "/config/u", "", 404, `{"error_code":40408,"message":"Subject 'u' does not have subject-level compatibility configured"}`},
		{"GET", "/config/u?defaultToGlobal=true", "", 200, `{"compatibilityLevel":"FULL_TRANSITIVE"}`},
		{"PUT", "/config/u", `{"compatibility":"NONE","normalize":true}`, 200, `{"compatibility":"NONE","normalize":true}`},
		{"GET", "/config/u", "", 200, `{"normalize":true,"compatibilityLevel":"NONE"}`},
		{"POST", "/subjects/u/versions", body(recV1), 200, registered(1)},
		{"POST", "/subjects/u/versions", body(recBad), 200, registered(2)},
		{"DELETE", "/config/u", "", 200, `{"normalize":true,"compatibilityLevel":"NONE"}`},
		{"DELETE", "/config/u", "", 404, `~{"error_code":40408`},
		{"GET", "/mode", "", 200, `{"mode":"READWRITE"}`},
		{"PUT", "/mode", `{"mode":"SOMETIMES"}`, 422, `{"error_code":42204,"message":"Invalid mode. Valid values are READWRITE, READONLY, IMPORT and FORWARD."}`},
		{"PUT", "/mode/u", `{"mode":"READONLY"}`, 200, `{"mode":"READONLY"}`},
		{"GET", "/mode/u", "", 200, `{"mode":"READONLY"}`},
		{"GET", "/mode/w", "", 404, `{"error_code":40409,"message":"Subject 'w' does not have subject-level mode configured"}`},
		{"GET", "/mode/w?defaultToGlobal=true", "", 200, `{"mode":"READWRITE"}`},
		{"POST", "/subjects/u/versions", body(recV2), 422, `{"error_code":42205,"message":"Subject u in context . is in read-only mode"}`},
		{"DELETE", "/subjects/u", "", 422, `~{"error_code":42205`},
		{"DELETE", "/mode/u", "", 200, `{"mode":"READONLY"}`},
		// IMPORT: refused while subjects exist unless forced; then ids are the caller's.
		{"PUT", "/mode", `{"mode":"IMPORT"}`, 422, `{"error_code":42205,"message":"Cannot import since found existing subjects"}`},
		{"POST", "/subjects/imp/versions", `{"schema":"\"string\"","id":50}`, 422, `{"error_code":42205,"message":"Subject imp in context . is not in import mode"}`},
		{"PUT", "/mode?force=true", `{"mode":"import"}`, 200, `{"mode":"IMPORT"}`},
		{"POST", "/subjects/imp/versions", body(`"string"`), 422, `{"error_code":42205,"message":"Subject imp in context . is not in read-write mode"}`},
		{"POST", "/subjects/imp/versions", `{"schema":"\"string\"","id":50,"version":4}`, 200, registered(50)},
		{"GET", "/subjects/imp/versions", "", 200, `[4]`},
		{"POST", "/subjects/imp2/versions", `{"schema":"\"long\"","id":50}`, 422, `{"error_code":42205,"message":"Overwrite new schema with id 50 in context . is not permitted."}`},
		{"POST", "/subjects/imp2/versions", `{"schema":"\"string\"","id":50}`, 200, registered(50)},
		{"PUT", "/mode", `{"mode":"READWRITE"}`, 200, `{"mode":"READWRITE"}`},
		// Ids go on after the highest imported one.
		{"POST", "/subjects/next/versions", body(`"bytes"`), 200, registered(51)},
	})
}

// TestBadInput: Confluent's answers to requests that make no sense, and
// never a panic.
func TestBadInput(t *testing.T) {
	tr := newTestRegistry(t)
	huge := `{"schema":"` + strings.Repeat("x", 9<<20) + `"}`
	tr.script(t, []step{
		{"POST", "/subjects/u/versions", `{"schema":`, 400, `~{"error_code":400`},
		{"POST", "/subjects/u/versions", `{"schema":5}`, 422, `~{"error_code":42201,`},
		{"POST", "/subjects/u/versions", `{"schema":[]}`, 400, `~{"error_code":400,`},
		{"POST", "/subjects/u/versions", `{}`, 422, `{"error_code":42201,"message":"Empty schema"}`},
		{"POST", "/subjects/u/versions", ``, 422, `{"error_code":42201,"message":"Empty schema"}`},
		{"POST", "/subjects/u/versions", body(`{"type":"record","name":"r"}`), 422, `~{"error_code":42201,"message":"Invalid schema`},
		{"POST", "/subjects/u/versions", body(`{"type":"nope"}`), 422, `~{"error_code":42201`},
		{"POST", "/subjects/u/versions", body(`not json`), 422, `~{"error_code":42201`},
		{"POST", "/subjects/u/versions", `{"schema":"{}","schemaType":"PROTOBUF"}`, 422, `~{"error_code":42201`},
		{"POST", "/subjects/u/versions", huge, 413, `~{"error_code":413`},
		{"GET", "/subjects/%01/versions", "", 422, `~{"error_code":42208`},
		{"GET", "/schemas/ids/abc", "", 404, `~{"error_code":40403`},
		{"GET", "/schemas/ids/99999999999", "", 404, `~{"error_code":40403`},
		{"GET", "/nowhere", "", 404, `{"error_code":404,"message":"HTTP 404 Not Found"}`},
		{"PATCH", "/subjects", "", 405, `{"error_code":405,"message":"HTTP 405 Method Not Allowed"}`},
		{"GET", "/", "", 200, `{}`},
	})
}

// typed is a register or lookup body of a schema of another type, with
// references (JSON, without the brackets) when given.
func typed(typ, schema, refs string) string {
	b := `{"schemaType":"` + typ + `","schema":` + string(marshal(schema))
	if refs != "" {
		b += `,"references":[` + refs + `]`
	}
	return b + `}`
}

// TestCompatibilityPolicy: Confluent's compatibilityPolicy (8.0.3 on):
// LENIENT lets a JSON Schema reader ignore what it does not know (a
// property added to an open content model, additionalProperties closed);
// STRICT, the default, does not; any other name unsets it.
func TestCompatibilityPolicy(t *testing.T) {
	tr := newTestRegistry(t)
	v1 := `{"type":"object","properties":{"a":{"type":"string"}}}`
	added := `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}}}`
	closed := `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`
	tr.script(t, []step{
		{"POST", "/subjects/j/versions", typed("JSON", v1, ""), 200, registered(1)},
		{"POST", "/compatibility/subjects/j/versions/latest?verbose=true", typed("JSON", added, ""), 200,
			`~"OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL`},
		{"PUT", "/config/j", `{"compatibilityPolicy":"lenient"}`, 200, `{"compatibilityPolicy":"lenient"}`},
		{"GET", "/config/j", "", 200, `{"compatibilityLevel":"BACKWARD","compatibilityPolicy":"LENIENT"}`},
		{"POST", "/compatibility/subjects/j/versions/latest", typed("JSON", added, ""), 200, `{"is_compatible":true}`},
		// FULL: read both ways, each change ignorable by the reader.
		{"PUT", "/config/j", `{"compatibility":"FULL"}`, 200, `{"compatibility":"FULL"}`},
		{"POST", "/compatibility/subjects/j/versions/latest", typed("JSON", closed, ""), 200, `{"is_compatible":true}`},
		{"POST", "/subjects/j/versions", typed("JSON", added, ""), 200, registered(2)},
		// A type changed is no less incompatible.
		{"POST", "/compatibility/subjects/j/versions/latest", typed("JSON", strings.Replace(added, "integer", "string", 1), ""), 200, `{"is_compatible":false}`},
		// The global policy reaches subjects without one; a name Confluent
		// does not know unsets it.
		{"PUT", "/config", `{"compatibilityPolicy":"LENIENT"}`, 200, `{"compatibilityPolicy":"LENIENT"}`},
		{"PUT", "/config/j", `{"compatibilityPolicy":"STRICT"}`, 200, `{"compatibilityPolicy":"STRICT"}`},
		{"POST", "/compatibility/subjects/j/versions/latest", typed("JSON", closed, ""), 200, `{"is_compatible":false}`},
		{"PUT", "/config/j", `{"compatibilityPolicy":"sloppy"}`, 200, `{"compatibilityPolicy":"sloppy"}`},
		{"GET", "/config/j", "", 200, `{"compatibilityLevel":"FULL"}`},
		{"POST", "/compatibility/subjects/j/versions/latest", typed("JSON", closed, ""), 200, `{"is_compatible":true}`},
	})
	found := false
	for _, r := range tr.log.written() {
		found = found || strings.Contains(r, `{"keytype":"CONFIG","subject":"j","magic":0} {"subject":"j","compatibilityLevel":"FULL","compatibilityPolicy":"STRICT"}`)
	}
	if !found {
		t.Errorf("no CONFIG record with compatibilityPolicy STRICT in %q", tr.log.written())
	}
}

func TestJSONSchema(t *testing.T) {
	tr := newTestRegistry(t)
	addr := `{"type":"object","properties":{"city":{"type":"string"}}}`
	person := `{"type":"object","properties":{"name":{"type":"string"},"home":{"$ref":"address.json"}},"required":["name"]}`
	ref := `{"name":"address.json","subject":"address","version":1}`
	tr.script(t, []step{
		{"POST", "/subjects/address/versions", typed("JSON", addr, ""), 200, registered(1)},
		{"POST", "/subjects/person/versions", typed("JSON", person, ""), 422, `~{"error_code":42201`},
		{"POST", "/subjects/person/versions", typed("JSON", person, ref), 200, registered(2)},
		{"POST", "/subjects/person", typed("JSON", strings.ReplaceAll(person, ",", ", "), ref), 200, `~"id":2`},
		{"GET", "/subjects/person/versions/1", "", 200, `{"subject":"person","version":1,"id":2,` + guidJSON(person, Reference{"address.json", "address", 1}) + `"schemaType":"JSON","references":[` + ref + `],"schema":` + string(marshal(person)) + `}`},
		{"POST", "/subjects/bad/versions", typed("JSON", `{"type":5}`, ""), 422, `~{"error_code":42201`},
		{"POST", "/subjects/bad/versions", typed("JSON", `{"$ref":"https://example.org/x.json"}`, ""), 422, `~{"error_code":42201`},
		{"POST", "/subjects/bad/versions", typed("JSON", `{"$ref":"file:///etc/passwd"}`, ""), 422, `~{"error_code":42201`},
		{"POST", "/subjects/bad/versions", typed("AVRO", `"string"`, ref), 422, `~{"error_code":42201`},
	})
}

func TestProtobuf(t *testing.T) {
	tr := newTestRegistry(t)
	common := "syntax = \"proto3\";\npackage samsa;\nmessage Address { string city = 1; }\n"
	order := "syntax = \"proto3\";\npackage samsa;\nimport \"google/protobuf/timestamp.proto\";\nimport \"samsa/address.proto\";\n" +
		"message Order { int64 id = 1; google.protobuf.Timestamp at = 2; Address ship_to = 3; }\n"
	ref := `{"name":"samsa/address.proto","subject":"address","version":1}`
	tr.script(t, []step{
		{"POST", "/subjects/address/versions", typed("PROTOBUF", common, ""), 200, registered(1)},
		{"POST", "/subjects/order/versions", typed("PROTOBUF", order, ""), 422, `~{"error_code":42201`},
		{"POST", "/subjects/order/versions", typed("PROTOBUF", order, ref), 200, registered(2)},
		{"POST", "/subjects/order/versions", typed("PROTOBUF", order, ref), 200, registered(2)},
		{"POST", "/subjects/order", typed("PROTOBUF", order, ref), 200, `~"schemaType":"PROTOBUF"`},
		{"GET", "/schemas/ids/1", "", 200, `{` + guidJSON(strings.TrimSpace(common)) + `"schemaType":"PROTOBUF","schema":` + string(marshal(strings.TrimSpace(common))) + `}`},
		{"POST", "/subjects/bad/versions", typed("PROTOBUF", "syntax = \"proto3\"; message M { strin x = 1; }", ""), 422, `~{"error_code":42201`},
		{"POST", "/subjects/bad/versions", typed("PROTOBUF", "syntax = \"proto3\"; import \"/etc/passwd\";", ""), 422, `~{"error_code":42201`},
	})
}

// TestObserve: every answer is reported with its route and error code.
func TestObserve(t *testing.T) {
	var mu sync.Mutex
	var got []string
	r := New(Config{Log: newMemLog(), Observe: func(method, route string, code int) {
		mu.Lock()
		got = append(got, fmt.Sprintf("%s %s %d", method, route, code))
		mu.Unlock()
	}})
	t.Cleanup(func() { r.Close() })
	for _, req := range []*http.Request{
		httptest.NewRequest("GET", "/subjects", nil),
		httptest.NewRequest("GET", "/subjects/x/versions", nil),
		httptest.NewRequest("GET", "/elsewhere", nil),
		httptest.NewRequest("PATCH", "/config", nil),
	} {
		r.ServeHTTP(httptest.NewRecorder(), req)
	}
	want := "GET /subjects 0|GET /subjects/{subject}/versions 40401|GET  404|PATCH /config 405"
	if strings.Join(got, "|") != want {
		t.Fatalf("observed %q, want %q", strings.Join(got, "|"), want)
	}
}
