package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/poll"
)

// What a Log does when its disk fails, tested through FaultFS: the append
// that hit the error answers ErrStorage (KAFKA_STORAGE_ERROR), the log
// refuses further appends and reports itself failed once, readers never see
// a byte past the end offset, and the directory reopens (recovering) with
// every batch that was acknowledged.

func TestFaultFS(t *testing.T) {
	dir := t.TempDir()
	fs := NewFaultFS(nil)
	path := filepath.Join(dir, "a.log")
	f, err := fs.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.OSFile() == nil {
		t.Fatal("a FaultFS file over OS has no OS file")
	}

	fs.Inject(Fault{Ops: OpWrite, Path: ".log", Nth: 2, Err: syscall.ENOSPC})
	if _, err := f.WriteAt([]byte("0123"), 0); err != nil {
		t.Fatalf("first write: %v", err)
	}
	if _, err := f.WriteAt([]byte("4567"), 4); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("second write: %v, want ENOSPC", err)
	}
	if _, err := f.WriteAt([]byte("4567"), 4); err != nil {
		t.Fatalf("third write (the fault is not sticky): %v", err)
	}

	fs.Inject(Fault{Ops: OpSync | OpRename, Sticky: true})
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("sync: %v, want EIO", err)
	}
	if err := fs.Rename(path, path+".x"); !errors.Is(err, syscall.EIO) {
		t.Fatalf("rename: %v, want EIO", err)
	}
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("sticky: sync again: %v", err)
	}
	if n := fs.Injected(); n != 4 {
		t.Fatalf("injected %d, want 4", n)
	}
	fs.Clear()
	if err := f.Sync(); err != nil {
		t.Fatalf("sync after Clear: %v", err)
	}

	// A path that does not match is not counted.
	fs.Inject(Fault{Ops: OpWrite, Path: ".index"})
	if _, err := f.WriteAt([]byte("x"), 8); err != nil {
		t.Fatal(err)
	}
	fs.Clear()

	// A short write writes half and fails.
	fs.Inject(Fault{Ops: OpWrite, Short: true})
	n, err := f.WriteAt([]byte("abcdefgh"), 0)
	if n != 4 || err == nil {
		t.Fatalf("short write: %d %v", n, err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "abcd4567x" {
		t.Fatalf("file %q %v", got, err)
	}
}

// faultLog opens a log in a fresh directory over a FaultFS and counts the
// calls of its OnFailure.
func faultLog(t *testing.T, cfg Config) (*Log, *FaultFS, *atomic.Int32) {
	t.Helper()
	fs := NewFaultFS(nil)
	var failures atomic.Int32
	cfg.FS = fs
	dir := t.TempDir()
	cfg.OnFailure = func(d string, err error) {
		if d != dir || !errors.Is(err, ErrStorage) {
			t.Errorf("OnFailure(%s, %v), want %s and ErrStorage", d, err, dir)
		}
		failures.Add(1)
	}
	return coreOpen(t, dir, cfg), fs, &failures
}

// checkFailed checks that l reports one storage failure and refuses appends.
func checkFailed(t *testing.T, l *Log, failures *atomic.Int32) {
	t.Helper()
	if err := l.Failed(); !errors.Is(err, ErrStorage) {
		t.Fatalf("Failed() = %v, want ErrStorage", err)
	}
	if n := failures.Load(); n != 1 {
		t.Fatalf("OnFailure called %d times, want 1", n)
	}
	if _, err := l.Append(coreBatch(t, 1, 1000, 10), 0, coreT0); !errors.Is(err, ErrStorage) {
		t.Fatalf("append to a failed log: %v", err)
	}
	if _, err := l.AppendAsFollower(coreBatch(t, 1, 1000, 10), coreT0); err == nil {
		t.Fatal("follower append to a failed log succeeded")
	}
}

// reopenAcked closes l and opens its directory again on the OS (a healed
// disk): it must recover and hold exactly the records [start, end), and
// take appends.
func reopenAcked(t *testing.T, l *Log, cfg Config, start, end int64) *Log {
	t.Helper()
	_ = l.Close() // a failed log writes no clean-shutdown marker
	if _, err := os.Stat(filepath.Join(l.Dir(), cleanShutdownName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed log left the clean-shutdown marker: %v", err)
	}
	cfg.FS, cfg.OnFailure = nil, nil
	r := coreOpen(t, l.Dir(), cfg)
	if r.StartOffset() != start || r.EndOffset() != end {
		t.Fatalf("reopened [%d, %d), want [%d, %d)", r.StartOffset(), r.EndOffset(), start, end)
	}
	coreCheckContiguous(t, coreReadAll(t, r, start), start, end)
	coreAppend(t, r, 1, 1000, 10)
	return r
}

// logFileSize returns the size of the .log file of segment base.
func logFileSize(t *testing.T, l *Log, base int64) int64 {
	t.Helper()
	st, err := os.Stat(segmentName(l.Dir(), base, logSuffix))
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func TestAppendWriteFails(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault Fault
		torn  bool // bytes stay in the file past the end offset
	}{
		{"EIO", Fault{Ops: OpWrite, Path: logSuffix}, false},
		{"ENOSPC", Fault{Ops: OpWrite, Path: logSuffix, Err: syscall.ENOSPC}, false},
		{"short write, truncated back", Fault{Ops: OpWrite, Path: logSuffix, Short: true, Err: syscall.ENOSPC}, false},
		{"short write, truncate fails too", Fault{Ops: OpWrite | OpTruncate, Path: logSuffix, Short: true, Sticky: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := coreConfig()
			l, fs, failures := faultLog(t, cfg)
			coreAppend(t, l, 3, 1000, 100)
			coreAppend(t, l, 2, 1000, 100)
			size := l.Size()
			fs.Inject(tc.fault)
			_, err := l.Append(coreBatch(t, 4, 1000, 100), 0, coreT0)
			if !errors.Is(err, ErrStorage) {
				t.Fatalf("append: %v, want ErrStorage", err)
			}
			if tc.fault.Err != nil && !errors.Is(err, tc.fault.Err) {
				t.Fatalf("append: %v does not wrap %v", err, tc.fault.Err)
			}
			checkFailed(t, l, failures)
			if l.EndOffset() != 5 || l.Size() != size {
				t.Fatalf("end %d size %d after a failed write, want 5 %d", l.EndOffset(), l.Size(), size)
			}
			if got := logFileSize(t, l, 0); (got > size) != tc.torn {
				t.Fatalf("file holds %d bytes, log %d (torn bytes expected: %v)", got, size, tc.torn)
			}
			// Readers stop at the end offset: never the torn bytes.
			res, err := l.Read(0, 1<<20, -1, true)
			if err != nil || res.Size != size {
				t.Fatalf("read %d bytes (%v), want %d", res.Size, err, size)
			}
			res.Release()
			if res, err := l.Read(5, 1<<20, -1, true); err != nil || res.Size != 0 {
				t.Fatalf("read at the end: %d bytes, %v", res.Size, err)
			}
			coreCheckContiguous(t, coreReadAll(t, l, 0), 0, 5)
			fs.Clear() // even with the disk healed, the log stays failed
			if _, err := l.Append(coreBatch(t, 1, 1000, 10), 0, coreT0); !errors.Is(err, ErrStorage) {
				t.Fatalf("append after the disk healed: %v", err)
			}
			r := reopenAcked(t, l, cfg, 0, 5)
			if tc.torn && r.recoveredSegments.Load() == 0 {
				t.Fatal("reopen did not recover the torn segment")
			}
		})
	}
}

func TestFsyncFails(t *testing.T) {
	cfg := coreConfig()
	cfg.FlushMessages = 1 // fsync every append
	l, fs, failures := faultLog(t, cfg)
	coreAppend(t, l, 3, 1000, 10)
	fs.Inject(Fault{Ops: OpSync, Path: logSuffix, Sticky: true})
	if _, err := l.Append(coreBatch(t, 2, 1000, 10), 0, coreT0); !errors.Is(err, ErrStorage) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("append whose fsync fails: %v", err)
	}
	checkFailed(t, l, failures)
	// An fsync is not retried after a failed one (it may report success
	// for pages the kernel already dropped).
	n := fs.Injected()
	if err := l.Flush(); !errors.Is(err, ErrStorage) {
		t.Fatalf("Flush of a failed log: %v", err)
	}
	if did, err := l.FlushIfDue(coreT0.Add(time.Hour)); did || err != nil {
		t.Fatalf("FlushIfDue of a failed log: %v %v", did, err)
	}
	if fs.Injected() != n {
		t.Fatal("a failed log fsynced again")
	}
	// The batch whose fsync failed was written: it may or may not come
	// back (here the page cache kept it); the acknowledged ones must.
	_ = l.Close()
	cfg.FS, cfg.OnFailure = nil, nil
	r := coreOpen(t, l.Dir(), cfg)
	if r.EndOffset() < 3 {
		t.Fatalf("reopened end %d, acked 3", r.EndOffset())
	}
	coreCheckContiguous(t, coreReadAll(t, r, 0), 0, r.EndOffset())
}

// TestBackgroundFsyncFails: the fsync of a sealed segment after a roll
// runs in the background; its failure fails the log all the same.
func TestBackgroundFsyncFails(t *testing.T) {
	cfg := coreConfig()
	cfg.SegmentBytes = 1024
	l, fs, failures := faultLog(t, cfg)
	fs.Inject(Fault{Ops: OpSync, Path: logSuffix, Sticky: true})
	acked := int64(0)
	for l.Failed() == nil && acked < 100 {
		if _, err := l.Append(coreBatch(t, 2, 1000, 100), 0, coreT0); err != nil {
			if !errors.Is(err, ErrStorage) {
				t.Fatalf("append: %v", err)
			}
			break
		}
		acked += 2
		if len(l.segments()) > 1 {
			poll.Eventually(t, 5*time.Second, func() error {
				if l.Failed() == nil {
					return errors.New("the log has not failed after a failed background fsync")
				}
				return nil
			})
		}
	}
	checkFailed(t, l, failures)
	reopenAcked(t, l, cfg, 0, acked)
}

func TestRollFails(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault Fault
	}{
		{"create the new segment", Fault{Ops: OpCreate, Path: logSuffix, Err: syscall.ENOSPC}},
		{"write the sealed offset index", Fault{Ops: OpWrite, Path: indexSuffix, Err: syscall.ENOSPC}},
		{"write the sealed time index", Fault{Ops: OpWrite, Path: timeIndexSuffix, Err: syscall.ENOSPC, Short: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := coreConfig()
			cfg.SegmentBytes = 1024
			l, fs, failures := faultLog(t, cfg)
			acked := int64(0)
			for len(l.segments()) < 3 {
				coreAppend(t, l, 2, 1000, 100)
				acked += 2
			}
			fs.Inject(tc.fault)
			for {
				_, err := l.Append(coreBatch(t, 2, 1000, 100), 0, coreT0)
				if err != nil {
					if !errors.Is(err, ErrStorage) {
						t.Fatalf("append: %v", err)
					}
					break
				}
				acked += 2
				if acked > 200 {
					t.Fatal("no roll hit the fault")
				}
			}
			checkFailed(t, l, failures)
			coreCheckContiguous(t, coreReadAll(t, l, 0), 0, acked)
			reopenAcked(t, l, cfg, 0, acked)
		})
	}
}

