package compat

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// txnBroker is one broker with a short transaction cleanup interval.
func txnBroker(t *testing.T) *testutil.Node {
	t.Helper()
	return testutil.StartBroker(t, map[string]string{
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200",
	})
}

// initTxnRaw sends InitProducerId for a transactional id at version v.
func initTxnRaw(t *testing.T, cl *kgo.Client, id string, timeoutMs int32) *kmsg.InitProducerIDResponse {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = &id, timeoutMs
	var resp *kmsg.InitProducerIDResponse
	testutil.Eventually(t, 30*time.Second, func() error {
		var err error
		resp, err = req.RequestWith(testCtx(t, 10*time.Second), cl)
		if err != nil {
			return err
		}
		if e := kerr.ErrorForCode(resp.ErrorCode); e != nil && kerr.IsRetriable(e) {
			return e
		}
		return nil
	})
	return resp
}

// addPartitionsRaw sends AddPartitionsToTxn at version v on a raw
// connection to addr (the single broker coordinates every id).
func addPartitionsRaw(t *testing.T, addr string, version int16, id string, pid int64, epoch int16, topic string, parts ...int32) kmsg.AddPartitionsToTxnResponseTopic {
	t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = topic, parts
	req.Topics = append(req.Topics, rt)
	resp := admDial(t, addr).roundTrip(req, version).(*kmsg.AddPartitionsToTxnResponse)
	if len(resp.Topics) != 1 {
		t.Fatalf("AddPartitionsToTxn: %d topics answered", len(resp.Topics))
	}
	return resp.Topics[0]
}

func endTxnRaw(t *testing.T, addr string, version int16, id string, pid int64, epoch int16, commit bool) int16 {
	t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	return admDial(t, addr).roundTrip(req, version).(*kmsg.EndTxnResponse).ErrorCode
}

// The coordinator's answers to bad input are Kafka's, and nothing is
// written for them: InitProducerId with a bad timeout, EndTxn for an
// unknown or fenced producer, AddPartitionsToTxn for a missing topic or an
// old epoch, a transactional batch for a partition not in the
// transaction.
func TestTxnBadInput(t *testing.T) {
	n := txnBroker(t)
	cl := newKgo(t, n.Addr(), kgo.MaxVersions(produceV11())) // TV1: Produce v12 adds partitions itself
	adm := newAdmin(t, n.Addr())
	const topic = "txn-bad"
	createTopic(t, adm, topic, 2, nil)
	id := topicID(t, adm, topic)

	r := initTxnRaw(t, cl, "bad", 0)
	wantCode(t, "InitProducerId timeout 0", r.ErrorCode, kerr.InvalidTransactionTimeout)
	r = initTxnRaw(t, cl, "bad", 900001)
	wantCode(t, "InitProducerId timeout above transaction.max.timeout.ms", r.ErrorCode, kerr.InvalidTransactionTimeout)
	r = initTxnRaw(t, cl, "bad", 60000)
	wantCode(t, "InitProducerId", r.ErrorCode, nil)
	pid, epoch := r.ProducerID, r.ProducerEpoch
	if pid < 0 || epoch != 0 {
		t.Fatalf("InitProducerId: producer %d epoch %d", pid, epoch)
	}

	wantCode(t, "EndTxn of an unknown id", endTxnRaw(t, n.Addr(), 3, "never-initialized", pid, epoch, true), kerr.InvalidProducerIDMapping)
	wantCode(t, "EndTxn of another producer id", endTxnRaw(t, n.Addr(), 3, "bad", pid+1000, epoch, true), kerr.InvalidProducerIDMapping)
	wantCode(t, "EndTxn with nothing ongoing", endTxnRaw(t, n.Addr(), 3, "bad", pid, epoch, true), kerr.InvalidTxnState)

	rt := addPartitionsRaw(t, n.Addr(), 3, "bad", pid, epoch, "no-such-topic", 0)
	wantCode(t, "AddPartitionsToTxn of a missing topic", rt.Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)

	// A transactional batch for a partition not in the transaction is
	// refused, and the log does not grow.
	pr := produceRawTxn(t, cl, topic, id, 0, kmsg.StringPtr("bad"), rawTxnBatch(pid, epoch, 0, "stray"))
	wantCode(t, "transactional produce to a partition not added", pr.ErrorCode, kerr.InvalidTxnState)
	pr = produceRawTxn(t, cl, topic, id, 0, nil, rawTxnBatch(pid, epoch, 0, "stray"))
	wantCode(t, "transactional produce without a transactional id", pr.ErrorCode, kerr.TransactionalIDAuthorizationFailed)
	if lo := listOffsetRaw(t, cl, topic, 0, -1); lo.Offset != 0 {
		t.Fatalf("log end offset %d after refused batches, want 0", lo.Offset)
	}

	// A second producer of the id fences the first: its epoch is refused
	// everywhere, as INVALID_PRODUCER_EPOCH before the versions that know
	// PRODUCER_FENCED.
	r2 := initTxnRaw(t, cl, "bad", 60000)
	wantCode(t, "second InitProducerId", r2.ErrorCode, nil)
	if r2.ProducerID != pid || r2.ProducerEpoch != epoch+1 {
		t.Fatalf("second InitProducerId: %d/%d, want %d/%d", r2.ProducerID, r2.ProducerEpoch, pid, epoch+1)
	}
	rt = addPartitionsRaw(t, n.Addr(), 3, "bad", pid, epoch, topic, 0)
	wantCode(t, "AddPartitionsToTxn v3 with the fenced epoch", rt.Partitions[0].ErrorCode, kerr.ProducerFenced)
	rt = addPartitionsRaw(t, n.Addr(), 1, "bad", pid, epoch, topic, 0)
	wantCode(t, "AddPartitionsToTxn v1 with the fenced epoch", rt.Partitions[0].ErrorCode, kerr.InvalidProducerEpoch)
	wantCode(t, "EndTxn with the fenced epoch", endTxnRaw(t, n.Addr(), 3, "bad", pid, epoch, false), kerr.ProducerFenced)
	wantCode(t, "EndTxn v1 with the fenced epoch", endTxnRaw(t, n.Addr(), 1, "bad", pid, epoch, false), kerr.InvalidProducerEpoch)
	pr = produceRawTxn(t, cl, topic, id, 0, kmsg.StringPtr("bad"), rawTxnBatch(pid, epoch, 0, "zombie"))
	if pr.ErrorCode == 0 {
		t.Fatalf("a fenced producer's batch was appended")
	}

	// In the transaction, the batch is taken.
	epoch = r2.ProducerEpoch
	rt = addPartitionsRaw(t, n.Addr(), 3, "bad", pid, epoch, topic, 1)
	wantCode(t, "AddPartitionsToTxn", rt.Partitions[0].ErrorCode, nil)
	pr = produceRawTxn(t, cl, topic, id, 1, kmsg.StringPtr("bad"), rawTxnBatch(pid, epoch, 0, "ok"))
	wantCode(t, "transactional produce to a partition added", pr.ErrorCode, nil)
	pr = produceRawTxn(t, cl, topic, id, 0, kmsg.StringPtr("bad"), rawTxnBatch(pid, epoch, 1, "stray"))
	wantCode(t, "transactional produce to the other partition", pr.ErrorCode, kerr.InvalidTxnState)
	wantCode(t, "EndTxn abort with an older epoch", endTxnRaw(t, n.Addr(), 3, "bad", pid, epoch-1, false), kerr.ProducerFenced)
}

