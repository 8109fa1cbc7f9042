package broker

// AddPartitionsToTxn v0-v5. v2: PRODUCER_FENCED (INVALID_PRODUCER_EPOCH
// before). v3: flexible. v4: batched by transaction, for brokers, with
// VerifyOnly (KIP-890 part 1: a partition leader asks whether a partition
// is in the producer's transaction before it appends a transactional
// batch). v5: TRANSACTION_ABORTABLE. A v4+ transaction without
// VerifyOnly is the implicit add of transactions version 2 (KIP-890 part
// 2): a partition leader serving a Produce v12, or a group coordinator a
// TxnOffsetCommit v5, adds the partition for the producer, as Kafka's
// AddPartitionsToTxnManager asks it.
//
// A partition of a topic that does not exist fails the request: it gets
// UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED, and
// nothing is added (Kafka's KafkaApis.handleAddPartitionsToTxnRequest).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/txn"
)

func (b *Broker) handleAddPartitionsToTxn(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if req.Version < 4 {
		topics := make([]kmsg.AddPartitionsToTxnRequestTransactionTopic, len(req.Topics))
		for i, t := range req.Topics {
			topics[i] = kmsg.AddPartitionsToTxnRequestTransactionTopic{Topic: t.Topic, Partitions: t.Partitions}
		}
		res := b.addPartitionsToTxn(ctx, req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, false, topics)
		for _, t := range res.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, p.ErrorCode
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	for _, t := range req.Transactions {
		resp.Transactions = append(resp.Transactions,
			b.addPartitionsToTxn(ctx, req.Version, t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.VerifyOnly, t.Topics))
	}
	return resp, nil
}

// addPartitionsToTxn serves one transaction of the request.
func (b *Broker) addPartitionsToTxn(ctx context.Context, version int16, id string, pid int64, epoch int16, verifyOnly bool,
	topics []kmsg.AddPartitionsToTxnRequestTransactionTopic) kmsg.AddPartitionsToTxnResponseTransaction {
	out := kmsg.NewAddPartitionsToTxnResponseTransaction()
	out.TransactionalID = id
	var parts []txn.TopicPartition
	unknown := map[txn.TopicPartition]bool{}
	for _, t := range topics {
		for _, p := range t.Partitions {
			tp := txn.TopicPartition{Topic: t.Topic, Partition: p}
			parts = append(parts, tp)
			if b.meta.partition(t.Topic, p) == nil {
				unknown[tp] = true
			}
		}
	}
	errs := map[txn.TopicPartition]error{}
	var all error
	switch {
	case len(unknown) > 0:
		for _, tp := range parts {
			errs[tp] = kerr.OperationNotAttempted
			if unknown[tp] {
				errs[tp] = kerr.UnknownTopicOrPartition
			}
		}
	case verifyOnly:
		errs, all = b.txn.VerifyPartitions(id, pid, epoch, parts)
	default:
		tv := txn.TV1
		if version >= 4 {
			tv = txn.TV2 // from a broker: an implicit add
		}
		all = b.txn.AddPartitions(ctx, id, pid, epoch, parts, tv)
	}
	byTopic := map[string]int{}
	for _, tp := range parts {
		i, ok := byTopic[tp.Topic]
		if !ok {
			i = len(out.Topics)
			byTopic[tp.Topic] = i
			rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			rt.Topic = tp.Topic
			out.Topics = append(out.Topics, rt)
		}
		err := all
		if err == nil {
			err = errs[tp]
		}
		rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
		rp.Partition, rp.ErrorCode = tp.Partition, txnErrCode(err, version < 2)
		out.Topics[i].Partitions = append(out.Topics[i].Partitions, rp)
	}
	return out
}
