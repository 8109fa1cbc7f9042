package tiered

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/samsa-io/samsa/logstore"
)

// reader reads record batches of remote segments through a chunk cache:
// the offset index finds the position at or below the offset, then batch
// headers are read forward; the result's regions point into the cached
// chunks (pinned until it is released), so nothing but the cache holds
// remote bytes.
type reader struct {
	cache *chunkCache
}

// pinned is what a read holds until its result is released.
type pinned struct {
	c      *chunkCache
	chunks []*chunk
}

func (p *pinned) release() {
	for _, ch := range p.chunks {
		p.c.unpin(ch)
	}
	p.chunks = nil
}

// bytesAt returns n bytes of the object at pos, as pieces of cached
// chunks (pinned into p).
func (r *reader) bytesAt(ctx context.Context, p *pinned, object string, objectSize, pos, n int64) ([][]byte, error) {
	var out [][]byte
	for n > 0 {
		if pos >= objectSize {
			return nil, fmt.Errorf("tiered: %s: read past its end (%d of %d bytes)", object, pos, objectSize)
		}
		ch, err := r.cache.get(ctx, object, objectSize, pos/r.cache.size)
		if err != nil {
			return nil, err
		}
		p.chunks = append(p.chunks, ch)
		from := pos - ch.key.index*r.cache.size
		if from >= int64(len(ch.data)) {
			return nil, fmt.Errorf("tiered: %s: short chunk %d", object, ch.key.index)
		}
		piece := ch.data[from:min(int64(len(ch.data)), from+n)]
		out = append(out, piece)
		pos += int64(len(piece))
		n -= int64(len(piece))
	}
	return out, nil
}

// copied reads n bytes at pos into a small buffer (headers, index entries).
func (r *reader) copied(ctx context.Context, object string, objectSize, pos int64, buf []byte) error {
	p := &pinned{c: r.cache}
	defer p.release()
	pieces, err := r.bytesAt(ctx, p, object, objectSize, pos, int64(len(buf)))
	if err != nil {
		return err
	}
	n := 0
	for _, pc := range pieces {
		n += copy(buf[n:], pc)
	}
	return nil
}

// startPosition is the position of the last offset index entry at or
// below offset (0 when none): a binary search over the remote index.
func (r *reader) startPosition(ctx context.Context, obj Partition, seg RemoteSegment, offset int64) (int64, error) {
	key, size := seg.Key(obj, "index"), seg.Sizes["index"]
	n := size / 8
	var entry [8]byte
	lo, hi := int64(0), n // entries[:lo] are at or below offset
	var pos int64
	for lo < hi {
		mid := (lo + hi) / 2
		if err := r.copied(ctx, key, size, mid*8, entry[:]); err != nil {
			return 0, err
		}
		rel := int64(binary.BigEndian.Uint32(entry[:4]))
		if seg.BaseOffset+rel <= offset {
			lo, pos = mid+1, int64(binary.BigEndian.Uint32(entry[4:]))
		} else {
			hi = mid
		}
	}
	return pos, nil
}

