package logstore

import (
	"fmt"
	"io"
	"time"
)

// DeleteRecordsBefore moves the log start offset up to offset (DeleteRecords)
// and deletes the segments entirely below it. offset must not pass the log
// end offset (ErrOffsetOutOfRange); an offset at or below the current start
// changes nothing. It returns the log start offset.
func (l *Log) DeleteRecordsBefore(offset int64) (int64, error) {
	if err := l.lockAppend(); err != nil {
		return -1, err
	}
	defer l.appendMu.Unlock()
	end := l.end.Load()
	if offset > end || offset < 0 {
		return l.start.Load(), fmt.Errorf("%w: delete before %d, log end %d", ErrOffsetOutOfRange, offset, end)
	}
	if offset <= l.start.Load() {
		return l.start.Load(), nil
	}
	if err := l.setStartLocked(offset); err != nil {
		return l.start.Load(), err
	}
	if _, err := l.deleteBelowStartLocked(); err != nil {
		return l.start.Load(), err
	}
	return l.start.Load(), nil
}

// EnforceRetention deletes the oldest segments whose largest timestamp is
// older than retention.ms, then the oldest whole segments that keep the log
// above retention.bytes, then the segments entirely below the log start
// offset, as Kafka's retention task does. The active segment goes too when
// it qualifies and is not empty (a new one is rolled first). It returns how
// many segments were deleted. Under remote.storage.enable only those
// below the log start offset go (see Config.RemoteStorage). It also forgets producers idle for longer
// than producer.id.expiration.ms.
func (l *Log) EnforceRetention(now time.Time) (int, error) {
	if err := l.lockAppend(); err != nil {
		return 0, err
	}
	defer l.appendMu.Unlock()
	cfg := l.config()
	total := 0
	if cfg.RetentionMs >= 0 && !cfg.RemoteStorage {
		nowMs := now.UnixMilli()
		n, err := l.deleteOldestLocked(now, "retention.ms", func(s *segment) bool {
			return nowMs-s.largestTimestamp(cfg.IndexIntervalBytes) > cfg.RetentionMs
		})
		total += n
		if err != nil {
			return total, err
		}
	}
	if cfg.RetentionBytes >= 0 && !cfg.RemoteStorage {
		diff := l.Size() - cfg.RetentionBytes
		n, err := l.deleteOldestLocked(now, "retention.bytes", func(s *segment) bool {
			if sz := s.size.Load(); diff-sz >= 0 {
				diff -= sz
				return true
			}
			return false
		})
		total += n
		if err != nil {
			return total, err
		}
	}
	n, err := l.deleteBelowStartLocked()
	if cfg.ProducerIDExpirationMs > 0 {
		if gone := l.pstate.expire(now.UnixMilli(), cfg.ProducerIDExpirationMs); gone > 0 {
			l.logger.Debug("expired producer ids", "log", l.dir, "count", gone)
		}
	}
	return total + n, err
}

// deleteOldestLocked deletes segments from the oldest while pred holds,
// rolling first when that takes the (non-empty) active segment too.
func (l *Log) deleteOldestLocked(now time.Time, reason string, pred func(*segment) bool) (int, error) {
	segs := l.segments()
	n := 0
	for n < len(segs) {
		s := segs[n]
		if s == l.active && s.size.Load() == 0 {
			break
		}
		if !pred(s) {
			break
		}
		n++
	}
	if n == 0 {
		return 0, nil
	}
	if n == len(segs) {
		if err := l.rollLocked(l.end.Load(), now); err != nil {
			return 0, err
		}
		segs = l.segments()
	}
	victims := segs[:n]
	l.logger.Info("deleting segments", "log", l.dir, "reason", reason, "count", n,
		"first", victims[0].base, "last", victims[n-1].base)
	return n, l.removeSegmentsLocked(victims, segs[n].base)
}

