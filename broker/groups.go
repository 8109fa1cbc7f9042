package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/groups"
	"github.com/samsa-io/samsa/logstore"
)

// offsetsTopic is Kafka's group metadata topic.
const offsetsTopic = "__consumer_offsets"

// newCoordinator builds the group coordinator from the broker's settings.
func (b *Broker) newCoordinator() *groups.Coordinator {
	s := b.settings
	return groups.New(groups.Config{
		Log:                    offsetsLog{b},
		Partitions:             s.OffsetsTopicNumPartitions,
		Logger:                 b.log.With("component", "groups"),
		VerifyTxn:              b.verifyTxnOffsets,
		InitialRebalanceDelay:  s.GroupInitialRebalanceDelay,
		MinSessionTimeout:      s.GroupMinSessionTimeout,
		MaxSessionTimeout:      s.GroupMaxSessionTimeout,
		MaxSize:                int(s.GroupMaxSize),
		OffsetsRetention:       s.OffsetsRetention,
		RetentionCheckInterval: s.OffsetsRetentionCheck,
		CommitTimeout:          s.OffsetsCommitTimeout,
		MaxMetadataBytes:       int(s.OffsetMetadataMaxBytes),
		PartitionExists: func(topic string, partition int32) bool {
			return b.meta.partition(topic, partition) != nil
		},
		ConsumerSessionTimeout:    clamp(s.ConsumerSessionTimeout, s.ConsumerMinSessionTimeout, s.ConsumerMaxSessionTimeout),
		ConsumerHeartbeatInterval: clamp(s.ConsumerHeartbeatInterval, s.ConsumerMinHeartbeatInterval, s.ConsumerMaxHeartbeatInterval),
		ConsumerMaxSize:           int(s.ConsumerMaxSize),
		ConsumerAssignors:         s.ConsumerAssignors,
		ConsumerMigrationPolicy:   s.ConsumerMigrationPolicy,
		Topics:                    b.subscribableTopics,
		GroupSettings:             b.groupSettings,
		ShareSessionTimeout:       s.ShareSessionTimeout,
		ShareHeartbeatInterval:    s.ShareHeartbeatInterval,
		ShareMaxSize:              int(s.ShareMaxSize),
		ShareMemberLeft:           b.share.MemberLeft,
		ShareInitialize:           b.shareStartAtZero,
		StreamsMaxSize:            int(s.StreamsMaxSize),
	})
}

// syncCoordinator tells the coordinator which __consumer_offsets partitions
// this broker leads now. metadata sync calls it after every change.
func (b *Broker) syncCoordinator() {
	if b.groups == nil {
		return
	}
	b.groups.SetOwned(b.ledPartitions(offsetsTopic))
}

// ledPartitions are the partitions of an internal topic this broker
// leads now, each with its leader epoch: what a coordinator over the
// topic owns.
func (b *Broker) ledPartitions(topic string) map[int32]int32 {
	owned := make(map[int32]int32)
	if t := b.meta.topic(topic); t != nil {
		for _, p := range t.parts {
			if _, epoch, err := b.replicas.Leading(p, -1); err == nil {
				owned[p.ID] = epoch
			}
		}
	}
	return owned
}

// ensureOffsetsTopic creates __consumer_offsets on first use, with
// offsets.topic.num.partitions partitions and offsets.topic.replication.factor
// replicas (capped by the live brokers), compacted, as Kafka does.
func (b *Broker) ensureOffsetsTopic(ctx context.Context) error {
	return b.ensureInternalTopic(ctx, internalTopic{
		name:       offsetsTopic,
		partitions: b.settings.OffsetsTopicNumPartitions,
		rf:         int(b.settings.OffsetsTopicReplicationFactor),
		configs: func(int) map[string]string {
			return map[string]string{
				"cleanup.policy":   "compact",
				"compression.type": "producer",
				"segment.bytes":    fmt.Sprint(b.settings.OffsetsTopicSegmentBytes),
			}
		},
		sync: b.syncCoordinator,
	})
}

// clientHost is the client's address as Kafka's DescribeGroups shows it.
func clientHost(c net.Conn) string {
	if c == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return "/" + c.RemoteAddr().String()
	}
	return "/" + host
}

// offsetsLog is __consumer_offsets as the coordinator writes and reads it.
type offsetsLog struct{ b *Broker }

// Append writes recs as one batch to a partition this broker leads in
// leader epoch epoch and waits, as an acks=all produce does, until the
// high watermark covers it.
func (o offsetsLog) Append(ctx context.Context, partition, epoch int32, recs []groups.Record) error {
	now := time.Now()
	return o.b.appendInternal(ctx, offsetsTopic, partition, epoch, internalRecords(recs, now), now)
}

// internalRecords are the coordinator's records, as the log takes them.
func internalRecords(recs []groups.Record, now time.Time) []logstore.Record {
	lrecs := make([]logstore.Record, len(recs))
	for i, r := range recs {
		lrecs[i] = logstore.Record{Timestamp: now.UnixMilli(), Key: r.Key, Value: r.Value}
	}
	return lrecs
}

