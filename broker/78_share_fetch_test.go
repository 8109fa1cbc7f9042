package broker_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareFetchRequest is a ShareFetch by member of group "sf" at session
// epoch of partition 0 of topic id (none when id is zero), at most
// maxRecords, acknowledging acks.
func shareFetchRequest(v int16, member string, epoch int32, id [16]byte, maxRecords int32, acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareFetchRequest {
	req := kmsg.NewPtrShareFetchRequest()
	req.Version, req.GroupID, req.MemberID, req.ShareSessionEpoch = v, kmsg.StringPtr("sf"), kmsg.StringPtr(member), epoch
	req.MaxWaitMillis, req.MaxRecords, req.BatchSize = 100, maxRecords, maxRecords
	if id != ([16]byte{}) {
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.AcknowledgementBatches = acks
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID, rt.Partitions = id, []kmsg.ShareFetchRequestTopicPartition{rp}
		req.Topics = []kmsg.ShareFetchRequestTopic{rt}
	}
	return req
}

// shareAckRequest is a ShareAcknowledge by member of group "sf" at
// session epoch of offsets first-last of partition 0 of topic id, as typ
// (1 accept, 2 release, 3 reject, 4 renew: v2, a renewing request).
func shareAckRequest(v int16, member string, epoch int32, id [16]byte, first, last int64, typ int8) *kmsg.ShareAcknowledgeRequest {
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.Version, req.GroupID, req.MemberID, req.ShareSessionEpoch = v, kmsg.StringPtr("sf"), kmsg.StringPtr(member), epoch
	req.IsRenewAck = v >= 2 && typ == 4
	rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
	rp.AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: first, LastOffset: last, AcknowledgeTypes: []int8{typ}}}
	rt := kmsg.NewShareAcknowledgeRequestTopic()
	rt.TopicID, rt.Partitions = id, []kmsg.ShareAcknowledgeRequestTopicPartition{rp}
	req.Topics = []kmsg.ShareAcknowledgeRequestTopic{rt}
	return req
}

// shareFetchCode is a ShareFetch answer's code, else its first
// partition's.
func shareFetchCode(resp kmsg.Response) int16 {
	r := resp.(*kmsg.ShareFetchResponse)
	return topOr(r.ErrorCode, func() int16 { return r.Topics[0].Partitions[0].ErrorCode })
}

// shareFetched is the first partition of a ShareFetch answer, which must
// have no error: its acknowledgement code and the offset ranges acquired.
func shareFetched(t *testing.T, resp kmsg.Response) (int16, [][2]int64) {
	t.Helper()
	r := resp.(*kmsg.ShareFetchResponse)
	if err := kerr.ErrorForCode(shareFetchCode(resp)); err != nil || len(r.Topics) != 1 {
		t.Fatalf("ShareFetch: %v, %d topics", err, len(r.Topics))
	}
	rp := r.Topics[0].Partitions[0]
	var got [][2]int64
	for _, a := range rp.AcquiredRecords {
		got = append(got, [2]int64{a.FirstOffset, a.LastOffset})
	}
	return rp.AcknowledgeErrorCode, got
}

