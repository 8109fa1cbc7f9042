package logstore

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// TimestampType is message.timestamp.type.
type TimestampType int8

const (
	CreateTime    TimestampType = 0
	LogAppendTime TimestampType = 1
)

// Config holds the topic-level settings of one log, with Kafka's names.
// Start from DefaultConfig. Zero values of SegmentBytes, SegmentMs,
// MaxMessageBytes, FlushMessages, FlushMs and SegmentIndexBytes mean the
// default; zero RetentionMs and RetentionBytes are real (delete at once),
// so use -1 for "infinite".
type Config struct {
	SegmentBytes       int64         // segment.bytes (1 GiB); at most 2 GiB-1
	SegmentMs          int64         // segment.ms (7 days)
	RetentionMs        int64         // retention.ms (7 days); -1 infinite
	RetentionBytes     int64         // retention.bytes (-1 infinite)
	IndexIntervalBytes int32         // index.interval.bytes (4096)
	MaxMessageBytes    int32         // max.message.bytes (1048588)
	TimestampType      TimestampType // message.timestamp.type
	FlushMessages      int64         // flush.messages (MaxInt64 = off)
	FlushMs            int64         // flush.ms (MaxInt64 = off); checked on append
	SegmentIndexBytes  int32         // segment.index.bytes (10 MiB)

	// TimestampBeforeMaxMs / TimestampAfterMaxMs are
	// message.timestamp.before.max.ms / after.max.ms: a CreateTime batch
	// whose timestamps lie further in the past / future than this from the
	// append time is rejected with ErrInvalidTimestamp. 0 = no limit.
	TimestampBeforeMaxMs int64
	TimestampAfterMaxMs  int64

	// ProducerIDExpirationMs is producer.id.expiration.ms (1 day): a
	// producer whose last batch is older is forgotten by EnforceRetention.
	// 0 = default, -1 = never.
	ProducerIDExpirationMs int64

	// Compact is cleanup.policy containing compact: every record needs a
	// key (ErrInvalidRecord otherwise).
	Compact bool

	// RemoteStorage is remote.storage.enable (tiered storage): segments
	// are deleted by retention.ms and retention.bytes only through
	// DeleteRecordsBefore, once the remote log they belong to expires them,
	// and locally only through DeleteLocalSegments once they are copied;
	// EnforceRetention leaves both to the caller. The log start offset
	// may then lie below the first local segment (LocalStartOffset).
	RemoteStorage bool

	// Compression is compression.type: the codec produced batches are
	// stored with. The zero value, CompressionProducer, keeps the
	// producer's.
	Compression Compression

	// MaxUncompressedBytes bounds the decompressed size ValidateBatch may
	// produce for one batch (zip-bomb guard). 0 = max(DefaultMaxUncompressed, 32 × MaxMessageBytes).
	MaxUncompressedBytes int64

	// FS holds the log's files; nil is OS. Tests inject faults with a
	// FaultFS. Open reads it; SetConfig does not change it.
	FS FS

	// OnFailure, when set, is called once, with the log's (partition)
	// directory and the first storage error that fails the log (see
	// Log.Failed); the log directory that went bad is filepath.Dir(dir).
	// It runs on the goroutine that hit the error, possibly with the
	// log's locks held: it must not block or call the Log, only hand the
	// news on (Kafka's LogDirFailureChannel). Open reads it; SetConfig
	// does not change it.
	OnFailure func(dir string, err error)

	// OnFlush, when set, is told how long each fsync of the log took (a
	// flush, or the sync of a segment sealed at a roll): the broker's
	// log flush metric. It must not block or call the Log. Open reads
	// it; SetConfig does not change it.
	OnFlush func(took time.Duration)
}

// DefaultConfig returns Kafka's topic defaults.
func DefaultConfig() Config {
	return Config{
		SegmentBytes:       1 << 30,
		SegmentMs:          7 * 24 * 3600 * 1000,
		RetentionMs:        7 * 24 * 3600 * 1000,
		RetentionBytes:     -1,
		IndexIntervalBytes: 4096,
		MaxMessageBytes:    1048588,
		TimestampType:      CreateTime,
		FlushMessages:      math.MaxInt64,
		FlushMs:            math.MaxInt64,
		SegmentIndexBytes:  10 << 20,

		ProducerIDExpirationMs: 24 * 3600 * 1000,
	}
}

