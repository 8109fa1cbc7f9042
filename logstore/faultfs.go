package logstore

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// FaultOp is a set of file operations a Fault counts.
type FaultOp uint16

const (
	OpWrite    FaultOp = 1 << iota // File.Write, File.WriteAt
	OpSync                         // File.Sync
	OpSyncDir                      // FS.SyncDir
	OpRename                       // FS.Rename (either name matches Path)
	OpCreate                       // FS.OpenFile with os.O_CREATE
	OpRemove                       // FS.Remove, FS.RemoveAll
	OpTruncate                     // File.Truncate
	OpRead                         // File.Read, File.ReadAt (not sendfile of Region.File)
	OpChtimes                      // FS.Chtimes
	OpSyncFS                       // FS.SyncFS
)

func (op FaultOp) String() string {
	switch op {
	case OpWrite:
		return "write"
	case OpSync:
		return "fsync"
	case OpSyncDir:
		return "fsync dir"
	case OpRename:
		return "rename"
	case OpCreate:
		return "create"
	case OpRemove:
		return "remove"
	case OpTruncate:
		return "truncate"
	case OpRead:
		return "read"
	case OpChtimes:
		return "chtimes"
	case OpSyncFS:
		return "syncfs"
	}
	return fmt.Sprintf("ops(%#x)", uint16(op))
}

// Fault says which operations a FaultFS fails, and how.
type Fault struct {
	Ops  FaultOp // the operations it counts
	Path string  // counts only operations on a path containing this ("" = any)
	// Nth is the counted operation that fails: 1 (or 0) is the next one.
	Nth int
	// Sticky fails every counted operation from the Nth on (a dead or a
	// full disk) instead of the Nth alone.
	Sticky bool
	// Err is the error, wrapped in an *os.PathError (*os.LinkError for a
	// rename) as the os package returns it; nil is syscall.EIO. Use
	// syscall.ENOSPC for a full disk.
	Err error
	// Short makes a failing write write the first half of its bytes
	// before it fails (a torn write: bytes on disk past what the caller
	// believes it wrote).
	Short bool
}

// FaultFS is an FS that passes every operation to another FS and fails
// the ones its faults pick (pebble's errorfs). Files it opens wrap the
// other FS's files and share their OSFile, so Read's regions (sendfile)
// see the real bytes and are never failed. It is safe for concurrent use.
type FaultFS struct {
	base     FS
	injected atomic.Int64

	mu     sync.Mutex
	faults []*faultState // guarded by mu
}

type faultState struct {
	Fault
	seen int
}

// NewFaultFS returns a FaultFS over base (nil is OS) with no faults.
func NewFaultFS(base FS) *FaultFS {
	if base == nil {
		base = OS
	}
	return &FaultFS{base: base}
}

// Inject adds a fault; it counts operations from now on.
func (fs *FaultFS) Inject(f Fault) {
	if f.Nth <= 0 {
		f.Nth = 1
	}
	if f.Err == nil {
		f.Err = syscall.EIO
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.faults = append(fs.faults, &faultState{Fault: f})
}

// Clear removes every fault (the disk is healthy again).
func (fs *FaultFS) Clear() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.faults = nil
}

// Injected returns how many operations the faults have failed so far.
func (fs *FaultFS) Injected() int64 { return fs.injected.Load() }

// check counts op on the paths with every fault and returns the fault
// that fails it, if any.
func (fs *FaultFS) check(op FaultOp, paths ...string) (Fault, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var hit *faultState
	for _, f := range fs.faults {
		if f.Ops&op == 0 || !matchAny(f.Path, paths) {
			continue
		}
		f.seen++
		if hit == nil && (f.seen == f.Nth || (f.Sticky && f.seen > f.Nth)) {
			hit = f
		}
	}
	if hit == nil {
		return Fault{}, false
	}
	fs.injected.Add(1)
	return hit.Fault, true
}

