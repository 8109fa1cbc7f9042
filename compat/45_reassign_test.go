package compat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// admReassign asks for the reassignments of req and fails the test unless
// every one is accepted.
func admReassign(t testing.TB, adm *kadm.Client, req kadm.AlterPartitionAssignmentsReq) {
	t.Helper()
	res, err := adm.AlterPartitionAssignments(testCtx(t, 30*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	for _, ps := range res {
		for p, r := range ps {
			if r.Err != nil {
				t.Fatalf("reassigning partition %d: %v %s", p, r.Err, r.ErrMessage)
			}
		}
	}
}

// waitReassigned waits until no reassignment of topic is in progress and
// every partition's replicas and ISR are want[p] (as sets; the replicas in
// want's order).
func waitReassigned(t testing.TB, c cluster, adm *kadm.Client, topic string, want map[int32][]int32) {
	t.Helper()
	testutil.Eventually(t, 60*time.Second, func() error {
		set := kadm.TopicsSet{topic: {}}
		for p := range want {
			set[topic][p] = struct{}{}
		}
		ls, err := adm.ListPartitionReassignments(testCtx(t, 10*time.Second), set)
		if err != nil {
			return err
		}
		if n := len(ls[topic]); n > 0 {
			return fmt.Errorf("%d reassignments in progress: %v", n, ls[topic])
		}
		for p, rs := range want {
			mp, err := partitionMeta(t, c.LiveAddr(), topic, p)
			if err != nil {
				return err
			}
			isr := slices.Sorted(slices.Values(mp.ISR))
			if !slices.Equal(mp.Replicas, rs) || !slices.Equal(isr, slices.Sorted(slices.Values(rs))) || !slices.Contains(rs, mp.Leader) {
				return fmt.Errorf("%s-%d: replicas %v isr %v leader %d, want replicas %v", topic, p, mp.Replicas, mp.ISR, mp.Leader, rs)
			}
		}
		return nil
	})
}

// Partition reassignment through kadm under acks=all load: a follower's
// replica moves to a fourth broker and another partition moves off its
// leader; the new replicas catch up, the moves complete, the removed
// brokers delete their copies, and nothing acknowledged is lost. What
// Kafka refuses gets Kafka's error codes.
func TestClusterPartitionReassignment(t *testing.T) {
	c := testutil.StartCluster(t, 4, nil)
	const topic = "moving"
	createReplicatedTopic(t, c, topic, 2, 3, map[string]*string{"min.insync.replicas": strp("2")})
	adm := kadm.NewClient(newClusterKgo(t, c))
	cl := newClusterKgo(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
		kgo.RecordRetries(1000), kgo.RetryTimeout(60*time.Second))

	var mu sync.Mutex
	acked := map[int32][]ackedRecord{}
	ctx, cancel := context.WithCancel(testCtx(t, 120*time.Second))
	defer cancel()
	done := make(chan error, 1)
	go func() {
		for i := 0; ctx.Err() == nil; i++ {
			p := int32(i % 2)
			r := &kgo.Record{Topic: topic, Partition: p, Value: []byte("m" + itoa(i))}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				if ctx.Err() != nil {
					break
				}
				done <- err
				return
			}
			mu.Lock()
			acked[p] = append(acked[p], ackedRecord{r.Offset, string(r.Value)})
			mu.Unlock()
		}
		done <- nil
	}()

	missing := func(rs []int32) int32 {
		for id := int32(1); id <= 4; id++ {
			if !slices.Contains(rs, id) {
				return id
			}
		}
		return -1
	}
	m0, err := partitionMeta(t, c.LiveAddr(), topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	m1, err := partitionMeta(t, c.LiveAddr(), topic, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Partition 0: a follower's replica moves to the broker without one.
	var gone0 int32
	target0 := slices.Clone(m0.Replicas)
	for i, id := range target0 {
		if id != m0.Leader {
			gone0, target0[i] = id, missing(m0.Replicas)
			break
		}
	}
	// Partition 1: its leader's replica moves away.
	gone1 := m1.Leader
	target1 := slices.DeleteFunc(slices.Clone(m1.Replicas), func(id int32) bool { return id == gone1 })
	target1 = append(target1, missing(m1.Replicas))

	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign(topic, 0, target0)
	req.Assign(topic, 1, target1)
	admReassign(t, adm, req)
	waitReassigned(t, c, adm, topic, map[int32][]int32{0: target0, 1: target1})
	testutil.Eventually(t, 30*time.Second, func() error {
		for p, id := range map[int32]int32{0: gone0, 1: gone1} {
			if _, err := os.Stat(c.Node(id).PartitionDir(topic, int(p))); !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("broker %d still has %s-%d: %v", id, topic, p, err)
			}
		}
		return nil
	})
	// Writes go on after the move.
	mu.Lock()
	before := len(acked[0]) + len(acked[1])
	mu.Unlock()
	testutil.Eventually(t, 30*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(acked[0])+len(acked[1]) < before+50 {
			return errors.New("fewer than 50 acks after the move")
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("produce during the reassignment: %v", err)
	}
	mu.Lock()
	for p, recs := range acked {
		checkAcked(t, c, topic, p, recs)
	}
	mu.Unlock()

	// What Kafka refuses.
	bad := kadm.AlterPartitionAssignmentsReq{}
	bad.CancelAssign(topic, 0)
	bad.Assign(topic, 1, []int32{1, 1})
	bad.Assign("no-such-topic", 0, []int32{1})
	res, err := adm.AlterPartitionAssignments(testCtx(t, 30*time.Second), bad)
	if err != nil {
		t.Fatal(err)
	}
	for tp, want := range map[string]*kerr.Error{topic + "/0": kerr.NoReassignmentInProgress, topic + "/1": kerr.InvalidReplicaAssignment, "no-such-topic/0": kerr.UnknownTopicOrPartition} {
		name, p, _ := strings.Cut(tp, "/")
		r := res[name][int32(p[0]-'0')]
		if !errors.Is(r.Err, want) {
			t.Errorf("%s: %v, want %v", tp, r.Err, want)
		}
	}
	unknown := kadm.AlterPartitionAssignmentsReq{}
	unknown.Assign(topic, 0, []int32{1, 2, 9})
	if res, err = adm.AlterPartitionAssignments(testCtx(t, 30*time.Second), unknown); err != nil || !errors.Is(res[topic][0].Err, kerr.InvalidReplicaAssignment) {
		t.Errorf("a target naming broker 9: %v %v, want INVALID_REPLICA_ASSIGNMENT", res, err)
	}
}

// A reassignment that cannot complete (the added broker is dead, its
// registration kept by a long lease) is listed in progress, with its
// adding and removing replicas; cancelled, the partition has its original
// replicas and ISR back.
func TestClusterReassignmentCancel(t *testing.T) {
	c := testutil.StartCluster(t, 4, map[string]string{"broker.session.timeout.ms": "60000", "samsa.broker.liveness.probe.ms": "0"})
	const topic = "stuck"
	createReplicatedTopic(t, c, topic, 1, 2, nil)
	adm := kadm.NewClient(newClusterKgo(t, c))
	mp, err := partitionMeta(t, c.LiveAddr(), topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	original := mp.Replicas
	var dead int32
	for id := int32(1); id <= 4; id++ {
		if !slices.Contains(original, id) {
			dead = id
		}
	}
	c.Node(dead).Kill()
	target := []int32{original[0], dead}
	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign(topic, 0, target)
	if res, err := adm.AlterPartitionAssignments(testCtx(t, 30*time.Second), req); err != nil || res[topic][0].Err != nil {
		t.Fatalf("reassign: %v %v", res, err)
	}
	ls, err := adm.ListPartitionReassignments(testCtx(t, 10*time.Second), kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	r := ls[topic][0]
	if !slices.Equal(r.AddingReplicas, []int32{dead}) || !slices.Equal(r.RemovingReplicas, []int32{original[1]}) ||
		!slices.Equal(r.Replicas, []int32{original[0], dead, original[1]}) {
		t.Errorf("in progress: %+v, want replicas [%d %d %d], adding [%d], removing [%d]", r, original[0], dead, original[1], dead, original[1])
	}
	cancelReq := kadm.AlterPartitionAssignmentsReq{}
	cancelReq.CancelAssign(topic, 0)
	if res, err := adm.AlterPartitionAssignments(testCtx(t, 30*time.Second), cancelReq); err != nil || res[topic][0].Err != nil {
		t.Fatalf("cancel: %v %v", res, err)
	}
	waitReassigned(t, c, adm, topic, map[int32][]int32{0: original})
}

// kafka-reassign-partitions.sh from Kafka 4.4: --generate proposes a plan
// for a topic over the brokers given, --execute --throttle starts it under
// both sides' replication throttles, --verify reports it complete once the
// replicas moved and takes the throttles away.
func TestKafkaReassignPartitionsTool(t *testing.T) {
	c := testutil.StartCluster(t, 3, nil)
	const topic = "tool-moving"
	createReplicatedTopic(t, c, topic, 3, 2, nil)
	adm := kadm.NewClient(newClusterKgo(t, c))
	cl := newClusterKgo(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	var acked []ackedRecord
	for i := range 30 {
		r := &kgo.Record{Topic: topic, Partition: 0, Value: []byte("t" + itoa(i))}
		if err := cl.ProduceSync(testCtx(t, 30*time.Second), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, ackedRecord{r.Offset, string(r.Value)})
	}

	ctx := testCtx(t, 4*time.Minute)
	dir := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		return runKafkaTool(t, ctx, dir, "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
			append([]string{"--bootstrap-server", c.LiveAddr()}, args...)...)
	}
	topicsFile := filepath.Join(dir, "topics.json")
	if err := os.WriteFile(topicsFile, []byte(`{"version":1,"topics":[{"topic":"`+topic+`"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := run("--generate", "--topics-to-move-json-file", topicsFile, "--broker-list", "1,2")
	i := strings.Index(out, "Proposed partition reassignment configuration")
	if i < 0 {
		t.Fatalf("--generate printed no proposal:\n%s", out)
	}
	proposal := strings.TrimSpace(out[i+len("Proposed partition reassignment configuration"):])
	var plan struct {
		Partitions []struct {
			Topic     string  `json:"topic"`
			Partition int32   `json:"partition"`
			Replicas  []int32 `json:"replicas"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(proposal), &plan); err != nil || len(plan.Partitions) != 3 {
		t.Fatalf("--generate proposal %q: %v", proposal, err)
	}
	want := map[int32][]int32{}
	for _, p := range plan.Partitions {
		for _, id := range p.Replicas {
			if id == 3 {
				t.Fatalf("the proposal for brokers 1,2 places %s-%d on broker 3: %v", p.Topic, p.Partition, p.Replicas)
			}
		}
		want[p.Partition] = p.Replicas
	}
	planFile := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(planFile, []byte(proposal), 0o644); err != nil {
		t.Fatal(err)
	}
	// --throttle sets leader.replication.throttled.rate and
	// follower.replication.throttled.rate on the brokers and the topic's
	// throttled replicas; --verify takes them away once the move is done.
	run("--execute", "--reassignment-json-file", planFile, "--throttle", "50000000")
	waitReassigned(t, c, adm, topic, want)
	out = run("--verify", "--reassignment-json-file", planFile)
	for p := range want {
		if !strings.Contains(out, fmt.Sprintf("Reassignment of partition %s-%d is completed", topic, p)) {
			t.Errorf("--verify does not report %s-%d complete:\n%s", topic, p, out)
		}
	}
	for id := int32(1); id <= 3; id++ {
		for _, name := range []string{"leader.replication.throttled.rate", "follower.replication.throttled.rate"} {
			if cfg, _ := brokerConfig(t, adm, itoa(int(id)), name); cfg.Source == kmsg.ConfigSourceDynamicBrokerConfig {
				t.Errorf("broker %d: %s still set after --verify", id, name)
			}
		}
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		for p := range want {
			if _, err := os.Stat(c.Node(3).PartitionDir(topic, int(p))); !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("broker 3 still has %s-%d: %v", topic, p, err)
			}
		}
		return nil
	})
	checkAcked(t, c, topic, 0, acked)
}

// The leader side of the replication throttle: with
// leader.replication.throttled.replicas "*" and a leader's dynamic
// leader.replication.throttled.rate of 200 kB/s, a replica added by a
// reassignment copies no faster than that (plus a second's burst and one
// batch); with the throttle taken away the move completes.
func TestClusterReassignmentThrottled(t *testing.T) { reassignThrottled(t, "leader") }

// The follower side, as Kafka's replica fetcher applies it: with
// follower.replication.throttled.replicas naming the added replica
// (0:<broker>, as kafka-reassign-partitions.sh --throttle sets it) and
// that broker's dynamic follower.replication.throttled.rate of 200 kB/s,
// and no leader-side throttle, the added replica copies no faster than
// that; with the throttle taken away the move completes.
func TestClusterReassignmentFollowerThrottled(t *testing.T) { reassignThrottled(t, "follower") }

// reassignThrottled adds a replica to a 3 MB partition by a reassignment
// under the side's ("leader" or "follower") replication throttle and
// bounds what it copied in a few seconds.
func reassignThrottled(t *testing.T, side string) {
	c := testutil.StartCluster(t, 3, nil)
	topic := side + "-throttled"
	createReplicatedTopic(t, c, topic, 1, 1, nil)
	mp, err := partitionMeta(t, c.LiveAddr(), topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	leader := mp.Leader
	var added int32
	for id := int32(1); id <= 3; id++ {
		if id != leader {
			added = id
			break
		}
	}
	cl := newClusterKgo(t, c, kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	value := make([]byte, 10_000)
	const records = 300 // 3 MB
	for i := range records {
		value[0] = byte(i)
		produceAll(t, cl, &kgo.Record{Topic: topic, Value: slices.Clone(value)})
	}
	adm := kadm.NewClient(newClusterKgo(t, c))
	replicas, throttledBroker := "*", leader
	if side == "follower" {
		replicas, throttledBroker = "0:"+itoa(int(added)), added
	}
	setTopic := func(op kadm.IncrementalOp, v string) {
		t.Helper()
		rs, err := adm.AlterTopicConfigs(testCtx(t, 10*time.Second), []kadm.AlterConfig{{Op: op, Name: side + ".replication.throttled.replicas", Value: strp(v)}}, topic)
		if err == nil {
			err = rs[0].Err
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	setTopic(kadm.SetConfig, replicas)
	const rate = 200_000
	rs, err := adm.AlterBrokerConfigs(testCtx(t, 10*time.Second), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: side + ".replication.throttled.rate", Value: strp(itoa(rate))}}, throttledBroker)
	if err == nil {
		err = rs[0].Err
	}
	if err != nil {
		t.Fatal(err)
	}
	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign(topic, 0, []int32{leader, added})
	started := time.Now()
	if res, err := adm.AlterPartitionAssignments(testCtx(t, 30*time.Second), req); err != nil || res[topic][0].Err != nil {
		t.Fatalf("reassign: %v %v", res, err)
	}
	// An observation window, not a wait for a condition: whatever the
	// machine's load, the copy can only be slower than the bound.
	// The time is taken once the sizes are read: the copy goes on until then.
	var copied int64
	time.Sleep(3 * time.Second)
	all, err := adm.DescribeAllLogDirs(testCtx(t, 10*time.Second), kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(started)
	for _, d := range all[added] {
		if p, ok := d.Topics[topic][0]; ok {
			copied = p.Size
		}
	}
	bound := int64(rate*(elapsed.Seconds()+1)) + 2*int64(len(value))
	t.Logf("%s side throttled at %d B/s: %d bytes copied in %v (bound %d)", side, rate, copied, elapsed.Round(time.Millisecond), bound)
	if copied <= 0 || copied > bound {
		t.Errorf("the added replica holds %d bytes after %v at %d B/s; want more than none and at most %d", copied, elapsed, rate, bound)
	}
	setTopic(kadm.DeleteConfig, "")
	waitReassigned(t, c, adm, topic, map[int32][]int32{0: {leader, added}})
}
