package groups

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func parseOffsetValue(value []byte) (offset, error) {
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(value); err != nil {
		return offset{}, err
	}
	o := offset{offset: v.Offset, leaderEpoch: -1, metadata: v.Metadata, commitMs: v.CommitTimestamp}
	if v.Version >= 3 {
		o.leaderEpoch = v.LeaderEpoch
	}
	return o, nil
}

// OffsetCommit serves OffsetCommit v2-v9 from a connection the caller does
// not number (OffsetCommitOn with conn 0).
func (c *Coordinator) OffsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	resp, _ := c.OffsetCommitOn(ctx, req, 0)
	return resp
}

// errGivenUp refuses a member's commit from an older connection than one
// its commits have come on since (see OffsetCommitOn).
var errGivenUp = errors.New("groups: commit from a connection its member has left")

// OffsetCommitOn serves OffsetCommit v2-v9 that came on connection conn:
// the broker numbers its connections from 1 in the order it accepts them.
//
// A member's commit that comes on an older connection than one the
// member's commits have come on since is refused (givenUp, and no
// answer): a client commits on one connection to its coordinator and
// moves to a new one only after giving up on the old (a request timeout),
// sending the commit again or a newer one there. A commit held up in the
// network (a cut, a partition) and delivered on the old connection after
// those would move the group's offsets back; Kafka applies it (its
// generation and member epoch are still current), samsa does not. A
// client that still waits on the old connection gets nothing and, as
// clients do when a connection closes, sends the commit again on a new
// one. Commits without a member id (an admin's) are not tracked.
func (c *Coordinator) OffsetCommitOn(ctx context.Context, req *kmsg.OffsetCommitRequest, conn uint64) (resp *kmsg.OffsetCommitResponse, givenUp bool) {
	resp = req.ResponseKind().(*kmsg.OffsetCommitResponse)
	counts := make([]int, len(req.Topics))
	for i, t := range req.Topics {
		counts[i] = len(t.Partitions)
	}
	codes, givenUp := commitCodes(counts, func(codes [][]int16) error { return c.commit(ctx, req, conn, codes) })
	if givenUp {
		return nil, true
	}
	for i, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for j, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = codes[i][j]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, false
}

// commitCodes runs commit, of partitions counts[i] of each topic i, and
// returns the error code of each partition: commit's own, or the failure
// of the whole commit; givenUp when commit answers errGivenUp.
func commitCodes(counts []int, commit func(codes [][]int16) error) (codes [][]int16, givenUp bool) {
	codes = make([][]int16, len(counts))
	for i, n := range counts {
		codes[i] = make([]int16, n)
	}
	err := commit(codes)
	if errors.Is(err, errGivenUp) {
		return nil, true
	}
	for i := range codes {
		for j := range codes[i] {
			if codes[i][j] == 0 {
				codes[i][j] = errorCode(err)
			}
		}
	}
	return codes, false
}

// commit validates and writes the commit that came on connection conn (0:
// unknown); per-partition failures go into codes, a failure of the whole
// request is returned.
func (c *Coordinator) commit(ctx context.Context, req *kmsg.OffsetCommitRequest, conn uint64, codes [][]int16) error {
	s, err := c.groupShard(req.Group)
	if err != nil {
		return err
	}
	now := time.Now()
	type pending struct {
		i, j int
		tp   topicPartition
		o    offset
	}
	var ps []pending
	var tps []topicPartition
	var recs []Record
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			epoch := int32(-1)
			if req.Version >= 6 {
				epoch = p.LeaderEpoch
			}
			tp := topicPartition{t.Topic, p.Partition}
			o, code := c.checkCommit(tp, p.Offset, epoch, p.Metadata, now)
			if code != 0 {
				codes[i][j] = code
				continue
			}
			ps = append(ps, pending{i, j, tp, o})
			tps = append(tps, tp)
			recs = append(recs, Record{offsetKey(req.Group, t.Topic, p.Partition), offsetValue(o)})
		}
	}

	s.mu.Lock()
	if !s.active() {
		s.mu.Unlock()
		return kerr.NotCoordinator
	}
	g := s.groups[req.Group]
	if g == nil {
		if req.Generation >= 0 {
			s.mu.Unlock()
			if req.Version >= 9 {
				return kerr.GroupIDNotFound
			}
			return kerr.IllegalGeneration
		}
		// A group that only stores offsets in Kafka (no membership).
		g = newClassicGroup(newCore(s, req.Group), now)
		s.groups[req.Group] = g
	}
	if req.Version < 9 && commitsWithEpoch(g, req.MemberID) {
		s.mu.Unlock()
		return errCommitVersion
	}
	if err := g.validateCommit(req.MemberID, instanceOf(req.InstanceID), req.Generation, tps, false); err != nil {
		s.mu.Unlock()
		return err
	}
	if !commitConnection(g, req.MemberID, conn) {
		s.mu.Unlock()
		return errGivenUp
	}
	if g, ok := g.(*classicGroup); ok {
		g.committed(req.MemberID, req.Generation)
	}
	if len(recs) == 0 {
		s.mu.Unlock()
		return nil
	}
	done := make(chan error, 1)
	s.enqueue(recs, func(err error) {
		if err == nil {
			s.mu.Lock()
			if s.groups[req.Group] == g {
				for _, p := range ps {
					g.core().offsets[p.tp] = p.o
				}
			}
			s.mu.Unlock()
		}
		done <- err
	})
	s.mu.Unlock()
	select {
	case err := <-done:
		if err != nil {
			return err
		}
	case <-ctx.Done():
		return kerr.RequestTimedOut
	}
	return nil
}