func matchAny(sub string, paths []string) bool {
	for _, p := range paths {
		if strings.Contains(p, sub) {
			return true
		}
	}
	return false
}

func (fs *FaultFS) fail(op FaultOp, path string) error {
	if f, ok := fs.check(op, path); ok {
		return &os.PathError{Op: op.String(), Path: path, Err: f.Err}
	}
	return nil
}

func (fs *FaultFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if flag&os.O_CREATE != 0 {
		if err := fs.fail(OpCreate, name); err != nil {
			return nil, err
		}
	}
	f, err := fs.base.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: f, fs: fs, name: name}, nil
}

func (fs *FaultFS) Remove(name string) error {
	if err := fs.fail(OpRemove, name); err != nil {
		return err
	}
	return fs.base.Remove(name)
}

func (fs *FaultFS) RemoveAll(name string) error {
	if err := fs.fail(OpRemove, name); err != nil {
		return err
	}
	return fs.base.RemoveAll(name)
}

func (fs *FaultFS) Rename(oldname, newname string) error {
	if f, ok := fs.check(OpRename, oldname, newname); ok {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: f.Err}
	}
	return fs.base.Rename(oldname, newname)
}

func (fs *FaultFS) MkdirAll(dir string, perm os.FileMode) error {
	if err := fs.fail(OpCreate, dir); err != nil {
		return err
	}
	return fs.base.MkdirAll(dir, perm)
}

func (fs *FaultFS) ReadDir(dir string) ([]os.DirEntry, error) {
	if err := fs.fail(OpRead, dir); err != nil {
		return nil, err
	}
	return fs.base.ReadDir(dir)
}

func (fs *FaultFS) Stat(name string) (os.FileInfo, error) { return fs.base.Stat(name) }

func (fs *FaultFS) Chtimes(name string, atime, mtime time.Time) error {
	if err := fs.fail(OpChtimes, name); err != nil {
		return err
	}
	return fs.base.Chtimes(name, atime, mtime)
}

func (fs *FaultFS) SyncDir(dir string) error {
	if err := fs.fail(OpSyncDir, dir); err != nil {
		return err
	}
	return fs.base.SyncDir(dir)
}

// SyncFS fails on a fault of OpSyncFS or of OpSync: a syncfs fsyncs
// every file, and a disk that fails an fsync fails it too.
func (fs *FaultFS) SyncFS(dir string) error {
	if f, ok := fs.check(OpSyncFS|OpSync, dir); ok {
		return &os.PathError{Op: OpSyncFS.String(), Path: dir, Err: f.Err}
	}
	return fs.base.SyncFS(dir)
}

// faultFile is a File of a FaultFS.
type faultFile struct {
	File
	fs   *FaultFS
	name string
}

func (f *faultFile) Write(p []byte) (int, error) {
	if ft, ok := f.fs.check(OpWrite, f.name); ok {
		n := 0
		if ft.Short && len(p) > 1 {
			n, _ = f.File.Write(p[:len(p)/2])
		}
		return n, &os.PathError{Op: "write", Path: f.name, Err: ft.Err}
	}
	return f.File.Write(p)
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	if ft, ok := f.fs.check(OpWrite, f.name); ok {
		n := 0
		if ft.Short && len(p) > 1 {
			n, _ = f.File.WriteAt(p[:len(p)/2], off)
		}
		return n, &os.PathError{Op: "write", Path: f.name, Err: ft.Err}
	}
	return f.File.WriteAt(p, off)
}

func (f *faultFile) Read(p []byte) (int, error) {
	if err := f.fs.fail(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.File.Read(p)
}

func (f *faultFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.fail(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.File.ReadAt(p, off)
}

func (f *faultFile) Sync() error {
	if err := f.fs.fail(OpSync, f.name); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *faultFile) Truncate(size int64) error {
	if err := f.fs.fail(OpTruncate, f.name); err != nil {
		return err
	}
	return f.File.Truncate(size)
}