// normalized fills defaults for zero fields and clamps the rest to what
// the on-disk format allows.
func (c Config) normalized() Config {
	d := DefaultConfig()
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = d.SegmentBytes
	}
	c.SegmentBytes = min(c.SegmentBytes, math.MaxInt32)
	if c.SegmentMs <= 0 {
		c.SegmentMs = d.SegmentMs
	}
	if c.RetentionMs < -1 {
		c.RetentionMs = -1
	}
	if c.RetentionBytes < -1 {
		c.RetentionBytes = -1
	}
	if c.IndexIntervalBytes < 0 {
		c.IndexIntervalBytes = d.IndexIntervalBytes
	}
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = d.MaxMessageBytes
	}
	if c.FlushMessages <= 0 {
		c.FlushMessages = d.FlushMessages
	}
	if c.FlushMs <= 0 {
		c.FlushMs = d.FlushMs
	}
	if c.SegmentIndexBytes < offsetIndexEntrySize+timeIndexEntrySize {
		c.SegmentIndexBytes = d.SegmentIndexBytes
	}
	if c.ProducerIDExpirationMs == 0 {
		c.ProducerIDExpirationMs = d.ProducerIDExpirationMs
	}
	if c.MaxUncompressedBytes <= 0 {
		c.MaxUncompressedBytes = max(DefaultMaxUncompressed, 32*int64(c.MaxMessageBytes))
	}
	c.MaxUncompressedBytes = min(c.MaxUncompressedBytes, math.MaxInt32)
	return c
}

// AppendResult describes a successful append.
type AppendResult struct {
	FirstOffset, LastOffset int64 // offsets assigned (for a duplicate: the original ones)
	LogAppendTime           int64 // -1 unless the topic uses LogAppendTime
	LogStartOffset          int64
	Duplicate               bool // an idempotent retry of a batch already in the log
}

// Log is one partition's log. See the package documentation.
type Log struct {
	dir       string
	fs        FS
	onFailure func(string, error) // Config.OnFailure at Open
	onFlush   func(time.Duration) // Config.OnFlush at Open
	logger    *slog.Logger

	cfg atomic.Pointer[Config] // replaced whole by SetConfig

	start atomic.Int64 // log start offset
	end   atomic.Int64 // log end offset, published after the bytes are written
	txns  txnView      // for the last stable offset; changed under appendMu

	segs   atomic.Pointer[[]*segment] // copy-on-write, ascending base; replaced under appendMu
	closed atomic.Bool

	appendMu  sync.Mutex
	active    *segment              // guarded by appendMu; the last of segs
	pstate    *producerStateManager // guarded by appendMu
	unflushed int64                 // guarded by appendMu: records since the last fsync
	lastFlush time.Time             // guarded by appendMu

	epochs *epochCache // own lock; persisted under appendMu
	// metaPending is the topic id of a partition.metadata written without
	// fsync (Placer.OpenPartition), made durable at the next flush, roll or
	// clean close; nil when none is. Guarded by appendMu.
	metaPending *[16]byte

	ckptMu        sync.Mutex // serialises checkpoint and snapshot files
	recoveryPoint int64      // guarded by ckptMu
	// snapSaved is the digest of the producer snapshot on disk, durable,
	// at offset snapSavedAt (written or loaded after a clean shutdown);
	// snapSavedAt is -1 when none is known. snapWritten is one written
	// without fsync by a clean close's first half (writeCleanStateLocked).
	// Guarded by ckptMu.
	snapSaved     [sha256.Size]byte
	snapSavedAt   int64
	snapWritten   [sha256.Size]byte
	snapWrittenAt int64
	// startSaved is the log start offset checkpoint on disk, -1 when
	// there is none. Guarded by ckptMu.
	startSaved int64
	// dirDirty: entries of the directory changed since its last fsync
	// (see dirTracker); set at Open until the first one.
	dirDirty atomic.Bool
	// unpin releases the log's hold on its parent directory for SyncFS
	// (pinFS); nil when it holds none.
	unpin func()

	failMu sync.Mutex
	failed error // guarded by failMu: a write failed; appends refused

	wg sync.WaitGroup // background fsyncs of sealed segments

	compactMu sync.Mutex   // one Compact at a time
	cleanedTo atomic.Int64 // offsets below were cleaned by the last Compact
	// truncations counts truncations of the log's end (under appendMu), so
	// that a compaction pass begun before one does not apply its result.
	truncations atomic.Int64
	uncleanable atomic.Bool // Compact met a batch it cannot decode

	// Counters for tests and logs.
	recoveredSegments atomic.Int64 // segments CRC-scanned by Open
	replayedBatches   atomic.Int64 // batch headers replayed into producer state by Open
}

func (l *Log) config() *Config { return l.cfg.Load() }

func (l *Log) segments() []*segment { return *l.segs.Load() }

func (l *Log) setSegments(s []*segment) { l.segs.Store(&s) }

// SegmentRange is a rolled segment's offsets: Base, its first, and Next,
// the base of the segment after it (every offset in it is below Next),
// with its largest timestamp (what retention.ms compares) and its bytes.
type SegmentRange struct{ Base, Next, MaxTimestamp, Size int64 }