// TestCompactRenameFails: the cleaned segment cannot replace the old one.
// The log fails, readers keep the uncleaned data, and it reopens whole.
func TestCompactRenameFails(t *testing.T) {
	cfg := compactConfig(4096)
	l, fs, failures := faultLog(t, cfg)
	compactFill(t, l, 40, 8, 13, coreT0.UnixMilli())
	end := l.EndOffset()
	fs.Inject(Fault{Ops: OpRename, Path: logSuffix + ".tmp"})
	_, err := l.Compact(coreT0, CompactOptions{UpTo: end, DeleteRetentionMs: 24 * 3600 * 1000})
	if !errors.Is(err, ErrStorage) {
		t.Fatalf("Compact: %v, want ErrStorage", err)
	}
	checkFailed(t, l, failures)
	if _, err := l.Compact(coreT0, CompactOptions{UpTo: end}); !errors.Is(err, ErrStorage) {
		t.Fatalf("Compact of a failed log: %v", err)
	}
	coreCheckContiguous(t, coreReadAll(t, l, 0), 0, end)
	// Looked at once the log is closed: a roll's producer snapshot may
	// still be on its way (its own .tmp) until then.
	_ = l.Close()
	entries, err := os.ReadDir(l.Dir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if filepath.Ext(e.Name()) == ".tmp" {
			t.Fatalf("left %s behind", e.Name())
		}
	}
	cfg.FS, cfg.OnFailure = nil, nil
	r := coreOpen(t, l.Dir(), cfg)
	if r.EndOffset() != end {
		t.Fatalf("reopened end %d, want %d", r.EndOffset(), end)
	}
	coreCheckContiguous(t, coreReadAll(t, r, 0), 0, end)
	// The disk healed: compaction works again.
	if st, err := r.Compact(coreT0, CompactOptions{UpTo: end, DeleteRetentionMs: 24 * 3600 * 1000}); err != nil || st.Segments == 0 {
		t.Fatalf("Compact after reopen: %+v %v", st, err)
	}
}

