package compat

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/kafkaref"
	"github.com/samsa-io/samsa/internal/testutil"
)

// startProxyBroker starts a broker serving the REST proxy and returns it
// with the proxy's URL, as http://localhost:PORT (the host Confluent's
// documentation uses).
func startProxyBroker(t *testing.T, overrides map[string]string) (*testutil.Node, string) {
	t.Helper()
	props := map[string]string{"samsa.http.proxy.listener": "127.0.0.1:0"}
	for k, v := range overrides {
		props[k] = v
	}
	b := testutil.StartBroker(t, props)
	_, port, _ := strings.Cut(b.ProxyAddr(), ":")
	return b, "http://localhost:" + port
}

// docStep is one command of Confluent's REST Proxy quick start (v2),
// as written there, and the output the page shows for it ("" for "No
// content in response"). until: run it again until its output is the
// one shown (a consumer's first reads may come before it joined its
// group, there as here).
type docStep struct {
	cmd, want string
	until     bool
}

// The quick start of Confluent's REST Proxy documentation ("Produce and
// Consume JSON Messages", "Produce and Consume Binary Messages",
// "Inspect Topic Metadata"), its commands and outputs copied as they
// are on the page.
var quickStart = []docStep{
	{cmd: `curl -X POST -H "Content-Type: application/vnd.kafka.json.v2+json" \
      --data '{"records":[{"value":{"foo":"bar"}}]}' "http://localhost:8082/topics/jsontest"`,
		want: `{
   "offsets":[{"partition":0,"offset":0,"error_code":null,"error":null}],"key_schema_id":null,"value_schema_id":null
  }`},
	{cmd: `curl -X POST -H "Content-Type: application/vnd.kafka.v2+json" \
      --data '{"name": "my_consumer_instance", "format": "json", "auto.offset.reset": "earliest"}' \
      http://localhost:8082/consumers/my_json_consumer`,
		want: `{
  "instance_id":"my_consumer_instance",
  "base_uri":"http://localhost:8082/consumers/my_json_consumer/instances/my_consumer_instance"
 }`},
	{cmd: `curl -X POST -H "Content-Type: application/vnd.kafka.v2+json" --data '{"topics":["jsontest"]}' \
 http://localhost:8082/consumers/my_json_consumer/instances/my_consumer_instance/subscription`},
	{cmd: `curl -X GET -H "Accept: application/vnd.kafka.json.v2+json" \
      http://localhost:8082/consumers/my_json_consumer/instances/my_consumer_instance/records`,
		want: `[
   {"key":null,"value":{"foo":"bar"},"partition":0,"offset":0,"topic":"jsontest"}
  ]`, until: true},
	{cmd: `curl -X DELETE -H "Content-Type: application/vnd.kafka.v2+json" \
      http://localhost:8082/consumers/my_json_consumer/instances/my_consumer_instance`},

	{cmd: `curl -X POST -H "Content-Type: application/vnd.kafka.binary.v2+json" \
      -H "Accept: application/vnd.kafka.v2+json" \
      --data '{"records":[{"value":"S2Fma2E="}]}' "http://localhost:8082/topics/binarytest"`,
		want: `{"offsets":[{"partition":0,"offset":0,"error_code":null,"error":null}],"key_schema_id":null,"value_schema_id":null}`},
	{cmd: `curl -X POST -H "Content-Type: application/vnd.kafka.v2+json" \
      --data '{"name": "my_consumer_instance", "format": "binary", "auto.offset.reset": "earliest"}' \
      http://localhost:8082/consumers/my_binary_consumer`,
		want: `{"instance_id":"my_consumer_instance","base_uri":"http://localhost:8082/consumers/my_binary_consumer/instances/my_consumer_instance"}`},
	{cmd: `curl -X POST -H "Content-Type: application/vnd.kafka.v2+json" --data '{"topics":["binarytest"]}' \
      http://localhost:8082/consumers/my_binary_consumer/instances/my_consumer_instance/subscription`},
	{cmd: `curl -X GET -H "Accept: application/vnd.kafka.binary.v2+json" \
      http://localhost:8082/consumers/my_binary_consumer/instances/my_consumer_instance/records`,
		want: `[{"key":null,"value":"S2Fma2E=","partition":0,"offset":0,"topic":"binarytest"}]`, until: true},
	{cmd: `curl -X DELETE -H "Content-Type: application/vnd.kafka.v2+json" \
      http://localhost:8082/consumers/my_binary_consumer/instances/my_consumer_instance`},

	// The page's list also shows __consumer_offsets, _schemas and
	// avrotest: internal topics are left out by the Admin client's
	// listTopics that Confluent's proxy now calls, and this cluster has
	// no registry nor Avro topic.
	{cmd: `curl "http://localhost:8082/topics"`, want: `["binarytest","jsontest"]`},
	{cmd: `curl "http://localhost:8082/topics/jsontest/partitions"`,
		want: `[{"partition":0,"leader":1,"replicas":[{"broker":1,"leader":true,"in_sync":true}]}]`},
}

