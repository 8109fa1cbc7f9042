package restproxy_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/samsa-io/samsa/registry"
)

const (
	ctProtobuf = "application/vnd.kafka.protobuf.v2+json"
	userProto  = `syntax = "proto3";
package samsa.test;
message User {
  string name = 1;
  int64 id = 2;
  repeated string tags = 3;
  Kind kind = 4;
  Address addr = 5;
  bytes data = 6;
}
enum Kind { KIND_UNKNOWN = 0; KIND_A = 1; }
message Address { string city = 1; }
`
)

// TestV2Protobuf: protobuf records go through the registry by schema or
// by id, in Confluent's wire format (message indexes after the id), and a
// consumer instance prints each record's message, the one its indexes
// name, with the defaults of the fields without presence, as Confluent's
// proxy does.
func TestV2Protobuf(t *testing.T) {
	t.Parallel()
	b := startProxy(t, map[string]string{"samsa.schema.registry.listener": "127.0.0.1:0"})
	b.createTopic(t, "pbtest", 1)
	u := b.url
	schema, _ := jsonString(userProto)
	body := `{"value_schema":` + schema + `,"records":[{"value":{"name":"alice","id":"42","tags":["a","b"],"kind":"KIND_A","addr":{"city":"Paris"},"data":"AAE="}}]}`
	got := produceOnceRegistryServes(t, u+"/topics/pbtest", ctProtobuf, body)
	id := field(t, got.body, "value_schema_id")
	if id == nil || field(t, got.body, "offsets.0.offset") != 0.0 {
		t.Fatalf("produce protobuf: %s", got.body)
	}
	wantJSON(t, "by id", do(t, "POST", u+"/topics/pbtest", fmt.Sprintf(`{"value_schema_id":%v,"records":[{"value":{"name":"bob","id":7}}]}`, id), "Content-Type", ctProtobuf), 200,
		fmt.Sprintf(`{"offsets":[{"partition":0,"offset":1,"error_code":null,"error":null}],"key_schema_id":null,"value_schema_id":%v}`, id))

	// Confluent's wire format: 0, the id, the indexes (0: the first
	// message), the message.
	fd, err := registry.CompileProtobuf(userProto, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := consumeAll(t, b.Addr(), "pbtest", 2)[0].Value
	if len(v) < 6 || v[0] != 0 || float64(binary.BigEndian.Uint32(v[1:5])) != id.(float64) || v[5] != 0 {
		t.Fatalf("wire format: %x", v)
	}
	m := dynamicpb.NewMessage(fd.Messages().ByName("User"))
	if err := proto.Unmarshal(v[6:], m); err != nil {
		t.Fatal(err)
	}
	if name, tags := m.Get(fd.Messages().ByName("User").Fields().ByName("name")).String(), m.Get(fd.Messages().ByName("User").Fields().ByName("tags")).List().Len(); name != "alice" || tags != 2 {
		t.Fatalf("protobuf record: %v", m)
	}

	// A record of the schema's second message (indexes [1]), as a
	// serializer of Address writes it.
	addr := dynamicpb.NewMessage(fd.Messages().ByName("Address"))
	addr.Set(fd.Messages().ByName("Address").Fields().ByName("city"), protoreflect.ValueOfString("Lyon"))
	rec := []byte{0, 0, 0, 0, 0, 2, 2} // one index, 1, in zigzag varints
	binary.BigEndian.PutUint32(rec[1:5], uint32(id.(float64)))
	if rec, err = (proto.MarshalOptions{}).MarshalAppend(rec, addr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.cl.ProduceSync(ctx, &kgo.Record{Topic: "pbtest", Value: rec}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name, body string
		code       int
	}{
		{"unknown field", fmt.Sprintf(`{"value_schema_id":%v,"records":[{"value":{"nope":1}}]}`, id), 42203},
		{"wrong type", fmt.Sprintf(`{"value_schema_id":%v,"records":[{"value":{"name":1}}]}`, id), 42203},
		{"bad schema", `{"value_schema":"message {","records":[{"value":{}}]}`, 42205},
		{"key without key schema", fmt.Sprintf(`{"value_schema_id":%v,"records":[{"key":{"name":"k"},"value":{}}]}`, id), 42201},
	} {
		got := do(t, "POST", u+"/topics/pbtest", c.body, "Content-Type", ctProtobuf)
		if !jsonHasCode(got.body, c.code) {
			t.Fatalf("%s: %d %s, want error %d", c.name, got.status, got.body, c.code)
		}
	}

	wantRecords(t, u, "protobuf", "pbtest", `[`+
		`{"topic":"pbtest","key":null,"value":{"name":"alice","id":"42","tags":["a","b"],"kind":"KIND_A","addr":{"city":"Paris"},"data":"AAE="},"partition":0,"offset":0},`+
		`{"topic":"pbtest","key":null,"value":{"name":"bob","id":"7","tags":[],"kind":"KIND_UNKNOWN","data":""},"partition":0,"offset":1},`+
		`{"topic":"pbtest","key":null,"value":{"city":"Lyon"},"partition":0,"offset":2}]`)
}