// errCommitVersion refuses an OffsetCommit below v9 from a member of a
// KIP-848 or KIP-1071 group, as Kafka 4.4 does.
var errCommitVersion = kafkaErrorf(kerr.UnsupportedVersion, "OffsetCommit version 9 or above must be used by members using the modern group protocol")

// commitsWithEpoch reports whether memberID is a member of g that commits
// at its member epoch: a consumer group member of the KIP-848 protocol,
// or a streams group member.
func commitsWithEpoch(g group, memberID string) bool {
	switch g := g.(type) {
	case *consumerGroup:
		m := g.members[memberID]
		return m != nil && m.classic == nil
	case *streamsGroup:
		return g.members[memberID] != nil
	}
	return false
}

// checkCommit checks the commit of one partition: the offset to write,
// or the error code the partition gets.
func (c *Coordinator) checkCommit(tp topicPartition, off int64, leaderEpoch int32, metadata *string, now time.Time) (offset, int16) {
	md := ""
	if metadata != nil {
		md = *metadata
	}
	switch {
	case !c.cfg.PartitionExists(tp.topic, tp.partition):
		return offset{}, kerr.UnknownTopicOrPartition.Code
	case c.cfg.MaxMetadataBytes > 0 && len(md) > c.cfg.MaxMetadataBytes:
		return offset{}, kerr.OffsetMetadataTooLarge.Code
	}
	return offset{offset: off, leaderEpoch: leaderEpoch, metadata: md, commitMs: now.UnixMilli()}, 0
}

// commitConnection records that a commit of member came on connection
// conn, and reports false if one of its commits has come on a newer
// connection already (OffsetCommitOn). Caller holds s.mu, and enqueues the
// commit under it, so that the log's order is the order of these checks.
func commitConnection(g group, member string, conn uint64) bool {
	if member == "" {
		return true
	}
	return newestConn(&g.core().commitConns, member, conn, 2*g.memberCount()+16, g.isMember)
}

// newestConn records in *conns that a request of key came on connection
// conn (0: unknown, not recorded), and reports false if one of key's came
// on a newer connection already. Past limit keys, the ones keep does not
// keep are forgotten first.
func newestConn[K comparable](conns *map[K]uint64, key K, conn uint64, limit int, keep func(K) bool) bool {
	if conn == 0 {
		return true
	}
	if conn < (*conns)[key] {
		return false
	}
	if *conns == nil {
		*conns = make(map[K]uint64)
	}
	if len(*conns) >= limit {
		for k := range *conns {
			if !keep(k) {
				delete(*conns, k)
			}
		}
	}
	(*conns)[key] = conn
	return true
}

