// Package coordinator is the runtime of a coordinator over an internal
// compacted topic: the group coordinator (__consumer_offsets, package
// groups), the transaction coordinator (__transaction_state, package txn)
// and the share coordinator (__share_group_state, package share) use it,
// each supplying only its record schema and state machine.
//
// A Runtime owns the topic's partitions this broker leads, each as a Shard
// of the leader epoch it was gained in (SetOwned). A shard gained, or
// regained under another epoch, loads in the background: the coordinator's
// Machine replays the partition into state nobody sees yet, and installs
// it once the replay is done, unless the shard was unloaded meanwhile. A
// shard lost is unloaded at once: its context ends, its machine drops its
// state, its queued writes fail with NOT_COORDINATOR. Until it is loaded a
// lookup answers COORDINATOR_LOAD_IN_PROGRESS; where no shard is, it
// answers NOT_COORDINATOR.
//
// A shard appends only in the leader epoch it loaded its partition in (the
// coordinator's log refuses any other with FENCED_LEADER_EPOCH), so that a
// stale shard cannot write after a newer one has loaded the log without
// its write. Appends go either through the shard's write queue (Enqueue:
// one at a time, in the order queued, which is the order of the state
// changes they record when queued under the machine's lock) or directly
// (Append); either way their errors reach the client as Kafka's
// coordinators map them (AppendError).
//
// Every goroutine of a runtime, its coordinator's included, is started by
// Go, which Close waits for and which starts nothing once Close has begun.
//
// A new coordinator over another internal topic (say a schema registry's
// _schemas writer) supplies a Machine whose Load replays the topic's
// records into its state and whose writes are Enqueue'd with the records
// of each state change, its Log appending them with the shard's Epoch; it
// feeds SetOwned with the partitions of its topic that this broker leads,
// as the broker does for the group and transaction coordinators.
package coordinator

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Machine is a coordinator's state of one partition.
type Machine interface {
	// Lock and Unlock guard the machine's state and its shard's State.
	sync.Locker
	// Load replays the partition's log (ctx ends when the shard is
	// unloaded) into state not yet visible, and returns what makes it
	// the shard's: install runs with the lock held, once the shard is
	// Active, and only when the shard was not unloaded meanwhile. An
	// error gives the partition up, so that a later SetOwned retries.
	Load(ctx context.Context) (install func(), err error)
	// Unloaded drops the machine's state, with the lock held, once its
	// shard is Gone.
	Unloaded()
}

// Config is a runtime's.
type Config[M Machine] struct {
	Topic string // for logs
	// Partitions is the topic's partition count: 50 (the default of
	// each of Kafka's internal topics) when not set.
	Partitions int32
	Logger     *slog.Logger // discards when nil
	// New makes the machine of a partition gained; sh is its shard.
	New func(sh *Shard) M
	// AppendTimeout bounds one append of a shard (Enqueue's or Append's).
	AppendTimeout time.Duration
}

// State is a shard's.
type State int

const (
	Loading State = iota
	Active
	Gone
)

// Runtime owns the partitions of an internal topic that this broker leads.
type Runtime[M Machine] struct {
	cfg Config[M]
	log *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	shards map[int32]*entry[M] // guarded by mu; the partitions owned now
	closed bool                // guarded by mu

	// spawnMu guards stopping; it is taken after mu, a machine's lock
	// or a shard's queue lock, never before them, so that a goroutine
	// can be started under any of them.
	spawnMu  sync.Mutex
	stopping bool
}

type entry[M Machine] struct {
	sh *Shard
	m  M
}

