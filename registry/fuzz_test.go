package registry

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzApply: no record read from _schemas, however malformed, panics the
// reader.
func FuzzApply(f *testing.F) {
	f.Add([]byte(`{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}`), []byte(`{"subject":"s","version":1,"id":1,"schema":"\"string\"","deleted":false}`))
	f.Add([]byte(`{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}`), []byte(`{"subject":"s","version":2147483647}`))
	f.Add([]byte(`{"keytype":"CLEAR_SUBJECT","subject":"s","magic":0}`), []byte(`{"subject":"s"}`))
	f.Add([]byte(`{"keytype":"CONFIG","magic":0}`), []byte(`{"compatibilityLevel":"FULL","normalize":true}`))
	f.Add([]byte(`{"keytype":"MODE","subject":"s","magic":0}`), []byte(nil))
	f.Add([]byte(`{"keytype":"SCHEMA","subject":"s","version":-1,"magic":1}`), []byte(`{"subject":"s","version":1,"id":-5,"schema":1}`))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		s := newState()
		s.apply([]Record{{Key: key, Value: value}, {Key: key}, {Key: key, Value: value}}, 3)
	})
}

// FuzzParseSchema: no schema text, of any type, panics the parsers.
func FuzzParseSchema(f *testing.F) {
	for _, seed := range []string{`"string"`, recV2, `{"type":"object","properties":{"a":{"$ref":"#/x"}}}`,
		"syntax = \"proto3\"; message M { int32 a = 1; }", `{"type":"record","name":"r","fields":[{"name":"a","type":"r"}]}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, typ := range supportedTypes {
			if p, err := parseSchema(typ, text, nil); err == nil {
				s := newState()
				s.putVersion(&version{schemaValue: schemaValue{Subject: "s", Version: 1, ID: 1, SchemaType: typ, Schema: text}})
				s.incompatibilities(compatRule{level: levelFullTransitive}, p, s.versions("s", false), false)
			}
		}
	})
}

// FuzzCompatibility: no pair of schemas, of any type, panics the
// compatibility checks, either way round.
func FuzzCompatibility(f *testing.F) {
	seeds := [][2]string{
		{`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`, `{"type":["object","null"],"properties":{"a":{"oneOf":[{"type":"string"},{"$ref":"#"}]}},"patternProperties":{"^x":{}}}`},
		{`{"type":"array","items":[{"type":"string"}],"additionalItems":{"type":"integer"}}`, `{"type":"array","prefixItems":[{"type":"string"},{}],"items":false,"uniqueItems":true}`},
		{`{"not":{"enum":[1,2]},"allOf":[{"minimum":1},{"multipleOf":0.5}]}`, `{"const":3,"dependencies":{"a":["b"],"c":{"required":["d"]}}}`},
		{"syntax = \"proto3\"; package p; message M { oneof o { int32 a = 1; string b = 2; } map<string, M> m = 3; }",
			"syntax = \"proto2\"; package q; message M { required int32 a = 1; repeated M m = 3; enum E { X = 0; } }"},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, typ := range []string{typeJSON, typeProtobuf} {
			pa, err := parseSchema(typ, a, nil)
			if err != nil {
				continue
			}
			pb, err := parseSchema(typ, b, nil)
			if err != nil {
				continue
			}
			readIssues(pa, pb, "", "new", "old")
			readIssues(pb, pa, "LENIENT", "new", "old")
		}
	})
}

// fuzzRegistry is a registry that has not started (no writer: writes are
// 50003), its state holding an Avro record, a Protobuf file of nested
// messages and a JSON Schema, for the fuzzers of client input.
func fuzzRegistry(f *testing.F) *Registry {
	r := New(Config{Log: newMemLog()})
	f.Cleanup(func() { r.Close() })
	proto := "syntax = \"proto3\"; package p; message A { message B { int32 x = 1; } } message C { string s = 1; }"
	var recs []Record
	for i, s := range []schemaValue{
		{Subject: "t-value", Version: 1, ID: 1, Schema: recV1},
		{Subject: "t-value", Version: 2, ID: 2, SchemaType: typeProtobuf, Schema: proto},
		{Subject: "t-key", Version: 1, ID: 3, SchemaType: typeJSON, Schema: `{"title":"T","type":"object"}`},
	} {
		rec := schemaRecord(s)
		rec.Offset = int64(i)
		recs = append(recs, rec)
	}
	r.state.apply(recs, int64(len(recs)))
	return r
}

// FuzzCheckRecord: no key or value produced to a topic with schema
// validation, under any strategy, panics the broker's check.
func FuzzCheckRecord(f *testing.F) {
	r := fuzzRegistry(f)
	f.Add([]byte{0, 0, 0, 0, 2, 4, 0, 2}, uint8(1))
	f.Add([]byte{0, 0, 0, 0, 2, 0}, uint8(2))
	f.Add([]byte{0, 0, 0, 0, 1, 'x'}, uint8(0))
	f.Add([]byte{0, 0, 0, 0, 2, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80}, uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, strategy uint8) {
		for _, key := range []bool{false, true} {
			r.CheckRecord("t", key, Strategy(strategy%3), data)
		}
	})
}

// FuzzRequest: no request, of any method, path, query or body, panics a
// handler (the registry answers a panic with 50001 "Internal error").
func FuzzRequest(f *testing.F) {
	r := fuzzRegistry(f)
	for _, seed := range [][3]string{
		{"POST", "/subjects/t-value?normalize=true", body(recV2)},
		{"POST", "/compatibility/subjects/t-value/versions/latest?verbose=true", body(recV2)},
		{"GET", "/schemas/ids/2?format=serialized&subject=t-value", ""},
		{"GET", "/contexts/.c/schemas/ids/1/versions?deleted=true", ""},
		{"PUT", "/config/t-value", `{"compatibility":5,"normalize":"x"}`},
		{"POST", "/subjects/t-value/versions", `{"schema":"\"int\"","metadata":{"properties":{"a":"b"}},"ruleSet":{"domainRules":[]}}`},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, method, target, body string) {
		req, err := http.NewRequest(method, "http://registry"+target, strings.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("Content-Type", contentType)
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		if strings.Contains(w.Body.String(), `"Internal error"`) {
			t.Fatalf("%s %s %q: a handler panicked", method, target, body)
		}
	})
}
