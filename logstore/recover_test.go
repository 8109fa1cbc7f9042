package logstore

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// coreFileBatches returns the start positions and headers of the batches
// in a segment file.
func coreFileBatches(t testing.TB, path string) ([]int64, []BatchHeader) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pos []int64
	var hs []BatchHeader
	for p := int64(0); p < int64(len(b)); {
		h, err := ParseBatchHeader(b[p:])
		if err != nil {
			t.Fatalf("%s at %d: %v", path, p, err)
		}
		pos = append(pos, p)
		hs = append(hs, h)
		p += h.Size()
	}
	return pos, hs
}

// coreFilledLog opens a log with cfg in a new directory and appends n
// batches of two records, timestamped 1000, 1001, ..., with values of
// valueSize bytes.
func coreFilledLog(t testing.TB, cfg Config, n, valueSize int) (string, *Log) {
	t.Helper()
	dir := t.TempDir()
	l := coreOpen(t, dir, cfg)
	for i := 0; i < n; i++ {
		coreAppend(t, l, 2, 1000+int64(i), valueSize)
	}
	return dir, l
}

// coreFlip flips the bits of mask in the byte at of a file.
func coreFlip(t testing.TB, path string, at int64, mask byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[at] ^= mask
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCleanCloseReopenSkipsScan(t *testing.T) {
	cfg := coreConfig()
	cfg.SegmentBytes = 4096
	cfg.ProducerIDExpirationMs = -1 // the test's timestamps are in 1970
	dir, l := coreFilledLog(t, cfg, 30, 100)
	last := coreBatchP(t, 2, 5000, 10, 7, 0, 0)
	if _, err := l.Append(bytes.Clone(last), 4, coreT0); err != nil {
		t.Fatal(err)
	}
	end, nsegs := l.EndOffset(), len(l.segments())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, cleanShutdownName)); err != nil {
		t.Fatalf("no clean shutdown marker: %v", err)
	}

	l = coreOpen(t, dir, cfg)
	if n := l.recoveredSegments.Load(); n != 0 {
		t.Fatalf("clean reopen scanned %d segments", n)
	}
	if n := l.replayedBatches.Load(); n != 0 {
		t.Fatalf("clean reopen replayed %d batches into producer state", n)
	}
	if _, err := os.Stat(filepath.Join(dir, cleanShutdownName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("marker not removed by Open: %v", err)
	}
	if l.EndOffset() != end || len(l.segments()) != nsegs || l.LatestEpoch() != 4 {
		t.Fatalf("reopened end %d segs %d epoch %d; want %d %d 4", l.EndOffset(), len(l.segments()), l.LatestEpoch(), end, nsegs)
	}
	// Time queries and retention read only the last time index entry of a
	// sealed segment: its indexes stay on disk.
	if _, _, err := l.MaxTimestamp(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.EnforceRetention(coreT0); err != nil {
		t.Fatal(err)
	}
	first := l.segments()[0]
	first.mu.RLock()
	loaded := first.idx != nil
	first.mu.RUnlock()
	if loaded {
		t.Fatal("MaxTimestamp/EnforceRetention loaded a sealed segment's index")
	}
	coreCheckContiguous(t, coreReadAll(t, l, 0), 0, end)
	dup, err := l.Append(bytes.Clone(last), 4, coreT0)
	if err != nil || !dup.Duplicate || dup.FirstOffset != end-2 {
		t.Fatalf("retry after clean reopen: %+v %v", dup, err)
	}
	coreAppend(t, l, 1, 6000, 10)
	if off, ts, found, err := l.OffsetForTimestamp(1015); err != nil || !found || off != 29 || ts != 1015 {
		t.Fatalf("OffsetForTimestamp after reopen: %d %d %v %v", off, ts, found, err)
	}
	if off, ts, err := l.MaxTimestamp(); err != nil || off != end || ts != 6000 {
		t.Fatalf("MaxTimestamp after reopen: %d %d %v", off, ts, err)
	}

	// A crash now (no marker) makes the next Open scan the active segment.
	coreCrash(t, l)
	l = coreOpen(t, dir, cfg)
	if l.recoveredSegments.Load() == 0 {
		t.Fatal("reopen after a crash did not recover")
	}
	coreCheckContiguous(t, coreReadAll(t, l, 0), 0, end+1)
}

func TestUncleanReopenRecovers(t *testing.T) {
	dir := t.TempDir()
	cfg := coreConfig()
	cfg.SegmentBytes = 4096
	l := coreOpen(t, dir, cfg)
	for i := 0; i < 40; i++ {
		coreAppend(t, l, 3, 1000+int64(i), 80)
	}
	end := l.EndOffset()
	active := l.active.base
	coreCrash(t, l)

	l = coreOpen(t, dir, cfg)
	if l.recoveredSegments.Load() == 0 {
		t.Fatal("no recovery scan after an unclean shutdown")
	}
	if l.EndOffset() != end || l.active.base != active {
		t.Fatalf("end %d active %d, want %d %d", l.EndOffset(), l.active.base, end, active)
	}
	coreCheckContiguous(t, coreReadAll(t, l, 0), 0, end)
	coreAppend(t, l, 2, 5000, 10)
	if off, _, found, _ := l.OffsetForTimestamp(5000); !found || off != end {
		t.Fatalf("OffsetForTimestamp(5000) = %d %v", off, found)
	}
}

// TestTornTail cuts the active segment inside its last batches (header and
// body) and checks that every whole batch before the cut survives and
// appends continue right after it.
func TestTornTail(t *testing.T) {
	for _, cut := range []int64{1, 20, BatchHeaderSize - 1, BatchHeaderSize, BatchHeaderSize + 7, -1} {
		cfg := coreConfig()
		cfg.SegmentBytes = 8192
		dir, l := coreFilledLog(t, cfg, 50, 60)
		path := segmentName(dir, l.active.base, logSuffix)
		coreCrash(t, l)

		pos, hs := coreFileBatches(t, path)
		k := len(hs) - 2 // cut inside the second-to-last batch
		at := pos[k] + cut
		if cut < 0 {
			at = pos[k] + hs[k].Size() + cut // one byte short of whole
		}
		if err := os.Truncate(path, at); err != nil {
			t.Fatal(err)
		}

		l = coreOpen(t, dir, cfg)
		want := hs[k].BaseOffset
		if l.EndOffset() != want {
			t.Fatalf("cut %d: end %d, want %d", cut, l.EndOffset(), want)
		}
		if st, _ := os.Stat(path); st.Size() != pos[k] {
			t.Fatalf("cut %d: file %d bytes, want truncated to %d", cut, st.Size(), pos[k])
		}
		coreCheckContiguous(t, coreReadAll(t, l, 0), 0, want)
		res := coreAppend(t, l, 3, 9000, 10)
		if res.FirstOffset != want {
			t.Fatalf("append after recovery at %d, want %d", res.FirstOffset, want)
		}
		coreCheckContiguous(t, coreReadAll(t, l, 0), 0, want+3)
	}
}

func TestBitflipTruncatesAtCorruptBatch(t *testing.T) {
	const k = 12
	for _, where := range []string{"records", "attributes", "length", "magic", "offset"} {
		cfg := coreConfig()
		dir, l := coreFilledLog(t, cfg, 20, 60)
		path := segmentName(dir, l.active.base, logSuffix)
		coreCrash(t, l)
		pos, hs := coreFileBatches(t, path)
		at := map[string]int64{"records": hs[k].Size() - 5, "attributes": 22, "length": 9, "magic": 16, "offset": 3}[where]
		coreFlip(t, path, pos[k]+at, 0x10)
		l = coreOpen(t, dir, cfg)
		if l.EndOffset() != hs[k].BaseOffset {
			t.Fatalf("flip in %s: end %d, want %d", where, l.EndOffset(), hs[k].BaseOffset)
		}
		coreCheckContiguous(t, coreReadAll(t, l, 0), 0, hs[k].BaseOffset)
		coreAppend(t, l, 1, 3000, 1)
	}
}

func TestCorruptSealedSegmentDropsLaterOnes(t *testing.T) {
	cfg := coreConfig()
	cfg.SegmentBytes = 2048
	dir, l := coreFilledLog(t, cfg, 40, 100)
	bases := coreSegmentBases(l)
	coreCrash(t, l)
	// Without a recovery point every segment is checked.
	if err := os.Remove(filepath.Join(dir, recoveryPointName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	path := segmentName(dir, bases[1], logSuffix)
	pos, hs := coreFileBatches(t, path)
	coreFlip(t, path, pos[2]+BatchHeaderSize+3, 0xff)
	l = coreOpen(t, dir, cfg)
	if l.EndOffset() != hs[2].BaseOffset {
		t.Fatalf("end %d, want %d", l.EndOffset(), hs[2].BaseOffset)
	}
	if got := coreSegmentBases(l); len(got) != 2 {
		t.Fatalf("segments %v, want the first two only", got)
	}
	if _, err := os.Stat(segmentName(dir, bases[2], logSuffix)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("later segment not deleted: %v", err)
	}
	coreCheckContiguous(t, coreReadAll(t, l, 0), 0, hs[2].BaseOffset)
	coreAppend(t, l, 1, 1, 1)
}

func TestRecoveryPointLimitsTheScan(t *testing.T) {
	cfg := coreConfig()
	cfg.SegmentBytes = 2048
	dir, l := coreFilledLog(t, cfg, 40, 100)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	n := len(l.segments())
	coreCrash(t, l)
	l = coreOpen(t, dir, cfg)
	if got := l.recoveredSegments.Load(); got != 1 {
		t.Fatalf("recovered %d of %d segments after Flush, want only the active one", got, n)
	}
	coreCheckContiguous(t, coreReadAll(t, l, 0), 0, 80)
}

func TestIndexRebuild(t *testing.T) {
	dir := t.TempDir()
	cfg := coreConfig()
	cfg.SegmentBytes = 4096
	cfg.IndexIntervalBytes = 256
	l := coreOpen(t, dir, cfg)
	for i := 0; i < 40; i++ {
		coreAppend(t, l, 2, 1000+int64(i*2), 100)
	}
	bases := coreSegmentBases(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// sealed: index missing, time index garbage; active: index garbage
	if err := os.Remove(segmentName(dir, bases[0], indexSuffix)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(segmentName(dir, bases[0], timeIndexSuffix), []byte("garbage!"), 0o644); err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(segmentName(dir, bases[1], indexSuffix))
	if len(good) < 16 {
		t.Fatalf("index of segment %d has %d bytes, want entries", bases[1], len(good))
	}
	bad := bytes.Clone(good)
	bad[5] ^= 0x40 // position of the first entry
	if err := os.WriteFile(segmentName(dir, bases[1], indexSuffix), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	last := bases[len(bases)-1]
	if err := os.WriteFile(segmentName(dir, last, indexSuffix), []byte{1, 2, 3}, 0o644); err != nil {
		t.Fatal(err)
	}

	l = coreOpen(t, dir, cfg)
	coreCheckContiguous(t, coreReadAll(t, l, 0), 0, 80)
	for i := 0; i < 80; i += 7 {
		res, err := l.Read(int64(i), 1, -1, true)
		if err != nil {
			t.Fatal(err)
		}
		hs := regionBatches(t, res)
		res.Release()
		if hs[0].BaseOffset > int64(i) || hs[0].LastOffset() < int64(i) {
			t.Fatalf("Read(%d) returned batch %d..%d", i, hs[0].BaseOffset, hs[0].LastOffset())
		}
	}
	if off, ts, found, err := l.OffsetForTimestamp(1003); err != nil || !found || off != 3 || ts != 1003 {
		t.Fatalf("OffsetForTimestamp(1003) = %d %d %v %v", off, ts, found, err)
	}
	rebuilt, err := os.ReadFile(segmentName(dir, bases[1], indexSuffix))
	if err != nil || !bytes.Equal(rebuilt, good) {
		t.Fatalf("index of %d not rebuilt to the original (%v)", bases[1], err)
	}
	if _, err := os.Stat(segmentName(dir, bases[0], indexSuffix)); err != nil {
		t.Fatalf("missing index not rewritten: %v", err)
	}
}

func TestProducerStateRebuiltAfterCrash(t *testing.T) {
	for _, snap := range []string{"kept", "corrupt", "removed"} {
		dir := t.TempDir()
		cfg := coreConfig()
		cfg.SegmentBytes = 2048
		l := coreOpen(t, dir, cfg)
		var seq int32
		var batches [][]byte
		for i := 0; i < 20; i++ {
			b := coreBatchP(t, 2, 1000+int64(i), 100, 99, 1, seq)
			batches = append(batches, bytes.Clone(b))
			if _, err := l.Append(b, 0, coreT0); err != nil {
				t.Fatal(err)
			}
			seq += 2
		}
		if len(l.segments()) < 3 {
			t.Fatal("want rolls (and snapshots)")
		}
		coreCrash(t, l)
		matches, _ := filepath.Glob(filepath.Join(dir, "*"+snapshotSuffix))
		for _, m := range matches {
			switch snap {
			case "corrupt":
				if err := os.WriteFile(m, []byte("SPSN broken"), 0o644); err != nil {
					t.Fatal(err)
				}
			case "removed":
				if err := os.Remove(m); err != nil {
					t.Fatal(err)
				}
			}
		}
		l = coreOpen(t, dir, cfg)
		if l.replayedBatches.Load() == 0 {
			t.Fatalf("%s snapshot: nothing replayed", snap)
		}
		dup, err := l.Append(bytes.Clone(batches[19]), 0, coreT0)
		if err != nil || !dup.Duplicate || dup.FirstOffset != 38 {
			t.Fatalf("%s snapshot: retry of the last batch: %+v %v", snap, dup, err)
		}
		if _, err := l.Append(coreBatchP(t, 1, 1, 1, 99, 1, seq+1), 0, coreT0); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("%s snapshot: sequence gap accepted: %v", snap, err)
		}
		if _, err := l.Append(coreBatchP(t, 1, 1, 1, 99, 1, seq), 0, coreT0); err != nil {
			t.Fatalf("%s snapshot: next sequence: %v", snap, err)
		}
	}
}

func TestEpochCacheTruncatedWithTheTail(t *testing.T) {
	dir := t.TempDir()
	cfg := coreConfig()
	l := coreOpen(t, dir, cfg)
	for i := 0; i < 5; i++ {
		if _, err := l.Append(coreBatch(t, 2, 1, 10), 1, coreT0); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 3; i++ {
		if _, err := l.Append(coreBatch(t, 2, 1, 10), 2, coreT0); err != nil {
			t.Fatal(err)
		}
	}
	if e, end := l.EndOffsetForEpoch(1); e != 1 || end != 10 {
		t.Fatalf("EndOffsetForEpoch(1) = %d %d", e, end)
	}
	path := segmentName(dir, l.active.base, logSuffix)
	coreCrash(t, l)
	pos, _ := coreFileBatches(t, path)
	if err := os.Truncate(path, pos[5]+10); err != nil { // inside the first epoch-2 batch
		t.Fatal(err)
	}
	l = coreOpen(t, dir, cfg)
	if l.EndOffset() != 10 || l.LatestEpoch() != 1 {
		t.Fatalf("end %d latest epoch %d, want 10 and 1", l.EndOffset(), l.LatestEpoch())
	}
	if e, end := l.EndOffsetForEpoch(2); e != -1 || end != -1 {
		t.Fatalf("EndOffsetForEpoch(2) after truncation = %d %d; want unknown (-1 -1)", e, end)
	}
	if _, err := l.Append(coreBatch(t, 1, 1, 1), 3, coreT0); err != nil {
		t.Fatal(err)
	}
	if e, end := l.EndOffsetForEpoch(1); e != 1 || end != 10 {
		t.Fatalf("EndOffsetForEpoch(1) = %d %d", e, end)
	}
	if e, end := l.EndOffsetForEpoch(3); e != 3 || end != 11 {
		t.Fatalf("EndOffsetForEpoch(3) = %d %d", e, end)
	}
}

func TestCleanMarkerWithTornTailStillRecovers(t *testing.T) {
	dir := t.TempDir()
	cfg := coreConfig()
	l := coreOpen(t, dir, cfg)
	for i := 0; i < 10; i++ {
		coreAppend(t, l, 2, 1, 10)
	}
	path := segmentName(dir, l.active.base, logSuffix)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(coreBatch(t, 1, 1, 10)[:30]); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	l = coreOpen(t, dir, cfg)
	if l.EndOffset() != 20 || l.recoveredSegments.Load() != 1 {
		t.Fatalf("end %d recovered %d", l.EndOffset(), l.recoveredSegments.Load())
	}
	coreAppend(t, l, 1, 1, 1)
	coreCheckContiguous(t, coreReadAll(t, l, 0), 0, 21)
}

// TestCutAtBatchBoundaryAfterClose: the active segment loses whole batches
// after a clean Close (e.g. restored from an older copy); the indexes that
// point past the end are rebuilt and nothing refers to the lost batches.
func TestCutAtBatchBoundaryAfterClose(t *testing.T) {
	cfg := coreConfig()
	cfg.IndexIntervalBytes = 100
	dir, l := coreFilledLog(t, cfg, 20, 60)
	path := segmentName(dir, l.active.base, logSuffix)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	pos, hs := coreFileBatches(t, path)
	if err := os.Truncate(path, pos[15]); err != nil {
		t.Fatal(err)
	}
	l = coreOpen(t, dir, cfg)
	if l.EndOffset() != hs[15].BaseOffset {
		t.Fatalf("end %d, want %d", l.EndOffset(), hs[15].BaseOffset)
	}
	if off, ts, err := l.MaxTimestamp(); err != nil || off != 29 || ts != 1015 {
		t.Fatalf("MaxTimestamp %d %d %v", off, ts, err)
	}
	if _, _, found, _ := l.OffsetForTimestamp(1016); found {
		t.Fatal("found a timestamp of a lost batch")
	}
	coreAppend(t, l, 1, 5000, 1)
	coreCheckContiguous(t, coreReadAll(t, l, 0), 0, 31)
}

func TestOpenCleansStrayFiles(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"00000000000000000100.index", "00000000000000000000.log.tmp", "junk.deleted"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, startOffsetName), []byte("nonsense"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := coreOpen(t, dir, coreConfig())
	if l.StartOffset() != 0 || l.EndOffset() != 0 {
		t.Fatalf("start %d end %d", l.StartOffset(), l.EndOffset())
	}
	for _, name := range []string{"00000000000000000100.index", "00000000000000000000.log.tmp", "junk.deleted"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s not removed", name)
		}
	}
}

// TestRecoveryRandomDamage damages a closed or crashed log's active
// segment, index files and checkpoints at random: Open must succeed, every batch it then
// serves must be whole and CRC-valid with contiguous offsets, and appends
// must continue at the end.
func TestRecoveryRandomDamage(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("LOGSTORE_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("seed %d (LOGSTORE_SEED reproduces)", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	for iter := 0; iter < 40; iter++ {
		dir := t.TempDir()
		cfg := coreConfig()
		cfg.SegmentBytes = 4096
		cfg.IndexIntervalBytes = 128
		l := coreOpen(t, dir, cfg)
		for i := 0; i < 30; i++ {
			coreAppend(t, l, 1+rng.IntN(3), 1000+int64(i), rng.IntN(200))
		}
		active := l.active.base
		crashed := rng.IntN(2) == 0
		if crashed {
			coreCrash(t, l)
		} else if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			path := filepath.Join(dir, e.Name())
			b, _ := os.ReadFile(path)
			isActive := e.Name() == filepath.Base(segmentName(dir, active, logSuffix))
			switch {
			case isActive && len(b) > 0:
				// After a clean Close the data is trusted (as Kafka does):
				// only torn tails are detected then, not flipped bits.
				mode := rng.IntN(3)
				if !crashed && mode == 1 {
					mode = 0
				}
				switch mode {
				case 0:
					b = b[:rng.IntN(len(b))]
				case 1:
					// Not in a baseOffset: it is outside the CRC (as in
					// Kafka) and offsets may have gaps, so a flip there is
					// undetectable.
					starts, _ := coreFileBatches(t, path)
					at := rng.IntN(len(b))
					for _, p := range starts {
						if int64(at) >= p && int64(at) < p+8 {
							at = int(p) + 8
						}
					}
					b[at] ^= byte(1 + rng.IntN(255))
				case 2:
					b = append(b, make([]byte, rng.IntN(100))...)
				}
			case filepath.Ext(path) == indexSuffix || filepath.Ext(path) == timeIndexSuffix:
				if rng.IntN(3) == 0 && len(b) > 0 {
					b[rng.IntN(len(b))] ^= 0xff
				} else if rng.IntN(4) == 0 {
					b = b[:len(b)/2+1]
				}
			case e.Name() == startOffsetName || e.Name() == recoveryPointName || e.Name() == epochCheckpointName ||
				filepath.Ext(path) == snapshotSuffix:
				if rng.IntN(3) == 0 {
					b = []byte("garbage")
				}
			default:
				continue
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		l = coreOpen(t, dir, cfg)
		t.Logf("iter %d: start %d end %d segments %v recovered %d", iter, l.StartOffset(), l.EndOffset(), coreSegmentBases(l), l.recoveredSegments.Load())
		end := l.EndOffset()
		if end > 60*3 || end < active {
			t.Fatalf("iter %d: end %d (active segment %d)", iter, end, active)
		}
		coreCheckContiguous(t, coreReadAll(t, l, l.StartOffset()), l.StartOffset(), end)
		for ts := int64(990); ts < 1040; ts += 7 {
			if _, _, _, err := l.OffsetForTimestamp(ts); err != nil {
				t.Fatalf("iter %d: OffsetForTimestamp: %v", iter, err)
			}
		}
		if _, _, err := l.MaxTimestamp(); err != nil {
			t.Fatalf("iter %d: MaxTimestamp: %v", iter, err)
		}
		res := coreAppend(t, l, 2, 9000, 10)
		if res.FirstOffset != end {
			t.Fatalf("iter %d: append at %d, want %d", iter, res.FirstOffset, end)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
