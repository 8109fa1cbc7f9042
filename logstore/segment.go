package logstore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
)

// errTorn marks bytes that do not form a whole, sane batch.
var errTorn = errors.New("logstore: torn or corrupt batch")

func segmentName(dir string, base int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", base, suffix))
}

// parseSegmentName returns the base offset of "NNNNNNNNNNNNNNNNNNNN<suffix>".
func parseSegmentName(name, suffix string) (int64, bool) {
	s, ok := strings.CutSuffix(name, suffix)
	if !ok || len(s) != 20 {
		return 0, false
	}
	base, err := strconv.ParseInt(s, 10, 64)
	if err != nil || base < 0 {
		return 0, false
	}
	return base, true
}

// segment is one .log file with its indexes.
//
// A segment is reference counted: the Log holds one reference while the
// segment is in its list, every outstanding read holds one more. Deleting a
// segment unlinks its files at once and closes the file on the last unref.
type segment struct {
	base    int64
	dir     string
	fs      FS
	f       File
	osf     *os.File // f.OSFile(), for Read's regions
	created time.Time

	size    atomic.Int64 // published length of the .log (readers stop here)
	next    atomic.Int64 // offset after the last batch
	refs    atomic.Int32
	synced  atomic.Bool // .log and index files fsynced (sealed segments)
	sealing atomic.Bool // rolled, its fsync and the producer snapshot at its end not yet written
	// logDirty and idxDirty: the .log, or an index file, was written or
	// cut since its last fsync (or may hold bytes never fsynced, as after
	// a crash). Set after the write, cleared before the fsync (and set
	// again when it fails), so a write racing a sync is never lost; a
	// clean shutdown fsyncs only what is dirty.
	logDirty atomic.Bool
	idxDirty atomic.Bool

	mu     sync.RWMutex
	idx    *offsetIndex // guarded by mu; nil until loaded
	tidx   *timeIndex   // guarded by mu; nil until loaded
	maxTs  int64        // guarded by mu: largest batch MaxTimestamp, -1 when none
	maxOff int64        // guarded by mu: base offset of the batch that first reached maxTs
	// maxKnown: maxTs/maxOff were read from the time index's last entry
	// while the indexes are not loaded. Guarded by mu.
	maxKnown bool
	// aborted is the aborted-transaction index (.txnindex), in marker
	// order. Guarded by mu; changed under Log.appendMu.
	aborted []AbortedTxn

	// Appender state, guarded by Log.appendMu.
	sinceIndex int64 // log bytes since the last offset index entry
	firstTs    int64 // MaxTimestamp of the first batch, -1 when unknown/none
}

func newSegmentStruct(fs FS, dir string, base int64, f File) *segment {
	s := &segment{base: base, dir: dir, fs: fs, f: f, osf: f.OSFile(), created: time.Now(), maxTs: -1, maxOff: -1, firstTs: -1}
	s.refs.Store(1)
	s.next.Store(base)
	return s
}