// RolledSegments returns, in offset order, the rolled segments (every one
// but the active segment) that end at or below upTo and whose roll is
// complete (fsynced, the producer snapshot at their end written, which
// the roll does in the background): what tiered storage may copy when
// upTo is the high watermark. Their files are in Dir, named
// by Base; retention may delete them at any time after.
func (l *Log) RolledSegments(upTo int64) []SegmentRange {
	segs := l.segments()
	interval := l.config().IndexIntervalBytes
	var out []SegmentRange
	for i := 0; i+1 < len(segs) && segs[i+1].base <= upTo && !segs[i].sealing.Load(); i++ {
		out = append(out, SegmentRange{Base: segs[i].base, Next: segs[i+1].base, MaxTimestamp: segs[i].largestTimestamp(interval),
			Size: segs[i].size.Load()})
	}
	return out
}

// WaitRolled waits until the background work of every roll so far is
// done, so that RolledSegments lists every segment but the active one.
func (l *Log) WaitRolled() { l.wg.Wait() }

// SetConfig changes the log's settings; they apply from the next append
// or retention pass.
func (l *Log) SetConfig(cfg Config) {
	c := cfg.normalized()
	l.cfg.Store(&c)
}

// Dir returns the partition directory.
func (l *Log) Dir() string { return l.dir }

// StartOffset returns the log start offset (the first readable offset).
func (l *Log) StartOffset() int64 { return l.start.Load() }

// LocalStartOffset returns the first offset held in a local segment (or
// the log start offset, when above it): below it, a tiered log's records
// are remote (Kafka's local log start offset).
func (l *Log) LocalStartOffset() int64 {
	return max(l.start.Load(), l.segments()[0].base)
}

// EndOffset returns the log end offset (the next offset to be assigned).
func (l *Log) EndOffset() int64 { return l.end.Load() }

// LatestEpoch returns the newest leader epoch in the epoch cache, -1 if none.
func (l *Log) LatestEpoch() int32 { return l.epochs.latest() }

// EndOffsetForEpoch answers OffsetForLeaderEpoch: the largest known epoch
// <= epoch and its end offset (the next epoch's start offset, or the log
// end offset for the newest epoch); (-1, -1) when unknown.
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	return l.epochs.endOffsetFor(epoch, l.end.Load())
}

// Size returns the bytes of the log's segments (DescribeLogDirs).
func (l *Log) Size() int64 {
	var n int64
	for _, s := range l.segments() {
		n += s.size.Load()
	}
	return n
}

// SizeFrom returns the bytes of the segments whose base is at or above
// offset (tiered storage: those not copied yet).
func (l *Log) SizeFrom(offset int64) int64 {
	var n int64
	for _, s := range l.segments() {
		if s.base >= offset {
			n += s.size.Load()
		}
	}
	return n
}

// String identifies the log in log lines.
func (l *Log) String() string {
	return fmt.Sprintf("log(%s start=%d end=%d segments=%d)", l.dir, l.start.Load(), l.end.Load(), len(l.segments()))
}

// Failed returns nil while the log is healthy, and after a write, fsync,
// rename or checkpoint of its files failed the first such error (wrapping
// ErrStorage and the cause). A failed log refuses appends and every other
// change (see "Storage failures" in the package doc) until it is closed
// and opened again (Open recovers it); reads still answer, never past the
// end offset, so nothing half-written is served. Its directory should be
// taken offline (Kafka's log directory failure): its partitions are no
// longer served from this broker. Config.OnFailure tells of it as it
// happens.
func (l *Log) Failed() error {
	if err := l.failure(); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrStorage, l.dir, err)
	}
	return nil
}

func (l *Log) failure() error {
	l.failMu.Lock()
	defer l.failMu.Unlock()
	return l.failed
}

// fail records an I/O failure; the log then refuses appends.
func (l *Log) fail(err error) error {
	l.failMu.Lock()
	first := l.failed == nil
	if first {
		l.failed = err
	}
	l.failMu.Unlock()
	l.logger.Error("log storage failure", "log", l.dir, "err", err)
	werr := fmt.Errorf("%w: %s: %w", ErrStorage, l.dir, err)
	if first && l.onFailure != nil {
		l.onFailure(l.dir, werr)
	}
	return werr
}

// Append validates records (one or more v2 batches from a producer) and
// appends them atomically: all batches are validated before any is
// written, and all go into one segment with one write. Validation is one
// pass per batch (validate.go); records at fault under the topic's rules
// are named in a *RecordErrors. The batches are rewritten in place (base
// offset, partition leader epoch, max timestamp, LogAppendTime), or
// re-compressed into new bytes when Config.Compression names a codec
// other than the batch's.
// An idempotent batch that repeats one of its producer's last five
// batches is not written; the result then carries the original offsets
// and Duplicate set.
func (l *Log) Append(records []byte, leaderEpoch int32, now time.Time) (AppendResult, error) {
	return l.AppendVerified(records, leaderEpoch, now, nil)
}

