package logstore

import (
	"encoding/binary"
	"fmt"
	"sort"
)

const timeIndexEntrySize = 12

// timeIndex is a segment's sparse time index in memory, in its file format:
// 12-byte entries (timestamp, relative offset) with ascending timestamps.
// An entry (T, o) says: the largest timestamp of the segment up to and
// including the batch at offset o is T, and that batch first reached it.
// Its segment's mu guards it.
type timeIndex struct {
	base int64
	buf  []byte
	file indexFile
}

func (ti *timeIndex) count() int { return len(ti.buf) / timeIndexEntrySize }

func (ti *timeIndex) entry(i int) (ts, offset int64) {
	e := ti.buf[i*timeIndexEntrySize:]
	return int64(binary.BigEndian.Uint64(e)), ti.base + int64(binary.BigEndian.Uint32(e[8:]))
}

// last returns the newest entry; ok is false when the index is empty.
func (ti *timeIndex) last() (ts, offset int64, ok bool) {
	n := ti.count()
	if n == 0 {
		return -1, -1, false
	}
	ts, offset = ti.entry(n - 1)
	return ts, offset, true
}

// maybeAdd appends (ts, offset) if ts is larger than the last entry's.
func (ti *timeIndex) maybeAdd(ts, offset int64) {
	if lt, lo, ok := ti.last(); ok && (ts <= lt || offset < lo) {
		return
	}
	ti.buf = binary.BigEndian.AppendUint64(ti.buf, uint64(ts))
	ti.buf = binary.BigEndian.AppendUint32(ti.buf, uint32(offset-ti.base))
}

// lookupBelow returns the newest entry whose timestamp is < ts: every batch
// up to and including the one at that offset holds only earlier timestamps.
func (ti *timeIndex) lookupBelow(ts int64) (entryTs, offset int64, ok bool) {
	i := sort.Search(ti.count(), func(i int) bool {
		t, _ := ti.entry(i)
		return t >= ts
	})
	if i == 0 {
		return -1, -1, false
	}
	entryTs, offset = ti.entry(i - 1)
	return entryTs, offset, true
}

// check verifies whole entries, ascending timestamps and non-decreasing
// offsets not beyond nextOffset.
func (ti *timeIndex) check(nextOffset int64) error {
	if len(ti.buf)%timeIndexEntrySize != 0 {
		return fmt.Errorf("%w: time index of %d has %d bytes", errBadIndex, ti.base, len(ti.buf))
	}
	prevTs, prevOff := int64(-1<<63), ti.base
	for i := 0; i < ti.count(); i++ {
		t, o := ti.entry(i)
		if (i > 0 && t <= prevTs) || o < prevOff || (o >= nextOffset && nextOffset > ti.base) {
			return fmt.Errorf("%w: time index of %d entry %d (%d@%d)", errBadIndex, ti.base, i, t, o)
		}
		prevTs, prevOff = t, o
	}
	return nil
}

func loadTimeIndex(fs FS, path string, base int64) (*timeIndex, error) {
	b, err := readFile(fs, path)
	if err != nil {
		return nil, err
	}
	return &timeIndex{base: base, buf: b, file: indexFile{persisted: len(b), onDisk: true}}, nil
}

func (ti *timeIndex) writeTo(fs FS, path string) (bool, error) {
	return writeIndexFile(fs, path, ti.buf, &ti.file)
}
