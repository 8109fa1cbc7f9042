package compat

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/testutil"
)

// brokerGauge reads one unlabelled gauge of a broker's metrics.
func brokerGauge(t testing.TB, n *testutil.Node, name string) float64 {
	t.Helper()
	fams, err := n.Broker.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("%s exports no gauge %s", n, name)
	return 0
}

// Followers fetch in KIP-227 sessions, as Kafka's do: with three brokers
// and a topic of replication factor 3 (written with acks=all, which needs
// both followers), each leader holds one session per follower, covering
// every partition it leads. No consumer runs, so every session is a
// follower's.
func TestClusterFollowersFetchInSessions(t *testing.T) {
	c := testutil.StartCluster(t, 3, nil)
	const topic, partitions = "follower-sessions", 12
	createReplicatedTopic(t, c, topic, partitions, 3, nil)
	cl := newClusterKgo(t, c, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(partitions) {
		for i := range 5 {
			r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("v%d", i))}
			if err := cl.ProduceSync(testCtx(t, 30*time.Second), r).FirstErr(); err != nil {
				t.Fatalf("produce to %d: %v", p, err)
			}
		}
	}
	for _, n := range c.Nodes {
		testutil.Eventually(t, 30*time.Second, func() error {
			leaders := brokerGauge(t, n, "kafka_server_replicamanager_leadercount")
			sessions := brokerGauge(t, n, "kafka_server_fetchsessioncache_numincrementalfetchsessions")
			cached := brokerGauge(t, n, "kafka_server_fetchsessioncache_numincrementalfetchpartitionscached")
			if leaders == 0 || sessions != 2 || cached != 2*leaders {
				return fmt.Errorf("%s leads %v partitions, holds %v fetch sessions with %v partitions; want 2 sessions with %v",
					n, leaders, sessions, cached, 2*leaders)
			}
			return nil
		})
	}
}
