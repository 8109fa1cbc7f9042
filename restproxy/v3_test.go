package restproxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// field is the value at a dotted path of a JSON answer ("data.0.kind").
func field(t *testing.T, body, path string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			var i int
			fmt.Sscan(k, &i)
			if i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// wantFields fails unless each dotted path of the answer has the value.
func wantFields(t *testing.T, what string, got answer, status int, fields map[string]any) {
	t.Helper()
	if got.status != status {
		t.Fatalf("%s: status %d, want %d: %s", what, got.status, status, got.body)
	}
	for path, want := range fields {
		if g := field(t, got.body, path); fmt.Sprint(g) != fmt.Sprint(want) {
			t.Fatalf("%s: %s is %v, want %v: %s", what, path, g, want, got.body)
		}
	}
}

func TestV3(t *testing.T) {
	t.Parallel()
	b := startProxy(t, nil)
	md, err := b.adm.BrokerMetadata(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cid := md.Cluster
	c := b.url + "/v3/clusters/" + cid
	wantFields(t, "clusters", do(t, "GET", b.url+"/v3/clusters", ""), 200, map[string]any{
		"kind": "KafkaClusterList", "data.0.kind": "KafkaCluster", "data.0.cluster_id": cid,
		"data.0.metadata.self": c, "data.0.controller.related": c + "/brokers/1", "data.0.topics.related": c + "/topics",
	})
	wantFields(t, "other cluster", do(t, "GET", b.url+"/v3/clusters/nope/topics", ""), 404, map[string]any{"error_code": 404})
	wantFields(t, "brokers", do(t, "GET", c+"/brokers", ""), 200, map[string]any{"data.0.broker_id": 1, "data.0.host": "127.0.0.1"})

	created := do(t, "POST", c+"/topics", `{"topic_name":"jsontest","partitions_count":2,"configs":[{"name":"retention.ms","value":"60000"}]}`, "Content-Type", "application/json")
	wantFields(t, "create", created, 201, map[string]any{"kind": "KafkaTopic", "topic_name": "jsontest", "partitions_count": 2, "replication_factor": 1,
		"metadata.resource_name": "crn:///kafka=" + cid + "/topic=jsontest"})
	wantFields(t, "create again", do(t, "POST", c+"/topics", `{"topic_name":"jsontest"}`, "Content-Type", "application/json"), 400, map[string]any{"error_code": 40002})
	wantFields(t, "topics", do(t, "GET", c+"/topics", ""), 200, map[string]any{"data.0.topic_name": "jsontest", "data.0.partitions_count": 2})
	wantFields(t, "topic", do(t, "GET", c+"/topics/jsontest", ""), 200, map[string]any{"is_internal": false, "partitions.related": c + "/topics/jsontest/partitions"})
	wantFields(t, "unknown topic", do(t, "GET", c+"/topics/nope", ""), 404, map[string]any{"error_code": 40403})
	wantFields(t, "partitions", do(t, "GET", c+"/topics/jsontest/partitions", ""), 200, map[string]any{"data.1.partition_id": 1, "data.1.leader.related": c + "/topics/jsontest/partitions/1/replicas/1"})
	wantFields(t, "config", do(t, "GET", c+"/topics/jsontest/configs/retention.ms", ""), 200, map[string]any{"value": "60000", "is_default": false, "source": "DYNAMIC_TOPIC_CONFIG"})
	if got := do(t, "PUT", c+"/topics/jsontest/configs/retention.ms", `{"value":"1000"}`, "Content-Type", "application/json"); got.status != 204 {
		t.Fatalf("PUT config: %d %s", got.status, got.body)
	}
	wantFields(t, "config set", do(t, "GET", c+"/topics/jsontest/configs/retention.ms", ""), 200, map[string]any{"value": "1000"})
	if got := do(t, "DELETE", c+"/topics/jsontest/configs/retention.ms", ""); got.status != 204 {
		t.Fatalf("DELETE config: %d %s", got.status, got.body)
	}
	wantFields(t, "config reset", do(t, "GET", c+"/topics/jsontest/configs", ""), 200, map[string]any{"kind": "KafkaTopicConfigList"})
	wantFields(t, "config reset", do(t, "GET", c+"/topics/jsontest/configs/retention.ms", ""), 200, map[string]any{"is_default": true})

	// Produce: one record, then a stream, answered one by one in order.
	rec := do(t, "POST", c+"/topics/jsontest/records", `{"partition_id":0,"value":{"type":"JSON","data":{"name":"testUser"}}}`, "Content-Type", "application/json")
	wantFields(t, "produce", rec, 200, map[string]any{"error_code": 200, "cluster_id": cid, "topic_name": "jsontest", "partition_id": 0, "offset": 0,
		"value.type": "JSON", "value.size": 19})
	if field(t, rec.body, "key") != nil || !strings.HasSuffix(field(t, rec.body, "timestamp").(string), "Z") {
		t.Fatalf("produce: %s", rec.body)
	}
	stream := `{"partition_id":1,"key":{"type":"STRING","data":"k"},"value":{"type":"STRING","data":"ONE"},"headers":[{"name":"h","value":"aGk="}]}
		{"partition_id":1,"value":{"type":"BINARY","data":"S2Fma2E="}} {"partition_id":7,"value":{"type":"JSON","data":1}}
		{"partition_id":1,"value":{"type":"AVRO","data":1}}`
	got, answers := produceStream(t, c+"/topics/jsontest/records", stream)
	if len(answers) != 4 || answers[0]["offset"] != 0.0 || answers[1]["offset"] != 1.0 || answers[2]["error_code"] != 40401.0 || answers[3]["error_code"] != 400.0 {
		t.Fatalf("streamed produce answered %s", got.body)
	}
	batch := do(t, "POST", c+"/topics/jsontest/records:batch", `{"entries":[{"id":"a","partition_id":9,"value":{"type":"JSON","data":1}}]}`, "Content-Type", "application/json")
	wantFields(t, "batch", batch, 200, map[string]any{"failures.0.id": "a", "failures.0.error_code": 40401, "successes": []any{}})
	wantFields(t, "batch ids", do(t, "POST", c+"/topics/jsontest/records:batch", `{"entries":[{"id":"a"},{"id":"a"}]}`, "Content-Type", "application/json"), 400,
		map[string]any{"error_code": 42208, "message": "Batch entry IDs are not distinct."})
	// A topic the cluster does not have is created as the Java producer's
	// metadata request has a broker create it (auto.create.topics.enable).
	wantFields(t, "auto-created topic", do(t, "POST", c+"/topics/created/records", `{"value":{"type":"JSON","data":1}}`, "Content-Type", "application/json"), 200,
		map[string]any{"error_code": 200, "topic_name": "created", "offset": 0})
	recs := consumeAll(t, b.Addr(), "jsontest", 3)
	for _, r := range recs {
		switch {
		case r.Partition == 0 && string(r.Value) == `{"name":"testUser"}`:
		case r.Partition == 1 && r.Offset == 0 && string(r.Key) == "k" && string(r.Value) == "ONE" && len(r.Headers) == 1 && string(r.Headers[0].Value) == "hi":
		case r.Partition == 1 && r.Offset == 1 && string(r.Value) == "Kafka":
		default:
			t.Fatalf("unexpected record %+v", r)
		}
	}

	// A group's lag.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumerGroup("lagging"), kgo.ConsumeTopics("jsontest"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.ClientID("lagger"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	testutil.Eventually(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		cl.PollFetches(ctx)
		var cerr error
		cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{"jsontest": {0: {Epoch: -1, Offset: 1}, 1: {Epoch: -1, Offset: 0}}},
			func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
				if err == nil && (len(resp.Topics) == 0 || resp.Topics[0].Partitions[0].ErrorCode != 0) {
					err = fmt.Errorf("commit answered %+v", resp.Topics)
				}
				cerr = err
			})
		return cerr
	})
	wantFields(t, "group", do(t, "GET", c+"/consumer-groups/lagging", ""), 200, map[string]any{"kind": "KafkaConsumerGroup", "state": "STABLE", "is_simple": false})
	wantFields(t, "consumers", do(t, "GET", c+"/consumer-groups/lagging/consumers", ""), 200, map[string]any{"data.0.client_id": "lagger"})
	wantFields(t, "lags", do(t, "GET", c+"/consumer-groups/lagging/lags", ""), 200, map[string]any{
		"data.0.partition_id": 0, "data.0.current_offset": 1, "data.0.lag": 0, "data.1.partition_id": 1, "data.1.lag": 2, "data.1.log_end_offset": 2, "data.1.client_id": "lagger"})
	wantFields(t, "lag summary", do(t, "GET", c+"/consumer-groups/lagging/lag-summary", ""), 200, map[string]any{"max_lag": 2, "total_lag": 2, "max_lag_partition_id": 1})
	wantFields(t, "groups", do(t, "GET", c+"/consumer-groups", ""), 200, map[string]any{"data.0.consumer_group_id": "lagging"})
	wantFields(t, "unknown group", do(t, "GET", c+"/consumer-groups/nope", ""), 404, map[string]any{"error_code": 404})

	if got := do(t, "DELETE", c+"/topics/jsontest", ""); got.status != 204 {
		t.Fatalf("delete: %d %s", got.status, got.body)
	}
	wantFields(t, "deleted", do(t, "DELETE", c+"/topics/jsontest", ""), 404, map[string]any{"error_code": 40403})
}
