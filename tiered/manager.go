package tiered

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/samsa-io/samsa/logstore"
)

// Replica is a partition of a topic with remote.storage.enable that this
// broker holds a replica of, as the broker sees it at one pass of the
// Manager.
type Replica struct {
	Topic     string
	TopicID   [16]byte
	Partition int32
	Log       *logstore.Log
	// Leader is set while this broker leads the partition, in
	// LeaderEpoch: only the leader copies and deletes remote segments.
	Leader      bool
	LeaderEpoch int32
	// LastStableOffset bounds the copy: a segment goes once every offset
	// in it is below it (and so below the high watermark).
	LastStableOffset int64
	// RollUpTo lets local retention roll the active segment once every
	// segment before it went and it is past local retention too, when it
	// ends at or below RollUpTo: the high watermark (leaders and
	// followers know it) where cleanup.policy deletes or is empty, as
	// Kafka 4.4's retention passes do; -1 (never) on a compact-only topic,
	// which Kafka runs no such pass over.
	RollUpTo int64
	// CopyDisabled is remote.log.copy.disable: nothing more is copied.
	CopyDisabled bool
	// RetentionMs and RetentionBytes are retention.ms and .bytes over the
	// whole log, remote and local (-1: none); LocalRetentionMs and
	// LocalRetentionBytes are local.retention.ms and .bytes, -2 resolved.
	RetentionMs, RetentionBytes           int64
	LocalRetentionMs, LocalRetentionBytes int64
	// Compact, on a compacted topic led here, is its log cleaner's
	// settings, UpTo the last stable offset: the leader compacts the
	// remote segments too (compact.go).
	Compact *logstore.CompactOptions
}

func (r Replica) objects() Partition {
	return Partition{Topic: r.Topic, TopicID: base64.RawURLEncoding.EncodeToString(r.TopicID[:]), Partition: r.Partition}
}

// ManagerConfig configures a Manager.
type ManagerConfig struct {
	NodeID int32
	Store  ObjectStore
	Meta   MetadataStore
	// Interval is remote.log.manager.task.interval.ms: how often each
	// replica gets a pass. Default 30s.
	Interval time.Duration
	// RollEvery is log.retention.check.interval.ms: local retention rolls
	// a replica's active segment (Replica.RollUpTo) at most this often,
	// at the first pass of each interval, as Kafka's retention check
	// does; the deletions themselves run at every pass. Default 5m.
	RollEvery time.Duration
	// Workers is remote.log.manager.copier.thread.pool.size (dynamic,
	// read at each pass): how many replicas have their pass at once. A
	// replica whose pass is still under way (a store that hangs) is
	// skipped by the next passes and holds up no other. Default 10.
	Workers func() int
	// Replicas lists this broker's replicas of tiered topics.
	Replicas func() []Replica
	// ChunkSize is rsm.config.chunk.size: remote objects are read, and
	// cached, in ranges of this many bytes. Default 4 MiB.
	ChunkSize int64
	// CacheBytes bounds the chunks held for remote reads (beyond those
	// of reads being sent). Default 64 MiB.
	CacheBytes int64
	// CopyRate and FetchRate are remote.log.manager.copy.max.bytes.per.second
	// and remote.log.manager.fetch.max.bytes.per.second (dynamic, read at
	// each check): the broker's byte rates of segment copies and of
	// remote reads, as Kafka's quotas. Over the copy quota a partition's
	// copy stops before its next segment until a later pass; over the
	// fetch quota a remote read answers no records. nil: none.
	CopyRate, FetchRate func() int64
	// CopyQuotaWindow and CopyQuotaSamples are
	// remote.log.manager.copy.quota.window.size.seconds and .window.num:
	// the copy rate is measured over that many windows of that length
	// (default 1s and 11); FetchQuotaWindow and FetchQuotaSamples are the
	// fetch quota's.
	CopyQuotaWindow, FetchQuotaWindow   time.Duration
	CopyQuotaSamples, FetchQuotaSamples int
	// Observe, when set, is told of each segment copy, remote read and
	// remote segment deletion, with the bytes moved and whether it
	// failed (the broker's KIP-405 metrics). It must not block.
	Observe func(topic string, op Op, bytes int64, failed bool)
	Logger  *slog.Logger
}

