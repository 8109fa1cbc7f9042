package compat

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/internal/testutil"
)

// partitionLeaderMap asks the node at addr for the leader of every
// partition of topic.
func partitionLeaderMap(t testing.TB, addr string, topic string, partitions int32) (map[int32]int32, error) {
	out := make(map[int32]int32, partitions)
	for p := range partitions {
		mp, err := partitionMeta(t, addr, topic, p)
		if err != nil {
			return nil, err
		}
		out[p] = mp.Leader
	}
	return out, nil
}

// Controlled shutdown (controlled.shutdown.enable, on by default): a broker
// draining its leadership is still serving when the controller has moved
// every partition it led to another in-sync replica, so clients reach the
// new leaders before the old one closes a connection. A partition whose
// only in-sync replica is the drainer keeps it as leader.
func TestClusterControlledShutdownMovesLeadership(t *testing.T) {
	c := testutil.StartCluster(t, 3, nil)
	const topic, partitions = "drain", 6
	createReplicatedTopic(t, c, topic, partitions, 3, map[string]*string{"min.insync.replicas": strp("2")})
	createReplicatedTopic(t, c, "drain-solo", 1, 1, nil)
	solo, err := partitionMeta(t, c.LiveAddr(), "drain-solo", 0)
	if err != nil {
		t.Fatal(err)
	}
	const id = 1
	led, err := partitionLeaderMap(t, c.LiveAddr(), topic, partitions)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range led {
		if l == id {
			n++
		}
	}
	if n == 0 {
		t.Fatalf("broker %d leads none of %v; the preferred leaders should spread", id, led)
	}

	if err := c.Node(id).DrainLeadership(testCtx(t, 60*time.Second)); err != nil {
		t.Fatalf("DrainLeadership: %v", err)
	}
	// Still serving, and leading nothing another replica can lead.
	after, err := partitionLeaderMap(t, c.LiveAddr(), topic, partitions)
	if err != nil {
		t.Fatal(err)
	}
	for p, l := range after {
		if l == id || l < 0 {
			t.Errorf("partition %d: leader %d after the drain (before %d)", p, l, led[p])
		}
	}
	if _, err := partitionMeta(t, c.Node(id).Addr(), topic, 0); err != nil {
		t.Errorf("the draining broker stopped answering: %v", err)
	}
	if solo.Leader == id {
		if mp, err := partitionMeta(t, c.LiveAddr(), "drain-solo", 0); err != nil || mp.Leader != id {
			t.Errorf("single-replica partition: leader %d, %v; want it kept by its only replica %d", mp.Leader, err, id)
		}
	}
	// acks=all still works on every partition: the drainer stays a follower
	// in the ISR until it stops.
	cl := newClusterKgo(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	for p := range int32(partitions) {
		if err := cl.ProduceSync(testCtx(t, 30*time.Second), &kgo.Record{Topic: topic, Partition: p, Value: []byte("x")}).FirstErr(); err != nil {
			t.Errorf("produce to partition %d after the drain: %v", p, err)
		}
	}

	// Restarted, it registers without the shutdown mark and is elected again.
	c.Node(id).Restart()
	for p := range int32(partitions) {
		waitISR(t, c, topic, p, 3, 60*time.Second)
	}
	store, err := controller.Open(testCtx(t, 30*time.Second), controller.Config{Endpoints: c.Etcd.Endpoints(), NodeID: 99})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	brokers, err := store.Brokers(testCtx(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range brokers {
		if b.ShuttingDown {
			t.Errorf("broker %d still registered as shutting down after its restart", b.ID)
		}
	}
	if _, err := newAdmin(t, c.LiveAddr()).ElectLeaders(testCtx(t, 30*time.Second), kadm.ElectPreferredReplica, nil); err != nil {
		t.Fatalf("preferred election: %v", err)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		now, err := partitionLeaderMap(t, c.LiveAddr(), topic, partitions)
		if err != nil {
			return err
		}
		for p, l := range led {
			if l == id && now[p] != id {
				return fmt.Errorf("partition %d: leader %d, want the preferred %d back", p, now[p], id)
			}
		}
		return nil
	})
}

// A rolling restart (each broker closed cleanly, restarted, caught up) of a
// three-broker RF3 cluster under acks=all load loses no acknowledged
// record and fails no produce; the test logs how long each partition went
// without a serving leader.
func TestClusterRollingRestartUnderLoad(t *testing.T) {
	c := testutil.StartCluster(t, 3, nil)
	const topic, partitions = "rolling", 6
	createReplicatedTopic(t, c, topic, partitions, 3, map[string]*string{"min.insync.replicas": strp("2")})
	cl := newClusterKgo(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
		kgo.RecordRetries(1000), kgo.RetryTimeout(60*time.Second))

	var (
		mu    sync.Mutex
		acked = map[int32][]ackedRecord{}
		total int
	)
	ctx, cancel := context.WithCancel(testCtx(t, 300*time.Second))
	defer cancel()
	done := make(chan error, 1)
	go func() {
		for i := 0; ctx.Err() == nil; i++ {
			p := int32(i % partitions)
			r := &kgo.Record{Topic: topic, Partition: p, Value: []byte("r" + itoa(i))}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				if ctx.Err() != nil {
					break
				}
				done <- fmt.Errorf("record %d to partition %d: %w", i, p, err)
				return
			}
			mu.Lock()
			acked[p] = append(acked[p], ackedRecord{r.Offset, string(r.Value)})
			total++
			mu.Unlock()
		}
		done <- nil
	}()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return total
	}
	waitAcks := func(n int) {
		t.Helper()
		testutil.Eventually(t, 60*time.Second, func() error {
			if got := count(); got < n {
				return fmt.Errorf("%d acks, want %d", got, n)
			}
			return nil
		})
	}

	// The monitor: for each partition, the longest stretch during which
	// Metadata named no running leader. Ports stay across restarts.
	addrs := c.Addrs()
	var (
		monMu   sync.Mutex
		worst   = map[int32]time.Duration{}
		monDone = make(chan struct{})
		down    atomic.Int32 // the node being restarted
	)
	go func() {
		defer close(monDone)
		since := map[int32]time.Time{}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			ask := addrs[0]
			if down.Load() == 1 {
				ask = addrs[1]
			}
			leaders, err := partitionLeaderMap(t, ask, topic, partitions)
			if err != nil {
				continue
			}
			now := time.Now()
			for p, l := range leaders {
				if l >= 0 && l != down.Load() {
					if s, ok := since[p]; ok {
						monMu.Lock()
						worst[p] = max(worst[p], now.Sub(s))
						monMu.Unlock()
						delete(since, p)
					}
				} else if _, ok := since[p]; !ok {
					since[p] = now
				}
			}
		}
	}()

	waitAcks(100)
	for id := int32(1); id <= 3; id++ {
		before := count()
		down.Store(id)
		c.Node(id).Restart()
		down.Store(0)
		for p := range int32(partitions) {
			waitISR(t, c, topic, p, 3, 60*time.Second)
		}
		waitAcks(before + 100)
	}
	cancel()
	<-monDone
	if err := <-done; err != nil {
		t.Fatalf("produce failed during the rolling restart: %v", err)
	}
	monMu.Lock()
	t.Logf("rolling restart: %d records acknowledged; longest leaderless window per partition: %v", count(), worst)
	monMu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	for p, recs := range acked {
		checkAcked(t, c, topic, p, recs)
	}
}

