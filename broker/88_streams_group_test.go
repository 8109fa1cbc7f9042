package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// streamsJoinRequest is a StreamsGroupHeartbeat of member at epoch in
// group "st"; at epoch 0 it joins with a topology reading source and
// keeping a store in the changelog topic st-store-changelog.
func streamsJoinRequest(v int16, member string, epoch int32, source string) *kmsg.StreamsGroupHeartbeatRequest {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.MemberEpoch = v, "st", member, epoch
	if epoch == 0 {
		cl := kmsg.NewTopicInfo()
		cl.Topic = "st-store-changelog"
		sub := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
		sub.SubtopologyID, sub.SourceTopics, sub.StateChangelogTopics = "0", []string{source}, []kmsg.TopicInfo{cl}
		top := kmsg.NewStreamsGroupHeartbeatRequestTopology()
		top.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{sub}
		req.Topology, req.RebalanceTimeoutMillis, req.ProcessID = &top, 30000, kmsg.StringPtr("process-"+member)
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	}
	return req
}

func streamsHeartbeatCode(resp kmsg.Response) int16 {
	return resp.(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode
}

func streamsDescribeRequest(v int16, groups ...string) *kmsg.StreamsGroupDescribeRequest {
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Version, req.Groups = v, groups
	return req
}

func streamsDescribeCode(resp kmsg.Response) int16 {
	return resp.(*kmsg.StreamsGroupDescribeResponse).Groups[0].ErrorCode
}

// StreamsGroupHeartbeat v0-v1, StreamsGroupDescribe v0-v1 and
// StreamsGroupTopologyDescriptionUpdate v0 (KIP-1071): a member joins
// (v0 answers the acceptable recovery lag in its legacy int32 field, v1
// in its int64 one, and never asks for the topology description), the
// group is described (v1 with its assignor); an unknown member is
// UNKNOWN_MEMBER_ID, a greater epoch FENCED_MEMBER_EPOCH, a topology
// using an internal or invalid topic STREAMS_INVALID_TOPOLOGY, an unknown
// group GROUP_ID_NOT_FOUND, a topology description UNSUPPORTED_VERSION.
// alice needs Describe on the group (GROUP_AUTHORIZATION_FAILED) and on
// the topics of its topology (TOPIC_AUTHORIZATION_FAILED) to describe it,
// and Read on the group and Describe on the topology's topics to
// heartbeat.
func TestStreamsGroupHandler(t *testing.T) {
	b := startHandlerTest(t, map[string]int32{"in": 1})
	b.waitGroupCoordinator("st")
	j0 := b.do(streamsJoinRequest(0, "m0", 0, "in")).(*kmsg.StreamsGroupHeartbeatResponse)
	wantCode(t, "v0 join", j0.ErrorCode, nil)
	j1 := b.do(streamsJoinRequest(1, "m1", 0, "in")).(*kmsg.StreamsGroupHeartbeatResponse)
	wantCode(t, "v1 join", j1.ErrorCode, nil)
	if j0.MemberEpoch < 1 || j1.MemberEpoch < 1 || j0.AcceptableRecoveryLagLegacy <= 0 || j1.AcceptableRecoveryLag <= 0 || j1.TopologyDescriptionRequired {
		t.Errorf("joins: v0 epoch %d lag %d; v1 epoch %d lag %d, description required %v", j0.MemberEpoch,
			j0.AcceptableRecoveryLagLegacy, j1.MemberEpoch, j1.AcceptableRecoveryLag, j1.TopologyDescriptionRequired)
	}
	for v := int16(0); v <= 1; v++ {
		dg := b.do(streamsDescribeRequest(v, "st", "no-such-group")).(*kmsg.StreamsGroupDescribeResponse).Groups
		wantCode(t, "describe", dg[0].ErrorCode, nil)
		wantCode(t, "describe an unknown group", dg[1].ErrorCode, kerr.GroupIDNotFound)
		if len(dg[0].Members) != 2 || dg[0].Topology == nil || (dg[0].AssignorName != nil) != (v == 1) {
			t.Errorf("v%d describe: %d members, topology %v, assignor %v", v, len(dg[0].Members), dg[0].Topology, dg[0].AssignorName)
		}
	}

	update := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateRequest()
	update.Group, update.MemberID = "st", "m1"
	for _, tc := range []struct {
		what string
		req  kmsg.Request
		code func(kmsg.Response) int16
		want *kerr.Error
	}{
		{"an unknown member", streamsJoinRequest(1, "nobody", 1, ""), streamsHeartbeatCode, kerr.UnknownMemberID},
		{"a greater epoch", streamsJoinRequest(1, "m1", j1.MemberEpoch+5, ""), streamsHeartbeatCode, kerr.FencedMemberEpoch},
		{"an internal topic", streamsJoinRequest(1, "m2", 0, "__consumer_offsets"), streamsHeartbeatCode, kerr.StreamsInvalidTopology},
		{"an invalid topic", streamsJoinRequest(1, "m2", 0, "bad name"), streamsHeartbeatCode, kerr.StreamsInvalidTopology},
		{"a topology description", update, func(resp kmsg.Response) int16 {
			return resp.(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse).ErrorCode
		}, kerr.UnsupportedVersion},
	} {
		wantCode(t, tc.what, tc.code(b.do(tc.req)), tc.want)
	}

	changelog := []grant{topicGrant("in", kmsg.ACLOperationDescribe), topicGrant("st-store-changelog", kmsg.ACLOperationDescribe)}
	b.wantAuthz(streamsDescribeRequest(1, "st"), streamsDescribeCode,
		authzStep{want: kerr.GroupAuthorizationFailed},
		authzStep{grants: []grant{groupGrant("st", kmsg.ACLOperationDescribe)}, want: kerr.TopicAuthorizationFailed},
		authzStep{grants: changelog})
	b.wantAuthz(streamsJoinRequest(1, "alice-m", 0, "in"), streamsHeartbeatCode,
		authzStep{want: kerr.GroupAuthorizationFailed},
		authzStep{grants: []grant{groupGrant("st", kmsg.ACLOperationRead)}})
	wantCode(t, "alice reading a topic she may not describe", streamsHeartbeatCode(b.as("alice", streamsJoinRequest(1, "alice-m2", 0, "in2"))), kerr.TopicAuthorizationFailed)
}
