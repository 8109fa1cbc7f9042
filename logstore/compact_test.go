package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"
)

// compactConfig is a compacted log's config with small segments.
func compactConfig(segmentBytes int64) Config {
	cfg := coreConfig()
	cfg.SegmentBytes = segmentBytes
	cfg.Compact = true
	return cfg
}

// compactRec is what the compaction tests write at one offset.
type compactRec struct {
	key   string
	value []byte // nil: a tombstone
	ts    int64
}

// compactFill appends batches of keyed records to l: batch i has
// perBatch records, keys cycling over nkeys, every seventh record of
// batches after the first ten a tombstone, codecs cycling over all of
// them. It returns what it wrote, by offset.
func compactFill(t *testing.T, l *Log, batches, perBatch, nkeys int, ts int64) map[int64]compactRec {
	t.Helper()
	codecs := []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}
	wrote := map[int64]compactRec{}
	n := 0
	for i := 0; i < batches; i++ {
		base := l.EndOffset()
		recs := make([]Record, perBatch)
		for j := range recs {
			k := fmt.Sprintf("key-%d", n%nkeys)
			v := bytes.Repeat([]byte(fmt.Sprintf("v%d-", n)), 20)
			if i >= 10 && n%7 == 0 {
				v = nil
			}
			recs[j] = Record{Timestamp: ts + int64(n), Key: []byte(k), Value: v}
			wrote[base+int64(j)] = compactRec{k, v, ts + int64(n)}
			n++
		}
		b, err := BuildBatch(0, codecs[i%len(codecs)], recs, -1, -1, -1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(b, 1, coreT0); err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
	return wrote
}

// compactRead returns every record of l by offset, checking each batch's
// CRC and that offsets ascend.
func compactRead(t *testing.T, l *Log) (map[int64]Record, []BatchHeader) {
	t.Helper()
	got := map[int64]Record{}
	var hs []BatchHeader
	last := int64(-1)
	for off := l.StartOffset(); off < l.EndOffset(); {
		b, err := l.ReadBytes(off, 1<<20, -1)
		if err != nil {
			t.Fatalf("ReadBytes(%d): %v", off, err)
		}
		if len(b) == 0 {
			t.Fatalf("ReadBytes(%d) empty before end %d", off, l.EndOffset())
		}
		hs = append(hs, coreBatches(t, b)...)
		bs, _ := SplitBatches(b)
		for _, x := range bs {
			recs, err := DecodeRecords(x)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				if r.Offset <= last {
					t.Fatalf("offset %d after %d", r.Offset, last)
				}
				last = r.Offset
				got[r.Offset] = r
			}
			h, _ := ParseBatchHeader(x)
			off = h.LastOffset() + 1
		}
	}
	return got, hs
}