// TestRetentionCheckpointFails: retention cannot write the new log start
// offset. The log fails; it reopens holding every batch from the first
// segment retention kept on.
func TestRetentionCheckpointFails(t *testing.T) {
	cfg := coreConfig()
	cfg.SegmentBytes = 2048
	l, fs, failures := faultLog(t, cfg)
	for i := 0; i < 40; i++ {
		coreAppend(t, l, 2, coreT0.UnixMilli(), 150)
	}
	cfg.RetentionBytes = l.Size() / 2
	l.SetConfig(cfg) // keeps the FaultFS and OnFailure given at Open
	fs.Inject(Fault{Ops: OpRename, Path: startOffsetName, Err: syscall.ENOSPC})
	if _, err := l.EnforceRetention(coreT0); !errors.Is(err, ErrStorage) {
		t.Fatalf("EnforceRetention: %v, want ErrStorage", err)
	}
	checkFailed(t, l, failures)
	if _, err := l.EnforceRetention(coreT0); !errors.Is(err, ErrStorage) {
		t.Fatalf("EnforceRetention on a failed log: %v", err)
	}
	if _, err := l.TruncateTo(10); !errors.Is(err, ErrStorage) {
		t.Fatalf("TruncateTo on a failed log: %v", err)
	}
	start := l.StartOffset()
	if start == 0 || start != l.segments()[0].base {
		t.Fatalf("start %d, first segment %d", start, l.segments()[0].base)
	}
	coreCheckContiguous(t, coreReadAll(t, l, start), start, 80)
	reopenAcked(t, l, cfg, start, 80)
}

