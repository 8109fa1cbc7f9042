package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// deleteTopicsRequest deletes one topic, by name before v6 and by name or
// id from v6.
func deleteTopicsRequest(v int16, topic string, id [16]byte) *kmsg.DeleteTopicsRequest {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version, req.TimeoutMillis = v, 10000
	if v < 6 {
		req.TopicNames = []string{topic}
		return req
	}
	rt := kmsg.NewDeleteTopicsRequestTopic()
	if topic != "" {
		rt.Topic = kmsg.StringPtr(topic)
	}
	rt.TopicID = id
	req.Topics = append(req.Topics, rt)
	return req
}

// DeleteTopics by name and (v6) by id; an unknown name is
// UNKNOWN_TOPIC_OR_PARTITION, an unknown id UNKNOWN_TOPIC_ID, and alice (no
// ACLs) TOPIC_AUTHORIZATION_FAILED with the topic left in place.
func TestDeleteTopicsHandler(t *testing.T) {
	b := startHandlerTest(t, nil)
	code := func(resp kmsg.Response) int16 { return resp.(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode }
	for _, v := range []int16{1, 4, 5} {
		name := "dt" + string(rune('a'+v))
		b.createTopic(name, 1)
		wantCode(t, "delete "+name, code(b.do(deleteTopicsRequest(v, name, [16]byte{}))), nil)
		wantCode(t, "delete "+name+" again", code(b.do(deleteTopicsRequest(v, name, [16]byte{}))), kerr.UnknownTopicOrPartition)
	}
	id := b.createTopic("byid", 1)
	resp := b.do(deleteTopicsRequest(6, "", id)).(*kmsg.DeleteTopicsResponse)
	wantCode(t, "delete by id", resp.Topics[0].ErrorCode, nil)
	if resp.Topics[0].Topic == nil || *resp.Topics[0].Topic != "byid" {
		t.Errorf("delete by id: answered name %v, want byid", resp.Topics[0].Topic)
	}
	wantCode(t, "unknown id", code(b.do(deleteTopicsRequest(6, "", [16]byte{9}))), kerr.UnknownTopicID)

	b.createTopic("kept", 1)
	wantCode(t, "as alice", code(b.as("alice", deleteTopicsRequest(6, "kept", [16]byte{}))), kerr.TopicAuthorizationFailed)
	b.waitLeaders("kept", 1)
}
