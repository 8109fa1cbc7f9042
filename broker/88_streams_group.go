package broker

// The KIP-1071 streams group APIs, served by the group coordinator
// (groups/streams_group.go): StreamsGroupHeartbeat v0-v1 (v1: the answer
// says whether the coordinator wants the topology description, KIP-1331),
// StreamsGroupDescribe v0-v1 (v1: the topology description and the
// assignor) and StreamsGroupTopologyDescriptionUpdate v0 (key 93, refused
// with UNSUPPORTED_VERSION as Kafka 4.4 refuses it). The
// internal topics a heartbeat finds missing are created here, in the
// background, as Kafka's broker creates them for its coordinator.

import (
	"context"
	"errors"
	"maps"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/groups"
	"github.com/samsa-io/samsa/security"
)

func (b *Broker) handleStreamsGroupHeartbeat(_ context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.StreamsGroupHeartbeatRequest)
	if err := b.groupRefusal(r, security.OpRead, req.Group); err != nil {
		resp := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	res := b.groups.StreamsGroupHeartbeat(r.client(), req)
	for _, t := range res.Create {
		b.createStreamsTopic(t)
	}
	return res.Response, nil
}

// createStreamsTopic creates an internal topic of a streams group in the
// background; the members' heartbeats see it once it exists.
func (b *Broker) createStreamsTopic(t groups.StreamsTopicToCreate) {
	if b.meta.topic(t.Name) != nil {
		return
	}
	// The heartbeats of a group's members start one creation each.
	key := t.Name
	if _, busy := b.streamsCreating.LoadOrStore(key, true); busy {
		return
	}
	if !b.spawn(func(ctx context.Context) {
		defer b.streamsCreating.Delete(key)
		spec := &topicSpec{name: t.Name, partitions: t.Partitions, replication: t.ReplicationFactor, configs: maps.Clone(t.Configs)}
		if err := b.createTopic(ctx, spec, false); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			b.log.Warn("creating a streams group's internal topic", "topic", t.Name, "err", err)
		}
	}) {
		b.streamsCreating.Delete(key)
	}
}

func (b *Broker) handleStreamsGroupDescribe(_ context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.StreamsGroupDescribeRequest)
	allowed, denied := b.groupsAllowed(r, security.OpDescribe, req.Groups)
	sub := *req
	sub.Groups = allowed
	resp := b.groups.StreamsGroupDescribe(&sub)
	for _, g := range denied {
		d := kmsg.NewStreamsGroupDescribeResponseGroup()
		d.Group, d.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		resp.Groups = append(resp.Groups, d)
	}
	return resp, nil
}

func (b *Broker) handleStreamsGroupTopologyDescriptionUpdate(_ context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.StreamsGroupTopologyDescriptionUpdateRequest)
	if err := b.groupRefusal(r, security.OpRead, req.Group); err != nil {
		resp := req.ResponseKind().(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	// Kafka 4.4 at streams.version 1 stores no topology description
	// (KIP-1331): it answers UNSUPPORTED_VERSION, and its heartbeats never
	// ask for one.
	resp := req.ResponseKind().(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	return resp, nil
}
