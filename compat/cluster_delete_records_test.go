package compat

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/testutil"
)

// DeleteRecords moves the log start of every replica, not only the
// leader's: once the leader is gone, the replica that leads next does not
// serve again what was deleted (Kafka's followers take the leader's log
// start offset from each fetch).
func TestClusterDeleteRecordsSurvivesLeaderChange(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, 3, nil)
	const topic = "delete-records-failover"
	createReplicatedTopic(t, c, topic, 1, 3, map[string]*string{"min.insync.replicas": strp("2")})
	mp := waitISR(t, c, topic, 0, 3, 30*time.Second)
	cl := newClusterKgo(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	produce := func(n int) {
		var recs []*kgo.Record
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("v" + itoa(i))})
		}
		if err := cl.ProduceSync(testCtx(t, 30*time.Second), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(100)
	adm := kadm.NewClient(cl)
	offs := kadm.Offsets{}
	offs.AddOffset(topic, 0, 60, -1)
	res, err := adm.DeleteRecords(testCtx(t, 30*time.Second), offs)
	if err != nil || res.Error() != nil {
		t.Fatalf("DeleteRecords: %v %v", err, res.Error())
	}
	// acks=all after the deletion: every follower in the ISR has had a
	// fetch answer carrying the new log start.
	produce(10)
	c.Node(mp.Leader).Kill()
	got := waitLeader(t, c, topic, 0, mp.Leader, 60*time.Second)
	testutil.Eventually(t, 30*time.Second, func() error {
		starts, err := kadm.NewClient(newClusterKgo(t, c)).ListStartOffsets(testCtx(t, 10*time.Second), topic)
		if err != nil {
			return err
		}
		o, _ := starts.Lookup(topic, 0)
		if o.Err != nil {
			return o.Err
		}
		if o.Offset != 60 {
			t.Fatalf("log start %d on the new leader %d after DeleteRecords to 60 on the old one", o.Offset, got.Leader)
		}
		return nil
	})
}