// AppendTxn writes recs as one transactional batch of the producer,
// numbered after the producer's last batch in the partition (the group
// coordinator's writer is the only one of the producer there), and waits
// until it is committed; as Append, only in leader epoch leaderEpoch.
func (o offsetsLog) AppendTxn(ctx context.Context, partition, leaderEpoch int32, pid int64, epoch int16, recs []groups.Record) error {
	b := o.b
	p := b.meta.partition(offsetsTopic, partition)
	if p == nil || p.Log == nil {
		return kerr.UnknownTopicOrPartition
	}
	seq := int32(0)
	if e, last, ok := p.Log.ProducerLastSequence(pid); ok && e == epoch && last >= 0 {
		seq = last + 1
		if last == 1<<31-1 {
			seq = 0
		}
	}
	now := time.Now()
	batch, err := logstore.EncodeBatch(logstore.BatchSpec{PartitionLeaderEpoch: -1, ProducerID: pid, ProducerEpoch: epoch,
		BaseSequence: seq, Transactional: true}, internalRecords(recs, now))
	if err != nil {
		return err
	}
	return b.appendBatch(ctx, p, leaderEpoch, batch, now)
}

// Replay reads the partition from its start to its log end (replayInternal).
func (o offsetsLog) Replay(ctx context.Context, partition int32, fn func(groups.LogRecord)) error {
	return o.b.replayInternal(ctx, offsetsTopic, partition, func(h logstore.BatchHeader, r logstore.Record) {
		switch {
		case h.IsControl():
			// A control record's key: int16 version, int16 type (0 ABORT,
			// 1 COMMIT).
			if len(r.Key) >= 4 {
				typ := int16(r.Key[2])<<8 | int16(r.Key[3])
				fn(groups.LogRecord{ProducerID: h.ProducerID, Control: true, Commit: typ == 1})
			}
		case r.Key != nil:
			pid := int64(-1)
			if h.IsTransactional() {
				pid = h.ProducerID
			}
			fn(groups.LogRecord{Key: r.Key, Value: r.Value, ProducerID: pid})
		}
	})
}

// appendInternal writes recs as one batch to a partition of an internal
// topic that this broker leads in leader epoch epoch (the one its
// coordinator loaded the partition in) and waits, as an acks=all produce
// does, until the high watermark covers it.
func (b *Broker) appendInternal(ctx context.Context, topic string, partition, epoch int32, recs []logstore.Record, now time.Time) error {
	p := b.meta.partition(topic, partition)
	if p == nil {
		return kerr.UnknownTopicOrPartition
	}
	batch, err := logstore.BuildBatch(0, logstore.CodecNone, recs, -1, -1, -1)
	if err != nil {
		return err
	}
	return b.appendBatch(ctx, p, epoch, batch, now)
}

// appendBatch appends a batch the broker built to a partition it leads in
// leader epoch epoch and waits until the high watermark covers it.
//
// A coordinator's state is what it loaded from the log in that epoch and
// wrote since: once the partition has another epoch (its leadership moved
// away, and perhaps back, and other leaders' writes may be in the log), its
// appends are refused with FENCED_LEADER_EPOCH, which it answers as
// NOT_COORDINATOR, and an append whose wait outlived the epoch is not
// taken for committed (a follower's high watermark can pass an offset the
// follower truncated).
func (b *Broker) appendBatch(ctx context.Context, p *partition, epoch int32, batch []byte, now time.Time) error {
	_, err := b.appendBatchAt(ctx, p, epoch, batch, now)
	return err
}

// appendBatchAt is appendBatch, returning the offset of the batch's last
// record.
func (b *Broker) appendBatchAt(ctx context.Context, p *partition, epoch int32, batch []byte, now time.Time) (int64, error) {
	// As a produce does: an append never lands while the partition
	// changes role (a follower truncating, say).
	res, err := b.replicas.AppendInEpoch(p, batch, now, epoch)
	if errors.Is(err, errNotLeader) {
		return 0, kerr.NotLeaderForPartition
	}
	if err != nil {
		return 0, kerr.ErrorForCode(produceErrCode(err))
	}
	err = b.replicas.AwaitHW(ctx, p, res.LastOffset+1)
	if err == nil {
		_, _, err = b.replicas.Leading(p, epoch)
	}
	switch {
	case err == nil:
		return res.LastOffset, nil
	case errors.Is(err, errNotLeader):
		return 0, kerr.NotLeaderForPartition
	case errors.Is(err, errFencedLeaderEpoch):
		return 0, kerr.FencedLeaderEpoch
	default:
		return 0, kerr.RequestTimedOut
	}
}

// replayInternal reads a partition of an internal topic from its start to
// its log end, calling fn with each record (control records too) and the
// header of its batch. A new leader loads everything it has, not only what
// its high watermark covers yet: its log is the partition's from its
// election on, and its high watermark catches up as followers fetch
// (Kafka's coordinators load to the log end too).
func (b *Broker) replayInternal(ctx context.Context, topic string, partition int32, fn func(h logstore.BatchHeader, r logstore.Record)) error {
	p := b.meta.partition(topic, partition)
	if p == nil || p.Log == nil {
		return kerr.UnknownTopicOrPartition
	}
	l := p.Log
	hw := l.EndOffset()
	off := l.StartOffset()
	for off < hw {
		if err := ctx.Err(); err != nil {
			return err
		}
		buf, err := l.ReadBytes(off, 4<<20, hw)
		if errors.Is(err, logstore.ErrOffsetOutOfRange) {
			// Retention or DeleteRecords moved the start: go on from there.
			if s := l.StartOffset(); s > off {
				off = s
				continue
			}
		}
		if err != nil {
			return err
		}
		batches, err := logstore.SplitBatches(buf)
		if err != nil {
			return err
		}
		if len(batches) == 0 {
			break
		}
		for _, raw := range batches {
			h, err := logstore.ParseBatchHeader(raw)
			if err != nil {
				return err
			}
			err = logstore.ForEachRecord(raw, func(r logstore.Record) bool {
				if r.Offset >= off {
					fn(h, r)
				}
				return true
			})
			if err != nil {
				return err
			}
			off = h.LastOffset() + 1
		}
	}
	return nil
}
