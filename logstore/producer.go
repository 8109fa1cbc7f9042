package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"slices"
)

// Idempotent producer state (KIP-98), following Kafka's ProducerStateManager
// and ProducerAppendInfo: per producer id, the current epoch and the
// metadata of its last five batches, which is the window in which a retried
// batch is recognised as a duplicate; and its transaction (KIP-98): the
// first offset of its open transaction, begun by its first transactional
// batch and ended by a control batch (a COMMIT or ABORT marker), and the
// coordinator epoch of its last marker. The smallest first offset of an
// open transaction is the partition's first unstable offset, which bounds
// the last stable offset.

var (
	// ErrOutOfOrderSequence: OUT_OF_ORDER_SEQUENCE_NUMBER (45).
	ErrOutOfOrderSequence = errors.New("logstore: out of order sequence number")
	// ErrInvalidProducerEpoch: an epoch older than the known one,
	// INVALID_PRODUCER_EPOCH (47) / PRODUCER_FENCED (90).
	ErrInvalidProducerEpoch = errors.New("logstore: invalid producer epoch")
	// ErrDuplicateSequence is not returned by check (a duplicate is reported
	// through its result); it exists for callers that need a sentinel for
	// DUPLICATE_SEQUENCE_NUMBER (46).
	ErrDuplicateSequence = errors.New("logstore: duplicate sequence number")
	// ErrCorruptSnapshot: a producer-state snapshot failed its checks; the
	// state must be rebuilt by replaying the log.
	ErrCorruptSnapshot = errors.New("logstore: corrupt producer state snapshot")
)

// producerWindow is how many recent batches per producer are kept for
// duplicate detection (Kafka's NUM_BATCHES_TO_RETAIN, matching the clients'
// max.in.flight.requests.per.connection limit of 5).
const producerWindow = 5

// DuplicateInfo describes the original append of a batch found to be a
// retry: the offsets it got and its timestamp as recorded by update.
type DuplicateInfo struct{ FirstOffset, LastOffset, Timestamp int64 }

type batchMeta struct {
	firstSeq, lastSeq       int32
	firstOffset, lastOffset int64
	timestamp               int64
}

type producerEntry struct {
	epoch         int16
	n             int                       // batches in use, oldest first
	batches       [producerWindow]batchMeta // the last n batches of this epoch
	lastTimestamp int64
	// coordinatorEpoch is that of the producer's last marker, -1 before
	// any; txnFirstOffset the first offset of its open transaction, -1
	// when none is open.
	coordinatorEpoch int32
	txnFirstOffset   int64
}

func newProducerEntry() *producerEntry {
	return &producerEntry{epoch: -1, coordinatorEpoch: -1, txnFirstOffset: -1}
}

func (e *producerEntry) addBatch(b batchMeta) {
	if e.n == producerWindow {
		copy(e.batches[:], e.batches[1:])
		e.n--
	}
	e.batches[e.n] = b
	e.n++
}

// producerStateManager holds the state of every producer that wrote to one
// partition. It is not safe for concurrent use: the Log's append lock
// guards it.
type producerStateManager struct {
	producers map[int64]*producerEntry
	ongoing   map[int64]int64 // producer id → first offset of its open transaction
	// firstOpen caches the smallest value of ongoing (-1: empty); -2 when
	// it must be computed again.
	firstOpen int64
	// verifying are the verifications under way (verify.go), by producer
	// id; in memory only.
	verifying map[int64]verification
}

func newProducerStateManager() *producerStateManager {
	return &producerStateManager{producers: make(map[int64]*producerEntry), ongoing: make(map[int64]int64), firstOpen: -1}
}

// reset forgets every producer (before a full replay of the log).
func (m *producerStateManager) reset() {
	m.producers = make(map[int64]*producerEntry)
	m.ongoing = make(map[int64]int64)
	m.firstOpen = -1
	m.verifying = nil
}

