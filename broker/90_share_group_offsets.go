package broker

// The admin APIs of share-group offsets (KIP-932): DescribeShareGroupOffsets
// v0-v1 (v1: the lag), AlterShareGroupOffsets v0 and DeleteShareGroupOffsets
// v0, which kafka-share-groups.sh --describe, --reset-offsets and
// --delete-offsets send to the group coordinator. They list the partitions
// the group coordinator has as initialized (groups/share_records.go), and
// read and change each share-partition's persisted state at its share
// coordinator (84_share_group_state.go), whichever broker leads it.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/groups"
	"github.com/samsa-io/samsa/security"
	"github.com/samsa-io/samsa/share"
)

func (b *Broker) handleDescribeShareGroupOffsets(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	for _, rg := range req.Groups {
		g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		g.GroupID = rg.GroupID
		err := b.groupRefusal(r, security.OpDescribe, rg.GroupID)
		var info groups.ShareGroup
		if err == nil {
			info, err = b.groups.ShareGroupInfo(rg.GroupID)
			if errCode(err) == kerr.GroupIDNotFound.Code {
				// As Kafka 4.4: a group never seen, or not a share
				// group, has no partition with state, and each one
				// named has none.
				info, err = groups.ShareGroup{}, nil
			}
		}
		if err != nil {
			g.ErrorCode, g.ErrorMessage = errCode(err), kmsg.StringPtr(err.Error())
			resp.Groups = append(resp.Groups, g)
			continue
		}
		topics := rg.Topics
		if topics == nil { // every partition with state
			for _, name := range slices.Sorted(maps.Keys(info.Initialized)) {
				topics = append(topics, kmsg.DescribeShareGroupOffsetsRequestGroupTopic{Topic: name, Partitions: info.Initialized[name]})
			}
		}
		for _, rt := range topics {
			gt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			gt.Topic = rt.Topic
			t := b.meta.topic(rt.Topic)
			if t != nil {
				gt.TopicID = t.id
			}
			slices.Sort(rt.Partitions)
			for _, p := range rt.Partitions {
				gp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				gp.Partition, gp.StartOffset, gp.LeaderEpoch, gp.Lag = p, -1, -1, -1
				if t == nil || p < 0 || int(p) >= len(t.parts) {
					gp.ErrorCode = kerr.UnknownTopicOrPartition.Code
					gt.Partitions = append(gt.Partitions, gp)
					continue
				}
				k := share.Key{Group: rg.GroupID, TopicID: t.id, Partition: p}
				start, done, err := b.shareSummary(ctx, k)
				if err == nil && start >= 0 {
					_, gp.LeaderEpoch, _, _ = t.parts[p].State()
					gp.StartOffset = start
					var end int64
					if end, err = b.partitionEnd(ctx, t, t.parts[p]); err == nil {
						gp.Lag = max(end-start-done, 0)
					}
				}
				if err != nil {
					gp.ErrorCode, gp.ErrorMessage = errCode(err), kmsg.StringPtr(err.Error())
				}
				gt.Partitions = append(gt.Partitions, gp)
			}
			g.Topics = append(g.Topics, gt)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}

// shareSummary is the start offset of k's share-partition and how many
// offsets past it are done (acknowledged or archived): from the
// share-partition when this broker holds it, else from its persisted
// state, which its leader writes before every answer. The start is -1
// when the share-partition has no state.
func (b *Broker) shareSummary(ctx context.Context, k share.Key) (start, done int64, err error) {
	if sp := b.share.Lookup(k); sp != nil {
		start, _, done = sp.Summary()
		return start, done, nil
	}
	snap, ok, err := b.shareSt.Read(ctx, k)
	if err != nil || !ok || snap.Start < 0 {
		return -1, 0, err
	}
	if snap.DeliveryComplete >= 0 {
		return snap.Start, int64(snap.DeliveryComplete), nil
	}
	for _, sb := range snap.Batches {
		if sb.State == share.StateAcknowledged || sb.State == share.StateArchived {
			done += sb.Last - max(sb.First, snap.Start) + 1
		}
	}
	return snap.Start, done, nil
}

// partitionEnd is the high watermark of p: its own when this broker leads
// it, else the leader's (ListOffsets latest).
func (b *Broker) partitionEnd(ctx context.Context, t *topic, p *partition) (int64, error) {
	if _, _, err := b.replicas.Leading(p, -1); err == nil {
		return p.HighWatermark(), nil
	}
	leader, _, _, _ := p.State()
	if leader < 0 {
		return -1, kerr.LeaderNotAvailable
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version, req.ReplicaID = 7, -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = t.name
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p.ID, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	if err := b.peers.roundTrip(ctx, leader, req, resp); err != nil {
		return -1, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, fmt.Errorf("ListOffsets answered %d topics", len(resp.Topics))
	}
	if c := resp.Topics[0].Partitions[0].ErrorCode; c != 0 {
		return -1, kerr.ErrorForCode(c)
	}
	return resp.Topics[0].Partitions[0].Offset, nil
}

// resetShareState gives k's share-partition a new state under the next
// state epoch, as Kafka's group coordinator initializes it for an admin:
// starting at start, or uninitialized (share.Uninitialized: the next
// leader starts it from share.auto.offset.reset). A share-partition held
// here is dropped; one held by another leader is fenced at its next write
// by the state epoch, and reads the new state.
func (b *Broker) resetShareState(ctx context.Context, k share.Key, start int64) error {
	cur, _, err := b.shareSt.Read(ctx, k)
	if err != nil {
		return err
	}
	now := time.Now().UnixMilli()
	next := share.Snapshot{StateEpoch: cur.StateEpoch + 1, LeaderEpoch: cur.LeaderEpoch, Start: start, Created: now, Written: now}
	if err := b.shareSt.Write(ctx, k, next); err != nil {
		return err
	}
	b.share.Drop(k)
	return nil
}

// shareStartAtZero is groups.Config.ShareInitialize: the share-partitions
// of group on topic's partitions that have no state yet start at offset 0,
// as Kafka 4.4's group coordinator initializes the new partitions of a
// topic the group knows.
func (b *Broker) shareStartAtZero(group, topic string, partitions []int32) error {
	t := b.meta.topic(topic)
	if t == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	for _, p := range partitions {
		k := share.Key{Group: group, TopicID: t.id, Partition: p}
		if snap, ok, err := b.shareSt.Read(ctx, k); err != nil {
			return err
		} else if ok && snap.Start != share.Uninitialized {
			continue
		}
		if err := b.resetShareState(ctx, k, 0); err != nil {
			return err
		}
	}
	return nil
}

// emptyShareGroup is nil when group is a share group without members,
// else the error its offsets may not be changed with. (The principal's
// rights on the group and topics are checked before, in authz_share.go.)
func (b *Broker) emptyShareGroup(r *request, group string) error {
	info, err := b.groups.ShareGroupInfo(group)
	if err != nil {
		return err
	}
	if info.Members > 0 {
		return &codedError{kerr.NonEmptyGroup, "The group is not empty."}
	}
	return nil
}

func (b *Broker) handleAlterShareGroupOffsets(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.AlterShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	// A group id never seen becomes an empty share group with these
	// start offsets, as in Kafka 4.4.
	err := b.groups.CreateShareGroup(req.GroupID)
	if err == nil {
		err = b.emptyShareGroup(r, req.GroupID)
	}
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errCode(err), kmsg.StringPtr(err.Error())
		return resp, nil
	}
	for _, rt := range req.Topics {
		ot := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		ot.Topic = rt.Topic
		t := b.meta.topic(rt.Topic)
		if t != nil {
			ot.TopicID = t.id
		}
		var done []int32
		for _, rp := range rt.Partitions {
			op := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			op.Partition = rp.Partition
			switch {
			case t == nil || rp.Partition < 0 || int(rp.Partition) >= len(t.parts):
				op.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case rp.StartOffset < 0:
				op.ErrorCode = kerr.InvalidRequest.Code
			default:
				k := share.Key{Group: req.GroupID, TopicID: t.id, Partition: rp.Partition}
				if err := b.resetShareState(ctx, k, rp.StartOffset); err != nil {
					op.ErrorCode, op.ErrorMessage = errCode(err), kmsg.StringPtr(err.Error())
				} else {
					done = append(done, rp.Partition)
				}
			}
			ot.Partitions = append(ot.Partitions, op)
		}
		if len(done) > 0 {
			if err := b.groups.SetShareInitialized(req.GroupID, rt.Topic, done, true); err != nil {
				b.log.Warn("share group partitions not recorded", "group", req.GroupID, "topic", rt.Topic, "err", err)
			}
		}
		resp.Topics = append(resp.Topics, ot)
	}
	return resp, nil
}

func (b *Broker) handleDeleteShareGroupOffsets(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DeleteShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	if err := b.emptyShareGroup(r, req.GroupID); err != nil {
		resp.ErrorCode, resp.ErrorMessage = errCode(err), kmsg.StringPtr(err.Error())
		return resp, nil
	}
	info, err := b.groups.ShareGroupInfo(req.GroupID)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errCode(err), kmsg.StringPtr(err.Error())
		return resp, nil
	}
	for _, rt := range req.Topics {
		ot := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		ot.Topic = rt.Topic
		t := b.meta.topic(rt.Topic)
		if t == nil {
			ot.ErrorCode = kerr.UnknownTopicOrPartition.Code
			resp.Topics = append(resp.Topics, ot)
			continue
		}
		ot.TopicID = t.id
		if len(info.Initialized[t.name]) == 0 {
			// As Kafka 4.4: the group has no state on the topic.
			ot.ErrorCode, ot.ErrorMessage = kerr.UnknownTopicOrPartition.Code, kmsg.StringPtr("There is no offset information to delete.")
			resp.Topics = append(resp.Topics, ot)
			continue
		}
		err := b.deleteShareStates(ctx, req.GroupID, t, info.Initialized[t.name])
		if err == nil {
			err = b.groups.SetShareInitialized(req.GroupID, t.name, info.Initialized[t.name], false)
		}
		if err != nil {
			ot.ErrorCode, ot.ErrorMessage = errCode(err), kmsg.StringPtr(err.Error())
		}
		resp.Topics = append(resp.Topics, ot)
	}
	return resp, nil
}

// deleteShareStates deletes the state of group's share-partitions on t's
// partitions, wherever they are led, as Kafka's DeleteShareGroupState.
func (b *Broker) deleteShareStates(ctx context.Context, group string, t *topic, partitions []int32) error {
	for _, p := range partitions {
		if err := b.resetShareState(ctx, share.Key{Group: group, TopicID: t.id, Partition: p}, share.Uninitialized); err != nil {
			return err
		}
	}
	return nil
}

// shareGroupsInitialized returns the partitions with state of each share
// group in groups, for deleteShareState after DeleteGroups.
func (b *Broker) shareGroupsInitialized(groupIDs []string) map[string]map[string][]int32 {
	out := map[string]map[string][]int32{}
	for _, g := range groupIDs {
		if info, err := b.groups.ShareGroupInfo(g); err == nil {
			out[g] = info.Initialized
		}
	}
	return out
}

// deleteShareState deletes the share-partition states of the share groups
// DeleteGroups deleted (init: their partitions with state, taken before),
// as Kafka deletes a share group's state.
func (b *Broker) deleteShareState(ctx context.Context, resp *kmsg.DeleteGroupsResponse, init map[string]map[string][]int32) {
	for _, g := range resp.Groups {
		if g.ErrorCode != 0 {
			continue
		}
		for name, parts := range init[g.Group] {
			if t := b.meta.topic(name); t != nil {
				if err := b.deleteShareStates(ctx, g.Group, t, parts); err != nil {
					b.log.Warn("share group state not deleted", "group", g.Group, "topic", name, "err", err)
				}
			}
		}
		b.share.DeleteGroup(g.Group)
	}
}
