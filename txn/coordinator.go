package txn

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/coordinator"
	"github.com/samsa-io/samsa/protocol"
)

// Log is the __transaction_state topic as the coordinator uses it. The
// broker implements it.
type Log interface {
	// Append writes one record (a nil value is a tombstone) to a partition
	// this broker leads in leader epoch leaderEpoch (the one the shard
	// loaded it in) and returns once it is committed (acks=all), or with
	// the error that kept it out: FENCED_LEADER_EPOCH once the partition
	// has another epoch, even led here again.
	Append(ctx context.Context, partition, leaderEpoch int32, key, value []byte) error
	// Replay calls fn with every record of the partition, in offset order,
	// up to the end of its log.
	Replay(ctx context.Context, partition int32, fn func(key, value []byte)) error
}

// Marker is one transaction's COMMIT or ABORT, for the leaders of its
// partitions (one WriteTxnMarkers entry).
type Marker struct {
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32 // the leader epoch of the __transaction_state partition
	// TransactionVersion is the transaction's (WriteTxnMarkers v2,
	// KIP-1228): from TV2 the marker's epoch is the bumped one, newer than
	// that of the transaction's batches.
	TransactionVersion int8
	Partitions         []TopicPartition
}

// Markers delivers markers to partition leaders. The broker implements it
// with WriteTxnMarkers requests, as Kafka's coordinator sends them.
type Markers interface {
	// Write sends the marker to the leader of each of its partitions and
	// returns the outcome per partition: nil once the marker is in that
	// partition's log, ErrPartitionGone when the partition no longer
	// exists, kerr.TransactionCoordinatorFenced when a newer coordinator
	// wrote to it, any other error to try again.
	Write(ctx context.Context, m Marker) map[TopicPartition]error
}

// ErrPartitionGone: a partition of a transaction was deleted; it needs no
// marker.
var ErrPartitionGone = errors.New("txn: partition no longer exists")