// A broker killed (its port refuses connections at once) is fenced by its
// peers long before its lease expires: with a 60 s broker.session.timeout.ms
// its partitions have new leaders, and acks=all writes resume, within 30 s.
func TestClusterKilledBrokerFencedBeforeLease(t *testing.T) {
	c := testutil.StartCluster(t, 3, map[string]string{"broker.session.timeout.ms": "60000"})
	const topic = "fenced"
	createReplicatedTopic(t, c, topic, 1, 3, map[string]*string{"min.insync.replicas": strp("2")})
	leader := waitISR(t, c, topic, 0, 3, 30*time.Second).Leader
	cl := newClusterKgo(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
		kgo.RecordRetries(1000), kgo.RetryTimeout(60*time.Second))
	var acked []ackedRecord
	produce := func(tag string) {
		t.Helper()
		r := &kgo.Record{Topic: topic, Value: []byte(tag)}
		if err := cl.ProduceSync(testCtx(t, 60*time.Second), r).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", tag, err)
		}
		acked = append(acked, ackedRecord{r.Offset, tag})
	}
	for i := range 20 {
		produce("before" + itoa(i))
	}
	killed := time.Now()
	c.Node(leader).Kill()
	next := waitLeader(t, c, topic, 0, leader, 30*time.Second)
	elected := time.Since(killed)
	produce("after")
	t.Logf("broker %d killed: partition led by %d after %v, acks=all answered after %v (lease 60 s)",
		leader, next.Leader, elected.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))
	checkAcked(t, c, topic, 0, acked)

	// Back, it registers anew and rejoins the ISR.
	c.Node(leader).Restart()
	waitISR(t, c, topic, 0, 3, 60*time.Second)
	checkAcked(t, c, topic, 0, acked)
}

// A paused broker (SIGSTOP) still has the kernel accept connections on its
// port: its peers never fence it, however long it sleeps; only its lease
// can.
func TestClusterProcessesPausedBrokerIsNotFencedByPeers(t *testing.T) {
	c := startProcCluster(t, 3, "broker.session.timeout.ms=60000")
	const topic = "paused-peer"
	createReplicatedTopic(t, c, topic, 1, 3, nil)
	store, err := controller.Open(testCtx(t, 30*time.Second), controller.Config{Endpoints: c.etcd, NodeID: 99})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	epochOf := func(id int32) (int64, error) {
		bs, err := store.Brokers(testCtx(t, 10*time.Second))
		if err != nil {
			return 0, err
		}
		for _, b := range bs {
			if b.ID == id {
				return b.Epoch, nil
			}
		}
		return 0, errors.New("not registered")
	}
	const id = 3
	before, err := epochOf(id)
	if err != nil {
		t.Fatal(err)
	}
	c.signal(id, syscall.SIGSTOP)
	// Observe for 5 s: 20 probe rounds at the default 250 ms.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if e, err := epochOf(id); err != nil || e != before {
			t.Fatalf("paused broker %d: registration epoch %d, %v; want %d kept", id, e, err, before)
		}
		time.Sleep(250 * time.Millisecond)
	}
	c.signal(id, syscall.SIGCONT)
	if e, err := epochOf(id); err != nil || e != before {
		t.Fatalf("resumed broker %d: registration epoch %d, %v; want %d kept", id, e, err, before)
	}
}

// Real processes with default settings (broker.session.timeout.ms 9 s): a
// leader killed with SIGKILL under acks=all load loses nothing, and its
// partition takes writes again well within the lease.
func TestClusterProcessesSIGKILLDefaultSettings(t *testing.T) {
	c := startProcCluster(t, 3, "broker.session.timeout.ms=9000")
	failoverUnderLoad(t, c, "proc-default", c.kill, c.start)
}
