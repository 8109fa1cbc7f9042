package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/poll"
)

func TestRetentionByTime(t *testing.T) {
	dir := t.TempDir()
	cfg := coreConfig()
	cfg.SegmentBytes = 2048
	l := coreOpen(t, dir, cfg)
	day := int64(24 * 3600 * 1000)
	base := coreT0.UnixMilli()
	for i := 0; i < 30; i++ { // 10 days of data, 3 batches a day
		coreAppend(t, l, 2, base+int64(i)*day/3, 150)
	}
	now := coreT0.Add(10 * 24 * time.Hour)
	if n, err := l.EnforceRetention(now); err != nil || n != 0 {
		t.Fatalf("infinite retention deleted %d: %v", n, err)
	}
	cfg.RetentionMs = 5 * day
	l.SetConfig(cfg)
	n, err := l.EnforceRetention(now)
	if err != nil || n == 0 {
		t.Fatalf("EnforceRetention: %d %v", n, err)
	}
	start := l.StartOffset()
	if start == 0 || start != l.segments()[0].base {
		t.Fatalf("start %d, first segment %d", start, l.segments()[0].base)
	}
	for _, s := range l.segments() {
		if now.UnixMilli()-s.largestTimestamp(cfg.IndexIntervalBytes) > cfg.RetentionMs {
			t.Fatalf("segment %d (max ts %d) should have gone", s.base, s.largestTimestamp(cfg.IndexIntervalBytes))
		}
	}
	// The first remaining segment holds data younger than 5 days; the last deleted didn't.
	if _, err := l.Read(start-1, 100, -1, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below start: %v", err)
	}
	coreCheckContiguous(t, coreReadAll(t, l, start), start, 60)
	if n, _ := l.EnforceRetention(now); n != 0 {
		t.Fatalf("second pass deleted %d", n)
	}

	// Everything expired: the active segment goes too, after a roll.
	end := l.EndOffset()
	n, err = l.EnforceRetention(now.Add(30 * 24 * time.Hour))
	if err != nil || n == 0 {
		t.Fatal(n, err)
	}
	if l.StartOffset() != end || l.EndOffset() != end || l.Size() != 0 || len(l.segments()) != 1 {
		t.Fatalf("after full expiry start %d end %d size %d segs %v", l.StartOffset(), l.EndOffset(), l.Size(), coreSegmentBases(l))
	}
	if res, err := l.Read(end, 100, -1, true); err != nil || res.Size != 0 {
		t.Fatalf("read at end: %v", err)
	}
	coreAppend(t, l, 1, base, 10)

	// The start offset survives a restart.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = coreOpen(t, dir, cfg)
	if l.StartOffset() != end || l.EndOffset() != end+1 {
		t.Fatalf("reopened start %d end %d, want %d %d", l.StartOffset(), l.EndOffset(), end, end+1)
	}
}

func TestProducerIDExpiration(t *testing.T) {
	cfg := coreConfig()
	cfg.ProducerIDExpirationMs = 60_000
	l := coreOpen(t, t.TempDir(), cfg)
	ts := coreT0.UnixMilli()
	if _, err := l.Append(coreBatchP(t, 1, ts, 1, 11, 0, 0), 0, coreT0); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(coreBatchP(t, 1, ts+50_000, 1, 12, 0, 0), 0, coreT0); err != nil {
		t.Fatal(err)
	}
	if _, err := l.EnforceRetention(coreT0.Add(70 * time.Second)); err != nil {
		t.Fatal(err)
	}
	// 11 is forgotten: any sequence is accepted again (unknown producer);
	// 12 is still known: a gap is refused.
	if _, err := l.Append(coreBatchP(t, 1, ts, 1, 11, 0, 7), 0, coreT0); err != nil {
		t.Fatalf("expired producer: %v", err)
	}
	if _, err := l.Append(coreBatchP(t, 1, ts, 1, 12, 0, 7), 0, coreT0); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("live producer: %v", err)
	}
}