// Op is what ManagerConfig.Observe is told of.
type Op int

const (
	OpCopy   Op = iota // a segment copied to the store
	OpFetch            // a read of remote records
	OpDelete           // a remote segment deleted
)

// Manager is tiered storage's side of a broker, as Kafka's
// RemoteLogManager: every Interval, for each partition of a tiered topic
// led here, it finishes what an earlier leader left half way (entries in
// Copying or Deleting) and copies the rolled segments below the last
// stable offset from where the metadata says the copy stands, recording
// each in the remote log metadata (Copying before the first object is
// written, Segments once the manifest is). A leader that loses its
// leadership fails its next metadata write and stops; the next leader
// continues from the metadata, so that nothing is copied twice into
// Segments and nothing is skipped.
type Manager struct {
	cfg  ManagerConfig
	kick chan struct{}
	now  func() time.Time // retention's clock (tests set it)

	reader *reader

	copyQuota, fetchQuota *rateQuota

	tasks sync.WaitGroup // the replica passes under way

	mu      sync.Mutex
	cache   map[partKey]Metadata      // guarded by mu: the last metadata read or written per partition
	deleted map[[16]byte]bool         // guarded by mu: topic ids DeleteTopic was called for
	running map[partKey]chan struct{} // guarded by mu: replicas whose pass is under way; closed when it ends
	order   int                       // guarded by mu: where the next pass starts in the replica list
	busy    int                       // guarded by mu: replica passes under way, at most Workers
	freed   chan struct{}             // guarded by mu: closed and replaced when a pass ends
	sweeps  map[partKey]sweepState    // guarded by mu: the orphan sweeps of the partitions led here (sweep.go)
	// rollChecked is when local retention last could roll each replica's
	// active segment (RollEvery). Guarded by mu.
	rollChecked map[partKey]time.Time

	// compacted is, per partition led here, the end of what the last
	// remote compaction pass could map (compact.go). Guarded by mu.
	compacted map[partKey]int64
	// compacting is held by the remote compaction pass under way: one at
	// a time, as its key map is as large as the log cleaner's.
	compacting sync.Mutex

	sweepEvery, sweepWindow time.Duration // sweep.go's constants (tests set them)
}

// isDeleted reports whether DeleteTopic was called for the topic id.
func (m *Manager) isDeleted(id [16]byte) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.deleted[id]
}

type partKey struct {
	id [16]byte
	p  int32
}

// NewManager returns a Manager; Run runs it.
func NewManager(cfg ManagerConfig) *Manager {
	if cfg.Interval <= 0 {
		cfg.Interval = 30 * time.Second
	}
	if cfg.RollEvery <= 0 {
		cfg.RollEvery = 5 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Replicas == nil {
		cfg.Replicas = func() []Replica { return nil }
	}
	if cfg.Observe == nil {
		cfg.Observe = func(string, Op, int64, bool) {}
	}
	if cfg.ChunkSize <= 0 {
		cfg.ChunkSize = 4 << 20
	}
	if cfg.CacheBytes <= 0 {
		cfg.CacheBytes = 64 << 20
	}
	if cfg.Workers == nil {
		cfg.Workers = func() int { return 10 }
	}
	return &Manager{cfg: cfg, kick: make(chan struct{}, 1), cache: map[partKey]Metadata{}, deleted: map[[16]byte]bool{},
		running: map[partKey]chan struct{}{}, freed: make(chan struct{}), compacted: map[partKey]int64{}, now: time.Now,
		sweeps: map[partKey]sweepState{}, sweepEvery: sweepEvery, sweepWindow: sweepWindow, rollChecked: map[partKey]time.Time{},
		copyQuota:  newRateQuota(cfg.CopyRate, cfg.CopyQuotaWindow, cfg.CopyQuotaSamples),
		fetchQuota: newRateQuota(cfg.FetchRate, cfg.FetchQuotaWindow, cfg.FetchQuotaSamples),
		reader:     &reader{cache: newChunkCache(cfg.Store, cfg.ChunkSize, cfg.CacheBytes)}}
}

// Run gives every replica a pass each Interval (and at Kick) until ctx
// ends, then waits for the passes under way.
func (m *Manager) Run(ctx context.Context) {
	defer m.tasks.Wait()
	t := time.NewTicker(m.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-m.kick:
		}
		m.dispatch(ctx)
	}
}

