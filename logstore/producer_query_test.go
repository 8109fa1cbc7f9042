package logstore

import "testing"

func TestProducerQueries(t *testing.T) {
	l := coreOpen(t, t.TempDir(), coreConfig())
	if _, _, ok := l.ProducerLastSequence(7); ok {
		t.Fatal("an unknown producer is known")
	}
	if l.ProducerTxnOpen(7, 0) {
		t.Fatal("an unknown producer has a transaction open")
	}
	mustAppend(t, l, txnBatch(t, 3, 7, 0, 0))
	if e, seq, ok := l.ProducerLastSequence(7); !ok || e != 0 || seq != 2 {
		t.Fatalf("last sequence: epoch %d seq %d known %v, want 0 2 true", e, seq, ok)
	}
	if !l.ProducerTxnOpen(7, 0) || l.ProducerTxnOpen(7, 1) {
		t.Fatal("the open transaction of epoch 0 is not seen as such")
	}
	mustMarker(t, l, Marker{ProducerID: 7, ProducerEpoch: 0, CoordinatorEpoch: 1, Commit: true})
	if l.ProducerTxnOpen(7, 0) {
		t.Fatal("a transaction ended by its marker is still open")
	}
}
