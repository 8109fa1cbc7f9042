package groups

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeGroups serves DescribeGroups v0-v6 for the groups coordinated
// here. A group that does not exist, or is a consumer group, is Dead (v6+:
// GROUP_ID_NOT_FOUND), as in Kafka 4.
func (c *Coordinator) DescribeGroups(req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		d := c.describe(id, req.Version)
		if req.IncludeAuthorizedOperations && req.Version >= 3 && d.ErrorCode == 0 {
			d.AuthorizedOperations = groupAuthorizedOps
		}
		resp.Groups = append(resp.Groups, d)
	}
	return resp
}

func (c *Coordinator) describe(id string, version int16) kmsg.DescribeGroupsResponseGroup {
	d := kmsg.NewDescribeGroupsResponseGroup()
	d.Group = id
	d.AuthorizedOperations = -2147483648
	fail := func(err error) kmsg.DescribeGroupsResponseGroup {
		d.ErrorCode = errorCode(err)
		if version >= 6 {
			d.ErrorMessage = kmsg.StringPtr(err.Error())
		}
		return d
	}
	s, err := c.groupShard(id)
	if err != nil {
		return fail(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.groups[id].(*classicGroup)
	if !ok || g.state == stateDead {
		d.State = stateDead.String()
		if version < 6 {
			return d
		}
		if other := s.groups[id]; !ok && live(other) {
			return fail(kafkaErrorf(kerr.GroupIDNotFound, "Group %s is not a classic group.", id))
		}
		return fail(kafkaErrorf(kerr.GroupIDNotFound, "Group %s not found.", id))
	}
	d.State = g.state.String()
	d.ProtocolType = g.protocolType
	stable := g.state == stateStable
	if stable {
		d.Protocol = g.protocolName
	}
	for _, m := range g.sortedMembers() {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.ClientID, dm.ClientHost = m.id, m.clientID, m.clientHost
		if m.instanceID != "" {
			dm.InstanceID = kmsg.StringPtr(m.instanceID)
		}
		dm.ProtocolMetadata, dm.MemberAssignment = []byte{}, []byte{}
		if stable {
			if md := m.metadataFor(g.protocolName); md != nil {
				dm.ProtocolMetadata = md
			}
			if m.assignment != nil {
				dm.MemberAssignment = m.assignment
			}
		}
		d.Members = append(d.Members, dm)
	}
	return d
}

// ListGroups serves ListGroups v0-v5: the groups coordinated here, filtered
// by state (v4+) and type (v5+: "classic", or "consumer" for KIP-848).
func (c *Coordinator) ListGroups(req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	shards, loading := c.activeShards()
	if loading {
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
	}
	wantState := func(st string) bool {
		return len(req.StatesFilter) == 0 || slices.ContainsFunc(req.StatesFilter, func(f string) bool { return strings.EqualFold(f, st) })
	}
	wantType := func(typ string) bool {
		return len(req.TypesFilter) == 0 || slices.ContainsFunc(req.TypesFilter, func(f string) bool { return strings.EqualFold(f, typ) })
	}
	for _, s := range shards {
		s.mu.Lock()
		for id, g := range s.groups {
			typ, protocolType, state, dead := g.listing()
			if dead || !wantState(state) || !wantType(typ) {
				continue
			}
			lg := kmsg.NewListGroupsResponseGroup()
			lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = id, protocolType, state, typ
			resp.Groups = append(resp.Groups, lg)
		}
		s.mu.Unlock()
	}
	slices.SortFunc(resp.Groups, func(a, b kmsg.ListGroupsResponseGroup) int { return strings.Compare(a.Group, b.Group) })
	return resp
}

// DeleteGroups serves DeleteGroups v0-v2: an empty group's offsets and
// metadata are tombstoned and the group is gone.
func (c *Coordinator) DeleteGroups(ctx context.Context, req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, id := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = id
		rg.ErrorCode = errorCode(c.deleteGroup(ctx, id))
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

func (c *Coordinator) deleteGroup(ctx context.Context, id string) error {
	s, err := c.groupShard(id)
	if err != nil {
		return err
	}
	s.mu.Lock()
	if !s.active() {
		s.mu.Unlock()
		return kerr.NotCoordinator
	}
	g := s.groups[id]
	switch {
	case !live(g):
		s.mu.Unlock()
		return kerr.GroupIDNotFound
	case !g.empty():
		s.mu.Unlock()
		return kerr.NonEmptyGroup
	}
	var recs []Record
	for tp := range g.core().offsets {
		recs = append(recs, Record{Key: offsetKey(id, tp.topic, tp.partition)})
	}
	recs = append(recs, g.stateTombstones()...)
	recs = append(recs, Record{Key: groupKey(id)})
	g.shutdown()
	delete(s.groups, id)
	done := make(chan error, 1)
	s.enqueue(recs, func(err error) { done <- err })
	s.mu.Unlock()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return kerr.RequestTimedOut
	}
}

// describedGroup locks the shard of group id and returns the group, of
// kind T, with the shard's unlock, or the error a describe answers:
// NOT_COORDINATOR, GROUP_ID_NOT_FOUND "Group %s not found.", or "Group %s
// is not a %s group." for a group of another kind.
func describedGroup[T group](c *Coordinator, id, kind string) (T, func(), error) {
	var none T
	s, err := c.groupShard(id)
	if err != nil {
		return none, nil, err
	}
	s.mu.Lock()
	g := s.groups[id]
	t, ok := g.(T)
	switch {
	case !s.active():
		err = kerr.NotCoordinator
	case !live(g):
		err = kafkaErrorf(kerr.GroupIDNotFound, "Group %s not found.", id)
	case !ok:
		err = kafkaErrorf(kerr.GroupIDNotFound, "Group %s is not a %s group.", id, kind)
	}
	if err != nil {
		s.mu.Unlock()
		return none, nil, err
	}
	return t, s.mu.Unlock, nil
}

// describeError is the error code and message a describe answers for
// describedGroup's error: the message Kafka sends with it, if any.
func describeError(err error) (int16, *string) {
	if !errors.As(err, new(*kafkaError)) {
		return errorCode(err), nil
	}
	return errorCode(err), kmsg.StringPtr(errorMessage(err))
}
