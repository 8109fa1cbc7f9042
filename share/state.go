package share

// The share coordinator: share-group state (KIP-932) in
// __share_group_state, as Kafka keeps it. A share-partition's state lives
// in partition abs(hash("group:topicId:partition")) %
// share.coordinator.state.topic.num.partitions, as ShareSnapshot records,
// and the leader of that partition serves ReadShareGroupState and
// WriteShareGroupState to the share-partition leaders (the broker's
// handlers call StateCoordinator). Here every write is a whole snapshot;
// the coordinator keeps the latest of each share-partition of the state
// partitions it leads, loaded by replaying the partition once per leader
// epoch (package coordinator's runtime).

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/coordinator"
	"github.com/samsa-io/samsa/protocol"
)

// StateTopic is Kafka's share-group state topic.
const StateTopic = "__share_group_state"

// StateLog is __share_group_state as the share coordinator uses it. The
// broker implements it.
type StateLog interface {
	// Append writes one record to a partition this broker leads in
	// leaderEpoch (the one the shard loaded it in) and returns once it is
	// committed, or with the error that kept it out: FENCED_LEADER_EPOCH
	// once the partition has another epoch, even led here again.
	Append(ctx context.Context, partition, leaderEpoch int32, key, value []byte) error
	// Replay calls fn with every record of the partition but transaction
	// markers, in offset order, up to the end of its log.
	Replay(ctx context.Context, partition int32, fn func(offset int64, key, value []byte)) error
}

// StateConfig is the share coordinator's part of the broker configuration.
type StateConfig struct {
	Log        StateLog
	Partitions int32 // share.coordinator.state.topic.num.partitions
	Logger     *slog.Logger
	// AppendTimeout bounds one write of a snapshot.
	AppendTimeout time.Duration
}

// StateCoordinator serves the share-group state of the __share_group_state
// partitions this broker leads.
type StateCoordinator struct {
	cfg StateConfig
	log *slog.Logger
	rt  *coordinator.Runtime[*stateShard]
}

// NewStateCoordinator returns a share coordinator that owns nothing until
// SetOwned.
func NewStateCoordinator(cfg StateConfig) *StateCoordinator {
	c := &StateCoordinator{cfg: cfg}
	c.rt = coordinator.New(coordinator.Config[*stateShard]{
		Topic:      StateTopic,
		Partitions: cfg.Partitions,
		Logger:     cfg.Logger,
		New: func(sh *coordinator.Shard) *stateShard {
			return &stateShard{c: c, sh: sh, snaps: map[Key]Snapshot{}}
		},
		AppendTimeout: cfg.AppendTimeout,
	})
	c.log = c.rt.Logger()
	return c
}

// PartitionFor is the __share_group_state partition of k (Kafka's
// SharePartitionKey.asCoordinatorKey, hashed as a group id is).
func (c *StateCoordinator) PartitionFor(k Key) int32 {
	key := k.Group + ":" + base64.RawURLEncoding.EncodeToString(k.TopicID[:]) + ":" + strconv.Itoa(int(k.Partition))
	return protocol.CoordinatorPartition(key, c.rt.Partitions())
}

// SetOwned tells the coordinator which __share_group_state partitions this
// broker leads now, each with its leader epoch. A partition gained (or
// regained under a new epoch) is loaded in the background; one lost is
// dropped at once.
func (c *StateCoordinator) SetOwned(owned map[int32]int32) { c.rt.SetOwned(owned) }

// Close drops every shard and waits for the coordinator's goroutines.
func (c *StateCoordinator) Close() { c.rt.Close() }