// firstUnstableOffset is the smallest first offset of an open
// transaction, -1 when none is open.
func (m *producerStateManager) firstUnstableOffset() int64 {
	if m.firstOpen != -2 {
		return m.firstOpen
	}
	first := int64(-1)
	for _, off := range m.ongoing {
		if first < 0 || off < first {
			first = off
		}
	}
	m.firstOpen = first
	return first
}

// inSequence reports whether next follows last, wrapping at MaxInt32.
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == maxInt32)
}

// check validates an idempotent batch (ProducerID >= 0) from a client before
// offsets are assigned. A batch equal (same epoch, first and last sequence)
// to one of the producer's last five returns isDup with the original's
// offsets: it must not be appended, and the produce succeeds with them.
// Otherwise err is ErrInvalidProducerEpoch (epoch older than the known one),
// ErrOutOfOrderSequence (a newer epoch not starting at sequence 0, or a
// sequence not following the last one), or nil. An unknown producer may
// start at any sequence. check does not change the state; call update after
// the append.
func (m *producerStateManager) check(h BatchHeader) (dup DuplicateInfo, isDup bool, err error) {
	if h.ProducerID < 0 {
		return dup, false, nil
	}
	e := m.producers[h.ProducerID]
	if e == nil {
		return dup, false, nil
	}
	first, last := h.BaseSequence, h.LastSequence()
	if e.txnFirstOffset >= 0 && !h.IsTransactional() && h.ProducerEpoch >= e.epoch {
		return dup, false, fmt.Errorf("%w: non-transactional batch from producer %d, whose transaction from offset %d is open",
			ErrInvalidTxnState, h.ProducerID, e.txnFirstOffset)
	}
	if h.ProducerEpoch == e.epoch {
		for _, b := range e.batches[:e.n] {
			if b.firstSeq == first && b.lastSeq == last {
				return DuplicateInfo{FirstOffset: b.firstOffset, LastOffset: b.lastOffset, Timestamp: b.timestamp}, true, nil
			}
		}
	}
	if h.ProducerEpoch < e.epoch {
		return dup, false, fmt.Errorf("%w: producer %d epoch %d is older than %d",
			ErrInvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, e.epoch)
	}
	if h.ProducerEpoch != e.epoch {
		if first != 0 && e.epoch != -1 {
			return dup, false, fmt.Errorf("%w: producer %d new epoch %d must start at sequence 0, got %d",
				ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, first)
		}
		return dup, false, nil
	}
	if e.epoch == -1 {
		return dup, false, nil
	}
	lastSeq := int32(-1)
	if e.n > 0 {
		lastSeq = e.batches[e.n-1].lastSeq
	}
	if !inSequence(lastSeq, first) {
		return dup, false, fmt.Errorf("%w: producer %d epoch %d expected sequence %d, got %d",
			ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, addSequence(lastSeq, 1), first)
	}
	return dup, false, nil
}

// update records a batch after it was appended at firstOffset, or while the
// log is replayed on Open (firstOffset = h.BaseOffset). timestamp is what a
// duplicate will report: the log append time for LogAppendTime topics,
// otherwise the batch's MaxTimestamp; a negative value means
// h.MaxTimestamp. Batches without a producer id are ignored; a control
// batch only moves the epoch. No checks are made (the log is the truth).
func (m *producerStateManager) update(h BatchHeader, firstOffset int64, timestamp int64) {
	if h.ProducerID < 0 {
		return
	}
	if timestamp < 0 {
		timestamp = h.MaxTimestamp
	}
	e := m.entry(h.ProducerID, h.ProducerEpoch, timestamp)
	if h.IsControl() {
		return
	}
	if h.IsTransactional() && e.txnFirstOffset < 0 {
		e.txnFirstOffset = firstOffset
		m.ongoing[h.ProducerID] = firstOffset
		if m.firstOpen == -1 {
			m.firstOpen = firstOffset // offsets ascend: an older one stays the first
		}
	}
	if h.BaseSequence < 0 {
		return
	}
	e.addBatch(batchMeta{
		firstSeq:    h.BaseSequence,
		lastSeq:     h.LastSequence(),
		firstOffset: firstOffset,
		lastOffset:  firstOffset + int64(h.LastOffsetDelta),
		timestamp:   timestamp,
	})
}

