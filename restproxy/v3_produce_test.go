package restproxy_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// produceStream posts a v3 produce's stream of records (with the given
// headers) and decodes the stream of answers.
func produceStream(t *testing.T, url, body string, headers ...string) (answer, []map[string]any) {
	t.Helper()
	got := do(t, "POST", url, body, append(headers, "Content-Type", "application/json")...)
	dec := json.NewDecoder(strings.NewReader(got.body))
	var answers []map[string]any
	for dec.More() {
		var a map[string]any
		if err := dec.Decode(&a); err != nil {
			t.Fatalf("stream answer %s: %v", got.body, err)
		}
		answers = append(answers, a)
	}
	return got, answers
}

// TestV3ProduceErrorCodes: a v3 produce answers each failed record with
// the error_code Confluent's proxy gives it (its StreamingResponse maps
// the producer's exception to kafka-rest's code, not to the HTTP
// status), in a 200 stream: 40401 for a partition or topic the cluster
// does not have (the Java producer's "not present in metadata"), 40402
// for a negative partition, 413 for a record larger than the topic's
// max.message.bytes, 40301 for a topic the user may not write or
// describe; records:batch's failures likewise.
func TestV3ProduceErrorCodes(t *testing.T) {
	t.Parallel()
	n, adm := startSASLProxy(t, map[string]string{"auto.create.topics.enable": "false"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	small := "200"
	for _, tc := range []struct {
		topic   string
		parts   int32
		configs map[string]*string
		ops     []kadm.ACLOperation
	}{
		{"codes", 2, map[string]*string{"max.message.bytes": &small}, []kadm.ACLOperation{kadm.OpWrite, kadm.OpDescribe}},
		{"readonly", 1, nil, []kadm.ACLOperation{kadm.OpDescribe}},
	} {
		if res, err := adm.CreateTopic(ctx, tc.parts, 1, tc.configs, tc.topic); err != nil || res.Err != nil {
			t.Fatalf("create %s: %v %v", tc.topic, err, res.Err)
		}
		acl := kadm.NewACLs().Allow("User:alice").Topics(tc.topic).Operations(tc.ops...).ResourcePatternType(kadm.ACLPatternLiteral)
		if res, err := adm.CreateACLs(ctx, acl); err != nil || res[0].Err != nil {
			t.Fatalf("ACLs: %v %+v", err, res)
		}
	}
	c := "http://" + n.ProxyAddr() + "/v3/clusters/" + clusterID(t, adm) + "/topics/"
	alice := withUser("alice", "alice-secret")
	admin := withUser("admin", "admin-secret")
	large := `{"partition_id":0,"value":{"type":"STRING","data":"` + strings.Repeat("x", 1000) + `"}}`
	type want struct {
		code int
		msg  string
	}
	tooLarge := want{413, ""}
	partition5 := want{40401, "Partition 5 of topic codes with partition count 2 is not present in metadata."}
	for _, tc := range []struct {
		what, topic, stream string
		user                []string
		want                []want
	}{
		{"codes", "codes", `{"partition_id":5,"value":{"type":"STRING","data":"a"}} {"partition_id":-1,"value":{"type":"STRING","data":"b"}}` + large +
			`{"partition_id":1,"value":{"type":"STRING","data":"ok"}}`, alice,
			[]want{partition5, {40402, "Partition not found."}, tooLarge, {200, ""}}},
		{"no write", "readonly", `{"value":{"type":"STRING","data":"a"}}`, alice, []want{{40301, ""}}},
		{"no describe", "nope", `{"value":{"type":"STRING","data":"a"}}`, alice, []want{{40301, ""}}},
		{"unknown topic", "nope", `{"value":{"type":"STRING","data":"a"}} {"partition_id":0,"value":{"type":"STRING","data":"b"}}`, admin,
			[]want{{40401, "Topic nope not present in metadata."}, {40401, "Topic nope not present in metadata."}}},
	} {
		got, answers := produceStream(t, c+tc.topic+"/records", tc.stream, tc.user...)
		if got.status != 200 || len(answers) != len(tc.want) {
			t.Fatalf("%s: %d %s", tc.what, got.status, got.body)
		}
		for i, w := range tc.want {
			if answers[i]["error_code"] != float64(w.code) || w.msg != "" && answers[i]["message"] != w.msg {
				t.Fatalf("%s: answer %d is %v, want %+v", tc.what, i, answers[i], w)
			}
		}
	}
	batch := do(t, "POST", c+"codes/records:batch", `{"entries":[{"id":"a","partition_id":5,"value":{"type":"STRING","data":"a"}},{"id":"b",`+large[1:]+`]}`,
		withUser("alice", "alice-secret", "Content-Type", "application/json")...)
	wantFields(t, "batch", batch, 200, map[string]any{"successes": []any{}, "failures.0.id": "a", "failures.0.error_code": partition5.code,
		"failures.0.message": partition5.msg, "failures.1.id": "b", "failures.1.error_code": tooLarge.code})
}
