package broker

// Share-group state (KIP-932) in __share_group_state, as Kafka keeps it: a
// share-partition's state lives in partition
// abs(hash("group:topicId:partition")) % share.coordinator.state.topic.num.partitions,
// as ShareSnapshot records, and the leader of that partition (the share
// coordinator) serves ReadShareGroupState v0 and WriteShareGroupState v0-1
// to the share-partition leaders. Here every write is a whole snapshot;
// the coordinator keeps the latest of each share-partition it leads,
// loaded by replaying its partition once per leader epoch.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/logstore"
	kproto "github.com/samsa-io/samsa/protocol"
	"github.com/samsa-io/samsa/security"
	"github.com/samsa-io/samsa/share"
)

// shareStateTopic is Kafka's share-group state topic.
const shareStateTopic = "__share_group_state"

// shareStore is share.Store over __share_group_state.
type shareStore struct {
	b *Broker

	mu     sync.Mutex
	loaded map[int32]int32              // guarded by mu; state partition -> leader epoch its snapshots were loaded at
	snaps  map[share.Key]share.Snapshot // guarded by mu
	// parts serialise the reads and writes of each state partition: a
	// write's fencing check, its append and the cache's update happen
	// as one, and a load's replay sees every write before it.
	parts map[int32]*sync.Mutex // guarded by mu
}

func newShareStore(b *Broker) *shareStore {
	return &shareStore{b: b, loaded: map[int32]int32{}, snaps: map[share.Key]share.Snapshot{}, parts: map[int32]*sync.Mutex{}}
}

// partLock is the lock of state partition part.
func (s *shareStore) partLock(part int32) *sync.Mutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.parts[part]
	if l == nil {
		l = new(sync.Mutex)
		s.parts[part] = l
	}
	return l
}

// partitionFor is the __share_group_state partition of k (Kafka's
// SharePartitionKey.asCoordinatorKey, hashed as a group id is).
func (s *shareStore) partitionFor(k share.Key) int32 {
	key := k.Group + ":" + base64.RawURLEncoding.EncodeToString(k.TopicID[:]) + ":" + strconv.Itoa(int(k.Partition))
	return kproto.CoordinatorPartition(key, s.b.settings.ShareStateNumPartitions)
}

// coordinator is the broker that leads k's state partition, and whether
// that is this one (with the partition's leader epoch).
func (s *shareStore) coordinator(ctx context.Context, k share.Key) (leader int32, local bool, epoch int32, err error) {
	if err := s.b.ensureShareStateTopic(ctx); err != nil {
		return -1, false, 0, err
	}
	// A new topic's leaders take a moment to be elected and known here.
	for range 50 {
		p := s.b.meta.partition(shareStateTopic, s.partitionFor(k))
		if p != nil {
			if _, e, err := s.b.replicas.Leading(p, -1); err == nil {
				return s.b.nodeID, true, e, nil
			}
			if l, _, _, _ := p.State(); l >= 0 && l != s.b.nodeID {
				return l, false, 0, nil
			}
		}
		select {
		case <-ctx.Done():
			return -1, false, 0, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		_, _ = s.b.syncCachedMetadata(ctx)
	}
	return -1, false, 0, kerr.CoordinatorNotAvailable
}

// shareStateAttempts bounds the tries of one read or write of share state
// whose coordinator answers that it is not (or not yet) the coordinator:
// right after __share_group_state is made, or its leadership moved, the
// brokers' views of its leaders differ for a moment. Kafka's persister
// looks the coordinator up again and retries as well.
const shareStateAttempts = 8

// retry runs op until it succeeds, fails otherwise than with a moved or
// loading coordinator, or has been tried shareStateAttempts times; the
// metadata is synced between tries.
func (s *shareStore) retry(ctx context.Context, op func() error) error {
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := op()
		if err == nil || attempt == shareStateAttempts ||
			!errors.Is(err, kerr.NotCoordinator) && !errors.Is(err, kerr.CoordinatorNotAvailable) && !errors.Is(err, kerr.CoordinatorLoadInProgress) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
		_, _ = s.b.syncCachedMetadata(ctx)
	}
}

