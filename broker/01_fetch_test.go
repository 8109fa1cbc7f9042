package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchRequest is a sessionless Fetch of one partition from offset, not
// waiting; from v13 the topic is named by id.
func fetchRequest(v int16, topic string, id [16]byte, partition int32, offset int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = v, -1, 0, 1, 1<<20
	req.SessionID, req.SessionEpoch = 0, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = partition, offset, 1<<20, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// Fetch at each version returns the records with the high watermark and
// the log start offset; an offset past the end is OFFSET_OUT_OF_RANGE, an
// unknown topic UNKNOWN_TOPIC_OR_PARTITION (from v13, by id,
// UNKNOWN_TOPIC_ID), and alice
// (no ACLs) gets TOPIC_AUTHORIZATION_FAILED and no records.
func TestFetchHandler(t *testing.T) {
	b := startHandlerTest(t, nil)
	id := b.createTopic("f", 1)
	b.produce("f", 0, "a", "b", "c")
	for _, v := range []int16{4, 5, 7, 11, 12, 13, 15, 16, 17} {
		resp := b.do(fetchRequest(v, "f", id, 0, 1)).(*kmsg.FetchResponse)
		wantCode(t, "fetch", resp.ErrorCode, nil)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("v%d: %+v", v, resp.Topics)
		}
		if v >= 13 && resp.Topics[0].TopicID != id {
			t.Errorf("v%d: topic id %x, want %x", v, resp.Topics[0].TopicID, id)
		}
		rp := resp.Topics[0].Partitions[0]
		wantCode(t, "fetch f-0", rp.ErrorCode, nil)
		if rp.HighWatermark != 3 || rp.LastStableOffset != 3 {
			t.Errorf("v%d: high watermark %d, last stable %d, want 3", v, rp.HighWatermark, rp.LastStableOffset)
		}
		if v >= 5 && rp.LogStartOffset != 0 {
			t.Errorf("v%d: log start offset %d", v, rp.LogStartOffset)
		}
		var batch kmsg.RecordBatch
		if err := batch.ReadFrom(rp.RecordBatches); err != nil || batch.FirstOffset != 0 || batch.NumRecords != 3 {
			t.Errorf("v%d: records %d bytes, first batch at %d with %d records (%v)", v, len(rp.RecordBatches), batch.FirstOffset, batch.NumRecords, err)
		}
	}

	code := func(req *kmsg.FetchRequest) int16 {
		resp := b.do(req).(*kmsg.FetchResponse)
		if resp.ErrorCode != 0 {
			return resp.ErrorCode
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	wantCode(t, "offset 4 of 3", code(fetchRequest(12, "f", id, 0, 4)), kerr.OffsetOutOfRange)
	wantCode(t, "offset 3 of 3 (the end)", code(fetchRequest(12, "f", id, 0, 3)), nil)
	wantCode(t, "unknown topic", code(fetchRequest(12, "nope", id, 0, 0)), kerr.UnknownTopicOrPartition)
	wantCode(t, "partition 1 of 1", code(fetchRequest(12, "f", id, 1, 0)), kerr.UnknownTopicOrPartition)
	wantCode(t, "v13 unknown topic id", code(fetchRequest(13, "", [16]byte{1}, 0, 0)), kerr.UnknownTopicID)

	resp := b.as("alice", fetchRequest(13, "", id, 0, 0)).(*kmsg.FetchResponse)
	rp := resp.Topics[0].Partitions[0]
	wantCode(t, "as alice", rp.ErrorCode, kerr.TopicAuthorizationFailed)
	if len(rp.RecordBatches) != 0 {
		t.Errorf("alice got %d bytes of records", len(rp.RecordBatches))
	}
}