// OffsetFetch serves OffsetFetch v1-v9 (v8+ asks for several groups).
func (c *Coordinator) OffsetFetch(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version >= 8 {
		for _, rg := range req.Groups {
			var topics []fetchTopic
			if rg.Topics != nil {
				topics = []fetchTopic{}
				for _, t := range rg.Topics {
					topics = append(topics, fetchTopic{t.Topic, t.Partitions})
				}
			}
			og := kmsg.NewOffsetFetchResponseGroup()
			og.Group = rg.Group
			member := ""
			if rg.MemberID != nil {
				member = *rg.MemberID
			}
			res, err := c.fetchOffsets(rg.Group, topics, member, rg.MemberEpoch, req.RequireStable)
			og.ErrorCode = errorCode(err)
			for _, t := range res {
				ot := kmsg.NewOffsetFetchResponseGroupTopic()
				ot.Topic = t.topic
				for _, p := range t.partitions {
					op := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					op.Partition, op.Offset, op.LeaderEpoch, op.Metadata = p.partition, p.o.offset, p.o.leaderEpoch, kmsg.StringPtr(p.o.metadata)
					op.ErrorCode = errorCode(p.err)
					ot.Partitions = append(ot.Partitions, op)
				}
				og.Topics = append(og.Topics, ot)
			}
			resp.Groups = append(resp.Groups, og)
		}
		return resp
	}
	var topics []fetchTopic
	if req.Topics != nil {
		topics = []fetchTopic{}
		for _, t := range req.Topics {
			topics = append(topics, fetchTopic{t.Topic, t.Partitions})
		}
	}
	res, err := c.fetchOffsets(req.Group, topics, "", -1, req.Version >= 7 && req.RequireStable)
	if err != nil && req.Version >= 2 {
		resp.ErrorCode = errorCode(err)
		return resp
	}
	if err != nil {
		// v1 has no top-level error: every requested partition carries it.
		res = nil
		for _, t := range topics {
			ft := fetchedTopic{topic: t.topic}
			for _, p := range t.partitions {
				ft.partitions = append(ft.partitions, fetchedPartition{partition: p, o: noOffset, err: err})
			}
			res = append(res, ft)
		}
	}
	for _, t := range res {
		ot := kmsg.NewOffsetFetchResponseTopic()
		ot.Topic = t.topic
		for _, p := range t.partitions {
			op := kmsg.NewOffsetFetchResponseTopicPartition()
			op.Partition, op.Offset, op.LeaderEpoch, op.Metadata = p.partition, p.o.offset, p.o.leaderEpoch, kmsg.StringPtr(p.o.metadata)
			op.ErrorCode = errorCode(p.err)
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	return resp
}

type fetchTopic struct {
	topic      string
	partitions []int32
}

type fetchedTopic struct {
	topic      string
	partitions []fetchedPartition
}

type fetchedPartition struct {
	partition int32
	o         offset
	err       error
}

var noOffset = offset{offset: -1, leaderEpoch: -1}

// fetchOffsets returns the committed offsets of the requested partitions
// (-1 where none), or of every partition with one when topics is nil.
// A consumer group checks the member and its epoch (OffsetFetch v9+). With
// requireStable, a partition with a transactional commit pending gets
// UNSTABLE_OFFSET_COMMIT instead (KIP-447).
func (c *Coordinator) fetchOffsets(groupID string, topics []fetchTopic, memberID string, epoch int32, requireStable bool) ([]fetchedTopic, error) {
	s, err := c.groupShard(groupID)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.active() {
		return nil, kerr.NotCoordinator
	}
	var g *groupCore
	if found := s.groups[groupID]; found != nil {
		if err := found.validateFetch(memberID, epoch); err != nil {
			return nil, err
		}
		g = found.core()
	}
	var out []fetchedTopic
	if topics == nil {
		if g == nil {
			return nil, nil
		}
		byTopic := make(map[string][]fetchedPartition)
		for tp, o := range g.offsets {
			fp := fetchedPartition{partition: tp.partition, o: o}
			if requireStable && g.unstable(tp) {
				fp.o, fp.err = noOffset, kerr.UnstableOffsetCommit
			}
			byTopic[tp.topic] = append(byTopic[tp.topic], fp)
		}
		for t, ps := range byTopic {
			slices.SortFunc(ps, func(a, b fetchedPartition) int { return int(a.partition) - int(b.partition) })
			out = append(out, fetchedTopic{t, ps})
		}
		slices.SortFunc(out, func(a, b fetchedTopic) int { return strings.Compare(a.topic, b.topic) })
		return out, nil
	}
	for _, t := range topics {
		ft := fetchedTopic{topic: t.topic}
		for _, p := range t.partitions {
			o := noOffset
			if g != nil {
				if have, ok := g.offsets[topicPartition{t.topic, p}]; ok {
					o = have
				}
			}
			fp := fetchedPartition{partition: p, o: o}
			if requireStable && g != nil && g.unstable(topicPartition{t.topic, p}) {
				fp.o, fp.err = noOffset, kerr.UnstableOffsetCommit
			}
			ft.partitions = append(ft.partitions, fp)
		}
		out = append(out, ft)
	}
	return out, nil
}

// OffsetDelete serves OffsetDelete v0: committed offsets of topics the
// group is not subscribed to are deleted.
func (c *Coordinator) OffsetDelete(ctx context.Context, req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	codes, err := c.deleteOffsets(ctx, req)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return resp
	}
	for i, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for j, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = codes[i][j]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (c *Coordinator) deleteOffsets(ctx context.Context, req *kmsg.OffsetDeleteRequest) ([][]int16, error) {
	s, err := c.groupShard(req.Group)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if !s.active() {
		s.mu.Unlock()
		return nil, kerr.NotCoordinator
	}
	kind := s.groups[req.Group]
	if _, share := kind.(*shareGroup); share || !live(kind) {
		s.mu.Unlock()
		return nil, kerr.GroupIDNotFound // as Kafka 4.4: a share group has no offsets to delete
	}
	g := kind.core()
	subscribed, known := kind.subscribedTo()
	if !known && !kind.empty() {
		s.mu.Unlock()
		return nil, kerr.NonEmptyGroup
	}
	codes := make([][]int16, len(req.Topics))
	var recs []Record
	var tps []topicPartition
	for i, t := range req.Topics {
		codes[i] = make([]int16, len(t.Partitions))
		for j, p := range t.Partitions {
			if subscribed(t.Topic) {
				codes[i][j] = kerr.GroupSubscribedToTopic.Code
				continue
			}
			tp := topicPartition{t.Topic, p.Partition}
			if _, ok := g.offsets[tp]; ok {
				recs = append(recs, Record{Key: offsetKey(g.id, t.Topic, p.Partition)})
				tps = append(tps, tp)
			}
		}
	}
	if len(recs) == 0 {
		s.mu.Unlock()
		return codes, nil
	}
	done := make(chan error, 1)
	s.enqueue(recs, func(err error) {
		if err == nil {
			s.mu.Lock()
			for _, tp := range tps {
				delete(g.offsets, tp)
			}
			s.mu.Unlock()
		}
		done <- err
	})
	s.mu.Unlock()
	select {
	case err := <-done:
		if err != nil {
			return nil, err
		}
	case <-ctx.Done():
		return nil, kerr.RequestTimedOut
	}
	return codes, nil
}

// expireOffsets tombstones the offsets that outlived
// offsets.retention.minutes (KIP-211): those of an empty group once it has
// been empty that long, those of a group without membership that long
// after their commit; an empty group left with no offset is deleted.
// Share groups are left alone (shareGroup.expiry).
func (s *shard) expireOffsets(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.active() {
		return
	}
	retention := s.c.cfg.OffsetsRetention
	for id, kind := range s.groups {
		since, applies := kind.expiry()
		if !applies {
			continue
		}
		g := kind.core()
		var recs []Record
		var expired []topicPartition
		for tp, o := range g.offsets {
			base := since
			if base.IsZero() {
				base = time.UnixMilli(o.commitMs)
			}
			if now.Sub(base) >= retention {
				recs = append(recs, Record{Key: offsetKey(id, tp.topic, tp.partition)})
				expired = append(expired, tp)
			}
		}
		for _, tp := range expired {
			delete(g.offsets, tp)
		}
		if len(g.offsets) == 0 {
			recs = append(recs, kind.stateTombstones()...)
			recs = append(recs, Record{Key: groupKey(id)})
			kind.shutdown()
			delete(s.groups, id)
		}
		if len(recs) > 0 {
			s.enqueue(recs, func(err error) {
				if err != nil {
					s.c.log.Warn("writing expired offsets failed", "group", id, "err", err)
				}
			})
		}
	}
}

// live reports whether g is a group (not nil, not dead).
func live(g group) bool {
	if g == nil {
		return false
	}
	_, _, _, dead := g.listing()
	return !dead
}
