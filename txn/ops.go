package txn

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ProducerIDEpoch is a producer id with its epoch.
type ProducerIDEpoch struct {
	ID    int64
	Epoch int16
}

// InitProducerID gives the producer of a transactional id its producer id
// and a new epoch, which fences every older producer of the id (Kafka's
// TransactionCoordinator.handleInitProducerId). expected, from v3 on
// (KIP-360), is the id and epoch the producer had; nil for a new producer.
// An ongoing transaction is aborted first, with the epoch bumped, and the
// producer told CONCURRENT_TRANSACTIONS to retry once it is done.
func (c *Coordinator) InitProducerID(ctx context.Context, id string, timeoutMs int32, expected *ProducerIDEpoch) (ProducerIDEpoch, error) {
	none := ProducerIDEpoch{-1, -1}
	if id == "" {
		return none, kerr.InvalidRequest
	}
	if timeoutMs <= 0 || int64(timeoutMs) > c.cfg.MaxTimeout.Milliseconds() {
		return none, kerr.InvalidTransactionTimeout
	}
	s, err := c.shardFor(id)
	if err != nil {
		return none, err
	}
	s.mu.Lock()
	m := s.txns[id]
	if m == nil {
		s.mu.Unlock()
		pid, err := c.cfg.NewProducerID(ctx)
		if err != nil {
			return none, kerr.CoordinatorNotAvailable
		}
		s.mu.Lock()
		if !s.active() {
			s.mu.Unlock()
			return none, kerr.NotCoordinator
		}
		if m = s.txns[id]; m == nil { // nobody added it meanwhile
			m = &txnMeta{id: id, pid: pid, prevPid: -1, epoch: noEpoch, lastEpoch: noEpoch, timeoutMs: timeoutMs,
				state: Empty, partitions: map[TopicPartition]struct{}{}, startMs: -1, updateMs: c.nowMs(), nextPid: -1}
			s.txns[id] = m
		}
	}
	defer s.mu.Unlock()
	if m.pending {
		return none, kerr.ConcurrentTransactions
	}
	if expected != nil && !(m.epoch == noEpoch || expected.ID == m.pid ||
		(expected.ID == m.prevPid && expected.Epoch >= maxEpoch)) {
		return none, kerr.ProducerFenced
	}
	switch m.state {
	case PrepareCommit, PrepareAbort, PrepareEpochFence:
		return none, kerr.ConcurrentTransactions
	case Ongoing:
		// Fence the producer and abort its transaction; the client retries
		// and gets the next epoch once the abort is complete.
		if err := s.fenceAndAbort(m); err != nil {
			return none, err
		}
		return none, kerr.ConcurrentTransactions
	case Dead:
		return none, kerr.ConcurrentTransactions
	}
	target := m.clone()
	target.timeoutMs, target.updateMs = timeoutMs, c.nowMs()
	target.state, target.startMs = Empty, -1
	target.partitions = map[TopicPartition]struct{}{}
	switch {
	case m.epoch >= maxEpoch && (expected == nil || expected.Epoch == m.epoch):
		// The epochs of this producer id are used up: take a new one.
		s.mu.Unlock()
		pid, err := c.cfg.NewProducerID(ctx)
		s.mu.Lock()
		if err != nil {
			return none, kerr.CoordinatorNotAvailable
		}
		if !s.active() || s.txns[id] != m || m.pending {
			return none, kerr.ConcurrentTransactions
		}
		target.prevPid, target.pid, target.epoch, target.lastEpoch = m.pid, pid, 0, noEpoch
	case expected == nil || m.epoch == noEpoch || expected.Epoch == noEpoch || expected.Epoch == m.epoch:
		target.epoch, target.lastEpoch = m.epoch+1, m.epoch
		if expected == nil {
			target.lastEpoch = noEpoch // a new producer: the old one may not retry
		}
	case expected.Epoch == m.lastEpoch:
		// A retry of a bump whose answer was lost: the same epoch again.
	default:
		return none, kerr.ProducerFenced
	}
	if err := s.write(m, target); err != nil {
		if m.epoch == noEpoch && s.txns[id] == m {
			delete(s.txns, id) // never written: forget the placeholder
		}
		return none, err
	}
	return ProducerIDEpoch{m.pid, m.epoch}, nil
}

// fenceAndAbort bumps the epoch of m's producer (unless it is at the top)
// and aborts its transaction (Kafka's prepareFenceProducerEpoch followed
// by an abort). Called with s.mu held, on an Ongoing transaction with no
// write pending.
func (s *shard) fenceAndAbort(m *txnMeta) error {
	target := m.clone()
	if target.epoch < 1<<15-1 {
		target.epoch++
	}
	target.lastEpoch = noEpoch
	return s.prepareEnd(m, target, false)
}

