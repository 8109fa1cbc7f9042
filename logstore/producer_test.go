package logstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"testing"
)

func pbatch(pid int64, epoch int16, seq int32, n int32) BatchHeader {
	return BatchHeader{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, LastOffsetDelta: n - 1,
		NumRecords: n, MaxTimestamp: 1000 + int64(seq), Magic: 2}
}

// appendTo runs check and, when accepted, update, the way the Log does,
// assigning offsets from *next.
func appendTo(t *testing.T, m *producerStateManager, h BatchHeader, next *int64) (DuplicateInfo, bool, error) {
	t.Helper()
	dup, isDup, err := m.check(h)
	if err != nil || isDup {
		return dup, isDup, err
	}
	first := *next
	m.update(h, first, -1)
	*next += int64(h.LastOffsetDelta) + 1
	return DuplicateInfo{FirstOffset: first, LastOffset: *next - 1, Timestamp: h.MaxTimestamp}, false, nil
}

func TestProducerSequenceRules(t *testing.T) {
	type step struct {
		h       BatchHeader
		wantErr error
		wantDup bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"unknown producer accepts any sequence", []step{
			{h: pbatch(1, 0, 500, 3)},
			{h: pbatch(1, 0, 503, 2)},
			{h: pbatch(2, 7, 0, 1)},
		}},
		{"gap", []step{
			{h: pbatch(1, 0, 0, 5)},
			{h: pbatch(1, 0, 6, 1), wantErr: ErrOutOfOrderSequence},
			{h: pbatch(1, 0, 5, 1)},
		}},
		{"overlap that is no duplicate", []step{
			{h: pbatch(1, 0, 0, 5)},
			{h: pbatch(1, 0, 3, 5), wantErr: ErrOutOfOrderSequence},
			{h: pbatch(1, 0, 0, 4), wantErr: ErrOutOfOrderSequence},
		}},
		{"duplicate of last batch", []step{
			{h: pbatch(1, 0, 0, 5)},
			{h: pbatch(1, 0, 0, 5), wantDup: true},
			{h: pbatch(1, 0, 5, 1)},
		}},
		{"older epoch fenced", []step{
			{h: pbatch(1, 3, 0, 1)},
			{h: pbatch(1, 2, 1, 1), wantErr: ErrInvalidProducerEpoch},
			{h: pbatch(1, 2, 0, 1), wantErr: ErrInvalidProducerEpoch},
		}},
		{"newer epoch must start at 0", []step{
			{h: pbatch(1, 0, 0, 10)},
			{h: pbatch(1, 1, 10, 1), wantErr: ErrOutOfOrderSequence},
			{h: pbatch(1, 1, 0, 1)},
			{h: pbatch(1, 1, 1, 1)},
			{h: pbatch(1, 0, 10, 1), wantErr: ErrInvalidProducerEpoch},
		}},
		{"same sequences under a new epoch are no duplicate", []step{
			{h: pbatch(1, 0, 0, 2)},
			{h: pbatch(1, 1, 0, 2)},
			{h: pbatch(1, 1, 0, 2), wantDup: true},
		}},
		{"sequence wraps at MaxInt32", []step{
			{h: pbatch(1, 0, math.MaxInt32-2, 3)},
			{h: pbatch(1, 0, 0, 2)},
			{h: pbatch(1, 0, 2, 1)},
		}},
		{"batch spanning the wrap", []step{
			{h: pbatch(1, 0, math.MaxInt32-1, 4)},
			{h: pbatch(1, 0, math.MaxInt32-1, 4), wantDup: true},
			{h: pbatch(1, 0, 1, 1), wantErr: ErrOutOfOrderSequence},
			{h: pbatch(1, 0, 2, 1)},
		}},
		{"no wrap before MaxInt32", []step{
			{h: pbatch(1, 0, 100, 1)},
			{h: pbatch(1, 0, 0, 1), wantErr: ErrOutOfOrderSequence},
		}},
		{"producers are independent", []step{
			{h: pbatch(1, 0, 0, 1)},
			{h: pbatch(2, 0, 40, 1)},
			{h: pbatch(1, 0, 1, 1)},
			{h: pbatch(2, 0, 41, 1)},
			{h: pbatch(2, 0, 0, 1), wantErr: ErrOutOfOrderSequence},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newProducerStateManager()
			var next int64
			for i, s := range tt.steps {
				_, isDup, err := appendTo(t, m, s.h, &next)
				if !errors.Is(err, s.wantErr) || (s.wantErr == nil && err != nil) {
					t.Fatalf("step %d (%+v): err = %v, want %v", i, s.h, err, s.wantErr)
				}
				if isDup != s.wantDup {
					t.Fatalf("step %d: dup = %v, want %v", i, isDup, s.wantDup)
				}
			}
		})
	}
}

