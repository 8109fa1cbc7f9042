package logstore

import (
	"bufio"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

// CompactOptions bound one compaction pass (Kafka's log cleaner settings).
type CompactOptions struct {
	// UpTo is the first offset the pass may not touch: the last stable
	// offset (a replica compacts only what every consumer may already
	// read, and no undecided transaction). Only
	// sealed segments that end at or below it are cleaned.
	UpTo int64
	// MinCleanableRatio is min.cleanable.dirty.ratio: the pass does nothing
	// unless the bytes not cleaned before are at least this share of the
	// cleanable bytes.
	MinCleanableRatio float64
	// DeleteRetentionMs is delete.retention.ms: a tombstone (null value)
	// that is its key's latest record is dropped once its batch's timestamp
	// is older than this, so a consumer that reads the log within that time
	// sees the delete.
	DeleteRetentionMs int64
	// MinCompactionLagMs is min.compaction.lag.ms: a segment holding a
	// record younger than this is not cleaned, nor any after it.
	MinCompactionLagMs int64
	// MaxKeys bounds the key map of one pass (Kafka's dedupe buffer); the
	// pass then cleans the segments whose keys fit. 0 means 1<<20.
	MaxKeys int
	// Tiered is set for a log with remote.storage.enable: its tombstones
	// and free transaction markers go only in segments that end at or
	// below TieredCleanedTo, the end of what tiered compaction cleaned
	// in the remote segments (compact_tiered.go).
	Tiered          bool
	TieredCleanedTo int64
}

// CompactStats describe one pass.
type CompactStats struct {
	Segments       int   // segments rewritten
	BytesBefore    int64 // their size before
	BytesAfter     int64 // and after
	RecordsRemoved int64 // superseded records and expired tombstones dropped
}

// ErrCompactAborted is returned when the log changed under a pass (a
// truncation or deletion of a segment being cleaned); nothing was replaced.
var ErrCompactAborted = errors.New("logstore: compaction aborted: the log changed")

const defaultCompactMaxKeys = 1 << 20

type keyHash [md5.Size]byte

// Compact runs one pass of Kafka's log cleaner over the sealed segments
// below opts.UpTo. It removes every record whose key has a later record in
// that range, a key's latest record when it is a tombstone whose segment
// was last written more than opts.DeleteRetentionMs ago, and records
// without a key (written before the topic became compacted).
//
// Offsets never change: a batch keeps its base offset, its last offset
// delta, its producer fields and its codec, and loses only records. A batch
// left with none is dropped, except a producer's last batch in the log (its
// sequence must survive for idempotence), so a segment may end up empty.
// Transactions follow Kafka's rules (compact_txn.go). Each changed segment
// is written beside the old one, fsynced, and renamed over it; readers
// holding the old one keep reading it. The active segment is never touched.
// A pass runs only when enough of the cleanable bytes are new since the
// previous pass (opts.MinCleanableRatio).
func (l *Log) Compact(now time.Time, opts CompactOptions) (CompactStats, error) {
	var st CompactStats
	l.compactMu.Lock()
	defer l.compactMu.Unlock()
	if l.closed.Load() {
		return st, ErrClosed
	}
	if err := l.Failed(); err != nil {
		return st, err
	}
	if l.uncleanable.Load() {
		return st, nil
	}
	if opts.MaxKeys <= 0 {
		opts.MaxKeys = defaultCompactMaxKeys
	}
	cfg := l.config()
	interval := cfg.IndexIntervalBytes
	segs := l.cleanable(now, opts)
	held := segs
	defer func() {
		for _, s := range held {
			s.unref()
		}
	}()
	if len(segs) == 0 {
		return st, nil
	}
	var dirty, total int64
	for _, s := range segs {
		sz := s.size.Load()
		total += sz
		if s.next.Load() > l.cleanedTo.Load() {
			dirty += sz
		}
	}
	if total == 0 || float64(dirty)/float64(total) < opts.MinCleanableRatio {
		return st, nil
	}

	gen := l.truncations.Load()
	// The aborted transactions of the range (compact_txn.go).
	aborted := l.AbortedTxns(segs[0].base, segs[len(segs)-1].next.Load())
	keys, mapped, err := l.mapKeys(segs, opts.MaxKeys, int(cfg.MaxUncompressedBytes), newTxnPass(aborted))
	if err != nil {
		return st, l.markUncleanable(err)
	}
	segs = segs[:mapped]
	producerLast := l.producerTails()
	// A tombstone (and a marker whose transaction is gone) goes
	// delete.retention.ms after its segment was last written (Kafka's rule
	// before KIP-534), not by the producer's clock.
	horizon := now.Add(-time.Duration(opts.DeleteRetentionMs) * time.Millisecond)
	txns := newTxnPass(aborted)
	for _, s := range segs {
		size := s.size.Load()
		fi, err := s.f.Stat()
		if err != nil {
			return st, fmt.Errorf("%w: %v", ErrStorage, err)
		}
		tombstonesGo := fi.ModTime().Before(horizon) && (!opts.Tiered || s.next.Load() <= opts.TieredCleanedTo)
		tmp := segmentName(l.dir, s.base, logSuffix) + ".tmp" // Open deletes leftovers
		c := cleaning{keys: keys, producerLast: producerLast, tombstonesGo: tombstonesGo,
			maxUncompressed: int(cfg.MaxUncompressedBytes), txns: txns}
		newSize, removed, err := c.writeCleaned(tmp, s, size)
		if err != nil {
			return st, l.markUncleanable(err)
		}
		if removed == 0 {
			continue
		}
		// The cleaned file keeps the old one's modification time: the
		// tombstone clock above, and time retention of an emptied segment.
		if err := l.fs.Chtimes(tmp, fi.ModTime(), fi.ModTime()); err != nil {
			_ = l.fs.Remove(tmp)
			return st, fmt.Errorf("%w: %v", ErrStorage, err)
		}
		if err := l.replaceSegment(s, size, tmp, gen, interval, c.aborted); err != nil {
			return st, err
		}
		st.Segments++
		st.BytesBefore += size
		st.BytesAfter += newSize
		st.RecordsRemoved += removed
	}
	cleaned := segs[len(segs)-1].next.Load()
	l.cleanedTo.Store(cleaned)
	// Kafka's cleaner-offset-checkpoint: a restart does not re-read what
	// is clean. Losing it only costs one pass over the whole log.
	l.ckptMu.Lock()
	err = writeOffsetCheckpoint(l.fs, l.dir, cleanerOffsetName, cleaned)
	l.ckptMu.Unlock()
	if err != nil {
		l.logger.Warn("cleaner checkpoint", "log", l.dir, "err", err)
	}
	if st.Segments > 0 {
		l.logger.Debug("compacted log", "log", l.dir, "segments", st.Segments,
			"bytes_before", st.BytesBefore, "bytes_after", st.BytesAfter, "records_removed", st.RecordsRemoved)
	}
	return st, nil
}

// markUncleanable stops later passes over a log holding a batch the
// cleaner cannot decode (Kafka marks such a partition uncleanable until
// restart); err is returned for the one report.
func (l *Log) markUncleanable(err error) error {
	if errors.Is(err, ErrInvalidRecord) || errors.Is(err, ErrCorruptBatch) || errors.Is(err, ErrCorruptMessage) ||
		errors.Is(err, ErrUnsupportedMagic) || errors.Is(err, ErrUnsupportedCompression) {
		l.uncleanable.Store(true)
		return fmt.Errorf("%w; the log is left uncompacted until restart", err)
	}
	return err
}

// cleanable returns, referenced, the sealed segments a pass may clean,
// oldest first: those ending at or below opts.UpTo, up to the first that
// holds a record younger than the compaction lag (or that retention just
// deleted).
func (l *Log) cleanable(now time.Time, opts CompactOptions) []*segment {
	all := l.segments()
	interval := l.config().IndexIntervalBytes
	var out []*segment
	for _, s := range all[:max(len(all)-1, 0)] {
		if s.next.Load() > opts.UpTo || !s.tryRef() {
			break
		}
		if opts.MinCompactionLagMs > 0 && now.UnixMilli()-s.largestTimestamp(interval) < opts.MinCompactionLagMs {
			s.unref()
			break
		}
		out = append(out, s)
	}
	return out
}

// forEachBatch calls fn with every batch of s below size, in order, after
// checking its CRC.
func forEachBatch(s *segment, size int64, fn func(h *BatchHeader, b []byte) error) error {
	r := newHeaderReader(s.f, size)
	defer r.free()
	for pos := int64(0); ; {
		h, err := r.at(pos)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: segment %d at %d: %v", ErrStorage, s.base, pos, err)
		}
		b, err := s.readBatchAt(&h, pos)
		if err != nil {
			return err
		}
		// Never launder a corrupt batch into a new one with a fresh CRC.
		if err := CheckBatchCRC(b); err != nil {
			return fmt.Errorf("segment %d, batch %d: %w", s.base, h.BaseOffset, err)
		}
		if err := fn(&h, b); err != nil {
			return fmt.Errorf("segment %d, batch %d: %w", s.base, h.BaseOffset, err)
		}
		pos += h.Size()
	}
}

