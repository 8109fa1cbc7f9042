package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeTransactions v0: an ongoing transaction's state, producer and
// partitions; an id never initialized is TRANSACTIONAL_ID_NOT_FOUND;
// alice (no ACLs) gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
func TestDescribeTransactionsHandler(t *testing.T) {
	b := startHandlerTest(t, map[string]int32{"dt": 1})
	pid, epoch := b.beginTxn("tx", "dt")
	b.waitTxnPartition("never")

	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{"tx", "never"}
	resp := b.do(req).(*kmsg.DescribeTransactionsResponse)
	if len(resp.TransactionStates) != 2 {
		t.Fatalf("%d states for 2 ids", len(resp.TransactionStates))
	}
	tx := resp.TransactionStates[0]
	wantCode(t, "tx", tx.ErrorCode, nil)
	if tx.State != "Ongoing" || tx.ProducerID != pid || tx.ProducerEpoch != epoch || tx.TimeoutMillis != 60000 {
		t.Errorf("tx: %s, producer %d epoch %d, timeout %d; want Ongoing, %d epoch %d, 60000", tx.State, tx.ProducerID, tx.ProducerEpoch, tx.TimeoutMillis, pid, epoch)
	}
	if len(tx.Topics) != 1 || tx.Topics[0].Topic != "dt" || len(tx.Topics[0].Partitions) != 1 {
		t.Errorf("tx: partitions %+v, want dt-0", tx.Topics)
	}
	wantCode(t, "never", resp.TransactionStates[1].ErrorCode, kerr.TransactionalIDNotFound)

	req.TransactionalIDs = []string{"tx"}
	alice := b.as("alice", req).(*kmsg.DescribeTransactionsResponse)
	wantCode(t, "as alice", alice.TransactionStates[0].ErrorCode, kerr.TransactionalIDAuthorizationFailed)
}

// waitTxnPartition polls DescribeTransactions until the coordinator of
// txnID has loaded its __transaction_state partition, so that an id never
// initialized is answered as such rather than COORDINATOR_LOAD_IN_PROGRESS.
func (b *handlerBroker) waitTxnPartition(txnID string) {
	b.t.Helper()
	b.waitCoordinator(1, txnID)
	b.eventually(func() error {
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = []string{txnID}
		resp, err := b.try(req)
		if err != nil {
			return err
		}
		switch code := resp.(*kmsg.DescribeTransactionsResponse).TransactionStates[0].ErrorCode; code {
		case kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code:
			return kerr.ErrorForCode(code)
		}
		return nil
	})
}
