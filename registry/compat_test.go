package registry

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// rec is an Avro record schema named r with the given fields.
func rec(fields ...string) string {
	return `{"type":"record","name":"r","fields":[` + strings.Join(fields, ",") + `]}`
}

func enum(symbols ...string) string {
	return `{"type":"record","name":"r","fields":[{"name":"e","type":{"type":"enum","name":"E","symbols":["` + strings.Join(symbols, `","`) + `"]}}]}`
}

// TestAvroCompatibilityTable checks evolutions at each level against
// the answers Confluent's documentation gives ("Schema Evolution and
// Compatibility"): BACKWARD, consumers of the new schema read data of the
// last; FORWARD, consumers of the last read data of the new; FULL, both;
// the _TRANSITIVE levels against every earlier version.
func TestAvroCompatibilityTable(t *testing.T) {
	const (
		a     = `{"name":"a","type":"int"}`
		aLong = `{"name":"a","type":"long"}`
		aStr  = `{"name":"a","type":"string"}`
		b     = `{"name":"b","type":"string"}`
		bDef  = `{"name":"b","type":"string","default":""}`
		bInt  = `{"name":"b","type":"int"}`
		bInt0 = `{"name":"b","type":"int","default":0}`
		bOpt  = `{"name":"b","type":["null","string"],"default":null}`
		c     = `{"name":"c","type":"int","aliases":["a"]}`
	)
	tests := []evolution{
		{"add field with default", []string{rec(a)}, rec(a, bDef), "yyyyyyy"},
		{"add optional field", []string{rec(a)}, rec(a, bOpt), "yyyyyyy"},
		{"add field without default", []string{rec(a)}, rec(a, b), "ynnyynn"},
		{"remove field with default", []string{rec(a, bDef)}, rec(a), "yyyyyyy"},
		{"remove field without default", []string{rec(a, b)}, rec(a), "yyynnnn"},
		{"promote int to long", []string{rec(a)}, rec(aLong), "yyynnnn"},
		{"narrow long to int", []string{rec(aLong)}, rec(a), "ynnyynn"},
		{"change int to string", []string{rec(a)}, rec(aStr), "ynnnnnn"},
		{"rename field with alias", []string{rec(a)}, rec(c), "yyynnnn"},
		{"rename field without alias", []string{rec(a)}, rec(`{"name":"c","type":"int"}`), "ynnnnnn"},
		{"enum symbol added", []string{enum("A", "B")}, enum("A", "B", "C"), "yyynnnn"},
		{"enum symbol removed", []string{enum("A", "B", "C")}, enum("A", "B"), "ynnyynn"},
		{"field made nullable", []string{rec(a, b)}, rec(a, `{"name":"b","type":["null","string"]}`), "yyynnnn"},
		{"record renamed", []string{rec(a)}, `{"type":"record","name":"other","fields":[` + a + `]}`, "ynnnnnn"},
		{"identical", []string{rec(a, bDef)}, rec(a, bDef), "yyyyyyy"},
		{"primitive to primitive", []string{`"string"`}, `"bytes"`, "yyyyyyy"},
		{"primitive int to string", []string{`"int"`}, `"string"`, "ynnnnnn"},
		// Transitive: only the first version is broken by the third.
		{"default dropped from a field v2 added", []string{rec(a), rec(a, bDef)}, rec(a, b), "yynyyyn"},
		{"field given a default, then removed", []string{rec(a, bInt), rec(a, bInt0)}, rec(a), "yyyynyn"},
		{"field added without default after a default one", []string{rec(a), rec(a, bInt0)}, rec(a, bInt), "yynyyyn"},
	}
	runEvolutions(t, typeAvro, tests)
}

// evolution is a schema registered after a history of versions, and
// whether each level lets it: in the order of levels (NONE, BACKWARD,
// BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL,
// FULL_TRANSITIVE), y compatible, n not.
type evolution struct {
	name    string
	history []string // earlier versions, oldest first
	next    string
	want    string
}

