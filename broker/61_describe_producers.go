package broker

// DescribeProducers v0 (flexible; KIP-664): the active producers of each
// partition this broker holds a replica of, leader or follower, as Kafka's
// Partition.activeProducerState answers (kafka-transactions.sh
// describe-producers): id, epoch, last sequence, last timestamp,
// coordinator epoch of the last marker, start offset of the open
// transaction (-1 for none). An unknown topic or partition is
// UNKNOWN_TOPIC_OR_PARTITION, a partition without a replica here
// NOT_LEADER_OR_FOLLOWER.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleDescribeProducers(_ context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		t := b.meta.topic(rt.Topic)
		for _, part := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = part
			err := b.describeProducers(t, part, &sp)
			if err != nil {
				sp.ErrorCode, sp.ErrorMessage = errCode(err), errMsg(err)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (b *Broker) describeProducers(t *topic, part int32, sp *kmsg.DescribeProducersResponseTopicPartition) error {
	if t == nil || part < 0 || int(part) >= len(t.parts) {
		return kerr.UnknownTopicOrPartition
	}
	p := t.parts[part]
	if p.Log == nil || p.Offline() {
		return kerr.NotLeaderForPartition
	}
	ps, err := p.Log.Producers()
	if err != nil {
		return err
	}
	sp.ActiveProducers = make([]kmsg.DescribeProducersResponseTopicPartitionActiveProducer, 0, len(ps))
	for _, pi := range ps {
		ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
		ap.ProducerID, ap.ProducerEpoch, ap.LastSequence = pi.ProducerID, int32(pi.ProducerEpoch), pi.LastSequence
		ap.LastTimestamp, ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = pi.LastTimestamp, pi.CoordinatorEpoch, pi.TxnStartOffset
		sp.ActiveProducers = append(sp.ActiveProducers, ap)
	}
	return nil
}
