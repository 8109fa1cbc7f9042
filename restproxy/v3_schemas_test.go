package restproxy_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/samsa-io/samsa/internal/testutil"
)

// TestV3SchemaFormats: v3 records with AVRO, PROTOBUF and JSONSCHEMA keys
// and values, their schema given by text, schema_id, schema_version or
// as the latest of the subject, go out in Confluent's wire format, and
// the failures are answered as Confluent's v3 ProduceAction and
// SchemaManager answer them.
func TestV3SchemaFormats(t *testing.T) {
	t.Parallel()
	b := startProxy(t, map[string]string{"samsa.schema.registry.listener": "127.0.0.1:0"})
	b.createTopic(t, "v3s", 1)
	b.createTopic(t, "v3none", 1)
	md, err := b.adm.BrokerMetadata(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	recs := b.url + "/v3/clusters/" + md.Cluster + "/topics/v3s/records"
	produce := func(body string) answer {
		return do(t, "POST", recs, body, "Content-Type", "application/json")
	}
	const v1 = `{"type":"record","name":"User","namespace":"samsa","fields":[{"name":"name","type":"string"}]}`
	const v2 = `{"type":"record","name":"User","namespace":"samsa","fields":[{"name":"name","type":"string"},{"name":"age","type":"int","default":0}]}`
	quote := func(s string) string { q, _ := jsonString(s); return q }

	// By text: registered under topic-value (TopicNameStrategy).
	var first answer
	testutil.Eventually(t, 30*time.Second, func() error {
		first = produce(`{"value":{"type":"AVRO","schema":` + quote(v1) + `,"data":{"name":"a"}}}`)
		if field(t, first.body, "error_code") != 200.0 {
			return fmt.Errorf("produce by schema: %s", first.body)
		}
		return nil
	})
	id1 := field(t, first.body, "value.schema_id")
	wantFields(t, "by schema", first, 200, map[string]any{"value.type": "AVRO", "value.subject": "v3s-value", "value.schema_version": 1, "value.size": 7, "offset": 0})
	wantFields(t, "by id", produce(fmt.Sprintf(`{"value":{"schema_id":%v,"data":{"name":"b"}}}`, id1)), 200,
		map[string]any{"error_code": 200, "value.type": "AVRO", "value.schema_id": id1, "value.subject": "v3s-value", "value.schema_version": 1})
	wantFields(t, "latest", produce(`{"value":{"data":{"name":"c"}}}`), 200, map[string]any{"error_code": 200, "value.schema_id": id1, "value.schema_version": 1})
	second := produce(`{"value":{"type":"AVRO","schema":` + quote(v2) + `,"data":{"name":"d","age":4}}}`)
	id2 := field(t, second.body, "value.schema_id")
	wantFields(t, "second version", second, 200, map[string]any{"error_code": 200, "value.schema_version": 2})
	wantFields(t, "version 1", produce(`{"value":{"schema_version":1,"data":{"name":"e"}}}`), 200, map[string]any{"value.schema_id": id1, "value.schema_version": 1})
	wantFields(t, "latest is 2", produce(`{"value":{"data":{"name":"f","age":6}}}`), 200, map[string]any{"value.schema_id": id2})

	// Protobuf key by text, JSON Schema value under TOPIC_RECORD_NAME.
	const proto = `syntax = "proto3"; package samsa.test; message Key { string id = 1; }`
	const js = `{"title":"Thing","type":"object","properties":{"n":{"type":"integer"}}}`
	both := produce(`{"key":{"type":"PROTOBUF","schema":` + quote(proto) + `,"data":{"id":"k1"}},` +
		`"value":{"type":"JSONSCHEMA","subject_name_strategy":"TOPIC_RECORD_NAME","schema":` + quote(js) + `,"data":{"n":7}}}`)
	wantFields(t, "protobuf and jsonschema", both, 200, map[string]any{"error_code": 200, "key.type": "PROTOBUF", "key.subject": "v3s-key",
		"value.type": "JSONSCHEMA", "value.subject": "v3s-Thing", "value.schema_version": 1})
	pid, jid := field(t, both.body, "key.schema_id"), field(t, both.body, "value.schema_id")

	// Failures, each answered in the stream of a 200 as Confluent does.
	for _, c := range []struct {
		name, body string
		code       int
		msg        string
	}{
		{"unknown id", `{"value":{"schema_id":999,"data":1}}`, 42207, "Error serializing message. Error when fetching schema by id. schemaId = 999"},
		{"unknown version", `{"value":{"schema_version":9,"data":1}}`, 400, "Schema does not exist for subject: v3s-value, version: 9"},
		{"id not under the subject", fmt.Sprintf(`{"key":{"schema_id":%v,"data":{"name":"x"}}}`, id1), 42207, "Error serializing message. Error when fetching schema version. subject = v3s-key"},
		{"type with id", fmt.Sprintf(`{"value":{"type":"AVRO","schema_id":%v,"data":{"name":"x"}}}`, id1), 400, "Unsupported argument: "},
		{"type without schema", `{"value":{"type":"AVRO","data":{"name":"x"}}}`, 400, "Unsupported argument: "},
		{"record name without schema", `{"value":{"subject_name_strategy":"RECORD_NAME","data":1}}`, 400, "Cannot use schema_subject_strategy=RECORD_NAME without schema_id or schema."},
		{"bad schema", `{"value":{"type":"AVRO","schema":"{\"type\":\"nope\"}","data":1}}`, 400, "Error parsing schema with format = AVRO"},
		{"not the schema's data", fmt.Sprintf(`{"value":{"schema_id":%v,"data":{"name":1}}}`, id1), 400, ""},
	} {
		got := produce(c.body)
		if got.status != 200 || field(t, got.body, "error_code") != float64(c.code) || !strings.HasPrefix(field(t, got.body, "message").(string), c.msg) {
			t.Fatalf("%s: %d %s, want error %d %q", c.name, got.status, got.body, c.code, c.msg)
		}
	}
	none := do(t, "POST", strings.Replace(recs, "/v3s/", "/v3none/", 1), `{"value":{"data":1}}`, "Content-Type", "application/json")
	wantFields(t, "no subject", none, 200, map[string]any{"error_code": 42207, "message": "Error serializing message. Error when fetching latest schema version. subject = v3none-value"})

	// A batch entry by id.
	batch := do(t, "POST", recs+":batch", fmt.Sprintf(`{"entries":[{"id":"a","value":{"schema_id":%v,"data":{"name":"g"}}},{"id":"b","value":{"schema_id":999,"data":1}}]}`, id1),
		"Content-Type", "application/json")
	wantFields(t, "batch", batch, 200, map[string]any{"successes.0.id": "a", "successes.0.value.schema_id": id1, "failures.0.id": "b", "failures.0.error_code": 42207})

	// The wire format: 0, the schema's id, the serialized data.
	got := consumeAll(t, b.Addr(), "v3s", 8)
	wire := func(i int, v []byte, id any) []byte {
		t.Helper()
		if len(v) < 5 || v[0] != 0 || float64(binary.BigEndian.Uint32(v[1:5])) != id.(float64) {
			t.Fatalf("record %d: wire format %x, want id %v", i, v, id)
		}
		return v[5:]
	}
	for i, want := range []struct {
		id   any
		name string
	}{{id1, "a"}, {id1, "b"}, {id1, "c"}, {id2, "d"}, {id1, "e"}, {id2, "f"}} {
		schema := v1
		if want.id == id2 {
			schema = v2
		}
		var u map[string]any
		if err := avro.Unmarshal(avro.MustParse(schema), wire(i, got[i].Value, want.id), &u); err != nil || u["name"] != want.name {
			t.Fatalf("record %d: %v %v, want %s", i, u, err, want.name)
		}
	}
	if k := wire(6, got[6].Key, pid); string(k) != "\x00\x0a\x02k1" {
		t.Fatalf("protobuf key: %x", k)
	}
	if v := wire(6, got[6].Value, jid); string(v) != `{"n":7}` {
		t.Fatalf("jsonschema value: %s", v)
	}
	wire(7, got[7].Value, id1)
}