func runEvolutions(t *testing.T, typ string, tests []evolution) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newState()
			for i, h := range tt.history {
				s.putVersion(&version{schemaValue: schemaValue{Subject: "s", Version: i + 1, ID: i + 1, SchemaType: typ, Schema: h}})
			}
			p, err := parseSchema(typ, tt.next, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, why := "", ""
			for _, level := range levels {
				msgs := s.incompatibilities(compatRule{level: level}, p, s.versions("s", false), false)
				got += pick(len(msgs) == 0, "y", "n")
				if len(msgs) > 0 && why == "" {
					why = strings.Join(msgs, "\n")
				}
			}
			if got != tt.want {
				t.Fatalf("got %s, want %s (%s)\n%s", got, tt.want, strings.Join(levels, " "), why)
			}
		})
	}
}

// TestIncompatibilityMessages: the verbose answer names the version and
// the level, as Confluent's does.
func TestIncompatibilityMessages(t *testing.T) {
	s := newState()
	s.putVersion(&version{schemaValue: schemaValue{Subject: "s", Version: 1, ID: 1, SchemaType: typeAvro, Schema: rec(`{"name":"a","type":"int"}`)}})
	p, err := parseSchema(typeAvro, rec(`{"name":"a","type":"int"}`, `{"name":"b","type":"string"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs := strings.Join(s.incompatibilities(compatRule{level: levelBackward}, p, s.versions("s", false), false), "\n")
	for _, want := range []string{
		"{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'b' at path '/fields/1' in the new schema has no default value and is missing in the old schema', additionalInfo:'b'}",
		"{oldSchemaVersion: 1}", "{validateFields: 'false', compatibility: 'BACKWARD'}", fmt.Sprintf("{oldSchema: '%s'}", rec(`{"name":"a","type":"int"}`))} {
		if !strings.Contains(msgs, want) {
			t.Errorf("messages %q lack %q", msgs, want)
		}
	}
}

// TestNormalizedForm: normalize=true stores and compares the schema with
// its attributes in Avro's order, whatever order they came in.
func TestNormalizedForm(t *testing.T) {
	in := `{"fields":[{"type":["null",{"type":"array","items":"int"}],"default":null,"name":"f"}],"name":"r","type":"record"}`
	want := `{"type":"record","name":"r","fields":[{"name":"f","type":["null",{"type":"array","items":"int"}],"default":null}]}`
	p, err := parseSchema(typeAvro, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.normalized != want {
		t.Fatalf("normalized\n%s\nwant\n%s", p.normalized, want)
	}
}

// TestAvroIncompatibilities: every incompatibility Avro's checker finds,
// with its type, message and path, as Avro's own
// TestSchemaCompatibilityMultiple has them, worded as Confluent words
// them.
func TestAvroIncompatibilities(t *testing.T) {
	record := func(name, fields string) string {
		return `{"type":"record","name":"` + name + `","fields":[` + fields + `]}`
	}
	enum := func(name, symbols string) string {
		return `{"type":"enum","name":"` + name + `","symbols":[` + symbols + `]}`
	}
	field := func(name, typ string) string { return `{"name":"` + name + `","type":` + typ + `}` }
	sub := func(fixedSize, union, readerUnion, ns, items string, extra bool) string {
		fields := []string{field("identical_1_field", `"long","default":42`)}
		if extra {
			fields = append(fields, field("extra_no_default_field", `"long"`))
		}
		fields = append(fields,
			field("fixed_length_mismatch_field", `{"type":"fixed","name":"fixed_length_mismatch_type","size":`+fixedSize+`}`),
			field("union_missing_branches_field", union),
			field("reader_union_does_not_support_type_field", readerUnion),
			field("record_fqn_mismatch_field", `{"type":"record","name":"recordA","namespace":"`+ns+`","fields":[`+
				field("A_field_0", `"boolean","default":true`)+","+field("array_type_mismatch_field", `{"type":"array","items":"`+items+`"}`)+`]}`))
		return record("sub_record_type", strings.Join(fields, ","))
	}
	reader := record("base", strings.Join([]string{
		field("check_enum_symbols_field", enum("check_enum_symbols_type", `"A","C"`)),
		field("check_enum_name_field", enum("check_enum_name_type", `"A","B","C","D"`)),
		field("type_mismatch_field", `"string"`),
		field("sub_record", sub("4", `["boolean"]`, `["boolean"]`, "not_nsA", "string", true)),
	}, ","))
	writer := record("base", strings.Join([]string{
		field("check_enum_symbols_field", enum("check_enum_symbols_type", `"A","B","C","D"`)),
		field("check_enum_name_field", enum("check_enum_name_type_ERR", `"A","B","C","D"`)),
		field("type_mismatch_field", `"long"`),
		field("sub_record", sub("8", `["boolean","double","string"]`, `"long"`, "nsA", "boolean", false)),
	}, ","))
	r, err := parseSchema(typeAvro, reader, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := parseSchema(typeAvro, writer, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"{errorType:'MISSING_ENUM_SYMBOLS', description:'The new schema is missing enum symbols '[B, D]' at path '/fields/0/type/symbols' in the old schema', additionalInfo:'[B, D]'}",
		"{errorType:'NAME_MISMATCH', description:'The name of the schema has changed (path '/fields/1/type/name')', additionalInfo:'expected: check_enum_name_type_ERR'}",
		"{errorType:'TYPE_MISMATCH', description:'The type (path '/fields/2/type') of a field in the new schema does not match with the old schema', additionalInfo:'reader type: STRING not compatible with writer type: LONG'}",
		"{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'extra_no_default_field' at path '/fields/3/type/fields/1' in the new schema has no default value and is missing in the old schema', additionalInfo:'extra_no_default_field'}",
		"{errorType:'FIXED_SIZE_MISMATCH', description:'The size of FIXED type field at path '/fields/3/type/fields/2/type/size' in the new schema does not match with the old schema', additionalInfo:'expected: 8, found: 4'}",
		"{errorType:'MISSING_UNION_BRANCH', description:'The new schema is missing a type inside a union field at path '/fields/3/type/fields/3/type/1' in the old schema', additionalInfo:'reader union lacking writer type: DOUBLE'}",
		"{errorType:'MISSING_UNION_BRANCH', description:'The new schema is missing a type inside a union field at path '/fields/3/type/fields/3/type/2' in the old schema', additionalInfo:'reader union lacking writer type: STRING'}",
		"{errorType:'MISSING_UNION_BRANCH', description:'The new schema is missing a type inside a union field at path '/fields/3/type/fields/4/type' in the old schema', additionalInfo:'reader union lacking writer type: LONG'}",
		"{errorType:'TYPE_MISMATCH', description:'The type (path '/fields/3/type/fields/5/type/fields/1/type/items') of a field in the new schema does not match with the old schema', additionalInfo:'reader type: STRING not compatible with writer type: BOOLEAN'}",
	}
	got := readIssues(r, w, "", "new", "old")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := readIssues(w, w, "", "new", "old"); len(got) != 0 {
		t.Errorf("a schema cannot read itself: %v", got)
	}
}

// An old schema over 10 KiB is cut in the messages, as Confluent cuts it.
func TestIncompatibilityMessageTruncated(t *testing.T) {
	var fields []string
	for i := range 400 {
		fields = append(fields, fmt.Sprintf(`{"name":"field_number_%d","type":"string"}`, i))
	}
	old := rec(fields...)
	s := newState()
	s.putVersion(&version{schemaValue: schemaValue{Subject: "s", Version: 1, ID: 1, SchemaType: typeAvro, Schema: old}})
	p, err := parseSchema(typeAvro, rec(append(fields, `{"name":"b","type":"string"}`)...), nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs := s.incompatibilities(compatRule{level: levelBackward}, p, s.versions("s", false), false)
	want := "{oldSchema: <truncated> '" + old[:maxLoggedSchema] + "...'}"
	if len(old) <= maxLoggedSchema || !slices.Contains(msgs, want) {
		t.Errorf("messages %q lack the old schema cut at %d (it is %d long)", msgs, maxLoggedSchema, len(old))
	}
}
