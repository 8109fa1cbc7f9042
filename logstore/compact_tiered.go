package logstore

import (
	"bufio"
	"crypto/md5"
	"fmt"
	"io"
	"time"
)

// Compaction of a tiered log (remote.storage.enable with
// cleanup.policy=compact), beside Log.Compact: the oldest segments of such
// a log are kept elsewhere (tiered storage's remote segments), read here
// as streams of batches, and rewritten by their keeper. A TieredCompaction
// maps the keys of those segments, oldest first, then of the log's own
// cleanable segments above them, and cleans each outside segment with
// Log.Compact's rules (compact_txn.go for transactions): the same map
// covers the whole log, so a record is removed wherever it lies once a
// later record of its key is below the map's end.
//
// The local cleaner of a tiered log drops tombstones and markers only in
// segments that end at or below CompactOptions.TieredCleanedTo: the end of
// what a tiered pass has cleaned outside. A tombstone dropped locally has
// then had its older records removed outside too; without that bound a
// key deleted locally would come back from a remote segment.

// TieredCompaction is one pass over a tiered log: Map then MapLocal, then
// Clean for each outside segment, in offset order.
type TieredCompaction struct {
	l               *Log
	opts            CompactOptions
	keys            map[keyHash]int64
	mapTxns         *txnPass
	cleanTxns       *txnPass
	producerLast    map[int64]producerTail
	maxUncompressed int
	maxBatch        int64
}

// TieredCleaned is what Clean did to one outside segment.
type TieredCleaned struct {
	Removed int64 // records removed
	Written int64 // bytes written
	// Aborted is the cleaned segment's transaction index: the aborted
	// transactions whose marker it holds and that still have records.
	Aborted []AbortedTxn
}

// NewTieredCompaction begins a pass over l and the segments kept outside
// it, with the aborted transactions of the whole range (those of the
// outside segments' transaction indexes, then l.AbortedTxns above them).
func (l *Log) NewTieredCompaction(opts CompactOptions, aborted []AbortedTxn) *TieredCompaction {
	if opts.MaxKeys <= 0 {
		opts.MaxKeys = defaultCompactMaxKeys
	}
	cfg := l.config()
	return &TieredCompaction{l: l, opts: opts, keys: map[keyHash]int64{}, mapTxns: newTxnPass(aborted), cleanTxns: newTxnPass(aborted),
		producerLast: l.producerTails(), maxUncompressed: int(cfg.MaxUncompressedBytes),
		maxBatch: max(int64(cfg.MaxMessageBytes), 1<<20) + BatchHeaderSize}
}

// Full reports whether the key map reached CompactOptions.MaxKeys: the
// pass cleans no segment beyond the last one mapped.
func (c *TieredCompaction) Full() bool { return len(c.keys) >= c.opts.MaxKeys }

// Map maps the keys of an outside segment's batches read from r, those
// with offsets in [from, to) (a segment's object may begin with batches
// of the one before it, which are not its to serve).
func (c *TieredCompaction) Map(r io.Reader, from, to int64) error {
	return readBatches(r, c.maxBatch, func(h *BatchHeader, b []byte) error {
		if h.LastOffset() < from || h.BaseOffset >= to {
			return nil
		}
		return c.mapBatch(h, b)
	})
}

func (c *TieredCompaction) mapBatch(h *BatchHeader, b []byte) error {
	if h.IsControl() {
		c.mapTxns.control(h, b)
		return nil
	}
	if c.mapTxns.data(h) {
		return nil
	}
	return ForEachRecordLimit(b, c.maxUncompressed, func(r Record) bool {
		if r.Key != nil {
			c.keys[md5.Sum(r.Key)] = r.Offset
		}
		return true
	})
}

// MapLocal maps the keys of the log's own cleanable segments (those
// Log.Compact would clean at now, below CompactOptions.UpTo), from the
// batch holding from on, and returns the end of what it mapped (from when
// nothing). It stops after the segment that fills the map.
func (c *TieredCompaction) MapLocal(now time.Time, from int64) (int64, error) {
	segs := c.l.cleanable(now, c.opts)
	defer func() {
		for _, s := range segs {
			s.unref()
		}
	}()
	end := from
	for _, s := range segs {
		if s.next.Load() <= from {
			continue
		}
		if c.Full() {
			break
		}
		err := forEachBatch(s, s.size.Load(), func(h *BatchHeader, b []byte) error {
			if h.LastOffset() < from {
				return nil
			}
			return c.mapBatch(h, b)
		})
		if err != nil {
			return end, c.l.markUncleanable(err)
		}
		end = s.next.Load()
	}
	return end, nil
}

