package compat

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/testutil"
)

// A broker that restarts does not lead from the state its previous
// incarnation led by: the controller elects again with a new leader epoch
// (Kafka's bounced broker), here the broker itself, the only replica. A
// restarted leader that took its old state for its own accepted appends
// before it learnt it was replaced (seen under faults), and a consumer
// could not tell the two incarnations apart. What was written reads back,
// and writing goes on in the new epoch.
func TestRestartedLeaderLeadsInANewEpoch(t *testing.T) {
	n := testutil.StartBroker(t, nil)
	const topic = "bounce"
	createTopic(t, newAdmin(t, n.Addr()), topic, 1, nil)
	cl := newKgo(t, n.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceAll(t, cl, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("before")})
	before, err := partitionMeta(t, n.Addr(), topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	n.Restart()
	testutil.Eventually(t, 30*time.Second, func() error {
		mp, err := partitionMeta(t, n.Addr(), topic, 0)
		if err != nil {
			return err
		}
		if mp.Leader != 1 || mp.LeaderEpoch != before.LeaderEpoch+1 {
			return fmt.Errorf("leader %d epoch %d after a restart; want 1 at epoch %d", mp.Leader, mp.LeaderEpoch, before.LeaderEpoch+1)
		}
		return nil
	})
	cl2 := newKgo(t, n.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceAll(t, cl2, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("after")})
	got := consumeExact(t, n.Addr(), topic, map[int32]int64{0: 0}, 2, 30*time.Second)
	if string(got[0].Value) != "before" || string(got[1].Value) != "after" || got[1].LeaderEpoch != before.LeaderEpoch+1 {
		t.Fatalf("read back %q (epoch %d), %q (epoch %d)", got[0].Value, got[0].LeaderEpoch, got[1].Value, got[1].LeaderEpoch)
	}
}
