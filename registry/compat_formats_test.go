package registry

import (
	"strings"
	"testing"
)

// proto3 is a proto3 file of package p with the given declarations.
func proto3(decls ...string) string {
	return "syntax = \"proto3\";\npackage p;\n" + strings.Join(decls, "\n")
}

// msg is a message M with the given fields.
func msg(fields ...string) string {
	return "message M {\n" + strings.Join(fields, "\n") + "\n}"
}

// TestProtobufCompatibilityTable checks evolutions at each level against
// Confluent's Protobuf rules (ProtobufSchema's diff): fields matched by
// number, scalars grouped by wire encoding, messages by name.
func TestProtobufCompatibilityTable(t *testing.T) {
	m1 := proto3(msg("int32 a = 1;"))
	tests := []evolution{
		{"field added", []string{m1}, proto3(msg("int32 a = 1;", "string b = 2;")), "yyyyyyy"},
		{"field removed", []string{proto3(msg("int32 a = 1;", "string b = 2;"))}, m1, "yyyyyyy"},
		{"field renamed", []string{m1}, proto3(msg("int32 c = 1;")), "yyyyyyy"},
		{"field renumbered", []string{m1}, proto3(msg("int32 a = 2;")), "yyyyyyy"},
		{"int32 to int64", []string{m1}, proto3(msg("int64 a = 1;")), "yyyyyyy"},
		{"int32 to string", []string{m1}, proto3(msg("string a = 1;")), "ynnnnnn"},
		{"int32 to sint32", []string{m1}, proto3(msg("sint32 a = 1;")), "ynnnnnn"},
		{"fixed32 to sfixed32", []string{proto3(msg("fixed32 a = 1;"))}, proto3(msg("sfixed32 a = 1;")), "yyyyyyy"},
		{"string to bytes", []string{proto3(msg("string a = 1;"))}, proto3(msg("bytes a = 1;")), "yyyyyyy"},
		{"scalar to message", []string{m1}, proto3(msg("N a = 1;"), "message N {}"), "ynnnnnn"},
		{"message type changed", []string{proto3(msg("N a = 1;"), "message N {}", "message O {}")},
			proto3(msg("O a = 1;"), "message N {}", "message O {}"), "ynnnnnn"},
		{"message removed", []string{proto3(msg("int32 a = 1;"), "message N {}")}, m1, "ynnyynn"},
		{"message added", []string{m1}, proto3(msg("int32 a = 1;"), "message N {}"), "yyynnnn"},
		{"messages reordered", []string{proto3(msg("int32 a = 1;"), "message N {}")}, proto3("message N {}", msg("int32 a = 1;")), "yyyyyyy"},
		{"enum value added", []string{proto3(msg("E e = 1;"), "enum E { A = 0; B = 1; }")},
			proto3(msg("E e = 1;"), "enum E { A = 0; B = 1; C = 2; }"), "yyyyyyy"},
		{"enum to int32", []string{proto3(msg("E e = 1;"), "enum E { A = 0; }")}, proto3(msg("int32 e = 1;"), "enum E { A = 0; }"), "yyyyyyy"},
		{"enum to string", []string{proto3(msg("E e = 1;"), "enum E { A = 0; }")}, proto3(msg("string e = 1;"), "enum E { A = 0; }"), "ynnnnnn"},
		{"package changed", []string{m1}, strings.Replace(m1, "package p;", "package q;", 1), "ynnnnnn"},
		{"proto2 optional int32 made repeated", []string{"syntax = \"proto2\";\n" + msg("optional int32 a = 1;")},
			"syntax = \"proto2\";\n" + msg("repeated int32 a = 1;"), "ynnnnnn"},
		{"proto2 optional string made repeated", []string{"syntax = \"proto2\";\n" + msg("optional string a = 1;")},
			"syntax = \"proto2\";\n" + msg("repeated string a = 1;"), "yyyyyyy"},
		{"proto2 required field added", []string{"syntax = \"proto2\";\n" + msg("optional int32 a = 1;")},
			"syntax = \"proto2\";\n" + msg("optional int32 a = 1;", "required int32 b = 2;"), "ynnnnnn"},
		// Old readers miss the new oneof member c.
		{"field moved into a new oneof", []string{proto3(msg("int32 a = 1;", "int32 b = 2;"))},
			proto3(msg("int32 a = 1;", "oneof o { int32 b = 2; string c = 3; }")), "yyynnnn"},
		{"two fields moved into a oneof", []string{proto3(msg("int32 a = 1;", "int32 b = 2;"))},
			proto3(msg("oneof o { int32 a = 1; int32 b = 2; }")), "ynnyynn"},
		{"oneof field removed", []string{proto3(msg("oneof o { int32 a = 1; string b = 2; }"))},
			proto3(msg("oneof o { int32 a = 1; }")), "ynnyynn"},
		{"oneof removed whole", []string{proto3(msg("int32 x = 5;", "oneof o { int32 a = 1; string b = 2; }"))},
			proto3(msg("int32 x = 5;")), "yyyyyyy"},
		{"map value type changed", []string{proto3(msg("map<string, int32> m = 1;"))}, proto3(msg("map<string, string> m = 1;")), "ynnnnnn"},
		{"map value widened", []string{proto3(msg("map<string, int32> m = 1;"))}, proto3(msg("map<string, int64> m = 1;")), "yyyyyyy"},
		{"well-known type field added", []string{m1},
			"syntax = \"proto3\";\npackage p;\nimport \"google/protobuf/timestamp.proto\";\n" + msg("int32 a = 1;", "google.protobuf.Timestamp t = 2;"), "yyyyyyy"},
		{"nested message field type changed", []string{proto3("message M { message N { int32 x = 1; } N n = 1; }")},
			proto3("message M { message N { string x = 1; } N n = 1; }"), "ynnnnnn"},
		// Transitive: version 2 dropped the field, version 3 brings it back
		// with another type; only version 1 is broken by it.
		{"field back with another type", []string{m1, proto3(msg())}, proto3(msg("string a = 1;")), "yynynyn"},
		{"identical", []string{m1}, m1, "yyyyyyy"},
	}
	runEvolutions(t, typeProtobuf, tests)
}

