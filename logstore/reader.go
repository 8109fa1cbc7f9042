package logstore

import (
	"fmt"
	"io"
	"os"
	"sort"
	"sync/atomic"
)

// Region is a byte range holding whole batches, of one of two kinds:
//
//   - a file range (File != nil): Length bytes of a segment file from
//     Offset, which the broker sends with sendfile(2). The file is shared:
//     read it with ReadAt or sendfile with an explicit offset, never
//     through its file position. Log.Read returns only these;
//   - bytes (File == nil): Bytes[Offset:Offset+Length], records that are
//     not in a local file, such as a remote segment's chunk cache returns
//     them through a SegmentSource. They must not change until the
//     ReadResult is released.
//
// protocol.Region has the same fields, so a read's regions are encoded
// into a Fetch response as they are, whatever their kind.
type Region struct {
	File           *os.File
	Offset, Length int64
	Bytes          []byte
}

// ReadResult is what Read returns: regions to send, in order, and their
// total size. The regions stay readable until Release, even if the
// segments are deleted meanwhile.
type ReadResult struct {
	Regions []Region
	Size    int64
	// NextOffset bounds the offsets read: every record returned is below
	// it (the base of the first batch left out, or the end of the last
	// segment read, at most the read's maxOffset); 0 when nothing was
	// read. Fetch lists the aborted transactions up to it.
	NextOffset int64
	release    func()
}

// Release lets the segments of the result go. It is idempotent, also
// across copies of the result.
func (r *ReadResult) Release() {
	if f := r.release; f != nil {
		r.release = nil
		f()
	}
}