// DeleteLocalSegments is tiered storage's local retention
// (local.retention.ms and local.retention.bytes, -1 for none), Kafka's
// UnifiedLog.deletableSegments for a tiered log: from the oldest, it
// deletes the segments whose largest timestamp is older than retentionMs
// or that keep the local segments above retentionBytes, but only segments
// whose every offset is below copiedEnd (already in the remote log). The
// active segment is never deleted, but when every segment before it goes
// and it is itself past local retention, not empty and ends at or below
// rollUpTo (the high watermark; -1: never), it is rolled, as Kafka 4.4
// does to make it eligible for deletion: the next copy takes it and the
// next pass deletes it, so that an idle partition ends up all remote.
// The log start offset stays: the deleted offsets are read from the
// remote log (LocalStartOffset moves). It returns how many segments went.
func (l *Log) DeleteLocalSegments(now time.Time, copiedEnd, rollUpTo, retentionMs, retentionBytes int64) (int, error) {
	if err := l.lockAppend(); err != nil {
		return 0, err
	}
	defer l.appendMu.Unlock()
	interval := l.config().IndexIntervalBytes
	segs := l.segments()
	diff := l.Size() - retentionBytes
	expired := func(s *segment) bool {
		return retentionMs >= 0 && now.UnixMilli()-s.largestTimestamp(interval) > retentionMs ||
			retentionBytes >= 0 && diff-s.size.Load() >= 0
	}
	n := 0
	for ; n+1 < len(segs) && segs[n+1].base <= copiedEnd; n++ {
		if !expired(segs[n]) {
			break
		}
		diff -= segs[n].size.Load()
	}
	if n == len(segs)-1 && l.active.size.Load() > 0 && rollUpTo >= l.end.Load() && expired(l.active) {
		l.logger.Info("rolling the active segment past local retention", "log", l.dir, "base", l.active.base)
		if err := l.rollLocked(l.end.Load(), now); err != nil {
			return 0, err
		}
	}
	if n == 0 {
		return 0, nil
	}
	l.logger.Info("deleting local segments copied to remote storage", "log", l.dir, "count", n,
		"first", segs[0].base, "last", segs[n-1].base)
	return n, l.removeSegmentsLocked(segs[:n], -1)
}

// deleteBelowStartLocked deletes the sealed segments whose every offset is
// below the log start offset.
func (l *Log) deleteBelowStartLocked() (int, error) {
	segs := l.segments()
	start := l.start.Load()
	n := 0
	for n+1 < len(segs) && segs[n+1].base <= start {
		n++
	}
	if n == 0 {
		return 0, nil
	}
	return n, l.removeSegmentsLocked(segs[:n], segs[n].base)
}

