package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// offsetCommitRequest commits offset for topic's partition 0 outside any
// generation (a simple consumer's commit), naming the topic by id from v10.
func offsetCommitRequest(v int16, group, topic string, id [16]byte, offset int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.Generation = v, group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = 0, offset, -1, kmsg.StringPtr("m")
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// offsetFetchRequest fetches group's offset of topic's partition 0, batched
// by group from v8, by topic id from v10.
func offsetFetchRequest(v int16, group, topic string, id [16]byte) *kmsg.OffsetFetchRequest {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = v
	if v < 8 {
		req.Group = group
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = topic, []int32{0}
		req.Topics = append(req.Topics, rt)
		return req
	}
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = group
	rt := kmsg.NewOffsetFetchRequestGroupTopic()
	rt.Topic, rt.TopicID, rt.Partitions = topic, id, []int32{0}
	g.Topics = append(g.Topics, rt)
	req.Groups = append(req.Groups, g)
	return req
}

// fetchedOffset is the one partition's offset and code of an OffsetFetch
// answer (the group's error, if any, first).
func fetchedOffset(resp kmsg.Response) (int64, int16) {
	r := resp.(*kmsg.OffsetFetchResponse)
	if r.Version < 8 {
		if r.ErrorCode != 0 {
			return -1, r.ErrorCode
		}
		p := r.Topics[0].Partitions[0]
		return p.Offset, p.ErrorCode
	}
	g := r.Groups[0]
	if g.ErrorCode != 0 {
		return -1, g.ErrorCode
	}
	p := g.Topics[0].Partitions[0]
	return p.Offset, p.ErrorCode
}

// The classic group APIs: OffsetCommit v2-v9 and OffsetFetch v1-v9 round
// trip a simple consumer's offsets (an uncommitted partition is -1);
// JoinGroup from v4 asks a new member to rejoin with the id it assigns
// (MEMBER_ID_REQUIRED) and refuses a session timeout below the minimum;
// DescribeGroups and ListGroups show the group; alice (no ACLs) gets
// GROUP_AUTHORIZATION_FAILED and lists no group.
func TestGroupsHandler(t *testing.T) {
	b := startHandlerTest(t, map[string]int32{"gt": 1})
	for _, g := range []string{"g", "other", "jg"} {
		b.waitGroupCoordinator(g)
	}
	for _, v := range []int16{2, 3, 5, 7, 8, 9} {
		resp := b.do(offsetCommitRequest(v, "g", "gt", [16]byte{}, int64(100+v))).(*kmsg.OffsetCommitResponse)
		wantCode(t, "commit", resp.Topics[0].Partitions[0].ErrorCode, nil)
	}
	for _, v := range []int16{1, 3, 5, 7, 8, 9} {
		off, code := fetchedOffset(b.do(offsetFetchRequest(v, "g", "gt", [16]byte{})))
		wantCode(t, "fetch", code, nil)
		if off != 109 {
			t.Errorf("OffsetFetch v%d: offset %d, want 109", v, off)
		}
		off, code = fetchedOffset(b.do(offsetFetchRequest(v, "other", "gt", [16]byte{})))
		wantCode(t, "fetch of a group without offsets", code, nil)
		if off != -1 {
			t.Errorf("OffsetFetch v%d of another group: offset %d, want -1", v, off)
		}
	}

	join := kmsg.NewPtrJoinGroupRequest()
	join.Version, join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = 9, "jg", 10000, 10000, "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0}
	join.Protocols = append(join.Protocols, p)
	jr := b.do(join).(*kmsg.JoinGroupResponse)
	wantCode(t, "JoinGroup without a member id", jr.ErrorCode, kerr.MemberIDRequired)
	if jr.MemberID == "" {
		t.Error("JoinGroup: MEMBER_ID_REQUIRED without a member id")
	}
	join.SessionTimeoutMillis = 1
	wantCode(t, "JoinGroup with a 1 ms session", b.do(join).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InvalidSessionTimeout)

	describe := kmsg.NewPtrDescribeGroupsRequest()
	describe.Version, describe.Groups = 5, []string{"g"}
	dg := b.do(describe).(*kmsg.DescribeGroupsResponse).Groups[0]
	wantCode(t, "DescribeGroups g", dg.ErrorCode, nil)
	if dg.State != "Empty" || dg.ProtocolType != "" && dg.ProtocolType != "consumer" {
		t.Errorf("DescribeGroups g: state %q protocol type %q, want Empty", dg.State, dg.ProtocolType)
	}
	list := kmsg.NewPtrListGroupsRequest()
	list.Version = 4
	lg := b.do(list).(*kmsg.ListGroupsResponse)
	wantCode(t, "ListGroups", lg.ErrorCode, nil)
	found := false
	for _, g := range lg.Groups {
		found = found || g.Group == "g" && g.GroupState == "Empty"
	}
	if !found {
		t.Errorf("ListGroups: %+v, want g (Empty)", lg.Groups)
	}

	ac := b.as("alice", offsetCommitRequest(9, "g", "gt", [16]byte{}, 1)).(*kmsg.OffsetCommitResponse)
	wantCode(t, "commit as alice", ac.Topics[0].Partitions[0].ErrorCode, kerr.GroupAuthorizationFailed)
	_, code := fetchedOffset(b.as("alice", offsetFetchRequest(9, "g", "gt", [16]byte{})))
	wantCode(t, "fetch as alice", code, kerr.GroupAuthorizationFailed)
	adg := b.as("alice", describe).(*kmsg.DescribeGroupsResponse).Groups[0]
	wantCode(t, "describe as alice", adg.ErrorCode, kerr.GroupAuthorizationFailed)
	if alg := b.as("alice", list).(*kmsg.ListGroupsResponse); len(alg.Groups) != 0 {
		t.Errorf("alice lists %+v", alg.Groups)
	}
	if off, _ := fetchedOffset(b.do(offsetFetchRequest(9, "g", "gt", [16]byte{}))); off != 109 {
		t.Errorf("after alice's commit: offset %d, want 109", off)
	}
}
