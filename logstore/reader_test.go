package logstore

import (
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/poll"
)

// regionBatches reads a result's regions and returns the batch headers,
// failing unless the regions hold whole batches.
func regionBatches(t testing.TB, res ReadResult) []BatchHeader {
	t.Helper()
	var all []byte
	for _, rg := range res.Regions {
		b := make([]byte, rg.Length)
		if _, err := rg.File.ReadAt(b, rg.Offset); err != nil {
			t.Fatalf("region read: %v", err)
		}
		all = append(all, b...)
	}
	if int64(len(all)) != res.Size {
		t.Fatalf("regions hold %d bytes, Size %d", len(all), res.Size)
	}
	return coreBatches(t, all)
}

func TestReadMidBatchReturnsWholeBatch(t *testing.T) {
	l := coreOpen(t, t.TempDir(), coreConfig())
	for i := 0; i < 5; i++ {
		coreAppend(t, l, 10, int64(i), 10)
	}
	res, err := l.Read(27, 1, -1, true)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	hs := regionBatches(t, res)
	if len(hs) != 1 || hs[0].BaseOffset != 20 || hs[0].LastOffset() != 29 {
		t.Fatalf("got %+v, want the batch 20..29", hs)
	}
}

func TestReadMaxBytesWholeBatchesAndMinOne(t *testing.T) {
	cfg := coreConfig()
	cfg.IndexIntervalBytes = 100
	l := coreOpen(t, t.TempDir(), cfg)
	for i := 0; i < 20; i++ {
		coreAppend(t, l, 1, int64(i), 300)
	}
	one := l.active.size.Load() / 20 // every batch has the same size
	cases := []struct {
		maxBytes int32
		minOne   bool
		want     int // batches
	}{
		{0, true, 1},
		{10, true, 1},
		{10, false, 0},
		{int32(one), false, 1},
		{int32(one*3 + one/2), true, 3},
		{int32(one * 7), false, 7},
		{math.MaxInt32, true, 15},
	}
	for _, c := range cases {
		res, err := l.Read(5, c.maxBytes, -1, c.minOne)
		if err != nil {
			t.Fatal(err)
		}
		hs := regionBatches(t, res)
		res.Release()
		if len(hs) != c.want {
			t.Fatalf("maxBytes %d minOne %v: %d batches, want %d", c.maxBytes, c.minOne, len(hs), c.want)
		}
		if len(hs) > 0 && hs[0].BaseOffset != 5 {
			t.Fatalf("first batch %d, want 5", hs[0].BaseOffset)
		}
		if c.want > 1 && res.Size > int64(c.maxBytes) {
			t.Fatalf("size %d > maxBytes %d", res.Size, c.maxBytes)
		}
	}
}

func TestReadMaxOffset(t *testing.T) {
	cfg := coreConfig()
	cfg.IndexIntervalBytes = 0
	l := coreOpen(t, t.TempDir(), cfg)
	for i := 0; i < 10; i++ {
		coreAppend(t, l, 3, int64(i), 10)
	}
	for _, c := range []struct{ off, maxOff, wantLast int64 }{
		{0, 10, 11}, // batch 9..11 starts below 10: included whole
		{0, 9, 8},
		{4, 5, 5},
		{4, 3, -1}, // at or past the cap: empty
		{12, 30, 29},
	} {
		res, err := l.Read(c.off, math.MaxInt32, c.maxOff, true)
		if err != nil {
			t.Fatal(err)
		}
		hs := regionBatches(t, res)
		res.Release()
		last := int64(-1)
		if len(hs) > 0 {
			last = hs[len(hs)-1].LastOffset()
		}
		if last != c.wantLast {
			t.Fatalf("Read(%d, maxOffset %d): last offset %d, want %d", c.off, c.maxOff, last, c.wantLast)
		}
	}
}

func TestReadRanges(t *testing.T) {
	l := coreOpen(t, t.TempDir(), coreConfig())
	res, err := l.Read(0, 100, -1, true)
	if err != nil || res.Size != 0 {
		t.Fatalf("empty log: %+v %v", res, err)
	}
	coreAppend(t, l, 5, 0, 1)
	if res, err := l.Read(5, 100, -1, true); err != nil || res.Size != 0 || len(res.Regions) != 0 {
		t.Fatalf("read at end: %+v %v", res, err)
	}
	for _, off := range []int64{6, -1, 100} {
		if _, err := l.Read(off, 100, -1, true); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("Read(%d): %v", off, err)
		}
	}
}

func TestReadAcrossSegments(t *testing.T) {
	cfg := coreConfig()
	cfg.SegmentBytes = 2048
	l := coreOpen(t, t.TempDir(), cfg)
	for i := 0; i < 30; i++ {
		coreAppend(t, l, 2, int64(i), 100)
	}
	if len(l.segments()) < 3 {
		t.Fatal("want several segments")
	}
	res, err := l.Read(3, math.MaxInt32, -1, true)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	if len(res.Regions) < 3 {
		t.Fatalf("%d regions, want one per segment", len(res.Regions))
	}
	hs := regionBatches(t, res)
	if hs[0].BaseOffset != 2 || hs[len(hs)-1].LastOffset() != 59 {
		t.Fatalf("batches %d..%d", hs[0].BaseOffset, hs[len(hs)-1].LastOffset())
	}
}

