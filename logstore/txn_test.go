package logstore

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// txnBatch builds a transactional client batch of n records.
func txnBatch(t testing.TB, n int, pid int64, epoch int16, seq int32) []byte {
	t.Helper()
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = Record{Timestamp: coreT0.UnixMilli(), Key: []byte{byte(i)}, Value: []byte("txn")}
	}
	b, err := EncodeBatch(BatchSpec{PartitionLeaderEpoch: -1, ProducerID: pid, ProducerEpoch: epoch,
		BaseSequence: seq, Transactional: true}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustAppend(t testing.TB, l *Log, b []byte) AppendResult {
	t.Helper()
	res, err := l.Append(b, 3, coreT0)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return res
}

func mustMarker(t testing.TB, l *Log, mk Marker) int64 {
	t.Helper()
	res, err := l.AppendMarker(mk, 3, coreT0)
	if err != nil {
		t.Fatalf("AppendMarker %v: %v", mk, err)
	}
	return res.FirstOffset
}

// txnFixture writes: 0-1 plain, 2-4 txn of producer 1, 5-6 txn of
// producer 2, 7 ABORT of 1. Producer 2 stays open.
func txnFixture(t testing.TB, l *Log) {
	t.Helper()
	mustAppend(t, l, coreBatch(t, 2, coreT0.UnixMilli(), 10))
	if r := mustAppend(t, l, txnBatch(t, 3, 1, 0, 0)); r.FirstOffset != 2 {
		t.Fatalf("first txn batch at %d", r.FirstOffset)
	}
	mustAppend(t, l, txnBatch(t, 2, 2, 0, 0))
	if off := mustMarker(t, l, Marker{ProducerID: 1, ProducerEpoch: 0, CoordinatorEpoch: 5}); off != 7 {
		t.Fatalf("marker at %d", off)
	}
}

func checkTxnState(t testing.TB, l *Log, wantLSO int64, wantAborted []AbortedTxn) {
	t.Helper()
	end := l.EndOffset()
	if got := l.LastStableOffset(end); got != wantLSO {
		t.Fatalf("LastStableOffset(%d) = %d, want %d", end, got, wantLSO)
	}
	if got := l.AbortedTxns(0, end); !slices.Equal(got, wantAborted) {
		t.Fatalf("AbortedTxns = %+v, want %+v", got, wantAborted)
	}
}

func TestTxnLastStableOffset(t *testing.T) {
	l := coreOpen(t, t.TempDir(), coreConfig())
	if got := l.LastStableOffset(0); got != 0 {
		t.Fatalf("empty log: LSO %d", got)
	}
	mustAppend(t, l, coreBatch(t, 2, coreT0.UnixMilli(), 10))
	mustAppend(t, l, txnBatch(t, 3, 1, 0, 0))
	for hw, want := range map[int64]int64{0: 0, 2: 2, 4: 2, 5: 2} {
		if got := l.LastStableOffset(hw); got != want {
			t.Fatalf("open txn at 2, hw %d: LSO %d, want %d", hw, got, want)
		}
	}
	mustAppend(t, l, txnBatch(t, 2, 2, 0, 0))
	mustMarker(t, l, Marker{ProducerID: 1, ProducerEpoch: 0, CoordinatorEpoch: 5})
	// Until the marker (7) is below the high watermark, the aborted
	// transaction keeps the LSO at its first offset.
	if got := l.LastStableOffset(7); got != 2 {
		t.Fatalf("marker not replicated: LSO %d, want 2", got)
	}
	checkTxnState(t, l, 5, []AbortedTxn{{ProducerID: 1, FirstOffset: 2, LastOffset: 7, LastStableOffset: 5}})
	// A second transaction of producer 1, then producer 2 commits.
	mustAppend(t, l, txnBatch(t, 1, 1, 0, 3))                                                    // 8
	mustMarker(t, l, Marker{ProducerID: 2, ProducerEpoch: 0, CoordinatorEpoch: 5, Commit: true}) // 9
	checkTxnState(t, l, 8, []AbortedTxn{{ProducerID: 1, FirstOffset: 2, LastOffset: 7, LastStableOffset: 5}})
	mustMarker(t, l, Marker{ProducerID: 1, ProducerEpoch: 0, CoordinatorEpoch: 5}) // 10: abort
	all := []AbortedTxn{{ProducerID: 1, FirstOffset: 2, LastOffset: 7, LastStableOffset: 5},
		{ProducerID: 1, FirstOffset: 8, LastOffset: 10, LastStableOffset: 11}}
	checkTxnState(t, l, 11, all)
	// The lookup is by overlap with [from, upper).
	for _, c := range []struct {
		from, upper int64
		want        []AbortedTxn
	}{
		{0, 2, nil}, {0, 3, all[:1]}, {7, 8, all[:1]}, {8, 9, all[1:]}, {9, 11, all[1:]}, {11, 11, nil},
	} {
		if got := l.AbortedTxns(c.from, c.upper); !slices.Equal(got, c.want) {
			t.Errorf("AbortedTxns(%d, %d) = %+v, want %+v", c.from, c.upper, got, c.want)
		}
	}
	// An empty transaction's marker changes nothing.
	mustMarker(t, l, Marker{ProducerID: 3, ProducerEpoch: 0, CoordinatorEpoch: 5})
	checkTxnState(t, l, 12, all)
}

func TestTxnMarkerChecks(t *testing.T) {
	l := coreOpen(t, t.TempDir(), coreConfig())
	txnFixture(t, l)
	end := l.EndOffset()
	// A coordinator epoch older than producer 1's last marker is fenced.
	if _, err := l.AppendMarker(Marker{ProducerID: 1, ProducerEpoch: 0, CoordinatorEpoch: 4}, 3, coreT0); !errors.Is(err, ErrTransactionCoordinatorFenced) {
		t.Fatalf("old coordinator epoch: %v", err)
	}
	// Producer 2 is at epoch 1 after a bump: a marker for epoch 0 is refused.
	mustAppend(t, l, txnBatch(t, 1, 2, 1, 0))
	end++
	if _, err := l.AppendMarker(Marker{ProducerID: 2, ProducerEpoch: 0, CoordinatorEpoch: 5}, 3, coreT0); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("old producer epoch: %v", err)
	}
	// A transactional batch from an older epoch is refused too.
	if _, err := l.Append(txnBatch(t, 1, 2, 0, 2), 3, coreT0); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("old epoch batch: %v", err)
	}
	// A non-transactional batch while the producer's transaction is open.
	if _, err := l.Append(coreBatchP(t, 1, coreT0.UnixMilli(), 5, 2, 1, 1), 3, coreT0); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("plain batch in a transaction: %v", err)
	}
	if l.EndOffset() != end {
		t.Fatalf("refused appends moved the end to %d, want %d", l.EndOffset(), end)
	}
	// A client control batch is refused.
	ctrl, err := markerBatch(Marker{ProducerID: 2, ProducerEpoch: 1, Commit: true}, -1, coreT0.UnixMilli(), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctrl, 3, coreT0); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("client control batch: %v", err)
	}
	// Producer state for DescribeProducers.
	ps, err := l.Producers()
	if err != nil {
		t.Fatal(err)
	}
	want := []ProducerInfo{
		{ProducerID: 1, ProducerEpoch: 0, LastSequence: 2, LastTimestamp: coreT0.UnixMilli(), CoordinatorEpoch: 5, TxnStartOffset: -1},
		{ProducerID: 2, ProducerEpoch: 1, LastSequence: 0, LastTimestamp: coreT0.UnixMilli(), CoordinatorEpoch: -1, TxnStartOffset: 5},
	}
	if !slices.Equal(ps, want) {
		t.Fatalf("Producers = %+v, want %+v", ps, want)
	}
}

