package compat

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// registryStep is one request to a registry's REST API and the answer it
// must get: the body, or a part of it with a leading '~'; a "guid" of "*"
// in it stands for any GUID.
type registryStep struct {
	method, path, body string
	status             int
	want               string
}

// registryScript sends each step to the registry at url, as Confluent's
// clients send them, and checks each answer.
func registryScript(t *testing.T, url string, steps []registryStep) {
	t.Helper()
	for _, s := range steps {
		var rd io.Reader
		if s.body != "" {
			rd = strings.NewReader(s.body)
		}
		req, err := http.NewRequestWithContext(testCtx(t, 10*time.Second), s.method, url+s.path, rd)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got := string(b)
		if strings.Contains(s.want, anyGUID) {
			got = guidField.ReplaceAllString(got, anyGUID)
		}
		ok := got == s.want
		if strings.HasPrefix(s.want, "~") {
			ok = strings.Contains(got, s.want[1:])
		}
		if resp.StatusCode != s.status || !ok {
			t.Fatalf("%s %s %s: %d %s\nwant %d %s", s.method, s.path, s.body, resp.StatusCode, got, s.status, s.want)
		}
	}
}

// TestSchemaRegistryDataContracts: a schema's metadata and rule set are
// part of it, as in Confluent's registry: the same text with rules is a
// new version with a new id, both kept and answered; a registration or a
// lookup without them finds a version without them, else takes the
// latest version's; a subject's
// overrideMetadata is merged over them (Confluent's data contracts).
func TestSchemaRegistryDataContracts(t *testing.T) {
	b, cl := startRegistryBroker(t, nil)
	waitWriter(t, cl) // registers ready-value: id 1
	schema := `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}`
	plain := `{"schema":` + jsonString(schema) + `}`
	rule := `{"domainRules":[{"name":"positive","kind":"CONDITION","mode":"WRITE","type":"CEL","expr":"message.id > 0"}]}`
	meta := `{"properties":{"owner":"bob"}}`
	withRules := `{"schema":` + jsonString(schema) + `,"metadata":` + meta + `,"ruleSet":` + rule + `}`
	other := `{"domainRules":[{"name":"small","kind":"CONDITION","mode":"WRITE","type":"CEL","expr":"message.id < 10"}]}`
	withOther := `{"schema":` + jsonString(schema) + `,"ruleSet":` + other + `}`
	got := func(version, id int, metadata, ruleSet string) string {
		return `{"subject":"orders-value","version":` + strconv.Itoa(version) + `,"id":` + strconv.Itoa(id) + `,` + anyGUID +
			`,"metadata":` + metadata + `,"ruleSet":` + ruleSet + `,"schema":` + jsonString(schema) + `}`
	}
	// registered is a registration's answer: the version registered or found.
	registered := func(version, id int, metadata, ruleSet string) string {
		contract := ""
		if metadata != "" {
			contract = `,"metadata":` + metadata + `,"ruleSet":` + ruleSet
		}
		return `{"id":` + strconv.Itoa(id) + `,"version":` + strconv.Itoa(version) + `,` + anyGUID + contract + `,"schema":` + jsonString(schema) + `}`
	}
	registryScript(t, "http://"+b.RegistryAddr(), []registryStep{
		{"POST", "/subjects/orders-value/versions", plain, 200, registered(1, 2, "", "")},
		{"POST", "/subjects/orders-value/versions", withRules, 200, registered(2, 3, meta, rule)},
		{"GET", "/subjects/orders-value/versions", "", 200, `[1,2]`},
		{"GET", "/subjects/orders-value/versions/latest", "", 200, got(2, 3, meta, rule)},
		{"GET", "/schemas/ids/3", "", 200, `{` + anyGUID + `,"metadata":` + meta + `,"ruleSet":` + rule + `,"schema":` + jsonString(schema) + `}`},
		// Registered without rules: the latest version's, so nothing new.
		// Looked up without: the version that has none, as Confluent's
		// lookup tries the schema as it comes first.
		{"POST", "/subjects/orders-value/versions", plain, 200, registered(2, 3, meta, rule)},
		{"POST", "/subjects/orders-value", plain, 200, `{"subject":"orders-value","version":1,"id":2,` + anyGUID + `,"schema":` + jsonString(schema) + `}`},
		{"POST", "/subjects/orders-value", withRules, 200, got(2, 3, meta, rule)},
		// Other rules: a new version, with those rules only, and the
		// latest version's metadata.
		{"POST", "/subjects/orders-value/versions", withOther, 200, registered(3, 4, meta, other)},
		{"GET", "/subjects/orders-value/versions/3", "", 200, got(3, 4, meta, other)},
		// A subject whose only version has rules: a lookup without them
		// completes the schema with them and finds it.
		{"POST", "/subjects/pay-value/versions", withRules, 200, `~{"id":3,"version":1,`},
		{"POST", "/subjects/pay-value", plain, 200, `~"version":1,"id":3,`},
		// The subject's overrideMetadata goes over what comes.
		{"PUT", "/config/orders-value", `{"overrideMetadata":{"properties":{"team":"payments"}}}`, 200, `{"overrideMetadata":{"properties":{"team":"payments"}}}`},
		{"POST", "/subjects/orders-value/versions", plain, 200, registered(4, 5, `{"properties":{"owner":"bob","team":"payments"}}`, other)},
		{"GET", "/subjects/orders-value/versions/4", "", 200, got(4, 5, `{"properties":{"owner":"bob","team":"payments"}}`, other)},
	})
}

// anyGUID is a "guid" field of any GUID, in a registryStep's answer.
const anyGUID = `"guid":"*"`

var guidField = regexp.MustCompile(`"guid":"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"`)

// jsonString is s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