// AppendVerified is Append of a transactional batch whose verification
// began with StartTxnVerification and guard (verify.go): a batch that
// would open a transaction is refused with ErrInvalidTxnState unless
// guard is still the producer's verification under way. A nil guard
// checks nothing (verification is off).
func (l *Log) AppendVerified(records []byte, leaderEpoch int32, now time.Time, guard *VerificationGuard) (AppendResult, error) {
	if l.closed.Load() {
		return AppendResult{}, ErrClosed
	}
	cfg := l.config()
	var batchArr [2][]byte
	batches, err := appendBatches(batchArr[:0], records)
	if err != nil {
		return AppendResult{}, err
	}
	if len(batches) == 0 {
		return AppendResult{}, fmt.Errorf("%w: no record batch", ErrInvalidRecord)
	}
	var hdrArr [2]BatchHeader
	hdrs := hdrArr[:0]
	idempotent := -1
	var total int64
	rebuilt := false
	tp := l.tpName()
	for i, b := range batches {
		v, h, err := validateProduced(cfg, b, tp, now)
		if err != nil {
			return AppendResult{}, err
		}
		if h.ProducerID >= 0 {
			idempotent = i
		}
		if len(v) != len(b) || &v[0] != &b[0] {
			batches[i], rebuilt = v, true
		}
		total += int64(len(v))
		hdrs = append(hdrs, h)
	}
	if idempotent >= 0 && len(batches) > 1 {
		return AppendResult{}, fmt.Errorf("%w: records of an idempotent producer must be a single batch", ErrInvalidRecord)
	}
	if total > cfg.SegmentBytes {
		return AppendResult{}, fmt.Errorf("%w: %d bytes, segment.bytes %d", ErrRecordListTooLarge, total, cfg.SegmentBytes)
	}

	if err := l.lockAppend(); err != nil {
		return AppendResult{}, err
	}
	defer l.appendMu.Unlock()
	cfg = l.config()
	if idempotent >= 0 {
		dup, isDup, err := l.pstate.check(hdrs[idempotent])
		if err != nil {
			return AppendResult{}, err
		}
		if !isDup {
			if err := l.pstate.checkVerified(&hdrs[idempotent], guard); err != nil {
				return AppendResult{}, err
			}
		}
		if isDup {
			res := AppendResult{FirstOffset: dup.FirstOffset, LastOffset: dup.LastOffset, LogAppendTime: -1,
				LogStartOffset: l.start.Load(), Duplicate: true}
			if cfg.TimestampType == LogAppendTime {
				res.LogAppendTime = dup.Timestamp
			}
			return res, nil
		}
	}

	nowMs := now.UnixMilli()
	first := l.end.Load()
	next := first
	for i, b := range batches {
		h := &hdrs[i]
		SetBaseOffset(b, next)
		SetPartitionLeaderEpoch(b, leaderEpoch)
		h.BaseOffset, h.PartitionLeaderEpoch = next, leaderEpoch
		if cfg.TimestampType == LogAppendTime {
			SetLogAppendTime(b, nowMs)
			h.MaxTimestamp = nowMs
			h.Attributes |= 0x08
		}
		next += int64(h.LastOffsetDelta) + 1
	}
	if rebuilt {
		// Re-compressed for compression.type: the records are new bytes.
		if len(batches) == 1 {
			records = batches[0]
		} else {
			records = bytes.Join(batches, nil)
		}
	}
	if err := l.writeLocked(cfg, records, hdrs, total, now); err != nil {
		return AppendResult{}, err
	}
	res := AppendResult{FirstOffset: first, LastOffset: next - 1, LogAppendTime: -1, LogStartOffset: l.start.Load()}
	if cfg.TimestampType == LogAppendTime {
		res.LogAppendTime = nowMs
	}
	return res, l.maybeFlushLocked(cfg, now)
}

