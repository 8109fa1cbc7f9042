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
// and a new leader epoch whose checkpoint was written lazily (renamed into
// place, neither it nor the directory fsynced).
func shutdownLog(t *testing.T, fs FS, dir string) (*Log, shutdownState) {
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
	if err := l.PrepareClose(); err != nil { // what a broker does while it drains
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
	st.start, st.end, st.epoch = l.StartOffset(), l.EndOffset(), l.LatestEpoch()
	l.wg.Wait() // the background fsyncs of rolled segments
	return l, st
}

// TestCleanShutdownPowerLoss stops a clean shutdown at every one of its
// file operations in turn (the process dies there), then cuts the power:
// once with every unsynced change lost, once with the marker's creation
// kept while the rest is lost. A log whose marker survives must hold
// exactly what it held (end offset, start offset, leader epoch, producer
// state); one without must recover, losing nothing that was durable.
func TestCleanShutdownPowerLoss(t *testing.T) {
	for _, keepMarker := range []bool{false, true} {
		for n := 1; ; n++ {
			done := t.Run(fmt.Sprintf("keepMarker=%v/crash-at-op-%d", keepMarker, n), func(t *testing.T) {
				dir := t.TempDir()
				pfs := newPowerFS(t, dir)
				ffs := NewFaultFS(pfs)
				l, want := shutdownLog(t, ffs, dir)
				ffs.Inject(Fault{Ops: OpWrite | OpSync | OpSyncDir | OpRename | OpCreate | OpRemove | OpTruncate, Nth: n, Sticky: true})
				closeErr := l.Close()
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
			l, want := shutdownLog(t, OS, dir)
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
			l, want := shutdownLog(t, pfs, dir)
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

// TestCleanShutdownFsyncFails: an fsync that fails during a clean
// shutdown leaves no marker, and the next Open recovers.
func TestCleanShutdownFsyncFails(t *testing.T) {
	for _, op := range []FaultOp{OpSync, OpSyncDir} {
		t.Run(op.String(), func(t *testing.T) {
			dir := t.TempDir()
			ffs := NewFaultFS(nil)
			l, want := shutdownLog(t, ffs, dir)
			ffs.Inject(Fault{Ops: op, Err: syscall.EIO})
			if err := l.Close(); !errors.Is(err, syscall.EIO) {
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
