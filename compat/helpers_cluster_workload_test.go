package compat

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/testutil"
	"github.com/samsa-io/samsa/internal/workload"
)

// faultSettings are the cluster settings for the fault tests.
var faultSettings = map[string]string{
	"broker.session.timeout.ms": "3000",
	"replica.lag.time.max.ms":   "5000",
	"min.insync.replicas":       "2",
}

// startWorkload starts cfg's clients (internal/workload) on topic, which
// has parts partitions, and stops them when the test ends. Each producer's
// batches span every partition, and franz-go's reports of lost records are
// violations.
func startWorkload(t testing.TB, c cluster, topic string, parts int32, cfg workload.Config) *workload.Workload {
	t.Helper()
	cfg.Topic, cfg.Partitions, cfg.ClientLoss = topic, parts, true
	cfg.NewClient = func(opts ...kgo.Opt) (*kgo.Client, error) {
		return kgo.NewClient(append(kgoOpts(c.Addrs()...), opts...)...)
	}
	w, err := workload.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

// checkWorkload stops w and fails the test on every violation: an
// acknowledged record not read back at its offset, an offset holding two
// values, a value written twice, a reader rewound or told of lost records.
func checkWorkload(t testing.TB, w *workload.Workload) {
	t.Helper()
	vs, err := w.Check(testCtx(t, 90*time.Second))
	for _, v := range vs {
		t.Error(v)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// waitHealthy waits until every node is registered and every partition of
// topic has a leader and all rf replicas in sync, and returns how long
// that took.
func waitHealthy(t testing.TB, c *testutil.FaultCluster, topic string, parts int32, rf int, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	c.WaitRegistered(timeout)
	for p := range parts {
		waitISR(t, c, topic, p, rf, max(timeout-time.Since(start), 5*time.Second))
	}
	return time.Since(start)
}

// partitionLeaders maps each partition of topic to its leader, as a
// running node reports it.
func partitionLeaders(t testing.TB, c cluster, topic string) (map[int32]int32, error) {
	t.Helper()
	adm := kadm.NewClient(newClusterKgo(t, c))
	defer adm.Close()
	md, err := adm.Metadata(testCtx(t, 10*time.Second), topic)
	if err != nil {
		return nil, err
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		return nil, fmt.Errorf("topic %s: %v", topic, td.Err)
	}
	out := map[int32]int32{}
	for p, pd := range td.Partitions {
		out[p] = pd.Leader
	}
	return out, nil
}

// controllerID is the controller a running node reports.
func controllerID(t testing.TB, c cluster) (int32, error) {
	t.Helper()
	adm := kadm.NewClient(newClusterKgo(t, c))
	defer adm.Close()
	md, err := adm.BrokerMetadata(testCtx(t, 10*time.Second))
	if err != nil {
		return -1, err
	}
	return md.Controller, nil
}