func TestRetentionBySize(t *testing.T) {
	cfg := coreConfig()
	cfg.SegmentBytes = 2048
	l := coreOpen(t, t.TempDir(), cfg)
	for i := 0; i < 40; i++ {
		coreAppend(t, l, 2, coreT0.UnixMilli(), 150)
	}
	size := l.Size()
	cfg.RetentionBytes = size / 2
	l.SetConfig(cfg)
	n, err := l.EnforceRetention(coreT0)
	if err != nil || n == 0 {
		t.Fatalf("EnforceRetention: %d %v", n, err)
	}
	if l.Size() > cfg.RetentionBytes+cfg.SegmentBytes || l.Size() < cfg.RetentionBytes-cfg.SegmentBytes {
		t.Fatalf("size %d after retention.bytes %d", l.Size(), cfg.RetentionBytes)
	}
	// Deleting one more segment would take the log below retention.bytes.
	if l.Size()-l.segments()[0].size.Load() >= cfg.RetentionBytes {
		t.Fatalf("retention kept too much: %d", l.Size())
	}
	if l.StartOffset() != l.segments()[0].base {
		t.Fatalf("start %d != first base %d", l.StartOffset(), l.segments()[0].base)
	}
	for _, b := range []int64{0} {
		if _, err := os.Stat(segmentName(l.dir, b, logSuffix)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("segment %d still on disk", b)
		}
	}
	coreCheckContiguous(t, coreReadAll(t, l, l.StartOffset()), l.StartOffset(), 80)
}

func TestDeleteRecordsBefore(t *testing.T) {
	cfg := coreConfig()
	cfg.SegmentBytes = 2048
	dir, l := coreFilledLog(t, cfg, 30, 150)
	bases := coreSegmentBases(l)
	if _, err := l.DeleteRecordsBefore(61); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("past the end: %v", err)
	}
	mid := bases[2] + 1
	got, err := l.DeleteRecordsBefore(mid)
	if err != nil || got != mid || l.StartOffset() != mid {
		t.Fatalf("DeleteRecordsBefore(%d) = %d, %v (start %d)", mid, got, err, l.StartOffset())
	}
	if b := coreSegmentBases(l); b[0] != bases[2] {
		t.Fatalf("segments %v, want from %d", b, bases[2])
	}
	if got, err := l.DeleteRecordsBefore(3); err != nil || got != mid {
		t.Fatalf("lower offset: %d %v", got, err)
	}
	if _, err := l.Read(mid-1, 100, -1, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below start: %v", err)
	}
	res, err := l.Read(mid, 1, -1, true)
	if err != nil {
		t.Fatal(err)
	}
	hs := regionBatches(t, res)
	res.Release()
	if hs[0].BaseOffset > mid || hs[0].LastOffset() < mid {
		t.Fatalf("read at start gave %d..%d", hs[0].BaseOffset, hs[0].LastOffset())
	}
	// Persisted without a clean shutdown too.
	coreCrash(t, l)
	l = coreOpen(t, dir, cfg)
	if l.StartOffset() != mid {
		t.Fatalf("start after crash %d, want %d", l.StartOffset(), mid)
	}
	// Up to the end: the log is empty but keeps its offsets.
	if got, err := l.DeleteRecordsBefore(l.EndOffset()); err != nil || got != 60 {
		t.Fatalf("delete all: %d %v", got, err)
	}
	if res, err := l.Read(60, 100, -1, true); err != nil || res.Size != 0 {
		t.Fatalf("read at end: %v", err)
	}
	coreAppend(t, l, 1, 1, 1)
	if _, err := os.Stat(filepath.Join(dir, startOffsetName)); err != nil {
		t.Fatal(err)
	}
}