// obj is a JSON Schema object with the given properties (name: schema)
// and more keywords.
func obj(props string, more ...string) string {
	s := `{"type":"object","properties":{` + props + `}`
	for _, m := range more {
		s += "," + m
	}
	return s + "}"
}

const closed = `"additionalProperties":false`

// TestJSONSchemaCompatibilityTable checks evolutions at each level
// against Confluent's JSON Schema rules (JsonSchema's diff, STRICT): a
// property added to an open content model may clash with what old data
// had there, one removed from a closed model is refused to its readers.
func TestJSONSchemaCompatibilityTable(t *testing.T) {
	str, integer := `{"type":"string"}`, `{"type":"integer"}`
	tests := []evolution{
		{"optional property added, open model", []string{obj(`"a":` + str)}, obj(`"a":` + str + `,"b":` + str), "ynnyynn"},
		{"optional property added, closed model", []string{obj(`"a":`+str, closed)}, obj(`"a":`+str+`,"b":`+str, closed), "yyynnnn"},
		{"property removed, open model", []string{obj(`"a":` + str + `,"b":` + str)}, obj(`"a":` + str), "yyynnnn"},
		{"property removed, closed model", []string{obj(`"a":`+str+`,"b":`+str, closed)}, obj(`"a":`+str, closed), "ynnyynn"},
		{"additionalProperties closed", []string{obj(`"a":` + str)}, obj(`"a":`+str, closed), "ynnyynn"},
		{"additionalProperties opened", []string{obj(`"a":`+str, closed)}, obj(`"a":` + str), "yyynnnn"},
		{"property string to integer", []string{obj(`"a":` + str)}, obj(`"a":` + integer), "ynnnnnn"},
		{"property integer to number", []string{obj(`"a":` + integer)}, obj(`"a":{"type":"number"}`), "yyynnnn"},
		{"property made required", []string{obj(`"a":` + str)}, obj(`"a":`+str, `"required":["a"]`), "ynnyynn"},
		{"property made required, with default", []string{obj(`"a":` + str)}, obj(`"a":{"type":"string","default":""}`, `"required":["a"]`), "yyyyyyy"},
		{"property no longer required", []string{obj(`"a":`+str, `"required":["a"]`)}, obj(`"a":` + str), "yyynnnn"},
		{"required property with default added, closed", []string{obj(`"a":`+str, closed)},
			obj(`"a":`+str+`,"b":{"type":"string","default":"x"}`, closed, `"required":["b"]`), "yyynnnn"},
		{"enum extended", []string{`{"enum":["A","B"]}`}, `{"enum":["A","B","C"]}`, "yyynnnn"},
		{"enum narrowed", []string{`{"enum":["A","B","C"]}`}, `{"enum":["A","B"]}`, "ynnyynn"},
		{"maxLength increased", []string{`{"type":"string","maxLength":5}`}, `{"type":"string","maxLength":10}`, "yyynnnn"},
		{"maxLength added", []string{str}, `{"type":"string","maxLength":10}`, "ynnyynn"},
		{"minimum raised", []string{`{"type":"number","minimum":1}`}, `{"type":"number","minimum":2}`, "ynnyynn"},
		{"pattern added", []string{str}, `{"type":"string","pattern":"^a"}`, "ynnyynn"},
		{"made nullable", []string{str}, `{"type":["string","null"]}`, "yyynnnn"},
		{"array items changed", []string{`{"type":"array","items":{"type":"string"}}`}, `{"type":"array","items":{"type":"integer"}}`, "ynnnnnn"},
		{"oneOf member added", []string{`{"oneOf":[{"type":"string"},{"type":"integer"}]}`},
			`{"oneOf":[{"type":"string"},{"type":"integer"},{"type":"boolean"}]}`, "yyynnnn"},
		{"description changed", []string{`{"type":"string","description":"a"}`}, `{"type":"string","description":"b"}`, "yyyyyyy"},
		{"referenced definition changed", []string{obj(`"a":{"$ref":"#/$defs/A"}`, `"$defs":{"A":{"type":"string"}}`)},
			obj(`"a":{"$ref":"#/$defs/A"}`, `"$defs":{"A":{"type":"boolean"}}`), "ynnnnnn"},
		{"recursive schema unchanged", []string{`{"type":"object","properties":{"next":{"$ref":"#"}}}`},
			`{"type":"object","properties":{"next":{"$ref":"#"}}}`, "yyyyyyy"},
		{"maxLength added by the middle version", []string{str, `{"type":"string","maxLength":5}`}, `{"type":"string","maxLength":5}`, "yynyyyn"},
		{"minItems added", []string{`{"type":"array"}`}, `{"type":"array","minItems":1}`, "ynnyynn"},
		{"uniqueItems added", []string{`{"type":"array"}`}, `{"type":"array","uniqueItems":true}`, "ynnyynn"},
		{"const changed", []string{`{"const":"a"}`}, `{"const":"b"}`, "ynnnnnn"},
		{"multipleOf reduced", []string{`{"type":"number","multipleOf":10}`}, `{"type":"number","multipleOf":5}`, "yyynnnn"},
		{"empty schema narrowed to string", []string{`{}`}, str, "ynnyynn"},
		{"identical", []string{obj(`"a":` + str)}, obj(`"a":` + str), "yyyyyyy"},
	}
	runEvolutions(t, typeJSON, tests)
}

