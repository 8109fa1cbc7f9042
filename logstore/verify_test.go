package logstore

import (
	"errors"
	"testing"
)

// The verification guard (Kafka's VerificationGuard): a marker landing
// between a producer's verification and the append of its first
// transactional batch makes the append fail instead of opening a
// transaction nobody ends; a stale guard does not pass for a newer
// verification; once the transaction is open no verification is needed.
func TestTxnVerificationGuard(t *testing.T) {
	l := coreOpen(t, t.TempDir(), coreConfig())
	const pid = 7

	// The plain path: verify, append, and the transaction is open.
	g, needed := l.StartTxnVerification(pid, 0, false)
	if !needed || g == nil {
		t.Fatalf("first batch: needed %v guard %v", needed, g)
	}
	if again, _ := l.StartTxnVerification(pid, 0, false); again != g {
		t.Fatal("a second verification under way got another guard")
	}
	if _, err := l.AppendVerified(txnBatch(t, 1, pid, 0, 0), 3, coreT0, g); err != nil {
		t.Fatalf("verified append: %v", err)
	}
	open, needed := l.StartTxnVerification(pid, 0, false)
	if needed {
		t.Fatal("a batch of the open transaction needs verification")
	}
	if _, err := l.AppendVerified(txnBatch(t, 1, pid, 0, 1), 3, coreT0, open); err != nil {
		t.Fatalf("append to the open transaction: %v", err)
	}
	mustMarker(t, l, Marker{ProducerID: pid, ProducerEpoch: 0, Commit: true}) // 2

	// A marker between the verification and the append: refused, nothing
	// appended, no transaction left open.
	g1, _ := l.StartTxnVerification(pid, 0, false)
	mustMarker(t, l, Marker{ProducerID: pid, ProducerEpoch: 0}) // 3
	_, err := l.AppendVerified(txnBatch(t, 1, pid, 0, 2), 3, coreT0, g1)
	if !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("append after a marker landed: %v, want ErrInvalidTxnState", err)
	}
	if end := l.EndOffset(); end != 4 {
		t.Fatalf("log end %d, want 4", end)
	}
	if l.ProducerTxnOpen(pid, 0) || l.LastStableOffset(4) != 4 {
		t.Fatalf("a transaction was left open: LSO %d", l.LastStableOffset(4))
	}

	// ABA: a verification started after the marker has a new guard; the
	// stale one still fails, the new one passes.
	g2, _ := l.StartTxnVerification(pid, 0, false)
	if g2 == g1 {
		t.Fatal("the verification after the marker reused the stale guard")
	}
	if _, err := l.AppendVerified(txnBatch(t, 1, pid, 0, 2), 3, coreT0, g1); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("append with the stale guard: %v, want ErrInvalidTxnState", err)
	}
	if _, err := l.AppendVerified(txnBatch(t, 1, pid, 0, 2), 3, coreT0, g2); err != nil {
		t.Fatalf("append with the current guard: %v", err)
	}

	// The guard saying the transaction is open does not open a new one.
	mustMarker(t, l, Marker{ProducerID: pid, ProducerEpoch: 0})
	if _, err := l.AppendVerified(txnBatch(t, 1, pid, 0, 3), 3, coreT0, open); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("append with the open guard after the end: %v, want ErrInvalidTxnState", err)
	}
	// Without a guard (verification off) nothing is checked.
	if _, err := l.Append(txnBatch(t, 1, pid, 0, 3), 3, coreT0); err != nil {
		t.Fatalf("unverified append: %v", err)
	}
}

// Under transactions version 2 the producer's next transaction runs at the
// epoch its previous marker carries; a verification of its first batch
// begun before that marker landed survives the marker (Kafka 4.4 keeps it
// too), while a version 1 producer's still drops it.
func TestTxnVerificationSurvivesTV2Marker(t *testing.T) {
	l := coreOpen(t, t.TempDir(), coreConfig())
	const pid = 7
	g, _ := l.StartTxnVerification(pid, 0, true)
	if _, err := l.AppendVerified(txnBatch(t, 1, pid, 0, 0), 3, coreT0, g); err != nil {
		t.Fatalf("verified append: %v", err)
	}
	// EndTxn answered epoch 1; the next transaction's first batch is
	// verified before the coordinator's marker (at epoch 1) lands.
	next, needed := l.StartTxnVerification(pid, 1, true)
	if !needed {
		t.Fatal("the next transaction's first batch needs no verification")
	}
	mustMarker(t, l, Marker{ProducerID: pid, ProducerEpoch: 1, Commit: true, TransactionVersion: 2}) // 1
	if _, err := l.AppendVerified(txnBatch(t, 1, pid, 1, 0), 3, coreT0, next); err != nil {
		t.Fatalf("first batch of the next transaction after the previous marker: %v", err)
	}
	if !l.ProducerTxnOpen(pid, 1) {
		t.Fatal("the next transaction is not open")
	}
	// Its own marker, at epoch 2, drops a verification begun at epoch 1.
	stale, _ := l.StartTxnVerification(pid, 1, true)
	if stale != openTxnGuard {
		t.Fatal("a batch of the open transaction was sent to verification")
	}
	mustMarker(t, l, Marker{ProducerID: pid, ProducerEpoch: 2, TransactionVersion: 2}) // 3
	// A transactions version 1 producer keeps its epoch: a marker at that
	// epoch ended its transaction, and drops the verification.
	g3, _ := l.StartTxnVerification(pid, 2, false)
	mustMarker(t, l, Marker{ProducerID: pid, ProducerEpoch: 2}) // 4
	if _, err := l.AppendVerified(txnBatch(t, 1, pid, 2, 0), 3, coreT0, g3); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("version 1 append after a marker at its epoch: %v, want ErrInvalidTxnState", err)
	}
}

// A verification whose answer never came is forgotten with the producers
// (producer.id.expiration.ms).
func TestTxnVerificationExpires(t *testing.T) {
	m := newProducerStateManager()
	m.verifying = map[int64]verification{1: {guard: &VerificationGuard{}, startedMs: 1000}, 2: {guard: &VerificationGuard{}, startedMs: 9000}}
	m.expire(10_000, 5_000)
	if _, ok := m.verifying[1]; ok || len(m.verifying) != 1 {
		t.Fatalf("verifications after expiry: %v", m.verifying)
	}
}
