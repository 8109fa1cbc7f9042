package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// reassignRequest moves topic's partition to replicas (nil: cancels).
func reassignRequest(topic string, partition int32, replicas []int32) *kmsg.AlterPartitionAssignmentsRequest {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.Version, req.TimeoutMillis, req.AllowReplicationFactorChange = 1, 10000, true
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	rp.Partition, rp.Replicas = partition, replicas
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// AlterPartitionReassignments and ListPartitionReassignments: a target on
// a broker that does not exist is INVALID_REPLICA_ASSIGNMENT, cancelling
// where nothing moves NO_REASSIGNMENT_IN_PROGRESS, an unknown topic
// UNKNOWN_TOPIC_OR_PARTITION, and nothing is listed in progress; alice (no
// ACLs) gets CLUSTER_AUTHORIZATION_FAILED for both.
func TestReassignHandler(t *testing.T) {
	b := startHandlerTest(t, map[string]int32{"ra": 1})
	code := func(resp kmsg.Response) int16 {
		r := resp.(*kmsg.AlterPartitionAssignmentsResponse)
		return topOr(r.ErrorCode, func() int16 { return r.Topics[0].Partitions[0].ErrorCode })
	}
	wantCode(t, "broker 9", code(b.do(reassignRequest("ra", 0, []int32{9}))), kerr.InvalidReplicaAssignment)
	wantCode(t, "cancel nothing", code(b.do(reassignRequest("ra", 0, nil))), kerr.NoReassignmentInProgress)
	wantCode(t, "unknown topic", code(b.do(reassignRequest("nope", 0, []int32{1}))), kerr.UnknownTopicOrPartition)

	list := kmsg.NewPtrListPartitionReassignmentsRequest()
	list.TimeoutMillis = 10000
	lr := b.do(list).(*kmsg.ListPartitionReassignmentsResponse)
	wantCode(t, "list", lr.ErrorCode, nil)
	if len(lr.Topics) != 0 {
		t.Errorf("in progress: %+v", lr.Topics)
	}
	wantCode(t, "alter as alice", code(b.as("alice", reassignRequest("ra", 0, []int32{1}))), kerr.ClusterAuthorizationFailed)
	wantCode(t, "list as alice", b.as("alice", list).(*kmsg.ListPartitionReassignmentsResponse).ErrorCode, kerr.ClusterAuthorizationFailed)
}