// SegmentSource is where a read of a partition's batches comes from, with
// Log.Read's contract (whole batches from the one holding offset, the
// budgets, maxOffset, ErrOffsetOutOfRange, Release). A Log is the local
// source and answers with file ranges; a source over remote segments
// (tiered storage) answers with bytes regions built by NewReadResult, and
// the fetch path takes either result without asking where it came from.
type SegmentSource interface {
	Read(offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (ReadResult, error)
}

var _ SegmentSource = (*Log)(nil)

// NewReadResult is the ReadResult of a SegmentSource outside this package:
// regions in offset order (any kind; Size is the sum of their lengths),
// nextOffset as ReadResult.NextOffset, and release (may be nil), which the
// first Release of the result or of any copy calls, to let the regions'
// storage go (unpin cached chunks).
func NewReadResult(regions []Region, nextOffset int64, release func()) ReadResult {
	res := ReadResult{Regions: regions, NextOffset: nextOffset}
	for _, rg := range regions {
		res.Size += rg.Length
	}
	if release != nil {
		var released atomic.Bool // copies of the result share it
		res.release = func() {
			if !released.Swap(true) {
				release()
			}
		}
	}
	return res
}

// acquireFor returns, referenced, the last segment whose base is <= offset.
func (l *Log) acquireFor(offset int64) *segment {
	for range 1000 {
		segs := l.segments()
		i := sort.Search(len(segs), func(i int) bool { return segs[i].base > offset }) - 1
		if i < 0 {
			return nil
		}
		if segs[i].tryRef() {
			return segs[i]
		}
	}
	return nil
}

// refCurrent references seg, or, when seg was released meanwhile, the
// segment that replaced it (compaction swaps in a new one at the same
// base); nil when there is none (deleted by retention or truncation).
func (l *Log) refCurrent(seg *segment) *segment {
	if seg.tryRef() {
		return seg
	}
	cur := l.acquireFor(seg.base)
	if cur != nil && cur.base != seg.base {
		cur.unref()
		return nil
	}
	return cur
}

// acquireAfter returns, referenced, the first segment whose base is > base.
func (l *Log) acquireAfter(base int64) *segment {
	for range 1000 {
		segs := l.segments()
		i := sort.Search(len(segs), func(i int) bool { return segs[i].base > base })
		if i == len(segs) {
			return nil
		}
		if segs[i].tryRef() {
			return segs[i]
		}
	}
	return nil
}

// Read returns file ranges holding whole batches, starting with the batch
// that contains offset (a mid-batch offset returns that whole batch), up
// to maxBytes in total, but always the first batch whole when minOneBatch
// is set (KIP-74), and no batch starting at or beyond maxOffset (the high
// watermark; < 0 means the log end). offset == EndOffset gives an empty
// result; offset below StartOffset or beyond EndOffset gives
// ErrOffsetOutOfRange, one from StartOffset but below LocalStartOffset
// (tiered storage) ErrBelowLocalLog. Read never takes the append lock. The caller must
// Release the result.
func (l *Log) Read(offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (ReadResult, error) {
	if l.closed.Load() {
		return ReadResult{}, ErrClosed
	}
	end := l.end.Load()
	if start := l.start.Load(); offset < start || offset > end {
		return ReadResult{}, fmt.Errorf("%w: %d not in [%d, %d]", ErrOffsetOutOfRange, offset, start, end)
	}
	if maxOffset < 0 || maxOffset > end {
		maxOffset = end
	}
	if offset >= maxOffset {
		return ReadResult{}, nil
	}
	interval := l.config().IndexIntervalBytes
	budget := int64(max(maxBytes, 0))

	seg := l.acquireFor(offset)
	if seg == nil {
		if l.closed.Load() {
			return ReadResult{}, ErrClosed
		}
		if offset >= l.start.Load() {
			return ReadResult{}, fmt.Errorf("%w: %d below %d", ErrBelowLocalLog, offset, l.LocalStartOffset())
		}
		return ReadResult{}, fmt.Errorf("%w: %d below the first segment", ErrOffsetOutOfRange, offset)
	}
	held := []*segment{seg}
	var res ReadResult
	fail := func(err error) (ReadResult, error) {
		for _, s := range held {
			s.unref()
		}
		return ReadResult{}, err
	}
	for seg != nil {
		done, err := l.readSegment(seg, &res, offset, &budget, maxOffset, minOneBatch, interval)
		if err != nil {
			return fail(fmt.Errorf("%w: segment %d: %v", ErrStorage, seg.base, err))
		}
		if done || budget <= 0 {
			break
		}
		if seg = l.acquireAfter(seg.base); seg != nil {
			held = append(held, seg)
		}
	}
	if res.Size == 0 {
		for _, s := range held {
			s.unref()
		}
		return ReadResult{}, nil
	}
	var released atomic.Bool // copies of the result share it
	res.release = func() {
		if released.Swap(true) {
			return
		}
		for _, s := range held {
			s.unref()
		}
	}
	return res, nil
}

// readSegment adds seg's part of a read to res; done means stop (a limit
// was reached before the end of the segment).
func (l *Log) readSegment(seg *segment, res *ReadResult, offset int64, budget *int64, maxOffset int64,
	minOneBatch bool, interval int32) (bool, error) {
	limit := seg.size.Load()
	r := newHeaderReader(seg.f, limit)
	defer r.free()
	pos, h, ok, err := seg.locate(r, offset, interval)
	if err != nil || !ok {
		return false, err
	}
	if h.BaseOffset >= maxOffset {
		return true, nil
	}
	from := pos
	if h.Size() > *budget {
		if res.Size > 0 || !minOneBatch {
			return true, nil
		}
		from = pos + h.Size() // the first batch goes whole (KIP-74)
		*budget = 0
	}
	to, err := seg.boundary(r, from, min(limit, from+*budget), maxOffset, interval)
	if err != nil {
		return false, err
	}
	if n := to - pos; n > 0 {
		res.Regions = append(res.Regions, Region{File: seg.osf, Offset: pos, Length: n})
		res.Size += n
		next := seg.next.Load()
		if to < limit {
			if nh, err := r.at(to); err == nil {
				next = nh.BaseOffset
			}
		}
		res.NextOffset = min(next, maxOffset)
	}
	*budget -= to - from
	return to < limit, nil
}

// locate finds the first batch whose last offset is >= offset, scanning
// forward from the offset index entry at or below offset. ok is false when
// the segment (up to the reader's limit) has none.
func (s *segment) locate(r *headerReader, offset int64, interval int32) (int64, BatchHeader, bool, error) {
	if err := s.ensureIndexes(interval); err != nil {
		return 0, BatchHeader{}, false, err
	}
	pos, err := s.indexPos(r, interval, func(ix *offsetIndex) (int64, int64) { return ix.lookup(offset) })
	if err != nil {
		return 0, BatchHeader{}, false, err
	}
	for {
		h, err := r.at(pos)
		if err == io.EOF {
			return 0, h, false, nil
		}
		if err != nil {
			return 0, h, false, err
		}
		if h.LastOffset() >= offset {
			return pos, h, true, nil
		}
		pos += h.Size()
	}
}

// boundary returns the end of the longest run of whole batches from the
// batch start `from` in which every batch ends at or before maxPos and
// starts below maxOffset. The offset index lets it skip most headers.
func (s *segment) boundary(r *headerReader, from, maxPos, maxOffset int64, interval int32) (int64, error) {
	p1, err := s.indexPos(r, interval, func(ix *offsetIndex) (int64, int64) { return ix.lookupPos(maxPos) })
	if err != nil {
		return from, err
	}
	p2, err := s.indexPos(r, interval, func(ix *offsetIndex) (int64, int64) { return ix.lookup(maxOffset - 1) })
	if err != nil {
		return from, err
	}
	pos := max(from, min(p1, p2))
	for {
		h, err := r.at(pos)
		if err == io.EOF {
			return pos, nil
		}
		if err != nil {
			return pos, err
		}
		if h.BaseOffset >= maxOffset || pos+h.Size() > maxPos {
			return pos, nil
		}
		pos += h.Size()
	}
}

// ReadBytes is Read (with the first batch always whole) copied into memory.
func (l *Log) ReadBytes(offset int64, maxBytes int32, maxOffset int64) ([]byte, error) {
	res, err := l.Read(offset, maxBytes, maxOffset, true)
	if err != nil {
		return nil, err
	}
	defer res.Release()
	buf := make([]byte, res.Size)
	p := buf
	for _, rg := range res.Regions {
		if rg.File == nil {
			copy(p, rg.Bytes[rg.Offset:rg.Offset+rg.Length])
		} else if _, err := rg.File.ReadAt(p[:rg.Length], rg.Offset); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrStorage, err)
		}
		p = p[rg.Length:]
	}
	return buf, nil
}

