package restproxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/testutil"
)

// v2Record is a record as GET .../records answers it.
type v2Record struct {
	Topic     string          `json:"topic"`
	Key       json.RawMessage `json:"key"`
	Value     json.RawMessage `json:"value"`
	Partition int32           `json:"partition"`
	Offset    int64           `json:"offset"`
}

// readRecords reads until n records came (or fails), through GETs of
// inst's records in format.
func readRecords(t *testing.T, inst, format string, n int, query string) []v2Record {
	t.Helper()
	var out []v2Record
	testutil.Eventually(t, 20*time.Second, func() error {
		got := do(t, "GET", inst+"/records"+query, "", "Accept", "application/vnd.kafka."+format+".v2+json")
		if got.status != 200 {
			t.Fatalf("GET records: %d %s", got.status, got.body)
		}
		var recs []v2Record
		if err := json.Unmarshal([]byte(got.body), &recs); err != nil {
			t.Fatalf("GET records: %s: %v", got.body, err)
		}
		out = append(out, recs...)
		if len(out) < n {
			return fmt.Errorf("%d of %d records", len(out), n)
		}
		return nil
	})
	if len(out) != n {
		t.Fatalf("read %d records, want %d: %+v", len(out), n, out)
	}
	return out
}

func offsetsOf(recs []v2Record) []int64 {
	var out []int64
	for _, r := range recs {
		out = append(out, r.Offset)
	}
	return out
}

