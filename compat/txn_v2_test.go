package compat

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/samsa-io/samsa/internal/testutil"
	"github.com/samsa-io/samsa/protocol"
)

// Transactions version 2 (KIP-890 part 2) on the wire: Produce v12 and
// TxnOffsetCommit v5 add their partitions to the transaction without an
// AddPartitionsToTxn or AddOffsetsToTxn, EndTxn v5 bumps the epoch at
// every end and answers the producer id and epoch of the next transaction,
// a retried end gets the same answer, the old epoch is refused everywhere,
// and an abort with nothing ongoing bumps the epoch too. txnScenarioV2
// runs against samsa (TestTxnV2Raw) and Apache Kafka 4.4
// (TestTxnV2KafkaReference), which give the same answers.

// retryTxn sends req (at version v) to addr until its error is not one a
// client retries (CONCURRENT_TRANSACTIONS while markers are written,
// NOT_ENOUGH_REPLICAS while a verification cannot be answered, ...).
func retryTxn[R kmsg.Response](t *testing.T, addr string, req kmsg.Request, v int16, code func(R) int16) R {
	t.Helper()
	var resp R
	testutil.Eventually(t, 30*time.Second, func() error {
		resp = admDial(t, addr).roundTrip(req, v).(R)
		if e := kerr.ErrorForCode(code(resp)); e != nil && (kerr.IsRetriable(e) || e == kerr.ConcurrentTransactions) {
			return e
		}
		return nil
	})
	return resp
}

func endTxnV5(t *testing.T, addr, id string, pid int64, epoch int16, commit bool) *kmsg.EndTxnResponse {
	t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	return retryTxn(t, addr, req, 5, func(r *kmsg.EndTxnResponse) int16 { return r.ErrorCode })
}

func produceV12(t *testing.T, addr, id, topic string, records []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID, req.Acks, req.TimeoutMillis = &id, -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := retryTxn(t, addr, req, 12, func(r *kmsg.ProduceResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })
	return resp.Topics[0].Partitions[0]
}

func txnOffsetCommitV5(t *testing.T, addr, id, group string, pid int64, epoch int16, topic string, offset int64) int16 {
	t.Helper()
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = id, group, pid, epoch
	req.Generation = -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Offset, rp.LeaderEpoch = offset, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := retryTxn(t, addr, req, 5, func(r *kmsg.TxnOffsetCommitResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })
	return resp.Topics[0].Partitions[0].ErrorCode
}

// waitDescribed waits until describe gives want: the completion after an
// EndTxn is written in the background.
func waitDescribed(t *testing.T, what string, describe func() string, want string) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, func() error {
		if got := describe(); got != want {
			return fmt.Errorf("%s: %s, want %s", what, got, want)
		}
		return nil
	})
}

// wantEnd checks an EndTxn v5 answer.
func wantEnd(t *testing.T, what string, r *kmsg.EndTxnResponse, want *kerr.Error, pid int64, epoch int16) {
	t.Helper()
	wantCode(t, what, r.ErrorCode, want)
	if r.ProducerID != pid || r.ProducerEpoch != epoch {
		t.Fatalf("%s: answered producer %d epoch %d, want %d/%d", what, r.ProducerID, r.ProducerEpoch, pid, epoch)
	}
}

