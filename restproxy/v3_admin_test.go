package restproxy_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// confluentExample is an answer of kafka-rest's OpenAPI document
// (api/v3/openapi.yaml, its examples), its URLs and cluster id this
// proxy's.
func confluentExample(u, cluster, example string) string {
	return strings.NewReplacer("https://pkc-00000.region.provider.confluent.cloud/kafka", u, "cluster-1", cluster).Replace(example)
}

// TestV3Admin: ACLs searched, created and deleted, a broker's configs and
// the cluster's dynamic broker configs set, read and reset, a partition's
// replicas and a broker's, and the reassignments, each answered in the
// shape of kafka-rest's documented examples (their values this cluster's).
func TestV3Admin(t *testing.T) {
	t.Parallel()
	b := startProxy(t, map[string]string{
		"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":           "User:ANONYMOUS",
	})
	b.createTopic(t, "topic-1", 2)
	cluster := clusterID(t, b.adm)
	u := b.url
	c := u + "/v3/clusters/" + cluster
	ex := func(s string) string { return confluentExample(u, cluster, s) }
	const ct = "Content-Type"
	const js = "application/json"

	// ACLs: the two of the examples, created, searched, deleted.
	topicACL := `{"resource_type":"TOPIC","resource_name":"topic-","pattern_type":"PREFIXED","principal":"User:alice","host":"*","operation":"ALL","permission":"ALLOW"}`
	clusterACL := `{"resource_type":"CLUSTER","resource_name":"kafka-cluster","pattern_type":"LITERAL","principal":"User:alice","host":"*","operation":"DESCRIBE","permission":"DENY"}`
	topicSelf := c + "/acls?resource_type=TOPIC&resource_name=topic-&pattern_type=PREFIXED&principal=User%3Aalice&host=*&operation=ALL&permission=ALLOW"
	for _, body := range []string{clusterACL, topicACL} {
		req := do(t, "POST", c+"/acls", body, ct, js)
		if req.status != 201 || req.body != "" {
			t.Fatalf("create ACL %s: %d %s", body, req.status, req.body)
		}
		if body == topicACL && req.location != topicSelf {
			t.Fatalf("Location %s, want %s", req.location, topicSelf)
		}
	}
	aclData := ex(`[
              {"kind": "KafkaAcl",
                "metadata": {"self": "https://pkc-00000.region.provider.confluent.cloud/kafka/v3/clusters/cluster-1/acls?resource_type=TOPIC&resource_name=topic-&pattern_type=PREFIXED&principal=User%3Aalice&host=*&operation=ALL&permission=ALLOW"},
                "cluster_id": "cluster-1", "resource_type": "TOPIC", "resource_name": "topic-", "pattern_type": "PREFIXED",
                "principal": "User:alice", "host": "*", "operation": "ALL", "permission": "ALLOW"},
              {"kind": "KafkaAcl",
                "metadata": {"self": "https://pkc-00000.region.provider.confluent.cloud/kafka/v3/clusters/cluster-1/acls?resource_type=CLUSTER&resource_name=kafka-cluster&pattern_type=LITERAL&principal=User%3Aalice&host=*&operation=DESCRIBE&permission=DENY"},
                "cluster_id": "cluster-1", "resource_type": "CLUSTER", "resource_name": "kafka-cluster", "pattern_type": "LITERAL",
                "principal": "User:alice", "host": "*", "operation": "DESCRIBE", "permission": "DENY"}]`)
	// The example's list names only ?principal=; kafka-rest's code puts
	// every parameter in it.
	wantJSON(t, "search ACLs", do(t, "GET", c+"/acls?principal=User%3Aalice", ""), 200,
		`{"kind":"KafkaAclList","metadata":{"self":"`+c+`/acls?resource_type=ANY&resource_name=&pattern_type=ANY&principal=User%3Aalice&host=&operation=ANY&permission=ANY","next":null},"data":`+aclData+`}`)
	for _, bad := range []string{
		`{"resource_type":"ANY","resource_name":"x","pattern_type":"LITERAL","principal":"User:a","host":"*","operation":"READ","permission":"ALLOW"}`,
		`{"resource_type":"TOPIC","resource_name":"x","pattern_type":"MATCH","principal":"User:a","host":"*","operation":"READ","permission":"ALLOW"}`,
		`{"resource_type":"TOPIC","resource_name":"x","pattern_type":"LITERAL","principal":"User:a","host":"*","operation":"FLY","permission":"ALLOW"}`,
	} {
		if got := do(t, "POST", c+"/acls", bad, ct, js); got.status != 400 || !jsonHasCode(got.body, 400) {
			t.Fatalf("create %s: %d %s, want 400", bad, got.status, got.body)
		}
	}
	wantJSON(t, "delete ACLs", do(t, "DELETE", c+"/acls?resource_type=topic&pattern_type=prefixed&principal=User:alice&operation=any&permission=any", ""), 200,
		`{"data":[`+strings.TrimPrefix(strings.SplitN(aclData, "},\n              {", 2)[0], "[")+`}]}`)
	if got := field(t, do(t, "GET", c+"/acls", "").body, "data.0.resource_type"); got != "CLUSTER" {
		t.Fatalf("after the delete, the first ACL is a %v one", got)
	}

	// The cluster's dynamic default (GetClusterConfigResponse), then a
	// broker's own (GetBrokerConfigResponse).
	if got := do(t, "PUT", c+"/broker-configs/compression.type", `{"value":"gzip"}`, ct, js); got.status != 204 {
		t.Fatalf("set cluster config: %d %s", got.status, got.body)
	}
	wantJSON(t, "cluster config", do(t, "GET", c+"/broker-configs/compression.type", ""), 200, ex(`{
            "kind": "KafkaClusterConfig",
            "metadata": {"self": "https://pkc-00000.region.provider.confluent.cloud/kafka/v3/clusters/cluster-1/broker-configs/compression.type",
              "resource_name": "crn:///kafka=cluster-1/broker-config=compression.type"},
            "cluster_id": "cluster-1", "config_type": "BROKER", "name": "compression.type", "value": "gzip",
            "is_default": false, "is_read_only": false, "is_sensitive": false, "source": "DYNAMIC_DEFAULT_BROKER_CONFIG",
            "synonyms": [{"name": "compression.type", "value": "gzip", "source": "DYNAMIC_DEFAULT_BROKER_CONFIG"},
              {"name": "compression.type", "value": "producer", "source": "DEFAULT_CONFIG"}]}`))
	if got := field(t, do(t, "GET", c+"/broker-configs", "").body, "kind"); got != "KafkaClusterConfigList" {
		t.Fatalf("cluster configs: %v", got)
	}
	for _, step := range []struct{ method, path, body string }{
		{"DELETE", "/broker-configs/compression.type", ""},
		{"PUT", "/brokers/1/configs/compression.type", `{"value":"gzip"}`},
	} {
		if got := do(t, step.method, c+step.path, step.body, ct, js); got.status != 204 {
			t.Fatalf("%s %s: %d %s", step.method, step.path, got.status, got.body)
		}
	}
	wantJSON(t, "broker config", do(t, "GET", c+"/brokers/1/configs/compression.type", ""), 200, ex(`{
            "kind": "KafkaBrokerConfig",
            "metadata": {"self": "https://pkc-00000.region.provider.confluent.cloud/kafka/v3/clusters/cluster-1/brokers/1/configs/compression.type",
              "resource_name": "crn:///kafka=cluster-1/broker=1/config=compression.type"},
            "cluster_id": "cluster-1", "broker_id": 1, "name": "compression.type", "value": "gzip",
            "is_default": false, "is_read_only": false, "is_sensitive": false, "source": "DYNAMIC_BROKER_CONFIG",
            "synonyms": [{"name": "compression.type", "value": "gzip", "source": "DYNAMIC_BROKER_CONFIG"},
              {"name": "compression.type", "value": "producer", "source": "DEFAULT_CONFIG"}]}`))
	list := do(t, "GET", c+"/brokers/1/configs", "")
	if field(t, list.body, "kind") != "KafkaBrokerConfigList" || field(t, list.body, "metadata.self") != c+"/brokers/1/configs" {
		t.Fatalf("broker configs: %.300s", list.body)
	}
	var configs struct {
		Data []struct {
			Name     string `json:"name"`
			ReadOnly bool   `json:"is_read_only"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(list.body), &configs); err != nil {
		t.Fatal(err)
	}
	readOnly := map[string]bool{}
	for _, cd := range configs.Data {
		readOnly[cd.Name] = cd.ReadOnly
	}
	if ro, ok := readOnly["node.id"]; !ok || !ro || readOnly["compression.type"] {
		t.Fatalf("read-only: node.id %v (listed %v), compression.type %v", ro, ok, readOnly["compression.type"])
	}
	for _, w := range []struct {
		what, method, path, body string
		status                   int
		want                     string
	}{
		{"reset", "DELETE", "/brokers/1/configs/compression.type", "", 204, ""},
		{"unknown config", "GET", "/brokers/1/configs/nope", "", 404, `{"error_code":404,"message":"HTTP 404 Not Found"}`},
		{"set unknown config", "PUT", "/brokers/1/configs/nope", `{"value":"1"}`, 404,
			`{"error_code":404,"message":"Config nope cannot be found for BROKER 1 in cluster ` + cluster + `."}`},
		{"unknown broker", "GET", "/brokers/7/configs", "", 404, `{"error_code":404,"message":"Broker 7 cannot be found."}`},
	} {
		got := do(t, w.method, c+w.path, w.body, ct, js)
		if w.want == "" {
			if got.status != w.status {
				t.Fatalf("%s: %d %s", w.what, got.status, got.body)
			}
			continue
		}
		wantJSON(t, w.what, got, w.status, w.want)
	}
	if got := field(t, do(t, "GET", c+"/brokers/1/configs/compression.type", "").body, "source"); got != "DEFAULT_CONFIG" {
		t.Fatalf("after the reset, compression.type's source is %v", got)
	}

	// Replicas (GetReplicaResponse, ListReplicasResponse's and
	// SearchReplicasByBrokerResponse's shapes).
	replica := func(p int) string {
		return ex(strings.ReplaceAll(`{"kind": "KafkaReplica",
            "metadata": {"self": "https://pkc-00000.region.provider.confluent.cloud/kafka/v3/clusters/cluster-1/topics/topic-1/partitions/P/replicas/1",
              "resource_name": "crn:///kafka=cluster-1/topic=topic-1/partition=P/replica=1"},
            "cluster_id": "cluster-1", "topic_name": "topic-1", "partition_id": P, "broker_id": 1, "is_leader": true, "is_in_sync": true,
            "broker": {"related": "https://pkc-00000.region.provider.confluent.cloud/kafka/v3/clusters/cluster-1/brokers/1"}}`, "P", fmt.Sprint(p)))
	}
	wantJSON(t, "replica", do(t, "GET", c+"/topics/topic-1/partitions/1/replicas/1", ""), 200, replica(1))
	wantJSON(t, "replicas", do(t, "GET", c+"/topics/topic-1/partitions/1/replicas", ""), 200,
		`{"kind":"KafkaReplicaList","metadata":{"self":"`+c+`/topics/topic-1/partitions/1/replicas","next":null},"data":[`+replica(1)+`]}`)
	wantJSON(t, "replicas of a broker", do(t, "GET", c+"/brokers/1/partition-replicas", ""), 200,
		`{"kind":"KafkaReplicaList","metadata":{"self":"`+c+`/brokers/1/partition-replicas","next":null},"data":[`+replica(0)+`,`+replica(1)+`]}`)
	wantJSON(t, "unknown partition", do(t, "GET", c+"/topics/topic-1/partitions/9/replicas", ""), 404,
		`{"error_code":404,"message":"Partition 9 of topic topic-1 could not be found on cluster `+cluster+`."}`)

	// Reassignments: none under way.
	wantJSON(t, "reassignments", do(t, "GET", c+"/topics/-/partitions/-/reassignment", ""), 200,
		`{"kind":"KafkaReassignmentList","metadata":{"self":"`+c+`/topics/-/partitions/-/reassignments","next":null},"data":[]}`)
	wantJSON(t, "reassignments of a topic", do(t, "GET", c+"/topics/topic-1/partitions/-/reassignment", ""), 200,
		`{"kind":"KafkaReassignmentList","metadata":{"self":"`+c+`/topics/topic-1/partitions/-/reassignments","next":null},"data":[]}`)
	wantJSON(t, "no reassignment", do(t, "GET", c+"/topics/topic-1/partitions/0/reassignment", ""), 404, `{"error_code":404,"message":"HTTP 404 Not Found"}`)
}
