package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Metadata: a named topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION
// (auto-creation off), an invalid name INVALID_TOPIC_EXCEPTION; the cluster
// id from v2, topic ids from v10, and alice (no ACLs) sees no topic in a
// list of all and TOPIC_AUTHORIZATION_FAILED for a named one.
func TestMetadataHandler(t *testing.T) {
	b := startHandlerTest(t, nil)
	id := b.createTopic("md", 3)
	metadata := func(v int16, topics ...string) *kmsg.MetadataRequest {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = v
		if topics == nil && v >= 1 {
			req.Topics = nil // all topics
		}
		for _, topic := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
		}
		return req
	}
	for _, v := range []int16{0, 1, 4, 9, 10, 12, 13} {
		resp := b.do(metadata(v, "md", "nope", "bad name")).(*kmsg.MetadataResponse)
		if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 1 {
			t.Errorf("v%d: brokers %+v", v, resp.Brokers)
		}
		if (resp.ClusterID != nil && *resp.ClusterID != "") != (v >= 2) {
			t.Errorf("v%d: cluster id %v", v, resp.ClusterID)
		}
		if v >= 1 && resp.ControllerID < 0 {
			t.Errorf("v%d: controller %d", v, resp.ControllerID)
		}
		byName := map[string]kmsg.MetadataResponseTopic{}
		for _, mt := range resp.Topics {
			byName[*mt.Topic] = mt
		}
		md := byName["md"]
		wantCode(t, "md", md.ErrorCode, nil)
		if len(md.Partitions) != 3 {
			t.Errorf("v%d: md has %d partitions", v, len(md.Partitions))
		}
		for _, p := range md.Partitions {
			if p.Leader != 1 || len(p.Replicas) != 1 || len(p.ISR) != 1 {
				t.Errorf("v%d: md-%d leader %d replicas %v isr %v", v, p.Partition, p.Leader, p.Replicas, p.ISR)
			}
			if v >= 7 && p.LeaderEpoch < 0 {
				t.Errorf("v%d: md-%d leader epoch %d", v, p.Partition, p.LeaderEpoch)
			}
		}
		if (md.TopicID == id) != (v >= 10) {
			t.Errorf("v%d: topic id %x, created as %x", v, md.TopicID, id)
		}
		wantCode(t, "nope", byName["nope"].ErrorCode, kerr.UnknownTopicOrPartition)
		wantCode(t, "bad name", byName["bad name"].ErrorCode, kerr.InvalidTopicException)
	}

	// All topics, and a name, as alice: nothing to describe.
	all := b.as("alice", metadata(12)).(*kmsg.MetadataResponse)
	if len(all.Topics) != 0 {
		t.Errorf("alice lists %d topics, want none", len(all.Topics))
	}
	named := b.as("alice", metadata(12, "md")).(*kmsg.MetadataResponse)
	if len(named.Topics) != 1 {
		t.Fatalf("alice asking for md: %d topics", len(named.Topics))
	}
	wantCode(t, "md as alice", named.Topics[0].ErrorCode, kerr.TopicAuthorizationFailed)
	if len(named.Topics[0].Partitions) != 0 {
		t.Errorf("alice sees md's partitions %+v", named.Topics[0].Partitions)
	}
}