// checkProducer is the check every transactional request from a producer
// makes: the id's producer id and exactly its current epoch.
func checkProducer(m *txnMeta, pid int64, epoch int16) error {
	switch {
	case m == nil || m.pid != pid:
		return kerr.InvalidProducerIDMapping
	case m.epoch != epoch:
		return kerr.ProducerFenced
	case m.pending:
		return kerr.ConcurrentTransactions
	}
	return nil
}

// AddPartitions adds partitions to the producer's transaction, starting
// one if none is ongoing (Kafka's handleAddPartitionsToTransaction). tv is
// the transaction version of the request: TV1 for a producer's
// AddPartitionsToTxn, TV2 for the implicit add a partition leader or
// group coordinator makes for a Produce v12 or TxnOffsetCommit v5.
func (c *Coordinator) AddPartitions(_ context.Context, id string, pid int64, epoch int16, parts []TopicPartition, tv int8) error {
	s, m, err := c.lockProducer(id, pid, epoch)
	if err != nil {
		return err
	}
	defer s.mu.Unlock()
	switch m.state {
	case PrepareCommit, PrepareAbort, PrepareEpochFence, Dead:
		return kerr.ConcurrentTransactions
	case Ongoing:
		missing := false
		for _, tp := range parts {
			if _, ok := m.partitions[tp]; !ok {
				missing = true
				break
			}
		}
		if !missing {
			return nil
		}
	}
	target := m.clone()
	now := c.nowMs()
	if m.state != Ongoing {
		target.partitions = map[TopicPartition]struct{}{}
		target.startMs = now
	}
	target.state, target.updateMs, target.tv = Ongoing, now, tv
	for _, tp := range parts {
		target.partitions[tp] = struct{}{}
	}
	return s.write(m, target)
}

// lockProducer returns the shard of id, locked, and the state of id, after
// checkProducer; on an error nothing is locked.
func (c *Coordinator) lockProducer(id string, pid int64, epoch int16) (*shard, *txnMeta, error) {
	if id == "" {
		return nil, nil, kerr.InvalidRequest
	}
	s, err := c.shardFor(id)
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	m := s.txns[id]
	if err := checkProducer(m, pid, epoch); err != nil {
		s.mu.Unlock()
		return nil, nil, err
	}
	return s, m, nil
}

// VerifyPartitions answers a partition leader's question (KIP-890 part 1,
// AddPartitionsToTxn v4+ with VerifyOnly): is each partition in the
// producer's ongoing transaction? A partition not in it gets
// INVALID_TXN_STATE; err is set when the whole transaction is refused.
func (c *Coordinator) VerifyPartitions(id string, pid int64, epoch int16, parts []TopicPartition) (map[TopicPartition]error, error) {
	s, err := c.shardFor(id)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.txns[id]
	if m == nil || m.pid != pid {
		return nil, kerr.InvalidProducerIDMapping
	}
	if m.epoch != epoch {
		return nil, kerr.ProducerFenced
	}
	if m.state == PrepareCommit || m.state == PrepareAbort {
		return nil, kerr.ConcurrentTransactions
	}
	out := make(map[TopicPartition]error, len(parts))
	for _, tp := range parts {
		_, in := m.partitions[tp]
		if m.state != Ongoing || !in {
			out[tp] = kerr.InvalidTxnState
		} else {
			out[tp] = nil
		}
	}
	return out, nil
}

