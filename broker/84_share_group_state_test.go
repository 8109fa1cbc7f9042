package broker_test

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// readStateRequest is a ReadShareGroupState v0 of group's share-partition
// partition of topic id.
func readStateRequest(group string, id [16]byte, partition int32) *kmsg.ReadShareGroupStateRequest {
	req := kmsg.NewPtrReadShareGroupStateRequest()
	rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch = partition, 0
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID, rt.Partitions = id, []kmsg.ReadShareGroupStateRequestTopicPartition{rp}
	req.GroupID, req.Topics = group, []kmsg.ReadShareGroupStateRequestTopic{rt}
	return req
}

func readStateCode(resp kmsg.Response) int16 {
	return resp.(*kmsg.ReadShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode
}

// writeStateRequest is a WriteShareGroupState of group's share-partition
// partition of topic id at state and leader epochs: it starts at start,
// and its first three offsets are acknowledged.
func writeStateRequest(v int16, group string, id [16]byte, partition, stateEpoch, leaderEpoch int32, start int64) *kmsg.WriteShareGroupStateRequest {
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	rp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	rp.Partition, rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset, rp.DeliveryCompleteCount = partition, stateEpoch, leaderEpoch, start, 3
	rp.StateBatches = []kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch{{FirstOffset: start, LastOffset: start + 2, DeliveryState: 2, DeliveryCount: 1}}
	rt := kmsg.NewWriteShareGroupStateRequestTopic()
	rt.TopicID, rt.Partitions = id, []kmsg.WriteShareGroupStateRequestTopicPartition{rp}
	req.Version, req.GroupID, req.Topics = v, group, []kmsg.WriteShareGroupStateRequestTopic{rt}
	return req
}

func writeStateCode(resp kmsg.Response) int16 {
	return resp.(*kmsg.WriteShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode
}

// The share coordinator's APIs (share.StateCoordinator), which share-
// partition leaders send one another: ReadShareGroupState v0 and
// WriteShareGroupState v0-v1 (v1: the count of offsets done). Before
// __share_group_state exists both are NOT_COORDINATOR; then a write is
// read back, an older state epoch is FENCED_STATE_EPOCH, an older leader
// epoch at the same state epoch FENCED_LEADER_EPOCH, a negative partition
// INVALID_REQUEST, a share-partition with no state
// UNKNOWN_TOPIC_OR_PARTITION (samsa's: Kafka 4.4 wants
// InitializeShareGroupState first and answers INVALID_REQUEST; only
// samsa's brokers send these). alice needs ClusterAction on the cluster.
// InitializeShareGroupState, DeleteShareGroupState and
// ReadShareGroupStateSummary (83, 86, 87), which only Kafka's brokers
// send, are not served: the connection closes.
func TestShareGroupStateHandler(t *testing.T) {
	b := startHandlerTest(t, nil)
	id := b.createTopic("ss", 1)
	wantCode(t, "read before __share_group_state", readStateCode(b.do(readStateRequest("g", id, 0))), kerr.NotCoordinator)
	wantCode(t, "write before __share_group_state", writeStateCode(b.do(writeStateRequest(0, "g", id, 0, 1, 3, 5))), kerr.NotCoordinator)

	b.joinShare("sg", "m1", "ss") // makes __share_group_state
	b.eventually(func() error {
		return kerr.ErrorForCode(writeStateCode(b.do(writeStateRequest(0, "g", id, 0, 1, 3, 5))))
	})
	for v, start := range []int64{5, 6} {
		wantCode(t, "write", writeStateCode(b.do(writeStateRequest(int16(v), "g", id, 0, 1, 3, start))), nil)
		rp := b.do(readStateRequest("g", id, 0)).(*kmsg.ReadShareGroupStateResponse).Topics[0].Partitions[0]
		wantCode(t, "read", rp.ErrorCode, nil)
		want := []kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch{{FirstOffset: start, LastOffset: start + 2, DeliveryState: 2, DeliveryCount: 1}}
		if rp.StateEpoch != 1 || rp.StartOffset != start || !slices.EqualFunc(rp.StateBatches, want, func(a, b kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch) bool {
			return a.FirstOffset == b.FirstOffset && a.LastOffset == b.LastOffset && a.DeliveryState == b.DeliveryState && a.DeliveryCount == b.DeliveryCount
		}) {
			t.Errorf("read after a v%d write: state epoch %d, start %d, batches %+v", v, rp.StateEpoch, rp.StartOffset, rp.StateBatches)
		}
	}
	for _, tc := range []struct {
		what string
		req  kmsg.Request
		code func(kmsg.Response) int16
		want *kerr.Error
	}{
		{"an older state epoch", writeStateRequest(1, "g", id, 0, 0, 3, 7), writeStateCode, kerr.FencedStateEpoch},
		{"an older leader epoch", writeStateRequest(1, "g", id, 0, 1, 2, 7), writeStateCode, kerr.FencedLeaderEpoch},
		{"a newer state epoch", writeStateRequest(1, "g", id, 0, 2, 2, 7), writeStateCode, nil},
		{"a write of partition -1", writeStateRequest(1, "g", id, -1, 1, 0, 0), writeStateCode, kerr.InvalidRequest},
		{"a read of partition -1", readStateRequest("g", id, -1), readStateCode, kerr.InvalidRequest},
		{"a read of no state", readStateRequest("other", id, 0), readStateCode, kerr.UnknownTopicOrPartition},
	} {
		wantCode(t, tc.what, tc.code(b.do(tc.req)), tc.want)
	}

	b.wantAuthz(readStateRequest("g", id, 0), readStateCode,
		authzStep{want: kerr.ClusterAuthorizationFailed},
		authzStep{grants: []grant{clusterGrant(kmsg.ACLOperationAlter)}, want: kerr.ClusterAuthorizationFailed},
		authzStep{grants: []grant{clusterGrant(kmsg.ACLOperationClusterAction)}})

	for _, req := range []kmsg.Request{kmsg.NewPtrInitializeShareGroupStateRequest(), kmsg.NewPtrDeleteShareGroupStateRequest(), kmsg.NewPtrReadShareGroupStateSummaryRequest()} {
		if resp, err := b.try(req); err == nil {
			t.Errorf("%s answered %+v, want the connection closed", kmsg.NameForKey(req.Key()), resp)
		}
	}
}
