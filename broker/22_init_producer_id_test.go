package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// initProducerIDRequest is an InitProducerId for txnID (nil: idempotent).
func initProducerIDRequest(v int16, txnID *string, timeoutMillis int32) *kmsg.InitProducerIDRequest {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version, req.TransactionalID, req.TransactionTimeoutMillis = v, txnID, timeoutMillis
	req.ProducerID, req.ProducerEpoch = -1, -1
	return req
}

// InitProducerId: an idempotent producer gets a fresh id at epoch 0 at
// every version; a transactional one the same id at the next epoch each
// time; a timeout past transaction.max.timeout.ms is
// INVALID_TRANSACTION_TIMEOUT; alice (no ACLs) gets
// CLUSTER_AUTHORIZATION_FAILED for an idempotent id and
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED for a transactional one.
func TestInitProducerIDHandler(t *testing.T) {
	b := startHandlerTest(t, nil)
	seen := map[int64]bool{}
	for _, v := range []int16{0, 1, 2, 3, 4, 5} {
		resp := b.do(initProducerIDRequest(v, nil, 60000)).(*kmsg.InitProducerIDResponse)
		wantCode(t, "idempotent", resp.ErrorCode, nil)
		if resp.ProducerID < 0 || resp.ProducerEpoch != 0 || seen[resp.ProducerID] {
			t.Errorf("v%d: producer id %d epoch %d (seen %v)", v, resp.ProducerID, resp.ProducerEpoch, seen[resp.ProducerID])
		}
		seen[resp.ProducerID] = true
	}

	tx := kmsg.StringPtr("tx")
	pid, epoch := b.initTxn("tx")
	second := b.do(initProducerIDRequest(4, tx, 60000)).(*kmsg.InitProducerIDResponse)
	wantCode(t, "transactional again", second.ErrorCode, nil)
	if second.ProducerID != pid || second.ProducerEpoch != epoch+1 {
		t.Errorf("again: producer %d epoch %d, want %d epoch %d", second.ProducerID, second.ProducerEpoch, pid, epoch+1)
	}
	long := b.do(initProducerIDRequest(4, tx, 900001)).(*kmsg.InitProducerIDResponse)
	wantCode(t, "timeout past the max", long.ErrorCode, kerr.InvalidTransactionTimeout)

	idem := b.as("alice", initProducerIDRequest(4, nil, 60000)).(*kmsg.InitProducerIDResponse)
	wantCode(t, "idempotent as alice", idem.ErrorCode, kerr.ClusterAuthorizationFailed)
	txn := b.as("alice", initProducerIDRequest(4, tx, 60000)).(*kmsg.InitProducerIDResponse)
	wantCode(t, "transactional as alice", txn.ErrorCode, kerr.TransactionalIDAuthorizationFailed)
}

// startTxnBroker starts a handler test's broker (in parallel with the
// others) with topics of one partition each and initializes the
// transactional id "tx", whose producer id and epoch it returns.
func startTxnBroker(t *testing.T, topics ...string) (*handlerBroker, int64, int16) {
	t.Helper()
	b := startHandlerTest(t, nil)
	for _, topic := range topics {
		b.createTopic(topic, 1)
	}
	pid, epoch := b.initTxn("tx")
	return b, pid, epoch
}

// initTxn initializes transactional id txnID as the super user (polling
// while its coordinator loads or a previous transaction is aborted) and
// returns the producer id and epoch.
func (b *handlerBroker) initTxn(txnID string) (int64, int16) {
	b.t.Helper()
	b.waitCoordinator(1, txnID)
	var pid int64
	var epoch int16
	b.eventually(func() error {
		resp, err := b.try(initProducerIDRequest(4, kmsg.StringPtr(txnID), 60000))
		if err != nil {
			return err
		}
		r := resp.(*kmsg.InitProducerIDResponse)
		pid, epoch = r.ProducerID, r.ProducerEpoch
		return kerr.ErrorForCode(r.ErrorCode)
	})
	return pid, epoch
}