// readBatchAt reads the whole batch whose header h sits at pos.
func (s *segment) readBatchAt(h *BatchHeader, pos int64) ([]byte, error) {
	buf := make([]byte, h.Size())
	if _, err := s.f.ReadAt(buf, pos); err != nil {
		return nil, fmt.Errorf("%w: segment %d: %v", ErrStorage, s.base, err)
	}
	return buf, nil
}

// OffsetForTimestamp returns the first offset (at or above the log start)
// whose record timestamp is >= ts, with that timestamp; found is false
// when there is none (ListOffsets by timestamp). For LogAppendTime batches
// a record's timestamp is its batch's.
func (l *Log) OffsetForTimestamp(ts int64) (offset, timestamp int64, found bool, err error) {
	if l.closed.Load() {
		return -1, -1, false, ErrClosed
	}
	end := l.end.Load()
	startOff := l.start.Load()
	interval := l.config().IndexIntervalBytes
	for _, seg := range l.segments() {
		if seg.next.Load() <= startOff {
			continue
		}
		if seg = l.refCurrent(seg); seg == nil {
			continue
		}
		offset, timestamp, found, err = l.offsetForTimestampIn(seg, ts, startOff, end, interval)
		seg.unref()
		if err != nil || found {
			return offset, timestamp, found, err
		}
	}
	return -1, -1, false, nil
}