// removeSegmentsLocked drops the oldest segments (a prefix of the list),
// moves the log start offset to at least newFirst (-1: it stays, the
// segments being remote) and unlinks the files.
// Readers holding the segments keep them open until they release them.
func (l *Log) removeSegmentsLocked(victims []*segment, newFirst int64) error {
	segs := l.segments()
	l.setSegments(append([]*segment(nil), segs[len(victims):]...))
	var err error
	if newFirst > l.start.Load() {
		err = l.setStartLocked(newFirst)
	}
	for _, s := range victims {
		if rerr := s.remove(); rerr != nil && err == nil {
			err = fmt.Errorf("%w: %v", ErrStorage, rerr)
		}
		s.unref()
	}
	l.ckptMu.Lock()
	defer l.ckptMu.Unlock()
	if rerr := l.updateRecoveryPointLocked(-1); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

// setStartLocked publishes and persists a new log start offset and trims
// the epoch cache. Caller holds appendMu.
func (l *Log) setStartLocked(start int64) error {
	l.start.Store(start)
	if l.epochs.truncateFromStart(start) {
		if err := l.epochs.persist(); err != nil {
			l.logger.Warn("leader epoch checkpoint", "log", l.dir, "err", err)
		}
	}
	l.ckptMu.Lock()
	defer l.ckptMu.Unlock()
	if err := writeOffsetCheckpoint(l.fs, l.dir, startOffsetName, start); err != nil {
		return l.fail(fmt.Errorf("log start offset checkpoint: %w", err))
	}
	l.startSaved = start
	return nil
}

// TruncateTo cuts the log back so that it ends at offset (a follower
// dropping a divergent tail, KIP-101). The cut falls on a batch boundary:
// a batch containing offset goes whole, so the new end offset, which is
// returned, can be below offset. Segments beyond go, the epoch cache and
// the producer state follow the new end. An offset at or past the end
// keeps every record and drops only epochs that start at the end; one below the log start empties the log as
// TruncateFullyAndStartAt does. Outstanding reads of the cut bytes may
// come back short.
func (l *Log) TruncateTo(offset int64) (int64, error) {
	if err := l.lockAppend(); err != nil {
		return -1, err
	}
	defer l.appendMu.Unlock()
	end := l.end.Load()
	if offset >= end {
		// No record goes, but an epoch that starts at the log end goes
		// (Kafka's UnifiedLog.truncateTo): a replica that became leader
		// and appended nothing before the next leader was elected holds
		// an entry for an epoch the new leader never knew, and would
		// report it as its last fetched epoch for ever.
		//
		// The checkpoint is written at the next flush, roll or clean
		// close, as Kafka flushes a truncation of its epoch cache in the
		// background (truncateFromEndAsyncFlush): a broker whose
		// leaderships move away in a controlled shutdown does this for
		// each, in its fetchers, and a write (with two fsyncs before) each
		// held up the fetcher that its new role waits for. An entry a
		// crash brings back starts at or past the recovery point, where
		// recovery rebuilds the cache from the batches (load) and Open
		// drops what starts at the log end, as Kafka's LogLoader does.
		if l.epochs.truncateFromEnd(end) {
			l.epochs.deferWrite()
		}
		return end, nil
	}
	segs := l.segments()
	if offset < l.start.Load() || offset < segs[0].base {
		return offset, l.truncateFullyLocked(max(offset, 0))
	}
	i := len(segs) - 1
	for segs[i].base > offset {
		i--
	}
	s := segs[i]
	l.setSegments(append([]*segment(nil), segs[:i+1]...))
	for _, v := range segs[i+1:] {
		if err := v.remove(); err != nil {
			l.logger.Warn("truncate: remove segment", "log", l.dir, "segment", v.base, "err", err)
		}
		v.unref()
	}
	l.active = s
	interval := l.config().IndexIntervalBytes
	if err := s.ensureIndexes(interval); err != nil {
		return -1, l.fail(err)
	}

	r := newHeaderReader(s.f, s.size.Load())
	pos, err := s.indexPos(r, interval, func(ix *offsetIndex) (int64, int64) { return ix.lookup(offset) })
	if err != nil {
		r.free()
		return -1, l.fail(err)
	}
	for {
		h, err := r.at(pos)
		if err == io.EOF || (err == nil && h.LastOffset() >= offset) {
			break
		}
		if err != nil {
			r.free()
			return -1, l.fail(fmt.Errorf("segment %d: truncate: %w", s.base, err))
		}
		pos += h.Size()
	}
	r.free()
	err = s.f.Truncate(pos)
	s.wroteLog()
	if err != nil {
		return -1, l.fail(fmt.Errorf("segment %d: truncate: %w", s.base, err))
	}
	s.mu.Lock()
	s.size.Store(pos)
	err = s.rebuildIndexesLocked(interval)
	s.mu.Unlock()
	if err != nil {
		return -1, l.fail(err)
	}
	s.synced.Store(false)
	newEnd := s.next.Load()
	l.end.Store(newEnd)
	if l.start.Load() > newEnd {
		if err := l.setStartLocked(newEnd); err != nil {
			return newEnd, err
		}
	}
	l.logger.Info("truncated log", "log", l.dir, "to", offset, "end", newEnd, "was", end)
	return newEnd, l.afterTruncateLocked(newEnd)
}

// TruncateFullyAndStartAt deletes every segment and restarts the log empty
// at offset, which becomes both its start and end offset (a follower whose
// fetch offset fell below the leader's log start).
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	if err := l.lockAppend(); err != nil {
		return err
	}
	defer l.appendMu.Unlock()
	if offset < 0 {
		return fmt.Errorf("%w: %d", ErrOffsetOutOfRange, offset)
	}
	return l.truncateFullyLocked(offset)
}

