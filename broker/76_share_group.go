package broker

// The KIP-932 share group APIs of the group coordinator
// (groups/share_group.go): ShareGroupHeartbeat v1 and ShareGroupDescribe
// v1. The records go out through ShareFetch (78_share_fetch.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/security"
	"github.com/samsa-io/samsa/share"
)

func (b *Broker) handleShareGroupHeartbeat(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ShareGroupHeartbeatRequest)
	if err := b.groupRefusal(r, security.OpRead, req.GroupID); err != nil {
		resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	// Kafka refuses the whole heartbeat when one subscribed topic may not
	// be described.
	for _, topic := range req.SubscribedTopicNames {
		if err := b.topicRefusal(r, security.OpDescribe, topic); err != nil {
			resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
			resp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			return resp, nil
		}
	}
	// The members' partition leaders will need __share_group_state: made
	// now, its leaders are known by their first fetch (84_share_group_state.go).
	if err := b.ensureShareStateTopic(ctx); err != nil {
		b.log.Warn("creating "+shareStateTopic, "err", err)
	}
	return b.groups.ShareGroupHeartbeat(r.client(), req), nil
}

func (b *Broker) handleShareGroupDescribe(_ context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ShareGroupDescribeRequest)
	allowed, denied := b.groupsAllowed(r, security.OpDescribe, req.GroupIDs)
	sub := *req
	sub.GroupIDs = allowed
	resp := b.groups.ShareGroupDescribe(&sub)
	for _, g := range denied {
		d := kmsg.NewShareGroupDescribeResponseGroup()
		d.GroupID, d.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		resp.Groups = append(resp.Groups, d)
	}
	return resp, nil
}

// newShareManager is the broker's share-partitions, with the group.share.*
// settings.
func (b *Broker) newShareManager() *share.Manager {
	s := b.settings
	b.shareSt = newShareStore(b)
	return share.NewManager(share.Config{
		Store:         b.shareSt,
		LockDuration:  s.ShareRecordLockDuration,
		DeliveryLimit: int16(s.ShareDeliveryCountLimit),
		MaxLocks:      int(s.ShareMaxRecordLocks),
		MaxSessions:   int(s.ShareMaxSessions),
	})
}