// TestFormatIncompatibilityMessages: the messages are Confluent's, the
// reader and the writer named as its validator names them.
func TestFormatIncompatibilityMessages(t *testing.T) {
	tests := []struct {
		typ, old, next, level string
		want                  []string
	}{
		{typeProtobuf, proto3(msg("int32 a = 1;")), proto3(msg("string a = 1;")), levelBackward, []string{
			`{errorType:"FIELD_SCALAR_KIND_CHANGED", description:"The kind of a SCALAR field at path '#/M/1' in the new schema does not match its kind in the old schema"}`,
			"{oldSchemaVersion: 1}", "{validateFields: 'false', compatibility: 'BACKWARD'}"}},
		{typeProtobuf, proto3(msg("int32 a = 1;"), "message N {}"), proto3(msg("int32 a = 1;")), levelFull, []string{
			`{errorType:"MESSAGE_REMOVED", description:"The new schema is missing a MESSAGE type at path '#/N' in the old schema"}`}},
		{typeJSON, obj(`"a":{"type":"string"}`), obj(`"a":{"type":"string"}`, closed), levelBackward, []string{
			`{errorType:"ADDITIONAL_PROPERTIES_REMOVED", description:"The keyword at path '#/additionalProperties' in the new schema is not present in the old schema'}`}},
		{typeJSON, obj(`"a":{"type":"string"}`, closed), obj(`"a":{"type":"string"}`), levelForward, []string{
			`{errorType:"ADDITIONAL_PROPERTIES_REMOVED", description:"The keyword at path '#/additionalProperties' in the old schema is not present in the new schema'}`,
			"{validateFields: 'false', compatibility: 'FORWARD'}"}},
		{typeAvro, `"int"`, `"string"`, levelBackward, []string{"{oldSchema: '\"int\"'}"}},
		{typeJSON, `{"type":"string"}`, `{"type":"integer"}`, levelFull, []string{
			`{errorType:"TYPE_CHANGED", description:"A type at path '#/' is different between the old schema and the new schema'}`,
			`{errorType:"TYPE_CHANGED", description:"A type at path '#/' is different between the new schema and the old schema'}`}},
	}
	for _, tt := range tests {
		s := newState()
		s.putVersion(&version{schemaValue: schemaValue{Subject: "s", Version: 1, ID: 1, SchemaType: tt.typ, Schema: tt.old}})
		p, err := parseSchema(tt.typ, tt.next, nil)
		if err != nil {
			t.Fatal(err)
		}
		msgs := s.incompatibilities(compatRule{level: tt.level}, p, s.versions("s", false), false)
		for _, want := range tt.want {
			if !strings.Contains(strings.Join(msgs, "\n"), want) {
				t.Errorf("%s %s: messages\n%s\nlack\n%s", tt.typ, tt.level, strings.Join(msgs, "\n"), want)
			}
		}
	}
}

// TestProtobufDescriptorForm: a schema sent as Confluent's clients send
// it (a base64 FileDescriptorProto) compiles, and ?format=serialized
// gives a text schema in that form.
func TestProtobufDescriptorForm(t *testing.T) {
	text := proto3(msg("int32 a = 1;", "map<string, int32> m = 2;"))
	p, err := parseSchema(typeProtobuf, text, nil)
	if err != nil {
		t.Fatal(err)
	}
	b64 := p.proto.serialized()
	q, err := parseSchema(typeProtobuf, b64, nil)
	if err != nil {
		t.Fatalf("%s: %v", b64, err)
	}
	if got := q.proto.file.Messages().ByName("M").Fields().Len(); got != 2 {
		t.Fatalf("M has %d fields", got)
	}
	if msgs := readIssues(q, p, "", "new", "old"); len(msgs) != 0 {
		t.Fatalf("text and descriptor forms differ: %v", msgs)
	}
}
