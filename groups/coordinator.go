package groups

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/coordinator"
)

// Log is the __consumer_offsets topic as the coordinator uses it. The
// broker implements it.
type Log interface {
	// Append writes recs to the partition as one batch and returns once
	// they are committed (acks=all), or with the error that kept them out.
	// The shard writes only in the leader epoch it loaded the partition
	// in (SetOwned's): once the partition has another epoch, even led
	// here again, the append is refused (FENCED_LEADER_EPOCH) rather than
	// written, since the log may then hold what other coordinators wrote.
	Append(ctx context.Context, partition, leaderEpoch int32, recs []Record) error
	// AppendTxn is Append in a transactional batch of the producer (a
	// TxnOffsetCommit), which the transaction's marker later settles.
	AppendTxn(ctx context.Context, partition, leaderEpoch int32, producerID int64, producerEpoch int16, recs []Record) error
	// Replay calls fn with every record of the partition, in offset order,
	// up to the committed end of its log, transaction markers included.
	Replay(ctx context.Context, partition int32, fn func(LogRecord)) error
}

// LogRecord is a record of __consumer_offsets as Replay reads it.
type LogRecord struct {
	Key, Value []byte
	ProducerID int64 // the producer of a transactional batch; -1 otherwise
	Control    bool  // a transaction marker, of a commit when Commit
	Commit     bool
}

// Config is the coordinator's part of the broker configuration.
type Config struct {
	Log        Log
	Partitions int32 // offsets.topic.num.partitions
	Logger     *slog.Logger

	InitialRebalanceDelay  time.Duration // group.initial.rebalance.delay.ms
	MinSessionTimeout      time.Duration // group.min.session.timeout.ms
	MaxSessionTimeout      time.Duration // group.max.session.timeout.ms
	MaxSize                int           // group.max.size
	OffsetsRetention       time.Duration // offsets.retention.minutes
	RetentionCheckInterval time.Duration // offsets.retention.check.interval.ms
	CommitTimeout          time.Duration // offsets.commit.timeout.ms
	MaxMetadataBytes       int           // offset.metadata.max.bytes

	// PartitionExists reports whether a topic partition exists; offsets of
	// unknown partitions are refused (UNKNOWN_TOPIC_OR_PARTITION).
	PartitionExists func(topic string, partition int32) bool

	// KIP-848 consumer groups (consumer_group.go).
	ConsumerSessionTimeout    time.Duration // group.consumer.session.timeout.ms
	ConsumerHeartbeatInterval time.Duration // group.consumer.heartbeat.interval.ms
	ConsumerMaxSize           int           // group.consumer.max.size
	ConsumerAssignors         []string      // group.consumer.assignors
	// ConsumerMigrationPolicy is group.consumer.migration.policy
	// (consumer_classic.go): bidirectional (the default, for ""),
	// upgrade, downgrade or disabled, in any case.
	ConsumerMigrationPolicy string
	// GroupSettings gives the settings of a group its group configs set
	// (settings.go); nil: the ones above for every group.
	GroupSettings func(group string) GroupSettings
	// Topics lists the topics that exist, the internal ones marked, for
	// the assignors.
	Topics func() []TopicMeta
	// KIP-932 share groups (share_group.go).
	ShareSessionTimeout    time.Duration // group.share.session.timeout.ms
	ShareHeartbeatInterval time.Duration // group.share.heartbeat.interval.ms
	ShareMaxSize           int           // group.share.max.size
	// ShareMemberLeft is told of a member removed from its share group
	// for missing its session timeout, so that the records it holds are
	// released (a member that leaves ends its share sessions itself). It
	// is called under the group's lock: it must not block or call back.
	ShareMemberLeft func(group, member string)
	// ShareInitialize starts the share-partitions of group on partitions
	// of topic at offset 0: they were newly assigned, on a topic of which
	// the group already has partitions with state (partitions added to
	// it, or left out by an admin's AlterShareGroupOffsets), which Kafka
	// 4.4 starts at 0 (KAFKA-20742) rather than at share.auto.offset.reset,
	// so that nothing produced to them before their first fetch is
	// skipped. Called without locks; the heartbeat's answer waits for it.
	ShareInitialize func(group, topic string, partitions []int32) error
	// KIP-1071 streams groups (streams_group.go); the per-group settings
	// are GroupSettings'.
	StreamsMaxSize int // group.streams.max.size
	// VerifyTxn checks with the transaction coordinator that the group's
	// __consumer_offsets partition is in the producer's transaction before
	// a TxnOffsetCommit is written (KIP-890 part 1); nil checks nothing.
	VerifyTxn func(ctx context.Context, txnID string, producerID int64, producerEpoch int16, partition int32, add bool) error
}

