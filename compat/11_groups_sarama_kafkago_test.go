package compat

// Consumer groups through sarama's ConsumerGroup and kafka-go's Reader with
// a GroupID: read with commits, then resume after a broker restart without
// reading a committed record again.

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"

	"github.com/samsa-io/samsa/internal/testutil"
)

// saramaHandler marks every record it reads and records what it read.
type saramaHandler struct {
	mu   sync.Mutex
	seen map[tpo]int
}

func (h *saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		h.mu.Lock()
		h.seen[tpo{m.Partition, m.Offset}]++
		h.mu.Unlock()
		s.MarkMessage(m, "")
	}
	return nil
}

func (h *saramaHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.seen)
}

// runSarama consumes with a sarama ConsumerGroup until want distinct records
// were read, then closes it (committing what it marked).
func runSarama(t *testing.T, addr, group, topic string, version sarama.KafkaVersion, want int) map[tpo]int {
	t.Helper()
	cfg := admSaramaConfig(version, sarama.CompressionNone)
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	cg, err := sarama.NewConsumerGroup([]string{addr}, group, cfg)
	if err != nil {
		t.Fatalf("sarama NewConsumerGroup: %v", err)
	}
	h := &saramaHandler{seen: map[tpo]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, h); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	go func() {
		for err := range cg.Errors() {
			t.Logf("sarama group error: %v", err)
		}
	}()
	testutil.Eventually(t, 60*time.Second, func() error {
		if n := h.count(); n < want {
			return fmt.Errorf("sarama read %d records, want %d", n, want)
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("sarama Consume: %v", err)
	}
	if err := cg.Close(); err != nil {
		t.Errorf("sarama close: %v", err)
	}
	return h.seen
}

func TestGroupSarama(t *testing.T) {
	for _, v := range []sarama.KafkaVersion{sarama.DefaultVersion, sarama.V4_0_0_0, sarama.V1_0_0_0} {
		t.Run(v.String(), func(t *testing.T) {
			n := grpBroker(t)
			adm := newAdmin(t, n.Addr())
			topic, group := "sarama-grp", "sarama-group"
			createTopic(t, adm, topic, 3, nil)
			prod := newKgo(t, n.Addr())
			produceKeyed(t, prod, topic, 0, 150)
			first := runSarama(t, n.Addr(), group, topic, v, 150)

			n.Restart()
			produceKeyed(t, newKgo(t, n.Addr()), topic, 150, 90)
			second := runSarama(t, n.Addr(), group, topic, v, 90)
			for k := range second {
				if first[k] > 0 {
					t.Errorf("record %d@%d read again after the restart", k.offset, k.partition)
				}
			}
			if len(second) != 90 {
				t.Errorf("after the restart read %d records, want the 90 new ones", len(second))
			}
		})
	}
}

// runKafkaGo reads want messages with a kafka-go Reader in a group,
// committing each (CommitInterval 0 commits synchronously).
func runKafkaGo(t *testing.T, addr, group, topic string, want int) map[tpo]int {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:           []string{addr},
		GroupID:           group,
		Topic:             topic,
		MinBytes:          1,
		MaxBytes:          1 << 20,
		MaxWait:           200 * time.Millisecond,
		StartOffset:       kafka.FirstOffset,
		SessionTimeout:    6 * time.Second,
		RebalanceTimeout:  6 * time.Second,
		HeartbeatInterval: 500 * time.Millisecond,
	})
	defer r.Close()
	seen := map[tpo]int{}
	ctx := testCtx(t, 60*time.Second)
	for len(seen) < want {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("kafka-go ReadMessage after %d of %d: %v", len(seen), want, err)
		}
		seen[tpo{int32(m.Partition), m.Offset}]++
	}
	return seen
}

func TestGroupKafkaGo(t *testing.T) {
	n := grpBroker(t)
	adm := newAdmin(t, n.Addr())
	topic, group := "kafkago-grp", "kafkago-group"
	createTopic(t, adm, topic, 3, nil)
	produceKeyed(t, newKgo(t, n.Addr()), topic, 0, 120)
	first := runKafkaGo(t, n.Addr(), group, topic, 120)

	n.Restart()
	produceKeyed(t, newKgo(t, n.Addr()), topic, 120, 60)
	second := runKafkaGo(t, n.Addr(), group, topic, 60)
	for k := range second {
		if first[k] > 0 {
			t.Errorf("record %d@%d read again after the restart", k.offset, k.partition)
		}
	}
}
