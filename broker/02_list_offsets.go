package broker

// ListOffsets v1-v11. v2: isolation level. v4: current leader epoch and
// the leader epoch of the answer. v6: flexible. v7: max timestamp (-3,
// KIP-734). v8: earliest local (-4, KIP-405). v9: latest tiered (-5,
// KIP-1005). v10: timeout. v11: earliest pending upload (-6, KIP-1023). A
// special timestamp older than its version, or one no version knows, is
// UNSUPPORTED_VERSION for its partition, as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/security"
)

const (
	tsLatest         = -1
	tsEarliest       = -2
	tsMax            = -3
	tsEarliestLocal  = -4
	tsLatestTiered   = -5
	tsEarliestUpload = -6
)

func (b *Broker) handleListOffsets(_ context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			err := b.topicRefusal(r, security.OpDescribe, rt.Topic) // authz.go
			if err == nil {
				err = b.listOffset(rt.Topic, req.IsolationLevel, rp, &sp)
			}
			if rp.Timestamp < 0 && req.Version < minListOffsetsVersion(rp.Timestamp) {
				err = kerr.UnsupportedVersion
			}
			sp.ErrorCode = errCode(err)
			if err != nil {
				sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// minListOffsetsVersion is the first version that knows a special
// timestamp; one none knows gets a version no request has.
func minListOffsetsVersion(ts int64) int16 {
	switch ts {
	case tsLatest, tsEarliest:
		return 0
	case tsMax:
		return 7
	case tsEarliestLocal:
		return 8
	case tsLatestTiered:
		return 9
	case tsEarliestUpload:
		return 11
	}
	return 1 << 14
}

func (b *Broker) listOffset(topicName string, isolation int8, rp kmsg.ListOffsetsRequestTopicPartition, sp *kmsg.ListOffsetsResponseTopicPartition) error {
	p := b.meta.partition(topicName, rp.Partition)
	if p == nil {
		return kerr.UnknownTopicOrPartition
	}
	l, epoch, err := b.replicas.Leading(p, rp.CurrentLeaderEpoch)
	if err != nil {
		return err
	}
	// The last offset a reader at the request's isolation level sees:
	// the high watermark, or at read_committed the last stable offset.
	hw := p.HighWatermark()
	if isolation == 1 {
		hw = l.LastStableOffset(hw)
	}
	sp.LeaderEpoch = epoch
	switch rp.Timestamp {
	case tsLatest:
		sp.Offset = hw
	case tsEarliest:
		sp.Offset = l.StartOffset()
	case tsMax:
		off, ts, err := l.MaxTimestamp()
		if err != nil {
			return err
		}
		if off < 0 || off >= hw {
			sp.Offset, sp.Timestamp, sp.LeaderEpoch = -1, -1, -1 // no record: no epoch either, as Kafka answers
			return nil
		}
		sp.Offset, sp.Timestamp = off, ts
	case tsEarliestLocal, tsLatestTiered, tsEarliestUpload:
		off, ep, err := b.tieredOffset(rp.Timestamp, b.meta.topic(topicName), p, l)
		if err != nil {
			return err
		}
		// Kafka's Partition.fetchOffsetForTimestamp bounds every answer
		// but earliest and earliest local by the last fetchable offset:
		// with nothing waiting for an upload, the earliest pending upload
		// (the log end) is no offset.
		if rp.Timestamp != tsEarliestLocal && off >= hw {
			off, ep = -1, -1
		}
		sp.Offset, sp.Timestamp, sp.LeaderEpoch = off, -1, ep
		return nil
	default:
		if rp.Timestamp < 0 {
			return kerr.InvalidRequest
		}
		off, ts, found, err := b.remoteOffsetForTimestamp(b.meta.topic(topicName), p, l, rp.Timestamp)
		if err == nil && !found {
			off, ts, found, err = l.OffsetForTimestamp(rp.Timestamp)
		}
		if err != nil {
			return err
		}
		if !found || off >= hw {
			sp.Offset, sp.Timestamp, sp.LeaderEpoch = -1, -1, -1
			return nil
		}
		sp.Offset, sp.Timestamp = off, ts
	}
	// The epoch of the answer is the one the offset was written under
	// (KIP-320), the current one for the log end.
	if sp.Offset >= 0 && sp.Offset < hw {
		sp.LeaderEpoch = l.EpochForOffset(sp.Offset)
	}
	return nil
}
