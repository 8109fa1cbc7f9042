package compat

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/samsa-io/samsa/internal/testutil"
)

// followerFetch sends, as broker replica, one sessionless Fetch of
// partition 0 of topic at offset, with lastEpoch as its last fetched epoch
// (v12+; ignored below), to the broker at addr, pinned at version v.
func followerFetch(t *testing.T, addr, topic string, id [16]byte, replica int32, v int16, offset int64, currentEpoch, lastEpoch int32) kmsg.FetchResponseTopicPartition {
	t.Helper()
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(int16(kmsg.Fetch), v)
	cl := newKgo(t, addr, kgo.MaxVersions(vs))
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = replica
	req.ReplicaState.ID, req.ReplicaState.Epoch = replica, -1
	req.MaxBytes = 1 << 20
	req.SessionID, req.SessionEpoch = 0, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset = 0, offset
	rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = currentEpoch, lastEpoch
	rp.LogStartOffset, rp.PartitionMaxBytes = -1, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kr, err := cl.SeedBrokers()[0].Request(testCtx(t, 15*time.Second), req)
	if err != nil {
		t.Fatalf("follower Fetch v%d at %d: %v", v, offset, err)
	}
	resp := kr.(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("follower Fetch v%d at %d: error %v, %d topics", v, offset, kerr.ErrorForCode(resp.ErrorCode), len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0]
}

// The fault of RELIABILITY.md §2, item 20, at its root: a follower whose
// log runs past the leader's (a tail it wrote as an earlier leader) fetches
// from past the leader's log end. Kafka answers OFFSET_OUT_OF_RANGE, or
// DivergingEpoch when the fetch names its last epoch, and counts nothing:
// the follower does not rejoin the ISR, and acks=all writes are not
// acknowledged on its account while it holds none of them. samsa took the
// fetch offset as the follower's log end, put it back in the ISR and
// acknowledged writes that only the leader had.
func TestClusterFollowerFetchPastLeaderEndCountsForNothing(t *testing.T) {
	c := testutil.StartCluster(t, 2, map[string]string{"replica.lag.time.max.ms": "1000"})
	const topic = "diverge"
	createReplicatedTopic(t, c, topic, 1, 2, map[string]*string{"min.insync.replicas": strp("2")})
	mp := waitISR(t, c, topic, 0, 2, 30*time.Second)
	leader, epoch := mp.Leader, mp.LeaderEpoch
	follower := int32(3) - leader
	cl := newClusterKgo(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	for i := range 5 {
		produceAll(t, cl, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("v" + itoa(i))})
	}
	// The follower stops fetching, falls behind and leaves the ISR.
	c.Node(follower).StopReplicaFetchers()
	one := newClusterKgo(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	for i := range 2 {
		produceAll(t, one, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("w" + itoa(i))})
	}
	waitISR(t, c, topic, 0, 1, 30*time.Second)

	id := topicID(t, newAdmin(t, c.Node(leader).Addr()), topic)
	addr := c.Node(leader).Addr()
	const end = 7
	// An old peer (no last fetched epoch) past the leader's end.
	rp := followerFetch(t, addr, topic, id, follower, 11, end+3, epoch, -1)
	wantCode(t, "follower fetch v11 past the log end", rp.ErrorCode, kerr.OffsetOutOfRange)
	// The ISR loop runs every 500 ms and at once when a follower looks
	// caught up: over three passes the ISR must stay the leader alone.
	holdFor(t, 1500*time.Millisecond, func() error {
		if mp, err := partitionMeta(t, c.Node(leader).Addr(), topic, 0); err != nil || len(mp.ISR) != 1 {
			return fmt.Errorf("ISR %v (err %v), want the leader alone", mp.ISR, err)
		}
		return nil
	})
	// So a write is refused, not acknowledged on the follower's account.
	batch := rawBatch(-1, -1, -1, time.Now().UnixMilli(), []byte("unreplicated"))
	wantCode(t, "acks=all produce with the follower out of sync", produceRaw(t, newKgo(t, addr), topic, id, 0, batch).ErrorCode, kerr.NotEnoughReplicas)

	// A v12+ peer in the current epoch past the end: told the epoch ends at
	// the leader's log end, sent no records.
	rp = followerFetch(t, addr, topic, id, follower, 15, end+3, epoch, epoch)
	wantCode(t, "follower fetch v15 past the log end", rp.ErrorCode, nil)
	if rp.DivergingEpoch.Epoch != epoch || rp.DivergingEpoch.EndOffset != end || len(rp.RecordBatches) != 0 {
		t.Fatalf("diverging follower: DivergingEpoch %+v, %d record bytes; want epoch %d ending at %d, no records",
			rp.DivergingEpoch, len(rp.RecordBatches), epoch, end)
	}
	// An epoch the leader never had.
	rp = followerFetch(t, addr, topic, id, follower, 15, end+3, epoch, epoch+1)
	wantCode(t, "follower fetch with an unknown newer last epoch", rp.ErrorCode, kerr.OffsetOutOfRange)

	// A valid fetch counts: one from the leader's log end (as if the
	// follower had caught up) brings it back into the ISR.
	rp = followerFetch(t, addr, topic, id, follower, 15, end, epoch, epoch)
	wantCode(t, "follower fetch at the log end", rp.ErrorCode, nil)
	if rp.DivergingEpoch.Epoch != -1 {
		t.Fatalf("an in-sync follower told it diverged: %+v", rp.DivergingEpoch)
	}
	waitISR(t, c, topic, 0, 2, 30*time.Second)
}

// holdFor fails the test if cond fails at any poll within d.
func holdFor(t *testing.T, d time.Duration, cond func() error) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		if err := cond(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// OffsetForLeaderEpoch answers a consumer from the leader's epoch cache and
// log end, as Kafka's leader does, not capped at its high watermark: a new
// leader's high watermark trails the old leader's for a moment, and a
// consumer that read below the old one and validated its position against
// the capped answer was told it had lost records, and rewound (RELIABILITY.md
// §2, item 21). Here the high watermark is held back by a follower in the
// ISR that stopped fetching.
func TestClusterOffsetForLeaderEpochIsNotCappedAtTheHighWatermark(t *testing.T) {
	c := testutil.StartCluster(t, 2, map[string]string{"replica.lag.time.max.ms": "60000"})
	const topic = "epochend"
	createReplicatedTopic(t, c, topic, 1, 2, map[string]*string{"min.insync.replicas": strp("1")})
	mp := waitISR(t, c, topic, 0, 2, 30*time.Second)
	leader, epoch := mp.Leader, mp.LeaderEpoch
	cl := newClusterKgo(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	for i := range 5 {
		produceAll(t, cl, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("v" + itoa(i))})
	}
	c.Node(3 - leader).StopReplicaFetchers()
	one := newClusterKgo(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	for i := range 3 {
		produceAll(t, one, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("w" + itoa(i))})
	}
	addr := c.Node(leader).Addr()
	if hw := listOffsetRaw(t, newKgo(t, addr), topic, 0, -1).Offset; hw != 5 {
		t.Fatalf("high watermark %d, want 5 (held back by the follower)", hw)
	}
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = 0, epoch, epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kr, err := newKgo(t, addr).SeedBrokers()[0].Request(testCtx(t, 10*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	resp := kr.(*kmsg.OffsetForLeaderEpochResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("malformed response %+v", resp)
	}
	got := resp.Topics[0].Partitions[0]
	wantCode(t, "OffsetForLeaderEpoch", got.ErrorCode, nil)
	if got.LeaderEpoch != epoch || got.EndOffset != 8 {
		t.Fatalf("OffsetForLeaderEpoch(epoch %d) = epoch %d, end %d; want epoch %d ending at the log end, 8", epoch, got.LeaderEpoch, got.EndOffset, epoch)
	}
}

// An idempotent retry of a batch the leader appended but could not yet
// replicate is answered as the first attempt would be: only once the high
// watermark covers it. samsa answered a duplicate at once with its offset,
// so a producer whose first attempt timed out on a leader cut off from its
// followers had its retry acknowledged, and the write was lost when that
// leader's tail was truncated (seen under faults: acks out of order, the
// acknowledged records read back nowhere). Kafka's DelayedProduce waits
// for the duplicate's offsets too.
func TestClusterDuplicateBatchIsAckedOnlyWhenCommitted(t *testing.T) {
	c := testutil.StartCluster(t, 2, map[string]string{"replica.lag.time.max.ms": "60000"})
	const topic = "dupwait"
	createReplicatedTopic(t, c, topic, 1, 2, map[string]*string{"min.insync.replicas": strp("2")})
	mp := waitISR(t, c, topic, 0, 2, 30*time.Second)
	leader := mp.Leader
	addr := c.Node(leader).Addr()
	cl := newKgo(t, addr)
	init := kmsg.NewPtrInitProducerIDRequest()
	initResp, err := init.RequestWith(testCtx(t, 10*time.Second), cl)
	if err != nil || initResp.ErrorCode != 0 {
		t.Fatalf("InitProducerID: %v, code %d", err, initResp.ErrorCode)
	}
	// The follower stops fetching but stays in the ISR: nothing new can
	// be committed.
	c.Node(3 - leader).StopReplicaFetchers()
	id := topicID(t, newAdmin(t, addr), topic)
	batch := rawBatch(initResp.ProducerID, initResp.ProducerEpoch, 0, time.Now().UnixMilli(), []byte("uncommitted"))
	produce := func() kmsg.ProduceResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 500
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = slices.Clone(batch)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(testCtx(t, 20*time.Second), cl)
		if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("Produce: %v", err)
		}
		return resp.Topics[0].Partitions[0]
	}
	wantCode(t, "first attempt", produce().ErrorCode, kerr.RequestTimedOut)
	for i := range 2 {
		rp := produce()
		wantCode(t, fmt.Sprintf("retry %d of a batch not yet committed", i+1), rp.ErrorCode, kerr.RequestTimedOut)
	}
	if hw := listOffsetRaw(t, cl, topic, 0, -1).Offset; hw != 0 {
		t.Fatalf("high watermark %d: the batch was committed without the follower", hw)
	}
}