// Clean writes to w the batches of an outside segment read from r,
// cleaned by the map; those outside [from, to) are written as they are.
// tombstonesGo says whether its tombstones and free markers are past
// delete.retention.ms. Segments are cleaned in offset order, each once.
func (c *TieredCompaction) Clean(r io.Reader, w io.Writer, from, to int64, tombstonesGo bool) (TieredCleaned, error) {
	cl := cleaning{keys: c.keys, producerLast: c.producerLast, tombstonesGo: tombstonesGo,
		maxUncompressed: c.maxUncompressed, txns: c.cleanTxns}
	var out TieredCleaned
	bw := bufio.NewWriterSize(w, 1<<16)
	put := func(b []byte) error {
		n, err := bw.Write(b)
		out.Written += int64(n)
		return err
	}
	err := readBatches(r, c.maxBatch, func(h *BatchHeader, b []byte) error {
		if h.LastOffset() < from || h.BaseOffset >= to {
			return put(b)
		}
		n, err := cl.cleanBatch(h, b, put)
		out.Removed += n
		return err
	})
	if err == nil {
		err = bw.Flush()
	}
	out.Aborted = cl.aborted
	return out, err
}

// readBatches calls fn with every batch read from r, in order, after
// checking its CRC; b is reused after fn returns. A batch larger than
// maxBatch, or cut short, is ErrCorruptBatch.
func readBatches(r io.Reader, maxBatch int64, fn func(h *BatchHeader, b []byte) error) error {
	br := bufio.NewReaderSize(r, 1<<16)
	var buf []byte
	for at := int64(0); ; {
		var hdr [BatchHeaderSize]byte
		n, err := io.ReadFull(br, hdr[:])
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: a header cut short at %d (%d bytes): %v", ErrCorruptBatch, at, n, err)
		}
		h, err := ParseBatchHeader(hdr[:])
		if err != nil {
			return fmt.Errorf("at %d: %w", at, err)
		}
		size := h.Size()
		if size < BatchHeaderSize || size > maxBatch {
			return fmt.Errorf("%w: a batch of %d bytes at %d", ErrCorruptBatch, size, at)
		}
		if int64(cap(buf)) < size {
			buf = make([]byte, size)
		}
		b := buf[:size]
		copy(b, hdr[:])
		if _, err := io.ReadFull(br, b[BatchHeaderSize:]); err != nil {
			return fmt.Errorf("%w: batch %d cut short: %v", ErrCorruptBatch, h.BaseOffset, err)
		}
		if err := CheckBatchCRC(b); err != nil {
			return fmt.Errorf("batch %d: %w", h.BaseOffset, err)
		}
		if err := fn(&h, b); err != nil {
			return fmt.Errorf("batch %d: %w", h.BaseOffset, err)
		}
		at += size
	}
}

// WriteIndexes writes, beside the segment file dir/<base>.log written
// from Clean's output, its offset and time indexes (with the log's
// index.interval.bytes) and, when aborted (Clean's) is not empty,
// its transaction index: the companion files of a segment to copy
// elsewhere (not fsynced: they are read back at once).
func (c *TieredCompaction) WriteIndexes(dir string, base int64, aborted []AbortedTxn) error {
	s, err := openSegment(OS, dir, base)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrStorage, err)
	}
	defer s.unref()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.rebuildIndexesLocked(c.l.config().IndexIntervalBytes); err != nil {
		return fmt.Errorf("%w: segment %d: %v", ErrStorage, base, err)
	}
	if err := s.writeIndexesLocked(); err != nil {
		return fmt.Errorf("%w: segment %d: %v", ErrStorage, base, err)
	}
	s.aborted = aborted
	if err := s.writeTxnIndexLocked(); err != nil {
		return fmt.Errorf("%w: segment %d: %v", ErrStorage, base, err)
	}
	return nil
}