// Kick asks for a pass now.
func (m *Manager) Kick() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// pass gives every replica a pass and waits for them (tests).
func (m *Manager) pass(ctx context.Context) {
	for _, done := range m.dispatch(ctx) {
		<-done
	}
}

// dispatch starts a pass of each replica whose pass of before has ended,
// on at most Workers at once, and returns their ends. It waits for a
// free worker when all are busy; a replica that keeps one busy (a store
// that hangs, until the S3 call times out) holds up only its own passes.
// Each pass starts one replica further down the list, so that with
// every worker busy no replica is always last.
func (m *Manager) dispatch(ctx context.Context) []chan struct{} {
	rs := m.cfg.Replicas()
	led, here := map[partKey]bool{}, map[partKey]bool{}
	for _, r := range rs {
		k := partKey{r.TopicID, r.Partition}
		here[k] = true
		if r.Leader {
			led[k] = true
		}
	}
	m.forgetSweeps(led)
	m.mu.Lock()
	for k := range m.rollChecked {
		if !here[k] {
			delete(m.rollChecked, k)
		}
	}
	m.mu.Unlock()
	m.mu.Lock()
	first := m.order % max(len(rs), 1)
	m.order++
	m.mu.Unlock()
	var started []chan struct{}
	for i := range rs {
		r := rs[(first+i)%len(rs)]
		done, wait := m.claim(r)
		for wait != nil {
			select {
			case <-ctx.Done():
				return started
			case <-wait:
			}
			done, wait = m.claim(r)
		}
		if done == nil {
			continue
		}
		started = append(started, done)
		m.tasks.Add(1)
		go func() {
			defer m.tasks.Done()
			defer m.release(r, done)
			m.passOne(ctx, r)
		}()
	}
	return started
}

// claim marks r's pass as under way and returns the channel its end
// closes; nil when one is under way already or its topic was deleted.
// With every worker busy it returns instead a channel closed when one is
// free.
func (m *Manager) claim(r Replica) (done, wait chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := partKey{r.TopicID, r.Partition}
	if m.deleted[r.TopicID] || m.running[k] != nil {
		return nil, nil
	}
	if m.busy >= max(m.cfg.Workers(), 1) {
		return nil, m.freed
	}
	m.busy++
	done = make(chan struct{})
	m.running[k] = done
	return done, nil
}

func (m *Manager) release(r Replica, done chan struct{}) {
	m.mu.Lock()
	delete(m.running, partKey{r.TopicID, r.Partition})
	m.busy--
	close(m.freed)
	m.freed = make(chan struct{})
	m.mu.Unlock()
	close(done)
}

// passOne is one replica's pass: the leader's copy and retention, or a
// follower's local retention.
func (m *Manager) passOne(ctx context.Context, r Replica) {
	if r.RollUpTo >= 0 && !m.rollDue(partKey{r.TopicID, r.Partition}) {
		r.RollUpTo = -1
	}
	var err error
	if r.Leader {
		err = m.lead(ctx, r)
	} else {
		err = m.follow(ctx, r)
	}
	if err != nil && ctx.Err() == nil {
		m.cfg.Logger.Warn("tiered storage: pass failed", "topic", r.Topic, "partition", r.Partition, "err", err)
	}
}

// Metadata returns the remote log metadata of a partition: the copy this
// broker last read or wrote, else read now.
func (m *Manager) Metadata(ctx context.Context, topicID [16]byte, p int32) (Metadata, error) {
	m.mu.Lock()
	md, ok := m.cache[partKey{topicID, p}]
	m.mu.Unlock()
	if ok {
		return md, nil
	}
	md, _, err := m.load(ctx, topicID, p)
	return md, err
}

func (m *Manager) load(ctx context.Context, topicID [16]byte, p int32) (Metadata, int64, error) {
	b, rev, err := m.cfg.Meta.RemoteLogMetadata(ctx, topicID, p)
	if err != nil {
		return Metadata{}, 0, err
	}
	md, err := decodeMetadata(b)
	if err != nil {
		return Metadata{}, 0, err
	}
	m.remember(topicID, p, md)
	return md, rev, nil
}

func (m *Manager) remember(topicID [16]byte, p int32, md Metadata) {
	m.mu.Lock()
	m.cache[partKey{topicID, p}] = md
	m.mu.Unlock()
}

