package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Produce (the handler; 00_produce_test.go tests its record checks): each
// version appends and answers the base offset, an unknown topic or
// partition is UNKNOWN_TOPIC_OR_PARTITION (from v13, by id, an unknown
// id UNKNOWN_TOPIC_ID), acks other than -1, 0 and 1
// INVALID_REQUIRED_ACKS, a batch that is not one v2 batch INVALID_RECORD,
// and alice (no ACLs) TOPIC_AUTHORIZATION_FAILED with nothing appended.
func TestProduceHandler(t *testing.T) {
	b := startHandlerTest(t, nil)
	id := b.createTopic("p", 2)
	next := int64(0)
	for _, v := range []int16{3, 5, 7, 8, 9, 10, 11, 12, 13} {
		req := produceRequest(v, "p", 1, "a", "b")
		if v >= 13 {
			req.Topics[0].TopicID = id // v13 names topics by id only
		}
		resp := b.do(req).(*kmsg.ProduceResponse)
		rp := resp.Topics[0].Partitions[0]
		wantCode(t, "produce", rp.ErrorCode, nil)
		if rp.BaseOffset != next {
			t.Errorf("v%d: base offset %d, want %d", v, rp.BaseOffset, next)
		}
		if v >= 5 && rp.LogStartOffset != 0 {
			t.Errorf("v%d: log start offset %d, want 0", v, rp.LogStartOffset)
		}
		if v >= 2 && rp.LogAppendTime != -1 {
			t.Errorf("v%d: log append time %d, want -1 (CreateTime topic)", v, rp.LogAppendTime)
		}
		next += 2
	}

	code := func(req *kmsg.ProduceRequest) int16 {
		return b.do(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	}
	wantCode(t, "unknown topic", code(produceRequest(9, "nope", 0, "x")), kerr.UnknownTopicOrPartition)
	wantCode(t, "partition 2 of 2", code(produceRequest(9, "p", 2, "x")), kerr.UnknownTopicOrPartition)
	noRecords := produceRequest(9, "p", 0, "x")
	noRecords.Topics[0].Partitions[0].Records = nil
	wantCode(t, "no records", code(noRecords), kerr.InvalidRecord)

	acks := produceRequest(9, "p", 0, "x")
	acks.Acks = 2
	ar := b.do(acks).(*kmsg.ProduceResponse)
	wantCode(t, "acks 2", ar.Topics[0].Partitions[0].ErrorCode, kerr.InvalidRequiredAcks)

	byID := produceRequest(13, "", 0, "x")
	byID.Topics[0].TopicID = [16]byte{1}
	wantCode(t, "v13 unknown topic id", code(byID), kerr.UnknownTopicID)

	byID.Topics[0].TopicID = id
	resp := b.as("alice", byID).(*kmsg.ProduceResponse)
	wantCode(t, "as alice", resp.Topics[0].Partitions[0].ErrorCode, kerr.TopicAuthorizationFailed)
	if off := b.produce("p", 0, "after"); off != 0 {
		t.Errorf("p-0 took alice's record: next offset %d, want 0", off)
	}
}
