package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// createTopic creates topic with the given partition count and replication
// factor 1, and waits until every partition has a leader that serves it.
// Metadata alone is not enough: a KRaft broker can list a leader before its
// replica manager has the partition, and a producer that meets
// NOT_LEADER_OR_FOLLOWER there waits for kgo's next metadata refresh (at least
// 5 s later), which showed up as multi-second p99 latencies. ListOffsets is
// answered by the partition itself, so all partitions answering it means
// the topic is ready. The wait is 30s and 50ms more per partition.
func createTopic(ctx context.Context, addr, topic string, partitions int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	wait := 30*time.Second + time.Duration(partitions)*50*time.Millisecond
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	resp, err := adm.CreateTopics(ctx, partitions, 1, nil, topic)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	if r, ok := resp[topic]; !ok {
		return fmt.Errorf("create topic %s: no answer for it", topic)
	} else if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
		// TOPIC_ALREADY_EXISTS: kgo retried a CreateTopics that outlived its
		// request timeout (1,000 partitions can); names are fresh per broker.
		return fmt.Errorf("create topic %s: %w (%s)", topic, r.Err, r.ErrMessage)
	}
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			if td, ok := md.Topics[topic]; ok && td.Err == nil && len(td.Partitions) == int(partitions) {
				ready := true
				for _, p := range td.Partitions {
					if p.Err != nil || p.Leader < 0 {
						ready = false
					}
				}
				if ready && endOffsetsServed(ctx, adm, topic, partitions) {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s: partitions without a leader after %v (last metadata error: %v)", topic, wait, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// endOffsetsServed reports whether every partition of topic answers
// ListOffsets without an error.
func endOffsetsServed(ctx context.Context, adm *kadm.Client, topic string, partitions int32) bool {
	offs, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return false
	}
	n := int32(0)
	ok := true
	offs.Each(func(o kadm.ListedOffset) {
		if o.Topic != topic {
			return
		}
		n++
		if o.Err != nil {
			ok = false
		}
	})
	return ok && n == partitions
}
