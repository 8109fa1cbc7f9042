package broker

// EndTxn v0-v5. v2: PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before). v3:
// flexible. v4: TRANSACTION_ABORTABLE. v5: transactions version 2
// (KIP-890 part 2): every end bumps the producer epoch, and the answer
// carries the producer id and epoch of the next transaction (a new
// producer id at epoch 0 once the epochs are used up); clients send it
// when the cluster finalizes transaction.version 2 (features.go).
//
// The answer goes out once PrepareCommit or PrepareAbort is written; the
// coordinator then writes the markers (txn.Coordinator.EndTxn).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/txn"
)

func (b *Broker) handleEndTxn(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	tv := txn.TV1
	if req.Version >= 5 {
		tv = txn.TV2
	}
	next, err := b.txn.EndTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, tv)
	resp.ErrorCode = txnErrCode(err, req.Version < 2)
	resp.ProducerID, resp.ProducerEpoch = next.ID, next.Epoch
	return resp, nil
}