// entry returns the producer's entry, created when unknown, moved to epoch
// (forgetting the batches of an older one) and to timestamp.
func (m *producerStateManager) entry(id int64, epoch int16, timestamp int64) *producerEntry {
	e := m.producers[id]
	if e == nil {
		e = newProducerEntry()
		m.producers[id] = e
	}
	if e.epoch != epoch {
		e.epoch = epoch
		e.n = 0
	}
	e.lastTimestamp = timestamp
	return e
}

// completedTxn is a transaction a marker ended: its producer, its first
// offset and the marker's offset.
type completedTxn struct {
	producerID              int64
	firstOffset, lastOffset int64
	aborted                 bool
}

// checkMarker validates a marker from the transaction coordinator
// (Kafka 4.4's ProducerAppendInfo.appendEndTxnMarker): an epoch older
// than the producer's is ErrInvalidProducerEpoch, and under transactions
// version 2, whose coordinator bumps the epoch at every end, so is the
// producer's own epoch, unless no transaction is open (a retried marker,
// written again) or the epoch is at its maximum; a coordinator epoch
// older than the one of its last marker is ErrTransactionCoordinatorFenced.
// A marker for an unknown producer is accepted.
func (m *producerStateManager) checkMarker(mk Marker) error {
	e := m.producers[mk.ProducerID]
	if e == nil {
		return nil
	}
	invalid := mk.ProducerEpoch < e.epoch
	if mk.TransactionVersion >= 2 {
		retry := mk.ProducerEpoch == e.epoch && (e.txnFirstOffset < 0 || mk.ProducerEpoch == math.MaxInt16)
		invalid = mk.ProducerEpoch <= e.epoch && !retry
	}
	if invalid {
		return fmt.Errorf("%w: marker for producer %d with epoch %d, not newer than %d (transactions version %d)",
			ErrInvalidProducerEpoch, mk.ProducerID, mk.ProducerEpoch, e.epoch, mk.TransactionVersion)
	}
	if mk.CoordinatorEpoch < e.coordinatorEpoch {
		return fmt.Errorf("%w: marker for producer %d with coordinator epoch %d, older than %d",
			ErrTransactionCoordinatorFenced, mk.ProducerID, mk.CoordinatorEpoch, e.coordinatorEpoch)
	}
	return nil
}

// updateMarker records a control batch h holding the end transaction
// marker mk, appended at offset (or replayed). It returns the transaction
// the marker ended, nil when the producer had none open (an empty
// transaction changes neither the last stable offset nor the aborted
// index). No checks are made (the log is the truth).
func (m *producerStateManager) updateMarker(h BatchHeader, offset, timestamp int64, mk EndTxnMarker) *completedTxn {
	if h.ProducerID < 0 {
		return nil
	}
	if timestamp < 0 {
		timestamp = h.MaxTimestamp
	}
	e := m.entry(h.ProducerID, h.ProducerEpoch, timestamp)
	e.coordinatorEpoch = mk.CoordinatorEpoch
	if e.txnFirstOffset < 0 {
		return nil
	}
	done := &completedTxn{producerID: h.ProducerID, firstOffset: e.txnFirstOffset, lastOffset: offset, aborted: !mk.Commit}
	e.txnFirstOffset = -1
	delete(m.ongoing, h.ProducerID)
	if m.firstOpen == done.firstOffset {
		m.firstOpen = -2
	}
	return done
}

