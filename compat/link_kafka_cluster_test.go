package compat

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/kafkaref"
	"github.com/samsa-io/samsa/internal/poll"
	"github.com/samsa-io/samsa/internal/testutil"
)

// kafkaCluster is Apache Kafka 4.4 as three KRaft nodes (internal/kafkaref,
// as the bench starts them), node ids 1..3.
type kafkaCluster struct {
	nodes []*kafkaref.Broker
	mu    sync.Mutex
	dead  map[int32]bool // guarded by mu
}

func startKafkaCluster(t *testing.T, n int, props map[string]string) *kafkaCluster {
	t.Helper()
	ctx := testCtx(t, 5*time.Minute)
	nodes, err := kafkaref.StartCluster(ctx, kafkaLibs(t, ctx), n, kafkaref.Options{Dir: t.TempDir(), HeapMB: 384, Props: props})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, b := range nodes {
			_ = b.Stop(20 * time.Second)
		}
	})
	return &kafkaCluster{nodes: nodes, dead: map[int32]bool{}}
}

func (c *kafkaCluster) Addrs() []string {
	var out []string
	for _, b := range c.nodes {
		out = append(out, b.Addr)
	}
	return out
}

func (c *kafkaCluster) IsRunning(id int32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return id >= 1 && int(id) <= len(c.nodes) && !c.dead[id]
}

func (c *kafkaCluster) LiveAddr() string {
	for i, b := range c.nodes {
		if c.IsRunning(int32(i + 1)) {
			return b.Addr
		}
	}
	return ""
}

// Kill SIGKILLs node id.
func (c *kafkaCluster) Kill(id int32) {
	c.mu.Lock()
	c.dead[id] = true
	c.mu.Unlock()
	c.nodes[id-1].Kill()
}

// The leader of a source partition, one of three Apache Kafka 4.4 nodes,
// is killed while the mirror copies it and an idempotent producer writes
// on: the link follows the new source leader, and afterwards every batch
// of the three-broker samsa mirror is the source's at the same offset.
func TestLinkKafkaClusterSourceBrokerKilled(t *testing.T) {
	t.Parallel()
	src := startKafkaCluster(t, 3, nil)
	dst := testutil.StartCluster(t, 3, map[string]string{"default.replication.factor": "3", "min.insync.replicas": "2"})
	topic := admTopic("lnkkc")
	createReplicatedTopic(t, src, topic, 2, 3, map[string]*string{"min.insync.replicas": kmsg.StringPtr("2")})
	linkCLI(t, dst.LiveAddr(), false, "create", "kc", "--source-bootstrap-servers", strings.Join(src.Addrs(), ","), "--topics", topic,
		"--config", "metadata.refresh.interval.ms=100")

	// An idempotent producer (acks=all) writes on through the kill.
	pcl := newClusterKgo(t, src, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.RecordRetries(1000))
	const total = 4000
	written := make(chan int, total)
	producing := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var wg sync.WaitGroup
		var firstErr error
		var mu sync.Mutex
		for i := range total {
			wg.Add(1)
			pcl.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprint("r", i)), Partition: int32(i % 2)}, func(_ *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				written <- i
			})
			if i%50 == 49 {
				time.Sleep(5 * time.Millisecond) // a steady stream rather than one burst
			}
		}
		wg.Wait()
		producing <- firstErr
	}()
	poll.Eventually(t, 60*time.Second, func() error {
		if ends, err := linkEnds(t, dst.LiveAddr(), topic); err != nil || ends[0] < 200 {
			return fmt.Errorf("mirror ends %v (%v)", ends, err)
		}
		return nil
	})
	mp, err := partitionMeta(t, src.LiveAddr(), topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	src.Kill(mp.Leader)
	if err := <-producing; err != nil {
		t.Fatalf("producing through the kill: %v", err)
	}
	if len(written) != total {
		t.Fatalf("%d of %d records written", len(written), total)
	}
	waitPartition(t, src, topic, 0, 60*time.Second, func(p kmsg.MetadataResponseTopicPartition) error {
		if p.Leader < 0 || p.Leader == mp.Leader {
			return fmt.Errorf("leader %d", p.Leader)
		}
		return nil
	})
	// Right after the election the new leader answers ListOffsets with
	// OFFSET_NOT_AVAILABLE until its high watermark caught up (KIP-207).
	poll.Eventually(t, 60*time.Second, func() error {
		_, err := linkEnds(t, src.LiveAddr(), topic)
		return err
	})
	linkWaitCaughtUp(t, src.LiveAddr(), dst.LiveAddr(), topic)
	linkCompare(t, src.LiveAddr(), dst.LiveAddr(), topic)
	if ends, _ := linkEnds(t, dst.LiveAddr(), topic); ends[0]+ends[1] != total {
		t.Fatalf("mirror ends %v, want %d records", ends, total)
	}
	// The status shows the last fetch's answer: right after the election
	// that can be the killed node's refusal, UNKNOWN_LEADER_EPOCH from a
	// leader that has not applied its election yet, or its high watermark
	// still behind. It clears with the next good fetch from the new leader.
	poll.Eventually(t, 60*time.Second, func() error {
		for _, p := range linkDescribe(t, dst.LiveAddr(), "kc").Partitions {
			if p.Error != "" || p.SourceLeader == mp.Leader {
				return fmt.Errorf("partition %d: source leader %d: %s", p.Partition, p.SourceLeader, p.Error)
			}
		}
		return nil
	})
}