// AppendAsFollower appends batches copied from the partition leader as
// they are: offsets, leader epochs and timestamps are kept. Each batch's
// header and CRC are checked (its records are not decoded again); offsets
// must ascend from the log end offset (gaps are allowed, as after
// compaction), else ErrUnexpectedOffset. The leader epochs of the batches
// feed the epoch cache and idempotent batches the producer state.
func (l *Log) AppendAsFollower(records []byte, now time.Time) (AppendResult, error) {
	if l.closed.Load() {
		return AppendResult{}, ErrClosed
	}
	batches, err := SplitBatches(records)
	if err != nil {
		return AppendResult{}, err
	}
	if len(batches) == 0 {
		return AppendResult{FirstOffset: -1, LastOffset: -1, LogAppendTime: -1, LogStartOffset: l.start.Load()}, nil
	}
	hdrs := make([]BatchHeader, 0, len(batches))
	for _, b := range batches {
		h, err := ParseBatchHeader(b)
		if err == nil {
			err = saneHeader(&h, 0, int64(len(b)))
		}
		if err == nil {
			err = CheckBatchCRC(b)
		}
		if err != nil {
			return AppendResult{}, fmt.Errorf("%w: batch from the leader: %v", ErrCorruptMessage, err)
		}
		if n := len(hdrs); n > 0 && h.BaseOffset <= hdrs[n-1].LastOffset() {
			return AppendResult{}, fmt.Errorf("%w: batch %d after %d", ErrUnexpectedOffset, h.BaseOffset, hdrs[n-1].LastOffset())
		}
		hdrs = append(hdrs, h)
	}
	cfg := l.config()
	for i := range hdrs {
		if hdrs[i].Size() > cfg.SegmentBytes {
			return AppendResult{}, fmt.Errorf("%w: batch of %d bytes, segment.bytes %d", ErrRecordListTooLarge, hdrs[i].Size(), cfg.SegmentBytes)
		}
	}

	if err := l.lockAppend(); err != nil {
		return AppendResult{}, err
	}
	defer l.appendMu.Unlock()
	if end := l.end.Load(); hdrs[0].BaseOffset < end {
		return AppendResult{}, fmt.Errorf("%w: batch %d below the log end offset %d", ErrUnexpectedOffset, hdrs[0].BaseOffset, end)
	}
	cfg = l.config()
	// A fetch may span segments of the leader: write runs that fit one segment.
	for i, pos := 0, 0; i < len(hdrs); {
		j, size := i, int64(0)
		for j < len(hdrs) && (j == i || size+hdrs[j].Size() <= cfg.SegmentBytes) {
			size += hdrs[j].Size()
			j++
		}
		if err := l.writeLocked(cfg, records[pos:pos+int(size)], hdrs[i:j], size, now); err != nil {
			return AppendResult{}, err
		}
		i, pos = j, pos+int(size)
	}
	res := AppendResult{FirstOffset: hdrs[0].BaseOffset, LastOffset: hdrs[len(hdrs)-1].LastOffset(), LogAppendTime: -1,
		LogStartOffset: l.start.Load()}
	return res, l.maybeFlushLocked(cfg, now)
}

// writeLocked writes batches whose headers are final (offsets, epochs,
// timestamps) to the active segment, rolling first if needed, with one
// write; then it updates the indexes, the producer state and the epoch
// cache, and publishes the new end offset. Caller holds appendMu.
func (l *Log) writeLocked(cfg *Config, records []byte, hdrs []BatchHeader, total int64, now time.Time) error {
	first, last := hdrs[0].BaseOffset, hdrs[len(hdrs)-1].LastOffset()
	maxTs := int64(-1)
	for i := range hdrs {
		maxTs = max(maxTs, hdrs[i].MaxTimestamp)
	}
	if l.shouldRoll(cfg, total, last, maxTs, now) || first-l.active.base > math.MaxInt32 {
		if err := l.rollLocked(first, now); err != nil {
			return err
		}
	}
	seg := l.active
	pos := seg.size.Load()
	_, err := seg.f.WriteAt(records, pos)
	seg.wroteLog()
	if err != nil {
		return l.unwriteLocked(seg, pos, fmt.Errorf("segment %d: write: %w", seg.base, err))
	}

	epochChanged := false
	for i := range hdrs {
		h := &hdrs[i]
		if h.PartitionLeaderEpoch >= 0 && h.PartitionLeaderEpoch > l.epochs.latest() {
			epochChanged = l.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset) || epochChanged
		}
	}
	if epochChanged {
		if err := l.epochs.persistLazy(); err != nil {
			// Recovery finds epochs only in the batches it scans: one that
			// never reached the checkpoint could be forgotten.
			return l.unwriteLocked(seg, pos, fmt.Errorf("leader epoch checkpoint: %w", err))
		}
	}

	for i, off := 0, int64(0); i < len(hdrs); i++ {
		h := &hdrs[i]
		if err := l.applyProducerBatchLocked(seg, h, pos+off, records[off:off+h.Size()]); err != nil {
			return l.unwriteLocked(seg, pos, err)
		}
		off += h.Size()
	}
	seg.mu.Lock()
	p := pos
	for i := range hdrs {
		seg.noteBatch(&hdrs[i], p, cfg.IndexIntervalBytes)
		p += hdrs[i].Size()
	}
	seg.mu.Unlock()

	seg.next.Store(last + 1)
	seg.size.Store(pos + total)
	l.end.Store(last + 1)
	for i := range hdrs {
		l.unflushed += int64(hdrs[i].LastOffsetDelta) + 1
	}
	return nil
}

// unwriteLocked fails the log after a write at pos of the active segment
// seg that must not stay (it failed, or what has to follow it did): the
// bytes are cut off again. That is best effort: readers stop at the
// published size anyway, and the next Open cuts a torn tail.
func (l *Log) unwriteLocked(seg *segment, pos int64, err error) error {
	if terr := seg.f.Truncate(pos); terr != nil {
		err = errors.Join(err, terr)
	}
	seg.wroteLog()
	return l.fail(err)
}

// maybeFlushLocked applies flush.messages and flush.ms after an append.
func (l *Log) maybeFlushLocked(cfg *Config, now time.Time) error {
	if l.unflushed >= cfg.FlushMessages ||
		(cfg.FlushMs != math.MaxInt64 && now.Sub(l.lastFlush) >= time.Duration(cfg.FlushMs)*time.Millisecond) {
		return l.flushLocked(now)
	}
	return nil
}