func TestV2Consumer(t *testing.T) {
	t.Parallel()
	b := startProxy(t, nil)
	b.createTopic(t, "c", 1)
	u := b.url
	if got := do(t, "POST", u+"/topics/c", `{"records":[{"key":"a","value":{"n":0}},{"value":{"n":1}},{"value":{"n":2}}]}`, "Content-Type", ctJSON); got.status != 200 {
		t.Fatalf("produce: %d %s", got.status, got.body)
	}

	create := `{"name":"ci","format":"json","auto.offset.reset":"earliest","auto.commit.enable":"false"}`
	inst := u + "/consumers/g1/instances/ci"
	wantJSON(t, "create", do(t, "POST", u+"/consumers/g1", create, "Content-Type", ctV2), 200,
		`{"instance_id":"ci","base_uri":"`+inst+`"}`)
	wantJSON(t, "create again", do(t, "POST", u+"/consumers/g1", create, "Content-Type", ctV2), 409,
		`{"error_code":40902,"message":"Consumer with specified consumer ID already exists in the specified consumer group."}`)
	if got := do(t, "GET", inst+"/records", "", "Accept", ctJSON); got.status != 409 || !jsonHasCode(got.body, 40903) {
		t.Fatalf("records before subscribing: %d %s", got.status, got.body)
	}
	if got := do(t, "POST", inst+"/subscription", `{"topics":["c"]}`, "Content-Type", ctV2); got.status != 204 || got.body != "" {
		t.Fatalf("subscribe: %d %s", got.status, got.body)
	}
	wantJSON(t, "subscription", do(t, "GET", inst+"/subscription", ""), 200, `{"topics":["c"]}`)

	recs := readRecords(t, inst, "json", 3, "")
	if string(recs[0].Key) != `"a"` || string(recs[0].Value) != `{"n":0}` || recs[0].Topic != "c" || string(recs[2].Value) != `{"n":2}` || string(recs[1].Key) != "null" {
		t.Fatalf("records: %+v", recs)
	}
	wantJSON(t, "assignments", do(t, "GET", inst+"/assignments", ""), 200, `{"partitions":[{"topic":"c","partition":0}]}`)
	wantJSON(t, "records in binary", do(t, "GET", inst+"/records", "", "Accept", ctBinary), 406,
		`{"error_code":40601,"message":"The requested embedded data format does not match the deserializer for this consumer instance"}`)

	// A commit without offsets commits what was handed out.
	wantJSON(t, "commit", do(t, "POST", inst+"/offsets", "", "Content-Type", ctV2), 200, `[]`)
	parts := `{"partitions":[{"topic":"c","partition":0}]}`
	wantJSON(t, "committed", do(t, "GET", inst+"/offsets", parts, "Content-Type", ctV2), 200,
		`{"offsets":[{"topic":"c","partition":0,"offset":3,"metadata":""}]}`)
	// Confluent commits a given offset plus one.
	wantJSON(t, "commit offsets", do(t, "POST", inst+"/offsets", `{"offsets":[{"topic":"c","partition":0,"offset":0}]}`, "Content-Type", ctV2), 200, `[]`)
	wantJSON(t, "committed", do(t, "GET", inst+"/offsets", parts, "Content-Type", ctV2), 200,
		`{"offsets":[{"topic":"c","partition":0,"offset":1,"metadata":""}]}`)

	// Positions.
	if got := do(t, "POST", inst+"/positions", `{"offsets":[{"topic":"c","partition":0,"offset":1}]}`, "Content-Type", ctV2); got.status != 204 {
		t.Fatalf("seek: %d %s", got.status, got.body)
	}
	if got := offsetsOf(readRecords(t, inst, "json", 2, "?timeout=300")); !slices.Equal(got, []int64{1, 2}) {
		t.Fatalf("after seeking to 1: %v", got)
	}
	if got := do(t, "POST", inst+"/positions/beginning", parts, "Content-Type", ctV2); got.status != 204 {
		t.Fatalf("seek to beginning: %d %s", got.status, got.body)
	}
	// max_bytes: each record is 7 bytes (no key) or 10; 17 takes one, a
	// record that would bring the answer to max_bytes is left (Confluent's
	// read task: bytes + size >= max_bytes).
	if got := offsetsOf(readRecords(t, inst, "json", 1, "?timeout=300&max_bytes=17")); !slices.Equal(got, []int64{0}) {
		t.Fatalf("max_bytes 17: %v", got)
	}
	if got := offsetsOf(readRecords(t, inst, "json", 2, "?timeout=300")); !slices.Equal(got, []int64{1, 2}) {
		t.Fatalf("after a max_bytes read: %v", got)
	}
	if got := do(t, "POST", inst+"/positions/end", parts, "Content-Type", ctV2); got.status != 204 {
		t.Fatalf("seek to end: %d %s", got.status, got.body)
	}
	wantJSON(t, "records at the end", do(t, "GET", inst+"/records?timeout=200", "", "Accept", ctJSON), 200, `[]`)
	if got := do(t, "POST", inst+"/positions", `{"offsets":[{"topic":"other","partition":0,"offset":1}]}`, "Content-Type", ctV2); got.status != 409 || !jsonHasCode(got.body, 40903) {
		t.Fatalf("seek of a partition not assigned: %d %s", got.status, got.body)
	}
	if got := do(t, "POST", inst+"/assignments", parts, "Content-Type", ctV2); got.status != 409 || !jsonHasCode(got.body, 40903) {
		t.Fatalf("assign while subscribed: %d %s", got.status, got.body)
	}

	if got := do(t, "DELETE", inst, "", "Content-Type", ctV2); got.status != 204 {
		t.Fatalf("delete: %d %s", got.status, got.body)
	}

	// fetch.min.bytes 0: a read answers once it holds any record (more
	// than 0 bytes), long before its timeout.
	quick := u + "/consumers/g0/instances/q"
	if got := do(t, "POST", u+"/consumers/g0", `{"name":"q","format":"json","auto.offset.reset":"earliest","fetch.min.bytes":0}`, "Content-Type", ctV2); got.status != 200 {
		t.Fatalf("create with fetch.min.bytes 0: %d %s", got.status, got.body)
	}
	if got := do(t, "POST", quick+"/assignments", parts, "Content-Type", ctV2); got.status != 204 {
		t.Fatalf("assign: %d %s", got.status, got.body)
	}
	start := time.Now()
	if got := readRecords(t, quick, "json", 3, "?timeout=30000"); time.Since(start) > 15*time.Second {
		t.Fatalf("fetch.min.bytes 0: %d records after %v (the read's timeout is 30 s)", len(got), time.Since(start))
	}
	wantJSON(t, "deleted", do(t, "GET", inst+"/records", "", "Accept", ctJSON), 404, `{"error_code":40403,"message":"Consumer instance not found."}`)
	wantJSON(t, "deleted twice", do(t, "DELETE", inst, ""), 404, `{"error_code":40403,"message":"Consumer instance not found."}`)

	// An assigned (not subscribed) binary instance starts at the group's
	// committed offset (1, above).
	binst := u + "/consumers/g1/instances/bi"
	if got := do(t, "POST", u+"/consumers/g1", `{"name":"bi","format":"binary"}`, "Content-Type", ctV2); got.status != 200 {
		t.Fatalf("create binary: %d %s", got.status, got.body)
	}
	if got := do(t, "POST", binst+"/assignments", parts, "Content-Type", ctV2); got.status != 204 {
		t.Fatalf("assign: %d %s", got.status, got.body)
	}
	wantJSON(t, "assignments", do(t, "GET", binst+"/assignments", ""), 200, parts)
	brecs := readRecords(t, binst, "binary", 2, "?timeout=300")
	if string(brecs[0].Value) != `"eyJuIjoxfQ=="` || brecs[0].Offset != 1 { // {"n":1}
		t.Fatalf("binary records: %+v", brecs)
	}
}

func jsonHasCode(body string, code int) bool {
	var e struct {
		Code int `json:"error_code"`
	}
	return json.Unmarshal([]byte(body), &e) == nil && e.Code == code
}