// TestCheckpointRenameFailsDuringRoll: the producer snapshot and the
// recovery point written after a roll are an optimisation: their failure
// leaves the log healthy, and a crash after it loses nothing, producer
// state included.
func TestCheckpointRenameFailsDuringRoll(t *testing.T) {
	cfg := coreConfig()
	cfg.SegmentBytes = 1024
	l, fs, failures := faultLog(t, cfg)
	fs.Inject(Fault{Ops: OpRename, Path: snapshotSuffix, Sticky: true})
	fs.Inject(Fault{Ops: OpRename, Path: recoveryPointName, Sticky: true, Err: syscall.ENOSPC})
	var last []byte
	for seq := int32(0); len(l.segments()) < 4; seq += 2 {
		last = coreBatchP(t, 2, 1000, 100, 7, 0, seq)
		if _, err := l.Append(bytes.Clone(last), 0, coreT0); err != nil {
			t.Fatalf("append: %v", err)
		}
	}
	end := l.EndOffset()
	if err := l.Flush(); err != nil {
		t.Fatalf("Flush with a failing recovery-point checkpoint: %v", err)
	}
	poll.Eventually(t, 5*time.Second, func() error {
		if fs.Injected() < 2 {
			return fmt.Errorf("%d faults injected", fs.Injected())
		}
		return nil
	})
	if err := l.Failed(); err != nil || failures.Load() != 0 {
		t.Fatalf("a failed checkpoint failed the log: %v", err)
	}
	coreCrash(t, l)
	cfg.FS, cfg.OnFailure = nil, nil
	r := coreOpen(t, l.Dir(), cfg)
	if r.EndOffset() != end {
		t.Fatalf("reopened end %d, want %d", r.EndOffset(), end)
	}
	coreCheckContiguous(t, coreReadAll(t, r, 0), 0, end)
	if res, err := r.Append(last, 0, coreT0); err != nil || !res.Duplicate {
		t.Fatalf("retry of the last idempotent batch after reopen: %+v %v", res, err)
	}
}

