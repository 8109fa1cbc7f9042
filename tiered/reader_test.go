package tiered

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/samsa-io/samsa/logstore"
)

// resultBytes copies a read result's bytes regions.
func resultBytes(t *testing.T, res logstore.ReadResult) []byte {
	t.Helper()
	var b []byte
	for _, rg := range res.Regions {
		if rg.File != nil {
			t.Fatal("a remote read returned a file region")
		}
		b = append(b, rg.Bytes[rg.Offset:rg.Offset+rg.Length]...)
	}
	return b
}

// TestManagerRead: a remote read from every offset returns the bytes a
// local read of the same segment returns (whole batches, the budget, the
// first batch whole), through a cache of small chunks that stays within
// its bound once the results are released; an offset no remote segment
// serves is out of range.
func TestManagerRead(t *testing.T) {
	t.Parallel()
	meta, id := metaStore(t)
	store := testStore(t, "")
	l := newTestLog(t, 4096)
	appendLog(t, l, 40)
	r := leaderReplica(id, l, 0, 40)
	m := NewManager(ManagerConfig{NodeID: 1, Store: store, Meta: meta, ChunkSize: 1000, CacheBytes: 3000,
		Replicas: func() []Replica { return []Replica{r} }})
	md := passCopies(t, m, r, 0)
	ctx := context.Background()
	for _, maxBytes := range []int32{1, 700, 2500, 1 << 20} {
		for off := int64(0); off < md.CopiedEnd(); off++ {
			seg, _ := md.SegmentFor(off)
			want, err := l.ReadBytes(off, maxBytes, seg.EndOffset)
			if err != nil {
				t.Fatal(err)
			}
			res, err := m.Read(ctx, "t", id, 0, off, maxBytes, 1<<62, true)
			if err != nil {
				t.Fatalf("read %d (max %d): %v", off, maxBytes, err)
			}
			if got := resultBytes(t, res); !bytes.Equal(got, want) {
				t.Fatalf("read %d (max %d): %d bytes, want %d", off, maxBytes, len(got), len(want))
			}
			if res.NextOffset <= off || res.NextOffset > seg.EndOffset {
				t.Fatalf("read %d: next offset %d (segment ends at %d)", off, res.NextOffset, seg.EndOffset)
			}
			res.Release()
		}
	}
	if held := m.reader.cache.held(); held > 3000 {
		t.Errorf("the cache holds %d bytes, bound 3000", held)
	}
	// Not the first batch whole: nothing when it does not fit.
	if res, err := m.Read(ctx, "t", id, 0, 0, 10, 1<<62, false); err != nil || res.Size != 0 {
		t.Errorf("read without minOneBatch: %d bytes, %v", res.Size, err)
	}
	// Below maxOffset only.
	if res, err := m.Read(ctx, "t", id, 0, 0, 1<<20, 1, true); err != nil || res.NextOffset != 1 {
		t.Errorf("read to offset 1: next %d, %v", res.NextOffset, err)
	} else {
		res.Release()
	}
	if _, err := m.Read(ctx, "t", id, 0, md.CopiedEnd(), 100, 1<<62, true); !errors.Is(err, logstore.ErrOffsetOutOfRange) {
		t.Errorf("read past the remote log: %v", err)
	}
}

// TestManagerOffsetForTimestamp: ListOffsets by timestamp over the remote
// segments answers what the local log answers for the same records.
func TestManagerOffsetForTimestamp(t *testing.T) {
	t.Parallel()
	meta, id := metaStore(t)
	store := testStore(t, "")
	l := newTestLog(t, 4096)
	base := time.Now().Add(-time.Hour).UnixMilli()
	for i := range 40 {
		recs := []logstore.Record{{Timestamp: base + int64(i)*1000, Value: bytes.Repeat([]byte{1}, 300)},
			{Timestamp: base + int64(i)*1000 + 500, Value: bytes.Repeat([]byte{2}, 100)}}
		b, err := logstore.BuildBatch(0, logstore.CodecNone, recs, -1, -1, -1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(b, 0, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	r := leaderReplica(id, l, 0, l.EndOffset())
	m := NewManager(ManagerConfig{NodeID: 1, Store: store, Meta: meta, Replicas: func() []Replica { return []Replica{r} }})
	md := passCopies(t, m, r, 0)
	ctx := context.Background()
	for _, ts := range []int64{0, base, base + 1, base + 500, base + 501, base + 7000, base + 15500, base + 100000} {
		off, rts, found, err := m.OffsetForTimestamp(ctx, "t", id, 0, ts, 0)
		if err != nil {
			t.Fatal(err)
		}
		woff, wts, wfound, _ := l.OffsetForTimestamp(ts)
		if wfound && woff >= md.CopiedEnd() {
			woff, wts, wfound = -1, -1, false // past the remote log
		}
		if off != woff || rts != wts || found != wfound {
			t.Errorf("timestamp %d: remote (%d, %d, %v), local (%d, %d, %v)", ts-base, off, rts-base, found, woff, wts-base, wfound)
		}
	}
	// From a log start above a remote segment's first offsets.
	if off, _, found, err := m.OffsetForTimestamp(ctx, "t", id, 0, 0, 3); err != nil || !found || off != 3 {
		t.Errorf("from offset 3: %d, %v, %v", off, found, err)
	}
}