// Coordinator serves the groups of the __consumer_offsets partitions this
// broker leads.
type Coordinator struct {
	cfg Config
	log *slog.Logger
	rt  *coordinator.Runtime[*shard]
}

// New returns a coordinator that owns nothing until SetOwned.
func New(cfg Config) *Coordinator {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Partitions <= 0 {
		cfg.Partitions = 50
	}
	if cfg.MaxSize <= 0 {
		cfg.MaxSize = int(^uint(0) >> 1)
	}
	if cfg.CommitTimeout <= 0 {
		cfg.CommitTimeout = 5 * time.Second
	}
	if cfg.RetentionCheckInterval <= 0 {
		cfg.RetentionCheckInterval = 10 * time.Minute
	}
	if cfg.OffsetsRetention <= 0 {
		cfg.OffsetsRetention = 7 * 24 * time.Hour
	}
	if cfg.ConsumerSessionTimeout <= 0 {
		cfg.ConsumerSessionTimeout = 45 * time.Second
	}
	if cfg.ConsumerHeartbeatInterval <= 0 {
		cfg.ConsumerHeartbeatInterval = 5 * time.Second
	}
	if cfg.ConsumerMaxSize <= 0 {
		cfg.ConsumerMaxSize = int(^uint(0) >> 1)
	}
	if cfg.ShareSessionTimeout <= 0 {
		cfg.ShareSessionTimeout = 45 * time.Second
	}
	if cfg.ShareHeartbeatInterval <= 0 {
		cfg.ShareHeartbeatInterval = 5 * time.Second
	}
	if cfg.StreamsMaxSize <= 0 {
		cfg.StreamsMaxSize = int(^uint(0) >> 1)
	}
	if cfg.ShareMaxSize <= 0 {
		cfg.ShareMaxSize = 200
	}
	if cfg.Topics == nil {
		cfg.Topics = func() []TopicMeta { return nil }
	}
	if cfg.PartitionExists == nil {
		cfg.PartitionExists = func(string, int32) bool { return true }
	}
	c := &Coordinator{cfg: cfg, log: cfg.Logger}
	c.rt = coordinator.New(coordinator.Config[*shard]{
		Topic:         "__consumer_offsets",
		Logger:        cfg.Logger,
		New:           func(sh *coordinator.Shard) *shard { return newShard(c, sh) },
		AppendTimeout: cfg.CommitTimeout,
	})
	c.rt.Go(c.expiryLoop)
	return c
}

// PartitionFor is the __consumer_offsets partition that holds group.
func (c *Coordinator) PartitionFor(group string) int32 {
	return PartitionFor(group, c.cfg.Partitions)
}

// SetOwned tells the coordinator which __consumer_offsets partitions this
// broker leads now, each with its leader epoch. A partition gained (or
// regained under a new epoch) is loaded from its log in the background;
// one lost is unloaded at once, its waiting requests answered
// NOT_COORDINATOR.
func (c *Coordinator) SetOwned(owned map[int32]int32) { c.rt.SetOwned(owned) }

// Close unloads every shard and waits for the coordinator's goroutines.
func (c *Coordinator) Close() { c.rt.Close() }

// shardFor returns the active shard of a group, or the error a client gets
// for it: NOT_COORDINATOR where this broker does not lead the partition,
// COORDINATOR_LOAD_IN_PROGRESS while it is loading.
func (c *Coordinator) shardFor(group string) (*shard, error) {
	return c.rt.Get(c.PartitionFor(group))
}

// activeShards returns every active shard, and whether one is still loading.
func (c *Coordinator) activeShards() (active []*shard, loading bool) {
	return c.rt.Active()
}

