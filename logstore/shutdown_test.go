package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// powerFS is an FS over the OS that remembers what a power failure would
// leave of one directory: a file's content as of its last fsync, and the
// directory's entries as of its last fsync. powerCut rewrites the
// directory to that, except the names keep picks, which survive as they
// are now (a power failure may keep any unsynced change: the worst case
// for a clean-shutdown marker is that its own creation survives while
// what it vouches for does not).
type powerFS struct {
	FS
	dir string

	mu      sync.Mutex
	nextID  int
	cur     map[string]int    // guarded by mu: name → file, now
	durable map[string]int    // guarded by mu: name → file, as of the last SyncDir
	content map[int][]byte    // guarded by mu: file → content as of its last fsync
	syncs   map[FaultOp]int   // guarded by mu: fsyncs made, by kind
	synced  map[string]string // guarded by mu: names fsynced (for messages)
}

func newPowerFS(t *testing.T, dir string) *powerFS {
	t.Helper()
	p := &powerFS{FS: OS, dir: dir, cur: map[string]int{}, durable: map[string]int{}, content: map[int][]byte{},
		syncs: map[FaultOp]int{}, synced: map[string]string{}}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents { // what is there now is durable
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		p.nextID++
		p.cur[e.Name()], p.durable[e.Name()], p.content[p.nextID] = p.nextID, p.nextID, b
	}
	return p
}

func (p *powerFS) name(path string) string { return filepath.Base(path) }

func (p *powerFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := p.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.name(name)
	if _, ok := p.cur[n]; !ok {
		p.nextID++
		p.cur[n] = p.nextID
	}
	return &powerFile{File: f, p: p, id: p.cur[n], path: name}, nil
}

func (p *powerFS) Remove(name string) error {
	err := p.FS.Remove(name)
	if err == nil {
		p.mu.Lock()
		delete(p.cur, p.name(name))
		p.mu.Unlock()
	}
	return err
}

func (p *powerFS) Rename(oldname, newname string) error {
	err := p.FS.Rename(oldname, newname)
	if err == nil {
		p.mu.Lock()
		p.cur[p.name(newname)] = p.cur[p.name(oldname)]
		delete(p.cur, p.name(oldname))
		p.mu.Unlock()
	}
	return err
}

func (p *powerFS) SyncDir(dir string) error {
	err := p.FS.SyncDir(dir)
	if err == nil && filepath.Clean(dir) == p.dir {
		p.mu.Lock()
		p.durable = map[string]int{}
		for n, id := range p.cur {
			p.durable[n] = id
		}
		p.syncs[OpSyncDir]++
		p.mu.Unlock()
	}
	return err
}

// SyncFS makes every file's content and every entry of the directory
// durable, as syncfs(2) does for a whole file system.
func (p *powerFS) SyncFS(dir string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.durable = map[string]int{}
	for n, id := range p.cur {
		b, err := os.ReadFile(filepath.Join(p.dir, n))
		if err != nil {
			return err
		}
		p.durable[n], p.content[id] = id, b
		p.synced[n] = ""
	}
	p.syncs[OpSyncFS]++
	return nil
}

type powerFile struct {
	File
	p    *powerFS
	id   int
	path string // as opened (files are fsynced before a rename)
}

func (f *powerFile) Sync() error {
	if err := f.File.Sync(); err != nil {
		return err
	}
	b, err := os.ReadFile(f.path)
	if err != nil {
		return err
	}
	f.p.mu.Lock()
	defer f.p.mu.Unlock()
	f.p.content[f.id] = b
	f.p.syncs[OpSync]++
	for n, id := range f.p.cur {
		if id == f.id {
			f.p.synced[n] = ""
		}
	}
	return nil
}

