package compat

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSchemaRegistrySchemaByIDWithSubject: GET /schemas/ids/{id}?subject=
// finds the id as Confluent's registry does (getSchemaKeyUsingContexts):
// a subject of the default context that lacks the id falls back to the
// same name in another context, then to any subject with the id in the
// default context, so that a deserializer asking with its topic's
// subject reads a schema registered under another (RecordNameStrategy);
// a qualified subject must have the id itself.
func TestSchemaRegistrySchemaByIDWithSubject(t *testing.T) {
	b, cl := startRegistryBroker(t, nil)
	waitWriter(t, cl) // ready-value: id 1, "string"
	registryScript(t, "http://"+b.RegistryAddr(), []registryStep{
		{"POST", "/subjects/samsa.Order/versions", `{"schema":"\"long\""}`, 200, `{"id":2,"version":1,` + anyGUID + `,"schema":"\"long\""}`},
		{"POST", "/subjects/other-value/versions", `{"schema":"\"int\""}`, 200, `{"id":3,"version":1,` + anyGUID + `,"schema":"\"int\""}`},
		{"POST", "/subjects/:.ctx:c-value/versions", `{"schema":"\"bytes\""}`, 200, `{"id":1,"version":1,` + anyGUID + `,"schema":"\"bytes\""}`},
		{"GET", "/schemas/ids/2?subject=samsa.Order", "", 200, `{` + anyGUID + `,"schema":"\"long\""}`},
		{"GET", "/schemas/ids/2?subject=orders-value", "", 200, `{` + anyGUID + `,"schema":"\"long\""}`},
		{"GET", "/schemas/ids/2/schema?subject=other-value", "", 200, `"long"`},
		{"GET", "/schemas/ids/1?subject=c-value", "", 200, `{` + anyGUID + `,"schema":"\"bytes\""}`},
		{"GET", "/schemas/ids/1?subject=ready-value", "", 200, `{` + anyGUID + `,"schema":"\"string\""}`},
		{"GET", "/schemas/ids/2?subject=:.ctx:c-value", "", 404, `{"error_code":40403,"message":"Schema 2 not found"}`},
		{"GET", "/schemas/ids/9?subject=orders-value", "", 404, `{"error_code":40403,"message":"Schema 9 not found"}`},
	})
}

// TestSchemaRegistryBodyTypes: a body is read as Confluent's Jackson
// reads it: a number or a boolean where a string goes is its text (so
// {"schema":5} is an invalid schema, 42201, and a compatibility of true
// an invalid level, 42203); an object or an array there, or a string of
// no digits where an id goes, is its JsonMappingException, 400 with code
// 400; malformed JSON its JsonParseException, 400 with code 400.
func TestSchemaRegistryBodyTypes(t *testing.T) {
	b, cl := startRegistryBroker(t, nil)
	waitWriter(t, cl)
	registryScript(t, "http://"+b.RegistryAddr(), []registryStep{
		{"POST", "/subjects/u/versions", `{"schema":5}`, 422, `~{"error_code":42201,"message":"Invalid schema`},
		{"POST", "/subjects/u/versions", `{"schema":{"type":"string"}}`, 400, `~{"error_code":400,`},
		{"POST", "/subjects/u/versions", `{"schema":"\"string\"","id":"abc"}`, 400, `~{"error_code":400,`},
		{"POST", "/subjects/u/versions", `{"schema":`, 400, `~{"error_code":400,`},
		{"PUT", "/config", `{"compatibility":true}`, 422, `~{"error_code":42203,`},
		{"PUT", "/mode", `{"mode":["READONLY"]}`, 400, `~{"error_code":400,`},
		{"POST", "/subjects/u/versions", `{"schema":"\"string\"","schemaType":"AVRO"}`, 200, `{"id":1,"version":1,` + anyGUID + `,"schema":"\"string\""}`},
	})
}

// TestSchemaRegistryMediaTypes: answers in the media type Jersey picks
// for Confluent's resources (produced: v1+json, then
// vnd.schemaregistry+json, then application/json, by the Accept's q
// first); an Accept of none of them is 406, a body of a type they do not
// consume 415, each with Confluent's error body.
func TestSchemaRegistryMediaTypes(t *testing.T) {
	b, cl := startRegistryBroker(t, nil)
	waitWriter(t, cl)
	url := "http://" + b.RegistryAddr()
	for _, tt := range []struct {
		method, path, contentType, accept, body string
		status                                  int
		wantType, want                          string
	}{
		{"GET", "/subjects", "", "", "", 200, "application/vnd.schemaregistry.v1+json", `["ready-value"]`},
		{"GET", "/subjects", "", "application/json", "", 200, "application/json", `["ready-value"]`},
		{"GET", "/subjects", "", "application/json, text/plain, */*", "", 200, "application/vnd.schemaregistry.v1+json", `["ready-value"]`},
		{"GET", "/subjects", "", "application/json, application/vnd.schemaregistry+json;q=0.9", "", 200, "application/json", `["ready-value"]`},
		{"GET", "/subjects", "", "application/vnd.schemaregistry+json", "", 200, "application/vnd.schemaregistry+json", `["ready-value"]`},
		{"GET", "/subjects", "", "text/html", "", 406, "application/vnd.schemaregistry.v1+json", `{"error_code":406,"message":"HTTP 406 Not Acceptable"}`},
		{"POST", "/subjects/m/versions", "text/plain", "", `{"schema":"\"int\""}`, 415, "application/vnd.schemaregistry.v1+json", `{"error_code":415,"message":"HTTP 415 Unsupported Media Type"}`},
		{"POST", "/subjects/m/versions", "application/x-www-form-urlencoded", "", `{"schema":"\"int\""}`, 415, "application/vnd.schemaregistry.v1+json", `{"error_code":415,"message":"HTTP 415 Unsupported Media Type"}`},
		{"POST", "/subjects/m/versions", "application/json; charset=utf-8", "application/json", `{"schema":"\"int\""}`, 200, "application/json", `{"id":2,"version":1,` + anyGUID + `,"schema":"\"int\""}`},
		{"POST", "/subjects/m/versions", "", "", `{"schema":"\"int\""}`, 200, "application/vnd.schemaregistry.v1+json", `{"id":2,"version":1,` + anyGUID + `,"schema":"\"int\""}`},
	} {
		req, err := http.NewRequestWithContext(testCtx(t, 10*time.Second), tt.method, url+tt.path, strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		if tt.contentType != "" {
			req.Header.Set("Content-Type", tt.contentType)
		}
		if tt.accept != "" {
			req.Header.Set("Accept", tt.accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = guidField.ReplaceAll(body, []byte(anyGUID))
		if resp.StatusCode != tt.status || resp.Header.Get("Content-Type") != tt.wantType || string(body) != tt.want {
			t.Errorf("%s %s (Content-Type %q, Accept %q): %d %s %s\nwant %d %s %s", tt.method, tt.path, tt.contentType, tt.accept,
				resp.StatusCode, resp.Header.Get("Content-Type"), body, tt.status, tt.wantType, tt.want)
		}
	}
}
