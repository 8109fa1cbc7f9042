package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeConfigsRequest describes one resource, all its configs or the
// names given.
func describeConfigsRequest(v int16, typ kmsg.ConfigResourceType, name string, keys ...string) *kmsg.DescribeConfigsRequest {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version, req.IncludeSynonyms = v, v >= 1
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = typ, name, keys
	req.Resources = append(req.Resources, r)
	return req
}

// DescribeConfigs (v1 up; v0 is gone since Kafka 4.0): a topic's override
// with its source and synonyms
// and, from v3, its type; a broker's configs by its id; an unknown topic is
// UNKNOWN_TOPIC_OR_PARTITION; alice (no ACLs) gets
// TOPIC_AUTHORIZATION_FAILED for a topic and CLUSTER_AUTHORIZATION_FAILED
// for the broker; samsa's REMOTE_LOG answers as a topic does.
func TestDescribeConfigsHandler(t *testing.T) {
	b := startHandlerTest(t, nil)
	b.createTopic("dc", 1, "retention.ms", "12345")
	for _, v := range []int16{1, 2, 3, 4} {
		resp := b.do(describeConfigsRequest(v, kmsg.ConfigResourceTypeTopic, "dc", "retention.ms", "cleanup.policy")).(*kmsg.DescribeConfigsResponse)
		r := resp.Resources[0]
		wantCode(t, "describe dc", r.ErrorCode, nil)
		got := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
		for _, c := range r.Configs {
			got[c.Name] = c
		}
		if len(got) != 2 {
			t.Errorf("v%d: configs %v, want the two asked for", v, r.Configs)
		}
		ret := got["retention.ms"]
		if ret.Value == nil || *ret.Value != "12345" {
			t.Errorf("v%d: retention.ms %v", v, ret.Value)
		}
		if ret.Source != kmsg.ConfigSourceDynamicTopicConfig {
			t.Errorf("v%d: retention.ms source %v", v, ret.Source)
		}
		if len(ret.ConfigSynonyms) == 0 {
			t.Errorf("v%d: retention.ms without synonyms", v)
		}
		if v >= 3 && ret.ConfigType != kmsg.ConfigTypeLong {
			t.Errorf("v%d: retention.ms type %v, want LONG", v, ret.ConfigType)
		}
		if cp := got["cleanup.policy"]; cp.Value == nil || *cp.Value != "delete" || cp.Source != kmsg.ConfigSourceDefaultConfig {
			t.Errorf("v%d: cleanup.policy %v from %v", v, cp.Value, cp.Source)
		}
	}
	if _, err := b.try(describeConfigsRequest(0, kmsg.ConfigResourceTypeTopic, "dc")); err == nil {
		t.Error("DescribeConfigs v0 (gone since Kafka 4.0) answered")
	}
	broker := b.do(describeConfigsRequest(4, kmsg.ConfigResourceTypeBroker, "1", "num.partitions")).(*kmsg.DescribeConfigsResponse)
	wantCode(t, "broker 1", broker.Resources[0].ErrorCode, nil)
	if len(broker.Resources[0].Configs) != 1 {
		t.Errorf("broker 1: %v", broker.Resources[0].Configs)
	}
	code := func(resp kmsg.Response) int16 { return resp.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode }
	wantCode(t, "unknown topic", code(b.do(describeConfigsRequest(4, kmsg.ConfigResourceTypeTopic, "nope"))), kerr.UnknownTopicOrPartition)
	wantCode(t, "topic as alice", code(b.as("alice", describeConfigsRequest(4, kmsg.ConfigResourceTypeTopic, "dc"))), kerr.TopicAuthorizationFailed)
	wantCode(t, "broker as alice", code(b.as("alice", describeConfigsRequest(4, kmsg.ConfigResourceTypeBroker, "1"))), kerr.ClusterAuthorizationFailed)

	// samsa's REMOTE_LOG (101, tiered_status.go): nothing for a topic
	// without remote.storage.enable; authorized and unknown as a topic.
	const remoteLog kmsg.ConfigResourceType = 101
	rl := b.do(describeConfigsRequest(4, remoteLog, "dc")).(*kmsg.DescribeConfigsResponse).Resources[0]
	wantCode(t, "REMOTE_LOG dc", rl.ErrorCode, nil)
	if len(rl.Configs) != 0 {
		t.Errorf("REMOTE_LOG of a topic not tiered: %v", rl.Configs)
	}
	wantCode(t, "REMOTE_LOG unknown", code(b.do(describeConfigsRequest(4, remoteLog, "nope"))), kerr.UnknownTopicOrPartition)
	wantCode(t, "REMOTE_LOG as alice", code(b.as("alice", describeConfigsRequest(4, remoteLog, "dc"))), kerr.TopicAuthorizationFailed)
}
