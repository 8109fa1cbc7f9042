package broker

// DeleteRecords v0-v2. v2: flexible. An offset of -1 means the high
// watermark; past it is OFFSET_OUT_OF_RANGE.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/logstore"
)

func (b *Broker) handleDeleteRecords(_ context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LowWatermark = -1
			low, err := b.deleteRecords(rt.Topic, rp.Partition, rp.Offset)
			sp.ErrorCode = errCode(err)
			if err == nil {
				sp.LowWatermark = low
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (b *Broker) deleteRecords(topicName string, part int32, offset int64) (int64, error) {
	t := b.meta.topic(topicName)
	if t == nil || part < 0 || int(part) >= len(t.parts) {
		return -1, kerr.UnknownTopicOrPartition
	}
	if !t.deletes {
		// Kafka: records of a compact-only topic are not deleted by offset.
		return -1, kerr.PolicyViolation
	}
	p := t.parts[part]
	l, _, err := b.replicas.Leading(p, -1)
	if err != nil {
		return -1, err
	}
	hw := p.HighWatermark()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return -1, logstore.ErrOffsetOutOfRange
	}
	low, err := l.DeleteRecordsBefore(offset)
	if err != nil {
		return -1, err
	}
	p.Signal()
	return low, nil
}
