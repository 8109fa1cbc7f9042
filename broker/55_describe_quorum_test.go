package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeQuorumRequest describes topic's partition (the quorum's is
// __cluster_metadata-0).
func describeQuorumRequest(v int16, topic string, partition int32) *kmsg.DescribeQuorumRequest {
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.Version = v
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDescribeQuorumRequestTopicPartition()
	rp.Partition = partition
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// DescribeQuorum v0-v2: __cluster_metadata-0 has a leader among its
// voters, at a positive epoch and high watermark; another partition is
// UNKNOWN_TOPIC_OR_PARTITION; alice (no ACLs) gets
// CLUSTER_AUTHORIZATION_FAILED.
func TestDescribeQuorumHandler(t *testing.T) {
	b := startHandlerTest(t, nil)
	for v := int16(0); v <= 2; v++ {
		resp := b.do(describeQuorumRequest(v, "__cluster_metadata", 0)).(*kmsg.DescribeQuorumResponse)
		wantCode(t, "DescribeQuorum", resp.ErrorCode, nil)
		p := resp.Topics[0].Partitions[0]
		wantCode(t, "__cluster_metadata-0", p.ErrorCode, nil)
		leaderVotes := false
		for _, voter := range p.CurrentVoters {
			leaderVotes = leaderVotes || voter.ReplicaID == p.LeaderID
		}
		if !leaderVotes || p.LeaderEpoch < 1 || p.HighWatermark < 1 {
			t.Errorf("v%d: leader %d (a voter: %v) epoch %d high watermark %d", v, p.LeaderID, leaderVotes, p.LeaderEpoch, p.HighWatermark)
		}
	}
	wantCode(t, "another partition", b.do(describeQuorumRequest(2, "__cluster_metadata", 1)).(*kmsg.DescribeQuorumResponse).Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
	wantCode(t, "as alice", b.as("alice", describeQuorumRequest(2, "__cluster_metadata", 0)).(*kmsg.DescribeQuorumResponse).ErrorCode, kerr.ClusterAuthorizationFailed)
}
