package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// ---- helpers shared by the core tests (log, reader, recover, retention) ----

var coreT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// coreConfig is a small-segment config for tests.
func coreConfig() Config {
	c := DefaultConfig()
	c.SegmentBytes = 64 << 10
	c.IndexIntervalBytes = 512
	c.RetentionMs = -1
	return c
}

func coreOpen(t testing.TB, dir string, cfg Config) *Log {
	t.Helper()
	l, err := Open(dir, cfg, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// coreCrash abandons a log as a killed process would: files closed, no
// index files, snapshot, checkpoints or marker written.
func coreCrash(t testing.TB, l *Log) {
	t.Helper()
	if err := l.Abandon(); err != nil {
		t.Fatalf("Abandon: %v", err)
	}
}

// coreBatch builds a client batch of n records with timestamps ts, ts+1...
// and values of valueSize bytes that encode the record index.
func coreBatch(t testing.TB, n int, ts int64, valueSize int) []byte {
	t.Helper()
	return coreBatchP(t, n, ts, valueSize, -1, -1, -1)
}

func coreBatchP(t testing.TB, n int, ts int64, valueSize int, pid int64, epoch int16, seq int32) []byte {
	t.Helper()
	recs := make([]Record, n)
	for i := range recs {
		v := bytes.Repeat([]byte{byte('a' + i%26)}, valueSize)
		copy(v, fmt.Sprintf("%d", i))
		recs[i] = Record{Timestamp: ts + int64(i), Key: []byte(fmt.Sprintf("k%d", i)), Value: v}
	}
	b, err := BuildBatch(0, CodecNone, recs, pid, epoch, seq)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// coreAppend appends one batch of n records and checks the offsets.
func coreAppend(t testing.TB, l *Log, n int, ts int64, valueSize int) AppendResult {
	t.Helper()
	want := l.EndOffset()
	res, err := l.Append(coreBatch(t, n, ts, valueSize), 3, coreT0)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	if res.FirstOffset != want || res.LastOffset != want+int64(n)-1 {
		t.Fatalf("Append offsets %d..%d, want %d..%d", res.FirstOffset, res.LastOffset, want, want+int64(n)-1)
	}
	return res
}

// coreBatches splits b into batches and returns their headers.
func coreBatches(t testing.TB, b []byte) []BatchHeader {
	t.Helper()
	bs, err := SplitBatches(b)
	if err != nil {
		t.Fatalf("SplitBatches: %v", err)
	}
	hs := make([]BatchHeader, len(bs))
	for i, x := range bs {
		if hs[i], err = ParseBatchHeader(x); err != nil {
			t.Fatal(err)
		}
		if err := CheckBatchCRC(x); err != nil {
			t.Fatalf("batch %d: %v", hs[i].BaseOffset, err)
		}
	}
	return hs
}

// coreReadAll reads [from, end) with ReadBytes and returns every record offset.
func coreReadAll(t testing.TB, l *Log, from int64) []int64 {
	t.Helper()
	var offs []int64
	for off := from; off < l.EndOffset(); {
		b, err := l.ReadBytes(off, 1<<20, -1)
		if err != nil {
			t.Fatalf("ReadBytes(%d): %v", off, err)
		}
		if len(b) == 0 {
			t.Fatalf("ReadBytes(%d) empty before end %d", off, l.EndOffset())
		}
		bs, err := SplitBatches(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range bs {
			if err := ForEachRecord(x, func(r Record) bool {
				if r.Offset >= off {
					offs = append(offs, r.Offset)
				}
				return true
			}); err != nil {
				t.Fatal(err)
			}
			h, _ := ParseBatchHeader(x)
			off = h.LastOffset() + 1
		}
	}
	return offs
}

func coreCheckContiguous(t testing.TB, offs []int64, from, to int64) {
	t.Helper()
	if int64(len(offs)) != to-from {
		t.Fatalf("read %d records, want %d (%d..%d)", len(offs), to-from, from, to)
	}
	for i, o := range offs {
		if o != from+int64(i) {
			t.Fatalf("record %d has offset %d, want %d", i, o, from+int64(i))
		}
	}
}

func coreSegmentBases(l *Log) []int64 {
	var b []int64
	for _, s := range l.segments() {
		b = append(b, s.base)
	}
	return b
}

// ---- tests ----

func TestAppendAssignsOffsetsAndStamps(t *testing.T) {
	l := coreOpen(t, t.TempDir(), coreConfig())
	for i := 0; i < 10; i++ {
		coreAppend(t, l, 5, coreT0.UnixMilli()+int64(i), 20)
	}
	if got := l.EndOffset(); got != 50 {
		t.Fatalf("EndOffset %d, want 50", got)
	}
	b, err := l.ReadBytes(0, math.MaxInt32, -1)
	if err != nil {
		t.Fatal(err)
	}
	hs := coreBatches(t, b)
	if len(hs) != 10 {
		t.Fatalf("%d batches, want 10", len(hs))
	}
	for i, h := range hs {
		if h.BaseOffset != int64(i*5) || h.PartitionLeaderEpoch != 3 || h.LogAppendTime() {
			t.Fatalf("batch %d: base %d epoch %d lat %v", i, h.BaseOffset, h.PartitionLeaderEpoch, h.LogAppendTime())
		}
	}
	coreCheckContiguous(t, coreReadAll(t, l, 0), 0, 50)
	if l.LatestEpoch() != 3 {
		t.Fatalf("LatestEpoch %d", l.LatestEpoch())
	}
	if s := l.String(); s == "" {
		t.Fatal("empty String")
	}
}

func TestAppendSeveralBatchesOneCall(t *testing.T) {
	l := coreOpen(t, t.TempDir(), coreConfig())
	var recs []byte
	for i := 0; i < 3; i++ {
		recs = append(recs, coreBatch(t, 4, coreT0.UnixMilli(), 10)...)
	}
	res, err := l.Append(recs, 0, coreT0)
	if err != nil {
		t.Fatal(err)
	}
	if res.FirstOffset != 0 || res.LastOffset != 11 || l.EndOffset() != 12 {
		t.Fatalf("res %+v end %d", res, l.EndOffset())
	}
	coreCheckContiguous(t, coreReadAll(t, l, 0), 0, 12)
}

func TestAppendRejectsBadInput(t *testing.T) {
	cfg := coreConfig()
	cfg.MaxMessageBytes = 4096
	l := coreOpen(t, t.TempDir(), cfg)
	good := coreBatch(t, 2, coreT0.UnixMilli(), 10)

	bad := bytes.Clone(good)
	bad[len(bad)-1] ^= 0xff
	tooBig := coreBatch(t, 2, coreT0.UnixMilli(), 3000)
	offset := bytes.Clone(good)
	SetBaseOffset(offset, 7)

	cases := []struct {
		name string
		recs []byte
		want error
	}{
		{"empty", nil, ErrInvalidRecord},
		{"truncated", good[:len(good)-3], ErrInvalidRecord},
		{"crc", bad, ErrCorruptMessage},
		{"second batch corrupt", append(bytes.Clone(good), bad...), ErrCorruptMessage},
		{"too large", tooBig, ErrMessageTooLarge},
		{"client base offset", offset, ErrInvalidRecord},
	}
	for _, c := range cases {
		_, err := l.Append(c.recs, 0, coreT0)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
	}
	if l.EndOffset() != 0 || l.Size() != 0 {
		t.Fatalf("rejected appends wrote: end %d size %d", l.EndOffset(), l.Size())
	}

	cfg.SegmentBytes = 1 << 10
	cfg.MaxMessageBytes = 1 << 20
	l.SetConfig(cfg)
	if _, err := l.Append(coreBatch(t, 3, 0, 500), 0, coreT0); !errors.Is(err, ErrRecordListTooLarge) {
		t.Fatalf("batch over segment.bytes: %v", err)
	}
}

func TestAppendTimestampLimits(t *testing.T) {
	cfg := coreConfig()
	cfg.TimestampBeforeMaxMs = 1000
	cfg.TimestampAfterMaxMs = 1000
	l := coreOpen(t, t.TempDir(), cfg)
	now := coreT0.UnixMilli()
	for _, ts := range []int64{now - 5000, now + 5000} {
		if _, err := l.Append(coreBatch(t, 1, ts, 1), 0, coreT0); !errors.Is(err, ErrInvalidTimestamp) {
			t.Fatalf("ts %d: %v", ts, err)
		}
	}
	coreAppend(t, l, 1, now-500, 1)
	cfg.TimestampType = LogAppendTime
	l.SetConfig(cfg)
	coreAppend(t, l, 1, now-5000, 1) // not checked: the broker's clock wins
}

func TestLogAppendTime(t *testing.T) {
	cfg := coreConfig()
	cfg.TimestampType = LogAppendTime
	l := coreOpen(t, t.TempDir(), cfg)
	now := coreT0.Add(time.Hour)
	res, err := l.Append(coreBatch(t, 3, 1000, 5), 0, now)
	if err != nil {
		t.Fatal(err)
	}
	if res.LogAppendTime != now.UnixMilli() {
		t.Fatalf("LogAppendTime %d, want %d", res.LogAppendTime, now.UnixMilli())
	}
	b, _ := l.ReadBytes(0, 1<<20, -1)
	h := coreBatches(t, b)[0]
	if !h.LogAppendTime() || h.MaxTimestamp != now.UnixMilli() {
		t.Fatalf("header %+v", h)
	}
	off, ts, found, err := l.OffsetForTimestamp(now.UnixMilli())
	if err != nil || !found || off != 0 || ts != now.UnixMilli() {
		t.Fatalf("OffsetForTimestamp: %d %d %v %v", off, ts, found, err)
	}
}

func TestIdempotentProducer(t *testing.T) {
	l := coreOpen(t, t.TempDir(), coreConfig())
	coreAppend(t, l, 2, 1, 1) // some other data first
	b0 := coreBatchP(t, 3, 100, 5, 42, 0, 0)
	r0, err := l.Append(bytes.Clone(b0), 0, coreT0)
	if err != nil || r0.FirstOffset != 2 || r0.LastOffset != 4 || r0.Duplicate {
		t.Fatalf("first: %+v %v", r0, err)
	}
	r1, err := l.Append(coreBatchP(t, 2, 200, 5, 42, 0, 3), 0, coreT0)
	if err != nil || r1.FirstOffset != 5 {
		t.Fatalf("second: %+v %v", r1, err)
	}
	dup, err := l.Append(bytes.Clone(b0), 0, coreT0)
	if err != nil || !dup.Duplicate || dup.FirstOffset != 2 || dup.LastOffset != 4 {
		t.Fatalf("retry: %+v %v", dup, err)
	}
	if _, err := l.Append(coreBatchP(t, 1, 300, 5, 42, 0, 9), 0, coreT0); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("gap: %v", err)
	}
	if l.EndOffset() != 7 {
		t.Fatalf("end %d, want 7 (duplicate and gap not written)", l.EndOffset())
	}
	two := append(coreBatchP(t, 1, 300, 5, 42, 0, 5), coreBatchP(t, 1, 300, 5, 42, 0, 6)...)
	if _, err := l.Append(two, 0, coreT0); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("two idempotent batches in one append: %v", err)
	}
}

func TestRollBySize(t *testing.T) {
	cfg := coreConfig()
	cfg.SegmentBytes = 4096
	l := coreOpen(t, t.TempDir(), cfg)
	for i := 0; i < 40; i++ {
		coreAppend(t, l, 2, coreT0.UnixMilli(), 200) // ~540 bytes
	}
	segs := l.segments()
	if len(segs) < 5 {
		t.Fatalf("%d segments, want several", len(segs))
	}
	for i, s := range segs {
		if s.size.Load() > cfg.SegmentBytes {
			t.Fatalf("segment %d is %d bytes > %d", s.base, s.size.Load(), cfg.SegmentBytes)
		}
		if i > 0 && s.base != segs[i-1].next.Load() {
			t.Fatalf("segment %d does not follow %d (next %d)", s.base, segs[i-1].base, segs[i-1].next.Load())
		}
		if _, err := os.Stat(segmentName(l.dir, s.base, logSuffix)); err != nil {
			t.Fatal(err)
		}
	}
	coreCheckContiguous(t, coreReadAll(t, l, 0), 0, 80)
	// Sealed segments get their index files (and fsync) at the roll.
	if _, err := os.Stat(segmentName(l.dir, segs[0].base, indexSuffix)); err != nil {
		t.Fatal(err)
	}
}

func TestRollByTime(t *testing.T) {
	cfg := coreConfig()
	cfg.SegmentMs = 60_000
	l := coreOpen(t, t.TempDir(), cfg)
	ts := coreT0.UnixMilli()
	coreAppend(t, l, 1, ts, 10)
	coreAppend(t, l, 1, ts+30_000, 10)
	if n := len(l.segments()); n != 1 {
		t.Fatalf("%d segments before segment.ms passed", n)
	}
	coreAppend(t, l, 1, ts+60_001, 10)
	if got := coreSegmentBases(l); len(got) != 2 || got[1] != 2 {
		t.Fatalf("segments %v, want [0 2]", got)
	}
	// LogAppendTime: the append time drives the roll.
	cfg.TimestampType = LogAppendTime
	l.SetConfig(cfg)
	if _, err := l.Append(coreBatch(t, 1, 0, 1), 0, coreT0); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(coreBatch(t, 1, 0, 1), 0, coreT0.Add(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := coreSegmentBases(l); len(got) != 3 || got[2] != 4 {
		t.Fatalf("segments %v, want [0 2 4]", got)
	}
}

func TestRollWhenIndexFull(t *testing.T) {
	cfg := coreConfig()
	cfg.IndexIntervalBytes = 0 // an entry per batch
	cfg.SegmentIndexBytes = 4 * timeIndexEntrySize
	l := coreOpen(t, t.TempDir(), cfg)
	for i := 0; i < 20; i++ {
		coreAppend(t, l, 1, coreT0.UnixMilli()+int64(i), 10)
	}
	if n := len(l.segments()); n < 3 {
		t.Fatalf("%d segments, want rolls on a full index", n)
	}
	for _, s := range l.segments() {
		s.mu.RLock()
		n := s.tidx.count()
		s.mu.RUnlock()
		if n*timeIndexEntrySize > int(cfg.SegmentIndexBytes) {
			t.Fatalf("segment %d time index has %d entries", s.base, n)
		}
	}
	coreCheckContiguous(t, coreReadAll(t, l, 0), 0, 20)
}

func TestSparseIndex(t *testing.T) {
	cfg := coreConfig()
	cfg.IndexIntervalBytes = 4096
	cfg.SegmentBytes = 1 << 20
	l := coreOpen(t, t.TempDir(), cfg)
	for i := 0; i < 200; i++ {
		coreAppend(t, l, 1, coreT0.UnixMilli()+int64(i), 100)
	}
	s := l.active
	s.mu.RLock()
	n := s.idx.count()
	s.mu.RUnlock()
	batches := 200
	perEntry := int(s.size.Load()) / max(n, 1)
	if n == 0 || n >= batches/10 || perEntry < 4096 {
		t.Fatalf("%d index entries for %d batches (%d bytes each)", n, batches, perEntry)
	}
}

func TestFlushMessages(t *testing.T) {
	cfg := coreConfig()
	cfg.FlushMessages = 3
	dir := t.TempDir()
	l := coreOpen(t, dir, cfg)
	coreAppend(t, l, 2, 0, 1)
	if l.unflushed != 2 {
		t.Fatalf("unflushed %d", l.unflushed)
	}
	coreAppend(t, l, 2, 0, 1)
	if l.unflushed != 0 {
		t.Fatalf("unflushed %d after flush.messages", l.unflushed)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
}

func TestFlushMs(t *testing.T) {
	cfg := coreConfig()
	cfg.FlushMs = 1000
	l := coreOpen(t, t.TempDir(), cfg)
	l.lastFlush = coreT0
	if ok, err := l.FlushIfDue(coreT0.Add(time.Hour)); ok || err != nil {
		t.Fatalf("flushed with nothing appended: %v %v", ok, err)
	}
	coreAppend(t, l, 1, 0, 1) // appended at coreT0: not due yet
	if l.unflushed != 1 {
		t.Fatalf("unflushed %d", l.unflushed)
	}
	if ok, _ := l.FlushIfDue(coreT0.Add(999 * time.Millisecond)); ok {
		t.Fatal("flushed before flush.ms")
	}
	if ok, err := l.FlushIfDue(coreT0.Add(time.Second)); !ok || err != nil || l.unflushed != 0 {
		t.Fatalf("not flushed after flush.ms: %v %v", ok, err)
	}
	// An append after flush.ms since the last flush flushes by itself.
	if _, err := l.Append(coreBatch(t, 1, 0, 1), 0, coreT0.Add(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	if l.unflushed != 0 {
		t.Fatalf("append past flush.ms left %d unflushed", l.unflushed)
	}
}

// TestWriteFailure: a failed write (a full disk) answers ErrStorage, leaves
// the published log as it was, refuses later appends, and the next Open
// recovers.
func TestWriteFailure(t *testing.T) {
	dir := t.TempDir()
	ffs := NewFaultFS(nil)
	cfg := coreConfig()
	cfg.FS = ffs
	l := coreOpen(t, dir, cfg)
	coreAppend(t, l, 3, 1000, 10)
	ffs.Inject(Fault{Ops: OpWrite, Path: logSuffix, Err: syscall.ENOSPC})
	_, err := l.Append(coreBatch(t, 2, 1000, 10), 0, coreT0)
	if !errors.Is(err, ErrStorage) {
		t.Fatalf("append on a failing file: %v", err)
	}
	if l.EndOffset() != 3 {
		t.Fatalf("end %d after a failed write", l.EndOffset())
	}
	coreCheckContiguous(t, coreReadAll(t, l, 0), 0, 3)
	if _, err := l.Append(coreBatch(t, 1, 1000, 10), 0, coreT0); !errors.Is(err, ErrStorage) {
		t.Fatalf("append after a storage failure: %v", err)
	}
	if err := l.Close(); err != nil { // no clean-shutdown marker after a failure
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, cleanShutdownName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("clean marker written by a failed log: %v", err)
	}
	l = coreOpen(t, dir, coreConfig())
	if l.recoveredSegments.Load() == 0 || l.EndOffset() != 3 {
		t.Fatalf("reopen: recovered %d end %d", l.recoveredSegments.Load(), l.EndOffset())
	}
	coreAppend(t, l, 1, 1000, 10)
}

func TestClosedLog(t *testing.T) {
	l := coreOpen(t, t.TempDir(), coreConfig())
	coreAppend(t, l, 1, 0, 1)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := l.Append(coreBatch(t, 1, 0, 1), 0, coreT0); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
	if _, err := l.Read(0, 100, -1, true); !errors.Is(err, ErrClosed) {
		t.Fatalf("Read after Close: %v", err)
	}
}

func TestDeleteRemovesDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "topic-0")
	l := coreOpen(t, dir, coreConfig())
	coreAppend(t, l, 1, 0, 1)
	if err := l.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("dir still there: %v", err)
	}
}

func TestConfigNormalized(t *testing.T) {
	c := Config{RetentionMs: -1, RetentionBytes: -1}.normalized()
	d := DefaultConfig()
	if c.SegmentBytes != d.SegmentBytes || c.SegmentMs != d.SegmentMs || c.MaxMessageBytes != d.MaxMessageBytes ||
		c.FlushMessages != math.MaxInt64 || c.SegmentIndexBytes != d.SegmentIndexBytes || c.MaxUncompressedBytes <= 0 {
		t.Fatalf("normalized %+v", c)
	}
	if c := (Config{SegmentBytes: 8 << 30}).normalized(); c.SegmentBytes != math.MaxInt32 {
		t.Fatalf("segment bytes not clamped: %d", c.SegmentBytes)
	}
}

// BenchmarkAppend appends batches of 16 × 1 KiB records (uncompressed).
func BenchmarkAppend(b *testing.B) {
	cfg := DefaultConfig()
	l := coreOpen(b, b.TempDir(), cfg)
	batch := coreBatch(b, 16, coreT0.UnixMilli(), 1024)
	buf := make([]byte, len(batch))
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		copy(buf, batch)
		if _, err := l.Append(buf, 1, coreT0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRead locates 1 MiB of whole batches at a random-ish offset.
func BenchmarkRead(b *testing.B) {
	cfg := DefaultConfig()
	l := coreOpen(b, b.TempDir(), cfg)
	batch := coreBatch(b, 16, coreT0.UnixMilli(), 1024)
	for i := 0; i < 2000; i++ {
		if _, err := l.Append(bytes.Clone(batch), 1, coreT0); err != nil {
			b.Fatal(err)
		}
	}
	end := l.EndOffset()
	b.ReportAllocs()
	b.ResetTimer()
	var total int64
	for i := 0; i < b.N; i++ {
		off := int64(i*7919) % (end - 1000)
		res, err := l.Read(off, 1<<20, -1, true)
		if err != nil {
			b.Fatal(err)
		}
		total += res.Size
		res.Release()
	}
	b.SetBytes(total / int64(b.N))
}