// New returns a runtime that owns nothing until SetOwned.
func New[M Machine](cfg Config[M]) *Runtime[M] {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Partitions <= 0 {
		cfg.Partitions = 50
	}
	if cfg.AppendTimeout <= 0 {
		cfg.AppendTimeout = 5 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Runtime[M]{cfg: cfg, log: cfg.Logger, ctx: ctx, cancel: cancel, shards: map[int32]*entry[M]{}}
}

// Partitions is the topic's partition count, which a coordinator hashes
// its keys over.
func (r *Runtime[M]) Partitions() int32 { return r.cfg.Partitions }

// Logger is the runtime's logger, which its coordinator logs with too.
func (r *Runtime[M]) Logger() *slog.Logger { return r.log }

// Context ends when the runtime closes.
func (r *Runtime[M]) Context() context.Context { return r.ctx }

// Go runs f in a goroutine Close waits for, unless Close has begun; it
// reports whether it did.
func (r *Runtime[M]) Go(f func()) bool {
	r.spawnMu.Lock()
	defer r.spawnMu.Unlock()
	if r.stopping {
		return false
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		f()
	}()
	return true
}

// SetOwned tells the runtime which partitions this broker leads now, each
// with its leader epoch. A partition gained (or regained under a new
// epoch) is loaded in the background; one lost is unloaded at once.
func (r *Runtime[M]) SetOwned(owned map[int32]int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	for p, e := range r.shards {
		if epoch, ok := owned[p]; !ok || epoch != e.sh.epoch {
			delete(r.shards, p)
			e.unload()
		}
	}
	for p, epoch := range owned {
		if _, ok := r.shards[p]; ok {
			continue
		}
		ctx, cancel := context.WithCancel(r.ctx)
		sh := &Shard{partition: p, epoch: epoch, ctx: ctx, cancel: cancel,
			spawn: r.Go, timeout: r.cfg.AppendTimeout, wake: make(chan struct{}, 1)}
		m := r.cfg.New(sh)
		sh.lock = m
		e := &entry[M]{sh: sh, m: m}
		r.shards[p] = e
		r.Go(func() { r.load(e) })
	}
}

// Close unloads every shard and waits for the runtime's goroutines.
func (r *Runtime[M]) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	shards := r.shards
	r.shards = map[int32]*entry[M]{}
	r.mu.Unlock()
	r.spawnMu.Lock()
	r.stopping = true
	r.spawnMu.Unlock()
	r.cancel()
	for _, e := range shards {
		e.unload()
	}
	r.wg.Wait()
}

// Get returns the machine of an active shard of partition, or the error a
// client gets for it: NOT_COORDINATOR where this broker does not lead the
// partition, COORDINATOR_LOAD_IN_PROGRESS while it is loading.
func (r *Runtime[M]) Get(partition int32) (M, error) {
	var zero M
	r.mu.Lock()
	e := r.shards[partition]
	r.mu.Unlock()
	if e == nil {
		return zero, kerr.NotCoordinator
	}
	e.m.Lock()
	st := e.sh.state
	e.m.Unlock()
	switch st {
	case Loading:
		return zero, kerr.CoordinatorLoadInProgress
	case Active:
		return e.m, nil
	}
	return zero, kerr.NotCoordinator
}

// Lookup returns the machine of partition whatever its shard's state.
func (r *Runtime[M]) Lookup(partition int32) (M, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.shards[partition]
	if e == nil {
		var zero M
		return zero, false
	}
	return e.m, true
}

// Active returns the machines of every active shard, and whether a shard
// is still loading.
func (r *Runtime[M]) Active() (active []M, loading bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.shards {
		e.m.Lock()
		switch e.sh.state {
		case Active:
			active = append(active, e.m)
		case Loading:
			loading = true
		}
		e.m.Unlock()
	}
	return active, loading
}

// load replays a shard's partition and makes it active.
func (r *Runtime[M]) load(e *entry[M]) {
	install, err := e.m.Load(e.sh.ctx)
	if err != nil {
		e.m.Lock()
		loading := e.sh.state == Loading
		e.m.Unlock()
		if loading {
			// The partition could not be read: give it up, so that a
			// later SetOwned retries.
			r.log.Error("loading "+r.cfg.Topic+" partition failed", "partition", e.sh.partition, "err", err)
			r.mu.Lock()
			if r.shards[e.sh.partition] == e {
				delete(r.shards, e.sh.partition)
			}
			r.mu.Unlock()
			e.unload()
		}
		return
	}
	e.m.Lock()
	defer e.m.Unlock()
	if e.sh.state != Loading {
		return // unloaded meanwhile
	}
	e.sh.state = Active
	if install != nil {
		install()
	}
}

