package restproxy_test

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/samsa-io/samsa/internal/testutil"
)

const (
	ctAvro       = "application/vnd.kafka.avro.v2+json"
	ctJSONSchema = "application/vnd.kafka.jsonschema.v2+json"
	userSchema   = `{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"age","type":["null","int"],"default":null},{"name":"data","type":"bytes"}]}`
)

// TestV2SchemaFormats: avro and jsonschema records go through the
// broker's schema registry, by schema or by id, in Confluent's wire
// format, and come back out of a consumer instance as they went in.
func TestV2SchemaFormats(t *testing.T) {
	t.Parallel()
	b := startProxy(t, map[string]string{"samsa.schema.registry.listener": "127.0.0.1:0"})
	b.createTopic(t, "avrotest", 1)
	b.createTopic(t, "jstest", 1)
	u := b.url
	schemaJSON, _ := jsonString(userSchema)
	body := `{"value_schema":` + schemaJSON + `,"records":[{"value":{"name":"testUser","age":{"int":3},"data":"\u00ff\u0001"}}]}`
	got := produceOnceRegistryServes(t, u+"/topics/avrotest", ctAvro, body)
	id := field(t, got.body, "value_schema_id")
	if id == nil || field(t, got.body, "offsets.0.offset") != 0.0 || field(t, got.body, "key_schema_id") != nil {
		t.Fatalf("produce avro: %s", got.body)
	}
	byID := fmt.Sprintf(`{"value_schema_id":%v,"records":[{"value":{"name":"second","age":null,"data":""}}]}`, id)
	wantJSON(t, "by id", do(t, "POST", u+"/topics/avrotest", byID, "Content-Type", ctAvro), 200,
		fmt.Sprintf(`{"offsets":[{"partition":0,"offset":1,"error_code":null,"error":null}],"key_schema_id":null,"value_schema_id":%v}`, id))

	// Confluent's wire format: 0, the id, the Avro binary.
	recs := consumeAll(t, b.Addr(), "avrotest", 2)
	v := recs[0].Value
	if len(v) < 5 || v[0] != 0 || float64(binary.BigEndian.Uint32(v[1:5])) != id.(float64) {
		t.Fatalf("wire format: %x", v)
	}
	var user map[string]any
	if err := avro.Unmarshal(avro.MustParse(userSchema), v[5:], &user); err != nil || user["name"] != "testUser" || string(user["data"].([]byte)) != "\xff\x01" {
		t.Fatalf("avro record: %v %v", user, err)
	}

	for _, c := range []struct {
		name, ctype, body string
		code              int
	}{
		{"key without key schema", ctAvro, fmt.Sprintf(`{"value_schema_id":%v,"records":[{"key":"k","value":{"name":"x","data":""}}]}`, id), 42201},
		{"value without value schema", ctAvro, `{"records":[{"value":{"name":"x"}}]}`, 42202},
		{"not the schema's", ctAvro, fmt.Sprintf(`{"value_schema_id":%v,"records":[{"value":{"name":1,"data":""}}]}`, id), 42203},
		{"bad schema", ctAvro, `{"value_schema":"{\"type\":\"nope\"}","records":[{"value":1}]}`, 42205},
		{"unknown id", ctAvro, `{"value_schema_id":999,"records":[{"value":1}]}`, 40403},
		{"json schema refuses", ctJSONSchema, `{"value_schema":"{\"type\":\"object\",\"required\":[\"n\"]}","records":[{"value":{"x":1}}]}`, 42203},
	} {
		topic := "avrotest"
		if c.ctype == ctJSONSchema {
			topic = "jsbad"
		}
		got := do(t, "POST", u+"/topics/"+topic, c.body, "Content-Type", c.ctype)
		if !jsonHasCode(got.body, c.code) {
			t.Fatalf("%s: %d %s, want error %d", c.name, got.status, got.body, c.code)
		}
	}
	js := do(t, "POST", u+"/topics/jstest", `{"value_schema":"{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"}}}","records":[{"value":{"n":1}}]}`, "Content-Type", ctJSONSchema)
	if js.status != 200 || field(t, js.body, "value_schema_id") == nil {
		t.Fatalf("produce jsonschema: %d %s", js.status, js.body)
	}

	for _, c := range []struct{ format, topic, want string }{
		{"avro", "avrotest", `[{"topic":"avrotest","key":null,"value":{"name":"testUser","age":{"int":3},"data":"\u00ff\u0001"},"partition":0,"offset":0},` +
			`{"topic":"avrotest","key":null,"value":{"name":"second","age":null,"data":""},"partition":0,"offset":1}]`},
		{"jsonschema", "jstest", `[{"topic":"jstest","key":null,"value":{"n":1},"partition":0,"offset":0}]`},
	} {
		wantRecords(t, u, c.format, c.topic, c.want)
	}
}

// produceOnceRegistryServes posts body to url, again until the schema
// registry takes writes (it starts after the broker).
func produceOnceRegistryServes(t *testing.T, url, ctype, body string) answer {
	t.Helper()
	var got answer
	testutil.Eventually(t, 30*time.Second, func() error {
		got = do(t, "POST", url, body, "Content-Type", ctype)
		if got.status != 200 {
			return fmt.Errorf("produce: %d %s", got.status, got.body)
		}
		return nil
	})
	return got
}

// wantRecords reads partition 0 of topic with a new consumer instance in
// format until it answers want.
func wantRecords(t *testing.T, u, format, topic, want string) {
	t.Helper()
	readUntil(t, u, format, topic, func(body string) bool { return testutil.SameJSON(body, want) })
}

// readUntil reads partition 0 of topic with a new consumer instance in
// format until an answer's body is done.
func readUntil(t *testing.T, u, format, topic string, done func(body string) bool) {
	t.Helper()
	inst := u + "/consumers/g-" + format + "/instances/" + topic
	if got := do(t, "POST", u+"/consumers/g-"+format, `{"name":"`+topic+`","format":"`+format+`","auto.offset.reset":"earliest"}`, "Content-Type", ctV2); got.status != 200 {
		t.Fatalf("create %s: %d %s", format, got.status, got.body)
	}
	if got := do(t, "POST", inst+"/assignments", `{"partitions":[{"topic":"`+topic+`","partition":0}]}`, "Content-Type", ctV2); got.status != 204 {
		t.Fatalf("assign: %d %s", got.status, got.body)
	}
	testutil.Eventually(t, 20*time.Second, func() error {
		got := do(t, "GET", inst+"/records?timeout=300", "", "Accept", "application/vnd.kafka."+format+".v2+json")
		if got.status != 200 || !done(got.body) {
			return fmt.Errorf("%s records: %d %s", format, got.status, got.body)
		}
		return nil
	})
}

// TestV2SchemaFormatsNeedTheRegistry: without the registry, a schema
// format is refused with a clear error.
func TestV2SchemaFormatsNeedTheRegistry(t *testing.T) {
	t.Parallel()
	b := startProxy(t, nil)
	b.createTopic(t, "t", 1)
	got := do(t, "POST", b.url+"/topics/t", `{"value_schema":"\"string\"","records":[{"value":"x"}]}`, "Content-Type", ctAvro)
	if got.status != 500 || !jsonHasCode(got.body, 50001) {
		t.Fatalf("avro without a registry: %d %s", got.status, got.body)
	}
}
