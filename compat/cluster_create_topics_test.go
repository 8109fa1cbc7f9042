package compat

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// cpuHog keeps n goroutines busy until the test ends: a loaded machine,
// where a broker's goroutines (its etcd watches among them) wait for a
// processor.
func cpuHog(t testing.TB, n int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := 0
			for ctx.Err() == nil {
				for range 1 << 16 {
					x++
				}
			}
			_ = x
		}()
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// A broker that started a moment ago counts at once even where the
// handling broker's etcd watch has not reported its registration yet (a
// loaded broker's watch lags): the handling broker reads the registered
// brokers again when its list is short of what the request needs. Broker
// 1's etcd traffic is held while broker 3 starts again and let through
// just before the CreateTopics, so the request reaches broker 1 ahead of
// the watch's news; twenty rounds, beside goroutines keeping every CPU
// busy. Without the re-read broker 1 refused INVALID_REPLICATION_FACTOR
// (Kafka's controller counts every broker it has registered).
func TestClusterCreateTopicCountsABrokerTheWatchHasNotShown(t *testing.T) {
	c := testutil.StartFaultCluster(t, 3, map[string]string{"broker.session.timeout.ms": "30000"})
	b1 := newKgo(t, c.Node(1).Addr()).SeedBrokers()[0] // requests to broker 1, not to the controller
	cpuHog(t, runtime.GOMAXPROCS(0))
	for round := range 20 {
		c.Node(3).Stop()
		testutil.Eventually(t, 30*time.Second, func() error {
			resp, err := kmsg.NewPtrMetadataRequest().RequestWith(testCtx(t, 10*time.Second), b1)
			if err != nil {
				return err
			}
			if n := len(resp.Brokers); n != 2 {
				return fmt.Errorf("broker 1 lists %d brokers, want 2", n)
			}
			return nil
		})
		began := time.Now()
		c.EtcdLink(1).Set(testutil.Blackhole)
		c.Node(3).Restart()
		c.EtcdLink(1).Set(testutil.Pass)
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 30000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "rf3-"+itoa(round), 1, 3
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(testCtx(t, 60*time.Second), b1)
		if err != nil {
			t.Fatal(err)
		}
		if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
			msg := ""
			if m := resp.Topics[0].ErrorMessage; m != nil {
				msg = *m
			}
			t.Fatalf("round %d (broker 3 restarted in %v): CreateTopics of replication factor 3: %v (%s)", round, time.Since(began), err, msg)
		}
		t.Logf("round %d: broker 3 restarted and the topic created in %v", round, time.Since(began))
	}
}
