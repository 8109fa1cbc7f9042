package compat

import "testing"

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
		{"POST", "/subjects/samsa.Order/versions", `{"schema":"\"long\""}`, 200, `{"id":2}`},
		{"POST", "/subjects/other-value/versions", `{"schema":"\"int\""}`, 200, `{"id":3}`},
		{"POST", "/subjects/:.ctx:c-value/versions", `{"schema":"\"bytes\""}`, 200, `{"id":1}`},
		{"GET", "/schemas/ids/2?subject=samsa.Order", "", 200, `{"schema":"\"long\""}`},
		{"GET", "/schemas/ids/2?subject=orders-value", "", 200, `{"schema":"\"long\""}`},
		{"GET", "/schemas/ids/2/schema?subject=other-value", "", 200, `"long"`},
		{"GET", "/schemas/ids/1?subject=c-value", "", 200, `{"schema":"\"bytes\""}`},
		{"GET", "/schemas/ids/1?subject=ready-value", "", 200, `{"schema":"\"string\""}`},
		{"GET", "/schemas/ids/2?subject=:.ctx:c-value", "", 404, `{"error_code":40403,"message":"Schema 2 not found"}`},
		{"GET", "/schemas/ids/9?subject=orders-value", "", 404, `{"error_code":40403,"message":"Schema 9 not found"}`},
	})
}
