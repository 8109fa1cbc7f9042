package logstore

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	startOffsetName   = "log-start-offset"
	recoveryPointName = "recovery-point"
	cleanerOffsetName = "cleaner-offset-checkpoint" // Compact's progress
	cleanShutdownName = ".clean-shutdown"
	snapshotSuffix    = ".snapshot"
	keepSnapshots     = 2
)

var pathJoin = filepath.Join

var recoveryCRCTable = crc32.MakeTable(crc32.Castagnoli)

// Open opens (creating if needed) the partition log in dir and recovers
// it: without the clean-shutdown marker every segment from the recovery
// point on is checked batch by batch and a torn or corrupt tail is cut.
// A nil logger discards.
func Open(dir string, cfg Config, logger *slog.Logger) (*Log, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	fs := cfg.FS
	if fs == nil {
		fs = OS
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStorage, err)
	}
	l := &Log{dir: dir, snapSavedAt: -1, snapWrittenAt: -1, onFailure: cfg.OnFailure, onFlush: cfg.OnFlush, logger: logger, lastFlush: time.Now()}
	if fs == OS {
		if unpin, err := pinFS(filepath.Dir(filepath.Clean(dir))); err == nil {
			l.unpin = unpin
		}
	}
	l.dirDirty.Store(true)
	l.fs = dirTracker{FS: fs, dir: filepath.Clean(dir), dirty: &l.dirDirty}
	c := cfg.normalized()
	l.cfg.Store(&c)
	l.setSegments(nil)
	if err := l.load(); err != nil {
		for _, s := range l.segments() {
			s.unref()
		}
		l.release()
		return nil, fmt.Errorf("%w: open %s: %v", ErrStorage, dir, err)
	}
	return l, nil
}