func (l *Log) truncateFullyLocked(offset int64) error {
	segs := l.segments()
	var keep *segment
	if last := segs[len(segs)-1]; last.base == offset && last.size.Load() == 0 {
		keep = last
	}
	for _, v := range segs {
		if v == keep {
			continue
		}
		if err := v.remove(); err != nil {
			l.logger.Warn("truncate: remove segment", "log", l.dir, "segment", v.base, "err", err)
		}
		v.unref()
	}
	if keep == nil {
		ns, err := createSegment(l.fs, l.dir, offset)
		if err != nil {
			return l.fail(fmt.Errorf("truncate fully: %w", err))
		}
		keep = ns
	}
	l.setSegments([]*segment{keep})
	l.active = keep
	l.end.Store(offset)
	if err := l.setStartLocked(offset); err != nil {
		return err
	}
	l.epochs.clear()
	if err := l.epochs.persist(); err != nil {
		l.logger.Warn("leader epoch checkpoint", "log", l.dir, "err", err)
	}
	l.logger.Info("truncated log fully", "log", l.dir, "start", offset)
	return l.afterTruncateLocked(offset)
}

// afterTruncateLocked brings the epoch cache, the producer state, the
// snapshots and the recovery point in line with a new, lower end offset.
func (l *Log) afterTruncateLocked(end int64) error {
	l.truncations.Add(1)
	if l.cleanedTo.Load() > end {
		l.cleanedTo.Store(end) // the checkpoint follows at the next pass
	}
	if l.epochs.truncateFromEnd(end) {
		if err := l.epochs.persist(); err != nil {
			l.logger.Warn("leader epoch checkpoint", "log", l.dir, "err", err)
		}
	}
	l.wg.Wait() // a snapshot written by a background roll must not land after this
	l.ckptMu.Lock()
	defer l.ckptMu.Unlock()
	snaps, err := l.listSnapshots()
	if err != nil {
		return l.fail(err)
	}
	if err := l.loadProducerState(snaps, end, end); err != nil {
		return l.fail(err)
	}
	return l.updateRecoveryPointLocked(-1)
}

// StartAtRemote empties the log and restarts it at offset at, below which
// its records are in tiered storage only, as Kafka's follower rebuilds its
// state when its leader answers OFFSET_MOVED_TO_TIERED_STORAGE: the log
// start offset becomes logStart (at most at), the leader epochs are those
// of epochCheckpoint (a leader-epoch-checkpoint in Kafka's text format,
// copied with the remote segment that ends at at) that start below at,
// and the producer state is snapshot (the producer snapshot as of at,
// copied with that segment; nil, or one not as of at, for none).
func (l *Log) StartAtRemote(logStart, at int64, epochCheckpoint, snapshot []byte) error {
	if logStart < 0 || logStart > at {
		return fmt.Errorf("%w: log start %d, restart at %d", ErrOffsetOutOfRange, logStart, at)
	}
	entries, err := parseEpochCheckpoint(epochCheckpoint)
	if err != nil {
		return fmt.Errorf("%w: remote leader epochs: %v", ErrCorruptBatch, err)
	}
	if snapshot != nil {
		if _, last, err := parseSnapshot(snapshot); err != nil || last != at {
			l.logger.Warn("remote producer snapshot unusable: producer state starts empty", "log", l.dir, "at", at, "snapshot_offset", last, "err", err)
			snapshot = nil
		}
	}
	if err := l.lockAppend(); err != nil {
		return err
	}
	defer l.appendMu.Unlock()
	if snapshot != nil {
		// Written first: emptying the log loads the newest snapshot at
		// or below its new end.
		l.ckptMu.Lock()
		err := writeFileAtomic(l.fs, segmentName(l.dir, at, snapshotSuffix), snapshot)
		l.ckptMu.Unlock()
		if err != nil {
			return l.fail(fmt.Errorf("producer snapshot: %w", err))
		}
	}
	if err := l.truncateFullyLocked(at); err != nil {
		return err
	}
	for _, e := range entries {
		if e.start < at {
			l.epochs.assign(e.epoch, e.start)
		}
	}
	if err := l.setStartLocked(logStart); err != nil {
		return err
	}
	if err := l.epochs.persist(); err != nil {
		l.logger.Warn("leader epoch checkpoint", "log", l.dir, "err", err)
	}
	l.logger.Info("log restarted above its remote segments", "log", l.dir, "start", logStart, "local_start", at)
	return nil
}
