package logstore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// FS is the file system a Log keeps its files in (pebble's vfs.FS, cut
// to what logstore does). Every file operation of the package goes
// through it, so that tests can inject faults (FaultFS). The default, OS,
// is the operating system's; names are OS paths.
type FS interface {
	// OpenFile opens name as os.OpenFile does.
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	Remove(name string) error
	RemoveAll(name string) error
	Rename(oldname, newname string) error
	MkdirAll(dir string, perm os.FileMode) error
	ReadDir(dir string) ([]os.DirEntry, error)
	Stat(name string) (os.FileInfo, error)
	Chtimes(name string, atime, mtime time.Time) error
	// SyncDir fsyncs a directory, making the creations, renames and
	// removals in it durable.
	SyncDir(dir string) error
	// SyncFS makes durable everything written to the file system that
	// holds dir, file contents and directory entries alike (syncfs(2)),
	// and reports a write-back error of any file of it: one call instead
	// of an fsync per file (CloseAll). It returns ErrSyncFSUnsupported,
	// doing nothing, where errors would go unreported.
	SyncFS(dir string) error
}

// ErrSyncFSUnsupported is SyncFS's answer where the system cannot make a
// file system durable with its write-back errors reported (Linux before
// 5.8, whose syncfs(2) returns no error).
var ErrSyncFSUnsupported = errors.New("logstore: syncfs with error reporting unsupported")

// File is an open file of an FS. Its methods behave as *os.File's.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.WriterAt
	Sync() error
	Truncate(size int64) error
	Stat() (os.FileInfo, error)
	Close() error
	// OSFile returns the operating-system file that holds f's bytes, or
	// nil when there is none. Read's regions carry it (Region.File) so
	// that the broker can sendfile(2) them; a wrapping File (FaultFS)
	// returns the file it wraps. Logs need FS files that have one; data
	// without a local file comes through a SegmentSource as bytes regions.
	OSFile() *os.File
}

// OS is the operating system's file system, the default when Config.FS is nil.
var OS FS = osFS{}

type osFS struct{}

// osFile adds OSFile to *os.File. It is pointer-shaped, so storing one in
// a File allocates nothing, and its promoted methods cost one indirect call.
type osFile struct{ *os.File }

func (f osFile) OSFile() *os.File { return f.File }

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Remove(name string) error                    { return os.Remove(name) }
func (osFS) RemoveAll(name string) error                 { return os.RemoveAll(name) }
func (osFS) Rename(oldname, newname string) error        { return os.Rename(oldname, newname) }
func (osFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }
func (osFS) ReadDir(dir string) ([]os.DirEntry, error)   { return os.ReadDir(dir) }
func (osFS) Stat(name string) (os.FileInfo, error)       { return os.Stat(name) }
func (osFS) Chtimes(name string, atime, mtime time.Time) error {
	return os.Chtimes(name, atime, mtime)
}

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// SyncFS is syncfs(2) on a descriptor of dir's parent held open since
// the first Log in it opened (pinFS), when one is: the kernel reports
// through it every write-back error of the file system since then (and
// one no syncfs saw before), where a descriptor opened now would miss one
// that another process's syncfs saw meanwhile, as a log file's own
// descriptor does for fsync.
func (osFS) SyncFS(dir string) error {
	if !syncfsReportsErrors() {
		return ErrSyncFSUnsupported
	}
	parent := filepath.Dir(filepath.Clean(dir))
	unpin, err := pinFS(parent)
	if err != nil {
		return err
	}
	defer unpin()
	pinMu.Lock()
	f := pins[parent].f
	pinMu.Unlock()
	for {
		err = unix.Syncfs(int(f.Fd()))
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return &os.PathError{Op: "syncfs", Path: dir, Err: err}
	}
	return nil
}

// pin is a directory held open for SyncFS while n holders need it.
type pin struct {
	f *os.File
	n int
}

var (
	pinMu sync.Mutex
	pins  = map[string]*pin{} // guarded by pinMu: by directory
)

// pinFS holds dir open for SyncFS until the func it returns is called (as
// many times as pinFS): a Log pins its parent directory for its lifetime,
// so that a broker's log directories stay open from the first Open to
// the last close.
func pinFS(dir string) (unpin func(), err error) {
	pinMu.Lock()
	defer pinMu.Unlock()
	p := pins[dir]
	if p == nil {
		f, err := os.Open(dir)
		if err != nil {
			return nil, err
		}
		p = &pin{f: f}
		pins[dir] = p
	}
	p.n++
	var once sync.Once
	return func() {
		once.Do(func() {
			pinMu.Lock()
			defer pinMu.Unlock()
			if p.n--; p.n == 0 {
				p.f.Close()
				delete(pins, dir)
			}
		})
	}, nil
}

