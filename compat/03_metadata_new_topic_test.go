package compat

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// A topic is in a broker's metadata with its partitions or not at all:
// Kafka 4.4 publishes a topic and its partitions in one metadata image, so
// a broker that does not know them yet answers UNKNOWN_TOPIC_OR_PARTITION
// and one that does lists every partition (LEADER_NOT_AVAILABLE while it
// has no leader); never the topic with no partitions, which kafka-go's
// waitForTopic and other clients take for a topic that exists. Topics are
// created one after another through broker 1 while brokers 2 and 3 are
// asked, as fast as they answer, for the topic being created, for every
// topic, and through DescribeTopicPartitions.
func TestMetadataNewTopicHasItsPartitions(t *testing.T) {
	c := testutil.StartCluster(t, 3, nil)
	const topics = 40
	name := func(i int) string { return fmt.Sprintf("fresh-%02d", i) }
	parts := func(i int) int32 { return int32(1 + i%8) }

	var (
		creating atomic.Int32 // the topic being created
		mu       sync.Mutex
		bad      []string // answers listing a topic without all its partitions
		seen     atomic.Int64
	)
	report := func(s string) {
		mu.Lock()
		if len(bad) < 20 {
			bad = append(bad, s)
		}
		mu.Unlock()
	}
	check := func(who, topic string, code int16, n int) {
		seen.Add(1)
		var i int
		if _, err := fmt.Sscanf(topic, "fresh-%02d", &i); err != nil {
			return
		}
		if code == 0 && n != int(parts(i)) {
			report(fmt.Sprintf("%s: %s with %d partitions, created with %d", who, topic, n, parts(i)))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, id := range []int32{2, 3} {
		cl := newKgo(t, c.Node(id).Addr()).SeedBrokers()[0]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				cur := name(int(creating.Load()))
				one := kmsg.NewPtrMetadataRequest()
				rt := kmsg.NewMetadataRequestTopic()
				rt.Topic = kmsg.StringPtr(cur)
				one.Topics = append(one.Topics, rt)
				if resp, err := one.RequestWith(ctx, cl); err == nil {
					for _, mt := range resp.Topics {
						check(fmt.Sprintf("broker %d Metadata(%s)", id, cur), *mt.Topic, mt.ErrorCode, len(mt.Partitions))
					}
				}
				all := kmsg.NewPtrMetadataRequest()
				if resp, err := all.RequestWith(ctx, cl); err == nil {
					for _, mt := range resp.Topics {
						check(fmt.Sprintf("broker %d Metadata(all)", id), *mt.Topic, mt.ErrorCode, len(mt.Partitions))
					}
				}
				dtp := kmsg.NewPtrDescribeTopicPartitionsRequest()
				dt := kmsg.NewDescribeTopicPartitionsRequestTopic()
				dt.Topic = cur
				dtp.Topics = append(dtp.Topics, dt)
				dtp.ResponsePartitionLimit = 2000
				if resp, err := dtp.RequestWith(ctx, cl); err == nil {
					for _, mt := range resp.Topics {
						check(fmt.Sprintf("broker %d DescribeTopicPartitions(%s)", id, cur), *mt.Topic, mt.ErrorCode, len(mt.Partitions))
					}
				}
			}
		}()
	}
	admin := newKgo(t, c.Node(1).Addr()).SeedBrokers()[0]
	for i := range topics {
		creating.Store(int32(i))
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 30000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name(i), parts(i), int16(1+i%3)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(testCtx(t, 60*time.Second), admin)
		if err == nil {
			err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
		}
		if err != nil {
			t.Fatalf("create %s: %v", name(i), err)
		}
	}
	cancel()
	wg.Wait()
	t.Logf("%d topic answers checked", seen.Load())
	for _, s := range bad {
		t.Error(s)
	}
}
