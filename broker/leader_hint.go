package broker

// KIP-951: a Produce (v10+) or Fetch (v12+) answer that refuses a
// partition because this broker does not lead it (NOT_LEADER_OR_FOLLOWER,
// and FENCED_LEADER_EPOCH for Fetch) carries the leader and leader epoch
// this broker knows (CurrentLeader), and the endpoints of those leaders
// on the listener the request came in on (NodeEndpoints; Fetch from
// v16), so that the client goes to the new leader without a Metadata
// round trip, as Kafka's ReplicaManager fills them.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/controller"
)

// leaderOf is the leader and leader epoch of a partition as this broker
// knows them, -1, -1 when unknown; a leader is added to leaders once.
func (b *Broker) leaderOf(t *topic, partition int32, leaders *[]int32) (leader, epoch int32) {
	if t == nil || partition < 0 || int(partition) >= len(t.parts) {
		return -1, -1
	}
	leader, epoch, _, _ = t.parts[partition].State()
	if leader < 0 {
		return -1, -1
	}
	if !slices.Contains(*leaders, leader) {
		*leaders = append(*leaders, leader)
	}
	return leader, epoch
}

// leaderEndpoints returns the live brokers among ids, sorted by id, as
// endpoints on listener.
func (b *Broker) leaderEndpoints(ctx context.Context, ids []int32, listener string) []controller.BrokerInfo {
	if len(ids) == 0 {
		return nil
	}
	brokers, err := b.liveBrokers(ctx)
	if err != nil {
		return nil
	}
	var out []controller.BrokerInfo
	for _, bi := range brokers {
		if slices.Contains(ids, bi.ID) {
			bi.Host, bi.Port = endpointFor(bi, listener)
			out = append(out, bi)
		}
	}
	slices.SortFunc(out, func(a, b controller.BrokerInfo) int { return int(a.ID) - int(b.ID) })
	return out
}

func (b *Broker) topicOf(name string, id [16]byte, byID bool) *topic {
	if byID {
		return b.meta.topicByID(id)
	}
	return b.meta.topic(name)
}

// addProduceLeaders fills the KIP-951 fields of a Produce answer.
func (b *Broker) addProduceLeaders(ctx context.Context, r *request, resp *kmsg.ProduceResponse) {
	if resp == nil || r.hdr.Version < 10 {
		return
	}
	var leaders []int32
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		var t *topic
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			if rp.ErrorCode != kerr.NotLeaderForPartition.Code {
				continue
			}
			if t == nil {
				t = b.topicOf(rt.Topic, rt.TopicID, r.hdr.Version >= 13)
			}
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = b.leaderOf(t, rp.Partition, &leaders)
		}
	}
	for _, bi := range b.leaderEndpoints(ctx, leaders, r.listener) {
		nb := kmsg.NewProduceResponseBroker()
		nb.NodeID, nb.Host, nb.Port = bi.ID, bi.Host, bi.Port
		if bi.Rack != "" {
			nb.Rack = kmsg.StringPtr(bi.Rack)
		}
		resp.Brokers = append(resp.Brokers, nb)
	}
}

// addFetchLeaders fills the KIP-951 fields of a Fetch answer.
func (b *Broker) addFetchLeaders(ctx context.Context, r *request, resp *kmsg.FetchResponse) {
	if r.hdr.Version < 12 {
		return
	}
	var leaders []int32
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		var t *topic
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			if rp.ErrorCode != kerr.NotLeaderForPartition.Code && rp.ErrorCode != kerr.FencedLeaderEpoch.Code {
				continue
			}
			if t == nil {
				t = b.topicOf(rt.Topic, rt.TopicID, r.hdr.Version >= 13)
			}
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = b.leaderOf(t, rp.Partition, &leaders)
		}
	}
	if r.hdr.Version < 16 {
		return
	}
	for _, bi := range b.leaderEndpoints(ctx, leaders, r.listener) {
		nb := kmsg.NewFetchResponseBroker()
		nb.NodeID, nb.Host, nb.Port = bi.ID, bi.Host, bi.Port
		if bi.Rack != "" {
			nb.Rack = kmsg.StringPtr(bi.Rack)
		}
		resp.Brokers = append(resp.Brokers, nb)
	}
}