// load reads the directory and recovers as the package doc describes.
func (l *Log) load() error {
	began := time.Now()
	entries, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return err
	}
	_, err = l.fs.Stat(pathJoin(l.dir, cleanShutdownName))
	clean := err == nil
	marked := clean // the marker is there, to be removed durably

	var bases, snapshots []int64
	indexFiles := map[string]int64{}
	for _, e := range entries {
		name := e.Name()
		switch {
		case e.IsDir():
		case strings.HasSuffix(name, ".tmp") || strings.HasSuffix(name, ".deleted"):
			_ = l.fs.Remove(pathJoin(l.dir, name))
		default:
			if b, ok := parseSegmentName(name, logSuffix); ok {
				bases = append(bases, b)
			} else if b, ok := parseSegmentName(name, snapshotSuffix); ok {
				snapshots = append(snapshots, b)
			} else if b, ok := parseSegmentName(name, indexSuffix); ok {
				indexFiles[name] = b
			} else if b, ok := parseSegmentName(name, timeIndexSuffix); ok {
				indexFiles[name] = b
			} else if b, ok := parseSegmentName(name, txnIndexSuffix); ok {
				indexFiles[name] = b
			}
		}
	}
	slices.Sort(bases)
	for name, b := range indexFiles {
		if _, found := slices.BinarySearch(bases, b); !found {
			_ = l.fs.Remove(pathJoin(l.dir, name)) // orphan index
		}
	}

	startCkpt, hasStart := readOffsetCheckpoint(l.fs, l.dir, startOffsetName, l.logger)
	rp, hasRP := readOffsetCheckpoint(l.fs, l.dir, recoveryPointName, l.logger)
	epochs, err := loadEpochCache(l.fs, l.dir)
	if err != nil {
		l.logger.Warn("leader epoch checkpoint unreadable, starting empty", "log", l.dir, "err", err)
		clean = false
	}
	l.epochs = epochs

	segs := make([]*segment, 0, len(bases)+1)
	rebuildTxns := int64(math.MaxInt64) // aborted indexes at and after it are rebuilt from the log
	for _, b := range bases {
		s, err := openSegment(l.fs, l.dir, b)
		if err == nil {
			if terr := s.loadTxnIndex(); terr != nil {
				l.logger.Warn("transaction index unreadable, rebuilding it", "log", l.dir, "segment", b, "err", terr)
				rebuildTxns = min(rebuildTxns, b)
			}
		}
		if err != nil {
			for _, s := range segs {
				s.unref()
			}
			return err
		}
		segs = append(segs, s)
	}
	l.setSegments(segs)
	if len(segs) == 0 {
		base := int64(0)
		if hasStart {
			base = max(startCkpt, 0)
		}
		s, err := createSegment(l.fs, l.dir, base)
		if err != nil {
			return err
		}
		segs = append(segs, s)
		l.setSegments(segs)
		clean = true // nothing to recover
	}
	for i := 0; i+1 < len(segs); i++ {
		segs[i].next.Store(segs[i+1].base)
	}
	last := len(segs) - 1
	interval := l.config().IndexIntervalBytes

	recoverFrom := len(segs)
	switch {
	case clean:
		if err := segs[last].loadActiveClean(interval); err != nil {
			l.logger.Warn("clean shutdown marker but the active segment is inconsistent; recovering it",
				"log", l.dir, "segment", segs[last].base, "err", err)
			recoverFrom = last
		}
	case !hasRP:
		recoverFrom = 0
	default:
		recoverFrom = 0
		for i, s := range segs {
			if s.base <= rp {
				recoverFrom = i
			}
		}
	}
	for i := 0; i < recoverFrom && i < last; i++ {
		segs[i].synced.Store(true) // below the recovery point: fsynced before
	}
	if recoverFrom < len(segs) {
		// The epochs from the first offset scanned on are those of the
		// batches scanned: an entry there that a truncation removed
		// without fsync (TruncateTo), brought back by a power failure,
		// would otherwise stand for batches of an older epoch appended
		// after it.
		from := segs[recoverFrom].base
		if recoverFrom > 0 {
			from = max(from, segs[recoverFrom-1].next.Load())
		}
		l.epochs.truncateFromEnd(from)
	}
	for i := recoverFrom; i < len(segs); i++ {
		s := segs[i]
		lower := s.base
		if i > 0 {
			lower = max(lower, segs[i-1].next.Load())
		}
		upper := int64(-1)
		if i < last {
			upper = segs[i+1].base
		}
		truncated, err := l.recoverSegment(s, interval, lower, upper)
		if err != nil {
			return err
		}
		l.recoveredSegments.Add(1)
		if truncated && i < last {
			// Kafka drops everything after a corrupt batch.
			for _, t := range segs[i+1:] {
				l.logger.Warn("deleting segment after a corrupt one", "log", l.dir, "segment", t.base)
				if err := t.remove(); err != nil {
					return err
				}
				t.unref()
			}
			segs = segs[:i+1]
			l.setSegments(segs)
			last = i
			break
		}
	}
	for _, s := range segs[min(recoverFrom, len(segs)):] {
		// What recovery kept may be bytes a killed process left in the
		// page cache, never fsynced: no clean shutdown vouches for them
		// before they are.
		s.logDirty.Store(true)
	}
	// An empty sealed segment left at the end (its data lost) still ends the log.
	l.active = segs[last]
	end := l.active.next.Load()
	l.end.Store(end)
	if n := l.recoveredSegments.Load(); n > 0 {
		l.logger.Info("recovered log after an unclean shutdown", "log", l.dir, "segments_scanned", n, "end_offset", end)
	}

	start := segs[0].base
	switch {
	case hasStart && l.config().RemoteStorage:
		start = startCkpt // may be below the local segments: they are remote
	case hasStart:
		start = max(start, startCkpt)
	}
	start = min(start, end)
	l.start.Store(start)
	l.startSaved = -1
	if hasStart {
		l.startSaved = startCkpt
	}

	changed := l.epochs.truncateFromEnd(end)
	changed = l.epochs.truncateFromStart(start) || changed
	if changed || l.recoveredSegments.Load() > 0 {
		if err := l.epochs.persist(); err != nil {
			return err
		}
	}

	if recoverFrom < len(segs) {
		// Recovered segments get their aborted indexes from the log again.
		rebuildTxns = min(rebuildTxns, segs[recoverFrom].base)
	}
	if err := l.loadProducerState(snapshots, end, rebuildTxns); err != nil {
		return err
	}
	if !marked {
		// A snapshot found without a marker may be one a clean close
		// wrote without fsync before the process died: the next clean
		// close fsyncs it rather than take it as durable.
		l.snapSavedAt = -1
	}

	// A cleaner checkpoint past a truncated end only delays the next pass.
	if co, ok := readOffsetCheckpoint(l.fs, l.dir, cleanerOffsetName, l.logger); ok {
		l.cleanedTo.Store(min(co, end))
	}
	l.recoveryPoint = rp
	if clean && recoverFrom == len(segs) {
		l.recoveryPoint = end
	}
	if err := l.fs.Remove(pathJoin(l.dir, cleanShutdownName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	// The marker's removal must last before anything is written: if it
	// came back after a power loss, a torn tail would be taken as clean.
	// A new log (no marker, nothing recovered) needs no fsync: creating
	// 10,000 partitions waited for one each.
	if marked || l.recoveredSegments.Load() > 0 {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return err
		}
	}
	lvl := slog.LevelDebug
	if n := l.recoveredSegments.Load(); n > 0 {
		lvl = slog.LevelInfo
	}
	l.logger.Log(context.Background(), lvl, "opened log", "log", l.dir, "start", start, "end", end, "segments", len(segs),
		"clean", clean, "recoveredSegments", l.recoveredSegments.Load(), "took", time.Since(began))
	return nil
}

