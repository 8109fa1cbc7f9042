package broker

// AddOffsetsToTxn v0-v4. v2: PRODUCER_FENCED (INVALID_PRODUCER_EPOCH
// before). v3: flexible. v4: TRANSACTION_ABORTABLE. The group's
// __consumer_offsets partition joins the producer's transaction, so that
// its TxnOffsetCommit is settled by the transaction's marker.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/txn"
)

func (b *Broker) handleAddOffsetsToTxn(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	if err := b.ensureOffsetsTopic(ctx); err != nil {
		resp.ErrorCode = errCode(err)
		return resp, nil
	}
	tp := txn.TopicPartition{Topic: offsetsTopic, Partition: b.groups.PartitionFor(req.Group)}
	err := b.txn.AddPartitions(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, []txn.TopicPartition{tp}, txn.TV1)
	resp.ErrorCode = txnErrCode(err, req.Version < 2)
	return resp, nil
}
