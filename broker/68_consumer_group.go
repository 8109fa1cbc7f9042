package broker

// The KIP-848 consumer group APIs, served by the group coordinator
// (groups/consumer_group.go): ConsumerGroupHeartbeat v0-v1 (v1: the
// client makes its member id, KIP-1082; a regex subscription) and
// ConsumerGroupDescribe v0-v1 (v1: the member type).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/groups"
	"github.com/samsa-io/samsa/security"
)

func (b *Broker) handleConsumerGroupHeartbeat(_ context.Context, r *request) (kmsg.Response, error) {
	cl := r.client()
	if az := b.authz; az != nil {
		// What the member's regex resolves to is filtered by Describe,
		// as Kafka's coordinator filters it (authz_apis.go has checked
		// the group and the topics named).
		principal, host := r.principal, aclHost(r)
		cl.MayDescribe = func(topic string) bool {
			return az.Authorize(principal, host, security.OpDescribe, security.ResourceTopic, topic)
		}
	}
	return b.groups.ConsumerGroupHeartbeat(cl, r.body.(*kmsg.ConsumerGroupHeartbeatRequest)), nil
}

func (b *Broker) handleConsumerGroupDescribe(_ context.Context, r *request) (kmsg.Response, error) {
	return b.groups.ConsumerGroupDescribe(r.body.(*kmsg.ConsumerGroupDescribeRequest)), nil
}

// subscribableTopics are the topics groups may subscribe to: every topic,
// the internal ones marked (a consumer group's regex takes them, as
// Kafka 4.4's coordinator resolves it). Each partition comes with its
// replicas' racks when brokers have racks.
func (b *Broker) subscribableTopics() []groups.TopicMeta {
	racks := b.brokerRacks()
	var out []groups.TopicMeta
	for _, t := range b.meta.topicList() {
		tm := groups.TopicMeta{Name: t.name, ID: t.id, Partitions: int32(len(t.parts)), Internal: isInternalTopic(t.name)}
		if len(racks) > 0 {
			tm.Racks = make([][]string, len(t.parts))
			for i, p := range t.parts {
				_, _, replicas, _ := p.State()
				for _, r := range replicas {
					if rack := racks[r]; rack != "" {
						tm.Racks[i] = append(tm.Racks[i], rack)
					}
				}
			}
		}
		out = append(out, tm)
	}
	return out
}

// brokerRacks are the racks of the registered brokers as last read; empty
// when none has one.
func (b *Broker) brokerRacks() map[int32]string {
	m := &b.meta
	m.brokersMu.Lock()
	defer m.brokersMu.Unlock()
	racks := map[int32]string{}
	for _, bi := range m.brokers {
		if bi.Rack != "" {
			racks[bi.ID] = bi.Rack
		}
	}
	return racks
}

// clamp is d within [lo, hi], as the consumer group's session timeout and
// heartbeat interval are within their min and max.
func clamp(d, lo, hi time.Duration) time.Duration {
	return min(max(d, lo), hi)
}
