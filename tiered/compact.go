package tiered

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/samsa-io/samsa/logstore"
)

// Compaction of a tiered topic with cleanup.policy=compact, which Kafka
// 4.4 refuses (LogConfig: "Remote log storage only supports topics with
// cleanup.policy=delete ..."): the leader's pass cleans the remote
// segments with the log cleaner's rules, so that a reader from offset 0
// sees what it would see if every segment were local.
//
// A pass maps the keys of every remote segment, oldest first, then of
// the local segments above the copy (logstore.TieredCompaction), then
// reads each remote segment again and, when records of it go, writes the
// cleaned segment with new indexes (and the old one's producer snapshot
// and leader epochs) under a new segment id. Its metadata moves as a
// copy's does, each step one conditioned transaction: the new segment in
// Copying before its first object is written, then, in one write, the
// new segment in the old one's place and the old one in Deleting, whose
// objects are deleted next. A leader that dies half way leaves an entry
// in Copying or Deleting that the next leader deletes (finishLeftovers),
// and a reader always finds one of the two segments whole; one that
// read the metadata before the switch and finds the old objects gone
// reads the metadata again (Manager.Read). Offsets never move: the new
// segment serves the same range, with gaps.
//
// The pass ends by recording in the metadata where the cleaning stands
// (Metadata.CleanedTo), the bound below which replicas' local cleaners
// may drop tombstones (logstore.CompactOptions.TieredCleanedTo). A
// remote segment's tombstones and markers go delete.retention.ms after
// its copy was planned, which is after its last write (a local
// segment's go delete.retention.ms after its last write).

// compact runs a pass of remote compaction over the partition when
// r.Compact is set and enough is new since the last pass here.
func (l *leader) compact(ctx context.Context, now time.Time) error {
	opts := l.r.Compact
	if opts == nil || len(l.md.Segments) == 0 {
		return nil
	}
	key := partKey{l.r.TopicID, l.r.Partition}
	copied := l.md.CopiedEnd()
	rolled := l.r.Log.RolledSegments(opts.UpTo)
	mappable := copied
	if len(rolled) > 0 {
		mappable = max(mappable, rolled[len(rolled)-1].Next)
	}
	l.m.mu.Lock()
	last, seen := l.m.compacted[key]
	l.m.mu.Unlock()
	if seen {
		// min.cleanable.dirty.ratio over the whole log: what is above the
		// last pass's map, remote (copied since) or local, against all.
		dirty, total := l.r.Log.SizeFrom(max(last, copied)), l.md.Size()+l.r.Log.SizeFrom(copied)
		for _, s := range l.md.Segments {
			if s.StartOffset >= last {
				dirty += s.LogSize()
			}
		}
		if mappable <= last || total == 0 || float64(dirty)/float64(total) < opts.MinCleanableRatio {
			return nil
		}
	}
	// One pass at a time on this broker (its key map may take the
	// whole log.cleaner.dedupe.buffer.size); a partition whose turn is
	// taken tries again at its next pass, without holding up a worker.
	if !l.m.compacting.TryLock() {
		return nil
	}
	defer l.m.compacting.Unlock()
	start := time.Now()
	st, err := l.compactPass(ctx, now, *opts)
	if err != nil {
		return err
	}
	l.m.mu.Lock()
	l.m.compacted[key] = mappable
	l.m.mu.Unlock()
	if st.Segments > 0 {
		l.m.cfg.Logger.Info("tiered storage: remote segments compacted", "topic", l.r.Topic, "partition", l.r.Partition,
			"segments", st.Segments, "bytes_before", st.BytesBefore, "bytes_after", st.BytesAfter,
			"records_removed", st.RecordsRemoved, "cleaned_to", l.md.CleanedTo, "took", time.Since(start))
	}
	return nil
}

// compactPass is one pass: map, then clean segment by segment.
func (l *leader) compactPass(ctx context.Context, now time.Time, opts logstore.CompactOptions) (logstore.CompactStats, error) {
	var st logstore.CompactStats
	copied := l.md.CopiedEnd()
	aborted, err := l.remoteAborted(ctx)
	if err != nil {
		return st, err
	}
	aborted = append(aborted, l.r.Log.AbortedTxns(copied, opts.UpTo)...)
	tc := l.r.Log.NewTieredCompaction(opts, aborted)

	// Map: the remote segments old enough to clean (min.compaction.lag.ms),
	// then, when the map has room and every remote segment is in it,
	// the local ones above the copy.
	segs := l.md.Segments
	for i, s := range segs {
		if opts.MinCompactionLagMs > 0 && now.UnixMilli()-s.MaxTimestamp < opts.MinCompactionLagMs {
			segs = segs[:i]
			break
		}
		if err := tc.Map(l.object(ctx, s, "log"), s.StartOffset, s.EndOffset); err != nil {
			return st, fmt.Errorf("mapping remote segment %d: %w", s.StartOffset, err)
		}
		if tc.Full() {
			segs = segs[:i+1]
			break
		}
	}
	if len(segs) == 0 {
		return st, nil
	}
	if len(segs) == len(l.md.Segments) && !tc.Full() {
		if _, err := tc.MapLocal(now, copied); err != nil {
			return st, err
		}
	}

	// Clean: each remote segment in order, replaced when records went.
	horizon := now.UnixMilli() - opts.DeleteRetentionMs
	for _, s := range segs {
		if l.m.isDeleted(l.r.TopicID) {
			return st, nil // DeleteTopic waits for this pass, then deletes all
		}
		cleaned, size, err := l.cleanSegment(ctx, tc, s, s.written() < horizon)
		if err != nil {
			return st, err
		}
		if cleaned.Removed == 0 {
			continue
		}
		st.Segments++
		st.BytesBefore += s.LogSize()
		st.BytesAfter += size
		st.RecordsRemoved += cleaned.Removed
	}
	if end := min(segs[len(segs)-1].EndOffset, copied); end > l.md.CleanedTo {
		next := l.md.clone()
		next.CleanedTo = end
		if err := l.commit(ctx, next); err != nil {
			return st, err
		}
	}
	return st, l.finishLeftovers(ctx)
}

