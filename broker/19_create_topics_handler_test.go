package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// createTopicsRequest creates one topic.
func createTopicsRequest(v int16, topic string, partitions int32, rf int16) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.TimeoutMillis = v, 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, rf
	req.Topics = append(req.Topics, rt)
	return req
}

// CreateTopics (the handler; 19_create_topics_test.go tests its
// validation): v5+ answers the partitions, replication factor and configs,
// v7+ the topic id; an existing name is TOPIC_ALREADY_EXISTS, 0 partitions
// INVALID_PARTITIONS, more replicas than brokers INVALID_REPLICATION_FACTOR,
// a bad name INVALID_TOPIC_EXCEPTION, an unknown config INVALID_CONFIG,
// validate-only creates nothing, and alice (no ACLs)
// TOPIC_AUTHORIZATION_FAILED.
func TestCreateTopicsHandler(t *testing.T) {
	b := startHandlerTest(t, nil)
	for _, v := range []int16{2, 4, 5, 7} {
		name := "ct" + string(rune('a'+v))
		resp := b.do(createTopicsRequest(v, name, 2, -1)).(*kmsg.CreateTopicsResponse)
		ct := resp.Topics[0]
		wantCode(t, "create "+name, ct.ErrorCode, nil)
		if v >= 5 && (ct.NumPartitions != 2 || ct.ReplicationFactor != 1 || len(ct.Configs) == 0) {
			t.Errorf("v%d: partitions %d, replication factor %d, %d configs", v, ct.NumPartitions, ct.ReplicationFactor, len(ct.Configs))
		}
		if (ct.TopicID != [16]byte{}) != (v >= 7) {
			t.Errorf("v%d: topic id %x", v, ct.TopicID)
		}
		again := b.do(createTopicsRequest(v, name, 2, -1)).(*kmsg.CreateTopicsResponse)
		wantCode(t, "create "+name+" again", again.Topics[0].ErrorCode, kerr.TopicAlreadyExists)
	}
	code := func(req *kmsg.CreateTopicsRequest) int16 {
		return b.do(req).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode
	}
	wantCode(t, "0 partitions", code(createTopicsRequest(7, "zero", 0, 1)), kerr.InvalidPartitions)
	wantCode(t, "3 replicas on 1 broker", code(createTopicsRequest(7, "three", 1, 3)), kerr.InvalidReplicationFactor)
	wantCode(t, "bad name", code(createTopicsRequest(7, "a/b", 1, 1)), kerr.InvalidTopicException)
	badConfig := createTopicsRequest(7, "badconfig", 1, 1)
	c := kmsg.NewCreateTopicsRequestTopicConfig()
	c.Name, c.Value = "no.such.config", kmsg.StringPtr("1")
	badConfig.Topics[0].Configs = append(badConfig.Topics[0].Configs, c)
	wantCode(t, "unknown config", code(badConfig), kerr.InvalidConfig)

	validate := createTopicsRequest(7, "validated", 1, 1)
	validate.ValidateOnly = true
	wantCode(t, "validate only", code(validate), nil)
	wantCode(t, "create after validate only", code(createTopicsRequest(7, "validated", 1, 1)), nil)

	resp := b.as("alice", createTopicsRequest(7, "alices", 1, 1)).(*kmsg.CreateTopicsResponse)
	wantCode(t, "as alice", resp.Topics[0].ErrorCode, kerr.TopicAuthorizationFailed)
}
