package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeShareOffsetsRequest asks for group's start offsets of topic's
// partitions 0 and 1, or of every partition with state when topic is "".
func describeShareOffsetsRequest(v int16, group, topic string) *kmsg.DescribeShareGroupOffsetsRequest {
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	g.GroupID = group
	if topic != "" {
		g.Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: topic, Partitions: []int32{0, 1}}}
	}
	req.Version, req.Groups = v, []kmsg.DescribeShareGroupOffsetsRequestGroup{g}
	return req
}

func describeShareOffsetsCode(resp kmsg.Response) int16 {
	g := resp.(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0]
	return topOr(g.ErrorCode, func() int16 { return g.Topics[0].Partitions[0].ErrorCode })
}

// shareOffsets is a DescribeShareGroupOffsets answer's start offset and
// lag of each partition, by topic.
func shareOffsets(resp kmsg.Response) map[string][][2]int64 {
	out := map[string][][2]int64{}
	for _, rt := range resp.(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0].Topics {
		for _, p := range rt.Partitions {
			out[rt.Topic] = append(out[rt.Topic], [2]int64{p.StartOffset, p.Lag})
		}
	}
	return out
}

// alterShareOffsetsRequest starts group's share-partition partition of
// topic at start.
func alterShareOffsetsRequest(group, topic string, partition int32, start int64) *kmsg.AlterShareGroupOffsetsRequest {
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID = group
	req.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: topic,
		Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: partition, StartOffset: start}}}}
	return req
}

func alterShareOffsetsCode(resp kmsg.Response) int16 {
	r := resp.(*kmsg.AlterShareGroupOffsetsResponse)
	return topOr(r.ErrorCode, func() int16 { return r.Topics[0].Partitions[0].ErrorCode })
}

func deleteShareOffsetsRequest(group, topic string) *kmsg.DeleteShareGroupOffsetsRequest {
	req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	req.GroupID, req.Topics = group, []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: topic}}
	return req
}

func deleteShareOffsetsCode(resp kmsg.Response) int16 {
	r := resp.(*kmsg.DeleteShareGroupOffsetsResponse)
	return topOr(r.ErrorCode, func() int16 { return r.Topics[0].ErrorCode })
}

// DescribeShareGroupOffsets v0-v1 (v1: the lag), AlterShareGroupOffsets v0
// and DeleteShareGroupOffsets v0: a group never seen has no start offsets;
// altered, it becomes an empty share group whose partitions start there,
// and v1 says the lag; deleted, they have no state again. An unknown
// topic or partition is UNKNOWN_TOPIC_OR_PARTITION, a group never seen
// GROUP_ID_NOT_FOUND to DeleteShareGroupOffsets, a group with members
// NON_EMPTY_GROUP. alice needs
// Describe (to describe), Read (to alter) or Delete (to delete) on the
// group, else GROUP_AUTHORIZATION_FAILED, and Describe or Read on the
// topic, else TOPIC_AUTHORIZATION_FAILED.
func TestShareGroupOffsetsHandler(t *testing.T) {
	b := startHandlerTest(t, map[string]int32{"so": 2})
	b.produce("so", 0, "a", "b", "c")
	b.waitGroupCoordinator("so")
	none := [][2]int64{{-1, -1}, {-1, -1}}
	if got := shareOffsets(b.do(describeShareOffsetsRequest(1, "so", "so"))); len(got["so"]) != 2 || got["so"][0] != none[0] || got["so"][1] != none[1] {
		t.Errorf("a group never seen: %v, want no start offsets", got)
	}
	for _, tc := range []struct {
		what string
		req  kmsg.Request
		code func(kmsg.Response) int16
		want *kerr.Error
	}{
		{"alter so-0", alterShareOffsetsRequest("so", "so", 0, 1), alterShareOffsetsCode, nil},
		{"alter so-1", alterShareOffsetsRequest("so", "so", 1, 0), alterShareOffsetsCode, nil},
		{"alter an unknown topic", alterShareOffsetsRequest("so", "nope", 0, 0), alterShareOffsetsCode, kerr.UnknownTopicOrPartition},
		{"alter partition 2 of 2", alterShareOffsetsRequest("so", "so", 2, 0), alterShareOffsetsCode, kerr.UnknownTopicOrPartition},
		{"delete for a group never seen", deleteShareOffsetsRequest("never", "so"), deleteShareOffsetsCode, kerr.GroupIDNotFound},
		{"delete an unknown topic", deleteShareOffsetsRequest("so", "nope"), deleteShareOffsetsCode, kerr.UnknownTopicOrPartition},
	} {
		wantCode(t, tc.what, tc.code(b.do(tc.req)), tc.want)
	}
	if got := shareOffsets(b.do(describeShareOffsetsRequest(1, "so", ""))); len(got) != 1 || len(got["so"]) != 2 || got["so"][0] != [2]int64{1, 2} || got["so"][1] != [2]int64{0, 0} {
		t.Errorf("v1 after the alter: %v, want so-0 at 1 (lag 2), so-1 at 0 (lag 0)", got)
	}
	if got := shareOffsets(b.do(describeShareOffsetsRequest(0, "so", "so"))); got["so"][0][0] != 1 || got["so"][1][0] != 0 {
		t.Errorf("v0 after the alter: %v, want so-0 at 1, so-1 at 0", got)
	}
	wantCode(t, "delete so", deleteShareOffsetsCode(b.do(deleteShareOffsetsRequest("so", "so"))), nil)
	if got := shareOffsets(b.do(describeShareOffsetsRequest(1, "so", ""))); len(got) != 0 {
		t.Errorf("after the delete: %v, want no partition with state", got)
	}

	b.joinShare("busy", "m1", "so")
	wantCode(t, "alter a group with members", alterShareOffsetsCode(b.do(alterShareOffsetsRequest("busy", "so", 0, 0))), kerr.NonEmptyGroup)
	wantCode(t, "delete a group with members", deleteShareOffsetsCode(b.do(deleteShareOffsetsRequest("busy", "so"))), kerr.NonEmptyGroup)

	b.wantAuthz(describeShareOffsetsRequest(1, "so", "so"), describeShareOffsetsCode,
		authzStep{want: kerr.GroupAuthorizationFailed},
		authzStep{grants: []grant{groupGrant("so", kmsg.ACLOperationDescribe)}, want: kerr.TopicAuthorizationFailed},
		authzStep{grants: []grant{topicGrant("so", kmsg.ACLOperationDescribe)}})
	b.wantAuthz(alterShareOffsetsRequest("so", "so", 0, 2), alterShareOffsetsCode,
		authzStep{want: kerr.GroupAuthorizationFailed},
		authzStep{grants: []grant{groupGrant("so", kmsg.ACLOperationRead)}, want: kerr.TopicAuthorizationFailed},
		authzStep{grants: []grant{topicGrant("so", kmsg.ACLOperationRead)}})
	b.wantAuthz(deleteShareOffsetsRequest("so", "so"), deleteShareOffsetsCode,
		authzStep{want: kerr.GroupAuthorizationFailed},
		authzStep{grants: []grant{groupGrant("so", kmsg.ACLOperationDelete)}})
}
