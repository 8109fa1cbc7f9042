package compat

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// KIP-227 fetch sessions with raw Fetch requests: epoch 0 opens a session,
// an incremental fetch names only what changed and the answer holds only
// partitions with news, a wrong epoch or an unknown id is refused, and
// forgotten partitions leave the session.
func TestFetchSessions(t *testing.T) {
	n := testutil.StartBroker(t, nil)
	cl := newKgo(t, n.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := newAdmin(t, n.Addr())
	const topic = "sessions"
	createTopic(t, adm, topic, 2, nil)
	id := topicID(t, adm, topic)

	fetch := func(sessionID, epoch int32, parts map[int32]int64, forget []int32) *kmsg.FetchResponse {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.Version = 13
		req.MaxWaitMillis = 0
		req.MinBytes = 0
		req.MaxBytes = 1 << 20
		req.SessionID, req.SessionEpoch = sessionID, epoch
		if len(parts) > 0 {
			rt := kmsg.NewFetchRequestTopic()
			rt.TopicID = id
			for p, off := range parts {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, off, 1<<20
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		if len(forget) > 0 {
			ft := kmsg.NewFetchRequestForgottenTopic()
			ft.TopicID, ft.Partitions = id, forget
			req.ForgottenTopics = append(req.ForgottenTopics, ft)
		}
		resp, err := req.RequestWith(testCtx(t, 10*time.Second), cl)
		if err != nil {
			t.Fatalf("Fetch: %v", err)
		}
		return resp
	}
	partsOf := func(resp *kmsg.FetchResponse) map[int32]kmsg.FetchResponseTopicPartition {
		out := map[int32]kmsg.FetchResponseTopicPartition{}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				out[rp.Partition] = rp
			}
		}
		return out
	}

	// Open a session on both partitions: a full answer.
	resp := fetch(0, 0, map[int32]int64{0: 0, 1: 0}, nil)
	wantCode(t, "new session", resp.ErrorCode, nil)
	sid := resp.SessionID
	if sid == 0 {
		t.Fatal("epoch 0 opened no session")
	}
	if got := partsOf(resp); len(got) != 2 {
		t.Fatalf("full session answer has %d partitions, want 2", len(got))
	}

	// Nothing changed: an incremental fetch answers no partition.
	resp = fetch(sid, 1, nil, nil)
	wantCode(t, "incremental", resp.ErrorCode, nil)
	if got := partsOf(resp); len(got) != 0 {
		t.Fatalf("incremental answer with nothing new has %d partitions", len(got))
	}

	// A record lands on partition 1: only partition 1 comes back, with it.
	produceAll(t, cl, &kgo.Record{Topic: topic, Partition: 1, Value: []byte("news")})
	resp = fetch(sid, 2, nil, nil)
	got := partsOf(resp)
	if len(got) != 1 || got[1].HighWatermark != 1 || len(got[1].RecordBatches) == 0 {
		t.Fatalf("incremental answer after a produce to partition 1: %+v", got)
	}

	// The client moves on to offset 1; nothing new, nothing answered.
	resp = fetch(sid, 3, map[int32]int64{1: 1}, nil)
	if got := partsOf(resp); len(got) != 0 {
		t.Fatalf("after moving the offset: %d partitions answered", len(got))
	}

	// A wrong epoch, and an unknown session.
	resp = fetch(sid, 9, nil, nil)
	wantCode(t, "wrong epoch", resp.ErrorCode, kerr.InvalidFetchSessionEpoch)
	resp = fetch(sid+1000, 1, nil, nil)
	wantCode(t, "unknown session", resp.ErrorCode, kerr.FetchSessionIDNotFound)

	// Forget partition 0; a record on it is then not answered.
	resp = fetch(sid, 4, nil, []int32{0})
	wantCode(t, "forget", resp.ErrorCode, nil)
	produceAll(t, cl, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("unseen")})
	resp = fetch(sid, 5, nil, nil)
	if got := partsOf(resp); len(got) != 0 {
		t.Fatalf("a forgotten partition was answered: %+v", got)
	}

	// Epoch -1 closes the session and fetches without one.
	resp = fetch(sid, -1, map[int32]int64{0: 0}, nil)
	wantCode(t, "close session", resp.ErrorCode, nil)
	if resp.SessionID != 0 || len(partsOf(resp)) != 1 {
		t.Fatalf("closing fetch: session %d, %d partitions", resp.SessionID, len(partsOf(resp)))
	}
	resp = fetch(sid, 6, nil, nil)
	wantCode(t, "closed session", resp.ErrorCode, kerr.FetchSessionIDNotFound)
}
