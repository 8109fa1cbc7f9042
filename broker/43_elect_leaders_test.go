package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// waitController polls ElectLeaders (for a topic that does not exist) until
// the broker has won the controller's election in etcd: until then the
// APIs the controller serves answer NOT_CONTROLLER (clients retry).
func (b *handlerBroker) waitController() {
	b.t.Helper()
	b.eventually(func() error {
		resp, err := b.try(electLeadersRequest(2, "no-such-topic", 0))
		if err != nil {
			return err
		}
		r := resp.(*kmsg.ElectLeadersResponse)
		if r.ErrorCode == kerr.NotController.Code || len(r.Topics) > 0 && r.Topics[0].Partitions[0].ErrorCode == kerr.NotController.Code {
			return kerr.NotController
		}
		return nil
	})
}

// electLeadersRequest asks for a preferred election of topic's partition.
func electLeadersRequest(v int16, topic string, partition int32) *kmsg.ElectLeadersRequest {
	req := kmsg.NewPtrElectLeadersRequest()
	req.Version, req.TimeoutMillis, req.ElectionType = v, 10000, 0
	rt := kmsg.NewElectLeadersRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	req.Topics = append(req.Topics, rt)
	return req
}

// ElectLeaders v0-v2: a preferred election where the preferred replica
// already leads is ELECTION_NOT_NEEDED, an unknown topic or partition
// UNKNOWN_TOPIC_OR_PARTITION; alice (no ACLs) gets
// CLUSTER_AUTHORIZATION_FAILED.
func TestElectLeadersHandler(t *testing.T) {
	b := startHandlerTest(t, map[string]int32{"el": 1})
	code := func(resp kmsg.Response) int16 {
		r := resp.(*kmsg.ElectLeadersResponse)
		return topOr(r.ErrorCode, func() int16 { return r.Topics[0].Partitions[0].ErrorCode })
	}
	for v := int16(0); v <= 2; v++ {
		wantCode(t, "the preferred leader leads", code(b.do(electLeadersRequest(v, "el", 0))), kerr.ElectionNotNeeded)
	}
	wantCode(t, "unknown topic", code(b.do(electLeadersRequest(2, "nope", 0))), kerr.UnknownTopicOrPartition)
	wantCode(t, "partition 1 of 1", code(b.do(electLeadersRequest(2, "el", 1))), kerr.UnknownTopicOrPartition)
	wantCode(t, "as alice", code(b.as("alice", electLeadersRequest(2, "el", 0))), kerr.ClusterAuthorizationFailed)
}