// loadActiveClean prepares the active segment of a cleanly closed log:
// its index files are trusted and only the batch headers after the last
// index entry are read, to find the end offset.
func (s *segment) loadActiveClean(interval int32) error {
	if err := s.ensureIndexes(interval); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	size := s.size.Load()
	r := newHeaderReader(s.f, size)
	defer r.free()
	if size > 0 {
		h, err := r.at(0)
		if err != nil {
			return err
		}
		s.firstTs = h.MaxTimestamp
	}
	lastOff, lastPos := s.idx.last()
	pos, next := lastPos, s.base
	for {
		h, err := r.at(pos)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if pos == lastPos && pos > 0 && h.BaseOffset != lastOff {
			return fmt.Errorf("segment %d: last index entry %d@%d: %w", s.base, lastOff, pos, errBadIndex)
		}
		if pos == lastPos && pos > 0 {
			s.sinceIndex = h.Size() // indexed already
			if h.MaxTimestamp > s.maxTs {
				s.maxTs, s.maxOff = h.MaxTimestamp, h.BaseOffset
			}
		} else {
			s.noteBatch(&h, pos, interval)
		}
		pos += h.Size()
		next = h.LastOffset() + 1
	}
	s.next.Store(next)
	if _, off, ok := s.tidx.last(); ok && off >= next {
		// The file lost batches the time index knows (cut after Close).
		return s.rebuildIndexesLocked(interval)
	}
	return nil
}

