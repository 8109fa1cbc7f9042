package restproxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestV2TopicMetadata(t *testing.T) {
	t.Parallel()
	b := startProxy(t, nil)
	b.createTopic(t, "t1", 2)
	u := b.url

	wantJSON(t, "GET /topics", do(t, "GET", u+"/topics", ""), 200, `["t1"]`)
	part := func(p int) string {
		return fmt.Sprintf(`{"partition":%d,"leader":1,"replicas":[{"broker":1,"leader":true,"in_sync":true}]}`, p)
	}
	wantJSON(t, "GET partitions", do(t, "GET", u+"/topics/t1/partitions", "", "Accept", ctV2), 200, "["+part(0)+","+part(1)+"]")
	wantJSON(t, "GET partition", do(t, "GET", u+"/topics/t1/partitions/1", ""), 200, part(1))
	wantJSON(t, "GET offsets", do(t, "GET", u+"/topics/t1/partitions/1/offsets", ""), 200, `{"beginning_offset":0,"end_offset":0}`)

	got := do(t, "GET", u+"/topics/t1", "")
	if got.status != 200 || got.ctype != ctV2 {
		t.Fatalf("GET /topics/t1: %d %s %s", got.status, got.ctype, got.body)
	}
	var topic struct {
		Name       string            `json:"name"`
		Configs    map[string]string `json:"configs"`
		Partitions []json.RawMessage `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(got.body), &topic); err != nil {
		t.Fatal(err)
	}
	if topic.Name != "t1" || topic.Configs["cleanup.policy"] != "delete" || len(topic.Partitions) != 2 || string(topic.Partitions[0]) != part(0) {
		t.Fatalf("GET /topics/t1: %s", got.body)
	}

	for _, c := range []struct {
		name, method, path, accept string
		status                     int
		want                       string
	}{
		{"unknown topic", "GET", "/topics/nope", "", 404, `{"error_code":40401,"message":"Topic not found."}`},
		{"unknown topic's partitions", "GET", "/topics/nope/partitions", "", 404, `{"error_code":40401,"message":"Topic not found."}`},
		{"unknown partition", "GET", "/topics/t1/partitions/7", "", 404, `{"error_code":40402,"message":"Partition not found."}`},
		{"unknown partition's offsets", "GET", "/topics/t1/partitions/7/offsets", "", 404, `{"error_code":40402,"message":"Partition not found."}`},
		{"partition not a number", "GET", "/topics/t1/partitions/x", "", 404, `{"error_code":404,"message":"HTTP 404 Not Found"}`},
		{"no route", "GET", "/nothing/here", "", 404, `{"error_code":404,"message":"HTTP 404 Not Found"}`},
		{"method", "DELETE", "/topics", "", 405, `{"error_code":405,"message":"HTTP 405 Method Not Allowed"}`},
		{"not acceptable", "GET", "/topics", "text/html", 406, `{"error_code":406,"message":"HTTP 406 Not Acceptable"}`},
	} {
		wantJSON(t, c.name, do(t, c.method, u+c.path, "", "Accept", c.accept), c.status, c.want)
	}
}

// consumeAll reads n records of topic with a franz-go consumer.
func consumeAll(t *testing.T, addr, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records of %s", len(out), n, topic)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

func TestV2Produce(t *testing.T) {
	t.Parallel()
	b := startProxy(t, map[string]string{"auto.create.topics.enable": "false"})
	b.createTopic(t, "p", 3)
	u := b.url

	// JSON: keys and values are stored as their JSON text.
	got := do(t, "POST", u+"/topics/p/partitions/2", `{"records":[{"key":"k","value":{"foo":"bar"}},{"value":[1, 2]},{"value":null}]}`,
		"Content-Type", ctJSON, "Accept", ctV2)
	wantJSON(t, "produce json", got, 200, `{"offsets":[
		{"partition":2,"offset":0,"error_code":null,"error":null},
		{"partition":2,"offset":1,"error_code":null,"error":null},
		{"partition":2,"offset":2,"error_code":null,"error":null}],"key_schema_id":null,"value_schema_id":null}`)
	// Binary: base64; a record's own partition wins.
	got = do(t, "POST", u+"/topics/p", `{"records":[{"value":"S2Fma2E=","partition":0},{"key":"a2V5","value":"dmFsdWU=","partition":0}]}`,
		"Content-Type", ctBinary)
	wantJSON(t, "produce binary", got, 200, `{"offsets":[
		{"partition":0,"offset":0,"error_code":null,"error":null},
		{"partition":0,"offset":1,"error_code":null,"error":null}],"key_schema_id":null,"value_schema_id":null}`)

	recs := consumeAll(t, b.Addr(), "p", 5)
	byPos := map[string]*kgo.Record{}
	for _, r := range recs {
		byPos[fmt.Sprintf("%d/%d", r.Partition, r.Offset)] = r
	}
	for pos, want := range map[string][2]string{
		"2/0": {`"k"`, `{"foo":"bar"}`}, "2/1": {"", "[1,2]"}, "0/0": {"", "Kafka"}, "0/1": {"key", "value"},
	} {
		r := byPos[pos]
		if r == nil || string(r.Key) != want[0] || string(r.Value) != want[1] {
			t.Fatalf("record %s: %+v, want key %q value %q", pos, r, want[0], want[1])
		}
	}
	if r := byPos["2/2"]; r == nil || r.Value != nil || r.Key != nil {
		t.Fatalf("a null value is a tombstone: %+v", r)
	}

	// A keyed record goes where the Java producer's partitioner sends it,
	// and the answer lists the records in the request's order (not in the
	// order their partitions' batches completed).
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	var body []string
	for _, k := range keys {
		body = append(body, `{"key":"`+k+`","value":1}`)
	}
	got = do(t, "POST", u+"/topics/p", `{"records":[`+strings.Join(body, ",")+`]}`, "Content-Type", ctJSON)
	var resp struct {
		Offsets []struct{ Partition int } `json:"offsets"`
	}
	if err := json.Unmarshal([]byte(got.body), &resp); err != nil || len(resp.Offsets) != len(keys) {
		t.Fatalf("produce keyed: %s", got.body)
	}
	for i, key := range keys {
		want := kgo.StickyKeyPartitioner(nil).ForTopic("p").Partition(&kgo.Record{Key: []byte(`"` + key + `"`)}, 3)
		if resp.Offsets[i].Partition != want {
			t.Fatalf("record %d (key %q) is answered in partition %d, murmur2 says %d: %s", i, key, resp.Offsets[i].Partition, want, got.body)
		}
	}

	for _, c := range []struct {
		name, path, ctype, body string
		status                  int
		want                    string
	}{
		{"unknown topic", "/topics/nope", ctJSON, `{"records":[{"value":1}]}`, 404, `{"error_code":40401,"message":"Topic not found."}`},
		{"unknown partition", "/topics/p/partitions/9", ctJSON, `{"records":[{"value":1}]}`, 404, `{"error_code":40402,"message":"Partition not found."}`},
		{"unknown record partition", "/topics/p", ctJSON, `{"records":[{"value":1,"partition":3}]}`, 404, `{"error_code":40402,"message":"Partition not found."}`},
		{"plain json", "/topics/p", "application/json", `{"records":[{"value":1}]}`, 415, `{"error_code":415,"message":"HTTP 415 Unsupported Media Type"}`},
		{"no content type", "/topics/p", "", `{"records":[{"value":1}]}`, 415, `{"error_code":415,"message":"HTTP 415 Unsupported Media Type"}`},
		{"not base64", "/topics/p", ctBinary, `{"records":[{"value":"!!"}]}`, 422, ""},
		{"binary not a string", "/topics/p", ctBinary, `{"records":[{"value":{"a":1}}]}`, 422, ""},
		{"no records", "/topics/p", ctJSON, `{"records":[]}`, 422, ""},
		{"empty body", "/topics/p", ctJSON, ``, 422, ""},
		{"not json", "/topics/p", ctJSON, `{"records":[`, 400, ""},
	} {
		got := do(t, "POST", u+c.path, c.body, "Content-Type", c.ctype)
		if c.want != "" {
			wantJSON(t, c.name, got, c.status, c.want)
			continue
		}
		var e struct {
			Code int    `json:"error_code"`
			Msg  string `json:"message"`
		}
		if got.status != c.status || json.Unmarshal([]byte(got.body), &e) != nil || e.Code != c.status || e.Msg == "" {
			t.Fatalf("%s: %d %s, want %d with Confluent's error body", c.name, got.status, got.body, c.status)
		}
	}

	// Records go uncompressed, as the Java producer of Confluent's proxy
	// (compression.type none) writes them, however well they would
	// compress: kafkajs has no snappy.
	b.createTopic(t, "plain", 1)
	wantJSON(t, "compressible", do(t, "POST", u+"/topics/plain", `{"records":[{"value":"`+strings.Repeat("a", 1000)+`"},{"value":"`+strings.Repeat("a", 1000)+`"}]}`, "Content-Type", ctJSON), 200,
		`{"offsets":[{"partition":0,"offset":0,"error_code":null,"error":null},{"partition":0,"offset":1,"error_code":null,"error":null}],"key_schema_id":null,"value_schema_id":null}`)
	for _, r := range consumeAll(t, b.Addr(), "plain", 2) {
		if c := r.Attrs.CompressionType(); c != 0 {
			t.Fatalf("record %d: compression %d, want none", r.Offset, c)
		}
	}

	// The body is bounded.
	big := `{"records":[{"value":"` + strings.Repeat("A", 17<<20) + `"}]}`
	if got := do(t, "POST", u+"/topics/p", big, "Content-Type", ctBinary); got.status != 413 {
		t.Fatalf("a 17 MiB body: %d %.200s", got.status, got.body)
	}
}
