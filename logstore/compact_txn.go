package logstore

import (
	"encoding/binary"
	"slices"
	"sort"
)

// Transactions in compaction, as Kafka's LogCleaner and its
// CleanedTransactionMetadata keep them. A pass never reaches an undecided
// transaction (it stops at the last stable offset). Within what it
// cleans, it reads the batches in offset order and follows the aborted
// transactions of the range (from the .txnindex entries): the records of
// an aborted transaction are removed (not mapped as the latest of their
// keys either), those of a committed one are compacted like any other.
// A marker stays while any batch of its transaction is left: an ABORT
// marker whose transaction still has a batch in the range keeps its
// .txnindex entry in the cleaned segment; a COMMIT marker goes once no
// batch of its transaction was read. A marker that may go still waits for
// delete.retention.ms, as a tombstone does, so that a reader that saw the
// transaction's records sees how it ended. A producer's last batch (or,
// when its last entry is a marker, that marker) stays to keep its
// sequence and epoch: an aborted one is kept without its records.

// txnPass follows the transactions of one compaction pass over its
// batches, in offset order.
type txnPass struct {
	pending   []AbortedTxn          // aborted transactions not begun yet, by first offset
	aborted   map[int64]*abortedRun // producer → its aborted transaction being read
	committed map[int64]bool        // producers whose committed transaction has a batch read
}

type abortedRun struct {
	txn      AbortedTxn
	observed bool // a batch of it was read
}

func newTxnPass(aborted []AbortedTxn) *txnPass {
	p := slices.Clone(aborted)
	sort.SliceStable(p, func(i, j int) bool { return p[i].FirstOffset < p[j].FirstOffset })
	return &txnPass{pending: p, aborted: map[int64]*abortedRun{}, committed: map[int64]bool{}}
}

func (t *txnPass) beginUpTo(offset int64) {
	for len(t.pending) > 0 && t.pending[0].FirstOffset <= offset {
		a := t.pending[0]
		t.pending = t.pending[1:]
		if t.aborted[a.ProducerID] == nil {
			t.aborted[a.ProducerID] = &abortedRun{txn: a}
		}
	}
}

// data reads a data batch and reports whether its records belong to an
// aborted transaction.
func (t *txnPass) data(h *BatchHeader) bool {
	t.beginUpTo(h.LastOffset())
	if !h.IsTransactional() {
		return false
	}
	if r := t.aborted[h.ProducerID]; r != nil {
		r.observed = true
		return true
	}
	t.committed[h.ProducerID] = true
	return false
}

// control reads a control batch b and reports whether no batch of its
// transaction is left (the marker may go), and for an ABORT marker whose
// transaction still has a batch, the .txnindex entry to keep.
func (t *txnPass) control(h *BatchHeader, b []byte) (free bool, keep *AbortedTxn) {
	t.beginUpTo(h.LastOffset())
	if h.NumRecords == 0 {
		return true, nil // emptied before
	}
	mk, ok := controlMarker(b, h)
	if !ok {
		return false, nil // not an end transaction marker: kept
	}
	if mk.Commit {
		had := t.committed[h.ProducerID]
		delete(t.committed, h.ProducerID)
		return !had, nil
	}
	r := t.aborted[h.ProducerID]
	delete(t.aborted, h.ProducerID)
	if r != nil && r.observed {
		return false, &r.txn
	}
	return true, nil
}

// producerTail is what compaction must keep of a producer: the last
// offset of its last data batch (its sequence), or, when its last entry
// is a marker (-1), the epoch that marker carries.
type producerTail struct {
	lastData int64
	epoch    int16
}

// keeps reports whether h is its producer's last batch (or marker).
func (p producerTail) keeps(h *BatchHeader) bool {
	if p.lastData >= 0 {
		return h.LastOffset() == p.lastData
	}
	return h.IsControl() && h.ProducerEpoch == p.epoch
}

// emptyBatch is h's batch without records, as Kafka's cleaner writes a
// batch it keeps only for its producer fields: same offsets, epoch,
// producer fields and flags, uncompressed, both timestamps the batch's
// largest.
func emptyBatch(h *BatchHeader) []byte {
	be := binary.BigEndian
	b := make([]byte, BatchHeaderSize)
	be.PutUint64(b[0:], uint64(h.BaseOffset))
	be.PutUint32(b[8:], uint32(batchLengthMin))
	be.PutUint32(b[12:], uint32(h.PartitionLeaderEpoch))
	b[16] = 2
	be.PutUint16(b[21:], uint16(h.Attributes&^attrCodecMask))
	be.PutUint32(b[23:], uint32(h.LastOffsetDelta))
	be.PutUint64(b[27:], uint64(h.MaxTimestamp))
	be.PutUint64(b[35:], uint64(h.MaxTimestamp))
	be.PutUint64(b[43:], uint64(h.ProducerID))
	be.PutUint16(b[51:], uint16(h.ProducerEpoch))
	be.PutUint32(b[53:], uint32(h.BaseSequence))
	putCRC(b)
	return b
}
