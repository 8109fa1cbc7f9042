package compat

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/testutil"
)

// KIP-101, scenario 1: a follower restarts with a stale high watermark (it
// had not yet learnt that its last records were committed), rejoins, and
// then becomes the only replica left to lead. It must not have cut its log
// to that high watermark: every acknowledged record is still there, and
// read once a second replica is back in the ISR.
func TestClusterKIP101StaleHighWatermarkFollowerLeads(t *testing.T) {
	c := testutil.StartCluster(t, 3, nil)
	const topic = "kip101"
	createReplicatedTopic(t, c, topic, 1, 3, map[string]*string{"min.insync.replicas": strp("2")})
	mp := waitISR(t, c, topic, 0, 3, 30*time.Second)
	leader := mp.Leader
	var b, other int32 = -1, -1
	for _, r := range mp.Replicas {
		switch {
		case r == leader:
		case b < 0:
			b = r
		default:
			other = r
		}
	}
	cl := newClusterKgo(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	var acked []ackedRecord
	for i := range 100 {
		r := &kgo.Record{Topic: topic, Partition: 0, Value: []byte("k" + itoa(i))}
		if err := cl.ProduceSync(testCtx(t, 30*time.Second), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, ackedRecord{r.Offset, string(r.Value)})
	}
	// Right after the last ack the follower's high watermark lags; it
	// restarts without it.
	c.Node(b).Kill()
	c.Node(b).Restart()
	waitISR(t, c, topic, 0, 3, 60*time.Second)

	// The leader and the other follower die: b is the one ISR member left.
	c.Node(leader).Kill()
	c.Node(other).Kill()
	got := waitLeader(t, c, topic, 0, leader, 60*time.Second)
	if got.Leader != b {
		t.Fatalf("leader %d, want %d", got.Leader, b)
	}
	// Alone in the ISR, below min.insync.replicas 2, b's high watermark
	// stays where it was (Kafka 3.7 and later). The other follower
	// returns and follows b's log (it would cut what b had cut), and the
	// high watermark reaches every acknowledged record.
	c.Node(other).Restart()
	waitISR(t, c, topic, 0, 2, 60*time.Second)
	checkAcked(t, c, topic, 0, acked)
}

// ElectLeaders: after the preferred leader of a partition returns and is
// in sync again, a preferred election gives it the leadership back.
func TestClusterPreferredLeaderElection(t *testing.T) {
	c := testutil.StartCluster(t, 3, nil)
	const topic = "preferred"
	createReplicatedTopic(t, c, topic, 1, 3, nil)
	mp := waitISR(t, c, topic, 0, 3, 30*time.Second)
	preferred := mp.Replicas[0]
	if mp.Leader != preferred {
		t.Fatalf("leader %d is not the preferred replica %d", mp.Leader, preferred)
	}
	c.Node(preferred).Kill()
	waitLeader(t, c, topic, 0, preferred, 60*time.Second)
	// Every running broker shows the dead replica offline and out of the
	// ISR.
	for _, n := range c.Running() {
		testutil.Eventually(t, 30*time.Second, func() error {
			mp, err := partitionMeta(t, n.Addr(), topic, 0)
			if err != nil {
				return err
			}
			if !slices.Equal(mp.OfflineReplicas, []int32{preferred}) || slices.Contains(mp.ISR, preferred) || len(mp.Replicas) != 3 {
				return fmt.Errorf("%s: replicas %v, isr %v, offline %v", n, mp.Replicas, mp.ISR, mp.OfflineReplicas)
			}
			return nil
		})
	}
	c.Node(preferred).Restart()
	waitISR(t, c, topic, 0, 3, 60*time.Second)

	adm := kadm.NewClient(newClusterKgo(t, c))
	testutil.Eventually(t, 30*time.Second, func() error {
		res, err := adm.ElectLeaders(testCtx(t, 10*time.Second), kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}}})
		if err != nil {
			return err
		}
		if r := res[topic][0]; r.Err != nil && !slices.Contains([]string{"ELECTION_NOT_NEEDED"}, errName(r.Err)) {
			return r.Err
		}
		mp, err := partitionMeta(t, c.LiveAddr(), topic, 0)
		if err != nil {
			return err
		}
		if mp.Leader != preferred {
			return errLeader(mp.Leader)
		}
		return nil
	})
}