// lockAppend takes the append lock of a log that is open and has not
// failed; on an error the lock is not held.
func (l *Log) lockAppend() error {
	l.appendMu.Lock()
	if l.closed.Load() {
		l.appendMu.Unlock()
		return ErrClosed
	}
	if err := l.failure(); err != nil {
		l.appendMu.Unlock()
		return fmt.Errorf("%w: %s: %w", ErrStorage, l.dir, err)
	}
	return nil
}

// shouldRoll is Kafka's LogSegment.shouldRoll for an append of size bytes
// ending at lastOffset whose largest timestamp is ts.
func (l *Log) shouldRoll(cfg *Config, size, lastOffset, ts int64, now time.Time) bool {
	s := l.active
	cur := s.size.Load()
	if cur == 0 {
		return false
	}
	if cur > cfg.SegmentBytes-size {
		return true
	}
	if lastOffset-s.base > math.MaxInt32 {
		return true
	}
	s.mu.RLock()
	full := int64(s.idx.count()+1)*offsetIndexEntrySize > int64(cfg.SegmentIndexBytes) ||
		int64(s.tidx.count()+2)*timeIndexEntrySize > int64(cfg.SegmentIndexBytes) // room for the final entry
	s.mu.RUnlock()
	if full {
		return true
	}
	var waited int64
	if s.firstTs >= 0 && ts >= 0 {
		waited = ts - s.firstTs
	} else {
		waited = now.Sub(s.created).Milliseconds()
	}
	return waited > cfg.SegmentMs
}

// rollLocked seals the active segment and starts a new one at base (the
// log end offset, or a follower's next batch beyond a gap). The sealed
// segment is fsynced in the background. Caller holds appendMu.
func (l *Log) rollLocked(base int64, now time.Time) error {
	old := l.active
	if old.size.Load() == 0 {
		if base == old.base {
			return nil
		}
		// An empty active segment cannot be sealed: replace it.
		segs := l.segments()
		l.setSegments(append([]*segment(nil), segs[:len(segs)-1]...))
		if len(segs) == 1 && l.start.Load() < base && !l.config().RemoteStorage {
			if err := l.setStartLocked(base); err != nil {
				return err
			}
		}
		if err := old.remove(); err != nil {
			l.logger.Warn("remove empty segment", "log", l.dir, "segment", old.base, "err", err)
		}
		old.unref()
		ns, err := createSegment(l.fs, l.dir, base)
		if err != nil {
			return l.fail(fmt.Errorf("roll: %w", err))
		}
		ns.created = now
		l.setSegments(append(append([]*segment(nil), l.segments()...), ns))
		l.active = ns
		return nil
	}
	if err := old.sealIndexes(); err != nil {
		return l.fail(fmt.Errorf("segment %d: write indexes: %w", old.base, err))
	}
	// The background sync moves the recovery point past the sealed
	// segment: the epochs it starts must be durable first.
	if err := l.epochs.syncIfDirty(true); err != nil {
		return l.fail(fmt.Errorf("leader epoch checkpoint: %w", err))
	}
	if err := l.syncMetadataLocked(); err != nil {
		return l.fail(err)
	}
	ns, err := createSegment(l.fs, l.dir, base)
	if err != nil {
		return l.fail(fmt.Errorf("roll: %w", err))
	}
	ns.created = now
	segs := append(append([]*segment(nil), l.segments()...), ns)
	l.setSegments(segs)
	l.active = ns

	var snap bytes.Buffer
	if err := l.pstate.writeSnapshot(&snap, ns.base); err != nil {
		l.logger.Warn("producer snapshot", "log", l.dir, "offset", ns.base, "err", err)
		snap.Reset()
	}
	old.synced.Store(false) // until syncSealed has run
	old.sealing.Store(true)
	old.tryRef() // held by the goroutine
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer old.unref()
		l.syncSealed(old, ns.base, snap.Bytes())
	}()
	l.logger.Debug("rolled segment", "log", l.dir, "base", ns.base)
	return nil
}

// syncSealed fsyncs a sealed segment, writes the producer snapshot taken
// at the roll, and moves the recovery point.
func (l *Log) syncSealed(s *segment, snapOffset int64, snap []byte) {
	defer s.sealing.Store(false)
	start := time.Now()
	if err := s.syncFiles(); err != nil {
		_ = l.fail(fmt.Errorf("segment %d: fsync: %w", s.base, err))
		return
	}
	s.synced.Store(true)
	took := time.Since(start)
	if took > slowSync {
		l.logger.Warn("slow fsync", "log", l.dir, "segment", s.base, "took", took)
	}
	if l.onFlush != nil {
		l.onFlush(took)
	}
	l.ckptMu.Lock()
	defer l.ckptMu.Unlock()
	if len(snap) > 0 {
		if err := l.writeSnapshotFileLocked(snapOffset, snap); err != nil {
			l.logger.Warn("producer snapshot", "log", l.dir, "offset", snapOffset, "err", err)
		}
	}
	if err := l.updateRecoveryPointLocked(-1); err != nil {
		l.logger.Warn("recovery point checkpoint", "log", l.dir, "err", err)
	}
}

