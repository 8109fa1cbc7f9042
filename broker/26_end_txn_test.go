package broker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
	"github.com/samsa-io/samsa/logstore"
)

// endTxnRequest commits or aborts txnID's transaction.
func endTxnRequest(v int16, txnID string, pid int64, epoch int16, commit bool) *kmsg.EndTxnRequest {
	req := kmsg.NewPtrEndTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = v, txnID, pid, epoch, commit
	return req
}

// produceTxn appends one transactional record to topic's partition 0 as
// the producer (sequence seq) and returns its offset.
func (b *handlerBroker) produceTxn(topic string, pid int64, epoch int16, seq int32, value string) int64 {
	b.t.Helper()
	batch, err := logstore.EncodeBatch(logstore.BatchSpec{
		PartitionLeaderEpoch: -1, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, Transactional: true,
	}, []logstore.Record{{Value: []byte(value)}})
	if err != nil {
		b.t.Fatal(err)
	}
	req := produceRequest(9, topic, 0)
	req.TransactionID = kmsg.StringPtr("tx")
	req.Topics[0].Partitions[0].Records = batch
	rp := b.do(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
		b.t.Fatalf("transactional produce: %v", err)
	}
	return rp.BaseOffset
}

// waitStable polls a read-committed Fetch until topic's partition 0 has
// last stable offset lso and high watermark hw.
func (b *handlerBroker) waitStable(topic string, lso, hw int64) {
	b.t.Helper()
	testutil.Eventually(b.t, 20*time.Second, func() error {
		req := fetchRequest(12, topic, [16]byte{}, 0, 0)
		req.IsolationLevel = 1
		resp, err := b.try(req)
		if err != nil {
			return err
		}
		rp := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if rp.LastStableOffset != lso || rp.HighWatermark != hw {
			return fmt.Errorf("last stable offset %d, high watermark %d; want %d, %d", rp.LastStableOffset, rp.HighWatermark, lso, hw)
		}
		return nil
	})
}

// EndTxn: a commit writes the marker and moves the last stable offset past
// the transaction, an abort likewise; ending with no transaction is
// INVALID_TXN_STATE, with a fenced epoch PRODUCER_FENCED (v2+) or
// INVALID_PRODUCER_EPOCH (v0-v1), with another producer id
// INVALID_PRODUCER_ID_MAPPING; alice (no ACLs) gets
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
func TestEndTxnHandler(t *testing.T) {
	b, pid, epoch := startTxnBroker(t, "et")
	code := func(resp kmsg.Response) int16 { return resp.(*kmsg.EndTxnResponse).ErrorCode }

	wantCode(t, "commit with no transaction", code(b.do(endTxnRequest(3, "tx", pid, epoch, true))), kerr.InvalidTxnState)

	b.addToTxn("tx", pid, epoch, "et")
	if off := b.produceTxn("et", pid, epoch, 0, "committed"); off != 0 {
		t.Fatalf("transactional record at %d", off)
	}
	b.waitStable("et", 0, 1)
	wantCode(t, "another producer id", code(b.do(endTxnRequest(3, "tx", pid+1000, epoch, true))), kerr.InvalidProducerIDMapping)
	wantCode(t, "as alice", code(b.as("alice", endTxnRequest(3, "tx", pid, epoch, true))), kerr.TransactionalIDAuthorizationFailed)
	wantCode(t, "commit", code(b.do(endTxnRequest(3, "tx", pid, epoch, true))), nil)
	b.waitStable("et", 2, 2) // the record and the commit marker

	// The next transaction, aborted.
	var abortCode int16
	testutil.Eventually(t, 20*time.Second, func() error {
		// CONCURRENT_TRANSACTIONS until the markers of the commit are written.
		abortCode = addCodes(b.do(addPartitionsRequest(3, "tx", pid, epoch, "et")))["et"]
		if abortCode == kerr.ConcurrentTransactions.Code {
			return kerr.ConcurrentTransactions
		}
		return nil
	})
	wantCode(t, "add et again", abortCode, nil)
	b.produceTxn("et", pid, epoch, 1, "aborted")
	wantCode(t, "abort", code(b.do(endTxnRequest(3, "tx", pid, epoch, false))), nil)
	b.waitStable("et", 4, 4)

	// A second InitProducerId fences this epoch.
	_, next := b.initTxn("tx")
	if next != epoch+1 {
		t.Fatalf("epoch after init %d, want %d", next, epoch+1)
	}
	wantCode(t, "v2 fenced", code(b.do(endTxnRequest(2, "tx", pid, epoch, true))), kerr.ProducerFenced)
	wantCode(t, "v1 fenced", code(b.do(endTxnRequest(1, "tx", pid, epoch, true))), kerr.InvalidProducerEpoch)
}