func TestTxnStateSurvivesReopen(t *testing.T) {
	wantAborted := []AbortedTxn{{ProducerID: 1, FirstOffset: 2, LastOffset: 7, LastStableOffset: 5}}
	for _, crash := range []bool{false, true} {
		dir := t.TempDir()
		l, err := Open(dir, coreConfig(), nil)
		if err != nil {
			t.Fatal(err)
		}
		txnFixture(t, l)
		checkTxnState(t, l, 5, wantAborted)
		if crash {
			coreCrash(t, l)
		} else if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if !crash {
			b, err := os.ReadFile(filepath.Join(dir, "00000000000000000000.txnindex"))
			if err != nil || len(b) != txnIndexEntrySize {
				t.Fatalf(".txnindex: %d bytes, %v", len(b), err)
			}
			if got, err := ParseTxnIndex(b); err != nil || !slices.Equal(got, wantAborted) {
				t.Fatalf(".txnindex holds %+v, %v", got, err)
			}
		}
		l = coreOpen(t, dir, coreConfig())
		checkTxnState(t, l, 5, wantAborted)
		// The open transaction's producer is known: its marker ends it.
		mustMarker(t, l, Marker{ProducerID: 2, ProducerEpoch: 0, CoordinatorEpoch: 5})
		checkTxnState(t, l, 9, append(wantAborted, AbortedTxn{ProducerID: 2, FirstOffset: 5, LastOffset: 8, LastStableOffset: 9}))
	}
}