const slowSync = time.Second

// Flush fsyncs the log (flush.messages / flush.ms do this on append).
func (l *Log) Flush() error {
	if err := l.lockAppend(); err != nil {
		return err
	}
	defer l.appendMu.Unlock()
	return l.flushLocked(time.Now())
}

// FlushIfDue fsyncs the log when flush.ms has passed since the last flush
// and something was appended since; a periodic task (Kafka's log flusher)
// calls it so that an idle partition is flushed too. It reports whether it
// flushed. A failed log (Failed) is never due: an fsync retried after a
// failed one may report success for pages the kernel already dropped.
func (l *Log) FlushIfDue(now time.Time) (bool, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed.Load() {
		return false, ErrClosed
	}
	cfg := l.config()
	if l.failure() != nil || l.unflushed == 0 || cfg.FlushMs == math.MaxInt64 || now.Sub(l.lastFlush) < time.Duration(cfg.FlushMs)*time.Millisecond {
		return false, nil
	}
	return true, l.flushLocked(now)
}

func (l *Log) flushLocked(now time.Time) error {
	start := time.Now()
	for _, s := range l.segments() {
		if s == l.active || s.synced.Load() {
			continue
		}
		if err := s.syncFiles(); err != nil {
			return l.fail(fmt.Errorf("segment %d: fsync: %w", s.base, err))
		}
		s.synced.Store(true)
	}
	if err := l.active.syncLog(); err != nil {
		return l.fail(fmt.Errorf("segment %d: fsync: %w", l.active.base, err))
	}
	took := time.Since(start)
	if took > slowSync {
		l.logger.Warn("slow fsync", "log", l.dir, "took", took)
	}
	if l.onFlush != nil {
		l.onFlush(took)
	}
	// The epochs of what is now durable, before the recovery point says
	// so.
	if err := l.epochs.syncIfDirty(true); err != nil {
		return l.fail(fmt.Errorf("leader epoch checkpoint: %w", err))
	}
	if err := l.syncMetadataLocked(); err != nil {
		return l.fail(err)
	}
	l.unflushed = 0
	l.lastFlush = now
	l.ckptMu.Lock()
	defer l.ckptMu.Unlock()
	if err := l.updateRecoveryPointLocked(-1); err != nil {
		// The data is fsynced; an older recovery point only makes the
		// next unclean Open scan more.
		l.logger.Warn("recovery point checkpoint", "log", l.dir, "err", err)
	}
	return nil
}

// Close flushes everything and leaves the directory in a state the next
// Open trusts without a recovery scan. Outstanding reads stay valid until
// released. Close is idempotent.
func (l *Log) Close() error {
	return l.close(true)
}

// PrepareClose makes durable now what a clean Close would write (index
// files, producer snapshot, checkpoints, the fsyncs), without the marker,
// while the log stays open: a Close soon after then has only what changed
// in between to write and fsync. A broker calls it for every log while
// its controlled shutdown moves leadership away, which leaves the final
// Close of an idle partition without an fsync. Appends may go on.
func (l *Log) PrepareClose() error {
	if err := l.lockAppend(); err != nil {
		return err
	}
	defer l.appendMu.Unlock()
	l.wg.Wait()
	return l.writeCleanStateLocked(true)
}

// Abandon closes the log's files the way a killed process leaves them:
// nothing is flushed and no index file, snapshot, checkpoint or
// clean-shutdown marker is written, so the next Open recovers. It exists
// for crash tests (kill -9 of a broker in-process).
func (l *Log) Abandon() error {
	return l.close(false)
}

// Delete closes the log and removes its directory.
func (l *Log) Delete() error {
	err := l.close(false)
	if errors.Is(err, ErrClosed) {
		err = nil
	}
	return errors.Join(err, l.fs.RemoveAll(l.dir))
}

func (l *Log) close(clean bool) error {
	mode := closeAbandon
	if clean {
		mode = closeSynced
	}
	_, err := l.closeFiles(mode)
	l.release()
	return err
}

// closeMode is how closeFiles leaves a log.
type closeMode int

const (
	closeAbandon closeMode = iota // as a crash leaves it
	closeSynced                   // clean: durable, then the marker
	closeWritten                  // clean but not yet durable: written, no fsync, no marker (CloseAll)
)

// closeFiles closes the log's files, leaving them as mode says, and
// reports whether it closed them (not closed before). An error of a
// clean close leaves no marker: the next Open recovers.
func (l *Log) closeFiles(mode closeMode) (bool, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed.Swap(true) {
		return false, nil
	}
	l.wg.Wait()
	var err error
	if mode != closeAbandon && l.failure() == nil {
		err = l.writeCleanStateLocked(mode == closeSynced)
		if err == nil && mode == closeSynced {
			err = l.markCleanLocked()
		}
		if err != nil {
			l.logger.Error("unclean close: the next open will recover", "log", l.dir, "err", err)
		}
	}
	segs := l.segments()
	l.setSegments(nil)
	for _, s := range segs {
		s.unref()
	}
	return true, err
}