// TestV2ConsumerSharesGroup: a consumer instance is a member of its group
// as any client: it and a franz-go consumer of the group split the
// partitions, and between them read every record once.
func TestV2ConsumerSharesGroup(t *testing.T) {
	t.Parallel()
	b := startProxy(t, nil)
	b.createTopic(t, "s", 4)
	u := b.url
	for p := range 4 {
		body := fmt.Sprintf(`{"records":[{"value":"%d-a"},{"value":"%d-b"}]}`, p, p)
		if got := do(t, "POST", fmt.Sprintf("%s/topics/s/partitions/%d", u, p), body, "Content-Type", ctJSON); got.status != 200 {
			t.Fatalf("produce: %d %s", got.status, got.body)
		}
	}
	inst := u + "/consumers/shared/instances/http"
	if got := do(t, "POST", u+"/consumers/shared", `{"name":"http","format":"json","auto.offset.reset":"earliest"}`, "Content-Type", ctV2); got.status != 200 {
		t.Fatalf("create: %d %s", got.status, got.body)
	}
	if got := do(t, "POST", inst+"/subscription", `{"topics":["s"]}`, "Content-Type", ctV2); got.status != 204 {
		t.Fatalf("subscribe: %d %s", got.status, got.body)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumerGroup("shared"), kgo.ConsumeTopics("s"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.ClientID("franz"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	seen := map[string]int{}
	var httpParts, kgoParts []int32
	testutil.Eventually(t, 30*time.Second, func() error {
		got := do(t, "GET", inst+"/records?timeout=200", "", "Accept", ctJSON)
		var recs []v2Record
		if err := json.Unmarshal([]byte(got.body), &recs); err != nil {
			return fmt.Errorf("records: %s", got.body)
		}
		for _, r := range recs {
			seen[string(r.Value)]++
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		for _, r := range fs.Records() {
			seen[`"`+string(r.Value)+`"`]++
		}
		groups, err := b.adm.DescribeGroups(context.Background(), "shared")
		if err != nil {
			return err
		}
		g := groups["shared"]
		if g.State != "Stable" || len(g.Members) != 2 {
			return fmt.Errorf("group %s with %d members", g.State, len(g.Members))
		}
		httpParts, kgoParts = nil, nil
		for _, m := range g.Members {
			ca, _ := m.Assigned.AsConsumer()
			for _, tp := range ca.Topics {
				if m.ClientID == "franz" {
					kgoParts = append(kgoParts, tp.Partitions...)
				} else {
					httpParts = append(httpParts, tp.Partitions...)
				}
			}
		}
		if len(httpParts) == 0 || len(kgoParts) == 0 || len(httpParts)+len(kgoParts) != 4 {
			return fmt.Errorf("assignment: proxy %v, franz-go %v", httpParts, kgoParts)
		}
		if len(seen) < 8 {
			return fmt.Errorf("%d of 8 records read", len(seen))
		}
		return nil
	})
	for v, n := range seen {
		if n != 1 {
			t.Fatalf("record %s read %d times", v, n)
		}
	}
	got := do(t, "GET", inst+"/assignments", "")
	var as struct {
		Partitions []struct{ Partition int32 } `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(got.body), &as); err != nil {
		t.Fatal(err)
	}
	var fromHTTP []int32
	for _, p := range as.Partitions {
		fromHTTP = append(fromHTTP, p.Partition)
	}
	slices.Sort(fromHTTP)
	slices.Sort(httpParts)
	if !slices.Equal(fromHTTP, httpParts) {
		t.Fatalf("the instance says it has %v, the group gave it %v", fromHTTP, httpParts)
	}
}

// TestV2ConsumerExpires: an instance idle for consumer.instance.timeout.ms
// is closed and leaves its group.
func TestV2ConsumerExpires(t *testing.T) {
	t.Parallel()
	// Long enough for the requests below on a loaded machine.
	b := startProxy(t, map[string]string{"consumer.instance.timeout.ms": "3000"})
	b.createTopic(t, "e", 1)
	inst := b.url + "/consumers/idle/instances/i"
	if got := do(t, "POST", b.url+"/consumers/idle", `{"name":"i"}`, "Content-Type", ctV2); got.status != 200 {
		t.Fatalf("create: %d %s", got.status, got.body)
	}
	if got := do(t, "POST", inst+"/subscription", `{"topics":["e"]}`, "Content-Type", ctV2); got.status != 204 {
		t.Fatalf("subscribe: %d %s", got.status, got.body)
	}
	// Every request to the instance keeps it alive: watch the group.
	joined := false
	testutil.Eventually(t, 20*time.Second, func() error {
		groups, err := b.adm.DescribeGroups(context.Background(), "idle")
		if err != nil {
			return err
		}
		g := groups["idle"]
		if len(g.Members) > 0 {
			joined = true
		}
		if !joined || len(g.Members) != 0 {
			return fmt.Errorf("group %s with %d members", g.State, len(g.Members))
		}
		return nil
	})
	wantJSON(t, "expired", do(t, "GET", inst+"/subscription", ""), 404, `{"error_code":40403,"message":"Consumer instance not found."}`)
}