// leader is one pass over a partition led here, writing its metadata as
// the leader of r.LeaderEpoch.
type leader struct {
	m   *Manager
	r   Replica
	obj Partition
	md  Metadata
	rev int64
}

func (l *leader) commit(ctx context.Context, next Metadata) error {
	next.Version = 1
	b, err := json.Marshal(next)
	if err != nil {
		return err
	}
	rev, err := l.m.cfg.Meta.PutRemoteLogMetadata(ctx, l.r.Topic, l.r.TopicID, l.r.Partition, l.m.cfg.NodeID, l.r.LeaderEpoch, l.rev, b)
	if err != nil {
		return err
	}
	l.md, l.rev = next, rev
	l.m.remember(l.r.TopicID, l.r.Partition, next)
	return nil
}

func (m *Manager) lead(ctx context.Context, r Replica) error {
	md, rev, err := m.load(ctx, r.TopicID, r.Partition)
	if err != nil {
		return err
	}
	l := &leader{m: m, r: r, obj: r.objects(), md: md, rev: rev}
	if err := l.finishLeftovers(ctx); err != nil {
		return err
	}
	// Below the first remote segment nothing is left (remote retention
	// of an earlier leader).
	if s := md.StartOffset(); s > r.Log.StartOffset() {
		if _, err := r.Log.DeleteRecordsBefore(s); err != nil {
			return err
		}
	}
	if !r.CopyDisabled {
		if err := l.copy(ctx); err != nil {
			return err
		}
	}
	if err := l.expire(ctx, m.now()); err != nil {
		return err
	}
	if k := (partKey{r.TopicID, r.Partition}); m.sweepDue(k) {
		if err := l.sweep(ctx); err != nil {
			return err
		}
		m.swept(k)
	}
	if err := m.deleteLocal(r, l.md); err != nil {
		return err
	}
	return l.compact(ctx, m.now())
}

// follow is a pass over a partition followed here: its local retention,
// by the copy its leader recorded.
func (m *Manager) follow(ctx context.Context, r Replica) error {
	md, _, err := m.load(ctx, r.TopicID, r.Partition)
	if err != nil {
		return err
	}
	return m.deleteLocal(r, md)
}

// deleteLocal applies local.retention.ms and .bytes to the segments
// copied whole, rolling the active segment when it is past them too
// (even before anything is copied, as Kafka does) where the pass may
// roll it (passOne).
func (m *Manager) deleteLocal(r Replica, md Metadata) error {
	_, err := r.Log.DeleteLocalSegments(m.now(), md.CopiedEnd(), r.RollUpTo, r.LocalRetentionMs, r.LocalRetentionBytes)
	return err
}

// rollDue reports whether local retention may roll k's active segment in
// the pass starting: the first pass of each RollEvery, as Kafka's retention check
// every log.retention.check.interval.ms. Otherwise a partition whose copy
// keeps up would roll a small segment at every pass.
func (m *Manager) rollDue(k partKey) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if last, ok := m.rollChecked[k]; ok && now.Sub(last) < m.cfg.RollEvery {
		return false
	}
	m.rollChecked[k] = now
	return true
}

// finishLeftovers deletes the objects of segments an earlier pass (of
// this leader or another) left in Copying or Deleting, and forgets them.
func (l *leader) finishLeftovers(ctx context.Context) error {
	if len(l.md.Copying) > 0 {
		// A PUT of a copy left half way may still land: sweep for a while.
		l.m.watchOrphans(partKey{l.r.TopicID, l.r.Partition})
	}
	for _, s := range append(append([]RemoteSegment(nil), l.md.Copying...), l.md.Deleting...) {
		err := DeleteSegment(ctx, l.m.cfg.Store, l.obj, s)
		l.m.cfg.Observe(l.r.Topic, OpDelete, s.LogSize(), err != nil)
		if err != nil {
			return err
		}
		next := l.md.clone()
		next.Copying, next.Deleting = without(next.Copying, s.ID), without(next.Deleting, s.ID)
		if err := l.commit(ctx, next); err != nil {
			return err
		}
	}
	return nil
}

