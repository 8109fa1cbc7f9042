package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// listOffsetsRequest asks for one partition's offset at timestamp.
func listOffsetsRequest(v int16, topic string, partition int32, timestamp int64) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version, req.ReplicaID = v, -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch, rp.MaxNumOffsets = partition, timestamp, -1, 1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// ListOffsets: earliest (-2) and latest (-1) at each version (v0 is gone
// since Kafka 4.0: the broker closes the connection), max timestamp (-3) from v7, an unknown topic or
// partition UNKNOWN_TOPIC_OR_PARTITION, and alice (no ACLs)
// TOPIC_AUTHORIZATION_FAILED.
func TestListOffsetsHandler(t *testing.T) {
	b := startHandlerTest(t, map[string]int32{"lo": 1})
	b.produce("lo", 0, "a", "b", "c")
	offset := func(resp kmsg.Response) (int64, int16) {
		rp := resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
		if rp.ErrorCode != 0 {
			return -1, rp.ErrorCode
		}
		return rp.Offset, 0
	}
	for _, v := range []int16{1, 2, 4, 6, 7, 8, 9, 10} {
		for ts, want := range map[int64]int64{-2: 0, -1: 3} {
			got, code := offset(b.do(listOffsetsRequest(v, "lo", 0, ts)))
			wantCode(t, "ListOffsets", code, nil)
			if got != want {
				t.Errorf("v%d timestamp %d: offset %d, want %d", v, ts, got, want)
			}
		}
		if v >= 7 {
			// All three records carry the same timestamp: the first of them.
			got, code := offset(b.do(listOffsetsRequest(v, "lo", 0, -3)))
			wantCode(t, "ListOffsets max timestamp", code, nil)
			if got != 0 {
				t.Errorf("v%d max timestamp: offset %d, want 0", v, got)
			}
		}
	}
	if _, err := b.try(listOffsetsRequest(0, "lo", 0, -1)); err == nil {
		t.Error("ListOffsets v0 answered")
	}
	_, code := offset(b.do(listOffsetsRequest(7, "nope", 0, -1)))
	wantCode(t, "unknown topic", code, kerr.UnknownTopicOrPartition)
	_, code = offset(b.do(listOffsetsRequest(7, "lo", 1, -1)))
	wantCode(t, "partition 1 of 1", code, kerr.UnknownTopicOrPartition)
	_, code = offset(b.as("alice", listOffsetsRequest(7, "lo", 0, -1)))
	wantCode(t, "as alice", code, kerr.TopicAuthorizationFailed)
}