// recoverSegment checks every batch of s (header sanity, offsets within
// [lower, upper), CRC-32C), truncates the file at the first bad byte,
// rebuilds the indexes and feeds the leader epochs to the epoch cache. It
// reports whether anything was cut.
func (l *Log) recoverSegment(s *segment, interval int32, lower, upper int64) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	size := s.size.Load()
	s.idx = &offsetIndex{base: s.base}
	s.tidx = &timeIndex{base: s.base}
	s.maxTs, s.maxOff, s.sinceIndex, s.firstTs = -1, -1, 0, -1

	br := bufio.NewReaderSize(io.NewSectionReader(s.f, 0, size), 256<<10)
	var hdr [BatchHeaderSize]byte
	pos, next := int64(0), s.base
	var bad error
	for pos < size {
		if size-pos < BatchHeaderSize {
			bad = fmt.Errorf("%w: %d trailing bytes", errTorn, size-pos)
			break
		}
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return false, fmt.Errorf("segment %d: read at %d: %w", s.base, pos, err)
		}
		h, err := ParseBatchHeader(hdr[:])
		if err == nil {
			err = saneHeader(&h, pos, size)
		}
		if err == nil && (h.BaseOffset < lower || h.BaseOffset < next || (upper >= 0 && h.LastOffset() >= upper) ||
			h.LastOffset()-s.base > 1<<31-1) {
			err = fmt.Errorf("%w: offsets %d..%d out of place", errTorn, h.BaseOffset, h.LastOffset())
		}
		if err != nil {
			bad = err
			break
		}
		crc := crc32.Update(0, recoveryCRCTable, hdr[21:])
		for rest := int(h.Size() - BatchHeaderSize); rest > 0; {
			chunk, err := br.Peek(min(rest, br.Size()))
			if err != nil {
				return false, fmt.Errorf("segment %d: read at %d: %w", s.base, pos, err)
			}
			crc = crc32.Update(crc, recoveryCRCTable, chunk)
			if _, err := br.Discard(len(chunk)); err != nil {
				return false, err
			}
			rest -= len(chunk)
		}
		if crc != h.CRC {
			bad = fmt.Errorf("%w: CRC mismatch in batch %d", errTorn, h.BaseOffset)
			break
		}
		s.noteBatch(&h, pos, interval)
		if h.PartitionLeaderEpoch >= 0 && h.PartitionLeaderEpoch > l.epochs.latest() {
			l.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset)
		}
		pos += h.Size()
		next = h.LastOffset() + 1
	}
	s.next.Store(next)
	truncated := false
	if pos < size {
		l.logger.Warn("truncating corrupt or torn segment tail", "log", l.dir, "segment", s.base,
			"position", pos, "bytes", size-pos, "reason", bad)
		err := s.f.Truncate(pos)
		s.wroteLog()
		if err != nil {
			return false, err
		}
		s.size.Store(pos)
		truncated = true
	}
	if s.maxTs >= 0 {
		s.tidx.maybeAdd(s.maxTs, s.maxOff)
	}
	return truncated, s.writeIndexesLocked()
}

// loadProducerState restores the producer state from the newest usable
// snapshot at or below end and replays the batch headers after it; the
// aborted-transaction entries from there on are replayed too. A snapshot
// above rebuildTxns is passed over (kept), so that the aborted indexes
// from rebuildTxns on are rebuilt from the log.
func (l *Log) loadProducerState(snapshots []int64, end, rebuildTxns int64) error {
	slices.Sort(snapshots)
	slices.Reverse(snapshots)
	from := l.segments()[0].base
	l.pstate = newProducerStateManager()
	for _, off := range snapshots {
		path := segmentName(l.dir, off, snapshotSuffix)
		if off > end {
			_ = l.fs.Remove(path) // beyond a truncated tail
			continue
		}
		if off > rebuildTxns {
			continue
		}
		data, err := readFile(l.fs, path)
		if err != nil {
			l.logger.Warn("producer snapshot unreadable", "log", l.dir, "file", path, "err", err)
			continue
		}
		m := newProducerStateManager()
		got, err := m.readSnapshot(bytes.NewReader(data))
		if err != nil || got != off {
			l.logger.Warn("producer snapshot corrupt, trying an older one", "log", l.dir, "file", path, "offset", got, "err", err)
			continue
		}
		l.pstate = m
		from = max(from, off)
		l.snapSaved, l.snapSavedAt = sha256.Sum256(data), off
		break
	}
	for _, s := range l.segments() {
		if err := s.dropAbortedFrom(from); err != nil {
			return err
		}
	}
	l.txns.reset(l.pstate.firstUnstableOffset())
	return l.replayProducers(from, end)
}