// release lets go of what a closed log still holds: its pin of the
// parent directory (pinFS).
func (l *Log) release() {
	if l.unpin != nil {
		l.unpin()
	}
}

// markCleanLocked writes the clean-shutdown marker, not fsynced:
// everything it vouches for is durable before it exists, so whichever way
// a power failure goes the next Open either trusts durable state or
// recovers.
func (l *Log) markCleanLocked() error {
	return writeNewFile(l.fs, pathJoin(l.dir, cleanShutdownName), nil, false)
}

// writeCleanStateLocked writes what the clean-shutdown marker vouches
// for: the index files, the producer snapshot, the checkpoints. With sync
// it makes them durable, each file fsynced and the directory once for all
// its new and renamed files, writing and fsyncing only what changed since
// it was last made durable (an idle partition costs no fsync). Without,
// it writes only what is not yet written and fsyncs nothing (the caller
// makes the whole file system durable after it: CloseAll, PrepareCloseAll).
// Caller holds appendMu, and no rolled segment's fsync is under way.
func (l *Log) writeCleanStateLocked(sync bool) error {
	if err := l.active.sealIndexesForClose(); err != nil {
		return err
	}
	if sync {
		for _, s := range l.segments() {
			if err := s.syncFiles(); err != nil {
				return err
			}
			s.synced.Store(true)
		}
	}
	end := l.end.Load()
	var snap bytes.Buffer
	if err := l.pstate.writeSnapshot(&snap, end); err != nil {
		return err
	}
	if sync {
		if err := l.epochs.syncIfDirty(false); err != nil {
			return err
		}
	} else if err := l.epochs.writeIfUnwritten(); err != nil {
		return err
	}
	l.ckptMu.Lock()
	defer l.ckptMu.Unlock()
	if err := l.writeSnapshotCleanLocked(end, snap.Bytes(), sync); err != nil {
		return err
	}
	start := l.start.Load()
	if l.startSaved >= 0 && l.startSaved != start || l.startSaved < 0 && start != l.segments()[0].base {
		if !sync {
			// Not startSaved: that one is durable.
			return replaceFile(l.fs, pathJoin(l.dir, startOffsetName), offsetCheckpoint(start))
		}
		if err := renameSynced(l.fs, pathJoin(l.dir, startOffsetName), offsetCheckpoint(start)); err != nil {
			return err
		}
		l.startSaved = start
	}
	if !sync {
		return nil // partition.metadata was written when it was created
	}
	// The recovery point is not written: a log with the marker is not
	// scanned, and without it the checkpoint already names the active
	// segment (syncSealed moved it there), which is where a scan from
	// the log end offset would begin too.
	if err := l.syncMetadataLocked(); err != nil {
		return err
	}
	if l.dirDirty.Load() {
		return l.fs.SyncDir(l.dir)
	}
	return nil
}

// writeSnapshotCleanLocked writes the producer snapshot snap, at offset
// end, for a clean close: with sync durably, else only written. A
// snapshot already on disk is not written again: with sync it is fsynced
// in place unless known durable (snapSaved), without it is left as it is
// when written already (snapWritten). Caller holds ckptMu.
func (l *Log) writeSnapshotCleanLocked(end int64, snap []byte, sync bool) error {
	sum := sha256.Sum256(snap)
	if l.snapSavedAt == end && sum == l.snapSaved || !sync && l.snapWrittenAt == end && sum == l.snapWritten {
		return nil
	}
	path := segmentName(l.dir, end, snapshotSuffix)
	switch old, err := readFile(l.fs, path); {
	case err == nil && bytes.Equal(old, snap):
		// Written without fsync (PrepareCloseAll, or before a crash).
		if sync {
			if err := syncFile(l.fs, path); err != nil {
				return err
			}
		}
	case sync:
		if err := renameSynced(l.fs, path, snap); err != nil {
			return err
		}
		l.pruneSnapshotsLocked()
	default:
		if err := replaceFile(l.fs, path, snap); err != nil {
			return err
		}
		l.pruneSnapshotsLocked()
	}
	if sync {
		l.snapSaved, l.snapSavedAt = sum, end
	} else {
		l.snapWritten, l.snapWrittenAt = sum, end
	}
	return nil
}

// syncMetadataLocked makes a partition.metadata written without fsync
// durable. Caller holds appendMu.
func (l *Log) syncMetadataLocked() error {
	if l.metaPending == nil {
		return nil
	}
	if err := writePartitionMetadata(l.fs, l.dir, *l.metaPending); err != nil {
		return fmt.Errorf("%s: %w", partitionMetadataFile, err)
	}
	l.metaPending = nil
	return nil
}