// Read is the latest snapshot of k, and whether it has one: NOT_COORDINATOR
// where this broker does not lead k's state partition,
// COORDINATOR_LOAD_IN_PROGRESS while it loads.
func (c *StateCoordinator) Read(k Key) (Snapshot, bool, error) {
	s, err := c.rt.Get(c.PartitionFor(k))
	if err != nil {
		return Snapshot{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.sh.Active() {
		return Snapshot{}, false, kerr.NotCoordinator
	}
	snap, ok := s.snaps[k]
	return snap, ok, nil
}

// Write appends snap, k's new state, and makes it the latest, fencing
// writers as Kafka's share coordinator does: a state epoch older than the
// state's (an admin reset or deleted it since) is FENCED_STATE_EPOCH, an
// older leader epoch of the share-partition (a former leader) at the same
// state epoch FENCED_LEADER_EPOCH. The writes of one state partition go
// one at a time, the check, the append and the update as one: two writers
// checked against the same state would both pass, and the older one could
// land last. A failed append is answered as package coordinator maps it:
// NOT_COORDINATOR once the state partition moved, since the state checked
// may be stale (not the share-partition's FENCED_LEADER_EPOCH: its leader
// asks the coordinator again).
func (c *StateCoordinator) Write(k Key, snap Snapshot) error {
	s, err := c.rt.Get(c.PartitionFor(k))
	if err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	cur, ok := s.snaps[k]
	active := s.sh.Active()
	s.mu.Unlock()
	switch {
	case !active:
		return kerr.NotCoordinator
	case ok && snap.StateEpoch < cur.StateEpoch:
		return fmt.Errorf("%w: state epoch %d, the state has %d", kerr.FencedStateEpoch, snap.StateEpoch, cur.StateEpoch)
	case ok && snap.StateEpoch == cur.StateEpoch && snap.LeaderEpoch < cur.LeaderEpoch:
		return fmt.Errorf("%w: leader epoch %d, the state was written at %d", kerr.FencedLeaderEpoch, snap.LeaderEpoch, cur.LeaderEpoch)
	}
	key, value := EncodeKey(k), EncodeSnapshot(snap)
	if err := s.sh.Append(func(ctx context.Context) error {
		return c.cfg.Log.Append(ctx, s.sh.Partition(), s.sh.Epoch(), key, value)
	}); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.sh.Active() {
		return kerr.NotCoordinator
	}
	s.snaps[k] = snap
	return nil
}

// stateShard is one owned __share_group_state partition and the latest
// snapshot of each of its share-partitions: the runtime's
// coordinator.Machine of the partition.
type stateShard struct {
	c  *StateCoordinator
	sh *coordinator.Shard

	wmu sync.Mutex // one Write at a time; taken before mu

	mu    sync.Mutex       // guards the shard's state (sh.State) too
	snaps map[Key]Snapshot // guarded by mu
}

func (s *stateShard) Lock()   { s.mu.Lock() }
func (s *stateShard) Unlock() { s.mu.Unlock() }

// Load replays the partition's snapshots.
func (s *stateShard) Load(ctx context.Context) (func(), error) {
	start := time.Now()
	snaps := map[Key]Snapshot{}
	n := 0
	err := s.c.cfg.Log.Replay(ctx, s.sh.Partition(), func(offset int64, key, value []byte) {
		n++
		k, ok, err := DecodeKey(key)
		if err != nil || !ok {
			return
		}
		if value == nil {
			delete(snaps, k)
			return
		}
		// Only snapshots are written here; an update record would be a
		// delta of another writer's, which this coordinator does not
		// apply.
		if len(key) >= 2 && key[1] != 0 {
			return
		}
		if snap, err := DecodeSnapshot(value, false); err == nil {
			snaps[k] = snap
		} else {
			s.c.log.Warn("share state record unreadable", "partition", s.sh.Partition(), "offset", offset, "err", err)
		}
	})
	if err != nil {
		return nil, err
	}
	return func() {
		s.snaps = snaps
		s.c.log.Info("loaded "+StateTopic+" partition", "partition", s.sh.Partition(), "epoch", s.sh.Epoch(),
			"records", n, "share_partitions", len(snaps), "took", time.Since(start))
	}, nil
}

// Unloaded drops the shard's snapshots.
func (s *stateShard) Unloaded() { s.snaps = map[Key]Snapshot{} }