// FindCoordinator for a transactional id names the leader of its
// __transaction_state partition, which is created on first use with
// Kafka's settings.
func TestTxnFindCoordinator(t *testing.T) {
	n := txnBroker(t)
	cl := newKgo(t, n.Addr())
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = 1
	req.CoordinatorKeys = []string{"a", "b"}
	var resp *kmsg.FindCoordinatorResponse
	testutil.Eventually(t, 30*time.Second, func() error {
		var err error
		if resp, err = req.RequestWith(testCtx(t, 10*time.Second), cl); err != nil {
			return err
		}
		for _, c := range resp.Coordinators {
			if err := kerr.ErrorForCode(c.ErrorCode); err != nil {
				return fmt.Errorf("%s: %w", c.Key, err)
			}
		}
		return nil
	})
	for _, c := range resp.Coordinators {
		if c.NodeID != n.NodeID() {
			t.Fatalf("coordinator of %s: node %d", c.Key, c.NodeID)
		}
	}
	adm := newAdmin(t, n.Addr())
	tds, err := adm.ListTopics(testCtx(t, 10*time.Second), "__transaction_state")
	if err != nil {
		t.Fatal(err)
	}
	td := tds["__transaction_state"]
	if td.Err != nil || len(td.Partitions) != 50 || !td.IsInternal {
		t.Fatalf("__transaction_state: err %v, %d partitions, internal %v", td.Err, len(td.Partitions), td.IsInternal)
	}
	rc, err := adm.DescribeTopicConfigs(testCtx(t, 10*time.Second), "__transaction_state")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := rc.On("__transaction_state", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Configs {
		if c.Key == "cleanup.policy" && c.MaybeValue() != "compact" {
			t.Fatalf("cleanup.policy %q", c.MaybeValue())
		}
	}
	// The empty id is no transactional id.
	req.CoordinatorKeys = []string{""}
	resp, err = req.RequestWith(testCtx(t, 10*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "FindCoordinator of the empty id", resp.Coordinators[0].ErrorCode, kerr.InvalidRequest)
}

// A producer that stops in the middle of its transaction: once its
// transaction.timeout.ms has passed, the coordinator aborts the
// transaction with the epoch bumped, the partition's last stable offset
// moves past it, and the producer's late commit is fenced.
func TestTxnTimeoutAborts(t *testing.T) {
	n := txnBroker(t)
	adm := newAdmin(t, n.Addr())
	const topic = "txn-timeout"
	createTopic(t, adm, topic, 1, nil)
	ctx := testCtx(t, 60*time.Second)
	cl := newKgo(t, n.Addr(), kgo.TransactionalID("timeout-txn"), kgo.TransactionTimeout(2*time.Second))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("late")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	d, err := adm.DescribeTransactions(ctx, "timeout-txn")
	if err != nil {
		t.Fatal(err)
	}
	epoch := d["timeout-txn"].ProducerEpoch
	testutil.Eventually(t, 30*time.Second, func() error {
		d, err := adm.DescribeTransactions(ctx, "timeout-txn")
		if err != nil {
			return err
		}
		if tx := d["timeout-txn"]; tx.State != "CompleteAbort" || tx.ProducerEpoch != epoch+1 {
			return fmt.Errorf("state %s epoch %d, want CompleteAbort at %d", tx.State, tx.ProducerEpoch, epoch+1)
		}
		return nil
	})
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = 1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if lso := resp.Topics[0].Partitions[0].Offset; lso != 2 {
		t.Fatalf("last stable offset %d after the abort, want 2 (the record and the marker)", lso)
	}
	err = cl.EndTransaction(ctx, kgo.TryCommit)
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("the timed-out producer's commit: %v, want PRODUCER_FENCED", err)
	}
}
