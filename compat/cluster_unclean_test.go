package compat

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// createAssigned creates a one-partition topic with the given replicas
// (the first leads) and configs.
func createAssigned(t *testing.T, c cluster, topic string, replicas []int32, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, replicas
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 20000
	resp, err := req.RequestWith(testCtx(t, 30*time.Second), newClusterKgo(t, c))
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	waitISR(t, c, topic, 0, len(replicas), 30*time.Second)
}

// With the ISR down to a leader that then dies, a partition stays offline
// (LEADER_NOT_AVAILABLE) rather than elect a replica that is not in sync,
// unless its topic enables unclean.leader.election.enable; the clean one
// comes back with its old leader.
func TestClusterUncleanElectionOnlyWhereEnabled(t *testing.T) {
	c := testutil.StartCluster(t, 3, map[string]string{"replica.lag.time.max.ms": "1000"})
	createAssigned(t, c, "clean", []int32{1, 2, 3}, nil)
	createAssigned(t, c, "unclean", []int32{1, 2, 3}, map[string]string{"unclean.leader.election.enable": "true"})
	cl := newClusterKgo(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))

	// Broker 2 stops replicating and falls out of both ISRs; broker 3 dies.
	c.Node(2).StopReplicaFetchers()
	for _, topic := range []string{"clean", "unclean"} {
		testutil.Eventually(t, 60*time.Second, func() error {
			produceAll(t, cl, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("x")})
			mp, err := partitionMeta(t, c.LiveAddr(), topic, 0)
			if err != nil {
				return err
			}
			if len(mp.ISR) != 2 {
				return fmt.Errorf("%s: isr %v", topic, mp.ISR)
			}
			return nil
		})
	}
	c.Node(3).Kill()
	waitISR(t, c, "clean", 0, 1, 30*time.Second)
	waitISR(t, c, "unclean", 0, 1, 30*time.Second)
	c.Node(1).Kill()

	mp := waitLeader(t, c, "unclean", 0, 1, 60*time.Second)
	if mp.Leader != 2 {
		t.Fatalf("unclean topic led by %d, want 2", mp.Leader)
	}
	testutil.Eventually(t, 60*time.Second, func() error {
		mp, err := partitionMeta(t, c.LiveAddr(), "clean", 0)
		if err != nil {
			return err
		}
		if mp.Leader != -1 || mp.ErrorCode != kerr.LeaderNotAvailable.Code {
			return fmt.Errorf("clean topic: leader %d, error %d", mp.Leader, mp.ErrorCode)
		}
		return nil
	})
	// Its last in-sync replica returns and leads it again.
	c.Node(1).Restart()
	mp = waitLeader(t, c, "clean", 0, -1, 60*time.Second)
	if mp.Leader != 1 {
		t.Fatalf("clean topic led by %d after its last ISR member returned, want 1", mp.Leader)
	}
}
