package broker

// TxnOffsetCommit v0-v4. v2: committed leader epochs. v3: flexible, the
// member id, generation and instance id (KIP-447). v4: TRANSACTION_ABORTABLE.
// v5 (KIP-890 part 2) is not served: samsa does not finalize
// transaction.version 2. The group coordinator holds the offsets pending
// until the transaction's marker (groups.Coordinator.TxnOffsetCommit).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleTxnOffsetCommit(ctx context.Context, r *request) (kmsg.Response, error) {
	return b.groups.TxnOffsetCommit(ctx, r.body.(*kmsg.TxnOffsetCommitRequest)), nil
}
