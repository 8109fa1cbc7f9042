package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"
)

// Transactions in the log (KIP-98), as Kafka's UnifiedLog and
// ProducerStateManager keep them. A producer's transaction begins with its
// first transactional batch (attributes bit 4) and ends with a control
// batch (bit 5) that the transaction coordinator has the partition leader
// append (AppendMarker, for WriteTxnMarkers): one record whose key is the
// control type and whose value the EndTransactionMarker,
//
//	key:   version int16 (0) | type int16 (0 ABORT, 1 COMMIT)
//	value: version int16 (0) | coordinatorEpoch int32
//
// The first unstable offset is the smallest first offset of an open
// transaction; the last stable offset (what read_committed readers see) is
// that, capped by the high watermark. An ABORT marker ending a non-empty
// transaction adds an entry to the aborted-transaction index of the
// segment it lands in (txnindex.go), which Fetch at read_committed
// answers with (AbortedTxns). Everything derives from the batches of the
// log: followers, recovery and truncation rebuild it by replaying them.

var (
	// ErrTransactionCoordinatorFenced: a marker from a coordinator epoch
	// older than the last one seen for its producer
	// (TRANSACTION_COORDINATOR_FENCED, 52).
	ErrTransactionCoordinatorFenced = errors.New("logstore: transaction coordinator fenced")
	// ErrInvalidTxnState: a non-transactional batch from a producer whose
	// transaction is open (INVALID_TXN_STATE, 48).
	ErrInvalidTxnState = errors.New("logstore: invalid transaction state")
)

// Control record types (Kafka's ControlRecordType).
const (
	controlTypeAbort  = 0
	controlTypeCommit = 1
)

// EndTxnMarker is the content of a control record that ends a transaction.
type EndTxnMarker struct {
	Commit           bool
	CoordinatorEpoch int32
}

// ParseEndTxnMarker decodes a control record's key and value as Kafka's
// EndTransactionMarker.deserialize does: a key of at least 4 bytes with a
// version >= 0 and the type ABORT or COMMIT, a value of at least 6 bytes
// with a version >= 0 (a newer version is read as version 0). Errors wrap
// ErrInvalidRecord.
func ParseEndTxnMarker(key, value []byte) (EndTxnMarker, error) {
	be := binary.BigEndian
	if len(key) < 4 {
		return EndTxnMarker{}, invalidf("control record key of %d bytes", len(key))
	}
	if v := int16(be.Uint16(key)); v < 0 {
		return EndTxnMarker{}, invalidf("control record key version %d", v)
	}
	typ := int16(be.Uint16(key[2:]))
	if typ != controlTypeAbort && typ != controlTypeCommit {
		return EndTxnMarker{}, invalidf("control record type %d is not an end transaction marker", typ)
	}
	if len(value) < 6 {
		return EndTxnMarker{}, invalidf("end transaction marker value of %d bytes", len(value))
	}
	if v := int16(be.Uint16(value)); v < 0 {
		return EndTxnMarker{}, invalidf("end transaction marker version %d", v)
	}
	return EndTxnMarker{Commit: typ == controlTypeCommit, CoordinatorEpoch: int32(be.Uint32(value[2:]))}, nil
}

// AppendEndTxnMarker appends the key and value of mk's control record.
func AppendEndTxnMarker(key, value []byte, mk EndTxnMarker) ([]byte, []byte) {
	typ := uint16(controlTypeAbort)
	if mk.Commit {
		typ = controlTypeCommit
	}
	be := binary.BigEndian
	key = be.AppendUint16(be.AppendUint16(key, 0), typ)
	value = be.AppendUint32(be.AppendUint16(value, 0), uint32(mk.CoordinatorEpoch))
	return key, value
}

// controlMarker returns the end transaction marker of the control batch b
// (uncompressed, as Kafka writes them); ok is false for a control batch
// without records (its transaction compacted away) or one that is not an
// end transaction marker.
func controlMarker(b []byte, h *BatchHeader) (EndTxnMarker, bool) {
	if h.NumRecords <= 0 || int64(len(b)) < h.Size() {
		return EndTxnMarker{}, false
	}
	var mk EndTxnMarker
	found := false
	err := ForEachRecordLimit(b[:h.Size()], 1<<20, func(r Record) bool {
		m, err := ParseEndTxnMarker(r.Key, r.Value)
		mk, found = m, err == nil
		return false
	})
	return mk, err == nil && found
}

