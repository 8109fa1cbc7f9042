package replication

import (
	"bufio"
	"fmt"
	"net"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/logstore"
	"github.com/samsa-io/samsa/protocol"
)

// scriptedLeader is a leader whose answers the test writes: each request
// the follower sends arrives on reqs, decoded, and is answered with what
// the test sends on resps.
type scriptedLeader struct {
	addr  string
	reqs  chan kmsg.Request
	resps chan kmsg.Response
}

func startScriptedLeader(t *testing.T) *scriptedLeader {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &scriptedLeader{addr: ln.Addr().String(), reqs: make(chan kmsg.Request), resps: make(chan kmsg.Response)}
	done := make(chan struct{})
	t.Cleanup(func() {
		close(done)
		ln.Close()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c, done)
		}
	}()
	return s
}

func (s *scriptedLeader) serve(c net.Conn, done <-chan struct{}) {
	defer c.Close()
	rd := bufio.NewReader(c)
	for {
		frame, err := protocol.ReadFrame(rd, nil, 64<<20)
		if err != nil {
			return
		}
		h, body, err := protocol.ParseHeader(frame)
		if err != nil {
			return
		}
		req, err := protocol.DecodeBody(h, body)
		if err != nil {
			return
		}
		select {
		case s.reqs <- req:
		case <-done:
			return
		}
		var resp kmsg.Response
		select {
		case resp = <-s.resps:
		case <-done:
			return
		}
		if _, err := c.Write(protocol.AppendResponse(nil, h, resp)); err != nil {
			return
		}
	}
}

// next returns the follower's next request, which must be a Fetch.
func (s *scriptedLeader) next(t *testing.T) *kmsg.FetchRequest {
	t.Helper()
	select {
	case req := <-s.reqs:
		f, ok := req.(*kmsg.FetchRequest)
		if !ok {
			t.Fatalf("the follower sent %s, want Fetch", kmsg.NameForKey(req.Key()))
		}
		return f
	case <-time.After(30 * time.Second):
		t.Fatal("no request from the follower in 30 s")
	}
	return nil
}

// fetched lists a request's partitions as "p<n>@<offset>/<last epoch>",
// sorted, and its forgotten ones as "-p<n>".
func fetched(req *kmsg.FetchRequest) []string {
	var out []string
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			out = append(out, fmt.Sprintf("p%d@%d/%d", p.Partition, p.FetchOffset, p.LastFetchedEpoch))
		}
	}
	for _, t := range req.ForgottenTopics {
		for _, p := range t.Partitions {
			out = append(out, fmt.Sprintf("-p%d", p))
		}
	}
	sort.Strings(out)
	return out
}

func wantFetch(t *testing.T, step string, req *kmsg.FetchRequest, session, epoch int32, parts ...string) {
	t.Helper()
	got := fetched(req)
	same := len(got) == len(parts)
	for i := range parts {
		same = same && got[i] == parts[i]
	}
	if req.SessionID != session || req.SessionEpoch != epoch || !same {
		t.Fatalf("%s: fetch in session %d epoch %d with %v; want session %d epoch %d with %v",
			step, req.SessionID, req.SessionEpoch, got, session, epoch, parts)
	}
}

// fetchAnswer is a Fetch response in session; parts are filled in by the
// caller.
func fetchAnswer(session int32, topicID [16]byte, parts ...kmsg.FetchResponseTopicPartition) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.SessionID = session
	if len(parts) > 0 {
		rt := kmsg.NewFetchResponseTopic()
		rt.TopicID = topicID
		rt.Partitions = parts
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func answerPart(part int32, hw int64) kmsg.FetchResponseTopicPartition {
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.Partition, rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = part, hw, hw, 0
	rp.RecordBatches = []byte{}
	return rp
}

// A follower fetches in a KIP-227 session: the first fetch names every
// partition, later ones only the partitions whose position moved and the
// ones to forget; a session the leader lost starts over with a full fetch.
// It fetches at once on following (no OffsetForLeaderEpoch first) and cuts
// a divergent tail where the answer's DivergingEpoch says (KIP-320).
func TestFetcherSessionsAndDivergingEpoch(t *testing.T) {
	leader := startScriptedLeader(t)
	var reachable atomic.Bool
	m := NewManager(Config{
		NodeID: 2,
		Resolve: func(int32) (string, bool) {
			return leader.addr, reachable.Load()
		},
		MaxWait: 100 * time.Millisecond,
		Backoff: 10 * time.Millisecond,
	})
	defer m.Close()
	id := [16]byte{1, 2, 3}
	logs := make([]*logstore.Log, 3)
	for i := range logs {
		logs[i] = followerLog(t, [2]int{0, 2}, [2]int{0, 1}) // batches 0-1 and 2
		m.Follow(&Replica{Topic: "t", TopicID: id, Partition: int32(i), Log: logs[i]}, 1, 1)
	}
	reachable.Store(true) // the first fetch names all three

	req := leader.next(t)
	wantFetch(t, "first fetch", req, 0, 0, "p0@3/0", "p1@3/0", "p2@3/0")
	if req.ReplicaState.ID != 2 || req.Topics[0].TopicID != id {
		t.Fatalf("first fetch from replica %d for topic id %x", req.ReplicaState.ID, req.Topics[0].TopicID)
	}
	// Two records for p0; p1's log left the leader's at 2 (the leader's
	// epoch 0 ends there).
	batch, err := logstore.EncodeBatch(logstore.BatchSpec{BaseOffset: 3, PartitionLeaderEpoch: 1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]logstore.Record{{Timestamp: 1, Value: []byte("a")}, {Timestamp: 1, Value: []byte("b")}})
	if err != nil {
		t.Fatal(err)
	}
	p0 := answerPart(0, 3)
	p0.RecordBatches = batch
	p1 := answerPart(1, 2)
	p1.DivergingEpoch.Epoch, p1.DivergingEpoch.EndOffset = 0, 2
	leader.resps <- fetchAnswer(9, id, p0, p1, answerPart(2, 3))

	req = leader.next(t)
	wantFetch(t, "after records and a divergence", req, 9, 1, "p0@5/1", "p1@2/0")
	if logs[1].EndOffset() != 2 {
		t.Fatalf("p1 ends at %d after DivergingEpoch {0, 2}; want 2", logs[1].EndOffset())
	}
	leader.resps <- fetchAnswer(9, id)

	req = leader.next(t)
	wantFetch(t, "nothing moved", req, 9, 2)
	m.Unfollow("t", 2)
	leader.resps <- fetchAnswer(9, id)

	req = leader.next(t)
	wantFetch(t, "after Unfollow", req, 9, 3, "-p2")
	lost := fetchAnswer(0, id)
	lost.ErrorCode = kerr.FetchSessionIDNotFound.Code
	leader.resps <- lost

	req = leader.next(t)
	wantFetch(t, "after the leader lost the session", req, 0, 0, "p0@5/1", "p1@2/0")
	leader.resps <- fetchAnswer(10, id, answerPart(0, 5), answerPart(1, 2))

	req = leader.next(t)
	wantFetch(t, "in the new session", req, 10, 1)
	leader.resps <- fetchAnswer(10, id)
}
