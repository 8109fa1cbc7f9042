package broker

// Share-group state (KIP-932): the share coordinator (share.StateCoordinator)
// serves the __share_group_state partitions this broker leads; shareStore
// is the share-partition leaders' way to it, here or on another broker
// (ReadShareGroupState v0, WriteShareGroupState v0-1), and the handlers
// below serve those requests.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/logstore"
	"github.com/samsa-io/samsa/security"
	"github.com/samsa-io/samsa/share"
)

// shareStateTopic is Kafka's share-group state topic.
const shareStateTopic = share.StateTopic

// shareStore is share.Store over the share coordinators.
type shareStore struct {
	b *Broker
}

func newShareStore(b *Broker) *shareStore { return &shareStore{b: b} }

// partitionFor is the __share_group_state partition of k (Kafka's
// SharePartitionKey.asCoordinatorKey, hashed as a group id is).
func (s *shareStore) partitionFor(k share.Key) int32 {
	return s.b.shareCoord.PartitionFor(k)
}

// coordinator is the broker that leads k's state partition, and whether
// that is this one.
func (s *shareStore) coordinator(ctx context.Context, k share.Key) (leader int32, local bool, err error) {
	if err := s.b.ensureShareStateTopic(ctx); err != nil {
		return -1, false, err
	}
	// A new topic's leaders take a moment to be elected and known here.
	for range 50 {
		p := s.b.meta.partition(shareStateTopic, s.partitionFor(k))
		if p != nil {
			if _, _, err := s.b.replicas.Leading(p, -1); err == nil {
				return s.b.nodeID, true, nil
			}
			if l, _, _, _ := p.State(); l >= 0 && l != s.b.nodeID {
				return l, false, nil
			}
		}
		select {
		case <-ctx.Done():
			return -1, false, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		_, _ = s.b.syncCachedMetadata(ctx)
	}
	return -1, false, kerr.CoordinatorNotAvailable
}

// unreachableCoordinator is err, a failed round trip to the share
// coordinator, as Kafka's persister takes it: a coordinator that cannot be
// reached (not registered, refusing, gone mid-answer) is not available, to
// be looked up again, and an acknowledgement that still fails is answered
// COORDINATOR_NOT_AVAILABLE, which clients retry, rather than
// UNKNOWN_SERVER_ERROR. The caller's own deadline stays itself.
func unreachableCoordinator(ctx context.Context, err error) error {
	var ke *kerr.Error
	if ctx.Err() != nil || errors.As(err, &ke) && ke != kerr.BrokerNotAvailable {
		return err
	}
	return fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err)
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
	leader, local, err := s.coordinator(ctx, k)
	if err != nil {
		return share.Snapshot{}, false, err
	}
	if local {
		return s.b.shareCoord.Read(k)
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
		return share.Snapshot{}, false, unreachableCoordinator(ctx, err)
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
	leader, local, err := s.coordinator(ctx, k)
	if err != nil {
		return err
	}
	if local {
		return s.b.shareCoord.Write(k, snap)
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
		return unreachableCoordinator(ctx, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return fmt.Errorf("WriteShareGroupState answered %d topics", len(resp.Topics))
	}
	if c := resp.Topics[0].Partitions[0].ErrorCode; c != 0 {
		return kerr.ErrorForCode(c)
	}
	return nil
}

// shareStateLog is __share_group_state as the share coordinator uses it.
type shareStateLog struct{ b *Broker }

func (l shareStateLog) Append(ctx context.Context, partition, epoch int32, key, value []byte) error {
	now := time.Now()
	return l.b.appendInternal(ctx, shareStateTopic, partition, epoch, []logstore.Record{{Timestamp: now.UnixMilli(), Key: key, Value: value}}, now)
}

func (l shareStateLog) Replay(ctx context.Context, partition int32, fn func(offset int64, key, value []byte)) error {
	return l.b.replayInternal(ctx, shareStateTopic, partition, func(h logstore.BatchHeader, r logstore.Record) {
		if !h.IsControl() {
			fn(r.Offset, r.Key, r.Value)
		}
	})
}

// newShareCoordinator builds the share coordinator from the broker's
// settings.
func (b *Broker) newShareCoordinator() *share.StateCoordinator {
	return share.NewStateCoordinator(share.StateConfig{
		Log:        shareStateLog{b},
		Partitions: b.settings.ShareStateNumPartitions,
		Logger:     b.log,
	})
}

// syncShareCoordinator tells the share coordinator which
// __share_group_state partitions this broker leads now.
func (b *Broker) syncShareCoordinator() {
	if b.shareCoord == nil {
		return
	}
	b.shareCoord.SetOwned(b.ledPartitions(shareStateTopic))
}

// ensureShareStateTopic creates __share_group_state on first use, as
// ensureOffsetsTopic does __consumer_offsets.
func (b *Broker) ensureShareStateTopic(ctx context.Context) error {
	return b.ensureInternalTopic(ctx, internalTopic{
		name:       shareStateTopic,
		partitions: b.settings.ShareStateNumPartitions,
		rf:         int(b.settings.ShareStateReplicationFactor),
		configs: func(rf int) map[string]string {
			return map[string]string{
				"cleanup.policy":      "compact",
				"compression.type":    "producer",
				"min.insync.replicas": strconv.Itoa(min(int(b.settings.ShareStateMinISR), rf)),
			}
		},
		sync: b.syncShareCoordinator,
	})
}

// shareStateRefusal is why a partition of a share coordinator request is
// refused: refused, the principal's, else a negative partition id, which
// Kafka 4.4 answers INVALID_REQUEST.
func shareStateRefusal(refused error, partition int32) error {
	if refused == nil && partition < 0 {
		return fmt.Errorf("%w: the partition id cannot be a negative number", kerr.InvalidRequest)
	}
	return refused
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
			err := shareStateRefusal(refused, rp.Partition)
			var snap share.Snapshot
			var ok bool
			if err == nil {
				snap, ok, err = b.shareCoord.Read(k)
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
			err := shareStateRefusal(refused, rp.Partition)
			if err == nil {
				err = b.shareCoord.Write(k, snap)
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