func TestTxnIndexRebuiltAfterLoss(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, coreConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	txnFixture(t, l)
	coreCrash(t, l)
	// The index file torn (a crash in its write): recovery rebuilds it.
	path := filepath.Join(dir, "00000000000000000000.txnindex")
	if err := os.WriteFile(path, make([]byte, 20), 0o644); err != nil {
		t.Fatal(err)
	}
	l = coreOpen(t, dir, coreConfig())
	checkTxnState(t, l, 5, []AbortedTxn{{ProducerID: 1, FirstOffset: 2, LastOffset: 7, LastStableOffset: 5}})
}

func TestTxnTruncation(t *testing.T) {
	l := coreOpen(t, t.TempDir(), coreConfig())
	txnFixture(t, l)
	// Cutting the ABORT marker reopens producer 1's transaction.
	if _, err := l.TruncateTo(7); err != nil {
		t.Fatal(err)
	}
	checkTxnState(t, l, 2, nil)
	mustMarker(t, l, Marker{ProducerID: 1, ProducerEpoch: 0, CoordinatorEpoch: 5, Commit: true})
	checkTxnState(t, l, 5, nil)
	// Cutting into a transaction's batches drops it.
	if _, err := l.TruncateTo(5); err != nil {
		t.Fatal(err)
	}
	checkTxnState(t, l, 2, nil)
	if _, err := l.TruncateTo(2); err != nil {
		t.Fatal(err)
	}
	checkTxnState(t, l, 2, nil)
}

func TestTxnFollowerBuildsSameState(t *testing.T) {
	leader := coreOpen(t, t.TempDir(), coreConfig())
	txnFixture(t, leader)
	b, err := leader.ReadBytes(0, 1<<20, -1)
	if err != nil {
		t.Fatal(err)
	}
	f := coreOpen(t, t.TempDir(), coreConfig())
	if _, err := f.AppendAsFollower(b, coreT0); err != nil {
		t.Fatal(err)
	}
	checkTxnState(t, f, 5, []AbortedTxn{{ProducerID: 1, FirstOffset: 2, LastOffset: 7, LastStableOffset: 5}})
}

func TestTxnOpenProducerNotExpired(t *testing.T) {
	m := newProducerStateManager()
	h := pbatch(1, 0, 0, 1)
	h.Attributes = attrTransactional
	m.update(h, 0, 1_000)
	m.update(pbatch(2, 0, 0, 1), 1, 1_000)
	if n := m.expire(1_000_000, 10); n != 1 || m.producers[1] == nil {
		t.Fatalf("expired %d, producer 1 kept: %v", n, m.producers[1] != nil)
	}
}

