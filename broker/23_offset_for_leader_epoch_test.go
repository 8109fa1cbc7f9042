package broker_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// offsetForLeaderEpochRequest asks where leaderEpoch ends in topic's
// partition, as a consumer that knows currentEpoch.
func offsetForLeaderEpochRequest(v int16, topic string, partition, currentEpoch, leaderEpoch int32) *kmsg.OffsetForLeaderEpochRequest {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.Version, req.ReplicaID = v, -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = partition, currentEpoch, leaderEpoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// OffsetForLeaderEpoch v2-v4: the current epoch ends at the log end; a
// current epoch newer than the leader's is UNKNOWN_LEADER_EPOCH; an
// unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION; alice (no ACLs)
// gets TOPIC_AUTHORIZATION_FAILED.
func TestOffsetForLeaderEpochHandler(t *testing.T) {
	b := startHandlerTest(t, map[string]int32{"ole": 1})
	b.produce("ole", 0, "a", "b", "c")
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("ole")
	md.Topics = append(md.Topics, rt)
	epoch := b.do(md).(*kmsg.MetadataResponse).Topics[0].Partitions[0].LeaderEpoch
	result := func(resp kmsg.Response) kmsg.OffsetForLeaderEpochResponseTopicPartition {
		return resp.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
	}
	for v := int16(2); v <= 4; v++ {
		rp := result(b.do(offsetForLeaderEpochRequest(v, "ole", 0, epoch, epoch)))
		wantCode(t, fmt.Sprintf("v%d", v), rp.ErrorCode, nil)
		if rp.LeaderEpoch != epoch || rp.EndOffset != 3 {
			t.Errorf("v%d: epoch %d ends at %d, want %d at 3", v, rp.LeaderEpoch, rp.EndOffset, epoch)
		}
	}
	wantCode(t, "a newer current epoch", result(b.do(offsetForLeaderEpochRequest(4, "ole", 0, epoch+5, epoch))).ErrorCode, kerr.UnknownLeaderEpoch)
	wantCode(t, "unknown topic", result(b.do(offsetForLeaderEpochRequest(4, "nope", 0, -1, 0))).ErrorCode, kerr.UnknownTopicOrPartition)
	wantCode(t, "partition 1 of 1", result(b.do(offsetForLeaderEpochRequest(4, "ole", 1, -1, 0))).ErrorCode, kerr.UnknownTopicOrPartition)
	wantCode(t, "as alice", result(b.as("alice", offsetForLeaderEpochRequest(4, "ole", 0, -1, epoch))).ErrorCode, kerr.TopicAuthorizationFailed)
}
