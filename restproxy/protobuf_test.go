package restproxy_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
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

// TestV2ProtobufFieldNumberOrder: a consumer instance prints a protobuf
// record's fields in order of field number, as Confluent's proxy does
// (Java's JsonFormat prints a TreeMap of them), whatever order the
// schema declares them in: in nested messages, lists and map values too,
// a oneof's field at its number, a well-known type printed as protobuf's
// JSON mapping prints it, and the defaults of an empty message likewise.
func TestV2ProtobufFieldNumberOrder(t *testing.T) {
	t.Parallel()
	b := startProxy(t, map[string]string{"samsa.schema.registry.listener": "127.0.0.1:0"})
	b.createTopic(t, "pborder", 1)
	schema, _ := jsonString(`syntax = "proto3";
package samsa.order;
import "google/protobuf/timestamp.proto";
message Order {
  google.protobuf.Timestamp at = 8;
  string note = 4;
  oneof pay {
    string card = 6;
    string cash = 2;
  }
  int64 id = 1;
  repeated Line lines = 5;
  map<string, Line> by_sku = 3;
  Line first = 7;
}
message Line {
  string sku = 2;
  int32 qty = 1;
}
`)
	body := `{"value_schema":` + schema + `,"records":[` +
		`{"value":{"note":"n","cash":"10","id":"9","lines":[{"sku":"a","qty":1}],"bySku":{"a\\\"b":{"sku":"a","qty":1}},"first":{"sku":"b","qty":2},"at":"2026-01-02T03:04:05Z"}},` +
		`{"value":{}}]}`
	produceOnceRegistryServes(t, b.url+"/topics/pborder", ctProtobuf, body)
	want := []string{
		`{"id":"9","cash":"10","bySku":{"a\\\"b":{"qty":1,"sku":"a"}},"note":"n","lines":[{"qty":1,"sku":"a"}],"first":{"qty":2,"sku":"b"},"at":"2026-01-02T03:04:05Z"}`,
		`{"id":"0","bySku":{},"note":"","lines":[]}`,
	}
	var got []string // the values read so far
	readUntil(t, b.url, "protobuf", "pborder", func(body string) bool {
		var recs []struct{ Value json.RawMessage }
		if err := json.Unmarshal([]byte(body), &recs); err != nil {
			t.Fatalf("records: %s: %v", body, err)
		}
		for _, r := range recs {
			if got = append(got, string(r.Value)); len(got) > len(want) || got[len(got)-1] != want[len(got)-1] {
				t.Fatalf("record values:\n got %s\nwant %s", got, want)
			}
		}
		return len(got) == len(want)
	})
}