// TestRESTProxyConfluentQuickStart runs the quick start of Confluent's
// REST Proxy documentation with curl, as written (the proxy's port for
// 8082), and compares each output with the page's.
func TestRESTProxyConfluentQuickStart(t *testing.T) {
	_, url := startProxyBroker(t, nil)
	for i, s := range quickStart {
		cmd := strings.ReplaceAll(s.cmd, "http://localhost:8082", url)
		want := strings.ReplaceAll(s.want, "http://localhost:8082", url)
		run := func() (string, error) {
			out, err := exec.CommandContext(testCtx(t, 30*time.Second), "sh", "-c", cmd+" --silent --show-error").Output()
			if err != nil {
				return "", fmt.Errorf("step %d: %s: %v", i, cmd, err)
			}
			got := strings.TrimSpace(string(out))
			if want == "" {
				if got != "" {
					return got, fmt.Errorf("step %d: %s: printed %s, the page shows no content", i, cmd, got)
				}
				return got, nil
			}
			if !testutil.SameJSON(got, want) {
				return got, fmt.Errorf("step %d: %s:\n got %s\nwant %s", i, cmd, got, want)
			}
			return got, nil
		}
		if s.until {
			testutil.Eventually(t, 30*time.Second, func() error { _, err := run(); return err })
			continue
		}
		if _, err := run(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRESTProxyPythonRequests: Python's requests speaks to the proxy as
// a web application would, and confluent-kafka (librdkafka) reads what it
// produced over HTTP, and produces what a proxy consumer instance reads.
func TestRESTProxyPythonRequests(t *testing.T) {
	b, url := startProxyBroker(t, nil)
	runProxyScript(t, "rest_proxy.py", b.Addr(), url)
}

// TestRESTProxyProtobufConfluentKafka: records produced over HTTP in
// protobuf are read by confluent-kafka's ProtobufDeserializer, and those
// its ProtobufSerializer writes are read over HTTP: the same wire format
// both ways.
func TestRESTProxyProtobufConfluentKafka(t *testing.T) {
	b, url := startProxyBroker(t, map[string]string{"samsa.schema.registry.listener": "127.0.0.1:0"})
	runProxyScript(t, "rest_proxy_protobuf.py", b.Addr(), "http://"+b.RegistryAddr(), url)
}

// runProxyScript runs one of compat/python's proxy scripts, which prints
// ok last.
func runProxyScript(t *testing.T, script string, args ...string) {
	t.Helper()
	root, err := kafkaref.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(testCtx(t, 2*time.Minute), venvPython(t, root), append([]string{filepath.Join(root, "compat", "python", script)}, args...)...)
	out, err := cmd.CombinedOutput()
	got := strings.TrimSpace(string(out))
	if err != nil || !strings.HasSuffix(got, "ok") {
		t.Fatalf("%s: %v\n%s", script, err, got)
	}
	t.Logf("%s", got)
}

// readmeV3 is the v3 walk-through of kafka-rest's README, its commands
// and answers as written there (its cluster id, its broker 0 and its
// timestamps stand for this cluster's).
var readmeV3 = []docStep{
	{cmd: `curl http://localhost:8082/v3/clusters`, want: `{"kind":"KafkaClusterList",
   "metadata":{"self":"http://localhost:8082/v3/clusters","next":null},
   "data":[
    {"kind":"KafkaCluster",
     "metadata":{"self":"http://localhost:8082/v3/clusters/xFhUvurESIeeCI87SXWR-Q",
     "resource_name":"crn:///kafka=xFhUvurESIeeCI87SXWR-Q"},
     "cluster_id":"xFhUvurESIeeCI87SXWR-Q",
     "controller":{"related":"http://localhost:8082/v3/clusters/xFhUvurESIeeCI87SXWR-Q/brokers/0"},
     "acls":{"related":"http://localhost:8082/v3/clusters/xFhUvurESIeeCI87SXWR-Q/acls"},
     "brokers":{"related":"http://localhost:8082/v3/clusters/xFhUvurESIeeCI87SXWR-Q/brokers"},
     "broker_configs":{"related":"http://localhost:8082/v3/clusters/xFhUvurESIeeCI87SXWR-Q/broker-configs"},
     "consumer_groups":{"related":"http://localhost:8082/v3/clusters/xFhUvurESIeeCI87SXWR-Q/consumer-groups"},
     "topics":{"related":"http://localhost:8082/v3/clusters/xFhUvurESIeeCI87SXWR-Q/topics"},
     "partition_reassignments":{"related":"http://localhost:8082/v3/clusters/xFhUvurESIeeCI87SXWR-Q/topics/-/partitions/-/reassignment"}
    }
   ]
  }`},
	// The README lists the topics before it creates jsontest (made
	// earlier by its v2 part); here it is created first.
	{cmd: `curl -X POST -H "Content-Type:application/json" -d '{"topic_name":"jsontest"}' \
       http://localhost:8082/v3/clusters/xFhUvurESIeeCI87SXWR-Q/topics`, want: `{"kind":"KafkaTopic",
   "metadata":{"self":"http://localhost:8082/v3/clusters/xFhUvurESIeeCI87SXWR-Q/topics/jsontest",
   "resource_name":"crn:///kafka=xFhUvurESIeeCI87SXWR-Q/topic=jsontest"},
   "cluster_id":"xFhUvurESIeeCI87SXWR-Q",
   "topic_name":"jsontest",
   "is_internal":false,
   "replication_factor":1,
   "partitions_count":1,
   "partitions":{"related":"http://localhost:8082/v3/clusters/xFhUvurESIeeCI87SXWR-Q/topics/jsontest/partitions"},
   "configs":{"related":"http://localhost:8082/v3/clusters/xFhUvurESIeeCI87SXWR-Q/topics/jsontest/configs"},
   "partition_reassignments":{"related":"http://localhost:8082/v3/clusters/xFhUvurESIeeCI87SXWR-Q/topics/jsontest/partitions/-/reassignment"}
  }`},
	{cmd: `curl http://localhost:8082/v3/clusters/xFhUvurESIeeCI87SXWR-Q/topics`, want: `{"kind":"KafkaTopicList",
   "metadata":{"self":"http://localhost:8082/v3/clusters/xFhUvurESIeeCI87SXWR-Q/topics","next":null},
   "data":[
    {"kind":"KafkaTopic",
     "metadata":{"self":"http://localhost:8082/v3/clusters/xFhUvurESIeeCI87SXWR-Q/topics/jsontest",
     "resource_name":"crn:///kafka=xFhUvurESIeeCI87SXWR-Q/topic=jsontest"},
     "cluster_id":"xFhUvurESIeeCI87SXWR-Q",
     "topic_name":"jsontest",
     "is_internal":false,
     "replication_factor":1,
     "partitions_count":1,
     "partitions":{"related":"http://localhost:8082/v3/clusters/xFhUvurESIeeCI87SXWR-Q/topics/jsontest/partitions"},
     "configs":{"related":"http://localhost:8082/v3/clusters/xFhUvurESIeeCI87SXWR-Q/topics/jsontest/configs"},
     "partition_reassignments":{"related":"http://localhost:8082/v3/clusters/xFhUvurESIeeCI87SXWR-Q/topics/jsontest/partitions/-/reassignment"}
    }
   ]
  }`},
	{cmd: `curl -X POST -H "Content-Type: application/json" \
       -d '{"value":{"type":"JSON","data":{"name":"testUser"}}}' \
       http://localhost:8082/v3/clusters/xFhUvurESIeeCI87SXWR-Q/topics/jsontest/records`, want: `{"error_code":200,
   "cluster_id":"xFhUvurESIeeCI87SXWR-Q",
   "topic_name":"jsontest",
   "partition_id":0,
   "offset":0,
   "timestamp":"2023-03-09T14:07:23.592Z",
   "value":{"type":"JSON","size":19}
  }`},
	{cmd: `curl -X POST -H "Content-Type: application/json" \
       -d '{"value":{"type":"JSON","data":"ONE"}} {"value":{"type":"JSON","data":"TWO"}}' \
       http://localhost:8082/v3/clusters/xFhUvurESIeeCI87SXWR-Q/topics/jsontest/records`, want: `{"error_code":200,
   "cluster_id":"xFhUvurESIeeCI87SXWR-Q",
   "topic_name":"jsontest",
   "partition_id":0,
   "offset":1,
   "timestamp":"2023-03-09T14:07:23.592Z",
   "value":{"type":"JSON","size":5}
  }
  {"error_code":200,
   "cluster_id":"xFhUvurESIeeCI87SXWR-Q",
   "topic_name":"jsontest",
   "partition_id":0,
   "offset":2,
   "timestamp":"2023-03-09T14:07:23.592Z",
   "value":{"type":"JSON","size":5}
  }`},
	// The README's answer says offset 2 again (after 0, 1 and 2 above).
	{cmd: `curl -X POST -H "Content-Type: application/json" \
       -d '{"value":{"type":"STRING","data":"REST"}}' \
       http://localhost:8082/v3/clusters/xFhUvurESIeeCI87SXWR-Q/topics/jsontest/records`, want: `{"error_code":200,
   "cluster_id":"xFhUvurESIeeCI87SXWR-Q",
   "topic_name":"jsontest",
   "partition_id":0,
   "offset":3,
   "timestamp":"2023-03-09T14:07:23.592Z",
   "value":{"type":"STRING","size":4}
  }`},
	{cmd: `curl -X POST -H "Content-Type: application/json" \
       -d '{"entries":[{"id":"first","value":{"type":"JSON","data":"ONE"}}, {"id":"second","value":{"type":"JSON","data":"TWO"}}]}' \
       http://localhost:8082/v3/clusters/xFhUvurESIeeCI87SXWR-Q/topics/jsontest/records:batch`, want: `{"successes":[
    {"id":"first",
     "cluster_id":"xFhUvurESIeeCI87SXWR-Q",
     "topic_name":"jsontest",
     "partition_id":0,
     "offset":4,
     "timestamp":"2023-03-09T14:07:23.592Z",
     "value":{"type":"JSON","size":5}
    },
    {"id":"second",
     "cluster_id":"xFhUvurESIeeCI87SXWR-Q",
     "topic_name":"jsontest",
     "partition_id":0,
     "offset":5,
     "timestamp":"2023-03-09T14:07:23.592Z",
     "value":{"type":"JSON","size":5}
    }
   ],
   "failures":[]
  }`},
}

// TestRESTProxyReadmeV3 runs the v3 walk-through of kafka-rest's README
// with curl and compares each answer with the README's (timestamps
// aside).
func TestRESTProxyReadmeV3(t *testing.T) {
	b, url := startProxyBroker(t, nil)
	md, err := newAdmin(t, b.Addr()).BrokerMetadata(testCtx(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	fix := strings.NewReplacer("http://localhost:8082", url, "xFhUvurESIeeCI87SXWR-Q", md.Cluster, "/brokers/0", fmt.Sprintf("/brokers/%d", md.Controller))
	for i, s := range readmeV3 {
		cmd, want := fix.Replace(s.cmd), fix.Replace(s.want)
		out, err := exec.CommandContext(testCtx(t, 30*time.Second), "sh", "-c", cmd+" --silent --show-error").Output()
		if err != nil {
			t.Fatalf("step %d: %s: %v", i, cmd, err)
		}
		got, wantVals := jsonStream(t, string(out)), jsonStream(t, want)
		if len(got) != len(wantVals) {
			t.Fatalf("step %d: %s:\n got %s\nwant %s", i, cmd, out, want)
		}
		for j := range got {
			if g, w := untimed(got[j]), untimed(wantVals[j]); g != w {
				t.Fatalf("step %d: %s:\n got %s\nwant %s", i, cmd, g, w)
			}
		}
	}
}

// jsonStream decodes a stream of JSON values.
func jsonStream(t *testing.T, s string) []any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	var out []any
	for dec.More() {
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		out = append(out, v)
	}
	return out
}

// untimed is v as JSON with its timestamps dropped.
func untimed(v any) string {
	var drop func(any)
	drop = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			delete(x, "timestamp")
			for _, e := range x {
				drop(e)
			}
		case []any:
			for _, e := range x {
				drop(e)
			}
		}
	}
	drop(v)
	b, _ := json.Marshal(v)
	return string(b)
}

// TestRESTProxyInstanceOnAnotherBroker: in a cluster of three brokers,
// each serving the proxy, a consumer instance lives on the broker whose
// proxy created it, as in Confluent's proxy (KafkaConsumerManager keeps
// its instances in a map of its own: there is no forwarding, a client
// follows base_uri). Another broker's proxy answers 40403 for it, and an
// instance of the same name created there is a second member of the
// group, deleted without touching the first.
func TestRESTProxyInstanceOnAnotherBroker(t *testing.T) {
	c := testutil.StartCluster(t, 3, map[string]string{"samsa.http.proxy.listener": "127.0.0.1:0", "group.initial.rebalance.delay.ms": "0"})
	createReplicatedTopic(t, c, "spread", 3, 1, nil)
	cl := newClusterKgo(t, c)
	var recs []*kgo.Record
	for i := range 30 {
		recs = append(recs, &kgo.Record{Topic: "spread", Partition: int32(i % 3), Value: fmt.Append(nil, i)})
	}
	produceAll(t, cl, recs...)
	u1, u2 := "http://"+c.Node(1).ProxyAddr(), "http://"+c.Node(2).ProxyAddr()
	ctx := testCtx(t, time.Minute)
	const v2 = "application/vnd.kafka.v2+json"
	call := func(method, url, body string, status int, want string) string {
		t.Helper()
		got, b, err := proxyCall(ctx, method, url, v2, body)
		if err != nil || got != status || want != "" && !testutil.SameJSON(string(b), want) {
			t.Fatalf("%s %s: %d %s %v, want %d %s", method, url, got, b, err, status, want)
		}
		return string(b)
	}
	call("POST", u1+"/consumers/g", `{"name":"i","format":"binary","auto.offset.reset":"earliest"}`, 200,
		`{"instance_id":"i","base_uri":"`+u1+`/consumers/g/instances/i"}`)
	const notFound = `{"error_code":40403,"message":"Consumer instance not found."}`
	call("POST", u2+"/consumers/g/instances/i/subscription", `{"topics":["spread"]}`, 404, notFound)
	call("GET", u2+"/consumers/g/instances/i/records", "", 404, notFound)
	call("DELETE", u2+"/consumers/g/instances/i", "", 404, notFound)

	call("POST", u1+"/consumers/g/instances/i/subscription", `{"topics":["spread"]}`, 204, "")
	read := 0
	testutil.Eventually(t, 30*time.Second, func() error {
		var got []json.RawMessage
		if err := json.Unmarshal([]byte(call("GET", u1+"/consumers/g/instances/i/records?timeout=200", "", 200, "")), &got); err != nil {
			return err
		}
		if read += len(got); read < 30 {
			return fmt.Errorf("read %d of 30 records on broker 1's proxy", read)
		}
		return nil
	})

	// The same name on broker 2: another instance, another member.
	call("POST", u2+"/consumers/g", `{"name":"i","format":"binary","auto.offset.reset":"earliest"}`, 200,
		`{"instance_id":"i","base_uri":"`+u2+`/consumers/g/instances/i"}`)
	call("POST", u2+"/consumers/g/instances/i/subscription", `{"topics":["spread"]}`, 204, "")
	adm := newAdmin(t, c.Node(1).Addr())
	testutil.Eventually(t, 30*time.Second, func() error {
		call("GET", u1+"/consumers/g/instances/i/records?timeout=100", "", 200, "")
		call("GET", u2+"/consumers/g/instances/i/records?timeout=100", "", 200, "")
		gs, err := adm.DescribeGroups(ctx, "g")
		if err != nil {
			return err
		}
		if n := len(gs["g"].Members); n != 2 || gs["g"].State != "Stable" {
			return fmt.Errorf("group g: %d members, %s", n, gs["g"].State)
		}
		return nil
	})
	call("DELETE", u2+"/consumers/g/instances/i", "", 204, "")
	call("GET", u1+"/consumers/g/instances/i/records?timeout=100", "", 200, "")
	call("DELETE", u1+"/consumers/g/instances/i", "", 204, "")
}

// TestRESTProxyAllBrokersConfigs: GET .../brokers/-/configs (kafka-rest's
// ListAllBrokersConfigsAction) answers a KafkaBrokerConfigList of every
// broker's configs, each item as that broker's own list gives it,
// brokers in order of id; one broker's dynamic config shows on its items
// only, and another cluster's id is 404.
func TestRESTProxyAllBrokersConfigs(t *testing.T) {
	c := testutil.StartCluster(t, 2, map[string]string{"samsa.http.proxy.listener": "127.0.0.1:0"})
	ctx := testCtx(t, time.Minute)
	md, err := newAdmin(t, c.Node(1).Addr()).BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + c.Node(1).ProxyAddr() + "/v3/clusters/" + md.Cluster
	call := func(method, url, body string, status int) []byte {
		t.Helper()
		got, b, err := proxyCall(ctx, method, url, "application/json", body)
		if err != nil || got != status {
			t.Fatalf("%s %s: %d %.500s %v, want %d", method, url, got, b, err, status)
		}
		return b
	}
	call("PUT", base+"/brokers/2/configs/compression.type", `{"value":"gzip"}`, 204)
	testutil.Eventually(t, 30*time.Second, func() error {
		var cd struct{ Value string }
		if err := json.Unmarshal(call("GET", base+"/brokers/2/configs/compression.type", "", 200), &cd); err != nil || cd.Value != "gzip" {
			return fmt.Errorf("broker 2's compression.type is %q (%v)", cd.Value, err)
		}
		return nil
	})

	type configList struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Self string  `json:"self"`
			Next *string `json:"next"`
		} `json:"metadata"`
		Data []json.RawMessage `json:"data"`
	}
	list := func(path string) configList {
		t.Helper()
		var l configList
		if b := call("GET", base+path, "", 200); json.Unmarshal(b, &l) != nil {
			t.Fatalf("GET %s: %.500s", path, b)
		}
		return l
	}
	var want []json.RawMessage
	for _, id := range []int{1, 2} {
		want = append(want, list(fmt.Sprintf("/brokers/%d/configs", id)).Data...)
	}
	all := list("/brokers/-/configs")
	if all.Kind != "KafkaBrokerConfigList" || all.Metadata.Self != base+"/brokers/-/configs" || all.Metadata.Next != nil {
		t.Fatalf("all brokers' configs: kind %s, metadata %+v", all.Kind, all.Metadata)
	}
	if len(all.Data) != len(want) || len(want) < 2 {
		t.Fatalf("all brokers' configs: %d items, the brokers' lists %d", len(all.Data), len(want))
	}
	gzip := map[float64]bool{}
	for i := range want {
		if !testutil.SameJSON(string(all.Data[i]), string(want[i])) {
			t.Fatalf("item %d:\n got %s\nwant %s", i, all.Data[i], want[i])
		}
		var cd struct {
			BrokerID float64 `json:"broker_id"`
			Name     string  `json:"name"`
			Value    string  `json:"value"`
		}
		if err := json.Unmarshal(all.Data[i], &cd); err != nil {
			t.Fatal(err)
		}
		if cd.Name == "compression.type" {
			gzip[cd.BrokerID] = cd.Value == "gzip"
		}
	}
	if len(gzip) != 2 || gzip[1] || !gzip[2] {
		t.Fatalf("compression.type is gzip on brokers %v, want on broker 2 only", gzip)
	}
	call("GET", "http://"+c.Node(1).ProxyAddr()+"/v3/clusters/nope/brokers/-/configs", "", 404)
}
