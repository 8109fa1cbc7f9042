package broker

// TxnOffsetCommit v0-v5. v2: committed leader epochs. v3: flexible, the
// member id, generation and instance id (KIP-447). v4: TRANSACTION_ABORTABLE.
// v5: transactions version 2 (KIP-890 part 2): no AddOffsetsToTxn comes
// first, and the group coordinator has the transaction coordinator add its
// __consumer_offsets partition. The group coordinator holds the offsets
// pending until the transaction's marker (groups.Coordinator.TxnOffsetCommit).

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleTxnOffsetCommit(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.TxnOffsetCommitRequest)
	resp, givenUp := b.groups.TxnOffsetCommitOn(ctx, req, r.connID)
	if givenUp {
		// The producer has sent a TxnOffsetCommit since on a newer
		// connection (groups.Coordinator.TxnOffsetCommitOn).
		return nil, fmt.Errorf("%w: not applying a TxnOffsetCommit from a connection producer %d (%s) has left for a newer one",
			errCloseConn, req.ProducerID, req.TransactionalID)
	}
	return resp, nil
}
