package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeTopicPartitionsRequest asks for topics (all when none), at most
// limit partitions a page, from cursor.
func describeTopicPartitionsRequest(limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor, topics ...string) *kmsg.DescribeTopicPartitionsRequest {
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.ResponsePartitionLimit, req.Cursor = limit, cursor
	for _, topic := range topics {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = topic
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// DescribeTopicPartitions v0 pages topics sorted by name, at most the limit
// of partitions a page, the next page from the answer's cursor; an unknown
// topic is UNKNOWN_TOPIC_OR_PARTITION, a cursor on a topic not asked for
// INVALID_REQUEST; alice (no ACLs) sees no topic and gets
// TOPIC_AUTHORIZATION_FAILED for one she names.
func TestDescribeTopicPartitionsHandler(t *testing.T) {
	b := startHandlerTest(t, map[string]int32{"dtp-a": 3, "dtp-b": 2})

	first := b.do(describeTopicPartitionsRequest(2, nil)).(*kmsg.DescribeTopicPartitionsResponse)
	if len(first.Topics) != 1 || *first.Topics[0].Topic != "dtp-a" || len(first.Topics[0].Partitions) != 2 {
		t.Fatalf("first page: %+v", first.Topics)
	}
	if c := first.NextCursor; c == nil || c.Topic != "dtp-a" || c.Partition != 2 {
		t.Fatalf("first page's cursor %+v, want dtp-a 2", c)
	}
	cursor := kmsg.NewDescribeTopicPartitionsRequestCursor()
	cursor.Topic, cursor.Partition = first.NextCursor.Topic, first.NextCursor.Partition
	second := b.do(describeTopicPartitionsRequest(2, &cursor)).(*kmsg.DescribeTopicPartitionsResponse)
	var got []string
	for _, dt := range second.Topics {
		for _, p := range dt.Partitions {
			got = append(got, *dt.Topic+"-"+string(rune('0'+p.Partition)))
		}
	}
	if len(got) != 2 || got[0] != "dtp-a-2" || got[1] != "dtp-b-0" {
		t.Errorf("second page: %v, want dtp-a-2 dtp-b-0", got)
	}

	code := func(resp kmsg.Response) int16 {
		r := resp.(*kmsg.DescribeTopicPartitionsResponse)
		if len(r.Topics) == 0 {
			return -1
		}
		return r.Topics[0].ErrorCode
	}
	wantCode(t, "unknown topic", code(b.do(describeTopicPartitionsRequest(10, nil, "nope"))), kerr.UnknownTopicOrPartition)
	wantCode(t, "a cursor on a topic not asked for", code(b.do(describeTopicPartitionsRequest(10, &cursor, "dtp-b"))), kerr.InvalidRequest)
	if all := b.as("alice", describeTopicPartitionsRequest(10, nil)).(*kmsg.DescribeTopicPartitionsResponse); len(all.Topics) != 0 {
		t.Errorf("alice sees %d topics", len(all.Topics))
	}
	wantCode(t, "named as alice", code(b.as("alice", describeTopicPartitionsRequest(10, nil, "dtp-a"))), kerr.TopicAuthorizationFailed)
}
