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
