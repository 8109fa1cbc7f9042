package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit and OffsetFetch v10 name topics by id: an offset committed
// by id is read back by id (with the id in the answer) and by name (v9),
// and an id the broker does not know is UNKNOWN_TOPIC_ID.
func TestOffsetsByTopicIDHandler(t *testing.T) {
	b := startHandlerTest(t, nil)
	id := b.createTopic("byid", 1)
	b.waitGroupCoordinator("g")
	cr := b.do(offsetCommitRequest(10, "g", "", id, 42)).(*kmsg.OffsetCommitResponse)
	wantCode(t, "commit by id", cr.Topics[0].Partitions[0].ErrorCode, nil)
	if cr.Topics[0].TopicID != id {
		t.Errorf("commit by id: answered id %x, want %x", cr.Topics[0].TopicID, id)
	}
	fr := b.do(offsetFetchRequest(10, "g", "", id)).(*kmsg.OffsetFetchResponse)
	off, code := fetchedOffset(fr)
	wantCode(t, "fetch by id", code, nil)
	if off != 42 || fr.Groups[0].Topics[0].TopicID != id {
		t.Errorf("fetch by id: offset %d of %x, want 42 of %x", off, fr.Groups[0].Topics[0].TopicID, id)
	}
	if off, _ := fetchedOffset(b.do(offsetFetchRequest(9, "g", "byid", [16]byte{}))); off != 42 {
		t.Errorf("fetch by name: offset %d, want 42", off)
	}

	unknown := [16]byte{7}
	cu := b.do(offsetCommitRequest(10, "g", "", unknown, 1)).(*kmsg.OffsetCommitResponse)
	wantCode(t, "commit to an unknown id", cu.Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicID)
	_, code = fetchedOffset(b.do(offsetFetchRequest(10, "g", "", unknown)))
	wantCode(t, "fetch of an unknown id", code, kerr.UnknownTopicID)
}