// TestProducerDuplicateWindow: the last five batches are recognised as
// retries with their original offsets; the sixth-newest is out of order.
func TestProducerDuplicateWindow(t *testing.T) {
	m := newProducerStateManager()
	var next int64 = 100
	var orig []DuplicateInfo
	seq := int32(0)
	for i := 0; i < 6; i++ {
		n := int32(i + 1)
		got, isDup, err := appendTo(t, m, pbatch(9, 2, seq, n), &next)
		if err != nil || isDup {
			t.Fatalf("batch %d: %v %v", i, isDup, err)
		}
		orig = append(orig, got)
		seq += n
	}
	seq = 0
	for i := 0; i < 6; i++ {
		n := int32(i + 1)
		dup, isDup, err := m.check(pbatch(9, 2, seq, n))
		seq += n
		if i == 0 {
			if !errors.Is(err, ErrOutOfOrderSequence) || isDup {
				t.Fatalf("oldest batch outside the window: dup %v err %v", isDup, err)
			}
			continue
		}
		if err != nil || !isDup || dup != orig[i] {
			t.Fatalf("retry of batch %d: %+v %v %v, want %+v", i, dup, isDup, err, orig[i])
		}
	}
	// A duplicate leaves the state untouched: the next sequence still fits.
	if _, isDup, err := m.check(pbatch(9, 2, seq, 1)); err != nil || isDup {
		t.Fatalf("next batch after retries: %v %v", isDup, err)
	}
}

func TestProducerUpdateDetails(t *testing.T) {
	m := newProducerStateManager()
	h := pbatch(4, 1, 10, 3)
	m.update(h, 50, 777) // explicit LogAppendTime
	dup, isDup, err := m.check(h)
	if err != nil || !isDup || dup != (DuplicateInfo{FirstOffset: 50, LastOffset: 52, Timestamp: 777}) {
		t.Fatalf("dup = %+v %v %v", dup, isDup, err)
	}
	if epoch, seq, ok := m.lastSequence(4); !ok || epoch != 1 || seq != 12 {
		t.Fatalf("lastSequence = %d %d %v", epoch, seq, ok)
	}
	// Batches without a producer id are not tracked; check accepts them.
	m.update(pbatch(-1, -1, -1, 5), 60, -1)
	if m.numProducers() != 1 {
		t.Fatalf("%d producers", m.numProducers())
	}
	if _, isDup, err := m.check(pbatch(-1, -1, -1, 5)); isDup || err != nil {
		t.Fatal("non-idempotent batch checked")
	}
	// A control batch with a newer epoch bumps the epoch and clears the window.
	ctrl := pbatch(4, 2, -1, 1)
	ctrl.Attributes = attrControl
	m.update(ctrl, 70, -1)
	if epoch, seq, ok := m.lastSequence(4); !ok || epoch != 2 || seq != -1 {
		t.Fatalf("after control batch: %d %d %v", epoch, seq, ok)
	}
	if _, _, err := m.check(pbatch(4, 2, 5, 1)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("same epoch, empty window, sequence 5: %v", err)
	}
	if _, _, err := m.check(pbatch(4, 2, 0, 1)); err != nil {
		t.Fatalf("same epoch, empty window, sequence 0: %v", err)
	}
	// Replay ignores the rules: the log is the truth.
	m.update(pbatch(4, 1, 99, 1), 80, -1)
	if epoch, seq, _ := m.lastSequence(4); epoch != 1 || seq != 99 {
		t.Fatalf("replayed older epoch: %d %d", epoch, seq)
	}
	m.reset()
	if m.numProducers() != 0 {
		t.Fatal("reset kept producers")
	}
}

func TestProducerExpire(t *testing.T) {
	m := newProducerStateManager()
	m.update(pbatch(1, 0, 0, 1), 0, 1_000)
	m.update(pbatch(2, 0, 0, 1), 1, 5_000)
	if n := m.expire(10_000, 6_000); n != 1 || m.numProducers() != 1 {
		t.Fatalf("expired %d, left %d", n, m.numProducers())
	}
	if _, _, ok := m.lastSequence(1); ok {
		t.Fatal("producer 1 not expired")
	}
	// An expired producer is unknown again: any sequence is accepted.
	if _, _, err := m.check(pbatch(1, 0, 42, 1)); err != nil {
		t.Fatal(err)
	}
}