func (l *Log) offsetForTimestampIn(seg *segment, ts, startOff, end int64, interval int32) (int64, int64, bool, error) {
	maxTs, _, err := seg.maxTimestamp(interval)
	if err != nil {
		return -1, -1, false, fmt.Errorf("%w: %v", ErrStorage, err)
	}
	if maxTs < ts {
		return -1, -1, false, nil
	}
	if err := seg.ensureIndexes(interval); err != nil {
		return -1, -1, false, fmt.Errorf("%w: %v", ErrStorage, err)
	}
	seg.mu.RLock()
	_, below, haveBelow := seg.tidx.lookupBelow(ts)
	seg.mu.RUnlock()
	r := newHeaderReader(seg.f, seg.size.Load())
	defer r.free()
	from := max(startOff, seg.base)
	if haveBelow {
		from = max(from, below)
	}
	pos, err := seg.indexPos(r, interval, func(ix *offsetIndex) (int64, int64) { return ix.lookup(from) })
	if err != nil {
		return -1, -1, false, fmt.Errorf("%w: %v", ErrStorage, err)
	}
	for {
		h, err := r.at(pos)
		if err == io.EOF {
			return -1, -1, false, nil
		}
		if err != nil {
			return -1, -1, false, fmt.Errorf("%w: segment %d: %v", ErrStorage, seg.base, err)
		}
		if h.BaseOffset >= end {
			return -1, -1, false, nil
		}
		if h.LastOffset() >= startOff && h.MaxTimestamp >= ts {
			if h.LogAppendTime() {
				return max(h.BaseOffset, startOff), h.MaxTimestamp, true, nil
			}
			b, err := seg.readBatchAt(&h, pos)
			if err != nil {
				return -1, -1, false, err
			}
			var off, rts int64 = -1, -1
			err = ForEachRecord(b, func(rec Record) bool {
				if rec.Offset >= startOff && rec.Timestamp >= ts {
					off, rts = rec.Offset, rec.Timestamp
					return false
				}
				return true
			})
			if err != nil {
				return -1, -1, false, fmt.Errorf("%w: segment %d batch %d: %v", ErrStorage, seg.base, h.BaseOffset, err)
			}
			if off >= 0 {
				return off, rts, true, nil
			}
		}
		pos += h.Size()
	}
}

// MaxTimestamp returns the offset and timestamp of the record with the
// largest timestamp (ListOffsets MAX_TIMESTAMP, KIP-734): the first such
// record when several share it; (-1, -1) when the log has no timestamps.
func (l *Log) MaxTimestamp() (offset, timestamp int64, err error) {
	if l.closed.Load() {
		return -1, -1, ErrClosed
	}
	end := l.end.Load()
	interval := l.config().IndexIntervalBytes
	var best *segment
	bestTs, bestOff := int64(-1), int64(-1)
	for _, seg := range l.segments() {
		if seg = l.refCurrent(seg); seg == nil {
			continue
		}
		ts, off, err := seg.maxTimestamp(interval)
		if err != nil {
			seg.unref()
			if best != nil {
				best.unref()
			}
			return -1, -1, fmt.Errorf("%w: %v", ErrStorage, err)
		}
		if ts > bestTs && off < end {
			if best != nil {
				best.unref()
			}
			best, bestTs, bestOff = seg, ts, off
			continue
		}
		seg.unref()
	}
	if best == nil {
		return -1, -1, nil
	}
	defer best.unref()
	r := newHeaderReader(best.f, best.size.Load())
	defer r.free()
	pos, h, ok, err := best.locate(r, bestOff, interval)
	if err != nil {
		return -1, -1, fmt.Errorf("%w: %v", ErrStorage, err)
	}
	if !ok {
		return -1, -1, nil
	}
	if h.LogAppendTime() {
		return h.BaseOffset, h.MaxTimestamp, nil
	}
	b, err := best.readBatchAt(&h, pos)
	if err != nil {
		return -1, -1, err
	}
	offset = h.BaseOffset
	err = ForEachRecord(b, func(rec Record) bool {
		if rec.Timestamp == h.MaxTimestamp {
			offset = rec.Offset
			return false
		}
		return true
	})
	if err != nil {
		return -1, -1, fmt.Errorf("%w: batch %d: %v", ErrStorage, h.BaseOffset, err)
	}
	return offset, h.MaxTimestamp, nil
}