func TestParseEndTxnMarker(t *testing.T) {
	key, value := AppendEndTxnMarker(nil, nil, EndTxnMarker{Commit: true, CoordinatorEpoch: 9})
	if mk, err := ParseEndTxnMarker(key, value); err != nil || mk != (EndTxnMarker{Commit: true, CoordinatorEpoch: 9}) {
		t.Fatalf("round trip: %+v %v", mk, err)
	}
	for _, c := range []struct{ key, value []byte }{
		{key[:3], value}, {[]byte{0xff, 0xff, 0, 1}, value}, {[]byte{0, 0, 0, 2}, value},
		{key, value[:5]}, {key, []byte{0x80, 0, 0, 0, 0, 0}},
	} {
		if _, err := ParseEndTxnMarker(c.key, c.value); !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("ParseEndTxnMarker(%x, %x) = %v", c.key, c.value, err)
		}
	}
	// A newer value version is read as version 0, with trailing bytes.
	if mk, err := ParseEndTxnMarker([]byte{0, 0, 0, 0}, []byte{0, 1, 0, 0, 0, 3, 9, 9}); err != nil || mk != (EndTxnMarker{CoordinatorEpoch: 3}) {
		t.Fatalf("newer version: %+v %v", mk, err)
	}
}

func FuzzEndTxnMarker(f *testing.F) {
	key, value := AppendEndTxnMarker(nil, nil, EndTxnMarker{CoordinatorEpoch: 1})
	f.Add(key, value)
	f.Add([]byte{}, []byte{})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		mk, err := ParseEndTxnMarker(key, value)
		if err != nil {
			return
		}
		k, v := AppendEndTxnMarker(nil, nil, mk)
		if again, err := ParseEndTxnMarker(k, v); err != nil || again != mk {
			t.Fatalf("re-encoded %+v reads as %+v, %v", mk, again, err)
		}
	})
}

func FuzzTxnIndex(f *testing.F) {
	f.Add(appendAbortedTxn(appendAbortedTxn(nil, AbortedTxn{1, 2, 3, 4}), AbortedTxn{5, 6, 7, 8}))
	f.Add([]byte{0, 1, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseTxnIndex(b)
		if len(got) > len(b)/txnIndexEntrySize {
			t.Fatalf("%d entries from %d bytes", len(got), len(b))
		}
		var again []byte
		for _, e := range got {
			again = appendAbortedTxn(again, e)
		}
		if err == nil && string(again) != string(b) {
			t.Fatal("entries do not re-encode to the input")
		}
		if string(again) != string(b[:len(again)]) {
			t.Fatal("entries are not a prefix of the input")
		}
	})
}

func TestTxnIndexSurvivesCompaction(t *testing.T) {
	cfg := coreConfig()
	cfg.Compact = true
	l := coreOpen(t, t.TempDir(), cfg)
	txnFixture(t, l)
	mustMarker(t, l, Marker{ProducerID: 2, ProducerEpoch: 0, CoordinatorEpoch: 5, Commit: true})
	for range 3 { // supersede offsets 0-1 and roll past the transactions
		coreAppend(t, l, 2, coreT0.UnixMilli(), 30<<10)
	}
	if len(l.segments()) < 2 {
		t.Fatalf("%d segments, want a sealed one", len(l.segments()))
	}
	st, err := l.Compact(coreT0, CompactOptions{UpTo: l.LastStableOffset(l.EndOffset())})
	if err != nil || st.Segments == 0 {
		t.Fatalf("Compact: %+v, %v", st, err)
	}
	want := []AbortedTxn{{ProducerID: 1, FirstOffset: 2, LastOffset: 7, LastStableOffset: 5}}
	if got := l.AbortedTxns(0, l.EndOffset()); !slices.Equal(got, want) {
		t.Fatalf("after compaction: %+v, want %+v", got, want)
	}
}

func TestTxnHighWatermarkMovedForgetsDecided(t *testing.T) {
	l := coreOpen(t, t.TempDir(), coreConfig())
	txnFixture(t, l)
	l.HighWatermarkMoved(8)
	l.txns.mu.Lock()
	n := len(l.txns.unreplicated)
	l.txns.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d completed transactions kept past the high watermark", n)
	}
	checkTxnState(t, l, 5, []AbortedTxn{{ProducerID: 1, FirstOffset: 2, LastOffset: 7, LastStableOffset: 5}})
}