func TestCompactKeepsEachKeysLatestRecord(t *testing.T) {
	dir, cfg := t.TempDir(), compactConfig(4096)
	l := coreOpen(t, dir, cfg)
	ts := coreT0.UnixMilli()
	wrote := compactFill(t, l, 60, 8, 13, ts)
	end := l.EndOffset()
	segsBefore := coreSegmentBases(l)
	if len(segsBefore) < 5 {
		t.Fatalf("test setup: %d segments", len(segsBefore))
	}
	active := l.segments()[len(l.segments())-1].base

	// Tombstones expire delete.retention.ms after their segment was written:
	// not yet.
	opts := CompactOptions{UpTo: end, DeleteRetentionMs: 24 * 3600 * 1000}
	st, err := l.Compact(coreT0, opts)
	if err != nil {
		t.Fatalf("Compact: %v", err)
	}
	if st.Segments == 0 || st.BytesAfter >= st.BytesBefore || st.RecordsRemoved == 0 {
		t.Fatalf("stats %+v", st)
	}
	check := func(when string, tombstonesGone bool) {
		t.Helper()
		got, _ := compactRead(t, l)
		// A key's latest offset among the cleaned (sealed) segments.
		latest := map[string]int64{}
		for off, w := range wrote {
			if last, ok := latest[w.key]; off < active && (!ok || off > last) {
				latest[w.key] = off
			}
		}
		std := func(off int64) bool {
			w := wrote[off]
			if off >= active {
				return true
			}
			return latest[w.key] == off && (w.value != nil || !tombstonesGone)
		}
		for off, w := range wrote {
			r, ok := got[off]
			want := std(off)
			if ok != want {
				t.Fatalf("%s: offset %d (key %s, tombstone %v): present %v, want %v", when, off, w.key, w.value == nil, ok, want)
			}
			if ok && (string(r.Key) != w.key || !bytes.Equal(r.Value, w.value) || (r.Value == nil) != (w.value == nil) || r.Timestamp != w.ts) {
				t.Fatalf("%s: offset %d holds key %q value %q ts %d, want %q %q %d", when, off, r.Key, r.Value, r.Timestamp, w.key, w.value, w.ts)
			}
		}
		if l.EndOffset() != end || l.StartOffset() != 0 {
			t.Fatalf("%s: start %d end %d, want 0 %d", when, l.StartOffset(), l.EndOffset(), end)
		}
	}
	check("after compaction", false)
	if fmt.Sprint(coreSegmentBases(l)) != fmt.Sprint(segsBefore) {
		t.Fatalf("segments %v, were %v", coreSegmentBases(l), segsBefore)
	}

	// Nothing new: a second pass finds nothing dirty.
	if st, err := l.Compact(coreT0, opts); err != nil || st.Segments != 0 {
		t.Fatalf("second pass: %+v %v", st, err)
	}

	// Reopened cleanly, and after a crash (recovery scans and CRC-checks
	// every segment), the log reads the same.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = coreOpen(t, dir, cfg)
	check("reopened", false)
	coreCrash(t, l)
	if err := os.Remove(dir + "/recovery-point"); err != nil {
		t.Fatal(err)
	}
	l = coreOpen(t, dir, cfg)
	if l.recoveredSegments.Load() < int64(len(segsBefore)) {
		t.Fatalf("recovery scanned %d segments, want all %d", l.recoveredSegments.Load(), len(segsBefore))
	}
	check("recovered", false)

	// Two days after their segments were written, the tombstones go too
	// (with no dirty ratio set, a pass runs though nothing is new).
	if _, err := l.Compact(time.Now().Add(48*time.Hour), opts); err != nil {
		t.Fatal(err)
	}
	check("tombstones expired", true)
}

func TestCompactBounds(t *testing.T) {
	dir, cfg := t.TempDir(), compactConfig(4096)
	l := coreOpen(t, dir, cfg)
	ts := coreT0.UnixMilli()
	compactFill(t, l, 30, 8, 5, ts)
	segs := l.segments()

	// Below the end of the first segment (the high watermark): nothing.
	if st, err := l.Compact(coreT0, CompactOptions{UpTo: segs[1].base - 1}); err != nil || st.Segments != 0 {
		t.Fatalf("UpTo inside the first segment: %+v %v", st, err)
	}
	// A compaction lag longer than the data's age: nothing.
	if st, err := l.Compact(coreT0, CompactOptions{UpTo: l.EndOffset(), MinCompactionLagMs: 3600_000}); err != nil || st.Segments != 0 {
		t.Fatalf("within the compaction lag: %+v %v", st, err)
	}
	// Only the first segment: the rest stays as written.
	before, err := os.ReadFile(segmentName(dir, segs[2].base, logSuffix))
	if err != nil {
		t.Fatal(err)
	}
	st, err := l.Compact(coreT0, CompactOptions{UpTo: segs[1].base})
	if err != nil || st.Segments != 1 {
		t.Fatalf("first segment only: %+v %v", st, err)
	}
	after, _ := os.ReadFile(segmentName(dir, segs[2].base, logSuffix))
	if !bytes.Equal(before, after) {
		t.Fatal("a segment above UpTo changed")
	}
	// The ratio: one more clean segment of many is below 0.9 dirty.
	if st, err := l.Compact(coreT0, CompactOptions{UpTo: segs[2].base, MinCleanableRatio: 0.9}); err != nil || st.Segments != 0 {
		t.Fatalf("below the dirty ratio: %+v %v", st, err)
	}
	if st, err := l.Compact(coreT0, CompactOptions{UpTo: segs[2].base, MinCleanableRatio: 0.3}); err != nil || st.Segments == 0 {
		t.Fatalf("above the dirty ratio: %+v %v", st, err)
	}
	// A key map of one key cleans the first segment only (it fills there).
	l2 := coreOpen(t, t.TempDir(), cfg)
	compactFill(t, l2, 30, 8, 5, ts)
	s2 := l2.segments()
	before2, _ := os.ReadFile(segmentName(l2.Dir(), s2[1].base, logSuffix))
	if st, err := l2.Compact(coreT0, CompactOptions{UpTo: l2.EndOffset(), MaxKeys: 1}); err != nil || st.Segments != 1 {
		t.Fatalf("MaxKeys 1: %+v %v", st, err)
	}
	after2, _ := os.ReadFile(segmentName(l2.Dir(), s2[1].base, logSuffix))
	if !bytes.Equal(before2, after2) {
		t.Fatal("a segment past a full key map changed")
	}
}

