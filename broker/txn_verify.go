package broker

// KIP-890 part 1: before a partition leader appends a producer's
// transactional batch, it asks the producer's transaction coordinator
// whether the partition is in the producer's ongoing transaction
// (AddPartitionsToTxn v4 with VerifyOnly), so that a late write of an
// aborted or older transaction is refused instead of opening a
// transaction nobody will end. The group coordinator asks the same before
// it writes a TxnOffsetCommit.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/txn"
)

// verifyTxn asks the coordinator of id whether tp is in the transaction of
// producer pid at epoch: nil when it is; INVALID_TXN_STATE when it is
// not; the coordinator's error (PRODUCER_FENCED, INVALID_PRODUCER_ID_MAPPING,
// NOT_COORDINATOR, ...) otherwise. With add (transactions version 2) it
// asks the coordinator to add tp instead, starting a transaction if none
// is ongoing (AddPartitionsToTxn v5 without VerifyOnly).
func (b *Broker) verifyTxn(ctx context.Context, id string, pid int64, epoch int16, tp txn.TopicPartition, add bool) error {
	if id == "" {
		return kerr.InvalidRequest
	}
	if b.meta.topic(txnTopic) == nil {
		if add {
			return kerr.CoordinatorNotAvailable // created by the first InitProducerId
		}
		return kerr.InvalidTxnState // no transaction was ever begun
	}
	cp := b.meta.partition(txnTopic, b.txn.PartitionFor(id))
	if cp == nil {
		return kerr.CoordinatorNotAvailable
	}
	leader, _, _, _ := cp.State()
	if leader == b.nodeID && add {
		return b.txn.AddPartitions(ctx, id, pid, epoch, []txn.TopicPartition{tp}, txn.TV2)
	}
	if leader == b.nodeID {
		res, err := b.txn.VerifyPartitions(id, pid, epoch, []txn.TopicPartition{tp})
		if err != nil {
			return err
		}
		return res[tp]
	}
	if leader < 0 {
		return kerr.CoordinatorNotAvailable
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 4
	if add {
		req.Version = 5
	}
	t := kmsg.NewAddPartitionsToTxnRequestTransaction()
	t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.VerifyOnly = id, pid, epoch, !add
	rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	rt.Topic, rt.Partitions = tp.Topic, []int32{tp.Partition}
	t.Topics = append(t.Topics, rt)
	req.Transactions = append(req.Transactions, t)
	resp := kmsg.NewPtrAddPartitionsToTxnResponse()
	if err := b.peers.roundTrip(ctx, leader, req, resp); err != nil {
		b.log.Debug("transaction verification failed", "coordinator", leader, "err", err)
		return kerr.CoordinatorNotAvailable
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return err
	}
	for _, rt := range resp.Transactions {
		for _, t := range rt.Topics {
			for _, p := range t.Partitions {
				if t.Topic == tp.Topic && p.Partition == tp.Partition {
					return kerr.ErrorForCode(p.ErrorCode)
				}
			}
		}
	}
	return fmt.Errorf("%w: the coordinator did not answer for %s-%d", kerr.CoordinatorNotAvailable, tp.Topic, tp.Partition)
}

// verifyTxnRetrying is verifyTxn for a produce. An add (transactions
// version 2) that the coordinator answers CONCURRENT_TRANSACTIONS, because
// the producer's previous transaction is still writing its markers, is
// asked again every add.partitions.to.txn.retry.backoff.ms until
// add.partitions.to.txn.retry.backoff.max.ms have passed, as Kafka's
// ReplicaManager retries it: the producer would otherwise get a retriable
// error and back off by its own retry.backoff.ms, growing to a second, on
// every transaction whose markers take a little longer.
func (b *Broker) verifyTxnRetrying(ctx context.Context, id string, pid int64, epoch int16, tp txn.TopicPartition, add bool) error {
	err := b.verifyTxn(ctx, id, pid, epoch, tp, add)
	if !add {
		return err
	}
	backoff, deadline := b.settings.AddTxnRetryBackoff, time.Now().Add(b.settings.AddTxnRetryBackoffMax)
	for errors.Is(err, kerr.ConcurrentTransactions) && time.Now().Add(backoff).Before(deadline) {
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		err = b.verifyTxn(ctx, id, pid, epoch, tp, add)
	}
	return err
}

// SetTxnVerifiedHook installs a function that runs after the coordinator
// verified a produce's transactional batch and before the batch is
// appended (nil removes it). Tests use it to land a marker in between,
// which the append's guard must then refuse (logstore/verify.go).
func (b *Broker) SetTxnVerifiedHook(h func(topic string, partition int32)) {
	if h == nil {
		b.txnVerifiedHook.Store(nil)
		return
	}
	b.txnVerifiedHook.Store(&h)
}

// produceVerifyError is what a producer gets when the verification of its
// transactional batch failed (Kafka's ReplicaManager): a coordinator that
// could not answer is NOT_ENOUGH_REPLICAS, which the producer retries;
// PRODUCER_FENCED is INVALID_PRODUCER_EPOCH, as Kafka's
// AddPartitionsToTxnManager answers a produce.
func produceVerifyError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kerr.ProducerFenced):
		return fmt.Errorf("%w: %v", kerr.InvalidProducerEpoch, err)
	case errors.Is(err, kerr.InvalidTxnState):
		return fmt.Errorf("%w: Partition was not added to the transaction", kerr.InvalidTxnState)
	case errors.Is(err, kerr.ConcurrentTransactions), errors.Is(err, kerr.CoordinatorLoadInProgress),
		errors.Is(err, kerr.CoordinatorNotAvailable), errors.Is(err, kerr.NotCoordinator):
		return fmt.Errorf("%w: Unable to verify the partition has been added to the transaction. Underlying error: %v",
			kerr.NotEnoughReplicas, err)
	}
	return err
}

// verifyTxnOffsets is the group coordinator's check before it writes a
// TxnOffsetCommit to its __consumer_offsets partition (with add, for a v5
// commit, the implicit add of the partition); a coordinator that could not
// answer is COORDINATOR_NOT_AVAILABLE, which the producer retries, and
// PRODUCER_FENCED is INVALID_PRODUCER_EPOCH, as for a produce.
func (b *Broker) verifyTxnOffsets(ctx context.Context, id string, pid int64, epoch int16, partition int32, add bool) error {
	err := b.verifyTxn(ctx, id, pid, epoch, txn.TopicPartition{Topic: offsetsTopic, Partition: partition}, add)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kerr.ProducerFenced):
		return kerr.InvalidProducerEpoch
	case errors.Is(err, kerr.ConcurrentTransactions), errors.Is(err, kerr.CoordinatorLoadInProgress),
		errors.Is(err, kerr.CoordinatorNotAvailable), errors.Is(err, kerr.NotCoordinator):
		return kerr.CoordinatorNotAvailable
	}
	return err
}
