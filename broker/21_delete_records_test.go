package broker_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// deleteRecordsRequest deletes topic's partition's records before offset.
func deleteRecordsRequest(v int16, topic string, partition int32, offset int64) *kmsg.DeleteRecordsRequest {
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.Version, req.TimeoutMillis = v, 10000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = partition, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// DeleteRecords v0-v2 moves the log start offset (the answer's low
// watermark, and ListOffsets' earliest); -1 means the high watermark, past
// it is OFFSET_OUT_OF_RANGE; an unknown topic or partition is
// UNKNOWN_TOPIC_OR_PARTITION; alice (no ACLs) gets
// TOPIC_AUTHORIZATION_FAILED and deletes nothing.
func TestDeleteRecordsHandler(t *testing.T) {
	b := startHandlerTest(t, map[string]int32{"dr": 1})
	b.produce("dr", 0, "a", "b", "c", "d", "e")
	result := func(resp kmsg.Response) (int64, int16) {
		rp := resp.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
		return rp.LowWatermark, rp.ErrorCode
	}
	earliest := func() int64 {
		return b.do(listOffsetsRequest(7, "dr", 0, -2)).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].Offset
	}
	for v := int16(0); v <= 2; v++ {
		low, code := result(b.do(deleteRecordsRequest(v, "dr", 0, int64(v+1))))
		wantCode(t, fmt.Sprintf("v%d", v), code, nil)
		if low != int64(v+1) || earliest() != int64(v+1) {
			t.Errorf("v%d: low watermark %d, earliest %d, want %d", v, low, earliest(), v+1)
		}
	}
	_, code := result(b.as("alice", deleteRecordsRequest(2, "dr", 0, 4)))
	wantCode(t, "as alice", code, kerr.TopicAuthorizationFailed)
	if got := earliest(); got != 3 {
		t.Errorf("after alice: earliest %d, want 3", got)
	}
	_, code = result(b.do(deleteRecordsRequest(2, "dr", 0, 6)))
	wantCode(t, "past the high watermark", code, kerr.OffsetOutOfRange)
	_, code = result(b.do(deleteRecordsRequest(2, "nope", 0, 0)))
	wantCode(t, "unknown topic", code, kerr.UnknownTopicOrPartition)
	_, code = result(b.do(deleteRecordsRequest(2, "dr", 1, 0)))
	wantCode(t, "partition 1 of 1", code, kerr.UnknownTopicOrPartition)
	low, code := result(b.do(deleteRecordsRequest(2, "dr", 0, -1)))
	wantCode(t, "-1", code, nil)
	if low != 5 {
		t.Errorf("-1: low watermark %d, want 5 (the high watermark)", low)
	}
}
