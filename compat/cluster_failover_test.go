package compat

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/testutil"
)

var _ cluster = (*testutil.Cluster)(nil)

// Three brokers, a topic of replication factor 3 with min.insync.replicas
// 2: a franz-go producer (acks=all, idempotent) keeps producing while the
// partition's leader is killed abruptly. Every acknowledged record is read
// back from the survivors, at its offset and in order; the killed broker
// restarts, truncates what it must and rejoins the ISR.
func TestClusterLeaderKilledDuringAcksAll(t *testing.T) {
	c := testutil.StartCluster(t, 3, nil)
	failoverUnderLoad(t, c, "failover", func(id int32) { c.Node(id).Kill() }, func(id int32) { c.Node(id).Restart() })
}

// failoverUnderLoad creates topic (RF3, min.insync.replicas 2) and has a
// franz-go producer (acks=all, idempotent) produce to it while the
// partition's leader is killed; every acknowledged record must be read back
// in order, and the killed broker, restarted, must rejoin the ISR. It logs
// the failover time: from the kill to the first acknowledgement of a
// record sent after it.
func failoverUnderLoad(t *testing.T, c cluster, topic string, kill, restart func(id int32)) {
	t.Helper()
	createReplicatedTopic(t, c, topic, 1, 3, map[string]*string{"min.insync.replicas": strp("2")})
	leader := waitISR(t, c, topic, 0, 3, 30*time.Second).Leader

	cl := newClusterKgo(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0), kgo.RecordRetries(1000), kgo.RetryTimeout(60*time.Second))
	var (
		mu      sync.Mutex
		acked   []ackedRecord
		killed  time.Time
		firstOK time.Time // first ack of a record produced after the kill
	)
	ctx, cancel := context.WithCancel(testCtx(t, 120*time.Second))
	defer cancel()
	done := make(chan error, 1)
	go func() {
		for i := 0; ctx.Err() == nil; i++ {
			sent := time.Now()
			r := &kgo.Record{Topic: topic, Partition: 0, Value: []byte("v" + itoa(i))}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				if ctx.Err() != nil {
					done <- nil
					return
				}
				done <- err
				return
			}
			mu.Lock()
			acked = append(acked, ackedRecord{r.Offset, string(r.Value)})
			if !killed.IsZero() && sent.After(killed) && firstOK.IsZero() {
				firstOK = time.Now()
			}
			mu.Unlock()
		}
		done <- nil
	}()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if count() < 200 {
			return errors.New("fewer than 200 acks before the kill")
		}
		return nil
	})
	mu.Lock()
	killed = time.Now()
	mu.Unlock()
	kill(leader)
	before := count()
	testutil.Eventually(t, 60*time.Second, func() error {
		if count() < before+200 {
			return errors.New("fewer than 200 acks after the kill")
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("produce: %v", err)
	}
	mu.Lock()
	t.Logf("failover: leader %d killed, next acks=all produce answered after %v; %d records acknowledged",
		leader, firstOK.Sub(killed), len(acked))
	got := append([]ackedRecord(nil), acked...)
	mu.Unlock()
	checkAcked(t, c, topic, 0, got)

	// The killed broker comes back, catches up and rejoins the ISR.
	restart(leader)
	waitISR(t, c, topic, 0, 3, 60*time.Second)
	checkAcked(t, c, topic, 0, got)
}

// A follower cut off from its leader (its fetches stop, its registration
// lives) leaves the ISR after replica.lag.time.max.ms and acks=all
// continues with two replicas; with the other follower killed too, only the
// leader is left: acks=all gets NOT_ENOUGH_REPLICAS and nothing it
// acknowledged is lost.
func TestClusterFollowersLostThenNotEnoughReplicas(t *testing.T) {
	c := testutil.StartCluster(t, 3, map[string]string{"replica.lag.time.max.ms": "2000"})
	const topic = "isr-shrink"
	createReplicatedTopic(t, c, topic, 1, 3, map[string]*string{"min.insync.replicas": strp("2")})
	mp := waitISR(t, c, topic, 0, 3, 30*time.Second)
	var followers []int32
	for _, r := range mp.Replicas {
		if r != mp.Leader {
			followers = append(followers, r)
		}
	}
	cl := newClusterKgo(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	var acked []ackedRecord
	produce := func(v string) error {
		r := &kgo.Record{Topic: topic, Partition: 0, Value: []byte(v)}
		err := cl.ProduceSync(testCtx(t, 30*time.Second), r).FirstErr()
		if err == nil {
			acked = append(acked, ackedRecord{r.Offset, v})
		}
		return err
	}
	for i := range 50 {
		if err := produce("a" + itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	c.Node(followers[0]).StopReplicaFetchers()
	// The leader notices the lag only while there is something to fetch.
	for i := 0; ; i++ {
		if err := produce("lag" + itoa(i)); err != nil {
			t.Fatalf("acks=all while a follower lags: %v", err)
		}
		mp, err := partitionMeta(t, c.LiveAddr(), topic, 0)
		if err == nil && len(mp.ISR) == 2 {
			break
		}
	}
	for i := range 50 {
		if err := produce("b" + itoa(i)); err != nil {
			t.Fatalf("acks=all with two in sync: %v", err)
		}
	}
	c.Node(followers[1]).Kill()
	waitISR(t, c, topic, 0, 1, 30*time.Second)

	// kgo retries NOT_ENOUGH_REPLICAS; a raw request shows the code.
	raw := newKgo(t, c.Node(mp.Leader).Addr())
	id := topicID(t, newAdmin(t, c.Node(mp.Leader).Addr()), topic)
	resp := produceRaw(t, raw, topic, id, 0, rawBatch(-1, -1, -1, time.Now().UnixMilli(), []byte("refused")))
	wantCode(t, "acks=all with the leader alone in sync", resp.ErrorCode, kerr.NotEnoughReplicas)
	checkAcked(t, c, topic, 0, acked)
}
