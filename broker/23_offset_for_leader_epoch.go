package broker

// OffsetForLeaderEpoch v2-v4 (librdkafka sends v2; Java uses it when v3+ is
// offered). v2: current leader epoch. v3: replica id. v4: flexible.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleOffsetForLeaderEpoch(_ context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			p := b.meta.partition(rt.Topic, rp.Partition)
			if p == nil {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else if l, _, err := b.replicas.Leading(p, rp.CurrentLeaderEpoch); err != nil {
				sp.ErrorCode = errCode(err)
			} else {
				// From the epoch cache and the log end, for consumers too,
				// as Kafka's leader answers: a new leader's high watermark
				// trails the old leader's for a moment, and capping at it
				// told consumers that read below the old one that they had
				// lost records, and rewound them.
				sp.LeaderEpoch, sp.EndOffset = l.EndOffsetForEpoch(rp.LeaderEpoch)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