// Marker is what the transaction coordinator has a partition leader
// append (WriteTxnMarkers): the end of the transaction of one producer.
type Marker struct {
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
	Commit           bool
	// TransactionVersion is the marker's (WriteTxnMarkers v2, KIP-1228):
	// 2 and up, the coordinator bumped the producer epoch for the marker
	// (KIP-890), which must then be newer than the producer's.
	TransactionVersion int8
}

// markerBatch encodes mk as the control batch Kafka writes
// (MemoryRecords.withEndTransactionMarker): uncompressed, transactional
// and control, no sequence, one record stamped now.
func markerBatch(mk Marker, leaderEpoch int32, now int64, logAppendTime bool) ([]byte, error) {
	key, value := AppendEndTxnMarker(nil, nil, EndTxnMarker{Commit: mk.Commit, CoordinatorEpoch: mk.CoordinatorEpoch})
	return EncodeBatch(BatchSpec{
		PartitionLeaderEpoch: leaderEpoch,
		Codec:                CodecNone,
		ProducerID:           mk.ProducerID,
		ProducerEpoch:        mk.ProducerEpoch,
		BaseSequence:         -1,
		Transactional:        true,
		Control:              true,
		LogAppendTime:        logAppendTime,
		AppendTime:           now,
	}, []Record{{Timestamp: now, Key: key, Value: value}})
}

// AppendMarker appends the control batch that ends producer
// mk.ProducerID's transaction, in leaderEpoch, after Kafka's checks: an
// epoch older than the producer's is ErrInvalidProducerEpoch, a
// coordinator epoch older than that of its last marker
// ErrTransactionCoordinatorFenced. A marker for a producer with no open
// transaction is appended too (it moves the producer's epochs) but changes
// neither the last stable offset nor the aborted index.
func (l *Log) AppendMarker(mk Marker, leaderEpoch int32, now time.Time) (AppendResult, error) {
	if l.closed.Load() {
		return AppendResult{}, ErrClosed
	}
	if mk.ProducerID < 0 {
		return AppendResult{}, invalidf("marker for producer id %d", mk.ProducerID)
	}
	cfg := l.config()
	nowMs := now.UnixMilli()
	b, err := markerBatch(mk, leaderEpoch, nowMs, cfg.TimestampType == LogAppendTime)
	if err != nil {
		return AppendResult{}, err
	}
	h, err := ParseBatchHeader(b)
	if err != nil {
		return AppendResult{}, err
	}
	if err := l.lockAppend(); err != nil {
		return AppendResult{}, err
	}
	defer l.appendMu.Unlock()
	if err := l.pstate.checkMarker(mk); err != nil {
		return AppendResult{}, err
	}
	cfg = l.config()
	first := l.end.Load()
	SetBaseOffset(b, first)
	h.BaseOffset, h.PartitionLeaderEpoch = first, leaderEpoch
	if err := l.writeLocked(cfg, b, []BatchHeader{h}, int64(len(b)), now); err != nil {
		return AppendResult{}, err
	}
	res := AppendResult{FirstOffset: first, LastOffset: first, LogAppendTime: -1, LogStartOffset: l.start.Load()}
	if cfg.TimestampType == LogAppendTime {
		res.LogAppendTime = nowMs
	}
	return res, l.maybeFlushLocked(cfg, now)
}

// applyProducerBatchLocked feeds one appended (or replayed) batch h at
// position pos of segment seg, whose bytes are b when known (nil: only the
// header was read), to the producer state; an ABORT marker ending a
// transaction adds its entry to seg's aborted-transaction index. Caller
// holds appendMu.
func (l *Log) applyProducerBatchLocked(seg *segment, h *BatchHeader, pos int64, b []byte) error {
	if h.ProducerID < 0 {
		return nil
	}
	if h.IsTransactional() {
		l.pstate.verified(h)
	}
	if !h.IsControl() {
		l.pstate.update(*h, h.BaseOffset, h.MaxTimestamp)
		if h.IsTransactional() {
			l.txns.setFirstOpen(l.pstate.firstUnstableOffset())
		}
		return nil
	}
	if b == nil {
		var err error
		if b, err = seg.readBatchAt(h, pos); err != nil {
			return err
		}
	}
	mk, ok := controlMarker(b, h)
	if !ok {
		l.pstate.update(*h, h.BaseOffset, h.MaxTimestamp)
		return nil
	}
	txn := l.pstate.updateMarker(*h, h.BaseOffset, h.MaxTimestamp, mk)
	if txn == nil {
		return nil
	}
	l.txns.completed(txn.firstOffset, txn.lastOffset)
	l.txns.setFirstOpen(l.pstate.firstUnstableOffset())
	if !txn.aborted {
		return nil
	}
	return seg.addAborted(AbortedTxn{ProducerID: txn.producerID, FirstOffset: txn.firstOffset,
		LastOffset: txn.lastOffset, LastStableOffset: l.pstate.lastStableAfter(txn)})
}