// unload ends the shard: its context ends, its machine drops its state,
// its queued writes fail.
func (e *entry[M]) unload() {
	e.sh.cancel()
	e.m.Lock()
	e.sh.state = Gone
	e.m.Unloaded()
	e.m.Unlock()
	e.sh.closeQueue()
}

// Shard is one owned partition, in the leader epoch it was gained in.
type Shard struct {
	partition, epoch int32
	ctx              context.Context // ends when the shard is unloaded
	cancel           context.CancelFunc
	spawn            func(func()) bool
	timeout          time.Duration

	lock  sync.Locker // the machine's
	state State       // guarded by lock

	wmu     sync.Mutex
	queue   []Write       // guarded by wmu
	wake    chan struct{} // one token: the queue has work, or closed
	closed  bool          // guarded by wmu
	writing bool          // guarded by wmu; the writer has been started
}

// Partition is the shard's partition.
func (s *Shard) Partition() int32 { return s.partition }

// Epoch is the leader epoch the shard was gained, and loaded, in: the only
// one it appends in.
func (s *Shard) Epoch() int32 { return s.epoch }

// Context ends when the shard is unloaded.
func (s *Shard) Context() context.Context { return s.ctx }

// State is the shard's; the caller holds the machine's lock.
func (s *Shard) State() State { return s.state }

// Active reports whether the shard is loaded and still owned; the caller
// holds the machine's lock.
func (s *Shard) Active() bool { return s.state == Active }

// Write is one append of a shard's write queue.
type Write struct {
	// Append writes the records, in the shard's Epoch; ctx ends at the
	// runtime's append timeout or when the shard is unloaded.
	Append func(ctx context.Context) error
	// Done is told the outcome (AppendError's mapping of a failure),
	// without any lock of the runtime held.
	Done func(error)
}

// Enqueue queues w for the shard's writer, which appends its writes one
// after another in the order queued; a caller that holds the machine's
// lock thus writes state changes in the order they were made. Once the
// shard is unloaded, w fails with NOT_COORDINATOR, whether queued before
// or after.
func (s *Shard) Enqueue(w Write) {
	s.wmu.Lock()
	if !s.closed && !s.writing {
		s.writing = s.spawn(s.writeLoop)
		if !s.writing {
			s.closed = true // the runtime is closing
		}
	}
	if s.closed {
		s.wmu.Unlock()
		go w.Done(kerr.NotCoordinator)
		return
	}
	s.queue = append(s.queue, w)
	s.wmu.Unlock()
	s.signal()
}

func (s *Shard) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Shard) closeQueue() {
	s.wmu.Lock()
	s.closed = true
	s.wmu.Unlock()
	s.signal()
}

// writeLoop appends queued writes one after another.
func (s *Shard) writeLoop() {
	for {
		s.wmu.Lock()
		q := s.queue
		s.queue = nil
		closed := s.closed
		s.wmu.Unlock()
		for _, w := range q {
			if closed || s.ctx.Err() != nil {
				// Unloaded since the write was queued: a newer shard
				// may have loaded the log already.
				w.Done(kerr.NotCoordinator)
				continue
			}
			w.Done(s.Append(w.Append))
		}
		if closed {
			return
		}
		if len(q) == 0 {
			<-s.wake
		}
	}
}

// Append runs fn, an append of the shard's, with the runtime's append
// timeout, and returns its error as AppendError maps it.
func (s *Shard) Append(fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(s.ctx, s.timeout)
	err := fn(ctx)
	cancel()
	if err != nil {
		return AppendError(err, s.ctx.Err() != nil)
	}
	return nil
}

// AppendError maps a failed append of coordinator state to what the client
// of the request gets, as Kafka's coordinators map them: NOT_COORDINATOR
// once the shard was unloaded.
func AppendError(err error, unloaded bool) error {
	if unloaded {
		return kerr.NotCoordinator
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		switch ke {
		case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
			return kerr.CoordinatorNotAvailable
		case kerr.NotLeaderForPartition, kerr.KafkaStorageError, kerr.FencedLeaderEpoch, kerr.UnknownLeaderEpoch:
			return kerr.NotCoordinator
		case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
			return kerr.UnknownServerError
		}
		return ke
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return kerr.CoordinatorNotAvailable
	}
	return kerr.NotCoordinator
}