// coreLeaderBatches appends n batches to a leader log and returns the
// bytes a follower would fetch (whole batches, offsets assigned).
func coreLeaderBatches(t *testing.T, leader *Log, n int, epoch int32) []byte {
	t.Helper()
	from := leader.EndOffset()
	for i := 0; i < n; i++ {
		if _, err := leader.Append(coreBatch(t, 2, 1000+from+int64(i), 100), epoch, coreT0); err != nil {
			t.Fatal(err)
		}
	}
	b, err := leader.ReadBytes(from, 1<<30, -1)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAppendAsFollower(t *testing.T) {
	cfg := coreConfig()
	cfg.SegmentBytes = 2048
	leader := coreOpen(t, t.TempDir(), cfg)
	dir := t.TempDir()
	f := coreOpen(t, dir, cfg)

	b1 := coreLeaderBatches(t, leader, 10, 1)
	b2 := coreLeaderBatches(t, leader, 10, 2)
	res, err := f.AppendAsFollower(b1, coreT0)
	if err != nil || res.FirstOffset != 0 || res.LastOffset != 19 {
		t.Fatalf("%+v %v", res, err)
	}
	// One fetch's worth at a time, as a follower would.
	for p := b2; len(p) > 0; {
		bs, _ := SplitBatches(p)
		if _, err := f.AppendAsFollower(bs[0], coreT0); err != nil {
			t.Fatal(err)
		}
		p = p[len(bs[0]):]
	}
	if f.EndOffset() != leader.EndOffset() || f.LatestEpoch() != 2 {
		t.Fatalf("follower end %d epoch %d", f.EndOffset(), f.LatestEpoch())
	}
	if e, o := f.EndOffsetForEpoch(1); e != 1 || o != 20 {
		t.Fatalf("EndOffsetForEpoch(1) = %d %d", e, o)
	}
	lb, _ := leader.ReadBytes(0, 1<<30, -1)
	fb, _ := f.ReadBytes(0, 1<<30, -1)
	if !bytes.Equal(lb, fb) {
		t.Fatal("follower bytes differ from the leader's")
	}
	if _, err := f.AppendAsFollower(b1, coreT0); !errors.Is(err, ErrUnexpectedOffset) {
		t.Fatalf("old batches again: %v", err)
	}
	bs1, _ := SplitBatches(b1)
	bad := bytes.Clone(bs1[0])
	bad[len(bad)-1] ^= 1
	SetBaseOffset(bad, 100)
	if _, err := f.AppendAsFollower(bad, coreT0); !errors.Is(err, ErrCorruptMessage) {
		t.Fatalf("corrupt batch: %v", err)
	}
	// A gap (compacted leader) rolls a segment at the batch's offset.
	gap := coreBatch(t, 1, 5, 5)
	SetBaseOffset(gap, 100)
	SetPartitionLeaderEpoch(gap, 3)
	if _, err := f.AppendAsFollower(gap, coreT0); err != nil {
		t.Fatal(err)
	}
	if f.EndOffset() != 101 {
		t.Fatalf("end %d after gap", f.EndOffset())
	}
	if _, err := f.Read(100, 100, -1, true); err != nil {
		t.Fatal(err)
	}
}

func TestTruncateTo(t *testing.T) {
	dir := t.TempDir()
	cfg := coreConfig()
	cfg.SegmentBytes = 2048
	l := coreOpen(t, dir, cfg)
	for i := 0; i < 20; i++ {
		if _, err := l.Append(coreBatchP(t, 2, 1000+int64(i), 100, 5, 0, int32(i*2)), int32(i/5), coreT0); err != nil {
			t.Fatal(err)
		}
	}
	// epochs: 0@0 1@10 2@20 3@30; 40 records
	nsegs := len(l.segments())
	got, err := l.TruncateTo(25) // mid-batch 24..25: cut at 24
	if err != nil || got != 24 || l.EndOffset() != 24 {
		t.Fatalf("TruncateTo(25) = %d %v (end %d)", got, err, l.EndOffset())
	}
	if len(l.segments()) >= nsegs {
		t.Fatalf("segments %v not dropped", coreSegmentBases(l))
	}
	if l.LatestEpoch() != 2 {
		t.Fatalf("latest epoch %d", l.LatestEpoch())
	}
	coreCheckContiguous(t, coreReadAll(t, l, 0), 0, 24)
	if off, ts, err := l.MaxTimestamp(); err != nil || off != 23 || ts != 1012 {
		t.Fatalf("MaxTimestamp after truncation %d %d %v", off, ts, err)
	}
	// Producer state follows: the next sequence is 24 again.
	if _, err := l.Append(coreBatchP(t, 2, 1, 1, 5, 0, 26), 2, coreT0); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("sequence after truncation: %v", err)
	}
	if _, err := l.Append(coreBatchP(t, 2, 2000, 1, 5, 0, 24), 4, coreT0); err != nil {
		t.Fatal(err)
	}
	if e, o := l.EndOffsetForEpoch(2); e != 2 || o != 24 {
		t.Fatalf("EndOffsetForEpoch(2) = %d %d", e, o)
	}
	if got, _ := l.TruncateTo(1000); got != 26 {
		t.Fatalf("TruncateTo past end = %d", got)
	}
	// Survives a crash and a clean restart.
	coreCrash(t, l)
	l = coreOpen(t, dir, cfg)
	if l.EndOffset() != 26 {
		t.Fatalf("end after reopen %d", l.EndOffset())
	}
	coreCheckContiguous(t, coreReadAll(t, l, 0), 0, 26)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = coreOpen(t, dir, cfg)
	coreCheckContiguous(t, coreReadAll(t, l, 0), 0, 26)

	if err := l.TruncateFullyAndStartAt(500); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != 500 || l.EndOffset() != 500 || l.LatestEpoch() != -1 || len(l.segments()) != 1 {
		t.Fatalf("after full truncation start %d end %d epoch %d segs %v", l.StartOffset(), l.EndOffset(), l.LatestEpoch(), coreSegmentBases(l))
	}
	res := coreAppend(t, l, 1, 1, 1)
	if res.FirstOffset != 500 {
		t.Fatal(res)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = coreOpen(t, dir, cfg)
	if l.StartOffset() != 500 || l.EndOffset() != 501 {
		t.Fatalf("reopened start %d end %d", l.StartOffset(), l.EndOffset())
	}
}

// TestTruncateWhileReading runs readers against a follower that keeps
// truncating and re-appending, under -race: reads may fail (the bytes they
// were about to read went away) but never panic or race.
func TestTruncateWhileReading(t *testing.T) {
	cfg := coreConfig()
	cfg.SegmentBytes = 2048
	leader := coreOpen(t, t.TempDir(), cfg)
	all := coreLeaderBatches(t, leader, 60, 1)
	f := coreOpen(t, t.TempDir(), cfg)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				res, err := f.Read(f.StartOffset(), 4096, -1, true)
				if err != nil && !errors.Is(err, ErrOffsetOutOfRange) && !errors.Is(err, ErrStorage) {
					t.Error(err)
					return
				}
				res.Release()
				_, _, _, _ = f.OffsetForTimestamp(1010)
				runtime.Gosched()
			}
		}()
	}
	for round := 0; round < 30; round++ {
		from := f.EndOffset()
		bs, _ := SplitBatches(all)
		for _, b := range bs {
			h, _ := ParseBatchHeader(b)
			if h.BaseOffset < from {
				continue
			}
			if _, err := f.AppendAsFollower(b, coreT0); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := f.TruncateTo(int64(round * 3 % 100)); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	coreCheckContiguous(t, coreReadAll(t, f, 0), 0, f.EndOffset())
}

// TestDeleteLocalSegments: tiered storage's local retention deletes only
// rolled segments below the copied end, by local.retention.ms and .bytes,
// keeps the log start offset (reads below the local segments answer
// ErrBelowLocalLog), and a reopened log keeps its start below them;
// EnforceRetention leaves retention.ms/bytes alone under RemoteStorage.
func TestDeleteLocalSegments(t *testing.T) {
	dir := t.TempDir()
	cfg := coreConfig()
	cfg.SegmentBytes = 2048
	cfg.RemoteStorage = true
	cfg.RetentionMs, cfg.RetentionBytes = 1, 1
	l := coreOpen(t, dir, cfg)
	day := int64(24 * 3600 * 1000)
	base := coreT0.UnixMilli()
	for i := range 30 {
		coreAppend(t, l, 2, base+int64(i)*day/3, 150)
	}
	now := coreT0.Add(20 * 24 * time.Hour)
	if n, err := l.EnforceRetention(now); err != nil || n != 0 {
		t.Fatalf("EnforceRetention of a tiered log deleted %d: %v", n, err)
	}
	segs := coreSegmentBases(l)
	if len(segs) < 6 {
		t.Fatalf("segments %v", segs)
	}
	// Nothing copied: nothing goes, however old.
	if n, err := l.DeleteLocalSegments(now, 0, l.EndOffset(), 0, 0); err != nil || n != 0 {
		t.Fatalf("deleted %d uncopied segments: %v", n, err)
	}
	// Copied up to the fourth segment's base; by time only the first
	// three may go.
	copied := segs[3]
	n, err := l.DeleteLocalSegments(now, copied, l.EndOffset(), day, -1)
	if err != nil || n != 3 {
		t.Fatalf("by time: deleted %d, want 3: %v", n, err)
	}
	if l.StartOffset() != 0 || l.LocalStartOffset() != copied {
		t.Fatalf("start %d, local start %d; want 0, %d", l.StartOffset(), l.LocalStartOffset(), copied)
	}
	if _, err := l.Read(copied-1, 100, -1, true); !errors.Is(err, ErrBelowLocalLog) {
		t.Fatalf("read below the local log: %v", err)
	}
	coreCheckContiguous(t, coreReadAll(t, l, copied), copied, 60)
	// By size (none kept): everything copied goes, and nothing more.
	if n, err := l.DeleteLocalSegments(now, segs[4], l.EndOffset(), -1, 0); err != nil || n != 1 {
		t.Fatalf("by size: deleted %d, want 1: %v", n, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = coreOpen(t, dir, cfg)
	if l.StartOffset() != 0 || l.LocalStartOffset() != segs[4] {
		t.Fatalf("reopened: start %d, local start %d; want 0, %d", l.StartOffset(), l.LocalStartOffset(), segs[4])
	}
}

// TestDeleteLocalSegmentsRollsActive: local retention rolls the active
// segment, as Kafka 4.4's deletableSegments does for a tiered log, only
// when every segment before it goes, it is past local.retention.ms or
// .bytes itself, holds records and lies wholly below rollUpTo (the high
// watermark; -1 never);
// the segment it rolled goes once copied, and an empty active segment is
// not rolled again.
func TestDeleteLocalSegmentsRollsActive(t *testing.T) {
	day := int64(24 * 3600 * 1000)
	now := coreT0.Add(20 * 24 * time.Hour)
	tests := []struct {
		name                        string
		copiedBelowActive           bool // false: the last rolled segment is not copied
		hwBelowEnd                  bool
		never                       bool // rollUpTo -1: a compact-only topic
		retentionMs, retentionBytes int64
		rolls                       bool
	}{
		{name: "by size", copiedBelowActive: true, retentionMs: -1, retentionBytes: 0, rolls: true},
		{name: "by time", copiedBelowActive: true, retentionMs: day, retentionBytes: -1, rolls: true},
		{name: "within retention", copiedBelowActive: true, retentionMs: 30 * day, retentionBytes: -1},
		{name: "within bytes", copiedBelowActive: true, retentionMs: -1, retentionBytes: 1},
		{name: "above the high watermark", copiedBelowActive: true, hwBelowEnd: true, retentionMs: -1, retentionBytes: 0},
		{name: "a rolled segment not copied", retentionMs: -1, retentionBytes: 0},
		{name: "never", copiedBelowActive: true, never: true, retentionMs: -1, retentionBytes: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := coreConfig()
			cfg.SegmentBytes = 2048
			cfg.RemoteStorage = true
			l := coreOpen(t, t.TempDir(), cfg)
			for i := range 20 {
				coreAppend(t, l, 2, coreT0.UnixMilli()+int64(i), 150)
			}
			segs := coreSegmentBases(l)
			active, end := segs[len(segs)-1], l.EndOffset()
			if len(segs) < 3 || active == end {
				t.Fatalf("segments %v, end %d: want rolled ones and a non-empty active one", segs, end)
			}
			copied, hw := active, end
			if !tc.copiedBelowActive {
				copied = segs[len(segs)-2]
			}
			if tc.hwBelowEnd {
				hw = end - 1
			}
			if tc.never {
				hw = -1
			}
			if _, err := l.DeleteLocalSegments(now, copied, hw, tc.retentionMs, tc.retentionBytes); err != nil {
				t.Fatal(err)
			}
			got := coreSegmentBases(l)
			if rolled := got[len(got)-1] == end; rolled != tc.rolls {
				t.Fatalf("segments %v after local retention (end %d): rolled %v, want %v", got, end, rolled, tc.rolls)
			}
			if !tc.rolls {
				return
			}
			// Copied, the rolled segment goes; the empty active one stays.
			if _, err := l.DeleteLocalSegments(now, end, end, tc.retentionMs, tc.retentionBytes); err != nil {
				t.Fatal(err)
			}
			if got := coreSegmentBases(l); !slices.Equal(got, []int64{end}) || l.LocalStartOffset() != end || l.StartOffset() != 0 {
				t.Fatalf("after the copy: segments %v, local start %d, start %d; want [%d], %d, 0",
					got, l.LocalStartOffset(), l.StartOffset(), end, end)
			}
		})
	}
}

// TestStartAtRemote: a follower's log restarts above the remote copy
// with the leader's log start, the leader epochs below the restart point
// from the copied checkpoint, and the producer state from the copied
// snapshot; appends as follower go on from there.
func TestStartAtRemote(t *testing.T) {
	cfg := coreConfig()
	cfg.SegmentBytes = 2048
	leader := coreOpen(t, t.TempDir(), cfg)
	for i := range 10 {
		epoch := int32(0)
		if i >= 5 {
			epoch = 1
		}
		if _, err := leader.Append(coreBatchP(t, 2, coreT0.UnixMilli(), 150, 7, 0, int32(2*i)), epoch, coreT0); err != nil {
			t.Fatal(err)
		}
	}
	if err := leader.Flush(); err != nil {
		t.Fatal(err)
	}
	// A segment is offered for copying once its roll is complete: its
	// producer snapshot is written in the background.
	var rolled []SegmentRange
	poll.Eventually(t, 30*time.Second, func() error {
		rolled = leader.RolledSegments(leader.EndOffset())
		if len(rolled) != len(leader.segments())-1 {
			return fmt.Errorf("%d of %d rolled segments offered", len(rolled), len(leader.segments())-1)
		}
		return nil
	})
	at := rolled[len(rolled)-1].Next
	epochs, err := os.ReadFile(filepath.Join(leader.Dir(), epochCheckpointName))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := os.ReadFile(segmentName(leader.Dir(), at, snapshotSuffix))
	if err != nil {
		t.Fatal(err)
	}
	cfg.RemoteStorage = true
	dir := t.TempDir()
	f := coreOpen(t, dir, cfg)
	if err := f.StartAtRemote(4, at, epochs, snap); err != nil {
		t.Fatal(err)
	}
	if f.StartOffset() != 4 || f.LocalStartOffset() != at || f.EndOffset() != at {
		t.Fatalf("start %d, local start %d, end %d; want 4, %d, %d", f.StartOffset(), f.LocalStartOffset(), f.EndOffset(), at, at)
	}
	if e, end := f.EndOffsetForEpoch(0); e != 0 || end != 10 {
		t.Errorf("epoch 0 ends at %d (epoch %d), want 10", end, e)
	}
	if e, seq, ok := f.ProducerLastSequence(7); !ok || e != 0 || seq != int32(at)-1 {
		t.Errorf("producer 7: epoch %d, last sequence %d, %v; want %d", e, seq, ok, at-1)
	}
	// The follower appends what the leader has from there on.
	rest, err := leader.ReadBytes(at, 1<<20, -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.AppendAsFollower(rest, coreT0); err != nil || f.EndOffset() != leader.EndOffset() {
		t.Fatalf("append as follower: end %d, want %d: %v", f.EndOffset(), leader.EndOffset(), err)
	}
	// Reopened, it keeps its start below its local log.
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	f = coreOpen(t, dir, cfg)
	if f.StartOffset() != 4 || f.LocalStartOffset() != at {
		t.Fatalf("reopened: start %d, local start %d", f.StartOffset(), f.LocalStartOffset())
	}
	if err := f.StartAtRemote(at+1, at, epochs, nil); err == nil {
		t.Error("a log start above the restart point was taken")
	}
}
