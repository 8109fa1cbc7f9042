package broker

// The classic group APIs, served by the group coordinator (package groups):
// OffsetCommit v2-v10, OffsetFetch v1-v10 (v10: topic ids,
// 08_offsets_topic_ids.go), JoinGroup v0-v9 (advertised from
// v0 for librdkafka), Heartbeat v0-v4, LeaveGroup v0-v5, SyncGroup v0-v5,
// DescribeGroups v0-v6, ListGroups v0-v5, DeleteGroups v0-v3 (v3: as v2; it
// may delete streams groups), OffsetDelete v0.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/groups"
)

func (r *request) client() groups.Client {
	c := groups.Client{Host: clientHost(r.conn)}
	if r.hdr.ClientID != nil {
		c.ID = *r.hdr.ClientID
	}
	return c
}

func (b *Broker) handleJoinGroup(ctx context.Context, r *request) (kmsg.Response, error) {
	if resp := b.groupDenied(r); resp != nil { // authz.go
		return resp, nil
	}
	ctx, waited := groups.WithWaitTimer(ctx)
	resp := b.groups.JoinGroup(ctx, r.client(), r.body.(*kmsg.JoinGroupRequest))
	r.parked += waited() // the rebalance is no work of the handler's (request_percentage)
	return resp, nil
}

func (b *Broker) handleSyncGroup(ctx context.Context, r *request) (kmsg.Response, error) {
	if resp := b.groupDenied(r); resp != nil { // authz.go
		return resp, nil
	}
	ctx, waited := groups.WithWaitTimer(ctx)
	resp := b.groups.SyncGroup(ctx, r.body.(*kmsg.SyncGroupRequest))
	r.parked += waited()
	return resp, nil
}

func (b *Broker) handleHeartbeat(_ context.Context, r *request) (kmsg.Response, error) {
	if resp := b.groupDenied(r); resp != nil { // authz.go
		return resp, nil
	}
	return b.groups.Heartbeat(r.body.(*kmsg.HeartbeatRequest)), nil
}

func (b *Broker) handleLeaveGroup(_ context.Context, r *request) (kmsg.Response, error) {
	if resp := b.groupDenied(r); resp != nil { // authz.go
		return resp, nil
	}
	return b.groups.LeaveGroup(r.body.(*kmsg.LeaveGroupRequest)), nil
}

func (b *Broker) handleOffsetCommit(ctx context.Context, r *request) (kmsg.Response, error) {
	if resp := b.groupDenied(r); resp != nil { // authz.go
		return resp, nil
	}
	req := r.body.(*kmsg.OffsetCommitRequest)
	var resp *kmsg.OffsetCommitResponse
	var givenUp bool
	if r.hdr.Version >= 10 {
		resp, givenUp = b.offsetCommitByID(ctx, req, r.connID)
	} else {
		resp, givenUp = b.groups.OffsetCommitOn(ctx, req, r.connID)
	}
	if givenUp {
		// The member has committed since on a newer connection: it gave
		// up on this one (groups.Coordinator.OffsetCommitOn). The
		// connection loop logs the close with this reason.
		return nil, fmt.Errorf("%w: not applying a commit from a connection member %s of group %s has left for a newer one",
			errCloseConn, req.MemberID, req.Group)
	}
	return resp, nil
}

func (b *Broker) handleOffsetFetch(_ context.Context, r *request) (kmsg.Response, error) {
	if resp := b.groupDenied(r); resp != nil { // authz.go
		return resp, nil
	}
	if r.hdr.Version >= 10 {
		return b.offsetFetchByID(r.body.(*kmsg.OffsetFetchRequest)), nil
	}
	return b.groups.OffsetFetch(r.body.(*kmsg.OffsetFetchRequest)), nil
}

func (b *Broker) handleDescribeGroups(_ context.Context, r *request) (kmsg.Response, error) {
	return b.groups.DescribeGroups(r.body.(*kmsg.DescribeGroupsRequest)), nil
}

func (b *Broker) handleListGroups(_ context.Context, r *request) (kmsg.Response, error) {
	return b.groups.ListGroups(r.body.(*kmsg.ListGroupsRequest)), nil
}

func (b *Broker) handleDeleteGroups(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DeleteGroupsRequest)
	init := b.shareGroupsInitialized(req.Groups) // 90_share_group_offsets.go
	resp := b.groups.DeleteGroups(ctx, req)
	b.deleteShareState(ctx, resp, init)
	return resp, nil
}

func (b *Broker) handleOffsetDelete(ctx context.Context, r *request) (kmsg.Response, error) {
	return b.groups.OffsetDelete(ctx, r.body.(*kmsg.OffsetDeleteRequest)), nil
}
