package broker

// The admin APIs of share-group offsets (KIP-932): DescribeShareGroupOffsets
// v0-v1 (v1: the lag), AlterShareGroupOffsets v0 and DeleteShareGroupOffsets
// v0, which kafka-share-groups.sh --describe, --reset-offsets and
// --delete-offsets send to the group coordinator. They read and change the
// share-partitions this broker keeps (package share).

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/security"
	"github.com/samsa-io/samsa/share"
)

func (b *Broker) handleDescribeShareGroupOffsets(_ context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	for _, rg := range req.Groups {
		g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		g.GroupID = rg.GroupID
		err := b.groupRefusal(r, security.OpDescribe, rg.GroupID)
		if err == nil {
			_, err = b.groups.ShareGroupInfo(rg.GroupID)
		}
		if err != nil {
			g.ErrorCode, g.ErrorMessage = errCode(err), kmsg.StringPtr(err.Error())
			resp.Groups = append(resp.Groups, g)
			continue
		}
		held := b.share.GroupPartitions(rg.GroupID)
		topics := rg.Topics
		if topics == nil { // every topic with state
			seen := map[string]int{}
			for k := range held {
				t := b.meta.topicByID(k.TopicID)
				if t == nil {
					continue
				}
				i, ok := seen[t.name]
				if !ok {
					topics = append(topics, kmsg.DescribeShareGroupOffsetsRequestGroupTopic{Topic: t.name})
					i = len(topics) - 1
					seen[t.name] = i
				}
				topics[i].Partitions = append(topics[i].Partitions, k.Partition)
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
				switch {
				case t == nil || p < 0 || int(p) >= len(t.parts):
					gp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				default:
					if sp := held[share.Key{Group: rg.GroupID, TopicID: t.id, Partition: p}]; sp != nil {
						start, _, done := sp.Summary()
						_, epoch, _, _ := t.parts[p].State()
						gp.StartOffset, gp.LeaderEpoch = start, epoch
						gp.Lag = max(t.parts[p].HighWatermark()-start-done, 0)
					}
				}
				gt.Partitions = append(gt.Partitions, gp)
			}
			g.Topics = append(g.Topics, gt)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}

// emptyShareGroup is nil when group is a share group without members,
// else the error its offsets may not be changed with.
func (b *Broker) emptyShareGroup(r *request, group string) error {
	if err := b.groupRefusal(r, security.OpDelete, group); err != nil {
		return err
	}
	info, err := b.groups.ShareGroupInfo(group)
	if err != nil {
		return err
	}
	if info.Members > 0 {
		return fmt.Errorf("%w: the group has active members", kerr.NonEmptyGroup)
	}
	return nil
}

func (b *Broker) handleAlterShareGroupOffsets(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.AlterShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	if err := b.emptyShareGroup(r, req.GroupID); err != nil {
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
				sp, err := b.share.Partition(ctx, k, func() int64 { return rp.StartOffset })
				if err == nil {
					sp.Reset(rp.StartOffset)
					_, epoch, _, _ := t.parts[rp.Partition].State()
					err = b.share.Persist(ctx, k, sp, epoch)
				}
				if err != nil {
					op.ErrorCode, op.ErrorMessage = errCode(err), kmsg.StringPtr(err.Error())
				}
			}
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	return resp, nil
}

func (b *Broker) handleDeleteShareGroupOffsets(_ context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DeleteShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	if err := b.emptyShareGroup(r, req.GroupID); err != nil {
		resp.ErrorCode, resp.ErrorMessage = errCode(err), kmsg.StringPtr(err.Error())
		return resp, nil
	}
	held := b.share.GroupPartitions(req.GroupID)
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
		for k := range held {
			if k.TopicID == t.id {
				b.share.Drop(k)
			}
		}
		resp.Topics = append(resp.Topics, ot)
	}
	return resp, nil
}

// deleteShareState drops the share-partitions of the groups DeleteGroups
// deleted, as Kafka deletes their share-group state.
func (b *Broker) deleteShareState(resp *kmsg.DeleteGroupsResponse) {
	for _, g := range resp.Groups {
		if g.ErrorCode == 0 {
			b.share.DeleteGroup(g.Group)
		}
	}
}
