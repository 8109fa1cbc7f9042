package broker

// OffsetCommit v10 and OffsetFetch v10 name topics by id (KIP-848's
// assignments do). The coordinator keys offsets by topic name, as the
// records in __consumer_offsets do, so the ids are translated here, both
// ways; an id this broker does not know is UNKNOWN_TOPIC_ID for each of its
// partitions, as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// unknownTopicName stands for a topic id that names no topic: no topic can
// have it (the empty name is invalid), so the coordinator refuses its
// partitions, and the answer is rewritten to UNKNOWN_TOPIC_ID.
const unknownTopicName = ""

func (b *Broker) topicNameOf(id [16]byte) string {
	if t := b.meta.topicByID(id); t != nil {
		return t.name
	}
	return unknownTopicName
}

func (b *Broker) topicIDOf(name string) ([16]byte, bool) {
	if t := b.meta.topic(name); t != nil {
		return t.id, true
	}
	return [16]byte{}, false
}

func (b *Broker) offsetCommitByID(ctx context.Context, req *kmsg.OffsetCommitRequest, conn uint64) (*kmsg.OffsetCommitResponse, bool) {
	for i := range req.Topics {
		req.Topics[i].Topic = b.topicNameOf(req.Topics[i].TopicID)
	}
	resp, givenUp := b.groups.OffsetCommitOn(ctx, req, conn)
	if givenUp {
		return nil, true
	}
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		rt.TopicID = req.Topics[i].TopicID
		if req.Topics[i].Topic != unknownTopicName {
			continue
		}
		for j := range rt.Partitions {
			rt.Partitions[j].ErrorCode = kerr.UnknownTopicID.Code
		}
	}
	return resp, false
}

func (b *Broker) offsetFetchByID(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	unknown := make(map[int]map[int]bool) // group index -> topic indexes
	for gi := range req.Groups {
		for ti := range req.Groups[gi].Topics {
			t := &req.Groups[gi].Topics[ti]
			if t.Topic = b.topicNameOf(t.TopicID); t.Topic == unknownTopicName {
				if unknown[gi] == nil {
					unknown[gi] = map[int]bool{}
				}
				unknown[gi][ti] = true
			}
		}
	}
	resp := b.groups.OffsetFetch(req)
	for gi := range resp.Groups {
		g := &resp.Groups[gi]
		if req.Groups[gi].Topics != nil {
			// The answer lists the requested topics in order.
			for ti := range g.Topics {
				g.Topics[ti].TopicID = req.Groups[gi].Topics[ti].TopicID
				if unknown[gi][ti] {
					for j := range g.Topics[ti].Partitions {
						p := &g.Topics[ti].Partitions[j]
						p.ErrorCode, p.Offset, p.LeaderEpoch, p.Metadata = kerr.UnknownTopicID.Code, -1, -1, kmsg.StringPtr("")
					}
				}
			}
			continue
		}
		// All the group's offsets: a topic deleted since it was committed
		// has no id to answer with and is left out.
		kept := g.Topics[:0]
		for _, t := range g.Topics {
			if id, ok := b.topicIDOf(t.Topic); ok {
				t.TopicID = id
				kept = append(kept, t)
			}
		}
		g.Topics = kept
	}
	return resp
}