// Config is the coordinator's part of the broker configuration.
type Config struct {
	Log        Log
	Markers    Markers
	Partitions int32 // transaction.state.log.num.partitions
	Logger     *slog.Logger
	// NewProducerID hands out a producer id unique in the cluster.
	NewProducerID func(ctx context.Context) (int64, error)

	MaxTimeout       time.Duration // transaction.max.timeout.ms
	IDExpiration     time.Duration // transactional.id.expiration.ms
	AbortInterval    time.Duration // transaction.abort.timed.out.transaction.cleanup.interval.ms
	RemoveInterval   time.Duration // transaction.remove.expired.transaction.cleanup.interval.ms
	AppendTimeout    time.Duration // how long one write of the state may take
	MarkerRetryDelay time.Duration // between rounds of markers to partitions that failed

	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Coordinator serves the transactional ids of the __transaction_state
// partitions this broker leads.
type Coordinator struct {
	cfg Config
	log *slog.Logger
	rt  *coordinator.Runtime[*shard]
}

// New returns a coordinator that owns nothing until SetOwned.
func New(cfg Config) *Coordinator {
	if cfg.MaxTimeout <= 0 {
		cfg.MaxTimeout = 15 * time.Minute
	}
	if cfg.IDExpiration <= 0 {
		cfg.IDExpiration = 7 * 24 * time.Hour
	}
	if cfg.AbortInterval <= 0 {
		cfg.AbortInterval = 10 * time.Second
	}
	if cfg.RemoveInterval <= 0 {
		cfg.RemoveInterval = time.Hour
	}
	if cfg.MarkerRetryDelay <= 0 {
		cfg.MarkerRetryDelay = 100 * time.Millisecond
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Coordinator{cfg: cfg}
	c.rt = coordinator.New(coordinator.Config[*shard]{
		Topic:         "__transaction_state",
		Partitions:    cfg.Partitions,
		Logger:        cfg.Logger,
		New:           func(sh *coordinator.Shard) *shard { return newShard(c, sh) },
		AppendTimeout: cfg.AppendTimeout,
	})
	c.log = c.rt.Logger()
	c.rt.Go(func() { c.every(c.cfg.AbortInterval, c.AbortTimedOut) })
	c.rt.Go(func() { c.every(c.cfg.RemoveInterval, c.ExpireIDs) })
	return c
}

// PartitionFor is the __transaction_state partition of a transactional
// id: Kafka's abs(id.hashCode) % partitions.
func (c *Coordinator) PartitionFor(id string) int32 {
	return protocol.CoordinatorPartition(id, c.rt.Partitions())
}

// SetOwned tells the coordinator which __transaction_state partitions this
// broker leads now, each with its leader epoch (the coordinator epoch of
// its markers). A partition gained, or regained under a new epoch, is
// loaded in the background and its prepared transactions completed; one
// lost is dropped at once.
func (c *Coordinator) SetOwned(owned map[int32]int32) { c.rt.SetOwned(owned) }

// Close drops every shard and waits for the coordinator's goroutines.
func (c *Coordinator) Close() { c.rt.Close() }

// goShard runs f in a goroutine Close waits for, unless Close has begun.
func (c *Coordinator) goShard(f func()) { c.rt.Go(f) }

// shardFor returns the active shard of a transactional id, or the error a
// client gets: NOT_COORDINATOR where this broker does not lead its
// partition, COORDINATOR_LOAD_IN_PROGRESS while it loads.
func (c *Coordinator) shardFor(id string) (*shard, error) {
	return c.rt.Get(c.PartitionFor(id))
}

// activeShards returns every active shard, and whether one still loads.
func (c *Coordinator) activeShards() (active []*shard, loading bool) {
	return c.rt.Active()
}

// shard is one owned __transaction_state partition and its ids: the
// runtime's coordinator.Machine of the partition.
type shard struct {
	c     *Coordinator
	sh    *coordinator.Shard
	id    int32           // the partition
	epoch int32           // the leader epoch it was loaded in
	ctx   context.Context // ends when it is unloaded

	mu   sync.Mutex          // guards the shard's state (sh.State) too
	txns map[string]*txnMeta // guarded by mu
}

func newShard(c *Coordinator, sh *coordinator.Shard) *shard {
	return &shard{c: c, sh: sh, id: sh.Partition(), epoch: sh.Epoch(), ctx: sh.Context(), txns: map[string]*txnMeta{}}
}

func (s *shard) Lock()   { s.mu.Lock() }
func (s *shard) Unlock() { s.mu.Unlock() }

// active reports whether the shard is loaded and still owned; the caller
// holds s.mu.
func (s *shard) active() bool { return s.sh.Active() }

// Unloaded drops the shard's ids.
func (s *shard) Unloaded() { s.txns = map[string]*txnMeta{} }

// Load replays the partition into ids that install makes the shard's,
// completing every transaction left prepared by the previous coordinator.
func (s *shard) Load(ctx context.Context) (install func(), err error) {
	start := time.Now()
	loaded := map[string]*txnMeta{}
	n := 0
	err = s.c.cfg.Log.Replay(ctx, s.id, func(key, value []byte) {
		n++
		id, ok, err := parseKey(key)
		if err != nil || !ok {
			if err != nil {
				s.c.log.Warn("skipping unreadable __transaction_state record", "partition", s.id, "err", err)
			}
			return
		}
		if value == nil {
			delete(loaded, id)
			return
		}
		m, err := parseValue(id, value)
		if err != nil {
			s.c.log.Warn("skipping unreadable transaction state", "transactional_id", id, "err", err)
			return
		}
		loaded[id] = m
	})
	if err != nil {
		return nil, err
	}
	return func() {
		var prepared []*txnMeta
		for id, m := range loaded {
			if m.state == Dead {
				continue
			}
			if m.state == PrepareEpochFence { // never written by Kafka; an abort in the making
				m.state = PrepareAbort
			}
			s.txns[id] = m
			if m.state == PrepareCommit || m.state == PrepareAbort {
				prepared = append(prepared, m)
			}
		}
		s.c.log.Info("loaded __transaction_state partition", "partition", s.id, "epoch", s.epoch,
			"records", n, "transactional_ids", len(s.txns), "prepared", len(prepared), "took", time.Since(start))
		for _, m := range prepared {
			s.startCompletion(m)
		}
	}, nil
}

// write appends target, the next state of m, and applies it once
// committed. The caller holds s.mu, which write releases while the record
// is written: m is marked pending meanwhile, and every other change of it
// is refused with CONCURRENT_TRANSACTIONS. On return s.mu is held again.
func (s *shard) write(m *txnMeta, target txnMeta) error {
	m.pending = true
	s.mu.Unlock()
	err := s.sh.Append(func(ctx context.Context) error {
		return s.c.cfg.Log.Append(ctx, s.id, s.epoch, recordKey(m.id), recordValue(&target))
	})
	s.mu.Lock()
	m.pending = false
	if err != nil {
		return err
	}
	if !s.active() || s.txns[m.id] != m {
		return kerr.NotCoordinator
	}
	*m = target
	return nil
}

func (c *Coordinator) nowMs() int64 { return c.cfg.Now().UnixMilli() }