// TestEpochCheckpointFails: an append that starts a leader epoch must
// persist it (recovery finds epochs only in the batches it scans). When
// the checkpoint cannot be written, the append fails and so does the log;
// the checkpoint on disk stays the old, whole one.
func TestEpochCheckpointFails(t *testing.T) {
	cfg := coreConfig()
	l, fs, failures := faultLog(t, cfg)
	if _, err := l.Append(coreBatch(t, 3, 1000, 10), 1, coreT0); err != nil {
		t.Fatal(err)
	}
	fs.Inject(Fault{Ops: OpWrite, Path: epochCheckpointName, Err: syscall.ENOSPC, Short: true})
	if _, err := l.Append(coreBatch(t, 2, 1000, 10), 2, coreT0); !errors.Is(err, ErrStorage) {
		t.Fatalf("append in a new epoch: %v, want ErrStorage", err)
	}
	checkFailed(t, l, failures)
	if l.EndOffset() != 3 {
		t.Fatalf("end %d, want 3", l.EndOffset())
	}
	b, err := os.ReadFile(filepath.Join(l.Dir(), epochCheckpointName))
	if err != nil {
		t.Fatal(err)
	}
	if e, err := parseEpochCheckpoint(b); err != nil || len(e) != 1 || e[0].epoch != 1 {
		t.Fatalf("checkpoint %q: %v %v", b, e, err)
	}
	r := reopenAcked(t, l, cfg, 0, 3) // appends one record in epoch 3
	if ep, off := r.EndOffsetForEpoch(1); ep != 1 || off != 3 {
		t.Fatalf("EndOffsetForEpoch(1) = %d, %d", ep, off)
	}
}

// TestEpochCheckpointSyncedAtFlush: the checkpoint an append writes is
// not fsynced then, and the one a new leader's AssignEpoch changes is not
// even written (a failover takes thousands of leaderships), but the next
// flush writes and fsyncs it before it moves the recovery point; a
// failing fsync there fails the log.
func TestEpochCheckpointSyncedAtFlush(t *testing.T) {
	l, fs, failures := faultLog(t, coreConfig())
	fs.Inject(Fault{Ops: OpSync, Path: epochCheckpointName, Sticky: true})
	if _, err := l.Append(coreBatch(t, 3, 1000, 10), 1, coreT0); err != nil {
		t.Fatalf("append starting epoch 1: %v (the checkpoint was fsynced)", err)
	}
	if err := l.AssignEpoch(4); err != nil {
		t.Fatalf("AssignEpoch(4): %v (the checkpoint was fsynced)", err)
	}
	b, err := os.ReadFile(filepath.Join(l.Dir(), epochCheckpointName))
	if err != nil {
		t.Fatal(err)
	}
	if e, err := parseEpochCheckpoint(b); err != nil || len(e) != 1 || e[0] != (epochEntry{1, 0}) {
		t.Fatalf("checkpoint %q: %v %v; want epoch 1 written, 4 not yet", b, e, err)
	}
	if err := l.Flush(); !errors.Is(err, ErrStorage) {
		t.Fatalf("Flush with the checkpoint's fsync failing: %v, want ErrStorage", err)
	}
	checkFailed(t, l, failures)
}

// TestAssignEpochCheckpointFails: AssignEpoch writes nothing, so a disk
// that fails the checkpoint's rename fails the next flush, which must
// not move the recovery point past an epoch it could not record.
func TestAssignEpochCheckpointFails(t *testing.T) {
	l, fs, failures := faultLog(t, coreConfig())
	coreAppend(t, l, 2, 1000, 10)
	fs.Inject(Fault{Ops: OpRename, Path: epochCheckpointName})
	if err := l.AssignEpoch(5); err != nil {
		t.Fatalf("AssignEpoch: %v (it writes nothing)", err)
	}
	if err := l.Flush(); !errors.Is(err, ErrStorage) {
		t.Fatalf("Flush: %v, want ErrStorage", err)
	}
	checkFailed(t, l, failures)
	if err := l.AssignEpoch(6); !errors.Is(err, ErrStorage) {
		t.Fatalf("AssignEpoch on a failed log: %v", err)
	}
}