// powerCut leaves the directory as a power failure would (see powerFS);
// the FS must not be used after it.
func (p *powerFS) powerCut(t *testing.T, keep func(name string) bool) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	after := map[string]int{}
	for n, id := range p.durable {
		after[n] = id
	}
	for n, id := range p.cur {
		if keep(n) {
			after[n] = id
		}
	}
	ents, err := os.ReadDir(p.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if err := os.Remove(filepath.Join(p.dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	for n, id := range after {
		if err := os.WriteFile(filepath.Join(p.dir, n), p.content[id], 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// shutdownState is what a log held when its clean shutdown began.
type shutdownState struct {
	start, end, durableEnd int64
	epoch                  int32
	last                   []byte // the last idempotent batch, to retry
}

// shutdownLog builds a log whose clean shutdown has everything to do: a
// durable part (flushed), then unflushed batches of an idempotent
// producer, a moved log start offset, index entries of the active segment,
// a new leader epoch not yet written to its checkpoint (AssignEpoch
// leaves that to the next flush), and one more epoch dropped again by a
// truncation at the log end, not written either (a leadership moved away
// in a controlled shutdown). The shutdown's first
// half, how closing fl makes the log durable while it still serves,
// runs halfway.
func shutdownLog(t *testing.T, fs FS, dir string, cl closer) (*Log, shutdownState) {
	t.Helper()
	cfg := coreConfig()
	cfg.SegmentBytes = 4096
	cfg.ProducerIDExpirationMs = -1
	cfg.FS = fs
	l, err := Open(dir, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var st shutdownState
	seq := int32(0)
	appendP := func(epoch int32) {
		st.last = coreBatchP(t, 3, 1000, 100, 9, 0, seq)
		seq += 3
		if _, err := l.Append(bytes.Clone(st.last), epoch, coreT0); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		appendP(2)
	}
	if _, err := l.DeleteRecordsBefore(5); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	st.durableEnd = l.EndOffset()
	if err := cl.prepare(l); err != nil { // what a broker does while it drains
		t.Fatal(err)
	}
	if err := l.AssignEpoch(4); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		appendP(4)
	}
	// After the last roll (which makes the checkpoint durable): only the
	// shutdown does.
	if err := l.AssignEpoch(5); err != nil {
		t.Fatal(err)
	}
	appendP(5) // (Open forgets an epoch that starts at the log end, as Kafka does)
	if err := l.AssignEpoch(6); err != nil {
		t.Fatal(err)
	}
	if _, err := l.TruncateTo(l.EndOffset()); err != nil || l.LatestEpoch() != 5 {
		t.Fatalf("truncation at the end: %v, epoch %d", err, l.LatestEpoch())
	}
	st.start, st.end, st.epoch = l.StartOffset(), l.EndOffset(), l.LatestEpoch()
	l.wg.Wait() // the background fsyncs of rolled segments
	return l, st
}

// closer is a way to shut a log down cleanly: a first half while it
// serves, then the close.
type closer struct {
	name           string
	prepare, close func(l *Log) error
}

// closers are a log's own (PrepareClose and Close, an fsync per file) and
// a broker's (PrepareCloseAll and CloseAll, one syncfs for all its logs).
var closers = []closer{
	{"fsync", (*Log).PrepareClose, (*Log).Close},
	{"syncfs", func(l *Log) error { return PrepareCloseAll([]*Log{l}, 1) }, func(l *Log) error { return CloseAll([]*Log{l}, 1) }},
}

// TestCleanShutdownPowerLoss stops a clean shutdown at every one of its
// file operations in turn (the process dies there), then cuts the power:
// once with every unsynced change lost, once with the marker's creation
// kept while the rest is lost. A log whose marker survives must hold
// exactly what it held (end offset, start offset, leader epoch, producer
// state); one without must recover, losing nothing that was durable.
// Both closers are crashed so, a syncfs counting as an operation.
func TestCleanShutdownPowerLoss(t *testing.T) {
	for _, cl := range closers {
		for _, keepMarker := range []bool{false, true} {
			cleanShutdownPowerLoss(t, cl, keepMarker)
		}
	}
}

func cleanShutdownPowerLoss(t *testing.T, cl closer, keepMarker bool) {
	for n := 1; ; n++ {
		done := t.Run(fmt.Sprintf("%s/keepMarker=%v/crash-at-op-%d", cl.name, keepMarker, n), func(t *testing.T) {
			dir := t.TempDir()
			pfs := newPowerFS(t, dir)
			ffs := NewFaultFS(pfs)
			l, want := shutdownLog(t, ffs, dir, cl)
			ffs.Inject(Fault{Ops: OpWrite | OpSync | OpSyncDir | OpSyncFS | OpRename | OpCreate | OpRemove | OpTruncate, Nth: n, Sticky: true})
			closeErr := cl.close(l)
			pfs.powerCut(t, func(name string) bool { return keepMarker && name == cleanShutdownName })
			_, err := os.Stat(filepath.Join(dir, cleanShutdownName))
			marked := err == nil
			if closeErr == nil && ffs.Injected() == 0 {
				t.Log("the shutdown ended before the crash point")
				n = -1
			}

			r := coreOpen(t, dir, coreConfig())
			if !marked && r.recoveredSegments.Load() == 0 {
				t.Fatal("no marker, yet Open trusted the log without a recovery scan")
			}
			if r.StartOffset() != want.start {
				t.Fatalf("start offset %d, want %d (its checkpoint was durable before the shutdown)", r.StartOffset(), want.start)
			}
			coreCheckContiguous(t, coreReadAll(t, r, r.StartOffset()), r.StartOffset(), r.EndOffset())
			if r.EndOffset() < want.durableEnd {
				t.Fatalf("end offset %d below the flushed %d", r.EndOffset(), want.durableEnd)
			}
			if !marked {
				return
			}
			if r.EndOffset() != want.end || r.LatestEpoch() != want.epoch {
				t.Fatalf("marker kept: end %d epoch %d, want %d %d: it vouched for what was not durable",
					r.EndOffset(), r.LatestEpoch(), want.end, want.epoch)
			}
			if res, err := r.Append(want.last, want.epoch, coreT0); err != nil || !res.Duplicate {
				t.Fatalf("marker kept: retry of the last batch: %+v %v (producer state lost)", res, err)
			}
		})
		if !done {
			t.FailNow()
		}
		if n < 0 || n > 500 {
			break
		}
	}
}

// TestIdleCleanShutdownSyncsNothing: a clean shutdown fsyncs no file and
// no directory when nothing changed since the state was last made durable:
// after a clean close and reopen (a broker of 10,000 partitions paid ten
// fsyncs each), or after PrepareClose (a broker calls it while it drains).
// The marker it leaves is trusted by the next Open.
func TestIdleCleanShutdownSyncsNothing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, dir string) (*Log, *powerFS, shutdownState)
	}{
		{"reopened", func(t *testing.T, dir string) (*Log, *powerFS, shutdownState) {
			l, want := shutdownLog(t, OS, dir, closers[0])
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			pfs := newPowerFS(t, dir)
			cfg := coreConfig()
			cfg.FS = pfs
			return coreOpen(t, dir, cfg), pfs, want
		}},
		{"prepared", func(t *testing.T, dir string) (*Log, *powerFS, shutdownState) {
			pfs := newPowerFS(t, dir)
			l, want := shutdownLog(t, pfs, dir, closers[0])
			if err := l.PrepareClose(); err != nil {
				t.Fatal(err)
			}
			return l, pfs, want
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l, pfs, want := tc.prepare(t, dir)
			pfs.mu.Lock()
			files0, dirs0 := pfs.syncs[OpSync], pfs.syncs[OpSyncDir]
			pfs.synced = map[string]string{}
			pfs.mu.Unlock()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			pfs.mu.Lock()
			files, dirs, names := pfs.syncs[OpSync]-files0, pfs.syncs[OpSyncDir]-dirs0, pfs.synced
			pfs.mu.Unlock()
			if files != 0 || dirs != 0 {
				t.Fatalf("idle clean shutdown made %d file fsyncs (%v) and %d directory fsyncs, want none", files, names, dirs)
			}
			r := coreOpen(t, dir, coreConfig())
			if r.recoveredSegments.Load() != 0 || r.EndOffset() != want.end || r.StartOffset() != want.start || r.LatestEpoch() != want.epoch {
				t.Fatalf("reopen: recovered %d, end %d start %d epoch %d; want 0 %d %d %d",
					r.recoveredSegments.Load(), r.EndOffset(), r.StartOffset(), r.LatestEpoch(), want.end, want.start, want.epoch)
			}
		})
	}
}

// TestCleanShutdownFsyncFails: an fsync (or syncfs) that fails during a
// clean shutdown leaves no marker, and the next Open recovers.
func TestCleanShutdownFsyncFails(t *testing.T) {
	for _, tc := range []struct {
		cl closer
		op FaultOp
	}{{closers[0], OpSync}, {closers[0], OpSyncDir}, {closers[1], OpSync}, {closers[1], OpSyncFS}} {
		t.Run(tc.cl.name+"/"+tc.op.String(), func(t *testing.T) {
			dir := t.TempDir()
			ffs := NewFaultFS(nil)
			l, want := shutdownLog(t, ffs, dir, tc.cl)
			ffs.Inject(Fault{Ops: tc.op, Err: syscall.EIO})
			if err := tc.cl.close(l); !errors.Is(err, syscall.EIO) {
				t.Fatalf("Close = %v (log failed: %v), want EIO", err, l.Failed())
			}
			if _, err := os.Stat(filepath.Join(dir, cleanShutdownName)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("marker written after a failed fsync: %v", err)
			}
			r := coreOpen(t, dir, coreConfig())
			if r.recoveredSegments.Load() == 0 || r.EndOffset() != want.end {
				t.Fatalf("reopen: recovered %d, end %d; want a scan and %d", r.recoveredSegments.Load(), r.EndOffset(), want.end)
			}
		})
	}
}

// TestLazyEpochTruncationPowerLoss: a truncation at the log end drops an
// epoch from the cache and leaves the checkpoint to the next flush
// (TruncateTo); a crash before it, with batches of an older epoch
// appended after it, must not leave the dropped epoch standing for those
// batches: recovery rebuilds the epochs past the recovery point from the
// batches.
func TestLazyEpochTruncationPowerLoss(t *testing.T) {
	dir := t.TempDir()
	cfg := coreConfig()
	l := coreOpen(t, dir, cfg)
	leader := coreOpen(t, t.TempDir(), cfg)
	if _, err := l.AppendAsFollower(coreLeaderBatches(t, leader, 5, 1), coreT0); err != nil {
		t.Fatal(err)
	}
	if err := l.AssignEpoch(3); err != nil { // led epoch 3, appended nothing
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(dir, epochCheckpointName)
	durable, err := os.ReadFile(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	// The next leader's epoch 1 went on past it: truncate, then follow.
	if _, err := l.TruncateTo(l.EndOffset()); err != nil || l.LatestEpoch() != 1 {
		t.Fatalf("TruncateTo: %v, epoch %d", err, l.LatestEpoch())
	}
	if _, err := l.AppendAsFollower(coreLeaderBatches(t, leader, 5, 1), coreT0); err != nil {
		t.Fatal(err)
	}
	end := l.EndOffset()
	coreCrash(t, l)
	// The checkpoint was not written again (or, written, not kept).
	if err := os.WriteFile(ckpt, durable, 0o644); err != nil {
		t.Fatal(err)
	}
	r := coreOpen(t, dir, cfg)
	if r.EndOffset() != end || r.LatestEpoch() != 1 {
		t.Fatalf("after recovery: end %d, latest epoch %d; want %d, 1", r.EndOffset(), r.LatestEpoch(), end)
	}
	if e, o := r.EndOffsetForEpoch(1); e != 1 || o != end {
		t.Fatalf("EndOffsetForEpoch(1) = %d %d, want 1 %d", e, o, end)
	}
}

// TestSmallLogCleanCloseWritesNoIndexFiles: a clean close of a log whose
// active segment holds less than index.interval.bytes creates no index
// file (a broker of 10,000 small partitions created two each), and the
// next Open trusts the log without a recovery scan, its indexes rebuilt
// from the batch headers: reads, timestamps and the next close as before.
func TestSmallLogCleanCloseWritesNoIndexFiles(t *testing.T) {
	dir := t.TempDir()
	cfg := coreConfig()
	for _, cl := range closers {
		t.Run(cl.name, func(t *testing.T) {
			dir := filepath.Join(dir, cl.name)
			l := coreOpen(t, dir, cfg)
			coreAppend(t, l, 3, 1000, 10)
			if err := cl.prepare(l); err != nil {
				t.Fatal(err)
			}
			coreAppend(t, l, 2, 2000, 10)
			if err := cl.close(l); err != nil {
				t.Fatal(err)
			}
			for _, suf := range []string{indexSuffix, timeIndexSuffix} {
				if _, err := os.Stat(segmentName(dir, 0, suf)); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("%s after a clean close: %v, want none", suf, err)
				}
			}
			r := coreOpen(t, dir, cfg)
			if n := r.recoveredSegments.Load(); n != 0 || r.EndOffset() != 5 {
				t.Fatalf("reopen: recovered %d, end %d; want 0, 5", n, r.EndOffset())
			}
			coreCheckContiguous(t, coreReadAll(t, r, 0), 0, 5)
			if off, ts, found, err := r.OffsetForTimestamp(2000); err != nil || !found || off != 3 || ts != 2000 {
				t.Fatalf("OffsetForTimestamp(2000) = %d %d %v %v, want 3 2000", off, ts, found, err)
			}
			if off, ts, err := r.MaxTimestamp(); err != nil || off != 4 || ts != 2001 {
				t.Fatalf("MaxTimestamp = %d %d %v, want 4 2001", off, ts, err)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if again := coreOpen(t, dir, cfg); again.recoveredSegments.Load() != 0 {
				t.Fatal("second reopen recovered")
			}
		})
	}
}