// txnView is what readers need of the transactions to compute the last
// stable offset without the append lock: the first offset of the oldest
// open transaction, and the transactions completed by a marker that may
// not be below the high watermark yet. A transaction stays unstable until
// its marker is replicated (Kafka's unreplicatedTxns): before that its
// records would be visible with no marker or aborted entry a reader can
// rely on surviving a failover.
type txnView struct {
	mu           sync.Mutex
	firstOpen    int64     // guarded by mu; -1: none open
	unreplicated []txnSpan // guarded by mu; in marker order
}

type txnSpan struct{ first, last int64 }

func (v *txnView) reset(firstOpen int64) {
	v.mu.Lock()
	v.firstOpen, v.unreplicated = firstOpen, nil
	v.mu.Unlock()
}

func (v *txnView) completed(first, last int64) {
	v.mu.Lock()
	v.unreplicated = append(v.unreplicated, txnSpan{first, last})
	v.mu.Unlock()
}

func (v *txnView) setFirstOpen(first int64) {
	v.mu.Lock()
	v.firstOpen = first
	v.mu.Unlock()
}

func (v *txnView) lastStable(hw, logStart int64) int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	i := 0
	for i < len(v.unreplicated) && v.unreplicated[i].last < hw {
		i++
	}
	if i == len(v.unreplicated) {
		v.unreplicated = nil
	} else {
		v.unreplicated = v.unreplicated[i:]
	}
	first := int64(math.MaxInt64)
	if v.firstOpen >= 0 {
		first = v.firstOpen
	}
	for _, t := range v.unreplicated {
		first = min(first, t.first)
	}
	// A transaction begun below the log start (DeleteRecords, retention)
	// holds the LSO at the log start, as in Kafka.
	return min(hw, max(first, logStart))
}

// LastStableOffset returns the last stable offset for the high watermark
// hw: below it every transaction is decided and its marker replicated
// (read_committed readers stop there). It is hw when no transaction is
// open or awaiting replication of its marker.
func (l *Log) LastStableOffset(hw int64) int64 { return l.txns.lastStable(hw, l.start.Load()) }

// HighWatermarkMoved forgets the completed transactions whose markers are
// below hw (LastStableOffset does too); a follower, whose last stable
// offset nobody asks for, calls it so they do not pile up.
func (l *Log) HighWatermarkMoved(hw int64) { l.txns.lastStable(hw, 0) }

// AbortedTxns returns the aborted transactions with records in [from,
// upper), oldest marker first (what Fetch at read_committed lists): Kafka's
// collectAbortedTransactions, which reads the aborted index of the segment
// holding from and of the later ones until an entry whose last stable
// offset reaches upper shows that no later one can overlap.
func (l *Log) AbortedTxns(from, upper int64) []AbortedTxn {
	var out []AbortedTxn
	segs := l.segments()
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > from }) - 1
	for i = max(i, 0); i < len(segs); i++ {
		done := false
		out, done = segs[i].collectAborted(out, from, upper)
		if done {
			break
		}
	}
	return out
}

// ProducerInfo is one producer's state in a partition (DescribeProducers).
type ProducerInfo struct {
	ProducerID       int64
	ProducerEpoch    int16
	LastSequence     int32 // -1: none
	LastTimestamp    int64
	CoordinatorEpoch int32 // -1: no marker yet
	TxnStartOffset   int64 // first offset of the open transaction, -1: none
}

// Producers returns the state of every producer of the partition, by id.
func (l *Log) Producers() ([]ProducerInfo, error) {
	if err := l.lockAppend(); err != nil {
		return nil, err
	}
	defer l.appendMu.Unlock()
	out := make([]ProducerInfo, 0, len(l.pstate.producers))
	for id, e := range l.pstate.producers {
		seq := int32(-1)
		if e.n > 0 {
			seq = e.batches[e.n-1].lastSeq
		}
		out = append(out, ProducerInfo{ProducerID: id, ProducerEpoch: e.epoch, LastSequence: seq,
			LastTimestamp: e.lastTimestamp, CoordinatorEpoch: e.coordinatorEpoch, TxnStartOffset: e.txnFirstOffset})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	return out, nil
}

func (mk Marker) String() string {
	kind := "ABORT"
	if mk.Commit {
		kind = "COMMIT"
	}
	return fmt.Sprintf("%s(producer %d epoch %d coordinator epoch %d)", kind, mk.ProducerID, mk.ProducerEpoch, mk.CoordinatorEpoch)
}
