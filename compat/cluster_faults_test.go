package compat

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/samsa-io/samsa/internal/testutil"
	"github.com/samsa-io/samsa/internal/workload"
)

// Targeted reproductions of the faults that lost acknowledged writes, on
// the settings (RF3, min.insync.replicas 2, 3 s sessions, 5 s
// replica lag). Each drives idempotent acks=all producers and readers
// (internal/workload) through the fault and checks every ack.

// startFaultTopic starts a fault cluster of three with a topic of parts
// partitions, RF3, in sync.
func startFaultTopic(t *testing.T, topic string, parts int32, extra map[string]string) *testutil.FaultCluster {
	t.Helper()
	o := maps.Clone(faultSettings)
	maps.Copy(o, extra)
	c := testutil.StartFaultCluster(t, 3, o)
	createReplicatedTopic(t, c, topic, parts, 3, map[string]*string{"min.insync.replicas": strp("2")})
	return c
}

// waitLeaderMoved waits until the nodes other than old agree that a node
// other than old leads partition p, and returns it.
func waitLeaderMoved(t testing.TB, c *testutil.FaultCluster, topic string, p int32, old int32, timeout time.Duration) int32 {
	t.Helper()
	var leader int32
	testutil.Eventually(t, timeout, func() error {
		leader = -1
		for _, n := range c.Running() {
			if n.NodeID() == old {
				continue
			}
			mp, err := partitionMeta(t, n.Addr(), topic, p)
			if err != nil {
				return err
			}
			if mp.Leader < 0 || mp.Leader == old || (leader >= 0 && mp.Leader != leader) {
				return fmt.Errorf("%s: %s-%d led by %d", n, topic, p, mp.Leader)
			}
			leader = mp.Leader
		}
		return nil
	})
	return leader
}

// Bug 1: after etcd restarted, the leader was cut off from its peers and
// from etcd; a follower with a divergent tail was counted into the ISR and
// elected, and acknowledged writes were lost.
func TestClusterEtcdRestartThenLeaderCutOff(t *testing.T) {
	const topic, parts = "etcd-restart-cut", 3
	c := startFaultTopic(t, topic, parts, nil)
	w := startWorkload(t, c, topic, parts, workload.Config{Producers: 2, AssignReaders: 1})
	w.WaitAcks(t, 300, 30*time.Second)
	for round := range 2 {
		c.RestartEtcd()
		w.WaitAcks(t, 100, 60*time.Second)
		leaders, err := partitionLeaders(t, c, topic)
		if err != nil {
			t.Fatal(err)
		}
		old := leaders[0]
		c.CutPeers(old, testutil.Blackhole)
		c.CutEtcd(old, testutil.Blackhole)
		now := waitLeaderMoved(t, c, topic, 0, old, 60*time.Second)
		w.WaitAcks(t, 100, 60*time.Second)
		c.Heal(old)
		took := waitHealthy(t, c, topic, parts, 3, 90*time.Second)
		t.Logf("round %d: leader %d cut off, %d took over; healthy %v after the heal", round, old, now, took.Round(time.Millisecond))
	}
	checkWorkload(t, w)
	t.Log(w.Summary())
}

// Bug 3: after an etcd restart, a broker cut off from etcd past its lease
// never registered again. Every broker must end registered, with every
// ISR full.
func TestClusterEtcdRestartThenCutPastLeaseRegistersAgain(t *testing.T) {
	const topic, parts = "etcd-restart-lease", 3
	c := startFaultTopic(t, topic, parts, nil)
	w := startWorkload(t, c, topic, parts, workload.Config{Producers: 1})
	w.WaitAcks(t, 100, 30*time.Second)
	ctrl, err := controllerID(t, c)
	if err != nil {
		t.Fatal(err)
	}
	other := ctrl%3 + 1
	for _, id := range []int32{ctrl, other} {
		c.RestartEtcd()
		c.CutEtcd(id, testutil.Blackhole)
		// Past the lease: etcd forgets the registration.
		testutil.Eventually(t, 60*time.Second, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			ids, err := c.Registered(ctx)
			if err != nil {
				return err
			}
			if slices.Contains(ids, id) {
				return fmt.Errorf("node %d still registered: %v", id, ids)
			}
			return nil
		})
		c.Heal(id)
		took := waitHealthy(t, c, topic, parts, 3, 90*time.Second)
		t.Logf("node %d (controller %d): registered again, ISRs full %v after the heal", id, ctrl, took.Round(time.Millisecond))
	}
	checkWorkload(t, w)
	t.Log(w.Summary())
}