// replayProducers feeds the headers of the batches in [from, end) to the
// producer state.
func (l *Log) replayProducers(from, end int64) error {
	interval := l.config().IndexIntervalBytes
	for _, s := range l.segments() {
		if s.next.Load() <= from || s.base >= end {
			continue
		}
		r := newHeaderReader(s.f, s.size.Load())
		pos := int64(0)
		if from > s.base {
			err := s.ensureIndexes(interval)
			if err == nil {
				pos, err = s.indexPos(r, interval, func(ix *offsetIndex) (int64, int64) { return ix.lookup(from) })
			}
			if err != nil {
				r.free()
				return err
			}
		}
		for {
			h, err := r.at(pos)
			if err == io.EOF {
				break
			}
			if err != nil {
				r.free()
				return fmt.Errorf("segment %d: replay producer state: %w", s.base, err)
			}
			at := pos
			pos += h.Size()
			if h.BaseOffset < from || h.ProducerID < 0 {
				continue
			}
			if err := l.applyProducerBatchLocked(s, &h, at, nil); err != nil {
				r.free()
				return fmt.Errorf("segment %d: replay producer state: %w", s.base, err)
			}
			l.replayedBatches.Add(1)
		}
		r.free()
	}
	return nil
}

// listSnapshots returns the offsets of the producer snapshot files.
func (l *Log) listSnapshots() ([]int64, error) {
	entries, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return nil, err
	}
	var offs []int64
	for _, e := range entries {
		if b, ok := parseSegmentName(e.Name(), snapshotSuffix); ok {
			offs = append(offs, b)
		}
	}
	slices.Sort(offs)
	return offs, nil
}

// writeSnapshotFileLocked writes a producer snapshot and prunes old ones.
// Caller holds ckptMu.
func (l *Log) writeSnapshotFileLocked(offset int64, data []byte) error {
	if err := writeFileAtomic(l.fs, segmentName(l.dir, offset, snapshotSuffix), data); err != nil {
		return err
	}
	l.snapSaved, l.snapSavedAt = sha256.Sum256(data), offset
	l.pruneSnapshotsLocked()
	return nil
}

// pruneSnapshotsLocked removes all but the newest keepSnapshots producer
// snapshots. Caller holds ckptMu.
func (l *Log) pruneSnapshotsLocked() {
	offs, err := l.listSnapshots()
	if err != nil {
		return
	}
	for i := 0; i+keepSnapshots < len(offs); i++ {
		_ = l.fs.Remove(segmentName(l.dir, offs[i], snapshotSuffix))
	}
}

// updateRecoveryPointLocked sets the recovery point to rp, or when rp < 0
// to the base of the first segment not yet fsynced, and persists it when
// it changed. Caller holds ckptMu.
func (l *Log) updateRecoveryPointLocked(rp int64) error {
	if rp < 0 {
		segs := l.segments()
		if len(segs) == 0 {
			return nil
		}
		rp = segs[len(segs)-1].base
		for _, s := range segs[:len(segs)-1] {
			if !s.synced.Load() {
				rp = s.base
				break
			}
		}
	}
	if rp == l.recoveryPoint {
		return nil
	}
	if err := writeOffsetCheckpoint(l.fs, l.dir, recoveryPointName, rp); err != nil {
		return err
	}
	l.recoveryPoint = rp
	return nil
}

// writeOffsetCheckpoint writes "0\n<offset>\n" atomically.
func writeOffsetCheckpoint(fs FS, dir, name string, off int64) error {
	return writeFileAtomic(fs, pathJoin(dir, name), offsetCheckpoint(off))
}

// offsetCheckpoint is the content of an offset checkpoint file.
func offsetCheckpoint(off int64) []byte {
	return []byte("0\n" + strconv.FormatInt(off, 10) + "\n")
}

// readOffsetCheckpoint reads a checkpoint; ok is false when it is missing
// or malformed (logged).
func readOffsetCheckpoint(fs FS, dir, name string, logger *slog.Logger) (int64, bool) {
	b, err := readFile(fs, pathJoin(dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return 0, false
	}
	if err == nil {
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) == 2 && lines[0] == "0" {
			off, perr := strconv.ParseInt(strings.TrimSpace(lines[1]), 10, 64)
			if perr == nil && off >= 0 {
				return off, true
			}
		}
		err = fmt.Errorf("malformed checkpoint %q", b)
	}
	logger.Warn("ignoring checkpoint", "file", pathJoin(dir, name), "err", err)
	return 0, false
}
