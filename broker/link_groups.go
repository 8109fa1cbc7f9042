package broker

// Consumer offsets of a cluster link's groups (the link's "groups"
// filter): the controller broker copies what each group committed on the
// source for the link's mirror topics not promoted yet, at every look at
// the source and once more when a promote begins (the consumers stopped
// on the source by then), so that a group moved here resumes where it
// committed there: the offsets are the same, since the mirror's are.
// The copy is an OffsetCommit to the group's coordinator here with no
// member and generation -1, which the coordinator takes only while the
// group has no member: a group active here is never overwritten. The
// committed leader epoch is left out (-1): it was the source's.

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/link"
)

// syncLinkGroups copies the source offsets of a link's groups for its
// mirror topics that only accepts (nil: all).
func (b *Broker) syncLinkGroups(ctx context.Context, s *link.Spec, only func(topic string) bool) error {
	cl := b.linkMgr.Client(s.Name)
	if cl == nil || len(s.Groups) == 0 {
		return nil
	}
	offs, err := link.SourceGroupOffsets(ctx, cl, s)
	if err != nil {
		return err
	}
	ls := b.links.Load()
	for _, group := range slices.Sorted(maps.Keys(offs)) {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = 8
		req.Group, req.Generation = group, -1
		n := 0
		for _, topic := range slices.Sorted(maps.Keys(offs[group])) {
			m := ls.mirrors[topic]
			if m == nil || m[mirrorLink] != s.Name || m[mirrorState] == promoted || only != nil && !only(topic) {
				continue
			}
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = topic
			for p, o := range offs[group][topic] {
				if b.linkSynced(group, topic, p) == o {
					continue
				}
				rp := kmsg.NewOffsetCommitRequestTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch = p, o, -1
				rt.Partitions = append(rt.Partitions, rp)
				n++
			}
			if len(rt.Partitions) > 0 {
				req.Topics = append(req.Topics, rt)
			}
		}
		if n == 0 {
			continue
		}
		if err := b.commitLinkOffsets(ctx, req); err != nil {
			b.log.Debug("cluster link: group offsets not copied", "link", s.Name, "group", group, "err", err)
		}
	}
	return nil
}

// commitLinkOffsets sends the commit to the group's coordinator here and
// remembers what it took.
func (b *Broker) commitLinkOffsets(ctx context.Context, req *kmsg.OffsetCommitRequest) error {
	if !b.coordinatorTopic(offsetsTopic, b.ensureOffsetsTopic) {
		return kerr.CoordinatorNotAvailable
	}
	p := b.meta.partition(offsetsTopic, b.groups.PartitionFor(req.Group))
	if p == nil {
		return kerr.CoordinatorNotAvailable
	}
	leader, _, _, _ := p.State()
	if leader < 0 {
		return kerr.CoordinatorNotAvailable
	}
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	if err := b.peers.roundTrip(ctx, leader, req, resp); err != nil {
		return err
	}
	var firstErr error
	for i, t := range resp.Topics {
		for j, rp := range t.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("%s-%d: %w", t.Topic, rp.Partition, err)
				}
				continue
			}
			if i < len(req.Topics) && j < len(req.Topics[i].Partitions) {
				b.setLinkSynced(req.Group, t.Topic, rp.Partition, req.Topics[i].Partitions[j].Offset)
			}
		}
	}
	return firstErr
}

type linkSyncKey struct {
	group, topic string
	partition    int32
}

// linkSynced is the offset last copied for a group's partition (-1 for
// none).
func (b *Broker) linkSynced(group, topic string, p int32) int64 {
	b.linkErrMu.Lock()
	defer b.linkErrMu.Unlock()
	if o, ok := b.linkSyncedOffs[linkSyncKey{group, topic, p}]; ok {
		return o
	}
	return -1
}

func (b *Broker) setLinkSynced(group, topic string, p int32, o int64) {
	b.linkErrMu.Lock()
	defer b.linkErrMu.Unlock()
	if b.linkSyncedOffs == nil {
		b.linkSyncedOffs = map[linkSyncKey]int64{}
	}
	b.linkSyncedOffs[linkSyncKey{group, topic, p}] = o
}
