package broker

// InitProducerID v0-v5. v2: flexible. v3: producer id and epoch for an
// epoch bump (KIP-360). v4: PRODUCER_FENCED. v5: same.
//
// Idempotent producers (no transactional id) get a fresh producer id, epoch
// 0, unique across the cluster: ids come from blocks reserved in etcd.
// Transactional producers get theirs from the transaction coordinator of
// their id (txn.Coordinator.InitProducerID): the next epoch, fencing the
// previous producer. Before v4 PRODUCER_FENCED is INVALID_PRODUCER_EPOCH.

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/txn"
)

// producerIDBlock is how many producer ids one etcd reservation hands out.
const producerIDBlock = 1000

// producerIDs hands out producer ids from the current block.
type producerIDs struct {
	mu   sync.Mutex
	next int64 // guarded by mu
	end  int64 // guarded by mu; exclusive
}

func (b *Broker) handleInitProducerID(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		var expected *txn.ProducerIDEpoch
		if req.Version >= 3 && req.ProducerID >= 0 {
			expected = &txn.ProducerIDEpoch{ID: req.ProducerID, Epoch: req.ProducerEpoch}
		}
		pe, err := b.txn.InitProducerID(ctx, *req.TransactionalID, req.TransactionTimeoutMillis, expected)
		resp.ErrorCode = txnErrCode(err, req.Version < 4)
		if err == nil {
			resp.ProducerID, resp.ProducerEpoch = pe.ID, pe.Epoch
		}
		return resp, nil
	}
	if err := b.idempotentRefusal(r); err != nil { // authz.go
		resp.ErrorCode = errCode(err)
		return resp, nil
	}
	id, err := b.nextProducerID(ctx)
	if err != nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}

func (b *Broker) nextProducerID(ctx context.Context) (int64, error) {
	b.pids.mu.Lock()
	defer b.pids.mu.Unlock()
	if floor := b.mirroredProducerIDs(); b.pids.next >= b.pids.end || b.pids.next <= floor {
		// Never an id a cluster link copied here (link.go).
		first, err := b.store.AllocateProducerIDBlockAbove(ctx, producerIDBlock, floor)
		if err != nil {
			return -1, err
		}
		b.pids.next, b.pids.end = first, first+producerIDBlock
	}
	id := b.pids.next
	b.pids.next++
	return id, nil
}

// txnErrCode is the code of a transaction coordinator's error; versions
// older than the one that introduced PRODUCER_FENCED get
// INVALID_PRODUCER_EPOCH instead, as Kafka answers them.
func txnErrCode(err error, noFenced bool) int16 {
	code := errCode(err)
	if noFenced && code == kerr.ProducerFenced.Code {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}
