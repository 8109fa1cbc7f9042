package registry

import "testing"

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
				s.putVersion(&version{schemaValue{Subject: "s", Version: 1, ID: 1, SchemaType: typ, Schema: text}})
				s.incompatibilities(levelFullTransitive, p, s.versions("s", false), false)
			}
		}
	})
}
