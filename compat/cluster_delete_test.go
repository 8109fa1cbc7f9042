package compat

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/testutil"
)

// Deleting a topic removes every replica's files: at once on the running
// brokers, and on a broker that was down at the time when it starts again.
// A topic created again under the same name there starts empty.
func TestClusterTopicDeletionReachesEveryReplica(t *testing.T) {
	c := testutil.StartCluster(t, 3, nil)
	const topic = "doomed"
	createReplicatedTopic(t, c, topic, 2, 3, nil)
	cl := newClusterKgo(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(2) {
		produceAll(t, cl, &kgo.Record{Topic: topic, Partition: p, Value: []byte("old")})
	}
	// Wait until every replica holds the records.
	for p := range int32(2) {
		waitISR(t, c, topic, p, 3, 30*time.Second)
	}
	down := c.Node(3)
	down.Kill()
	adm := kadm.NewClient(newClusterKgo(t, c))
	testutil.Eventually(t, 30*time.Second, func() error {
		resp, err := adm.DeleteTopics(testCtx(t, 10*time.Second), topic)
		if err != nil {
			return err
		}
		return resp[topic].Err
	})
	for _, n := range c.Nodes[:2] {
		for p := range 2 {
			testutil.Eventually(t, 30*time.Second, func() error {
				if _, err := os.Stat(n.PartitionDir(topic, p)); !errors.Is(err, os.ErrNotExist) {
					return errors.New(n.PartitionDir(topic, p) + " still there")
				}
				return nil
			})
		}
	}
	for p := range 2 {
		if _, err := os.Stat(down.PartitionDir(topic, p)); err != nil {
			t.Fatalf("the stopped broker's log is gone before it restarted: %v", err)
		}
	}
	down.Restart()
	for p := range 2 {
		if _, err := os.Stat(down.PartitionDir(topic, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s survived the deletion of its topic", down.PartitionDir(topic, p))
		}
	}
	// Created again: empty everywhere, the restarted broker included.
	createReplicatedTopic(t, c, topic, 2, 3, nil)
	adm2 := kadm.NewClient(newClusterKgo(t, c))
	testutil.Eventually(t, 30*time.Second, func() error {
		ends, err := adm2.ListEndOffsets(testCtx(t, 10*time.Second), topic)
		if err != nil {
			return err
		}
		if err := ends.Error(); err != nil {
			return err // the new leaders are not known everywhere yet
		}
		ends.Each(func(o kadm.ListedOffset) {
			if o.Offset != 0 {
				t.Fatalf("partition %d of the new topic ends at %d, want 0", o.Partition, o.Offset)
			}
		})
		if n := len(ends[topic]); n != 2 {
			return fmt.Errorf("%d partitions listed", n)
		}
		return nil
	})
}
