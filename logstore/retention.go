package logstore

import (
	"fmt"
	"time"
)

// DeleteRecordsBefore moves the log start offset up to offset (DeleteRecords)
// and deletes the segments entirely below it. offset must not pass the log
// end offset (ErrOffsetOutOfRange); an offset at or below the current start
// changes nothing. It returns the log start offset.
func (l *Log) DeleteRecordsBefore(offset int64) (int64, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed.Load() {
		return -1, ErrClosed
	}
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
// many segments were deleted.
func (l *Log) EnforceRetention(now time.Time) (int, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed.Load() {
		return 0, ErrClosed
	}
	cfg := l.config()
	total := 0
	if cfg.RetentionMs >= 0 {
		nowMs := now.UnixMilli()
		n, err := l.deleteOldestLocked(now, "retention.ms", func(s *segment) bool {
			if err := s.ensureIndexes(cfg.IndexIntervalBytes); err != nil {
				l.logger.Warn("retention: index", "log", l.dir, "segment", s.base, "err", err)
			}
			return nowMs-s.largestTimestamp() > cfg.RetentionMs
		})
		total += n
		if err != nil {
			return total, err
		}
	}
	if cfg.RetentionBytes >= 0 {
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
		if err := l.rollLocked(now); err != nil {
			return 0, err
		}
		segs = l.segments()
	}
	victims := segs[:n]
	l.logger.Info("deleting segments", "log", l.dir, "reason", reason, "count", n,
		"first", victims[0].base, "last", victims[n-1].base)
	return n, l.removeSegmentsLocked(victims, segs[n].base)
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
// moves the log start offset to at least newFirst and unlinks the files.
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
	if err := writeOffsetCheckpoint(l.dir, startOffsetName, start); err != nil {
		return l.fail(fmt.Errorf("log start offset checkpoint: %w", err))
	}
	return nil
}