// copy copies the rolled segments below the last stable offset that the
// metadata does not hold yet, one at a time, oldest first, applying local
// retention after each (to what the metadata records as copied: never a
// segment in Copying).
func (l *leader) copy(ctx context.Context) error {
	from := max(l.md.CopiedEnd(), l.r.Log.StartOffset())
	for _, c := range CopyCandidates(l.r.Log, l.r.LastStableOffset, from, l.r.LeaderEpoch) {
		if l.m.isDeleted(l.r.TopicID) {
			return nil // DeleteTopic waits for this pass, then deletes all
		}
		// Over the copy quota the copy stops before this segment; a
		// pass one quota window later carries on.
		if !l.m.copyQuota.take(c.localSize) {
			l.m.cfg.Logger.Debug("tiered storage: copy quota exceeded", "topic", l.r.Topic, "partition", l.r.Partition, "base", c.BaseOffset)
			time.AfterFunc(l.m.copyQuota.window, l.m.Kick)
			return nil
		}
		next := l.md.clone()
		next.Copying = append(next.Copying, c)
		if err := l.commit(ctx, next); err != nil {
			return err
		}
		start := time.Now()
		done, err := UploadSegment(ctx, l.m.cfg.Store, l.obj, l.r.Log.Dir(), c)
		l.m.cfg.Observe(l.r.Topic, OpCopy, done.LogSize(), err != nil)
		if err != nil {
			// Left in Copying: the next pass deletes what was written
			// and copies the segment again.
			return fmt.Errorf("copying segment %d: %w", c.BaseOffset, err)
		}
		next = l.md.clone()
		next.Copying = without(next.Copying, c.ID)
		next.Segments = append(next.Segments, done)
		next.CopiedTo = done.EndOffset
		if err := l.commit(ctx, next); err != nil {
			return err
		}
		l.m.cfg.Logger.Debug("tiered storage: segment copied", "topic", l.r.Topic, "partition", l.r.Partition,
			"base", c.BaseOffset, "start", c.StartOffset, "end", c.EndOffset, "bytes", done.LogSize(), "took", time.Since(start))
		// Local retention as soon as the copy is recorded, not at the
		// pass's end: a pass behind a fast producer copies many segments,
		// which would all stay on disk until the last is copied.
		if err := l.m.deleteLocal(l.r, l.md); err != nil {
			return err
		}
	}
	return nil
}

// expire is remote retention, as Kafka's: the oldest remote segments go
// while they are entirely below the log start offset (DeleteRecords), or
// older than retention.ms, or while the whole log (the remote segments
// and the local ones not copied yet) stays above retention.bytes without
// them. The log start offset moves past them before their objects are
// deleted, so that no read is sent to an object about to go.
func (l *leader) expire(ctx context.Context, now time.Time) error {
	r := l.r
	logStart := r.Log.StartOffset()
	breach := l.md.Size() + r.Log.SizeFrom(l.md.CopiedEnd()) - r.RetentionBytes
	n := 0
	for _, s := range l.md.Segments {
		expired := s.EndOffset <= logStart ||
			r.RetentionMs >= 0 && now.UnixMilli()-s.MaxTimestamp > r.RetentionMs ||
			r.RetentionBytes >= 0 && breach-s.LogSize() >= 0
		if !expired {
			break
		}
		breach -= s.LogSize()
		n++
	}
	if n == 0 {
		return nil
	}
	victims := l.md.Segments[:n]
	next := l.md.clone()
	next.Segments = next.Segments[n:]
	next.Deleting = append(next.Deleting, victims...)
	if err := l.commit(ctx, next); err != nil {
		return err
	}
	if start := victims[n-1].EndOffset; start > logStart {
		if _, err := r.Log.DeleteRecordsBefore(start); err != nil {
			return err
		}
	}
	l.m.cfg.Logger.Info("tiered storage: remote segments expired", "topic", r.Topic, "partition", r.Partition,
		"count", n, "first", victims[0].StartOffset, "end", victims[n-1].EndOffset)
	return l.finishLeftovers(ctx)
}