// expiryLoop removes expired offsets every offsets.retention.check.interval.ms.
func (c *Coordinator) expiryLoop() {
	t := time.NewTicker(c.cfg.RetentionCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-c.rt.Context().Done():
			return
		case now := <-t.C:
			shards, _ := c.activeShards()
			for _, s := range shards {
				s.expireOffsets(now)
			}
		}
	}
}

type earlyMarker struct {
	pid    int64
	commit bool
}

// shard is one owned __consumer_offsets partition and its groups: the
// runtime's coordinator.Machine of the partition.
type shard struct {
	c     *Coordinator
	sh    *coordinator.Shard
	id    int32           // the partition
	epoch int32           // the leader epoch it was loaded in
	ctx   context.Context // ends when it is unloaded

	mu     sync.Mutex       // guards the shard's state (sh.State) too
	groups map[string]group // guarded by mu
	// Transaction markers told while the shard loads (CompleteTxn),
	// applied once it is loaded: the replay may have read the log before
	// them. Guarded by mu.
	earlyMarkers []earlyMarker
}

func newShard(c *Coordinator, sh *coordinator.Shard) *shard {
	return &shard{c: c, sh: sh, id: sh.Partition(), epoch: sh.Epoch(), ctx: sh.Context(),
		groups: make(map[string]group)}
}

func (s *shard) Lock()   { s.mu.Lock() }
func (s *shard) Unlock() { s.mu.Unlock() }

// active reports whether the shard is loaded and still owned; the caller
// holds s.mu.
func (s *shard) active() bool { return s.sh.Active() }

// Load replays the partition's log into groups and offsets, which
// install makes the shard's. Members of groups loaded with members must
// heartbeat within their session timeout, as after a coordinator move in
// Kafka.
func (s *shard) Load(ctx context.Context) (install func(), err error) {
	start := time.Now()
	l := newLoader(s, start)
	n := 0
	err = s.c.cfg.Log.Replay(ctx, s.id, func(r LogRecord) {
		n++
		l.apply(r)
	})
	if err != nil {
		return nil, err
	}
	return func() {
		for _, m := range s.earlyMarkers {
			for _, g := range l.groups {
				g.core().completeTxn(m.pid, m.commit)
			}
		}
		s.earlyMarkers = nil
		for id, g := range l.groups {
			if g, ok := g.(*classicGroup); ok && g.unused() {
				continue
			}
			s.groups[id] = g
			g.afterLoad()
		}
		s.c.log.Info("loaded __consumer_offsets partition", "partition", s.id, "epoch", s.epoch,
			"records", n, "groups", len(s.groups), "took", time.Since(start))
	}, nil
}

// Unloaded ends the shard's groups: timers stop, waiting requests get
// NOT_COORDINATOR.
func (s *shard) Unloaded() {
	for _, g := range s.groups {
		g.shutdown()
	}
	s.groups = map[string]group{}
}

// enqueue queues recs for the shard's writer; done runs after the append.
// The caller holds s.mu, so the order of writes is the order of the state
// changes they record.
func (s *shard) enqueue(recs []Record, done func(error)) {
	s.enqueueWrite(write{recs: recs, done: done, pid: -1})
}

// write is one append of the shard's writer, and what to do once it is
// committed (or failed): done runs without any lock held.
type write struct {
	recs []Record
	done func(error)
	// A TxnOffsetCommit's records go in a transactional batch of this
	// producer; -1 otherwise.
	pid   int64
	epoch int16
}

// enqueueWrite is enqueue of a write, transactional or not.
func (s *shard) enqueueWrite(w write) {
	s.sh.Enqueue(coordinator.Write{Done: w.done, Append: func(ctx context.Context) error {
		if w.pid >= 0 {
			return s.c.cfg.Log.AppendTxn(ctx, s.id, s.epoch, w.pid, w.epoch, w.recs)
		}
		return s.c.cfg.Log.Append(ctx, s.id, s.epoch, w.recs)
	}})
}

// groupShard is shardFor, refusing the empty group id (INVALID_GROUP_ID).
func (c *Coordinator) groupShard(group string) (*shard, error) {
	if group == "" {
		return nil, kerr.InvalidGroupID
	}
	return c.shardFor(group)
}