// TestCloseCheckpointsFail: a full disk at Close (index files, producer
// snapshot, checkpoints, marker): Close reports it, writes no marker, and
// the next Open recovers everything, producer state included.
func TestCloseCheckpointsFail(t *testing.T) {
	for _, path := range []string{indexSuffix, snapshotSuffix, startOffsetName, cleanShutdownName} {
		t.Run(path, func(t *testing.T) {
			cfg := coreConfig()
			l, fs, _ := faultLog(t, cfg)
			var last []byte
			for seq := int32(0); seq < 10; seq += 2 {
				last = coreBatchP(t, 2, 1000, 100, 7, 0, seq)
				if _, err := l.Append(bytes.Clone(last), 0, coreT0); err != nil {
					t.Fatal(err)
				}
			}
			fs.Inject(Fault{Ops: OpWrite | OpCreate | OpRename, Path: path, Err: syscall.ENOSPC, Sticky: true})
			if err := l.Close(); err == nil {
				t.Fatal("Close on a full disk reported nothing")
			}
			if _, err := os.Stat(filepath.Join(l.Dir(), cleanShutdownName)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("clean-shutdown marker written: %v", err)
			}
			cfg.FS = nil
			r := coreOpen(t, l.Dir(), cfg)
			if r.recoveredSegments.Load() == 0 || r.EndOffset() != 10 {
				t.Fatalf("reopen: recovered %d, end %d", r.recoveredSegments.Load(), r.EndOffset())
			}
			coreCheckContiguous(t, coreReadAll(t, r, 0), 0, 10)
			if res, err := r.Append(last, 0, coreT0); err != nil || !res.Duplicate {
				t.Fatalf("retry of the last idempotent batch: %+v %v", res, err)
			}
		})
	}
}

// TestIndexRebuildOnFullDisk: a reader that needs a sealed segment's
// missing indexes gets them rebuilt in memory even when the files cannot
// be written; the log stays healthy.
func TestIndexRebuildOnFullDisk(t *testing.T) {
	cfg := coreConfig()
	cfg.SegmentBytes = 2048
	dir := t.TempDir()
	l := coreOpen(t, dir, cfg)
	for len(l.segments()) < 4 {
		coreAppend(t, l, 2, 1000, 150)
	}
	end := l.EndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{indexSuffix, timeIndexSuffix} {
		if err := os.Remove(segmentName(dir, 0, s)); err != nil {
			t.Fatal(err)
		}
	}
	fs := NewFaultFS(nil)
	cfg.FS = fs
	r := coreOpen(t, dir, cfg)
	fs.Inject(Fault{Ops: OpWrite | OpCreate, Path: indexSuffix, Err: syscall.ENOSPC, Sticky: true})
	coreCheckContiguous(t, coreReadAll(t, r, 0), 0, end)
	if fs.Injected() == 0 {
		t.Fatal("the rebuild wrote no index file")
	}
	if err := r.Failed(); err != nil {
		t.Fatalf("a failed index cache write failed the log: %v", err)
	}
}

// TestFaultFSRegions: Read's regions over a FaultFS carry the OS file it
// wraps, so the broker still sendfiles them; a read fault fails what reads
// through the FS, never the region's bytes.
func TestFaultFSRegions(t *testing.T) {
	l, fs, _ := faultLog(t, coreConfig())
	coreAppend(t, l, 3, 1000, 10)
	want, err := l.ReadBytes(0, 1<<20, -1)
	if err != nil {
		t.Fatal(err)
	}
	res, err := l.Read(0, 1<<20, -1, true)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	if len(res.Regions) != 1 || res.Regions[0].File == nil {
		t.Fatalf("regions %+v", res.Regions)
	}
	fs.Inject(Fault{Ops: OpRead, Sticky: true})
	rg := res.Regions[0]
	got := make([]byte, rg.Length)
	if _, err := rg.File.ReadAt(got, rg.Offset); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("region bytes differ (%v)", err)
	}
	if _, err := l.Read(0, 1<<20, -1, true); !errors.Is(err, ErrStorage) {
		t.Fatalf("Read through a failing FS: %v, want ErrStorage", err)
	}
}