// lastStableAfter is the last stable offset once txn is complete: the
// first offset of the next open transaction, or the offset after txn's
// marker (Kafka's ProducerStateManager.lastStableOffset). Call it after
// updateMarker.
func (m *producerStateManager) lastStableAfter(txn *completedTxn) int64 {
	if first := m.firstUnstableOffset(); first >= 0 {
		return first
	}
	return txn.lastOffset + 1
}

// expire forgets producers whose last batch timestamp is at least maxAgeMs
// before nowMs (producer.id.expiration.ms), never one with an open
// transaction; it returns how many went.
func (m *producerStateManager) expire(nowMs, maxAgeMs int64) int {
	m.expireVerifications(nowMs, maxAgeMs)
	n := 0
	for id, e := range m.producers {
		if e.txnFirstOffset < 0 && nowMs-e.lastTimestamp >= maxAgeMs {
			delete(m.producers, id)
			n++
		}
	}
	return n
}

// lastSequence reports a producer's epoch and last sequence (-1 when it has
// no batch in the window); ok is false for an unknown producer.
func (m *producerStateManager) lastSequence(producerID int64) (epoch int16, seq int32, ok bool) {
	e := m.producers[producerID]
	if e == nil {
		return -1, -1, false
	}
	if e.n == 0 {
		return e.epoch, -1, true
	}
	return e.epoch, e.batches[e.n-1].lastSeq, true
}

// numProducers is how many producers are tracked.
func (m *producerStateManager) numProducers() int { return len(m.producers) }

// Snapshot format, big endian:
//
//	magic        4  "SPSN"
//	version      2  2 (1: without the transaction fields, still read)
//	crc          4  CRC32C of everything after this field
//	lastOffset   8  opaque to the manager: the caller's "state covers the log up to here"
//	count        4  producers, sorted by id
//	per producer:
//	  producerId        8
//	  epoch             2
//	  lastTimestamp     8
//	  coordinatorEpoch  4  v2: of its last marker, -1 none
//	  txnFirstOffset    8  v2: first offset of its open transaction, -1 none
//	  batches           1  0..5, oldest first
//	  per batch: firstSeq 4, lastSeq 4, firstOffset 8, lastOffset 8, timestamp 8
const (
	snapshotMagic      = "SPSN"
	snapshotVersion    = 2
	snapshotHeaderSize = 4 + 2 + 4 + 8 + 4
	snapshotEntryMinV1 = 8 + 2 + 8 + 1
	snapshotEntryMin   = snapshotEntryMinV1 + 4 + 8
	snapshotBatchSize  = 4 + 4 + 8 + 8 + 8
)

// writeSnapshot writes the whole state with one Write. lastOffset is stored
// as given and returned by readSnapshot.
func (m *producerStateManager) writeSnapshot(w io.Writer, lastOffset int64) error {
	ids := make([]int64, 0, len(m.producers))
	size := snapshotHeaderSize
	for id, e := range m.producers {
		ids = append(ids, id)
		size += snapshotEntryMin + e.n*snapshotBatchSize
	}
	slices.Sort(ids)
	be := binary.BigEndian
	b := make([]byte, 0, size)
	b = append(b, snapshotMagic...)
	b = be.AppendUint16(b, snapshotVersion)
	b = append(b, 0, 0, 0, 0) // crc
	b = be.AppendUint64(b, uint64(lastOffset))
	b = be.AppendUint32(b, uint32(len(ids)))
	for _, id := range ids {
		e := m.producers[id]
		b = be.AppendUint64(b, uint64(id))
		b = be.AppendUint16(b, uint16(e.epoch))
		b = be.AppendUint64(b, uint64(e.lastTimestamp))
		b = be.AppendUint32(b, uint32(e.coordinatorEpoch))
		b = be.AppendUint64(b, uint64(e.txnFirstOffset))
		b = append(b, byte(e.n))
		for _, bm := range e.batches[:e.n] {
			b = be.AppendUint32(b, uint32(bm.firstSeq))
			b = be.AppendUint32(b, uint32(bm.lastSeq))
			b = be.AppendUint64(b, uint64(bm.firstOffset))
			b = be.AppendUint64(b, uint64(bm.lastOffset))
			b = be.AppendUint64(b, uint64(bm.timestamp))
		}
	}
	be.PutUint32(b[6:], crc32.Checksum(b[10:], castagnoli))
	_, err := w.Write(b)
	return err
}