func txnScenarioV2(t *testing.T, addr string) {
	const topic, id, group = "txn-v2", "txn-v2-id", "txn-v2-group"
	cl := newKgo(t, addr)
	adm := newAdmin(t, addr)
	createTopic(t, adm, topic, 1, nil)
	tid := topicID(t, adm, topic)
	r := initTxnRaw(t, cl, id, 60000)
	wantCode(t, "InitProducerId", r.ErrorCode, nil)
	pid := r.ProducerID
	if r.ProducerEpoch != 0 {
		t.Fatalf("InitProducerId: epoch %d", r.ProducerEpoch)
	}
	describe := func() string {
		t.Helper()
		d, err := adm.DescribeTransactions(testCtx(t, 10*time.Second), id)
		if err != nil {
			t.Fatal(err)
		}
		tx := d[id]
		var parts []string
		for topic, ps := range tx.Topics {
			for p := range ps {
				parts = append(parts, fmt.Sprintf("%s-%d", topic, p))
			}
		}
		slices.Sort(parts)
		return fmt.Sprintf("%s %d/%d %v", tx.State, tx.ProducerID-pid, tx.ProducerEpoch, parts)
	}

	// The group's coordinator (this broker) is found first, as a client
	// does before its TxnOffsetCommit; that creates __consumer_offsets.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{group}
	retryTxn(t, addr, fc, 4, func(r *kmsg.FindCoordinatorResponse) int16 { return r.Coordinators[0].ErrorCode })

	// The first transaction: a record and the group's offset, nothing
	// added by the producer.
	wantCode(t, "Produce v12, implicit add", produceV12(t, addr, id, topic, rawTxnBatch(pid, 0, 0, "a")).ErrorCode, nil) // 0
	wantCode(t, "TxnOffsetCommit v5, implicit add", txnOffsetCommitV5(t, addr, id, group, pid, 0, topic, 1), nil)
	if got := describe(); got != "Ongoing 0/0 [__consumer_offsets-"+fmt.Sprint(protocol.CoordinatorPartition(group, 50))+" txn-v2-0]" {
		t.Fatalf("the ongoing transaction: %s", got)
	}
	wantEnd(t, "EndTxn v5 commit", endTxnV5(t, addr, id, pid, 0, true), nil, pid, 1) // marker 1
	wantEnd(t, "EndTxn v5 commit retried", endTxnV5(t, addr, id, pid, 0, true), nil, pid, 1)
	wantEnd(t, "EndTxn v5 commit of nothing", endTxnV5(t, addr, id, pid, 1, true), kerr.InvalidTxnState, -1, -1)
	waitDescribed(t, "after the commit", describe, "CompleteCommit 0/1 []")

	// The old epoch is fenced: the partition has the commit marker's epoch.
	wantCode(t, "Produce v12 with the epoch before the commit", produceV12(t, addr, id, topic, rawTxnBatch(pid, 0, 1, "late")).ErrorCode, kerr.InvalidProducerEpoch)
	wantCode(t, "TxnOffsetCommit v5 with the epoch before the commit", txnOffsetCommitV5(t, addr, id, group, pid, 0, topic, 5), kerr.InvalidProducerEpoch)

	// The second transaction, at the new epoch, aborted.
	wantCode(t, "Produce v12 at the new epoch", produceV12(t, addr, id, topic, rawTxnBatch(pid, 1, 0, "b")).ErrorCode, nil) // 2
	wantCode(t, "TxnOffsetCommit v5 at the new epoch", txnOffsetCommitV5(t, addr, id, group, pid, 1, topic, 3), nil)
	wantEnd(t, "EndTxn v5 abort", endTxnV5(t, addr, id, pid, 1, false), nil, pid, 2) // marker 3
	wantEnd(t, "EndTxn v5 abort retried", endTxnV5(t, addr, id, pid, 1, false), nil, pid, 2)
	wantEnd(t, "EndTxn v5 commit of the aborted transaction", endTxnV5(t, addr, id, pid, 1, true), kerr.InvalidTxnState, -1, -1)

	// An abort with nothing ongoing is an empty transaction: no marker,
	// the epoch bumped.
	wantEnd(t, "EndTxn v5 empty abort", endTxnV5(t, addr, id, pid, 2, false), nil, pid, 3)
	waitDescribed(t, "after the empty abort", describe, "CompleteAbort 0/3 []")

	// A new producer of the id fences the old epoch.
	r = initTxnRaw(t, cl, id, 60000)
	wantCode(t, "second InitProducerId", r.ErrorCode, nil)
	if r.ProducerID != pid || r.ProducerEpoch != 4 {
		t.Fatalf("second InitProducerId: %d/%d, want epoch 4", r.ProducerID-pid, r.ProducerEpoch)
	}
	wantEnd(t, "EndTxn v5 of the fenced producer", endTxnV5(t, addr, id, pid, 3, false), kerr.ProducerFenced, -1, -1)
	wantCode(t, "Produce v12 of the fenced producer", produceV12(t, addr, id, topic, rawTxnBatch(pid, 3, 0, "zombie")).ErrorCode, kerr.InvalidProducerEpoch)

	b := cl.SeedBrokers()[0]
	checkCommitted(t, b, topic, tid, 4, abortedList(pid, 2))
	if err := cl.ProduceSync(testCtx(t, 10*time.Second), &kgo.Record{Topic: topic, Value: []byte("last")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if got := consumeCommitted(t, []string{addr}, topic); !slices.Equal(got, []string{"a", "last"}) {
		t.Fatalf("read_committed consumer read %q, want [a last]", got)
	}
	offs, err := adm.FetchOffsets(testCtx(t, 10*time.Second), group)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup(topic, 0); !ok || o.At != 1 {
		t.Fatalf("the group's offset: %+v (%v), want 1 from the committed transaction", o, ok)
	}
}

func TestTxnV2Raw(t *testing.T) {
	n := txnBroker(t)
	txnScenarioV2(t, n.Addr())
}

func TestTxnV2KafkaReference(t *testing.T) {
	t.Parallel()
	kb, _ := startKafkaRefWith(t, nil)
	txnScenarioV2(t, kb.Addr)
}

// Kafka's VerificationGuard: the coordinator verified a producer's first
// batch in a partition, then the transaction was aborted and its marker
// landed before the batch's append. The append is refused
// (INVALID_TXN_STATE) instead of opening a transaction nobody will end:
// the last stable offset does not stick behind it. The broker's hook runs
// the abort exactly between the verification and the append.
func TestTxnVerificationGuard(t *testing.T) {
	n := txnBroker(t)
	cl := newKgo(t, n.Addr(), kgo.MaxVersions(produceV11()))
	adm := newAdmin(t, n.Addr())
	const topic, id = "txn-guard", "txn-guard-id"
	createTopic(t, adm, topic, 1, nil)
	tid := topicID(t, adm, topic)
	r := initTxnRaw(t, cl, id, 60000)
	wantCode(t, "InitProducerId", r.ErrorCode, nil)
	pid, epoch := r.ProducerID, r.ProducerEpoch
	rt := addPartitionsRaw(t, n.Addr(), 3, id, pid, epoch, topic, 0)
	wantCode(t, "AddPartitionsToTxn", rt.Partitions[0].ErrorCode, nil)

	hookErr := make(chan error, 1)
	n.SetTxnVerifiedHook(func(string, int32) {
		n.SetTxnVerifiedHook(nil) // once
		hookErr <- func() error {
			tv1 := kversion.Stable()
			tv1.SetMaxKeyVersion(int16(kmsg.EndTxn), 4) // the abort keeps the epoch
			c, err := kgo.NewClient(kgo.SeedBrokers(n.Addr()), kgo.MaxVersions(tv1))
			if err != nil {
				return err
			}
			defer c.Close()
			ctx := testCtx(t, 30*time.Second)
			req := kmsg.NewPtrEndTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, false
			resp, err := req.RequestWith(ctx, c)
			if err != nil {
				return err
			}
			if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
				return fmt.Errorf("EndTxn: %w", err)
			}
			// The abort's marker is in the partition once its state is
			// CompleteAbort.
			for {
				d, err := kadm.NewClient(c).DescribeTransactions(ctx, id)
				if err != nil {
					return err
				}
				if d[id].State == "CompleteAbort" {
					return nil
				}
				select {
				case <-ctx.Done():
					return fmt.Errorf("the abort did not complete: %s", d[id].State)
				case <-time.After(10 * time.Millisecond):
				}
			}
		}()
	})
	pr := produceRawTxn(t, cl, topic, tid, 0, kmsg.StringPtr(id), rawTxnBatch(pid, epoch, 0, "verified, then aborted"))
	if err := <-hookErr; err != nil {
		t.Fatalf("aborting between the verification and the append: %v", err)
	}
	wantCode(t, "produce whose transaction ended after its verification", pr.ErrorCode, kerr.InvalidTxnState)
	// Only the abort marker is in the log, and nothing holds the LSO.
	checkCommitted(t, cl.SeedBrokers()[0], topic, tid, 1, abortedList())
	checkProducers(t, cl, topic, fmt.Sprintf("%d/%d seq -1 coordinator 0 txn -1", pid, epoch))
}
