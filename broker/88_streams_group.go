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
	"maps"
	"slices"
	"strings"

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
	if resp := b.streamsTopologyRefusal(r, req); resp != nil {
		return resp, nil
	}
	res := b.groups.StreamsGroupHeartbeat(r.client(), req)
	if denied := b.streamsCreateDenied(r, res.Create); len(denied) > 0 {
		// Kafka creates none of them then, and says why in the status.
		detail := "Unauthorized to CREATE on topics " + strings.Join(denied, ", ") + "."
		resp := res.Response
		i := slices.IndexFunc(resp.Status, func(s kmsg.StreamsGroupHeartbeatResponseStatus) bool {
			return s.StatusCode == streamsStatusMissingInternalTopics
		})
		if i >= 0 {
			resp.Status[i].StatusDetail += "; " + detail
		} else {
			resp.Status = append(resp.Status, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: streamsStatusMissingInternalTopics, StatusDetail: detail})
		}
		return resp, nil
	}
	for _, t := range res.Create {
		b.createStreamsTopic(t)
	}
	return res.Response, nil
}

// streamsStatusMissingInternalTopics is the heartbeat status
// MISSING_INTERNAL_TOPICS.
const streamsStatusMissingInternalTopics = 3

// streamsTopologyRefusal is Kafka's answer to a heartbeat whose topology
// names an internal (Kafka's three) or invalid topic (STREAMS_INVALID_TOPOLOGY) or one the
// principal may not describe (TOPIC_AUTHORIZATION_FAILED), in that order;
// nil otherwise.
func (b *Broker) streamsTopologyRefusal(r *request, req *kmsg.StreamsGroupHeartbeatRequest) kmsg.Response {
	if req.Topology == nil {
		return nil
	}
	var topics []string
	for _, st := range req.Topology.Subtopologies {
		topics = append(topics, st.SourceTopics...)
		topics = append(topics, st.RepartitionSinkTopics...)
		for _, ti := range st.RepartitionSourceTopics {
			topics = append(topics, ti.Topic)
		}
		for _, ti := range st.StateChangelogTopics {
			topics = append(topics, ti.Topic)
		}
	}
	slices.Sort(topics)
	topics = slices.Compact(topics)
	resp := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
	if bad := slices.DeleteFunc(slices.Clone(topics), func(t string) bool { return !isInternalTopic(t) }); len(bad) > 0 {
		resp.ErrorCode = kerr.StreamsInvalidTopology.Code
		resp.ErrorMessage = kmsg.StringPtr("Use of Kafka internal topics " + strings.Join(bad, ",") + " in a Kafka Streams topology is prohibited.")
		return resp
	}
	if bad := slices.DeleteFunc(slices.Clone(topics), func(t string) bool { return validateTopicName(t) == nil }); len(bad) > 0 {
		resp.ErrorCode = kerr.StreamsInvalidTopology.Code
		resp.ErrorMessage = kmsg.StringPtr("Topic names " + strings.Join(bad, ",") + " are not valid topic names.")
		return resp
	}
	for _, t := range topics {
		if b.topicRefusal(r, security.OpDescribe, t) != nil {
			resp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			return resp
		}
	}
	return nil
}

// streamsCreateDenied are the internal topics to create that the
// principal may not create (without Create on the cluster, those without
// Create on the topic).
func (b *Broker) streamsCreateDenied(r *request, create []groups.StreamsTopicToCreate) []string {
	if len(create) == 0 || b.authz == nil || b.allowed(r, security.OpCreate, security.ResourceCluster, clusterName) {
		return nil
	}
	var denied []string
	for _, t := range create {
		if !b.allowed(r, security.OpCreate, security.ResourceTopic, t.Name) {
			denied = append(denied, t.Name)
		}
	}
	return denied
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
		if err := b.createInternalTopic(ctx, spec); err != nil {
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