// txnRecords builds a transactional batch of keyed records.
func txnRecords(t testing.TB, pid int64, seq int32, kv ...string) []byte {
	t.Helper()
	var recs []Record
	for i := 0; i+1 < len(kv); i += 2 {
		recs = append(recs, Record{Timestamp: coreT0.UnixMilli(), Key: []byte(kv[i]), Value: []byte(kv[i+1])})
	}
	b, err := EncodeBatch(BatchSpec{PartitionLeaderEpoch: -1, ProducerID: pid, BaseSequence: seq, Transactional: true}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func plainRecord(t testing.TB, key string, valueSize int) []byte {
	t.Helper()
	b, err := BuildBatch(0, CodecNone, []Record{{Timestamp: coreT0.UnixMilli(), Key: []byte(key), Value: make([]byte, valueSize)}}, -1, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// batchesAt returns the record offsets and the control batch offsets of l.
func batchesAt(t *testing.T, l *Log) (records, controls []int64) {
	t.Helper()
	got, hs := compactRead(t, l)
	for off := range got {
		records = append(records, off)
	}
	slices.Sort(records)
	for _, h := range hs {
		if h.IsControl() {
			controls = append(controls, h.BaseOffset)
		}
	}
	return records, controls
}

func TestTxnCompaction(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, compactConfig(4096), nil)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, plainRecord(t, "a", 10))                 // 0, superseded by 6
	mustAppend(t, l, txnRecords(t, 1, 0, "a", "x", "b", "x")) // 1-2, aborted
	mustMarker(t, l, Marker{ProducerID: 1})                   // 3
	mustAppend(t, l, txnRecords(t, 1, 2, "e", "1"))           // 4, committed
	mustMarker(t, l, Marker{ProducerID: 1, Commit: true})     // 5
	mustAppend(t, l, plainRecord(t, "a", 10))                 // 6
	mustAppend(t, l, plainRecord(t, "f0", 3000))              // 7: rolls
	mustAppend(t, l, plainRecord(t, "f1", 3000))              // 8: rolls again
	end := l.EndOffset()
	abort := []AbortedTxn{{ProducerID: 1, FirstOffset: 1, LastOffset: 3, LastStableOffset: 4}}
	checkTxnState(t, l, end, abort)

	// First pass: the aborted records and the superseded one go; both
	// markers stay (their transactions had batches in the pass), and so
	// does the aborted transaction's entry.
	if _, err := l.Compact(coreT0, CompactOptions{UpTo: l.LastStableOffset(end), DeleteRetentionMs: 24 * 3600 * 1000}); err != nil {
		t.Fatal(err)
	}
	recs, ctrls := batchesAt(t, l)
	if !slices.Equal(recs, []int64{3, 4, 5, 6, 7, 8}) || !slices.Equal(ctrls, []int64{3, 5}) {
		t.Fatalf("after the first pass: records at %v, markers at %v", recs, ctrls)
	}
	checkTxnState(t, l, end, abort)
	// The cleaned segment's .txnindex is what a reopen reads.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = coreOpen(t, dir, compactConfig(4096))
	checkTxnState(t, l, end, abort)

	// Second pass, delete.retention.ms later: no batch of the aborted
	// transaction is left, so its marker and entry go; the commit marker
	// stays with its transaction's batch (producer 1's last).
	if _, err := l.Compact(time.Now().Add(time.Hour), CompactOptions{UpTo: l.LastStableOffset(end)}); err != nil {
		t.Fatal(err)
	}
	recs, ctrls = batchesAt(t, l)
	if !slices.Equal(recs, []int64{4, 5, 6, 7, 8}) || !slices.Equal(ctrls, []int64{5}) {
		t.Fatalf("after the second pass: records at %v, markers at %v", recs, ctrls)
	}
	checkTxnState(t, l, end, nil)
}

func TestTxnCompactionKeepsProducersLastBatch(t *testing.T) {
	l := coreOpen(t, t.TempDir(), compactConfig(4096))
	mustAppend(t, l, txnRecords(t, 1, 0, "a", "x")) // 0, aborted: producer 1's last batch
	mustMarker(t, l, Marker{ProducerID: 1})         // 1
	mustAppend(t, l, plainRecord(t, "f0", 3000))
	mustAppend(t, l, plainRecord(t, "f1", 3000))
	end := l.EndOffset()
	if _, err := l.Compact(time.Now().Add(time.Hour), CompactOptions{UpTo: l.LastStableOffset(end)}); err != nil {
		t.Fatal(err)
	}
	// The batch stays without its records (its sequence), and with it the
	// marker and the entry.
	got, hs := compactRead(t, l)
	if _, ok := got[0]; ok || len(hs) < 2 || hs[0].BaseOffset != 0 || hs[0].NumRecords != 0 || !hs[0].IsTransactional() || !hs[1].IsControl() {
		t.Fatalf("after compaction: records %v, batches %+v", got, hs[:min(2, len(hs))])
	}
	checkTxnState(t, l, end, []AbortedTxn{{ProducerID: 1, FirstOffset: 0, LastOffset: 1, LastStableOffset: 2}})
	if _, _, err := l.pstate.check(BatchHeader{ProducerID: 1, BaseSequence: 1, Attributes: attrTransactional}); err != nil {
		t.Fatalf("producer 1's sequence after compaction: %v", err)
	}
}

func TestTxnCompactionStopsAtLSO(t *testing.T) {
	l := coreOpen(t, t.TempDir(), compactConfig(4096))
	mustAppend(t, l, txnRecords(t, 1, 0, "a", "open")) // 0, undecided
	mustAppend(t, l, plainRecord(t, "a", 10))          // 1 supersedes it, if it committed
	mustAppend(t, l, plainRecord(t, "f0", 3000))
	mustAppend(t, l, plainRecord(t, "f1", 3000))
	end := l.EndOffset()
	if lso := l.LastStableOffset(end); lso != 0 {
		t.Fatalf("LSO %d, want 0", lso)
	}
	if st, err := l.Compact(time.Now().Add(time.Hour), CompactOptions{UpTo: l.LastStableOffset(end)}); err != nil || st.Segments != 0 {
		t.Fatalf("Compact below an open transaction: %+v, %v", st, err)
	}
	if got, _ := compactRead(t, l); got[0].Value == nil || string(got[0].Value) != "open" {
		t.Fatalf("the open transaction's record was cleaned: %+v", got[0])
	}
}

// TestTxnRandomMatchesModel interleaves the transactions of five
// producers at random and compares the last stable offset and the aborted
// list, after every step and after a reopen, with a direct model.
func TestTxnRandomMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	cfg := coreConfig()
	cfg.SegmentBytes = 2048 // several segments, and .txnindex files
	l, err := Open(dir, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	open := map[int64]int64{}
	seq := map[int64]int32{}
	var aborted []AbortedTxn
	lso := func(end int64) int64 {
		first := end
		for _, f := range open {
			first = min(first, f)
		}
		return first
	}
	for step := range 300 {
		pid := int64(rng.IntN(5))
		if _, isOpen := open[pid]; isOpen && rng.IntN(3) == 0 {
			commit := rng.IntN(2) == 0
			off := mustMarker(t, l, Marker{ProducerID: pid, Commit: commit})
			first := open[pid]
			delete(open, pid)
			if !commit {
				aborted = append(aborted, AbortedTxn{ProducerID: pid, FirstOffset: first, LastOffset: off, LastStableOffset: lso(off + 1)})
			}
		} else {
			n := 1 + rng.IntN(3)
			res := mustAppend(t, l, txnBatch(t, n, pid, 0, seq[pid]))
			seq[pid] += int32(n)
			if _, isOpen := open[pid]; !isOpen {
				open[pid] = res.FirstOffset
			}
		}
		end := l.EndOffset()
		if got, want := l.LastStableOffset(end), lso(end); got != want {
			t.Fatalf("step %d: LSO %d, want %d", step, got, want)
		}
	}
	if got := l.AbortedTxns(0, l.EndOffset()); !slices.Equal(got, aborted) {
		t.Fatalf("aborted %+v\nwant %+v", got, aborted)
	}
	for _, crash := range []bool{true, false} {
		if crash {
			coreCrash(t, l)
		} else if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if l, err = Open(dir, cfg, nil); err != nil {
			t.Fatal(err)
		}
		end := l.EndOffset()
		if got, want := l.LastStableOffset(end), lso(end); got != want {
			t.Fatalf("reopened (crash %v): LSO %d, want %d", crash, got, want)
		}
		if got := l.AbortedTxns(0, end); !slices.Equal(got, aborted) {
			t.Fatalf("reopened (crash %v): aborted %+v\nwant %+v", crash, got, aborted)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestTxnLSONotBelowLogStart(t *testing.T) {
	l := coreOpen(t, t.TempDir(), coreConfig())
	mustAppend(t, l, txnBatch(t, 2, 1, 0, 0)) // 0-1, open
	mustAppend(t, l, coreBatch(t, 3, coreT0.UnixMilli(), 10))
	if _, err := l.DeleteRecordsBefore(3); err != nil {
		t.Fatal(err)
	}
	if got := l.LastStableOffset(l.EndOffset()); got != 3 {
		t.Fatalf("LSO %d with an open transaction below the log start 3", got)
	}
}

// Under transactions version 2 the coordinator bumps the epoch for each
// marker: the producer's own epoch is refused while its transaction is
// open, and allowed again once it ended (a retried marker).
func TestTxnMarkerTransactionVersion2(t *testing.T) {
	l := coreOpen(t, t.TempDir(), coreConfig())
	mustAppend(t, l, txnBatch(t, 1, 1, 4, 0)) // producer 1 at epoch 4, open
	if _, err := l.AppendMarker(Marker{ProducerID: 1, ProducerEpoch: 4, Commit: true, TransactionVersion: 2}, 3, coreT0); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("TV2 marker with the producer's epoch: %v", err)
	}
	mustMarker(t, l, Marker{ProducerID: 1, ProducerEpoch: 5, Commit: true, TransactionVersion: 2})
	checkTxnState(t, l, l.EndOffset(), nil)
	mustMarker(t, l, Marker{ProducerID: 1, ProducerEpoch: 5, Commit: true, TransactionVersion: 2}) // the retry
	if _, err := l.AppendMarker(Marker{ProducerID: 1, ProducerEpoch: 4, Commit: true, TransactionVersion: 2}, 3, coreT0); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("TV2 marker with an older epoch: %v", err)
	}
	// Legacy markers may carry the producer's epoch.
	mustAppend(t, l, txnBatch(t, 1, 1, 5, 0))
	mustMarker(t, l, Marker{ProducerID: 1, ProducerEpoch: 5})
	checkTxnState(t, l, l.EndOffset(), []AbortedTxn{{ProducerID: 1, FirstOffset: 3, LastOffset: 4, LastStableOffset: 5}})
}

// BenchmarkAppendTxn is BenchmarkAppend for transactions of ten 16-record
// batches of 1 KiB records, each ended by a COMMIT marker (one in ten
// aborted, with its .txnindex entry), with the last stable offset asked
// after each append as Fetch does.
func BenchmarkAppendTxn(b *testing.B) {
	l := coreOpen(b, b.TempDir(), DefaultConfig())
	recs := make([]Record, 16)
	for i := range recs {
		recs[i] = Record{Timestamp: coreT0.UnixMilli(), Key: []byte{byte(i)}, Value: make([]byte, 1024)}
	}
	batch, err := EncodeBatch(BatchSpec{PartitionLeaderEpoch: -1, ProducerID: 1, Transactional: true}, recs)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, len(batch))
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	b.ResetTimer()
	seq := int32(0)
	for i := 0; i < b.N; i++ {
		copy(buf, batch)
		binary.BigEndian.PutUint32(buf[53:], uint32(seq))
		putCRC(buf)
		seq += 16
		if _, err := l.Append(buf, 1, coreT0); err != nil {
			b.Fatal(err)
		}
		if i%10 == 9 {
			if _, err := l.AppendMarker(Marker{ProducerID: 1, Commit: i%100 != 99}, 1, coreT0); err != nil {
				b.Fatal(err)
			}
		}
		l.LastStableOffset(l.EndOffset())
	}
}