// mapKeys maps every key of segs to its last offset, segment by segment,
// and stops after the segment that fills the map: mapped is how many
// segments it read. A key last seen in segment k may have later records in
// unread segments; those are not cleaned by this pass, so the map is never
// wrong about what it covers. Records of aborted transactions (txns) are
// not mapped.
func (l *Log) mapKeys(segs []*segment, maxKeys, maxUncompressed int, txns *txnPass) (map[keyHash]int64, int, error) {
	keys := make(map[keyHash]int64)
	for i, s := range segs {
		err := forEachBatch(s, s.size.Load(), func(h *BatchHeader, b []byte) error {
			if h.IsControl() {
				txns.control(h, b)
				return nil
			}
			if txns.data(h) {
				return nil
			}
			return ForEachRecordLimit(b, maxUncompressed, func(r Record) bool {
				if r.Key != nil {
					keys[md5.Sum(r.Key)] = r.Offset
				}
				return true
			})
		})
		if err != nil {
			return nil, 0, err
		}
		if len(keys) >= maxKeys {
			return keys, i + 1, nil
		}
	}
	return keys, len(segs), nil
}

// producerTails returns what compaction must keep of each producer.
func (l *Log) producerTails() map[int64]producerTail {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	out := make(map[int64]producerTail, len(l.pstate.producers))
	for id, e := range l.pstate.producers {
		t := producerTail{lastData: -1, epoch: e.epoch}
		if e.n > 0 {
			t.lastData = e.batches[e.n-1].lastOffset
		}
		out[id] = t
	}
	return out
}