// EndTxn commits or aborts the producer's ongoing transaction (Kafka's
// TransactionCoordinator.endTransaction). The answer goes out once the
// PrepareCommit or PrepareAbort is written; the markers follow, and until
// they are all written the id answers CONCURRENT_TRANSACTIONS. A retry of
// an end already done succeeds.
//
// tv is the request's transaction version: from TV2 (EndTxn v5) the end
// bumps the producer's epoch, the markers carry the new epoch, and the
// answer is the producer id and epoch for the next transaction (a new
// producer id at epoch 0 when the epochs are used up). A TV2 abort with
// no transaction ongoing is an empty transaction: it bumps the epoch too.
// A transaction begun under TV2 recognises a retry by the epoch before
// the bump.
func (c *Coordinator) EndTxn(ctx context.Context, id string, pid int64, epoch int16, commit bool, tv int8) (ProducerIDEpoch, error) {
	none := ProducerIDEpoch{-1, -1}
	if id == "" {
		return none, kerr.InvalidRequest
	}
	s, err := c.shardFor(id)
	if err != nil {
		return none, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.txns[id]
	if m == nil {
		return none, kerr.InvalidProducerIDMapping
	}
	v2 := m.tv >= TV2
	// A retry of a TV2 end whose answer was lost: the epoch was bumped,
	// or the producer id rotated.
	retryOverflow := v2 && m.prevPid == pid && epoch == maxEpoch && m.epoch == 0
	retryBump := v2 && int32(m.epoch) == int32(epoch)+1
	retry := retryBump || retryOverflow
	if m.pid != pid && !retryOverflow {
		return none, kerr.InvalidProducerIDMapping
	}
	// Before the epoch check: an end racing the completion of the
	// previous one must not be taken for a fenced producer (KAFKA-18464).
	// Under TV2 the previous end is not complete until its markers are
	// written: Kafka holds the pending CompleteCommit or CompleteAbort
	// from the answer to the EndTxn that prepared it, so any end of the
	// id meanwhile, at the bumped epoch too, is CONCURRENT_TRANSACTIONS.
	if m.pending || (tv >= TV2 && (m.state == PrepareCommit || m.state == PrepareAbort)) {
		return none, kerr.ConcurrentTransactions
	}
	valid := epoch == m.epoch
	if v2 {
		switch m.state {
		case PrepareCommit, PrepareAbort:
			valid = retryBump
		case CompleteCommit, CompleteAbort:
			valid = valid || retry
		}
	}
	if !valid {
		return none, kerr.ProducerFenced
	}
	current := ProducerIDEpoch{m.pid, m.epoch}
	switch m.state {
	case Ongoing:
		return s.endTxn(ctx, m, commit, tv, false)
	case Empty:
		if !commit && tv >= TV2 {
			return s.endTxn(ctx, m, false, tv, true)
		}
	case CompleteCommit:
		switch {
		case commit && (!v2 || retry):
			return current, nil
		case !commit && tv >= TV2 && !retry:
			return s.endTxn(ctx, m, false, tv, true)
		}
	case CompleteAbort:
		switch {
		case !commit && (!v2 || retry):
			return current, nil
		case commit && retry && m.lastEpoch == noEpoch:
			// The coordinator aborted the transaction (its timeout, or a
			// new producer's InitProducerId: neither keeps the epoch
			// before the bump) while this commit was on its way. Kafka 4.4
			// answers INVALID_TXN_STATE, which clients take as fatal;
			// KAFKA-20785 makes it PRODUCER_FENCED, as under TV1. A
			// commit after the producer's own abort stays
			// INVALID_TXN_STATE.
			return none, kerr.ProducerFenced
		case !commit && tv >= TV2:
			return s.endTxn(ctx, m, false, tv, true)
		}
	case PrepareCommit, PrepareAbort, PrepareEpochFence, Dead:
		// Markers on their way (Kafka's pending CompleteCommit or
		// CompleteAbort): whichever end is asked, it waits for them.
		return none, kerr.ConcurrentTransactions
	}
	return none, kerr.InvalidTxnState
}

// endTxn prepares the end of m's transaction as the client asked it
// (Kafka's prepareAbortOrCommit); empty: no transaction is ongoing (a TV2
// abort of nothing). Under TV2 the epoch is bumped, and a producer whose
// epochs are used up is given its next producer id, which it gets once the
// transaction completes. It answers the producer id and epoch the
// producer is to use next. Called with s.mu held.
func (s *shard) endTxn(ctx context.Context, m *txnMeta, commit bool, tv int8, empty bool) (ProducerIDEpoch, error) {
	none := ProducerIDEpoch{-1, -1}
	target := m.clone()
	target.tv = max(tv, TV1)
	if tv >= TV2 {
		if m.epoch >= maxEpoch {
			s.mu.Unlock()
			pid, err := s.c.cfg.NewProducerID(ctx)
			s.mu.Lock()
			if err != nil {
				return none, kerr.CoordinatorNotAvailable
			}
			if !s.active() || s.txns[m.id] != m || m.pending {
				return none, kerr.ConcurrentTransactions
			}
			target.nextPid = pid
		}
		target.lastEpoch, target.epoch = m.epoch, m.epoch+1
	}
	if empty {
		target.partitions = map[TopicPartition]struct{}{}
		target.startMs = s.c.nowMs()
	}
	if err := s.prepareEnd(m, target, commit); err != nil {
		return none, err
	}
	if m.nextPid >= 0 {
		return ProducerIDEpoch{m.nextPid, 0}, nil
	}
	return ProducerIDEpoch{m.pid, m.epoch}, nil
}

// prepareEnd writes target (m's next state, built by the caller) as
// PrepareCommit or PrepareAbort and starts sending its markers. Called
// with s.mu held.
func (s *shard) prepareEnd(m *txnMeta, target txnMeta, commit bool) error {
	target.state = PrepareAbort
	if commit {
		target.state = PrepareCommit
	}
	target.updateMs = s.c.nowMs()
	if err := s.write(m, target); err != nil {
		return err
	}
	s.startCompletion(m)
	return nil
}