func TestReadSurvivesSegmentDeletion(t *testing.T) {
	cfg := coreConfig()
	cfg.SegmentBytes = 2048
	l := coreOpen(t, t.TempDir(), cfg)
	for i := 0; i < 30; i++ {
		coreAppend(t, l, 2, int64(i), 100)
	}
	res, err := l.Read(0, 1500, -1, true)
	if err != nil {
		t.Fatal(err)
	}
	want := regionBatches(t, res)
	first := l.segments()[0]
	if _, err := l.DeleteRecordsBefore(l.segments()[2].base); err != nil {
		t.Fatal(err)
	}
	if l.segments()[0] == first {
		t.Fatal("segment not deleted")
	}
	if _, err := l.Read(0, 100, -1, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below the new start: %v", err)
	}
	got := regionBatches(t, res) // the unlinked file is still open
	if len(got) != len(want) || got[0].BaseOffset != 0 {
		t.Fatalf("outstanding read changed: %d batches", len(got))
	}
	cp := res
	res.Release()
	res.Release() // idempotent
	cp.Release()  // a copy too
	// The background fsync of the sealed segment may hold it a moment longer.
	poll.Eventually(t, 5*time.Second, func() error {
		if n := first.refs.Load(); n != 0 {
			return fmt.Errorf("deleted segment still has %d refs", n)
		}
		return nil
	})
	if _, err := first.f.ReadAt(make([]byte, 1), 0); err == nil || errors.Is(err, io.EOF) {
		t.Fatalf("deleted segment's file still open: %v", err)
	}
}

// TestConcurrentReadersOneAppender runs readers against an appender that
// rolls segments, under -race: every read returns whole, CRC-valid batches
// below the end offset observed before it.
func TestConcurrentReadersOneAppender(t *testing.T) {
	cfg := coreConfig()
	cfg.SegmentBytes = 8 << 10
	cfg.IndexIntervalBytes = 256
	cfg.RetentionBytes = 32 << 10
	l := coreOpen(t, t.TempDir(), cfg)
	const total = 600
	var stop atomic.Bool
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			next := int64(0)
			for !stop.Load() {
				end := l.EndOffset()
				res, err := l.Read(next, int32(1000+r*3000), -1, true)
				if errors.Is(err, ErrOffsetOutOfRange) {
					next = l.StartOffset()
					continue
				}
				if err != nil {
					errc <- err
					return
				}
				var buf []byte
				for _, rg := range res.Regions {
					b := make([]byte, rg.Length)
					if _, err := rg.File.ReadAt(b, rg.Offset); err != nil {
						errc <- err
						return
					}
					buf = append(buf, b...)
				}
				res.Release()
				bs, err := SplitBatches(buf)
				if err != nil {
					errc <- err
					return
				}
				for _, b := range bs {
					if err := CheckBatchCRC(b); err != nil {
						errc <- err
						return
					}
					h, _ := ParseBatchHeader(b)
					if h.LastOffset() < next && h.BaseOffset > next {
						errc <- errors.New("batch does not contain the wanted offset")
						return
					}
					next = h.LastOffset() + 1
				}
				if next > max(end, l.EndOffset()) {
					errc <- errors.New("read past the end offset")
					return
				}
			}
		}(r)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			if _, err := l.EnforceRetention(coreT0); err != nil {
				errc <- err
				return
			}
			if _, _, err := l.MaxTimestamp(); err != nil {
				errc <- err
				return
			}
			if _, _, _, err := l.OffsetForTimestamp(100); err != nil {
				errc <- err
				return
			}
			runtime.Gosched()
		}
	}()
	for i := 0; i < total; i++ {
		if _, err := l.Append(coreBatch(t, 1+i%4, int64(i), 50+i%200), 1, coreT0); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
}

func TestOffsetForTimestamp(t *testing.T) {
	cfg := coreConfig()
	cfg.SegmentBytes = 4096
	cfg.IndexIntervalBytes = 200
	l := coreOpen(t, t.TempDir(), cfg)
	// batch i has 4 records with timestamps 1000+10i .. 1000+10i+3
	for i := 0; i < 60; i++ {
		coreAppend(t, l, 4, 1000+int64(i*10), 40)
	}
	if len(l.segments()) < 3 {
		t.Fatal("want several segments")
	}
	for _, c := range []struct {
		ts, wantOff, wantTs int64
		found               bool
	}{
		{0, 0, 1000, true},
		{1000, 0, 1000, true},
		{1002, 2, 1002, true},
		{1004, 4, 1010, true}, // between batches
		{1333, 4*33 + 3, 1333, true},
		{1593, 239, 1593, true},
		{1594, -1, -1, false},
	} {
		off, ts, found, err := l.OffsetForTimestamp(c.ts)
		if err != nil || off != c.wantOff || ts != c.wantTs || found != c.found {
			t.Fatalf("OffsetForTimestamp(%d) = %d, %d, %v, %v; want %d, %d, %v", c.ts, off, ts, found, err, c.wantOff, c.wantTs, c.found)
		}
	}
	// Below the log start offset nothing is returned.
	if _, err := l.DeleteRecordsBefore(50); err != nil {
		t.Fatal(err)
	}
	off, _, found, err := l.OffsetForTimestamp(0)
	if err != nil || !found || off != 50 {
		t.Fatalf("after DeleteRecords: %d %v %v", off, found, err)
	}
}

func TestMaxTimestamp(t *testing.T) {
	cfg := coreConfig()
	cfg.SegmentBytes = 2048
	l := coreOpen(t, t.TempDir(), cfg)
	if off, ts, err := l.MaxTimestamp(); err != nil || off != -1 || ts != -1 {
		t.Fatalf("empty: %d %d %v", off, ts, err)
	}
	for i := 0; i < 40; i++ {
		ts := int64(1000 + i)
		if i == 17 {
			ts = 9000 // batch 17 (offsets 51..53) holds 9000, 9001, 9002
		}
		coreAppend(t, l, 3, ts, 60)
	}
	off, ts, err := l.MaxTimestamp()
	if err != nil || off != 53 || ts != 9002 {
		t.Fatalf("MaxTimestamp = %d, %d, %v; want 53, 9002", off, ts, err)
	}
}
