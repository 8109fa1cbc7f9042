package broker_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// createPartitionsRequest grows topic to count partitions.
func createPartitionsRequest(v int16, topic string, count int32, assignment ...[]int32) *kmsg.CreatePartitionsRequest {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Version, req.TimeoutMillis = v, 10000
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = topic, count
	for _, replicas := range assignment {
		a := kmsg.NewCreatePartitionsRequestTopicAssignment()
		a.Replicas = replicas
		rt.Assignment = append(rt.Assignment, a)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// CreatePartitions v0-v3 grows a topic (validate-only does not); a count
// not above the current one is INVALID_PARTITIONS, an assignment naming a
// broker that does not exist INVALID_REPLICA_ASSIGNMENT, an unknown topic
// UNKNOWN_TOPIC_OR_PARTITION; alice (no ACLs) gets
// TOPIC_AUTHORIZATION_FAILED.
func TestCreatePartitionsHandler(t *testing.T) {
	b := startHandlerTest(t, map[string]int32{"cp": 1})
	code := func(resp kmsg.Response) int16 { return resp.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode }
	for v := int16(0); v <= 3; v++ {
		validate := createPartitionsRequest(v, "cp", int32(v+2))
		validate.ValidateOnly = true
		wantCode(t, fmt.Sprintf("v%d validate only", v), code(b.do(validate)), nil)
		wantCode(t, fmt.Sprintf("v%d", v), code(b.do(createPartitionsRequest(v, "cp", int32(v+2)))), nil)
		b.waitLeaders("cp", int32(v+2))
	}
	wantCode(t, "same count", code(b.do(createPartitionsRequest(3, "cp", 5))), kerr.InvalidPartitions)
	wantCode(t, "fewer", code(b.do(createPartitionsRequest(3, "cp", 2))), kerr.InvalidPartitions)
	wantCode(t, "broker 9", code(b.do(createPartitionsRequest(3, "cp", 6, []int32{9}))), kerr.InvalidReplicaAssignment)
	wantCode(t, "unknown topic", code(b.do(createPartitionsRequest(3, "nope", 2))), kerr.UnknownTopicOrPartition)
	wantCode(t, "as alice", code(b.as("alice", createPartitionsRequest(3, "cp", 6))), kerr.TopicAuthorizationFailed)
	b.waitLeaders("cp", 5)
}