// Read reads a partition's remote log with logstore.Log.Read's contract,
// from the one remote segment serving offset (a read never crosses into
// the next one, as Kafka's remote fetch): whole batches, at most maxBytes
// but the first whole when minOneBatch, none at or past maxOffset. An
// offset no remote segment serves is logstore.ErrOffsetOutOfRange. Over
// remote.log.manager.fetch.max.bytes.per.second it reads nothing and
// returns no records, as Kafka skips the remote fetch. The result's
// bytes stay in the chunk cache until it is released.
func (m *Manager) Read(ctx context.Context, topic string, topicID [16]byte, partition int32, offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (logstore.ReadResult, error) {
	obj := Replica{Topic: topic, TopicID: topicID, Partition: partition}.objects()
	md, err := m.Metadata(ctx, topicID, partition)
	if err != nil {
		return logstore.ReadResult{}, err
	}
	// Over the fetch quota: no records this time, as Kafka answers.
	if m.fetchQuota.exceeded() {
		return logstore.ReadResult{}, nil
	}
	for fresh := false; ; fresh = true {
		res, err := m.readSegments(ctx, obj, md, offset, maxBytes, maxOffset, minOneBatch)
		switch {
		case errors.Is(err, errNoSegment) && fresh:
			return logstore.ReadResult{}, fmt.Errorf("%w: no remote segment of %s-%d holds %d", logstore.ErrOffsetOutOfRange, topic, partition, offset)
		case !errors.Is(err, ErrNotFound) && !errors.Is(err, errNoSegment) || fresh:
			m.fetchQuota.record(res.Size)
			m.cfg.Observe(topic, OpFetch, res.Size, err != nil)
			return res, err
		}
		// The copy read last may be stale (a segment copied, compacted
		// or deleted by the leader since): read the metadata again, once.
		if md, _, err = m.load(ctx, topicID, partition); err != nil {
			return logstore.ReadResult{}, err
		}
	}
}

// errNoSegment: no remote segment serves the offset read.
var errNoSegment = errors.New("tiered: no remote segment serves the offset")

// readSegments reads from the remote segment serving offset, or, when
// compaction left nothing at or after offset in it, from the next ones.
// Past the last one it answers no records and, as NextOffset, the offset
// where the log goes on (locally).
func (m *Manager) readSegments(ctx context.Context, obj Partition, md Metadata, offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (logstore.ReadResult, error) {
	for at := offset; at < maxOffset; {
		seg, ok := md.SegmentFor(at)
		switch {
		case !ok && at == offset:
			return logstore.ReadResult{}, errNoSegment
		case !ok:
			return logstore.ReadResult{NextOffset: at}, nil
		}
		res, err := m.reader.read(ctx, obj, seg, at, maxBytes, maxOffset, minOneBatch)
		if err != nil || res.Size > 0 || res.NextOffset <= at {
			return res, err
		}
		at = res.NextOffset
	}
	return logstore.ReadResult{}, nil
}

// Cached returns the remote log metadata of a partition this broker last
// read or wrote, without reading etcd (metrics); false when it has none.
func (m *Manager) Cached(topicID [16]byte, partition int32) (Metadata, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	md, ok := m.cache[partKey{topicID, partition}]
	return md, ok
}

// CopiedEnd is where the copy of a partition stands (0: nothing copied),
// by the metadata this broker last read.
func (m *Manager) CopiedEnd(ctx context.Context, topicID [16]byte, partition int32) (int64, error) {
	md, err := m.Metadata(ctx, topicID, partition)
	return md.CopiedEnd(), err
}

// RebuildFollower restarts a follower's log l where the remote copy of
// its partition ends, when its leader answered
// OFFSET_MOVED_TO_TIERED_STORAGE (the follower's fetch offset is below
// the leader's local log), instead of copying what the leader keeps
// remote: the leader epochs and the producer state come from the last
// remote segment's copies of them, the log start offset is the leader's
// (leaderLogStart; -1: the first remote offset). It is Kafka's follower
// with follower.fetch.last.tiered.offset.enable (KIP-1023), which
// starts at the earliest offset pending upload: a follower then holds
// locally only what is not remote yet.
func (m *Manager) RebuildFollower(ctx context.Context, topic string, topicID [16]byte, partition int32, l *logstore.Log, leaderLogStart int64) error {
	md, _, err := m.load(ctx, topicID, partition)
	if err != nil {
		return err
	}
	if len(md.Segments) == 0 {
		return fmt.Errorf("tiered: %s-%d: no remote segment to rebuild from", topic, partition)
	}
	last := md.Segments[len(md.Segments)-1]
	obj := Replica{Topic: topic, TopicID: topicID, Partition: partition}.objects()
	object := func(ext string) ([]byte, error) {
		size, ok := last.Sizes[ext]
		if !ok || size == 0 {
			return nil, nil
		}
		return m.cfg.Store.GetRange(ctx, last.Key(obj, ext), 0, size)
	}
	epochs, err := object("epochs")
	if err != nil {
		return err
	}
	snapshot, err := object("snapshot")
	if err != nil {
		return err
	}
	start := leaderLogStart
	if start < 0 || start > last.EndOffset {
		start = md.StartOffset()
	}
	m.cfg.Logger.Info("tiered storage: follower restarts above the remote log", "topic", topic, "partition", partition,
		"log_start", start, "at", last.EndOffset)
	return l.StartAtRemote(start, last.EndOffset, epochs, snapshot)
}

// AbortedTxns lists the aborted transactions with records in [from,
// upper) of a remote read (Fetch's AbortedTransactions at
// read_committed), as Kafka's remote fetch: from the transaction indexes
// of the remote segments from the one serving from on, then, for aborts
// whose marker is not copied yet, from the local log l.
func (m *Manager) AbortedTxns(ctx context.Context, topic string, topicID [16]byte, partition int32, l *logstore.Log, from, upper int64) ([]logstore.AbortedTxn, error) {
	obj := Replica{Topic: topic, TopicID: topicID, Partition: partition}.objects()
	md, err := m.Metadata(ctx, topicID, partition)
	if err != nil {
		return nil, err
	}
	out := []logstore.AbortedTxn{}
	for _, seg := range md.Segments {
		if seg.EndOffset <= from {
			continue
		}
		var done bool
		if out, done, err = m.reader.aborted(ctx, obj, seg, out, from, upper); err != nil || done {
			return out, err
		}
	}
	return append(out, l.AbortedTxns(max(from, md.CopiedEnd()), upper)...), nil
}

// OffsetForTimestamp answers ListOffsets by timestamp over the remote
// log, as Kafka searches it before the local one: the first offset at or
// above from (the log start offset) whose record's timestamp is at least
// ts, with that timestamp; found is false when no remote segment has
// one.
func (m *Manager) OffsetForTimestamp(ctx context.Context, topic string, topicID [16]byte, partition int32, ts, from int64) (offset, timestamp int64, found bool, err error) {
	obj := Replica{Topic: topic, TopicID: topicID, Partition: partition}.objects()
	md, err := m.Metadata(ctx, topicID, partition)
	if err != nil {
		return -1, -1, false, err
	}
	for _, seg := range md.Segments {
		if seg.EndOffset <= from || seg.MaxTimestamp < ts {
			continue
		}
		if offset, timestamp, found, err = m.reader.offsetForTimestamp(ctx, obj, seg, ts, max(from, seg.StartOffset)); err != nil || found {
			return offset, timestamp, found, err
		}
	}
	return -1, -1, false, nil
}

// DeleteTopic deletes every object of a deleted topic (all its
// partitions, under its topic id) and then its remote log metadata. Any
// broker may run it, several at once: deleting is idempotent. The
// topic's copies stop here for good.
func (m *Manager) DeleteTopic(ctx context.Context, topic string, topicID [16]byte) error {
	// No pass copies for it from now on; those under way are waited
	// for, so that no object they write outlives the deletion.
	m.mu.Lock()
	m.deleted[topicID] = true
	var under []chan struct{}
	for k, done := range m.running {
		if k.id == topicID {
			under = append(under, done)
		}
	}
	m.mu.Unlock()
	for _, done := range under {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	prefix := Replica{Topic: topic, TopicID: topicID}.objects().topicPrefix()
	objs, err := m.cfg.Store.List(ctx, prefix)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := m.cfg.Store.Delete(ctx, o.Key); err != nil {
			return err
		}
	}
	if err := m.cfg.Meta.DeleteRemoteLogMetadata(ctx, topicID); err != nil {
		return err
	}
	m.mu.Lock()
	for k := range m.cache {
		if k.id == topicID {
			delete(m.cache, k)
		}
	}
	m.mu.Unlock()
	m.cfg.Logger.Info("tiered storage: deleted the remote log of a deleted topic", "topic", topic, "objects", len(objs))
	return nil
}