// Read is share.Store's: from this broker's cache when it leads the state
// partition, else from the coordinator with ReadShareGroupState.
func (s *shareStore) Read(ctx context.Context, k share.Key) (snap share.Snapshot, ok bool, err error) {
	err = s.retry(ctx, func() error {
		var e error
		snap, ok, e = s.readOnce(ctx, k)
		return e
	})
	return snap, ok, err
}

func (s *shareStore) readOnce(ctx context.Context, k share.Key) (share.Snapshot, bool, error) {
	leader, local, epoch, err := s.coordinator(ctx, k)
	if err != nil {
		return share.Snapshot{}, false, err
	}
	if local {
		return s.readLocal(ctx, k, epoch)
	}
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = k.Group
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = k.TopicID
	rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch = k.Partition, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
	if err := s.b.peers.roundTrip(ctx, leader, req, resp); err != nil {
		return share.Snapshot{}, false, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return share.Snapshot{}, false, fmt.Errorf("ReadShareGroupState answered %d topics", len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	switch {
	case p.ErrorCode == kerr.UnknownTopicOrPartition.Code:
		return share.Snapshot{}, false, nil // no state yet
	case p.ErrorCode != 0:
		return share.Snapshot{}, false, kerr.ErrorForCode(p.ErrorCode)
	}
	snap := share.Snapshot{StateEpoch: p.StateEpoch, Start: p.StartOffset, DeliveryComplete: -1}
	for _, b := range p.StateBatches {
		snap.Batches = append(snap.Batches, share.StateBatch{First: b.FirstOffset, Last: b.LastOffset, State: b.DeliveryState, Count: b.DeliveryCount})
	}
	return snap, true, nil
}

// Write is share.Store's: appended here when this broker leads the state
// partition, else sent to the coordinator with WriteShareGroupState. A
// write answered NOT_COORDINATOR was not applied, and is tried again.
func (s *shareStore) Write(ctx context.Context, k share.Key, snap share.Snapshot) error {
	return s.retry(ctx, func() error { return s.writeOnce(ctx, k, snap) })
}

func (s *shareStore) writeOnce(ctx context.Context, k share.Key, snap share.Snapshot) error {
	leader, local, epoch, err := s.coordinator(ctx, k)
	if err != nil {
		return err
	}
	if local {
		return s.writeLocal(ctx, k, epoch, snap)
	}
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.Version = 1
	req.GroupID = k.Group
	rt := kmsg.NewWriteShareGroupStateRequestTopic()
	rt.TopicID = k.TopicID
	rp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	rp.Partition, rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset = k.Partition, snap.StateEpoch, snap.LeaderEpoch, snap.Start
	rp.DeliveryCompleteCount = snap.DeliveryComplete
	for _, b := range snap.Batches {
		rp.StateBatches = append(rp.StateBatches, kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch{
			FirstOffset: b.First, LastOffset: b.Last, DeliveryState: b.State, DeliveryCount: b.Count})
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	if err := s.b.peers.roundTrip(ctx, leader, req, resp); err != nil {
		return err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return fmt.Errorf("WriteShareGroupState answered %d topics", len(resp.Topics))
	}
	if c := resp.Topics[0].Partitions[0].ErrorCode; c != 0 {
		return kerr.ErrorForCode(c)
	}
	return nil
}

// readLocal is the latest snapshot of k in a state partition this broker
// leads at epoch, loading the partition first when this epoch has not.
func (s *shareStore) readLocal(ctx context.Context, k share.Key, epoch int32) (share.Snapshot, bool, error) {
	l := s.partLock(s.partitionFor(k))
	l.Lock()
	defer l.Unlock()
	return s.readLocked(ctx, k, epoch)
}

// readLocked is readLocal with k's state partition locked.
func (s *shareStore) readLocked(ctx context.Context, k share.Key, epoch int32) (share.Snapshot, bool, error) {
	part := s.partitionFor(k)
	s.mu.Lock()
	loaded, ok := s.loaded[part]
	s.mu.Unlock()
	if !ok || loaded != epoch {
		if err := s.load(ctx, part, epoch); err != nil {
			return share.Snapshot{}, false, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	snap, ok := s.snaps[k]
	return snap, ok, nil
}

// load replays a state partition into the cache.
func (s *shareStore) load(ctx context.Context, part, epoch int32) error {
	snaps := map[share.Key]share.Snapshot{}
	err := s.b.replayInternal(ctx, shareStateTopic, part, func(h logstore.BatchHeader, r logstore.Record) {
		if h.IsControl() {
			return
		}
		k, ok, err := share.DecodeKey(r.Key)
		if err != nil || !ok {
			return
		}
		if r.Value == nil {
			delete(snaps, k)
			return
		}
		// Only snapshots are written here; an update record would be a
		// delta of another writer's, which this store does not apply.
		if len(r.Key) >= 2 && r.Key[1] != 0 {
			return
		}
		if snap, err := share.DecodeSnapshot(r.Value, false); err == nil {
			snaps[k] = snap
		} else {
			s.b.log.Warn("share state record unreadable", "partition", part, "offset", r.Offset, "err", err)
		}
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.snaps {
		if s.partitionFor(k) == part {
			delete(s.snaps, k)
		}
	}
	for k, v := range snaps {
		s.snaps[k] = v
	}
	s.loaded[part] = epoch
	return nil
}

// writeLocal appends k's snapshot to its state partition, led here at
// epoch. Writes of one state partition go one at a time: two writers
// checked against the same state would both pass, and the older one
// could land last.
func (s *shareStore) writeLocal(ctx context.Context, k share.Key, epoch int32, snap share.Snapshot) error {
	part := s.partitionFor(k)
	l := s.partLock(part)
	l.Lock()
	defer l.Unlock()
	cur, ok, err := s.readLocked(ctx, k, epoch)
	if err != nil {
		return err
	}
	// As Kafka's share coordinator fences writers: a state epoch older
	// than the state's (an admin reset or deleted it since), or an older
	// leader epoch of the partition (a former leader).
	switch {
	case ok && snap.StateEpoch < cur.StateEpoch:
		return fmt.Errorf("%w: state epoch %d, the state has %d", kerr.FencedStateEpoch, snap.StateEpoch, cur.StateEpoch)
	case ok && snap.StateEpoch == cur.StateEpoch && snap.LeaderEpoch < cur.LeaderEpoch:
		return fmt.Errorf("%w: leader epoch %d, the state was written at %d", kerr.FencedLeaderEpoch, snap.LeaderEpoch, cur.LeaderEpoch)
	}
	now := time.Now()
	rec := logstore.Record{Timestamp: now.UnixMilli(), Key: share.EncodeKey(k), Value: share.EncodeSnapshot(snap)}
	if err := s.b.appendInternal(ctx, shareStateTopic, part, epoch, []logstore.Record{rec}, now); err != nil {
		if errors.Is(err, kerr.FencedLeaderEpoch) || errors.Is(err, kerr.NotLeaderForPartition) {
			// The state partition's leadership moved since epoch: the
			// state checked above may be stale. Not the share-partition's
			// FENCED_LEADER_EPOCH: its leader asks the coordinator again.
			return kerr.NotCoordinator
		}
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.snaps[k] = snap
	return nil
}

// ensureShareStateTopic creates __share_group_state on first use, as
// ensureOffsetsTopic does __consumer_offsets.
func (b *Broker) ensureShareStateTopic(ctx context.Context) error {
	if b.meta.topic(shareStateTopic) != nil {
		return nil
	}
	brokers, err := b.liveBrokers(ctx)
	if err != nil {
		return err
	}
	rf := min(int(b.settings.ShareStateReplicationFactor), len(brokers))
	spec := &topicSpec{
		name:        shareStateTopic,
		partitions:  b.settings.ShareStateNumPartitions,
		replication: int16(max(rf, 1)),
		configs: map[string]string{
			"cleanup.policy":      "compact",
			"compression.type":    "producer",
			"min.insync.replicas": strconv.Itoa(int(min(int(b.settings.ShareStateMinISR), max(rf, 1)))),
		},
	}
	err = b.createTopic(ctx, spec, false)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) && !errors.Is(err, controller.ErrTopicExists) {
		// Another broker (or request) may have made it meanwhile.
		if serr := b.syncMetadata(ctx); serr == nil && b.meta.topic(shareStateTopic) != nil {
			return nil
		}
		return err
	}
	return nil
}

func (b *Broker) handleReadShareGroupState(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ReadShareGroupStateRequest)
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
	refused := b.clusterRefusal(r, security.OpClusterAction)
	for _, rt := range req.Topics {
		ot := kmsg.NewReadShareGroupStateResponseTopic()
		ot.TopicID = rt.TopicID
		for _, rp := range rt.Partitions {
			op := kmsg.NewReadShareGroupStateResponseTopicPartition()
			op.Partition = rp.Partition
			k := share.Key{Group: req.GroupID, TopicID: rt.TopicID, Partition: rp.Partition}
			err := refused
			var snap share.Snapshot
			var ok bool
			if err == nil {
				err = b.shareStateLocal(k, func(epoch int32) error {
					var e error
					snap, ok, e = b.shareSt.readLocal(ctx, k, epoch)
					return e
				})
			}
			switch {
			case err != nil:
				op.ErrorCode, op.ErrorMessage = errCode(err), kmsg.StringPtr(err.Error())
			case !ok:
				op.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				op.StateEpoch, op.StartOffset = snap.StateEpoch, snap.Start
				for _, b := range snap.Batches {
					op.StateBatches = append(op.StateBatches, kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch{
						FirstOffset: b.First, LastOffset: b.Last, DeliveryState: b.State, DeliveryCount: b.Count})
				}
			}
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	return resp, nil
}

func (b *Broker) handleWriteShareGroupState(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.WriteShareGroupStateRequest)
	resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	refused := b.clusterRefusal(r, security.OpClusterAction)
	for _, rt := range req.Topics {
		ot := kmsg.NewWriteShareGroupStateResponseTopic()
		ot.TopicID = rt.TopicID
		for _, rp := range rt.Partitions {
			op := kmsg.NewWriteShareGroupStateResponseTopicPartition()
			op.Partition = rp.Partition
			k := share.Key{Group: req.GroupID, TopicID: rt.TopicID, Partition: rp.Partition}
			snap := share.Snapshot{StateEpoch: rp.StateEpoch, LeaderEpoch: rp.LeaderEpoch, Start: rp.StartOffset, DeliveryComplete: -1}
			if req.Version >= 1 {
				snap.DeliveryComplete = rp.DeliveryCompleteCount
			}
			now := time.Now().UnixMilli()
			snap.Created, snap.Written = now, now
			for _, b := range rp.StateBatches {
				snap.Batches = append(snap.Batches, share.StateBatch{First: b.FirstOffset, Last: b.LastOffset, State: b.DeliveryState, Count: b.DeliveryCount})
			}
			err := refused
			if err == nil {
				err = b.shareStateLocal(k, func(epoch int32) error {
					return b.shareSt.writeLocal(ctx, k, epoch, snap)
				})
			}
			if err != nil {
				op.ErrorCode, op.ErrorMessage = errCode(err), kmsg.StringPtr(err.Error())
			}
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	return resp, nil
}

// shareStateLocal runs fn with the leader epoch of k's state partition
// when this broker leads it; NOT_COORDINATOR otherwise, as Kafka's share
// coordinator answers.
func (b *Broker) shareStateLocal(k share.Key, fn func(epoch int32) error) error {
	p := b.meta.partition(shareStateTopic, b.shareSt.partitionFor(k))
	if p == nil {
		return kerr.NotCoordinator
	}
	_, epoch, err := b.replicas.Leading(p, -1)
	if err != nil {
		return kerr.NotCoordinator
	}
	return fn(epoch)
}
