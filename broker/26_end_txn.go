package broker

// EndTxn v0-v4. v2: PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before). v3:
// flexible. v4: TRANSACTION_ABORTABLE. v5 (KIP-890 part 2, the epoch
// bumped at every end) is not served: samsa does not finalize
// transaction.version 2, and clients send v5 only when it is.
//
// The answer goes out once PrepareCommit or PrepareAbort is written; the
// coordinator then writes the markers (txn.Coordinator.EndTxn).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleEndTxn(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	err := b.txn.EndTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)
	resp.ErrorCode = txnErrCode(err, req.Version < 2)
	return resp, nil
}
