package registry

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/poll"
)

// TestGUIDAsConfluent: a schema's GUID is the one Confluent's registry
// gives it, for each combination of references, metadata and rules
// (Confluent's own regression values, from its schema-md5-golden-data);
// metadata's keys and sets are hashed sorted, once each, whatever their
// order in the record.
func TestGUIDAsConfluent(t *testing.T) {
	const schema = `{"type":"record","name":"Person","namespace":"io.confluent.kafka.example","fields":[` +
		`{"name":"name","type":"string"},{"name":"age","type":"int"},{"name":"ssn","type":"string"},` +
		`{"name":"user","type":"io.confluent.kafka.example.User"},{"name":"address","type":"io.confluent.kafka.example.Address"}]}`
	refs := []Reference{{"io.confluent.kafka.example.User", "User", 1}, {"io.confluent.kafka.example.Address", "Address", 2}}
	metadata := `{"sensitive":["ssn","credit-card","ssn"],` +
		`"properties":{"version":"1.0.0","owner":"data-team","description":"Person schema for user management"},` +
		`"tags":{"team":["data-engineering"],"environment":["staging","production"]}}`
	rule := func(name, doc, kind, mode, typ, field, expr string) string {
		return `{"name":"` + name + `","doc":"` + doc + `","kind":"` + kind + `","mode":"` + mode + `","type":"` + typ +
			`","tags":["PERSON"],"params":{"field":"` + field + `"},"expr":"` + expr + `","onSuccess":"none","onFailure":"error","disabled":false}`
	}
	ruleSet := `{"migrationRules":[` +
		rule("upgrade-rule-1", "Upgrade rule for field changes", "TRANSFORM", "UPGRADE", "FIELD_UPDATE", "name", "field.name = field.name.toUpperCase()") + `,` +
		rule("downgrade-rule-1", "Downgrade rule for compatibility", "TRANSFORM", "DOWNGRADE", "FIELD_DELETE", "ssn", "delete field.ssn") +
		`],"domainRules":[` +
		rule("validation-rule-1", "Validate age field", "CONDITION", "WRITE", "FIELD_VALIDATION", "age", "field.age >= 0 && field.age <= 150") + `,` +
		rule("masking-rule-1", "Mask sensitive data on read", "TRANSFORM", "READ", "DATA_MASKING", "ssn", "field.ssn = '***-**-****'") + `]}`
	// By references (4), metadata (2), rules (1).
	want := []string{
		"d629bb05-ad85-3d20-fbcb-895de3c459f7",
		"c0708b8f-65f6-b698-bffe-45c1dfa8987c",
		"2034166c-90a8-1166-0ff2-f5f62c80dbe0",
		"d9877161-cfdf-d8c5-4eb4-ab37ed50e9d5",
		"5c08d70e-5347-41b2-6369-199425d044eb",
		"96825311-eb10-b7f5-48be-2a023b4c018e",
		"3619d8e0-2ee8-de51-0d9e-2520d39174d5",
		"589556fb-ad98-e8e0-94fa-e6da3455433a",
	}
	for combo, w := range want {
		v := schemaValue{Schema: schema}
		if combo&4 != 0 {
			v.References = refs
		}
		if combo&2 != 0 {
			v.Metadata = json.RawMessage(metadata)
		}
		if combo&1 != 0 {
			v.RuleSet = json.RawMessage(ruleSet)
		}
		g := guidOf(&v)
		if g.String() != w {
			t.Errorf("combination %03b: guid %s, want %s", combo, g, w)
		}
		for _, s := range []string{w, strings.ToUpper(w), strings.ReplaceAll(w, "-", "")} {
			if p, ok := parseGUID(s); !ok || p.String() != w {
				t.Errorf("parseGUID(%q) = %s, %v", s, p, ok)
			}
		}
	}
	for _, bad := range []string{"", "nope", want[0][:35], want[0] + "0", strings.ReplaceAll(want[0], "-", "_")} {
		if _, ok := parseGUID(bad); ok {
			t.Errorf("parseGUID(%q) took it", bad)
		}
	}
}