// cleanSegment cleans remote segment s into a temporary directory and,
// when records of it went, puts the cleaned segment in its place; it
// returns what went and the cleaned segment's size.
func (l *leader) cleanSegment(ctx context.Context, tc *logstore.TieredCompaction, s RemoteSegment, tombstonesGo bool) (logstore.TieredCleaned, int64, error) {
	dir, err := os.MkdirTemp("", "samsa-tiered-compact-")
	if err != nil {
		return logstore.TieredCleaned{}, 0, err
	}
	defer os.RemoveAll(dir)
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%020d.log", s.BaseOffset)))
	if err != nil {
		return logstore.TieredCleaned{}, 0, err
	}
	cleaned, err := tc.Clean(l.object(ctx, s, "log"), f, s.StartOffset, s.EndOffset, tombstonesGo)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return cleaned, 0, fmt.Errorf("cleaning remote segment %d: %w", s.StartOffset, err)
	}
	if cleaned.Removed == 0 {
		return cleaned, cleaned.Written, nil
	}
	if err := tc.WriteIndexes(dir, s.BaseOffset, cleaned.Aborted); err != nil {
		return cleaned, 0, err
	}
	return cleaned, cleaned.Written, l.replaceSegment(ctx, dir, s)
}

// replaceSegment uploads the cleaned segment in dir (its .log and indexes)
// under a new id, with old's producer snapshot and leader epochs, and
// puts it in old's place in the metadata, old going to Deleting.
func (l *leader) replaceSegment(ctx context.Context, dir string, old RemoteSegment) error {
	for ext, name := range map[string]string{"snapshot": fmt.Sprintf("%020d.snapshot", old.EndOffset), "epochs": epochsFile} {
		if old.Sizes[ext] == 0 {
			continue
		}
		b, err := l.m.cfg.Store.GetRange(ctx, old.Key(l.obj, ext), 0, old.Sizes[ext])
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	planned := old
	planned.ID, planned.Sizes = newSegmentID(), nil
	next := l.md.clone()
	next.Copying = append(next.Copying, planned)
	if err := l.commit(ctx, next); err != nil {
		return err
	}
	done, err := UploadSegment(ctx, l.m.cfg.Store, l.obj, dir, planned)
	l.m.cfg.Observe(l.r.Topic, OpCopy, done.LogSize(), err != nil)
	if err != nil {
		// Left in Copying: the next pass deletes what was written.
		return fmt.Errorf("copying compacted segment %d: %w", old.StartOffset, err)
	}
	next = l.md.clone()
	i := slices.IndexFunc(next.Segments, func(s RemoteSegment) bool { return s.ID == old.ID })
	if i < 0 {
		return fmt.Errorf("tiered: remote segment %s left the metadata during compaction", old.ID)
	}
	next.Segments[i] = done
	next.Copying = without(next.Copying, planned.ID)
	next.Deleting = append(next.Deleting, old)
	return l.commit(ctx, next)
}

// written is when the segment was last written at the latest: when its
// copy was planned, or, for a segment copied before that was recorded,
// its largest timestamp.
func (s RemoteSegment) written() int64 {
	if s.PlannedAt > 0 {
		return s.PlannedAt
	}
	return s.MaxTimestamp
}

// remoteAborted reads the transaction indexes of the remote segments.
func (l *leader) remoteAborted(ctx context.Context) ([]logstore.AbortedTxn, error) {
	var out []logstore.AbortedTxn
	for _, s := range l.md.Segments {
		size := s.Sizes["txnindex"]
		if size == 0 {
			continue
		}
		b, err := l.m.cfg.Store.GetRange(ctx, s.Key(l.obj, "txnindex"), 0, size)
		if err != nil {
			return nil, err
		}
		entries, err := logstore.ParseTxnIndex(b)
		if err != nil {
			return nil, err
		}
		// Only the markers the segment serves: those below its start
		// are the segment before's, listed with it.
		for _, e := range entries {
			if e.LastOffset >= s.StartOffset && e.LastOffset < s.EndOffset {
				out = append(out, e)
			}
		}
	}
	return out, nil
}

// object reads a remote segment's file from the store in chunks of the
// cache's size, without going through the cache: a pass reads every
// segment once, which would only evict what consumers read.
func (l *leader) object(ctx context.Context, s RemoteSegment, ext string) io.Reader {
	return &objectReader{ctx: ctx, store: l.m.cfg.Store, key: s.Key(l.obj, ext), size: s.Sizes[ext], chunk: l.m.cfg.ChunkSize}
}

type objectReader struct {
	ctx              context.Context
	store            ObjectStore
	key              string
	size, pos, chunk int64
	buf              []byte
}

func (o *objectReader) Read(p []byte) (int, error) {
	if len(o.buf) == 0 {
		if o.pos >= o.size {
			return 0, io.EOF
		}
		b, err := o.store.GetRange(o.ctx, o.key, o.pos, min(o.chunk, o.size-o.pos))
		if err != nil {
			return 0, err
		}
		if len(b) == 0 {
			return 0, fmt.Errorf("tiered: %s: %w at %d of %d bytes", o.key, io.ErrUnexpectedEOF, o.pos, o.size)
		}
		o.buf, o.pos = b, o.pos+int64(len(b))
	}
	n := copy(p, o.buf)
	o.buf = o.buf[n:]
	return n, nil
}
