package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// heartbeatRequest is a ConsumerGroupHeartbeat of member at epoch,
// subscribed to topics (a join when epoch is 0).
func heartbeatRequest(v int16, group, member string, epoch int32, topics ...string) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.MemberEpoch = v, group, member, epoch
	req.RebalanceTimeoutMillis = 30000
	req.SubscribedTopicNames = topics
	if epoch == 0 {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	return req
}

// ConsumerGroupHeartbeat (KIP-848): a new member (v0: the broker names it;
// v1: the client does) joins at epoch 0 and gets an epoch and its
// assignment; an unknown member is UNKNOWN_MEMBER_ID, a wrong epoch
// FENCED_MEMBER_EPOCH, v1 without a member id INVALID_REQUEST;
// ConsumerGroupDescribe shows the member; alice (no ACLs) gets
// GROUP_AUTHORIZATION_FAILED.
func TestConsumerGroupHandler(t *testing.T) {
	b := startHandlerTest(t, map[string]int32{"cg": 2})
	b.waitGroupCoordinator("cg0")
	b.waitGroupCoordinator("cg1")

	j0 := b.do(heartbeatRequest(0, "cg0", "", 0, "cg")).(*kmsg.ConsumerGroupHeartbeatResponse)
	wantCode(t, "v0 join", j0.ErrorCode, nil)
	if j0.MemberID == nil || *j0.MemberID == "" || j0.MemberEpoch < 1 {
		t.Errorf("v0 join: member %v epoch %d", j0.MemberID, j0.MemberEpoch)
	}
	j1 := b.do(heartbeatRequest(1, "cg1", "client-made-id-0123456789", 0, "cg")).(*kmsg.ConsumerGroupHeartbeatResponse)
	wantCode(t, "v1 join", j1.ErrorCode, nil)
	if j1.MemberID == nil || *j1.MemberID != "client-made-id-0123456789" || j1.MemberEpoch < 1 {
		t.Errorf("v1 join: member %v epoch %d", j1.MemberID, j1.MemberEpoch)
	}
	if j1.Assignment == nil || len(j1.Assignment.Topics) != 1 || len(j1.Assignment.Topics[0].Partitions) != 2 {
		t.Errorf("v1 join: assignment %+v, want both partitions of cg", j1.Assignment)
	}
	code := func(resp kmsg.Response) int16 { return resp.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode }
	wantCode(t, "v1 without a member id", code(b.do(heartbeatRequest(1, "cg1", "", 0, "cg"))), kerr.InvalidRequest)
	wantCode(t, "unknown member", code(b.do(heartbeatRequest(1, "cg1", "nobody-0123456789", 1))), kerr.UnknownMemberID)
	wantCode(t, "wrong epoch", code(b.do(heartbeatRequest(1, "cg1", *j1.MemberID, j1.MemberEpoch+5))), kerr.FencedMemberEpoch)

	describe := kmsg.NewPtrConsumerGroupDescribeRequest()
	describe.Groups = []string{"cg1"}
	dg := b.do(describe).(*kmsg.ConsumerGroupDescribeResponse).Groups[0]
	wantCode(t, "describe", dg.ErrorCode, nil)
	if len(dg.Members) != 1 || dg.Members[0].MemberID != *j1.MemberID {
		t.Errorf("describe: members %+v", dg.Members)
	}

	wantCode(t, "as alice", code(b.as("alice", heartbeatRequest(1, "cg1", "alice-member-0123456789", 0, "cg"))), kerr.GroupAuthorizationFailed)
	wantCode(t, "describe as alice", b.as("alice", describe).(*kmsg.ConsumerGroupDescribeResponse).Groups[0].ErrorCode, kerr.GroupAuthorizationFailed)
}
