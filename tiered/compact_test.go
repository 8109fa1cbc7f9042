package tiered

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/poll"
	"github.com/samsa-io/samsa/logstore"
)

// keyedRecord is a record as a reader from offset 0 sees it.
type keyedRecord struct {
	offset     int64
	key, value string
	tombstone  bool
}

// appendKeyed appends n one-record batches to l from record first on: key
// k<i%10>, a 300-byte value naming i; record i is a tombstone when
// tombstone(i).
func appendKeyed(t *testing.T, l *logstore.Log, first, n int, ts time.Time, tombstone func(int) bool) {
	t.Helper()
	for i := first; i < first+n; i++ {
		rec := logstore.Record{Timestamp: ts.UnixMilli(), Key: fmt.Appendf(nil, "k%d", i%10), Value: fmt.Appendf(nil, "v%04d-%s", i, strings.Repeat("x", 294))}
		if tombstone(i) {
			rec.Value = nil
		}
		b, err := logstore.BuildBatch(0, logstore.CodecNone, []logstore.Record{rec}, -1, -1, -1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(b, 0, ts); err != nil {
			t.Fatal(err)
		}
	}
	waitRolled(t, l)
}

// waitRolled waits until every segment of l (of 4 KiB) but the active one
// is offered for copying: a roll completes in the background.
func waitRolled(t *testing.T, l *logstore.Log) {
	t.Helper()
	poll.Eventually(t, 30*time.Second, func() error {
		next := int64(0)
		if rolled := l.RolledSegments(l.EndOffset()); len(rolled) > 0 {
			next = rolled[len(rolled)-1].Next
		}
		if size := l.SizeFrom(next); size > 4096 {
			return fmt.Errorf("%d bytes from %d: a roll under way", size, next)
		}
		return nil
	})
}

// records decodes the records of whole batches b.
func records(t *testing.T, b []byte) []keyedRecord {
	t.Helper()
	var out []keyedRecord
	for len(b) > 0 {
		h, err := logstore.ParseBatchHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		err = logstore.ForEachRecord(b[:h.Size()], func(r logstore.Record) bool {
			out = append(out, keyedRecord{offset: r.Offset, key: string(r.Key), value: string(r.Value), tombstone: r.Value == nil})
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		b = b[h.Size():]
	}
	return out
}

// readTiered reads every record of r's partition below end as a consumer
// from offset 0 does: the local log, or the remote one below it.
func readTiered(t *testing.T, m *Manager, r Replica, end int64) []keyedRecord {
	t.Helper()
	var out []keyedRecord
	for at := int64(0); at < end; {
		b, err := r.Log.ReadBytes(at, 1<<20, end)
		if errors.Is(err, logstore.ErrBelowLocalLog) {
			res, rerr := m.Read(context.Background(), r.Topic, r.TopicID, r.Partition, at, 1<<20, end, true)
			if rerr != nil {
				t.Fatalf("remote read at %d: %v", at, rerr)
			}
			b = resultBytes(t, res)
			res.Release()
			if len(b) == 0 {
				if res.NextOffset <= at {
					t.Fatalf("remote read at %d: nothing, next %d", at, res.NextOffset)
				}
				at = res.NextOffset
				continue
			}
		} else if err != nil {
			t.Fatalf("read at %d: %v", at, err)
		}
		recs := records(t, b)
		if len(recs) == 0 {
			t.Fatalf("read at %d: no record", at)
		}
		out = append(out, recs...)
		h, _ := logstore.ParseBatchHeader(b[len(b)-int(lastBatchSize(t, b)):])
		at = h.LastOffset() + 1
	}
	return out
}

// lastBatchSize is the size of the last of the whole batches b.
func lastBatchSize(t *testing.T, b []byte) int64 {
	t.Helper()
	var size int64
	for len(b) > 0 {
		h, err := logstore.ParseBatchHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		size = h.Size()
		b = b[size:]
	}
	return size
}

// cleanerPass is one pass of a log cleaner: its settings and clock.
type cleanerPass struct {
	opts logstore.CompactOptions
	now  time.Time
}

// compactedReference is what a reader of a log that is not tiered sees:
// the same appends to a log of the same segment size, compacted by the
// passes.
func compactedReference(t *testing.T, appends func(*logstore.Log), passes ...cleanerPass) []keyedRecord {
	t.Helper()
	l := newTestLog(t, 4096)
	appends(l)
	for _, p := range passes {
		if _, err := l.Compact(p.now, p.opts); err != nil {
			t.Fatal(err)
		}
	}
	b, err := l.ReadBytes(0, 1<<30, l.EndOffset())
	if err != nil {
		t.Fatal(err)
	}
	return records(t, b)
}

// TestManagerCompactsRemote: on a compacted topic the leader's pass
// compacts the remote segments with the key map of the whole log, so a
// reader from offset 0 reads what it reads from the same log compacted
// without tiering; the remote log shrinks; an upload that fails half way
// leaves the old segment serving and an entry in Copying that the next
// pass deletes, with no orphan object; tombstones stay
// delete.retention.ms after they were written, whatever their timestamps,
// then go from the remote segments with the records they deleted.
func TestManagerCompactsRemote(t *testing.T) {
	t.Parallel()
	meta, id := metaStore(t)
	store := &failingStore{ObjectStore: testStore(t, "")}
	ctx := context.Background()
	// Records an hour old by their timestamps, written now: their
	// tombstones stay delete.retention.ms after they were written.
	ts := time.Now().Add(-time.Hour)
	deleted := func(i int) bool { return i == 95 || i == 145 } // k5's latest
	appendAll := func(n int) func(*logstore.Log) {
		return func(l *logstore.Log) { appendKeyed(t, l, 0, n, ts, deleted) }
	}

	l := newTestLog(t, 4096)
	appendAll(100)(l)
	r := leaderReplica(id, l, 0, 100)
	r.LocalRetentionBytes = 0
	opts := logstore.CompactOptions{UpTo: 100, DeleteRetentionMs: (10 * time.Minute).Milliseconds()}
	m := NewManager(ManagerConfig{NodeID: 1, Store: store, Meta: meta, Replicas: func() []Replica { return []Replica{r} }})
	check := func(n int, opts logstore.CompactOptions, now time.Time) Metadata {
		t.Helper()
		md, err := m.Metadata(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(md.Copying)+len(md.Deleting) > 0 {
			t.Fatalf("left in copying or deleting: %+v", md)
		}
		checkNoOrphans(t, store, md)
		want := compactedReference(t, appendAll(n), cleanerPass{opts, now})
		got := readTiered(t, m, r, int64(n))
		checkProduced(t, got)
		if !slices.Equal(got, want) {
			t.Fatalf("read from offset 0:\n got %v\nwant %v", got, want)
		}
		return md
	}

	// Copied uncompacted, then compacted: the remote log shrinks.
	md := passCopies(t, m, r, 0)
	before := md.Size()
	r.Compact = &opts
	m.pass(ctx)
	md = check(100, opts, time.Now())
	if md.Size() >= before/2 {
		t.Errorf("remote log of %d bytes, %d before compaction", md.Size(), before)
	}
	if md.CleanedTo != md.CopiedEnd() {
		t.Errorf("cleaned to %d, copied to %d", md.CleanedTo, md.CopiedEnd())
	}

	// More updates, copied; the compaction's first upload fails half way.
	appendKeyed(t, l, 100, 60, ts, deleted)
	r.LastStableOffset, opts.UpTo, r.Compact = 160, 160, nil
	passCopies(t, m, r, 0)
	r.Compact = &opts
	store.puts.Store(2)
	store.failing.Store(true)
	m.pass(ctx)
	if md, _ = m.Metadata(ctx, id, 0); len(md.Copying) != 1 {
		t.Fatalf("after a failed compaction upload: %+v", md)
	}
	checkProduced(t, readTiered(t, m, r, 160))
	store.failing.Store(false)
	m.pass(ctx)
	check(160, opts, time.Now())

	// delete.retention.ms passed: the tombstones go from the remote log,
	// with every older record of their key (a new leader's first pass).
	opts.DeleteRetentionMs = 0
	m.now = func() time.Time { return time.Now().Add(time.Second) }
	m.mu.Lock()
	delete(m.compacted, partKey{id, 0})
	m.mu.Unlock()
	m.pass(ctx)
	md = check(160, opts, time.Now().Add(time.Second))
	if md.CleanedTo <= 145 {
		t.Fatalf("remote segments clean up to %d, below the tombstone at 145", md.CleanedTo)
	}
	for _, k := range readTiered(t, m, r, md.CleanedTo) {
		if k.key == "k5" && k.offset <= 145 {
			t.Errorf("k5 deleted at 145, read %+v", k)
		}
	}
}

// checkProduced fails unless each record is the one appendKeyed wrote at
// its offset.
func checkProduced(t *testing.T, recs []keyedRecord) {
	t.Helper()
	for _, k := range recs {
		if k.key != fmt.Sprintf("k%d", k.offset%10) || !k.tombstone && !strings.HasPrefix(k.value, fmt.Sprintf("v%04d-", k.offset)) {
			t.Fatalf("read %+v", k)
		}
	}
}

// TestManagerCompactsRemoteTransactions: committed and aborted
// transactions in the remote segments are compacted as the log cleaner
// compacts them (aborted records gone, markers kept while their
// transaction has records, then gone after delete.retention.ms): a
// reader from offset 0 reads what it reads from the same log compacted
// by the same passes without tiering.
func TestManagerCompactsRemoteTransactions(t *testing.T) {
	t.Parallel()
	meta, id := metaStore(t)
	store := testStore(t, "")
	ctx := context.Background()
	ts := time.Now().Add(-time.Minute)
	appendTxns := func(l *logstore.Log) {
		for j := range 40 {
			recs := []logstore.Record{
				{Timestamp: ts.UnixMilli(), Key: fmt.Appendf(nil, "k%d", j%10), Value: fmt.Appendf(nil, "t%04d-%s", j, strings.Repeat("x", 294))},
				{Timestamp: ts.UnixMilli(), Key: fmt.Appendf(nil, "k%d", (j+3)%10), Value: fmt.Appendf(nil, "u%04d", j)},
			}
			b, err := logstore.EncodeBatch(logstore.BatchSpec{PartitionLeaderEpoch: -1, ProducerID: 7, ProducerEpoch: 0,
				BaseSequence: int32(2 * j), Transactional: true}, recs)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Append(b, 0, ts); err != nil {
				t.Fatal(err)
			}
			if _, err := l.AppendMarker(logstore.Marker{ProducerID: 7, ProducerEpoch: 0, Commit: j%3 != 1}, 0, ts); err != nil {
				t.Fatal(err)
			}
		}
		waitRolled(t, l)
	}
	l := newTestLog(t, 4096)
	appendTxns(l)
	end := l.EndOffset()
	r := leaderReplica(id, l, 0, end)
	r.LocalRetentionBytes = 0
	m := NewManager(ManagerConfig{NodeID: 1, Store: store, Meta: meta, Replicas: func() []Replica { return []Replica{r} }})
	passCopies(t, m, r, 0)

	check := func(passes ...cleanerPass) {
		t.Helper()
		md, err := m.Metadata(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		checkNoOrphans(t, store, md)
		got := readTiered(t, m, r, end)
		if want := compactedReference(t, appendTxns, passes...); !slices.Equal(got, want) {
			t.Fatalf("read from offset 0 after %d passes:\n got %v\nwant %v", len(passes), got, want)
		}
		for _, k := range got {
			var j int
			if _, err := fmt.Sscanf(k.value, "t%04d-", &j); err == nil && j%3 == 1 && k.offset < md.CopiedEnd() {
				t.Fatalf("aborted record read from a remote segment: %+v", k)
			}
		}
	}
	first := logstore.CompactOptions{UpTo: end, DeleteRetentionMs: 1 << 40}
	r.Compact = &first
	m.pass(ctx)
	check(cleanerPass{first, time.Now()})

	// delete.retention.ms passed: a new leader's first pass drops the
	// markers whose transactions have no record left.
	second := first
	second.DeleteRetentionMs = 0
	r.Compact = &second
	m.now = func() time.Time { return time.Now().Add(time.Second) }
	m.mu.Lock()
	delete(m.compacted, partKey{id, 0})
	m.mu.Unlock()
	m.pass(ctx)
	check(cleanerPass{first, time.Now()}, cleanerPass{second, time.Now().Add(time.Second)})
}

// TestManagerCompactsRemoteDirtyRatio: with min.cleanable.dirty.ratio
// 0.5 and local.retention.bytes 0 (segments leave the disk as soon as
// they are copied), what was copied since the last pass counts as dirty:
// updates of every key, copied, get the remote segments compacted again.
func TestManagerCompactsRemoteDirtyRatio(t *testing.T) {
	t.Parallel()
	meta, id := metaStore(t)
	store := testStore(t, "")
	ts := time.Now()
	none := func(int) bool { return false }
	l := newTestLog(t, 4096)
	appendKeyed(t, l, 0, 100, ts, none)
	r := leaderReplica(id, l, 0, 100)
	r.LocalRetentionBytes = 0
	opts := logstore.CompactOptions{UpTo: 100, DeleteRetentionMs: 1 << 40, MinCleanableRatio: 0.5}
	r.Compact = &opts
	m := NewManager(ManagerConfig{NodeID: 1, Store: store, Meta: meta, Replicas: func() []Replica { return []Replica{r} }})
	for _, n := range []int{100, 200} {
		if n > 100 {
			appendKeyed(t, l, 100, 100, ts, none)
			r.LastStableOffset, opts.UpTo = 200, 200
		}
		m.pass(context.Background())
		want := compactedReference(t, func(l *logstore.Log) { appendKeyed(t, l, 0, n, ts, none) }, cleanerPass{opts, time.Now()})
		if got := readTiered(t, m, r, int64(n)); !slices.Equal(got, want) {
			t.Fatalf("%d records: read from offset 0:\n got %v\nwant %v", n, got, want)
		}
	}
}

// TestSameFilesSeesAReplacedSegment: an upload that opened a segment's
// .log before the log cleaner renamed its cleaned copy over it (and so
// may have opened the new indexes with the old .log) fails, to copy the
// segment again at the next pass, rather than send files that do not
// match.
func TestSameFilesSeesAReplacedSegment(t *testing.T) {
	dir := t.TempDir()
	open := func(name string) *os.File {
		t.Helper()
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	for _, name := range []string{"0.log", "0.index", "0.log.cleaned"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files := []*os.File{open("0.log"), open("0.index")}
	if err := sameFiles(files); err != nil {
		t.Fatalf("nothing replaced: %v", err)
	}
	if err := os.Rename(filepath.Join(dir, "0.log.cleaned"), filepath.Join(dir, "0.log")); err != nil {
		t.Fatal(err)
	}
	if err := sameFiles(files); err == nil {
		t.Fatal("the .log was replaced after it was opened: no error")
	}
}

// TestManagerCompactsOneAtATime: while a remote compaction pass runs on
// the broker (its key map may take the whole dedupe buffer), another
// partition's pass copies but leaves its compaction to a later pass.
func TestManagerCompactsOneAtATime(t *testing.T) {
	t.Parallel()
	meta, id := metaStore(t)
	l := newTestLog(t, 4096)
	appendKeyed(t, l, 0, 60, time.Now(), func(int) bool { return false })
	r := leaderReplica(id, l, 0, 60)
	r.Compact = &logstore.CompactOptions{UpTo: 60, DeleteRetentionMs: 1 << 40}
	m := NewManager(ManagerConfig{NodeID: 1, Store: testStore(t, ""), Meta: meta, Replicas: func() []Replica { return []Replica{r} }})
	m.compacting.Lock() // another partition's pass
	md := passCopies(t, m, r, 0)
	if md.CleanedTo != 0 {
		t.Fatalf("compacted to %d beside another pass", md.CleanedTo)
	}
	m.compacting.Unlock()
	if md = passCopies(t, m, r, 0); md.CleanedTo != md.CopiedEnd() {
		t.Fatalf("compacted to %d, copied to %d", md.CleanedTo, md.CopiedEnd())
	}
}