// syncfsReportsErrors reports whether the kernel's syncfs(2) returns
// write-back errors: Linux 5.8 and later.
var syncfsReportsErrors = sync.OnceValue(func() bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false
	}
	var major, minor int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major > 5 || major == 5 && minor >= 8
})

// readFile is os.ReadFile on fs.
func readFile(fs FS, name string) ([]byte, error) {
	f, err := fs.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := 0
	if st, err := f.Stat(); err == nil && st.Size() > 0 && st.Size() < 1<<31 {
		size = int(st.Size())
	}
	b := make([]byte, 0, size+1) // +1: ReadAll stops at EOF without growing
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// writeFileSynced writes data to a new file at path and fsyncs it; on an
// error the file is removed.
func writeFileSynced(fs FS, path string, data []byte) error {
	return writeNewFile(fs, path, data, true)
}

// syncFile fsyncs the file at path, written before.
func syncFile(fs FS, path string) error {
	f, err := fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeNewFile writes data to a new file at path, fsynced when sync is
// set; on an error the file is removed.
func writeNewFile(fs FS, path string, data []byte, sync bool) error {
	f, err := fs.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = fs.Remove(path)
	}
	return err
}

// replaceFile replaces path with data by a temp file and a rename, with no
// fsync: a killed process leaves the old content or the new one whole (the
// kernel has both); a power failure may leave the old one. For files the
// next flush makes durable (writeFileAtomic then).
func replaceFile(fs FS, path string, data []byte) error {
	tmp := path + ".tmp"
	if err := writeNewFile(fs, tmp, data, false); err != nil {
		return err
	}
	if err := fs.Rename(tmp, path); err != nil {
		_ = fs.Remove(tmp)
		return err
	}
	return nil
}

// writeFileAtomic replaces path with data: temp file, fsync, rename, fsync
// dir. On an error the old file is still there (or none, as before), and
// so is the old content.
func writeFileAtomic(fs FS, path string, data []byte) error {
	if err := renameSynced(fs, path, data); err != nil {
		return err
	}
	return fs.SyncDir(filepath.Dir(path))
}

// renameSynced is writeFileAtomic without the directory's fsync: the new
// content is durable before it replaces the old, so that a crash leaves
// one whole or the other; which one survives a power failure depends on
// the next fsync of the directory (a clean shutdown makes one for all
// its files).
func renameSynced(fs FS, path string, data []byte) error {
	tmp := path + ".tmp"
	if err := writeFileSynced(fs, tmp, data); err != nil {
		return err
	}
	if err := fs.Rename(tmp, path); err != nil {
		_ = fs.Remove(tmp)
		return err
	}
	return nil
}

// dirTracker is the FS of one Log: it passes every operation on, and
// notes in dirty that the entries of the log's directory changed (a
// creation, rename or removal) since its last SyncDir, so that a clean
// shutdown fsyncs the directory only then. Like the files' dirty flags,
// dirty is set after the change and cleared before the fsync.
type dirTracker struct {
	FS
	dir   string
	dirty *atomic.Bool
}

func (t dirTracker) touched() {
	if !t.dirty.Load() {
		t.dirty.Store(true)
	}
}

func (t dirTracker) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := t.FS.OpenFile(name, flag, perm)
	if flag&os.O_CREATE != 0 {
		t.touched()
	}
	return f, err
}

func (t dirTracker) Remove(name string) error {
	defer t.touched()
	return t.FS.Remove(name)
}

func (t dirTracker) RemoveAll(name string) error {
	defer t.touched()
	return t.FS.RemoveAll(name)
}

func (t dirTracker) Rename(oldname, newname string) error {
	defer t.touched()
	return t.FS.Rename(oldname, newname)
}

func (t dirTracker) MkdirAll(dir string, perm os.FileMode) error {
	defer t.touched()
	return t.FS.MkdirAll(dir, perm)
}

func (t dirTracker) SyncDir(dir string) error {
	if filepath.Clean(dir) != t.dir {
		return t.FS.SyncDir(dir)
	}
	t.dirty.Store(false)
	err := t.FS.SyncDir(dir)
	if err != nil {
		t.dirty.Store(true)
	}
	return err
}