// TestGUIDEndpoints: every answer about a schema carries its GUID (a
// registration's too, which answers the version registered or found, as
// Confluent's RegisterSchemaResponse); GET /schemas/guids/{guid} answers
// the schema, from the default context first, and .../ids its id in each
// context; a GUID nowhere is Confluent's 40403 (and no ids).
func TestGUIDEndpoints(t *testing.T) {
	tr := newTestRegistry(t)
	str, long := guidText(`"string"`), guidText(`"long"`)
	meta := `{"properties":{"owner":"team-a"}}`
	withMeta := guidOf(&schemaValue{Schema: `"string"`, Metadata: json.RawMessage(meta)}).String()
	proto := "syntax = \"proto3\";\nmessage P { string a = 1; }"
	none := "00000000-0000-0000-0000-000000000000"
	notFound := func(g string) string { return `{"error_code":40403,"message":"Schema ` + g + ` not found"}` }
	strAnswer := `{"guid":"` + str + `","schema":"\"string\""}`
	tr.script(t, []step{
		{"POST", "/subjects/s/versions", body(`"string"`), 200, `{"id":1,"version":1,"guid":"` + str + `","schema":"\"string\""}`},
		// The same schema under another subject, and in another context
		// (with an id of its own there): the same GUID.
		{"POST", "/subjects/t/versions", body(`"string"`), 200, `{"id":1,"version":1,"guid":"` + str + `","schema":"\"string\""}`},
		{"POST", "/subjects/:.ctx:u/versions", body(`"long"`), 200, `{"id":1,"version":1,"guid":"` + long + `","schema":"\"long\""}`},
		{"POST", "/subjects/:.ctx:s/versions", body(`"string"`), 200, `{"id":2,"version":1,"guid":"` + str + `","schema":"\"string\""}`},
		// Registered again: the version found.
		{"POST", "/subjects/s/versions", body(` "string" `), 200, `{"id":1,"version":1,"guid":"` + str + `","schema":"\"string\""}`},
		// Metadata is part of a schema, and of its GUID.
		{"POST", "/subjects/m/versions", `{"schema":"\"string\"","metadata":` + meta + `}`, 200,
			`{"id":2,"version":1,"guid":"` + withMeta + `","metadata":` + meta + `,"schema":"\"string\""}`},
		{"POST", "/subjects/t", body(`"string"`), 200, `{"subject":"t","version":1,"id":1,"guid":"` + str + `","schema":"\"string\""}`},
		{"GET", "/subjects/m/versions/1", "", 200, `{"subject":"m","version":1,"id":2,"guid":"` + withMeta + `","metadata":` + meta + `,"schema":"\"string\""}`},
		{"GET", "/schemas/guids/" + str, "", 200, strAnswer},
		{"GET", "/schemas/guids/" + strings.ToUpper(str), "", 200, strAnswer},
		{"GET", "/schemas/guids/" + strings.ReplaceAll(str, "-", ""), "", 200, strAnswer},
		{"GET", "/schemas/guids/" + withMeta, "", 200, `{"guid":"` + withMeta + `","metadata":` + meta + `,"schema":"\"string\""}`},
		{"GET", "/schemas/guids/" + long, "", 200, `{"guid":"` + long + `","schema":"\"long\""}`},
		{"GET", "/schemas/guids/" + str + "/ids", "", 200, `[{"context":".","id":1},{"context":".ctx","id":2}]`},
		{"GET", "/schemas/guids/" + long + "/ids", "", 200, `[{"context":".ctx","id":1}]`},
		{"GET", "/schemas/guids/" + none, "", 404, notFound(none)},
		{"GET", "/schemas/guids/" + none + "/ids", "", 200, `[]`},
		{"GET", "/schemas/guids/nope", "", 404, notFound("nope")},
		{"GET", "/schemas/guids/nope/ids", "", 200, `[]`},
		// ?format= changes the text answered, not the GUID.
		{"POST", "/subjects/p/versions", typed(typeProtobuf, proto, ""), 200, `~"guid":"` + guidText(proto) + `","schemaType":"PROTOBUF"`},
		{"GET", "/schemas/guids/" + guidText(proto) + "?format=serialized", "", 200, `~{"guid":"` + guidText(proto) + `","schemaType":"PROTOBUF","schema":"C`},
		// Soft-deleted, a schema is still found by its GUID; hard-deleted,
		// no longer in its context.
		{"DELETE", "/subjects/s", "", 200, `[1]`},
		{"DELETE", "/subjects/t", "", 200, `[1]`},
		{"GET", "/schemas/guids/" + str + "/ids", "", 200, `[{"context":".","id":1},{"context":".ctx","id":2}]`},
		{"DELETE", "/subjects/s?permanent=true", "", 200, `[1]`},
		{"DELETE", "/subjects/t?permanent=true", "", 200, `[1]`},
		{"GET", "/schemas/guids/" + str + "/ids", "", 200, `[{"context":".ctx","id":2}]`},
		{"GET", "/schemas/guids/" + str, "", 200, strAnswer},
	})
}

// TestGUIDOfConfluentRecord: a SCHEMA record's "md5" (Confluent writes
// one when it encrypts sensitive metadata) is its schema's GUID, and is
// written back as read.
func TestGUIDOfConfluentRecord(t *testing.T) {
	tr := newTestRegistry(t)
	g := guid{0xa1, 0xb2, 0xc3, 0xd4, 0xe5, 0xf6, 0x07, 0x18, 0x29, 0x3a, 0x4b, 0x5c, 0x6d, 0x7e, 0x8f, 0x90}
	md5 := base64.StdEncoding.EncodeToString(g[:])
	tr.log.raw(`{"keytype":"SCHEMA","subject":"enc-value","version":1,"magic":1}`,
		`{"subject":"enc-value","version":1,"id":5,"md5":"`+md5+`","schemaType":"AVRO","schema":"\"string\"","deleted":false}`)
	poll.Eventually(t, 10*time.Second, func() error {
		if next, _ := tr.state.applied(); next < 2 {
			return errors.New("not replayed yet")
		}
		return nil
	})
	tr.script(t, []step{
		{"GET", "/subjects/enc-value/versions/1", "", 200, `{"subject":"enc-value","version":1,"id":5,"guid":"` + g.String() + `","schema":"\"string\""}`},
		{"GET", "/schemas/guids/" + g.String(), "", 200, `{"guid":"` + g.String() + `","schema":"\"string\""}`},
		{"GET", "/schemas/guids/" + guidText(`"string"`), "", 404, `~40403`},
		{"DELETE", "/subjects/enc-value/versions/1", "", 200, `1`},
	})
	written := tr.log.written()
	want := `{"keytype":"SCHEMA","subject":"enc-value","version":1,"magic":1} ` +
		`{"subject":"enc-value","version":1,"id":5,"md5":"` + md5 + `","schemaType":"AVRO","schema":"\"string\"","deleted":true}`
	if last := written[len(written)-1]; last != want {
		t.Fatalf("soft delete wrote\n%s\nwant\n%s", last, want)
	}
}
