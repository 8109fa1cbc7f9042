package logstore

import (
	"fmt"
	"time"
)

// Transaction verification (KIP-890 part 1) as Kafka's UnifiedLog guards
// it: before a partition leader appends a producer's first transactional
// batch, it asks the transaction coordinator whether the partition is in
// the producer's transaction (or, under transactions version 2, has it
// added). A marker can land between that answer and the append: the
// transaction it verified is then over, and the append would open a
// transaction nobody ends. So the leader starts the verification with
// StartTxnVerification, which hands out a guard the producer state keeps,
// and appends with AppendVerified and that guard: any transactional batch
// or marker of the producer appended meanwhile drops the guard, and the
// append of a batch that would open a transaction without the producer's
// current guard is refused (ErrInvalidTxnState). A guard is unique, so a
// stale answer for an earlier verification cannot pass for a new one.

// VerificationGuard is one verification of a producer's first batch in a
// partition (Kafka's VerificationGuard).
type VerificationGuard struct {
	_ byte // not zero-sized: every guard has its own address
}

// openTxnGuard is the guard of an append that needs no verification: the
// producer's transaction at that epoch is open in the log (Kafka's
// VerificationGuard.SENTINEL). It never matches a producer's guard.
var openTxnGuard = &VerificationGuard{}

// verification is a producer's verification under way.
type verification struct {
	guard     *VerificationGuard
	startedMs int64
	epoch     int16 // the newest epoch it was started for
	epochBump bool  // by a transactions version 2 producer (Produce v12+)
}

// StartTxnVerification begins the verification of a transactional batch
// of producer producerID at epoch. needed is false when the producer's
// transaction at that epoch is already open here, and no coordinator need
// be asked; the guard is then the one that says so. Otherwise the guard is
// the producer's verification under way (a new one when none is).
// epochBump says the producer uses transactions version 2 (Produce v12+),
// whose coordinator bumps the epoch at every end.
func (l *Log) StartTxnVerification(producerID int64, epoch int16, epochBump bool) (guard *VerificationGuard, needed bool) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	m := l.pstate
	if m.txnOpen(producerID, epoch) {
		return openTxnGuard, false
	}
	if v, ok := m.verifying[producerID]; ok {
		if epoch > v.epoch {
			v.epoch = epoch
			m.verifying[producerID] = v
		}
		return v.guard, true
	}
	if m.verifying == nil {
		m.verifying = map[int64]verification{}
	}
	v := verification{guard: &VerificationGuard{}, startedMs: time.Now().UnixMilli(), epoch: epoch, epochBump: epochBump}
	m.verifying[producerID] = v
	return v.guard, true
}

// txnOpen reports whether producer id's transaction at epoch is open.
func (m *producerStateManager) txnOpen(id int64, epoch int16) bool {
	e := m.producers[id]
	return e != nil && e.epoch == epoch && e.txnFirstOffset >= 0
}

// checkVerified refuses the transactional batch h, appended with guard,
// when it would open a transaction and guard is not the producer's
// verification under way (Kafka's UnifiedLog.batchMissingRequiredVerification).
// A nil guard is an append that was not verified (verification is off).
func (m *producerStateManager) checkVerified(h *BatchHeader, guard *VerificationGuard) error {
	if guard == nil || !h.IsTransactional() || h.IsControl() || h.ProducerID < 0 || m.txnOpen(h.ProducerID, h.ProducerEpoch) {
		return nil
	}
	if v, ok := m.verifying[h.ProducerID]; ok && guard != openTxnGuard && v.guard == guard {
		return nil
	}
	return fmt.Errorf("%w: Record was not part of an ongoing transaction", ErrInvalidTxnState)
}

// verified drops the verification of h's producer: a transactional batch
// or a marker of it was appended, so its transaction either began or
// ended. One marker leaves it, as in Kafka 4.4's UnifiedLog: under
// transactions version 2 the marker of the previous transaction carries
// the epoch the coordinator bumped to, which is the epoch the next
// transaction's first batch is verified at. That producer starts its next
// transaction as soon as EndTxn answers, so the verification of its first
// batch often begins before the previous marker lands here; dropping it
// then would refuse a batch the coordinator has added.
func (m *producerStateManager) verified(h *BatchHeader) {
	if v, ok := m.verifying[h.ProducerID]; ok && v.epochBump && h.IsControl() && h.ProducerEpoch == v.epoch {
		return
	}
	delete(m.verifying, h.ProducerID)
}

// expireVerifications drops the verifications older than maxAgeMs, as
// Kafka's producer expiration does (a leader that never heard back).
func (m *producerStateManager) expireVerifications(nowMs, maxAgeMs int64) {
	for id, v := range m.verifying {
		if nowMs-v.startedMs >= maxAgeMs {
			delete(m.verifying, id)
		}
	}
}