func snapshotFixture(t *testing.T) (*producerStateManager, []byte) {
	t.Helper()
	m := newProducerStateManager()
	var next int64
	for pid := int64(0); pid < 4; pid++ {
		for i := int32(0); i < int32(pid)*3; i++ { // 0, 3, 6 (window full) and 9 batches
			if _, _, err := appendTo(t, m, pbatch(pid*1000, int16(pid), i*2, 2), &next); err != nil {
				t.Fatal(err)
			}
		}
	}
	ctrl := pbatch(7, 3, -1, 1)
	ctrl.Attributes = attrControl
	m.update(ctrl, next, -1) // a producer with an epoch and no batches
	next++
	txn := pbatch(8, 1, 0, 2)
	txn.Attributes = attrTransactional
	m.update(txn, next, -1) // an open transaction
	mk := pbatch(9, 2, -1, 1)
	mk.Attributes = attrTransactional | attrControl
	m.updateMarker(mk, next+2, -1, EndTxnMarker{Commit: true, CoordinatorEpoch: 7}) // a marker's coordinator epoch
	var buf bytes.Buffer
	if err := m.writeSnapshot(&buf, 12345); err != nil {
		t.Fatal(err)
	}
	return m, buf.Bytes()
}

func TestProducerSnapshotRoundTrip(t *testing.T) {
	m, snap := snapshotFixture(t)
	r := newProducerStateManager()
	r.update(pbatch(555, 0, 0, 1), 0, -1) // replaced by the snapshot
	off, err := r.readSnapshot(bytes.NewReader(snap))
	if err != nil || off != 12345 {
		t.Fatalf("readSnapshot = %d, %v", off, err)
	}
	if r.numProducers() != m.numProducers() {
		t.Fatalf("%d producers, want %d", r.numProducers(), m.numProducers())
	}
	for id, e := range m.producers {
		if got := r.producers[id]; got == nil || *got != *e {
			t.Fatalf("producer %d: %+v, want %+v", id, got, e)
		}
	}
	if _, _, ok := r.lastSequence(555); ok {
		t.Fatal("readSnapshot kept state from before")
	}
	// The window survives: a retry of each of the last five batches is a
	// duplicate with its original offsets, and the sequence continues.
	for i := int32(4); i < 9; i++ {
		a, aDup, aErr := m.check(pbatch(3000, 3, i*2, 2))
		b, bDup, bErr := r.check(pbatch(3000, 3, i*2, 2))
		if a != b || aDup != bDup || !aDup || aErr != nil || bErr != nil {
			t.Fatalf("batch %d: original %+v %v %v, restored %+v %v %v", i, a, aDup, aErr, b, bDup, bErr)
		}
	}
	if _, _, err := r.check(pbatch(3000, 3, 18, 1)); err != nil {
		t.Fatal(err)
	}
	// Writing the restored state again gives the same bytes.
	var again bytes.Buffer
	if err := r.writeSnapshot(&again, 12345); err != nil || !bytes.Equal(again.Bytes(), snap) {
		t.Fatalf("snapshot not stable: %v", err)
	}
}

func TestProducerSnapshotCorruption(t *testing.T) {
	_, snap := snapshotFixture(t)
	readErr := func(b []byte) error {
		m := newProducerStateManager()
		m.update(pbatch(1, 0, 0, 1), 0, -1)
		_, err := m.readSnapshot(bytes.NewReader(b))
		if err != nil && m.numProducers() != 0 {
			t.Fatalf("state left behind after a failed read")
		}
		return err
	}
	// Every single-bit flip anywhere is detected.
	for i := range snap {
		for bit := 0; bit < 8; bit++ {
			c := bytes.Clone(snap)
			c[i] ^= 1 << bit
			if err := readErr(c); !errors.Is(err, ErrCorruptSnapshot) {
				t.Fatalf("flip of byte %d bit %d: err = %v", i, bit, err)
			}
		}
	}
	// Every truncation, and trailing bytes.
	for n := 0; n < len(snap); n++ {
		if err := readErr(snap[:n]); !errors.Is(err, ErrCorruptSnapshot) {
			t.Fatalf("truncated to %d: err = %v", n, err)
		}
	}
	if err := readErr(append(bytes.Clone(snap), 0)); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("trailing byte: err = %v", err)
	}
	// Structurally wrong content with a valid CRC is still refused.
	restamp := func(b []byte) []byte {
		binary.BigEndian.PutUint32(b[6:], crc32c(b[10:]))
		return b
	}
	hugeCount := restamp(binary.BigEndian.AppendUint32(bytes.Clone(snap[:18]), math.MaxUint32))
	if err := readErr(hugeCount); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("huge count: %v", err)
	}
	tooManyBatches := bytes.Clone(snap)
	tooManyBatches[snapshotHeaderSize+snapshotEntryMin-1] = 6 // first producer's batch count
	if err := readErr(restamp(tooManyBatches)); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("6 batches: %v", err)
	}
	badVersion := bytes.Clone(snap)
	badVersion[5] = 3
	if err := readErr(badVersion); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("version 3: %v", err)
	}
	// An I/O error is returned as is.
	ioErr := errors.New("disk gone")
	if _, err := newProducerStateManager().readSnapshot(io.MultiReader(bytes.NewReader(snap[:10]), errReader{ioErr})); !errors.Is(err, ioErr) {
		t.Fatalf("read error: %v", err)
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func crc32c(b []byte) uint32 { return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)) }
