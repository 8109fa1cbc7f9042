package broker_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareHeartbeatRequest is a ShareGroupHeartbeat v1 of member at epoch (0
// joins, -1 leaves), subscribed to topics.
func shareHeartbeatRequest(group, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatRequest {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version, req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = 1, group, member, epoch, topics
	return req
}

func shareHeartbeatCode(resp kmsg.Response) int16 {
	return resp.(*kmsg.ShareGroupHeartbeatResponse).ErrorCode
}

// joinShare joins member to the share group and polls its heartbeats
// until it is assigned every partition of the topics it subscribes to;
// it returns the member's epoch.
func (b *handlerBroker) joinShare(group, member string, topics ...string) int32 {
	b.t.Helper()
	b.waitGroupCoordinator(group)
	var epoch int32
	b.eventually(func() error {
		resp := b.do(shareHeartbeatRequest(group, member, epoch, topics...)).(*kmsg.ShareGroupHeartbeatResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return err
		}
		epoch = resp.MemberEpoch
		if resp.Assignment == nil || len(resp.Assignment.TopicPartitions) != len(topics) {
			return fmt.Errorf("epoch %d, assignment %+v", epoch, resp.Assignment)
		}
		return nil
	})
	return epoch
}

func shareDescribeRequest(groups ...string) *kmsg.ShareGroupDescribeRequest {
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.Version, req.GroupIDs = 1, groups
	return req
}

func shareDescribeCode(resp kmsg.Response) int16 {
	return resp.(*kmsg.ShareGroupDescribeResponse).Groups[0].ErrorCode
}

// ShareGroupHeartbeat v1 and ShareGroupDescribe v1 (KIP-932): a member
// joins and is assigned the topic's partitions, and ShareGroupDescribe
// shows it; a heartbeat at a greater epoch is FENCED_MEMBER_EPOCH, of an
// unknown member UNKNOWN_MEMBER_ID, a join without topics, an epoch below
// -1 or no member id INVALID_REQUEST; an unknown group is described
// GROUP_ID_NOT_FOUND; a member leaves at epoch -1. alice needs Read on the
// group and Describe on the topics she subscribes to for a heartbeat, and
// Describe on the group and on the topics its members are assigned to
// describe it.
func TestShareGroupHandler(t *testing.T) {
	b := startHandlerTest(t, map[string]int32{"sg": 2, "sg2": 1})
	epoch := b.joinShare("sg", "m1", "sg")
	for _, tc := range []struct {
		what string
		req  *kmsg.ShareGroupHeartbeatRequest
		want *kerr.Error
	}{
		{"a greater epoch", shareHeartbeatRequest("sg", "m1", epoch+5), kerr.FencedMemberEpoch},
		{"an unknown member", shareHeartbeatRequest("sg", "nobody", 3), kerr.UnknownMemberID},
		{"a join without topics", shareHeartbeatRequest("sg", "m2", 0), kerr.InvalidRequest},
		{"an epoch below -1", shareHeartbeatRequest("sg", "m1", -2), kerr.InvalidRequest},
		{"no member id", shareHeartbeatRequest("sg", "", 1), kerr.InvalidRequest},
		{"the member's epoch", shareHeartbeatRequest("sg", "m1", epoch), nil},
	} {
		wantCode(t, "heartbeat with "+tc.what, shareHeartbeatCode(b.do(tc.req)), tc.want)
	}

	dg := b.do(shareDescribeRequest("sg", "no-such-group")).(*kmsg.ShareGroupDescribeResponse).Groups
	wantCode(t, "describe", dg[0].ErrorCode, nil)
	if len(dg[0].Members) != 1 || dg[0].Members[0].MemberID != "m1" || len(dg[0].Members[0].Assignment.TopicPartitions[0].Partitions) != 2 {
		t.Errorf("describe: members %+v, want m1 with sg's two partitions", dg[0].Members)
	}
	wantCode(t, "describe an unknown group", dg[1].ErrorCode, kerr.GroupIDNotFound)

	b.wantAuthz(shareDescribeRequest("sg"), shareDescribeCode,
		authzStep{want: kerr.GroupAuthorizationFailed},
		authzStep{grants: []grant{groupGrant("sg", kmsg.ACLOperationDescribe)}, want: kerr.TopicAuthorizationFailed},
		authzStep{grants: []grant{topicGrant("sg", kmsg.ACLOperationDescribe)}})
	b.wantAuthz(shareHeartbeatRequest("sg", "alice-m", 0, "sg"), shareHeartbeatCode,
		authzStep{want: kerr.GroupAuthorizationFailed},
		authzStep{grants: []grant{groupGrant("sg", kmsg.ACLOperationRead)}})
	wantCode(t, "alice subscribing to sg2", shareHeartbeatCode(b.as("alice", shareHeartbeatRequest("sg", "alice-m2", 0, "sg2"))), kerr.TopicAuthorizationFailed)

	left := b.do(shareHeartbeatRequest("sg", "m1", -1)).(*kmsg.ShareGroupHeartbeatResponse)
	wantCode(t, "leave", left.ErrorCode, nil)
	if left.MemberEpoch != -1 {
		t.Errorf("leave: epoch %d, want -1", left.MemberEpoch)
	}
}