// ShareFetch v1-v2 and ShareAcknowledge v1-v2 (KIP-932): a member opens a
// share session at epoch 0 (the share-partition starts at the end, the
// default share.auto.offset.reset), then acquires what is produced after;
// v1 acquires whole batches past max records, v2 in record_limit mode
// (KIP-1206) exactly max records; an acquired record acknowledged is NONE,
// one not acquired INVALID_RECORD_STATE; a renewing ShareAcknowledge v2
// renews a record's lock (KIP-1222), where v1 asking for it is
// INVALID_REQUEST. A session epoch with no session
// is SHARE_SESSION_NOT_FOUND, another than the session's
// INVALID_SHARE_SESSION_EPOCH, as is a ShareAcknowledge at epoch 0; no
// group or member id INVALID_REQUEST; an unknown topic id UNKNOWN_TOPIC_ID.
// alice needs Read on the group (GROUP_AUTHORIZATION_FAILED) and on the
// topic (TOPIC_AUTHORIZATION_FAILED on the partition).
func TestShareFetchHandler(t *testing.T) {
	b := startHandlerTest(t, nil)
	id := b.createTopic("sf", 1)
	b.joinShare("sf", "m1", "sf")
	c := b.dial()
	wantCode(t, "epoch 4 with no session", shareFetchCode(c.do(shareFetchRequest(1, "m1", 4, id, 10))), kerr.ShareSessionNotFound)
	if _, got := shareFetched(t, c.do(shareFetchRequest(1, "m1", 0, id, 10))); len(got) != 0 {
		t.Errorf("opening the session acquired %v before anything was produced", got)
	}
	b.produce("sf", 0, "a", "b", "c")
	b.produce("sf", 0, "d", "e", "f")
	epoch := int32(1)
	for _, tc := range []struct {
		req  *kmsg.ShareFetchRequest
		mode int8
		want [][2]int64
	}{
		{shareFetchRequest(2, "m1", 0, id, 1), 1, [][2]int64{{0, 0}}},
		{shareFetchRequest(1, "m1", 0, id, 1), 0, [][2]int64{{1, 2}}},
		{shareFetchRequest(2, "m1", 0, id, 1), 0, [][2]int64{{3, 5}}},
	} {
		tc.req.ShareSessionEpoch, tc.req.ShareAcquireMode = epoch, tc.mode
		epoch++
		if _, got := shareFetched(t, c.do(tc.req)); !slices.Equal(got, tc.want) {
			t.Errorf("v%d, mode %d, max 1 record: acquired %v, want %v", tc.req.Version, tc.mode, got, tc.want)
		}
	}
	ack := kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: 0, LastOffset: 2, AcknowledgeTypes: []int8{1}}
	if code, _ := shareFetched(t, c.do(shareFetchRequest(1, "m1", epoch, id, 10, ack))); code != 0 {
		t.Errorf("acknowledging 0-2 in a fetch: %v", kerr.ErrorForCode(code))
	}
	epoch++
	ackCode := func(resp kmsg.Response) int16 {
		r := resp.(*kmsg.ShareAcknowledgeResponse)
		return topOr(r.ErrorCode, func() int16 { return r.Topics[0].Partitions[0].ErrorCode })
	}
	wantCode(t, "ShareAcknowledge of 3-5", ackCode(c.do(shareAckRequest(1, "m1", epoch, id, 3, 5, 1))), nil)
	epoch++
	wantCode(t, "ShareAcknowledge of 3-5 again", ackCode(c.do(shareAckRequest(1, "m1", epoch, id, 3, 5, 1))), kerr.InvalidRecordState)
	epoch++
	wantCode(t, "ShareAcknowledge of 5-3", ackCode(c.do(shareAckRequest(1, "m1", epoch, id, 5, 3, 1))), kerr.InvalidRequest)
	epoch++
	b.produce("sf", 0, "g")
	if _, got := shareFetched(t, c.do(shareFetchRequest(2, "m1", epoch, id, 10))); !slices.Equal(got, [][2]int64{{6, 6}}) {
		t.Errorf("fetching g: acquired %v, want 6-6", got)
	}
	for _, tc := range []struct {
		v    int16
		typ  int8
		want *kerr.Error
	}{
		{1, 4, kerr.InvalidRequest}, // v1 renews nothing
		{2, 4, nil},
		{2, 1, nil},
	} {
		epoch++
		wantCode(t, fmt.Sprintf("v%d ShareAcknowledge of 6 as %d", tc.v, tc.typ), ackCode(c.do(shareAckRequest(tc.v, "m1", epoch, id, 6, 6, tc.typ))), tc.want)
	}
	wantCode(t, "ShareAcknowledge at epoch 0", ackCode(c.do(shareAckRequest(1, "m1", 0, id, 0, 0, 1))), kerr.InvalidShareSessionEpoch)
	wantCode(t, "an epoch ahead", shareFetchCode(c.do(shareFetchRequest(1, "m1", epoch+5, id, 10))), kerr.InvalidShareSessionEpoch)
	noGroup := shareFetchRequest(1, "m1", 0, id, 10)
	noGroup.GroupID = nil
	wantCode(t, "no group id", shareFetchCode(c.do(noGroup)), kerr.InvalidRequest)
	wantCode(t, "no member id", shareFetchCode(c.do(shareFetchRequest(1, "", 0, id, 10))), kerr.InvalidRequest)
	wantCode(t, "an unknown topic id", shareFetchCode(c.do(shareFetchRequest(1, "m1", 0, [16]byte{1}, 10))), kerr.UnknownTopicID)

	b.joinShare("sf", "alice-m", "sf")
	b.wantAuthz(shareFetchRequest(2, "alice-m", 0, id, 10), shareFetchCode,
		authzStep{want: kerr.GroupAuthorizationFailed},
		authzStep{grants: []grant{groupGrant("sf", kmsg.ACLOperationRead)}, want: kerr.TopicAuthorizationFailed},
		authzStep{grants: []grant{topicGrant("sf", kmsg.ACLOperationDescribe)}, want: kerr.TopicAuthorizationFailed},
		authzStep{grants: []grant{topicGrant("sf", kmsg.ACLOperationRead)}})
}
