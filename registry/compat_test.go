package registry

import (
	"fmt"
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
				msgs := s.incompatibilities(level, "", p, s.versions("s", false), false)
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
	msgs := strings.Join(s.incompatibilities(levelBackward, "", p, s.versions("s", false), false), "\n")
	for _, want := range []string{"READER_INCOMPATIBLE", "{oldSchemaVersion: 1}", "{compatibility: 'BACKWARD'}", fmt.Sprintf("{oldSchema: '%s'}", rec(`{"name":"a","type":"int"}`))} {
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
