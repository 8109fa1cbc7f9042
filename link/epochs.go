package link

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Divergence by the source's leader epochs. A mirror partition knows the
// source's leader epoch of the last batch it holds (batches carry it; the
// mirror stamps its own in its copy). When the source partition gets a
// new leader, and whenever its high watermark is below the mirror's end,
// the mirror asks the source's leader where its log ends for that epoch
// (OffsetForLeaderEpoch, as a consumer validates its position after a
// leader change, KIP-320): an end below the mirror's means the source
// lost records the mirror holds (an unclean election), and the partition
// stops with ErrSourceWentBack rather than copy a log that diverged from
// its own, even one that has grown past the mirror's end since. An end at
// or above it is a new leader whose high watermark has not caught up yet:
// the mirror waits.

// checkEpoch asks the source's leader where its log ends for epoch, the
// leader epoch of the mirror's last batch: an ErrSourceWentBack when below
// end, nil when not (or when the source no longer knows the epoch).
func (m *Manager) checkEpoch(ctx context.Context, cl *kgo.Client, a Assignment, l sourceLeader, epoch int32, end int64) error {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = a.Topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = a.Partition, l.epoch, epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := cl.Broker(int(l.id)).Request(ctx, req)
	if err != nil {
		return fmt.Errorf("source OffsetForLeaderEpoch to broker %d: %w", l.id, err)
	}
	for _, t := range kresp.(*kmsg.OffsetForLeaderEpochResponse).Topics {
		for _, p := range t.Partitions {
			if t.Topic != a.Topic || p.Partition != a.Partition {
				continue
			}
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("source OffsetForLeaderEpoch: %w", err)
			}
			if p.LeaderEpoch < 0 || p.EndOffset < 0 || p.EndOffset >= end {
				return nil
			}
			return fmt.Errorf("%w: the source's log for leader epoch %d (of the mirror's last batch) ends at %d (its epoch %d), below the mirror's end %d",
				ErrSourceWentBack, epoch, p.EndOffset, p.LeaderEpoch, end)
		}
	}
	return fmt.Errorf("source OffsetForLeaderEpoch: no answer for %s-%d", a.Topic, a.Partition)
}

// sameLastBatch compares the source's batch holding end-1 (among b, a
// fetch from there) with the mirror's, when a partition starts here: the
// same batch (offsets and CRC; a mirror batch differs only in its leader
// epoch) gives the source's leader epoch of it; another batch of the same
// size is a source that diverged from what the mirror holds
// (ErrSourceWentBack) while no partition here was copying it. -1 when it
// cannot tell (no such batch in b, or the mirror's was compacted).
func (m *Manager) sameLastBatch(a Assignment, b []byte, end int64) (int32, error) {
	src := batchAt(b, end-1)
	if src == nil {
		return -1, nil
	}
	mine, err := m.cfg.Sink.Batch(a.Topic, a.Partition, a.Epoch, end-1)
	if err != nil || len(mine) < 61 || len(mine) != len(src) {
		return -1, err
	}
	if !bytes.Equal(src[:12], mine[:12]) || !bytes.Equal(src[16:], mine[16:]) {
		return -1, fmt.Errorf("%w: the source's batch at offset %d is not the one the mirror copied (the source lost it, and wrote another there)", ErrSourceWentBack, end-1)
	}
	return int32(binary.BigEndian.Uint32(src[12:])), nil
}

// batchAt is the whole batch of b that holds offset (nil for none).
func batchAt(b []byte, offset int64) []byte {
	for n := 0; len(b)-n >= 61; {
		size := int(binary.BigEndian.Uint32(b[n+8:]))
		if size < 49 || len(b)-n < 12+size {
			break
		}
		base := int64(binary.BigEndian.Uint64(b[n:]))
		last := base + int64(int32(binary.BigEndian.Uint32(b[n+23:])))
		if base <= offset && offset <= last {
			return b[n : n+12+size]
		}
		n += 12 + size
	}
	return nil
}

// lastBatchEpoch is the partition leader epoch of the last whole batch
// of b (-1 for none).
func lastBatchEpoch(b []byte) int32 {
	e := int32(-1)
	for n := 0; len(b)-n >= 61; {
		size := int(binary.BigEndian.Uint32(b[n+8:]))
		if size < 49 || len(b)-n < 12+size {
			break
		}
		e = int32(binary.BigEndian.Uint32(b[n+12:]))
		n += 12 + size
	}
	return e
}