// readSnapshot replaces the state with the snapshot read from r and returns
// the lastOffset it was written with. On any error (I/O, ErrCorruptSnapshot
// for a bad magic, version, CRC or structure) the state is left empty and
// the caller replays the log instead.
func (m *producerStateManager) readSnapshot(r io.Reader) (lastOffset int64, err error) {
	m.reset()
	b, err := io.ReadAll(r)
	if err != nil {
		return -1, err
	}
	producers, lastOffset, err := parseSnapshot(b)
	if err != nil {
		return -1, err
	}
	m.producers = producers
	for id, e := range producers {
		if e.txnFirstOffset >= 0 {
			m.ongoing[id] = e.txnFirstOffset
			m.firstOpen = -2
		}
	}
	return lastOffset, nil
}

func corruptSnapshot(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorruptSnapshot}, args...)...)
}

func parseSnapshot(b []byte) (map[int64]*producerEntry, int64, error) {
	be := binary.BigEndian
	if len(b) < snapshotHeaderSize {
		return nil, -1, corruptSnapshot("%d bytes", len(b))
	}
	if string(b[:4]) != snapshotMagic {
		return nil, -1, corruptSnapshot("bad magic")
	}
	version := be.Uint16(b[4:])
	entryMin := snapshotEntryMin
	switch version {
	case 1:
		entryMin = snapshotEntryMinV1
	case snapshotVersion:
	default:
		return nil, -1, corruptSnapshot("unsupported version %d", version)
	}
	if crc32.Checksum(b[10:], castagnoli) != be.Uint32(b[6:]) {
		return nil, -1, corruptSnapshot("CRC mismatch")
	}
	lastOffset := int64(be.Uint64(b[10:]))
	count := be.Uint32(b[18:])
	p := b[snapshotHeaderSize:]
	if uint64(count)*uint64(entryMin) > uint64(len(p)) {
		return nil, -1, corruptSnapshot("%d producers in %d bytes", count, len(p))
	}
	producers := make(map[int64]*producerEntry, count)
	for i := uint32(0); i < count; i++ {
		if len(p) < entryMin {
			return nil, -1, corruptSnapshot("truncated producer %d", i)
		}
		id := int64(be.Uint64(p))
		e := newProducerEntry()
		e.epoch = int16(be.Uint16(p[8:]))
		e.lastTimestamp = int64(be.Uint64(p[10:]))
		q := p[18:]
		if version >= 2 {
			e.coordinatorEpoch = int32(be.Uint32(q))
			e.txnFirstOffset = int64(be.Uint64(q[4:]))
			q = q[12:]
		}
		e.n = int(q[0])
		p = p[entryMin:]
		if id < 0 || producers[id] != nil {
			return nil, -1, corruptSnapshot("bad or repeated producer id %d", id)
		}
		if e.n > producerWindow || len(p) < e.n*snapshotBatchSize {
			return nil, -1, corruptSnapshot("producer %d: %d batches", id, e.n)
		}
		for j := 0; j < e.n; j++ {
			e.batches[j] = batchMeta{
				firstSeq:    int32(be.Uint32(p)),
				lastSeq:     int32(be.Uint32(p[4:])),
				firstOffset: int64(be.Uint64(p[8:])),
				lastOffset:  int64(be.Uint64(p[16:])),
				timestamp:   int64(be.Uint64(p[24:])),
			}
			p = p[snapshotBatchSize:]
		}
		producers[id] = e
	}
	if len(p) != 0 {
		return nil, -1, corruptSnapshot("%d trailing bytes", len(p))
	}
	return producers, lastOffset, nil
}