// A reader holding a segment keeps reading the bytes it located, while the
// compacted segment replaces it.
func TestCompactWhileReading(t *testing.T) {
	dir, cfg := t.TempDir(), compactConfig(4096)
	l := coreOpen(t, dir, cfg)
	compactFill(t, l, 30, 8, 5, coreT0.UnixMilli())
	res, err := l.Read(0, 1<<20, -1, true)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	regions := func() []byte {
		var out []byte
		for _, r := range res.Regions {
			b := make([]byte, r.Length)
			if _, err := r.File.ReadAt(b, r.Offset); err != nil {
				t.Fatalf("reading a region: %v", err)
			}
			out = append(out, b...)
		}
		return out
	}
	before := regions()
	if st, err := l.Compact(coreT0, CompactOptions{UpTo: l.EndOffset()}); err != nil || st.Segments == 0 {
		t.Fatalf("Compact: %+v %v", st, err)
	}
	again := regions()
	if !bytes.Equal(before, again) {
		t.Fatal("a held region changed under compaction")
	}
	coreBatches(t, again)
	if fresh, _ := l.ReadBytes(0, 1<<20, -1); bytes.Equal(fresh, before) {
		t.Fatal("a new read still sees the uncompacted segment")
	}
}

// An idempotent producer's last batch survives even when every record of
// it is superseded, so that after a restart its next sequence is accepted.
func TestCompactKeepsProducersLastBatch(t *testing.T) {
	dir, cfg := t.TempDir(), compactConfig(1024)
	l := coreOpen(t, dir, cfg)
	rec := func(k string, n int) []Record {
		return []Record{{Timestamp: coreT0.UnixMilli(), Key: []byte(k), Value: bytes.Repeat([]byte("x"), n)}}
	}
	b, _ := BuildBatch(0, CodecNone, rec("k", 10), 7, 0, 0)
	if _, err := l.Append(b, 1, coreT0); err != nil {
		t.Fatal(err)
	}
	pidOff := l.EndOffset() - 1
	for i := 0; i < 20; i++ { // supersede it, and roll segments
		b, _ := BuildBatch(0, CodecNone, rec("k", 200), -1, -1, -1)
		if _, err := l.Append(b, 1, coreT0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Compact(coreT0, CompactOptions{UpTo: l.EndOffset()}); err != nil {
		t.Fatal(err)
	}
	got, _ := compactRead(t, l)
	if _, ok := got[pidOff]; !ok {
		t.Fatalf("producer 7's last batch (offset %d) was dropped", pidOff)
	}
	if _, ok := got[pidOff+1]; ok && l.segments()[0].next.Load() > pidOff+2 {
		t.Fatalf("a superseded record at %d survived", pidOff+1)
	}
	empty := 0
	for _, s := range l.segments() {
		if s.size.Load() == 0 {
			empty++
		}
	}
	if empty == 0 {
		t.Fatalf("test setup: no segment was emptied (%v)", coreSegmentBases(l))
	}
	// Recovery scans every segment, the emptied ones too.
	coreCrash(t, l)
	if err := os.Remove(dir + "/recovery-point"); err != nil {
		t.Fatal(err)
	}
	l = coreOpen(t, dir, cfg)
	if got2, _ := compactRead(t, l); len(got2) != len(got) {
		t.Fatalf("after recovery %d records, before %d", len(got2), len(got))
	}
	b, _ = BuildBatch(0, CodecNone, rec("k", 10), 7, 0, 1)
	if _, err := l.Append(b, 1, coreT0); err != nil {
		t.Fatalf("producer 7's next sequence after compaction and a crash: %v", err)
	}
}

// Records without a key (written before the topic became compacted) are
// dropped, as Kafka's cleaner drops them; and the cleaner's progress
// survives a restart, so a clean log is not cleaned again.
func TestCompactKeylessAndCheckpoint(t *testing.T) {
	dir, cfg := t.TempDir(), compactConfig(1024)
	cfg.Compact = false // keyless records are refused on a compacted log
	l := coreOpen(t, dir, cfg)
	for i := 0; i < 20; i++ {
		b, err := BuildBatch(0, CodecNone, []Record{
			{Timestamp: coreT0.UnixMilli(), Value: bytes.Repeat([]byte("n"), 100)},
			{Timestamp: coreT0.UnixMilli(), Key: []byte(fmt.Sprint("k", i)), Value: []byte("v")},
		}, -1, -1, -1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(b, 1, coreT0); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Compact = true
	l.SetConfig(cfg)
	active := l.segments()[len(l.segments())-1].base
	st, err := l.Compact(coreT0, CompactOptions{UpTo: l.EndOffset()})
	if err != nil || st.Segments == 0 {
		t.Fatalf("Compact: %+v %v", st, err)
	}
	got, _ := compactRead(t, l)
	for off := int64(0); off < l.EndOffset(); off++ {
		_, ok := got[off]
		if want := off >= active || off%2 == 1; ok != want {
			t.Fatalf("offset %d (keyless %v, active segment from %d): present %v, want %v", off, off%2 == 0, active, ok, want)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = coreOpen(t, dir, cfg)
	if l.cleanedTo.Load() != active {
		t.Fatalf("cleaner checkpoint %d after a restart, want %d", l.cleanedTo.Load(), active)
	}
	if st, err := l.Compact(coreT0, CompactOptions{UpTo: l.EndOffset(), MinCleanableRatio: 0.5}); err != nil || st.Segments != 0 {
		t.Fatalf("a clean log was cleaned again after a restart: %+v %v", st, err)
	}
}

// A batch whose CRC no longer matches (a flipped bit on disk) is never
// rewritten with a fresh CRC: the pass fails once, the log stays as it was,
// and later passes leave it alone.
func TestCompactRefusesCorruptBatch(t *testing.T) {
	dir, cfg := t.TempDir(), compactConfig(4096)
	l := coreOpen(t, dir, cfg)
	compactFill(t, l, 30, 8, 5, coreT0.UnixMilli())
	name := segmentName(dir, l.segments()[1].base, logSuffix)
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{data[BatchHeaderSize+3] ^ 0x40}, BatchHeaderSize+3); err != nil {
		t.Fatal(err)
	}
	f.Close()
	before := readSegmentFiles(t, dir)
	if _, err := l.Compact(coreT0, CompactOptions{UpTo: l.EndOffset()}); !errors.Is(err, ErrCorruptMessage) {
		t.Fatalf("Compact over a corrupt batch: %v, want ErrCorruptMessage", err)
	}
	if st, err := l.Compact(coreT0, CompactOptions{UpTo: l.EndOffset()}); err != nil || st.Segments != 0 {
		t.Fatalf("second pass: %+v %v", st, err)
	}
	if after := readSegmentFiles(t, dir); !bytes.Equal(before, after) {
		t.Fatal("the log changed")
	}
}

func readSegmentFiles(t *testing.T, dir string) []byte {
	t.Helper()
	var all []byte
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if _, ok := parseSegmentName(e.Name(), logSuffix); ok {
			b, err := os.ReadFile(dir + "/" + e.Name())
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, b...)
		}
	}
	return all
}

// A truncation during a pass (a follower's, after a leader change) may
// remove the records that made older ones look superseded: the pass must
// not swap in what it cleaned before it.
func TestCompactAbortsAfterTruncation(t *testing.T) {
	dir, cfg := t.TempDir(), compactConfig(4096)
	l := coreOpen(t, dir, cfg)
	compactFill(t, l, 30, 8, 5, coreT0.UnixMilli())
	segs := l.cleanable(coreT0, CompactOptions{UpTo: l.EndOffset()})
	defer func() {
		for _, s := range segs {
			s.unref()
		}
	}()
	gen := l.truncations.Load()
	keys, _, err := l.mapKeys(segs, defaultCompactMaxKeys, int(cfg.MaxUncompressedBytes), newTxnPass(nil))
	if err != nil {
		t.Fatal(err)
	}
	s := segs[0]
	size := s.size.Load()
	tmp := segmentName(dir, s.base, logSuffix) + ".tmp"
	c := cleaning{keys: keys, maxUncompressed: int(cfg.MaxUncompressedBytes), txns: newTxnPass(nil)}
	if _, removed, err := c.writeCleaned(tmp, s, size); err != nil || removed == 0 {
		t.Fatalf("writeCleaned: %d removed, %v", removed, err)
	}
	before := readSegmentFiles(t, dir)
	if _, err := l.TruncateTo(segs[1].base + 3); err != nil {
		t.Fatal(err)
	}
	if err := l.replaceSegment(s, size, tmp, gen, cfg.IndexIntervalBytes, nil); !errors.Is(err, ErrCompactAborted) {
		t.Fatalf("replaceSegment after a truncation: %v, want ErrCompactAborted", err)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatalf("the cleaned file was left behind: %v", err)
	}
	after := readSegmentFiles(t, dir)
	if !bytes.Equal(before[:size], after[:size]) {
		t.Fatal("the first segment changed")
	}
}
