package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
)

const offsetIndexEntrySize = 8

var errBadIndex = errors.New("logstore: inconsistent index file")

// offsetIndex is a segment's sparse offset index held in memory in its file
// format: 8-byte entries (relative offset, file position), both ascending.
// Its segment's mu guards it.
type offsetIndex struct {
	base int64
	buf  []byte // whole entries
	file indexFile
}

// indexFile is what an index knows of its file.
type indexFile struct {
	persisted int  // bytes of buf already in the file
	onDisk    bool // the file holds them: loaded from it, or written here
}

func (ix *offsetIndex) count() int { return len(ix.buf) / offsetIndexEntrySize }

func (ix *offsetIndex) entry(i int) (offset, pos int64) {
	e := ix.buf[i*offsetIndexEntrySize:]
	return ix.base + int64(binary.BigEndian.Uint32(e)), int64(binary.BigEndian.Uint32(e[4:]))
}

// add appends an entry; the caller keeps offsets and positions ascending.
func (ix *offsetIndex) add(offset, pos int64) {
	ix.buf = binary.BigEndian.AppendUint32(ix.buf, uint32(offset-ix.base))
	ix.buf = binary.BigEndian.AppendUint32(ix.buf, uint32(pos))
}

// lookup returns the largest entry whose offset is <= offset, or (base, 0).
func (ix *offsetIndex) lookup(offset int64) (int64, int64) {
	n := ix.count()
	i := sort.Search(n, func(i int) bool {
		o, _ := ix.entry(i)
		return o > offset
	})
	if i == 0 {
		return ix.base, 0
	}
	return ix.entry(i - 1)
}

// lookupPos returns the largest entry whose position is <= pos, or (base, 0).
func (ix *offsetIndex) lookupPos(pos int64) (int64, int64) {
	n := ix.count()
	i := sort.Search(n, func(i int) bool {
		_, p := ix.entry(i)
		return p > pos
	})
	if i == 0 {
		return ix.base, 0
	}
	return ix.entry(i - 1)
}

// last returns the last entry, or (base, 0) when empty.
func (ix *offsetIndex) last() (int64, int64) {
	if n := ix.count(); n > 0 {
		return ix.entry(n - 1)
	}
	return ix.base, 0
}

// check verifies what Kafka's sanity check does and more: whole entries,
// strictly ascending offsets and positions, positions inside the log file.
func (ix *offsetIndex) check(logSize int64) error {
	if len(ix.buf)%offsetIndexEntrySize != 0 {
		return fmt.Errorf("%w: offset index of %d has %d bytes", errBadIndex, ix.base, len(ix.buf))
	}
	prevOff, prevPos := int64(-1), int64(-1)
	for i := 0; i < ix.count(); i++ {
		o, p := ix.entry(i)
		if o <= prevOff || p <= prevPos || p >= logSize {
			return fmt.Errorf("%w: offset index of %d entry %d (%d@%d)", errBadIndex, ix.base, i, o, p)
		}
		prevOff, prevPos = o, p
	}
	return nil
}

// loadOffsetIndex reads an index file whole; a missing file is an error.
func loadOffsetIndex(fs FS, path string, base int64) (*offsetIndex, error) {
	b, err := readFile(fs, path)
	if err != nil {
		return nil, err
	}
	return &offsetIndex{base: base, buf: b, file: indexFile{persisted: len(b), onDisk: true}}, nil
}

// writeTo brings the file at path up to date with the entries in memory:
// only the unwritten tail is written, then the file is cut to size. It
// reports whether it changed the file.
func (ix *offsetIndex) writeTo(fs FS, path string) (bool, error) {
	return writeIndexFile(fs, path, ix.buf, &ix.file)
}

// writeIndexFile writes buf[persisted:] at persisted and truncates the
// file to len(buf), creating it when needed. A file already up to date is
// left untouched: not opened when known to be (an idle log's Close would
// pay for it ten thousand times), and not truncated to its own size, which
// would dirty its inode and cost a clean shutdown an fsync. It reports
// whether it created or changed the file (wrote may be true with an
// error).
func writeIndexFile(fs FS, path string, buf []byte, st *indexFile) (wrote bool, err error) {
	if st.onDisk && st.persisted == len(buf) {
		return false, nil
	}
	f, err := fs.OpenFile(path, os.O_RDWR, 0o644)
	if errors.Is(err, os.ErrNotExist) {
		f, err = fs.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		wrote = err == nil
	}
	if err != nil {
		return false, err
	}
	if st.persisted > len(buf) {
		st.persisted = 0
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() < int64(st.persisted) {
		st.persisted = 0 // the file lost data behind our back: rewrite it
	}
	if err == nil && len(buf) > st.persisted {
		wrote = true
		_, err = f.WriteAt(buf[st.persisted:], int64(st.persisted))
	}
	if err == nil && fi.Size() != int64(len(buf)) {
		wrote = true
		err = f.Truncate(int64(len(buf)))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		st.onDisk = false
		return wrote, err
	}
	st.persisted, st.onDisk = len(buf), true
	return wrote, nil
}