// createSegment makes a new empty segment (replacing stale files).
func createSegment(fs FS, dir string, base int64) (*segment, error) {
	f, err := fs.OpenFile(segmentName(dir, base, logSuffix), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	for _, suf := range []string{indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		if err := fs.Remove(segmentName(dir, base, suf)); err != nil && !errors.Is(err, os.ErrNotExist) {
			_ = f.Close()
			return nil, err
		}
	}
	s := newSegmentStruct(fs, dir, base, f)
	s.idx = &offsetIndex{base: base}
	s.tidx = &timeIndex{base: base}
	// Empty now, but O_TRUNC may have cut a stale file whose bytes are
	// still what the disk holds.
	s.logDirty.Store(true)
	return s, nil
}

// openSegment opens an existing segment; its indexes are not loaded.
func openSegment(fs FS, dir string, base int64) (*segment, error) {
	f, err := fs.OpenFile(segmentName(dir, base, logSuffix), os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	s := newSegmentStruct(fs, dir, base, f)
	s.size.Store(st.Size())
	s.created = st.ModTime()
	return s, nil
}

// tryRef takes a reference unless the segment is already released.
func (s *segment) tryRef() bool {
	for {
		n := s.refs.Load()
		if n <= 0 {
			return false
		}
		if s.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// unref drops a reference and closes the file on the last one.
func (s *segment) unref() {
	if s.refs.Add(-1) == 0 {
		_ = s.f.Close()
	}
}

// remove unlinks the segment's files; open readers keep the data.
func (s *segment) remove() error {
	var errs []error
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		if err := s.fs.Remove(segmentName(s.dir, s.base, suf)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// largestTimestamp is what time retention compares: the largest batch
// timestamp, or the file's modification time when there is none (Kafka).
func (s *segment) largestTimestamp(interval int32) int64 {
	ts, _, err := s.maxTimestamp(interval)
	if err == nil && ts > 0 {
		return ts
	}
	if st, err := s.f.Stat(); err == nil {
		return st.ModTime().UnixMilli()
	}
	return s.created.UnixMilli()
}

// maxTimestamp returns the segment's largest batch timestamp and the base
// offset of the batch that first reached it (-1, -1 when none). For a
// sealed segment whose indexes are not in memory it reads only the last
// time index entry, falling back to loading the indexes.
func (s *segment) maxTimestamp(interval int32) (int64, int64, error) {
	s.mu.RLock()
	if s.idx != nil || s.maxKnown {
		ts, off := s.maxTs, s.maxOff
		s.mu.RUnlock()
		return ts, off, nil
	}
	s.mu.RUnlock()
	if ts, off, ok := s.lastTimeIndexEntry(); ok {
		s.mu.Lock()
		if s.idx == nil {
			s.maxTs, s.maxOff, s.maxKnown = ts, off, true
		}
		ts, off = s.maxTs, s.maxOff
		s.mu.Unlock()
		return ts, off, nil
	}
	if err := s.ensureIndexes(interval); err != nil {
		return -1, -1, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.maxTs, s.maxOff, nil
}

// lastTimeIndexEntry reads the last entry of the .timeindex file if it is
// plausible: whole entries and an offset inside the segment.
func (s *segment) lastTimeIndexEntry() (int64, int64, bool) {
	f, err := s.fs.OpenFile(segmentName(s.dir, s.base, timeIndexSuffix), os.O_RDONLY, 0)
	if err != nil {
		return -1, -1, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 || st.Size()%timeIndexEntrySize != 0 {
		return -1, -1, false
	}
	var b [timeIndexEntrySize]byte
	if _, err := f.ReadAt(b[:], st.Size()-timeIndexEntrySize); err != nil {
		return -1, -1, false
	}
	ti := timeIndex{base: s.base, buf: b[:]}
	ts, off := ti.entry(0)
	if off >= s.next.Load() || ts < 0 {
		return -1, -1, false
	}
	return ts, off, true
}

// noteBatch records a batch in the in-memory indexes. Caller holds s.mu
// (write) and the append lock (or owns the segment exclusively).
func (s *segment) noteBatch(h *BatchHeader, pos int64, interval int32) {
	if s.sinceIndex > int64(interval) && pos > 0 {
		s.idx.add(h.BaseOffset, pos)
		if s.maxTs >= 0 {
			s.tidx.maybeAdd(s.maxTs, s.maxOff)
		}
		s.sinceIndex = 0
	}
	s.sinceIndex += h.Size()
	if h.MaxTimestamp > s.maxTs {
		s.maxTs = h.MaxTimestamp
		s.maxOff = h.BaseOffset
	}
	if pos == 0 {
		s.firstTs = h.MaxTimestamp
	}
}

// sealIndexes adds the final time index entry (the segment's largest
// timestamp) and writes both index files. Caller holds the append lock.
func (s *segment) sealIndexes() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.idx == nil {
		return nil
	}
	return s.sealIndexesLocked()
}

// sealIndexesForClose is sealIndexes for a clean close, which leaves a
// segment without index files when it has none yet and its offset index
// no entry (less than index.interval.bytes of batches): the next Open
// rebuilds them from those few batch headers (ensureIndexes) and does not
// write them either, where a clean shutdown of 10,000 small partitions
// created two files for each. A roll writes them (sealIndexes). Caller
// holds the append lock.
func (s *segment) sealIndexesForClose() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.idx == nil || s.idx.count() == 0 && !s.idx.file.onDisk && !s.tidx.file.onDisk {
		return nil
	}
	return s.sealIndexesLocked()
}

func (s *segment) sealIndexesLocked() error {
	if s.maxTs >= 0 {
		s.tidx.maybeAdd(s.maxTs, s.maxOff)
	}
	return s.writeIndexesLocked()
}

// wroteLog notes that the .log was written or cut (after the write).
func (s *segment) wroteLog() {
	if !s.logDirty.Load() {
		s.logDirty.Store(true)
	}
}

// syncLog fsyncs the .log when it was written since its last fsync.
func (s *segment) syncLog() error {
	if !s.logDirty.Swap(false) {
		return nil
	}
	err := s.f.Sync()
	if err != nil {
		s.logDirty.Store(true)
	}
	return err
}

// syncFiles fsyncs the .log and the index files, each only when written
// since its last fsync.
func (s *segment) syncFiles() error {
	if err := s.syncLog(); err != nil {
		return err
	}
	if !s.idxDirty.Swap(false) {
		return nil
	}
	for _, suf := range []string{indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		f, err := s.fs.OpenFile(segmentName(s.dir, s.base, suf), os.O_RDONLY, 0)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err == nil {
			err = f.Sync()
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			s.idxDirty.Store(true)
			return err
		}
	}
	return nil
}

// ensureIndexes loads the index files of a sealed segment on first use,
// rebuilding them from the batch headers when missing or inconsistent.
func (s *segment) ensureIndexes(interval int32) error {
	s.mu.RLock()
	loaded := s.idx != nil
	s.mu.RUnlock()
	if loaded {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.idx != nil {
		return nil
	}
	size := s.size.Load()
	idx, err := loadOffsetIndex(s.fs, segmentName(s.dir, s.base, indexSuffix), s.base)
	if err == nil {
		err = idx.check(size)
	}
	var tidx *timeIndex
	if err == nil {
		tidx, err = loadTimeIndex(s.fs, segmentName(s.dir, s.base, timeIndexSuffix), s.base)
	}
	if err == nil {
		err = tidx.check(s.next.Load())
	}
	if err == nil {
		s.idx, s.tidx, s.maxKnown = idx, tidx, false
		s.maxTs, s.maxOff = -1, -1
		if ts, off, ok := tidx.last(); ok {
			s.maxTs, s.maxOff = ts, off
		}
		return nil
	}
	if err := s.rebuildIndexesLocked(interval); err != nil {
		return err
	}
	if s.idx.count() > 0 {
		// (Without an entry the files are not worth writing: see
		// sealIndexesForClose.)
		s.writeIndexFilesBestEffort()
	}
	return nil
}

// writeIndexFilesBestEffort writes rebuilt indexes that are already in
// memory. A failure (a full disk) does not fail the read that needed
// them: the files are only a cache of the .log, checked when loaded (a
// torn one is rebuilt, an entry off a batch start repaired) and written
// again at the next roll, Close or Open.
func (s *segment) writeIndexFilesBestEffort() {
	_ = s.writeIndexesLocked()
}

// scanIndexes builds indexes from the batch headers of the first size
// bytes (no CRC check: that is recovery's job) into a scratch segment.
func (s *segment) scanIndexes(size int64, interval int32) (*segment, error) {
	tmp := &segment{base: s.base, maxTs: -1, maxOff: -1, firstTs: -1,
		idx: &offsetIndex{base: s.base}, tidx: &timeIndex{base: s.base}}
	next := s.base
	r := newHeaderReader(s.f, size)
	defer r.free()
	for pos := int64(0); ; {
		h, err := r.at(pos)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("segment %d: rebuild index at %d: %w", s.base, pos, err)
		}
		tmp.noteBatch(&h, pos, interval)
		pos += h.Size()
		next = h.LastOffset() + 1
	}
	if tmp.maxTs >= 0 {
		tmp.tidx.maybeAdd(tmp.maxTs, tmp.maxOff)
	}
	tmp.next.Store(next)
	return tmp, nil
}

// rebuildIndexesLocked rebuilds the indexes and the appender state from
// the batch headers, in memory. Caller holds s.mu and owns the segment
// (append lock, or Open).
func (s *segment) rebuildIndexesLocked(interval int32) error {
	tmp, err := s.scanIndexes(s.size.Load(), interval)
	if err != nil {
		return err
	}
	s.idx, s.tidx, s.maxTs, s.maxOff = tmp.idx, tmp.tidx, tmp.maxTs, tmp.maxOff
	s.firstTs, s.sinceIndex = tmp.firstTs, tmp.sinceIndex
	s.next.Store(tmp.next.Load())
	return nil
}

func (s *segment) writeIndexesLocked() error {
	wrote, err := s.idx.writeTo(s.fs, segmentName(s.dir, s.base, indexSuffix))
	if err == nil {
		var w bool
		w, err = s.tidx.writeTo(s.fs, segmentName(s.dir, s.base, timeIndexSuffix))
		wrote = wrote || w
	}
	if wrote || err != nil {
		s.idxDirty.Store(true)
	}
	return err
}

// repairIndexes replaces indexes a reader found pointing off batch
// boundaries. It leaves the appender's state alone, so it is safe on the
// active segment: an append waits for s.mu and notes its batches (beyond
// the published size scanned here) into the new index.
func (s *segment) repairIndexes(interval int32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	tmp, err := s.scanIndexes(s.size.Load(), interval)
	if err != nil {
		return err
	}
	s.idx, s.tidx, s.maxTs, s.maxOff = tmp.idx, tmp.tidx, tmp.maxTs, tmp.maxOff
	s.writeIndexFilesBestEffort()
	return nil
}

// indexPos returns the position of the offset index entry that lookup
// picks, checked against the batch header there (a sparse index must point
// at batch starts). An entry that does not makes it rebuild the indexes
// once. An entry past the reader's limit (a batch appended meanwhile) is
// returned as is: reading there gives io.EOF.
func (s *segment) indexPos(r *headerReader, interval int32, lookup func(*offsetIndex) (int64, int64)) (int64, error) {
	for attempt := 0; ; attempt++ {
		s.mu.RLock()
		eo, pos := lookup(s.idx)
		s.mu.RUnlock()
		if pos == 0 {
			return 0, nil
		}
		h, err := r.at(pos)
		if err == io.EOF || (err == nil && h.BaseOffset == eo) {
			return pos, nil
		}
		if attempt > 0 {
			return 0, fmt.Errorf("segment %d: index entry %d@%d: %w", s.base, eo, pos, errBadIndex)
		}
		if err := s.repairIndexes(interval); err != nil {
			return 0, err
		}
	}
}

// headerReader reads batch headers through a small buffer of preads,
// never past limit.
type headerReader struct {
	f     File
	limit int64
	buf   []byte
	start int64 // file position of buf[0]
	n     int   // valid bytes in buf
}

const headerReaderBuf = 8 << 10

var headerBufPool = sync.Pool{New: func() any { b := make([]byte, headerReaderBuf); return &b }}

func newHeaderReader(f File, limit int64) *headerReader {
	return &headerReader{f: f, limit: limit, buf: *headerBufPool.Get().(*[]byte)}
}

func (r *headerReader) free() {
	if r.buf != nil {
		b := r.buf
		headerBufPool.Put(&b)
		r.buf = nil
	}
}

// at returns the sane header of the batch at pos: io.EOF when pos is at
// (or past) limit, errTorn when the bytes there do not start a whole batch
// that ends within limit.
func (r *headerReader) at(pos int64) (BatchHeader, error) {
	if pos >= r.limit {
		return BatchHeader{}, io.EOF
	}
	if pos+BatchHeaderSize > r.limit {
		return BatchHeader{}, fmt.Errorf("%w: %d bytes of header at %d", errTorn, r.limit-pos, pos)
	}
	if pos < r.start || pos+BatchHeaderSize > r.start+int64(r.n) {
		want := min(int64(len(r.buf)), r.limit-pos)
		n, err := r.f.ReadAt(r.buf[:want], pos)
		if n < BatchHeaderSize {
			if err == nil || err == io.EOF {
				err = fmt.Errorf("%w: file shorter than expected at %d", errTorn, pos)
			}
			r.n = 0
			return BatchHeader{}, err
		}
		r.start, r.n = pos, n
	}
	off := pos - r.start
	h, err := ParseBatchHeader(r.buf[off : off+BatchHeaderSize])
	if err != nil {
		return h, fmt.Errorf("%w: %v", errTorn, err)
	}
	if err := saneHeader(&h, pos, r.limit); err != nil {
		return h, err
	}
	return h, nil
}

// saneHeader checks what can be checked without reading the batch body.
func saneHeader(h *BatchHeader, pos, limit int64) error {
	switch {
	case h.Magic != 2:
		return fmt.Errorf("%w: magic %d at %d", errTorn, h.Magic, pos)
	case h.Length < BatchHeaderSize-12:
		return fmt.Errorf("%w: length %d at %d", errTorn, h.Length, pos)
	case pos+h.Size() > limit:
		return fmt.Errorf("%w: batch of %d bytes at %d passes the end %d", errTorn, h.Size(), pos, limit)
	case h.BaseOffset < 0 || h.LastOffsetDelta < 0:
		return fmt.Errorf("%w: offsets %d+%d at %d", errTorn, h.BaseOffset, h.LastOffsetDelta, pos)
	}
	return nil
}