// electPreferred runs preferred elections for every partition of topic
// until each is led by its first replica.
func electPreferred(t testing.TB, c *testutil.FaultCluster, topic string, parts int32, timeout time.Duration) {
	t.Helper()
	adm := kadm.NewClient(newClusterKgo(t, c))
	set := kadm.TopicsSet{topic: {}}
	for p := range parts {
		set[topic][p] = struct{}{}
	}
	testutil.Eventually(t, timeout, func() error {
		res, err := adm.ElectLeaders(testCtx(t, 10*time.Second), kadm.ElectPreferredReplica, set)
		if err != nil {
			return err
		}
		md, err := adm.Metadata(testCtx(t, 10*time.Second), topic)
		if err != nil {
			return err
		}
		for p, pd := range md.Topics[topic].Partitions {
			if len(pd.Replicas) == 0 || pd.Leader != pd.Replicas[0] {
				return fmt.Errorf("%s-%d led by %d, replicas %v, isr %v; election: %v", topic, p, pd.Leader, pd.Replicas, pd.ISR, res[topic][p].Err)
			}
		}
		return nil
	})
}

// Bug 2: a preferred-leader election under a reading consumer rewound the
// consumer (the new leader capped OffsetForLeaderEpoch at its high
// watermark). No reader may be rewound within an assignment or told of
// lost records.
func TestClusterPreferredElectionDoesNotRewindConsumer(t *testing.T) {
	const topic, parts = "preferred-rewind", 3
	c := startFaultTopic(t, topic, parts, map[string]string{"auto.leader.rebalance.enable": "false"})
	w := startWorkload(t, c, topic, parts, workload.Config{Producers: 2, GroupReaders: 2, AssignReaders: 2})
	w.WaitAcks(t, 300, 30*time.Second)
	for round := range 3 {
		// Move leadership off the node, bring it back in sync, then give
		// it its partitions back while the readers read.
		id := int32(round%3 + 1)
		c.Node(id).Kill()
		for p := range int32(parts) {
			waitLeaderMoved(t, c, topic, p, id, 60*time.Second)
		}
		w.WaitAcks(t, 100, 60*time.Second)
		c.Node(id).Restart()
		waitHealthy(t, c, topic, parts, 3, 90*time.Second)
		w.WaitAcks(t, 100, 60*time.Second)
		electPreferred(t, c, topic, parts, 60*time.Second)
		w.WaitAcks(t, 200, 60*time.Second)
		t.Logf("round %d: node %d killed and back, preferred leaders elected", round, id)
	}
	checkWorkload(t, w)
	t.Log(w.Summary())
}

// A leader cut off from both its followers but not from etcd: Kafka keeps
// it leading an ISR of one, refusing acks=all until the network heals.
// samsa's followers report it unreachable (controller/unreachable.go) and
// the controller moves the leadership to one of them, so acks=all writes
// resume while the cut lasts, with nothing acknowledged lost.
func TestClusterLeaderCutFromPeersMovesLeadership(t *testing.T) {
	const topic, parts = "leader-cut-peers", 3
	c := startFaultTopic(t, topic, parts, nil)
	w := startWorkload(t, c, topic, parts, workload.Config{Producers: 2, AssignReaders: 1})
	w.WaitAcks(t, 300, 30*time.Second)
	leaders, err := partitionLeaders(t, c, topic)
	if err != nil {
		t.Fatal(err)
	}
	old := leaders[0]
	cutAt := time.Now()
	c.CutPeers(old, testutil.Blackhole)
	// Well within the cut's life, before the old leader could shrink its
	// ISR to itself for good (replica.lag.time.max.ms 5 s): the move
	// needs the followers in the ISR.
	now := waitLeaderMoved(t, c, topic, 0, old, 60*time.Second)
	moved := time.Since(cutAt)
	w.WaitAcks(t, 200, 60*time.Second)
	resumed := time.Since(cutAt)
	c.Heal(old)
	took := waitHealthy(t, c, topic, parts, 3, 90*time.Second)
	t.Logf("leader %d cut from its peers: %d leads after %v, 200 acks more after %v; ISRs full %v after the heal",
		old, now, moved.Round(time.Millisecond), resumed.Round(time.Millisecond), took.Round(time.Millisecond))
	checkWorkload(t, w)
	t.Log(w.Summary())
}