// cleaning is one segment's cleaning in a pass: the pass's key map,
// producers and transactions, and what the segment's .txnindex keeps.
type cleaning struct {
	keys            map[keyHash]int64
	producerLast    map[int64]producerTail
	tombstonesGo    bool
	maxUncompressed int
	txns            *txnPass     // shared by the pass's segments, in order
	aborted         []AbortedTxn // the cleaned segment's .txnindex
}

// writeCleaned writes the cleaned first size bytes of s to a new file at
// path, fsynced, and returns its size and how many records it removed;
// with none removed it leaves no file.
func (c *cleaning) writeCleaned(path string, s *segment, size int64) (int64, int64, error) {
	f, err := s.fs.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %v", ErrStorage, err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	removed, written, err := c.cleanSegment(w, s, size)
	if err == nil {
		err = w.Flush()
	}
	if err == nil && removed > 0 {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil || removed == 0 {
		_ = s.fs.Remove(path)
		if err != nil && !errors.Is(err, ErrStorage) && !errors.Is(err, ErrInvalidRecord) && !errors.Is(err, ErrCorruptBatch) {
			err = fmt.Errorf("%w: %v", ErrStorage, err)
		}
		return 0, 0, err
	}
	return written, removed, nil
}

// cleanSegment writes the cleaned first size bytes of s to w and returns
// how many records it removed and how many bytes it wrote.
func (c *cleaning) cleanSegment(w io.Writer, s *segment, size int64) (int64, int64, error) {
	var removed, written int64
	put := func(b []byte) error {
		n, err := w.Write(b)
		written += int64(n)
		return err
	}
	err := forEachBatch(s, size, func(h *BatchHeader, b []byte) error {
		n, err := c.cleanBatch(h, b, put)
		removed += n
		return err
	})
	return removed, written, err
}

// cleanBatch passes batch b (header h), cleaned, to put (or nothing, when
// none of it stays), and returns how many records it removed.
func (c *cleaning) cleanBatch(h *BatchHeader, b []byte, put func([]byte) error) (int64, error) {
	tail, known := c.producerLast[h.ProducerID]
	last := h.ProducerID >= 0 && known && tail.keeps(h)
	if h.IsControl() {
		free, keep := c.txns.control(h, b)
		if keep != nil {
			c.aborted = append(c.aborted, *keep)
		}
		if last || !free || !c.tombstonesGo {
			return 0, put(b)
		}
		return int64(h.NumRecords), nil
	}
	if c.txns.data(h) {
		// An aborted transaction's records go; its producer's last
		// batch stays, empty, for the producer's sequence.
		if last {
			return int64(h.NumRecords), put(emptyBatch(h))
		}
		return int64(h.NumRecords), nil
	}
	var kept []Record
	n := int32(0)
	err := ForEachRecordLimit(b, c.maxUncompressed, func(r Record) bool {
		n++
		if r.Key == nil {
			return true // no key, nothing to compact it by: Kafka drops it too
		}
		if latest, ok := c.keys[md5.Sum(r.Key)]; ok && latest > r.Offset {
			return true // superseded
		}
		if r.Value == nil && c.tombstonesGo {
			return true // an expired tombstone
		}
		kept = append(kept, cloneRecord(r))
		return true
	})
	if err != nil {
		return 0, err
	}
	switch {
	case len(kept) == int(n):
		return 0, put(b)
	case len(kept) == 0 && last:
		// The producer's last batch carries its sequence: keep it whole.
		return 0, put(b)
	case len(kept) == 0:
		return int64(n), nil
	}
	nb, err := EncodeBatch(BatchSpec{
		BaseOffset:           h.BaseOffset,
		PartitionLeaderEpoch: h.PartitionLeaderEpoch,
		Codec:                h.Codec(),
		ProducerID:           h.ProducerID,
		ProducerEpoch:        h.ProducerEpoch,
		BaseSequence:         h.BaseSequence,
		Transactional:        h.IsTransactional(),
		LogAppendTime:        h.LogAppendTime(),
		AppendTime:           h.MaxTimestamp,
		KeepOffsets:          true,
	}, kept)
	if err != nil {
		return 0, err
	}
	// The batch keeps its last offset (and so its last sequence), as
	// Kafka's cleaner does, though its last record may be gone.
	putLastOffsetDelta(nb, h.LastOffsetDelta)
	return int64(int(n) - len(kept)), put(nb)
}

// putLastOffsetDelta rewrites a batch's last offset delta and its CRC.
func putLastOffsetDelta(b []byte, delta int32) {
	b[23], b[24], b[25], b[26] = byte(delta>>24), byte(delta>>16), byte(delta>>8), byte(delta)
	putCRC(b)
}

// replaceSegment renames the fsynced file tmp over s (whose content was
// size bytes) and swaps it in under the append lock, unless the log was
// truncated since the pass began (generation gen): a truncation may have
// removed the later records that made older ones look superseded.
//
// The new segment's indexes are built in memory before the lock. Under it
// the old index files go, the rename happens and the directory is fsynced;
// the new index files are written after it and after the lock. A crash
// therefore leaves the old .log with its indexes or none, or the new .log
// with none or its own: never a .log with another file's indexes.
func (l *Log) replaceSegment(s *segment, size int64, tmp string, gen int64, interval int32, aborted []AbortedTxn) error {
	ns, err := openCleaned(l.fs, l.dir, s.base, tmp, interval)
	if err != nil {
		_ = l.fs.Remove(tmp)
		return err
	}
	ns.aborted = aborted
	if err := l.swapSegment(s, ns, size, tmp, gen, interval); err != nil {
		ns.unref()
		return err
	}
	ns.mu.Lock()
	err = ns.writeIndexesLocked()
	ns.mu.Unlock()
	if err == nil {
		err = ns.syncFiles()
	}
	if err == nil {
		err = l.fs.SyncDir(l.dir)
	}
	if err != nil {
		// The indexes are rebuilt from the .log when missing.
		l.logger.Warn("writing a compacted segment's indexes", "log", l.dir, "segment", s.base, "err", err)
	}
	return nil
}

// openCleaned opens the cleaned file tmp as the segment at base, its
// indexes built in memory.
func openCleaned(fs FS, dir string, base int64, tmp string, interval int32) (*segment, error) {
	f, err := fs.OpenFile(tmp, os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStorage, err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("%w: %v", ErrStorage, err)
	}
	ns := newSegmentStruct(fs, dir, base, f)
	ns.size.Store(st.Size())
	ns.synced.Store(true)
	ns.mu.Lock()
	err = ns.rebuildIndexesLocked(interval)
	ns.mu.Unlock()
	if err != nil {
		ns.unref()
		return nil, fmt.Errorf("%w: %v", ErrStorage, err)
	}
	return ns, nil
}

// swapSegment puts ns in the place of s under the append lock (see
// replaceSegment); on error nothing was swapped and tmp is gone.
func (l *Log) swapSegment(s, ns *segment, size int64, tmp string, gen int64, interval int32) error {
	if err := l.lockAppend(); err != nil {
		_ = l.fs.Remove(tmp)
		return err
	}
	defer l.appendMu.Unlock()
	segs := l.segments()
	i := slices.Index(segs, s)
	if i < 0 || i == len(segs)-1 || s.size.Load() != size || l.truncations.Load() != gen {
		_ = l.fs.Remove(tmp)
		return ErrCompactAborted
	}
	// Readers of the old segment must never load the new index files (they
	// share its name): give it its own indexes in memory first.
	if err := s.ensureIndexes(interval); err != nil {
		_ = l.fs.Remove(tmp)
		return fmt.Errorf("%w: %v", ErrStorage, err)
	}
	for _, suf := range []string{indexSuffix, timeIndexSuffix} {
		if err := l.fs.Remove(segmentName(l.dir, s.base, suf)); err != nil && !errors.Is(err, os.ErrNotExist) {
			_ = l.fs.Remove(tmp)
			return l.fail(fmt.Errorf("%w: %v", ErrStorage, err))
		}
	}
	if err := l.fs.Rename(tmp, segmentName(l.dir, s.base, logSuffix)); err != nil {
		_ = l.fs.Remove(tmp)
		return l.fail(fmt.Errorf("%w: %v", ErrStorage, err))
	}
	// The rename and the removals are durable before any new index file.
	if err := l.fs.SyncDir(l.dir); err != nil {
		return l.fail(fmt.Errorf("%w: %v", ErrStorage, err))
	}
	ns.next.Store(s.next.Load())
	ns.created = s.created
	// The cleaned segment's .txnindex keeps the entries of the aborted
	// transactions that still have records. A crash before this write
	// (or a failed one, which leaves the old file) leaves the old entries,
	// a superset, which readers match by producer and offsets.
	ns.mu.Lock()
	if err := ns.writeTxnIndexLocked(); err != nil {
		l.logger.Warn("writing a compacted segment's transaction index", "log", l.dir, "segment", s.base, "err", err)
	}
	ns.mu.Unlock()
	nsegs := slices.Clone(segs)
	nsegs[i] = ns
	l.setSegments(nsegs)
	s.unref() // the list's reference; readers keep the old file open
	return nil
}
