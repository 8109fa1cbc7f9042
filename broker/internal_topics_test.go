package broker_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/samsa-io/samsa/broker"
	"github.com/samsa-io/samsa/internal/testutil"
)

// TestInternalTopicCreatedByTwoBrokersAtOnce has both brokers of a
// cluster create each internal topic at the same moment: both find it
// missing, both write it to etcd, and one of them loses. Every creator
// takes the topic the other broker made as made. It waits for nothing
// but the two brokers (about a second in all), so make check runs it.
func TestInternalTopicCreatedByTwoBrokersAtOnce(t *testing.T) {
	c := testutil.StartClusterInCheck(t, 2, nil)
	for name, create := range broker.InternalTopicCreators {
		t.Run(name, func(t *testing.T) {
			// Each broker stops just before its write to etcd until
			// both are there.
			arrived := make(chan struct{}, 2)
			release := make(chan struct{})
			var once sync.Once
			hook := func(topic string) {
				if topic == name {
					arrived <- struct{}{}
					<-release
				}
			}
			for _, n := range c.Nodes {
				n.SetCreateTopicHook(hook)
				defer n.SetCreateTopicHook(nil)
			}
			defer once.Do(func() { close(release) })
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			errs := make(chan error, len(c.Nodes))
			for _, n := range c.Nodes {
				go func() { errs <- create(n.Broker, ctx) }()
			}
			for range c.Nodes {
				select {
				case <-arrived:
				case err := <-errs:
					t.Fatalf("a broker finished before the other reached etcd: %v", err)
				case <-ctx.Done():
					t.Fatal("the brokers did not both reach etcd")
				}
			}
			once.Do(func() { close(release) })
			for range c.Nodes {
				if err := <-errs; err != nil {
					t.Errorf("creating %s: %v", name, err)
				}
			}
			for _, n := range c.Nodes {
				if !n.HasTopic(name) {
					t.Errorf("broker %d does not have %s", n.NodeID(), name)
				}
			}
		})
	}
}