// read is logstore.Log.Read over one remote segment: whole batches from
// the one holding offset, at most maxBytes (the first whole when
// minOneBatch), none starting at or past maxOffset or the segment's end.
// When no batch of the segment holds offset or one after it (compaction
// removed them), it returns no records and the segment's end as
// NextOffset.
func (r *reader) read(ctx context.Context, obj Partition, seg RemoteSegment, offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (logstore.ReadResult, error) {
	logKey, logSize := seg.Key(obj, "log"), seg.LogSize()
	maxOffset = min(maxOffset, seg.EndOffset)
	pos, err := r.startPosition(ctx, obj, seg, offset)
	if err != nil {
		return logstore.ReadResult{}, err
	}
	var hdr [logstore.BatchHeaderSize]byte
	// Forward to the batch holding offset.
	var h logstore.BatchHeader
	for {
		if pos+logstore.BatchHeaderSize > logSize {
			return logstore.ReadResult{NextOffset: seg.EndOffset}, nil
		}
		if err := r.copied(ctx, logKey, logSize, pos, hdr[:]); err != nil {
			return logstore.ReadResult{}, err
		}
		if h, err = logstore.ParseBatchHeader(hdr[:]); err != nil || h.Size() < logstore.BatchHeaderSize || pos+h.Size() > logSize {
			return logstore.ReadResult{}, fmt.Errorf("%w: %s at %d", logstore.ErrCorruptBatch, logKey, pos)
		}
		if h.LastOffset() >= offset {
			break
		}
		pos += h.Size()
	}
	if h.BaseOffset >= maxOffset {
		return logstore.ReadResult{}, nil
	}
	// Whole batches from pos, within the budget.
	from, to, next := pos, pos, h.BaseOffset
	budget := int64(max(maxBytes, 0))
	for {
		if to-from+h.Size() > budget && !(to == from && minOneBatch) {
			break
		}
		to += h.Size()
		if to+logstore.BatchHeaderSize > logSize {
			next = seg.EndOffset
			break
		}
		if err := r.copied(ctx, logKey, logSize, to, hdr[:]); err != nil {
			return logstore.ReadResult{}, err
		}
		if h, err = logstore.ParseBatchHeader(hdr[:]); err != nil || h.Size() < logstore.BatchHeaderSize || to+h.Size() > logSize {
			return logstore.ReadResult{}, fmt.Errorf("%w: %s at %d", logstore.ErrCorruptBatch, logKey, to)
		}
		next = h.BaseOffset
		if h.BaseOffset >= maxOffset {
			break
		}
	}
	if to == from {
		return logstore.ReadResult{}, nil
	}
	p := &pinned{c: r.cache}
	pieces, err := r.bytesAt(ctx, p, logKey, logSize, from, to-from)
	if err != nil {
		p.release()
		return logstore.ReadResult{}, err
	}
	regions := make([]logstore.Region, len(pieces))
	for i, pc := range pieces {
		regions[i] = logstore.Region{Bytes: pc, Length: int64(len(pc))}
	}
	return logstore.NewReadResult(regions, min(next, maxOffset), p.release), nil
}

// aborted appends to out the entries of seg's remote transaction index
// for transactions with records in [from, upper); done as
// logstore's: an entry whose last stable offset reaches upper.
func (r *reader) aborted(ctx context.Context, obj Partition, seg RemoteSegment, out []logstore.AbortedTxn, from, upper int64) ([]logstore.AbortedTxn, bool, error) {
	size := seg.Sizes["txnindex"]
	if size == 0 {
		return out, false, nil
	}
	buf := make([]byte, size)
	if err := r.copied(ctx, seg.Key(obj, "txnindex"), size, 0, buf); err != nil {
		return out, false, err
	}
	entries, err := logstore.ParseTxnIndex(buf)
	if err != nil {
		return out, false, err
	}
	for _, e := range entries {
		if e.LastOffset >= from && e.FirstOffset < upper {
			out = append(out, e)
		}
		if e.LastStableOffset >= upper {
			return out, true, nil
		}
	}
	return out, false, nil
}

// offsetForTimestamp is logstore.Log.OffsetForTimestamp within one remote
// segment: the first record at or above from whose timestamp is at least
// ts (a LogAppendTime batch's records all have its timestamp).
func (r *reader) offsetForTimestamp(ctx context.Context, obj Partition, seg RemoteSegment, ts, from int64) (int64, int64, bool, error) {
	logKey, logSize := seg.Key(obj, "log"), seg.LogSize()
	pos, err := r.startPosition(ctx, obj, seg, from)
	if err != nil {
		return -1, -1, false, err
	}
	var hdr [logstore.BatchHeaderSize]byte
	for pos+logstore.BatchHeaderSize <= logSize {
		if err := r.copied(ctx, logKey, logSize, pos, hdr[:]); err != nil {
			return -1, -1, false, err
		}
		h, err := logstore.ParseBatchHeader(hdr[:])
		if err != nil || h.Size() < logstore.BatchHeaderSize || pos+h.Size() > logSize {
			return -1, -1, false, fmt.Errorf("%w: %s at %d", logstore.ErrCorruptBatch, logKey, pos)
		}
		if h.BaseOffset >= seg.EndOffset {
			break
		}
		if h.LastOffset() >= from && h.MaxTimestamp >= ts {
			if h.LogAppendTime() {
				return max(h.BaseOffset, from), h.MaxTimestamp, true, nil
			}
			batch := make([]byte, h.Size())
			if err := r.copied(ctx, logKey, logSize, pos, batch); err != nil {
				return -1, -1, false, err
			}
			off, rts := int64(-1), int64(-1)
			err := logstore.ForEachRecord(batch, func(rec logstore.Record) bool {
				if rec.Offset >= from && rec.Timestamp >= ts {
					off, rts = rec.Offset, rec.Timestamp
					return false
				}
				return true
			})
			if err != nil {
				return -1, -1, false, fmt.Errorf("%s batch %d: %w", logKey, h.BaseOffset, err)
			}
			if off >= 0 {
				return off, rts, true, nil
			}
		}
		pos += h.Size()
	}
	return -1, -1, false, nil
}
